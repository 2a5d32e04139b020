//! The `/mcp` overlay: one row per MCP server (state, tool and prompt
//! counts, last error), live from the hub's reports; ↑/↓ select, `r`
//! restarts the selected server. Also the status line's short indicator.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::mcp::{State, Status};
use crate::tui::wrap::str_width;

use super::popup_area;

/// Columns of the overlay at most.
const WIDTH: u16 = 90;

pub fn draw(statuses: &[Status], selected: usize, frame: &mut Frame<'_>, area: Rect) {
    // One row per line (no wrapping), so the height is the line count.
    let room = WIDTH.min(area.width).saturating_sub(2) as usize;
    let mut lines = Vec::new();
    for (index, status) in statuses.iter().enumerate() {
        lines.push(row(status, index == selected));
        if let Some(error) = &status.last_error {
            // A held server's note is its reason, not an error.
            let label = match status.state {
                State::Untrusted | State::Shadowed => "",
                _ => "last error: ",
            };
            lines.push(Line::styled(
                fit(&format!("    {label}{error}"), room),
                Style::default().fg(Color::DarkGray),
            ));
        }
    }
    let rect = popup_area(frame, area, WIDTH, lines.len() as u16 + 2);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(" MCP servers · ↑↓ select · r restarts · Esc closes ");
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// `text` cut to `room` columns, with `…` when cut.
fn fit(text: &str, room: usize) -> String {
    if str_width(text) <= room {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        if str_width(&out) + str_width(&c.to_string()) + 1 > room {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

fn row(status: &Status, selected: bool) -> Line<'static> {
    let marker = if selected { "▶ " } else { "  " };
    let mut counts = format!("  {} tools", status.tools);
    if status.prompts > 0 {
        counts.push_str(&format!(", {} prompts", status.prompts));
    }
    let name_style = if selected {
        Style::default().fg(Color::Black).bg(Color::Cyan)
    } else {
        Style::default()
    };
    Line::from(vec![
        Span::styled(format!("{marker}{}", status.name), name_style),
        Span::raw("  "),
        Span::styled(
            status.state.label(),
            Style::default().fg(state_color(&status.state)),
        ),
        Span::styled(counts, Style::default().fg(Color::Gray)),
    ])
}

fn state_color(state: &State) -> Color {
    match state {
        State::Ready => Color::Green,
        State::Starting => Color::Yellow,
        State::Failed => Color::Red,
        State::Disabled => Color::DarkGray,
        State::Untrusted | State::Shadowed => Color::Magenta,
    }
}

/// `mcp: github failed` while a server is down, `mcp 2/3` while some are
/// still starting; nothing once all are up (or none is configured).
pub fn indicator(statuses: &[Status]) -> Option<Span<'static>> {
    let failed: Vec<&str> = statuses
        .iter()
        .filter(|s| s.state == State::Failed)
        .map(|s| s.name.as_str())
        .collect();
    if !failed.is_empty() {
        return Some(Span::styled(
            format!("  mcp: {} failed", failed.join(", ")),
            Style::default().fg(Color::Red),
        ));
    }
    let enabled = statuses
        .iter()
        .filter(|s| {
            !matches!(
                s.state,
                State::Disabled | State::Untrusted | State::Shadowed
            )
        })
        .count();
    let ready = statuses.iter().filter(|s| s.state == State::Ready).count();
    (ready < enabled).then(|| {
        Span::styled(
            format!("  mcp {ready}/{enabled}"),
            Style::default().fg(Color::Yellow),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, state: State) -> Status {
        Status {
            name: name.into(),
            state,
            tools: 1,
            prompts: 0,
            last_error: None,
        }
    }

    #[test]
    fn long_errors_are_cut_to_the_overlay() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("a long error text", 8), "a long …");
    }

    #[test]
    fn the_indicator_names_failures_counts_starts_and_hides_when_all_are_up() {
        let text = |list: &[Status]| indicator(list).map(|span| span.content.to_string());
        assert_eq!(text(&[]), None);
        assert_eq!(
            text(&[status("a", State::Ready), status("b", State::Disabled)]),
            None
        );
        assert_eq!(
            text(&[
                status("a", State::Ready),
                status("b", State::Starting),
                status("c", State::Starting)
            ]),
            Some("  mcp 1/3".into())
        );
        assert_eq!(
            text(&[
                status("github", State::Failed),
                status("b", State::Starting),
                status("db", State::Failed)
            ]),
            Some("  mcp: github, db failed".into())
        );
    }
}
