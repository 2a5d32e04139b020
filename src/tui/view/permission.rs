//! The permission dialog: what a tool wants to do and what saying yes will
//! do (diff, new content, highlighted command, resolved path, the reasons it
//! asks), and the answers: once / always (exact or broad) / reject.
//!
//! Drawn over the bottom of the transcript, never over the composer, so text
//! typed while it is open stays in view. The border is bright while the
//! dialog has the keys and dim while they go to the composer.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};

use crate::permission::{PermissionRequest, Preview};
use crate::tui::app::{Choice, PermissionDialog, choices};
use crate::tui::highlight::highlight_line;

use super::tool_card::diff_lines;

/// The whole dialog takes at most two thirds of the transcript's rows, so
/// the conversation behind it stays in view (and scrolls).
fn max_height(area: Rect) -> u16 {
    area.height * 2 / 3
}

/// `from` names the subagent asking (`explore (subtask): find the marker`)
/// when the ask comes from a child session.
pub fn draw(
    request: &PermissionRequest,
    from: Option<&str>,
    dialog: &PermissionDialog,
    waiting: usize,
    frame: &mut Frame<'_>,
    area: Rect,
) {
    let mut header = header_lines(request);
    if let Some(from) = from {
        header.insert(
            0,
            Line::styled(
                format!("{from} · wants to:"),
                Style::default()
                    .fg(Color::Magenta)
                    .add_modifier(Modifier::BOLD),
            ),
        );
    }
    let footer = footer_lines(request, dialog);
    let preview = preview_lines(request.preview.as_ref());
    let fixed = header.len() as u16 + footer.len() as u16 + 2;
    let room = max_height(area).saturating_sub(fixed);
    let shown = (preview.len() as u16).min(room.max(1));
    let max_scroll = (preview.len() as u16).saturating_sub(shown);
    let scroll = dialog.preview_scroll.min(max_scroll);
    let mut lines = header;
    lines.extend(
        preview
            .into_iter()
            .skip(scroll as usize)
            .take(shown as usize),
    );
    if max_scroll > 0 {
        lines.push(Line::styled(
            format!(
                "  lines {}-{} of {} · Shift+↑/↓ or the wheel scroll",
                scroll + 1,
                scroll + shown,
                max_scroll + shown
            ),
            Style::default().fg(Color::DarkGray),
        ));
    }
    lines.extend(footer);
    let height = (lines.len() as u16 + 2).min(area.height);
    let rect = Rect {
        x: area.x,
        y: area.bottom().saturating_sub(height),
        width: area.width,
        height,
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .block(frame_block(request, dialog, waiting))
            .wrap(Wrap { trim: false }),
        rect,
    );
}

fn frame_block(
    request: &PermissionRequest,
    dialog: &PermissionDialog,
    waiting: usize,
) -> Block<'static> {
    let more = if waiting > 1 {
        format!(" · {} more waiting", waiting - 1)
    } else {
        String::new()
    };
    let (border, style, hint) = if dialog.composer_focused {
        (
            BorderType::Plain,
            Style::default().fg(Color::DarkGray),
            " typing goes to the composer · ↑/↓ to answer ",
        )
    } else {
        (
            BorderType::Thick,
            Style::default().fg(Color::Yellow),
            " ↑/↓ choose · Enter answers · Esc rejects · PgUp/PgDn scroll the chat ",
        )
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(border)
        .border_style(style)
        .title(format!(" permission: {}{more} ", request.permission))
        .title_bottom(hint)
}

fn header_lines(request: &PermissionRequest) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        request.title.clone(),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if let Some(Preview::Command {
        description: Some(description),
        ..
    }) = &request.preview
    {
        lines.push(Line::styled(
            format!("the model says: {description}"),
            Style::default()
                .fg(Color::Gray)
                .add_modifier(Modifier::ITALIC),
        ));
    }
    for reason in &request.reasons {
        lines.push(Line::styled(
            format!("asks because of {reason}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    lines
}

/// What saying yes will do, as lines to scroll through.
fn preview_lines(preview: Option<&Preview>) -> Vec<Line<'static>> {
    let Some(preview) = preview else {
        return Vec::new();
    };
    match preview {
        Preview::Diff { diff, .. } => diff_lines(diff, usize::MAX),
        Preview::Content { path, content } => {
            let lang = path.rsplit('.').next().unwrap_or_default();
            let mut lines = vec![Line::styled(
                format!("new file, {} lines:", content.lines().count()),
                Style::default().fg(Color::DarkGray),
            )];
            lines.extend(content.lines().map(|line| highlight_line(lang, line)));
            lines
        }
        Preview::Command { command, .. } => command
            .lines()
            .map(|line| {
                let mut highlighted = highlight_line("bash", line);
                highlighted.spans.insert(0, Span::raw("  $ "));
                highlighted
            })
            .collect(),
        Preview::Path { resolved } => vec![Line::styled(
            format!("  resolves to {resolved}"),
            Style::default().fg(Color::Gray),
        )],
    }
}

fn footer_lines(request: &PermissionRequest, dialog: &PermissionDialog) -> Vec<Line<'static>> {
    let mut lines = vec![Line::default()];
    if let Some(reason) = &dialog.reason {
        lines.push(Line::from(vec![
            Span::styled("reason: ", Style::default().fg(Color::Yellow)),
            Span::raw(reason.clone()),
            Span::styled("▏", Style::default().fg(Color::Yellow)),
        ]));
        lines.push(Line::styled(
            "Enter rejects with this reason (the model reads it) · Esc goes back",
            Style::default().fg(Color::DarkGray),
        ));
        return lines;
    }
    let selected = Style::default()
        .fg(Color::Black)
        .bg(Color::Yellow)
        .add_modifier(Modifier::BOLD);
    for (index, choice) in choices(request).into_iter().enumerate() {
        let (label, scope) = match choice {
            Choice::Once => ("Allow once".to_string(), "this time only"),
            Choice::Always => (
                format!("Always allow {}", quoted(&request.always)),
                "for this project, remembered",
            ),
            Choice::AlwaysBroad => (
                format!("Always allow {}", quoted(&request.always_broad)),
                "for this project, remembered",
            ),
            Choice::Reject => ("Reject".to_string(), "say why, or Esc to reject now"),
        };
        let mark = if index == dialog.selected { "›" } else { " " };
        let style = if index == dialog.selected && !dialog.composer_focused {
            selected
        } else {
            Style::default()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} {label} "), style),
            Span::styled(format!(" {scope}"), Style::default().fg(Color::DarkGray)),
        ]));
    }
    lines
}

fn quoted(patterns: &[String]) -> String {
    patterns
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
