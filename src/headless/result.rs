//! The `result` event that ends `cairn run --format json`: the whole run in
//! one line for a script (final text, session, stop reason, tokens, cost,
//! duration, error), written whatever the outcome, failures included, and
//! shaped like `claude -p --output-format json`'s result (`subtype`,
//! `is_error`, `result`, `total_cost_usd`, `usage`, ...) so scripts written
//! for it read cairn's too; cairn's own fields stay beside them.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::Instant;

use serde::Serialize;

use super::Outcome;
use crate::bus::Event;
use crate::message::{FinishReason, Role, Tokens};

/// What the run did so far, gathered from its events.
pub struct Tally {
    started: Instant,
    /// The visible text of each message (or command report), in order.
    texts: Vec<(String, String)>,
    /// Usage and cost of each assistant message of the run, summaries and
    /// subagents' messages included (they are paid for too), by message id.
    usage: HashMap<String, (Tokens, f64)>,
    /// Why the newest answering (non-summary) assistant message stopped.
    stop_reason: Option<FinishReason>,
    /// The session's own model steps (assistant messages, summaries left
    /// out): claude's `num_turns`.
    turns: HashSet<String>,
    errors: Vec<String>,
}

/// The `result` event.
#[derive(Debug, Serialize)]
pub struct RunResult<'a> {
    /// Always `"result"`: the event's type, like every other line.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// claude's: `success`, or `error_` and what went wrong (see [`subtype`]).
    pub subtype: &'static str,
    /// claude's: true unless the run succeeded (exit 0).
    pub is_error: bool,
    /// claude's name for `text`.
    pub result: &'a str,
    /// `null` when the run failed before a session was opened.
    pub session_id: Option<&'a str>,
    /// claude's: the model steps of the session in this run.
    pub num_turns: usize,
    /// claude's name for `cost`.
    pub total_cost_usd: f64,
    /// claude's names for `tokens`.
    pub usage: Usage,
    /// The visible answer: the text of the last message that had any.
    pub text: &'a str,
    /// The finish reason of the last answer (`stop`, `tool-calls`, `length`,
    /// `content-filter`, `error`, `unknown`), `interrupted` after Ctrl+C,
    /// `null` when no model step ran (`/context`, `/export`, a usage error).
    pub stop_reason: Option<String>,
    /// `success`, `failed`, `failed_after_answer`, `usage`, `interrupted`,
    /// `session_busy`.
    pub outcome: &'static str,
    pub exit_code: u8,
    pub tokens: Tokens,
    pub cost: f64,
    pub duration_ms: u64,
    /// Every error of the run, one per line; `null` when there was none.
    pub error: Option<String>,
}

/// `tokens` as claude's `usage` names them.
#[derive(Debug, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    /// Reasoning included: claude counts it as output.
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

impl From<Tokens> for Usage {
    fn from(tokens: Tokens) -> Self {
        Self {
            input_tokens: tokens.input,
            output_tokens: tokens.output.saturating_add(tokens.reasoning),
            cache_read_input_tokens: tokens.cache.read,
            cache_creation_input_tokens: tokens.cache.write,
        }
    }
}

/// claude's `subtype` for an outcome: `success`, or `error_` and the kind.
pub fn subtype(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Success => "success",
        Outcome::Failed => "error_during_execution",
        Outcome::FailedAfterAnswer => "error_after_answer",
        Outcome::Usage => "error_usage",
        Outcome::Interrupted => "error_interrupted",
        Outcome::SessionBusy => "error_session_busy",
    }
}

/// Writes the result of a run that failed before it could print one (a
/// bad config, no session to continue, a session in use): `exit_code`
/// names the outcome, `error` says why.
pub fn write_failure(stdout: &mut impl Write, error: &str, exit_code: u8) -> std::io::Result<()> {
    let mut tally = Tally::new();
    tally.add_error(error.to_string());
    write_outside(stdout, &tally, exit_code)
}

/// Writes the result of a command answered outside a session (`/model`,
/// `/mcp`): `text` is its report.
pub fn write_report(stdout: &mut impl Write, text: &str, exit_code: u8) -> std::io::Result<()> {
    let mut tally = Tally::new();
    tally.add_text("report", text);
    write_outside(stdout, &tally, exit_code)
}

fn write_outside(stdout: &mut impl Write, tally: &Tally, exit_code: u8) -> std::io::Result<()> {
    let outcome = [Outcome::Success, Outcome::SessionBusy, Outcome::Usage]
        .into_iter()
        .find(|outcome| outcome.exit_code() == exit_code)
        .unwrap_or(Outcome::Failed);
    serde_json::to_writer(&mut *stdout, &tally.result(None, outcome))?;
    writeln!(stdout)?;
    stdout.flush()
}

impl Tally {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            texts: Vec::new(),
            usage: HashMap::new(),
            stop_reason: None,
            turns: HashSet::new(),
            errors: Vec::new(),
        }
    }

    /// Takes what matters from a session event.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::MessageUpdated { message } => {
                if let Role::Assistant(assistant) = &message.role {
                    self.usage
                        .insert(message.id.clone(), (assistant.tokens, assistant.cost));
                    if !assistant.summary && assistant.finish.is_some() {
                        self.stop_reason = assistant.finish;
                    }
                    if !assistant.summary {
                        self.turns.insert(message.id.clone());
                    }
                }
            }
            Event::Error { message, .. } => self.errors.push(message.clone()),
            _ => {}
        }
    }

    /// Takes the usage of a subagent's message: a child's spending is the
    /// run's too. Its text and finish reason are the child's own business.
    pub fn observe_subagent(&mut self, event: &Event) {
        if let Event::MessageUpdated { message } = event
            && let Role::Assistant(assistant) = &message.role
        {
            self.usage
                .insert(message.id.clone(), (assistant.tokens, assistant.cost));
        }
    }

    /// Visible text of `key` (a message id, or a command's report).
    pub fn add_text(&mut self, key: &str, text: &str) {
        match self.texts.last_mut() {
            Some((last, so_far)) if last == key => so_far.push_str(text),
            _ => self.texts.push((key.to_string(), text.to_string())),
        }
    }

    /// A failure of the run itself that no session event reported.
    pub fn add_error(&mut self, message: String) {
        self.errors.push(message);
    }

    pub fn result<'a>(&'a self, session_id: Option<&'a str>, outcome: Outcome) -> RunResult<'a> {
        let tokens = self
            .usage
            .values()
            .fold(Tokens::default(), |sum, (tokens, _)| {
                sum.saturating_add(tokens)
            });
        let stop_reason = match outcome {
            Outcome::Interrupted => Some("interrupted".to_string()),
            _ => self.stop_reason.map(finish_name),
        };
        let text = self.texts.last().map_or("", |(_, text)| text.as_str());
        // Folded from +0.0: an empty f64 sum is -0.0, printed as `-0.0`.
        let cost = self.usage.values().fold(0.0, |sum, (_, cost)| sum + cost);
        RunResult {
            kind: "result",
            subtype: subtype(outcome),
            is_error: outcome != Outcome::Success,
            result: text,
            session_id,
            num_turns: self.turns.len(),
            total_cost_usd: cost,
            usage: tokens.into(),
            text,
            stop_reason,
            outcome: outcome.name(),
            exit_code: outcome.exit_code(),
            tokens,
            cost,
            duration_ms: self.started.elapsed().as_millis() as u64,
            error: (!self.errors.is_empty()).then(|| self.errors.join("\n")),
        }
    }
}

/// The finish reason as the stored messages spell it.
fn finish_name(finish: FinishReason) -> String {
    serde_json::to_value(finish)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_are_named_as_stored() {
        assert_eq!(finish_name(FinishReason::Stop), "stop");
        assert_eq!(finish_name(FinishReason::ToolCalls), "tool-calls");
        assert_eq!(finish_name(FinishReason::ContentFilter), "content-filter");
    }

    #[test]
    fn the_text_is_the_last_message_with_text() {
        let mut tally = Tally::new();
        tally.add_text("msg_1", "Let me look. ");
        tally.add_text("msg_2", "It is ");
        tally.add_text("msg_2", "42.");
        let result = tally.result(Some("ses_1"), Outcome::Success);
        assert_eq!(result.text, "It is 42.");
        assert_eq!(result.error, None);
        assert_eq!(result.exit_code, 0);
    }

    #[test]
    fn nothing_spent_is_a_positive_zero() {
        let tally = Tally::new();
        let result = tally.result(None, Outcome::Usage);
        let line = serde_json::to_string(&result).expect("serialize");
        assert!(line.contains("\"cost\":0.0"), "{line}");
        assert!(!line.contains("-0.0"), "{line}");
        assert!(line.contains("\"subtype\":\"error_usage\""), "{line}");
    }
}
