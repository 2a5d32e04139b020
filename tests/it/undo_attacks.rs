//! `/undo` and `/redo` against a project changed by hand after the turn in
//! hostile ways (issue #35 review): a file or a folder swapped for a
//! symlink to outside the project must never make them write or delete
//! through it, and a FIFO must never hang them.

use crate::project::{Project, describe};
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::json;

fn run_git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A committed project ignoring `.env` and `build/`, with `.env` holding
/// `A`, an empty `build/`, and a tracked `src/keep.txt`.
fn project(server: &ScriptedServer) -> Project {
    let project = Project::new();
    project.use_scripted(server);
    std::fs::write(project.path(".gitignore"), ".env\nbuild/\n").expect("gitignore");
    std::fs::write(project.path(".env"), "A\n").expect(".env");
    std::fs::create_dir(project.path("build")).expect("build");
    std::fs::create_dir(project.path("src")).expect("src");
    std::fs::write(project.path("src/keep.txt"), "k\n").expect("keep");
    run_git(project.root.path(), &["add", "."]);
    run_git(project.root.path(), &["commit", "-qm", "base"]);
    project
}

/// The turn: writes the ignored `.env`, a new ignored `build/new.txt` and a
/// new tracked `src/n.txt`.
fn the_turn() -> Vec<crate::support::ScriptedResponse> {
    vec![
        tool_call(
            "c1",
            "write",
            json!({ "path": ".env", "content": "B\n" }),
            1_000,
        ),
        tool_call(
            "c2",
            "write",
            json!({ "path": "build/new.txt", "content": "N\n" }),
            1_010,
        ),
        tool_call(
            "c3",
            "write",
            json!({ "path": "src/n.txt", "content": "S\n" }),
            1_020,
        ),
        text("Done.", 1_100),
    ]
}

/// Swaps `.env`, `build/` and `src/` for symlinks into `outside`, which
/// holds the same bytes the turn wrote (so no hand edit is seen).
fn swap_for_links(project: &Project, outside: &Path) {
    std::fs::write(outside.join("victim.txt"), "B\n").expect("victim");
    std::fs::write(outside.join("new.txt"), "N\n").expect("outside new");
    std::fs::write(outside.join("n.txt"), "S\n").expect("outside n");
    std::fs::write(outside.join("keep.txt"), "k\n").expect("outside keep");
    std::fs::remove_file(project.path(".env")).expect("rm .env");
    symlink(outside.join("victim.txt"), project.path(".env")).expect("link .env");
    std::fs::rename(project.path("build"), project.path("build.real")).expect("mv build");
    symlink(outside, project.path("build")).expect("link build");
    std::fs::rename(project.path("src"), project.path("src.real")).expect("mv src");
    symlink(outside, project.path("src")).expect("link src");
}

fn outside_files(outside: &Path) -> Vec<(String, Option<String>)> {
    ["victim.txt", "new.txt", "n.txt", "keep.txt"]
        .iter()
        .map(|name| {
            let bytes = std::fs::read_to_string(outside.join(name)).ok();
            ((*name).to_owned(), bytes)
        })
        .collect()
}

/// Plain `/undo` refuses naming the links; `/undo --force` replaces the
/// links themselves and never writes or deletes what they point at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_never_writes_or_deletes_through_a_symlink_swapped_in_after_the_turn() {
    let outside = tempfile::tempdir().expect("outside");
    let server = ScriptedServer::start(the_turn()).await;
    let project = project(&server);
    project.ok(&["run", "write them"]).await;
    swap_for_links(&project, outside.path());
    let before = outside_files(outside.path());

    let refused = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(".env is a symbolic link"), "{stderr}");
    assert!(stderr.contains("build is a symbolic link"), "{stderr}");
    assert_eq!(outside_files(outside.path()), before, "outside untouched");

    let forced = project.cairn(&["run", "--continue", "/undo --force"]).await;
    assert_eq!(forced.status.code(), Some(0), "{}", describe(&forced));
    assert_eq!(outside_files(outside.path()), before, "outside untouched");
    let env = std::fs::symlink_metadata(project.path(".env")).expect(".env");
    assert!(env.file_type().is_file(), "the link itself was replaced");
    assert_eq!(project.read(".env").as_deref(), Some("A\n"));
    assert_eq!(project.read("src/n.txt"), None);
}

/// `/redo` refuses to write through a symlink swapped in after the undo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redo_never_writes_through_a_symlink_swapped_in_after_the_undo() {
    let outside = tempfile::tempdir().expect("outside");
    let server = ScriptedServer::start(the_turn()).await;
    let project = project(&server);
    project.ok(&["run", "write them"]).await;
    project.ok(&["run", "--continue", "/undo"]).await;
    std::fs::write(outside.path().join("victim.txt"), "A\n").expect("victim");
    std::fs::remove_file(project.path(".env")).expect("rm .env");
    symlink(outside.path().join("victim.txt"), project.path(".env")).expect("link");

    let refused = project.cairn(&["run", "--continue", "/redo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(".env is a symbolic link"), "{stderr}");
    let victim = std::fs::read_to_string(outside.path().join("victim.txt")).expect("victim");
    assert_eq!(victim, "A\n", "outside untouched");
}

/// A FIFO where the tool wrote `.env` is named, never opened: `/diff` and
/// `/undo` answer instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_swapped_in_after_the_turn_is_named_not_opened() {
    let server = ScriptedServer::start(the_turn()).await;
    let project = project(&server);
    project.ok(&["run", "write them"]).await;
    std::fs::remove_file(project.path(".env")).expect("rm .env");
    let made = std::process::Command::new("mkfifo")
        .arg(project.path(".env"))
        .status()
        .expect("mkfifo");
    assert!(made.success());

    let diff = project.cairn(&["run", "--continue", "/diff"]).await;
    assert_eq!(diff.status.code(), Some(0), "{}", describe(&diff));
    let refused = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(".env is not a regular file"), "{stderr}");
}

/// A tracked folder swapped for a symlink makes the snapshot fail; the
/// turn's own writes are still undone from their kept copies, and the
/// failure is said, not left in the log (repro_snapfail).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_snapshot_still_undoes_the_turns_own_writes_and_says_so() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("f"), "VD\n").expect("outside f");
    let server = ScriptedServer::start([
        tool_call(
            "c1",
            "write",
            json!({ "path": "x", "content": "x\n" }),
            1_000,
        ),
        text("Done.", 1_100),
        tool_call(
            "c2",
            "write",
            json!({ "path": "tr", "content": "T3\n" }),
            2_000,
        ),
        tool_call(
            "c3",
            "write",
            json!({ "path": "newfile", "content": "n\n" }),
            2_010,
        ),
        text("Done.", 2_100),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    std::fs::write(project.path("tr"), "T\n").expect("tr");
    std::fs::create_dir(project.path("d")).expect("d");
    std::fs::write(project.path("d/f"), "F\n").expect("d/f");
    run_git(project.root.path(), &["add", "."]);
    run_git(project.root.path(), &["commit", "-qm", "base"]);
    project.ok(&["run", "go"]).await;
    std::fs::remove_dir_all(project.path("d")).expect("rm d");
    symlink(outside.path(), project.path("d")).expect("link d");
    project.ok(&["run", "--continue", "go2"]).await;
    assert_eq!(project.read("tr").as_deref(), Some("T3\n"));

    let undone = project.ok(&["run", "--continue", "/undo"]).await;
    assert!(undone.contains("no snapshot for this step"), "{undone}");
    assert_eq!(project.read("tr").as_deref(), Some("T\n"), "{undone}");
    assert_eq!(project.read("newfile"), None, "{undone}");
    let outside_f = std::fs::read_to_string(outside.path().join("f")).expect("f");
    assert_eq!(outside_f, "VD\n");
}

/// A later shell step of the same turn that rewrites a kept file is the
/// turn's change, not a hand edit: `/undo` puts both files back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_step_of_the_same_turn_is_not_a_hand_edit() {
    let server = ScriptedServer::start([
        tool_call(
            "c1",
            "write",
            json!({ "path": ".env", "content": "B\n" }),
            1_000,
        ),
        tool_call(
            "c2",
            "write",
            json!({ "path": "tr.txt", "content": "T2\n" }),
            1_010,
        ),
        tool_call(
            "c3",
            "bash",
            json!({ "command": "echo C > .env; rm tr.txt" }),
            1_020,
        ),
        text("Done.", 1_100),
    ])
    .await;
    let project = project(&server);
    std::fs::write(project.path("tr.txt"), "T\n").expect("tr");
    run_git(project.root.path(), &["add", "tr.txt"]);
    run_git(project.root.path(), &["commit", "-qm", "tr"]);
    project.ok(&["run", "write them"]).await;
    assert_eq!(project.read(".env").as_deref(), Some("C\n"));

    let undone = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(undone.status.code(), Some(0), "{}", describe(&undone));
    assert_eq!(project.read(".env").as_deref(), Some("A\n"));
    assert_eq!(project.read("tr.txt").as_deref(), Some("T\n"));
}

/// `/redo` checks for hand edits made after the undo as `/undo` does:
/// it refuses naming them, and `--force` overwrites them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redo_refuses_to_overwrite_a_hand_edit_made_after_the_undo() {
    let server = ScriptedServer::start(the_turn()).await;
    let project = project(&server);
    project.ok(&["run", "write them"]).await;
    project.ok(&["run", "--continue", "/undo"]).await;
    assert_eq!(project.read(".env").as_deref(), Some("A\n"));
    std::fs::write(project.path(".env"), "mine\n").expect("hand edit");
    std::fs::write(project.path("src/n.txt"), "mine too\n").expect("hand edit");

    let refused = project.cairn(&["run", "--continue", "/redo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("src/n.txt, .env changed since the undo"),
        "{stderr}"
    );
    assert_eq!(project.read(".env").as_deref(), Some("mine\n"));

    project.ok(&["run", "--continue", "/redo --force"]).await;
    assert_eq!(project.read(".env").as_deref(), Some("B\n"));
    assert_eq!(project.read("src/n.txt").as_deref(), Some("S\n"));
}

/// A turn undone and then left for a new one is abandoned: after the new
/// turn is undone too, `/redo` brings back the new turn, not the old one
/// (repro_redo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redo_after_a_new_turn_brings_back_that_turn_not_an_abandoned_one() {
    let server = ScriptedServer::start([
        tool_call(
            "c1",
            "write",
            json!({ "path": "a.txt", "content": "1\n" }),
            1_000,
        ),
        text("Done.", 1_100),
        tool_call(
            "c2",
            "write",
            json!({ "path": "b.txt", "content": "2\n" }),
            2_000,
        ),
        text("Done.", 2_100),
    ])
    .await;
    let project = project(&server);
    project.ok(&["run", "turn1"]).await;
    project.ok(&["run", "--continue", "/undo"]).await;
    project.ok(&["run", "--continue", "turn2"]).await;
    project.ok(&["run", "--continue", "/undo"]).await;
    let redone = project.ok(&["run", "--continue", "/redo"]).await;
    assert!(redone.contains("b.txt"), "{redone}");
    assert_eq!(project.read("b.txt").as_deref(), Some("2\n"));
    assert_eq!(
        project.read("a.txt"),
        None,
        "the abandoned turn stays undone"
    );
}

/// A created file replaced by a folder, or by a FIFO, is named instead of
/// a raw OS or git error; `--force` skips the folder (saying so) and
/// replaces the FIFO.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_file_replaced_by_a_folder_or_a_fifo_is_named() {
    let server = ScriptedServer::start(the_turn()).await;
    let project = project(&server);
    project.ok(&["run", "write them"]).await;
    std::fs::remove_file(project.path("build/new.txt")).expect("rm");
    std::fs::create_dir(project.path("build/new.txt")).expect("a folder");
    std::fs::write(project.path("build/new.txt/mine"), "m\n").expect("mine");
    std::fs::remove_file(project.path("src/n.txt")).expect("rm");
    let made = std::process::Command::new("mkfifo")
        .arg(project.path("src/n.txt"))
        .status()
        .expect("mkfifo");
    assert!(made.success());

    let refused = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("build/new.txt is a directory"), "{stderr}");
    assert!(
        stderr.contains("src/n.txt is not a regular file"),
        "{stderr}"
    );

    let forced = project.ok(&["run", "--continue", "/undo --force"]).await;
    assert!(
        forced.contains("build/new.txt is a directory: skipped"),
        "{forced}"
    );
    assert_eq!(project.read("build/new.txt/mine").as_deref(), Some("m\n"));
    assert!(std::fs::symlink_metadata(project.path("src/n.txt")).is_err());
    assert_eq!(project.read(".env").as_deref(), Some("A\n"));
}

/// What a shell command changed without moving the modification time
/// (`chmod`, `cp -p`) is still named: the look uses the change time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_change_that_keeps_the_mtime_is_named() {
    let server = ScriptedServer::start([
        tool_call("c1", "bash", json!({ "command": "chmod 600 .env" }), 1_000),
        text("Done.", 1_100),
    ])
    .await;
    let project = project(&server);
    let out = project.ok(&["run", "--format", "json", "chmod it"]).await;
    let patch = out
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["type"] == "part_updated" && event["part"]["type"] == "patch")
        .unwrap_or_else(|| panic!("a patch part: {out}"));
    let notes = patch["part"]["unrestorable"].to_string();
    assert!(notes.contains(".env is ignored"), "{notes}");
}

/// An ignored file a shell command removed leaves no time of change to
/// see: it is named from the ignored listing before the step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignored_file_a_shell_command_removed_is_named() {
    let server = ScriptedServer::start([
        tool_call("c1", "bash", json!({ "command": "rm .env" }), 1_000),
        text("Done.", 1_100),
    ])
    .await;
    let project = project(&server);
    let out = project.ok(&["run", "--format", "json", "remove it"]).await;
    let patch = out
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["type"] == "part_updated" && event["part"]["type"] == "patch")
        .unwrap_or_else(|| panic!("a patch part: {out}"));
    let notes = patch["part"]["unrestorable"].to_string();
    assert!(
        notes.contains(".env is ignored (removed or moved)"),
        "{notes}"
    );
}
