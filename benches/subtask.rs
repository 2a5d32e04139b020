//! Issue 15's figure: the time cairn adds to start a child session (target
//! under 20 ms). From the moment the parent's `task` call turns running (its
//! part on the bus) to the moment the child's first model request has
//! reached the scripted server: creating the child session, writing its
//! prompt, its context, its loop's first step (prompt, tools, view, request)
//! and the HTTP send. Real store, real tools, in-process scripted server.
//!
//! Run: `cargo bench --bench subtask` (prints min / median / max of 40 runs).

#![allow(clippy::unwrap_used, dead_code)]

#[path = "../tests/common/scenario/mod.rs"]
mod scenario;
#[path = "../tests/common/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use cairn::bus::Event;
use cairn::message::ToolState;
use scenario::{Scenario, text, tool_call};
use serde_json::json;

const RUNS: usize = 40;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let mut gaps = runtime.block_on(measure());
    gaps.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "child start over {RUNS} runs: min {:.2} ms, median {:.2} ms, max {:.2} ms",
        ms(gaps[0]),
        ms(gaps[RUNS / 2]),
        ms(gaps[RUNS - 1])
    );
}

async fn measure() -> Vec<Duration> {
    let scenario = Scenario::start(vec![]).await;
    let mut gaps = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (_, handle) = scenario.session(cairn::permission::Mode::Headless).await;
        for response in [
            tool_call(
                "call_task",
                "task",
                json!({ "description": "look", "prompt": "Say hi.", "subagent_type": "explore" }),
                1_000,
            ),
            text("hi", 500),
            text("The child said hi.", 1_100),
        ] {
            scenario.server.push(response);
        }
        let before = scenario.server.requests().len();
        let mut events = scenario.app.bus.subscribe();
        let running = tokio::spawn(async move {
            loop {
                if let Ok(Event::PartUpdated { part }) = events.recv().await
                    && let Some(tool) = part.as_tool()
                    && tool.tool == "task"
                    && matches!(tool.state, ToolState::Running { .. })
                {
                    return Instant::now();
                }
            }
        });
        let (code, _, err) = scenario.run(&handle, "delegate").await;
        assert_eq!(code, 0, "{err}");
        let started = running.await.expect("the task ran");
        let requests = scenario.server.requests();
        assert_eq!(requests.len(), before + 3, "parent, child, parent");
        gaps.push(requests[before + 1].at.duration_since(started));
    }
    gaps
}
