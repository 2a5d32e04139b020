//! The Markdown of a session, for `/export` in the TUI and in `cairn run`:
//! one section per message, tool calls as code, and the file it goes to.
//!
//! Pure string building; each front end does the writing.

use std::path::{Path, PathBuf};

use crate::message::{MessageWithParts, PartKind, Role, Session, ToolState};

/// Folder under the data directory where `/export` writes by default, so
/// an export never lands in the repository as an untracked file.
pub const EXPORT_DIR: &str = "exports";

/// Where `/export [path]` writes a session. Without `arg`:
/// `<data dir>/exports/cairn-<id tail>.md` (the id's random tail keeps
/// exports of different sessions apart). With `arg`: that file, relative to
/// the session's directory; an existing directory (or a path ending in `/`)
/// gets the default file name inside it; a leading `~/` is the home folder.
pub fn export_path(session: &Session, data_dir: &Path, arg: Option<&str>) -> PathBuf {
    let id = &session.id;
    let tail_start = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    let file_name = format!("cairn-{}.md", &id[tail_start..]);
    let Some(arg) = arg.map(str::trim).filter(|a| !a.is_empty()) else {
        return data_dir.join(EXPORT_DIR).join(file_name);
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let given = match (arg.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => Path::new(&session.directory).join(arg),
    };
    if arg.ends_with('/') || given.is_dir() {
        given.join(file_name)
    } else {
        given
    }
}

/// `path` with the home folder shown as `~`: notices stay short enough to
/// be read whole on the status line.
pub fn display_path(path: &Path) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match home
        .as_deref()
        .and_then(|home| path.strip_prefix(home).ok())
    {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// Writes the export, creating its folder: the default one (private, as
/// transcripts are) or the user's.
///
/// # Errors
/// The folder cannot be created or the file written.
pub async fn write_export(path: &Path, contents: String) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        let parent = parent.to_owned();
        tokio::task::spawn_blocking(move || crate::paths::private_dir_builder().create(parent))
            .await
            .map_err(std::io::Error::other)??;
    }
    tokio::fs::write(path, contents).await
}

/// The session as Markdown: one section per message, tool calls as code.
pub fn session_markdown(session: &Session, messages: &[MessageWithParts]) -> String {
    let title = if session.title.is_empty() {
        "cairn session"
    } else {
        &session.title
    };
    let mut out = format!(
        "# {title}\n\n_session {} · {}_\n\n",
        session.id, session.directory
    );
    for message in messages {
        match &message.message.role {
            Role::User(_) => out.push_str("## You\n\n"),
            Role::Assistant(a) if a.summary => out.push_str("## Summary (compaction)\n\n"),
            Role::Assistant(a) => out.push_str(&format!("## {} ({})\n\n", a.agent, a.model)),
        }
        for part in &message.parts {
            match &part.kind {
                PartKind::Text(text) if !text.text.is_empty() => {
                    out.push_str(text.text.trim_end());
                    out.push_str("\n\n");
                }
                PartKind::Tool(tool) => {
                    let input = serde_json::to_string(tool.state.input()).unwrap_or_default();
                    out.push_str(&format!("**{}** `{}`\n\n", tool.tool, input));
                    let body = match &tool.state {
                        ToolState::Completed { output, .. } => output.as_str(),
                        ToolState::Error { error, .. } => error.as_str(),
                        _ => "",
                    };
                    if !body.is_empty() {
                        out.push_str(&format!("```\n{}\n```\n\n", body.trim_end()));
                    }
                }
                PartKind::Compaction(c) => out.push_str(&format!(
                    "_compaction requested ({})_\n\n",
                    if c.auto { "auto" } else { "manual" }
                )),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(directory: &str) -> Session {
        Session {
            id: "ses_0123456789abcdefXYZ".into(),
            title: String::new(),
            directory: directory.into(),
            parent_id: None,
            time_created: 0,
            time_updated: 0,
            cost: 0.0,
            tokens: Default::default(),
        }
    }

    #[test]
    fn exports_go_to_the_data_dir_unless_a_path_is_given() {
        let project = tempfile::tempdir().expect("temp dir");
        let dir = project.path().to_string_lossy().into_owned();
        let data = Path::new("/data/cairn");
        let s = session(&dir);
        assert_eq!(
            export_path(&s, data, None),
            Path::new("/data/cairn/exports/cairn-bcdefXYZ.md").to_path_buf()
        );
        assert_eq!(
            export_path(&s, data, Some("  ")),
            export_path(&s, data, None)
        );
        assert_eq!(
            export_path(&s, data, Some("notes/talk.md")),
            project.path().join("notes/talk.md")
        );
        assert_eq!(
            export_path(&s, data, Some("/tmp/x.md")),
            Path::new("/tmp/x.md").to_path_buf()
        );
        // An existing folder, or one spelled with a trailing slash, gets the default name.
        assert_eq!(
            export_path(&s, data, Some(".")),
            project.path().join(".").join("cairn-bcdefXYZ.md")
        );
        assert_eq!(
            export_path(&s, data, Some("out/")),
            project.path().join("out/").join("cairn-bcdefXYZ.md")
        );
    }

    #[tokio::test]
    async fn writing_an_export_creates_its_folder() {
        let root = tempfile::tempdir().expect("temp dir");
        let path = root.path().join("exports/deeper/a.md");
        write_export(&path, "# hi\n".into()).await.expect("written");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "# hi\n");
    }
}
