//! The status line (agent, model, context gauge, cost) and the activity row
//! above the composer (working, retry countdown, compacting, queued prompts).
//!
//! The gauge reads [`ContextGauge`] as the session computed it: the same
//! numbers the overflow check uses, so what the user sees is what fires.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::bus::SessionStatus;
use crate::context::ContextGauge;
use crate::tui::app::App;
use crate::tui::wrap::{str_width, wrap_into};

use crate::shared::short;

/// Cells of the gauge bar.
const BAR_CELLS: usize = 10;
/// Queued prompts listed at most; more are counted.
const QUEUED_SHOWN: usize = 3;

/// Percent of the compaction point (or the usable window when automatic
/// compaction is off) that the next request fills.
pub fn gauge_percent(gauge: &ContextGauge) -> u64 {
    let limit = gauge.compact_at.unwrap_or(gauge.usable).max(1);
    (gauge.used.saturating_mul(100) + limit / 2) / limit
}

pub fn gauge_color(percent: u64) -> Color {
    match percent {
        0..70 => Color::Green,
        70..90 => Color::Yellow,
        _ => Color::Red,
    }
}

/// `████████░░ 62% · 124k/180k · compact at 160k · $0.42`, shortened to fit.
pub fn gauge_spans(gauge: &ContextGauge, cost: f64, room: usize) -> Vec<Span<'static>> {
    let percent = gauge_percent(gauge);
    let color = gauge_color(percent);
    let eighths = ((percent.min(100) as usize) * BAR_CELLS * 8 + 50) / 100;
    let mut bar = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        bar.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8 - 1]);
    }
    let filled = bar.chars().count();
    let tilde = if gauge.estimated { "~" } else { "" };
    let figures = format!("{tilde}{}/{}", short(gauge.used), short(gauge.usable));
    let compact = match gauge.compact_at {
        Some(at) => format!("compact at {}", short(at)),
        None => "auto-compact off".to_string(),
    };
    let cost = format!("${cost:.2}");
    let mut fields = vec![format!("{tilde}{percent}%"), figures, compact, cost];
    // Drop the least useful fields first until the line fits.
    while fields.len() > 1 && BAR_CELLS + 1 + str_width(&fields.join(" · ")) > room {
        let drop = if fields.len() == 4 { 2 } else { 1 };
        fields.remove(drop.min(fields.len() - 1));
    }
    vec![
        Span::styled(bar, Style::default().fg(color)),
        Span::styled(
            "░".repeat(BAR_CELLS - filled),
            Style::default().fg(Color::DarkGray),
        ),
        Span::raw(" "),
        Span::styled(fields.join(" · "), Style::default().fg(color)),
    ]
}

/// The status area for one width: a notice that does not fit on the status
/// line gets rows of its own above it (wrapped at words, never cut); agent
/// and model wrap (a model name breaks after a `/`) rather than being cut;
/// a gauge that does not fit beside them gets its own row under them.
pub struct StatusRows {
    pub notice: Vec<Line<'static>>,
    /// Agent and model (and a notice that fits), wrapped.
    pub left: Vec<Line<'static>>,
    /// Drawn right-aligned on the first `left` row.
    pub right: Vec<Span<'static>>,
    /// The gauge on its own last row, when it does not fit beside `left`.
    pub gauge_row: Option<Vec<Span<'static>>>,
}

impl StatusRows {
    pub fn height(&self) -> u16 {
        (self.notice.len() + self.left.len() + usize::from(self.gauge_row.is_some())) as u16
    }
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

pub fn rows(app: &App, width: usize) -> StatusRows {
    let agent_color = if app.agent == "plan" {
        Color::Yellow
    } else if app.accept_edits {
        Color::LightMagenta
    } else {
        Color::LightBlue
    };
    let agent = format!(" {} ", app.mode_label());
    let mut left = vec![
        Span::styled(
            agent.clone(),
            Style::default()
                .fg(Color::Black)
                .bg(agent_color)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" {}", app.model_label),
            Style::default().fg(Color::Gray),
        ),
    ];
    left.extend(super::mcp::indicator(&app.mcp));
    let left_width = spans_width(&left);
    let gauge = |room: usize| match &app.gauge {
        Some(gauge) => gauge_spans(gauge, app.session.cost, room),
        None => vec![Span::styled(
            format!("${:.2}", app.session.cost),
            Style::default().fg(Color::Gray),
        )],
    };
    let mut right = gauge(width.saturating_sub(left_width + 2));
    let mut gauge_row = None;
    if left_width + 1 + spans_width(&right) + 1 > width {
        gauge_row = Some(gauge(width.saturating_sub(1)));
        right = Vec::new();
    }
    let mut notice = Vec::new();
    if let Some(flash) = &app.flash {
        let style = Style::default().fg(Color::Yellow);
        let inline = format!("  {flash}");
        let right_width = spans_width(&right) + usize::from(!right.is_empty());
        if !flash.contains('\n') && left_width + str_width(&inline) + right_width < width {
            left.push(Span::styled(inline, style));
        } else {
            for line in flash.lines() {
                let row = Line::styled(format!(" {line}"), style);
                wrap_into(&row, width.saturating_sub(1).max(1), 1, &mut notice);
            }
        }
    }
    let mut left_rows = Vec::new();
    let indent = str_width(&agent) + 1;
    wrap_into(&Line::from(left), width.max(1), indent, &mut left_rows);
    StatusRows {
        notice,
        left: left_rows,
        right,
        gauge_row,
    }
}

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let rows = rows(app, area.width as usize);
    // The status rows stay at the bottom; the notice gets the rows left
    // above them.
    let fixed = (rows.left.len() + usize::from(rows.gauge_row.is_some())) as u16;
    let notice_rows = area.height.saturating_sub(fixed);
    frame.render_widget(
        Paragraph::new(rows.notice),
        Rect {
            height: notice_rows,
            ..area
        },
    );
    let below_notice = Rect {
        y: area.y + notice_rows,
        height: area.height - notice_rows,
        ..area
    };
    let left_rows = rows.left.len() as u16;
    frame.render_widget(Paragraph::new(rows.left), below_notice);
    draw_right(
        frame,
        Rect {
            height: 1,
            ..below_notice
        },
        rows.right,
    );
    if let Some(gauge) = rows.gauge_row
        && left_rows < below_notice.height
    {
        let last = Rect {
            y: below_notice.y + left_rows,
            height: 1,
            ..below_notice
        };
        draw_right(frame, last, gauge);
    }
}

/// `spans` right-aligned on the row `line`, one cell from its end.
fn draw_right(frame: &mut Frame<'_>, line: Rect, spans: Vec<Span<'static>>) {
    let width = spans_width(&spans) + 1;
    let rect = Rect {
        x: line.right().saturating_sub(width as u16),
        width: (width as u16).min(line.width),
        ..line
    };
    frame.render_widget(Paragraph::new(Line::from(spans)), rect);
}

/// The rows between transcript and composer; empty (no rows) when idle.
pub fn activity_lines(app: &App) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let dim = Style::default().fg(Color::DarkGray);
    match &app.status {
        SessionStatus::Idle => {}
        SessionStatus::Busy => {
            let secs = app.busy_since.map_or(0, |t| ((app.now - t) / 1000).max(0));
            lines.push(Line::from(vec![
                Span::styled("◐ working ", Style::default().fg(Color::Yellow)),
                Span::styled(format!("{secs}s · Esc to interrupt"), dim),
            ]));
        }
        SessionStatus::Retrying {
            attempt,
            message,
            next_at,
        } => {
            let secs = ((next_at - app.now + 999) / 1000).max(0);
            lines.push(Line::from(vec![
                Span::styled(
                    format!("↻ retrying in {secs}s"),
                    Style::default().fg(Color::Yellow),
                ),
                Span::styled(format!(" (attempt {attempt}): {message}"), dim),
            ]));
        }
        SessionStatus::Compacting => lines.push(Line::styled(
            "◐ compacting history…",
            Style::default().fg(Color::Magenta),
        )),
    }
    for text in app.queued.iter().take(QUEUED_SHOWN) {
        let first = text.lines().next().unwrap_or("");
        lines.push(Line::from(vec![
            Span::styled("⏸ queued ", Style::default().fg(Color::Cyan)),
            Span::styled(first.to_string(), dim),
        ]));
    }
    if app.queued.len() > QUEUED_SHOWN {
        lines.push(Line::styled(
            format!("  … {} more queued", app.queued.len() - QUEUED_SHOWN),
            dim,
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauge(used: u64) -> ContextGauge {
        ContextGauge {
            used,
            usable: 180_000,
            compact_at: Some(160_000),
            reserved: 20_000,
            context: 200_000,
            estimated: false,
        }
    }

    #[test]
    fn percent_is_of_the_compaction_point() {
        assert_eq!(gauge_percent(&gauge(80_000)), 50);
        assert_eq!(
            gauge_percent(&ContextGauge {
                compact_at: None,
                ..gauge(90_000)
            }),
            50
        );
    }

    #[test]
    fn colour_thresholds_are_70_and_90_percent() {
        assert_eq!(gauge_color(69), Color::Green);
        assert_eq!(gauge_color(70), Color::Yellow);
        assert_eq!(gauge_color(89), Color::Yellow);
        assert_eq!(gauge_color(90), Color::Red);
    }

    #[test]
    fn narrow_room_drops_the_compaction_figure_first() {
        let text: String = gauge_spans(&gauge(80_000), 0.42, 36)
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, "█████░░░░░ 50% · 80k/180k · $0.42");
    }
}
