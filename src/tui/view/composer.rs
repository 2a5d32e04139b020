//! The composer pane (a rule, then the text hard-wrapped with a cursor) and
//! its completion popup (slash commands, `@` files).
//!
//! Hard wrapping by cell keeps the cursor arithmetic exact; the prompt mark's
//! colour shows the mode: a message, a `!` shell command or a `/` command.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use unicode_width::UnicodeWidthChar;

use crate::tui::app::App;
use crate::tui::completion::MAX_SHOWN;
use crate::tui::wrap::{str_width, wrap_into};

/// The composer grows with its text up to this many rows, then scrolls.
const MAX_TEXT_ROWS: u16 = 8;
/// Cells taken by the prompt mark in front of every row.
const GUTTER: u16 = 2;

/// Rows the composer wants: a rule plus its wrapped text.
pub fn height(app: &App, width: u16) -> u16 {
    let (rows, _) = layout_text(
        app.composer.text(),
        app.composer.cursor(),
        text_width(width),
    );
    (rows.len() as u16).clamp(1, MAX_TEXT_ROWS) + 1
}

fn text_width(width: u16) -> usize {
    width.saturating_sub(GUTTER).max(1) as usize
}

/// Splits `text` into rows of `width` cells; returns rows and the cursor's (row, col).
fn layout_text(text: &str, cursor: usize, width: usize) -> (Vec<String>, (usize, usize)) {
    let mut rows = vec![String::new()];
    let mut col = 0;
    let mut at = (0, 0);
    for (offset, c) in text.char_indices() {
        if offset == cursor {
            at = (rows.len() - 1, col);
        }
        if c == '\n' {
            rows.push(String::new());
            col = 0;
            continue;
        }
        let w = c.width().unwrap_or(0);
        if col + w > width {
            rows.push(String::new());
            col = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(c);
        }
        col += w;
    }
    if cursor >= text.len() {
        at = (rows.len() - 1, col);
        if col >= width {
            rows.push(String::new());
            at = (rows.len() - 1, 0);
        }
    }
    (rows, at)
}

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    if area.height == 0 {
        return;
    }
    let busy = app.is_busy();
    let rule_style = Style::default().fg(if busy { Color::Yellow } else { Color::DarkGray });
    let rule = match &app.history_search {
        Some(search) => search_rule(search, area.width),
        None => Line::styled("─".repeat(area.width as usize), rule_style),
    };
    frame.render_widget(Paragraph::new(rule), Rect { height: 1, ..area });
    let text = app.composer.text();
    let (rows, (cursor_row, cursor_col)) =
        layout_text(text, app.composer.cursor(), text_width(area.width));
    let visible = (area.height - 1) as usize;
    if visible == 0 {
        return;
    }
    let first = (cursor_row + 1).saturating_sub(visible);
    // The text keeps its own `!` or `/`; the mark's colour says the mode.
    let mark = match text.chars().next() {
        Some('!') => ("> ", Color::Red),
        Some('/') => ("> ", Color::Magenta),
        _ => ("> ", Color::Cyan),
    };
    let mut lines: Vec<Line<'static>> = Vec::new();
    if text.is_empty() {
        let hint = if busy {
            "type to queue a message…"
        } else {
            fitting_hint(
                "ask anything · / commands · @ files · ! shell",
                (area.width as usize).saturating_sub(mark.0.len()),
            )
        };
        lines.push(Line::from(vec![
            Span::styled(mark.0, Style::default().fg(mark.1)),
            Span::styled(hint, Style::default().fg(Color::DarkGray)),
        ]));
    }
    for (i, row) in rows.iter().enumerate().skip(first).take(visible) {
        if text.is_empty() {
            break;
        }
        let gutter = if i == 0 { mark.0 } else { "  " };
        lines.push(Line::from(vec![
            Span::styled(
                gutter,
                Style::default().fg(mark.1).add_modifier(Modifier::BOLD),
            ),
            Span::raw(row.clone()),
        ]));
    }
    let text_area = Rect {
        y: area.y + 1,
        height: area.height - 1,
        ..area
    };
    frame.render_widget(Paragraph::new(lines), text_area);
    let has_keys = app.overlay.is_none()
        && (app.permissions.is_empty() || app.permission_dialog.composer_focused);
    if has_keys {
        frame.set_cursor_position(Position {
            x: area.x + GUTTER + cursor_col as u16,
            y: text_area.y + (cursor_row - first) as u16,
        });
    }
}

/// The completion popup above the composer. A description that does not
/// fit wraps at words under itself (not under the command), and the whole
/// entry is highlighted when selected.
/// The rule over the composer while Ctrl+R searches: what is searched for,
/// and whether anything matched.
fn search_rule(search: &crate::tui::history_search::HistorySearch, width: u16) -> Line<'static> {
    let found = if search.at.is_some() || search.query.is_empty() {
        ""
    } else {
        " (no match)"
    };
    let label = format!(
        "─ search earlier prompts: {}▏{found} · Ctrl+R older · Enter keeps · Esc back ",
        search.query
    );
    let pad = (width as usize).saturating_sub(str_width(&label));
    Line::styled(
        format!("{label}{}", "─".repeat(pad)),
        Style::default().fg(Color::Yellow),
    )
}

pub fn draw_completion(app: &App, frame: &mut Frame<'_>, composer: Rect) {
    let width = composer.width.min(72);
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (i, c) in app.completion.iter().take(MAX_SHOWN).enumerate() {
        let style = if i == app.completion_selected {
            Style::default().fg(Color::Black).bg(Color::Cyan)
        } else {
            Style::default().bg(Color::DarkGray)
        };
        let name = format!(" {:<12} ", c.insert);
        let indent = str_width(&name);
        let entry = Line::from(vec![Span::raw(name), Span::raw(c.detail.clone())]);
        let mut rows = Vec::new();
        wrap_into(&entry, width as usize, indent, &mut rows);
        for row in rows {
            let text = row.to_string();
            let pad = (width as usize).saturating_sub(str_width(&text));
            lines.push(Line::styled(format!("{text}{}", " ".repeat(pad)), style));
        }
    }
    let rows = lines.len() as u16;
    if rows == 0 || composer.y < rows {
        return;
    }
    let area = Rect {
        x: composer.x,
        y: composer.y - rows,
        width,
        height: rows,
    };
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines), area);
}

/// The empty composer's hint at `width`: whole items, dropped from the end
/// while they do not fit, so a narrow terminal reads "ask anything · /
/// commands" rather than a cut "@ files ·".
fn fitting_hint(hint: &str, width: usize) -> &str {
    let mut end = hint.len();
    while crate::tui::wrap::str_width(&hint[..end]) > width {
        match hint[..end].rfind(" · ") {
            Some(cut) => end = cut,
            None => break,
        }
    }
    &hint[..end]
}

#[cfg(test)]
mod tests {
    use super::{fitting_hint, layout_text};

    #[test]
    fn the_hint_drops_whole_items_until_it_fits() {
        let hint = "ask anything · / commands · @ files · ! shell";
        assert_eq!(fitting_hint(hint, 118), hint);
        assert_eq!(
            fitting_hint(hint, 38),
            "ask anything · / commands · @ files"
        );
        assert_eq!(fitting_hint(hint, 30), "ask anything · / commands");
        assert_eq!(fitting_hint(hint, 5), "ask anything");
    }

    #[test]
    fn cursor_follows_hard_wraps_and_newlines() {
        let (rows, at) = layout_text("abcdef\ngh", 9, 4);
        assert_eq!(rows, ["abcd", "ef", "gh"]);
        assert_eq!(at, (2, 2));
        let (_, at) = layout_text("abcdef", 2, 4);
        assert_eq!(at, (0, 2));
    }
}
