//! The event bus: every change to a session, published to whoever watches.
//!
//! A tokio broadcast channel. Full part and message updates are persisted by the
//! store *and* published here; streaming deltas are published only. A slow
//! subscriber never stalls the publisher: it sees `RecvError::Lagged`, may have
//! missed deltas, and resyncs by reading the session back from the store.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::clock::Millis;
use crate::gauge::ContextGauge;
use crate::message::{Message, Part, Session};

/// How many events a subscriber may fall behind before it lags.
pub const BUS_CAPACITY: usize = 4096;

/// Which field of a part a delta appends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaField {
    Text,
    Reasoning,
    /// Live output of a running tool (bash), shown before the tool completes.
    ToolOutput,
    /// A tool call's arguments as the model streams them (raw JSON text),
    /// so a long generation is never silent.
    ToolInput,
}

/// What a session is doing right now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    Busy,
    /// Waiting to retry a failed request; `next_at` is when the retry fires.
    Retrying {
        attempt: u32,
        message: String,
        next_at: Millis,
    },
    Compacting,
}

/// Something that happened. Cloned to every subscriber, so large payloads are
/// behind `Arc`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    SessionUpdated {
        session: Arc<Session>,
    },
    MessageUpdated {
        message: Arc<Message>,
    },
    /// A full part, already persisted.
    PartUpdated {
        part: Arc<Part>,
    },
    /// Text appended to a part; not persisted on its own.
    PartDelta {
        session_id: String,
        message_id: String,
        part_id: String,
        field: DeltaField,
        delta: String,
    },
    Status {
        session_id: String,
        status: SessionStatus,
    },
    /// A failure the user should see, with what to do about it.
    Error {
        session_id: String,
        message: String,
    },
    /// An informational line for the user (what `/prune` freed, and so on).
    Notice {
        session_id: String,
        message: String,
    },
    /// A tool is waiting for the user's permission.
    PermissionAsked {
        session_id: String,
        request: Arc<crate::permission_request::PermissionRequest>,
    },
    PermissionReplied {
        session_id: String,
        request_id: String,
    },
    /// The context gauge changed (after a step, a prune, a compaction).
    Gauge {
        session_id: String,
        gauge: ContextGauge,
    },
}

impl Event {
    /// The session this event belongs to.
    pub fn session_id(&self) -> &str {
        match self {
            Event::SessionUpdated { session } => &session.id,
            Event::MessageUpdated { message } => &message.session_id,
            Event::PartUpdated { part } => &part.session_id,
            Event::PartDelta { session_id, .. }
            | Event::Status { session_id, .. }
            | Event::Error { session_id, .. }
            | Event::Notice { session_id, .. }
            | Event::PermissionAsked { session_id, .. }
            | Event::PermissionReplied { session_id, .. }
            | Event::Gauge { session_id, .. } => session_id,
        }
    }
}

/// Cheap to clone; every clone publishes to the same subscribers.
#[derive(Debug, Clone)]
pub struct Bus {
    sender: broadcast::Sender<Event>,
}

impl Default for Bus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus {
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(BUS_CAPACITY);
        Self { sender }
    }

    /// Publishes to the current subscribers; having none is not an error.
    pub fn publish(&self, event: Event) {
        let _ = self.sender.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(n: usize) -> Event {
        Event::PartDelta {
            session_id: "ses".into(),
            message_id: "msg".into(),
            part_id: "prt".into(),
            field: DeltaField::Text,
            delta: n.to_string(),
        }
    }

    #[tokio::test]
    async fn slow_subscriber_lags_instead_of_blocking_the_publisher() {
        let bus = Bus::new();
        let mut slow = bus.subscribe();
        for n in 0..BUS_CAPACITY + 10 {
            bus.publish(delta(n));
        }
        match slow.recv().await {
            Err(broadcast::error::RecvError::Lagged(missed)) => assert_eq!(missed, 10),
            other => panic!("expected a lag, got {other:?}"),
        }
        let next = slow.recv().await.expect("events after the lag");
        assert!(matches!(next, Event::PartDelta { delta, .. } if delta == "10"));
    }
}
