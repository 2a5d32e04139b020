//! The `task` tool: delegates a prompt to a subagent in a child session.
//!
//! A session-level tool (it needs the loop, the store and the agents, which
//! `tool::` tools never touch): the tool runner sends `task` calls here. The
//! child is a session of its own (parent id recorded) with its own history,
//! gauge, prune and compaction; it shares the parent's permissions, so an ask
//! inside it reaches the same front end. Only its final answer goes back to
//! the parent, through the normal truncation layer, with the child's id so a
//! later call can continue it.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::clock::now_millis;
use crate::message::{Message, ModelRef, Part, PartKind, Role, Session, TextPart, UserMessage};
use crate::provider::ToolSpec;
use crate::session::agent::{Agent, Agents, TASK_TOOL};
use crate::session::ctx::SessionCtx;
use crate::store;
use crate::tool::{ToolError, ToolOutput, ToolScope};

/// The `task` call's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TaskArgs {
    /// A short (3-5 words) description of the task.
    pub description: String,
    /// The task for the agent to perform: everything it needs to know, since it sees nothing of this conversation.
    pub prompt: String,
    /// The name of the agent to use (one of those listed in the tool description).
    pub subagent_type: String,
    /// The id of an earlier task's session, to continue it instead of starting afresh.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// The tool as the model sees it, listing the agents it can delegate to.
pub fn spec(agents: &Agents) -> ToolSpec {
    let list: Vec<String> = agents
        .subagents()
        .map(|a| format!("- {}: {}", a.name, a.description))
        .collect();
    ToolSpec {
        name: TASK_TOOL.to_string(),
        description: format!(
            "Launch a subagent to handle a task in a session of its own. It sees none of this conversation: give it everything it needs in `prompt`. Only its final answer comes back, so delegating keeps large reads out of your context. Several task calls in one message run concurrently. The result starts with `task_id: <id>`; pass it as `session_id` to continue that task.\n\nAvailable agents:\n{}",
            list.join("\n")
        ),
        parameters: crate::tool::schema_for::<TaskArgs>(),
    }
}

/// Runs one `task` call to the end (or until `scope.cancel` fires).
pub async fn execute(
    ctx: &Arc<SessionCtx>,
    input: Value,
    scope: &ToolScope,
) -> Result<ToolOutput, ToolError> {
    let args: TaskArgs = crate::tool::parse_args(TASK_TOOL, input)?;
    let agent = ctx
        .agents
        .find(&args.subagent_type)
        .filter(|a| a.is_subagent())
        .ok_or_else(|| {
            let names: Vec<&str> = ctx.agents.subagents().map(|a| a.name.as_str()).collect();
            ToolError::Failed(format!(
                "Unknown agent `{}`. The agents you can delegate to are: {}.",
                args.subagent_type,
                names.join(", ")
            ))
        })?
        .clone();
    if ctx.depth >= ctx.settings.task.max_depth {
        let refusal = if ctx.depth == 0 {
            "Subagents are turned off (`[task] max_depth = 0`): do the work yourself."
        } else {
            "A subagent cannot start subagents of its own: do the work yourself."
        };
        return Err(ToolError::Failed(refusal.into()));
    }
    let child = child_session(ctx, &args).await?;
    // Before the child's first message: a front end following the parent
    // learns of the child (and counts its spending) from this.
    ctx.writer.bus.publish(crate::bus::Event::SessionUpdated {
        session: Arc::new(child.clone()),
    });
    let child_ctx = Arc::new(child_ctx(ctx, &child.id, &agent));
    let user = crate::session::ctx::last_user_or_default(ctx)
        .await
        .map_err(failed)?;
    let model = child_model(ctx, &agent, user.model);
    write_prompt(&child_ctx, &agent.name, model, &args.prompt).await?;
    // The running part names the child at once, so a front end can open it
    // while it works (the title report persists the metadata with it).
    scope.report(crate::tool::ToolProgress::Metadata(
        json!({ "session_id": child.id, "agent": agent.name }),
    ));
    scope.report(crate::tool::ToolProgress::Title(args.description.clone()));
    let cancel = scope.cancel.child_token();
    // Spawned (not awaited in place): the child's loop runs this very
    // function for its own calls, and a future cannot contain itself.
    let running = tokio::spawn(Box::pin(crate::session::run::run(
        child_ctx.clone(),
        cancel.clone(),
    )));
    let ended = running.await;
    if scope.cancel.is_cancelled() {
        return Err(ToolError::Interrupted {
            output: String::new(),
        });
    }
    ended
        .map_err(|join| ToolError::Failed(format!("the subagent crashed: {join}")))?
        .map_err(failed)?;
    let answer = final_answer(ctx, &child.id).await?;
    let output = format!(
        "task_id: {} (pass it as session_id to continue this task)\n\n<task_result>\n{}\n</task_result>",
        child.id,
        answer.trim()
    );
    Ok(ToolOutput::text(
        args.description,
        output,
        json!({ "session_id": child.id, "agent": agent.name }),
    ))
}

fn failed(error: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(error.to_string())
}

/// The child's model: the agent's own, else `small_model` for an agent that
/// prefers it (explore), else the parent's.
fn child_model(ctx: &SessionCtx, agent: &Agent, parent: ModelRef) -> ModelRef {
    agent
        .model
        .clone()
        .or_else(|| {
            agent
                .prefers_small_model
                .then(|| ctx.settings.small_model.clone())
                .flatten()
        })
        .unwrap_or(parent)
}

/// How many parents `session_id` has in the store.
///
/// # Errors
/// When the store cannot be read.
pub async fn depth(store: &crate::store::Store, session_id: &str) -> Result<usize, store::Error> {
    let mut depth = 0;
    let mut id = session_id.to_string();
    while let Some(parent) = store.get_session(&id).await?.and_then(|s| s.parent_id) {
        depth += 1;
        id = parent;
    }
    Ok(depth)
}

/// The session to continue (it must be this session's child) or a new one.
async fn child_session(ctx: &SessionCtx, args: &TaskArgs) -> Result<Session, ToolError> {
    let store = &ctx.writer.store;
    if let Some(id) = &args.session_id {
        let session = store.get_session(id).await.map_err(failed)?;
        return session
            .filter(|s| s.parent_id.as_deref() == Some(ctx.session_id.as_str()))
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "No task session `{id}` belongs to this conversation; leave session_id out to start a new task."
                ))
            });
    }
    let parent = store
        .get_session(&ctx.session_id)
        .await
        .map_err(failed)?
        .ok_or_else(|| failed("the parent session is not stored"))?;
    let now = now_millis();
    let session = Session {
        id: crate::id::session_id(),
        title: format!("{} (@{} subagent)", args.description, args.subagent_type),
        directory: parent.directory,
        parent_id: Some(ctx.session_id.clone()),
        time_created: now,
        time_updated: now,
        cost: 0.0,
        tokens: Default::default(),
    };
    store.create_session(&session).await.map_err(failed)?;
    Ok(session)
}

/// The child's context: the parent's tools, permissions (with the agent's
/// own rules on top), agents and models; fresh accounting, view and reports.
fn child_ctx(parent: &SessionCtx, child_id: &str, agent: &Agent) -> SessionCtx {
    let permissions = if agent.permission.is_empty() {
        parent.permissions.clone()
    } else {
        Arc::new(parent.permissions.for_agent(&agent.permission))
    };
    SessionCtx {
        session_id: child_id.to_string(),
        depth: parent.depth + 1,
        writer: parent.writer.clone(),
        tools: parent.tools.clone(),
        permissions,
        agents: parent.agents.clone(),
        models: parent.models.clone(),
        settings: parent.settings.clone(),
        env: parent.env.clone(),
        default_model: parent.default_model.clone(),
        accounting: Default::default(),
        kept_view: Default::default(),
        reported: Default::default(),
        remote_instructions: Default::default(),
        instruction_folders: Default::default(),
        snapshots: parent.snapshots.clone(),
        snapshot_chain: Default::default(),
    }
}

async fn write_prompt(
    ctx: &SessionCtx,
    agent: &str,
    model: crate::message::ModelRef,
    prompt: &str,
) -> Result<(), ToolError> {
    let message = Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(UserMessage {
            agent: agent.to_string(),
            model,
            system: None,
        }),
    };
    ctx.writer.message(&message).await.map_err(failed)?;
    let part = Part::new(
        &message,
        PartKind::Text(TextPart {
            text: prompt.to_string(),
            ..Default::default()
        }),
    );
    ctx.writer.part(&part).await.map_err(failed)
}

/// The text of the child's last assistant message.
async fn final_answer(ctx: &SessionCtx, child_id: &str) -> Result<String, ToolError> {
    let history = ctx.writer.store.read_all(child_id).await.map_err(failed)?;
    let last = history
        .iter()
        .rev()
        .find(|m| !m.message.is_user())
        .ok_or_else(|| failed("the subagent gave no answer"))?;
    let text: Vec<&str> = last
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    if let Some(error) = last.message.as_assistant().and_then(|a| a.error.as_ref()) {
        return Err(failed(format!("the subagent failed: {error:?}")));
    }
    Ok(text.join("\n"))
}
