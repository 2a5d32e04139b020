//! Session export and clipboard: the Markdown of a session (`/export`) and the
//! OSC 52 sequence that puts text on the clipboard (`/copy`).
//!
//! Pure string building; the runner does the writing.

use base64::Engine;

use crate::message::{MessageWithParts, PartKind, Role, Session, ToolState};

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

/// The escape sequence that asks the terminal to set the clipboard.
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{encoded}\x07")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_wraps_base64_of_the_text() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
