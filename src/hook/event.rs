//! The events cairn fires and one hook's command, with its matcher.

use std::time::Duration;

/// Claude Code's default per-hook timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The events cairn fires, by Claude Code's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SubagentStop,
    SessionStart,
    PreCompact,
    Notification,
}

impl Event {
    pub(super) const ALL: [Event; 8] = [
        Event::PreToolUse,
        Event::PostToolUse,
        Event::UserPromptSubmit,
        Event::Stop,
        Event::SubagentStop,
        Event::SessionStart,
        Event::PreCompact,
        Event::Notification,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::SubagentStop => "SubagentStop",
            Event::SessionStart => "SessionStart",
            Event::PreCompact => "PreCompact",
            Event::Notification => "Notification",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }
}

/// One command to run at an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub event: Event,
    /// None: every tool (or source, trigger).
    pub matcher: Option<String>,
    pub command: String,
    pub timeout: Duration,
}

impl Hook {
    /// Whether the hook applies to a call known by any of `subjects` (a
    /// tool's cairn name and Claude Code's, `mcp__server__tool`). As in
    /// Claude Code: absent, empty or `*` match all; a plain name or a
    /// `|`-list matches exactly; anything else is a regex over the name.
    pub(super) fn applies_to(&self, subjects: &[&str]) -> bool {
        let Some(matcher) = self.matcher.as_deref().map(str::trim) else {
            return true;
        };
        if matcher.is_empty() || matcher == "*" || subjects.is_empty() {
            return true;
        }
        let plain = matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '|');
        if plain {
            return matcher
                .split('|')
                .any(|name| subjects.iter().any(|subject| subject == &name));
        }
        regex::Regex::new(&format!("^(?:{matcher})$"))
            .is_ok_and(|regex| subjects.iter().any(|subject| regex.is_match(subject)))
    }
}
