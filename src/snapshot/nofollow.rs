//! The no-follow check `/undo` and `/redo` run before they write or remove
//! a file: a path whose folder was swapped for a symlink (or whose file was
//! swapped for a link, a FIFO or a folder) after the turn must not make
//! them write, delete or read outside what the tool itself wrote (issue #35
//! review). This module only looks (`symlink_metadata`, never `open`); the
//! caller decides to refuse or, forced, to [`Hazard::clear`] the link.

use std::path::{Path, PathBuf};

/// What stands in the way of writing a file safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hazard {
    /// This component of the path (the file or a folder above it) is now a
    /// symbolic link: following it could reach outside the project.
    Link(PathBuf),
    /// The file is now a folder: it is never removed to make room.
    Directory(PathBuf),
    /// The file is now a FIFO, socket or device: opening it could hang.
    Special(PathBuf),
}

impl Hazard {
    /// The path the hazard is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Link(path) | Self::Directory(path) | Self::Special(path) => path,
        }
    }

    /// Said to the user, with `path` as they see it.
    pub fn describe(&self, shown: &str) -> String {
        match self {
            Self::Link(_) => format!("{shown} is a symbolic link"),
            Self::Directory(_) => format!("{shown} is a directory"),
            Self::Special(_) => format!("{shown} is not a regular file"),
        }
    }

    /// Removes the link or special file itself (never its target), so a
    /// forced undo writes a regular file in its place; a directory is left
    /// (the caller skips the file and says so).
    ///
    /// # Errors
    /// When the entry cannot be removed.
    pub fn clear(&self) -> std::io::Result<bool> {
        match self {
            Self::Link(path) | Self::Special(path) => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(true),
            },
            Self::Directory(_) => Ok(false),
        }
    }
}

/// The first hazard on the way to `path`, checking every component below
/// `root` when `path` is inside it, else (a file outside the project the
/// user allowed, recorded by its real path) only the file itself.
pub fn hazard(root: &Path, path: &Path) -> Option<Hazard> {
    let mut current = PathBuf::new();
    let components: Vec<_> = match path.strip_prefix(root) {
        Ok(relative) if !root.as_os_str().is_empty() => {
            current.push(root);
            relative.components().collect()
        }
        _ => {
            current.push(path.parent().unwrap_or(Path::new("")));
            path.file_name()
                .map(|name| vec![std::path::Component::Normal(name)])
                .unwrap_or_default()
        }
    };
    let last = components.len().saturating_sub(1);
    for (index, component) in components.into_iter().enumerate() {
        current.push(component);
        let Ok(meta) = std::fs::symlink_metadata(&current) else {
            // Absent: nothing further down can be followed.
            return None;
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Some(Hazard::Link(current));
        }
        if index == last {
            if kind.is_dir() {
                return Some(Hazard::Directory(current));
            }
            if !kind.is_file() {
                return Some(Hazard::Special(current));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder swapped for a link is found on the way to the file below
    /// it; a plain file or an absent one is fine.
    #[test]
    fn a_linked_folder_on_the_way_is_a_hazard() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("real")).expect("mkdir");
        std::fs::write(root.join("real/f"), "x").expect("write");
        std::os::unix::fs::symlink(dir.path(), root.join("linked")).expect("link");
        assert_eq!(hazard(&root, &root.join("real/f")), None);
        assert_eq!(hazard(&root, &root.join("real/absent")), None);
        assert_eq!(
            hazard(&root, &root.join("linked/p/real/f")),
            Some(Hazard::Link(root.join("linked")))
        );
        assert_eq!(
            hazard(&root, &root.join("real")),
            Some(Hazard::Directory(root.join("real")))
        );
    }
}
