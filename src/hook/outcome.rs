//! What the hooks of one event said, read as Claude Code reads it: exit 0
//! with optional JSON on stdout, exit 2 blocks with stderr as the reason,
//! any other exit (or a timeout) is a failure shown to the user and ignored.

use serde_json::Value;

use super::event::{Event, Hook};
use super::process::Finish;

/// The hooks' answers for one event, merged: any block wins over allows.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// Blocked (exit 2, `"decision": "block"`, `permissionDecision: deny`),
    /// with the reasons, for the model (or the user, for a prompt).
    pub block: Option<String>,
    /// PreToolUse's `permissionDecision: "ask"`: ask the user, with why.
    pub ask: Option<String>,
    /// PreToolUse's `updatedInput`: the input the tool runs with instead.
    pub updated_input: Option<Value>,
    /// Text added for the model: `additionalContext`, or the plain stdout
    /// of a UserPromptSubmit or SessionStart hook.
    pub context: Vec<String>,
    /// `"continue": false`: the turn stops, with its `stopReason`.
    pub stop: Option<String>,
    /// For the user: failures, timeouts, `systemMessage`s.
    pub notices: Vec<String>,
}

impl Outcome {
    pub(super) fn add(&mut self, event: Event, hook: &Hook, finish: Finish) {
        let name = event.name();
        let shown = short(&hook.command);
        match finish {
            Finish::CannotStart(error) => self
                .notices
                .push(format!("{name} hook `{shown}` could not start: {error}")),
            Finish::TimedOut => self.notices.push(format!(
                "{name} hook `{shown}` timed out after {} s and was stopped",
                hook.timeout.as_secs_f64()
            )),
            Finish::Interrupted => {}
            Finish::Exited {
                code: Some(0),
                stdout,
                ..
            } => self.read_stdout(event, &stdout),
            Finish::Exited {
                code: Some(2),
                stderr,
                ..
            } => {
                let reason = match stderr.trim() {
                    "" => format!("blocked by the {name} hook `{shown}`"),
                    text => text.to_string(),
                };
                match event {
                    // Nothing to block: the reason is for the user.
                    Event::SessionStart | Event::PreCompact | Event::Notification => {
                        self.notices
                            .push(format!("{name} hook `{shown}`: {reason}"));
                    }
                    _ => push_reason(&mut self.block, reason),
                }
            }
            Finish::Exited { code, stderr, .. } => {
                let code =
                    code.map_or_else(|| "a signal".to_string(), |c| format!("exit code {c}"));
                let detail = match stderr.trim() {
                    "" => String::new(),
                    text => format!(": {}", short(text)),
                };
                self.notices
                    .push(format!("{name} hook `{shown}` failed with {code}{detail}"));
            }
        }
    }

    fn read_stdout(&mut self, event: Event, stdout: &str) {
        let text = stdout.trim();
        let json = text
            .starts_with('{')
            .then(|| serde_json::from_str::<Value>(text).ok())
            .flatten();
        let Some(json) = json else {
            // Plain output is context only where Claude Code makes it so.
            if !text.is_empty() && matches!(event, Event::UserPromptSubmit | Event::SessionStart) {
                self.context.push(text.to_string());
            }
            return;
        };
        if json.get("continue") == Some(&Value::Bool(false)) {
            let reason = json["stopReason"]
                .as_str()
                .unwrap_or("a hook stopped the turn");
            self.stop = Some(reason.to_string());
        }
        if let Some(message) = json["systemMessage"].as_str() {
            self.notices.push(message.to_string());
        }
        let reason = json["reason"].as_str().map(str::to_string);
        // `block` everywhere; PreToolUse's older spelling too.
        if json["decision"] == "block" {
            push_reason(
                &mut self.block,
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by a {} hook", event.name())),
            );
        }
        let specific = &json["hookSpecificOutput"];
        let why = specific["permissionDecisionReason"]
            .as_str()
            .map(str::to_string)
            .or(reason);
        match specific["permissionDecision"].as_str() {
            Some("deny") => push_reason(
                &mut self.block,
                why.unwrap_or_else(|| "denied by a PreToolUse hook".into()),
            ),
            Some("ask") => {
                self.ask = Some(why.unwrap_or_else(|| "a PreToolUse hook asks".into()));
            }
            _ => {}
        }
        if let Some(input) = specific.get("updatedInput").filter(|v| v.is_object()) {
            self.updated_input = Some(input.clone());
        }
        if let Some(context) = specific["additionalContext"].as_str()
            && !context.trim().is_empty()
        {
            self.context.push(context.to_string());
        }
    }
}

fn push_reason(slot: &mut Option<String>, reason: String) {
    match slot {
        Some(reasons) => {
            reasons.push('\n');
            reasons.push_str(&reason);
        }
        None => *slot = Some(reason),
    }
}

/// A command or message cut for a one-line notice.
fn short(text: &str) -> String {
    const MAX: usize = 200;
    let line = text.trim().replace('\n', " ");
    if line.chars().count() <= MAX {
        return line;
    }
    format!("{}...", line.chars().take(MAX).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Hook {
        Hook {
            event: Event::PreToolUse,
            matcher: None,
            command: "check.sh".into(),
            timeout: std::time::Duration::from_secs(60),
        }
    }

    fn exited(code: i32, stdout: &str, stderr: &str) -> Finish {
        Finish::Exited {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes_and_json_decisions_read_as_claude_code_reads_them() {
        let mut out = Outcome::default();
        out.add(Event::PreToolUse, &hook(), exited(0, "all fine", ""));
        assert_eq!(
            out,
            Outcome::default(),
            "plain stdout of PreToolUse is not context"
        );
        out.add(Event::PreToolUse, &hook(), exited(2, "", "no rm\n"));
        assert_eq!(out.block.as_deref(), Some("no rm"));
        let mut out = Outcome::default();
        out.add(
            Event::PreToolUse,
            &hook(),
            exited(0, r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?","updatedInput":{"command":"ls"}}}"#, ""),
        );
        assert_eq!(out.ask.as_deref(), Some("sure?"));
        assert_eq!(
            out.updated_input,
            Some(serde_json::json!({"command": "ls"}))
        );
        let mut out = Outcome::default();
        out.add(
            Event::Stop,
            &hook(),
            exited(0, r#"{"decision":"block","reason":"tests first"}"#, ""),
        );
        out.add(Event::Stop, &hook(), exited(1, "", "boom"));
        assert_eq!(out.block.as_deref(), Some("tests first"));
        assert_eq!(
            out.notices,
            ["Stop hook `check.sh` failed with exit code 1: boom"]
        );
        let mut out = Outcome::default();
        out.add(
            Event::UserPromptSubmit,
            &hook(),
            exited(0, "codeword heron\n", ""),
        );
        out.add(Event::SessionStart, &hook(), exited(2, "", "x"));
        assert_eq!(out.context, ["codeword heron"]);
        assert!(out.block.is_none());
    }
}
