//! The Landlock rule set of a [`Policy`]: read and execute everywhere but
//! the denied paths, write under the writable directories, a few devices.
//!
//! Landlock only grants, beneath a directory. "Everything but `~/.ssh`" is
//! therefore granted as the siblings of each denied path's ancestors, one
//! level at a time ([`grants_around`]); the ancestors themselves get no
//! right (so `ls ~` fails where listing it would also list `~/.ssh`).
//! Symlinks are never granted: a grant follows them to their target, and
//! the target is reachable under its own name if allowed.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope,
};

use super::error::Error;
use super::policy::Policy;

/// The Landlock version whose rights cairn asks for. Newer kernels enforce
/// exactly these; older ones enforce what they can (the crate's best-effort
/// mode), and [`super::support`] says which.
const ABI_USED: ABI = ABI::V5;

/// Devices every command may read and write (`> /dev/null`). Not
/// `/dev/tty` (cairn's own terminal) nor `/dev/pts` (the user's terminals).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Shared memory, as writable as the temp directory (Python's multiprocessing).
const SHARED_MEMORY: &str = "/dev/shm";

/// The rule set for `policy`, created (an open Landlock fd) but not applied.
pub(super) fn ruleset(policy: &Policy) -> Result<RulesetCreated, Error> {
    let read = AccessFs::from_read(ABI_USED);
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(Error::landlock)?
        .scope(Scope::from_all(ABI::V6))
        .map_err(Error::landlock)?
        .create()
        .map_err(Error::landlock)?;
    for path in grants_around(Path::new("/"), &policy.deny_read) {
        ruleset = add(ruleset, &path, read)?;
    }
    let mut writable: Vec<&Path> = policy.writable.iter().map(PathBuf::as_path).collect();
    writable.push(&policy.temp);
    writable.push(Path::new(SHARED_MEMORY));
    for root in writable {
        for path in grants_around(root, &policy.deny_read) {
            ruleset = add(ruleset, &path, read | write_rights())?;
        }
    }
    for device in DEVICES {
        ruleset = add(
            ruleset,
            Path::new(device),
            read | write_rights() | AccessFs::IoctlDev,
        )?;
    }
    Ok(ruleset)
}

/// Writing, creating and removing, but never making a device node: a
/// command running as root could otherwise `mknod` the disk in the project
/// and write to it.
fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI_USED)
        & !(AccessFs::MakeBlock | AccessFs::MakeChar | AccessFs::IoctlDev)
}

/// Grants `access` on `path` (a directory: beneath it; a file: the file
/// rights only). A path that vanished since it was listed is skipped.
fn add(
    ruleset: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, Error> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset);
    };
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI_USED)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(Error::landlock)
}

/// The paths that together cover everything under `dir` except `excluded`
/// (and except the ancestors of an excluded path, which get nothing).
pub(super) fn grants_around(dir: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, excluded, &mut out);
    out
}

fn collect(dir: &Path, excluded: &[PathBuf], out: &mut Vec<PathBuf>) {
    if excluded.iter().any(|e| dir.starts_with(e)) {
        return;
    }
    if !excluded.iter().any(|e| e.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_symlink()) {
            continue;
        }
        collect(&entry.path(), excluded, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_cover_siblings_of_each_denied_path_and_nothing_of_it() {
        let home = tempfile::tempdir().unwrap();
        for dir in [".ssh", ".config/gcloud", ".config/nvim", "src"] {
            std::fs::create_dir_all(home.path().join(dir)).unwrap();
        }
        std::fs::write(home.path().join(".bashrc"), "").unwrap();
        std::os::unix::fs::symlink(home.path().join(".ssh"), home.path().join("keys")).unwrap();
        let denied = [home.path().join(".ssh"), home.path().join(".config/gcloud")];
        let mut grants = grants_around(home.path(), &denied);
        grants.sort();
        let expected: Vec<PathBuf> = [".bashrc", ".config/nvim", "src"]
            .iter()
            .map(|rel| home.path().join(rel))
            .collect();
        assert_eq!(grants, expected);
    }
}
