//! Token accounting glue: the gauge, the overflow decision and `/context`.
//!
//! One function, [`measure`], computes the next request's size from the
//! history the loop already read (anchored on the provider's last reported
//! usage, plus counts of what was added since); the status-line gauge and the
//! automatic-compaction trigger both come from its result, so what the user
//! sees is what the agent does. The arithmetic itself lives in `token`.

use crate::bus::Event;
use crate::context::compaction::GuardVerdict;
use crate::context::view::{self, BreakdownInput};
use crate::context::{self, ContextBreakdown, ContextGauge, prune};
use crate::message::MessageWithParts;
use crate::provider::ChatRequest;
use crate::provider::tokenize::{self, NoCount};
use crate::session::Error;
use crate::session::ctx::{ResolvedModel, SessionCtx};
use crate::shared::{lock, thousands};
use crate::token::{self};

/// Compactions one turn may spend on requests the provider rejected as too long.
pub const MAX_REJECTED_COMPACTIONS: u32 = 2;

pub fn usable(ctx: &SessionCtx, model: &ResolvedModel) -> u64 {
    context::usable(&limits(ctx, model), &ctx.settings.compaction)
}

/// The summary request's `max_tokens` (`context::summary_output_tokens`).
pub fn summary_output_tokens(ctx: &SessionCtx, model: &ResolvedModel) -> u32 {
    let limits = limits(ctx, model);
    let usable = context::usable(&limits, &ctx.settings.compaction);
    context::summary_output_tokens(&limits, usable) as u32
}

/// The step's `max_tokens`: the model's output limit, bounded by the window
/// (`context::max_output_tokens`, including a window the provider stated).
pub fn step_output_tokens(ctx: &SessionCtx, model: &ResolvedModel) -> u32 {
    context::max_output_tokens(&limits(ctx, model)) as u32
}

/// Whether requests to `model` use the lean prompt: its window (as stated
/// by the provider when smaller) is below `compaction.lean_prompt_below`.
pub fn is_lean(ctx: &SessionCtx, model: &ResolvedModel) -> bool {
    let context = limits(ctx, model).context;
    context != 0 && context < ctx.settings.compaction.lean_prompt_below
}

/// Share of the usable window one tool result may fill, and the bytes a
/// token takes at least (code and logs run 3-4 bytes a token).
pub const TOOL_OUTPUT_FRACTION: f64 = 0.25;
const BYTES_PER_TOKEN: f64 = 3.0;

/// The configured tool output caps, with `max_bytes` at most a quarter of
/// the usable window: 51,200 bytes is ~15k tokens, more than a whole 8k
/// window, and one `read` would overflow it. 200k windows keep the config.
pub fn tool_output_limits(ctx: &SessionCtx, model: &ResolvedModel) -> crate::tool::OutputLimits {
    let mut limits = ctx.settings.tool_limits;
    let usable = usable(ctx, model);
    if usable != 0 {
        let bytes = (usable as f64 * TOOL_OUTPUT_FRACTION * BYTES_PER_TOKEN) as usize;
        limits.max_bytes = limits.max_bytes.min(bytes.max(1_024));
    }
    limits
}

/// The model's limits, with the window a provider stated when it is smaller:
/// the provider knows its window better than the catalog or the config.
fn limits(ctx: &SessionCtx, model: &ResolvedModel) -> context::Limits {
    let mut limits = grown_to_accepted(ctx, model);
    if let Some(stated) = lock(&ctx.accounting.stated_windows).get(&model.model) {
        limits.context = limits.context.min(*stated);
        limits.output = limits.output.min(limits.context / 4).max(1);
    }
    limits
}

/// The model's limits, grown when its provider accepted a prompt larger than
/// their whole window: the real window is larger than assumed, and a
/// session the provider was happy with must not be compacted or refused
/// for it. Grown to the next power of two above the prompt and an answer
/// (windows usually are one); a provider that then rejects a request says
/// its window, and that wins (`learn_window`).
fn grown_to_accepted(ctx: &SessionCtx, model: &ResolvedModel) -> context::Limits {
    let mut limits = model.limits;
    let Some(accepted) = ctx.accounting.accepted(&model.model) else {
        return limits;
    };
    // Only a prompt over the whole window proves it larger. One between the
    // usable part and the window is what llama-server takes (it checks the
    // prompt alone, and cuts the answer short): growing for it made cairn
    // send requests the server then rejected (issue #30, 20 turns at 8k).
    if limits.context == 0 || accepted <= limits.context {
        return limits;
    }
    let answer = context::max_output_tokens(&limits);
    let grown = (accepted + answer).next_power_of_two();
    limits.context = limits.context.max(grown);
    if let Some(input) = limits.input {
        let reserved = context::reserved(&limits, &ctx.settings.compaction);
        limits.input = Some(input.max((accepted + reserved).next_power_of_two()));
    }
    limits
}

/// Records the prompt size the provider accepted (its usage), and says once
/// when it shows the configured window is too small.
pub fn observe_accepted(ctx: &SessionCtx, model: &ResolvedModel, usage: &crate::provider::Usage) {
    let prompt = usage.input + usage.cache_read + usage.cache_write;
    if !ctx.accounting.accept(&model.model, prompt) {
        return;
    }
    if model.limits.context != 0 && prompt > model.limits.context {
        ctx.report_once(&format!(
            "{} accepted a request of {} tokens, more than the {}-token window cairn assumed for it: cairn now assumes {}. Set the real window ([provider.{}.models.\"{}\"] context = TOKENS) to silence this.",
            model.model,
            thousands(prompt),
            thousands(model.limits.context),
            thousands(grown_to_accepted(ctx, model).context),
            model.model.provider,
            model.model.model,
        ));
    }
}

/// What a session's stored answers say their providers accepted (a run
/// that continues a session learns the window again from its records).
pub fn observe_history(ctx: &SessionCtx, read: &[MessageWithParts]) {
    for message in read {
        if let Some(assistant) = message.message.as_assistant()
            && assistant.finish.is_some()
            && assistant.error.is_none()
        {
            let t = &assistant.tokens;
            ctx.accounting
                .accept(&assistant.model, t.input + t.cache.read + t.cache.write);
        }
    }
}

/// Remembers the window a provider stated in an overflow error, for this
/// session's gauge, trigger and summary sizing.
pub fn learn_window(ctx: &SessionCtx, model: &ResolvedModel, stated: Option<u64>) {
    if let Some(stated) = stated {
        lock(&ctx.accounting.stated_windows).insert(model.model.clone(), stated);
    }
}

/// Counts a request rejected as too long; `Some(advice)` when the turn has
/// compacted for such rejections `MAX_REJECTED_COMPACTIONS` times already
/// and must stop.
pub fn record_rejection(ctx: &SessionCtx, model: &ResolvedModel) -> Option<String> {
    let stated = lock(&ctx.accounting.stated_windows)
        .get(&model.model)
        .copied();
    let mut rejections = lock(&ctx.accounting.rejections);
    *rejections += 1;
    if *rejections <= MAX_REJECTED_COMPACTIONS {
        return None;
    }
    let window = match stated {
        Some(stated) => format!(
            "it says the window is {} tokens; cairn assumed {}",
            thousands(stated),
            thousands(model.limits.context)
        ),
        None => format!(
            "cairn assumed a window of {} tokens",
            thousands(model.limits.context)
        ),
    };
    Some(format!(
        "{} rejected the request as too long {} times in this turn, even after compacting ({window}). Stopped so it costs nothing more. Set the real window ([provider.{}.models.\"{}\"] context = TOKENS in cairn.toml), /prune or /compact, or start a new session, then send your message again.",
        model.model.provider, *rejections, model.model.provider, model.model.model,
    ))
}

/// The size of the last request measured for the gauge (0 before any).
pub fn last_used(ctx: &SessionCtx) -> u64 {
    *lock(&ctx.accounting.last_gauge_used)
}

/// A step that succeeded, or a new turn: rejections count afresh.
pub fn reset_rejections(ctx: &SessionCtx) {
    *lock(&ctx.accounting.rejections) = 0;
}

/// The gauge for a request of `used` tokens.
pub fn gauge_for(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    used: u64,
    estimated: bool,
) -> ContextGauge {
    context::gauge(
        used,
        estimated,
        &limits(ctx, model),
        &ctx.settings.compaction,
    )
}

/// Whether a request of `count` tokens reaches the automatic-compaction point.
pub fn is_overflow(ctx: &SessionCtx, model: &ResolvedModel, count: u64) -> bool {
    context::is_overflow(&gauge_for(ctx, model, count, false))
}

/// The next request's size: `history` is the model's view (ordered), `request`
/// the request about to be sent (its system prompt and tools count when no
/// earlier usage anchors the figure).
pub fn measure(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    history: &[MessageWithParts],
    request: &ChatRequest,
) -> ContextGauge {
    measure_request(ctx, model, history, request).gauge
}

/// What [`measure_request`] found.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub gauge: ContextGauge,
    /// The request's size in our tokenizer's units, which calibration
    /// compares with the usage the provider reports for it.
    pub counted: u64,
    /// Whether the figure rests on provider-reported usage; without it, it
    /// is our count scaled by calibration (an estimate, shown with `~`).
    pub anchored: bool,
}

/// [`measure_request`], but when the model runs on a local server that
/// counts prompts (llama-server, vLLM), counted by the server's own
/// tokenizer before every request, anchored or not: an anchor plus a
/// calibrated estimate of what was added misjudges content unlike what the
/// ratio was learned from (numbers count up to three times more on SmolLM2
/// than in `o200k_base`, issue #30), and a local count costs milliseconds.
/// The count also teaches calibration.
pub async fn measure_request_exact(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    history: &[MessageWithParts],
    request: &ChatRequest,
) -> Measured {
    let mut measured = measure_request(ctx, model, history, request);
    if let Some(exact) = server_count(ctx, model, request).await {
        if !measured.anchored {
            ctx.accounting
                .observe_count(&model.model, measured.counted, exact);
        }
        measured.gauge = gauge_for(ctx, model, exact, false);
    }
    measured
}

/// `request` counted by the model's own server, when it is one that counts;
/// a server found unable to is not asked again this session.
async fn server_count(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    request: &ChatRequest,
) -> Option<u64> {
    if lock(&ctx.accounting.no_server_count).contains(&model.model) {
        return None;
    }
    match tokenize::count_prompt(&model.provider, request).await {
        Ok(exact) => Some(exact),
        Err(NoCount::NotLocal | NoCount::Unsupported) => {
            lock(&ctx.accounting.no_server_count).insert(model.model.clone());
            None
        }
        Err(NoCount::Failed(why)) => {
            tracing::debug!(%why, "the server could not count the prompt; estimating");
            None
        }
    }
}

/// The fixed part of `request` (system prompt, instruction files, tools)
/// as the model's server counts it, with an empty user turn to render it:
/// `None` when the server cannot count. Counted once per fixed part.
pub async fn fixed_exact(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    request: &ChatRequest,
) -> Option<u64> {
    let key = fixed_key(request);
    if let Some(known) = ctx.accounting.fixed_count(&model.model, key) {
        return Some(known);
    }
    let mut bare = request.clone();
    bare.messages = vec![crate::provider::ChatMessage {
        role: crate::provider::ChatRole::User,
        content: vec![crate::provider::Content::Text {
            text: String::new(),
        }],
    }];
    let exact = server_count(ctx, model, &bare).await?;
    ctx.accounting
        .remember_fixed_count(&model.model, key, exact);
    Some(exact)
}

/// A hash of what the fixed part is made of, to know when it changed.
fn fixed_key(request: &ChatRequest) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    request.system.hash(&mut hasher);
    serde_json::to_string(&request.tools)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// [`measure`], plus our own count of the request. Anchored, that count is
/// the anchor taken back to our units plus what was added since, so no step
/// tokenizes the whole history again (on a 200k-token context that cost
/// ~100 ms of every step); learning from it converges on the same ratio as
/// counting everything would.
pub fn measure_request(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    history: &[MessageWithParts],
    request: &ChatRequest,
) -> Measured {
    let anchor = context::added_since_last_request(history, &model.model);
    if anchor.usage.is_some() {
        // A session that got an answer is worth exact counts: build the
        // encoder now, on its own thread; until it is ready counts are
        // estimates (and marked so). Nothing else in the product builds it.
        token::warm_up();
    }
    let calibration = ctx.accounting.calibration(&model.model);
    let (next, counted) = match anchored_count(&anchor, &calibration) {
        Some(anchored) => anchored,
        // Nothing to anchor on: count the request as it will be sent, so the
        // per-message framing is in the figure too.
        None => {
            let (tokens, _) = request_tokens(request);
            // Our tokenizer is not the model's: unanchored, this is an
            // estimate even when counted exactly.
            let next = context::NextRequest {
                tokens: calibration.scale(tokens),
                estimated: true,
            };
            (next, tokens)
        }
    };
    Measured {
        gauge: gauge_for(ctx, model, next.tokens, next.estimated),
        counted,
        anchored: anchor.usage.is_some(),
    }
}

/// The next request's size from an anchor: the provider's usage plus our
/// counts of the parts added since, minus what prune took off since, and
/// that figure in our tokenizer's units. `None` without usage to anchor on.
/// Nothing older than the anchor is counted.
fn anchored_count(
    anchor: &context::RequestAnchor<'_>,
    calibration: &token::Calibration,
) -> Option<(context::NextRequest, u64)> {
    let usage = anchor.usage?;
    let added: Vec<(u64, bool)> = anchor
        .added
        .iter()
        .map(|part| {
            let (tokens, estimated) = view::part_tokens(part);
            (tokens + view::part_framing(part), estimated)
        })
        .collect();
    let removed: Vec<(u64, bool)> = anchor
        .pruned
        .iter()
        .map(|part| view::pruned_savings(part))
        .collect();
    let next = context::next_request_tokens(
        Some(&usage),
        (0, false),
        added.iter().copied(),
        removed.iter().copied(),
        calibration,
    );
    let anchor_ours = (usage.context_count() as f64 / calibration.ratio()).round() as u64;
    let added: u64 = added.iter().map(|(tokens, _)| tokens).sum();
    let removed: u64 = removed.iter().map(|(tokens, _)| tokens).sum();
    Some((next, (anchor_ours + added).saturating_sub(removed)))
}

/// The gauge of an anchored read (`read`: the loop's model view read, in
/// time order: an anchor and what follows it are the same in the model's
/// order), without building the request; `None` when nothing anchors it.
fn anchored_gauge(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    read: &[MessageWithParts],
) -> Option<ContextGauge> {
    let anchor = context::added_since_last_request(read, &model.model);
    let calibration = ctx.accounting.calibration(&model.model);
    let (next, _) = anchored_count(&anchor, &calibration)?;
    token::warm_up();
    Some(gauge_for(ctx, model, next.tokens, next.estimated))
}

/// System prompt and tool definitions, counted (or estimated) now.
fn fixed_tokens(request: &ChatRequest) -> (u64, bool) {
    let mut total = 0;
    let mut estimated = false;
    for block in &request.system {
        let (tokens, is_estimate) = token::count_or_estimate(block);
        total += tokens as u64;
        estimated |= is_estimate;
    }
    let tools = serde_json::to_string(&request.tools).unwrap_or_default();
    let (tokens, is_estimate) = token::count_or_estimate(&tools);
    (total + tokens as u64, estimated || is_estimate)
}

/// The share of the usable window the fixed prompt (system prompt, tools,
/// instruction files) may take. After a compaction a request holds the
/// fixed prompt, the summary (at most a fifth of usable) and the verbatim
/// tail (at most a quarter); with the prompt under a quarter, ~30% is left
/// for the next turn. Above it, compacting cannot make room for a turn, so
/// the window is reported as too small instead.
pub const MAX_FIXED_SHARE: f64 = 0.25;

/// `Some(diagnosis)` when the request's fixed part is more than
/// [`MAX_FIXED_SHARE`] of the usable window: one line naming the window,
/// the prompt's size and the smallest window that would do.
///
/// A refusal rests on a count: the server's own (`exact`, see
/// [`fixed_exact`]) where it counts, else the smaller of our count and our
/// count calibrated, since a ratio learned from other content (numbers, say)
/// must not refuse every later message (issue #30). A fixed part the
/// estimate puts below the line still meets the overflow path if the server
/// disagrees.
pub fn window_too_small(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    request: &ChatRequest,
    exact: Option<u64>,
) -> Option<String> {
    let limits = limits(ctx, model);
    let usable = context::usable(&limits, &ctx.settings.compaction);
    if limits.context == 0 {
        return None;
    }
    let fixed = exact.unwrap_or_else(|| {
        let ours = fixed_tokens(request).0;
        ours.min(ctx.accounting.calibration(&model.model).scale(ours))
    });
    if (fixed as f64) <= usable as f64 * MAX_FIXED_SHARE {
        return None;
    }
    // usable = window * (1 - OUTPUT_FRACTION) below the seed's constants.
    let needed =
        (fixed as f64 / MAX_FIXED_SHARE / (1.0 - context::window::OUTPUT_FRACTION)).ceil() as u64;
    let which = if is_lean(ctx, model) {
        "smallest prompt"
    } else {
        "prompt"
    };
    let instructions = if request.system.len() > 1 {
        " (instruction files included)"
    } else {
        ""
    };
    Some(format!(
        "this model's window of {} tokens is smaller than the {} that cairn's {which} of {} tokens{instructions} needs (the prompt may fill at most a quarter of a request); run the model with a larger window",
        thousands(limits.context),
        thousands(needed.max(limits.context + 1)),
        thousands(fixed),
    ))
}

/// Our whole count of a request and whether it is an estimate.
fn request_tokens(request: &ChatRequest) -> (u64, bool) {
    let (fixed, fixed_estimated) = fixed_tokens(request);
    let messages = serde_json::to_string(&request.messages).unwrap_or_default();
    let (tokens, estimated) = token::count_or_estimate(&messages);
    (fixed + tokens as u64, fixed_estimated || estimated)
}

/// Our whole count of a request (a summary request: its pre-check and calibration).
pub fn count_request(request: &ChatRequest) -> u64 {
    request_tokens(request).0
}

/// A request we counted at `counted` tokens certain not to fit: the count
/// already exceeds the usable window.
pub fn request_exceeds(ctx: &SessionCtx, model: &ResolvedModel, counted: u64) -> bool {
    let usable = usable(ctx, model);
    usable != 0 && ctx.accounting.calibration(&model.model).scale(counted) > usable
}

/// [`request_exceeds`] for a request about to be sent, decided on the
/// server's own count where it counts (a summary request on a 4k llama-server
/// overflowed on an estimate, issue #30).
pub async fn exceeds_before_sending(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    request: &ChatRequest,
    counted: u64,
) -> bool {
    match server_count(ctx, model, request).await {
        Some(exact) => {
            let usable = usable(ctx, model);
            usable != 0 && exact > usable
        }
        None => request_exceeds(ctx, model, counted),
    }
}

pub fn publish(ctx: &SessionCtx, gauge: ContextGauge) {
    let mut published = lock(&ctx.accounting.gauges_published);
    *published += 1;
    send(ctx, gauge);
}

fn send(ctx: &SessionCtx, gauge: ContextGauge) {
    *lock(&ctx.accounting.last_gauge_used) = gauge.used;
    ctx.writer.bus.publish(Event::Gauge {
        session_id: ctx.session_id.clone(),
        gauge,
    });
}

/// Reads the session and publishes its gauge (after a prune, a compaction,
/// or when a front end opens the session).
/// Anchored on the last request's usage, only what was added since is
/// counted and the next request is not built (on a long view that build is
/// most of the cost); otherwise the whole request is built and counted.
pub async fn refresh(ctx: &SessionCtx, model: &ResolvedModel) -> Result<ContextGauge, Error> {
    let gauge = measure_view(ctx, model, false).await?;
    publish(ctx, gauge);
    Ok(gauge)
}

/// [`refresh`], counted by the model's server where it counts: the figure
/// after a compaction, which the guard judges by.
pub async fn refresh_counted(
    ctx: &SessionCtx,
    model: &ResolvedModel,
) -> Result<ContextGauge, Error> {
    let gauge = measure_view(ctx, model, true).await?;
    publish(ctx, gauge);
    Ok(gauge)
}

/// The gauge of the session as stored now, not published: a step inside
/// a compaction (how much room the working state has) must not show the
/// user a figure between the two the notice gives.
pub async fn measure_quietly(
    ctx: &SessionCtx,
    model: &ResolvedModel,
) -> Result<ContextGauge, Error> {
    measure_view(ctx, model, true).await
}

/// The gauge of the session as stored now: with `counted`, counted by the
/// model's server where it counts (after a compaction, the figure the guard
/// judges by must not rest on a ratio learned from other content), else
/// anchored when it can be.
async fn measure_view(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    counted: bool,
) -> Result<ContextGauge, Error> {
    if counted && !lock(&ctx.accounting.no_server_count).contains(&model.model) {
        let request = with_next_request(ctx, model, |_, _, request| request.clone()).await?;
        if let Some(exact) = server_count(ctx, model, &request).await {
            return Ok(gauge_for(ctx, model, exact, false));
        }
    }
    let context = ctx.read_view().await?;
    let anchored = anchored_gauge(ctx, model, context.messages());
    ctx.keep_view(context);
    let gauge = match anchored {
        Some(gauge) => gauge,
        None => {
            with_next_request(ctx, model, |_, view, request| {
                measure(ctx, model, view, request)
            })
            .await?
        }
    };
    Ok(gauge)
}

/// Whether a cheap estimate of `request` (characters, no tokenizer) is more
/// than twice the usable window: no summary attempt that large can fit, so
/// it is not worth counting exactly (counting a window's worth of history
/// costs a large share of a second).
pub fn clearly_exceeds(ctx: &SessionCtx, model: &ResolvedModel, request: &ChatRequest) -> bool {
    let usable = usable(ctx, model);
    if usable == 0 {
        return false;
    }
    let messages = serde_json::to_string(&request.messages).unwrap_or_default();
    token::estimate(&messages) as u64 > usable.saturating_mul(2)
}

/// The window of the model the session's newest user message uses; 0
/// (unknown: the seed's thresholds) when it cannot be resolved.
pub async fn session_window(ctx: &SessionCtx) -> u64 {
    let Ok(user) = crate::session::ctx::last_user_or_default(ctx).await else {
        return 0;
    };
    match ctx.models.resolve(&user.model).await {
        Ok(model) => limits(ctx, &model).context,
        Err(_) => 0,
    }
}

/// Refreshes the gauge for the model the session's newest user message uses
/// (on opening, after a run, after a prune). Failures are logged: a gauge
/// that cannot be measured must not fail what triggered it.
pub async fn refresh_session(ctx: &SessionCtx) {
    let Ok(user) = crate::session::ctx::last_user_or_default(ctx).await else {
        return;
    };
    if let Ok(model) = ctx.models.resolve(&user.model).await
        && let Err(error) = refresh(ctx, &model).await
    {
        tracing::warn!(%error, "cannot measure the session's context");
    }
}

/// The gauge a front end shows on opening the session, before its first
/// message. Measured in the background, so it is published only while no
/// other gauge was: landing after a step's gauge it would show (and anchor
/// the overflow figure on) an older size.
pub async fn refresh_opening(ctx: &SessionCtx) {
    let Ok(user) = crate::session::ctx::last_user_or_default(ctx).await else {
        return;
    };
    let Ok(model) = ctx.models.resolve(&user.model).await else {
        return;
    };
    // The first step asks whether the server counts prompts: ask now.
    tokenize::identify_soon(&model.provider);
    match measure_view(ctx, &model, false).await {
        Ok(gauge) => {
            let mut published = lock(&ctx.accounting.gauges_published);
            if *published == 0 {
                *published = 1;
                send(ctx, gauge);
            }
        }
        Err(error) => tracing::warn!(%error, "cannot measure the session's context"),
    }
}

/// Applies `f` to the session's model view read (oldest first), the model's
/// view of it and the request the next step would send.
async fn with_next_request<R>(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    f: impl FnOnce(&[MessageWithParts], &[MessageWithParts], &ChatRequest) -> R,
) -> Result<R, Error> {
    let context = ctx.read_view().await?;
    let result = {
        let read = context.messages();
        let agent_name = read
            .iter()
            .rev()
            .find_map(|m| m.message.as_user().map(|u| u.agent.clone()))
            .unwrap_or_else(|| ctx.settings.default_agent.clone());
        let agent = ctx.agents.get(&agent_name).clone();
        let view = view::model_view(read);
        let (request, _problems) =
            crate::session::request::build_request(ctx, &agent, model, &view, false);
        f(read, &view, &request)
    };
    ctx.keep_view(context);
    Ok(result)
}

/// `/context`: the next request by category, adding up to the gauge.
pub async fn breakdown(ctx: &SessionCtx, model: &ResolvedModel) -> Result<ContextBreakdown, Error> {
    let last_compaction = *lock(&ctx.accounting.last_compaction);
    let next = with_next_request(ctx, model, |_, _, request| request.clone()).await?;
    let lists_skills = next.tools.iter().any(|tool| tool.name == "skill");
    let fixed_exact = fixed_exact(ctx, model, &next).await;
    with_next_request(ctx, model, |read, history, request| {
        // Prune walks back from the newest message to the latest summary,
        // all inside the model view read (in time order, not the model's).
        let limits = prune::PruneLimits::for_window(limits(ctx, model).context);
        let prunable =
            prune::plan_prune(read, limits, |part| view::part_tokens(part).0).freed_tokens;
        let gauge = measure(ctx, model, history, request);
        let (base, instructions) = request.system.split_at(1.min(request.system.len()));
        let mut breakdown = view::build_breakdown(&BreakdownInput {
            base_prompt: base,
            instruction_files: instructions,
            tools: &request.tools,
            history,
            prunable,
            gauge,
            last_compaction,
            fixed_exact,
        });
        // The request lists skills exactly when it offers the skill tool.
        if lists_skills {
            let skills = crate::skill::discover(&ctx.env.skill_roots());
            breakdown.notes.extend(
                crate::skill::cut_note(&skills.skills).map(|note| format!("skills: {note}")),
            );
        }
        breakdown
    })
    .await
}

/// What to tell a user whose request overflowed with `compaction.auto = false`.
pub fn overflow_advice() -> String {
    "the conversation no longer fits the model's context window, and automatic compaction is off (compaction.auto = false). Type /prune to clear old tool outputs or /compact to summarize, then send your message again.".to_string()
}

/// Records a finished compaction; `Some(advice)` when compacting again
/// cannot help and the turn must stop. `turn_calls`: an automatic
/// compaction's tool calls (tool and input) in the history it saw, for the
/// guard's check that the turn gets past its compactions; `None` for `/compact`.
pub fn after_compaction(
    ctx: &SessionCtx,
    model: &ResolvedModel,
    before: u64,
    after: u64,
    turn_calls: Option<&[String]>,
) -> Option<String> {
    *lock(&ctx.accounting.last_compaction) = Some((before, after));
    let compact_at = gauge_for(ctx, model, after, false).compact_at;
    let mut guard = lock(&ctx.accounting.guard);
    let verdict = match guard.record(before, after, compact_at) {
        GuardVerdict::Continue => match turn_calls {
            Some(calls) => guard.record_turn(calls),
            None => GuardVerdict::Continue,
        },
        stop => stop,
    };
    match verdict {
        GuardVerdict::Continue => None,
        GuardVerdict::Stop { message } => Some(message),
    }
}

/// The size a decision to stop may rest on: `gauge.used`, unless it is an
/// estimate scaled up by a ratio learned from other content (numbers count
/// far more on some local models' tokenizers than in ours, issue #30); then
/// the smaller of that and our own count. Stopping a turn on an inflated
/// estimate strands the user; sending a request the server then rejects
/// meets the overflow path, which says what happened.
pub fn decisive_used(ctx: &SessionCtx, model: &ResolvedModel, gauge: &ContextGauge) -> u64 {
    let ratio = ctx.accounting.calibration(&model.model).ratio();
    if gauge.estimated && ratio > 1.0 {
        (gauge.used as f64 / ratio).round() as u64
    } else {
        gauge.used
    }
}

/// A turn that ended normally: compactions start counting afresh.
pub fn reset_guard(ctx: &SessionCtx) {
    lock(&ctx.accounting.guard).reset();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::{HistoryBuilder, model};

    /// Old turns, an answered request with usage 5,000, then a new question.
    fn anchored_history(old_turn_text: &str) -> Vec<MessageWithParts> {
        let mut h = HistoryBuilder::new();
        for _ in 0..50 {
            h.user(old_turn_text)
                .assistant()
                .text(old_turn_text)
                .finish(1);
        }
        h.user("the question")
            .assistant()
            .text("an answer")
            .finish(5_000);
        h.user("one more question");
        h.build()
    }

    #[test]
    fn the_anchored_count_is_the_usage_plus_only_what_was_added() {
        let calibration = token::Calibration::default();
        let short = anchored_history("old");
        let long = anchored_history(&"much longer old text ".repeat(2_000));
        let count = |history: &[MessageWithParts]| {
            let anchor = context::added_since_last_request(history, &model());
            anchored_count(&anchor, &calibration).map(|(next, ours)| (next.tokens, ours))
        };
        let (tokens, ours) = count(&short).expect("anchored");
        // The answer's step-finish part and the new question, framed.
        let added_parts = &short[short.len() - 1].parts;
        let added: u64 = added_parts
            .iter()
            .map(|p| view::part_tokens(p).0 + view::part_framing(p))
            .sum();
        assert!(tokens > 5_000 && ours >= 5_000 + added, "{tokens} / {ours}");
        assert!(tokens < 5_000 + 100, "only the few added tokens: {tokens}");
        // What came before the anchor is never counted again: 50 turns a
        // hundred times longer give the same figure.
        assert_eq!(count(&long), Some((tokens, ours)));
        // Nothing to anchor on: the caller counts the whole request instead.
        let mut fresh = HistoryBuilder::new();
        fresh.user("first question");
        assert_eq!(count(&fresh.build()), None);
    }
}
