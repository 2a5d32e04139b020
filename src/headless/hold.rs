//! The answer's text held back until its model step is kept, when stdout is
//! not a terminal.
//!
//! A step can be abandoned after it printed: the stream dropped mid-answer
//! and the step is retried, or the context overflowed and the step is
//! replayed after a compaction. On a pipe nothing printed can be taken back
//! (issue #31: the fragment glued to the full answer), so there each
//! message's text waits until the message finishes (or is interrupted, which
//! keeps what came) and is dropped when it is abandoned. On a terminal the
//! text streams as it comes. Key type: [`Steps`].

use std::collections::HashSet;

use crate::message::{FinishReason, Message, MessageErrorKind, Role};

/// What becomes of a message's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Still streaming.
    Open,
    /// Finished or interrupted: its text is part of the answer.
    Kept,
    /// Failed in a way the loop tries again: its text is not.
    Abandoned,
}

fn fate_of(message: &Message) -> Fate {
    let Role::Assistant(assistant) = &message.role else {
        return Fate::Open;
    };
    match (&assistant.finish, &assistant.error) {
        (Some(_), _) => Fate::Kept,
        (None, Some(error)) if error.kind == MessageErrorKind::Aborted => Fate::Kept,
        // An error without a finish: the loop retries or replays the step.
        (None, Some(_)) => Fate::Abandoned,
        (None, None) => Fate::Open,
    }
}

/// The steps' text on its way to stdout.
pub(super) struct Steps {
    /// Hold text until its message is kept (stdout is not a terminal).
    holds: bool,
    /// Text of open messages, by message id, in the order it came.
    held: Vec<(String, String)>,
    kept: HashSet<String>,
    abandoned: HashSet<String>,
}

impl Steps {
    pub(super) fn new(holds: bool) -> Self {
        Self {
            holds,
            held: Vec::new(),
            kept: HashSet::new(),
            abandoned: HashSet::new(),
        }
    }

    /// `text` of message `message_id` arrived; returns what to print now.
    pub(super) fn text(&mut self, message_id: &str, text: &str) -> Option<String> {
        if self.abandoned.contains(message_id) {
            return None;
        }
        if !self.holds || self.kept.contains(message_id) {
            return Some(text.to_string());
        }
        match self.held.iter_mut().find(|(id, _)| id == message_id) {
            Some((_, so_far)) => so_far.push_str(text),
            None => self.held.push((message_id.to_string(), text.to_string())),
        }
        None
    }

    /// `message` was updated; returns the text it releases, if any.
    pub(super) fn settle(&mut self, message: &Message) -> Option<String> {
        let fate = fate_of(message);
        if fate == Fate::Open || self.kept.contains(&message.id) {
            return None;
        }
        let held = self
            .held
            .iter()
            .position(|(id, _)| *id == message.id)
            .map(|at| self.held.remove(at).1);
        if fate == Fate::Abandoned {
            self.abandoned.insert(message.id.clone());
            return None;
        }
        self.kept.insert(message.id.clone());
        let mut text = held?;
        let calls_tools = message
            .as_assistant()
            .is_some_and(|a| a.finish == Some(FinishReason::ToolCalls));
        if calls_tools && !text.ends_with('\n') {
            // The tools' lines come between this text and the next step's.
            text.push('\n');
        }
        Some(text)
    }

    /// Whatever is still held when the run ends (a run stopped before its
    /// step settled): it is what the user got, so it is printed.
    pub(super) fn release(&mut self) -> String {
        self.held.drain(..).map(|(_, text)| text).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, MessageError, ModelRef};

    fn assistant(
        id: &str,
        finish: Option<FinishReason>,
        error: Option<MessageErrorKind>,
    ) -> Message {
        Message {
            id: id.into(),
            session_id: "ses".into(),
            time_created: 0,
            role: Role::Assistant(AssistantMessage {
                parent_id: "msg_user".into(),
                agent: "build".into(),
                model: ModelRef::new("scripted", "test-model"),
                path: Default::default(),
                summary: false,
                finish,
                error: error.map(|kind| MessageError {
                    kind,
                    message: "cut".into(),
                }),
                tokens: Default::default(),
                cost: 0.0,
                time_completed: None,
            }),
        }
    }

    #[test]
    fn an_abandoned_step_prints_nothing_and_a_kept_one_prints_once() {
        let mut steps = Steps::new(true);
        assert_eq!(steps.text("m1", "The abandoned"), None);
        let retried = assistant("m1", None, Some(MessageErrorKind::Api));
        assert_eq!(steps.settle(&retried), None);
        assert_eq!(steps.text("m1", " fragment"), None);
        assert_eq!(steps.text("m2", "The answer"), None);
        assert_eq!(steps.text("m2", " is 42."), None);
        let done = assistant("m2", Some(FinishReason::Stop), None);
        assert_eq!(steps.settle(&done).as_deref(), Some("The answer is 42."));
        assert_eq!(steps.settle(&done), None);
        assert_eq!(steps.release(), "");
    }

    #[test]
    fn an_interrupted_step_keeps_its_text() {
        let mut steps = Steps::new(true);
        steps.text("m1", "Half of it");
        let stopped = assistant("m1", None, Some(MessageErrorKind::Aborted));
        assert_eq!(steps.settle(&stopped).as_deref(), Some("Half of it"));
    }

    #[test]
    fn on_a_terminal_text_streams() {
        let mut steps = Steps::new(false);
        assert_eq!(steps.text("m1", "Hel").as_deref(), Some("Hel"));
    }
}
