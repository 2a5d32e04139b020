//! Snapshot figures on a generated project of 10,000 files (50 MB): first
//! snapshot, snapshot after a one-file edit, the changes of a step, an
//! undo-sized restore, `/undo` as the command does it, disk used per step,
//! and what snapshots add to a one-tool step (on vs off). Prints plain
//! figures (median of a few runs); `cargo bench --bench snapshot`.

use std::path::Path;
use std::time::{Duration, Instant};

use cairn::snapshot::{DEFAULT_SNAPSHOT_MAX_FILE_BYTES, Snapshots};

const FILES: usize = 10_000;
const FILE_BYTES: usize = 5_000;

fn generate(root: &Path) {
    for index in 0..FILES {
        let dir = root.join(format!("src/d{:03}", index / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let line = format!("line of file {index} with some text to diff\n");
        let content = line.repeat(FILE_BYTES / line.len() + 1);
        std::fs::write(dir.join(format!("f{index}.rs")), &content[..FILE_BYTES]).expect("write");
    }
}

fn disk(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    let temp = tempfile::tempdir().expect("temp");
    let project = temp.path().join("project");
    generate(&project);
    let store = Snapshots::new(
        &temp.path().join("data"),
        &project,
        DEFAULT_SNAPSHOT_MAX_FILE_BYTES,
    );

    let started = Instant::now();
    let first = store.track().expect("first snapshot");
    println!(
        "first snapshot ({FILES} files, {} MB): {:?}",
        FILES * FILE_BYTES / 1_000_000,
        started.elapsed()
    );
    let after_first = disk(store.git_dir());
    println!(
        "store after the first snapshot: {} MB",
        after_first / 1_000_000
    );

    let mut unchanged = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        store.track().expect("snapshot");
        unchanged.push(started.elapsed());
    }
    println!(
        "snapshot, nothing changed (a step without edits): {:?}",
        median(unchanged)
    );

    let edited = project.join("src/d042/f4200.rs");
    let mut one_edit = Vec::new();
    let mut step = Vec::new();
    let mut restore = Vec::new();
    let mut before = first.hash.clone();
    let disk_before = disk(store.git_dir());
    for run in 0..5 {
        std::fs::write(&edited, format!("edited {run}\n").repeat(300)).expect("edit");
        let started = Instant::now();
        let after = store.track().expect("snapshot");
        one_edit.push(started.elapsed());
        let started = Instant::now();
        let changes = store.changes(&before, &after.hash).expect("changes");
        step.push(started.elapsed());
        let paths: Vec<String> = changes.into_iter().map(|c| c.path).collect();
        let started = Instant::now();
        store.restore(&before, &paths).expect("restore");
        restore.push(started.elapsed());
        before = store.track().expect("snapshot").hash;
    }
    let per_step = (disk(store.git_dir()) - disk_before) / 10;
    println!("snapshot after a one-file edit: {:?}", median(one_edit));
    println!(
        "changes of a one-file step (the patch part): {:?}",
        median(step)
    );
    println!("undo of a one-file turn (restore): {:?}", median(restore));
    println!("disk per one-file step: {per_step} bytes");
    undo_as_the_command_does(&store, &edited);
    step_overhead(&store, &edited);
    edit_only_step(&store, &edited);
}

/// A step whose only writers were `edit`/`write`: the "after" snapshot
/// looks at the files they named (`track_paths`), not the whole tree.
fn edit_only_step(store: &Snapshots, edited: &Path) {
    let path = edited
        .strip_prefix(store.work_tree())
        .expect("inside")
        .to_string_lossy()
        .into_owned();
    let mut runs = Vec::new();
    for run in 0..5 {
        let before = store.track().expect("before");
        let started = Instant::now();
        std::fs::write(edited, format!("edit-only {run}\n").repeat(300)).expect("tool write");
        let after = store
            .track_paths(std::slice::from_ref(&path))
            .expect("after");
        let changes = store.changes(&before.hash, &after.hash).expect("changes");
        assert_eq!(changes.len(), 1);
        runs.push(started.elapsed());
    }
    println!(
        "one-edit step, after-snapshot of the named file only + changes: {:?}",
        median(runs)
    );
}

/// `/undo` of a one-file turn the way `session::undo` does it: a snapshot
/// of the tree now, the changes since the turn's "after" (files edited by
/// hand since), then the restore of the turn's files.
fn undo_as_the_command_does(store: &Snapshots, edited: &Path) {
    let mut runs = Vec::new();
    for run in 0..5 {
        let before = store.track().expect("snapshot").hash;
        std::fs::write(edited, format!("turn {run}\n").repeat(300)).expect("edit");
        let after = store.track().expect("snapshot").hash;
        let paths = vec![
            edited
                .strip_prefix(store.work_tree())
                .expect("inside")
                .to_string_lossy()
                .into_owned(),
        ];
        let started = Instant::now();
        let now = store.track().expect("snapshot");
        let conflicts = store.changes(&after, &now.hash).expect("changes");
        assert!(conflicts.is_empty(), "nothing was edited by hand");
        store.restore(&before, &paths).expect("restore");
        runs.push(started.elapsed());
    }
    println!(
        "/undo of a one-file turn (hand-edit check + restore): {:?}",
        median(runs)
    );
}

/// The snapshot work of a step that runs one tool (writes one file), on
/// and off. On: the "before" snapshot (overlapping the model request, or
/// the previous step's "after"), then the "after" snapshot and the changes,
/// which run while the next request streams: how much of this reaches a
/// step's wall time is `cargo bench --bench step_overhead`.
fn step_overhead(store: &Snapshots, edited: &Path) {
    let (mut off, mut before_runs, mut on) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..5 {
        let started = Instant::now();
        std::fs::write(edited, format!("off {run}\n").repeat(300)).expect("tool write");
        off.push(started.elapsed());

        let started = Instant::now();
        let before = store.track().expect("before");
        before_runs.push(started.elapsed());
        let started = Instant::now();
        std::fs::write(edited, format!("on {run}\n").repeat(300)).expect("tool write");
        let after = store.track().expect("after");
        let changes = store.changes(&before.hash, &after.hash).expect("changes");
        assert_eq!(changes.len(), 1);
        on.push(started.elapsed());
    }
    let (off, on) = (median(off), median(on));
    println!("one-tool step, snapshots off (the tool's write): {off:?}");
    println!(
        "one-tool step, snapshots on: full after-snapshot + changes {on:?} (runs while the \
         next request streams), before-snapshot {:?} (runs while the request goes out)",
        median(before_runs)
    );
}
