//! The conversation as the TUI knows it: messages and parts rebuilt from bus
//! events, plus inline notes (errors, notices).
//!
//! Owns applying events (`MessageUpdated`, `PartUpdated`, `PartDelta`, ...) and
//! a revision per block so the view can cache wrapped lines. Holds the newest
//! page of a long session and the older pages the user scrolled back to
//! ([`Timeline::prepend`]); never reads the store itself: pages and the
//! history reread after a lag ([`Timeline::reset`]) are handed to it.

use std::collections::HashMap;

use crate::bus::DeltaField;
use crate::message::{Message, MessageWithParts, Part, PartKind, ToolState};

/// Live output kept per running tool; older bytes are dropped.
const LIVE_OUTPUT_CAP: usize = 64 * 1024;

/// An inline line that is not a message: an error or a notice.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    pub is_error: bool,
    pub text: String,
    /// Shown after this message; `None` shows it before every message.
    pub after: Option<String>,
}

/// One drawable unit of the transcript, in display order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// The role line of a message (`you`, `build · model`).
    Header(usize),
    Part(usize, usize),
    Note(usize),
}

#[derive(Debug, Default)]
pub struct Timeline {
    messages: Vec<MessageWithParts>,
    index: HashMap<String, usize>,
    notes: Vec<Note>,
    blocks: Vec<Block>,
    blocks_stale: bool,
    revisions: HashMap<String, u64>,
    /// Every block's revision is at least this; raised to invalidate all.
    base_revision: u64,
    next_revision: u64,
    /// Parts that arrived before their message.
    orphans: HashMap<String, Vec<Part>>,
    live_output: HashMap<String, String>,
    /// Older messages than the first one held are in the store, not here.
    has_older: bool,
    /// Diffs of patch cards, read when Ctrl+O expands them: `None` while
    /// asked for. Kept across reloads: a step's snapshots never change.
    patch_diffs: HashMap<String, Option<String>>,
}

impl Timeline {
    pub fn new(history: Vec<MessageWithParts>) -> Self {
        Self::paged(history, false)
    }

    /// The newest messages of a session; `has_older` when the store holds
    /// older ones, loaded later through [`Timeline::prepend`].
    pub fn paged(history: Vec<MessageWithParts>, has_older: bool) -> Self {
        let mut timeline = Self::default();
        timeline.reset(history, has_older);
        timeline
    }

    /// Replaces everything with `history` (start-up, resync after a lag).
    pub fn reset(&mut self, mut history: Vec<MessageWithParts>, has_older: bool) {
        history.sort_by(|a, b| a.message.id.cmp(&b.message.id));
        self.messages = history;
        self.has_older = has_older;
        self.reindex();
        self.live_output.clear();
        self.orphans.clear();
        self.bump_all();
    }

    /// The id to read older messages before, while the store holds some.
    pub fn older_than(&self) -> Option<&str> {
        if !self.has_older {
            return None;
        }
        self.messages.first().map(|m| m.message.id.as_str())
    }

    /// Adds a page of older messages in front of those held (messages
    /// already held are kept as they are: theirs is the newer copy) and
    /// returns how many blocks now come before the ones shown until now.
    pub fn prepend(&mut self, page: Vec<MessageWithParts>, has_older: bool) -> usize {
        let blocks_before = self.blocks().len();
        let mut older: Vec<MessageWithParts> = page
            .into_iter()
            .filter(|m| !self.index.contains_key(&m.message.id))
            .collect();
        older.sort_by(|a, b| a.message.id.cmp(&b.message.id));
        self.has_older = has_older;
        if !older.is_empty() {
            older.append(&mut self.messages);
            self.messages = older;
            self.reindex();
        }
        self.blocks().len().saturating_sub(blocks_before)
    }

    /// An update to a message older than the page held: the store has it,
    /// and the page that holds it reads it from there.
    fn is_unloaded(&self, message_id: &str) -> bool {
        self.older_than().is_some_and(|first| message_id < first)
    }

    pub fn messages(&self) -> &[MessageWithParts] {
        &self.messages
    }

    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    pub fn live_output(&self, part_id: &str) -> Option<&str> {
        self.live_output.get(part_id).map(String::as_str)
    }

    /// The compaction request a summary (message `m`) answered: the marker
    /// shows the figures the notice gave and what was carried verbatim.
    pub fn compaction_of(&self, m: usize) -> Option<&crate::message::CompactionPart> {
        let parent = self.messages[m].message.as_assistant()?.parent_id.as_str();
        let request = &self.messages[*self.index.get(parent)?];
        request.parts.iter().find_map(|p| p.as_compaction())
    }

    /// True for the answer recorded for a `!cmd`: an assistant message
    /// whose request is a shell run's user message. It is the user's own
    /// run, so the view shows it under the user's header.
    pub fn is_shell_run(&self, m: usize) -> bool {
        let Some(parent) = self.messages[m]
            .message
            .as_assistant()
            .map(|a| a.parent_id.as_str())
        else {
            return false;
        };
        self.index
            .get(parent)
            .is_some_and(|&p| is_shell_request(&self.messages[p]))
    }

    /// Blocks in display order; rebuilt only when the structure changed.
    pub fn blocks(&mut self) -> &[Block] {
        if self.blocks_stale {
            self.rebuild_blocks();
        }
        &self.blocks
    }

    /// Blocks as last rebuilt by [`Timeline::blocks`].
    pub fn block_list(&self) -> &[Block] {
        &self.blocks
    }

    /// Changes whenever what `key` draws may have changed.
    pub fn revision(&self, key: &str) -> u64 {
        self.revisions
            .get(key)
            .copied()
            .unwrap_or(0)
            .max(self.base_revision)
    }

    /// The cache key of a block: a part id, a message id or a note number.
    pub fn block_key(&self, block: Block) -> String {
        match block {
            Block::Header(m) => self.messages[m].message.id.clone(),
            Block::Part(m, p) => self.messages[m].parts[p].id.clone(),
            Block::Note(n) => format!("note-{n}"),
        }
    }

    pub fn upsert_message(&mut self, message: &Message) {
        if self.is_unloaded(&message.id) {
            return;
        }
        match self.index.get(&message.id) {
            Some(&i) => {
                // An error can hide a message (see `hidden_after_overflow`).
                if message.as_assistant().is_some_and(|a| a.error.is_some()) {
                    self.blocks_stale = true;
                }
                self.messages[i].message = message.clone();
            }
            None => {
                let at = self.messages.partition_point(|m| m.message.id < message.id);
                self.messages.insert(
                    at,
                    MessageWithParts {
                        message: message.clone(),
                        parts: Vec::new(),
                    },
                );
                if at + 1 == self.messages.len() {
                    // The usual case, a new newest message: no index shifts.
                    self.index.insert(message.id.clone(), at);
                    self.blocks_stale = true;
                } else {
                    self.reindex();
                }
                if let Some(parts) = self.orphans.remove(&message.id) {
                    for part in parts {
                        self.upsert_part(&part);
                    }
                }
            }
        }
        self.bump(&message.id.clone());
    }

    pub fn upsert_part(&mut self, part: &Part) {
        if self.is_unloaded(&part.message_id) {
            return;
        }
        let Some(&m) = self.index.get(&part.message_id) else {
            self.orphans
                .entry(part.message_id.clone())
                .or_default()
                .push(part.clone());
            return;
        };
        let parts = &mut self.messages[m].parts;
        match parts.binary_search_by(|p| p.id.cmp(&part.id)) {
            Ok(i) => parts[i] = part.clone(),
            Err(i) => {
                parts.insert(i, part.clone());
                self.blocks_stale = true;
            }
        }
        if let PartKind::Tool(tool) = &part.kind
            && tool.state.is_finished()
        {
            self.live_output.remove(&part.id);
        }
        if part.as_compaction().is_some() {
            self.bump_summaries_of(&part.message_id.clone());
        }
        self.bump(&part.id.clone());
    }

    /// Appends a streamed delta; unknown parts are ignored (the full update follows).
    pub fn apply_delta(&mut self, message_id: &str, part_id: &str, field: DeltaField, delta: &str) {
        if field == DeltaField::ToolOutput {
            let output = self.live_output.entry(part_id.to_string()).or_default();
            output.push_str(delta);
            if output.len() > LIVE_OUTPUT_CAP {
                let mut cut = output.len() - LIVE_OUTPUT_CAP;
                while !output.is_char_boundary(cut) {
                    cut += 1;
                }
                output.drain(..cut);
            }
            self.bump(part_id);
            return;
        }
        let Some(&m) = self.index.get(message_id) else {
            return;
        };
        let Some(part) = self.messages[m].parts.iter_mut().find(|p| p.id == part_id) else {
            return;
        };
        match (&mut part.kind, field) {
            (PartKind::Text(text), DeltaField::Text) => text.text.push_str(delta),
            (PartKind::Reasoning(reasoning), DeltaField::Reasoning) => {
                reasoning.text.push_str(delta)
            }
            (PartKind::Tool(tool), DeltaField::ToolInput) => match &mut tool.state {
                crate::message::ToolState::Pending { raw, .. } => raw.push_str(delta),
                _ => return,
            },
            _ => return,
        }
        self.bump(part_id);
    }

    pub fn push_note(&mut self, is_error: bool, text: String) {
        // A failed answer's error is recorded on it first and shown whole
        // under its header: the same text again below would be said twice.
        let on_last_answer = self.messages.last().is_some_and(|m| {
            m.message
                .as_assistant()
                .and_then(|a| a.error.as_ref())
                // An overflow's rejected answer may be hidden: its notice stays.
                .is_some_and(|e| {
                    e.message == text && e.kind != crate::message::MessageErrorKind::ContextOverflow
                })
        });
        if is_error && on_last_answer {
            return;
        }
        let after = self.messages.last().map(|m| m.message.id.clone());
        self.notes.push(Note {
            is_error,
            text,
            after,
        });
        self.blocks_stale = true;
    }

    /// The last assistant text, for `/copy`.
    pub fn last_answer(&self) -> Option<String> {
        self.messages.iter().rev().find_map(|m| {
            let assistant = m.message.as_assistant()?;
            if assistant.summary {
                return None;
            }
            let text: Vec<&str> = m
                .parts
                .iter()
                .filter_map(|p| match &p.kind {
                    PartKind::Text(t) if !t.synthetic => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then(|| text.join("\n\n"))
        })
    }

    /// True while some tool is running (its card shows elapsed time).
    pub fn has_running_tool(&self) -> bool {
        self.messages.iter().rev().take(4).any(|m| {
            m.parts.iter().any(|p| {
                matches!(&p.kind, PartKind::Tool(t) if matches!(t.state, ToolState::Running { .. } | ToolState::Pending { .. }))
            })
        })
    }

    /// The diff read for the patch card `part_id`, if it has arrived.
    pub fn patch_diff(&self, part_id: &str) -> Option<&str> {
        self.patch_diffs.get(part_id)?.as_deref()
    }

    /// Patch parts whose diff was never asked for; marks them asked.
    pub fn patches_to_diff(&mut self) -> Vec<(String, crate::message::PatchPart)> {
        let mut wanted = Vec::new();
        for part in self.messages.iter().flat_map(|m| m.parts.iter()) {
            if let PartKind::Patch(patch) = &part.kind
                && !self.patch_diffs.contains_key(&part.id)
            {
                wanted.push((part.id.clone(), patch.clone()));
            }
        }
        for (id, _) in &wanted {
            self.patch_diffs.insert(id.clone(), None);
        }
        wanted
    }

    /// A patch card's diff arrived (or why not, as text): redraw that card.
    pub fn set_patch_diff(&mut self, part_id: &str, diff: String) {
        self.patch_diffs.insert(part_id.to_string(), Some(diff));
        self.bump(part_id);
    }

    /// Invalidates every cached block (a display toggle changed).
    pub fn bump_all(&mut self) {
        self.next_revision += 1;
        self.base_revision = self.next_revision;
        self.blocks_stale = true;
    }

    /// A compaction request's figures changed: the header of the summary
    /// that answers it shows them, so it is drawn again.
    fn bump_summaries_of(&mut self, request_id: &str) {
        let summaries: Vec<String> = self
            .messages
            .iter()
            .filter(|m| {
                m.message
                    .as_assistant()
                    .is_some_and(|a| a.summary && a.parent_id == request_id)
            })
            .map(|m| m.message.id.clone())
            .collect();
        for id in summaries {
            self.bump(&id);
        }
    }

    fn bump(&mut self, key: &str) {
        self.next_revision += 1;
        self.revisions.insert(key.to_string(), self.next_revision);
    }

    fn reindex(&mut self) {
        self.index = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| (m.message.id.clone(), i))
            .collect();
        self.blocks_stale = true;
    }

    fn rebuild_blocks(&mut self) {
        self.blocks.clear();
        let mut notes_after: HashMap<&str, Vec<usize>> = HashMap::new();
        for (n, note) in self.notes.iter().enumerate() {
            match &note.after {
                Some(after) => notes_after.entry(after.as_str()).or_default().push(n),
                None => self.blocks.push(Block::Note(n)),
            }
        }
        let hidden = hidden_after_overflow(&self.messages);
        for (m, message) in self.messages.iter().enumerate() {
            if hidden.contains(&m) {
                // Its notes (the overflow notice) still show, in place.
                if let Some(notes) = notes_after.get(message.message.id.as_str()) {
                    self.blocks.extend(notes.iter().map(|&n| Block::Note(n)));
                }
                continue;
            }
            // A compaction request is shown by its own marker; a "you" header
            // above it would announce a message the user never typed.
            let is_compaction_request = message.message.is_user()
                && !message.parts.is_empty()
                && message.parts.iter().all(|p| p.as_compaction().is_some());
            // A `!cmd`'s request is shown by the run itself ([`Timeline::is_shell_run`]).
            let is_shell_request = is_shell_request(message);
            if !is_compaction_request && !is_shell_request {
                self.blocks.push(Block::Header(m));
            }
            if !is_shell_request {
                for p in 0..message.parts.len() {
                    self.blocks.push(Block::Part(m, p));
                }
            }
            if let Some(notes) = notes_after.get(message.message.id.as_str()) {
                self.blocks.extend(notes.iter().map(|&n| Block::Note(n)));
            }
        }
        self.blocks_stale = false;
    }
}

/// The user message a `!cmd` records for the model: only the synthetic
/// shell-run text.
fn is_shell_request(message: &MessageWithParts) -> bool {
    message.message.is_user()
        && !message.parts.is_empty()
        && message.parts.iter().all(|p| {
            matches!(&p.kind, PartKind::Text(t)
                if t.synthetic && t.text == crate::session::shell::SHELL_RUN_TEXT)
        })
}

/// Messages an overflow left behind that would only repeat what is shown:
/// the rejected answer when it holds nothing (the notice says what
/// happened), and the user's message when cairn sent it again after
/// compacting (the copy below the summary is the one answered).
fn hidden_after_overflow(messages: &[MessageWithParts]) -> std::collections::HashSet<usize> {
    let text_of = |m: &MessageWithParts| -> String {
        m.parts
            .iter()
            .filter_map(|p| match &p.kind {
                PartKind::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    };
    let mut hidden = std::collections::HashSet::new();
    for (a, message) in messages.iter().enumerate() {
        let Some(assistant) = message.message.as_assistant() else {
            continue;
        };
        let rejected = assistant.finish.is_none()
            && assistant
                .error
                .as_ref()
                .is_some_and(|e| e.kind == crate::message::MessageErrorKind::ContextOverflow);
        let holds_nothing = message.parts.iter().all(|p| match &p.kind {
            PartKind::Text(t) => t.text.trim().is_empty(),
            PartKind::Reasoning(r) => r.text.trim().is_empty(),
            PartKind::Tool(_) => false,
            _ => true,
        });
        if !rejected || !holds_nothing {
            continue;
        }
        hidden.insert(a);
        let Some(u) = messages[..a]
            .iter()
            .rposition(|m| m.message.id == assistant.parent_id)
        else {
            continue;
        };
        let asked = text_of(&messages[u]);
        let sent_again = messages[a + 1..]
            .iter()
            .any(|m| m.message.is_user() && !asked.is_empty() && text_of(m) == asked);
        if sent_again {
            hidden.insert(u);
        }
    }
    hidden
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::{assistant, part, text, user};

    #[test]
    fn messages_stay_in_id_order_and_parts_find_them_after_an_insert() {
        let mut timeline = Timeline::default();
        let newer = user("msg_2");
        let older = assistant("msg_1", "msg_0");
        timeline.upsert_message(&newer);
        timeline.upsert_message(&older);
        timeline.upsert_part(&part("prt_1", &newer, text("to the newer one")));
        let ids: Vec<&str> = timeline
            .messages()
            .iter()
            .map(|m| m.message.id.as_str())
            .collect();
        assert_eq!(ids, ["msg_1", "msg_2"]);
        assert_eq!(timeline.messages()[1].parts.len(), 1);
        assert_eq!(
            timeline.blocks(),
            [Block::Header(0), Block::Header(1), Block::Part(1, 0)]
        );
    }

    #[test]
    fn notes_follow_the_message_that_was_last_when_they_arrived() {
        let mut timeline = Timeline::default();
        timeline.upsert_message(&user("msg_1"));
        timeline.push_note(true, "rate limited".into());
        timeline.upsert_message(&user("msg_2"));
        assert_eq!(
            timeline.blocks(),
            [Block::Header(0), Block::Note(0), Block::Header(1)]
        );
    }

    #[test]
    fn live_tool_output_keeps_only_the_newest_bytes() {
        let mut timeline = Timeline::default();
        let chunk = "x".repeat(1024);
        for _ in 0..100 {
            timeline.apply_delta("msg", "prt", DeltaField::ToolOutput, &chunk);
        }
        timeline.apply_delta("msg", "prt", DeltaField::ToolOutput, "tail");
        let output = timeline.live_output("prt").expect("live output");
        assert_eq!(output.len(), LIVE_OUTPUT_CAP);
        assert!(output.ends_with("tail"));
    }
}
