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
//! reported. All calls block: callers run them with `spawn_blocking`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[cfg(test)]
mod tests;

/// Files bigger than this are left out of snapshots unless configured.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "snapshots need the `git` executable, which was not found on PATH ({0}); \
         install git or set `snapshot.enabled = false` in cairn.toml"
    )]
    GitMissing(std::io::Error),
    #[error("snapshot store {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("snapshot store: `git {args}` failed: {stderr}")]
    Git { args: String, stderr: String },
}

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

    /// Records the working tree now.
    pub fn track(&self) -> Result<Snapshot, Error> {
        self.ready()?;
        let skipped = self.oversized()?;
        if !skipped.is_empty() {
            let mut args = vec!["rm", "--cached", "--quiet", "--ignore-unmatch", "--"];
            args.extend(skipped.iter().map(String::as_str));
            self.git(args)?;
        }
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

    /// Records the tree with only `paths` looked at: every other file stays
    /// as the last snapshot of this store recorded it. After a step whose
    /// only writers name their files (`edit`, `write`), following the full
    /// snapshot taken at its start, this skips a scan of the whole tree.
    /// Ignored files and files over the size cap are left out, as in
    /// [`Self::track`].
    pub fn track_paths(&self, paths: &[String]) -> Result<Snapshot, Error> {
        self.ready()?;
        let mut skipped = Vec::new();
        if !paths.is_empty() {
            let mut args = vec![
                "ls-files",
                "-z",
                "--others",
                "--modified",
                "--exclude-standard",
                "--",
            ];
            let literal: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
            args.extend(literal.iter().map(String::as_str));
            let listed: BTreeSet<String> = self
                .git(args)?
                .stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            let (over, add): (Vec<String>, Vec<String>) =
                listed.into_iter().partition(|path| self.over_cap(path));
            if !over.is_empty() {
                let mut args = vec!["rm", "--cached", "--quiet", "--ignore-unmatch", "--"];
                args.extend(over.iter().map(String::as_str));
                self.git(args)?;
            }
            if !add.is_empty() {
                let mut args = vec!["add", "-A", "--"];
                let literal: Vec<String> = add.iter().map(|p| format!(":(literal){p}")).collect();
                args.extend(literal.iter().map(String::as_str));
                self.git(args)?;
            }
            skipped = over;
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
        let listed = self.git([
            "ls-files",
            "-z",
            "--others",
            "--modified",
            "--exclude-standard",
        ])?;
        let mut over = BTreeSet::new();
        for path in listed.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path).into_owned();
            let size = std::fs::symlink_metadata(self.work_tree.join(&path))
                .map(|m| m.len())
                .unwrap_or(0);
            if size > self.max_file_bytes {
                over.insert(path);
            }
        }
        Ok(over.into_iter().collect())
    }

    /// The files that differ from `from` to `to`, with line counts.
    pub fn changes(&self, from: &str, to: &str) -> Result<Vec<FileChange>, Error> {
        let status = self.git(["diff", "--no-renames", "--name-status", "-z", from, to])?;
        let numstat = self.git(["diff", "--no-renames", "--numstat", "-z", from, to])?;
        let mut counts = std::collections::HashMap::new();
        for record in numstat.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let record = String::from_utf8_lossy(record);
            let mut fields = record.splitn(3, '\t');
            let added = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let removed = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            if let Some(path) = fields.next() {
                counts.insert(path.to_owned(), (added, removed));
            }
        }
        let mut fields = status.stdout.split(|b| *b == 0).filter(|r| !r.is_empty());
        let mut changes = Vec::new();
        while let (Some(code), Some(path)) = (fields.next(), fields.next()) {
            let path = String::from_utf8_lossy(path).into_owned();
            let kind = match code.first() {
                Some(b'A') => ChangeKind::Added,
                Some(b'D') => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            let (added, removed) = counts.get(&path).copied().unwrap_or((0, 0));
            changes.push(FileChange {
                path,
                kind,
                added,
                removed,
            });
        }
        Ok(changes)
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
        let mut command = Command::new("git");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(name);
            }
        }
        let output = command
            .args(&args)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .current_dir(&self.work_tree)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::GitMissing(e),
                _ => Error::Io {
                    path: self.git_dir.clone(),
                    source: e,
                },
            })?;
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
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        };
        if let Err(error) = store.git(["prune", expire.as_str()]) {
            failed.push((git_dir, error));
        }
    }
    failed
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
