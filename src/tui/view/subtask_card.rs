//! A `task` call as a subtask card: the subagent's name and the task's
//! description, then the child's current action (or "thinking"), tool
//! count and tokens while it works, its final state (done / failed /
//! interrupted) with the duration once it ends, and how to open the child.
//!
//! Pure: draws from the tool part (which names the child session) and the
//! child's summary the TUI keeps from the child's events.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::clock::Millis;
use crate::message::{ToolPart, ToolState};
use crate::tui::children::{ChildProgress, agent_name, description};
use crate::tui::wrap::wrap_into;

use crate::shared::short;

pub struct SubtaskInputs<'a> {
    /// The child session the call started, once known.
    pub session_id: Option<&'a str>,
    /// The child's summary, once any of its events arrived.
    pub child: Option<&'a ChildProgress>,
    pub now: Millis,
    /// The key that opens the child (`ctrl+g`), for the hint.
    pub open_key: &'a str,
}

pub fn subtask_card(tool: &ToolPart, cx: &SubtaskInputs<'_>, width: usize) -> Vec<Line<'static>> {
    let (icon, color, status) = status_of(tool, cx);
    let agent = agent_name(tool);
    let description = description(tool);
    let fixed = agent.chars().count() + " (subtask) ".len() + 2 + status.chars().count() + 2;
    let room = width.saturating_sub(fixed);
    let mut head = vec![
        Span::styled(format!("{icon} "), Style::default().fg(color)),
        Span::styled(agent, Style::default().add_modifier(Modifier::BOLD)),
        Span::styled(" (subtask)", Style::default().fg(Color::DarkGray)),
    ];
    if !description.is_empty() && room > 3 {
        head.push(Span::raw(" "));
        head.push(Span::styled(
            truncate(&description, room),
            Style::default().fg(Color::White),
        ));
    }
    head.push(Span::styled(
        format!("  {status}"),
        Style::default().fg(Color::DarkGray),
    ));
    let mut out = vec![Line::from(head)];
    for line in body(tool, cx) {
        let mut rows = Vec::new();
        wrap_into(&line, width.saturating_sub(4).max(8), 0, &mut rows);
        for mut row in rows {
            row.spans.insert(
                0,
                Span::styled("  │ ", Style::default().fg(Color::DarkGray)),
            );
            out.push(row);
        }
    }
    out.push(Line::default());
    out
}

/// The lines under the head: what the child is doing and its figures,
/// the answer's first line or the error, and the hint to open it.
fn body(tool: &ToolPart, cx: &SubtaskInputs<'_>) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let mut figures = Vec::new();
    if let Some(child) = cx.child {
        figures.push(format!(
            "{} tool{}",
            child.tools,
            if child.tools == 1 { "" } else { "s" }
        ));
        if child.tokens > 0 {
            figures.push(format!("{} tokens", short(child.tokens)));
        }
    }
    let mut lines = Vec::new();
    match &tool.state {
        ToolState::Pending { .. } | ToolState::Running { .. } => {
            let doing = match cx.child {
                Some(child) if child.awaiting_permission => "waiting for permission".to_string(),
                Some(ChildProgress {
                    action: Some(action),
                    ..
                }) => action.clone(),
                _ => "thinking".to_string(),
            };
            let mut spans = vec![Span::styled(doing, Style::default().fg(Color::Gray))];
            if !figures.is_empty() {
                spans.push(Span::styled(format!(" · {}", figures.join(" · ")), dim));
            }
            lines.push(Line::from(spans));
        }
        ToolState::Completed { output, .. } => {
            if !figures.is_empty() {
                lines.push(Line::styled(figures.join(" · "), dim));
            }
            if let Some(answer) = first_answer_line(output) {
                lines.push(Line::styled(answer, Style::default().fg(Color::Gray)));
            }
        }
        ToolState::Error { error, .. } => {
            if !figures.is_empty() {
                lines.push(Line::styled(figures.join(" · "), dim));
            }
            if !is_interrupted(tool) {
                let first = error.lines().next().unwrap_or("").to_string();
                lines.push(Line::styled(first, Style::default().fg(Color::Red)));
            }
        }
    }
    if cx.session_id.is_some() {
        lines.push(Line::styled(
            format!("{} opens the child session", cx.open_key),
            dim,
        ));
    }
    lines
}

fn is_interrupted(tool: &ToolPart) -> bool {
    match &tool.state {
        ToolState::Error {
            error, metadata, ..
        } => {
            error == "interrupted"
                || metadata
                    .as_ref()
                    .and_then(|m| m.get("interrupted"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
        }
        _ => false,
    }
}

fn status_of(tool: &ToolPart, cx: &SubtaskInputs<'_>) -> (&'static str, Color, String) {
    match &tool.state {
        ToolState::Pending { .. } => ("○", Color::DarkGray, "starting".into()),
        ToolState::Running { time, .. } => {
            let secs = ((cx.now - time.start) / 1000).max(0);
            ("◐", Color::Yellow, format!("running {secs}s"))
        }
        ToolState::Completed { time, .. } => (
            "✓",
            Color::Green,
            format!(
                "done · {}",
                duration(time.end.unwrap_or(time.start) - time.start)
            ),
        ),
        ToolState::Error { time, .. } => {
            let took = duration(time.end.unwrap_or(time.start) - time.start);
            if is_interrupted(tool) {
                ("■", Color::Yellow, format!("interrupted · {took}"))
            } else {
                ("✗", Color::Red, format!("failed · {took}"))
            }
        }
    }
}

/// The first line of the answer inside `<task_result>`.
fn first_answer_line(output: &str) -> Option<String> {
    let inner = output
        .split_once("<task_result>")
        .map_or(output, |(_, rest)| rest);
    inner
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "</task_result>")
        .map(str::to_string)
}

fn duration(ms: Millis) -> String {
    if ms < 1000 {
        format!("{}ms", ms.max(0))
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

fn truncate(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let kept: String = text.chars().take(room.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// The row above a child session being shown: whose child it is and how to
/// go back. `label` names the child (`explore (subtask): find the marker`).
pub fn breadcrumb(label: &str, parent_title: &str, open_key: &str, width: u16) -> Line<'static> {
    let back = format!(" · Esc or {open_key} goes back ");
    let text = format!(" ◂ {label} · child of \"{parent_title}\"");
    let room = (width as usize).saturating_sub(back.chars().count());
    let style = Style::default().fg(Color::Black).bg(Color::Magenta);
    Line::from(vec![
        Span::styled(truncate(&text, room), style.add_modifier(Modifier::BOLD)),
        Span::styled(back, style),
    ])
}
