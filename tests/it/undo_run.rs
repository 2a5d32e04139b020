//! `/undo` and `/redo` through the real binary (issue #14): a turn that edits
//! a file and makes one with `bash -c`, taken back by `cairn run --continue
//! "/undo"` and brought back by `"/redo"`, against a scripted server; `/diff`
//! prints the changes; an undo right after `/compact` removes the compaction.

use crate::project::{Project, describe};
use crate::scenario;
use crate::support;

use std::collections::BTreeMap;
use std::path::Path;

use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

/// A git project with one committed file, `notes.txt`, on the scripted
/// server. `bash -c` always asks unless --yolo (see config.example.toml), and
/// a headless run cannot answer: the project allows everything.
fn committed_project(server: &ScriptedServer) -> Project {
    let project = Project::new();
    std::fs::write(project.path("notes.txt"), "teh cat sat\n").expect("write notes");
    project.use_scripted(server);
    project.git(&["add", "."]);
    project.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "base",
    ]);
    project
}

/// Every byte under `dir` (the user's `.git`, compared before and after).
pub(crate) fn read_all(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                files.insert(path.display().to_string(), bytes);
            }
        }
    }
    files
}

/// The non-system message contents of a recorded request.
fn said(server: &ScriptedServer, index: usize) -> String {
    server.requests()[index].json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_takes_back_an_edit_and_a_bash_file_and_redo_brings_them_back() {
    let server = ScriptedServer::start([
        text("Hello there.", 300),
        tool_call(
            "call_1",
            "edit",
            json!({ "file_path": "notes.txt", "old_string": "teh", "new_string": "the" }),
            1_000,
        ),
        tool_call(
            "call_2",
            "bash",
            json!({ "command": "bash -c 'echo x > new.txt'" }),
            1_100,
        ),
        text("Fixed it and made new.txt.", 1_200),
        text("Nothing else to fix.", 1_300),
    ])
    .await;
    let project = committed_project(&server);
    project.ok(&["run", "say hello"]).await;
    let user_git = read_all(&project.path(".git"));
    project.ok(&["run", "--continue", "fix notes.txt"]).await;
    assert_eq!(project.read("notes.txt").as_deref(), Some("the cat sat\n"));
    assert_eq!(project.read("new.txt").as_deref(), Some("x\n"));
    assert_eq!(server.requests().len(), 4);

    let diff = project.ok(&["run", "--continue", "/diff"]).await;
    assert!(diff.contains("--- a/notes.txt"), "{diff}");
    assert!(diff.contains("-teh cat sat\n+the cat sat"), "{diff}");
    assert!(diff.contains("+++ b/new.txt"), "{diff}");
    assert!(diff.contains("+x"), "{diff}");

    let undone = project.ok(&["run", "--continue", "/undo"]).await;
    assert!(undone.contains("prompt: fix notes.txt"), "{undone}");
    assert_eq!(project.read("notes.txt").as_deref(), Some("teh cat sat\n"));
    assert_eq!(project.read("new.txt"), None, "{undone}");

    let redone = project.ok(&["run", "--continue", "/redo"]).await;
    assert!(redone.contains("new.txt"), "{redone}");
    assert_eq!(project.read("notes.txt").as_deref(), Some("the cat sat\n"));
    assert_eq!(project.read("new.txt").as_deref(), Some("x\n"));

    project.ok(&["run", "--continue", "/undo"]).await;
    let diff = project.ok(&["run", "--continue", "/diff"]).await;
    assert_eq!(
        diff.trim(),
        "no files changed in this session",
        "undone turns leave the diff"
    );
    assert_eq!(
        server.requests().len(),
        4,
        "undo, redo and diff call no model"
    );
    project.ok(&["run", "--continue", "anything else?"]).await;
    let next = said(&server, 4);
    assert!(next.contains("say hello"), "{next}");
    assert!(next.contains("anything else?"), "{next}");
    assert!(!next.contains("fix notes.txt"), "{next}");
    assert!(!next.contains("call_1"), "{next}");
    assert_eq!(project.read("new.txt"), None);

    let refused = project.cairn(&["run", "--continue", "/redo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("a new message was sent"),
        "{}",
        describe(&refused)
    );
    assert_eq!(
        read_all(&project.path(".git")),
        user_git,
        "the user's .git is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_refuses_to_overwrite_a_hand_edit_unless_forced() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "edit",
            json!({ "file_path": "notes.txt", "old_string": "teh", "new_string": "the" }),
            1_000,
        ),
        text("Fixed.", 1_100),
    ])
    .await;
    let project = committed_project(&server);
    project.ok(&["run", "fix notes.txt"]).await;
    std::fs::write(project.path("notes.txt"), "my own words\n").expect("hand edit");

    let refused = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("notes.txt changed since the turn"),
        "{stderr}"
    );
    assert_eq!(project.read("notes.txt").as_deref(), Some("my own words\n"));

    project.ok(&["run", "--continue", "/undo --force"]).await;
    assert_eq!(project.read("notes.txt").as_deref(), Some("teh cat sat\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_right_after_a_compaction_gives_the_model_the_full_history_again() {
    let server = ScriptedServer::start([
        text("The capital is Paris.", 300),
        text("SUMMARY: the user asked about France.", 400),
        text("Berlin.", 500),
    ])
    .await;
    let project = committed_project(&server);
    project.ok(&["run", "what is the capital of France?"]).await;
    project.ok(&["run", "--continue", "/compact"]).await;
    assert_eq!(server.requests().len(), 2, "the answer, then the summary");

    let undone = project.ok(&["run", "--continue", "/undo"]).await;
    assert!(
        undone.contains("compaction removed") && undone.contains("tokens"),
        "says the compaction point is gone and how big the context will be: {undone}"
    );
    assert_eq!(server.requests().len(), 2, "the undo calls no model");

    project.ok(&["run", "--continue", "and Germany?"]).await;
    let next = said(&server, 2);
    assert!(next.contains("what is the capital of France?"), "{next}");
    assert!(next.contains("The capital is Paris."), "{next}");
    assert!(next.contains("and Germany?"), "{next}");
    assert!(
        !next.contains("SUMMARY"),
        "the summary left the model's view: {next}"
    );
}

/// The `patch` parts a `cairn run --format json` printed, as (path, by).
fn patches(stdout: &str) -> Vec<Vec<(String, String)>> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"] == "part_updated" && event["part"]["type"] == "patch")
        .map(|event| {
            event["part"]["changes"]
                .as_array()
                .expect("changes")
                .iter()
                .map(|c| {
                    let field = |name: &str| c[name].as_str().unwrap_or_default().to_owned();
                    (field("path"), field("by"))
                })
                .collect()
        })
        .collect()
}

/// Read-only `bash` lines (issue #14, the step overhead) leave no patch;
/// one that writes, hidden behind a read (`ls; ...`), records its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_bash_step_records_no_patch_and_a_writing_one_does() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "ls -la && git status --short && cat notes.txt | wc -l" }),
            1_000,
        ),
        tool_call(
            "call_2",
            "bash",
            json!({ "command": "grep -n cat notes.txt 2>/dev/null" }),
            1_050,
        ),
        text("Looked around.", 1_100),
        tool_call(
            "call_3",
            "bash",
            json!({ "command": "ls; cat notes.txt > copy.txt" }),
            1_200,
        ),
        text("Copied.", 1_300),
    ])
    .await;
    let project = committed_project(&server);
    let looked = project
        .ok(&["run", "--format", "json", "look around"])
        .await;
    assert_eq!(patches(&looked), Vec::<Vec<(String, String)>>::new());
    assert!(looked.contains("teh cat sat"), "the reads ran: {looked}");

    let copied = project
        .ok(&["run", "--format", "json", "--continue", "copy"])
        .await;
    assert_eq!(
        patches(&copied),
        vec![vec![("copy.txt".to_owned(), "bash".to_owned())]]
    );
    project.ok(&["run", "--continue", "/undo"]).await;
    assert_eq!(project.read("copy.txt"), None);
}

/// The "after" snapshot runs while the next request streams; on a tree big
/// enough for it to take a while and a model answering at once, its patch
/// must still be written before `cairn run` exits, so that `/undo` sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deferred_patch_is_written_before_cairn_run_exits() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "echo x > new.txt && rm src/d0/f77.txt" }),
            1_000,
        ),
        text("Done.", 1_100),
    ])
    .await;
    let project = committed_project(&server);
    for index in 0..3_000 {
        let dir = project.path(&format!("src/d{}", index / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("f{index}.txt")), format!("file {index}\n"))
            .expect("write");
    }
    let out = project
        .ok(&["run", "--format", "json", "change things"])
        .await;
    let recorded = patches(&out);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let mut paths: Vec<&str> = recorded[0].iter().map(|(path, _)| path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["new.txt", "src/d0/f77.txt"]);
    let lines: Vec<&str> = out.lines().collect();
    let status = lines
        .iter()
        .rposition(|line| line.contains("\"idle\""))
        .expect("idle");
    let patch = lines
        .iter()
        .position(|line| line.contains("\"type\":\"patch\""))
        .expect("patch");
    assert!(patch < status, "the patch comes before idle");

    project.ok(&["run", "--continue", "/undo"]).await;
    assert_eq!(project.read("new.txt"), None);
    assert_eq!(project.read("src/d0/f77.txt").as_deref(), Some("file 77\n"));
}

/// `cairn run` and its `git` are SIGKILLed while git holds the snapshot
/// store's `index.lock` (the first snapshot of a big tree): the next run
/// must record its step and `/undo` must take it back, not fail on the lock
/// forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_mid_snapshot_leaves_snapshots_and_undo_working() {
    let server = ScriptedServer::start([
        // Held back until the kill: the first snapshot runs meanwhile.
        support::ScriptedResponse::no_answer(),
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "echo x > new.txt" }),
            1_000,
        ),
        text("Done.", 1_100),
    ])
    .await;
    let project = committed_project(&server);
    for index in 0..5_000 {
        let dir = project.path(&format!("src/d{}", index / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("f{index}.txt")), format!("file {index}\n"))
            .expect("write");
    }
    let mut command = project.command(&["run", "first"]);
    command.process_group(0);
    let child = command.spawn().expect("start cairn");
    let group = child.id().expect("running") as i32;
    let store = project.data_dir().join("snapshot");
    let lock = tokio::time::timeout(std::time::Duration::from_secs(50), async {
        loop {
            let held = std::fs::read_dir(&store).ok().and_then(|mut dirs| {
                dirs.find_map(|d| {
                    let lock = d.ok()?.path().join("index.lock");
                    lock.exists().then_some(lock)
                })
            });
            if let Some(lock) = held {
                return lock;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("git takes the store's index.lock during the first snapshot");
    // SAFETY: kill only sends a signal to the group the test started.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGKILL) }, 0);
    let _ = child.wait_with_output().await;
    assert!(lock.exists(), "the killed git left its lock");

    let out = project
        .ok(&["run", "--format", "json", "--continue", "again"])
        .await;
    assert_eq!(
        patches(&out),
        vec![vec![("new.txt".to_owned(), "bash".to_owned())]]
    );
    project.ok(&["run", "--continue", "/undo"]).await;
    assert_eq!(project.read("new.txt"), None);
}

/// A read-only step takes no "after" snapshot at all, seen from outside:
/// an `ls` on `PATH` (outside the project, so trusted by name) that writes
/// a file anyway, after the turn's first snapshot, leaves no patch of its
/// own; the file is recorded by the next writing step of the turn, whose
/// "before" is that first snapshot, and `/undo` takes both back. (Were the
/// `ls` step snapshotted, its own patch would name the file.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_step_takes_no_snapshot_the_next_writing_step_records_its_files() {
    let server = ScriptedServer::start([
        tool_call("call_1", "bash", json!({ "command": "ls" }), 1_000),
        tool_call(
            "call_2",
            "bash",
            json!({ "command": "echo w > w.txt" }),
            1_100,
        ),
        text("Done.", 1_200),
    ])
    .await;
    let project = committed_project(&server);
    let tools = tempfile::tempdir().expect("tools dir");
    // It writes once the turn's "before" snapshot is taken: the second
    // snapshot (the first is the session's warm-up), counted by a `git`
    // that notes each `write-tree`, once the store lock (held through a
    // snapshot) is free.
    let store = project.data_dir().join("snapshot");
    let trees = tools.path().join("trees");
    let script = format!(
        "#!/bin/sh\n\
         until [ \"$(cat {trees} 2>/dev/null | wc -l)\" -ge 2 ]; do sleep 0.01; done\n\
         for lock in {store}/*/cairn.lock; do flock \"$lock\" sh -c 'echo sneaky > sneaky.txt'; done\n\
         exec /bin/ls \"$@\"\n",
        store = store.display(),
        trees = trees.display(),
    );
    let real_git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("find git");
    let git = format!(
        "#!/bin/sh\n\
         for arg; do [ \"$arg\" = write-tree ] && echo >> {trees}; done\n\
         exec {real} \"$@\"\n",
        trees = trees.display(),
        real = String::from_utf8_lossy(&real_git.stdout).trim(),
    );
    for (name, text) in [("ls", script), ("git", git)] {
        let path = tools.path().join(name);
        std::fs::write(&path, text).expect("write the tool");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
    }
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Unconfined: this `ls` must watch cairn's snapshot store, which the
    // sandbox hides from commands (and its read-only rules would stop the
    // write this test wants to see left alone by the snapshot logic).
    let mut command = project.command(&[
        "run",
        "--sandbox",
        "off",
        "--format",
        "json",
        "look, then write",
    ]);
    command.env("PATH", path);
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("cairn finishes")
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(project.read("sneaky.txt").as_deref(), Some("sneaky\n"));
    let mut recorded = patches(&String::from_utf8_lossy(&output.stdout));
    recorded.iter_mut().for_each(|patch| patch.sort());
    assert_eq!(
        recorded,
        vec![vec![
            ("sneaky.txt".to_owned(), "bash".to_owned()),
            ("w.txt".to_owned(), "bash".to_owned()),
        ]],
        "one patch, of the writing step"
    );
    project.ok(&["run", "--continue", "/undo"]).await;
    assert_eq!(project.read("sneaky.txt"), None);
    assert_eq!(project.read("w.txt"), None);
}
