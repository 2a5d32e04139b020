//! The session runtime: serves front ends' commands for one session.
//!
//! One task per session receives `Command`s, writes user messages, and starts
//! the loop when it is not running; a prompt sent while it runs is only
//! written, and the running loop picks it up. A `!cmd` runs in the same slot
//! as the loop (never beside it). `SessionCtx` bundles what every part of the
//! loop needs (store writer, tools, permissions, models, settings).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::bus::SessionStatus;
use crate::clock::now_millis;
use crate::message::{
    CompactionPart, Message, ModelRef, Part, PartKind, Role, TextPart, UserMessage,
};
use crate::session::command::Command;
use crate::session::ctx::{SessionCtx, last_user_or_default};
use crate::session::lock::SessionLock;
use crate::session::{Error, custom, gauge, prune_task, remembered, request, run, shell, undo};

/// A front end's handle on a running session.
#[derive(Clone)]
pub struct SessionHandle {
    pub session_id: String,
    commands: mpsc::UnboundedSender<Command>,
}

impl SessionHandle {
    /// Sends a command; false when the runtime has stopped.
    pub fn send(&self, command: Command) -> bool {
        self.commands.send(command).is_ok()
    }

    pub fn sender(&self) -> mpsc::UnboundedSender<Command> {
        self.commands.clone()
    }
}

/// Starts serving a session while holding its lock (taken before recovery,
/// released when the task ends). The task ends when every handle is dropped,
/// after cancelling a running loop.
pub fn spawn(ctx: Arc<SessionCtx>, lock: SessionLock) -> (SessionHandle, JoinHandle<()>) {
    let (commands, receiver) = mpsc::unbounded_channel();
    let handle = SessionHandle {
        session_id: ctx.session_id.clone(),
        commands,
    };
    let task = tokio::spawn(async move {
        let _held = lock;
        serve(ctx, receiver).await;
    });
    (handle, task)
}

/// The one thing a session runs at a time: the loop or a `!cmd`.
struct RunningLoop {
    task: JoinHandle<Result<(), Error>>,
    cancel: CancellationToken,
    /// A prompt or compaction arrived while it ran: check again when it ends.
    queued: bool,
}

/// Why a `!cmd` is refused while the agent works: its messages would land in
/// the middle of the turn and end it (the loop would see a finished answer
/// newer than the last user message).
const BUSY_SHELL: &str =
    "the agent is busy: wait for it to finish or interrupt it (Esc) before running a shell command";

/// Why a custom command with shell lines is refused while the agent
/// works: its lines would run in the middle of the turn.
const BUSY_COMMAND: &str = "the agent is busy: wait for it to finish or interrupt it (Esc) before running a command with shell lines";

async fn serve(ctx: Arc<SessionCtx>, mut commands: mpsc::UnboundedReceiver<Command>) {
    // The project's first snapshot is long: begun now, a first writing step
    // waits only for what is left of it.
    if let Some(store) = &ctx.snapshots {
        ctx.snapshot_chain.warm_up(store);
    }
    if let Err(error) = crate::session::recovery::repair(&ctx).await {
        report(&ctx, &error);
    }
    let resumed = ctx
        .writer
        .store
        .messages_before(&ctx.session_id, None, 1)
        .await
        .is_ok_and(|messages| !messages.is_empty());
    ctx.hook_caller().session_start(resumed).await;
    let notifier = notify_asks(&ctx);
    // A front end opening a session shows its gauge before the first message.
    let opening = ctx.clone();
    tokio::spawn(async move { gauge::refresh_opening(&opening).await });
    let mut running: Option<RunningLoop> = None;
    loop {
        tokio::select! {
            command = commands.recv() => {
                let Some(command) = command else { break };
                if let Err(error) = handle(&ctx, &mut running, command).await {
                    report(&ctx, &error);
                }
            }
            ended = async { (&mut running.as_mut().expect("guarded by the precondition").task).await }, if running.is_some() => {
                let queued = running.take().is_some_and(|r| r.queued);
                match ended {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => report(&ctx, &error),
                    Err(join) => report(&ctx, &Error::Internal(format!("the session loop crashed: {join}"))),
                }
                if queued {
                    running = Some(start_loop(&ctx));
                }
            }
        }
    }
    if let Some(running) = running {
        running.cancel.cancel();
        let _ = running.task.await;
    }
    if let Some(notifier) = notifier {
        notifier.abort();
    }
}

/// Fires the Notification hooks each time the session waits for the
/// user's answer to a permission question (Claude Code's "needs your
/// permission"); None when no hook listens.
fn notify_asks(ctx: &Arc<SessionCtx>) -> Option<JoinHandle<()>> {
    if !ctx.settings.hooks.any(crate::hook::Event::Notification) {
        return None;
    }
    let mut events = ctx.writer.bus.subscribe();
    let ctx = ctx.clone();
    Some(tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(crate::bus::Event::PermissionAsked {
                    session_id,
                    request,
                }) if session_id == ctx.session_id => {
                    let message = format!("cairn needs your permission: {}", request.title);
                    ctx.hook_caller().notification(&message).await;
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    }))
}

fn report(ctx: &SessionCtx, error: &Error) {
    tracing::error!(session = %ctx.session_id, %error, "session error");
    ctx.writer.error(&ctx.session_id, error.to_string());
}

fn start_loop(ctx: &Arc<SessionCtx>) -> RunningLoop {
    let cancel = CancellationToken::new();
    let task = tokio::spawn(run::run(ctx.clone(), cancel.clone()));
    RunningLoop {
        task,
        cancel,
        queued: false,
    }
}

/// Runs a `!cmd` in the loop's slot: prompts sent meanwhile wait for it, and
/// an interrupt stops it.
fn start_shell(ctx: &Arc<SessionCtx>, call: shell::ShellCall) -> RunningLoop {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let ctx = ctx.clone();
        let cancel = cancel.clone();
        async move {
            ctx.set_status(SessionStatus::Busy);
            let result = shell::execute(&ctx, call, cancel).await;
            ctx.set_status(SessionStatus::Idle);
            result
        }
    });
    RunningLoop {
        task,
        cancel,
        queued: false,
    }
}

/// Runs a custom command with shell lines in the loop's slot: the lines
/// (which may wait for a permission answer), then its prompt and the loop.
fn start_custom(
    ctx: &Arc<SessionCtx>,
    command: custom::Prepared,
    context: Vec<String>,
) -> RunningLoop {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let ctx = ctx.clone();
        let cancel = cancel.clone();
        async move {
            ctx.set_status(SessionStatus::Busy);
            let Some(text) = custom::run_shell_lines(&ctx, &command, &cancel).await else {
                ctx.set_status(SessionStatus::Idle);
                return Ok(());
            };
            let written =
                write_prompt(&ctx, &text, command.agent, command.model, false, &context).await;
            if let Err(error) = written {
                ctx.set_status(SessionStatus::Idle);
                return Err(error);
            }
            run::run(ctx, cancel).await
        }
    });
    RunningLoop {
        task,
        cancel,
        queued: false,
    }
}

/// Starts the loop, or tells the running one to look again when it ends.
fn ensure_loop(ctx: &Arc<SessionCtx>, running: &mut Option<RunningLoop>) {
    match running {
        Some(running) => running.queued = true,
        None => *running = Some(start_loop(ctx)),
    }
}

async fn handle(
    ctx: &Arc<SessionCtx>,
    running: &mut Option<RunningLoop>,
    command: Command,
) -> Result<(), Error> {
    match command {
        Command::Prompt {
            text,
            agent,
            model,
            piped,
        } => prompt(ctx, running, text, (agent, model), piped).await?,
        Command::Shell { command } => match running {
            Some(_) => ctx.writer.error(&ctx.session_id, BUSY_SHELL),
            None => {
                let call = shell::record(ctx, &command).await?;
                *running = Some(start_shell(ctx, call));
            }
        },
        Command::Interrupt => match running {
            Some(running) => {
                running.queued = false;
                running.cancel.cancel();
            }
            None => ctx
                .writer
                .notice(&ctx.session_id, "nothing to interrupt: the agent is idle"),
        },
        Command::Compact { instructions } => {
            let user = last_user_or_default(ctx).await?;
            let part = CompactionPart {
                auto: false,
                instructions,
                ..Default::default()
            };
            request::create_compaction(ctx, &user, part).await?;
            ensure_loop(ctx, running);
        }
        Command::Prune => {
            prune_task::run(ctx, true).await?;
        }
        Command::Context { reply } => {
            let user = last_user_or_default(ctx).await?;
            match ctx.models.resolve(&user.model).await {
                Ok(model) => {
                    let _ = reply.send(gauge::breakdown(ctx, &model).await?);
                }
                Err(message) => ctx.writer.error(&ctx.session_id, message),
            }
        }
        Command::AnswerPermission { request_id, answer } => {
            let before = ctx.permissions.approved();
            if ctx.permissions.answer(&request_id, answer) {
                remembered::save_new(ctx, &before).await;
            }
        }
        Command::Sync { reply } => {
            let _ = reply.send(());
        }
        Command::PendingAsks { reply } => {
            let _ = reply.send(ctx.permissions.pending());
        }
        Command::Permissions { revoke } => remembered::command(ctx, revoke).await?,
        Command::UseModel { model } => use_model(ctx, model).await?,
        Command::AcceptEdits { on } => ctx.permissions.set_accept_edits(on),
        Command::Undo { force, reply } => {
            let _ = reply.send(undo_or_redo(ctx, running.is_some(), false, force).await);
        }
        Command::Redo { force, reply } => {
            let _ = reply.send(undo_or_redo(ctx, running.is_some(), true, force).await);
        }
        // Read-only, and possibly slow on a big tree: served beside the
        // loop so that an Esc sent meanwhile is not kept waiting.
        Command::Diff { reply } => {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                ctx.snapshot_chain.settle().await;
                let snapshots = ctx.snapshots.as_ref();
                let diff = undo::session_diff(&ctx.writer.store, snapshots, &ctx.session_id).await;
                let _ = reply.send(diff);
            });
        }
        Command::PatchDiff { patch, reply } => {
            let snapshots = ctx.snapshots.clone();
            tokio::spawn(async move {
                let _ = reply.send(undo::patch_diff(snapshots.as_ref(), patch).await);
            });
        }
    }
    Ok(())
}

/// A user message: written (the loop starts or picks it up), or, when its
/// first word names a custom command, that command's prompt; one with
/// shell lines runs them first, in the loop's slot.
async fn prompt(
    ctx: &Arc<SessionCtx>,
    running: &mut Option<RunningLoop>,
    text: String,
    (agent, model): (Option<String>, Option<ModelRef>),
    piped: bool,
) -> Result<(), Error> {
    let context = match ctx.hook_caller().user_prompt(&text).await {
        Ok(context) => context,
        Err(reason) => {
            // Refused before it was written: the model never sees it. Busy
            // then idle, so `cairn run` ends (with 1).
            ctx.set_status(SessionStatus::Busy);
            ctx.writer.error(
                &ctx.session_id,
                format!("a UserPromptSubmit hook refused the prompt: {reason}"),
            );
            ctx.set_status(SessionStatus::Idle);
            return Ok(());
        }
    };
    // Piped text is someone else's: its `/word` runs nothing.
    let command = if piped {
        None
    } else {
        custom::prepare(ctx, &text)
    };
    match command {
        Some(command) if command.has_shell => match running {
            Some(_) => ctx.writer.error(&ctx.session_id, BUSY_COMMAND),
            None => {
                record_prompt(ctx, &text).await;
                *running = Some(start_custom(ctx, command, context));
            }
        },
        Some(command) => {
            let agent = command.agent.or(agent);
            let model = command.model.or(model);
            write_prompt(ctx, &command.text, agent, model, false, &context).await?;
            record_prompt(ctx, &text).await;
            ensure_loop(ctx, running);
        }
        None => {
            write_prompt(ctx, &text, agent, model, piped, &context).await?;
            record_prompt(ctx, &text).await;
            ensure_loop(ctx, running);
        }
    }
    Ok(())
}

/// `/model` from `cairn run`: a model that cannot be resolved (unknown
/// provider, unset key) is refused with why, and nothing changes.
async fn use_model(ctx: &SessionCtx, model: ModelRef) -> Result<(), Error> {
    if let Err(why) = ctx.models.resolve(&model).await {
        ctx.writer.error(&ctx.session_id, why);
        return Ok(());
    }
    ctx.writer
        .store
        .set_chosen_model(&ctx.session_id, Some(&model))
        .await?;
    ctx.writer.notice(
        &ctx.session_id,
        format!("model {model}: this session's next prompts use it"),
    );
    Ok(())
}

/// `/undo` or `/redo` (`redo`), `force` overwriting hand edits; refused
/// while the loop or a `!cmd` runs: files and messages would move under a
/// running step. After one moved messages, the kept model view is dropped
/// (the next step reads afresh) and the gauge follows the new history.
async fn undo_or_redo(
    ctx: &Arc<SessionCtx>,
    busy: bool,
    redo: bool,
    force: bool,
) -> Result<undo::Outcome, undo::Error> {
    if busy {
        return Err(undo::Error::Busy);
    }
    // Idle means the last turn's patches are written; a no-op then.
    ctx.snapshot_chain.settle().await;
    let (store, snapshots) = (&ctx.writer.store, ctx.snapshots.as_ref());
    let done = if redo {
        undo::redo(store, snapshots, &ctx.session_id, force).await?
    } else {
        undo::undo(store, snapshots, &ctx.session_id, force).await?
    };
    *crate::shared::lock(&ctx.kept_view) = None;
    let ctx = ctx.clone();
    tokio::spawn(async move { gauge::refresh_session(&ctx).await });
    Ok(done)
}

/// Keeps the prompt in the project's history (the composer's Up/Down and
/// Ctrl+R in a later session); a failure costs only that.
async fn record_prompt(ctx: &SessionCtx, text: &str) {
    let project = ctx.env.root.display().to_string();
    if let Err(error) = ctx
        .writer
        .store
        .record_prompt(&project, text, now_millis())
        .await
    {
        tracing::warn!(%error, "cannot keep the prompt in the project's history");
    }
}

async fn write_prompt(
    ctx: &SessionCtx,
    text: &str,
    agent: Option<String>,
    model: Option<ModelRef>,
    piped: bool,
    context: &[String],
) -> Result<(), Error> {
    let previous = last_user_or_default(ctx).await?;
    let agent = agent.unwrap_or(previous.agent);
    let chosen = ctx.writer.store.chosen_model(&ctx.session_id).await?;
    // As in OpenCode: a model named with the prompt (the TUI's /model), else
    // one chosen with `cairn run "/model ..."`, else the agent's own
    // `[agent.NAME] model`, else the session's last one.
    let model = model
        .or_else(|| chosen.clone())
        .or_else(|| ctx.agents.get(&agent).model.clone())
        .unwrap_or(previous.model);
    let message = Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(UserMessage {
            agent,
            model,
            system: None,
        }),
    };
    ctx.writer.message(&message).await?;
    // The message now carries the choice: later prompts follow it from there.
    if chosen.is_some() {
        ctx.writer
            .store
            .set_chosen_model(&ctx.session_id, None)
            .await?;
    }
    let part = Part::new(
        &message,
        PartKind::Text(TextPart {
            text: text.to_string(),
            ..Default::default()
        }),
    );
    ctx.writer.part(&part).await?;
    // The hooks' context goes with the prompt, marked as cairn's, not typed.
    for text in context {
        let hooked = TextPart {
            text: format!("<user-prompt-submit-hook>\n{text}\n</user-prompt-submit-hook>"),
            synthetic: true,
            ..Default::default()
        };
        ctx.writer
            .part(&Part::new(&message, PartKind::Text(hooked)))
            .await?;
    }
    let reach = crate::session::mention::Reach {
        cwd: &ctx.env.cwd,
        home: ctx.env.home.as_deref(),
        root: &ctx.env.root,
        sandbox: &ctx.settings.sandbox,
        own_outputs: &ctx.settings.tool_output_dir,
    };
    let attached = if piped {
        Vec::new()
    } else {
        crate::session::mention::attachments(text, &reach)
    };
    for kind in attached {
        ctx.writer.part(&Part::new(&message, kind)).await?;
    }
    // `@explore ...`: the loop runs the subagent first (unless subagents
    // are off here: then the mention stays plain text).
    if ctx.depth < ctx.settings.task.max_depth
        && let Some(subtask) = crate::session::pending_subtask::subtask_for(text, &ctx.agents)
    {
        ctx.writer
            .part(&Part::new(&message, PartKind::Subtask(subtask)))
            .await?;
    }
    name_session(ctx, text).await
}

/// Untitled sessions take the first line of their first message as title.
/// (A title agent would cost a model call per session; this costs nothing.)
async fn name_session(ctx: &SessionCtx, text: &str) -> Result<(), Error> {
    let Some(mut session) = ctx.writer.store.get_session(&ctx.session_id).await? else {
        return Ok(());
    };
    if !session.title.is_empty() {
        return Ok(());
    }
    let first_line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("untitled");
    session.title = if first_line.chars().count() > 60 {
        format!("{}...", first_line.chars().take(57).collect::<String>())
    } else {
        first_line.to_string()
    };
    ctx.writer.session(&session).await?;
    Ok(())
}
