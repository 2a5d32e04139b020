//! The tools the model calls: the `Tool` trait, the context a call runs in,
//! and the registry that dispatches calls and truncates their output.
//!
//! One file per tool (schema, argument parsing and execution together);
//! adding a tool is a new file plus one line in [`Registry::builtin`].
//! Tools never touch the store or the bus: results go back to the caller,
//! live progress goes through [`ToolScope::progress`].

mod bash;
mod bash_git;
mod bash_output;
mod bash_sandbox;
mod edit;
mod glob;
mod grep;
mod lines;
mod list;
mod read;
mod skill;
mod todowrite;
pub mod truncate;
mod walk;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::message::FilePart;
use crate::permission::{PermissionError, PermissionRequest, Permissions, Preview};
use crate::provider::ToolSpec;

pub use bash::hide_from_commands;
pub use read::{Mentioned, read_mentioned};

/// What a finished tool call returns to the model (and the UI).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub title: String,
    pub output: String,
    pub metadata: Value,
    pub attachments: Vec<FilePart>,
}

impl ToolOutput {
    pub fn text(title: impl Into<String>, output: impl Into<String>, metadata: Value) -> Self {
        Self {
            title: title.into(),
            output: output.into(),
            metadata,
            attachments: Vec::new(),
        }
    }
}

/// Why a tool call failed. The `Display` text is what the model reads, so
/// each says what went wrong and what to try instead.
#[derive(thiserror::Error, Debug)]
pub enum ToolError {
    #[error(
        "The {tool} tool was called with invalid arguments: {detail}.\nPlease rewrite the input so it satisfies the expected schema."
    )]
    InvalidArguments { tool: String, detail: String },
    #[error("Unknown tool `{name}`. The available tools are: {available}.")]
    UnknownTool { name: String, available: String },
    #[error("{}", rejected_text(.message))]
    PermissionRejected { message: Option<String> },
    #[error("{message}")]
    PermissionDenied { message: String },
    /// The call was cancelled (Esc, or the turn ended); `output` is what the
    /// tool had produced so far.
    #[error("Tool execution aborted")]
    Interrupted { output: String },
    #[error("cannot {operation} {}: {source}", .path.display())]
    Io {
        operation: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Failed(String),
}

fn rejected_text(message: &Option<String>) -> String {
    match message {
        Some(feedback) => format!(
            "The user rejected permission to use this specific tool call with the following feedback: {feedback}"
        ),
        None => "The user rejected permission to use this specific tool call. Ask the user how to proceed \
                 instead of retrying the same call."
            .to_string(),
    }
}

impl ToolError {
    pub fn io(operation: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            operation,
            path: path.to_path_buf(),
            source,
        }
    }

    /// Metadata worth keeping on the errored part (the partial output of an
    /// interrupted command, whether it was interrupted).
    pub fn metadata(&self) -> Option<Value> {
        match self {
            Self::Interrupted { output } => Some(json!({ "interrupted": true, "output": output })),
            _ => None,
        }
    }
}

impl From<PermissionError> for ToolError {
    fn from(error: PermissionError) -> Self {
        match error {
            PermissionError::Denied { message, .. } => Self::PermissionDenied { message },
            PermissionError::Rejected { message } => Self::PermissionRejected { message },
            PermissionError::Cancelled => Self::Interrupted {
                output: String::new(),
            },
        }
    }
}

/// Output caps; defaults are OpenCode's (spec 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    pub max_lines: usize,
    pub max_bytes: usize,
    pub bash_timeout: Duration,
}

/// Lines kept of a tool's output before truncating (spec 8 `MAX_LINES`).
pub const MAX_LINES: usize = 2000;
/// Bytes kept of a tool's output before truncating (spec 8 `MAX_BYTES`).
pub const MAX_BYTES: usize = 50 * 1024;
/// Default bash timeout when the call gives none.
pub const BASH_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            max_lines: MAX_LINES,
            max_bytes: MAX_BYTES,
            bash_timeout: BASH_TIMEOUT,
        }
    }
}

/// Live updates of a running call, for its part in the UI.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolProgress {
    Title(String),
    /// Text to append to what the call has shown so far.
    Output(String),
    Metadata(Value),
}

/// An editor's view of the files (ACP `fs/read_text_file` and
/// `fs/write_text_file`): what `read`, `edit` and `write` use instead of the
/// disk when the editor serves it, so the model reads unsaved buffers and
/// its edits land in the editor's buffers.
#[async_trait::async_trait]
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// The file's text as the editor has it (its buffer when open).
    async fn read_text(&self, path: &Path) -> std::io::Result<String>;
    /// Replaces the file's text in the editor (which saves it).
    async fn write_text(&self, path: &Path, content: &str) -> std::io::Result<()>;
}

/// Everything a tool call may use.
#[derive(Debug, Clone)]
pub struct ToolScope {
    pub session_id: String,
    pub message_id: String,
    pub call_id: String,
    pub cwd: PathBuf,
    /// Project root (git root or cwd); paths outside it need `external_directory`.
    pub root: PathBuf,
    /// Where truncated outputs are spilled in full.
    pub tool_output_dir: PathBuf,
    pub cancel: CancellationToken,
    pub permissions: Arc<Permissions>,
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<ToolProgress>>,
    pub limits: OutputLimits,
    /// The calling agent has the `task` tool: a truncated output's hint
    /// tells it to delegate reading the full text to `explore`.
    pub can_delegate: bool,
    /// What a `bash` command may reach.
    pub sandbox: Arc<crate::sandbox::Policy>,
    /// The editor's files, when an editor serves them (`cairn acp`).
    pub editor: Option<Arc<dyn EditorFiles>>,
}

impl ToolScope {
    /// Sends a live update; a closed or absent receiver is not an error.
    pub fn report(&self, progress: ToolProgress) {
        if let Some(sender) = &self.progress {
            let _ = sender.send(progress);
        }
    }

    /// `path` as the tool will touch it: absolute, symlinks and `..` resolved.
    pub fn resolve(&self, path: &str) -> PathBuf {
        crate::permission::resolve_path(&self.cwd, Path::new(path))
    }

    /// `path` relative to the project root when inside it (for titles and
    /// permission patterns), else absolute.
    pub fn display_path(&self, path: &Path) -> String {
        let root = crate::permission::resolve_path(Path::new("/"), &self.root);
        match path.strip_prefix(&root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Asks `permission` for `patterns`, waiting with the call's cancel token.
    pub async fn ask(
        &self,
        permission: &str,
        patterns: Vec<String>,
        always: Vec<String>,
        title: String,
        metadata: Value,
    ) -> Result<(), ToolError> {
        self.ask_showing(None, permission, patterns, always, title, metadata)
            .await
    }

    /// [`ToolScope::ask`] with what the call will do (a diff, the new
    /// content) for the dialog to show before the user answers.
    pub async fn ask_showing(
        &self,
        preview: Option<Preview>,
        permission: &str,
        patterns: Vec<String>,
        always: Vec<String>,
        title: String,
        metadata: Value,
    ) -> Result<(), ToolError> {
        let request = PermissionRequest {
            id: format!("per_{}", crate::id::part_id().trim_start_matches("prt_")),
            session_id: self.session_id.clone(),
            call_id: Some(self.call_id.clone()),
            permission: permission.to_string(),
            patterns,
            always,
            title,
            metadata,
            preview,
            ..Default::default()
        };
        Ok(self
            .permissions
            .ask_cancellable(request, &self.cancel)
            .await?)
    }

    /// [`ToolScope::ask_showing`] for an `edit` of `path` (edit, write):
    /// the session's accept-edits mode allows it unasked when `path` lies
    /// inside the project.
    pub async fn ask_edit(
        &self,
        path: &Path,
        preview: Preview,
        shown: &str,
        title: String,
        metadata: Value,
    ) -> Result<(), ToolError> {
        let patterns = vec![shown.to_string()];
        let probe = PermissionRequest {
            permission: "edit".into(),
            patterns: patterns.clone(),
            ..Default::default()
        };
        if !crate::permission::is_external(&self.root, path)
            && self.permissions.accepts_edit(&probe)
        {
            return Ok(());
        }
        self.ask_showing(
            Some(preview),
            "edit",
            patterns,
            crate::permission::exact_always(shown),
            title,
            metadata,
        )
        .await
    }

    /// Asks what a bash line needs, in one question: denied when a rule
    /// denies any spelling of any part (before anything is asked); otherwise
    /// one dialog for the parts that did not pass (the command, its writes,
    /// paths outside the project), listing every reason, so a line with a
    /// `>` redirect is one question, not two in a row. The dialog's
    /// "always" stores the first asking part's offer (the command, when it
    /// asks); the others are granted for this run only and ask again next
    /// time.
    pub async fn ask_plan(
        &self,
        plan: crate::permission::bash_rules::BashPlan,
        command: &str,
        description: Option<&str>,
    ) -> Result<(), ToolError> {
        use crate::permission::Action;
        let mut pending = Vec::new();
        for ask in plan.asks {
            match self.permissions.check_planned(&ask) {
                (Action::Allow, _) => {}
                (Action::Deny, rule) => {
                    let message = crate::permission::denied_message(
                        &ask.permission,
                        &format!("`{command}`"),
                        rule.as_ref(),
                    );
                    return Err(ToolError::PermissionDenied { message });
                }
                (Action::Ask, _) => pending.push(ask),
            }
        }
        let mut pending = pending.into_iter();
        let Some(first) = pending.next() else {
            return Ok(());
        };
        let mut forced = !first.forced.is_empty();
        let mut reasons = self.asking_reasons(&first);
        for ask in pending {
            forced |= !ask.forced.is_empty();
            for reason in self.asking_reasons(&ask) {
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
        }
        let title = match first.permission.as_str() {
            "edit" => format!("Write (from bash): {}", first.patterns.join(", ")),
            "external_directory" => {
                format!("Access outside the project: {}", first.patterns.join(", "))
            }
            _ => format!("Run: {command}"),
        };
        // What did not pass first: the headless message suggests the first.
        let mut always = first.always;
        always.sort_by_key(|pattern| self.permissions.allows(&first.permission, pattern));
        let request = PermissionRequest {
            id: format!("per_{}", crate::id::part_id().trim_start_matches("prt_")),
            session_id: self.session_id.clone(),
            call_id: Some(self.call_id.clone()),
            permission: first.permission,
            patterns: first.patterns,
            always,
            always_broad: first.always_broad,
            reasons,
            title,
            metadata: json!({ "command": command }),
            preview: Some(Preview::Command {
                command: command.to_string(),
                description: description.map(str::to_string),
            }),
        };
        let answer = if forced {
            self.permissions.ask_forced(request, &self.cancel).await
        } else {
            self.permissions
                .ask_cancellable(request, &self.cancel)
                .await
        };
        Ok(answer?)
    }

    /// The reasons `ask` needs an answer: those of its patterns that did not
    /// pass on their own, or are forced.
    fn asking_reasons(&self, ask: &crate::permission::bash_rules::Ask) -> Vec<String> {
        ask.reasons
            .iter()
            .filter(|(pattern, _)| {
                ask.forced.contains(pattern) || !self.permissions.allows(&ask.permission, pattern)
            })
            .map(|(_, reason)| reason.clone())
            .collect()
    }

    /// Asks `external_directory` when `path` (resolved) lies outside the
    /// project root. The spill directory is always allowed, so the model can
    /// page through a truncated output.
    pub async fn check_external(&self, path: &Path, is_dir: bool) -> Result<(), ToolError> {
        let spill = crate::permission::resolve_path(Path::new("/"), &self.tool_output_dir);
        if !crate::permission::is_external(&self.root, path) || path.starts_with(&spill) {
            return Ok(());
        }
        let dir = if is_dir {
            path
        } else {
            path.parent().unwrap_or(path)
        };
        let pattern = format!("{}/*", dir.display());
        let resolved = path.display().to_string();
        // A directory whose own name holds `*` or `?` would widen the stored
        // pattern to its siblings (`o*/*` covers `other/`).
        let always = crate::permission::exact_always(&dir.display().to_string())
            .into_iter()
            .map(|_| pattern.clone())
            .collect();
        self.ask_showing(
            Some(Preview::Path { resolved }),
            "external_directory",
            vec![pattern],
            always,
            format!("Access outside the project: {}", path.display()),
            json!({ "path": path.display().to_string() }),
        )
        .await
    }
}

/// Parses a call's JSON input into the tool's argument struct.
/// Refuses anything that is not a regular file or a directory: opening a
/// FIFO blocks until a writer comes, a device such as /dev/zero never ends,
/// so either would hang the tool call for good.
pub(crate) fn refuse_special_file(path: &Path, meta: &std::fs::Metadata) -> Result<(), ToolError> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    let what = if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        return Ok(());
    };
    Err(ToolError::Failed(format!(
        "{} is {what}, not a regular file: reading or writing it could block forever. Use bash with a timeout if you really need it.",
        path.display()
    )))
}

pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|error| ToolError::InvalidArguments {
        tool: tool.to_string(),
        detail: error.to_string(),
    })
}

/// The JSON schema the model is shown for a tool's arguments, derived from the
/// type they parse into (field doc comments become descriptions), so the two
/// cannot drift apart. Inline, with optional fields as plain types and without
/// schemars' `$schema`, `title`, `format` and `null` types, which some OpenAI-compatible
/// servers reject and every request would pay for.
pub(crate) fn schema_for<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    strip_schema_noise(&mut schema);
    schema
}

/// Removes the keys a schema object does not need; a `properties` map is
/// descended into by value, so a field named `title` or `format` stays.
fn strip_schema_noise(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    for key in ["title", "format", "$schema"] {
        map.remove(key);
    }
    if map.get("minimum") == Some(&json!(0)) {
        map.remove("minimum");
    }
    // An optional field is one left out of `required`; `null` is not a value
    // the tools accept in its place.
    if let Some(Value::Array(types)) = map.get("type") {
        let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [only] = types[..] {
            let only = only.clone();
            map.insert("type".to_string(), only);
        }
    }
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(fields)) => {
                fields.values_mut().for_each(strip_schema_noise)
            }
            (_, Value::Array(items)) => items.iter_mut().for_each(strip_schema_noise),
            (_, value) => strip_schema_noise(value),
        }
    }
}

/// Tools the lean prompt leaves out: a todo list costs ~400 tokens of a
/// 4k window and helps little in a session that short; a skill's
/// instructions would fill it (the lean prompt lists no skills). The
/// session-level `task` tool is left out beside these (`build_request`).
pub const LEAN_OMITTED: &[&str] = &["todowrite", "skill"];

/// Up to the first sentence end (`. ` or a line break).
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let line = text.lines().next().unwrap_or(text);
    match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    }
}

/// A schema without `description` keys (a property named `description`
/// stays: `properties` is descended into by value).
fn without_descriptions(mut schema: Value) -> Value {
    fn strip(value: &mut Value) {
        let Value::Object(map) = value else {
            return;
        };
        if map.get("description").is_some_and(Value::is_string) {
            map.remove("description");
        }
        for (key, value) in map.iter_mut() {
            match (key.as_str(), value) {
                ("properties", Value::Object(fields)) => fields.values_mut().for_each(strip),
                (_, Value::Array(items)) => items.iter_mut().for_each(strip),
                (_, value) => strip(value),
            }
        }
    }
    strip(&mut schema);
    schema
}

/// A tool the model can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON schema of the arguments.
    fn parameters(&self) -> Value;
    /// Read-only tools are the ones the plan agent keeps.
    fn is_read_only(&self) -> bool;
    async fn execute(&self, input: Value, ctx: &ToolScope) -> Result<ToolOutput, ToolError>;
}

/// The tools by name.
#[derive(Clone)]
pub struct Registry {
    tools: BTreeMap<&'static str, Arc<dyn Tool>>,
    /// MCP servers' tools, which come and go while the session runs.
    mcp: Option<Arc<crate::mcp::Hub>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl Registry {
    pub fn builtin() -> Self {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(bash::Bash),
            Arc::new(read::Read),
            Arc::new(write::Write),
            Arc::new(edit::Edit),
            Arc::new(glob::Glob),
            Arc::new(grep::Grep),
            Arc::new(list::List),
            Arc::new(todowrite::TodoWrite),
            Arc::new(skill::SkillTool),
        ];
        Self {
            tools: tools.into_iter().map(|tool| (tool.name(), tool)).collect(),
            mcp: None,
        }
    }

    /// The built-in tools plus the tools of `hub`'s servers once ready.
    pub fn with_mcp(mut self, hub: Arc<crate::mcp::Hub>) -> Self {
        self.mcp = Some(hub);
        self
    }

    pub fn mcp(&self) -> Option<&Arc<crate::mcp::Hub>> {
        self.mcp.as_ref()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// Names in sorted order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().copied().collect()
    }

    /// Specs for the model of the tools `filter` keeps, sorted by name,
    /// then the ready MCP tools (never read-only: they are kept only when
    /// `filter` keeps the write tools, i.e. not for the plan agent).
    pub fn specs(&self, filter: impl Fn(&dyn Tool) -> bool) -> Vec<ToolSpec> {
        let writes_allowed = self
            .tools
            .get("write")
            .is_some_and(|write| filter(write.as_ref()));
        self.specs_with(filter, |_| writes_allowed)
    }

    /// [`Registry::specs`] with the MCP tools chosen by exposed name: an
    /// agent's `tools: Read, mcp__srv__tool` gets that one MCP tool.
    pub fn specs_with(
        &self,
        filter: impl Fn(&dyn Tool) -> bool,
        mcp: impl Fn(&str) -> bool,
    ) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .tools
            .values()
            .filter(|tool| filter(tool.as_ref()))
            .map(|tool| ToolSpec {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                parameters: tool.parameters(),
            })
            .collect();
        if let Some(hub) = self.mcp.as_ref() {
            specs.extend(hub.specs().into_iter().filter(|spec| mcp(&spec.name)));
        }
        specs
    }

    /// [`Registry::specs`] for a small window: no tool in [`LEAN_OMITTED`],
    /// each description cut to its first sentence and the parameters'
    /// descriptions dropped (names and types say enough).
    pub fn lean_specs(
        &self,
        filter: impl Fn(&dyn Tool) -> bool,
        mcp: impl Fn(&str) -> bool,
    ) -> Vec<ToolSpec> {
        self.specs_with(
            |tool| !LEAN_OMITTED.contains(&tool.name()) && filter(tool),
            mcp,
        )
        .into_iter()
        .map(|spec| ToolSpec {
            description: first_sentence(&spec.description).to_string(),
            parameters: without_descriptions(spec.parameters),
            name: spec.name,
        })
        .collect()
    }

    /// Runs `name`; its output passes through [`truncate::truncate`] unless
    /// the tool truncated itself (it set `metadata.truncated`).
    ///
    /// # Errors
    /// `UnknownTool` naming the real tools, or whatever the tool returns.
    pub async fn run(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolScope,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self.get(name).or_else(|| self.get(&name.to_lowercase()));
        let output = match (tool, &self.mcp) {
            (Some(tool), _) => tool.execute(input, ctx).await?,
            (None, Some(hub)) if hub.has_tool(name) => hub.call(name, input, ctx).await?,
            (None, _) => {
                return Err(ToolError::UnknownTool {
                    name: name.to_string(),
                    available: self.names().join(", "),
                });
            }
        };
        limit_output(output, ctx)
    }
}

/// Passes `output` through [`truncate::truncate`] unless the tool truncated
/// itself (it set `metadata.truncated`). Every tool's result goes through it,
/// the session-level `task` tool's too.
///
/// # Errors
/// When the full text cannot be saved to the spill directory.
pub fn limit_output(mut output: ToolOutput, ctx: &ToolScope) -> Result<ToolOutput, ToolError> {
    {
        if output.metadata.get("truncated").is_none() {
            // The full text is saved to a file the model may read back.
            output.output = crate::secret::redact(&output.output).into_owned();
            let result = truncate::truncate_for(
                &output.output,
                &ctx.limits,
                truncate::Direction::Head,
                &ctx.tool_output_dir,
                ctx.can_delegate,
            )
            .map_err(|error| {
                ToolError::io("save the full output to", &ctx.tool_output_dir, error)
            })?;
            if !output.metadata.is_object() {
                output.metadata = json!({});
            }
            output.metadata["truncated"] = json!(result.output_path.is_some());
            if let Some(path) = &result.output_path {
                output.metadata["output_path"] = json!(path.display().to_string());
            }
            output.output = result.text;
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schemas the model is shown, pinned: a change to an `Args` type or
    /// its doc comments shows up here for review.
    #[test]
    fn tool_schemas_derived_from_their_args() {
        let schemas: BTreeMap<&str, Value> = Registry::builtin()
            .tools
            .iter()
            .map(|(name, tool)| (*name, tool.parameters()))
            .collect();
        let pretty = serde_json::to_string_pretty(&schemas).expect("a JSON value serializes");
        insta::assert_snapshot!(pretty);
    }

    #[test]
    fn lean_specs_drop_todowrite_skill_and_long_descriptions() {
        let registry = Registry::builtin();
        let full = registry.specs(|_| true);
        let lean = registry.lean_specs(|_| true, |_| true);
        for omitted in LEAN_OMITTED {
            assert!(full.iter().any(|s| s.name == *omitted), "{omitted}");
            assert!(lean.iter().all(|s| s.name != *omitted), "{omitted}");
        }
        assert_eq!(lean.len(), full.len() - LEAN_OMITTED.len());
        let size = |specs: &[ToolSpec]| serde_json::to_string(specs).map_or(0, |s| s.len());
        assert!(
            size(&lean) * 2 < size(&full),
            "{} vs {}",
            size(&lean),
            size(&full)
        );
        for spec in &lean {
            assert!(!spec.description.contains('\n'), "{}", spec.name);
            assert!(!spec.parameters.to_string().contains("\"description\":\""));
            // The schema's shape is kept: every required field is still there.
            let original = full
                .iter()
                .find(|s| s.name == spec.name)
                .map(|s| &s.parameters);
            assert_eq!(
                original.map(|p| &p["required"]),
                Some(&spec.parameters["required"])
            );
        }
    }

    #[test]
    fn a_property_named_description_survives_the_lean_schema() {
        let schema = json!({
            "type": "object",
            "description": "drop me",
            "properties": {"description": {"type": "string", "description": "drop me too"}},
        });
        assert_eq!(
            without_descriptions(schema),
            json!({"type": "object", "properties": {"description": {"type": "string"}}})
        );
        assert_eq!(
            first_sentence("Reads a file. Then more.\nLine two"),
            "Reads a file."
        );
        assert_eq!(first_sentence("One line only"), "One line only");
    }
}
