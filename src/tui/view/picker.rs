//! A list picker overlay (`/model`, `/sessions`): typing filters, Up/Down,
//! Enter, Esc. The model picker shows a header row per provider.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::{Picker, PickerKind};

use super::popup_area;

pub fn draw(picker: &Picker, frame: &mut Frame<'_>, area: Rect) {
    let rows = (area.height.saturating_sub(6) as usize).max(1);
    let visible = picker.visible();
    let listed = with_headers(picker, &visible);
    let selected_row = listed
        .iter()
        .position(|(index, _)| *index == Some(picker.selected))
        .unwrap_or(0);
    let first = (selected_row + 1).saturating_sub(rows);
    let mut lines: Vec<Line<'static>> = listed
        .into_iter()
        .skip(first)
        .take(rows)
        .map(|(index, text)| match index {
            Some(i) if i == picker.selected => Line::styled(
                format!("▶ {text}"),
                Style::default().fg(Color::Black).bg(Color::Cyan),
            ),
            Some(_) => Line::raw(format!("  {text}")),
            None => Line::styled(text, Style::default().add_modifier(Modifier::BOLD)),
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

/// The rows to show: each entry with its index in `visible`, and for the
/// model picker a header row (`None`) where the provider changes.
fn with_headers(picker: &Picker, visible: &[&(String, String)]) -> Vec<(Option<usize>, String)> {
    let mut rows = Vec::with_capacity(visible.len() + 4);
    let mut group = None;
    for (i, (value, label)) in visible.iter().enumerate() {
        if picker.kind == PickerKind::Model {
            let provider = value.split('/').next().unwrap_or_default();
            if group != Some(provider) {
                group = Some(provider);
                rows.push((None, provider.to_string()));
            }
        }
        rows.push((Some(i), label.clone()));
    }
    rows
}
