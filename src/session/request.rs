//! What one step writes and sends: the request for a normal step, a new
//! assistant message, and a compaction request as a user message.

use crate::clock::now_millis;
use crate::context::view;
use crate::message::{
    AssistantMessage, CompactionPart, Message, MessagePath, MessageWithParts, Part, PartKind, Role,
    Tokens, UserMessage,
};
use crate::provider::{ChatMessage, ChatRole, Content};
use crate::session::Error;
use crate::session::agent::Agent;
use crate::session::ctx::{ResolvedModel, SessionCtx};
use crate::session::prompt;

const MAX_STEPS_PROMPT: &str = include_str!("../../assets/prompts/max-steps.txt");
const PLAN_REMINDER: &str = include_str!("../../assets/prompts/plan.txt");

/// The request for one normal step: system prompt, history as the model sees
/// it (`view`, already ordered), the agent's tools; and the configuration
/// problems found building its prompt (an `instructions` glob that matches
/// nothing). Only the step that sends it reports them: a gauge measured in
/// the background would say them once, before anyone listens.
pub fn build_request(
    ctx: &SessionCtx,
    agent: &Agent,
    model: &ResolvedModel,
    view: &[MessageWithParts],
    is_last_step: bool,
) -> (crate::provider::ChatRequest, Vec<String>) {
    let lean = crate::session::gauge::is_lean(ctx, model);
    let mut system = prompt::build_variant(agent, &model.model, &ctx.env, lean);
    system.instructions.extend(ctx.remote_instructions.loaded());
    let problems = std::mem::take(&mut system.problems);
    let system = system.blocks();
    let options = view::ModelViewOptions {
        media_in_tool_results: model.media_in_tool_results(),
        ..Default::default()
    };
    let mut messages = view::to_model_messages(view, &model.model, options);
    let repairs = view::ensure_tool_pairing(&mut messages);
    if !repairs.is_empty() {
        tracing::warn!(session = %ctx.session_id, ?repairs, "repaired tool call pairing before sending");
    }
    if agent.name == crate::session::agent::PLAN
        && let Some(last_user) = messages.iter_mut().rev().find(|m| m.role == ChatRole::User)
    {
        last_user.content.push(Content::Text {
            text: PLAN_REMINDER.to_string(),
        });
    }
    if is_last_step {
        messages.push(ChatMessage {
            role: ChatRole::Assistant,
            content: vec![Content::Text {
                text: MAX_STEPS_PROMPT.to_string(),
            }],
        });
    }
    let allowed =
        |tool: &dyn crate::tool::Tool| agent.tools.allows(tool.name(), tool.is_read_only());
    let mcp_allowed = |exposed: &str| agent.tools.allows_mcp(exposed);
    let mut tools = if lean {
        ctx.tools.lean_specs(allowed, mcp_allowed)
    } else {
        ctx.tools.specs_with(allowed, mcp_allowed)
    };
    // Subagents need a window of their own to be worth it: not in the lean
    // prompt; nor offered where a call could only be refused (max depth).
    if !lean
        && ctx.depth < ctx.settings.task.max_depth
        && agent.tools.allows(crate::session::agent::TASK_TOOL, false)
    {
        tools.push(crate::session::subtask::spec(&ctx.agents));
        tools.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let request = crate::provider::ChatRequest {
        model: model.model.model.clone(),
        system,
        messages,
        tools,
        max_output_tokens: crate::session::gauge::step_output_tokens(ctx, model),
        temperature: agent.temperature,
        cache_key: Some(ctx.session_id.clone()),
    };
    (request, problems)
}

pub fn new_assistant(
    ctx: &SessionCtx,
    parent_id: &str,
    user: &UserMessage,
    agent: &str,
    summary: bool,
) -> Message {
    Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::Assistant(AssistantMessage {
            parent_id: parent_id.to_string(),
            agent: agent.to_string(),
            model: user.model.clone(),
            path: MessagePath {
                cwd: ctx.env.cwd.display().to_string(),
                root: ctx.env.root.display().to_string(),
            },
            summary,
            finish: None,
            error: None,
            tokens: Tokens::default(),
            cost: 0.0,
            time_completed: None,
        }),
    }
}

/// Writes a user message carrying a compaction request; the next iteration runs it.
pub async fn create_compaction(
    ctx: &SessionCtx,
    user: &UserMessage,
    part: CompactionPart,
) -> Result<(), Error> {
    let message = Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(UserMessage {
            agent: user.agent.clone(),
            model: user.model.clone(),
            system: None,
        }),
    };
    ctx.writer.message(&message).await?;
    ctx.writer
        .part(&Part::new(&message, PartKind::Compaction(part)))
        .await?;
    Ok(())
}
