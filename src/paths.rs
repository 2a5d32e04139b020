//! Where cairn keeps things: the data directory (sessions database, saved tool
//! output, logs) and the user's config file, following the XDG rules on Linux.
//!
//! `CAIRN_DATA_DIR` overrides the data directory (tests, portable installs).
//! Functions that name a directory create it (mode 0700: transcripts are private);
//! nothing here reads or writes the files themselves.
//!
//! The home is `HOME` when it names a directory, and nothing else: with
//! `HOME` unset or naming nothing, only the XDG variables place cairn's
//! folders (never the account's home from the password database, where the
//! user did not point us, and never a created `HOME`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Environment variable that replaces the whole data directory.
pub const DATA_DIR_ENV: &str = "CAIRN_DATA_DIR";

/// A directory that could not be found or created.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "cannot find where to keep cairn's data: HOME is not set (or names no directory) and \
         neither XDG_DATA_HOME nor {DATA_DIR_ENV} is; set one of them"
    )]
    NoHome,
    #[error("cannot create directory {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The user's home: `HOME` when it names a directory.
pub fn home() -> Option<PathBuf> {
    home_in(std::env::var_os("HOME"))
}

fn home_in(home: Option<OsString>) -> Option<PathBuf> {
    home.filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .filter(|home| home.is_absolute() && home.is_dir())
}

/// What is wrong with `HOME`, in one line for the user, when it is unset or
/// names no directory; `None` when it is a directory.
pub fn home_problem() -> Option<String> {
    let set = std::env::var_os("HOME").filter(|home| !home.is_empty());
    if home_in(set.clone()).is_some() {
        return None;
    }
    let what = match set {
        None => "HOME is not set".to_owned(),
        Some(home) => format!("HOME={} is not a directory", Path::new(&home).display()),
    };
    let data =
        locate_data_dir().map_or_else(|_| "nowhere".to_owned(), |dir| dir.display().to_string());
    let config = config_dir().map_or_else(|| "nowhere".to_owned(), |dir| dir.display().to_string());
    Some(format!(
        "{what}: cairn keeps its data in {data}, reads its config from {config}, and `~/` in paths names nothing"
    ))
}

/// `$XDG_<variable>/cairn` when the variable is an absolute path, else
/// `home/<fallback>/cairn`; `None` with neither.
fn xdg_dir(variable: &str, fallback: &str) -> Option<PathBuf> {
    let xdg = std::env::var_os(variable)
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    match xdg {
        Some(dir) => Some(dir.join("cairn")),
        None => home().map(|home| home.join(fallback).join("cairn")),
    }
}

/// `$XDG_CONFIG_HOME/cairn` (else `~/.config/cairn`). Not created: only read.
pub fn config_dir() -> Option<PathBuf> {
    xdg_dir("XDG_CONFIG_HOME", ".config")
}

/// The user's config file, `config_dir()/config.toml`, whether or not it exists.
pub fn global_config_file() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("config.toml"))
}

/// Where the data directory is, without creating it: `CAIRN_DATA_DIR`, else
/// `$XDG_DATA_HOME/cairn` (else `~/.local/share/cairn`).
pub fn locate_data_dir() -> Result<PathBuf, Error> {
    match std::env::var_os(DATA_DIR_ENV).filter(|dir| !dir.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => xdg_dir("XDG_DATA_HOME", ".local/share").ok_or(Error::NoHome),
    }
}

/// The data directory, created if needed.
pub fn data_dir() -> Result<PathBuf, Error> {
    let dir = locate_data_dir()?;
    create_private_dir(&dir)?;
    Ok(dir)
}

/// The SQLite sessions database, `data/cairn.db` (its directory is created).
pub fn db_path() -> Result<PathBuf, Error> {
    Ok(data_dir()?.join("cairn.db"))
}

/// Where full outputs of truncated tool results are saved, under the data
/// directory, one folder per session.
pub const TOOL_OUTPUT_DIR: &str = "tool-output";

/// The log file, `data/log/cairn.log` (its directory is created).
pub fn log_path() -> Result<PathBuf, Error> {
    let dir = data_dir()?.join("log");
    create_private_dir(&dir)?;
    Ok(dir.join("cairn.log"))
}

/// `entry` with a leading `~/` replaced by `home` (when known); any other
/// entry as given. For paths the user writes in config and instructions.
pub fn expand_home(entry: &str, home: Option<&Path>) -> PathBuf {
    match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(entry),
    }
}

/// Creates `dir` and its missing parents; the ones created get mode 0700.
/// An existing directory keeps the mode it has: the user chose it.
pub fn create_private_dir(dir: &Path) -> Result<(), Error> {
    private_dir_builder()
        .create(dir)
        .map_err(|source| Error::Create {
            path: dir.to_owned(),
            source,
        })
}

/// A recursive directory builder whose created directories get mode 0700.
#[must_use]
pub fn private_dir_builder() -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// Open options whose created files only their owner can read (mode 0600):
/// sessions, logs, saved tool outputs and snapshots hold code, prompts and
/// whatever secrets a command printed. Callers add how they open (append,
/// truncate, create_new); an existing file keeps the mode it has.
#[must_use]
pub fn private_file_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn created_dirs_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("a/b");
        create_private_dir(&dir).expect("create");
        create_private_dir(&dir).expect("creating twice is fine");
        for created in [temp.path().join("a"), dir] {
            let mode = std::fs::metadata(&created)
                .expect("exists")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{}", created.display());
        }
    }
}
