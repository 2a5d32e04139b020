//! Pre-images: copies of files taken just before cairn's own `edit` or
//! `write` changes them, so `/undo` can put back what a snapshot cannot see
//! (ignored files, nested repositories and submodules, files over the size
//! cap, files outside the project). Issue #35.
//!
//! The tool names its one file, so this costs one copy of that file, not a
//! tree scan. Copies live in the project's snapshot store
//! (`<store>/preimages/<id>`), private like the rest of the data dir, and
//! are collected with the snapshots after `max_age_days`. A file over
//! [`MAX_PREIMAGE_BYTES`] is not copied: the caller says so. This module
//! owns the copies and file comparisons, not which files need them
//! (`session::snapshot_step` decides).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::message::Fingerprint;
use crate::snapshot::error::Error;

/// Files larger than this are not copied before a tool writes them: a
/// 500 MB log would cost 500 MB of disk per step. The step's card and
/// `/undo` name such a file as not restored.
pub const MAX_PREIMAGE_BYTES: u64 = 256 * 1024 * 1024;

/// Files up to this size get line counts and a diff; bigger ones are named
/// with their sizes, as git does for binaries.
const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;

/// The fingerprint hash of something that is not a regular file; a real
/// hash is 16 hex digits, so it never matches one.
const NOT_A_FILE: &str = "not a regular file";

/// What a file was before a tool wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Captured {
    /// It did not exist: `/undo` removes it.
    Absent,
    /// Its content is kept under this id.
    Kept(String),
    /// Over [`MAX_PREIMAGE_BYTES`] (or not a regular file): not copied;
    /// its size and time of change tell whether the tool changed it.
    NotKept {
        len: u64,
        modified: Option<SystemTime>,
    },
}

/// The pre-image store of one project.
#[derive(Debug, Clone)]
pub struct PreImages {
    dir: PathBuf,
    max_bytes: u64,
}

impl PreImages {
    pub fn new(dir: PathBuf, max_bytes: u64) -> Self {
        Self { dir, max_bytes }
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Where the copy `id` lives.
    fn image(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    /// Copies `path` before a tool writes it.
    ///
    /// # Errors
    /// When the copy cannot be written (full disk, no permission): the
    /// caller must not let the tool write as if it could be undone.
    pub fn capture(&self, path: &Path) -> Result<Captured, Error> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Captured::Absent),
            Err(source) => return Err(io(path, source)),
        };
        if !meta.is_file() || meta.len() > self.max_bytes {
            return Ok(Captured::NotKept {
                len: meta.len(),
                modified: meta.modified().ok(),
            });
        }
        let id = crate::id::preimage_id();
        let image = self.image(&id);
        // Written aside then renamed: a copy cut short (full disk, a kill)
        // never stands under an id a patch part may name.
        let partial = self.dir.join(format!("{id}.partial"));
        if let Err(error) = std::fs::copy(path, &partial) {
            if error.kind() != std::io::ErrorKind::NotFound || self.dir.exists() {
                let _ = std::fs::remove_file(&partial);
                return Err(io(&partial, error));
            }
            crate::paths::create_private_dir(&self.dir)
                .map_err(|e| io(&self.dir, std::io::Error::other(e.to_string())))?;
            std::fs::copy(path, &partial).map_err(|source| {
                let _ = std::fs::remove_file(&partial);
                io(&partial, source)
            })?;
        }
        std::fs::rename(&partial, &image).map_err(|source| io(&image, source))?;
        Ok(Captured::Kept(id))
    }

    /// True while copy `id` is there (not yet collected).
    pub fn has(&self, id: &str) -> bool {
        self.image(id).is_file()
    }

    /// Drops copy `id`, no longer needed (the snapshot covers its file, or
    /// the tool left it as it was); a copy that cannot be removed only
    /// waits for [`Self::collect`].
    pub fn discard(&self, id: &str) {
        let _ = std::fs::remove_file(self.image(id));
    }

    /// Keeps the file at `path` as it is now under a new id (or says it is
    /// absent): `/undo` does this before putting a pre-image back, so that
    /// `/redo` can bring the tool's version back.
    pub fn keep_current(&self, path: &Path) -> Result<Captured, Error> {
        self.capture(path)
    }

    /// True when `path` is as it was when `captured`: the tool did not
    /// change it (refused, failed, or wrote the same bytes).
    pub fn unchanged(&self, captured: &Captured, path: &Path) -> bool {
        match captured {
            Captured::Absent => std::fs::symlink_metadata(path).is_err(),
            Captured::Kept(id) => same_bytes(&self.image(id), path),
            Captured::NotKept { len, modified } => std::fs::metadata(path)
                .is_ok_and(|meta| meta.len() == *len && meta.modified().ok() == *modified),
        }
    }

    /// Puts `path` back as copy `before` has it, or removes it for `None`.
    pub fn restore(&self, before: Option<&str>, path: &Path) -> Result<(), Error> {
        let Some(id) = before else {
            return match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path, e)),
                _ => Ok(()),
            };
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| io(parent, source))?;
        }
        std::fs::copy(self.image(id), path).map_err(|source| io(path, source))?;
        Ok(())
    }

    /// The bytes of copy `id`, or of nothing for `None`.
    fn read_image(&self, before: Option<&str>) -> Result<Vec<u8>, Error> {
        match before {
            Some(id) => {
                let image = self.image(id);
                std::fs::read(&image).map_err(|source| io(&image, source))
            }
            None => Ok(Vec::new()),
        }
    }

    /// Line counts (added, removed) from copy `before` to `path` now; 0 and
    /// 0 for a binary file or one too large to diff.
    pub fn line_counts(&self, before: Option<&str>, path: &Path) -> (u32, u32) {
        let Some((old, new)) = self.texts(before, path) else {
            return (0, 0);
        };
        let diff = similar::TextDiff::from_lines(&old, &new);
        diff.iter_all_changes()
            .fold((0, 0), |(add, del), change| match change.tag() {
                similar::ChangeTag::Insert => (add + 1, del),
                similar::ChangeTag::Delete => (add, del + 1),
                similar::ChangeTag::Equal => (add, del),
            })
    }

    /// A unified diff from copy `before` to `path` now, shown as `shown`
    /// (`a/`, `b/` prefixes for a project path, as git writes them).
    pub fn diff(&self, before: Option<&str>, path: &Path, shown: &str) -> Result<String, Error> {
        let exists = path.exists();
        let (old_name, new_name) = if shown.starts_with('/') {
            (shown.to_owned(), shown.to_owned())
        } else {
            (format!("a/{shown}"), format!("b/{shown}"))
        };
        let old_name = if before.is_some() {
            old_name
        } else {
            "/dev/null".to_owned()
        };
        let new_name = if exists {
            new_name
        } else {
            "/dev/null".to_owned()
        };
        // The `diff --git` line (and git's mode lines) as git writes them:
        // the TUI's diff view reads file names and counts from them.
        let mut header = format!("diff --git a/{shown} b/{shown}\n");
        match (before, exists) {
            (None, _) => header.push_str("new file mode 100644\n"),
            (Some(_), false) => header.push_str("deleted file mode 100644\n"),
            _ => {}
        }
        if let Some((old, new)) = self.texts(before, path) {
            let body = similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(3)
                .header(&old_name, &new_name)
                .to_string();
            return Ok(header + &body);
        }
        let old_len = before.map_or(Ok(0), |id| len_of(&self.image(id)))?;
        let new_len = if exists { len_of(path)? } else { 0 };
        Ok(format!(
            "{header}--- {old_name}\n+++ {new_name}\n(not diffed: binary or over {} MiB; {old_len} bytes -> {new_len} bytes)\n",
            MAX_DIFF_BYTES / (1024 * 1024)
        ))
    }

    /// Both sides as text, when both are small enough and UTF-8.
    fn texts(&self, before: Option<&str>, path: &Path) -> Option<(String, String)> {
        // A FIFO swapped in is never read: the read would hang.
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return None;
        }
        let small = |p: &Path| std::fs::metadata(p).map_or(true, |m| m.len() <= MAX_DIFF_BYTES);
        if !small(path) || before.is_some_and(|id| !small(&self.image(id))) {
            return None;
        }
        let old = String::from_utf8(self.read_image(before).ok()?).ok()?;
        let new = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes).ok()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(_) => return None,
        };
        Some((old, new))
    }

    /// Removes copies older than `max_age_days`, as the snapshots' objects
    /// go: an undo older than that cannot restore them.
    pub fn collect(&self, max_age_days: u32) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let max_age = std::time::Duration::from_secs(u64::from(max_age_days) * 24 * 3600);
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= max_age);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The file at `path` as a [`Fingerprint`]; `None` when it does not exist.
pub fn fingerprint(path: &Path) -> Result<Option<Fingerprint>, Error> {
    // A FIFO is never opened (the read would wait for a writer forever):
    // anything not a regular file gets a fingerprint no file can have.
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Ok(Some(Fingerprint {
                len: meta.len(),
                hash: NOT_A_FILE.to_owned(),
            }));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io(path, source)),
    };
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let (mut len, mut buffer) = (0u64, vec![0u8; 64 * 1024]);
    loop {
        let read = file.read(&mut buffer).map_err(|source| io(path, source))?;
        if read == 0 {
            break;
        }
        len += read as u64;
        for byte in &buffer[..read] {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    Ok(Some(Fingerprint {
        len,
        hash: format!("{hash:016x}"),
    }))
}

fn len_of(path: &Path) -> Result<u64, Error> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| io(path, source))
}

/// True when both files hold the same bytes (compared in chunks).
fn same_bytes(a: &Path, b: &Path) -> bool {
    if std::fs::metadata(b).is_ok_and(|m| !m.is_file()) {
        return false;
    }
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let same_len = match (a.metadata(), b.metadata()) {
        (Ok(x), Ok(y)) => x.len() == y.len(),
        _ => false,
    };
    if !same_len {
        return false;
    }
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let Ok(n) = a.read(&mut x) else {
            return false;
        };
        if n == 0 {
            return true;
        }
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return false;
        }
    }
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::File {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, max_bytes: u64) -> PreImages {
        PreImages::new(dir.join("store/preimages"), max_bytes)
    }

    /// A copy brings the bytes back exactly; a file that did not exist is
    /// removed; `unchanged` tells a tool that wrote from one that did not.
    #[test]
    fn a_kept_copy_restores_the_file_byte_for_byte() {
        let dir = tempfile::tempdir().expect("dir");
        let preimages = store(dir.path(), 1024);
        let file = dir.path().join("bin.dat");
        let original: Vec<u8> = (0..=255).collect();
        std::fs::write(&file, &original).expect("write");
        let captured = preimages.capture(&file).expect("capture");
        assert!(matches!(captured, Captured::Kept(_)), "{captured:?}");
        assert!(preimages.unchanged(&captured, &file));
        std::fs::write(&file, b"tool's").expect("tool writes");
        assert!(!preimages.unchanged(&captured, &file));
        let Captured::Kept(id) = &captured else {
            unreachable!()
        };
        preimages.restore(Some(id), &file).expect("restore");
        assert_eq!(std::fs::read(&file).expect("read"), original);

        let new = dir.path().join("made/new.txt");
        let absent = preimages.capture(&new).expect("capture");
        assert_eq!(absent, Captured::Absent);
        std::fs::create_dir_all(new.parent().expect("parent")).expect("mkdir");
        std::fs::write(&new, "x").expect("tool writes");
        assert!(!preimages.unchanged(&absent, &new));
        preimages.restore(None, &new).expect("remove");
        assert!(!new.exists());
    }

    /// Over the cap nothing is copied (a 500 MB file would cost 500 MB a
    /// step); the caller still learns whether the tool changed it.
    #[test]
    fn a_file_over_the_cap_is_not_copied_but_its_change_is_seen() {
        let dir = tempfile::tempdir().expect("dir");
        let preimages = store(dir.path(), 4);
        let file = dir.path().join("big.log");
        std::fs::write(&file, "12345").expect("write");
        let captured = preimages.capture(&file).expect("capture");
        assert!(
            matches!(captured, Captured::NotKept { len: 5, .. }),
            "{captured:?}"
        );
        assert!(!dir.path().join("store/preimages").exists(), "no copy");
        assert!(preimages.unchanged(&captured, &file));
        std::fs::write(&file, "123456").expect("tool writes");
        assert!(!preimages.unchanged(&captured, &file));
    }

    /// A copy that cannot be written is an error, never a silent `Absent`
    /// (which would make undo remove the file), and leaves no partial copy.
    #[test]
    fn a_copy_that_cannot_be_written_is_an_error() {
        let dir = tempfile::tempdir().expect("dir");
        let preimages = store(dir.path(), 1024);
        std::fs::create_dir_all(dir.path().join("store")).expect("mkdir");
        std::fs::write(dir.path().join("store/preimages"), "").expect("block the dir");
        let file = dir.path().join(".env");
        std::fs::write(&file, "KEY=1\n").expect("write");
        let error = preimages.capture(&file).expect_err("cannot copy");
        assert!(error.to_string().contains("preimages"), "{error}");
    }

    /// Fingerprints tell contents apart and say when a file is gone.
    #[test]
    fn fingerprints_follow_the_bytes() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("a");
        assert_eq!(fingerprint(&file).expect("absent"), None);
        std::fs::write(&file, "one").expect("write");
        let one = fingerprint(&file).expect("one");
        std::fs::write(&file, "two").expect("write");
        let two = fingerprint(&file).expect("two");
        assert_ne!(one, two);
        assert_eq!(two.as_ref().map(|f| f.len), Some(3));
    }
}
