//! A tool call as a card: status icon, tool name, key argument, status with
//! elapsed time or duration, and an output preview (diff for edits; the
//! per-tool bodies are in `card_body`). A `!cmd` run is drawn as the
//! user's own: `$ command`, then the same preview.
//!
//! Pure: draws from the part, the live output and the clock it is given.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::clock::Millis;
use crate::message::{ToolPart, ToolState};

use crate::tui::wrap::{str_width, wrap_into};

use super::card_body::{self, more};

/// Preview lines of a collapsed card; Ctrl+O shows up to `EXPANDED_LINES`.
const PREVIEW_LINES: usize = 4;
const EXPANDED_LINES: usize = 200;

pub struct CardInputs<'a> {
    pub live_output: Option<&'a str>,
    pub now: Millis,
    pub expanded: bool,
    pub awaiting_permission: bool,
}

pub fn tool_card(tool: &ToolPart, cx: &CardInputs<'_>, width: usize) -> Vec<Line<'static>> {
    let (icon, icon_style, status) = status_of(tool, cx);
    let argument = match &tool.state {
        // Still streaming: the key argument as far as it has arrived.
        ToolState::Pending { raw, .. } if !raw.is_empty() => partial_argument(&tool.tool, raw),
        state => key_argument(&tool.tool, state.input()),
    };
    let mut head = vec![
        Span::styled(format!("{icon} "), icon_style),
        Span::styled(
            tool.tool.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ];
    let status_width = status.chars().count() + 2;
    let room = width.saturating_sub(tool.tool.chars().count() + 3 + status_width);
    if !argument.is_empty() && room > 3 {
        head.push(Span::raw(" "));
        head.push(Span::styled(
            truncate(&argument, room),
            Style::default().fg(Color::White),
        ));
    }
    head.push(Span::styled(
        format!("  {status}"),
        Style::default().fg(Color::DarkGray),
    ));
    let mut out = vec![Line::from(head)];
    out.extend(body_lines(tool, cx, width));
    out
}

/// A `!cmd` run, as the user's own: `$ command` (wrapped whole, the user
/// typed it) and its status, then the output as any bash card shows it.
pub fn shell_run_card(tool: &ToolPart, cx: &CardInputs<'_>, width: usize) -> Vec<Line<'static>> {
    let (icon, icon_style, status) = status_of(tool, cx);
    let command = tool
        .state
        .input()
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, line) in command.lines().enumerate() {
        let lead = if i == 0 { "$ " } else { "  " };
        let row = Line::from(vec![
            Span::styled(lead, Style::default().fg(Color::Cyan)),
            Span::styled(
                line.to_string(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ]);
        wrap_into(&row, width, 2, &mut out);
    }
    out.push(Line::from(vec![
        Span::styled(format!("  {icon} "), icon_style),
        Span::styled(status, Style::default().fg(Color::DarkGray)),
    ]));
    out.extend(body_lines(tool, cx, width));
    out
}

/// The card's output preview under its head, each row behind the gutter,
/// and the blank line ending the block.
fn body_lines(tool: &ToolPart, cx: &CardInputs<'_>, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let limit = if cx.expanded {
        EXPANDED_LINES
    } else {
        PREVIEW_LINES
    };
    let gutter = Span::styled("  │ ", Style::default().fg(Color::DarkGray));
    let mut body: Vec<Line<'static>> = Vec::new();
    match &tool.state {
        ToolState::Pending { .. } => {}
        ToolState::Running { .. } => {
            if let Some(output) = cx.live_output {
                body.extend(card_body::tail(output, limit));
            }
        }
        ToolState::Completed {
            output,
            metadata,
            time,
            ..
        } => {
            if time.compacted.is_some() {
                body.push(Line::styled(
                    "[output cleared by prune]",
                    Style::default()
                        .fg(Color::DarkGray)
                        .add_modifier(Modifier::ITALIC),
                ));
            }
            match metadata.get("diff").and_then(Value::as_str) {
                Some(diff) => body.extend(diff_lines(diff, limit * 3)),
                None => body.extend(card_body::completed(&tool.tool, output, metadata, limit)),
            }
        }
        ToolState::Error { error, .. } => {
            let total = error.lines().count();
            body.extend(
                error
                    .lines()
                    .take(limit)
                    .map(|l| Line::styled(l.to_string(), Style::default().fg(Color::Red))),
            );
            if total > limit {
                body.push(more(total - limit));
            }
        }
    }
    if cx.expanded {
        // Ctrl+O folds by now: the line for what is still hidden says
        // where all of it is instead.
        for line in &mut body {
            card_body::past_expanded(line);
        }
    }
    let room = width.saturating_sub(4).max(8);
    for line in body {
        let mut row = Vec::new();
        wrap_into(&line, room, hanging_indent(&line, room), &mut row);
        for mut r in row {
            r.spans.insert(0, gutter.clone());
            out.push(r);
        }
    }
    out.push(Line::default());
    out
}

/// A body line of several spans starts with a mark (`◐ `, a line number,
/// `✂ `): its continuation rows line up under the text after the mark.
fn hanging_indent(line: &Line<'_>, room: usize) -> usize {
    match line.spans.as_slice() {
        [mark, _, ..] if str_width(&mark.content) <= room / 2 => str_width(&mark.content),
        _ => 0,
    }
}

fn status_of(tool: &ToolPart, cx: &CardInputs<'_>) -> (&'static str, Style, String) {
    match &tool.state {
        ToolState::Pending { raw, .. } if !raw.is_empty() => (
            "○",
            Style::default().fg(Color::DarkGray),
            format!("receiving arguments · {}", byte_size(raw.len())),
        ),
        ToolState::Pending { .. } => ("○", Style::default().fg(Color::DarkGray), "pending".into()),
        ToolState::Running { .. } if cx.awaiting_permission => (
            "◐",
            Style::default().fg(Color::Yellow),
            "waiting for permission".into(),
        ),
        ToolState::Running { time, .. } => {
            let secs = ((cx.now - time.start) / 1000).max(0);
            (
                "◐",
                Style::default().fg(Color::Yellow),
                format!("running {secs}s"),
            )
        }
        ToolState::Completed { time, output, .. } => {
            let took = duration(time.end.unwrap_or(time.start) - time.start);
            let lines = (tool.tool == "read")
                .then(|| card_body::read_line_count(output))
                .flatten();
            let status = match lines {
                Some(1) => format!("1 line · {took}"),
                Some(lines) => format!("{lines} lines · {took}"),
                None => took,
            };
            ("✓", Style::default().fg(Color::Green), status)
        }
        ToolState::Error { time, .. } => (
            "✗",
            Style::default().fg(Color::Red),
            format!(
                "error · {}",
                duration(time.end.unwrap_or(time.start) - time.start)
            ),
        ),
    }
}

fn duration(ms: Millis) -> String {
    if ms < 1000 {
        format!("{}ms", ms.max(0))
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// The argument that says what the call does: a command, a path, a pattern.
pub fn key_argument(tool: &str, input: &Value) -> String {
    let keys: &[&str] = match tool {
        "bash" => &["command"],
        "grep" | "glob" => &["pattern", "path"],
        "webfetch" => &["url"],
        _ => &[
            "filePath",
            "file_path",
            "path",
            "command",
            "pattern",
            "url",
            "description",
        ],
    };
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(|s| s.lines().next().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// The key argument's value as far as a streamed, unfinished JSON object
/// `raw` has it (escapes undone), its last line when it has several.
pub fn partial_argument(tool: &str, raw: &str) -> String {
    let keys: &[&str] = match tool {
        "bash" => &["command"],
        "grep" | "glob" => &["pattern"],
        _ => &["filePath", "file_path", "path", "command", "pattern", "url"],
    };
    let Some(start) = keys.iter().find_map(|key| {
        let at = raw.find(&format!("\"{key}\""))? + key.len() + 2;
        let rest = raw[at..].trim_start().strip_prefix(':')?.trim_start();
        rest.strip_prefix('"').map(|value| raw.len() - value.len())
    }) else {
        return String::new();
    };
    let mut value = String::new();
    let mut chars = raw[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some(other) => value.push(other),
                None => break,
            },
            c => value.push(c),
        }
    }
    value.lines().last().unwrap_or("").to_string()
}

fn byte_size(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1_000.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_000_000.0),
    }
}

fn truncate(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let kept: String = text.chars().take(room.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// A unified diff, coloured: additions green, deletions red, hunks cyan.
pub fn diff_lines(diff: &str, limit: usize) -> Vec<Line<'static>> {
    let lines: Vec<&str> = diff
        .lines()
        .filter(|l| {
            !l.starts_with("+++")
                && !l.starts_with("---")
                && !l.starts_with("Index:")
                && !l.starts_with("====")
        })
        .collect();
    let mut out: Vec<Line<'static>> = lines
        .iter()
        .take(limit)
        .map(|l| {
            let color = match l.chars().next() {
                Some('+') => Color::Green,
                Some('-') => Color::Red,
                Some('@') => Color::Cyan,
                _ => Color::Gray,
            };
            Line::styled(l.to_string(), Style::default().fg(color))
        })
        .collect();
    if lines.len() > limit {
        out.push(more(lines.len() - limit));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streaming_call_shows_its_argument_as_far_as_it_came() {
        assert_eq!(
            partial_argument("bash", r#"{"command": "cargo te"#),
            "cargo te"
        );
        assert_eq!(
            partial_argument(
                "bash",
                r#"{"description":"x","command":"echo \"hi\"\ncat a"#
            ),
            "cat a"
        );
        assert_eq!(partial_argument("write", r#"{"path":"src/ma"#), "src/ma");
        assert_eq!(partial_argument("write", r#"{"content":"path"#), "");
        assert_eq!(partial_argument("bash", r#"{"comm"#), "");
        assert_eq!(partial_argument("bash", r#"{"command":"a\"#), "a");
        assert_eq!(byte_size(999), "999 B");
        assert_eq!(byte_size(1_234), "1.2 KB");
    }

    #[test]
    fn a_pending_card_counts_the_bytes_received() {
        let tool = ToolPart {
            call_id: "c".into(),
            tool: "write".into(),
            state: ToolState::Pending {
                input: Value::Null,
                raw: format!(r#"{{"path":"notes.md","content":"{}"#, "x".repeat(2_000)),
            },
        };
        let cx = CardInputs {
            live_output: None,
            now: 0,
            expanded: false,
            awaiting_permission: false,
        };
        let text: String = tool_card(&tool, &cx, 80)[0]
            .spans
            .iter()
            .map(|s| s.content.to_string())
            .collect();
        assert!(text.contains("notes.md"), "{text}");
        assert!(text.contains("receiving arguments · 2.0 KB"), "{text}");
    }
}
