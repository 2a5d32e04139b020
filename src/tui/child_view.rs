//! Opening a child session (a subagent's) from its subtask card and going
//! back: the transcript switches to the child, read from the store and kept
//! live from its events, while the parent's transcript, scroll position and
//! measured rows wait aside, still updated from the parent's events, and
//! come back as they were.
//!
//! The child is shown read-only: the composer still talks to the parent's
//! session, so a message typed there is kept, not sent to the wrong place.

use std::mem;

use crate::bus::Event;
use crate::message::{MessageWithParts, PartKind};

use super::app::{App, Effect, Overlay, Picker, PickerKind};
use super::children::{agent_name, description};
use super::scroll::Scroll;
use super::timeline::Timeline;
use super::viewport::Viewport;

/// The child being shown and the parent's view set aside.
#[derive(Debug)]
pub struct ChildView {
    pub session_id: String,
    /// `explore (subtask): find the marker`
    pub label: String,
    parent_timeline: Timeline,
    parent_scroll: Scroll,
    parent_viewport: Viewport,
    parent_loading_older: bool,
    /// The bus lagged while away: the parent's transcript is reread on return.
    parent_stale: bool,
}

/// A subtask card the user can open: (child session id, label, running).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenableChild {
    pub session_id: String,
    pub label: String,
    pub running: bool,
}

impl App {
    /// The parent session's transcript, wherever it is right now.
    pub fn own_timeline(&mut self) -> &mut Timeline {
        match &mut self.child_view {
            Some(view) => &mut view.parent_timeline,
            None => &mut self.timeline,
        }
    }

    fn own_timeline_ref(&self) -> &Timeline {
        match &self.child_view {
            Some(view) => &view.parent_timeline,
            None => &self.timeline,
        }
    }

    /// The subtask cards of the parent's transcript that name a child,
    /// newest first.
    pub fn openable_children(&self) -> Vec<OpenableChild> {
        let mut found: Vec<OpenableChild> = self
            .own_timeline_ref()
            .messages()
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|part| match &part.kind {
                PartKind::Tool(tool) if tool.tool == crate::session::agent::TASK_TOOL => {
                    let session_id = self.children.child_of(tool)?.to_string();
                    let label = format!("{} (subtask): {}", agent_name(tool), description(tool));
                    Some(OpenableChild {
                        session_id,
                        label,
                        running: !tool.state.is_finished(),
                    })
                }
                _ => None,
            })
            .collect();
        found.reverse();
        found
    }

    /// `explore (subtask)` for a child's session id, as its card names it.
    pub fn child_label(&self, session_id: &str) -> String {
        if let Some(child) = self
            .openable_children()
            .into_iter()
            .find(|c| c.session_id == session_id)
        {
            return child.label;
        }
        let agent = self
            .children
            .get(session_id)
            .and_then(|c| c.agent.clone())
            .unwrap_or_else(|| "subagent".to_string());
        format!("{agent} (subtask)")
    }

    /// The open-child key (or `/subtasks`): leaves a child being shown;
    /// otherwise opens the only child, or lists them when there are several.
    pub fn open_subtask_key(&mut self) -> Vec<Effect> {
        if self.child_view.is_some() {
            return self.leave_child();
        }
        self.pick_child()
    }

    /// Opens the only child, or a picker of them all (running first).
    pub fn pick_child(&mut self) -> Vec<Effect> {
        let mut children = self.openable_children();
        match children.len() {
            0 => {
                self.flash = Some("no subtask to open in this session".into());
                Vec::new()
            }
            1 => self.open_child(&children[0].session_id),
            _ => {
                children.sort_by_key(|c| !c.running);
                let entries = children
                    .into_iter()
                    .map(|c| {
                        let state = if c.running { "running" } else { "ended" };
                        (c.session_id, format!("{} · {state}", c.label))
                    })
                    .collect();
                self.overlay = Some(Overlay::Picker(Picker {
                    kind: PickerKind::Subtask,
                    title: "open a subtask".into(),
                    entries,
                    selected: 0,
                    filter: String::new(),
                }));
                Vec::new()
            }
        }
    }

    /// Shows the child `session_id`; its history is read from the store
    /// ([`Effect::LoadChild`]) and its events keep it current.
    pub fn open_child(&mut self, session_id: &str) -> Vec<Effect> {
        if self.child_view.is_some() {
            return Vec::new();
        }
        let label = self.child_label(session_id);
        self.child_view = Some(ChildView {
            session_id: session_id.to_string(),
            label,
            parent_timeline: mem::take(&mut self.timeline),
            parent_scroll: mem::take(&mut self.scroll),
            parent_viewport: mem::take(&mut self.viewport),
            parent_loading_older: mem::replace(&mut self.loading_older, true),
            parent_stale: false,
        });
        self.flash = None;
        self.dirty = true;
        vec![Effect::LoadChild(session_id.to_string())]
    }

    /// The child's stored history arrived.
    pub fn child_loaded(&mut self, session_id: &str, history: Vec<MessageWithParts>) {
        if self.child_view.as_ref().map(|v| v.session_id.as_str()) != Some(session_id) {
            return;
        }
        let has_older = history.len() >= super::HISTORY_PAGE;
        // Its card gets the figures of a child that ran before this TUI.
        self.children.fold_history(&history);
        self.timeline.reset(history, has_older);
        self.loading_older = false;
        self.dirty = true;
    }

    /// Back to the parent, at the scroll position it was left at.
    pub fn leave_child(&mut self) -> Vec<Effect> {
        let Some(view) = self.child_view.take() else {
            return Vec::new();
        };
        self.timeline = view.parent_timeline;
        self.scroll = view.parent_scroll;
        self.viewport = view.parent_viewport;
        self.loading_older = view.parent_loading_older;
        self.timeline.bump_all();
        self.flash = None;
        self.dirty = true;
        if view.parent_stale {
            return vec![Effect::Reload];
        }
        Vec::new()
    }

    /// Whether a page read from the store (`Reload`, `LoadOlder`) is of the
    /// session shown now: the user may have opened or left a child while it
    /// was read. A page of the parent that arrives while a child is shown
    /// marks the parent for a reread on return instead.
    pub fn page_is_shown(&mut self, page: &[MessageWithParts]) -> bool {
        let Some(first) = page.first() else {
            return true;
        };
        let shown = self.shown_child().unwrap_or(&self.session.id);
        if first.message.session_id == shown {
            return true;
        }
        if first.message.session_id == self.session.id {
            self.mark_parent_stale();
        }
        false
    }

    /// The id of the child shown, if any.
    pub fn shown_child(&self) -> Option<&str> {
        self.child_view.as_ref().map(|v| v.session_id.as_str())
    }

    /// The bus lagged while a child is shown: both views missed events.
    pub fn mark_parent_stale(&mut self) {
        if let Some(view) = &mut self.child_view {
            view.parent_stale = true;
        }
    }

    /// An event of another session: a child's summary for its card, and the
    /// child's transcript when it is the one shown. Returns whether the
    /// screen changed.
    pub fn follow_child(&mut self, event: &Event) -> bool {
        let mut changed = self.children.apply(event);
        if self.shown_child() != Some(event.session_id()) {
            return changed;
        }
        changed = true;
        match event {
            Event::MessageUpdated { message } => self.timeline.upsert_message(message),
            Event::PartUpdated { part } => self.timeline.upsert_part(part),
            Event::PartDelta {
                message_id,
                part_id,
                field,
                delta,
                ..
            } => self
                .timeline
                .apply_delta(message_id, part_id, *field, delta),
            Event::Error { message, .. } => self.timeline.push_note(true, message.clone()),
            Event::Notice { message, .. } => self.timeline.push_note(false, message.clone()),
            _ => changed = false,
        }
        changed
    }
}
