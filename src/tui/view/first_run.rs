//! The first-run screen: no provider is configured yet, so say how to set one
//! up instead of failing.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::popup_area;

/// The box's width; narrower terminals get their full width.
const WIDTH: u16 = 84;

pub fn draw(reason: &str, frame: &mut Frame<'_>, area: Rect) {
    let heading = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled("Welcome to cairn", heading), Line::default()];
    lines.extend(reason.lines().map(|l| Line::raw(l.to_string())));
    // The text from `main` says how to set up and what the search found;
    // nothing here asks for a restart: `/model` works from this screen.
    lines.extend([
        Line::default(),
        Line::styled(
            "Enter or Esc continues · /model picks a model · Ctrl+C twice quits",
            Style::default().fg(Color::DarkGray),
        ),
    ]);
    // Long lines wrap at words: count the rows they take inside the
    // border, with one spare row per wrapped line for word breaks.
    let inner = usize::from(WIDTH.min(area.width).saturating_sub(2)).max(1);
    let rows: usize = lines
        .iter()
        .map(|line| match line.width() {
            width if width > inner => width.div_ceil(inner) + 1,
            _ => 1,
        })
        .sum();
    let height = u16::try_from(rows + 2).unwrap_or(u16::MAX);
    let rect = popup_area(frame, area, WIDTH, height);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        rect,
    );
}
