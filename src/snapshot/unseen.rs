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
//! it is written, renamed or its mode changed), [`WALK_BUDGET`] entries at
//! most per step. The time is the inode's change time (ctime), not the
//! modification time: `cp -p`, `touch -d` and `tar x` set an old mtime, and
//! `chmod` and `mv` leave it, but nothing sets a ctime back. Writes outside
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
    /// whose pre-image `/undo` restores, so not reported. `ignored_before`
    /// are the ignored entries before the step: one gone now was removed
    /// or moved away.
    pub fn unseen_writes(
        &self,
        since: SystemTime,
        skipped: &[String],
        kept: &[String],
        ignored_before: &[String],
    ) -> Result<Vec<String>, Error> {
        let since = since.checked_sub(CLOCK_SLACK).unwrap_or(since);
        let mut budget = WALK_BUDGET;
        let ignored = self.ignored_entries()?;
        let mut notes: Vec<String> = ignored_before
            .iter()
            .filter(|entry| !ignored.contains(entry))
            .filter(|entry| !kept.iter().any(|k| *k == entry.trim_end_matches('/')))
            .map(|entry| format!("{entry} is ignored (removed or moved)"))
            .collect();
        for entry in ignored {
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
    pub fn ignored_entries(&self) -> Result<Vec<String>, Error> {
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
    std::fs::symlink_metadata(path).is_ok_and(|meta| changed_at(&meta) >= since)
}

/// When the inode last changed (content, mode, name or links): the time a
/// command cannot set back, unlike the modification time.
fn changed_at(meta: &std::fs::Metadata) -> SystemTime {
    use std::os::unix::fs::MetadataExt as _;
    let seconds = u64::try_from(meta.ctime()).unwrap_or(0);
    let nanos = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos)
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
        if changed_at(&meta) >= since {
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

    /// The walk sees nothing changed after a time later than every entry,
    /// finds a change since a time before them, and stops at its budget.
    /// (A ctime cannot be set back, so the tree is not aged: `since` moves.)
    #[test]
    fn the_walk_finds_a_change_and_keeps_to_its_budget() {
        let dir = tempfile::tempdir().expect("dir");
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).expect("mkdir");
        std::fs::write(deep.join("old.txt"), "x").expect("write");
        let later = SystemTime::now() + Duration::from_secs(3600);
        let mut budget = 100;
        assert_eq!(walk(dir.path(), later, &mut budget), Walked::Untouched);
        let earlier = SystemTime::now() - Duration::from_secs(3600);
        let mut budget = 100;
        assert_eq!(walk(dir.path(), earlier, &mut budget), Walked::Touched);
        let mut budget = 2;
        assert_eq!(walk(dir.path(), later, &mut budget), Walked::TooBig);
    }

    /// A mode change (or `cp -p`'s old mtime) moves the ctime only: it is
    /// seen even with the modification time set an hour back.
    #[test]
    fn a_change_that_keeps_an_old_mtime_is_seen() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join(".env");
        std::fs::write(&file, "x").expect("write");
        let since = SystemTime::now() - CLOCK_SLACK;
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .expect("open")
            .set_modified(hour_ago)
            .expect("set time");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(changed_since(&file, since));
    }
}
