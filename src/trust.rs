//! Project trust: which settings written in a project (a cloned repository)
//! may loosen permissions, start processes or redirect keys, and the user's
//! record of the projects they trusted.
//!
//! A risky setting found in a project is a [`Risk`]; it applies only when the
//! user's record for its project root holds that exact setting, so a `git
//! pull` that adds a server or `yolo` asks again while a harmless change does
//! not. The record is a small JSON file in the data directory (mode 0600,
//! written atomically): config loading reads it before the sessions database
//! is opened, and `cairn config` must not need the database at all.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The record's file name in the data directory.
pub const FILE: &str = "trusted-projects.json";

/// One setting from a project that only applies once the project is trusted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Risk {
    /// The project root the setting belongs to (canonical).
    pub root: PathBuf,
    /// The file that holds it.
    pub file: PathBuf,
    /// 1-based, when it could be found.
    pub line: Option<usize>,
    /// Dotted key (`permission.bash`, `mcp.x`, `mcpServers.x`).
    pub key: String,
    /// What it would do: the value, the server's command line or URL.
    pub value: String,
}

impl Risk {
    /// What the record stores: the file relative to the root, key and value
    /// (not the line, which moves with harmless edits).
    fn record(&self) -> String {
        let file = self.file.strip_prefix(&self.root).unwrap_or(&self.file);
        format!("{}: {} = {}", file.display(), self.key, self.value)
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: ", self.file.display())?,
            None => write!(f, "{}: ", self.file.display())?,
        }
        write!(f, "{} = {}", self.key, self.value)
    }
}

/// The canonical form of a project root (symlinks resolved); the path as
/// given when it cannot be resolved.
pub fn canonical(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// A record that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a trust record ({message}); delete it to start again", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Records {
    /// Project root -> the settings trusted there.
    projects: BTreeMap<PathBuf, Trusted>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Trusted {
    /// Milliseconds since the epoch.
    trusted_at: i64,
    settings: BTreeSet<String>,
}

/// The user's record of trusted projects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    path: PathBuf,
}

impl Store {
    /// The record in `data_dir` (read lazily; it may not exist yet).
    pub fn in_dir(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Records, Error> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Records::default());
            }
            Err(source) => {
                return Err(Error::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        serde_json::from_str(&text).map_err(|error| Error::Invalid {
            path: self.path.clone(),
            message: error.to_string(),
        })
    }

    /// Whether every one of `risks` was trusted for its root. Nothing risky
    /// needs no trust.
    ///
    /// # Errors
    /// The record exists but cannot be read or parsed.
    pub fn trusts(&self, risks: &[Risk]) -> Result<bool, Error> {
        if risks.is_empty() {
            return Ok(true);
        }
        let records = self.read()?;
        Ok(risks.iter().all(|risk| {
            records
                .projects
                .get(&risk.root)
                .is_some_and(|trusted| trusted.settings.contains(&risk.record()))
        }))
    }

    /// Trusts `roots` with exactly `risks` (what was trusted before in those
    /// roots is replaced, so a setting removed and added back asks again).
    ///
    /// # Errors
    /// The record cannot be read or written.
    pub fn trust(&self, roots: &[PathBuf], risks: &[Risk], now: i64) -> Result<(), Error> {
        let mut records = self.read()?;
        for root in roots {
            let settings = risks
                .iter()
                .filter(|risk| &risk.root == root)
                .map(Risk::record)
                .collect();
            records.projects.insert(
                root.clone(),
                Trusted {
                    trusted_at: now,
                    settings,
                },
            );
        }
        self.write(&records)
    }

    /// Forgets `roots`; returns how many were trusted.
    ///
    /// # Errors
    /// The record cannot be read or written.
    pub fn revoke(&self, roots: &[PathBuf]) -> Result<usize, Error> {
        let mut records = self.read()?;
        let removed = roots
            .iter()
            .filter(|root| records.projects.remove(*root).is_some())
            .count();
        if removed > 0 {
            self.write(&records)?;
        }
        Ok(removed)
    }

    /// Writes a temporary file (0600) beside the record and renames it over
    /// the record: a crash leaves the old record or the new one, never half.
    fn write(&self, records: &Records) -> Result<(), Error> {
        let failed = |source| Error::Write {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            crate::paths::create_private_dir(dir)
                .map_err(|error| failed(std::io::Error::other(error.to_string())))?;
        }
        let text = serde_json::to_string_pretty(records).map_err(|e| failed(e.into()))?;
        let temp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        let written = (|| {
            use std::io::Write;
            let mut file = crate::paths::private_file_options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&temp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(failed)
    }
}

/// The distinct roots of `risks`, in order.
pub fn roots(risks: &[Risk]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = risks.iter().map(|risk| risk.root.clone()).collect();
    roots.sort();
    roots.dedup();
    roots
}

/// The one stderr line `cairn run` prints for an untrusted project.
pub fn headless_notice(risks: &[Risk]) -> String {
    let mut files: Vec<String> = risks.iter().map(|r| r.file.display().to_string()).collect();
    files.dedup();
    files.sort();
    files.dedup();
    let keys: Vec<String> = risks.iter().map(|r| r.key.clone()).collect();
    format!(
        "cairn: project not trusted; ignored from {}: {} (review with `cairn trust`, which trusts them; or pass --trust-project)",
        files.join(", "),
        keys.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn risk(root: &Path, key: &str, value: &str) -> Risk {
        Risk {
            root: root.to_path_buf(),
            file: root.join("cairn.toml"),
            line: Some(3),
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn a_new_setting_asks_again_a_removed_one_does_not() {
        let data = tempfile::tempdir().expect("tempdir");
        let store = Store::in_dir(data.path());
        let root = PathBuf::from("/p");
        let yolo = risk(&root, "yolo", "true");
        let server = risk(&root, "mcp.x", "sh -c evil");
        assert!(!store.trusts(std::slice::from_ref(&yolo)).expect("read"));
        assert!(store.trusts(&[]).expect("nothing risky"));
        store
            .trust(std::slice::from_ref(&root), std::slice::from_ref(&yolo), 1)
            .expect("write");
        assert!(store.trusts(std::slice::from_ref(&yolo)).expect("read"));
        assert!(!store.trusts(&[yolo.clone(), server.clone()]).expect("read"));
        // The same key with another value is another setting.
        assert!(!store.trusts(&[risk(&root, "yolo", "1")]).expect("read"));
        // Another root with the same file is another project.
        assert!(
            !store
                .trusts(&[risk(Path::new("/q"), "yolo", "true")])
                .expect("read")
        );
        assert_eq!(
            store.revoke(std::slice::from_ref(&root)).expect("revoke"),
            1
        );
        assert!(!store.trusts(&[yolo]).expect("read"));
    }

    #[cfg(unix)]
    #[test]
    fn the_record_is_private_and_a_bad_one_is_an_error() {
        use std::os::unix::fs::PermissionsExt;
        let data = tempfile::tempdir().expect("tempdir");
        let store = Store::in_dir(data.path());
        let root = PathBuf::from("/p");
        store
            .trust(
                std::slice::from_ref(&root),
                &[risk(&root, "yolo", "true")],
                1,
            )
            .expect("write");
        let mode = std::fs::metadata(store.path())
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(store.path(), "{not json").expect("write");
        let error = store.trusts(&[risk(&root, "yolo", "true")]).unwrap_err();
        assert!(error.to_string().contains("delete it"), "{error}");
    }
}
