//! The `/help` overlay: keys and slash commands.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::completion::SLASH_COMMANDS;

use super::popup_area;

const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (queued while the agent works)"),
    ("Shift/Alt+Enter, Ctrl+J", "new line"),
    ("Esc", "interrupt; twice clears queued messages"),
    ("Ctrl+C", "clear input; twice quits"),
    ("Tab", "switch agent build ↔ plan"),
    ("PgUp/PgDn, wheel, Home/End", "scroll the transcript"),
    ("Ctrl+O", "expand tool output, summaries and change diffs"),
    ("Ctrl+T", "show reasoning"),
    ("Up/Down", "history"),
    ("Ctrl+A/E/K/U/W, Alt+B/F", "line editing"),
    ("@path", "mention a file · !cmd runs a shell command"),
];

pub fn draw(frame: &mut Frame<'_>, area: Rect) {
    let key_style = Style::default().fg(Color::Cyan);
    let mut lines: Vec<Line<'static>> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:<27}"), key_style),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::default());
    for (name, args, what) in SLASH_COMMANDS {
        let command = format!("{name} {args}");
        lines.push(Line::from(vec![
            Span::styled(format!("{command:<27}"), key_style),
            Span::raw(*what),
        ]));
    }
    let rect = popup_area(frame, area, 86, lines.len() as u16 + 2);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" help · Esc closes ");
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}
