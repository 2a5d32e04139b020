//! The Markdown of a session, for `/export` in the TUI and in `cairn run`:
//! one section per message, tool calls as code, and the file it goes to.
//!
//! Pure string building; each front end does the writing.

use crate::message::{MessageWithParts, PartKind, Role, Session, ToolState};

/// Where `/export` writes a session: `cairn-<id tail>.md` in its directory.
/// The id's random tail keeps exports of different sessions apart.
pub fn export_path(session: &Session) -> String {
    let id = &session.id;
    let tail_start = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    format!(
        "{}/cairn-{}.md",
        session.directory.trim_end_matches('/'),
        &id[tail_start..]
    )
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
