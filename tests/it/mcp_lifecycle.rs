//! An MCP server's life as the user sees it (issue #32): a server that dies
//! (mid-call, while idle, over HTTP) is marked failed at once, its tools are
//! withdrawn from the next request and the failure is said; Ctrl+C or
//! SIGTERM while `cairn run` waits for a slow server stops at once and
//! leaves no server process behind. Servers are the fixture
//! (examples/mcp_fixture.rs) and a shell script that starts slowly.

use crate::mcp_client::fixture;
use crate::mcp_http::HttpFixture;
use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support::ScriptedServer;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::mcp::{Hub, ServerConfig, State};
use cairn::tool::Registry;
use serde_json::json;

/// Rust type names leaked from rmcp's errors: the model must not see them.
const TYPE_NAME_MARKS: [&str; 3] = ["rmcp::", "cairn::", "::<"];

fn fixture_server(args: &[&str], timeout: u64) -> ServerConfig {
    ServerConfig {
        command: Some(fixture()),
        args: args.iter().map(|a| a.to_string()).collect(),
        timeout: Some(timeout),
        ..Default::default()
    }
}

async fn ready_hub(servers: BTreeMap<String, ServerConfig>) -> (Arc<Hub>, Registry) {
    let hub = Hub::new(servers);
    hub.start();
    hub.wait_ready(Duration::from_secs(30)).await;
    (hub.clone(), Registry::builtin().with_mcp(hub))
}

/// Waits (on the hub's change events) until `name` is in `state`.
async fn until_state(hub: &Hub, name: &str, state: State, limit: Duration) -> bool {
    let mut changes = hub.subscribe();
    let reached = async {
        loop {
            if hub
                .statuses()
                .iter()
                .any(|s| s.name == name && s.state == state)
            {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    };
    tokio::time::timeout(limit, reached).await.is_ok()
}

/// The model calls `fx_crash`, then answers: the second request must not
/// offer the dead server's tools, and the call's error says what happened
/// without Rust type names; `cairn run` says the failure on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_is_withdrawn_and_said() {
    let server = ScriptedServer::start([
        scenario::tool_call("call_1", "fx_crash", json!({}), 200),
        scenario::text("Done.", 300),
    ])
    .await;
    let project = Project::new();
    let tables = format!(
        "[mcp.fx]\ncommand = {:?}\ntimeout = 30\n\n[permission.mcp]\n\"*\" = \"allow\"\n",
        fixture()
    );
    project.use_scripted_with(&server, "", &tables);
    let output = project.cairn(&["run", "crash it"]).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&output));
    let offered = |n: usize| -> Vec<String> {
        requests[n].json()["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .filter(|name| name.starts_with("fx_"))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        !offered(0).is_empty(),
        "the first request offers fx's tools"
    );
    assert_eq!(
        offered(1),
        Vec::<String>::new(),
        "withdrawn after the crash"
    );
    let sent = requests[1].json().to_string();
    assert!(sent.contains("MCP server `fx`"), "{sent}");
    for mark in TYPE_NAME_MARKS {
        assert!(!sent.contains(mark), "{mark} in {sent}");
    }
    let stderr = text_of(&output.stderr);
    assert!(stderr.contains("cairn: MCP fx failed"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
}

/// A server that exits on its own, no call running, is failed at once (on
/// the event, not at the next call) and its tools are gone; a restart
/// brings it back.
#[tokio::test]
async fn a_server_that_dies_while_idle_is_failed_at_once_and_restarts() {
    let (hub, _registry) = ready_hub(BTreeMap::from([(
        "fx".into(),
        fixture_server(&["--exit-after-ms", "700"], 10),
    )]))
    .await;
    assert!(!hub.specs().is_empty(), "ready first");
    assert!(
        until_state(&hub, "fx", State::Failed, Duration::from_secs(5)).await,
        "still {:?}",
        hub.statuses()
    );
    assert!(hub.specs().is_empty(), "tools withdrawn");
    let error = hub.statuses()[0].last_error.clone().unwrap_or_default();
    assert!(error.contains("exited"), "{error}");
    assert!(hub.restart("fx"));
    assert!(until_state(&hub, "fx", State::Ready, Duration::from_secs(10)).await);
}

/// An HTTP server that dies mid-call fails the call within seconds, not
/// after the call's 30 s timeout, with no Rust type names, and is failed.
#[tokio::test]
async fn an_http_server_that_dies_mid_call_fails_the_call_promptly() {
    let remote = HttpFixture::start(&[]);
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), remote.config(30, &[]))])).await;
    let ctx = crate::tools_common::Project::new().context();
    let started = Instant::now();
    let error = registry
        .run("fx_crash", json!({}), &ctx)
        .await
        .expect_err("the server exits mid-call");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    let text = error.to_string();
    assert!(text.contains("MCP server `fx`"), "{text}");
    for mark in TYPE_NAME_MARKS {
        assert!(!text.contains(mark), "{mark} in {text}");
    }
    assert!(
        until_state(&hub, "fx", State::Failed, Duration::from_secs(5)).await,
        "{:?}",
        hub.statuses()
    );
    assert!(hub.specs().is_empty());
}

/// A server that records its pid and its child's, then never answers.
const SLOW_SERVER: &str =
    "sleep 120 &\necho $! > \"$1/child.pid\"\necho $$ > \"$1/server.pid\"\nwait\n";

fn read_pid(path: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A process is gone once it no longer exists or is a zombie nobody reaped.
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Ctrl+C (130) and SIGTERM (143) while `cairn run` waits for a server
/// still starting: cairn exits at once, the prompt is never sent, and
/// neither the server nor the process it started is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_while_waiting_for_servers_stops_at_once_and_kills_them() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let server = ScriptedServer::start([scenario::text("Hi.", 300)]).await;
        let project = Project::new();
        let dir = project.path("pids");
        std::fs::create_dir_all(&dir).expect("pid dir");
        std::fs::write(project.path("slow.sh"), SLOW_SERVER).expect("write slow.sh");
        let tables = format!(
            "[mcp.slow]\ncommand = \"sh\"\nargs = [{:?}, {:?}]\ntimeout = 60\n",
            project.path("slow.sh").display().to_string(),
            dir.display().to_string()
        );
        project.use_scripted_with(&server, "yolo = true\n", &tables);
        let mut command = project.command(&["run", "hello"]);
        command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = command.spawn().expect("spawn cairn");
        let deadline = Instant::now() + Duration::from_secs(20);
        let (server_pid, child_pid) = loop {
            if let (Some(a), Some(b)) = (
                read_pid(&dir.join("server.pid")),
                read_pid(&dir.join("child.pid")),
            ) {
                break (a, b);
            }
            assert!(Instant::now() < deadline, "the slow server never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let pid = i32::try_from(child.id().expect("running")).expect("pid fits");
        let sent_at = Instant::now();
        // SAFETY: kill(2) on the child this test spawned.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let output = tokio::time::timeout(Duration::from_secs(5), child.wait_with_output())
            .await
            .expect("cairn stops within 5 s of the signal")
            .expect("wait for cairn");
        let took = sent_at.elapsed();
        assert!(
            took < Duration::from_secs(3),
            "signal {signal}: took {took:?}"
        );
        assert_eq!(output.status.code(), Some(code), "{}", describe(&output));
        assert!(server.requests().is_empty(), "the prompt was not sent");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut left: Vec<i32> = vec![server_pid, child_pid];
        while !left.is_empty() && Instant::now() < deadline {
            left.retain(|pid| !is_gone(*pid));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for pid in &left {
            // SAFETY: kill(2) on a pid the test observed; cleanup only.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        assert!(
            left.is_empty(),
            "signal {signal}: {} server processes left running",
            left.len()
        );
    }
}
