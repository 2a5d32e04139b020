//! `/undo`, `/redo` and `/diff` in the terminal UI: what the commands ask of
//! the session, what their answers do to the screen, and the keys of the
//! dialog shown when an undo would overwrite files edited by hand.
//!
//! The session serves the commands (`Command::Undo`/`Redo`/`Diff`) only
//! while its loop is idle; the undone turn's messages leave the session, so
//! a reload of the transcript drops them from view, and the turn's prompt
//! goes back into the composer to be edited and sent again.

use ratatui::text::Line;

use crate::session::undo::{Error, Outcome};

use super::action::Action;
use super::app::{App, Effect, Overlay};
use super::view::diff::diff_view_lines;

/// A patch card's diff is kept up to this many bytes (cut at a line).
const PATCH_DIFF_BYTES: usize = 64 * 1024;

/// The `/diff` overlay's state.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffView {
    /// The coloured diff; `None` while the session reads it.
    pub lines: Option<Vec<Line<'static>>>,
    /// Files in the diff, for the title.
    pub files: usize,
    /// The first line shown.
    pub scroll: usize,
}

/// Shown instead of sending `/undo` or `/redo` while a turn runs.
pub const BUSY: &str = "wait for the turn to finish or Esc";

/// `/undo [--force]` and `/redo` typed in the composer.
pub fn slash(app: &mut App, name: &str, args: &str) -> Vec<Effect> {
    let effect = match (name, args) {
        ("/undo", "") => Effect::Undo { force: false },
        ("/undo", "--force") => Effect::Undo { force: true },
        ("/redo", "") => Effect::Redo { force: false },
        ("/redo", "--force") => Effect::Redo { force: true },
        _ => {
            app.flash = Some(format!(
                "usage: /undo [--force] or /redo [--force] (not {name} {args})"
            ));
            return Vec::new();
        }
    };
    if app.is_busy() {
        app.flash = Some(BUSY.into());
        return Vec::new();
    }
    app.flash = Some(format!("{}…", &name[1..]));
    vec![effect]
}

/// The session's answer to an undo (`redo == false`) or a redo.
pub fn answered(app: &mut App, redo: bool, result: Result<Outcome, Error>) -> Vec<Effect> {
    app.dirty = true;
    let done = match result {
        Ok(done) => done,
        Err(Error::Conflicts(files)) if !redo => {
            app.flash = None;
            app.overlay = Some(Overlay::UndoConflict(files));
            return Vec::new();
        }
        Err(error) => {
            app.flash = Some(format!("{}: {error}", if redo { "/redo" } else { "/undo" }));
            return Vec::new();
        }
    };
    let mut files = match done.files.len() {
        0 => "no files changed".to_owned(),
        _ => format!("restored {}", done.files.join(", ")),
    };
    if !done.not_restored.is_empty() {
        files.push_str(&format!("; not restored: {}", done.not_restored.join("; ")));
    }
    let mut flash = if redo {
        // The prompt put back by the undo is the turn now shown again.
        if app.composer.text().trim() == done.prompt.trim() {
            app.composer.clear();
        }
        format!("redid the last turn ({files})")
    } else {
        put_back(app, &done.prompt);
        format!("undid the last turn ({files}); prompt back in the composer")
    };
    if let Some(tokens) = done.compaction_removed {
        flash = format!(
            "{flash}; compaction removed: the model sees the full history again (about {tokens} tokens)"
        );
    }
    app.flash = Some(flash);
    app.scroll.follow();
    vec![Effect::Reload]
}

/// The undone prompt goes into the composer, before any draft typed since.
fn put_back(app: &mut App, prompt: &str) {
    if prompt.is_empty() {
        return;
    }
    let text = match app.composer.text() {
        "" => prompt.to_owned(),
        draft => format!("{prompt}\n{draft}"),
    };
    app.composer.set_text(&text);
}

/// Keys of the conflict dialog: `o` overwrites the files (undo again with
/// force), `k`, Esc or Enter keep them and undo nothing. Enter keeps, so
/// that no key pressed by habit overwrites someone's work.
pub fn conflict_key(app: &mut App, action: &Action) -> Vec<Effect> {
    match action {
        Action::Insert('o' | 'O') => {
            app.overlay = None;
            app.flash = Some("undo…".into());
            vec![Effect::Undo { force: true }]
        }
        Action::Insert('k' | 'K') | Action::Escape | Action::Enter => {
            app.overlay = None;
            app.flash = Some("nothing undone; your edits are kept".into());
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// `/diff` typed in the composer: opens the overlay, to be filled by the
/// session's answer.
pub fn open_diff(app: &mut App) -> Vec<Effect> {
    app.overlay = Some(Overlay::Diff(DiffView {
        lines: None,
        files: 0,
        scroll: 0,
    }));
    vec![Effect::Diff]
}

/// The session's answer to `/diff`.
pub fn diff_answered(app: &mut App, result: Result<String, Error>) {
    app.dirty = true;
    if !matches!(app.overlay, Some(Overlay::Diff(_))) {
        return; // closed while it was read
    }
    match result {
        Ok(diff) if diff.is_empty() => {
            app.overlay = None;
            app.flash = Some("no files changed in this session".into());
        }
        Ok(diff) => {
            app.overlay = Some(Overlay::Diff(DiffView {
                files: diff
                    .lines()
                    .filter(|l| l.starts_with("diff --git "))
                    .count(),
                lines: Some(diff_view_lines(&diff)),
                scroll: 0,
            }));
        }
        Err(error) => {
            app.overlay = None;
            app.flash = Some(format!("/diff: {error}"));
        }
    }
}

/// Keys of the `/diff` overlay: scrolling, and Esc, q or Enter to close.
pub fn diff_key(app: &mut App, action: &Action) {
    let page = usize::from(app.viewport.height.saturating_sub(4).max(1));
    let Some(Overlay::Diff(view)) = &mut app.overlay else {
        return;
    };
    let last = view.lines.as_ref().map_or(0, |l| l.len().saturating_sub(1));
    view.scroll = match action {
        Action::Escape | Action::Enter | Action::Insert('q') => {
            app.overlay = None;
            return;
        }
        Action::Up => view.scroll.saturating_sub(1),
        Action::Down => view.scroll + 1,
        Action::ScrollLines(n) => view.scroll.saturating_add_signed(*n as isize),
        Action::PageUp => view.scroll.saturating_sub(page),
        Action::PageDown => view.scroll + page,
        Action::Home | Action::ScrollTop => 0,
        Action::End | Action::ScrollBottom => last,
        _ => view.scroll,
    }
    .min(last);
}

/// While Ctrl+O expands details: the diffs of patch cards not read yet.
pub fn wanted_patch_diffs(app: &mut App) -> Vec<Effect> {
    if !app.expand_details {
        return Vec::new();
    }
    let wanted = app.timeline.patches_to_diff();
    if wanted.is_empty() {
        return Vec::new();
    }
    vec![Effect::PatchDiffs(wanted)]
}

/// A patch card's diff (or why there is none) arrived; kept bounded.
pub fn patch_diff_answered(app: &mut App, part_id: &str, result: Result<String, Error>) {
    let text = match result {
        Ok(diff) if diff.len() > PATCH_DIFF_BYTES => {
            let cut = diff.as_bytes()[..PATCH_DIFF_BYTES]
                .iter()
                .rposition(|b| *b == b'\n')
                .unwrap_or(0);
            format!("{}\n… (cut at 64 KiB)", &diff[..cut])
        }
        Ok(diff) if diff.is_empty() => "(no difference left: the files match again)".into(),
        Ok(diff) => diff,
        Err(error) => format!("(no diff: {error})"),
    };
    app.timeline.set_patch_diff(part_id, text);
    app.dirty = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::{Event, SessionStatus};
    use crate::tui::fixtures::{SESSION, app, exchange};
    use crate::tui::update::update;

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            update(app, Action::Insert(c));
        }
    }

    fn outcome(prompt: &str, files: &[&str]) -> Outcome {
        Outcome {
            prompt: prompt.into(),
            files: files.iter().map(|f| f.to_string()).collect(),
            compaction_removed: None,
            not_restored: Vec::new(),
            messages: 4,
        }
    }

    #[test]
    fn undo_and_redo_are_sent_only_while_idle() {
        let mut app = app(exchange(1));
        for (typed_text, expected) in [
            ("/undo", "Undo { force: false }"),
            ("/undo --force", "Undo { force: true }"),
            ("/redo", "Redo { force: false }"),
            ("/redo --force", "Redo { force: true }"),
        ] {
            typed(&mut app, typed_text);
            let effects = update(&mut app, Action::Enter);
            assert_eq!(
                format!("{effects:?}"),
                format!("[{expected}]"),
                "{typed_text}"
            );
        }
        typed(&mut app, "/undo please");
        assert!(update(&mut app, Action::Enter).is_empty());
        assert!(
            app.flash
                .as_deref()
                .is_some_and(|f| f.starts_with("usage:"))
        );

        app.apply_event(&Event::Status {
            session_id: SESSION.into(),
            status: SessionStatus::Busy,
        });
        for name in ["/undo", "/redo"] {
            typed(&mut app, name);
            assert!(update(&mut app, Action::Enter).is_empty(), "{name}");
            assert_eq!(app.flash.as_deref(), Some(BUSY));
        }
    }

    #[test]
    fn an_undo_puts_the_prompt_back_and_a_redo_takes_it_out_again() {
        let mut app = app(exchange(1));
        let effects = answered(
            &mut app,
            false,
            Ok(outcome("fix notes.txt", &["notes.txt"])),
        );
        assert!(matches!(effects[..], [Effect::Reload]));
        assert_eq!(app.composer.text(), "fix notes.txt");
        let flash = app.flash.clone().unwrap_or_default();
        assert!(flash.contains("restored notes.txt"), "{flash}");

        let effects = answered(&mut app, true, Ok(outcome("fix notes.txt", &["notes.txt"])));
        assert!(matches!(effects[..], [Effect::Reload]));
        assert_eq!(
            app.composer.text(),
            "",
            "the redone prompt is in the transcript again"
        );

        // A draft typed before the undo answer came back is kept, after the prompt.
        typed(&mut app, "and more");
        answered(&mut app, false, Ok(outcome("first", &[])));
        assert_eq!(app.composer.text(), "first\nand more");
        answered(&mut app, true, Ok(outcome("first", &[])));
        assert_eq!(
            app.composer.text(),
            "first\nand more",
            "an edited prompt stays"
        );
    }

    #[test]
    fn a_conflict_asks_and_only_o_overwrites() {
        let mut app = app(exchange(1));
        let conflict = || Err(Error::Conflicts(vec!["notes.txt".into()]));
        assert!(answered(&mut app, false, conflict()).is_empty());
        assert_eq!(
            app.overlay,
            Some(Overlay::UndoConflict(vec!["notes.txt".into()]))
        );
        for keep in [Action::Enter, Action::Escape, Action::Insert('k')] {
            app.overlay = Some(Overlay::UndoConflict(vec!["notes.txt".into()]));
            assert!(update(&mut app, keep.clone()).is_empty(), "{keep:?}");
            assert_eq!(app.overlay, None);
        }
        answered(&mut app, false, conflict());
        assert!(update(&mut app, Action::Insert('x')).is_empty());
        let effects = update(&mut app, Action::Insert('o'));
        assert!(matches!(effects[..], [Effect::Undo { force: true }]));
        assert_eq!(app.overlay, None);
    }

    #[test]
    fn a_refusal_is_said_and_changes_nothing() {
        let mut app = app(exchange(1));
        assert!(answered(&mut app, true, Err(Error::RedoAfterNewMessage)).is_empty());
        let flash = app.flash.clone().unwrap_or_default();
        assert!(flash.starts_with("/redo: cannot redo"), "{flash}");
        assert_eq!(app.composer.text(), "");
    }
}
