//! A store write that fails during an answer is an error the user sees, with
//! a non-zero exit, never a silent exit 0. The real `cairn run` answers while
//! a second SQLite connection in the test holds the database with
//! `BEGIN EXCLUSIVE` for longer than cairn's busy timeout.

use crate::scenario;
use crate::support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

/// The model's bash call says it is running, then waits for the test's go:
/// its result is the write that meets the lock.
const GATED_COMMAND: &str = "touch ready; while [ ! -e go ]; do sleep 0.05; done; echo ran";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_refused_by_a_locked_database_fails_the_run_loudly() {
    let server = ScriptedServer::start([
        tool_call(
            "call_gate",
            "bash",
            json!({ "command": GATED_COMMAND, "description": "wait for go" }),
            1_000,
        ),
        text("All done.", 1_200),
    ])
    .await;
    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path().join("work");
    std::fs::create_dir_all(work.join(".git")).expect("project dir");
    let config = format!(
        "model = \"scripted/test-model\"\nyolo = true\n\n[provider.scripted]\nwire = \"openai\"\nbase_url = \"{}/v1\"\n\n[provider.scripted.models.\"test-model\"]\ncontext = 200000\noutput = 32000\n",
        server.url()
    );
    std::fs::write(work.join("cairn.toml"), config).expect("write cairn.toml");
    let data: PathBuf = root.path().join("data");
    let mut trust = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
    trust
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.path())
        .env("XDG_CONFIG_HOME", root.path().join("config"))
        .env("CAIRN_DATA_DIR", &data);
    crate::support::trust_project(trust);
    let cairn = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["run", "run the gated command"])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.path())
        .env("XDG_CONFIG_HOME", root.path().join("config"))
        .env("CAIRN_DATA_DIR", &data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cairn");

    let deadline = Instant::now() + Duration::from_secs(30);
    while !work.join("ready").exists() {
        assert!(Instant::now() < deadline, "the bash tool never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lock = rusqlite::Connection::open(data.join("cairn.db")).expect("open the db");
    lock.execute_batch("BEGIN EXCLUSIVE")
        .expect("take the exclusive lock");
    std::fs::write(work.join("go"), "").expect("let the command finish");

    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || cairn.wait_with_output()),
    )
    .await
    .expect("cairn ends while the lock is held")
    .expect("join")
    .expect("wait for cairn");
    lock.execute_batch("ROLLBACK").expect("release the lock");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("database is locked"), "{stderr}");
    assert!(stderr.contains("may NOT be saved"), "{stderr}");
    assert_eq!(
        server.requests().len(),
        1,
        "no answer was asked for after the failure"
    );
}
