//! Named key bindings for the commands users rebind (interrupt, quit, agent
//! switch, detail toggles, suspend), with the defaults and a parser for
//! config strings such as `ctrl+o` or `alt+enter`.
//!
//! Editing keys (arrows, emacs line editing, Enter) stay fixed in `keys`.
//! Nothing here reads config files: `main` passes overrides in.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyMapError {
    #[error("unknown key binding name {name:?}; known: {known}")]
    UnknownName { name: String, known: String },
    #[error("cannot read key {spec:?} for {name}; write it like ctrl+o, alt+enter, f2 or esc")]
    BadKey { name: String, spec: String },
}

/// One key with its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

impl KeyBinding {
    const fn new(code: KeyCode, modifiers: KeyModifiers) -> Self {
        Self { code, modifiers }
    }

    /// Parses `ctrl+o`, `alt+shift+f`, `esc`, `tab`, `f2`.
    pub fn parse(spec: &str) -> Option<Self> {
        let mut modifiers = KeyModifiers::NONE;
        let mut parts: Vec<&str> = spec.split('+').map(str::trim).collect();
        let key = parts.pop()?.to_ascii_lowercase();
        for modifier in parts {
            modifiers |= match modifier.to_ascii_lowercase().as_str() {
                "ctrl" | "control" => KeyModifiers::CONTROL,
                "alt" | "meta" => KeyModifiers::ALT,
                "shift" => KeyModifiers::SHIFT,
                _ => return None,
            };
        }
        let code = match key.as_str() {
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "enter" | "return" => KeyCode::Enter,
            "space" => KeyCode::Char(' '),
            f if f.starts_with('f') && f.len() > 1 => KeyCode::F(f[1..].parse().ok()?),
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next()?),
            _ => return None,
        };
        Some(Self { code, modifiers })
    }

    /// How hints name the key: `ctrl+g`, `f2`, `esc`.
    pub fn label(&self) -> String {
        let mut label = String::new();
        for (modifier, name) in [
            (KeyModifiers::CONTROL, "ctrl+"),
            (KeyModifiers::ALT, "alt+"),
            (KeyModifiers::SHIFT, "shift+"),
        ] {
            if self.modifiers.contains(modifier) {
                label.push_str(name);
            }
        }
        match self.code {
            KeyCode::Char(' ') => label.push_str("space"),
            KeyCode::Char(c) => label.push(c),
            KeyCode::F(n) => label.push_str(&format!("f{n}")),
            KeyCode::Esc => label.push_str("esc"),
            KeyCode::Tab => label.push_str("tab"),
            KeyCode::Enter => label.push_str("enter"),
            other => label.push_str(&format!("{other:?}").to_lowercase()),
        }
        label
    }

    pub fn matches(&self, key: &KeyEvent) -> bool {
        let code = match key.code {
            KeyCode::Char(c) => KeyCode::Char(c.to_ascii_lowercase()),
            other => other,
        };
        code == self.code && key.modifiers == self.modifiers
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    /// Stop the running turn (Esc also closes popups, whatever this is).
    pub interrupt: KeyBinding,
    /// Clear the input; pressed twice, quit.
    pub quit: KeyBinding,
    pub switch_agent: KeyBinding,
    pub toggle_details: KeyBinding,
    pub toggle_reasoning: KeyBinding,
    pub suspend: KeyBinding,
    /// Open a subtask's child session from its card, or go back.
    pub open_subtask: KeyBinding,
    /// Edit the draft in `$VISUAL`/`$EDITOR` (Ctrl+X: Ctrl+G, Claude
    /// Code's key, opens subtasks here).
    pub external_editor: KeyBinding,
}

impl Default for KeyMap {
    fn default() -> Self {
        Self {
            interrupt: KeyBinding::new(KeyCode::Esc, KeyModifiers::NONE),
            quit: KeyBinding::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            switch_agent: KeyBinding::new(KeyCode::Tab, KeyModifiers::NONE),
            toggle_details: KeyBinding::new(KeyCode::Char('o'), KeyModifiers::CONTROL),
            toggle_reasoning: KeyBinding::new(KeyCode::Char('t'), KeyModifiers::CONTROL),
            suspend: KeyBinding::new(KeyCode::Char('z'), KeyModifiers::CONTROL),
            open_subtask: KeyBinding::new(KeyCode::Char('g'), KeyModifiers::CONTROL),
            external_editor: KeyBinding::new(KeyCode::Char('x'), KeyModifiers::CONTROL),
        }
    }
}

const NAMES: &str = "interrupt, quit, switch_agent, toggle_details, toggle_reasoning, suspend, open_subtask, external_editor";

impl KeyMap {
    /// The defaults with `overrides` (binding name -> key spec) applied.
    pub fn with_overrides(overrides: &BTreeMap<String, String>) -> Result<Self, KeyMapError> {
        let mut map = Self::default();
        for (name, spec) in overrides {
            let binding = KeyBinding::parse(spec).ok_or_else(|| KeyMapError::BadKey {
                name: name.clone(),
                spec: spec.clone(),
            })?;
            let slot = match name.as_str() {
                "interrupt" => &mut map.interrupt,
                "quit" => &mut map.quit,
                "switch_agent" => &mut map.switch_agent,
                "toggle_details" => &mut map.toggle_details,
                "toggle_reasoning" => &mut map.toggle_reasoning,
                "suspend" => &mut map.suspend,
                "open_subtask" => &mut map.open_subtask,
                "external_editor" => &mut map.external_editor,
                _ => {
                    return Err(KeyMapError::UnknownName {
                        name: name.clone(),
                        known: NAMES.into(),
                    });
                }
            };
            *slot = binding;
        }
        Ok(map)
    }

    /// The action of a named binding, if `key` is one.
    pub fn named_action(&self, key: &KeyEvent) -> Option<Action> {
        let table = [
            (&self.interrupt, Action::Escape),
            (&self.quit, Action::CtrlC),
            (&self.switch_agent, Action::Tab),
            (&self.toggle_details, Action::ToggleDetails),
            (&self.toggle_reasoning, Action::ToggleReasoning),
            (&self.suspend, Action::Suspend),
            (&self.open_subtask, Action::OpenSubtask),
            (&self.external_editor, Action::ExternalEditor),
        ];
        table
            .into_iter()
            .find(|(binding, _)| binding.matches(key))
            .map(|(_, action)| action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_modifiers() {
        assert_eq!(
            KeyBinding::parse("ctrl+shift+o"),
            Some(KeyBinding::new(
                KeyCode::Char('o'),
                KeyModifiers::CONTROL | KeyModifiers::SHIFT
            ))
        );
        assert_eq!(
            KeyBinding::parse("f2"),
            Some(KeyBinding::new(KeyCode::F(2), KeyModifiers::NONE))
        );
        assert_eq!(KeyBinding::parse("hyper+x"), None);
    }

    #[test]
    fn labels_name_keys_as_config_spells_them() {
        for spec in ["ctrl+g", "f2", "alt+enter", "esc", "ctrl+shift+o"] {
            let binding = KeyBinding::parse(spec).expect("valid spec");
            assert_eq!(binding.label(), spec);
        }
        assert_eq!(KeyMap::default().open_subtask.label(), "ctrl+g");
    }

    #[test]
    fn overrides_replace_defaults_and_reject_unknown_names() {
        let overrides = BTreeMap::from([("toggle_details".to_string(), "ctrl+g".to_string())]);
        let map = KeyMap::with_overrides(&overrides).expect("valid override");
        let ctrl_g = KeyEvent::new(KeyCode::Char('g'), KeyModifiers::CONTROL);
        let ctrl_o = KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL);
        assert_eq!(map.named_action(&ctrl_g), Some(Action::ToggleDetails));
        assert_eq!(map.named_action(&ctrl_o), None);
        let bad = BTreeMap::from([("explode".to_string(), "ctrl+x".to_string())]);
        assert!(matches!(
            KeyMap::with_overrides(&bad),
            Err(KeyMapError::UnknownName { .. })
        ));
    }
}
