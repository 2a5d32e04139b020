//! Completion candidates for the composer: slash commands and `@path` file
//! mentions.
//!
//! Slash commands come from [`crate::slash::COMMANDS`] (the one table, also
//! shown by /help); this file owns the walk of the working directory (the
//! `ignore` crate, so .gitignore is honoured). The walk is I/O and runs
//! once, off the render path.

use std::path::Path;

use crate::slash::FrontEnd;

/// Files listed for `@` completion at most; a huge tree is cut off here.
pub const MAX_INDEXED_FILES: usize = 20_000;
/// Rows a completion popup shows.
pub const MAX_SHOWN: usize = 8;

/// One row of a completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What replaces the token.
    pub insert: String,
    pub detail: String,
}

/// The TUI's slash commands starting with `typed` (`/co` -> /compact,
/// /context, /copy), from [`crate::slash::COMMANDS`].
pub fn slash_candidates(typed: &str) -> Vec<Candidate> {
    crate::slash::COMMANDS
        .iter()
        .filter(|command| command.is_offered_in(FrontEnd::Tui) && command.name.starts_with(typed))
        .map(|command| Candidate {
            insert: command.name.to_string(),
            detail: if command.args.is_empty() {
                command.help.to_string()
            } else {
                format!("{}  {}", command.args, command.help)
            },
        })
        .collect()
}

/// MCP prompts (`/server:prompt`) starting with `typed`.
pub fn prompt_candidates(prompts: &[crate::mcp::PromptCommand], typed: &str) -> Vec<Candidate> {
    prompts
        .iter()
        .filter(|prompt| prompt.command.starts_with(typed))
        .map(|prompt| Candidate {
            insert: prompt.command.clone(),
            detail: format!("{}  {} (MCP prompt)", prompt.usage, prompt.description)
                .trim()
                .to_string(),
        })
        .collect()
}

/// Custom commands (`/frontend:component`) starting with `typed`.
pub fn custom_candidates(
    commands: &[crate::custom_command::CustomCommand],
    typed: &str,
) -> Vec<Candidate> {
    commands
        .iter()
        .filter(|command| command.name.starts_with(typed))
        .map(|command| Candidate {
            insert: command.name.clone(),
            detail: format!("{}  {}", command.argument_hint, command.description)
                .trim()
                .to_string(),
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
