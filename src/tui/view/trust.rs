//! The dialog shown when cairn opens an untrusted project whose files hold
//! risky settings (see `crate::trust`): each one, concretely, and the two
//! answers. Enter and Esc keep the project untrusted: a habit key must not
//! grant trust.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::popup_area;

/// Settings listed at most; the rest are counted.
const MAX_SETTINGS: usize = 12;

pub fn lines(settings: &[String]) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::raw("This project's files ask for settings that loosen permissions,"),
        Line::raw("start programs or send your keys elsewhere. Not applied:"),
    ];
    let setting_style = Style::default().fg(Color::Yellow);
    for setting in settings.iter().take(MAX_SETTINGS) {
        lines.push(Line::styled(format!("  {setting}"), setting_style));
    }
    if settings.len() > MAX_SETTINGS {
        lines.push(Line::raw(format!(
            "  and {} more (`cairn trust` lists them)",
            settings.len() - MAX_SETTINGS
        )));
    }
    let key = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("t", key),
        Span::raw(" trust this project (remembered)   "),
        Span::styled("Enter", key),
        Span::raw(" / Esc continue without them"),
    ]));
    lines
}

pub fn draw(settings: &[String], frame: &mut Frame<'_>, area: Rect) {
    let lines = lines(settings);
    let rect = popup_area(frame, area, 100, lines.len() as u16 + 4);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Magenta))
        .title(" untrusted project ");
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        rect,
    );
}
