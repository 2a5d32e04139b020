//! `@path` mentions in a user message: each one naming an existing file or
//! directory (relative to the session's directory, or absolute, or `~/`)
//! attaches it to the message. A text file or directory comes as the read
//! tool's output (same format and caps) in a synthetic text part, plus a
//! file part the transcript shows (and the model view skips); an image comes
//! as an image file part. A mention naming nothing is left as typed text (an
//! e-mail address, a decorator); one that cannot be attached (binary, too
//! large) gets a synthetic note saying why, so the model knows.

use std::path::{Path, PathBuf};

use crate::message::{FilePart, PartKind, TextPart};
use crate::tool::{Mentioned, read_mentioned};

/// Mentions attached per message, at most (a pasted list of 500 paths must
/// not flood the context).
const MAX_MENTIONS: usize = 20;

/// The paths `text` mentions, in order, each once: `@` at the start or after
/// whitespace, up to the next whitespace, without trailing punctuation.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
        if !path.is_empty() && !found.iter().any(|seen| seen == path) {
            found.push(path.to_string());
        }
    }
    found.truncate(MAX_MENTIONS);
    found
}

fn resolve(cwd: &Path, home: Option<&Path>, path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(path),
    }
}

/// Leads the synthetic text carrying a mentioned file's read output; the
/// TUI shows the file part instead (and the content on Ctrl+O).
pub const MENTION_READ_LEAD: &str = "Called the Read tool with the following input: ";

/// The parts to add after the message's text for its mentions.
pub fn attachments(text: &str, cwd: &Path, home: Option<&Path>) -> Vec<PartKind> {
    let mut parts = Vec::new();
    for mention in mentioned_paths(text) {
        let path = resolve(cwd, home, &mention);
        if !path.exists() {
            continue;
        }
        let url = format!("file://{}", path.display());
        match read_mentioned(&path) {
            Ok(Mentioned::Text { output, is_dir }) => {
                parts.push(synthetic(format!(
                    "{MENTION_READ_LEAD}{}\n{output}",
                    serde_json::json!({ "path": path.display().to_string() })
                )));
                parts.push(PartKind::File(FilePart {
                    mime: if is_dir {
                        "application/x-directory"
                    } else {
                        "text/plain"
                    }
                    .into(),
                    filename: Some(mention.clone()),
                    url,
                }));
            }
            Ok(Mentioned::Image(file)) => parts.push(PartKind::File(file)),
            Err(error) => parts.push(synthetic(format!("@{mention} was not attached: {error}"))),
        }
    }
    parts
}

fn synthetic(text: String) -> PartKind {
    PartKind::Text(TextPart {
        text,
        synthetic: true,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_words_starting_with_at() {
        assert_eq!(
            mentioned_paths("look at @src/a.rs, and @docs/ then mail me@x.org or @src/a.rs."),
            ["src/a.rs", "docs/"]
        );
        assert!(mentioned_paths("@ alone and a@b").is_empty());
    }

    #[test]
    fn a_missing_path_attaches_nothing_and_a_binary_one_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("bin.dat"), [0u8, 1, 2, 0, 3]).expect("write");
        assert!(attachments("@nope.txt", dir.path(), None).is_empty());
        let parts = attachments("@bin.dat", dir.path(), None);
        match &parts[..] {
            [PartKind::Text(note)] => {
                assert!(note.synthetic);
                assert!(
                    note.text
                        .starts_with("@bin.dat was not attached: Cannot attach binary file"),
                    "{}",
                    note.text
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
