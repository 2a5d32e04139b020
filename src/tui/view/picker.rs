//! A list picker overlay (`/model`, `/sessions`): typing filters, Up/Down,
//! Enter, Esc.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::Picker;

use super::popup_area;

pub fn draw(picker: &Picker, frame: &mut Frame<'_>, area: Rect) {
    let rows = (area.height.saturating_sub(6) as usize).max(1);
    let first = (picker.selected + 1).saturating_sub(rows);
    let visible = picker.visible();
    let mut lines: Vec<Line<'static>> = visible
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, (_, label))| {
            if i == picker.selected {
                Line::styled(
                    format!("▶ {label}"),
                    Style::default().fg(Color::Black).bg(Color::Cyan),
                )
            } else {
                Line::raw(format!("  {label}"))
            }
        })
        .collect();
    if visible.is_empty() {
        lines.push(Line::raw(format!("  nothing matches {:?}", picker.filter)));
    }
    let rect = popup_area(frame, area, 70, lines.len() as u16 + 2);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(match picker.filter.as_str() {
            "" => format!(
                " {} · type to filter · Enter picks · Esc closes ",
                picker.title
            ),
            filter => format!(
                " {} · filter: {filter} · Enter picks · Esc closes ",
                picker.title
            ),
        });
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}
