//! The dialog shown when `/undo` would overwrite files edited by hand since
//! the turn: which files, and the two answers.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::popup_area;

/// Files named at most; the rest are counted.
const MAX_FILES: usize = 10;

pub fn conflict_lines(files: &[String]) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::raw("These files changed since the turn (edited by hand?);"),
        Line::raw("undoing it would overwrite them:"),
    ];
    let file_style = Style::default().fg(Color::Yellow);
    for file in files.iter().take(MAX_FILES) {
        lines.push(Line::styled(format!("  {file}"), file_style));
    }
    if files.len() > MAX_FILES {
        lines.push(Line::raw(format!("  and {} more", files.len() - MAX_FILES)));
    }
    let key = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("o", key),
        Span::raw(" overwrite them and undo   "),
        Span::styled("k", key),
        Span::raw(" / Esc keep them (nothing undone)"),
    ]));
    lines
}

pub fn draw(files: &[String], frame: &mut Frame<'_>, area: Rect) {
    let lines = conflict_lines(files);
    let rect = popup_area(frame, area, 72, lines.len() as u16 + 2);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Yellow))
        .title(" /undo: files edited since the turn ");
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        rect,
    );
}
