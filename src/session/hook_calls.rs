//! Where the session fires its hooks (`crate::hook`) and what it does with
//! their answers. Takes the writer and hooks rather than the session's
//! context, so the loop's files can call it without an import circle.

use std::path::Path;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::clock::now_millis;
use crate::hook::{Event, Hooks, Outcome};
use crate::message::{Message, Part, PartKind, Role, TextPart, UserMessage};
use crate::session::writer::Writer;

/// The hooks of one session and where their notices go.
pub struct Caller<'a> {
    pub hooks: &'a Hooks,
    pub writer: &'a Writer,
    pub session_id: &'a str,
}

impl Caller<'_> {
    async fn fire(
        &self,
        event: Event,
        subjects: &[&str],
        fields: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Outcome {
        if !self.hooks.any(event) {
            return Outcome::default();
        }
        let outcome = self
            .hooks
            .fire(self.session_id, event, subjects, fields, cancel)
            .await;
        // A failing hook is said where the user looks (stderr in `cairn
        // run`, a notice in the TUI); the turn goes on without it.
        for notice in &outcome.notices {
            tracing::warn!(session = %self.session_id, notice, "hook");
            self.writer
                .notice(self.session_id, format!("warning: {notice}"));
        }
        outcome
    }

    /// Before a tool call: `Err(reason)` when a hook blocks it (the model
    /// reads the reason), `Ok((input, ask))` with the input to run (maybe
    /// changed by a hook) and a hook's request to ask the user first.
    pub async fn pre_tool_use(
        &self,
        names: &[&str],
        input: &Value,
        call_id: &str,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> Result<(Value, Option<String>), String> {
        if !self.hooks.any(Event::PreToolUse) {
            return Ok((input.clone(), None));
        }
        let shown = claude_input(input, cwd);
        let fields = tool_fields(names, &shown, call_id);
        let outcome = self.fire(Event::PreToolUse, names, fields, cancel).await;
        if let Some(reason) = outcome.block.or(outcome.stop) {
            return Err(format!("A PreToolUse hook blocked this call: {reason}"));
        }
        let input = match outcome.updated_input {
            Some(updated) => from_claude_input(updated, &shown),
            None => input.clone(),
        };
        Ok((input, outcome.ask))
    }

    /// After a call that completed: what the hooks want the model to read
    /// beside its output (a `block` reason, exit 2's stderr, added context).
    pub async fn post_tool_use(
        &self,
        names: &[&str],
        input: &Value,
        call_id: &str,
        response: Value,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.hooks.any(Event::PostToolUse) {
            return None;
        }
        let mut fields = tool_fields(names, &claude_input(input, cwd), call_id);
        fields.insert("tool_response".into(), response);
        let outcome = self.fire(Event::PostToolUse, names, fields, cancel).await;
        let mut said: Vec<String> = outcome.block.into_iter().collect();
        said.extend(outcome.context);
        (!said.is_empty()).then(|| format!("PostToolUse hook: {}", said.join("\n")))
    }

    /// Before a prompt is written: `Err(reason)` when a hook refuses it,
    /// else the context the hooks add to it (with what SessionStart left).
    pub async fn user_prompt(&self, prompt: &str) -> Result<Vec<String>, String> {
        let mut context = self.hooks.take_context();
        let mut fields = Map::new();
        fields.insert("prompt".into(), prompt.into());
        let outcome = self
            .fire(
                Event::UserPromptSubmit,
                &[],
                fields,
                &CancellationToken::new(),
            )
            .await;
        if let Some(reason) = outcome.block.or(outcome.stop) {
            return Err(reason);
        }
        context.extend(outcome.context);
        Ok(context)
    }

    /// When the agent would stop: a hook's reason to go on, if any.
    /// `active` says a Stop hook already made this turn go on (Claude
    /// Code's `stop_hook_active`, which a hook checks to avoid a loop).
    pub async fn stop(
        &self,
        subagent: bool,
        active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let event = if subagent {
            Event::SubagentStop
        } else {
            Event::Stop
        };
        let mut fields = Map::new();
        fields.insert("stop_hook_active".into(), active.into());
        let outcome = self.fire(event, &[], fields, cancel).await;
        outcome.block
    }

    /// When the session's runtime starts; the hooks' context waits for the
    /// next prompt.
    pub async fn session_start(&self, resumed: bool) {
        let source = if resumed { "resume" } else { "startup" };
        let mut fields = Map::new();
        fields.insert("source".into(), source.into());
        let outcome = self
            .fire(
                Event::SessionStart,
                &[source],
                fields,
                &CancellationToken::new(),
            )
            .await;
        self.hooks.keep_context(outcome.context);
    }

    /// Before a compaction (`auto` or the user's `/compact`).
    pub async fn pre_compact(
        &self,
        auto: bool,
        instructions: Option<&str>,
        cancel: &CancellationToken,
    ) {
        let trigger = if auto { "auto" } else { "manual" };
        let mut fields = Map::new();
        fields.insert("trigger".into(), trigger.into());
        fields.insert(
            "custom_instructions".into(),
            instructions.unwrap_or("").into(),
        );
        self.fire(Event::PreCompact, &[trigger], fields, cancel)
            .await;
    }

    /// When cairn waits for the user (a permission question).
    pub async fn notification(&self, message: &str) {
        let mut fields = Map::new();
        fields.insert("message".into(), message.into());
        self.fire(Event::Notification, &[], fields, &CancellationToken::new())
            .await;
    }

    /// Writes a Stop hook's reason as a new user message, so the loop goes
    /// on with it as Claude Code does.
    pub async fn continue_with(
        &self,
        user: &UserMessage,
        reason: &str,
    ) -> Result<(), crate::store::Error> {
        let message = Message {
            id: crate::id::message_id(),
            session_id: self.session_id.to_string(),
            time_created: now_millis(),
            role: Role::User(user.clone()),
        };
        self.writer.message(&message).await?;
        let text = format!("A Stop hook asks you to continue: {reason}");
        let part = Part::new(
            &message,
            PartKind::Text(TextPart {
                text,
                synthetic: true,
                ..Default::default()
            }),
        );
        self.writer.part(&part).await
    }
}

/// Claude Code's name (`Bash`, `mcp__server__tool`) first, cairn's after,
/// so a hook reads the name it was written for.
fn tool_fields(names: &[&str], input: &Value, call_id: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    let name = names.last().copied().unwrap_or_default();
    fields.insert("tool_name".into(), name.into());
    fields.insert("tool_input".into(), input.clone());
    fields.insert("tool_use_id".into(), call_id.into());
    fields
}

/// The input as Claude Code's hooks expect it: `file_path`, absolute,
/// beside cairn's `path`.
fn claude_input(input: &Value, cwd: &Path) -> Value {
    let mut shown = input.clone();
    if let Some(object) = shown.as_object_mut()
        && let Some(path) = object.get("path").and_then(Value::as_str)
        && !object.contains_key("file_path")
    {
        let absolute = cwd.join(path).display().to_string();
        object.insert("file_path".into(), absolute.into());
    }
    shown
}

/// A hook's `updatedInput` back in cairn's shape: one of `path` and
/// `file_path` (the tools take either, not both), the one the hook changed.
fn from_claude_input(mut updated: Value, shown: &Value) -> Value {
    if let Some(object) = updated.as_object_mut()
        && object.contains_key("path")
        && object.contains_key("file_path")
    {
        if object.get("file_path") == shown.get("file_path") {
            object.remove("file_path");
        } else {
            object.remove("path");
        }
    }
    updated
}

/// What a PostToolUse hook reads as `tool_response`.
pub fn tool_response(output: &str, title: &str, metadata: &Value) -> Value {
    json!({ "output": output, "title": title, "metadata": metadata })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hooks_changed_file_path_wins_and_an_unchanged_one_is_dropped() {
        let cwd = Path::new("/p");
        let input = json!({"path": "a.txt"});
        let shown = claude_input(&input, cwd);
        assert_eq!(shown["file_path"], "/p/a.txt");
        let moved = from_claude_input(json!({"path": "a.txt", "file_path": "/p/b.txt"}), &shown);
        assert_eq!(moved, json!({"file_path": "/p/b.txt"}));
        let kept = from_claude_input(json!({"path": "c.txt", "file_path": "/p/a.txt"}), &shown);
        assert_eq!(kept, json!({"path": "c.txt"}));
    }
}
