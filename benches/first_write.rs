//! Issue 31: the delay a user sees at the first writing step of a session on
//! a 50,000-file project never snapshotted before, measured through the
//! real session loop. The session takes the project's first snapshot from
//! when it opens; the first writing step waits only for what is left of it.
//!
//! One turn: prompt -> request 1 (the model calls `write` at once) -> the
//! tool -> request 2 -> the answer. The delay is request 1 to request 2 at
//! the scripted server (the write and its snapshot wait), for a prompt sent
//! as the session opens (what `cairn run` does; the whole first snapshot is
//! waited for, as before the change), 3 s after, and once the session's
//! first snapshot is done (a user who typed for a while). Each case has a
//! fresh project and data dir.
//!
//! Run: `cargo bench --bench first_write [-- FILES]` (default 50,000).

#![allow(clippy::unwrap_used, dead_code)]

#[path = "../tests/common/scenario/mod.rs"]
mod scenario;
#[path = "../tests/common/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use cairn::snapshot::{DEFAULT_SNAPSHOT_MAX_FILE_BYTES, Snapshots};
use scenario::{Scenario, text, tool_call};
use serde_json::json;

const FILE_BYTES: usize = 1_000;

fn generate(root: &Path, files: usize) {
    for index in 0..files {
        let dir = root.join(format!("src/d{:03}", index / 200));
        std::fs::create_dir_all(&dir).unwrap();
        let line = format!("line of file {index} with some text to diff\n");
        let content = line.repeat(FILE_BYTES / line.len() + 1);
        std::fs::write(dir.join(format!("f{index}.rs")), &content[..FILE_BYTES]).unwrap();
    }
}

/// When the prompt is sent.
#[derive(Clone, Copy)]
enum Prompt {
    AtOnce,
    After(Duration),
    WhenSnapshotDone,
}

/// Polls until no snapshot holds the store's lock and it has an index.
async fn snapshot_done(store: &Snapshots) {
    loop {
        let free = std::fs::File::open(store.git_dir().join("cairn.lock")).is_ok_and(|file| {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own; released when it closes.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
        });
        if free && store.git_dir().join("index").exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (the first writing step's delay, how long the session was open before the prompt)
async fn first_write(files: usize, prompt: Prompt) -> (Duration, Duration) {
    let scenario = Scenario::with_config(vec![], |c| c.snapshot.enabled = true).await;
    generate(scenario.project.path(), files);
    let store = Snapshots::new(
        scenario.data.path(),
        scenario.project.path(),
        DEFAULT_SNAPSHOT_MAX_FILE_BYTES,
    );
    scenario.server.push(tool_call(
        "call_1",
        "write",
        json!({"path": "src/d000/f0.rs", "content": "written\n"}),
        1_000,
    ));
    scenario.server.push(text("Done.", 1_100));
    let opened = Instant::now();
    let (_, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    match prompt {
        Prompt::AtOnce => {}
        Prompt::After(wait) => tokio::time::sleep(wait).await,
        Prompt::WhenSnapshotDone => snapshot_done(&store).await,
    }
    let typing = opened.elapsed();
    let (code, _, err) = scenario.run(&handle, "go").await;
    assert_eq!(code, 0, "{err}");
    let requests = scenario.server.requests();
    (requests[1].at - requests[0].at, typing)
}

fn main() {
    let files: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50_000);
    // Under `cargo test --all-targets`: a small tree, to check it runs.
    let files = if std::env::args().any(|a| a == "--bench") {
        files
    } else {
        500
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!("{files} files of {FILE_BYTES} bytes, never snapshotted before");
        for (name, prompt) in [
            ("prompt as the session opens (cairn run)", Prompt::AtOnce),
            (
                "prompt 3 s after it opens",
                Prompt::After(Duration::from_secs(3)),
            ),
            (
                "prompt once its first snapshot is done",
                Prompt::WhenSnapshotDone,
            ),
        ] {
            let (delay, typing) = first_write(files, prompt).await;
            println!(
                "{name:<42} (open {:>6.2} s): first writing step waited {:>8.1} ms",
                typing.as_secs_f64(),
                delay.as_secs_f64() * 1000.0
            );
        }
    });
}
