//! Issue 14's last figure: what snapshots add to a step, measured through
//! the real session loop on a generated project of 10,000 files (50 MB).
//!
//! A turn is one tool step and a final answer: prompt -> request 1 (the
//! model calls one tool) -> the tool -> request 2 (the answer) -> idle. It is
//! timed with snapshots on and off for three kinds of step (an edit-only
//! step: `write` of one file; a read-only `bash` step: `grep`; a writing
//! `bash` step: `echo > file`), with the scripted model answering each
//! request at once and after a first-token latency of [`LATENCY`]. Wall time
//! is prompt to idle (the patch is written by then); CPU time is this
//! process's and its reaped children's (`git`) user + system time over the
//! same turns. Real store, real tools, in-process scripted server.
//!
//! Run: `cargo bench --bench step_overhead [-- RUNS]` (median of RUNS,
//! default 7).

#![allow(clippy::unwrap_used, dead_code)]

#[path = "../tests/common/scenario/mod.rs"]
mod scenario;
#[path = "../tests/common/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use scenario::{Scenario, chunk, usage};
use serde_json::{Value, json};
use support::ScriptedResponse;

const FILES: usize = 10_000;
const FILE_BYTES: usize = 5_000;
/// A realistic time to first token of a hosted model.
const LATENCY: Duration = Duration::from_millis(300);

#[derive(Clone, Copy)]
enum Kind {
    EditOnly,
    ReadOnlyBash,
    WritingBash,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::EditOnly => "edit-only step (write one file)",
            Kind::ReadOnlyBash => "read-only bash step (grep)",
            Kind::WritingBash => "writing bash step (echo > file)",
        }
    }

    fn call(self, run: usize) -> (&'static str, Value) {
        match self {
            Kind::EditOnly => (
                "write",
                json!({ "path": format!("notes/run{run}.txt"), "content": format!("run {run}\n") }),
            ),
            Kind::ReadOnlyBash => (
                "bash",
                json!({ "command": "grep -c 'line of file 4200' src/d042/f4200.rs" }),
            ),
            Kind::WritingBash => (
                "bash",
                json!({ "command": format!("echo run {run} > out{run}.txt") }),
            ),
        }
    }
}

fn generate(root: &Path) {
    for index in 0..FILES {
        let dir = root.join(format!("src/d{:03}", index / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let line = format!("line of file {index} with some text to diff\n");
        let content = line.repeat(FILE_BYTES / line.len() + 1);
        std::fs::write(dir.join(format!("f{index}.rs")), &content[..FILE_BYTES]).expect("write");
    }
}

/// `tool_call` with the first byte held back `latency`.
fn tool_call(latency: Duration, id: &str, name: &str, arguments: &Value) -> ScriptedResponse {
    ScriptedResponse::sse()
        .delay(latency)
        .chunk(chunk(json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}), None))
        .chunk(chunk(json!({}), Some("tool_calls")))
        .chunk(usage(1_000, 30))
        .chunk("data: [DONE]\n\n")
}

/// User + system CPU time of this process and its reaped children.
fn cpu() -> Duration {
    let time = |who| {
        // SAFETY: getrusage only writes the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut usage) };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        tv(usage.ru_utime) + tv(usage.ru_stime)
    };
    time(libc::RUSAGE_SELF) + time(libc::RUSAGE_CHILDREN)
}

struct Measured {
    wall: Duration,
    cpu: Duration,
}

async fn turns(scenario: &Scenario, kind: Kind, latency: Duration, runs: usize) -> Measured {
    let (_, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    // The first turn of a session pays the first snapshot: not a step's cost.
    let mut walls = Vec::new();
    let mut cpu_measured = Duration::ZERO;
    for run in 0..=runs {
        let (name, input) = kind.call(run);
        scenario
            .server
            .push(tool_call(latency, &format!("call_{run}"), name, &input));
        scenario
            .server
            .push(scenario::delayed_text(latency, "Done.", 1_100));
        let cpu_before = cpu();
        let started = Instant::now();
        let (code, _, err) = scenario.run(&handle, "go").await;
        let wall = started.elapsed();
        assert_eq!(code, 0, "{err}");
        if run > 0 {
            walls.push(wall);
            cpu_measured += cpu() - cpu_before;
        }
    }
    walls.sort();
    Measured {
        wall: walls[walls.len() / 2],
        cpu: cpu_measured / runs as u32,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes `--bench`; under `cargo test --all-targets` one
    // turn of each kind checks that the bench still runs, quickly.
    let measuring = std::env::args().any(|a| a == "--bench");
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(if measuring { 7 } else { 1 });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let on = Scenario::with_config(vec![], |c| c.snapshot.enabled = true).await;
        let off = Scenario::with_config(vec![], |c| c.snapshot.enabled = false).await;
        generate(on.project.path());
        generate(off.project.path());
        println!(
            "{FILES} files, {} MB; median of {runs} turns (one tool step + the answer), \
             prompt to idle; CPU = this process + git children, mean per turn",
            FILES * FILE_BYTES / 1_000_000
        );
        for latency in [Duration::ZERO, LATENCY] {
            for kind in [Kind::EditOnly, Kind::ReadOnlyBash, Kind::WritingBash] {
                let without = turns(&off, kind, latency, runs).await;
                let with = turns(&on, kind, latency, runs).await;
                let added = with.wall.saturating_sub(without.wall);
                println!(
                    "first token {:>6}, {:<32} off {:>9} on {:>9}: +{} wall ({:+.1}%), CPU {} -> {} (+{})",
                    ms(latency),
                    kind.name(),
                    ms(without.wall),
                    ms(with.wall),
                    ms(added),
                    (with.wall.as_secs_f64() / without.wall.as_secs_f64() - 1.0) * 100.0,
                    ms(without.cpu),
                    ms(with.cpu),
                    ms(with.cpu.saturating_sub(without.cpu)),
                );
            }
        }
    });
}
