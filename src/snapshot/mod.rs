//! Snapshots of the working tree, kept apart from the user's git.
//!
//! Every step that may change files is bracketed by two snapshots; the files
//! that differ between them become the step's `patch` part, and `/undo`
//! puts those files back as the earlier snapshot had them.
//!
//! The object store is a private git repository under cairn's data dir, one
//! per project (`data/snapshot/<key>`), driven through the `git` executable
//! with its own `GIT_DIR` and the project as `GIT_WORK_TREE`, as OpenCode
//! does. A snapshot is a tree object (`git add -A` + `git write-tree`): no
//! commits, refs, hooks or config of the user's repository are read or
//! written, and the project need not be a git repository at all. `.gitignore`
//! is honoured; files over the size cap and the data dir are skipped and
//! reported. What that leaves out, cairn's own tools still undo through
//! [`preimage`], and shell writes there are named (`unseen`). All calls
//! block: callers run them with `spawn_blocking`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod error;
pub mod nofollow;
pub mod preimage;
#[cfg(test)]
mod tests;
mod unseen;

pub use error::Error;
pub use preimage::{Captured, MAX_PREIMAGE_BYTES, PreImages};

/// A default of the config's `[snapshot]` table, so defined there.
pub use crate::config::DEFAULT_SNAPSHOT_MAX_FILE_BYTES;

/// One recorded state of the working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The git tree id.
    pub hash: String,
    /// Paths left out: over the size cap.
    pub skipped: Vec<String>,
}

/// How a file differs between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One file that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    /// Lines added and removed; 0 and 0 for a binary file.
    pub added: u32,
    pub removed: u32,
}

/// The private store of one project's snapshots.
#[derive(Debug, Clone)]
pub struct Snapshots {
    git_dir: PathBuf,
    data_dir: PathBuf,
    work_tree: PathBuf,
    max_file_bytes: u64,
}

impl Snapshots {
    /// The store for `work_tree` under `data_dir`; nothing is read or
    /// created until the first snapshot. `data_dir` itself is never
    /// snapshotted, even when inside the project.
    pub fn new(data_dir: &Path, work_tree: &Path, max_file_bytes: u64) -> Self {
        let work_tree = work_tree
            .canonicalize()
            .unwrap_or_else(|_| work_tree.to_owned());
        let data_dir = data_dir
            .canonicalize()
            .unwrap_or_else(|_| data_dir.to_owned());
        Self {
            git_dir: data_dir.join("snapshot").join(project_key(&work_tree)),
            data_dir,
            work_tree,
            max_file_bytes,
        }
    }

    /// Creates the store on first use.
    fn ready(&self) -> Result<(), Error> {
        if self.git_dir.join("HEAD").exists() {
            return Ok(());
        }
        self.init()
    }

    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// The copies of files kept before cairn's own tools wrote them, for
    /// what this store's snapshots cannot see.
    pub fn preimages(&self) -> PreImages {
        PreImages::new(self.git_dir.join("preimages"), MAX_PREIMAGE_BYTES)
    }

    fn init(&self) -> Result<(), Error> {
        crate::paths::create_private_dir(&self.git_dir).map_err(|e| Error::Io {
            path: self.git_dir.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        // An empty template: no sample hooks, nothing but what git needs.
        // Private like the rest of the data dir: the objects are copies of
        // the project's files, secrets included.
        self.git(["init", "--quiet", "--template=", "--shared=0600"])?;
        for (key, value) in [
            ("core.autocrlf", "false"),
            ("core.quotepath", "false"),
            ("core.fsmonitor", "false"),
            ("gc.auto", "0"),
            // A smaller index to read and write on every snapshot.
            ("index.version", "4"),
        ] {
            self.git(["config", key, value])?;
        }
        let info = self.git_dir.join("info");
        crate::paths::create_private_dir(&info).map_err(|e| Error::Io {
            path: info.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut exclude = String::from("# written by cairn: never snapshot cairn's data\n");
        if let Ok(inside) = self.data_dir.strip_prefix(&self.work_tree)
            && !inside.as_os_str().is_empty()
        {
            exclude.push_str(&format!("/{}/\n", inside.to_string_lossy()));
        }
        let path = info.join("exclude");
        write_private(&path, &exclude).map_err(|source| Error::Io { path, source })
    }

    /// Holds the store for one snapshot or restore, which write its index:
    /// another session of this process or another cairn waits its turn
    /// instead of failing on git's `index.lock`. The lock is the kernel's
    /// (`flock`), gone with its process, so an `index.lock` found while it
    /// is held was left by a git killed mid-write (cairn killed with -9)
    /// and is removed: a crash never blocks later snapshots.
    fn lock(&self) -> Result<std::fs::File, Error> {
        let path = self.git_dir.join("cairn.lock");
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let file = crate::paths::private_file_options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        flock(&file).map_err(io)?;
        let stale = self.git_dir.join("index.lock");
        match std::fs::remove_file(&stale) {
            Ok(()) => tracing::warn!("removed {} left by a git killed mid-write", stale.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(Error::Io {
                    path: stale,
                    source,
                });
            }
        }
        Ok(file)
    }

    /// Records the working tree now.
    ///
    /// One walk of the tree (`ls-files --others --modified`: what differs
    /// from the last snapshot, ignored files left out), the size cap applied
    /// to that list, then only the listed paths are hashed into the index
    /// (`update-index`, which walks nothing) and the index is written as a
    /// tree. Nothing changed: the walk and a cached `write-tree`, no hashing.
    pub fn track(&self) -> Result<Snapshot, Error> {
        self.ready()?;
        let _store = self.lock()?;
        self.track_locked()
    }

    fn track_locked(&self) -> Result<Snapshot, Error> {
        let listed = self.candidates(&[])?;
        // A nested repository is listed as `dir/`: only `git add` knows how
        // to record it (as a gitlink), so take the slower, general way.
        if listed.iter().any(|path| path.ends_with('/')) {
            return self.track_by_add();
        }
        let skipped = self.record(listed)?;
        let hash = text(self.git(["write-tree"])?).trim().to_owned();
        Ok(Snapshot { hash, skipped })
    }

    /// Brings the index up to date for `listed` paths: gone ones (deleted,
    /// or a directory now) and those over the size cap leave it first, so a
    /// file may then take a directory's place or the reverse; the rest are
    /// hashed in. Returns the paths skipped for their size.
    fn record(&self, listed: Vec<String>) -> Result<Vec<String>, Error> {
        let (mut leave, mut add, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        for path in listed {
            match std::fs::symlink_metadata(self.work_tree.join(&path)) {
                Ok(meta) if meta.is_dir() => leave.push(path),
                Ok(meta) if meta.len() > self.max_file_bytes => {
                    leave.push(path.clone());
                    skipped.push(path);
                }
                Ok(_) => add.push(path),
                Err(_) => leave.push(path),
            }
        }
        self.update_index(&["--force-remove"], &leave)?;
        self.update_index(&["--add", "--replace"], &add)?;
        Ok(skipped)
    }

    /// [`Self::track`] through `git add -A`, which walks the tree again.
    fn track_by_add(&self) -> Result<Snapshot, Error> {
        self.ready()?;
        let skipped = self.oversized()?;
        self.update_index(&["--force-remove"], &skipped)?;
        let mut args = vec!["add", "-A", "--", "."];
        let excludes: Vec<String> = skipped
            .iter()
            .map(|path| format!(":(exclude,literal){path}"))
            .collect();
        args.extend(excludes.iter().map(String::as_str));
        self.git(args)?;
        let hash = text(self.git(["write-tree"])?).trim().to_owned();
        Ok(Snapshot { hash, skipped })
    }

    /// The files new, changed or deleted since the last snapshot (of
    /// `paths` only, literally, when some are given), ignored ones left out.
    fn candidates(&self, paths: &[String]) -> Result<Vec<String>, Error> {
        let mut args = vec![
            "ls-files".to_owned(),
            "-z".to_owned(),
            "--others".to_owned(),
            "--modified".to_owned(),
            "--exclude-standard".to_owned(),
        ];
        if !paths.is_empty() {
            args.push("--".to_owned());
            args.extend(paths.iter().map(|p| format!(":(literal){p}")));
        }
        let listed: BTreeSet<String> = self
            .git(args)?
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        Ok(listed.into_iter().collect())
    }

    /// `git update-index <flags> -z --stdin` on `paths`, which are file
    /// names, not pathspecs; nothing to do for none.
    fn update_index(&self, flags: &[&str], paths: &[String]) -> Result<(), Error> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut input = Vec::new();
        for path in paths {
            input.extend_from_slice(path.as_bytes());
            input.push(0);
        }
        let mut args = vec!["update-index"];
        args.extend_from_slice(flags);
        args.extend(["-z", "--stdin"]);
        self.git_with_input(args, &input)?;
        Ok(())
    }

    /// Records the tree with only `paths` looked at: every other file stays
    /// as the last snapshot of this store recorded it. After a step whose
    /// only writers name their files (`edit`, `write`), following the full
    /// snapshot taken at its start, this skips a scan of the whole tree.
    /// Ignored files and files over the size cap are left out, as in
    /// [`Self::track`].
    pub fn track_paths(&self, paths: &[String]) -> Result<Snapshot, Error> {
        self.ready()?;
        let _store = self.lock()?;
        let mut skipped = Vec::new();
        if !paths.is_empty() {
            let listed = self.candidates(paths)?;
            if listed.iter().any(|path| path.ends_with('/')) {
                return self.track_locked();
            }
            skipped = self.record(listed)?;
        }
        let hash = text(self.git(["write-tree"])?).trim().to_owned();
        Ok(Snapshot { hash, skipped })
    }

    fn over_cap(&self, path: &str) -> bool {
        std::fs::symlink_metadata(self.work_tree.join(path))
            .is_ok_and(|m| m.len() > self.max_file_bytes)
    }

    /// Candidate files (new or changed since the last snapshot) over the cap.
    fn oversized(&self) -> Result<Vec<String>, Error> {
        let mut listed = self.candidates(&[])?;
        listed.retain(|path| self.over_cap(path));
        Ok(listed)
    }

    /// The files that differ from `from` to `to`, with line counts. Equal
    /// tree ids are equal trees: no git call.
    pub fn changes(&self, from: &str, to: &str) -> Result<Vec<FileChange>, Error> {
        if from == to {
            return Ok(Vec::new());
        }
        // One diff for both: `:<modes> <ids> <status>\0<path>\0` records,
        // then `<added>\t<removed>\t<path>\0` ones.
        let output = self.git([
            "diff-tree",
            "-r",
            "--no-renames",
            "--raw",
            "--numstat",
            "-z",
            from,
            to,
        ])?;
        let mut counts = std::collections::HashMap::new();
        let mut kinds = Vec::new();
        let mut records = output.stdout.split(|b| *b == 0).filter(|r| !r.is_empty());
        while let Some(record) = records.next() {
            if record.first() == Some(&b':') {
                let Some(path) = records.next() else { break };
                if is_gitlink(record) {
                    // A nested repository or submodule: its files are not in
                    // the snapshot, so `/undo` cannot put them back; the step
                    // names it instead (`unseen`). Restoring the gitlink
                    // would fail on its directory and stop the whole undo.
                    continue;
                }
                let kind = match record.last() {
                    Some(b'A') => ChangeKind::Added,
                    Some(b'D') => ChangeKind::Deleted,
                    _ => ChangeKind::Modified,
                };
                kinds.push((String::from_utf8_lossy(path).into_owned(), kind));
                continue;
            }
            let record = String::from_utf8_lossy(record);
            let mut fields = record.splitn(3, '\t');
            let added = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let removed = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            if let Some(path) = fields.next() {
                counts.insert(path.to_owned(), (added, removed));
            }
        }
        Ok(kinds
            .into_iter()
            .map(|(path, kind)| {
                let (added, removed) = counts.get(&path).copied().unwrap_or((0, 0));
                FileChange {
                    path,
                    kind,
                    added,
                    removed,
                }
            })
            .collect())
    }

    /// The unified diff from `from` to `to`.
    pub fn diff(&self, from: &str, to: &str) -> Result<String, Error> {
        Ok(text(self.git([
            "diff",
            "--no-renames",
            "--no-color",
            from,
            to,
        ])?))
    }

    /// The unified diff from `from` to `to` of `paths` only. The paths are
    /// literal: a name like `*.rs` a tool wrote is that file, not a glob.
    pub fn diff_paths(&self, from: &str, to: &str, paths: &[String]) -> Result<String, Error> {
        let mut args = vec![
            "diff".to_owned(),
            "--no-renames".to_owned(),
            "--no-color".to_owned(),
            from.to_owned(),
            to.to_owned(),
            "--".to_owned(),
        ];
        args.extend(paths.iter().map(|path| format!(":(literal){path}")));
        Ok(text(self.git(args)?))
    }

    /// Puts each of `paths` back as snapshot `hash` had it: written when the
    /// snapshot has it, removed when it does not.
    pub fn restore(&self, hash: &str, paths: &[String]) -> Result<(), Error> {
        if paths.is_empty() {
            return Ok(());
        }
        let _store = self.lock()?;
        let mut args = vec!["ls-tree", "-r", "-z", "--name-only", hash, "--"];
        let literal: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
        args.extend(literal.iter().map(String::as_str));
        let listed = self.git(args)?;
        let present: BTreeSet<String> = listed
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        for path in paths.iter().filter(|p| !present.contains(*p)) {
            self.remove(path)?;
        }
        if !present.is_empty() {
            // A file may stand where the snapshot has a directory, or the reverse.
            for path in &present {
                self.clear_way(path)?;
            }
            let mut args = vec!["checkout", hash, "--"];
            let literal: Vec<String> = present.iter().map(|p| format!(":(literal){p}")).collect();
            args.extend(literal.iter().map(String::as_str));
            self.git(args)?;
        }
        Ok(())
    }

    /// Removes `path` from the work tree and the directories it leaves empty.
    fn remove(&self, path: &str) -> Result<(), Error> {
        let full = self.work_tree.join(path);
        match std::fs::remove_file(&full) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(Error::Io { path: full, source }),
        }
        let mut dir = full.parent();
        while let Some(parent) = dir {
            if parent == self.work_tree || std::fs::remove_dir(parent).is_err() {
                break;
            }
            dir = parent.parent();
        }
        Ok(())
    }

    /// Removes whatever is in the way of writing file `path`: a directory at
    /// its place, or a file where one of its parents must be a directory.
    fn clear_way(&self, path: &str) -> Result<(), Error> {
        let full = self.work_tree.join(path);
        if full.is_dir() {
            std::fs::remove_dir_all(&full).map_err(|source| Error::Io {
                path: full.clone(),
                source,
            })?;
        }
        for parent in Path::new(path).ancestors().skip(1) {
            let at = self.work_tree.join(parent);
            if parent.as_os_str().is_empty() {
                break;
            }
            if at.is_file() {
                std::fs::remove_file(&at).map_err(|source| Error::Io { path: at, source })?;
            }
        }
        Ok(())
    }

    /// Runs git on the store: its own `GIT_DIR`, the project as work tree,
    /// and nothing of the caller's git environment.
    fn git<I, S>(&self, args: I) -> Result<Output, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let output = self
            .command(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.spawn_error(e))?;
        self.checked(&args, output)
    }

    /// [`Self::git`] with `input` on its standard input.
    fn git_with_input(&self, args: Vec<&str>, input: &[u8]) -> Result<Output, Error> {
        use std::io::Write as _;
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        let mut child = self
            .command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.spawn_error(e))?;
        let written = match child.stdin.take() {
            Some(mut stdin) => stdin.write_all(input),
            None => Ok(()),
        };
        let output = child.wait_with_output().map_err(|e| self.spawn_error(e))?;
        written.map_err(|e| self.spawn_error(e))?;
        self.checked(&args, output)
    }

    fn command(&self, args: &[std::ffi::OsString]) -> Command {
        let mut command = Command::new("git");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(name);
            }
        }
        command
            .args(args)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .current_dir(&self.work_tree);
        command
    }

    fn spawn_error(&self, e: std::io::Error) -> Error {
        match e.kind() {
            std::io::ErrorKind::NotFound => Error::GitMissing(e),
            _ => Error::Io {
                path: self.git_dir.clone(),
                source: e,
            },
        }
    }

    fn checked(&self, args: &[std::ffi::OsString], output: Output) -> Result<Output, Error> {
        if !output.status.success() {
            return Err(Error::Git {
                args: args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(output)
    }
}

/// Collects, in every project store under `data_dir`, the objects older than
/// `max_age_days` that the store's index does not use: snapshots of old
/// turns (including those of deleted sessions) go, the current tree stays.
/// Returns the stores it could not clean, with why; run it off the UI path.
pub fn collect(data_dir: &Path, max_age_days: u32) -> Vec<(PathBuf, Error)> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("snapshot")) else {
        return Vec::new();
    };
    let expire = format!("--expire={max_age_days}.days.ago");
    let mut failed = Vec::new();
    for entry in entries.flatten() {
        let git_dir = entry.path();
        if !git_dir.join("HEAD").exists() {
            continue;
        }
        let store = Snapshots {
            git_dir: git_dir.clone(),
            data_dir: data_dir.to_owned(),
            work_tree: data_dir.to_owned(),
            max_file_bytes: DEFAULT_SNAPSHOT_MAX_FILE_BYTES,
        };
        store.preimages().collect(max_age_days);
        if let Err(error) = store.git(["prune", expire.as_str()]) {
            failed.push((git_dir, error));
        }
    }
    failed
}

/// Waits for an exclusive `flock` on `file`; the kernel drops it with the
/// file or its process.
fn flock(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    loop {
        // SAFETY: flock only reads the descriptor, which `file` keeps open
        // for the duration of the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
}

/// True for a `diff-tree --raw` record (`:<old mode> <new mode> ...`) of a
/// gitlink on either side.
fn is_gitlink(record: &[u8]) -> bool {
    let modes = record.get(1..).unwrap_or_default();
    modes
        .split(|b| *b == b' ')
        .take(2)
        .any(|mode| mode == b"160000")
}

fn text(output: Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A directory name for a project: readable tail plus a hash of the full path.
fn project_key(work_tree: &Path) -> String {
    // FNV-1a: stable across runs and Rust versions, unlike DefaultHasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in work_tree.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let tail: String = work_tree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(32)
        .collect();
    format!("{tail}-{hash:016x}")
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut file = crate::paths::private_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}
