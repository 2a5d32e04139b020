//! Where a project's `instructions` entry really points: a relative entry
//! reads as inside the project, but a symlinked folder or file on its way
//! can take it anywhere (`docs/x.md` with `docs -> ~/.ssh`). `project.rs`
//! holds such an entry back until the project is trusted. Reads only
//! symlinks and directory entries, never the files.

use std::path::{Path, PathBuf};

/// Where the relative `instructions` entry really is, when that is outside
/// `root`. Entries are read relative to the working directory (see
/// `session::prompt`), so they are resolved from `cwd`. For a glob, the
/// folder its walk starts at (the part before the first wildcard): the walk
/// follows that folder when it is a link, but no link below it.
pub fn resolves_outside(entry: &str, cwd: &Path, root: &Path) -> Option<PathBuf> {
    let is_glob = |part: &std::ffi::OsStr| part.to_string_lossy().contains(['*', '?', '[', '{']);
    let literal: PathBuf = Path::new(entry)
        .components()
        .take_while(|part| !is_glob(part.as_os_str()))
        .collect();
    let real = real_location(&cwd.join(literal));
    let root = crate::trust::canonical(root);
    (!real.starts_with(&root)).then_some(real)
}

/// Dangling links followed at most, as the kernel's own limit (`ELOOP`):
/// a loop of links ends here, and reading through it fails the same way.
const MAX_LINK_HOPS: usize = 40;

/// `path` with every symlink resolved as far as it exists; the missing rest
/// appended as written. A dangling link on the way counts as where it
/// points: its target may appear later (`key.md -> ~/.ssh/id_ed25519`).
fn real_location(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        let Some(next) = resolve_existing(&path) else {
            return path;
        };
        match next {
            Resolved::Real(real) => return real,
            Resolved::Dangling(target) => path = target,
        }
    }
    path
}

enum Resolved {
    /// Every existing part resolved, the rest appended.
    Real(PathBuf),
    /// A dangling link on the way: where it points.
    Dangling(PathBuf),
}

fn resolve_existing(path: &Path) -> Option<Resolved> {
    for existing in path.ancestors() {
        let rest = path.strip_prefix(existing).unwrap_or(Path::new(""));
        if let Ok(real) = existing.canonicalize() {
            return Some(Resolved::Real(real.join(rest)));
        }
        if let Ok(target) = std::fs::read_link(existing) {
            let parent = existing.parent().unwrap_or(Path::new("/"));
            return Some(Resolved::Dangling(parent.join(target).join(rest)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `instructions` entries that read as inside but resolve outside the
    /// project through links (issue #28). (entry, cwd below the root, outside)
    #[cfg(unix)]
    #[test]
    fn instructions_resolved_through_links_table() {
        let root = tempfile::tempdir().expect("tempdir");
        let home = tempfile::tempdir().expect("tempdir");
        let root_path = root.path();
        std::fs::create_dir_all(root_path.join("sub/inner")).expect("dirs");
        std::fs::write(root_path.join("rules.md"), "rules").expect("write");
        std::fs::write(home.path().join("secret.txt"), "secret").expect("write");
        let link = |target: &Path, at: &str| {
            std::os::unix::fs::symlink(target, root_path.join(at)).expect("link");
        };
        link(home.path(), "docs");
        link(&home.path().join("secret.txt"), "key.md");
        link(&root_path.join("rules.md"), "alias.md");
        link(&root_path.join("sub/inner"), "inside");
        link(home.path(), "sub/docs");
        link(&home.path().join("not-yet"), "dangling.md");
        link(&root_path.join("not-yet"), "dangling-inside.md");
        link(&root_path.join("loop-b"), "loop-a");
        link(&root_path.join("loop-a"), "loop-b");
        let cases: &[(&str, &str, bool)] = &[
            ("rules.md", "", false),
            ("missing.md", "", false),
            ("alias.md", "", false),
            ("inside/x.md", "", false),
            ("*.md", "", false),
            ("docs/secret.txt", "", true),
            ("docs/missing.md", "", true),
            ("docs/*.txt", "", true),
            ("docs/**/*.md", "", true),
            ("./docs/secret.txt", "", true),
            ("key.md", "", true),
            ("dangling.md", "", true),
            ("dangling.md/x", "", true),
            ("dangling-inside.md", "", false),
            ("loop-a/x.md", "", false),
            ("docs/secret.txt", "sub", true),
            ("rules.md", "sub", false),
        ];
        let mut wrong = Vec::new();
        for (entry, cwd, want) in cases {
            let got = resolves_outside(entry, &root_path.join(cwd), root_path).is_some();
            if got != *want {
                wrong.push(format!("{entry} from {cwd:?}: outside {got}, want {want}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
