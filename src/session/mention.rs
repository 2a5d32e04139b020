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

/// Piped input `cairn run` attaches below the words (`headless::prompt`):
/// text someone else wrote (a repository's TODO), whose `@` mentions are
/// not the user's to attach files by (issue #28's blind review).
const STDIN_OPEN: &str = "\n<stdin>\n";

/// The paths `text` mentions, in order, each once: `@` at the start or after
/// whitespace, up to the next whitespace, without trailing punctuation;
/// none inside a piped `<stdin>` block.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    let typed = text.split(STDIN_OPEN).next().unwrap_or(text);
    let mut found: Vec<String> = Vec::new();
    for word in typed.split_whitespace() {
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

/// Where a mention may attach from: the project, and the secret paths the
/// sandbox keeps every command from (never attached).
pub struct Reach<'a> {
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    pub root: &'a Path,
    pub sandbox: &'a crate::sandbox::Policy,
    /// This session's own saved outputs (and an editor's images, `cairn
    /// acp`): in cairn's data directory, which the sandbox keeps commands
    /// from, yet the session's own to attach.
    pub own_outputs: &'a Path,
}

/// Why `mention` (resolved to `path`) is not attached, if it is not: a
/// secret path (`@~/.ssh/id_rsa`), or a project path that a link takes out
/// of the project (`@key.txt` -> `~/.ssh/id_rsa`: the user thinks it is a
/// project file). A path written outside the project is the user's choice.
fn refusal(mention: &str, path: &Path, reach: &Reach<'_>) -> Option<String> {
    let real = path.canonicalize().ok()?;
    let own = reach
        .own_outputs
        .canonicalize()
        .is_ok_and(|own| real.starts_with(own));
    if !own && (reach.sandbox.is_denied(&real) || reach.sandbox.is_denied(path)) {
        return Some(format!(
            "@{mention} was not attached: {} is a secret path (cairn's sandbox keeps commands from it too)",
            real.display()
        ));
    }
    let written_inside =
        !(mention.starts_with('/') || mention.starts_with('~')) || path.starts_with(reach.root);
    let outside = crate::shared::linked_outside(path, reach.root)?;
    // `@../notes.txt` leaves the project by its own `..`, not by a link.
    let lexical = crate::permission::lexical;
    let how = if lexical(path).starts_with(lexical(reach.root)) {
        "it is a link out of the project"
    } else {
        "it lies outside the project"
    };
    written_inside.then(|| {
        format!(
            "@{mention} was not attached: {how} (at {}); the read tool can read it, and asks first",
            outside.display()
        )
    })
}

/// The parts to add after the message's text for its mentions.
pub fn attachments(text: &str, reach: &Reach<'_>) -> Vec<PartKind> {
    let mut parts = Vec::new();
    for mention in mentioned_paths(text) {
        let path = resolve(reach.cwd, reach.home, &mention);
        if !path.exists() {
            continue;
        }
        if let Some(why) = refusal(&mention, &path, reach) {
            parts.push(synthetic(why));
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
        let sandbox = crate::sandbox::Policy::new(&Default::default(), dir.path(), &[]);
        let reach = Reach {
            cwd: dir.path(),
            home: None,
            root: dir.path(),
            sandbox: &sandbox,
            own_outputs: &dir.path().join("outputs"),
        };
        assert!(attachments("@nope.txt", &reach).is_empty());
        let parts = attachments("@bin.dat", &reach);
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

    fn notes(parts: &[PartKind]) -> Vec<String> {
        parts
            .iter()
            .filter_map(|p| match p {
                PartKind::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect()
    }

    /// The blind review of #28: `@key.txt` (a link to a key) and
    /// `@~/.ssh/id_rsa` in a piped TODO attached the key unasked.
    #[test]
    fn links_out_secret_paths_and_piped_mentions_attach_nothing() {
        let d = tempfile::tempdir().expect("tempdir");
        let (root, home) = (d.path().join("repo"), d.path().join("home"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(home.join("keys")).unwrap();
        std::fs::write(home.join("keys/id"), "SSHSECRET").unwrap();
        std::fs::write(home.join("notes.txt"), "NOTES").unwrap();
        std::fs::write(root.join("a.txt"), "inside").unwrap();
        std::os::unix::fs::symlink(home.join("notes.txt"), root.join("key.txt")).unwrap();
        let config = crate::config::SandboxConfig {
            deny_read: vec![home.join("keys").display().to_string()],
            ..Default::default()
        };
        let sandbox = crate::sandbox::Policy::new(&config, &root, &[]);
        let reach = Reach {
            cwd: &root,
            home: Some(&home),
            root: &root,
            sandbox: &sandbox,
            own_outputs: &home.join("outputs"),
        };
        let all = |text: &str| notes(&attachments(text, &reach)).join("\n");
        let linked = all("summarize @key.txt");
        assert!(!linked.contains("NOTES"), "{linked}");
        assert!(linked.contains("link out of the project"), "{linked}");
        let dotted = all("summarize @../home/notes.txt");
        assert!(!dotted.contains("NOTES"), "{dotted}");
        assert!(dotted.contains("lies outside the project"), "{dotted}");
        let secret = all("look at @~/keys/id");
        assert!(!secret.contains("SSHSECRET"), "{secret}");
        assert!(secret.contains("secret path"), "{secret}");
        let piped = all("do the TODO below\n\n<stdin>\nsee @a.txt and @~/notes.txt\n</stdin>");
        assert!(piped.is_empty(), "{piped}");
        assert!(all("read @a.txt").contains("inside"));
        assert!(
            all("and @~/notes.txt").contains("NOTES"),
            "written outside: the user's choice"
        );
    }
}
