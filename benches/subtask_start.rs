//! The time cairn adds to start a subagent (issue 15, target < 20 ms): from
//! the moment the scripted server has sent the parent's finished `task` call
//! (the stream's `tool_calls` finish chunk) to the moment the child's first
//! request has arrived at the server. In between, all of it cairn's: the
//! call's dispatch, the child session and its first message in SQLite, the
//! child's context, system prompt and tool list, its gauge, and the HTTP
//! request. Real App, real store, real HTTP on localhost.
//!
//! Run: `cargo bench --bench subtask_start [-- RUNS]` (default 40 runs).

use std::time::Duration;

use serde_json::json;

#[path = "../tests/common/scenario/mod.rs"]
#[allow(dead_code)] // the bench uses a few of the scenario helpers
mod scenario;
#[path = "../tests/common/support/mod.rs"]
#[allow(dead_code)] // the bench drives the scripted server one way of many
mod support;

use scenario::{Scenario, chunk, text, usage};
use support::ScriptedResponse;

const DEFAULT_RUNS: usize = 40;
const CALL_DONE: &str = "task call finished";

/// The parent's answer: one complete `task` call; its finish chunk is noted.
fn task_call(run: usize) -> ScriptedResponse {
    let args = json!({ "description": "look around", "prompt": format!("question {run}"), "subagent_type": "explore" });
    ScriptedResponse::sse()
        .chunk(chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"index": 0, "id": format!("call_{run}"), "type": "function", "function": {"name": "task", "arguments": args.to_string()}}]}),
            None,
        ))
        .noted_chunk(chunk(json!({}), Some("tool_calls")), CALL_DONE)
        .chunk(usage(2_000, 40))
        .chunk("data: [DONE]\n\n")
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --all-targets` runs bench targets without `--bench`.
    if !args.iter().any(|arg| arg == "--bench") {
        eprintln!("usage: cargo bench --bench subtask_start [-- RUNS]");
        return Ok(());
    }
    let runs = match args.iter().find(|arg| !arg.starts_with("--")) {
        Some(count) => count.parse()?,
        None => DEFAULT_RUNS,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut times = runtime.block_on(measure(runs));
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "child start, {runs} runs (task call finished -> child's first request arrived): min {:.2} ms, median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        ms(times[0]),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(times[times.len() - 1])
    );
    Ok(())
}

/// One delegated task per run, each in a new session of the same App.
async fn measure(runs: usize) -> Vec<Duration> {
    let scenario = Scenario::start(vec![]).await;
    let mut times = Vec::with_capacity(runs);
    for run in 0..runs {
        scenario.server.script([
            task_call(run),
            text("child answer", 300),
            text("parent answer", 2_100),
        ]);
        let before = scenario.server.requests().len();
        let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
        let (code, _out, err) = scenario.run(&handle, "delegate one question").await;
        assert_eq!(code, 0, "run {run} failed: {err}");
        let requests = scenario.server.requests();
        let child = requests
            .iter()
            .skip(before)
            .filter(|r| r.path.ends_with("/chat/completions"))
            .nth(1)
            .expect("the child's request");
        assert!(
            String::from_utf8_lossy(&child.body).contains("You are explore"),
            "the second request is the child's"
        );
        let (sent, _) = scenario
            .server
            .sent_text()
            .into_iter()
            .find(|(_, text)| text == CALL_DONE)
            .expect("the task call was sent");
        times.push(child.at.saturating_duration_since(sent));
    }
    times
}
