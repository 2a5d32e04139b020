//! The `/help` overlay: keys and slash commands.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::custom_command::CustomCommand;
use crate::slash::{FrontEnd, help_rows};
use crate::tui::wrap::wrap_into;

use super::popup_area;

const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (queued while the agent works)"),
    ("Shift/Alt+Enter, Ctrl+J", "new line"),
    ("Esc", "interrupt; twice puts queued messages back to edit"),
    ("Ctrl+C", "interrupt, else clear input; twice quits"),
    ("Tab", "switch agent build ↔ plan"),
    (
        "Shift+Tab",
        "cycle build → accept edits (edits in the project unasked) → plan",
    ),
    (
        "PgUp/PgDn, Ctrl+Home/End",
        "scroll the transcript; so do the wheel, and Home/End while the input is empty",
    ),
    (
        "Ctrl+O",
        "expand or fold tool output, summaries and change diffs",
    ),
    ("Ctrl+T", "show or fold reasoning"),
    ("Ctrl+G", "open a subtask's child session; Esc goes back"),
    ("Up/Down, Ctrl+R", "earlier prompts; Ctrl+R searches them"),
    ("Ctrl+Z", "suspend to the shell; `fg` brings cairn back"),
    ("Ctrl+A/E/K/U/W, Alt+B/F", "line editing"),
    ("Ctrl+X", "edit the input in $VISUAL or $EDITOR"),
    ("@path", "mention a file · !cmd runs a shell command"),
];

/// Width of the key column when the popup is wide enough for two columns.
const KEY_COLUMN: usize = 27;
/// Below this many cells for descriptions, keys go on their own rows.
const MIN_DESCRIPTION: usize = 24;

/// Rows the help can scroll down in `area` before its last row shows.
pub fn max_scroll(area: Rect, custom: &[CustomCommand]) -> u16 {
    let rows = help_lines(area, custom).len() as u16;
    rows.saturating_sub(area.height.saturating_sub(2))
}

/// The help, scrolled down `scroll` rows when taller than `area`; the title
/// says so.
pub fn draw(frame: &mut Frame<'_>, area: Rect, scroll: u16, custom: &[CustomCommand]) {
    let lines = help_lines(area, custom);
    let title = if lines.len() as u16 + 2 > area.height {
        " help · ↑↓ scroll · Esc closes "
    } else {
        " help · Esc closes "
    };
    let rect = popup_area(frame, area, 86, lines.len() as u16 + 2);
    let block = Block::default().borders(Borders::ALL).title(title);
    frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll, 0)), rect);
}

/// Keys, then slash commands, then the custom commands (`.claude/commands/`,
/// ...), wrapped to the popup's width in `area`.
fn help_lines(area: Rect, custom: &[CustomCommand]) -> Vec<Line<'static>> {
    let inner = (area.width.min(86) as usize).saturating_sub(2);
    let mut entries: Vec<(String, String)> = KEYS
        .iter()
        .map(|(k, what)| ((*k).to_string(), (*what).to_string()))
        .collect();
    let commands = entries.len();
    entries.extend(help_rows(FrontEnd::Tui));
    let mut lines = Vec::new();
    for (i, (key, what)) in entries.iter().enumerate() {
        if i == commands {
            lines.push(Line::default());
        }
        entry_lines(key, what, inner, &mut lines);
    }
    if !custom.is_empty() {
        lines.push(Line::default());
    }
    for command in custom {
        entry_lines(&command.usage(), &command.description, inner, &mut lines);
    }
    lines
}

/// One key or command and what it does, wrapped at words to `width`: the
/// description's continuation rows line up under it, or, when the popup is
/// too narrow for two columns, the key takes a row and the description the
/// indented rows under it.
fn entry_lines(key: &str, what: &str, width: usize, out: &mut Vec<Line<'static>>) {
    let key_style = Style::default().fg(Color::Cyan);
    if width >= KEY_COLUMN + MIN_DESCRIPTION {
        let line = Line::from(vec![
            Span::styled(format!("{key:<KEY_COLUMN$}"), key_style),
            Span::raw(what.to_string()),
        ]);
        wrap_into(&line, width, KEY_COLUMN, out);
    } else {
        out.push(Line::styled(key.trim_end().to_string(), key_style));
        wrap_into(&Line::raw(format!("  {what}")), width, 2, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #26: the overlay said `/export` wrote to the working directory
    /// and left out its path, while `cairn run` had its own list. Both now
    /// print `crate::slash::help_rows`: the overlay's command rows are that
    /// table, row for row, after the keys.
    /// Issue #32: `/help` lists the custom commands after the built-ins.
    #[test]
    fn custom_commands_follow_the_table() {
        let command = CustomCommand {
            name: "/frontend:component".into(),
            description: "Create a React component".into(),
            argument_hint: "[name]".into(),
            allowed_tools: Vec::new(),
            model: None,
            agent: None,
            body: String::new(),
            file: std::path::PathBuf::from("component.md"),
            from_project: true,
        };
        let text: Vec<String> = help_lines(Rect::new(0, 0, 200, 100), &[command])
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        let last = text.last().expect("rows");
        assert!(last.starts_with("/frontend:component [name]"), "{text:#?}");
        assert!(last.ends_with("Create a React component"), "{text:#?}");
    }

    #[test]
    fn the_command_rows_are_the_one_slash_table() {
        let text: Vec<String> = help_lines(Rect::new(0, 0, 200, 100), &[])
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        let blank = text.iter().position(String::is_empty).expect("a blank row");
        // Wrapped rows joined again: the words of the overlay's commands
        // part are the words of the table, in order.
        let shown = text[blank + 1..].join(" ");
        let rows = help_rows(FrontEnd::Tui);
        let table: Vec<String> = rows.iter().map(|(u, h)| format!("{u} {h}")).collect();
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&shown), words(&table.join(" ")), "{text:#?}");
        let run = crate::slash::help_text(FrontEnd::Run);
        let usages: Vec<&str> = run
            .lines()
            .map(|l| l.split("  ").next().unwrap_or(""))
            .collect();
        let tui: Vec<&str> = rows.iter().map(|(usage, _)| usage.as_str()).collect();
        assert_eq!(usages, tui, "cairn run /help lists the same commands");
        assert!(tui.contains(&"/export [path]"), "{tui:?}");
    }
}
