//! The first-run screen: no provider is configured yet, so say how to set one
//! up instead of failing.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::popup_area;

pub fn draw(reason: &str, frame: &mut Frame<'_>, area: Rect) {
    let heading = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    let code = Style::default().fg(Color::Yellow);
    let mut lines = vec![Line::styled("Welcome to cairn", heading), Line::default()];
    lines.extend(reason.lines().map(|l| Line::raw(l.to_string())));
    lines.extend([
        Line::default(),
        Line::styled("Set one of these and start cairn again:", heading),
        Line::styled("  export ANTHROPIC_API_KEY=sk-ant-…", code),
        Line::styled("  export OPENAI_API_KEY=sk-…", code),
        Line::default(),
        Line::styled(
            "Or use a local OpenAI-compatible server (llama.cpp, Ollama):",
            heading,
        ),
        Line::styled(
            "  OPENAI_BASE_URL=http://localhost:8080/v1 cairn --model llamacpp/local",
            code,
        ),
        Line::default(),
        Line::raw("A [model] section in ~/.config/cairn/config.toml makes it permanent."),
        Line::default(),
        Line::styled(
            "Enter or Esc continues · Ctrl+C twice quits",
            Style::default().fg(Color::DarkGray),
        ),
    ]);
    let rect = popup_area(frame, area, 84, lines.len() as u16 + 4);
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
