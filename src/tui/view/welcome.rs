//! The welcome a session opens with while it has no messages: cairn's
//! version, the directory, the model and agent, and three hints. The first
//! message sent replaces it with the transcript.
//!
//! Pure: lines from the [`App`]'s state, wrapped to the width given.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::tui::app::App;
use crate::tui::wrap::wrap_into;

/// The three things a new user most needs to know, as (keys, what they do).
const HINTS: [(&str, &str); 3] = [
    (
        "/help",
        "lists commands and keys; /sessions resumes earlier work",
    ),
    (
        "@path",
        "attaches a file; !cmd runs a shell command yourself",
    ),
    (
        "Tab",
        "switches build ↔ plan; Esc interrupts; Ctrl+C twice quits",
    ),
];

/// True while the welcome is shown: nothing sent yet in this session (the
/// first-run screen has its own text).
pub fn is_shown(app: &App) -> bool {
    app.timeline.messages().is_empty()
}

/// The welcome's rows at `width`, ending with a blank row.
pub fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let dim = Style::default().fg(Color::DarkGray);
    let key = Style::default().fg(Color::Cyan);
    let mut logical = vec![
        Line::from(vec![
            Span::styled(
                "cairn",
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!(" {}", env!("CARGO_PKG_VERSION")), dim),
        ]),
        Line::from(vec![
            Span::styled("directory  ", dim),
            Span::raw(shorten_home(&app.session.directory)),
        ]),
        Line::from(vec![
            Span::styled("model      ", dim),
            Span::raw(app.model_label.clone()),
            Span::styled(format!("  ·  agent {}", app.agent), dim),
        ]),
        Line::default(),
    ];
    logical.extend(HINTS.iter().map(|(keys, what)| {
        Line::from(vec![
            Span::styled(format!("  {keys:<6} "), key),
            Span::styled((*what).to_string(), dim),
        ])
    }));
    let mut out = Vec::new();
    for (i, line) in logical.iter().enumerate() {
        // Hints wrap under their text, the header lines under their value.
        let indent = if i >= 4 { 9 } else { 11 };
        wrap_into(line, width, indent, &mut out);
    }
    out.push(Line::default());
    out
}

/// `/home/me/src/app` as `~/src/app`: the part of the path that tells.
fn shorten_home(directory: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && directory.starts_with(&format!("{home}/")) => {
            format!("~{}", &directory[home.len()..])
        }
        _ => directory.to_string(),
    }
}
