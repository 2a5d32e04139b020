//! The `/context` overlay: the next request broken down by category, one bar
//! each, adding up to the gauge, plus what `/prune` could free now.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::context::ContextBreakdown;

use super::popup_area;
use super::status::{gauge_color, gauge_percent};
use crate::shared::short;

/// Cells of each category's bar.
const BAR_CELLS: usize = 24;

pub fn draw(breakdown: Option<&ContextBreakdown>, frame: &mut Frame<'_>, area: Rect) {
    let lines = match breakdown {
        None => vec![Line::styled(
            "asking the session…",
            Style::default().fg(Color::DarkGray),
        )],
        Some(b) => breakdown_lines(b),
    };
    let rect = popup_area(frame, area, 64, lines.len() as u16 + 2);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(" context · Esc closes ");
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// What the row of the provider's count minus cairn's is called.
pub const DIFFERENCE: &str = "provider difference";

/// The provider's count minus cairn's, signed, with no bar: it is not a
/// part of the request but the two counts' disagreement.
fn difference_row(difference: i64, usable: u64, name_width: usize) -> Line<'static> {
    let sign = if difference < 0 { "−" } else { "+" };
    let tokens = difference.unsigned_abs();
    let percent = tokens as f64 * 100.0 / usable as f64;
    Line::from(vec![
        Span::raw(format!("{DIFFERENCE:<name_width$} ")),
        Span::styled(
            format!("{:<BAR_CELLS$}", "(provider − cairn)"),
            Style::default().fg(Color::DarkGray),
        ),
        // The share is signed like the figure, so "−1.9k" never shows
        // beside a share that reads as added.
        Span::raw(format!(
            " {:>6} {:>6}",
            format!("{sign}{}", short(tokens)),
            format!("{sign}{percent:.1}%")
        )),
    ])
}

pub fn breakdown_lines(b: &ContextBreakdown) -> Vec<Line<'static>> {
    let usable = b.gauge.usable.max(1);
    let name_width = b
        .categories
        .iter()
        .map(|(n, _)| n.chars().count())
        .chain((b.difference != 0).then(|| DIFFERENCE.chars().count()))
        .max()
        .unwrap_or(8)
        .max(10);
    let mut lines = Vec::new();
    let row = |name: &str, tokens: u64, color: Color| {
        let cells = ((tokens as f64 / usable as f64) * BAR_CELLS as f64).round() as usize;
        let cells = cells.min(BAR_CELLS);
        let cells = if tokens > 0 { cells.max(1) } else { 0 };
        let percent = tokens as f64 * 100.0 / usable as f64;
        Line::from(vec![
            Span::raw(format!("{name:<name_width$} ")),
            Span::styled("█".repeat(cells), Style::default().fg(color)),
            Span::styled(
                "░".repeat(BAR_CELLS - cells),
                Style::default().fg(Color::DarkGray),
            ),
            Span::raw(format!(" {:>6} {:>5.1}%", short(tokens), percent)),
        ])
    };
    let colors = [
        Color::Blue,
        Color::Cyan,
        Color::Magenta,
        Color::LightMagenta,
        Color::Green,
        Color::Yellow,
        Color::LightCyan,
    ];
    for (i, (name, tokens)) in b.categories.iter().enumerate() {
        lines.push(row(name, *tokens, colors[i % colors.len()]));
    }
    if b.difference != 0 {
        lines.push(difference_row(b.difference, usable, name_width));
    }
    let free = b.gauge.usable.saturating_sub(b.gauge.used);
    lines.push(row("free", free, Color::DarkGray));
    lines.push(Line::default());
    let percent = gauge_percent(&b.gauge);
    let tilde = if b.gauge.estimated { "~" } else { "" };
    lines.push(Line::styled(
        format!(
            "total {tilde}{} of {} usable ({} window - {} for output)",
            short(b.gauge.used),
            short(b.gauge.usable),
            short(b.gauge.context),
            short(b.gauge.reserved)
        ),
        Style::default()
            .fg(gauge_color(percent))
            .add_modifier(Modifier::BOLD),
    ));
    lines.push(Line::raw(format!(
        "fixed part (every request): {} ({:.0}% of usable)",
        short(b.fixed()),
        b.fixed() as f64 * 100.0 / usable as f64
    )));
    lines.extend(b.notes.iter().map(|note| Line::raw(note.clone())));
    lines.push(Line::raw(match b.gauge.compact_at {
        Some(at) => format!("automatic compaction at {} ({percent}% there)", short(at)),
        None => "automatic compaction is off".to_string(),
    }));
    lines.push(Line::raw(if b.prunable > 0 {
        format!(
            "/prune could free {} of old tool output now",
            short(b.prunable)
        )
    } else {
        "nothing to prune yet".to_string()
    }));
    if let Some(cache) = b.last_cache {
        lines.push(Line::raw(format!(
            "prompt cache, last request: {} read, {} written",
            short(cache.read),
            short(cache.write)
        )));
    }
    if let Some((before, after)) = b.last_compaction {
        lines.push(Line::raw(format!(
            "last compaction: {} → {} tokens",
            short(before),
            short(after)
        )));
    }
    lines
}
