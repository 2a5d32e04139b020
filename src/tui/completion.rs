//! Completion candidates for the composer: slash commands and `@path` file
//! mentions.
//!
//! Owns the slash-command table (name + one-line help, also shown by /help)
//! and the walk of the working directory (the `ignore` crate, so .gitignore
//! is honoured). The walk is I/O and runs once, off the render path.

use std::path::Path;

/// Files listed for `@` completion at most; a huge tree is cut off here.
pub const MAX_INDEXED_FILES: usize = 20_000;
/// Rows a completion popup shows.
pub const MAX_SHOWN: usize = 8;

/// (name, arguments, what it does)
pub const SLASH_COMMANDS: &[(&str, &str, &str)] = &[
    (
        "/compact",
        "[instructions]",
        "summarise the history now, with an optional focus",
    ),
    (
        "/prune",
        "",
        "clear old tool outputs now and say what it freed",
    ),
    ("/context", "", "what fills the context window, by category"),
    (
        "/permissions",
        "[revoke N]",
        "list the \"always\" answers this project remembers, or forget one",
    ),
    (
        "/undo",
        "[--force]",
        "take the last turn back (files and messages); its prompt returns to the composer",
    ),
    ("/redo", "", "bring back the turn undone last"),
    ("/diff", "", "the session's changes so far, scrollable"),
    ("/new", "", "start a new session"),
    ("/sessions", "", "switch to another session"),
    ("/model", "", "choose the model for the next messages"),
    ("/skills", "", "list the skills the model can load"),
    ("/agent", "[build|plan]", "switch agent (Tab also switches)"),
    (
        "/export",
        "",
        "write the session as Markdown into the working directory",
    ),
    (
        "/copy",
        "",
        "copy the last answer to the clipboard (OSC 52)",
    ),
    ("/help", "", "keys and commands"),
    ("/quit", "", "leave cairn"),
];

/// One row of a completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What replaces the token.
    pub insert: String,
    pub detail: String,
}

/// Slash commands starting with `typed` (`/co` -> /compact, /context, /copy).
pub fn slash_candidates(typed: &str) -> Vec<Candidate> {
    SLASH_COMMANDS
        .iter()
        .filter(|(name, _, _)| name.starts_with(typed))
        .map(|(name, args, help)| Candidate {
            insert: name.to_string(),
            detail: if args.is_empty() {
                help.to_string()
            } else {
                format!("{args}  {help}")
            },
        })
        .collect()
}

/// Files whose path contains `typed` (after the `@`), shortest paths first.
pub fn file_candidates(files: &[String], typed: &str) -> Vec<Candidate> {
    let needle = typed.to_lowercase();
    let mut hits: Vec<&String> = files
        .iter()
        .filter(|f| f.to_lowercase().contains(&needle))
        .collect();
    hits.sort_by_key(|f| (!f.to_lowercase().starts_with(&needle), f.len()));
    hits.into_iter()
        .take(MAX_SHOWN)
        .map(|f| Candidate {
            insert: format!("@{f}"),
            detail: String::new(),
        })
        .collect()
}

/// Lists files under `root` (relative paths, .gitignore honoured), capped.
pub fn index_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if files.len() >= MAX_INDEXED_FILES {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(relative) = entry.path().strip_prefix(root)
        {
            files.push(relative.to_string_lossy().into_owned());
        }
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_prefix_narrows_the_table() {
        let names: Vec<String> = slash_candidates("/co")
            .into_iter()
            .map(|c| c.insert)
            .collect();
        assert_eq!(names, ["/compact", "/context", "/copy"]);
    }

    #[test]
    fn file_index_honours_gitignore_and_matches_substrings() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/main.rs"), "").expect("write");
        std::fs::write(dir.path().join("skip.log"), "").expect("write");
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").expect("write");
        std::fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
        let files = index_files(dir.path());
        assert_eq!(files, ["src/main.rs"]);
        let hits = file_candidates(&files, "MAIN");
        assert_eq!(hits[0].insert, "@src/main.rs");
    }
}
