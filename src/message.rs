//! The message model: `Session` -> `Message` (user | assistant) -> `Part`.
//!
//! Pure data shared by every layer (store, session loop, providers' request
//! building, TUI). It owns the shapes and the few rules that are facts about the
//! data itself (what a completed compaction point is, how tokens add up); it does
//! no I/O. Serialized with serde as tagged JSON; the store keeps that JSON as is.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Millis;

/// A model named as `provider/model`, e.g. `anthropic/claude-sonnet-4-5`.
/// The model part may itself contain `/` (`openrouter/qwen/qwen3-coder`).
/// Serialized as that one string, in config files and in the store alike.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

impl ModelRef {
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
        }
    }

    /// Parses `provider/model`; the error says what was expected and what was given.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Err("expected \"provider/model\", got an empty string".to_owned());
        }
        match text.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                Ok(Self::new(provider, model))
            }
            _ => Err(format!(
                "expected \"provider/model\" (like \"anthropic/claude-sonnet-4-5\"), got {text:?}"
            )),
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

impl Serialize for ModelRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ModelRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Tokens of cache reads and writes, reported separately by providers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheTokens {
    pub read: u64,
    pub write: u64,
}

/// Token usage of one request. `input` excludes cache reads and writes, and
/// `output` excludes reasoning, so that the fields add up without overlap.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache: CacheTokens,
}

impl Tokens {
    /// The size of the request these tokens describe, as the overflow rule
    /// counts it (seed 003): `total || input + output + cache.read + cache.write`,
    /// where a provider's output includes its reasoning. `output` here
    /// excludes it, so it is added back; a reported total has it already.
    pub fn context_count(&self) -> u64 {
        match self.total {
            Some(total) if total > 0 => total,
            _ => self.input + self.output + self.reasoning + self.cache.read + self.cache.write,
        }
    }

    /// Field-wise sum, for session totals.
    pub fn saturating_add(&self, other: &Tokens) -> Tokens {
        Tokens {
            total: None,
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            reasoning: self.reasoning.saturating_add(other.reasoning),
            cache: CacheTokens {
                read: self.cache.read.saturating_add(other.cache.read),
                write: self.cache.write.saturating_add(other.cache.write),
            },
        }
    }
}

/// A conversation in one working directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub title: String,
    pub directory: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub time_created: Millis,
    pub time_updated: Millis,
    /// Sum of the cost of every step-finish part, kept by the store.
    #[serde(default)]
    pub cost: f64,
    /// Sum of the tokens of every step-finish part, kept by the store.
    #[serde(default)]
    pub tokens: Tokens,
}

/// Why a model's turn (one step) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Error,
    #[serde(other)]
    Unknown,
}

/// What went wrong with an assistant message, kept on the message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageError {
    pub kind: MessageErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageErrorKind {
    /// The user interrupted the turn; content received so far is kept.
    Aborted,
    ContextOverflow,
    Auth,
    Api,
    OutputLength,
    ContentFilter,
    #[serde(other)]
    Unknown,
}

/// Working directory and project root an assistant message ran in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePath {
    pub cwd: String,
    pub root: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub agent: String,
    pub model: ModelRef,
    /// Extra system text for this turn only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The user message this answers.
    pub parent_id: String,
    pub agent: String,
    pub model: ModelRef,
    #[serde(default)]
    pub path: MessagePath,
    /// True for a compaction summary.
    #[serde(default)]
    pub summary: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MessageError>,
    /// Usage of the *last* step: the size of the latest request, not a sum.
    #[serde(default)]
    pub tokens: Tokens,
    /// Sum of the cost of this message's steps.
    #[serde(default)]
    pub cost: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_completed: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Role {
    User(UserMessage),
    Assistant(AssistantMessage),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub session_id: String,
    pub time_created: Millis,
    #[serde(flatten)]
    pub role: Role,
}

impl Message {
    pub fn is_user(&self) -> bool {
        matches!(self.role, Role::User(_))
    }

    pub fn as_user(&self) -> Option<&UserMessage> {
        match &self.role {
            Role::User(user) => Some(user),
            Role::Assistant(_) => None,
        }
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match &self.role {
            Role::Assistant(assistant) => Some(assistant),
            Role::User(_) => None,
        }
    }

    pub fn as_assistant_mut(&mut self) -> Option<&mut AssistantMessage> {
        match &mut self.role {
            Role::Assistant(assistant) => Some(assistant),
            Role::User(_) => None,
        }
    }
}

/// Start and optional end of a streamed part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeSpan {
    pub start: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Millis>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    pub text: String,
    /// Injected by cairn, not typed by the user or written by the model.
    #[serde(default, skip_serializing_if = "is_false")]
    pub synthetic: bool,
    /// Shown to the user but never sent to the model.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignored: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeSpan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningPart {
    pub text: String,
    /// Provider signature that must be sent back unchanged (Anthropic thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Opaque redacted-thinking payload (Anthropic); the text is empty then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    #[serde(default)]
    pub time: TimeSpan,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTime {
    pub start: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Millis>,
    /// Set when prune cleared this output from the model's view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<Millis>,
}

/// The life of a tool call: pending -> running -> completed | error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ToolState {
    Pending {
        #[serde(default)]
        input: Value,
        #[serde(default)]
        raw: String,
    },
    Running {
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        time: ToolTime,
    },
    Completed {
        input: Value,
        output: String,
        title: String,
        #[serde(default)]
        metadata: Value,
        time: ToolTime,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<FilePart>,
    },
    Error {
        input: Value,
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        time: ToolTime,
    },
}

impl ToolState {
    pub fn input(&self) -> &Value {
        match self {
            ToolState::Pending { input, .. }
            | ToolState::Running { input, .. }
            | ToolState::Completed { input, .. }
            | ToolState::Error { input, .. } => input,
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(self, ToolState::Completed { .. } | ToolState::Error { .. })
    }

    pub fn status_name(&self) -> &'static str {
        match self {
            ToolState::Pending { .. } => "pending",
            ToolState::Running { .. } => "running",
            ToolState::Completed { .. } => "completed",
            ToolState::Error { .. } => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolPart {
    /// The provider's id for this call; the result must carry the same id.
    pub call_id: String,
    pub tool: String,
    pub state: ToolState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePart {
    pub mime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// `data:` or `file:` URL.
    pub url: String,
}

/// Placed on a user message: a request to summarize the history before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionPart {
    /// Triggered by the overflow check rather than `/compact`.
    pub auto: bool,
    /// Triggered by a provider context-overflow error (the last request failed).
    #[serde(default)]
    pub overflow: bool,
    /// First message of the recent tail kept verbatim after the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_start_id: Option<String>,
    /// Focus the user gave with `/compact <instructions>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The context's size as the gauge showed it before and after, written
    /// once the summary is in place: the notice and the transcript's marker
    /// both show these, so one compaction has one pair of figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<CompactedTokens>,
    /// What the working state carried past the summary, written with
    /// `tokens`: the marker, `cairn run`'s events and `/context` read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<Carried>,
}

/// What a compaction summarized and what cairn carried verbatim after the
/// summary (the working state, built from the session's records).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carried {
    /// Messages the summary replaced.
    pub summarized_messages: u32,
    /// The user's own messages carried verbatim, and those left out for the budget.
    pub user_messages: u32,
    #[serde(default)]
    pub omitted_user_messages: u32,
    /// Files the session changed, and read without changing.
    pub changed_files: u32,
    pub read_files: u32,
    /// Files whose current text was carried (read from disk at compaction).
    pub file_texts: u32,
    /// Todo items carried, and how many of them are still open.
    pub todos: u32,
    pub open_todos: u32,
    /// Skills the session loaded (named, their instructions re-attached within budget).
    pub skills: u32,
    /// The working state's size in tokens.
    pub tokens: u64,
    /// The summary was empty, very short or named none of the changed files.
    #[serde(default, skip_serializing_if = "is_false")]
    pub thin_summary: bool,
}

/// What a compaction did to the context, in the gauge's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactedTokens {
    pub before: u64,
    pub after: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskPart {
    pub prompt: String,
    pub description: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStartPart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFinishPart {
    pub reason: FinishReason,
    pub tokens: Tokens,
    pub cost: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchPart {
    /// The snapshot before the step: `/undo` puts `files` back as it had them.
    pub hash: String,
    pub files: Vec<String>,
    /// The snapshot after the step's tools finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Each changed file with its line counts and the tool that changed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<PatchFile>,
    /// Files cairn's own `edit`/`write` changed where the snapshot cannot
    /// see (issue #35): `/undo` puts each back from its kept copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<KeptFile>,
    /// What the step changed that `/undo` cannot put back, said plainly
    /// ("build/ is ignored"): the card and `/undo`'s answer show it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrestorable: Vec<String>,
    /// Files kept by earlier steps of the same turn, as this step (a shell
    /// command) left them: only their `after` counts, so that `/undo`
    /// calls a change a hand edit only when it came after the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refreshed: Vec<KeptFile>,
}

/// A file cairn's own `edit` or `write` changed that the step's snapshot
/// cannot see (ignored, in a nested repository or submodule, over the size
/// cap, outside the project): its content before the step was copied into
/// the snapshot store just before the tool wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptFile {
    /// Absolute path.
    pub path: String,
    /// The id of the copy of its content before; `None`: it did not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The file as the step left it (`None`: it did not exist), so that
    /// `/undo` can tell a hand edit since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Fingerprint>,
}

/// A file's size and a hash of its bytes: enough to tell "changed since".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub len: u64,
    /// FNV-1a 64 of the bytes, in hex (stable across Rust versions).
    pub hash: String,
}

/// One file a step changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchFile {
    pub path: String,
    /// `added`, `modified` or `deleted`.
    pub kind: String,
    pub added: u32,
    pub removed: u32,
    /// The tool that changed it: `edit`, `write`, or `bash` for a file no
    /// edit or write named.
    pub by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum PartKind {
    Text(TextPart),
    Reasoning(ReasoningPart),
    Tool(ToolPart),
    File(FilePart),
    Compaction(CompactionPart),
    Subtask(SubtaskPart),
    StepStart(StepStartPart),
    StepFinish(StepFinishPart),
    Patch(PatchPart),
}

impl Carried {
    /// "2 of your messages, 3 files changed, 1 file's text, 2 open todos, 1
    /// skill": what the working state holds, in the marker's and notice's words;
    /// `None` when it holds nothing.
    pub fn words(&self) -> Option<String> {
        let plural = |n: u32, one: &str, many: &str| {
            (n > 0).then(|| format!("{n} {}", if n == 1 { one } else { many }))
        };
        let items: Vec<String> = [
            plural(self.user_messages, "of your messages", "of your messages"),
            plural(self.changed_files, "file changed", "files changed"),
            plural(self.read_files, "file read", "files read"),
            plural(self.file_texts, "file's text", "files' text"),
            plural(self.open_todos, "open todo", "open todos"),
            plural(self.skills, "skill", "skills"),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!items.is_empty()).then(|| items.join(", "))
    }
}

/// Metadata key of the summary message's text part that holds the working
/// state: sent to the model after the summary, as the user's side of the
/// conversation, and never taken for the summary itself.
pub const WORKING_STATE_METADATA: &str = "working_state";

impl TextPart {
    /// This text is a compaction's working state (see [`WORKING_STATE_METADATA`]).
    pub fn is_working_state(&self) -> bool {
        self.metadata
            .as_ref()
            .is_some_and(|m| m.get(WORKING_STATE_METADATA).is_some())
    }
}

impl PartKind {
    /// The `type` tag, also stored in its own column for queries.
    pub fn type_name(&self) -> &'static str {
        match self {
            PartKind::Text(_) => "text",
            PartKind::Reasoning(_) => "reasoning",
            PartKind::Tool(_) => "tool",
            PartKind::File(_) => "file",
            PartKind::Compaction(_) => "compaction",
            PartKind::Subtask(_) => "subtask",
            PartKind::StepStart(_) => "step-start",
            PartKind::StepFinish(_) => "step-finish",
            PartKind::Patch(_) => "patch",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub id: String,
    pub message_id: String,
    pub session_id: String,
    #[serde(flatten)]
    pub kind: PartKind,
    /// Token count of what this part sends to the model, computed once.
    /// Serialized as `token_count`: a flattened step-finish kind has its own
    /// `tokens` field, and two keys of one name would not read back.
    #[serde(
        rename = "token_count",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tokens: Option<u32>,
}

impl Part {
    pub fn new(message: &Message, kind: PartKind) -> Self {
        Self {
            id: crate::id::part_id(),
            message_id: message.id.clone(),
            session_id: message.session_id.clone(),
            kind,
            tokens: None,
        }
    }

    pub fn as_tool(&self) -> Option<&ToolPart> {
        match &self.kind {
            PartKind::Tool(tool) => Some(tool),
            _ => None,
        }
    }

    pub fn as_compaction(&self) -> Option<&CompactionPart> {
        match &self.kind {
            PartKind::Compaction(compaction) => Some(compaction),
            _ => None,
        }
    }
}

/// A message with its parts in id (creation) order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageWithParts {
    pub message: Message,
    pub parts: Vec<Part>,
}

impl MessageWithParts {
    pub fn compaction(&self) -> Option<&CompactionPart> {
        self.parts.iter().find_map(Part::as_compaction)
    }

    /// About how many bytes of text the message carries (texts, reasoning,
    /// tool inputs and outputs), for read budgets; cheap, never serialized.
    pub fn content_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match &part.kind {
                PartKind::Text(text) => text.text.len(),
                PartKind::Reasoning(reasoning) => reasoning.text.len(),
                PartKind::Tool(tool) => {
                    let input = json_text_bytes(tool.state.input());
                    input
                        + match &tool.state {
                            // Pruned: the model sees a placeholder, and a
                            // window-sized budget must not count what it
                            // cleared (a session that prunes as it goes is
                            // not one to cut).
                            ToolState::Completed { time, .. } if time.compacted.is_some() => 64,
                            ToolState::Completed { output, .. } => output.len() + 64,
                            ToolState::Error { error, .. } => error.len() + 64,
                            _ => 64,
                        }
                }
                _ => 64,
            })
            .sum()
    }

    /// An assistant summary that finished without error: the far side of a
    /// completed compaction point.
    pub fn is_completed_summary(&self) -> bool {
        self.message
            .as_assistant()
            .is_some_and(|a| a.summary && a.finish.is_some() && a.error.is_none())
    }
}

/// The bytes of the strings in `value` (a tool input: a written file's
/// content is one of them), without serializing it.
fn json_text_bytes(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(text) => text.len(),
        serde_json::Value::Array(items) => items.iter().map(json_text_bytes).sum(),
        serde_json::Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| key.len() + json_text_bytes(value))
            .sum(),
        _ => 8,
    }
}

/// Reading newest to oldest, decides where the model's view of history starts.
///
/// A completed compaction point is a user message with a compaction part whose
/// summary (an assistant with `summary = true`, `parent_id` = that user message)
/// finished without error (seed 002 section 4). Reading stops at that user
/// message, or, when the compaction kept a verbatim tail, at the tail's first
/// message. Messages are fed newest first; the scan never needs older ones.
///
/// A scan [`within`](Self::within) a budget also stops, at the start of a
/// turn, once the content read exceeds it: a session never compacted (or
/// imported) is read as far as any model window can reach, not whole. Such
/// a read is [`cut`](Self::was_cut): the loop compacts it before sending it.
#[derive(Debug, Default)]
pub struct HistoryScan {
    completed_summary_parents: Vec<String>,
    tail_start: Option<String>,
    done: bool,
    budget: Option<usize>,
    read_bytes: usize,
    cut: bool,
}

/// The largest budget of a loop's model view read: about two million tokens
/// of text and code, twice the largest window a model offers today. Used
/// whole when the window is not known.
pub const VIEW_BUDGET_BYTES: usize = 8 << 20;

/// Bytes of content a loop's read holds per token of the model's window.
/// Text and code run 3-4 bytes a token, so a cut read is about twice the
/// window and never drops what a request could hold; after the summary's
/// first shrink step (tool outputs cut to 2,000 characters) it is about
/// what one summary request can carry, so reading further back would only
/// be dropped again.
pub const VIEW_BYTES_PER_WINDOW_TOKEN: u64 = 8;

/// The budget of a loop's model view read for a model whose window is
/// `window_tokens` (0: unknown): [`VIEW_BYTES_PER_WINDOW_TOKEN`] per token,
/// at most [`VIEW_BUDGET_BYTES`]. A 128k window reads back 1 MiB.
pub fn view_budget(window_tokens: u64) -> usize {
    if window_tokens == 0 {
        return VIEW_BUDGET_BYTES;
    }
    let bytes = window_tokens.saturating_mul(VIEW_BYTES_PER_WINDOW_TOKEN);
    usize::try_from(bytes).map_or(VIEW_BUDGET_BYTES, |b| b.min(VIEW_BUDGET_BYTES))
}

/// What to do with the message just fed to a [`HistoryScan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStep {
    /// Keep it and read the next older message.
    Keep,
    /// Keep it; it is the oldest message the model sees.
    KeepAndStop,
}

impl HistoryScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// A scan that also stops past `budget` bytes of content (`None`: never).
    pub fn within(budget: Option<usize>) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the scan stopped at its budget rather than at a compaction
    /// point or the session's start: older messages exist that it left out.
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// Feeds the next older message.
    pub fn push(&mut self, message: &MessageWithParts) -> ScanStep {
        if self.done {
            return ScanStep::KeepAndStop;
        }
        if let Some(tail_start) = &self.tail_start {
            if &message.message.id == tail_start {
                self.done = true;
                return ScanStep::KeepAndStop;
            }
            return ScanStep::Keep;
        }
        if message.is_completed_summary()
            && let Some(assistant) = message.message.as_assistant()
        {
            self.completed_summary_parents
                .push(assistant.parent_id.clone());
        }
        if message.message.is_user()
            && self
                .completed_summary_parents
                .iter()
                .any(|id| id == &message.message.id)
            && let Some(compaction) = message.compaction()
        {
            match &compaction.tail_start_id {
                Some(tail) if tail < &message.message.id => {
                    self.tail_start = Some(tail.clone());
                    return ScanStep::Keep;
                }
                _ => {
                    self.done = true;
                    return ScanStep::KeepAndStop;
                }
            }
        }
        self.read_bytes += message.content_bytes();
        if message.message.is_user() && self.budget.is_some_and(|b| self.read_bytes > b) {
            // A turn starts here: what is kept begins with a user message,
            // so no tool call is cut from its result.
            self.done = true;
            self.cut = true;
            return ScanStep::KeepAndStop;
        }
        ScanStep::Keep
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Whether `assistant` ended a step that the model must see the tool results
/// of. Calling tools is what decides, not the finish reason: several
/// OpenAI-compatible servers and gateways end a tool call with `stop`, no
/// reason or one of their own. A step that failed (`error`) is over anyway.
pub fn wants_tool_results(assistant: &MessageWithParts) -> bool {
    let Some(info) = assistant.message.as_assistant() else {
        return false;
    };
    match info.finish {
        Some(FinishReason::ToolCalls) => true,
        Some(FinishReason::Error) | None => false,
        Some(_) => assistant.parts.iter().any(|part| part.as_tool().is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overflow_count_has_reasoning_once() {
        let tokens = Tokens {
            total: None,
            input: 1_000,
            output: 200,
            reasoning: 300,
            cache: CacheTokens { read: 50, write: 0 },
        };
        assert_eq!(tokens.context_count(), 1_550);
        let reported = Tokens {
            total: Some(1_550),
            ..tokens
        };
        assert_eq!(reported.context_count(), 1_550, "a total already has it");
    }

    #[test]
    fn a_step_finish_part_round_trips_through_its_own_serde_form() {
        let part = Part {
            id: "prt_1".into(),
            message_id: "msg_1".into(),
            session_id: "ses_1".into(),
            kind: PartKind::StepFinish(StepFinishPart {
                reason: FinishReason::ToolCalls,
                tokens: Tokens {
                    input: 10,
                    output: 5,
                    ..Default::default()
                },
                cost: 0.5,
                snapshot: None,
            }),
            tokens: Some(7),
        };
        let json = serde_json::to_string(&part).expect("serialize");
        let back: Part = serde_json::from_str(&json).expect("a step-finish part reads back");
        assert_eq!(back, part);
    }

    fn turn(n: usize, bytes: usize) -> [MessageWithParts; 2] {
        let message = |id: String, role: Role| Message {
            id,
            session_id: "ses".into(),
            time_created: 0,
            role,
        };
        let user = message(
            format!("msg_{n:03}a"),
            Role::User(UserMessage {
                agent: "build".into(),
                model: ModelRef::new("p", "m"),
                system: None,
            }),
        );
        let answer = message(
            format!("msg_{n:03}b"),
            Role::Assistant(AssistantMessage {
                parent_id: user.id.clone(),
                agent: "build".into(),
                model: ModelRef::new("p", "m"),
                path: MessagePath::default(),
                summary: false,
                finish: Some(FinishReason::Stop),
                error: None,
                tokens: Tokens::default(),
                cost: 0.0,
                time_completed: None,
            }),
        );
        let text = |message: &Message, text: String| {
            Part::new(
                message,
                PartKind::Text(TextPart {
                    text,
                    ..TextPart::default()
                }),
            )
        };
        [
            MessageWithParts {
                parts: vec![text(&user, "q".into())],
                message: user,
            },
            MessageWithParts {
                parts: vec![text(&answer, "a".repeat(bytes))],
                message: answer,
            },
        ]
    }

    /// Feeds `history` newest first; the index of the oldest message kept.
    fn scan_start(scan: &mut HistoryScan, history: &[MessageWithParts]) -> usize {
        history
            .iter()
            .rposition(|m| scan.push(m) == ScanStep::KeepAndStop)
            .unwrap_or(0)
    }

    #[test]
    fn a_budgeted_scan_stops_at_the_turn_that_passes_the_budget() {
        let history: Vec<MessageWithParts> = (0..10).flat_map(|n| turn(n, 100)).collect();
        let mut unbounded = HistoryScan::within(None);
        assert_eq!(scan_start(&mut unbounded, &history), 0);
        assert!(!unbounded.was_cut());
        // Each turn is 101 bytes: the fourth newest passes 350 and is kept
        // whole, from its user message.
        let mut budgeted = HistoryScan::within(Some(350));
        assert_eq!(scan_start(&mut budgeted, &history), 12);
        assert!(budgeted.was_cut());
        assert!(history[12].message.is_user());
        // Within the budget, the session's start is reached and nothing is cut.
        let mut roomy = HistoryScan::within(Some(100_000));
        assert_eq!(scan_start(&mut roomy, &history), 0);
        assert!(!roomy.was_cut());
    }

    #[test]
    fn the_read_budget_follows_the_window_up_to_the_cap() {
        assert_eq!(view_budget(128_000), 1_024_000);
        assert_eq!(view_budget(8_000), 64_000);
        assert_eq!(view_budget(1_000_000), 8_000_000);
        assert_eq!(view_budget(2_000_000), VIEW_BUDGET_BYTES);
        assert_eq!(view_budget(0), VIEW_BUDGET_BYTES, "unknown window");
        assert_eq!(view_budget(u64::MAX), VIEW_BUDGET_BYTES);
    }

    #[test]
    fn a_pruned_output_counts_as_its_placeholder() {
        let [message, _] = turn(1, 0).map(|m| m.message);
        let with_output = |compacted: Option<Millis>| {
            let tool = ToolPart {
                call_id: "call_1".into(),
                tool: "read".into(),
                state: ToolState::Completed {
                    input: serde_json::json!({}),
                    output: "x".repeat(10_000),
                    title: String::new(),
                    metadata: Value::Null,
                    time: ToolTime {
                        start: 0,
                        end: Some(1),
                        compacted,
                    },
                    attachments: Vec::new(),
                },
            };
            MessageWithParts {
                parts: vec![Part::new(&message, PartKind::Tool(tool))],
                message: message.clone(),
            }
            .content_bytes()
        };
        assert_eq!(with_output(None), 10_064);
        assert_eq!(with_output(Some(5)), 64);
    }
}
