//! `store::Error`: every way the session store can fail, each naming the
//! operation and, where a file is involved, the path.
//!
//! Messages are written for the user who reads them at the edge: what failed,
//! on what, and what to do next. Nothing here does I/O.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot create the data directory {path} for the session database: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot create the session database file {path}: {source}")]
    CreateFile {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot open the session database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error(
        "{path} is not a usable cairn session database ({detail}); \
         move it aside (for example `mv {path} {path}.broken`) and cairn will start a new one"
    )]
    Corrupt { path: PathBuf, detail: String },

    #[error(
        "{path} was written by a newer cairn (schema version {found}, this build knows up to \
         {supported}); upgrade cairn, or move the file aside to start a new one"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("cannot upgrade the session database {path} to schema version {version}: {source}")]
    Migrate {
        path: PathBuf,
        version: i64,
        source: rusqlite::Error,
    },

    #[error("cannot start the session database thread for {path}: {source}")]
    Thread {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("session store: {operation} failed: {source}")]
    Sqlite {
        operation: &'static str,
        source: rusqlite::Error,
    },

    #[error("session store: {operation}: cannot encode {what} {id} as JSON: {source}")]
    Encode {
        operation: &'static str,
        what: &'static str,
        id: String,
        source: serde_json::Error,
    },

    #[error(
        "session store: {operation}: the stored {what} {id} is not valid cairn JSON \
         (written by another version?): {source}"
    )]
    Decode {
        operation: &'static str,
        what: &'static str,
        id: String,
        source: serde_json::Error,
    },

    #[error("session store: {operation}: {what} {id} refers to {parent}, which is not stored")]
    MissingParent {
        operation: &'static str,
        what: &'static str,
        id: String,
        parent: String,
    },

    #[error("session store: {operation}: no session {id}")]
    SessionNotFound { operation: &'static str, id: String },

    #[error("session store: {operation}: the database thread has stopped")]
    Closed { operation: &'static str },

    #[error("session store: {operation}: the database job panicked (a bug in cairn)")]
    Panicked { operation: &'static str },
}

impl Error {
    /// Errors that mean the file itself is damaged become [`Error::Corrupt`],
    /// so the user learns which file to move aside whatever query hit it.
    pub(crate) fn in_file(self, path: &Path) -> Error {
        match self {
            Error::Sqlite { operation, source } if is_damaged(&source) => Error::Corrupt {
                path: path.to_path_buf(),
                detail: format!("{operation}: {source}"),
            },
            other => other,
        }
    }
}

/// True for SQLite's "this is not (or no longer) a database" answers.
pub(crate) fn is_damaged(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}

/// Names the operation a rusqlite call was part of.
pub(crate) trait During<T> {
    fn during(self, operation: &'static str) -> Result<T, Error>;
}

impl<T> During<T> for rusqlite::Result<T> {
    fn during(self, operation: &'static str) -> Result<T, Error> {
        self.map_err(|source| Error::Sqlite { operation, source })
    }
}
