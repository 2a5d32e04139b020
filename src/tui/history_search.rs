//! Ctrl+R: a reverse search of the prompts typed earlier in this project
//! (kept across sessions and restarts), as a shell's. While it is open the
//! composer shows the newest match; typing narrows the search, Ctrl+R steps
//! to an older match, Enter keeps the match in the composer to edit or send,
//! Esc puts back what was there.

use super::action::Action;
use super::app::App;

/// The search while it is open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistorySearch {
    pub query: String,
    /// The history position of the match shown; `None` when nothing matches.
    pub at: Option<usize>,
    /// The composer's text before the search, put back by Esc.
    draft: String,
}

/// Ctrl+R with the search closed: opens it on the composer's text.
pub fn open(app: &mut App) {
    let draft = app.composer.text().to_string();
    app.history_search = Some(HistorySearch {
        query: String::new(),
        at: None,
        draft,
    });
    find(app, None);
}

/// A key while the search is open.
pub fn key(app: &mut App, action: Action) {
    let Some(search) = app.history_search.as_mut() else {
        return;
    };
    match action {
        Action::Insert(c) => {
            search.query.push(c);
            find(app, None);
        }
        Action::Paste(text) => {
            search.query.push_str(&text);
            find(app, None);
        }
        Action::Backspace => {
            search.query.pop();
            find(app, None);
        }
        Action::SearchHistory | Action::Up => {
            let before = search.at;
            if before.is_some() {
                find(app, before);
            }
        }
        Action::Enter | Action::Tab | Action::Right | Action::LineEnd => {
            app.history_search = None;
        }
        Action::Escape | Action::CtrlC => {
            let draft = search.draft.clone();
            app.history_search = None;
            app.composer.clear();
            app.composer.set_text(&draft);
        }
        _ => {}
    }
}

/// Shows the newest match older than `before` (or the newest of all); when
/// none is older, the current one stays.
fn find(app: &mut App, before: Option<usize>) {
    let Some(search) = app.history_search.as_mut() else {
        return;
    };
    match app.composer.search_history(&search.query, before) {
        Some((at, text)) => {
            let text = text.to_string();
            search.at = Some(at);
            app.composer.clear();
            app.composer.set_text(&text);
        }
        None if before.is_none() => search.at = None,
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::app;
    use crate::tui::update::update;

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            update(app, Action::Insert(c));
        }
    }

    #[test]
    fn ctrl_r_finds_older_prompts_and_esc_puts_the_draft_back() {
        let mut app = app(Vec::new());
        app.composer.set_history(vec![
            "run the tests".into(),
            "fix the parser".into(),
            "run clippy".into(),
        ]);
        typed(&mut app, "draft");
        update(&mut app, Action::SearchHistory);
        typed(&mut app, "run");
        assert_eq!(app.composer.text(), "run clippy");
        update(&mut app, Action::SearchHistory);
        assert_eq!(app.composer.text(), "run the tests");
        update(&mut app, Action::SearchHistory);
        assert_eq!(
            app.composer.text(),
            "run the tests",
            "no older match: it stays"
        );
        update(&mut app, Action::Escape);
        assert_eq!(app.composer.text(), "draft");
        assert!(app.history_search.is_none());
    }

    #[test]
    fn enter_keeps_the_match_to_edit_and_sends_nothing() {
        let mut app = app(Vec::new());
        app.composer.set_history(vec!["fix the PARSER bug".into()]);
        update(&mut app, Action::SearchHistory);
        typed(&mut app, "parser");
        let effects = update(&mut app, Action::Enter);
        assert!(effects.is_empty(), "{effects:?}");
        assert_eq!(app.composer.text(), "fix the PARSER bug");
        assert!(app.history_search.is_none());
        typed(&mut app, "!");
        assert_eq!(app.composer.text(), "fix the PARSER bug!");
    }

    #[test]
    fn no_match_says_so_and_keeps_the_query() {
        let mut app = app(Vec::new());
        app.composer.set_history(vec!["alpha".into()]);
        update(&mut app, Action::SearchHistory);
        typed(&mut app, "zzz");
        let search = app.history_search.clone().expect("open");
        assert_eq!((search.query.as_str(), search.at), ("zzz", None));
    }
}
