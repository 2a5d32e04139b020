//! Runs the tool calls of one step, in call order, while the stream goes on.
//!
//! Calls run one at a time (an edit followed by a test run must not race),
//! each starting as soon as its arguments are complete. Before each call the
//! doom-loop detector looks at the session's recent calls; live output is
//! published as deltas; every call ends as a completed or error part, also when
//! the user interrupts (the whole process group is killed by the tool).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::bus::DeltaField;
use crate::clock::now_millis;
use crate::message::{Part, PartKind, ToolPart, ToolState, ToolTime};
use crate::permission::{PermissionError, PermissionRequest};
use crate::session::Error;
use crate::session::agent::ToolAccess;
use crate::session::ctx::SessionCtx;
use crate::session::doom::{self, CallSignature, Verdict};
use crate::shared::lock;
use crate::tool::{ToolError, ToolProgress, ToolScope};

/// How long interrupted tools get to wind down before they are abandoned.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// Longest live-output preview kept on a running part (the tail).
const LIVE_OUTPUT_MAX: usize = 30_000;

pub struct ToolCall {
    pub part: Part,
    pub name: String,
    pub input: Value,
    /// Set when the call must not run (its file's pre-image could not be
    /// kept): the model gets this as the tool's error.
    pub refusal: Option<String>,
}

pub struct ToolRunner {
    ctx: Arc<SessionCtx>,
    access: ToolAccess,
    history: Vec<CallSignature>,
    cancel: CancellationToken,
    sender: Option<mpsc::UnboundedSender<ToolCall>>,
    task: Option<JoinHandle<Result<bool, Error>>>,
    /// Submitted calls that have not finished, so an interrupt can mark them.
    unfinished: Arc<Mutex<Vec<Part>>>,
    blocked: bool,
    /// Output caps of this step's calls (the configured ones, or smaller
    /// for a small window).
    limits: crate::tool::OutputLimits,
    /// The step's request offered the `task` tool (for the truncation hint).
    can_delegate: bool,
    /// What this step's calls are checked against: the session's, or with
    /// the step's agent's own rules on top.
    permissions: Arc<crate::permission::Permissions>,
}

impl ToolRunner {
    /// `history` holds the session's recent calls, oldest first, for the
    /// doom-loop detector; `cancel` is the loop's token.
    pub fn new(
        ctx: Arc<SessionCtx>,
        access: ToolAccess,
        history: Vec<CallSignature>,
        cancel: CancellationToken,
    ) -> Self {
        let ctx_limits = ctx.settings.tool_limits;
        Self {
            access,
            history,
            cancel: cancel.child_token(),
            sender: None,
            task: None,
            unfinished: Arc::new(Mutex::new(Vec::new())),
            blocked: false,
            limits: ctx_limits,
            can_delegate: false,
            permissions: ctx.permissions.clone(),
            ctx,
        }
    }

    /// Checks this step's calls with `rules` (an agent's own `permission:`)
    /// after the session's, so the agent's deny holds.
    pub fn with_agent_rules(mut self, rules: &[crate::permission::Rule]) -> Self {
        if !rules.is_empty() {
            self.permissions = Arc::new(self.ctx.permissions.for_agent(rules));
        }
        self
    }

    /// Says that this step's agent was offered the `task` tool: truncated
    /// outputs then point to delegating the full text to `explore`.
    pub fn with_delegation(mut self, can_delegate: bool) -> Self {
        self.can_delegate = can_delegate;
        self
    }

    /// Caps this step's tool outputs at `limits` instead of the configured ones.
    pub fn with_output_limits(mut self, limits: crate::tool::OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// True when a call was rejected or stopped so that the loop must stop.
    pub fn blocked(&self) -> bool {
        self.blocked
    }

    pub fn submit(&mut self, call: ToolCall) {
        lock(&self.unfinished).push(call.part.clone());
        if self.sender.is_none() {
            let (sender, receiver) = mpsc::unbounded_channel();
            let worker = Worker {
                ctx: self.ctx.clone(),
                access: self.access.clone(),
                history: std::mem::take(&mut self.history),
                cancel: self.cancel.clone(),
                unfinished: self.unfinished.clone(),
                limits: self.limits,
                can_delegate: self.can_delegate,
                permissions: self.permissions.clone(),
            };
            self.task = Some(tokio::spawn(worker.run(receiver)));
            self.sender = Some(sender);
        }
        if let Some(sender) = &self.sender {
            // The worker only ends after the sender is dropped, so this cannot fail.
            let _ = sender.send(call);
        }
    }

    /// Waits until every submitted call has finished. Safe to abandon: the
    /// worker stays owned here, so a later [`ToolRunner::cancel_all`] still
    /// stops it and marks its calls.
    pub async fn drain(&mut self) -> Result<(), Error> {
        self.sender = None;
        if let Some(task) = &mut self.task {
            let joined = task.await;
            self.task = None;
            match joined {
                Ok(result) => self.blocked |= result?,
                Err(join) => return Err(Error::Internal(format!("tool runner failed: {join}"))),
            }
        }
        Ok(())
    }

    /// Interrupt: cancel running tools, give them a moment, mark the rest.
    pub async fn cancel_all(&mut self, ctx: &SessionCtx) -> Result<(), Error> {
        self.cancel.cancel();
        self.sender = None;
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(CANCEL_GRACE, &mut task).await.is_err()
        {
            task.abort();
        }
        let left: Vec<Part> = std::mem::take(&mut *lock(&self.unfinished));
        for part in left {
            self.record_unfinished(ctx, part, "interrupted").await?;
        }
        Ok(())
    }

    /// Ends a call that never ran (or was cut off) as an error part.
    pub async fn record_unfinished(
        &self,
        ctx: &SessionCtx,
        mut part: Part,
        reason: &str,
    ) -> Result<(), Error> {
        if let PartKind::Tool(tool) = &mut part.kind {
            if tool.state.is_finished() {
                return Ok(());
            }
            let start = match &tool.state {
                ToolState::Running { time, .. } => time.start,
                _ => now_millis(),
            };
            tool.state = ToolState::Error {
                input: tool.state.input().clone(),
                error: reason.to_string(),
                metadata: Some(json!({ "interrupted": true })),
                time: ToolTime {
                    start,
                    end: Some(now_millis()),
                    compacted: None,
                },
            };
        }
        ctx.writer.part(&part).await?;
        Ok(())
    }
}

/// The task that runs calls one by one. Returns whether the loop must stop.
struct Worker {
    ctx: Arc<SessionCtx>,
    access: ToolAccess,
    history: Vec<CallSignature>,
    cancel: CancellationToken,
    unfinished: Arc<Mutex<Vec<Part>>>,
    limits: crate::tool::OutputLimits,
    can_delegate: bool,
    permissions: Arc<crate::permission::Permissions>,
}

impl Worker {
    async fn run(mut self, mut calls: mpsc::UnboundedReceiver<ToolCall>) -> Result<bool, Error> {
        let mut blocked = false;
        // `task` calls run beside each other (each is a session of its own,
        // bounded by the semaphore); any other call waits for them first, so
        // an edit never races a delegated task.
        let mut tasks = tokio::task::JoinSet::new();
        let slots = Arc::new(tokio::sync::Semaphore::new(
            self.ctx.settings.task.max_concurrency.max(1),
        ));
        while let Some(call) = calls.recv().await {
            if self.cancel.is_cancelled() {
                break;
            }
            if call.name == crate::session::agent::TASK_TOOL {
                let mut worker = self.fork();
                let slots = slots.clone();
                tasks.spawn(async move {
                    let _slot = slots.acquire_owned().await;
                    let part_id = call.part.id.clone();
                    let result = worker.run_one(call).await;
                    lock(&worker.unfinished).retain(|p| p.id != part_id);
                    result
                });
                continue;
            }
            blocked |= join_all(&mut tasks).await?;
            let part_id = call.part.id.clone();
            blocked |= self.run_one(call).await?;
            lock(&self.unfinished).retain(|p| p.id != part_id);
        }
        blocked |= join_all(&mut tasks).await?;
        Ok(blocked)
    }

    /// A worker for one concurrent `task` call, sharing this one's state.
    fn fork(&self) -> Worker {
        Worker {
            ctx: self.ctx.clone(),
            access: self.access.clone(),
            history: self.history.clone(),
            cancel: self.cancel.clone(),
            unfinished: self.unfinished.clone(),
            limits: self.limits,
            can_delegate: self.can_delegate,
            permissions: self.permissions.clone(),
        }
    }

    async fn run_one(&mut self, call: ToolCall) -> Result<bool, Error> {
        let ToolCall {
            mut part,
            name,
            mut input,
            refusal,
        } = call;
        let start = now_millis();
        set_state(
            &mut part,
            ToolState::Running {
                input: input.clone(),
                title: None,
                metadata: None,
                time: ToolTime {
                    start,
                    end: None,
                    compacted: None,
                },
            },
        );
        lock(&self.unfinished)
            .iter_mut()
            .filter(|p| p.id == part.id)
            .for_each(|p| *p = part.clone());
        self.ctx.writer.part(&part).await?;

        let signature = CallSignature::new(&name, &input);
        let (result, blocked) = match refusal {
            Some(refusal) => (Err(refusal.into()), false),
            None => match self.guard(&part, &signature).await {
                Some(refusal) => refusal,
                None => match self.hooked(&part, &name, &input).await {
                    Err(refusal) => (Err(refusal.into()), false),
                    Ok(changed) => {
                        // What ran is what the part records: a hook's
                        // `updatedInput`, not the model's.
                        input = changed;
                        let (result, blocked) = self.execute(&part, &name, input.clone()).await;
                        (self.after(&part, &name, &input, result).await, blocked)
                    }
                },
            },
        };
        let result = redact_result(result);
        self.history.push(signature);
        // The duration is the tool's own work: the time the user took to
        // answer its asks is left out by starting the clock that much later.
        let waited = part
            .as_tool()
            .map_or(0, |tool| self.ctx.permissions.take_waited(&tool.call_id));
        set_state(&mut part, finished_state(input, start + waited, result));
        self.ctx.writer.part(&part).await?;
        Ok(blocked)
    }

    /// Checks that may refuse the call before it runs: tool access and doom loop.
    async fn guard(
        &self,
        part: &Part,
        signature: &CallSignature,
    ) -> Option<(Result<crate::tool::ToolOutput, ToolFailure>, bool)> {
        let tools = &self.ctx.tools;
        let allowed = match tools.get(&signature.tool) {
            None if signature.tool == crate::session::agent::TASK_TOOL => {
                self.access.allows(crate::session::agent::TASK_TOOL, false)
            }
            None if tools.mcp().is_some_and(|hub| hub.has_tool(&signature.tool)) => {
                self.access.allows_mcp(&signature.tool)
            }
            None => true, // the registry answers unknown tools with the list of real ones
            Some(tool) => self.access.allows(tool.name(), tool.is_read_only()),
        };
        if !allowed {
            return Some((
                Err(format!(
                    "The {} tool is not available to this agent.",
                    signature.tool
                )
                .into()),
                false,
            ));
        }
        let settings = &self.ctx.settings;
        match doom::judge(
            &self.history,
            signature,
            settings.doom_threshold,
            settings.doom_hard_stop,
        ) {
            Verdict::Fine => None,
            Verdict::Stop { description, .. } => {
                let message = format!(
                    "Stopped: possible doom loop, {description}. Tell the user what you were trying to do instead of repeating the call."
                );
                self.ctx.writer.error(
                    &self.ctx.session_id,
                    format!("stopped a doom loop: {description}"),
                );
                Some((Err(message.into()), true))
            }
            Verdict::Ask { description, .. } => {
                let request = PermissionRequest {
                    id: crate::id::call_id(),
                    session_id: self.ctx.session_id.clone(),
                    call_id: part.as_tool().map(|t| t.call_id.clone()),
                    permission: "doom_loop".into(),
                    patterns: vec![signature.tool.clone()],
                    always: vec![signature.tool.clone()],
                    title: format!("Possible doom loop: {description}"),
                    metadata: json!({ "tool": signature.tool, "input": signature.input }),
                    ..Default::default()
                };
                match self
                    .permissions
                    .ask_cancellable(request, &self.cancel)
                    .await
                {
                    Ok(()) => None,
                    // The user's feedback goes to the model, which may change course.
                    Err(PermissionError::Rejected {
                        message: Some(feedback),
                    }) => Some((Err(feedback.into()), false)),
                    Err(PermissionError::Denied { message, .. }) => {
                        // Nobody was asked (headless, or a deny rule): the turn stops,
                        // and unlike a user's "no" that is a failure to report.
                        self.ctx.writer.error(
                            &self.ctx.session_id,
                            format!("stopped a possible doom loop: {description}"),
                        );
                        Some((Err(message.into()), true))
                    }
                    Err(error) => Some((Err(error.to_string().into()), true)),
                }
            }
        }
    }

    /// The call's names for hook matchers: cairn's, then Claude Code's.
    fn hook_names(&self, name: &str) -> Vec<String> {
        let claude = crate::hook::claude_tool_name(name)
            .map(str::to_string)
            .or_else(|| self.ctx.tools.mcp()?.claude_name(name));
        std::iter::once(name.to_string()).chain(claude).collect()
    }

    /// PreToolUse: `Err` when a hook blocks the call (or the user refuses
    /// what a hook asked), else the input to run. A hook's `allow` only
    /// means it has no objection: the permission rules still decide, so a
    /// deny rule holds whatever a hook says.
    async fn hooked(&self, part: &Part, name: &str, input: &Value) -> Result<Value, String> {
        let names = self.hook_names(name);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let call_id = part
            .as_tool()
            .map(|t| t.call_id.clone())
            .unwrap_or_default();
        let (input, ask) = self
            .ctx
            .hook_caller()
            .pre_tool_use(&names, input, &call_id, &self.ctx.env.cwd, &self.cancel)
            .await?;
        // Interrupted while its hooks ran: the call must not start after all.
        if self.cancel.is_cancelled() {
            return Err("interrupted".into());
        }
        let Some(reason) = ask else {
            return Ok(input);
        };
        let request = PermissionRequest {
            id: crate::id::call_id(),
            session_id: self.ctx.session_id.clone(),
            call_id: Some(call_id),
            permission: "hook".into(),
            patterns: vec![name.to_string()],
            title: format!("A PreToolUse hook asks before {name}: {reason}"),
            metadata: json!({ "tool": name, "input": input, "reason": reason }),
            ..Default::default()
        };
        match self
            .permissions
            .ask_even_if_allowed(request, &self.cancel)
            .await
        {
            Ok(()) => Ok(input),
            Err(PermissionError::Rejected {
                message: Some(feedback),
            }) => Err(feedback),
            Err(error) => Err(format!("A PreToolUse hook asked first ({reason}): {error}")),
        }
    }

    /// PostToolUse: what its hooks say is added to a completed call's output.
    async fn after(
        &self,
        part: &Part,
        name: &str,
        input: &Value,
        result: Result<crate::tool::ToolOutput, ToolFailure>,
    ) -> Result<crate::tool::ToolOutput, ToolFailure> {
        let Ok(mut output) = result else {
            return result;
        };
        let names = self.hook_names(name);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let call_id = part
            .as_tool()
            .map(|t| t.call_id.clone())
            .unwrap_or_default();
        let response = crate::session::hook_calls::tool_response(
            &output.output,
            &output.title,
            &output.metadata,
        );
        if let Some(said) = self
            .ctx
            .hook_caller()
            .post_tool_use(
                &names,
                input,
                &call_id,
                response,
                &self.ctx.env.cwd,
                &self.cancel,
            )
            .await
        {
            output.output = format!("{}\n\n{said}", output.output);
        }
        Ok(output)
    }

    async fn execute(
        &self,
        part: &Part,
        name: &str,
        input: Value,
    ) -> (Result<crate::tool::ToolOutput, ToolFailure>, bool) {
        let tool_ctx = ToolScope {
            session_id: part.session_id.clone(),
            message_id: part.message_id.clone(),
            call_id: part
                .as_tool()
                .map(|t| t.call_id.clone())
                .unwrap_or_default(),
            cwd: self.ctx.env.cwd.clone(),
            root: self.ctx.env.root.clone(),
            tool_output_dir: self.ctx.settings.tool_output_dir.clone(),
            cancel: self.cancel.child_token(),
            permissions: self.permissions.clone(),
            progress: None,
            limits: self.limits,
            can_delegate: self.can_delegate,
            sandbox: self.ctx.settings.sandbox.clone(),
            editor: self.ctx.settings.editor.clone(),
        };
        let file = FILE_TOOLS
            .contains(&name)
            .then(|| file_argument(&input))
            .flatten();
        let result = if name == crate::session::agent::TASK_TOOL {
            let (progress_tx, progress_rx) = mpsc::unbounded_channel();
            let mut tool_ctx = tool_ctx;
            tool_ctx.progress = Some(progress_tx);
            let run = async {
                crate::session::subtask::execute(&self.ctx, input, &tool_ctx)
                    .await
                    .and_then(|output| crate::tool::limit_output(output, &tool_ctx))
            };
            follow_progress(&self.ctx, part, run, progress_rx).await
        } else {
            run_showing_progress(&self.ctx, part, name, input, tool_ctx).await
        };
        match result {
            Ok(mut output) => {
                if let Some(reminder) = self.folder_instructions(name, &file) {
                    output.output.push_str("\n\n");
                    output.output.push_str(&reminder);
                }
                (Ok(output), false)
            }
            Err(error) => {
                let blocked = matches!(error, ToolError::PermissionRejected { message: None });
                (Err(error.into()), blocked)
            }
        }
    }
}

impl Worker {
    /// The AGENTS.md / CLAUDE.md of `file`'s folders that the system prompt
    /// does not send, the first time this session works there, as a
    /// reminder for the tool's result (how Claude Code brings a subfolder's
    /// CLAUDE.md: with the read that reached it, not in every request).
    fn folder_instructions(&self, name: &str, file: &Option<String>) -> Option<String> {
        let file = file.as_deref()?;
        let env = &self.ctx.env;
        let path = crate::paths::expand_home(file, env.home.as_deref());
        let reach = crate::session::instructions::Reach {
            root: &env.root,
            home: env.home.as_deref(),
        };
        let reader = {
            let mut attached = lock(&self.ctx.instruction_folders);
            crate::session::instructions::for_file(
                &env.cwd.join(path),
                &env.cwd,
                reach,
                &mut attached,
            )
        };
        for problem in &reader.problems {
            self.ctx.report_once(problem);
        }
        tracing::debug!(
            tool = name,
            files = reader.instructions.len(),
            "folder instructions"
        );
        crate::session::instructions::reminder(&reader.instructions)
    }
}

/// The tools whose file brings its folder's instruction files.
const FILE_TOOLS: [&str; 3] = ["read", "edit", "write"];

/// The file a file tool was called on (`path`, or the peers' spellings).
fn file_argument(input: &Value) -> Option<String> {
    ["path", "file_path", "filePath"]
        .iter()
        .find_map(|key| input.get(key)?.as_str())
        .map(str::to_string)
}

/// Waits for every concurrent `task` call; true when one must stop the loop.
async fn join_all(tasks: &mut tokio::task::JoinSet<Result<bool, Error>>) -> Result<bool, Error> {
    let mut blocked = false;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(result) => blocked |= result?,
            Err(join) => return Err(Error::Internal(format!("a task call failed: {join}"))),
        }
    }
    Ok(blocked)
}

/// Runs a tool whose title and output are published live on `part` as they
/// arrive (the model's calls and the user's `!cmd` alike).
pub(crate) async fn run_showing_progress(
    ctx: &SessionCtx,
    part: &Part,
    name: &str,
    input: Value,
    mut tool_ctx: ToolScope,
) -> Result<crate::tool::ToolOutput, ToolError> {
    let (progress_tx, progress_rx) = mpsc::unbounded_channel();
    tool_ctx.progress = Some(progress_tx);
    let run = ctx.tools.run(name, input, &tool_ctx);
    follow_progress(ctx, part, run, progress_rx).await
}

/// Drives `run` while publishing its progress reports on `part`.
async fn follow_progress(
    ctx: &SessionCtx,
    part: &Part,
    run: impl std::future::Future<Output = Result<crate::tool::ToolOutput, ToolError>>,
    mut progress_rx: mpsc::UnboundedReceiver<ToolProgress>,
) -> Result<crate::tool::ToolOutput, ToolError> {
    tokio::pin!(run);
    let mut live = LiveOutput::new(part.clone());
    loop {
        tokio::select! {
            result = &mut run => return result,
            Some(progress) = progress_rx.recv() => live.apply(ctx, progress).await,
        }
    }
}

/// Live title and output of a running tool, published as it arrives.
struct LiveOutput {
    part: Part,
    output: String,
}

impl LiveOutput {
    fn new(part: Part) -> Self {
        Self {
            part,
            output: String::new(),
        }
    }

    async fn apply(&mut self, ctx: &SessionCtx, progress: ToolProgress) {
        match progress {
            ToolProgress::Output(text) => {
                // Best effort per chunk: the stored result is redacted whole.
                let text = crate::secret::redact(&text).into_owned();
                ctx.writer.delta(&self.part, DeltaField::ToolOutput, &text);
                self.output.push_str(&text);
                if self.output.len() > LIVE_OUTPUT_MAX {
                    let mut cut = self.output.len() - LIVE_OUTPUT_MAX;
                    while !self.output.is_char_boundary(cut) {
                        cut += 1;
                    }
                    self.output.drain(..cut);
                }
            }
            ToolProgress::Title(title) => {
                let title = crate::secret::redact(&title).into_owned();
                if let PartKind::Tool(ToolPart {
                    state: ToolState::Running { title: slot, .. },
                    ..
                }) = &mut self.part.kind
                {
                    *slot = Some(title);
                }
                if let Err(error) = ctx.writer.part(&self.part).await {
                    tracing::warn!(%error, "cannot persist a running tool's title");
                }
            }
            ToolProgress::Metadata(mut metadata) => {
                crate::secret::redact_json(&mut metadata);
                if let PartKind::Tool(ToolPart {
                    state: ToolState::Running { metadata: slot, .. },
                    ..
                }) = &mut self.part.kind
                {
                    *slot = Some(metadata);
                }
            }
        }
    }
}

fn set_state(part: &mut Part, state: ToolState) {
    if let PartKind::Tool(tool) = &mut part.kind {
        tool.state = state;
    }
}

/// Why a tool call did not complete: the error the model sees, and what the
/// tool left behind (an interrupted command's output so far, `interrupted`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub error: String,
    pub metadata: Option<Value>,
}

impl From<String> for ToolFailure {
    fn from(error: String) -> Self {
        Self {
            error,
            metadata: None,
        }
    }
}

impl From<crate::tool::ToolError> for ToolFailure {
    fn from(error: crate::tool::ToolError) -> Self {
        Self {
            metadata: error.metadata(),
            error: error.to_string(),
        }
    }
}

/// A tool part's state once its call is resolved, for the runner.
pub fn finished_state(
    input: Value,
    start: i64,
    result: Result<crate::tool::ToolOutput, ToolFailure>,
) -> ToolState {
    let time = ToolTime {
        start,
        end: Some(now_millis()),
        compacted: None,
    };
    match result {
        Ok(output) => ToolState::Completed {
            input,
            output: output.output,
            title: output.title,
            metadata: output.metadata,
            time,
            attachments: output.attachments,
        },
        Err(failure) => ToolState::Error {
            input,
            error: failure.error,
            metadata: failure.metadata,
            time,
        },
    }
}

/// The result without any secret: the model may have printed one (the key
/// in `/proc/$PPID/environ`), and it must reach neither the store nor the
/// next request.
fn redact_result(
    result: Result<crate::tool::ToolOutput, ToolFailure>,
) -> Result<crate::tool::ToolOutput, ToolFailure> {
    use crate::secret::{redact, redact_json};
    match result {
        Ok(mut output) => {
            output.title = redact(&output.title).into_owned();
            output.output = redact(&output.output).into_owned();
            redact_json(&mut output.metadata);
            Ok(output)
        }
        Err(mut failure) => {
            failure.error = redact(&failure.error).into_owned();
            if let Some(metadata) = &mut failure.metadata {
                redact_json(metadata);
            }
            Err(failure)
        }
    }
}
