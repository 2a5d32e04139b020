//! The project's first snapshot is taken from the session's start (issue
//! #31): a first writing step that comes once the session has been open a
//! while waits only for what changed, not for every file to be hashed; and a
//! write that comes before that snapshot is done waits for it, so `/undo`
//! still brings back the tree as it was before the write.

use crate::project::{Project, describe};
use crate::scenario::{Scenario, text, tool_call};
use crate::support::ScriptedServer;

use std::path::Path;
use std::time::{Duration, Instant};

use cairn::permission::Mode;
use cairn::snapshot::{DEFAULT_SNAPSHOT_MAX_FILE_BYTES, Snapshots};
use serde_json::json;

/// Files enough that hashing them all takes seconds, and re-reading their
/// metadata tens of milliseconds.
const FILES: usize = 6_000;

fn generate(root: &Path) {
    for index in 0..FILES {
        let dir = root.join(format!("src/d{:03}", index / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{index}.rs")),
            format!("file {index}\n").repeat(20),
        )
        .unwrap();
    }
}

/// Waits (polling, up to a minute) until the session's first snapshot is
/// done: the store has an index and no snapshot holds its lock.
async fn snapshot_done(store: &Snapshots) -> Duration {
    let started = Instant::now();
    loop {
        let lock = store.git_dir().join("cairn.lock");
        let free = std::fs::File::open(&lock).is_ok_and(|file| {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own; released when it closes.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
        });
        if free && store.git_dir().join("index").exists() {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no first snapshot"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_writing_step_after_the_session_opened_waits_only_for_what_changed() {
    let scenario = Scenario::with_config(vec![], |c| c.snapshot.enabled = true).await;
    generate(scenario.project.path());
    let store = Snapshots::new(
        scenario.data.path(),
        scenario.project.path(),
        DEFAULT_SNAPSHOT_MAX_FILE_BYTES,
    );
    let opened = Instant::now();
    let (session, handle) = scenario.session(Mode::Headless).await;
    let first_snapshot = snapshot_done(&store).await;
    // The user edits a file while typing: the step's "before" has it.
    std::fs::write(scenario.path("src/d000/f1.rs"), "typed by hand\n").unwrap();
    scenario.server.push(tool_call(
        "call_1",
        "write",
        json!({"path": "src/d000/f0.rs", "content": "written by the model\n"}),
        1_000,
    ));
    scenario.server.push(text("Done.", 1_100));
    let (code, _, err) = scenario.run(&handle, "go").await;
    assert_eq!(code, 0, "{err}");
    let requests = scenario.server.requests();
    let waited = requests[1].at - requests[0].at;
    eprintln!("first snapshot {first_snapshot:?}, first writing step {waited:?}");
    assert!(
        waited * 3 < first_snapshot,
        "the write waited {waited:?}; the first snapshot took {first_snapshot:?} (opened {:?} ago)",
        opened.elapsed()
    );
    // The step's patch: the model's write only, from the tree as it was.
    let history = scenario.history(&session.id).await;
    let patch = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match &p.kind {
            cairn::message::PartKind::Patch(patch) => Some(patch.clone()),
            _ => None,
        })
        .expect("a patch part");
    assert_eq!(patch.files, ["src/d000/f0.rs"]);
    let before = git_show(&store, &patch.hash, "src/d000/f0.rs");
    assert_eq!(before, "file 0\n".repeat(20));
    assert_eq!(
        git_show(&store, &patch.hash, "src/d000/f1.rs"),
        "typed by hand\n"
    );
}

fn git_show(store: &Snapshots, tree: &str, path: &str) -> String {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(store.git_dir())
        .args(["show", &format!("{tree}:{path}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_before_the_first_snapshot_is_done_waits_for_it_and_undo_brings_the_file_back() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "write",
            json!({"path": "src/d000/f0.rs", "content": "written by the model\n"}),
            1_000,
        ),
        text("Done.", 1_100),
    ])
    .await;
    let project = Project::new();
    generate(project.root.path());
    project.use_scripted(&server);
    let output = project.cairn(&["run", "rewrite f0"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(
        project.read("src/d000/f0.rs").unwrap(),
        "written by the model\n"
    );
    project.ok(&["run", "--continue", "/undo"]).await;
    assert_eq!(
        project.read("src/d000/f0.rs").unwrap(),
        "file 0\n".repeat(20),
        "the snapshot before the write has the file as it was"
    );
}
