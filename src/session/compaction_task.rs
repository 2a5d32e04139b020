//! Runs a pending compaction request: the summary call and what follows it.
//!
//! The rules (prompt, tail, replay, shrink ladder, guard) live in
//! `compaction`; this module does the I/O: it calls the hidden compaction agent
//! with no tools, retries with a smaller input when the summary request itself
//! overflows, records the tail, moves prompts typed meanwhile after the
//! summary, adds the continue message when the model was mid-task, and stops
//! with advice when compaction cannot help.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::bus::SessionStatus;
use crate::clock::now_millis;
use crate::context::compaction::working_state::Budget;
use crate::context::compaction::{
    self, AUTO_CONTINUE, AUTO_CONTINUE_METADATA, SummaryPlan, TailSettings,
};
use crate::message::{
    Carried, CompactedTokens, FinishReason, Message, MessageError, MessageErrorKind,
    MessageWithParts, Part, PartKind, Role, TextPart, UserMessage,
};
use crate::provider::ChatRequest;
use crate::session::agent::{COMPACTION, ToolAccess};
use crate::session::ctx::{ResolvedModel, SessionCtx};
use crate::session::processor::{self, Step, StepOutcome};
use crate::session::tool_runner::ToolRunner;
use crate::session::{Error, gauge, request, working_state};

/// `history` is the loop's read, consumed: the summary's head is moved out
/// of it. `cut`: the read left older messages out (a session never
/// compacted); the summary request says so.
pub async fn run(
    ctx: &Arc<SessionCtx>,
    history: Vec<MessageWithParts>,
    cut: bool,
    request: &MessageWithParts,
    cancel: &CancellationToken,
) -> Result<StepOutcome, Error> {
    let (Some(part), Some(user)) = (
        request.compaction().cloned(),
        request.message.as_user().cloned(),
    ) else {
        return Ok(StepOutcome::Stop);
    };
    ctx.hook_caller()
        .pre_compact(part.auto, part.instructions.as_deref(), cancel)
        .await;
    ctx.set_status(SessionStatus::Compacting);
    let model_ref = ctx
        .settings
        .compaction
        .model
        .clone()
        .unwrap_or_else(|| user.model.clone());
    let model = match ctx.models.resolve(&model_ref).await {
        Ok(model) => model,
        Err(message) => {
            ctx.writer.error(&ctx.session_id, message);
            return abandon(ctx, request).await;
        }
    };
    // The gauge's figure, the one the user saw: after a prune it is lower
    // than the last request's usage, and a rejected request reported none.
    let before_count = match gauge::last_used(ctx) {
        0 => tokens_before(&history),
        shown => shown,
    };
    let mid_task = was_mid_task(&history, &request.message.id);
    let turn_calls = tool_calls(&history);
    let tail = TailSettings {
        tail_turns: ctx.settings.compaction.tail_turns as usize,
        preserve_recent_tokens: ctx.settings.compaction.preserve_recent_tokens,
    };
    let Some(mut plan) = compaction::plan_summary(
        history,
        &request.message.id,
        tail,
        gauge::usable(ctx, &model),
    ) else {
        return abandon(ctx, request).await;
    };
    if cut {
        compaction::note_omitted_history(&mut plan.head);
    }
    let summary_id = match summarize(ctx, &model, &plan, request, &user, cancel).await? {
        Summarized::Written(id) => id,
        Summarized::Ended(outcome) => return Ok(outcome),
    };
    let summary = Summary {
        auto: part.auto,
        request,
        user: &user,
        id: &summary_id,
        before_count,
        mid_task,
        turn_calls: &turn_calls,
    };
    apply_summary(ctx, &model, &plan, summary).await
}

/// How the summary requests ended: a summary written (its message id), or
/// the step's outcome when none was.
enum Summarized {
    Written(String),
    Ended(StepOutcome),
}

/// Sends the summary request, shrinking its input down the ladder until one
/// fits and succeeds.
async fn summarize(
    ctx: &Arc<SessionCtx>,
    model: &Arc<ResolvedModel>,
    plan: &SummaryPlan,
    request: &MessageWithParts,
    user: &UserMessage,
    cancel: &CancellationToken,
) -> Result<Summarized, Error> {
    let mut step = plan.first_step;
    loop {
        let Some(input) = compaction::shrink_step(&plan.head, step) else {
            // No answer yet to summarize: the user's message is all there is.
            let answered = plan.head.iter().any(|m| !m.message.is_user());
            // A replayed message is not in the head: what does not fit is
            // older, even when it was never answered (a paste that stopped
            // the previous turn).
            let what = match (&plan.replay, answered) {
                (None, false) => TooLarge::MessageAlone,
                (Some(_), _) => TooLarge::History,
                (None, true) => TooLarge::Session,
            };
            let outcome = give_up(ctx, request, what).await?;
            return Ok(Summarized::Ended(outcome));
        };
        step += 1;
        let chat = summary_request(
            model,
            &input,
            plan,
            gauge::summary_output_tokens(ctx, model),
        );
        if gauge::clearly_exceeds(ctx, model, &chat) {
            continue; // far over the window: shrink without counting it exactly
        }
        let counted = gauge::count_request(&chat);
        if gauge::exceeds_before_sending(ctx, model, &chat, counted).await {
            continue; // certain to overflow: shrink before paying for a round trip
        }
        let assistant = request::new_assistant(ctx, &request.message.id, user, COMPACTION, true);
        let assistant_id = assistant.id.clone();
        let mut runner = ToolRunner::new(ctx.clone(), ToolAccess::None, Vec::new(), cancel.clone());
        let step_input = Step {
            ctx,
            model,
            assistant,
            request: chat,
            summary: true,
            cancel: cancel.clone(),
            sent_tokens: Some(counted),
            retries: &mut 0,
        };
        match processor::process(step_input, &mut runner).await? {
            StepOutcome::Compact => {
                mark_failed(
                    ctx,
                    &assistant_id,
                    MessageErrorKind::ContextOverflow,
                    "summary request exceeded the context window; retrying with less history",
                )
                .await?;
            }
            StepOutcome::Continue => return Ok(Summarized::Written(assistant_id)),
            StepOutcome::Stop | StepOutcome::Retry(_) => {
                let outcome = summary_failed(ctx, request, &assistant_id, cancel).await?;
                return Ok(Summarized::Ended(outcome));
            }
        }
    }
}

/// `output_tokens` is the summary's budget (`context::summary_output_tokens`):
/// on a small window the whole output limit would leave no room for input.
fn summary_request(
    model: &ResolvedModel,
    input: &[MessageWithParts],
    plan: &SummaryPlan,
    output_tokens: u32,
) -> ChatRequest {
    ChatRequest {
        model: model.model.model.clone(),
        system: vec![compaction::SYSTEM_PROMPT.to_string()],
        messages: compaction::summary_messages(
            input,
            &model.model,
            &plan.prompt,
            model.media_in_tool_results(),
        ),
        tools: Vec::new(),
        max_output_tokens: output_tokens,
        temperature: None,
        // A summary never shares the session's cache partition (spec 16.D).
        cache_key: None,
    }
}

/// A summary request that stopped: cancelled (the session stays as it was)
/// or failed (said so, history unchanged).
async fn summary_failed(
    ctx: &SessionCtx,
    request: &MessageWithParts,
    assistant_id: &str,
    cancel: &CancellationToken,
) -> Result<StepOutcome, Error> {
    if cancel.is_cancelled() {
        ctx.writer.store.delete_message(assistant_id).await?;
        return abandon(ctx, request).await;
    }
    let reason = mark_failed(
        ctx,
        assistant_id,
        MessageErrorKind::Api,
        "the summary request failed",
    )
    .await?;
    ctx.writer.error(
        &ctx.session_id,
        format!("compaction failed: {reason}. The conversation is unchanged; try /compact again, or another model with /model."),
    );
    Ok(StepOutcome::Stop)
}

/// The compaction that produced a summary, as `apply_summary` needs it.
struct Summary<'a> {
    auto: bool,
    request: &'a MessageWithParts,
    user: &'a UserMessage,
    /// The summary message's id.
    id: &'a str,
    before_count: u64,
    /// The model stopped with work left (`was_mid_task`).
    mid_task: bool,
    /// The tool calls in the history the compaction saw (`tool_calls`).
    turn_calls: &'a [String],
}

/// Makes a written summary the compaction point: records the tail, puts the
/// replayed and queued prompts after it, reports the new size, and continues
/// the task the overflow interrupted.
async fn apply_summary(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    plan: &SummaryPlan,
    summary: Summary<'_>,
) -> Result<StepOutcome, Error> {
    let request = summary.request;
    let mut stored = request
        .parts
        .iter()
        .find(|p| p.as_compaction().is_some())
        .cloned();
    if let Some(tail_start) = &plan.tail_start_id
        && let Some(stored) = &mut stored
    {
        if let PartKind::Compaction(compaction) = &mut stored.kind {
            compaction.tail_start_id = Some(tail_start.clone());
        }
        ctx.writer.part(stored).await?;
    }
    // The replayed message and prompts typed meanwhile must be what the
    // model reads next, and they count in the size after compaction.
    let replayed = match &plan.replay {
        Some(replay) if summary.auto => Some(replay_message(ctx, replay).await?),
        _ => None,
    };
    // With a verbatim tail the model reads the store from the tail on, the
    // original included: it is moved, not copied, or the model reads it
    // twice (issue #30). The plan keeps a tail only when nothing followed it.
    if let (Some(_), Some(original), Some(_)) = (&replayed, &plan.replay, &plan.tail_start_id) {
        ctx.writer
            .store
            .delete_message(&original.message.id)
            .await?;
    }
    let queued = queued_prompts(ctx, &request.message.id, replayed.as_deref()).await?;
    for prompt in queued
        .iter()
        .filter(|m| replayed.is_some() || m.message.id.as_str() < summary.id)
    {
        move_to_end(ctx, prompt).await?;
    }
    let carried = carry_working_state(ctx, model, plan, &summary).await?;
    let after = gauge::refresh_counted(ctx, model).await?;
    let tokens = CompactedTokens {
        before: summary.before_count,
        after: after.used,
    };
    // The figures go on the request, where the transcript's marker reads
    // them, and into the one notice: the same pair in both places.
    let mut overflow = false;
    if let Some(mut stored) = stored {
        if let PartKind::Compaction(compaction) = &mut stored.kind {
            compaction.tokens = Some(tokens);
            compaction.carried = Some(carried.clone());
            overflow = compaction.overflow;
        }
        ctx.writer.part(&stored).await?;
    }
    ctx.writer.notice(
        &ctx.session_id,
        compaction_notice(summary.auto, overflow, tokens, &carried),
    );
    let turn_calls = summary.auto.then_some(summary.turn_calls);
    if let Some(advice) = gauge::after_compaction(
        ctx,
        model,
        summary.before_count,
        gauge::decisive_used(ctx, model, &after),
        turn_calls,
    ) {
        ctx.writer.error(&ctx.session_id, advice);
        return Ok(StepOutcome::Stop);
    }
    if summary.auto && replayed.is_none() && queued.is_empty() && summary.mid_task {
        continue_message(ctx, summary.user).await?;
    }
    Ok(StepOutcome::Continue)
}

/// Writes the working state on the summary, within half the room the
/// summary and the tail leave below the compaction point.
async fn carry_working_state(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    plan: &SummaryPlan,
    summary: &Summary<'_>,
) -> Result<Carried, Error> {
    let without = gauge::measure_quietly(ctx, model).await?;
    let room = without
        .compact_at
        .unwrap_or(without.usable)
        .saturating_sub(without.used);
    // The first message the model still reads verbatim: the user's words
    // from it on are not repeated in the state.
    let verbatim_from = [
        plan.tail_start_id.as_deref(),
        plan.replay.as_ref().map(|m| m.message.id.as_str()),
        Some(summary.request.message.id.as_str()),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(summary.request.message.id.as_str());
    let compacted = working_state::Compacted {
        summary_id: summary.id,
        summarized: plan.head.len(),
        verbatim_from,
        budget: state_budget(ctx, model, room),
    };
    let sources = working_state::Sources {
        writer: &ctx.writer,
        session_id: &ctx.session_id,
        root: ctx.env.root.clone(),
        permissions: ctx.permissions.clone(),
        sandbox: ctx.settings.sandbox.clone(),
    };
    working_state::carry(sources, compacted).await
}

/// The window's share, and never more than half the room left below the
/// compaction point (the next turn needs the rest), in our tokenizer's
/// units: a model that counts more per word gets less text.
fn state_budget(ctx: &SessionCtx, model: &ResolvedModel, room: u64) -> Budget {
    let share = Budget::for_usable(gauge::usable(ctx, model)).total;
    let theirs_per_thousand = ctx.accounting.calibration(&model.model).scale(1_000).max(1);
    Budget {
        total: share.min(room / 2) * 1_000 / theirs_per_thousand,
    }
}

/// The one notice of a compaction: the gauge before and after; why, when
/// the model rejected a request as too large (that rejection has no notice
/// of its own); and a plain word when it did not make the context smaller
/// (what is kept verbatim, the recent turns and the summary, outweighed what
/// was summarized).
pub(crate) fn compaction_notice(
    auto: bool,
    overflow: bool,
    tokens: CompactedTokens,
    carried: &Carried,
) -> String {
    let kind = if auto { "auto" } else { "manual" };
    let mut notice = format!(
        "compacted the conversation ({kind}): {} -> {} tokens",
        crate::shared::thousands(tokens.before),
        crate::shared::thousands(tokens.after),
    );
    if overflow {
        notice
            .push_str(", after the model rejected the request as too large for its context window");
    }
    if tokens.after >= tokens.before {
        notice.push_str("; it did not shrink: the recent turns kept verbatim are most of it");
    }
    if let Some(what) = carried.words() {
        notice.push_str(&format!("; carried verbatim: {what}"));
    }
    if carried.thin_summary {
        notice.push_str("; the summary is thin, the working state carries the rest");
    }
    notice
}

/// Every finished tool call in `history` as "tool input", for the guard:
/// a model that makes only these again after the summary is going in circles.
fn tool_calls(history: &[MessageWithParts]) -> Vec<String> {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(Part::as_tool)
        .filter(|t| t.state.is_finished())
        .map(|t| format!("{} {}", t.tool, t.state.input()))
        .collect()
}

/// The size of the window before compaction: the last finished request.
fn tokens_before(history: &[MessageWithParts]) -> u64 {
    history
        .iter()
        .rev()
        .filter_map(|m| m.message.as_assistant())
        .find(|a| a.finish.is_some() && !a.summary)
        .map_or(0, |a| a.tokens.context_count())
}

/// The model stopped with work left: it was calling tools, or a user message
/// was still unanswered when the window overflowed.
fn was_mid_task(history: &[MessageWithParts], request_id: &str) -> bool {
    let before: Vec<&MessageWithParts> = history
        .iter()
        .filter(|m| m.message.id.as_str() < request_id)
        .collect();
    let last_user = before
        .iter()
        .rev()
        .find(|m| m.message.is_user() && m.compaction().is_none());
    let last_assistant = before
        .iter()
        .rev()
        .find(|m| m.message.as_assistant().is_some());
    match (last_user, last_assistant) {
        (Some(user), Some(assistant)) => {
            user.message.id > assistant.message.id || crate::message::wants_tool_results(assistant)
        }
        (Some(_), None) => true,
        _ => false,
    }
}

async fn continue_message(ctx: &SessionCtx, user: &UserMessage) -> Result<(), Error> {
    let message = Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(user.clone()),
    };
    ctx.writer.message(&message).await?;
    let text = TextPart {
        text: AUTO_CONTINUE.to_string(),
        synthetic: true,
        metadata: Some(serde_json::json!({ AUTO_CONTINUE_METADATA: true })),
        ..Default::default()
    };
    ctx.writer
        .part(&Part::new(&message, PartKind::Text(text)))
        .await?;
    Ok(())
}

/// Re-sends a user message at the end of the session (the one whose request
/// overflowed, or a prompt being moved); returns the copy's id.
async fn replay_message(ctx: &SessionCtx, original: &MessageWithParts) -> Result<String, Error> {
    let mut message = original.message.clone();
    message.id = crate::id::message_id();
    message.time_created = now_millis();
    ctx.writer.message(&message).await?;
    for part in &original.parts {
        let mut copy = Part::new(&message, part.kind.clone());
        copy.tokens = part.tokens;
        ctx.writer.part(&copy).await?;
    }
    Ok(message.id)
}

/// Real user messages written after the compaction request (typed while
/// the summary was written), oldest first, leaving out the `replay` just made.
async fn queued_prompts(
    ctx: &SessionCtx,
    request_id: &str,
    replay: Option<&str>,
) -> Result<Vec<MessageWithParts>, Error> {
    let recent = ctx
        .writer
        .store
        .messages_before(&ctx.session_id, None, 50)
        .await?;
    let mut queued: Vec<MessageWithParts> = recent
        .into_iter()
        .filter(|m| {
            m.message.is_user()
                && m.compaction().is_none()
                && m.message.id.as_str() > request_id
                && Some(m.message.id.as_str()) != replay
        })
        .collect();
    queued.sort_by(|a, b| a.message.id.cmp(&b.message.id));
    Ok(queued)
}

/// Moves a prompt to the end of the session (a copy with a new id), so the
/// model sees it after the summary and after a replayed message.
async fn move_to_end(ctx: &SessionCtx, prompt: &MessageWithParts) -> Result<(), Error> {
    replay_message(ctx, prompt).await?;
    ctx.writer.store.delete_message(&prompt.message.id).await?;
    Ok(())
}

/// Closes a summary that failed, keeping the error the processor recorded
/// if there is one; returns the reason it now carries.
async fn mark_failed(
    ctx: &SessionCtx,
    assistant_id: &str,
    kind: MessageErrorKind,
    reason: &str,
) -> Result<String, Error> {
    let Some(mut failed) = ctx.writer.store.get_message(assistant_id).await? else {
        return Ok(reason.to_string());
    };
    let Some(info) = failed.message.as_assistant_mut() else {
        return Ok(reason.to_string());
    };
    // The processor's own error (a stream error, a tool call in a summary)
    // says more than ours: keep it.
    let error = info.error.get_or_insert_with(|| MessageError {
        kind,
        message: reason.to_string(),
    });
    let reason = error.message.clone();
    info.finish = Some(FinishReason::Error);
    info.time_completed = Some(now_millis());
    ctx.writer.message(&failed.message).await?;
    Ok(reason)
}

/// What did not fit when nothing more can be dropped.
enum TooLarge {
    /// The message being answered is the whole conversation (a first message
    /// bigger than the window): there is nothing to summarize, and compacting
    /// or pruning cannot help.
    MessageAlone,
    History,
    Session,
}

/// Nothing more can be dropped and the summary still does not fit.
async fn give_up(
    ctx: &SessionCtx,
    request: &MessageWithParts,
    what: TooLarge,
) -> Result<StepOutcome, Error> {
    let message = match what {
        TooLarge::MessageAlone => "your message alone does not fit the model's context window: shorten it (send a large file as a path for the model to read instead of its content), or use a model with a larger context window".to_string(),
        TooLarge::History | TooLarge::Session => {
            let what = if matches!(what, TooLarge::History) {
                "the conversation history is too large to compact"
            } else {
                "the session is too large to compact"
            };
            format!("{what}: even the smallest summary request exceeds the model's window. Try /prune, a model with a larger context window, or a new session.")
        }
    };
    ctx.writer.error(&ctx.session_id, message);
    abandon(ctx, request).await
}

/// Removes a compaction request that will not run, so it is not retried forever.
async fn abandon(ctx: &SessionCtx, request: &MessageWithParts) -> Result<StepOutcome, Error> {
    ctx.writer.store.delete_message(&request.message.id).await?;
    Ok(StepOutcome::Stop)
}

#[cfg(test)]
mod tests {
    use super::compaction_notice;
    use crate::message::{Carried, CompactedTokens};

    #[test]
    fn one_notice_says_before_after_why_and_when_it_did_not_shrink() {
        let tokens = |before, after| CompactedTokens { before, after };
        assert_eq!(
            compaction_notice(true, false, tokens(45_000, 1_951), &Carried::default()),
            "compacted the conversation (auto): 45,000 -> 1,951 tokens"
        );
        assert_eq!(
            compaction_notice(false, false, tokens(2_496, 2_845), &Carried::default()),
            "compacted the conversation (manual): 2,496 -> 2,845 tokens; it did not shrink: the recent turns kept verbatim are most of it"
        );
        assert_eq!(
            compaction_notice(true, true, tokens(9_020, 1_204), &Carried::default()),
            "compacted the conversation (auto): 9,020 -> 1,204 tokens, after the model rejected the request as too large for its context window"
        );
    }
}
