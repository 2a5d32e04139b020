//! `config::Error`: what went wrong, in which file, on which line, under which key.
//!
//! Every message names its source (a file with a 1-based line, an environment
//! variable, or a flag) and, where there is one, the dotted key. It never
//! carries a raw serde dump.

use std::fmt;
use std::path::PathBuf;

/// A configuration that cannot be used, and where the fault is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config file exists but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file named by `CAIRN_CONFIG` does not exist.
    #[error("CAIRN_CONFIG names {}, which does not exist", path.display())]
    MissingExtraFile { path: PathBuf },
    /// A file is not valid TOML, or a value in it is wrong.
    #[error("{}", Located { path, line, key, message })]
    Invalid {
        path: PathBuf,
        /// 1-based; None when the parser gave no position.
        line: Option<usize>,
        /// Dotted path like `compaction.threshold`; for a syntax error the
        /// `key =` of its line under its `[table]`; None when there is none.
        key: Option<String>,
        message: String,
    },
    /// Each source was valid alone but their merge is not.
    #[error("the configuration merged from {} is invalid: {message}", list(files))]
    Merged {
        files: Vec<PathBuf>,
        message: String,
    },
    /// An environment variable has a value that does not fit its key.
    #[error("environment variable {var}: {message}")]
    Env { var: &'static str, message: String },
    /// A command-line flag has a value that does not fit its key.
    #[error("{flag}: {message}")]
    Flag { flag: &'static str, message: String },
}

fn list(files: &[PathBuf]) -> String {
    if files.is_empty() {
        return "defaults, environment and flags".to_owned();
    }
    files
        .iter()
        .map(|file| file.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Formats `path:line: key: message`, leaving out what is unknown.
struct Located<'a> {
    path: &'a PathBuf,
    line: &'a Option<usize>,
    key: &'a Option<String>,
    message: &'a String,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}
