//! The `bash` tool: runs one command line in its own process group.
//!
//! stdout and stderr share one pipe (so their order is kept and neither can
//! fill up and deadlock); `bash_output` holds what it prints with bounded
//! memory and disk. Timeout and cancel kill the whole group. Truncates its
//! own output (tail), so the registry does not.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::bash_output::OutputSink;
use super::bash_sandbox::{self, Confined};
use super::{Tool, ToolError, ToolOutput, ToolProgress, ToolScope, parse_args, schema_for};

/// The name the model calls it by, which is also its permission.
const NAME: &str = "bash";

pub struct Bash;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The command to run
    command: String,
    /// Optional timeout in milliseconds (default 120000)
    timeout: Option<u64>,
    /// Directory to run in (default: the session's working directory)
    workdir: Option<String>,
    /// What the command does, in 5-10 words
    description: Option<String>,
}

/// After the shell exits, how long to keep reading output still buffered in
/// the pipe (a background child holding it open must not hang the call).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// Read size from the pipe.
const CHUNK: usize = 16 * 1024;

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/bash.txt");

#[async_trait::async_trait]
impl Tool for Bash {
    fn name(&self) -> &'static str {
        NAME
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }
    fn is_read_only(&self) -> bool {
        false
    }

    async fn execute(&self, input: Value, ctx: &ToolScope) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, input)?;
        let cwd = args
            .workdir
            .as_deref()
            .map_or_else(|| ctx.cwd.clone(), |dir| ctx.resolve(dir));
        ctx.check_external(&cwd, true).await?;
        let mut plan = crate::permission::bash_rules::plan(&args.command, &cwd, &ctx.root);
        if bash_rejects(&args.command).await {
            plan.force_bash(
                args.command.trim(),
                "bash itself cannot parse this line (`bash -n`), so what cairn read is not what would run"
                    .to_string(),
            );
        }
        for call in std::mem::take(&mut plan.git_calls) {
            if let Some(reason) = super::bash_git::named_program(&cwd, &call).await {
                plan.force_bash(&call.pattern, reason);
            }
        }
        ctx.ask_plan(plan, &args.command, args.description.as_deref())
            .await?;
        let title = args
            .description
            .clone()
            .unwrap_or_else(|| args.command.clone());
        ctx.report(ToolProgress::Title(title.clone()));
        let timeout = args
            .timeout
            .map_or(ctx.limits.bash_timeout, Duration::from_millis);
        let mut confined = Confined::prepare(&args.command, ctx)?;
        let confinement = confined.confinement.take();
        let run = run_command(&args.command, &cwd, timeout, ctx, confinement).await?;
        let run = bash_sandbox::settle(run, &confined, &args.command, &cwd, ctx, |confinement| {
            run_command(&args.command, &cwd, timeout, ctx, confinement)
        })
        .await?;
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

/// Whether bash's own parser rejects `command` (`bash -n`, which runs
/// nothing): tree-sitter-bash accepts some lines bash does not (`ls ;;`,
/// `ls; fi`), and an allow rule must apply only to text both read the same
/// way. A `bash` that cannot be started is no verdict (the command would
/// not run either).
async fn bash_rejects(command: &str) -> bool {
    let checked = tokio::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-n", "-c", command])
        // Read at startup by a non-interactive bash even under -n.
        .env_remove("BASH_ENV")
        .env_remove("ENV")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await;
    checked.is_ok_and(|status| !status.success())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    Exited(Option<i32>),
    TimedOut,
    Cancelled,
}

pub(super) struct Run {
    pub(super) output: String,
    pub(super) ending: Ending,
    pub(super) spill: Option<PathBuf>,
}

/// Kills the process group when dropped, unless the shell exited on its
/// own: a dropped call (cancelled turn) must not leave children behind.
/// Its [`Watcher`] covers the case where cairn itself dies.
struct GroupGuard {
    pgid: Option<i32>,
    _watcher: Option<Watcher>,
}

/// Kills the command's process group if cairn dies while the command runs,
/// however it dies (kill -9 included): a tiny `bash` in its own group that
/// reads a pipe only cairn writes to. cairn never writes, so the read ends
/// only when the kernel closes cairn's end, that is when cairn is gone; then
/// it kills the group. When the call ends normally the watcher is killed
/// first (drop order below), so intentionally backgrounded jobs of a command
/// that exited by itself are left alone.
///
/// Not `PR_SET_PDEATHSIG`: it reaches only the direct child (bash), not the
/// commands bash started, and it fires when the spawning *thread* exits,
/// which for a tokio worker is not cairn's death.
struct Watcher {
    /// Killed on drop (`kill_on_drop`); declared before `_cairn_end` so it
    /// is gone before the pipe closes.
    _process: tokio::process::Child,
    _cairn_end: tokio::net::unix::pipe::Sender,
}

impl Watcher {
    /// Best effort: without a watcher the command still runs, only a kill -9
    /// of cairn would leave it behind (logged).
    fn start(pgid: i32, cwd: &PathBuf) -> Option<Self> {
        let started = tokio::net::unix::pipe::pipe().and_then(|(cairn_end, watch_end)| {
            let watch_end = watch_end.into_blocking_fd()?;
            let process = tokio::process::Command::new("bash")
                .arg("-c")
                .arg("read -r _; kill -KILL -- -\"$1\" 2>/dev/null")
                .arg("cairn-watch")
                .arg(pgid.to_string())
                .current_dir(cwd)
                .stdin(Stdio::from(watch_end))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .kill_on_drop(true)
                .spawn()?;
            Ok(Self {
                _process: process,
                _cairn_end: cairn_end,
            })
        });
        match started {
            Ok(watcher) => Some(watcher),
            Err(error) => {
                tracing::warn!(%error, pgid, "no watcher for a bash command: it would outlive a killed cairn");
                None
            }
        }
    }
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

/// Starts `bash -c command` in its own process group, confined by
/// `confinement`; returns it and the read end of its output pipe.
fn spawn(
    command: &str,
    cwd: &PathBuf,
    mut confinement: Option<crate::sandbox::Confinement>,
) -> Result<(tokio::process::Child, tokio::net::unix::pipe::Receiver), ToolError> {
    let (writer, reader) = tokio::net::unix::pipe::pipe()
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
    bash.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: `signal` and `apply` make system calls only (see
    // `sandbox::Confinement`), which is what may run between fork and exec.
    unsafe {
        bash.pre_exec(move || {
            // cairn ignores SIGXFSZ to report a full file itself; a command
            // gets the default back, as in the user's own shell.
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            match confinement.as_mut() {
                Some(confinement) => confinement.apply(),
                None => Ok(()),
            }
        });
    }
    let spawned = bash.spawn();
    // The command holds the pipe's write end until dropped: keep it, and
    // the pipe never reads end-of-file while the shell lives, so every call
    // would wait out the drain timer.
    drop(bash);
    let child = spawned.map_err(|e| ToolError::io("run bash in", cwd, e))?;
    Ok((child, reader))
}

/// Runs `command` to its end, confined by `confinement` (`None`: unconfined).
async fn run_command(
    command: &str,
    cwd: &PathBuf,
    timeout: Duration,
    ctx: &ToolScope,
    confinement: Option<crate::sandbox::Confinement>,
) -> Result<Run, ToolError> {
    let (mut child, mut reader) = spawn(command, cwd, confinement)?;
    let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
    let mut guard = GroupGuard {
        pgid,
        _watcher: pgid.and_then(|pgid| Watcher::start(pgid, cwd)),
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

/// Environment variables commands never see: provider keys would otherwise
/// reach the model (`env`, `printenv`) and the stored tool output. Every
/// variable named like a credential ([`SECRET_SUFFIXES`]), plus the names registered with [`hide_from_commands`]
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

/// Variable names that, by the usual conventions, hold a credential
/// (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`,
/// `MYAPP_PASSWORD`): commands run without them.
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_ACCESS_KEY",
    "_SECRET_KEY",
];

fn hidden_variables() -> Vec<std::ffi::OsString> {
    let registered = HIDDEN
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            let text = name.to_string_lossy();
            SECRET_SUFFIXES.iter().any(|suffix| text.ends_with(suffix))
                || registered.iter().any(|hidden| *hidden == text)
        })
        .collect()
}
