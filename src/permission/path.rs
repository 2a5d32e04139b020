//! Where a path really points, for the `external_directory` check: made
//! absolute, symlinks followed and `..` resolved, even for paths that do not
//! exist yet. Pure file-system lookups; never decides what is allowed.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute (against `cwd`), with symlinks and `..` resolved.
/// A path that does not exist yet is resolved through its nearest existing
/// ancestor, so `new_dir/../../x` and a dangling symlink cannot hide where a
/// write would land.
pub fn resolve_path(cwd: &Path, path: &Path) -> PathBuf {
    resolve_depth(&cwd.join(path), 0)
}

/// Symlink chains longer than this are treated as unresolvable (like ELOOP).
const MAX_SYMLINK_DEPTH: usize = 40;

fn resolve_depth(path: &Path, depth: usize) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    if depth < MAX_SYMLINK_DEPTH
        && let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.file_type().is_symlink()
        && let Ok(target) = std::fs::read_link(path)
    {
        let parent = path.parent().unwrap_or(Path::new("/"));
        return resolve_depth(&parent.join(target), depth + 1);
    }
    match path.parent() {
        Some(parent) => push_lexical(resolve_depth(parent, depth), path.components().next_back()),
        None => lexical(path),
    }
}

fn push_lexical(mut base: PathBuf, component: Option<Component<'_>>) -> PathBuf {
    match component {
        Some(Component::ParentDir) => {
            base.pop();
        }
        Some(Component::Normal(name)) => base.push(name),
        _ => {}
    }
    base
}

/// `path` with `.` and `..` taken away by its text alone, links not followed.
pub fn lexical(path: &Path) -> PathBuf {
    path.components().fold(PathBuf::new(), |base, c| match c {
        Component::RootDir | Component::Prefix(_) => PathBuf::from(c.as_os_str()),
        other => push_lexical(base, Some(other)),
    })
}

/// Whether `path` (already resolved by [`resolve_path`]) lies outside `root`.
pub fn is_external(root: &Path, path: &Path) -> bool {
    let root = resolve_path(Path::new("/"), root);
    !path.starts_with(root)
}
