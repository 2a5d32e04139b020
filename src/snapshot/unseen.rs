//! What a shell command may have written where a snapshot cannot see:
//! ignored paths, nested repositories and submodules, files over the size
//! cap. Not restorable, so said plainly on the step's card and by `/undo`
//! (issue #35) instead of silently left.
//!
//! Cheap and bounded: one `ls-files` for the ignored entries (git collapses
//! a wholly ignored directory to one `dir/` line), the index's gitlinks for
//! the nested repositories, then a walk of those entries that stops at the
//! first time of change at or after the step's start (a directory's time
//! changes when an entry is created, removed or renamed in it; a file's when
//! it is written), [`WALK_BUDGET`] entries at most per step. Writes outside
//! the project are not looked for (see the README's undo section).

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::snapshot::{Error, Snapshots};

/// Entries looked at per step, over all blind spots: a `target/` or
/// `node_modules/` of 100,000 files is not walked in full (about 20 ms of
/// `lstat`s at this bound).
const WALK_BUDGET: usize = 20_000;

/// File times come from the kernel's coarse clock (one tick, up to 10 ms,
/// behind the wall clock): a write just after the step started may carry a
/// time just before it.
const CLOCK_SLACK: Duration = Duration::from_millis(20);

/// Whether a walk found a change, none, or ran out of budget first.
#[derive(Debug, PartialEq, Eq)]
enum Walked {
    Touched,
    Untouched,
    TooBig,
}

impl Snapshots {
    /// The blind spots written since `since`, each said as a short phrase
    /// ("build/ is ignored", "vendor/x/ is a nested repository", "2 files
    /// over 10 MiB"). `skipped` are the paths the step's "after" snapshot
    /// left out for their size; `kept` (relative to the project) are files
    /// whose pre-image `/undo` restores, so not reported.
    pub fn unseen_writes(
        &self,
        since: SystemTime,
        skipped: &[String],
        kept: &[String],
    ) -> Result<Vec<String>, Error> {
        let since = since.checked_sub(CLOCK_SLACK).unwrap_or(since);
        let mut budget = WALK_BUDGET;
        let mut notes = Vec::new();
        for entry in self.ignored_entries()? {
            if kept.iter().any(|k| *k == entry.trim_end_matches('/')) {
                continue;
            }
            match walk(&self.work_tree.join(&entry), since, &mut budget) {
                Walked::Touched => notes.push(format!("{entry} is ignored")),
                Walked::Untouched => {}
                Walked::TooBig => notes.push(format!("{entry} is ignored (not checked in full)")),
            }
        }
        for nested in self.nested_repositories()? {
            let dir = self.work_tree.join(&nested);
            let what = if dir.join(".git").is_file() {
                "a submodule"
            } else {
                "a nested repository"
            };
            match walk(&dir, since, &mut budget) {
                Walked::Touched => notes.push(format!("{nested}/ is {what}")),
                Walked::Untouched => {}
                Walked::TooBig => {
                    notes.push(format!("{nested}/ is {what} (not checked in full)"));
                }
            }
        }
        let over_cap = skipped
            .iter()
            .filter(|path| !kept.contains(path))
            .filter(|path| changed_since(&self.work_tree.join(path), since))
            .count();
        let cap = format!("{} MiB", self.max_file_bytes / (1024 * 1024));
        match over_cap {
            0 => {}
            1 => notes.push(format!("1 file over {cap}")),
            n => notes.push(format!("{n} files over {cap}")),
        }
        Ok(notes)
    }

    /// The ignored files and wholly ignored directories (`dir/`), cairn's
    /// own data dir left out.
    fn ignored_entries(&self) -> Result<Vec<String>, Error> {
        let data = self
            .data_dir
            .strip_prefix(&self.work_tree)
            .ok()
            .map(|inside| format!("{}/", inside.to_string_lossy()));
        let listed = self.git([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ])?;
        Ok(listed
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| {
                data.as_ref()
                    .is_none_or(|data| !p.starts_with(data.as_str()))
            })
            .collect())
    }

    /// Nested repositories and submodules: the gitlinks of the store's index
    /// (the "after" snapshot just recorded them).
    fn nested_repositories(&self) -> Result<Vec<String>, Error> {
        let listed = self.git(["ls-files", "-z", "--stage"])?;
        Ok(listed
            .stdout
            .split(|b| *b == 0)
            .filter(|record| record.starts_with(b"160000 "))
            .filter_map(|record| {
                let tab = record.iter().position(|b| *b == b'\t')?;
                Some(String::from_utf8_lossy(&record[tab + 1..]).into_owned())
            })
            .collect())
    }
}

fn changed_since(path: &Path, since: SystemTime) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|time| time >= since)
}

/// Looks under `root` for an entry changed since `since`, spending at most
/// `budget` looks (shared by every walk of the step). Breadth first: a
/// build writing into `target/debug/` changes that directory's time, found
/// after a few looks rather than after its 100,000 older files.
fn walk(root: &Path, since: SystemTime, budget: &mut usize) -> Walked {
    let mut pending = std::collections::VecDeque::from([root.to_owned()]);
    while let Some(path) = pending.pop_front() {
        if *budget == 0 {
            return Walked::TooBig;
        }
        *budget -= 1;
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            // Removed: its directory's time tells.
            continue;
        };
        if meta.modified().is_ok_and(|time| time >= since) {
            return Walked::Touched;
        }
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(&path)
        {
            pending.extend(entries.flatten().map(|entry| entry.path()));
        }
    }
    Walked::Untouched
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets every entry under `root` an hour back, as if written long ago.
    fn age(root: &Path) {
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        for path in [root.join("a/b/c/old.txt"), root.join("a/b/c/gone.txt")]
            .into_iter()
            .chain(["a/b/c", "a/b", "a", ""].map(|p| root.join(p)))
        {
            let file = std::fs::File::open(&path).expect("open");
            file.set_modified(hour_ago).expect("set time");
        }
    }

    /// The walk finds a removal deep down through its directory's time,
    /// sees nothing in an old tree, and stops at its budget.
    #[test]
    fn the_walk_finds_a_change_and_keeps_to_its_budget() {
        let dir = tempfile::tempdir().expect("dir");
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).expect("mkdir");
        std::fs::write(deep.join("old.txt"), "x").expect("write");
        std::fs::write(deep.join("gone.txt"), "x").expect("write");
        age(dir.path());
        let since = SystemTime::now() - CLOCK_SLACK;
        let mut budget = 100;
        assert_eq!(walk(dir.path(), since, &mut budget), Walked::Untouched);
        std::fs::remove_file(deep.join("gone.txt")).expect("remove");
        let mut budget = 100;
        assert_eq!(walk(dir.path(), since, &mut budget), Walked::Touched);
        let mut budget = 2;
        assert_eq!(walk(dir.path(), since, &mut budget), Walked::TooBig);
    }
}
