//! Input that arrived together: a paste into a terminal without bracketed
//! paste comes as many key events in one read, its line breaks as Enter.
//! Typed, an Enter is the last key of its read; pasted, more keys follow it
//! in the same read. So an Enter with keys after it is a line break, and
//! such a burst becomes one [`Action::Paste`] (one message, and the
//! composer folds a long one into `[pasted N lines]`).
//!
//! Pure: the runner collects the events ready at once and applies the
//! actions in order.

use crossterm::event::{Event as TermEvent, KeyCode, KeyModifiers};

use super::action::Action;
use super::keymap::KeyMap;
use super::keys;

/// The actions for `events`, which were read together.
pub fn actions(events: &[TermEvent], keymap: &KeyMap) -> Vec<Action> {
    let last_key = events
        .iter()
        .rposition(|event| matches!(event, TermEvent::Key(_)));
    let mut out: Vec<Action> = Vec::new();
    let mut multi_line = false;
    for (index, event) in events.iter().enumerate() {
        let Some(mut action) = keys::action_for(event, keymap) else {
            continue;
        };
        if action == Action::Enter && is_plain_enter(event) && Some(index) < last_key {
            action = Action::Newline;
            multi_line = true;
        }
        out.push(action);
    }
    if multi_line { as_pastes(out) } else { out }
}

fn is_plain_enter(event: &TermEvent) -> bool {
    matches!(event, TermEvent::Key(key) if key.code == KeyCode::Enter && key.modifiers == KeyModifiers::NONE)
}

/// Runs of typed characters and line breaks joined into one paste each.
fn as_pastes(actions: Vec<Action>) -> Vec<Action> {
    let mut out = Vec::new();
    let mut text = String::new();
    for action in actions {
        match action {
            Action::Insert(c) => text.push(c),
            Action::Newline => text.push('\n'),
            other => {
                if !text.is_empty() {
                    out.push(Action::Paste(std::mem::take(&mut text)));
                }
                out.push(other);
            }
        }
    }
    if !text.is_empty() {
        out.push(Action::Paste(text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEvent;

    /// The key events a terminal without bracketed paste sends for `text`.
    fn typed(text: &str) -> Vec<TermEvent> {
        text.chars()
            .map(|c| {
                let code = match c {
                    '\r' => KeyCode::Enter,
                    c => KeyCode::Char(c),
                };
                TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
            })
            .collect()
    }

    #[test]
    fn a_pasted_block_is_one_paste_and_a_typed_enter_still_sends() {
        let keymap = KeyMap::default();
        assert_eq!(
            actions(&typed("fn a() {\r  b();\r}"), &keymap),
            [Action::Paste("fn a() {\n  b();\n}".into())]
        );
        // Enter last in its read was typed: it sends.
        assert_eq!(
            actions(&typed("hi\r"), &keymap),
            [Action::Insert('h'), Action::Insert('i'), Action::Enter]
        );
        assert_eq!(
            actions(&typed("one\rtwo\r"), &keymap),
            [Action::Paste("one\ntwo".into()), Action::Enter]
        );
        assert_eq!(actions(&typed("\r"), &keymap), [Action::Enter]);
    }

    /// The App sends a pasted block as one message: the runner's burst, not
    /// the composer, decides that an Enter was a line break.
    #[test]
    fn a_burst_of_pasted_lines_sends_one_message() {
        let mut app = crate::tui::fixtures::app(Vec::new());
        let mut effects = Vec::new();
        for action in actions(&typed("first line\rsecond line\rthird"), &KeyMap::default()) {
            effects.extend(crate::tui::update::update(&mut app, action));
        }
        assert!(
            effects.is_empty(),
            "nothing sent while pasting: {effects:?}"
        );
        assert_eq!(app.composer.text(), "first line\nsecond line\nthird");
        // The user's own Enter, in a read of its own, sends it whole.
        for action in actions(&typed("\r"), &KeyMap::default()) {
            effects.extend(crate::tui::update::update(&mut app, action));
        }
        let sent: Vec<String> = effects
            .iter()
            .map(|effect| match effect {
                crate::tui::app::Effect::Send(crate::session::command::Command::Prompt {
                    text,
                    ..
                }) => text.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(sent, ["first line\nsecond line\nthird"]);
    }
}
