//! The agent loop: one per session, stateless across iterations.
//!
//! Each iteration reads the session back from the store (from the last
//! completed compaction point), finds the latest user / assistant / finished
//! messages and pending tasks, and decides, in this order: exit; run a pending
//! `@agent` subtask; run a pending compaction; create a compaction when the
//! last finished step overflowed; otherwise call the model once. Queued user messages, crash recovery and
//! resume need nothing special: they are just what the store says.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::bus::SessionStatus;
use crate::clock::now_millis;
use crate::context::view;
use crate::message::{CompactionPart, MessageWithParts, Part, SubtaskPart, UserMessage};
use crate::provider::ChatRequest;
use crate::session::agent::TASK_TOOL;
use crate::session::ctx::{ResolvedModel, SessionCtx};
use crate::session::doom::CallSignature;
use crate::session::processor::{self, Step, StepOutcome};
use crate::session::request::{build_request, create_compaction, new_assistant};
use crate::session::tool_runner::ToolRunner;
use crate::session::{Error, compaction_task, gauge, pending_subtask, prune_task};
use crate::store::LiveView;

/// How many recent tool calls the doom-loop detector looks back over.
const DOOM_HISTORY: usize = 24;

/// How many times Stop hooks may make one turn go on. Claude Code leaves
/// the loop guard to the hook (`stop_hook_active`); a hook that ignores it
/// must still not keep cairn calling the model for ever.
const MAX_STOP_BLOCKS: u32 = 5;

/// The newest messages that matter to the loop's decision.
pub struct Latest<'a> {
    pub user: Option<&'a MessageWithParts>,
    pub assistant: Option<&'a MessageWithParts>,
    /// Newest assistant with a finish reason.
    pub finished: Option<&'a MessageWithParts>,
    /// Newest compaction request newer than `finished` (a pending task).
    pub compaction: Option<&'a MessageWithParts>,
    /// A user message's `@agent` subtask not run yet (the first branch).
    pub subtask: Option<(&'a MessageWithParts, &'a SubtaskPart)>,
}

impl<'a> Latest<'a> {
    pub fn of(history: &'a [MessageWithParts]) -> Self {
        let user = history.iter().rev().find(|m| m.message.is_user());
        let assistant = history.iter().rev().find(|m| !m.message.is_user());
        let finished = history
            .iter()
            .rev()
            .find(|m| m.message.as_assistant().is_some_and(|a| a.finish.is_some()));
        let finished_id = finished.map(|m| m.message.id.as_str()).unwrap_or("");
        let compaction = history
            .iter()
            .rev()
            .take_while(|m| m.message.id.as_str() > finished_id)
            .find(|m| m.message.is_user() && m.compaction().is_some());
        Self {
            user,
            assistant,
            finished,
            compaction,
            subtask: pending_subtask::pending(history, finished_id),
        }
    }

    /// Exit when the last assistant finished for a reason other than tool
    /// calls, has no unfinished tool calls, and is newer than the last user
    /// message (spec 3.1).
    pub fn is_done(&self) -> bool {
        let (Some(user), Some(assistant)) = (self.user, self.assistant) else {
            return self.user.is_none();
        };
        let Some(info) = assistant.message.as_assistant() else {
            return false;
        };
        let finished = info.finish.is_some() && !crate::message::wants_tool_results(assistant);
        let unfinished_tools = assistant
            .parts
            .iter()
            .filter_map(Part::as_tool)
            .any(|t| !t.state.is_finished());
        finished && !unfinished_tools && user.message.id < assistant.message.id
    }
}

/// Runs the loop until the session has nothing left to do.
pub async fn run(ctx: Arc<SessionCtx>, cancel: CancellationToken) -> Result<(), Error> {
    let mut step: u32 = 0;
    let mut retries: u32 = 0;
    // A new turn: rejected-as-too-long compactions count afresh, and so do
    // the guard's (a turn it stopped never reached the reset at its end).
    gauge::reset_rejections(&ctx);
    gauge::reset_guard(&ctx);
    let mut result = iterate(&ctx, &cancel, &mut step, &mut retries).await;
    // The last writing step's patch is written before the turn ends: `/undo`,
    // `/diff` and `cairn run`'s exit, which wait for idle, all see it.
    ctx.snapshot_chain.settle_and_forget().await;
    // A run that found nothing to do (the runtime's re-check after a message
    // queued while busy) never said busy, so it must not say idle either:
    // front ends would see the session go idle twice.
    let worked = step > 0;
    if worked && result.is_ok() && ctx.settings.compaction.prune && !cancel.is_cancelled() {
        // A failed prune is reported like any failure below, then idle: with
        // `?` here the session stayed busy and `cairn run` waited for good.
        result = prune_task::run(&ctx, false).await.map(|_pruned| ());
    }
    if worked {
        // The last step's usage is the gauge's new anchor: show it.
        gauge::refresh_session(&ctx).await;
    }
    // A failure is said before idle: a front end that stops at idle (cairn
    // run) would otherwise end with exit 0 and never show it.
    if let Err(error) = &result {
        tracing::error!(session = %ctx.session_id, %error, "session loop failed");
        ctx.writer.error(&ctx.session_id, failure_message(error));
    }
    // Idle last: a front end that waits for idle sees the prune's result too.
    if worked {
        ctx.set_status(SessionStatus::Idle);
    }
    // Reported above, not again by the runtime.
    Ok(())
}

/// A store failure means what was shown may not be saved: say so, and what to do.
fn failure_message(error: &Error) -> String {
    match error {
        Error::Store(_) => format!(
            "{error}. The answer shown so far may NOT be saved in the session: check free disk space and whether another program holds the database, then send the message again."
        ),
        Error::Internal(_) => error.to_string(),
    }
}

async fn iterate(
    ctx: &Arc<SessionCtx>,
    cancel: &CancellationToken,
    step: &mut u32,
    retries: &mut u32,
) -> Result<(), Error> {
    let mut stop_blocks = 0;
    loop {
        if cancel.is_cancelled() {
            return Ok(());
        }
        let mut context = ctx.read_view().await?;
        let next = decide_and_act(ctx, cancel, &mut context, step, retries, &mut stop_blocks).await;
        ctx.keep_view(context);
        if next? == Next::Exit {
            return Ok(());
        }
    }
}

/// What the loop does after an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Continue,
    Exit,
}

/// One iteration over the session's model view read: exit, run a pending
/// compaction (which consumes the read), create one, or call the model once.
/// A read that was cut (older messages left out: a session never compacted)
/// is compacted before the model sees it.
async fn decide_and_act(
    ctx: &Arc<SessionCtx>,
    cancel: &CancellationToken,
    read: &mut LiveView,
    step: &mut u32,
    retries: &mut u32,
    stop_blocks: &mut u32,
) -> Result<Next, Error> {
    let cut = read.was_cut();
    let history = read.messages();
    let latest = Latest::of(history);
    if latest.is_done() {
        return end_of_turn(ctx, cancel, &latest, *step, stop_blocks).await;
    }
    let Some(user_message) = latest.user else {
        return Ok(Next::Exit);
    };
    let Some(user) = user_message.message.as_user().cloned() else {
        return Ok(Next::Exit);
    };
    ctx.set_status(SessionStatus::Busy);
    *step += 1;

    if let Some((message, subtask)) = latest.subtask {
        pending_subtask::run(ctx, cancel, message, subtask).await?;
        return Ok(Next::Continue);
    }
    if let Some(request) = latest.compaction {
        // A window the prompt alone fills is refused here too (issue #30:
        // `/compact` at 2k still sent a summary): no summary can make room.
        if let Some(diagnosis) = window_diagnosis(ctx, &user, history).await {
            ctx.writer.error(&ctx.session_id, diagnosis);
            ctx.writer.store.delete_message(&request.message.id).await?;
            return Ok(Next::Exit);
        }
        // The summary takes the read whole rather than a copy of it; the
        // next iteration reads afresh from the new compaction point.
        let request = request.clone();
        let history = read.take_messages();
        match compaction_task::run(ctx, history, cut, &request, cancel).await? {
            StepOutcome::Stop => return Ok(Next::Exit),
            _ => return Ok(Next::Continue),
        }
    }
    let model = match ctx.models.resolve(&user.model).await {
        Ok(model) => model,
        Err(message) => {
            ctx.writer.error(&ctx.session_id, message);
            return Ok(Next::Exit);
        }
    };
    if let Some(warning) = model.take_warning() {
        ctx.writer.notice(&ctx.session_id, warning);
    }
    let agent = ctx.agents.get(&user.agent).clone();
    ctx.remote_instructions
        .load(&ctx.env.extra_instructions, |problem| {
            ctx.report_once(problem)
        })
        .await;
    if cut {
        // Never compacted and longer than any window: summarize what was
        // read before building a request of it.
        return compact_automatically(ctx, &user).await;
    }
    let is_last_step = agent.steps.is_some_and(|max| *step >= max);
    let view = view::model_view(history);
    let (request, problems) = build_request(ctx, &agent, &model, &view, is_last_step);
    for problem in &problems {
        ctx.report_once(problem);
    }
    // The gauge and the trigger are the same number: the next request's size.
    let measured = gauge::measure_request_exact(ctx, &model, &view, &request).await;
    let gauge = measured.gauge;
    gauge::publish(ctx, gauge);
    // A window the prompt alone (nearly) fills: compacting cannot help.
    if let Some(diagnosis) = too_small(ctx, &model, &request).await {
        ctx.writer.error(&ctx.session_id, diagnosis);
        return Ok(Next::Exit);
    }
    // Every request is checked, the first after a summary too (issue #30:
    // after "compaction cannot help" the next message went out over the
    // compaction point). Compacting again right after a summary cannot
    // loop: the guard stops a compaction that leaves the request over the
    // point, or that frees too little, or that the turn does not progress past.
    if crate::context::is_overflow(&gauge) {
        return make_room(ctx, &user).await;
    }
    let assistant = new_assistant(ctx, &user_message.message.id, &user, &agent.name, false);
    let offers_task = request.tools.iter().any(|t| t.name == TASK_TOOL);
    let runner = ToolRunner::new(
        ctx.clone(),
        agent.tools.clone(),
        recent_calls(history),
        cancel.clone(),
    )
    .with_output_limits(gauge::tool_output_limits(ctx, &model))
    .with_delegation(offers_task);
    // A subagent's context already carries its agent's rules (and hands
    // them down to its own children); the session's own agent is applied here.
    let mut runner = if ctx.depth == 0 {
        runner.with_agent_rules(&agent.permission)
    } else {
        runner
    };
    let assistant_id = assistant.id.clone();
    let outcome = processor::process(
        Step {
            ctx,
            model: &model,
            assistant,
            request,
            summary: false,
            cancel: cancel.clone(),
            sent_tokens: Some(measured.counted),
            retries,
        },
        &mut runner,
    )
    .await?;
    after_step(ctx, cancel, &model, &user, &assistant_id, outcome, retries).await
}

/// The turn is done: exit, unless a Stop hook gives a reason to go on.
/// Only a turn that worked asks (not the re-check after a message queued
/// while busy).
async fn end_of_turn(
    ctx: &SessionCtx,
    cancel: &CancellationToken,
    latest: &Latest<'_>,
    step: u32,
    stop_blocks: &mut u32,
) -> Result<Next, Error> {
    // A summary (`/compact`) is not an answer the agent would stop after.
    let answered = latest
        .assistant
        .and_then(|m| m.message.as_assistant())
        .is_some_and(|a| !a.summary);
    if step > 0 && answered && stop_hooks_continue(ctx, cancel, latest, stop_blocks).await? {
        return Ok(Next::Continue);
    }
    gauge::reset_guard(ctx);
    Ok(Next::Exit)
}

/// Asks the Stop (or, in a subagent, SubagentStop) hooks whether the turn
/// may end; true when one gave a reason to go on, written as a new user
/// message for the next step.
async fn stop_hooks_continue(
    ctx: &SessionCtx,
    cancel: &CancellationToken,
    latest: &Latest<'_>,
    stop_blocks: &mut u32,
) -> Result<bool, Error> {
    let caller = ctx.hook_caller();
    let Some(reason) = caller.stop(ctx.depth > 0, *stop_blocks > 0, cancel).await else {
        return Ok(false);
    };
    if *stop_blocks >= MAX_STOP_BLOCKS {
        ctx.writer.notice(
            &ctx.session_id,
            format!("warning: a Stop hook asked to go on {MAX_STOP_BLOCKS} times this turn; stopped anyway"),
        );
        return Ok(false);
    }
    let Some(user) = latest.user.and_then(|m| m.message.as_user()) else {
        return Ok(false);
    };
    *stop_blocks += 1;
    caller.continue_with(user, &reason).await?;
    Ok(true)
}

/// `Some(diagnosis)` when the window is too small for the request the
/// user's agent would send next (`gauge::window_too_small`); `None` when it
/// fits or the model cannot be resolved (the caller's own path says so).
async fn window_diagnosis(
    ctx: &SessionCtx,
    user: &UserMessage,
    history: &[MessageWithParts],
) -> Option<String> {
    let model = ctx.models.resolve(&user.model).await.ok()?;
    let agent = ctx.agents.get(&user.agent).clone();
    let view = view::model_view(history);
    let (request, _problems) = build_request(ctx, &agent, &model, &view, false);
    too_small(ctx, &model, &request).await
}

/// `gauge::window_too_small`, with the fixed part counted by the model's
/// server where it counts.
async fn too_small(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    request: &ChatRequest,
) -> Option<String> {
    let exact_fixed = gauge::fixed_exact(ctx, model, request).await;
    gauge::window_too_small(ctx, model, request, exact_fixed)
}

/// The next request does not fit: prune, and compact only when prune
/// cleared nothing. Layer 2 before layer 3: clearing old tool outputs may be
/// enough and costs no summary; on a small window the turn may not end
/// (where prune normally runs) before the window fills.
async fn make_room(ctx: &SessionCtx, user: &UserMessage) -> Result<Next, Error> {
    if ctx.settings.compaction.prune && prune_task::run(ctx, false).await? {
        return Ok(Next::Continue);
    }
    compact_automatically(ctx, user).await
}

/// Writes an automatic compaction request; the next iteration runs it.
async fn compact_automatically(ctx: &SessionCtx, user: &UserMessage) -> Result<Next, Error> {
    let part = CompactionPart {
        auto: true,
        ..Default::default()
    };
    create_compaction(ctx, user, part).await?;
    Ok(Next::Continue)
}

/// Acts on how a model step ended: go on, stop, compact, or retry.
async fn after_step(
    ctx: &SessionCtx,
    cancel: &CancellationToken,
    model: &ResolvedModel,
    user: &UserMessage,
    assistant_id: &str,
    outcome: StepOutcome,
    retries: &mut u32,
) -> Result<Next, Error> {
    match outcome {
        StepOutcome::Continue => {
            *retries = 0;
            gauge::reset_rejections(ctx);
        }
        StepOutcome::Stop => return Ok(Next::Exit),
        StepOutcome::Compact => {
            if !ctx.settings.compaction.auto {
                ctx.writer.error(&ctx.session_id, gauge::overflow_advice());
                return Ok(Next::Exit);
            }
            // A step rejected before it finished is replayed after the summary.
            let finished = ctx
                .writer
                .store
                .get_message(assistant_id)
                .await?
                .and_then(|m| m.message.as_assistant().and_then(|a| a.finish));
            if finished.is_none()
                && let Some(advice) = gauge::record_rejection(ctx, model)
            {
                ctx.writer.error(&ctx.session_id, advice);
                return Ok(Next::Exit);
            }
            let part = CompactionPart {
                auto: true,
                overflow: finished.is_none(),
                ..Default::default()
            };
            create_compaction(ctx, user, part).await?;
        }
        StepOutcome::Retry(error) => {
            let message = error.to_string();
            match ctx.settings.retry.next_wait(*retries, error) {
                Ok(wait) => {
                    *retries += 1;
                    if !wait_before_retry(ctx, *retries, &message, wait, cancel).await {
                        return Ok(Next::Exit);
                    }
                }
                Err(final_error) => {
                    ctx.writer.error(&ctx.session_id, final_error.to_string());
                    return Ok(Next::Exit);
                }
            }
        }
    }
    Ok(Next::Continue)
}

/// Recent tool calls of the current user turn, oldest first, for the
/// doom-loop detector. Calls made for an earlier user message do not count:
/// asking three times to read the same file is the user's choice, not a loop
/// (issue #12). A compaction request is not a user turn.
fn recent_calls(history: &[MessageWithParts]) -> Vec<CallSignature> {
    let turn_start = history
        .iter()
        .rposition(|m| m.message.is_user() && m.compaction().is_none())
        .map_or(0, |i| i + 1);
    let mut calls: Vec<CallSignature> = history[turn_start..]
        .iter()
        .rev()
        .flat_map(|m| m.parts.iter().rev())
        .filter_map(Part::as_tool)
        .filter(|t| t.state.is_finished())
        .take(DOOM_HISTORY)
        .map(|t| CallSignature::new(&t.tool, t.state.input()))
        .collect();
    calls.reverse();
    calls
}

/// Waits `delay` before retrying a failed step, showing the countdown.
/// Returns false when the user cancelled meanwhile.
async fn wait_before_retry(
    ctx: &SessionCtx,
    attempt: u32,
    message: &str,
    delay: Duration,
    cancel: &CancellationToken,
) -> bool {
    ctx.set_status(SessionStatus::Retrying {
        attempt,
        message: message.to_string(),
        next_at: now_millis() + delay.as_millis() as i64,
    });
    tokio::select! {
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}
