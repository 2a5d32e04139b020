//! The permission dialog: what a tool wants to do, and once / always / reject
//! (with an optional reason the model will read).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::permission::PermissionRequest;
use crate::tui::app::PermissionDialog;

pub fn draw(
    request: &PermissionRequest,
    dialog: &PermissionDialog,
    waiting: usize,
    frame: &mut Frame<'_>,
    area: Rect,
) {
    let key = Style::default()
        .fg(Color::Black)
        .bg(Color::Yellow)
        .add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled(
        request.title.clone(),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for pattern in request.patterns.iter().take(4) {
        lines.push(Line::styled(
            format!("  {pattern}"),
            Style::default().fg(Color::Gray),
        ));
    }
    if !request.always.is_empty() {
        lines.push(Line::styled(
            format!("always would allow: {}", request.always.join(", ")),
            Style::default().fg(Color::DarkGray),
        ));
    }
    lines.push(Line::default());
    match &dialog.reason {
        None => lines.push(Line::from(vec![
            Span::styled(" o ", key),
            Span::raw(" once   "),
            Span::styled(" a ", key),
            Span::raw(" always   "),
            Span::styled(" r ", key),
            Span::raw(" reject (say why)   Esc rejects"),
        ])),
        Some(reason) => {
            lines.push(Line::from(vec![
                Span::styled("reason: ", Style::default().fg(Color::Yellow)),
                Span::raw(reason.clone()),
                Span::styled("▏", Style::default().fg(Color::Yellow)),
            ]));
            lines.push(Line::styled(
                "Enter rejects with this reason · Esc goes back",
                Style::default().fg(Color::DarkGray),
            ));
        }
    }
    let height = (lines.len() as u16 + 2).min(area.height);
    let rect = Rect {
        x: area.x,
        y: area.bottom().saturating_sub(height + 1),
        width: area.width,
        height,
    };
    let more = if waiting > 1 {
        format!(" · {} more waiting", waiting - 1)
    } else {
        String::new()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Yellow))
        .title(format!(" permission: {}{more} ", request.permission));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        rect,
    );
}
