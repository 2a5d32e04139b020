//! `/undo` is complete (issue #35), through the real binary: what cairn's own
//! `edit` and `write` change comes back even where the snapshot cannot see
//! (an ignored `.env`, a nested repository, a submodule, a 20 MB file over
//! the snapshot's size cap, a file outside the project the user allowed),
//! across restarts (every `cairn run --continue` is a new process); what a
//! shell command wrote there is named as not restored.

use crate::project::{Project, describe};
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;
use crate::undo_run::read_all;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

/// Allow rules instead of `yolo`: the outside directory is an allowed ask.
const ALLOW: &str = "[permission]\nedit = \"allow\"\nbash = \"allow\"\n\
                     external_directory = \"allow\"\n";

/// 20 MB, over the snapshot's 10 MiB cap, with one line to edit.
fn big_file() -> Vec<u8> {
    let mut bytes = vec![b'x'; 20 * 1024 * 1024];
    bytes.extend_from_slice(b"\nMARKER old\n");
    bytes
}

fn run_git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A committed project whose `.gitignore` lists `.env`, with a nested
/// repository `nested/` and a submodule `sub/` (from a repository beside it).
fn project_with_blind_spots(server: &ScriptedServer, upstream: &Path) -> Project {
    let project = Project::new();
    project.use_scripted_with(server, "", ALLOW);
    std::fs::write(project.path(".gitignore"), ".env\nbuild/\n").expect("gitignore");
    std::fs::write(project.path(".env"), "KEY=old\n").expect(".env");
    std::fs::write(project.path("big.bin"), big_file()).expect("big");
    let nested = project.path("nested");
    std::fs::create_dir(&nested).expect("nested");
    run_git(&nested, &["init", "-q"]);
    std::fs::write(nested.join("lib.txt"), "nested old\n").expect("lib");
    run_git(&nested, &["add", "."]);
    run_git(&nested, &["commit", "-qm", "nested"]);
    run_git(upstream, &["init", "-q"]);
    std::fs::write(upstream.join("mod.txt"), "sub old\n").expect("mod");
    run_git(upstream, &["add", "."]);
    run_git(upstream, &["commit", "-qm", "upstream"]);
    let upstream = upstream.display().to_string();
    run_git(
        project.root.path(),
        &["submodule", "add", "-q", &upstream, "sub"],
    );
    run_git(
        project.root.path(),
        &["add", ".gitignore", "cairn.toml", "big.bin"],
    );
    run_git(project.root.path(), &["commit", "-qm", "base"]);
    project
}

/// Every file the test watches, by name: its bytes, or `None` when absent.
fn watched(project: &Project, outside: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut files = BTreeMap::new();
    for name in [
        ".env",
        "nested/lib.txt",
        "nested/new.txt",
        "sub/mod.txt",
        "big.bin",
    ] {
        files.insert(name.to_owned(), std::fs::read(project.path(name)).ok());
    }
    for name in ["existing.txt", "created.txt"] {
        let path = outside.join(name);
        files.insert(path.display().to_string(), std::fs::read(path).ok());
    }
    files
}

/// One turn of eight steps: an edit and a write of the ignored `.env`, an
/// edit and a new file in the nested repository, a write in the submodule,
/// an edit of the 20 MB file, an edit and a new file outside the project.
fn the_turn(outside: &Path) -> Vec<crate::support::ScriptedResponse> {
    let out_existing = outside.join("existing.txt").display().to_string();
    let out_created = outside.join("created.txt").display().to_string();
    vec![
        tool_call(
            "c1",
            "edit",
            json!({ "file_path": ".env", "old_string": "old", "new_string": "mid" }),
            1_000,
        ),
        tool_call(
            "c2",
            "write",
            json!({ "path": ".env", "content": "KEY=new\n" }),
            1_010,
        ),
        tool_call(
            "c3",
            "edit",
            json!({ "file_path": "nested/lib.txt", "old_string": "old", "new_string": "new" }),
            1_020,
        ),
        tool_call(
            "c4",
            "write",
            json!({ "path": "nested/new.txt", "content": "made in nested\n" }),
            1_030,
        ),
        tool_call(
            "c5",
            "write",
            json!({ "path": "sub/mod.txt", "content": "sub new\n" }),
            1_040,
        ),
        tool_call(
            "c6",
            "edit",
            json!({ "file_path": "big.bin", "old_string": "MARKER old", "new_string": "MARKER new" }),
            1_050,
        ),
        tool_call(
            "c7",
            "edit",
            json!({ "file_path": out_existing, "old_string": "old", "new_string": "new" }),
            1_060,
        ),
        tool_call(
            "c8",
            "write",
            json!({ "path": out_created, "content": "made outside\n" }),
            1_070,
        ),
        text("Changed them all.", 1_100),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_what_edit_and_write_changed_where_the_snapshot_cannot_see() {
    let outside = tempfile::tempdir().expect("outside dir");
    let upstream = tempfile::tempdir().expect("upstream repo");
    std::fs::write(outside.path().join("existing.txt"), "outside old\n").expect("outside");
    let out_existing = outside.path().join("existing.txt").display().to_string();
    let out_created = outside.path().join("created.txt").display().to_string();
    let server = ScriptedServer::start(the_turn(outside.path())).await;
    let project = project_with_blind_spots(&server, upstream.path());
    let user_git = read_all(&project.path(".git"));
    let nested_git = read_all(&project.path("nested/.git"));
    let before = watched(&project, outside.path());

    project.ok(&["run", "change them all"]).await;
    let after = watched(&project, outside.path());
    assert_eq!(after[".env"].as_deref(), Some(&b"KEY=new\n"[..]));
    assert_eq!(after[&out_created].as_deref(), Some(&b"made outside\n"[..]));
    let big = after["big.bin"].as_ref().expect("big.bin");
    assert!(big.ends_with(b"MARKER new\n"), "the edit ran");
    for (name, bytes) in &after {
        assert_ne!(before[name], *bytes, "{name} changed in the turn");
    }

    let diff = project.ok(&["run", "--continue", "/diff"]).await;
    for name in [".env", "nested/lib.txt", "nested/new.txt", "sub/mod.txt"] {
        assert!(diff.contains(&format!("+++ b/{name}")), "{name}:\n{diff}");
    }
    assert!(diff.contains("-KEY=old\n+KEY=new"), "{diff}");
    assert!(diff.contains("big.bin"), "{diff}");
    assert!(diff.contains(&out_existing), "{diff}");
    assert!(diff.contains(&out_created), "{diff}");

    let undone = project.ok(&["run", "--continue", "/undo"]).await;
    assert!(undone.contains(".env"), "{undone}");
    let restored = watched(&project, outside.path());
    for (name, bytes) in &before {
        assert!(
            restored[name] == *bytes,
            "{name} is back byte for byte: {undone}"
        );
    }

    let redone = project.ok(&["run", "--continue", "/redo"]).await;
    assert!(redone.contains("sub/mod.txt"), "{redone}");
    let again = watched(&project, outside.path());
    for (name, bytes) in &after {
        assert!(
            again[name] == *bytes,
            "{name} is the tool's again: {redone}"
        );
    }

    assert_eq!(read_all(&project.path(".git")), user_git, "the user's .git");
    assert_eq!(read_all(&project.path("nested/.git")), nested_git);
    assert_eq!(
        server.requests().len(),
        9,
        "undo, redo and diff call no model"
    );
}

/// What a shell command wrote where the snapshot cannot see is said, not
/// silently left: in the step's `patch` part (the card, JSON events) and in
/// `/undo`'s answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_names_what_a_shell_command_wrote_that_it_cannot_restore() {
    let upstream = tempfile::tempdir().expect("upstream repo");
    let server = ScriptedServer::start([
        tool_call(
            "c1",
            "bash",
            json!({ "command": "mkdir -p build && echo o > build/out.o && echo g > nested/gen.txt && echo t > tracked.txt" }),
            1_000,
        ),
        text("Built.", 1_100),
    ])
    .await;
    let project = project_with_blind_spots(&server, upstream.path());
    let out = project.ok(&["run", "--format", "json", "build it"]).await;
    let patch = out
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["type"] == "part_updated" && event["part"]["type"] == "patch")
        .unwrap_or_else(|| panic!("a patch part: {out}"));
    let notes = patch["part"]["unrestorable"].to_string();
    assert!(notes.contains("build/ is ignored"), "{notes}");
    assert!(notes.contains("nested/ is a nested repository"), "{notes}");

    let undone = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(undone.status.code(), Some(0), "{}", describe(&undone));
    let said = String::from_utf8_lossy(&undone.stdout);
    assert!(said.contains("files restored: tracked.txt"), "{said}");
    assert!(said.contains("not restored: build/ is ignored"), "{said}");
    assert!(said.contains("nested/ is a nested repository"), "{said}");
    assert_eq!(project.read("tracked.txt"), None);
    assert_eq!(project.read("build/out.o").as_deref(), Some("o\n"));
}

/// A pre-image that cannot be written (its directory is a file here, as a
/// full disk fails the copy) refuses the edit: nothing changes as if it
/// could be undone, and the model is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_whose_copy_cannot_be_kept_is_refused_and_changes_nothing() {
    let upstream = tempfile::tempdir().expect("upstream repo");
    let server = ScriptedServer::start([
        text("Hello.", 300),
        tool_call(
            "c1",
            "edit",
            json!({ "file_path": ".env", "old_string": "old", "new_string": "new" }),
            1_000,
        ),
        text("Could not.", 1_100),
    ])
    .await;
    let project = project_with_blind_spots(&server, upstream.path());
    project.ok(&["run", "say hello"]).await;
    let stores = std::fs::read_dir(project.data_dir().join("snapshot")).expect("the store");
    for store in stores {
        std::fs::write(store.expect("store").path().join("preimages"), "").expect("block");
    }
    let out = project
        .ok(&["run", "--continue", "--format", "json", "edit .env"])
        .await;
    assert_eq!(project.read(".env").as_deref(), Some("KEY=old\n"));
    assert!(out.contains("could not keep a copy of"), "{out}");
    let told = server.requests()[2].json()["messages"].to_string();
    assert!(
        told.contains("was not made and the file is unchanged"),
        "{told}"
    );
}

/// A kept file edited by hand since the turn is a conflict, as a snapshot
/// file is: `/undo` refuses naming it, `/undo --force` overwrites it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_of_a_kept_file_refuses_to_overwrite_a_hand_edit_unless_forced() {
    let upstream = tempfile::tempdir().expect("upstream repo");
    let server = ScriptedServer::start([
        tool_call(
            "c1",
            "edit",
            json!({ "file_path": ".env", "old_string": "old", "new_string": "new" }),
            1_000,
        ),
        text("Done.", 1_100),
    ])
    .await;
    let project = project_with_blind_spots(&server, upstream.path());
    project.ok(&["run", "edit .env"]).await;
    std::fs::write(project.path(".env"), "KEY=mine\n").expect("hand edit");

    let refused = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(".env changed since the turn"), "{stderr}");
    assert_eq!(project.read(".env").as_deref(), Some("KEY=mine\n"));

    project.ok(&["run", "--continue", "/undo --force"]).await;
    assert_eq!(project.read(".env").as_deref(), Some("KEY=old\n"));
}

/// A kept copy that is gone (collected after `max_age_days`) stops the
/// undo before it writes anything: no half-undone turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_with_a_collected_copy_says_so_and_changes_nothing() {
    let upstream = tempfile::tempdir().expect("upstream repo");
    let server = ScriptedServer::start([
        tool_call(
            "c1",
            "bash",
            json!({ "command": "echo t > tracked.txt" }),
            1_000,
        ),
        tool_call(
            "c2",
            "edit",
            json!({ "file_path": ".env", "old_string": "old", "new_string": "new" }),
            1_010,
        ),
        text("Done.", 1_100),
    ])
    .await;
    let project = project_with_blind_spots(&server, upstream.path());
    project.ok(&["run", "change two files"]).await;
    let stores = std::fs::read_dir(project.data_dir().join("snapshot")).expect("the store");
    for store in stores {
        std::fs::remove_dir_all(store.expect("store").path().join("preimages")).expect("gone");
    }
    let refused = project.cairn(&["run", "--continue", "/undo"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("the copy of .env kept before the turn is gone"),
        "{stderr}"
    );
    assert_eq!(project.read(".env").as_deref(), Some("KEY=new\n"));
    assert_eq!(project.read("tracked.txt").as_deref(), Some("t\n"));
}
