//! A caller's own decoded model view read, kept between reads: the agent loop
//! holds one per session so that a step re-decodes only the rows that
//! changed since the last step and copies nothing else.
//!
//! It is only ever brought up to date by the store against the stored row
//! revisions (`Store::refresh_view`, see `refresh`), never edited by its
//! holder, so it cannot drift from what is committed.

use super::cache::MessageKey;
use crate::message::MessageWithParts;

/// The model's history of one session as of its last refresh, oldest first.
#[derive(Debug)]
pub struct LiveView {
    pub(super) session_id: String,
    pub(super) messages: Vec<MessageWithParts>,
    /// The stored keys of `messages`, beside them.
    pub(super) keys: Vec<MessageKey>,
    /// The database's revision counter when it was read; `None` before the
    /// first read.
    pub(super) revision: Option<i64>,
    /// Whether the read began at the session's first message rather than
    /// at a compaction point.
    pub(super) reaches_session_start: bool,
    /// The content budget of the read (see `HistoryScan::within`).
    pub(super) budget: Option<usize>,
    /// The read stopped at its budget: older messages were left out.
    pub(super) cut: bool,
}

impl LiveView {
    /// An empty read of `session_id`: its first refresh decodes everything.
    pub fn new(session_id: &str) -> Self {
        Self::within(session_id, None)
    }

    /// An empty read of `session_id` that stops past `budget` bytes of
    /// content (`HistoryScan::within`).
    pub fn within(session_id: &str, budget: Option<usize>) -> Self {
        Self {
            session_id: session_id.to_string(),
            messages: Vec::new(),
            keys: Vec::new(),
            revision: None,
            reaches_session_start: false,
            budget,
            cut: false,
        }
    }

    /// Whether older messages than the read's first were left out because
    /// the read reached its budget (a session never compacted).
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// What `Store::read_view` returned at the last refresh.
    pub fn messages(&self) -> &[MessageWithParts] {
        &self.messages
    }

    /// Moves the messages out, for a caller that consumes the read (a
    /// summary of it): what is left is an empty read of the same session
    /// and budget, which the next refresh reads afresh.
    pub fn take_messages(&mut self) -> Vec<MessageWithParts> {
        self.keys.clear();
        self.revision = None;
        self.reaches_session_start = false;
        self.cut = false;
        std::mem::take(&mut self.messages)
    }
}
