//! Persist-and-publish: the one way the session layer changes the transcript.
//!
//! Every full update goes to the store first and then on the bus, so what a
//! subscriber sees is always already durable; deltas go on the bus only.

use std::sync::Arc;

use crate::bus::{Bus, DeltaField, Event};
use crate::context::view;
use crate::message::{Message, Part, PartKind, Session};
use crate::store::{self, Store};

#[derive(Clone)]
pub struct Writer {
    pub store: Store,
    pub bus: Bus,
}

impl Writer {
    pub fn new(store: Store, bus: Bus) -> Self {
        Self { store, bus }
    }

    pub async fn message(&self, message: &Message) -> Result<(), store::Error> {
        self.store.upsert_message(message).await?;
        self.bus.publish(Event::MessageUpdated {
            message: Arc::new(message.clone()),
        });
        Ok(())
    }

    /// Persists and publishes a part. A part that will not change any more
    /// gets its token count now, once, when the exact tokenizer is ready
    /// (`Part.tokens`; the gauge, prune and `/context` read it back).
    pub async fn part(&self, part: &Part) -> Result<(), store::Error> {
        let mut part = part.clone();
        if part.tokens.is_none() && is_settled(&part) {
            view::fill_part_tokens(std::iter::once(&mut part));
        }
        self.store.upsert_part(&part).await?;
        let step_finished = matches!(part.kind, PartKind::StepFinish(_));
        let session_id = part.session_id.clone();
        self.bus.publish(Event::PartUpdated {
            part: Arc::new(part),
        });
        if step_finished {
            self.publish_totals(&session_id).await?;
        }
        Ok(())
    }

    /// A step's cost and tokens were just added to its session and the
    /// sessions above it (a subagent's spending rolls up) by the store:
    /// publish them as stored so each status line shows the real total.
    async fn publish_totals(&self, session_id: &str) -> Result<(), store::Error> {
        let mut ids = vec![session_id.to_string()];
        ids.extend(self.store.ancestors(session_id).await?);
        for id in ids {
            if let Some(session) = self.store.get_session(&id).await? {
                self.bus.publish(Event::SessionUpdated {
                    session: Arc::new(session),
                });
            }
        }
        Ok(())
    }

    pub async fn session(&self, session: &Session) -> Result<(), store::Error> {
        self.store.update_session(session).await?;
        self.bus.publish(Event::SessionUpdated {
            session: Arc::new(session.clone()),
        });
        Ok(())
    }

    pub fn delta(&self, part: &Part, field: DeltaField, delta: &str) {
        self.bus.publish(Event::PartDelta {
            session_id: part.session_id.clone(),
            message_id: part.message_id.clone(),
            part_id: part.id.clone(),
            field,
            delta: delta.to_string(),
        });
    }

    pub fn notice(&self, session_id: &str, message: impl Into<String>) {
        self.bus.publish(Event::Notice {
            session_id: session_id.to_string(),
            message: message.into(),
        });
    }

    pub fn error(&self, session_id: &str, message: impl Into<String>) {
        self.bus.publish(Event::Error {
            session_id: session_id.to_string(),
            message: message.into(),
        });
    }
}

/// Whether a part has reached its final content: streamed text and reasoning
/// once they end, tool calls once they finish; everything else at once.
fn is_settled(part: &Part) -> bool {
    match &part.kind {
        PartKind::Text(text) => text.time.is_none_or(|t| t.end.is_some()),
        PartKind::Reasoning(reasoning) => reasoning.time.end.is_some(),
        PartKind::Tool(tool) => tool.state.is_finished(),
        _ => true,
    }
}
