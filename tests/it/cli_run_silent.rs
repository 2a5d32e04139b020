//! `cairn run` against a server that says nothing (issue #31): one that
//! accepts the connection and never answers, and one that sends its headers
//! and then no event. The user hears about the silence 30 s in (a quarter of
//! the 120 s stall timeout, which no setting shortens), not after the whole
//! 242 s of two stall timeouts and a backoff.

use crate::project::Project;
use crate::support::{ScriptedResponse, ScriptedServer};

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};

/// The notice's words, as the processor says them after 30 s of silence.
const NOTICE: &str = "no response from the server for 30 s; cairn gives up after 120 s of silence";

/// Runs `cairn run` against `silence` and returns how long the first line
/// of stderr naming the silence took; fails the test if it takes 45 s.
async fn time_to_notice(silence: ScriptedResponse) -> Duration {
    let project = Project::new();
    let server = ScriptedServer::start([silence]).await;
    project.use_scripted(&server);
    let started = Instant::now();
    let mut child = project
        .command(&["run", "hello?"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(45), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(NOTICE) {
                return true;
            }
            seen.push(line);
        }
        false
    })
    .await;
    let elapsed = started.elapsed();
    let _ = child.kill().await;
    assert_eq!(found, Ok(true), "stderr so far: {seen:?}");
    assert!(
        elapsed >= Duration::from_secs(29),
        "said too early ({elapsed:?})"
    );
    elapsed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_remarked_on_after_30_s() {
    time_to_notice(ScriptedResponse::no_answer()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_after_its_headers_is_remarked_on_after_30_s() {
    time_to_notice(ScriptedResponse::sse().then_stall()).await;
}
