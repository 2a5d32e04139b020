//! Diffs of the session's changes: the `/diff` overlay (scrollable, every
//! file) and the diff under an expanded patch card (bounded). Coloured as
//! diffs are elsewhere: additions green, deletions red, hunks cyan; each
//! file starts with its name instead of git's header lines.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::undo::DiffView;

use super::popup_area;

/// Diff lines a patch card shows when expanded; `/diff` shows the rest.
pub const CARD_LINES: usize = 60;

/// A unified diff (`git diff` output) as coloured lines.
pub fn diff_view_lines(diff: &str) -> Vec<Line<'static>> {
    let grey = Style::default().fg(Color::DarkGray);
    let mut out = Vec::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let name = rest.split_once(" b/").map_or(rest, |(_, b)| b);
            out.push(Line::styled(
                format!("▸ {name}"),
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            ));
        } else if line.starts_with("index ") || line.starts_with("--- ") || line.starts_with("+++ ")
        {
        } else if line.starts_with("new file mode") {
            out.push(Line::styled("  (new file)", grey));
        } else if line.starts_with("deleted file mode") {
            out.push(Line::styled("  (deleted)", grey));
        } else {
            let color = match line.chars().next() {
                Some('+') => Color::Green,
                Some('-') => Color::Red,
                Some('@') => Color::Cyan,
                _ => Color::Gray,
            };
            out.push(Line::styled(line.to_string(), Style::default().fg(color)));
        }
    }
    out
}

/// The diff under an expanded patch card: `None` while it is read.
pub fn card_lines(diff: Option<&str>) -> Vec<Line<'static>> {
    let grey = Style::default().fg(Color::DarkGray);
    let Some(diff) = diff else {
        return vec![Line::styled("  │ reading the diff…", grey)];
    };
    let lines = diff_view_lines(diff);
    let hidden = lines.len().saturating_sub(CARD_LINES);
    let mut out: Vec<Line<'static>> = lines
        .into_iter()
        .take(CARD_LINES)
        .map(|line| {
            let mut spans = vec![Span::styled("  │ ", grey)];
            spans.extend(line.spans);
            Line::from(spans).style(line.style)
        })
        .collect();
    if hidden > 0 {
        out.push(Line::styled(
            format!("  … {hidden} more lines · /diff shows every change"),
            grey,
        ));
    }
    out.push(Line::default());
    out
}

/// The `/diff` overlay: nearly the whole screen, scrolled by `view.scroll`.
pub fn draw(view: &DiffView, frame: &mut Frame<'_>, area: Rect) {
    let rect = popup_area(
        frame,
        area,
        area.width.saturating_sub(4),
        area.height.saturating_sub(2),
    );
    let title = match &view.lines {
        None => " /diff · reading the snapshots… · Esc closes ".to_string(),
        Some(lines) => format!(
            " /diff · {} · lines {}-{} of {} · ↑↓ PgUp PgDn Home End · Esc closes ",
            match view.files {
                1 => "1 file".to_string(),
                n => format!("{n} files"),
            },
            (view.scroll + 1).min(lines.len()),
            (view.scroll + usize::from(rect.height.saturating_sub(2))).min(lines.len()),
            lines.len()
        ),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(title);
    let shown: Vec<Line<'static>> = view
        .lines
        .iter()
        .flatten()
        .skip(view.scroll)
        .take(usize::from(rect.height))
        .cloned()
        .collect();
    frame.render_widget(Paragraph::new(shown).block(block), rect);
}

#[cfg(test)]
mod tests {
    use insta::assert_snapshot;

    use super::*;
    use crate::message::{PartKind, PatchPart};
    use crate::tui::action::Action;
    use crate::tui::app::{App, Effect, Overlay};
    use crate::tui::fixtures::{app, assistant, part, render, user, with_parts};
    use crate::tui::undo::{diff_answered, diff_key, patch_diff_answered};
    use crate::tui::update::update;

    const DIFF: &str = "diff --git a/notes.txt b/notes.txt\nindex 1b2c3d4..5e6f7a8 100644\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-teh cat sat\n+the cat sat\n on the mat\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..587be6b\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n";

    fn buffer(app: &mut App, width: u16, height: u16) -> ratatui::buffer::Buffer {
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height))
                .expect("backend");
        terminal
            .draw(|frame| {
                crate::tui::view::prepare(app, frame.area());
                crate::tui::view::draw(app, frame);
            })
            .expect("draw");
        terminal.backend().buffer().clone()
    }

    /// The colour of the first cell of `needle` on screen.
    fn colour_of(buffer: &ratatui::buffer::Buffer, needle: &str) -> Color {
        for y in 0..buffer.area.height {
            let row: String = (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().chars().next().unwrap_or(' '))
                .collect();
            if let Some(at) = row.find(needle) {
                let x = row[..at].chars().count() as u16;
                return buffer[(x, y)].fg;
            }
        }
        panic!("{needle:?} is not on screen");
    }

    #[test]
    fn the_diff_overlay_names_each_file_colours_lines_and_scrolls() {
        let mut app = app(Vec::new());
        let effects = crate::tui::slash::run_slash(&mut app, "/diff");
        assert!(matches!(effects[..], [Effect::Diff]));
        assert!(render(&mut app, 80, 12).contains("reading the snapshots"));
        diff_answered(&mut app, Ok(DIFF.into()));
        let screen = render(&mut app, 80, 16);
        assert_snapshot!(screen);
        assert!(
            !screen.contains("index 1b2c3d4"),
            "git's headers are left out"
        );
        let cells = buffer(&mut app, 80, 16);
        assert_eq!(colour_of(&cells, "+the cat sat"), Color::Green);
        assert_eq!(colour_of(&cells, "-teh cat sat"), Color::Red);
        assert_eq!(colour_of(&cells, "@@ -1,2"), Color::Cyan);
        assert_eq!(colour_of(&cells, "▸ new.txt"), Color::Yellow);

        diff_key(&mut app, &Action::Down);
        diff_key(&mut app, &Action::End);
        let Some(Overlay::Diff(view)) = &app.overlay else {
            panic!("the overlay stays open while scrolling");
        };
        let lines = view.lines.as_ref().map_or(0, Vec::len);
        assert_eq!(view.scroll, lines - 1, "End stops at the last line");
        diff_key(&mut app, &Action::PageDown);
        assert!(matches!(&app.overlay, Some(Overlay::Diff(v)) if v.scroll == lines - 1));
        update(&mut app, Action::Escape);
        assert_eq!(app.overlay, None);
    }

    #[test]
    fn an_empty_or_failed_diff_closes_the_overlay_and_says_why() {
        let mut app = app(Vec::new());
        crate::tui::slash::run_slash(&mut app, "/diff");
        diff_answered(&mut app, Ok(String::new()));
        assert_eq!(app.overlay, None);
        assert_eq!(
            app.flash.as_deref(),
            Some("no files changed in this session")
        );
        crate::tui::slash::run_slash(&mut app, "/diff");
        diff_answered(
            &mut app,
            Err(crate::session::undo::Error::DiffWithoutSnapshots),
        );
        assert_eq!(app.overlay, None);
        assert!(
            app.flash
                .as_deref()
                .is_some_and(|f| f.contains("snapshots are off"))
        );
    }

    fn app_with_a_patch() -> App {
        let u = user("msg_00001a");
        let a = assistant("msg_00001b", &u.id);
        let patch = PartKind::Patch(PatchPart {
            hash: "before".into(),
            files: vec!["notes.txt".into()],
            after: Some("after".into()),
            ..PatchPart::default()
        });
        app(vec![with_parts(
            a.clone(),
            vec![part("prt_patch", &a, patch)],
        )])
    }

    #[test]
    fn ctrl_o_expands_a_patch_card_to_its_steps_diff_bounded() {
        let mut app = app_with_a_patch();
        let effects = update(&mut app, Action::ToggleDetails);
        assert!(
            matches!(&effects[..], [Effect::PatchDiffs(wanted)] if wanted.len() == 1 && wanted[0].0 == "prt_patch" && wanted[0].1.hash == "before"),
            "{effects:?}"
        );
        assert!(render(&mut app, 80, 10).contains("reading the diff"));
        let long: String = (0..200).map(|i| format!("+line {i}\n")).collect();
        patch_diff_answered(&mut app, "prt_patch", Ok(format!("{DIFF}{long}")));
        let screen = render(&mut app, 80, 14);
        assert_snapshot!(screen);
        let lines = card_lines(app.timeline.patch_diff("prt_patch"));
        assert_eq!(
            lines.len(),
            CARD_LINES + 2,
            "bounded, with a line saying so"
        );
        let more = lines[CARD_LINES].to_string();
        assert!(
            more.contains("more lines · /diff shows every change"),
            "{more}"
        );

        // Collapsed and expanded again: the diff is not asked for twice.
        assert!(update(&mut app, Action::ToggleDetails).is_empty());
        assert!(update(&mut app, Action::ToggleDetails).is_empty());
    }

    #[test]
    fn a_huge_step_diff_is_cut_at_a_line_without_splitting_a_character() {
        let mut app = app_with_a_patch();
        update(&mut app, Action::ToggleDetails);
        let huge = "+é€😀 wide characters\n".repeat(10_000);
        patch_diff_answered(&mut app, "prt_patch", Ok(huge));
        let kept = app.timeline.patch_diff("prt_patch").unwrap_or_default();
        assert!(kept.len() <= 64 * 1024 + 32, "{}", kept.len());
        assert!(kept.ends_with("… (cut at 64 KiB)"));
        assert!(
            kept.lines()
                .rev()
                .nth(1)
                .is_some_and(|l| l == "+é€😀 wide characters")
        );
    }
}
