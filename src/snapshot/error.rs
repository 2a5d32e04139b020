//! The snapshot store's errors: git missing or failing, and I/O on the
//! store or on a pre-image, each naming its path or git command. Its own
//! file so that the store (`mod.rs`) and the pre-images share it without
//! importing each other.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "snapshots need the `git` executable, which was not found on PATH ({0}); \
         install git or set `snapshot.enabled = false` in your config.toml (a project's \
         cairn.toml needs `cairn trust` for it)"
    )]
    GitMissing(std::io::Error),
    #[error("snapshot store {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A project file or a pre-image copy (read, copied, restored).
    #[error("{path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("snapshot store: `git {args}` failed: {stderr}")]
    Git { args: String, stderr: String },
}
