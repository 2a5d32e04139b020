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
    // Rows as the paragraph wraps them: the choices must always be seen,
    // however long the command or the reasons; the preview scrolls by row,
    // so that even one 400-character command line can be read whole.
    let inner = area.width.saturating_sub(2).max(1);
    let preview: Vec<Line<'static>> = preview_lines(request.preview.as_ref())
        .into_iter()
        .flat_map(|line| split_rows(line, inner))
        .collect();
    let total = preview.len() as u16;
    let footer_rows = rows(&footer, inner);
    let limit = max_height(area).max(footer_rows + 3).min(area.height);
    let mut room = limit.saturating_sub(footer_rows + 2);
    // The preview keeps a few rows of its own before the header takes any
    // (the title repeats the command: it is cut to two rows).
    let kept_for_preview = total.min(PREVIEW_MIN_ROWS) + u16::from(total > PREVIEW_MIN_ROWS);
    let mut header_room = room.saturating_sub(kept_for_preview);
    let header: Vec<Line<'static>> = header
        .into_iter()
        .map(|line| {
            split_rows(line, inner)
                .into_iter()
                .take(2)
                .collect::<Vec<_>>()
        })
        .map(|rows| {
            Line::from(
                rows.into_iter()
                    .flat_map(|row| row.spans)
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let header = fit(header, inner, &mut header_room);
    room = room.saturating_sub(rows(&header, inner));
    // One row for the scroll hint whenever the preview does not fit whole.
    let preview_fits = rows(&preview, inner) <= room;
    if !preview_fits {
        room = room.saturating_sub(1);
    }
    let max_scroll = if preview_fits {
        0
    } else {
        last_start(&preview, inner, room)
    };
    let scroll = dialog.preview_scroll.min(max_scroll);
    let shown_lines = fit(
        preview.into_iter().skip(scroll as usize).collect(),
        inner,
        &mut room,
    );
    let shown = shown_lines.len() as u16;
    let mut lines = header;
    lines.extend(shown_lines);
    if max_scroll > 0 {
        lines.push(Line::styled(
            format!(
                "  lines {}-{} of {} · Shift+↑/↓ or the wheel scroll",
                scroll + 1,
                scroll + shown,
                total
            ),
            Style::default().fg(Color::DarkGray),
        ));
    }
    lines.extend(footer);
    let height = (rows(&lines, inner) + 2).min(area.height);
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

/// Rows of the preview (the command, the diff) shown however long the
/// header is.
const PREVIEW_MIN_ROWS: u16 = 3;

/// `line` cut into rows of at most `width` columns, each span keeping its
/// style (a preview line is code: cut anywhere, not at words).
fn split_rows(line: Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let mut piece = String::new();
        for ch in span.content.chars() {
            let w = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
            if used + w > width && used > 0 {
                row.push(Span::styled(std::mem::take(&mut piece), span.style));
                rows.push(Line::from(std::mem::take(&mut row)));
                used = 0;
            }
            piece.push(ch);
            used += w;
        }
        if !piece.is_empty() {
            row.push(Span::styled(piece, span.style));
        }
    }
    rows.push(Line::from(row).style(line.style));
    rows
}

/// The rows `lines` take wrapped at `width`.
fn rows(lines: &[Line<'static>], width: u16) -> u16 {
    lines.iter().map(|line| line_rows(line, width)).sum()
}

fn line_rows(line: &Line<'static>, width: u16) -> u16 {
    let count = Paragraph::new(line.clone())
        .wrap(Wrap { trim: false })
        .line_count(width);
    u16::try_from(count.max(1)).unwrap_or(u16::MAX)
}

/// The first of `lines` that fit in `room` rows; `room` keeps what is left.
fn fit(lines: Vec<Line<'static>>, width: u16, room: &mut u16) -> Vec<Line<'static>> {
    let mut kept = Vec::new();
    for line in lines {
        let needed = line_rows(&line, width);
        if needed > *room {
            break;
        }
        *room -= needed;
        kept.push(line);
    }
    kept
}

/// The first line from which the rest of `lines` fits in `room` rows: the
/// furthest the preview scrolls.
fn last_start(lines: &[Line<'static>], width: u16, room: u16) -> u16 {
    let mut used = 0;
    let mut start = lines.len();
    while start > 0 {
        let needed = line_rows(&lines[start - 1], width);
        if used + needed > room {
            break;
        }
        used += needed;
        start -= 1;
    }
    u16::try_from(start).unwrap_or(u16::MAX)
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
            if dialog.selected.is_some() {
                " ↑/↓ choose · Enter answers · Esc rejects · PgUp/PgDn scroll the chat "
            } else {
                " ↑/↓ choose an answer, then Enter · Esc rejects · PgUp/PgDn scroll the chat "
            },
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
        Preview::Call { arguments } => {
            let mut lines = vec![Line::styled(
                "with the arguments:",
                Style::default().fg(Color::DarkGray),
            )];
            lines.extend(arguments.lines().map(|line| {
                let mut highlighted = highlight_line("json", line);
                highlighted.spans.insert(0, Span::raw("  "));
                highlighted
            }));
            lines
        }
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
        let chosen = dialog.selected == Some(index);
        let mark = if chosen { "›" } else { " " };
        let style = if chosen && !dialog.composer_focused {
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
