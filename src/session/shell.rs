//! `!cmd`: the user runs a shell command directly; the model is not called.
//!
//! Recorded like OpenCode does (spec 3.6): a user message with a synthetic
//! text part and an assistant message holding one finished `bash` tool part,
//! so the model sees the command and its output on the next turn.

use serde_json::json;

use crate::message::{
    FinishReason, Part, PartKind, Role, TextPart, ToolPart, ToolState, ToolTime, UserMessage,
    now_millis,
};
use crate::session::Error;
use crate::session::processor::{ToolFailure, finished_state};
use crate::session::runtime::SessionCtx;
use crate::tool::ToolContext;

pub async fn run(ctx: &SessionCtx, command: &str) -> Result<(), Error> {
    let user_info = UserMessage {
        agent: ctx.settings.default_agent.clone(),
        model: ctx.default_model.clone(),
        system: None,
    };
    let user = crate::message::Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(user_info.clone()),
    };
    ctx.writer.message(&user).await?;
    let text = TextPart {
        text: "The following tool was executed by the user".into(),
        synthetic: true,
        ..Default::default()
    };
    ctx.writer
        .part(&Part::new(&user, PartKind::Text(text)))
        .await?;

    let mut assistant = crate::session::run::new_assistant(
        ctx,
        &user.id,
        &user_info,
        &ctx.settings.default_agent,
        false,
    );
    ctx.writer.message(&assistant).await?;
    let input = json!({ "command": command, "description": "Run the user's command" });
    let start = now_millis();
    let mut part = Part::new(
        &assistant,
        PartKind::Tool(ToolPart {
            call_id: crate::id::call_id(),
            tool: "bash".into(),
            state: ToolState::Running {
                input: input.clone(),
                title: Some(command.to_string()),
                metadata: None,
                time: ToolTime {
                    start,
                    end: None,
                    compacted: None,
                },
            },
        }),
    );
    ctx.writer.part(&part).await?;

    let tool_ctx = ToolContext {
        session_id: ctx.session_id.clone(),
        message_id: assistant.id.clone(),
        call_id: part
            .as_tool()
            .map(|t| t.call_id.clone())
            .unwrap_or_default(),
        cwd: ctx.env.cwd.clone(),
        root: ctx.env.root.clone(),
        tool_output_dir: ctx.settings.tool_output_dir.clone(),
        cancel: tokio_util::sync::CancellationToken::new(),
        // The user typed the command: it needs no permission.
        permissions: std::sync::Arc::new(crate::permission::Permissions::new(
            crate::permission::ruleset(&Default::default(), true),
            ctx.writer.bus.clone(),
            crate::permission::Mode::Headless,
        )),
        progress: None,
        limits: ctx.settings.tool_limits,
    };
    let result = ctx
        .tools
        .run("bash", input.clone(), &tool_ctx)
        .await
        .map_err(ToolFailure::from);
    if let PartKind::Tool(tool) = &mut part.kind {
        tool.state = finished_state(input, start, result);
    }
    ctx.writer.part(&part).await?;
    if let Some(info) = assistant.as_assistant_mut() {
        info.finish = Some(FinishReason::Stop);
        info.time_completed = Some(now_millis());
    }
    ctx.writer.message(&assistant).await?;
    Ok(())
}
