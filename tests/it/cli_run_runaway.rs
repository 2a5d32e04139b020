//! A server that streams without end, through `cairn run` (issue #31): the
//! stream is cut at 256 MiB as before, but cairn's memory stays far below
//! the cut, the data dir keeps a bounded record of the answer, and the
//! session reopens cheaply, with no compaction a runaway answer would
//! otherwise trigger. Peak memory is the kernel's figure (`/usr/bin/time -v`).

use crate::project::{Project, describe, text_of};
use crate::scenario::{chunk, text};
use crate::support::{ScriptedResponse, ScriptedServer};

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

/// One delta of 64 KiB of text.
const DELTA_BYTES: usize = 64 * 1024;

/// Deltas enough to pass the 256 MiB cut.
const DELTAS: usize = 256 * 1024 * 1024 / DELTA_BYTES + 64;

/// An answer streaming 64 KiB deltas past the cut.
fn endless() -> ScriptedResponse {
    let words = "runaway ".repeat(DELTA_BYTES / 8);
    ScriptedResponse::sse()
        .chunk(chunk(json!({"role": "assistant", "content": ""}), None))
        .chunk_repeated(chunk(json!({ "content": words }), None), DELTAS)
}

/// Runs `cairn args` under `/usr/bin/time -v`: the output, the peak
/// resident memory in MiB, and the wall time.
async fn measured(project: &Project, args: &[&str]) -> (std::process::Output, u64, Duration) {
    let command = project.command(args);
    let program = command.as_std().get_program().to_owned();
    let mut timed = tokio::process::Command::new("/usr/bin/time");
    timed
        .arg("-v")
        .arg(program)
        .args(command.as_std().get_args());
    timed
        .current_dir(project.root.path())
        .env_clear()
        .envs(
            command
                .as_std()
                .get_envs()
                .filter_map(|(key, value)| Some((key, value?))),
        )
        .stdin(std::process::Stdio::null());
    let started = Instant::now();
    let output = tokio::time::timeout(Duration::from_secs(300), timed.output())
        .await
        .expect("cairn finishes")
        .unwrap();
    let elapsed = started.elapsed();
    let stderr = text_of(&output.stderr);
    let peak_kib: u64 = stderr
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {stderr}"));
    (output, peak_kib / 1024, elapsed)
}

fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_stream_is_cut_in_bounded_memory_and_the_session_reopens_cheaply() {
    let server = ScriptedServer::start([endless(), text("Back to normal.", 900)]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let (output, peak_mib, elapsed) = measured(&project, &["run", "write forever"]).await;
    eprintln!("runaway run: peak {peak_mib} MiB, {elapsed:?}");
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        text_of(&output.stderr).contains("passed 256 MiB without ending"),
        "{}",
        describe(&output)
    );
    assert!(
        peak_mib < 160,
        "peak memory {peak_mib} MiB under a runaway stream"
    );
    let data = size_of(&project.data_dir()) / (1024 * 1024);
    eprintln!("data dir after it: {data} MiB");
    assert!(data < 32, "the data dir grew to {data} MiB");

    let (output, peak_mib, elapsed) = measured(&project, &["run", "--continue", "and now?"]).await;
    eprintln!("--continue after it: peak {peak_mib} MiB, {elapsed:?}");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Back to normal.\n");
    let stderr = text_of(&output.stderr);
    assert!(!stderr.contains("compact"), "no compaction: {stderr}");
    assert!(peak_mib < 100, "--continue took {peak_mib} MiB");
    let sent = server.requests().last().unwrap().body.len();
    assert!(sent < 512 * 1024, "{sent} bytes sent");
    // The record of the runaway answer: its head and a marker.
    let db = rusqlite::Connection::open(project.data_dir().join("cairn.db")).unwrap();
    let kept: String = db
        .query_row(
            "SELECT data FROM part WHERE type = 'text' ORDER BY length(data) DESC LIMIT 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(kept.len() < 80 * 1024, "{} bytes kept", kept.len());
    assert!(kept.contains("runaway runaway"), "the head is kept");
    assert!(
        kept.contains("passed 4 MiB without ending"),
        "{}",
        &kept[kept.len() - 200..]
    );
}
