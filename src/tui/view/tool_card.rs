//! A tool call as a card: status icon, tool name, key argument, status with
//! elapsed time or duration, and an output preview (diff for edits).
//!
//! Pure: draws from the part, the live output and the clock it is given.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::clock::Millis;
use crate::message::{ToolPart, ToolState};

use crate::tui::wrap::wrap_into;

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
    let argument = key_argument(&tool.tool, tool.state.input());
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
                body.extend(tail(output, limit).map(plain));
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
                None if tool.tool == "bash" => body.extend(tail(output, limit).map(plain)),
                None => {
                    let total = output.lines().count();
                    body.extend(output.lines().take(limit).map(plain));
                    if total > limit {
                        body.push(more(total - limit));
                    }
                }
            }
        }
        ToolState::Error { error, .. } => body.extend(
            error
                .lines()
                .take(limit.max(3))
                .map(|l| Line::styled(l.to_string(), Style::default().fg(Color::Red))),
        ),
    }
    for line in body {
        let mut row = Vec::new();
        wrap_into(&line, width.saturating_sub(4).max(8), 0, &mut row);
        for mut r in row {
            r.spans.insert(0, gutter.clone());
            out.push(r);
        }
    }
    out.push(Line::default());
    out
}

fn status_of(tool: &ToolPart, cx: &CardInputs<'_>) -> (&'static str, Style, String) {
    match &tool.state {
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
        ToolState::Completed { time, .. } => (
            "✓",
            Style::default().fg(Color::Green),
            duration(time.end.unwrap_or(time.start) - time.start),
        ),
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

fn truncate(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let kept: String = text.chars().take(room.saturating_sub(1)).collect();
    format!("{kept}…")
}

fn tail(output: &str, limit: usize) -> impl Iterator<Item = &str> {
    let lines: Vec<&str> = output.lines().collect();
    let skip = lines.len().saturating_sub(limit);
    lines.into_iter().skip(skip)
}

fn plain(line: &str) -> Line<'static> {
    Line::styled(line.to_string(), Style::default().fg(Color::Gray))
}

fn more(hidden: usize) -> Line<'static> {
    Line::styled(
        format!("… {hidden} more lines (Ctrl+O)"),
        Style::default().fg(Color::DarkGray),
    )
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
