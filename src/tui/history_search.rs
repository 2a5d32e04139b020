//! Ctrl+R: a reverse search of the prompts typed earlier in this project
//! (kept across sessions and restarts), as a shell's. While it is open the
//! composer shows the newest match; typing narrows the search, Ctrl+R steps
//! to an older match, Enter keeps the match in the composer to edit or send,
//! Esc puts back what was there.

use super::action::Action;
use super::composer::Composer;

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
pub fn open(open: &mut Option<HistorySearch>, composer: &mut Composer) {
    let search = open.insert(HistorySearch {
        query: String::new(),
        at: None,
        draft: composer.text().to_string(),
    });
    find(search, composer, None);
}

/// A key while the search is open; it closes the search on Enter or Esc.
pub fn key(open: &mut Option<HistorySearch>, composer: &mut Composer, action: Action) {
    let Some(search) = open.as_mut() else {
        return;
    };
    match action {
        Action::Insert(c) => {
            search.query.push(c);
            find(search, composer, None);
        }
        Action::Paste(text) => {
            search.query.push_str(&text);
            find(search, composer, None);
        }
        Action::Backspace => {
            search.query.pop();
            find(search, composer, None);
        }
        Action::SearchHistory | Action::Up => {
            let before = search.at;
            if before.is_some() {
                find(search, composer, before);
            }
        }
        Action::Enter | Action::Tab | Action::Right | Action::LineEnd => *open = None,
        Action::Escape | Action::CtrlC => {
            let draft = search.draft.clone();
            *open = None;
            composer.clear();
            composer.set_text(&draft);
        }
        _ => {}
    }
}

/// Shows the newest match older than `before` (or the newest of all); when
/// none is older, the current one stays.
fn find(search: &mut HistorySearch, composer: &mut Composer, before: Option<usize>) {
    match composer.search_history(&search.query, before) {
        Some((at, text)) => {
            let text = text.to_string();
            search.at = Some(at);
            composer.clear();
            composer.set_text(&text);
        }
        None if before.is_none() => search.at = None,
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn composer(history: &[&str], draft: &str) -> Composer {
        let mut composer = Composer::default();
        composer.set_history(history.iter().map(|s| s.to_string()).collect());
        composer.set_text(draft);
        composer
    }

    fn typed(open: &mut Option<HistorySearch>, composer: &mut Composer, text: &str) {
        for c in text.chars() {
            key(open, composer, Action::Insert(c));
        }
    }

    #[test]
    fn ctrl_r_finds_older_prompts_and_esc_puts_the_draft_back() {
        let mut composer = composer(&["run the tests", "fix the parser", "run clippy"], "draft");
        let mut search = None;
        open(&mut search, &mut composer);
        typed(&mut search, &mut composer, "run");
        assert_eq!(composer.text(), "run clippy");
        key(&mut search, &mut composer, Action::SearchHistory);
        assert_eq!(composer.text(), "run the tests");
        key(&mut search, &mut composer, Action::SearchHistory);
        assert_eq!(composer.text(), "run the tests", "no older match: it stays");
        key(&mut search, &mut composer, Action::Escape);
        assert_eq!(composer.text(), "draft");
        assert!(search.is_none());
    }

    #[test]
    fn enter_keeps_the_match_and_closes_the_search() {
        let mut composer = composer(&["fix the PARSER bug"], "");
        let mut search = None;
        open(&mut search, &mut composer);
        typed(&mut search, &mut composer, "parser");
        key(&mut search, &mut composer, Action::Enter);
        assert_eq!(composer.text(), "fix the PARSER bug");
        assert!(search.is_none());
    }

    #[test]
    fn no_match_says_so_and_keeps_the_query() {
        let mut composer = composer(&["alpha"], "");
        let mut search = None;
        open(&mut search, &mut composer);
        typed(&mut search, &mut composer, "zzz");
        let search = search.expect("open");
        assert_eq!((search.query.as_str(), search.at), ("zzz", None));
    }
}
