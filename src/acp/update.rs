//! Update translation: bus events of one session -> ACP `session/update`s.
//!
//! Owns the per-turn memory the translation needs (which tool calls the
//! editor has already seen, how much of each text part was streamed, what a
//! running command has printed so far); owns no I/O. Also replays a stored
//! history as the same updates for `session/load` ([`replay`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;

use crate::bus::{DeltaField, Event};
use crate::gauge::ContextGauge;
use crate::message::{MessageWithParts, Part, PartKind, Role, ToolPart, ToolState};

/// Translates one session's events for the editor, remembering what it sent.
pub struct Translator {
    /// Where relative paths in tool inputs resolve, for the locations.
    cwd: PathBuf,
    /// Tool parts the editor has been told about (`tool_call` sent).
    announced: HashSet<String>,
    /// Bytes of each text or reasoning part already streamed as chunks.
    streamed: HashMap<String, usize>,
    /// A running tool's live output so far: ACP replaces a call's content
    /// with each update, so every update carries all of it.
    output: HashMap<String, String>,
    /// Tool part id -> call id, for the live-output deltas (which name the part).
    call_ids: HashMap<String, String>,
    /// Compaction summaries: not part of the answer, never streamed.
    hidden: HashSet<String>,
}

impl Translator {
    pub fn new(cwd: &Path) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            announced: HashSet::new(),
            streamed: HashMap::new(),
            output: HashMap::new(),
            call_ids: HashMap::new(),
            hidden: HashSet::new(),
        }
    }

    /// The updates `event` makes; empty for what the editor need not see.
    pub fn translate(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::MessageUpdated { message } => {
                if let Role::Assistant(assistant) = &message.role
                    && assistant.summary
                {
                    self.hidden.insert(message.id.clone());
                }
                Vec::new()
            }
            Event::PartDelta {
                message_id,
                part_id,
                field,
                delta,
                ..
            } => self.delta(message_id, part_id, *field, delta),
            Event::PartUpdated { part } => self.part(part),
            Event::Gauge { gauge, .. } => vec![usage(gauge)],
            Event::Notice { message, .. } => vec![message_chunk(format!("{message}\n"))],
            Event::Error { message, .. } => vec![message_chunk(format!("error: {message}\n"))],
            _ => Vec::new(),
        }
    }

    fn delta(
        &mut self,
        message_id: &str,
        part_id: &str,
        field: DeltaField,
        delta: &str,
    ) -> Vec<SessionUpdate> {
        if self.hidden.contains(message_id) {
            return Vec::new();
        }
        match field {
            DeltaField::Text => {
                *self.streamed.entry(part_id.to_string()).or_default() += delta.len();
                vec![message_chunk(delta.to_string())]
            }
            DeltaField::Reasoning => {
                *self.streamed.entry(part_id.to_string()).or_default() += delta.len();
                vec![thought_chunk(delta.to_string())]
            }
            DeltaField::ToolOutput => {
                let Some(call_id) = self.call_ids.get(part_id).cloned() else {
                    return Vec::new();
                };
                let output = self.output.entry(part_id.to_string()).or_default();
                output.push_str(delta);
                let fields = ToolCallUpdateFields::new()
                    .status(ToolCallStatus::InProgress)
                    .content(vec![text_content(output.clone())]);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id, fields,
                ))]
            }
            DeltaField::ToolInput => Vec::new(),
        }
    }

    fn part(&mut self, part: &Part) -> Vec<SessionUpdate> {
        match &part.kind {
            // A final text part: whatever its deltas did not carry (a
            // provider that sends no deltas, a reader that lagged).
            PartKind::Text(text)
                if !text.synthetic
                    && text.time.is_some_and(|t| t.end.is_some())
                    && !self.hidden.contains(&part.message_id) =>
            {
                self.rest_of(&part.id, &text.text)
                    .map(message_chunk)
                    .into_iter()
                    .collect()
            }
            PartKind::Reasoning(reasoning) if reasoning.time.end.is_some() => self
                .rest_of(&part.id, &reasoning.text)
                .map(thought_chunk)
                .into_iter()
                .collect(),
            PartKind::Tool(tool) => self.tool(part, tool),
            _ => Vec::new(),
        }
    }

    fn rest_of(&mut self, part_id: &str, text: &str) -> Option<String> {
        let sent = self.streamed.insert(part_id.to_string(), text.len());
        let rest = text.get(sent.unwrap_or(0)..)?;
        (!rest.is_empty()).then(|| rest.to_string())
    }

    fn tool(&mut self, part: &Part, tool: &ToolPart) -> Vec<SessionUpdate> {
        self.call_ids.insert(part.id.clone(), tool.call_id.clone());
        let mut updates = Vec::new();
        if self.announced.insert(part.id.clone()) {
            updates.push(SessionUpdate::ToolCall(tool_call(tool, &self.cwd)));
            if !tool.state.is_finished() {
                return updates;
            }
        }
        let mut fields = ToolCallUpdateFields::new()
            .status(status(&tool.state))
            .title(title(tool))
            .locations(locations(tool.state.input(), &self.cwd));
        if tool.state.is_finished() {
            fields = fields.content(content(tool, &self.cwd));
            self.output.remove(&part.id);
        } else if let Some(output) = self.output.get(&part.id) {
            fields = fields.content(vec![text_content(output.clone())]);
        }
        updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            tool.call_id.clone(),
            fields,
        )));
        if tool.tool == "todowrite"
            && let ToolState::Completed { input, .. } = &tool.state
        {
            updates.extend(plan(input));
        }
        updates
    }
}

/// The `tool_call` that introduces `tool` to the editor, in its current state.
fn tool_call(tool: &ToolPart, cwd: &Path) -> ToolCall {
    let mut call = ToolCall::new(tool.call_id.clone(), title(tool))
        .kind(kind(&tool.tool))
        .status(status(&tool.state))
        .locations(locations(tool.state.input(), cwd))
        .raw_input(tool.state.input().clone());
    if tool.state.is_finished() {
        call = call.content(content(tool, cwd));
    }
    call
}

/// What the editor groups the call under (its icon, whether it follows along).
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "edit" | "write" => ToolKind::Edit,
        "bash" | "bash_output" => ToolKind::Execute,
        "grep" | "glob" | "list" => ToolKind::Search,
        "webfetch" | "fetch" => ToolKind::Fetch,
        "todowrite" | "task" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn status(state: &ToolState) -> ToolCallStatus {
    match state {
        ToolState::Pending { .. } => ToolCallStatus::Pending,
        ToolState::Running { .. } => ToolCallStatus::InProgress,
        ToolState::Completed { .. } => ToolCallStatus::Completed,
        ToolState::Error { .. } => ToolCallStatus::Failed,
    }
}

/// The tool's own title once it has one, else `bash: cargo test`.
fn title(tool: &ToolPart) -> String {
    let own = match &tool.state {
        ToolState::Running { title, .. } => title.clone(),
        ToolState::Completed { title, .. } => Some(title.clone()),
        _ => None,
    };
    own.filter(|t| !t.is_empty()).unwrap_or_else(|| {
        let key = key_argument(tool.state.input());
        if key.is_empty() {
            tool.tool.clone()
        } else {
            format!("{}: {key}", tool.tool)
        }
    })
}

/// The argument that says most about a call, on one line.
fn key_argument(input: &Value) -> String {
    ["command", "path", "file_path", "filePath", "pattern", "url"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
        .and_then(|value| value.lines().next())
        .unwrap_or("")
        .to_string()
}

/// The input's path, absolute: the file the editor may open beside the call.
fn input_path(input: &Value, cwd: &Path) -> Option<PathBuf> {
    let path = ["path", "file_path", "filePath"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))?;
    Some(cwd.join(path))
}

fn locations(input: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let line = input.get("offset").and_then(Value::as_u64);
    input_path(input, cwd)
        .map(|path| {
            let location = ToolCallLocation::new(path);
            match line.and_then(|l| u32::try_from(l).ok()) {
                Some(line) => location.line(line),
                None => location,
            }
        })
        .into_iter()
        .collect()
}

/// A finished call's content: a diff for an edit or a write, else its
/// output (or error) as text.
fn content(tool: &ToolPart, cwd: &Path) -> Vec<ToolCallContent> {
    let input = tool.state.input();
    let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
    match (&tool.state, tool.tool.as_str()) {
        (ToolState::Completed { .. }, "edit") => {
            let (Some(path), Some(old), Some(new)) = (
                input_path(input, cwd),
                text("old_string").or_else(|| text("oldString")),
                text("new_string").or_else(|| text("newString")),
            ) else {
                return Vec::new();
            };
            vec![ToolCallContent::Diff(Diff::new(path, new).old_text(old))]
        }
        (ToolState::Completed { .. }, "write") => {
            let (Some(path), Some(new)) = (input_path(input, cwd), text("content")) else {
                return Vec::new();
            };
            vec![ToolCallContent::Diff(Diff::new(path, new))]
        }
        (ToolState::Completed { output, .. }, _) => vec![text_content(output.clone())],
        (ToolState::Error { error, .. }, _) => vec![text_content(error.clone())],
        _ => Vec::new(),
    }
}

/// The todo list as the editor's plan: `todowrite` always sends all of it.
fn plan(input: &Value) -> Option<SessionUpdate> {
    let todos = input.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .map(|todo| {
            let field = |key: &str| todo.get(key).and_then(Value::as_str).unwrap_or("");
            let status = match field("status") {
                "in_progress" => PlanEntryStatus::InProgress,
                "completed" | "cancelled" => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            let priority = match field("priority") {
                "high" => PlanEntryPriority::High,
                "low" => PlanEntryPriority::Low,
                _ => PlanEntryPriority::Medium,
            };
            PlanEntry::new(field("content"), priority, status)
        })
        .collect();
    Some(SessionUpdate::Plan(Plan::new(entries)))
}

/// The gauge as ACP's usage update: `used` of the usable window, with
/// cairn's whole gauge (compaction point, reserve) in `_meta`.
pub fn usage(gauge: &ContextGauge) -> SessionUpdate {
    let meta = serde_json::to_value(gauge)
        .ok()
        .and_then(|value| value.as_object().cloned())
        .map(|gauge| {
            let mut meta = serde_json::Map::new();
            meta.insert("cairn/gauge".into(), Value::Object(gauge));
            meta
        });
    SessionUpdate::UsageUpdate(UsageUpdate::new(gauge.used, gauge.usable).meta(meta))
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text))
}

pub fn message_chunk(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

fn thought_chunk(text: String) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text)))
}

/// A stored history as the updates that would have streamed it: the user's
/// messages, the answers, the thoughts and each tool call in its final state.
pub fn replay(history: &[MessageWithParts], cwd: &Path) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for entry in history {
        let is_user = matches!(entry.message.role, Role::User(_));
        if let Role::Assistant(assistant) = &entry.message.role
            && assistant.summary
        {
            continue;
        }
        for part in &entry.parts {
            match &part.kind {
                PartKind::Text(text) if !text.synthetic && !text.text.is_empty() => {
                    let chunk = ContentChunk::new(ContentBlock::from(text.text.clone()));
                    updates.push(if is_user {
                        SessionUpdate::UserMessageChunk(chunk)
                    } else {
                        SessionUpdate::AgentMessageChunk(chunk)
                    });
                }
                PartKind::Reasoning(reasoning) if !reasoning.text.is_empty() => {
                    updates.push(thought_chunk(reasoning.text.clone()));
                }
                PartKind::Tool(tool) => {
                    updates.push(SessionUpdate::ToolCall(tool_call(tool, cwd)));
                }
                _ => {}
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tools_map_to_the_editors_kinds() {
        let kinds = [
            ("read", ToolKind::Read),
            ("edit", ToolKind::Edit),
            ("write", ToolKind::Edit),
            ("bash", ToolKind::Execute),
            ("grep", ToolKind::Search),
            ("glob", ToolKind::Search),
            ("webfetch", ToolKind::Fetch),
            ("todowrite", ToolKind::Think),
            ("fx_lookup", ToolKind::Other),
        ];
        for (tool, expected) in kinds {
            assert_eq!(kind(tool), expected, "{tool}");
        }
    }

    #[test]
    fn a_relative_path_is_located_in_the_session_directory() {
        let located = locations(
            &json!({"path": "src/main.rs", "offset": 40}),
            Path::new("/p"),
        );
        assert_eq!(located[0].path, Path::new("/p/src/main.rs"));
        assert_eq!(located[0].line, Some(40));
        assert!(locations(&json!({"command": "ls"}), Path::new("/p")).is_empty());
    }

    #[test]
    fn a_final_text_part_sends_only_what_its_deltas_did_not() {
        let mut translator = Translator::new(Path::new("/p"));
        assert_eq!(translator.rest_of("prt_1", "Hel").as_deref(), Some("Hel"));
        assert_eq!(translator.rest_of("prt_1", "Hello").as_deref(), Some("lo"));
        assert_eq!(translator.rest_of("prt_1", "Hello"), None);
    }
}
