//! Why a confinement could not be prepared: its own file, so that the
//! modules building one part of it need not import the one assembling them.

use std::path::PathBuf;

/// Why a confinement could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot build the Landlock rules: {0}")]
    Landlock(String),
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    #[error("a path the sandbox must name holds a NUL byte: {}", .0.display())]
    Path(PathBuf),
}

impl Error {
    pub(super) fn landlock(error: impl std::fmt::Display) -> Self {
        Self::Landlock(error.to_string())
    }
    pub(super) fn seccomp(error: impl std::fmt::Display) -> Self {
        Self::Seccomp(error.to_string())
    }
}
