//! Runs one hook: `sh -c COMMAND` in its own process group, the input on
//! stdin, stdout and stderr read (capped), the whole group killed when the
//! timeout passes or the turn is interrupted.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::event::Hook;

/// Most bytes kept of a hook's stdout or stderr: a decision is short, and a
/// chatty hook must not fill memory.
const OUTPUT_CAP: u64 = 256 * 1024;

/// How long output is still read after the hook exited: a background
/// process it left holding the pipe must not keep the turn waiting.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// How a hook ended.
#[derive(Debug)]
pub enum Finish {
    Exited {
        /// None when a signal ended it.
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    Interrupted,
    CannotStart(String),
}

pub async fn run(
    hook: &Hook,
    input: &[u8],
    project_dir: &Path,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Finish {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so that a timeout kills what it started too.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return Finish::CannotStart(error.to_string()),
    };
    // Killed whole if this future is dropped (the turn abandoned) too.
    let mut group = Group(child.id().and_then(|id| i32::try_from(id).ok()));
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A hook that never reads its stdin closes the pipe: not an error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));
    let status = tokio::select! {
        status = tokio::time::timeout(hook.timeout, child.wait()) => status,
        () = cancel.cancelled() => return Finish::Interrupted,
    };
    let status = match status {
        Ok(Ok(status)) => status,
        Ok(Err(error)) => return Finish::CannotStart(error.to_string()),
        Err(_elapsed) => return Finish::TimedOut,
    };
    // It exited by itself: what it left running in the background is the
    // user's business, as with Claude Code.
    group.0 = None;
    let drained = |task: tokio::task::JoinHandle<String>| async move {
        tokio::time::timeout(DRAIN_GRACE, task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    Finish::Exited {
        code: status.code(),
        stdout: drained(stdout).await,
        stderr: drained(stderr).await,
    }
}

async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let Some(pipe) = pipe else {
        return String::new();
    };
    let mut bytes = Vec::new();
    let _ = pipe.take(OUTPUT_CAP).read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The hook's process group, sent SIGKILL when dropped while set.
struct Group(Option<i32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            // SAFETY: kill(2) with a negative pid signals the group the hook
            // leads (process_group(0)); no memory is touched.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
    }
}
