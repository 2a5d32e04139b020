//! `!cmd`: the user runs a shell command directly; the model is not called.
//!
//! Recorded like OpenCode does (spec 3.6): a user message with a synthetic
//! text part and an assistant message holding one finished `bash` tool part,
//! so the model sees the command and its output on the next turn. It never
//! runs beside the loop: the runtime gives it the loop's slot.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::clock::{Millis, now_millis};
use crate::message::{
    FinishReason, Message, MessageError, MessageErrorKind, Part, PartKind, Role, TextPart,
    ToolPart, ToolState, ToolTime, UserMessage,
};
use crate::session::Error;
use crate::session::ctx::SessionCtx;
use crate::session::tool_runner::{ToolFailure, finished_state, run_showing_progress};
use crate::tool::ToolScope;

/// The user message's text: what the model is told (OpenCode's wording).
/// The TUI shows a message holding only this as the user's shell run.
pub const SHELL_RUN_TEXT: &str = "The following tool was executed by the user";

/// A recorded `!cmd` whose command has not run yet.
pub struct ShellCall {
    assistant: Message,
    part: Part,
    input: serde_json::Value,
    start: Millis,
}

/// Writes the user message and the assistant with a running `bash` part.
/// Done before the command runs, and before the runtime takes its next
/// command, so a prompt sent meanwhile is newer and gets answered after it.
pub async fn record(ctx: &SessionCtx, command: &str) -> Result<ShellCall, Error> {
    // The session's current agent and model, so the next prompt keeps them.
    let current = crate::session::ctx::last_user_or_default(ctx).await?;
    let user_info = UserMessage {
        agent: current.agent,
        model: current.model,
        system: None,
    };
    let user = Message {
        id: crate::id::message_id(),
        session_id: ctx.session_id.clone(),
        time_created: now_millis(),
        role: Role::User(user_info.clone()),
    };
    ctx.writer.message(&user).await?;
    let text = TextPart {
        text: SHELL_RUN_TEXT.into(),
        synthetic: true,
        ..Default::default()
    };
    ctx.writer
        .part(&Part::new(&user, PartKind::Text(text)))
        .await?;

    let assistant =
        crate::session::request::new_assistant(ctx, &user.id, &user_info, &user_info.agent, false);
    ctx.writer.message(&assistant).await?;
    let input = json!({ "command": command, "description": "Run the user's command" });
    let start = now_millis();
    let part = Part::new(
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
    Ok(ShellCall {
        assistant,
        part,
        input,
        start,
    })
}

/// Runs the recorded command until it ends or `cancel` fires (the process
/// group is killed; the part keeps the output so far, the message is aborted).
pub async fn execute(
    ctx: &SessionCtx,
    call: ShellCall,
    cancel: CancellationToken,
) -> Result<(), Error> {
    let ShellCall {
        mut assistant,
        mut part,
        input,
        start,
    } = call;
    let tool_ctx = ToolScope {
        session_id: ctx.session_id.clone(),
        message_id: assistant.id.clone(),
        call_id: part
            .as_tool()
            .map(|t| t.call_id.clone())
            .unwrap_or_default(),
        cwd: ctx.env.cwd.clone(),
        root: ctx.env.root.clone(),
        tool_output_dir: ctx.settings.tool_output_dir.clone(),
        cancel: cancel.clone(),
        // The user typed the command: it needs no permission.
        permissions: std::sync::Arc::new(crate::permission::Permissions::new(
            crate::permission::ruleset(&Default::default(), true),
            ctx.writer.bus.clone(),
            crate::permission::Mode::Headless,
        )),
        progress: None,
        limits: ctx.settings.tool_limits,
        can_delegate: false,
        // The user's own command: the sandbox guards against the model.
        sandbox: std::sync::Arc::new(crate::sandbox::Policy::off(&ctx.env.root)),
        // `!cmd` runs bash, which never goes through the editor.
        editor: None,
    };
    let result = run_showing_progress(ctx, &part, "bash", input.clone(), tool_ctx)
        .await
        .map_err(ToolFailure::from);
    if let PartKind::Tool(tool) = &mut part.kind {
        tool.state = finished_state(input, start, result);
    }
    ctx.writer.part(&part).await?;
    if let Some(info) = assistant.as_assistant_mut() {
        // Finished even when interrupted: nothing here is for the model to answer.
        info.finish = Some(FinishReason::Stop);
        info.time_completed = Some(now_millis());
        if cancel.is_cancelled() {
            info.error = Some(MessageError {
                kind: MessageErrorKind::Aborted,
                message: "Interrupted by the user".into(),
            });
        }
    }
    ctx.writer.message(&assistant).await?;
    Ok(())
}
