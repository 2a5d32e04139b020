//! Terminal input (keys, paste, mouse) to [`Action`]s: the rebindable named
//! bindings of a [`KeyMap`] first, then the fixed editing table.
//!
//! No state: the same key always means the same action, and `update`
//! interprets it for whichever layer has focus. Only key presses and repeats
//! count (releases are ignored, as kitty-protocol terminals send them).

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};

use super::action::Action;
use super::keymap::KeyMap;

/// Lines one mouse-wheel notch scrolls.
const WHEEL_LINES: i32 = 3;

pub fn action_for(event: &TermEvent, keymap: &KeyMap) -> Option<Action> {
    match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
            keymap.named_action(key).or_else(|| action_for_key(key))
        }
        TermEvent::Paste(text) => Some(Action::Paste(text.clone())),
        TermEvent::Mouse(mouse) => match mouse.kind {
            MouseEventKind::ScrollUp => Some(Action::ScrollLines(-WHEEL_LINES)),
            MouseEventKind::ScrollDown => Some(Action::ScrollLines(WHEEL_LINES)),
            _ => None,
        },
        TermEvent::Resize(..) => Some(Action::Resize),
        TermEvent::FocusGained => Some(Action::Focus(true)),
        TermEvent::FocusLost => Some(Action::Focus(false)),
        _ => None,
    }
}

/// The fixed table: editing, sending, scrolling. Esc always means "close or
/// stop" here, so popups close even when `interrupt` is rebound.
pub fn action_for_key(key: &KeyEvent) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    let action = match key.code {
        KeyCode::Enter if shift || alt || ctrl => Action::Newline,
        KeyCode::Enter => Action::Enter,
        KeyCode::Char('j') if ctrl => Action::Newline,
        KeyCode::Char('r') if ctrl => Action::SearchHistory,
        KeyCode::Char('a') if ctrl => Action::LineStart,
        KeyCode::Char('e') if ctrl => Action::LineEnd,
        KeyCode::Char('k') if ctrl => Action::KillToEnd,
        KeyCode::Char('u') if ctrl => Action::KillToStart,
        KeyCode::Char('w') if ctrl => Action::DeleteWordBack,
        KeyCode::Char('b') if ctrl => Action::Left,
        KeyCode::Char('f') if ctrl => Action::Right,
        KeyCode::Char('d') if ctrl => Action::Delete,
        KeyCode::Char('h') if ctrl => Action::Backspace,
        KeyCode::Char('b') if alt => Action::WordBack,
        KeyCode::Char('f') if alt => Action::WordForward,
        KeyCode::Char(_) if ctrl || alt => return None,
        KeyCode::Char(c) => Action::Insert(c),
        KeyCode::Backspace if alt || ctrl => Action::DeleteWordBack,
        KeyCode::Backspace => Action::Backspace,
        KeyCode::Delete => Action::Delete,
        KeyCode::Left if alt || ctrl => Action::WordBack,
        KeyCode::Right if alt || ctrl => Action::WordForward,
        KeyCode::Left => Action::Left,
        KeyCode::Right => Action::Right,
        // Line by line, like the wheel: the transcript, or a dialog's preview.
        KeyCode::Up if shift || alt => Action::ScrollLines(-1),
        KeyCode::Down if shift || alt => Action::ScrollLines(1),
        KeyCode::Up => Action::Up,
        KeyCode::Down => Action::Down,
        KeyCode::Esc => Action::Escape,
        KeyCode::BackTab => Action::CycleMode,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home if ctrl => Action::ScrollTop,
        KeyCode::End if ctrl => Action::ScrollBottom,
        KeyCode::Home => Action::Home,
        KeyCode::End => Action::End,
        _ => return None,
    };
    Some(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Option<Action> {
        action_for_key(&KeyEvent::new(code, modifiers))
    }

    #[test]
    fn newline_has_several_spellings_and_plain_enter_sends() {
        assert_eq!(key(KeyCode::Enter, KeyModifiers::NONE), Some(Action::Enter));
        assert_eq!(
            key(KeyCode::Enter, KeyModifiers::SHIFT),
            Some(Action::Newline)
        );
        assert_eq!(
            key(KeyCode::Enter, KeyModifiers::ALT),
            Some(Action::Newline)
        );
        assert_eq!(
            key(KeyCode::Char('j'), KeyModifiers::CONTROL),
            Some(Action::Newline)
        );
    }

    #[test]
    fn named_bindings_come_from_the_keymap() {
        let ctrl_o = TermEvent::Key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
        assert_eq!(
            action_for(&ctrl_o, &KeyMap::default()),
            Some(Action::ToggleDetails)
        );
        let tab = TermEvent::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        assert_eq!(action_for(&tab, &KeyMap::default()), Some(Action::Tab));
    }

    #[test]
    fn key_releases_are_ignored() {
        let mut release = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        assert_eq!(
            action_for(&TermEvent::Key(release), &KeyMap::default()),
            None
        );
    }
}
