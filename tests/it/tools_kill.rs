//! A bash tool's processes die with cairn, and the session says the tool was
//! interrupted. The real `cairn run` runs a scripted bash call that starts a
//! long `sleep` and records its pid; the test then kills cairn (kill -9,
//! SIGTERM, SIGHUP, SIGINT) as soon as that pid file appears, and watches the
//! `sleep` process go away.

use crate::scenario;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn::message::ToolState;
use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

/// The command the model runs: its `sleep` would outlive a killed cairn, and
/// `done` appears only if the command was never stopped.
const LONG_COMMAND: &str = "sleep 30 & echo $! > sleeper.pid; wait; touch done";
/// How long the processes may take to go away once cairn is gone.
const PROMPTLY: Duration = Duration::from_secs(10);

struct Project {
    root: tempfile::TempDir,
}

impl Project {
    fn new(server: &ScriptedServer) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(root.path().join("work/.git")).expect("project dir");
        let config = format!(
            "model = \"scripted/test-model\"\nyolo = true\n\n[provider.scripted]\nwire = \"openai\"\nbase_url = \"{}/v1\"\n\n[provider.scripted.models.\"test-model\"]\ncontext = 200000\noutput = 32000\n",
            server.url()
        );
        std::fs::write(root.path().join("work/cairn.toml"), config).expect("write cairn.toml");
        let project = Self { root };
        let mut trust = Command::new(env!("CARGO_BIN_EXE_cairn"));
        trust
            .current_dir(project.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", project.root.path())
            .env("XDG_CONFIG_HOME", project.root.path().join("config"))
            .env("CAIRN_DATA_DIR", project.root.path().join("data"));
        crate::support::trust_project(trust);
        project
    }

    fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    fn spawn(&self, args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.path())
            .env("XDG_CONFIG_HOME", self.root.path().join("config"))
            .env("CAIRN_DATA_DIR", self.root.path().join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cairn")
    }

    /// Waits for the command to record its `sleep` pid.
    async fn sleeper_pid(&self) -> i32 {
        let file = self.work().join("sleeper.pid");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(pid) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "the bash tool never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn last_tool_state(&self) -> ToolState {
        let store = cairn::store::Store::open(&self.root.path().join("data/cairn.db"))
            .expect("open the session store");
        let sessions = store.list_sessions(10).await.expect("list sessions");
        let history = store.read_all(&sessions[0].id).await.expect("read session");
        history
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|p| p.as_tool())
            .next_back()
            .expect("a tool part")
            .state
            .clone()
    }
}

/// A process is gone once it no longer exists or is a zombie nobody reaped yet.
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn assert_gone_soon(pid: i32, work: &Path) {
    let deadline = Instant::now() + PROMPTLY;
    while !is_gone(pid) {
        if Instant::now() > deadline {
            // SAFETY: kill(2) on a pid the test itself observed; cleanup only.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the tool's `sleep` (pid {pid}) outlived cairn by {PROMPTLY:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!work.join("done").exists(), "the command ran to its end");
}

fn signal(child: &Child, signal: i32) {
    let pid = i32::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) on the child this test spawned.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(sent, 0, "signal cairn");
}

fn scripted_bash() -> support::ScriptedResponse {
    tool_call(
        "call_sleep",
        "bash",
        json!({ "command": LONG_COMMAND, "description": "sleep long" }),
        1_000,
    )
}

fn is_interrupted(state: &ToolState) -> bool {
    matches!(state, ToolState::Error { error, .. } if error.contains("interrupt") || error.contains("aborted"))
        || matches!(state, ToolState::Error { metadata: Some(meta), .. } if meta["interrupted"] == true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_cairn_kills_the_tool_and_reopening_marks_it_interrupted() {
    let server = ScriptedServer::start([scripted_bash(), text("Resumed.", 1_200)]).await;
    let project = Project::new(&server);
    let mut cairn = project.spawn(&["run", "sleep for a while"]);
    let sleeper = project.sleeper_pid().await;
    cairn.kill().expect("kill -9 cairn");
    let _ = cairn.wait();
    assert_gone_soon(sleeper, &project.work()).await;

    let resumed = project.spawn(&["run", "--continue", "go on"]);
    let output = tokio::task::spawn_blocking(move || resumed.wait_with_output())
        .await
        .expect("join")
        .expect("wait for cairn --continue");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let state = project.last_tool_state().await;
    assert!(is_interrupted(&state), "the killed tool is {state:?}");
}

/// SIGTERM, SIGHUP and SIGINT end the run promptly, kill the tool's
/// processes and record the tool as interrupted, with no reopen needed.
async fn stop_signal_ends_the_run_and_the_tool(number: i32, name: &str) {
    let server = ScriptedServer::start([scripted_bash()]).await;
    let project = Project::new(&server);
    let cairn = project.spawn(&["run", "sleep for a while"]);
    let sleeper = project.sleeper_pid().await;
    signal(&cairn, number);
    let waited = tokio::time::timeout(
        PROMPTLY,
        tokio::task::spawn_blocking(move || cairn.wait_with_output()),
    )
    .await;
    let output = waited
        .unwrap_or_else(|_| panic!("cairn still running {PROMPTLY:?} after {name}"))
        .expect("join")
        .expect("wait for cairn");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!("{name}: interrupting")),
        "{stderr}"
    );
    assert_gone_soon(sleeper, &project.work()).await;
    let state = project.last_tool_state().await;
    assert!(is_interrupted(&state), "the stopped tool is {state:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_run_and_the_tool() {
    stop_signal_ends_the_run_and_the_tool(libc::SIGTERM, "SIGTERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_ends_the_run_and_the_tool() {
    stop_signal_ends_the_run_and_the_tool(libc::SIGHUP, "SIGHUP").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_the_run_and_the_tool() {
    stop_signal_ends_the_run_and_the_tool(libc::SIGINT, "Ctrl+C").await;
}
