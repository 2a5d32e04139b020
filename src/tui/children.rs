//! Child sessions (subagents started by the `task` tool) as the parent's TUI
//! follows them: a small summary per child built from the child's bus
//! events (current action, tool count, tokens, a pending permission ask),
//! never the child's transcript.
//!
//! Bounded: at most [`MAX_CHILDREN`] children are followed (the oldest
//! forgotten first), and per child only counters and one line of text.

use std::collections::{HashSet, VecDeque};

use crate::bus::Event;
use serde_json::Value;

use crate::message::{PartKind, ToolPart, ToolState};

use super::view::tool_card::key_argument;

/// Children followed at once; an older one's card falls back to what its
/// tool part says.
pub const MAX_CHILDREN: usize = 32;
/// Tool call ids remembered per child to count each call once.
const MAX_TOOL_IDS: usize = 4096;
/// Characters of the current action kept.
const ACTION_CHARS: usize = 200;

/// What the parent shows of one child while it works.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildProgress {
    pub session_id: String,
    /// The child's agent, from its assistant messages.
    pub agent: Option<String>,
    /// The tool the child is running (name and key argument or title);
    /// `None` while it thinks or writes.
    pub action: Option<String>,
    /// Tool calls the child has made so far.
    pub tools: usize,
    /// The child's context as of its last step (what it has read so far).
    pub tokens: u64,
    /// A permission ask of the child's is waiting for the user.
    pub awaiting_permission: bool,
    /// The call id of the tool currently shown as `action`.
    action_part: Option<String>,
    tool_ids: HashSet<String>,
}

/// Every child followed, newest last.
#[derive(Debug, Default)]
pub struct Children {
    children: VecDeque<ChildProgress>,
    /// (task call id, child session id) seen on the parent's running task
    /// parts: a failed or interrupted call's part no longer names its child.
    calls: VecDeque<(String, String)>,
}

impl Children {
    /// Knows the children that `history`'s running task parts name.
    pub fn noting(history: &[crate::message::MessageWithParts]) -> Self {
        let mut children = Self::default();
        for part in history.iter().flat_map(|m| m.parts.iter()) {
            children.note_task(part);
        }
        children
    }

    /// Remembers which child a running `task` part of the parent names.
    pub fn note_task(&mut self, part: &crate::message::Part) {
        let PartKind::Tool(tool) = &part.kind else {
            return;
        };
        let Some(session_id) = child_session_id(tool) else {
            return;
        };
        if self.session_for_call(&tool.call_id).is_some() {
            return;
        }
        if self.calls.len() >= MAX_CHILDREN {
            self.calls.pop_front();
        }
        self.calls
            .push_back((tool.call_id.clone(), session_id.to_string()));
    }

    /// The child session a `task` call started, as its part said while it ran.
    pub fn session_for_call(&self, call_id: &str) -> Option<&str> {
        self.calls
            .iter()
            .find(|(call, _)| call == call_id)
            .map(|(_, session)| session.as_str())
    }

    /// The child a `task` part names, or named while it ran.
    pub fn child_of<'a>(&'a self, tool: &'a crate::message::ToolPart) -> Option<&'a str> {
        child_session_id(tool).or_else(|| self.session_for_call(&tool.call_id))
    }

    pub fn get(&self, session_id: &str) -> Option<&ChildProgress> {
        self.children.iter().find(|c| c.session_id == session_id)
    }

    fn entry(&mut self, session_id: &str) -> &mut ChildProgress {
        let at = match self
            .children
            .iter()
            .position(|c| c.session_id == session_id)
        {
            Some(at) => at,
            None => {
                if self.children.len() >= MAX_CHILDREN {
                    self.children.pop_front();
                }
                self.children.push_back(ChildProgress {
                    session_id: session_id.to_string(),
                    ..ChildProgress::default()
                });
                self.children.len() - 1
            }
        };
        &mut self.children[at]
    }

    /// Folds a child's stored history into its summary (opening a child
    /// that ran before this TUI started, or whose events were missed).
    pub fn fold_history(&mut self, history: &[crate::message::MessageWithParts]) {
        for message in history {
            let event = Event::MessageUpdated {
                message: std::sync::Arc::new(message.message.clone()),
            };
            self.apply(&event);
            for part in &message.parts {
                self.apply(&Event::PartUpdated {
                    part: std::sync::Arc::new(part.clone()),
                });
            }
        }
    }

    /// Folds one event of another session into its summary. Returns whether
    /// anything shown changed.
    pub fn apply(&mut self, event: &Event) -> bool {
        match event {
            Event::MessageUpdated { message } => {
                let Some(assistant) = message.as_assistant() else {
                    return false;
                };
                let child = self.entry(&message.session_id);
                child.agent = Some(assistant.agent.clone());
                let tokens = assistant.tokens.context_count();
                if tokens > 0 {
                    child.tokens = tokens;
                }
                true
            }
            Event::PartUpdated { part } => {
                let PartKind::Tool(tool) = &part.kind else {
                    return false;
                };
                let child = self.entry(&part.session_id);
                if child.tool_ids.len() < MAX_TOOL_IDS {
                    child.tool_ids.insert(tool.call_id.clone());
                    child.tools = child.tool_ids.len();
                }
                match &tool.state {
                    ToolState::Pending { .. } | ToolState::Running { .. } => {
                        child.action = Some(action_of(&tool.tool, &tool.state));
                        child.action_part = Some(tool.call_id.clone());
                    }
                    _ if child.action_part.as_deref() == Some(tool.call_id.as_str()) => {
                        child.action = None;
                        child.action_part = None;
                    }
                    _ => {}
                }
                true
            }
            Event::PermissionAsked { session_id, .. } => {
                self.entry(session_id).awaiting_permission = true;
                true
            }
            Event::PermissionReplied { session_id, .. } => {
                self.entry(session_id).awaiting_permission = false;
                true
            }
            _ => false,
        }
    }
}

/// `bash cargo test`, or the title the tool reported.
fn action_of(tool: &str, state: &ToolState) -> String {
    let detail = match state {
        ToolState::Running {
            title: Some(title), ..
        } if !title.is_empty() => title.clone(),
        state => key_argument(tool, state.input()),
    };
    let action = if detail.is_empty() {
        tool.to_string()
    } else {
        format!("{tool} {detail}")
    };
    action.chars().take(ACTION_CHARS).collect()
}

// What a `task` part says of its child, read by the tracking here, the
// child view and the subtask card (which used to own these and so made
// this file and the card import each other).

/// The child session a `task` part names (while running and once done).
pub fn child_session_id(tool: &ToolPart) -> Option<&str> {
    metadata(&tool.state)?.get("session_id")?.as_str()
}

/// The subagent's name: as the part's metadata says, else as the call asked.
pub fn agent_name(tool: &ToolPart) -> String {
    metadata(&tool.state)
        .and_then(|m| m.get("agent"))
        .or_else(|| tool.state.input().get("subagent_type"))
        .and_then(Value::as_str)
        .unwrap_or("subagent")
        .to_string()
}

/// The task's short description from the call.
pub fn description(tool: &ToolPart) -> String {
    tool.state
        .input()
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn metadata(state: &ToolState) -> Option<&Value> {
    match state {
        ToolState::Running { metadata, .. } | ToolState::Error { metadata, .. } => {
            metadata.as_ref()
        }
        ToolState::Completed { metadata, .. } => Some(metadata),
        ToolState::Pending { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::message::{Part, ToolPart, ToolTime};
    use serde_json::json;

    fn tool_event(session: &str, call: &str, state: ToolState) -> Event {
        Event::PartUpdated {
            part: Arc::new(Part {
                id: format!("prt_{call}"),
                message_id: "msg_1".into(),
                session_id: session.into(),
                kind: PartKind::Tool(ToolPart {
                    call_id: call.into(),
                    tool: "bash".into(),
                    state,
                }),
                tokens: None,
            }),
        }
    }

    fn running(command: &str) -> ToolState {
        ToolState::Running {
            input: json!({ "command": command }),
            title: None,
            metadata: None,
            time: ToolTime::default(),
        }
    }

    fn done() -> ToolState {
        ToolState::Completed {
            input: json!({}),
            output: String::new(),
            title: String::new(),
            metadata: json!({}),
            time: ToolTime::default(),
            attachments: Vec::new(),
        }
    }

    #[test]
    fn a_running_tool_is_the_action_and_each_call_counts_once() {
        let mut children = Children::default();
        children.apply(&tool_event("ses_c", "c1", running("ls -la")));
        children.apply(&tool_event("ses_c", "c1", running("ls -la")));
        let child = children.get("ses_c").expect("followed");
        assert_eq!(child.action.as_deref(), Some("bash ls -la"));
        assert_eq!(child.tools, 1);
        children.apply(&tool_event("ses_c", "c2", running("make")));
        children.apply(&tool_event("ses_c", "c1", done()));
        let child = children.get("ses_c").expect("followed");
        assert_eq!(child.action.as_deref(), Some("bash make"), "c2 still runs");
        children.apply(&tool_event("ses_c", "c2", done()));
        let child = children.get("ses_c").expect("followed");
        assert_eq!((child.action.as_deref(), child.tools), (None, 2));
    }

    #[test]
    fn only_the_newest_children_are_followed() {
        let mut children = Children::default();
        for n in 0..MAX_CHILDREN + 5 {
            children.apply(&tool_event(&format!("ses_{n}"), "c", running("x")));
        }
        assert!(children.get("ses_0").is_none());
        assert!(children.get(&format!("ses_{}", MAX_CHILDREN + 4)).is_some());
        assert_eq!(children.children.len(), MAX_CHILDREN);
    }
}
