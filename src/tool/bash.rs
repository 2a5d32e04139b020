//! The `bash` tool: runs one command line in its own process group.
//!
//! stdout and stderr share one pipe (so their order is kept and neither can
//! fill up and deadlock), output streams live to the UI at a bounded rate, and
//! only a bounded tail stays in memory: past the caps the output is spilled
//! to a file as it arrives, up to [`SPILL_MAX_BYTES`]. Timeout and cancel kill
//! the whole group. Truncates its own output (tail), so the registry does not.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::truncate::{self, Direction};
use super::{Limits, Tool, ToolContext, ToolError, ToolOutput, ToolProgress, parse_args};

pub struct Bash;

#[derive(Deserialize)]
struct Args {
    command: String,
    /// Milliseconds.
    timeout: Option<u64>,
    workdir: Option<String>,
    description: Option<String>,
}

/// After the shell exits, how long to keep reading output still buffered in
/// the pipe (a background child holding it open must not hang the call).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// Read size from the pipe.
const CHUNK: usize = 16 * 1024;
/// Live output is sent at most this often: a command printing gigabytes
/// must not queue them all for the UI faster than it can take them.
const LIVE_INTERVAL: Duration = Duration::from_millis(50);
/// Live output waiting for its turn is cut to its last this many bytes (the
/// UI shows a tail; the model gets the real output at the end anyway).
const LIVE_PENDING_MAX: usize = 32 * 1024;
/// The spill file stops growing here: a runaway command (`yes`) must not
/// fill the disk before its timeout. The model still gets the real tail.
pub const SPILL_MAX_BYTES: u64 = 256 * 1024 * 1024;

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/bash.txt");

#[async_trait::async_trait]
impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "description": "The command to run" },
                "timeout": { "type": "integer", "description": "Optional timeout in milliseconds (default 120000)" },
                "workdir": { "type": "string", "description": "Directory to run in (default: the session's working directory)" },
                "description": { "type": "string", "description": "What the command does, in 5-10 words" }
            },
            "required": ["command"]
        })
    }
    fn is_read_only(&self) -> bool {
        false
    }

    async fn execute(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args("bash", input)?;
        let cwd = args
            .workdir
            .as_deref()
            .map_or_else(|| ctx.cwd.clone(), |dir| ctx.resolve(dir));
        ctx.check_external(&cwd, true).await?;
        let (patterns, always) = command_patterns(&args.command);
        ctx.ask(
            "bash",
            patterns,
            always,
            format!("Run: {}", args.command),
            json!({ "command": args.command }),
        )
        .await?;
        let title = args
            .description
            .clone()
            .unwrap_or_else(|| args.command.clone());
        ctx.report(ToolProgress::Title(title.clone()));
        let timeout = args
            .timeout
            .map_or(ctx.limits.bash_timeout, Duration::from_millis);
        let run = run_command(&args.command, &cwd, timeout, ctx).await?;
        let mut output = run.output;
        let interrupted = run.ending == Ending::Cancelled;
        match run.ending {
            Ending::TimedOut => output.push_str(&format!(
                "\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout {} ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.\n</shell_metadata>",
                timeout.as_millis()
            )),
            Ending::Cancelled => output.push_str("\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>"),
            Ending::Exited(Some(code)) if code != 0 => output.push_str(&format!("\n\nExit code: {code}")),
            Ending::Exited(_) => {}
        }
        if interrupted {
            return Err(ToolError::Interrupted { output });
        }
        let exit = match run.ending {
            Ending::Exited(code) => json!(code),
            _ => Value::Null,
        };
        let mut metadata = json!({
            "exit": exit,
            "description": args.description,
            "truncated": run.spill.is_some(),
            "timed_out": run.ending == Ending::TimedOut,
        });
        if let Some(path) = &run.spill {
            metadata["output_path"] = json!(path.display().to_string());
        }
        Ok(ToolOutput::text(title, output, metadata))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited(Option<i32>),
    TimedOut,
    Cancelled,
}

struct Run {
    output: String,
    ending: Ending,
    spill: Option<PathBuf>,
}

/// Kills the process group when dropped, unless the shell exited on its
/// own: a dropped call (cancelled turn) must not leave children behind.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: kill(2) with a negative pid signals the group we created; no memory is touched.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn run_command(
    command: &str,
    cwd: &PathBuf,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<Run, ToolError> {
    let (writer, mut reader) = tokio::net::unix::pipe::pipe()
        .map_err(|e| ToolError::io("create an output pipe for", cwd, e))?;
    let stdout = writer
        .into_blocking_fd()
        .map_err(|e| ToolError::io("prepare the output pipe for", cwd, e))?;
    let stderr = stdout
        .try_clone()
        .map_err(|e| ToolError::io("prepare the output pipe for", cwd, e))?;
    let mut bash = tokio::process::Command::new("bash");
    for name in hidden_variables() {
        bash.env_remove(name);
    }
    let mut child = bash
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::io("run bash in", cwd, e))?;
    let mut guard = GroupGuard {
        pgid: child.id().and_then(|pid| i32::try_from(pid).ok()),
    };
    let mut sink = OutputSink::new(ctx);
    let mut buffer = vec![0u8; CHUNK];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut exit: Option<Option<i32>> = None;
    let mut drain_until: Option<tokio::time::Instant> = None;
    let mut at_eof = false;
    let ending = loop {
        let drain = async {
            match drain_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let live_due = sink.live_due();
        let live = async {
            match live_due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => break Ending::Cancelled,
            () = &mut deadline => break Ending::TimedOut,
            read = reader.read(&mut buffer), if !at_eof => match read {
                Ok(0) | Err(_) => {
                    // The pipe closed; the shell may still run (it can close
                    // its own stdout), so keep waiting under timeout and cancel.
                    at_eof = true;
                    if let Some(code) = exit {
                        break Ending::Exited(code);
                    }
                }
                Ok(n) => sink
                    .push(&buffer[..n])
                    .map_err(|e| ToolError::io("save the output of bash to", &ctx.tool_output_dir, e))?,
            },
            status = child.wait(), if exit.is_none() => {
                let code = status.map_err(|e| ToolError::io("wait for bash in", cwd, e))?.code();
                if at_eof {
                    break Ending::Exited(code);
                }
                exit = Some(code);
                drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = drain => break Ending::Exited(exit.flatten()),
            () = live => sink.send_live(),
        }
    };
    sink.send_live();
    if matches!(ending, Ending::Exited(_)) {
        // Exited by itself: leave intentionally backgrounded processes alone.
        guard.pgid = None;
    } else {
        guard.kill();
        let _ = child.wait().await;
    }
    let (output, spill) = sink
        .finish(&ctx.limits)
        .map_err(|e| ToolError::io("save the output of bash to", &ctx.tool_output_dir, e))?;
    Ok(Run {
        output,
        ending,
        spill,
    })
}

/// Collects a command's output with bounded memory: a rolling window of the
/// last `2 * max_bytes` bytes, a spill file holding the output (up to
/// [`SPILL_MAX_BYTES`]) once it passes the caps, and the live text not yet
/// sent to the UI.
struct OutputSink<'a> {
    ctx: &'a ToolContext,
    window: Vec<u8>,
    total_bytes: u64,
    total_lines: usize,
    spill: Option<Spill>,
    live: LiveText,
}

/// The spill file and how much of the output it holds.
struct Spill {
    path: PathBuf,
    file: std::fs::File,
    written: u64,
}

/// Output waiting to be streamed live, sent at most every [`LIVE_INTERVAL`].
struct LiveText {
    pending: Vec<u8>,
    /// Bytes dropped from `pending` since the last send (the UI was behind).
    skipped: usize,
    last_sent: Option<tokio::time::Instant>,
}

impl<'a> OutputSink<'a> {
    fn new(ctx: &'a ToolContext) -> Self {
        Self {
            ctx,
            window: Vec::new(),
            total_bytes: 0,
            total_lines: 0,
            spill: None,
            live: LiveText {
                pending: Vec::new(),
                skipped: 0,
                last_sent: None,
            },
        }
    }

    fn push(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.queue_live(chunk);
        self.total_bytes += chunk.len() as u64;
        self.total_lines += chunk.iter().filter(|b| **b == b'\n').count();
        let limits = self.ctx.limits;
        if self.spill.is_none()
            && (self.total_bytes > limits.max_bytes as u64 || self.total_lines > limits.max_lines)
        {
            // The window still holds everything: it only starts dropping past 2x the cap.
            let (path, file) = truncate::create_spill_file(&self.ctx.tool_output_dir)?;
            let mut spill = Spill {
                path,
                file,
                written: 0,
            };
            spill.write(&self.window)?;
            self.spill = Some(spill);
        }
        if let Some(spill) = &mut self.spill {
            spill.write(chunk)?;
        }
        self.window.extend_from_slice(chunk);
        let keep = 2 * limits.max_bytes;
        // Drop in big steps: trimming on every chunk would move the whole window each time.
        if self.window.len() > 2 * keep {
            self.window.drain(..self.window.len() - keep);
        }
        Ok(())
    }

    fn queue_live(&mut self, chunk: &[u8]) {
        if self.ctx.progress.is_none() {
            return;
        }
        let live = &mut self.live;
        live.pending.extend_from_slice(chunk);
        if live.pending.len() > LIVE_PENDING_MAX {
            let cut = live.pending.len() - LIVE_PENDING_MAX;
            live.pending.drain(..cut);
            live.skipped += cut;
        }
        if live
            .last_sent
            .is_none_or(|at| at.elapsed() >= LIVE_INTERVAL)
        {
            self.send_live();
        }
    }

    /// When the pending live text should be sent, if there is any.
    fn live_due(&self) -> Option<tokio::time::Instant> {
        if self.live.pending.is_empty() {
            return None;
        }
        Some(
            self.live
                .last_sent
                .map_or_else(tokio::time::Instant::now, |at| at + LIVE_INTERVAL),
        )
    }

    /// Sends the pending live text, except an incomplete UTF-8 character at its end.
    fn send_live(&mut self) {
        let live = &mut self.live;
        let valid = match std::str::from_utf8(&live.pending) {
            Ok(_) => live.pending.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => live.pending.len(),
        };
        let mut text = String::new();
        if live.skipped > 0 {
            text.push_str(&format!(
                "\n... ({} bytes not shown live) ...\n",
                live.skipped
            ));
            live.skipped = 0;
        }
        text.push_str(&String::from_utf8_lossy(&live.pending[..valid]));
        live.pending.drain(..valid);
        live.last_sent = Some(tokio::time::Instant::now());
        if !text.is_empty() {
            self.ctx.report(ToolProgress::Output(text));
        }
    }

    /// The text for the model, and the spill file if the output overflowed.
    fn finish(mut self, limits: &Limits) -> std::io::Result<(String, Option<PathBuf>)> {
        let keep = 2 * limits.max_bytes;
        if self.window.len() > keep {
            self.window.drain(..self.window.len() - keep);
        }
        let text = String::from_utf8_lossy(&self.window).into_owned();
        let Some(mut spill) = self.spill else {
            let text = if text.is_empty() {
                "(no output)".to_string()
            } else {
                text
            };
            return Ok((text, None));
        };
        spill.file.flush()?;
        let tail = truncate::preview(&text, limits, Direction::Tail).map_or(text, |cut| cut.text);
        let saved = if spill.written < self.total_bytes {
            format!(
                "The first {} of the output ({} in all) saved to: {}",
                human_bytes(spill.written),
                human_bytes(self.total_bytes),
                spill.path.display()
            )
        } else {
            format!("Full output saved to: {}", spill.path.display())
        };
        Ok((
            format!("...output truncated...\n\n{saved}\n\n{tail}"),
            Some(spill.path),
        ))
    }
}

impl Spill {
    /// Appends what still fits under [`SPILL_MAX_BYTES`].
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let room = SPILL_MAX_BYTES.saturating_sub(self.written);
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if take > 0 {
            self.file.write_all(&bytes[..take])?;
            self.written += take as u64;
        }
        Ok(())
    }
}

fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= 1024 * MIB {
        format!("{:.1} GiB", bytes as f64 / (1024 * MIB) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}

/// Permission patterns for a command line: each simple command in it (split
/// on `&&`, `||`, `;`, `|` and newlines outside quotes), and the prefixes an
/// "always" answer allows, such as `cargo test *` or `ls *`.
pub fn command_patterns(command: &str) -> (Vec<String>, Vec<String>) {
    let mut patterns = Vec::new();
    let mut always = Vec::new();
    for part in split_commands(command) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(first) = words.first() else { continue };
        let takes_subcommand = words.get(1).is_some_and(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !w.starts_with('-')
        });
        let prefix = if takes_subcommand {
            format!("{first} {}", words[1])
        } else {
            (*first).to_string()
        };
        patterns.push(words.join(" "));
        let rule = format!("{prefix} *");
        if !always.contains(&rule) {
            always.push(rule);
        }
    }
    (patterns, always)
}

fn split_commands(command: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, ';' | '\n') => parts.push(std::mem::take(&mut current)),
            (None, '&' | '|') if chars.peek() == Some(&c) => {
                chars.next();
                parts.push(std::mem::take(&mut current));
            }
            (None, '|') => parts.push(std::mem::take(&mut current)),
            (None, c) => current.push(c),
        }
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Environment variables commands never see: provider keys would otherwise
/// reach the model (`env`, `printenv`) and the stored tool output. Every
/// `*_API_KEY` variable, plus the names registered with [`hide_from_commands`]
/// (a `[provider.NAME] api_key_env` may be named anything).
static HIDDEN: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Keeps these variables out of every command's environment from now on.
pub fn hide_from_commands<I: IntoIterator<Item = String>>(names: I) {
    let mut hidden = HIDDEN
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for name in names {
        if !hidden.contains(&name) {
            hidden.push(name);
        }
    }
}

fn hidden_variables() -> Vec<std::ffi::OsString> {
    let registered = HIDDEN
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            let text = name.to_string_lossy();
            text.ends_with("_API_KEY") || registered.iter().any(|hidden| *hidden == text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_cover_each_command_and_its_prefix() {
        let (patterns, always) =
            command_patterns("cargo test --lib && git status | head -5; ls -la");
        assert_eq!(
            patterns,
            ["cargo test --lib", "git status", "head -5", "ls -la"]
        );
        assert_eq!(always, ["cargo test *", "git status *", "head *", "ls *"]);
    }

    #[test]
    fn separators_inside_quotes_do_not_split() {
        let (patterns, _) = command_patterns("echo 'a && b; c' | wc -l");
        assert_eq!(patterns, ["echo 'a && b; c'", "wc -l"]);
    }
}
