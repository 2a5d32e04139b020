//! The project's instruction files (`AGENTS.md`, `CLAUDE.md`): which ones a
//! folder gives, the `@path` imports in them as Claude Code makes them, and
//! a subfolder's files attached to the first read or edit there. What is
//! sent as the system prompt is `session::prompt`'s.
//!
//! Precedence: every folder from the working directory up to the project
//! root gives its `AGENTS.md` and its `CLAUDE.md` (a file whose content or
//! real path was already sent is not sent again, so a `CLAUDE.md` that is
//! `@AGENTS.md`, a link to it or a copy of it costs nothing); `CONTEXT.md`
//! only where neither exists. A file higher up never hides one below.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One instruction file, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Instruction {
    pub path: PathBuf,
    pub content: String,
}

/// The names a folder's instruction files have; the last only counts in a
/// folder without either of the first two.
const FOLDER_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];
const FALLBACK_NAME: &str = "CONTEXT.md";

/// How deep imports go, the importing file being depth 0: Claude Code's
/// own limit (a file five imports away is not read), which also ends any
/// cycle the seen-set would not.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// The instruction files of `dir` itself, by the precedence above.
pub fn folder_files(dir: &Path) -> Vec<PathBuf> {
    let found: Vec<PathBuf> = FOLDER_NAMES
        .iter()
        .map(|name| dir.join(name))
        .filter(|path| path.is_file())
        .collect();
    if found.is_empty() {
        let fallback = dir.join(FALLBACK_NAME);
        return if fallback.is_file() {
            vec![fallback]
        } else {
            Vec::new()
        };
    }
    found
}

/// The instruction files of every folder from `cwd` up to `root`, nearest
/// first.
pub fn project_files(cwd: &Path, root: &Path) -> Vec<PathBuf> {
    cwd.ancestors()
        .take_while(|dir| dir.starts_with(root))
        .flat_map(folder_files)
        .collect()
}

/// Where the files a reader reads may import from.
#[derive(Debug, Clone, Copy)]
pub struct Reach<'a> {
    /// The project: a project file imports only from inside it (through no
    /// link out of it), like a mention.
    pub root: &'a Path,
    /// The user's home: its secret paths (`~/.ssh`, ...) are never read,
    /// whatever file imports them.
    pub home: Option<&'a Path>,
}

/// Reads instruction files and their imports into [`Instruction`]s, each
/// file once (by real path and by content), with what it refused.
#[derive(Debug, Default)]
pub struct Reader {
    seen: BTreeSet<PathBuf>,
    pub instructions: Vec<Instruction>,
    pub problems: Vec<String>,
}

impl Reader {
    /// Whether `path`'s real location was already read (or refused).
    pub fn has_seen(&self, path: &Path) -> bool {
        self.seen.contains(&real(path))
    }

    /// Reads `path` as an instruction file without imports (a configured
    /// `instructions` entry: OpenCode's files have none).
    pub fn add_plain(&mut self, path: &Path) {
        self.read(path, None, 0);
    }

    /// Reads `path` and, after it, each file it imports (depth first).
    pub fn add(&mut self, path: &Path, reach: Reach<'_>) {
        self.read(path, Some(reach), 0);
    }

    fn read(&mut self, path: &Path, reach: Option<Reach<'_>>, depth: usize) {
        if !self.seen.insert(real(path)) {
            return;
        }
        let content = match std::fs::read_to_string(path) {
            Ok(content) => content,
            Err(error) if path.exists() => {
                tracing::warn!(path = %path.display(), %error, "cannot read instruction file");
                self.problems.push(format!(
                    "cannot read instruction file {}: {error}",
                    path.display()
                ));
                return;
            }
            Err(_) => return, // missing: reported by the caller when configured
        };
        if content.trim().is_empty()
            || self
                .instructions
                .iter()
                .any(|sent| sent.content.trim() == content.trim())
        {
            return;
        }
        let imports = match reach {
            Some(_) if depth + 1 < MAX_IMPORT_DEPTH => imports(&content),
            _ => Vec::new(),
        };
        self.instructions.push(Instruction {
            path: path.to_path_buf(),
            content,
        });
        let (Some(reach), Some(dir)) = (reach, path.parent()) else {
            return;
        };
        let from_project = path.starts_with(reach.root);
        for import in imports {
            let target = resolve(dir, reach.home, &import);
            if !target.is_file() {
                continue; // `@someone` in prose names no file: not an import
            }
            match refusal(&target, from_project, reach) {
                Some(why) => self.problems.push(format!(
                    "instruction file {} imports @{import}: not read ({why})",
                    path.display()
                )),
                None => self.read(&target, Some(reach), depth + 1),
            }
        }
    }
}

/// Why `target` may not be imported, if it may not: a secret path from
/// anywhere, or a place outside the project (written so, or through a link)
/// from a project file.
fn refusal(target: &Path, from_project: bool, reach: Reach<'_>) -> Option<String> {
    let real = real(target);
    if let Some(home) = reach.home {
        let home_real = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
        let secret = crate::sandbox::SECRET_PATHS
            .iter()
            .any(|rel| real.starts_with(home_real.join(rel)) || target.starts_with(home.join(rel)));
        if secret {
            return Some(format!("{} is a secret path", real.display()));
        }
    }
    if from_project && let Some(outside) = crate::shared::linked_outside(target, reach.root) {
        return Some(format!("{} is outside the project", outside.display()));
    }
    None
}

fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `@path` relative to the importing file's folder, `@~/path` in the home,
/// `@/path` as written.
fn resolve(dir: &Path, home: Option<&Path>, import: &str) -> PathBuf {
    match (import.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => dir.join(import),
    }
}

/// The `@path` imports of `markdown`, in order: a word starting with `@` in
/// text, never in a code span or block (Claude Code reads the Markdown the
/// same way: `` `@scope/pkg` `` is not an import). Trailing punctuation is
/// not part of the path.
pub fn imports(markdown: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut found: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut in_code_block = false;
    let flush = |text: &mut String, found: &mut Vec<String>| {
        for word in text.split_whitespace() {
            let Some(path) = word.strip_prefix('@') else {
                continue;
            };
            let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
            if !path.is_empty() && !found.iter().any(|seen| seen == path) {
                found.push(path.to_string());
            }
        }
        text.clear();
    };
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                flush(&mut text, &mut found);
                in_code_block = true;
            }
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            // Adjacent text events are one run of text (the parser splits
            // at characters that might have been emphasis: `@my_file.md`).
            Event::Text(chunk) if !in_code_block => text.push_str(&chunk),
            Event::Text(_) => {}
            _ => {
                text.push(' ');
                flush(&mut text, &mut found);
            }
        }
    }
    flush(&mut text, &mut found);
    found
}

/// The instruction files a read or edit of `file` brings: those of each
/// folder between the project root and `file`'s folder that the system
/// prompt does not already send (it sends `cwd` and its ancestors) and that
/// `attached` (this session's record) does not hold yet; they are recorded.
pub fn for_file(
    file: &Path,
    cwd: &Path,
    reach: Reach<'_>,
    attached: &mut BTreeSet<PathBuf>,
) -> Reader {
    let mut reader = Reader::default();
    let Some(dir) = file.parent() else {
        return reader;
    };
    // A path through a link out of the project brings nothing: its folder
    // is not the project's.
    if !dir.starts_with(reach.root) || crate::shared::linked_outside(dir, reach.root).is_some() {
        return reader;
    }
    // The prompt's files count as read: an import of one is not repeated.
    for sent in project_files(cwd, reach.root) {
        reader.seen.insert(real(&sent));
    }
    let mut folders: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| d.starts_with(reach.root))
        .filter(|d| !cwd.starts_with(d))
        .collect();
    folders.reverse(); // outer folders first, as a reader walks in
    for folder in folders {
        if !attached.insert(folder.to_path_buf()) {
            continue;
        }
        for path in folder_files(folder) {
            if crate::shared::linked_outside(&path, reach.root).is_some() {
                reader.problems.push(format!(
                    "instruction file {} links outside the project: not sent",
                    path.display()
                ));
                continue;
            }
            reader.add(&path, reach);
        }
    }
    reader
}

/// How a subfolder's instruction files ride on a tool result: as Claude
/// Code attaches them, a reminder after the output.
pub fn reminder(instructions: &[Instruction]) -> Option<String> {
    if instructions.is_empty() {
        return None;
    }
    let blocks: Vec<String> = instructions
        .iter()
        .map(|i| format!("Instructions from: {}\n{}", i.path.display(), i.content))
        .collect();
    Some(format!(
        "<system-reminder>\nThe folder of this file has instructions of its own; follow them for work in it.\n{}\n</system-reminder>",
        blocks.join("\n\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_skip_code_and_trailing_punctuation() {
        let text = "See @docs/a.md, and @b.md.\n\n`@not/span.md` and\n\n```\n@not/block.md\n```\n\n    @not/indented.md\n\nmail me: x@example.com @my_file_name.md\n- @c.md\n";
        assert_eq!(
            imports(text),
            ["docs/a.md", "b.md", "my_file_name.md", "c.md"]
        );
    }

    #[test]
    fn a_folder_gives_agents_and_claude_and_context_only_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("CONTEXT.md"), "c").expect("write");
        assert_eq!(folder_files(d), [d.join("CONTEXT.md")]);
        std::fs::write(d.join("CLAUDE.md"), "b").expect("write");
        std::fs::write(d.join("AGENTS.md"), "a").expect("write");
        assert_eq!(folder_files(d), [d.join("AGENTS.md"), d.join("CLAUDE.md")]);
    }

    /// A file's folders bring their files once; the working directory's
    /// ancestors (already in the system prompt) and a folder linked out of
    /// the project bring nothing.
    #[cfg(unix)]
    #[test]
    fn a_files_folders_bring_their_files_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (root, home) = (dir.path().join("repo"), dir.path().join("home"));
        for sub in ["app", "lib/deep", "../home/rules"] {
            std::fs::create_dir_all(root.join(sub)).expect("dirs");
        }
        let put = |path: PathBuf, text: &str| std::fs::write(path, text).expect("write");
        put(root.join("AGENTS.md"), "ROOT");
        put(root.join("lib/CLAUDE.md"), "LIB");
        put(root.join("lib/deep/AGENTS.md"), "DEEP");
        put(home.join("rules/AGENTS.md"), "HOME");
        std::os::unix::fs::symlink(home.join("rules"), root.join("linked")).expect("link");
        let reach = Reach {
            root: &root,
            home: Some(&home),
        };
        let cwd = root.join("app");
        let mut attached = BTreeSet::new();
        let sent = |file: &str, attached: &mut BTreeSet<PathBuf>| -> Vec<String> {
            for_file(&root.join(file), &cwd, reach, attached)
                .instructions
                .into_iter()
                .map(|i| i.content)
                .collect()
        };
        assert_eq!(sent("lib/deep/x.rs", &mut attached), ["LIB", "DEEP"]);
        assert!(sent("lib/deep/y.rs", &mut attached).is_empty());
        assert!(sent("lib/z.rs", &mut attached).is_empty());
        assert!(
            sent("x.rs", &mut attached).is_empty(),
            "the root is the prompt's"
        );
        assert!(sent("linked/x.md", &mut attached).is_empty());
    }
}
