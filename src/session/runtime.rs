//! The session runtime: serves front ends' commands for one session.
//!
//! One task per session receives `Command`s, writes user messages, and starts
//! the loop when it is not running; a prompt sent while it runs is only
//! written, and the running loop picks it up. A `!cmd` runs in the same slot
//! as the loop (never beside it). `SessionCtx` bundles what every part of the
//! loop needs (store writer, tools, permissions, models, settings).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::bus::{Event, SessionStatus};
use crate::message::{
    CompactionPart, Message, ModelRef, Part, PartKind, Role, TextPart, UserMessage, now_millis,
};
use crate::permission::Permissions;
use crate::provider::{Provider, RetryPolicy, Usage};
use crate::session::agent::Agents;
use crate::session::command::Command;
use crate::session::prompt::Environment;
use crate::session::writer::Writer;
use crate::session::{Error, gauge, prune_task, run, shell};
use crate::store::{self, LiveContext};
use crate::tool::{Limits, Registry};

/// A model ready to call: its client, limits and prices.
pub struct ResolvedModel {
    pub model: ModelRef,
    pub provider: Arc<Provider>,
    pub limits: crate::token::Limits,
    pub prices: Option<crate::provider::catalog::Prices>,
    /// Why the limits are a fallback, shown to the user once.
    pub warning: Option<String>,
    pub warned: std::sync::atomic::AtomicBool,
}

impl ResolvedModel {
    pub fn cost(&self, usage: &Usage) -> f64 {
        self.prices
            .as_ref()
            .map_or(0.0, |p| crate::provider::catalog::cost(usage, p))
    }

    pub fn max_output_tokens(&self) -> u32 {
        crate::token::max_output_tokens(&self.limits) as u32
    }

    /// Whether images may sit inside tool results: Anthropic's tool_result
    /// blocks take them; Chat Completions `tool` messages take text only.
    pub fn media_in_tool_results(&self) -> bool {
        self.provider.config().wire == crate::provider::Wire::Anthropic
    }
}

/// Turns a `provider/model` into a callable model.
#[async_trait::async_trait]
pub trait ModelSource: Send + Sync {
    /// # Errors
    /// A message for the user saying what is missing (unknown provider, unset
    /// key variable) and how to fix it.
    async fn resolve(&self, model: &ModelRef) -> Result<Arc<ResolvedModel>, String>;
}

/// The `[compaction]` settings as the loop uses them.
#[derive(Debug, Clone)]
pub struct CompactionSettings {
    pub auto: bool,
    pub prune: bool,
    pub reserved: Option<u64>,
    pub threshold: f64,
    pub tail_turns: usize,
    pub preserve_recent_tokens: Option<u64>,
    pub model: Option<ModelRef>,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            auto: true,
            prune: true,
            reserved: None,
            threshold: 1.0,
            tail_turns: 2,
            preserve_recent_tokens: None,
            model: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub compaction: CompactionSettings,
    pub doom_threshold: usize,
    pub doom_hard_stop: usize,
    pub tool_limits: Limits,
    pub tool_output_dir: PathBuf,
    pub default_agent: String,
    pub retry: RetryPolicy,
}

/// Everything the loop of one session needs.
pub struct SessionCtx {
    pub session_id: String,
    pub writer: Writer,
    pub tools: Arc<Registry>,
    pub permissions: Arc<Permissions>,
    pub agents: Agents,
    pub models: Arc<dyn ModelSource>,
    pub settings: Settings,
    pub env: Environment,
    /// The model new prompts use unless they name one.
    pub default_model: ModelRef,
    pub accounting: gauge::Accounting,
    /// The context read of the last loop step, kept so that the next one
    /// decodes only what changed (see [`Self::read_context`]).
    pub kept_context: Mutex<Option<LiveContext>>,
    /// The project's snapshot store; `None` when snapshots are off.
    pub snapshots: Option<crate::snapshot::Snapshots>,
}

impl SessionCtx {
    /// The session's context read (`Store::read_context`), brought up to
    /// date from the read kept by [`Self::keep_context`] when there is one.
    /// Two readers at once are safe: the second one reads afresh.
    pub async fn read_context(&self) -> Result<LiveContext, store::Error> {
        let kept = gauge::lock(&self.kept_context)
            .take()
            .filter(|kept| kept.session_id() == self.session_id);
        let previous = kept.unwrap_or_else(|| LiveContext::new(&self.session_id));
        self.writer.store.refresh_context(previous).await
    }

    /// Keeps a context read for the next [`Self::read_context`].
    pub fn keep_context(&self, context: LiveContext) {
        *gauge::lock(&self.kept_context) = Some(context);
    }

    pub fn set_status(&self, status: SessionStatus) {
        self.writer.bus.publish(Event::Status {
            session_id: self.session_id.clone(),
            status,
        });
    }
}

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

/// Starts serving a session. The task ends when every handle is dropped,
/// after cancelling a running loop.
pub fn spawn(ctx: Arc<SessionCtx>) -> (SessionHandle, JoinHandle<()>) {
    let (commands, receiver) = mpsc::unbounded_channel();
    let handle = SessionHandle {
        session_id: ctx.session_id.clone(),
        commands,
    };
    let task = tokio::spawn(serve(ctx, receiver));
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

async fn serve(ctx: Arc<SessionCtx>, mut commands: mpsc::UnboundedReceiver<Command>) {
    if let Err(error) = crate::session::recovery::repair(&ctx).await {
        report(&ctx, &error);
    }
    // A front end opening a session shows its gauge before the first message.
    let opening = ctx.clone();
    tokio::spawn(async move { gauge::refresh_session(&opening).await });
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
        Command::Prompt { text, agent, model } => {
            write_prompt(ctx, &text, agent, model).await?;
            ensure_loop(ctx, running);
        }
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
            None => ctx.writer.notice(&ctx.session_id, "nothing to interrupt"),
        },
        Command::Compact { instructions } => {
            let user = last_user_or_default(ctx).await?;
            let part = CompactionPart {
                auto: false,
                instructions,
                ..Default::default()
            };
            run::create_compaction(ctx, &user, part).await?;
            ensure_loop(ctx, running);
        }
        Command::Prune => prune_task::run(ctx, true).await?,
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
            ctx.permissions.answer(&request_id, answer);
        }
    }
    Ok(())
}

async fn write_prompt(
    ctx: &SessionCtx,
    text: &str,
    agent: Option<String>,
    model: Option<ModelRef>,
) -> Result<(), Error> {
    let previous = last_user_or_default(ctx).await?;
    let message = Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(UserMessage {
            agent: agent.unwrap_or(previous.agent),
            model: model.unwrap_or(previous.model),
            system: None,
        }),
    };
    ctx.writer.message(&message).await?;
    let part = Part::new(
        &message,
        PartKind::Text(TextPart {
            text: text.to_string(),
            ..Default::default()
        }),
    );
    ctx.writer.part(&part).await?;
    name_session(ctx, text).await
}

/// The agent and model of the newest user message, else the defaults.
pub async fn last_user_or_default(ctx: &SessionCtx) -> Result<UserMessage, Error> {
    let recent = ctx
        .writer
        .store
        .messages_before(&ctx.session_id, None, 20)
        .await?;
    Ok(recent
        .iter()
        .find_map(|m| m.message.as_user().cloned())
        .unwrap_or_else(|| UserMessage {
            agent: ctx.settings.default_agent.clone(),
            model: ctx.default_model.clone(),
            system: None,
        }))
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
