//! The snapshot store on real files and a real git: restores are exact and
//! the user's `.git` is never touched.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::*;

fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in walk(root) {
        let rel = entry
            .strip_prefix(root)
            .expect("inside")
            .to_string_lossy()
            .into_owned();
        if rel == ".git" || rel.starts_with(".git/") {
            continue;
        }
        files.insert(rel, std::fs::read(&entry).expect("read"));
    }
    files
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Every byte of a directory, for "the user's .git is untouched".
fn read_all(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walk(dir)
        .into_iter()
        .map(|p| {
            (
                p.to_string_lossy().into_owned(),
                std::fs::read(&p).expect("read"),
            )
        })
        .collect()
}

fn git_in(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .stdout(Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

struct Fixture {
    _temp: tempfile::TempDir,
    project: std::path::PathBuf,
    store: Snapshots,
}

fn fixture(max: u64) -> Fixture {
    let temp = tempfile::tempdir().expect("temp");
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let store = Snapshots::new(&temp.path().join("data"), &project, max);
    Fixture {
        _temp: temp,
        project,
        store,
    }
}

/// The narrow "after" snapshot of an edit-only step records the named
/// files exactly as a full one would, leaves ignored and oversized files
/// out, and leaves unnamed files as the last snapshot had them.
#[test]
fn a_snapshot_of_named_paths_records_them_as_a_full_one_would() {
    let f = fixture(100);
    std::fs::write(f.project.join(".gitignore"), "*.log\n").expect("write");
    std::fs::write(f.project.join("a.txt"), "one\n").expect("write");
    std::fs::write(f.project.join("gone.txt"), "bye\n").expect("write");
    std::fs::write(f.project.join("other.txt"), "same\n").expect("write");
    let before = f.store.track().expect("track");
    std::fs::write(f.project.join("a.txt"), "two\n").expect("write");
    std::fs::remove_file(f.project.join("gone.txt")).expect("rm");
    std::fs::create_dir_all(f.project.join("d")).expect("mkdir");
    std::fs::write(f.project.join("d/new file.txt"), "x\n").expect("write");
    std::fs::write(f.project.join("run.log"), "ignored\n").expect("write");
    std::fs::write(f.project.join("big.txt"), "y".repeat(500)).expect("write");
    let named: Vec<String> = [
        "a.txt",
        "gone.txt",
        "d/new file.txt",
        "run.log",
        "big.txt",
        "never.txt",
    ]
    .map(String::from)
    .to_vec();
    let narrow = f.store.track_paths(&named).expect("narrow");
    assert_eq!(narrow.skipped, ["big.txt"]);
    let full = f.store.track().expect("full");
    assert_eq!(narrow.hash, full.hash, "the same tree as a full snapshot");

    // An unnamed file changed by hand is left as the last snapshot had it.
    std::fs::write(f.project.join("other.txt"), "by hand\n").expect("write");
    let only_a = f.store.track_paths(&["a.txt".to_string()]).expect("narrow");
    assert!(
        f.store
            .changes(&full.hash, &only_a.hash)
            .expect("changes")
            .is_empty()
    );
    let changed: Vec<String> = f
        .store
        .changes(&before.hash, &narrow.hash)
        .expect("changes")
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(changed, ["a.txt", "d/new file.txt", "gone.txt"]);
    assert!(f.store.track_paths(&[]).expect("nothing named").hash == only_a.hash);
}

#[test]
fn a_change_is_listed_with_line_counts_and_restored_exactly() {
    let f = fixture(DEFAULT_SNAPSHOT_MAX_FILE_BYTES);
    std::fs::write(f.project.join("a.txt"), "one\ntwo\n").expect("write");
    std::fs::write(f.project.join("gone.txt"), "bye\n").expect("write");
    let before = f.store.track().expect("track");
    std::fs::write(f.project.join("a.txt"), "one\n2\nthree\n").expect("write");
    std::fs::remove_file(f.project.join("gone.txt")).expect("rm");
    std::fs::create_dir_all(f.project.join("d/e")).expect("mkdir");
    std::fs::write(f.project.join("d/e/new.txt"), "x\n").expect("write");
    let after = f.store.track().expect("track");
    let changes = f.store.changes(&before.hash, &after.hash).expect("changes");
    let summary: Vec<_> = changes
        .iter()
        .map(|c| (c.path.as_str(), c.kind, c.added, c.removed))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a.txt", ChangeKind::Modified, 2, 1),
            ("d/e/new.txt", ChangeKind::Added, 1, 0),
            ("gone.txt", ChangeKind::Deleted, 0, 1),
        ]
    );
    let paths: Vec<String> = changes.into_iter().map(|c| c.path).collect();
    f.store.restore(&before.hash, &paths).expect("restore");
    assert_eq!(read_tree(&f.project).len(), 2);
    assert_eq!(
        std::fs::read_to_string(f.project.join("a.txt")).expect("read"),
        "one\ntwo\n"
    );
    assert!(f.project.join("gone.txt").exists());
    assert!(!f.project.join("d").exists(), "emptied directories go too");
}

#[test]
fn a_diff_of_some_paths_shows_only_those_and_takes_names_literally() {
    let f = fixture(DEFAULT_SNAPSHOT_MAX_FILE_BYTES);
    std::fs::write(f.project.join("*.txt"), "star\n").expect("write");
    std::fs::write(f.project.join("a.txt"), "a\n").expect("write");
    let before = f.store.track().expect("track");
    std::fs::write(f.project.join("*.txt"), "STAR\n").expect("write");
    std::fs::write(f.project.join("a.txt"), "A\n").expect("write");
    let after = f.store.track().expect("track");
    let diff = f
        .store
        .diff_paths(&before.hash, &after.hash, &["*.txt".to_owned()])
        .expect("diff");
    assert!(diff.contains("-star\n+STAR"), "{diff}");
    assert!(
        !diff.contains("a.txt"),
        "a glob-like name is not a glob: {diff}"
    );
}

#[test]
fn gitignored_and_oversized_files_are_skipped_and_reported() {
    let f = fixture(10);
    std::fs::write(f.project.join(".gitignore"), "ignored*\n").expect("write");
    std::fs::write(f.project.join("ignored.txt"), "x").expect("write");
    std::fs::write(f.project.join("big.bin"), "01234567890").expect("write");
    std::fs::write(f.project.join("small.txt"), "x").expect("write");
    let snap = f.store.track().expect("track");
    assert_eq!(snap.skipped, vec!["big.bin".to_owned()]);
    let listed = f
        .store
        .git(["ls-tree", "--name-only", &snap.hash])
        .expect("ls-tree");
    assert_eq!(text(listed), ".gitignore\nsmall.txt\n");
}

#[test]
fn the_data_dir_inside_the_project_is_never_snapshotted() {
    let temp = tempfile::tempdir().expect("temp");
    let data = temp.path().join(".cairn-data");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(temp.path().join("a.txt"), "a").expect("write");
    let store = Snapshots::new(&data, temp.path(), DEFAULT_SNAPSHOT_MAX_FILE_BYTES);
    let snap = store.track().expect("track");
    let listed = store
        .git(["ls-tree", "--name-only", &snap.hash])
        .expect("ls-tree");
    assert_eq!(text(listed), "a.txt\n");
}

#[test]
fn collection_keeps_what_the_current_tree_uses_and_drops_old_snapshots() {
    let f = fixture(DEFAULT_SNAPSHOT_MAX_FILE_BYTES);
    std::fs::write(f.project.join("a.txt"), "old").expect("write");
    let old = f.store.track().expect("track");
    std::fs::write(f.project.join("a.txt"), "new").expect("write");
    let new = f.store.track().expect("track");
    let data = f
        .store
        .git_dir()
        .parent()
        .and_then(Path::parent)
        .expect("data dir");
    let failed = collect(data, 0);
    assert!(failed.is_empty(), "{failed:?}");
    let exists = |hash: &str| f.store.git(["cat-file", "-e", hash]).is_ok();
    assert!(!exists(&old.hash), "the old snapshot is collected");
    assert!(exists(&new.hash), "the current tree stays");
    std::fs::write(f.project.join("a.txt"), "newer").expect("write");
    f.store.track().expect("snapshots go on after a collection");
}

/// One file operation of a turn, as the tools would do it.
#[derive(Debug, Clone)]
enum Op {
    Write(u8, Vec<u8>),
    Append(u8, Vec<u8>),
    Delete(u8),
    Rename(u8, u8),
    /// What a `bash` tool call does to files the tool-by-tool view can't
    /// see: a real `sh -c` that moves, removes or writes one.
    Shell(u8, u8, u8),
}

fn name(n: u8) -> String {
    match n % 3 {
        0 => format!("f{n}.txt"),
        1 => format!("dir{}/f{n}.txt", n % 2),
        _ => format!("dir{}/sub/f{n}.txt", n % 2),
    }
}

fn apply(root: &Path, op: &Op) {
    match op {
        Op::Write(n, bytes) | Op::Append(n, bytes) => {
            let path = root.join(name(*n));
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            let mut content = if matches!(op, Op::Append(..)) {
                std::fs::read(&path).unwrap_or_default()
            } else {
                Vec::new()
            };
            content.extend_from_slice(bytes);
            std::fs::write(path, content).expect("write");
        }
        Op::Delete(n) => {
            let _ = std::fs::remove_file(root.join(name(*n)));
        }
        Op::Shell(kind, a, b) => {
            let (a, b) = (name(*a), name(*b));
            let script = match kind % 3 {
                0 => {
                    format!("mkdir -p \"$(dirname '{b}')\" && mv -f '{a}' '{b}' 2>/dev/null; true")
                }
                1 => format!("rm -f '{a}'"),
                _ => format!("mkdir -p \"$(dirname '{a}')\" && echo shell >> '{a}'"),
            };
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(root)
                .status()
                .expect("sh runs");
            assert!(status.success());
        }
        Op::Rename(a, b) => {
            let to = root.join(name(*b));
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            let _ = std::fs::rename(root.join(name(*a)), to);
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    let n = 0u8..8;
    let bytes = proptest::collection::vec(any::<u8>(), 0..40);
    prop_oneof![
        (n.clone(), bytes.clone()).prop_map(|(n, b)| Op::Write(n, b)),
        (n.clone(), bytes).prop_map(|(n, b)| Op::Append(n, b)),
        n.clone().prop_map(Op::Delete),
        (n.clone(), n.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        (0u8..3, n.clone(), n).prop_map(|(k, a, b)| Op::Shell(k, a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Turns of file operations (writes, appends, deletes, renames and
    /// `sh -c` commands), each bracketed by snapshots the way the
    /// loop does it, then undo (restore the turn's files to the snapshot
    /// before it) and redo (restore them to the state at the undo) in a
    /// random order: the tree always equals the expected state, and the
    /// user's `.git` is byte-identical at the end.
    #[test]
    fn undo_and_redo_leave_exactly_the_expected_tree(
        turns in proptest::collection::vec(proptest::collection::vec(op(), 1..6), 1..5),
        moves in proptest::collection::vec(any::<bool>(), 1..10),
    ) {
        let f = fixture(DEFAULT_SNAPSHOT_MAX_FILE_BYTES);
        std::fs::write(f.project.join("tracked.txt"), "base\n").expect("write");
        git_in(&f.project, &["init", "--quiet"]);
        git_in(&f.project, &["add", "."]);
        git_in(&f.project, &["commit", "--quiet", "-m", "base"]);
        std::fs::write(f.project.join("tracked.txt"), "uncommitted\n").expect("write");
        let user_git = read_all(&f.project.join(".git"));

        // (snapshot before, files the turn changed, tree after)
        let mut done = Vec::new();
        for turn in &turns {
            let before = f.store.track().expect("track");
            let state = read_tree(&f.project);
            for op in turn {
                apply(&f.project, op);
            }
            let after = f.store.track().expect("track");
            let files: Vec<String> = f
                .store
                .changes(&before.hash, &after.hash)
                .expect("changes")
                .into_iter()
                .map(|c| c.path)
                .collect();
            done.push((before.hash, files, state, read_tree(&f.project)));
        }
        // (the turn as in `done`, snapshot taken at its undo)
        let mut undone = Vec::new();
        for undo in moves {
            if undo {
                let Some(turn) = done.pop() else { continue };
                let at_undo = f.store.track().expect("track");
                f.store.restore(&turn.0, &turn.1).expect("undo");
                prop_assert_eq!(&read_tree(&f.project), &turn.2);
                undone.push((turn, at_undo.hash));
            } else {
                let Some((turn, at_undo)) = undone.pop() else { continue };
                f.store.restore(&at_undo, &turn.1).expect("redo");
                prop_assert_eq!(&read_tree(&f.project), &turn.3);
                done.push(turn);
            }
        }
        prop_assert_eq!(read_all(&f.project.join(".git")), user_git);
    }
}

/// The snapshot hashes only what changed since the last one, so a file
/// taking a directory's place (or the reverse), a symlink and a file
/// shrinking under the cap must still come out as
/// the tree `git add -A` records from scratch.
#[test]
fn an_incremental_snapshot_equals_one_taken_from_scratch() {
    let f = fixture(100);
    std::fs::write(f.project.join("a"), "file a\n").expect("write");
    std::fs::create_dir_all(f.project.join("d")).expect("mkdir");
    std::fs::write(f.project.join("d/c"), "in d\n").expect("write");
    std::fs::write(f.project.join("big"), "y".repeat(500)).expect("write");
    f.store.track().expect("first");
    std::fs::remove_file(f.project.join("a")).expect("rm");
    std::fs::create_dir_all(f.project.join("a")).expect("mkdir");
    std::fs::write(f.project.join("a/x"), "now a dir\n").expect("write");
    std::fs::remove_dir_all(f.project.join("d")).expect("rm");
    std::fs::write(f.project.join("d"), "now a file\n").expect("write");
    std::fs::write(f.project.join("big"), "small now\n").expect("write");
    std::os::unix::fs::symlink("a/x", f.project.join("link")).expect("symlink");
    let incremental = f.store.track().expect("incremental");
    assert!(incremental.skipped.is_empty());

    let fresh = Snapshots::new(&f._temp.path().join("data2"), &f.project, 100);
    let scratch = fresh.track_by_add().expect("from scratch");
    assert_eq!(incremental.hash, scratch.hash);

    // A nested repository (listed as `n/`) takes the general way.
    std::fs::create_dir_all(f.project.join("n")).expect("mkdir");
    git_in(&f.project.join("n"), &["init", "--quiet"]);
    f.store
        .track()
        .expect("a nested repository does not fail the snapshot");
}

/// A nested repository a command made (`git clone` into the project) is a
/// gitlink in the snapshot, not files: it is not among a step's changes
/// (restoring it would fail on the directory and stop the whole `/undo`);
/// the step names it as not restorable instead (`unseen`).
#[test]
fn a_new_nested_repository_is_not_a_change_undo_tries_to_restore() {
    let f = fixture(1024 * 1024);
    std::fs::write(f.project.join("a.txt"), "one\n").expect("write");
    let before = f.store.track().expect("before");
    let nested = f.project.join("vendor/x");
    std::fs::create_dir_all(&nested).expect("mkdir");
    git_in(&nested, &["init", "--quiet"]);
    std::fs::write(nested.join("f"), "in x\n").expect("write");
    git_in(&nested, &["add", "f"]);
    git_in(&nested, &["commit", "--quiet", "-m", "x"]);
    std::fs::write(f.project.join("b.txt"), "two\n").expect("write");
    let after = f.store.track().expect("after");
    let changes = f.store.changes(&before.hash, &after.hash).expect("changes");
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["b.txt"]);
    f.store
        .restore(&before.hash, &["b.txt".to_owned()])
        .expect("restore");
    assert!(!f.project.join("b.txt").exists());
    let since = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let notes = f.store.unseen_writes(since, &[], &[], &[]).expect("unseen");
    assert_eq!(notes, ["vendor/x/ is a nested repository"]);
}

/// A git killed mid-write (cairn killed with -9 during a snapshot) leaves
/// `index.lock` behind; the next snapshot must not fail on it forever.
#[test]
fn a_lock_left_by_a_killed_git_does_not_block_later_snapshots() {
    let f = fixture(DEFAULT_SNAPSHOT_MAX_FILE_BYTES);
    std::fs::write(f.project.join("a.txt"), "one\n").expect("write");
    let before = f.store.track().expect("track");
    std::fs::write(f.store.git_dir().join("index.lock"), "").expect("stale lock");
    std::fs::write(f.project.join("a.txt"), "two\n").expect("write");
    let after = f.store.track().expect("a stale lock is cleared");
    let changes = f.store.changes(&before.hash, &after.hash).expect("changes");
    assert_eq!(changes.len(), 1);
    assert!(!f.store.git_dir().join("index.lock").exists());
}
