//! The stream processor: one model call becomes parts.
//!
//! step-start; text and reasoning parts created on their first delta, deltas
//! published, the growing text persisted at part end and at least every
//! [`FLUSH_INTERVAL`]; tool parts pending -> running (handed to the tool
//! runner) -> completed / error; step-finish with usage and cost. It decides
//! nothing about the loop: it returns a [`StepOutcome`] and the loop acts on it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::bus::{DeltaField, SessionStatus};
use crate::clock::now_millis;
use crate::message::{
    FinishReason, Message, MessageError, MessageErrorKind, Part, PartKind, ReasoningPart,
    StepFinishPart, StepStartPart, TextPart, TimeSpan, ToolPart, ToolState,
};
use crate::provider::{self, ChatRequest, StreamEvent};
use crate::session::ctx::{ResolvedModel, SessionCtx};
use crate::session::snapshot_step::StepSnapshots;
use crate::session::tool_runner::{ToolCall, ToolRunner};
use crate::session::{Error, gauge, part_cap};

/// Longest time streamed text lives only in memory; a crash loses at most this.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);

/// How one model call ended, for the loop.
#[derive(Debug)]
pub enum StepOutcome {
    /// Go round the loop again; its exit check decides whether to stop.
    Continue,
    /// Stop the loop (error, rejection, interrupt).
    Stop,
    /// The context overflowed: compact, then go on.
    Compact,
    /// A retryable failure before anything useful arrived: try again.
    Retry(provider::Error),
}

/// One model call to make.
pub struct Step<'a> {
    pub ctx: &'a SessionCtx,
    pub model: &'a ResolvedModel,
    pub assistant: Message,
    pub request: ChatRequest,
    /// Summaries may not call tools.
    pub summary: bool,
    pub cancel: CancellationToken,
    /// Our count of `request`, which calibration compares with the usage
    /// reported for it (`gauge::Measured::counted`); `None` when its usage
    /// must teach nothing.
    pub sent_tokens: Option<u64>,
    /// Retries of this step made so far (the loop's and the request's, one
    /// count for `RetryPolicy`); advanced while the request is retried.
    pub retries: &'a mut u32,
}

/// The parts being built while the stream runs.
struct Building {
    assistant: Message,
    text: Option<(Part, Instant)>,
    reasoning: Option<(Part, Instant)>,
    /// call id -> pending tool part and its raw argument text.
    pending_tools: HashMap<String, Part>,
    tool_calls_started: usize,
    /// Set while recording an error the loop acts on (a retry, a compaction after
    /// an overflow): `finish` stays unset.
    retrying: bool,
    /// Snapshots around the step; taken when the patch is recorded.
    snapshots: Option<StepSnapshots>,
}

pub async fn process(step: Step<'_>, runner: &mut ToolRunner) -> Result<StepOutcome, Error> {
    let Step {
        ctx,
        model,
        assistant,
        request,
        summary,
        cancel,
        sent_tokens,
        retries,
    } = step;
    if summary {
        // A compaction summarizes the steps before it, patches included.
        ctx.snapshot_chain.settle().await;
    }
    let writer = &ctx.writer;
    writer.message(&assistant).await?;
    let start = Part::new(&assistant, PartKind::StepStart(StepStartPart::default()));
    writer.part(&start).await?;
    let mut building = Building {
        assistant,
        text: None,
        reasoning: None,
        pending_tools: HashMap::new(),
        tool_calls_started: 0,
        retrying: false,
        snapshots: Some(if summary {
            StepSnapshots::off()
        } else {
            StepSnapshots::start(ctx)
        }),
    };

    ctx.accounting.sent(&model.model, sent_tokens);
    let mut stream = match open_stream(ctx, model, &request, &cancel, retries).await {
        Ok(stream) => stream,
        // The retry policy already had its say: this failure is final.
        Err(error) if error.is_retryable() => {
            return fail_for_good(ctx, &mut building, runner, error).await;
        }
        Err(error) => return fail(ctx, model, &mut building, runner, error).await,
    };
    ctx.set_status(SessionStatus::Busy);

    loop {
        let event = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                interrupt(ctx, &mut building, runner).await?;
                record_patch(ctx, &mut building).await?;
                return Ok(StepOutcome::Stop);
            }
            event = next_or_say_quiet(ctx, model, &mut stream) => event,
        };
        match event {
            None => break,
            Some(Ok(event)) => {
                if let Some(outcome) =
                    apply(ctx, model, &mut building, runner, event, summary).await?
                {
                    return Ok(outcome);
                }
            }
            Some(Err(error)) => return fail(ctx, model, &mut building, runner, error).await,
        }
    }
    let ended = Ended {
        ctx,
        model,
        cancel: &cancel,
        summary,
    };
    after_stream(ended, building, runner).await
}

/// How long a silent stream goes unremarked: a quarter of the stall timeout
/// (30 s of the default 120 s), so the user hears well before it is given up.
fn quiet_notice_after(model: &ResolvedModel) -> Duration {
    model.provider.config().stall_timeout / 4
}

/// The stream's next event, said quiet as [`say_while_quiet`] does.
async fn next_or_say_quiet(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    stream: &mut provider::EventStream,
) -> Option<Result<StreamEvent, provider::Error>> {
    say_while_quiet(ctx, model, stream.next(), None).await
}

/// Awaits `work`; each quarter of the stall timeout it takes, a notice says
/// the server is silent and when cairn gives up (a user facing a silent
/// server otherwise saw nothing for two minutes). A signal on `restart` (a
/// retry, which sends a new request) starts the count again.
async fn say_while_quiet<T>(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    work: impl std::future::Future<Output = T>,
    restart: Option<&tokio::sync::Notify>,
) -> T {
    let every = quiet_notice_after(model);
    let stall = model.provider.config().stall_timeout;
    tokio::pin!(work);
    let mut quiet = Duration::ZERO;
    loop {
        let restarted = async {
            match restart {
                Some(restart) => restart.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            done = &mut work => return done,
            () = restarted => quiet = Duration::ZERO,
            () = tokio::time::sleep(every) => {
                quiet += every;
                ctx.writer.notice(&ctx.session_id, format!(
                    "no response from the server for {}; cairn gives up after {} of silence (Ctrl+C stops now)",
                    seconds(quiet),
                    seconds(stall)
                ));
            }
        }
    }
}

/// "30 s", or "0.5 s" below ten seconds.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.1} s")
    } else {
        format!("{secs:.0} s")
    }
}

/// Opens the model's stream; retries are reported on the status line.
/// Waiting for the headers and the first event is said as silence is
/// mid-stream: a server that accepts and says nothing was otherwise heard
/// of only when given up, 242 s later (issue #31).
async fn open_stream(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    request: &ChatRequest,
    cancel: &CancellationToken,
    retries: &mut u32,
) -> Result<provider::EventStream, provider::Error> {
    let session_id = ctx.session_id.clone();
    let bus = ctx.writer.bus.clone();
    let retried = std::sync::Arc::new(tokio::sync::Notify::new());
    let on_retry = {
        let retried = retried.clone();
        move |notice: provider::RetryNotice| {
            retried.notify_one();
            publish_retry(&bus, &session_id, notice);
        }
    };
    let open = model.provider.stream_with_retry(
        request,
        cancel.clone(),
        &ctx.settings.retry,
        retries,
        on_retry,
    );
    say_while_quiet(ctx, model, open, Some(&retried)).await
}

/// A retry's wait, on the status line.
fn publish_retry(bus: &crate::bus::Bus, session_id: &str, notice: provider::RetryNotice) {
    bus.publish(crate::bus::Event::Status {
        session_id: session_id.to_owned(),
        status: SessionStatus::Retrying {
            attempt: notice.attempt,
            message: notice.message,
            next_at: notice.next_at_millis as i64,
        },
    });
}

/// What `after_stream` needs of a step whose stream has ended.
struct Ended<'a> {
    ctx: &'a SessionCtx,
    model: &'a ResolvedModel,
    cancel: &'a CancellationToken,
    summary: bool,
}

/// The stream has ended: checks it finished, waits for its tools (an
/// interrupt stops them), and decides what the loop does next.
async fn after_stream(
    step: Ended<'_>,
    mut building: Building,
    runner: &mut ToolRunner,
) -> Result<StepOutcome, Error> {
    let ctx = step.ctx;
    close_open_parts(ctx, &mut building).await?;
    if building
        .assistant
        .as_assistant()
        .and_then(|a| a.finish)
        .is_none()
    {
        // The stream ended without a finish event: treat as a dropped connection.
        let error = provider::Error::truncated(&step.model.model.provider, "a finish event");
        return fail(ctx, step.model, &mut building, runner, error).await;
    }
    // The stream is done but tools may still run: an interrupt now must
    // stop them and mark the message aborted, as it does mid-stream.
    let finished = tokio::select! {
        biased;
        _ = step.cancel.cancelled() => None,
        finished = finish_tools(ctx, &mut building, runner) => Some(finished),
    };
    match finished {
        Some(finished) => finished?,
        None => {
            interrupt(ctx, &mut building, runner).await?;
            record_patch(ctx, &mut building).await?;
            return Ok(StepOutcome::Stop);
        }
    }
    record_patch(ctx, &mut building).await?;
    if step.cancel.is_cancelled() {
        // The tools ended on the interrupt before the select saw it.
        interrupt(ctx, &mut building, runner).await?;
        return Ok(StepOutcome::Stop);
    }
    if runner.blocked() {
        return Ok(StepOutcome::Stop);
    }
    let tokens = building
        .assistant
        .as_assistant()
        .map(|a| a.tokens)
        .unwrap_or_default();
    if !step.summary && gauge::is_overflow(ctx, step.model, tokens.context_count()) {
        // The gauge (and the compaction notice's "before") is this size,
        // the one that triggers the compaction, not the one measured before
        // the request (issue #30).
        let used = tokens.context_count();
        gauge::publish(ctx, gauge::gauge_for(ctx, step.model, used, false));
        return Ok(StepOutcome::Compact);
    }
    Ok(StepOutcome::Continue)
}

/// Applies one stream event; `Some` ends the step early.
async fn apply(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    building: &mut Building,
    runner: &mut ToolRunner,
    event: StreamEvent,
    summary: bool,
) -> Result<Option<StepOutcome>, Error> {
    match event {
        StreamEvent::TextDelta { text } => on_text(ctx, building, &text).await?,
        StreamEvent::ReasoningDelta { text } => on_reasoning(ctx, building, &text).await?,
        StreamEvent::ReasoningSignature { signature } => {
            if let Some((part, _)) = &mut building.reasoning
                && let PartKind::Reasoning(reasoning) = &mut part.kind
            {
                reasoning.signature = Some(signature);
            }
            close_reasoning(ctx, building).await?;
        }
        StreamEvent::RedactedReasoning { data } => {
            on_redacted_reasoning(ctx, building, data).await?
        }
        StreamEvent::ToolCallStart { id, name } => {
            close_text(ctx, building).await?;
            close_reasoning(ctx, building).await?;
            if summary {
                let message = format!("Tool call not allowed while generating summary: {name}");
                set_error(ctx, building, MessageErrorKind::Api, &message).await?;
                return Ok(Some(StepOutcome::Stop));
            }
            on_tool_start(ctx, building, id, name).await?;
        }
        StreamEvent::ToolCallDelta { id, arguments } => {
            if let Some(part) = building.pending_tools.get_mut(&id)
                && let PartKind::Tool(ToolPart {
                    state: ToolState::Pending { raw, .. },
                    ..
                }) = &mut part.kind
            {
                raw.push_str(&arguments);
                ctx.writer.delta(part, DeltaField::ToolInput, &arguments);
            }
        }
        StreamEvent::ToolCallEnd { id, name, input } => {
            let part = match building.pending_tools.remove(&id) {
                Some(part) => part,
                None => {
                    // A provider that sends the whole call at once, without a start.
                    building.tool_calls_started += 1;
                    pending_tool(&building.assistant, id, name.clone(), Value::Null)
                }
            };
            let refusal = match &mut building.snapshots {
                Some(snapshots) => snapshots.before_tool(&name, &input).await.err(),
                None => None,
            };
            runner.submit(ToolCall {
                part,
                name,
                input,
                refusal,
            });
        }
        StreamEvent::Finish { reason, usage } => {
            on_finish(ctx, model, building, reason, usage).await?
        }
    }
    Ok(None)
}

async fn on_text(ctx: &SessionCtx, building: &mut Building, text: &str) -> Result<(), Error> {
    close_reasoning(ctx, building).await?;
    let assistant = &building.assistant;
    let open = || {
        Part::new(
            assistant,
            PartKind::Text(TextPart {
                time: Some(TimeSpan {
                    start: now_millis(),
                    end: None,
                }),
                ..Default::default()
            }),
        )
    };
    append_streamed(
        &ctx.writer,
        &mut building.text,
        open,
        DeltaField::Text,
        text,
    )
    .await
}

async fn on_reasoning(ctx: &SessionCtx, building: &mut Building, text: &str) -> Result<(), Error> {
    if building.reasoning.is_none() {
        close_text(ctx, building).await?;
    }
    let assistant = &building.assistant;
    let open = || {
        Part::new(
            assistant,
            PartKind::Reasoning(ReasoningPart {
                time: TimeSpan {
                    start: now_millis(),
                    end: None,
                },
                ..Default::default()
            }),
        )
    };
    append_streamed(
        &ctx.writer,
        &mut building.reasoning,
        open,
        DeltaField::Reasoning,
        text,
    )
    .await
}

async fn on_redacted_reasoning(
    ctx: &SessionCtx,
    building: &mut Building,
    data: String,
) -> Result<(), Error> {
    close_text(ctx, building).await?;
    close_reasoning(ctx, building).await?;
    let now = now_millis();
    let part = Part::new(
        &building.assistant,
        PartKind::Reasoning(ReasoningPart {
            redacted: Some(data),
            time: TimeSpan {
                start: now,
                end: Some(now),
            },
            ..Default::default()
        }),
    );
    ctx.writer.part(&part).await?;
    Ok(())
}

/// A tool part waiting for its arguments.
fn pending_tool(assistant: &Message, call_id: String, tool: String, input: Value) -> Part {
    Part::new(
        assistant,
        PartKind::Tool(ToolPart {
            call_id,
            tool,
            state: ToolState::Pending {
                input,
                raw: String::new(),
            },
        }),
    )
}

async fn on_tool_start(
    ctx: &SessionCtx,
    building: &mut Building,
    id: String,
    name: String,
) -> Result<(), Error> {
    let part = pending_tool(
        &building.assistant,
        id.clone(),
        name,
        Value::Object(Default::default()),
    );
    ctx.writer.part(&part).await?;
    building.pending_tools.insert(id, part);
    building.tool_calls_started += 1;
    Ok(())
}

async fn on_finish(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    building: &mut Building,
    reason: FinishReason,
    usage: provider::Usage,
) -> Result<(), Error> {
    close_open_parts(ctx, building).await?;
    let tokens = usage.to_tokens();
    let cost = model.cost(&usage);
    let finish = Part::new(
        &building.assistant,
        PartKind::StepFinish(StepFinishPart {
            reason,
            tokens,
            cost,
            snapshot: None,
        }),
    );
    ctx.writer.part(&finish).await?;
    if let Some(assistant) = building.assistant.as_assistant_mut() {
        assistant.finish = Some(reason);
        // Replace, not add: tokens mean "size of the last request".
        assistant.tokens = tokens;
        assistant.cost += cost;
    }
    ctx.writer.message(&building.assistant).await?;
    ctx.accounting.learn(&model.model, &usage);
    gauge::observe_accepted(ctx, model, &usage);
    let is_summary = building.assistant.as_assistant().is_some_and(|a| a.summary);
    if reason == FinishReason::Length && !is_summary {
        // What was said is kept and shown, but the user must know it is not
        // all (issue #30: it ended silently with exit 0).
        ctx.writer.notice(&ctx.session_id, CUT_SHORT.to_string());
    }
    Ok(())
}

/// The notice of an answer the model stopped at its limit (finish reason
/// "length"): its output limit, or on a local server the end of its window.
const CUT_SHORT: &str = "the answer was cut short: the model reached its output limit or the end of its context window (finish reason \"length\"). Ask it to continue, or make room with /compact.";

/// The error of a part cut at [`part_cap::MAX_STREAMED_BYTES`].
const RAN_AWAY: &str = "the model's answer passed 4 MiB without ending and was cut there: the answer is incomplete (only its first 64 KiB are kept in the session). Ask for less at a time.";

async fn append_streamed(
    writer: &crate::session::writer::Writer,
    slot: &mut Option<(Part, Instant)>,
    open: impl FnOnce() -> Part,
    field: DeltaField,
    delta: &str,
) -> Result<(), Error> {
    let (part, last_flush) = match slot {
        Some(open) => open,
        None => {
            let part = open();
            writer.part(&part).await?;
            slot.insert((part, Instant::now()))
        }
    };
    let taken = match &mut part.kind {
        PartKind::Text(text) => part_cap::append(&mut text.text, delta),
        PartKind::Reasoning(reasoning) => part_cap::append(&mut reasoning.text, delta),
        _ => delta.to_owned(),
    };
    if taken.is_empty() {
        // Past the cap: a runaway part takes, shows and stores nothing more.
        return Ok(());
    }
    writer.delta(part, field, &taken);
    if taken.ends_with(&part_cap::marker()) {
        // The cut is where the answer stops: a script must not take it
        // for the whole answer (exit status and stderr say so).
        writer.error(&part.session_id, RAN_AWAY.to_string());
    }
    if last_flush.elapsed() >= FLUSH_INTERVAL {
        writer.store.upsert_part(part).await?;
        *last_flush = Instant::now();
    }
    Ok(())
}

async fn close_text(ctx: &SessionCtx, building: &mut Building) -> Result<(), Error> {
    if let Some((mut part, _)) = building.text.take() {
        if let PartKind::Text(text) = &mut part.kind {
            part_cap::settle(&mut text.text);
            if let Some(time) = &mut text.time {
                time.end = Some(now_millis());
            }
        }
        ctx.writer.part(&part).await?;
    }
    Ok(())
}

async fn close_reasoning(ctx: &SessionCtx, building: &mut Building) -> Result<(), Error> {
    if let Some((mut part, _)) = building.reasoning.take() {
        if let PartKind::Reasoning(reasoning) = &mut part.kind {
            part_cap::settle(&mut reasoning.text);
            reasoning.time.end = Some(now_millis());
        }
        ctx.writer.part(&part).await?;
    }
    Ok(())
}

async fn close_open_parts(ctx: &SessionCtx, building: &mut Building) -> Result<(), Error> {
    close_text(ctx, building).await?;
    close_reasoning(ctx, building).await
}

/// Waits for every submitted tool, then marks calls whose arguments never
/// completed as errors so each call has a result.
async fn finish_tools(
    ctx: &SessionCtx,
    building: &mut Building,
    runner: &mut ToolRunner,
) -> Result<(), Error> {
    runner.drain().await?;
    for (_, part) in building.pending_tools.drain() {
        runner
            .record_unfinished(
                ctx,
                part,
                "tool call arguments were cut off before they completed",
            )
            .await?;
    }
    Ok(())
}

/// The step's `patch` part, once its tools are done.
async fn record_patch(ctx: &SessionCtx, building: &mut Building) -> Result<(), Error> {
    match building.snapshots.take() {
        Some(snapshots) => snapshots.finish(ctx, &building.assistant).await,
        None => Ok(()),
    }
}

/// Esc: keep what arrived, stop tools, mark the message aborted.
async fn interrupt(
    ctx: &SessionCtx,
    building: &mut Building,
    runner: &mut ToolRunner,
) -> Result<(), Error> {
    close_open_parts(ctx, building).await?;
    runner.cancel_all(ctx).await?;
    for (_, part) in building.pending_tools.drain() {
        runner.record_unfinished(ctx, part, "interrupted").await?;
    }
    set_error(
        ctx,
        building,
        MessageErrorKind::Aborted,
        "Interrupted by the user",
    )
    .await
}

/// A failed request or stream: classify, keep the session consistent, decide.
async fn fail(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    building: &mut Building,
    runner: &mut ToolRunner,
    error: provider::Error,
) -> Result<StepOutcome, Error> {
    close_open_parts(ctx, building).await?;
    if error.kind() == provider::ErrorKind::Cancelled {
        interrupt(ctx, building, runner).await?;
        return Ok(StepOutcome::Stop);
    }
    if error.is_context_overflow() {
        gauge::learn_window(ctx, model, error.stated_context());
        finish_tools(ctx, building, runner).await?;
        // No finish: the compaction that follows is marked `overflow` because
        // this message never finished (spec 4.3 halt). The error says it was
        // rejected, so a reopened session does not take it for a turn cut
        // short (and show it as interrupted, or send its parts again).
        building.retrying = true;
        set_error(
            ctx,
            building,
            MessageErrorKind::ContextOverflow,
            &error.to_string(),
        )
        .await?;
        // With automatic compaction, the compaction's own notice says why
        // it ran (one notice per event); without it, the rejection is shown
        // and the loop says what to do.
        if !ctx.settings.compaction.auto {
            ctx.writer.notice(&ctx.session_id, error.to_string());
        }
        return Ok(StepOutcome::Compact);
    }
    if error.is_retryable() {
        if building.tool_calls_started > 0 {
            // Tools already ran with real effects: keep the step as it is so the
            // model sees the calls and results, and let the loop go on.
            finish_tools(ctx, building, runner).await?;
            if let Some(assistant) = building.assistant.as_assistant_mut() {
                assistant.finish = Some(FinishReason::ToolCalls);
                assistant.time_completed = Some(now_millis());
            }
            ctx.writer.message(&building.assistant).await?;
            ctx.writer
                .notice(&ctx.session_id, format!("{error}; continuing"));
            return Ok(StepOutcome::Continue);
        }
        building.retrying = true;
        set_error(ctx, building, MessageErrorKind::Api, &error.to_string()).await?;
        return Ok(StepOutcome::Retry(error));
    }
    fail_for_good(ctx, building, runner, error).await
}

/// A failure that ends the turn: recorded on the message and shown.
async fn fail_for_good(
    ctx: &SessionCtx,
    building: &mut Building,
    runner: &mut ToolRunner,
    error: provider::Error,
) -> Result<StepOutcome, Error> {
    close_open_parts(ctx, building).await?;
    finish_tools(ctx, building, runner).await?;
    let kind = if error.kind() == provider::ErrorKind::Auth {
        MessageErrorKind::Auth
    } else {
        MessageErrorKind::Api
    };
    set_error(ctx, building, kind, &error.to_string()).await?;
    ctx.writer.error(&ctx.session_id, error.to_string());
    Ok(StepOutcome::Stop)
}

/// Records an error on the message. Errors that end the turn also set
/// `finish = error`, so the loop never picks the same request up again; an
/// interrupt or a retry leaves `finish` unset.
async fn set_error(
    ctx: &SessionCtx,
    building: &mut Building,
    kind: MessageErrorKind,
    message: &str,
) -> Result<(), Error> {
    let ends_turn = !matches!(kind, MessageErrorKind::Aborted) && !building.retrying;
    if let Some(assistant) = building.assistant.as_assistant_mut() {
        assistant.error = Some(MessageError {
            kind,
            message: message.to_string(),
        });
        assistant.time_completed = Some(now_millis());
        if ends_turn {
            assistant.finish = Some(FinishReason::Error);
        }
    }
    ctx.writer.message(&building.assistant).await?;
    Ok(())
}
