//! Crash recovery: a session reopened after cairn died in the middle of a turn.
//!
//! A kill -9 leaves the last assistant message unfinished: no finish, no
//! error, tool parts still pending or running. The model view already sends
//! such tools as interrupted, but the user would see cards running forever
//! and the loop would take the message for a live one. So when a runtime
//! starts, the newest assistant messages that never completed are closed the
//! way an interrupt closes them, and every tool part still pending or running
//! (even under a step already marked finished) is marked interrupted.
//! Nothing committed is removed.

use serde_json::json;

use crate::clock::now_millis;
use crate::message::{MessageError, MessageErrorKind, PartKind, ToolState, ToolTime};
use crate::session::Error;
use crate::session::ctx::SessionCtx;

/// How many of the newest messages are looked at: a crash only leaves the
/// last turn unfinished.
const RECENT: usize = 8;

/// Closes unfinished assistant messages; returns how many were repaired.
pub async fn repair(ctx: &SessionCtx) -> Result<usize, Error> {
    let recent = ctx
        .writer
        .store
        .messages_before(&ctx.session_id, None, RECENT)
        .await?;
    let mut repaired = 0;
    for mut entry in recent {
        let Some(assistant) = entry.message.as_assistant() else {
            continue;
        };
        // A step that ended with tool calls is finished (`finish =
        // tool-calls`) while its tools still run: look at the tools whatever
        // the message says.
        let message_open = assistant.time_completed.is_none()
            && assistant.finish.is_none()
            && assistant.error.is_none();
        let has_open_tool = entry
            .parts
            .iter()
            .any(|part| matches!(&part.kind, PartKind::Tool(tool) if !tool.state.is_finished()));
        if !message_open && !has_open_tool {
            continue;
        }
        let now = now_millis();
        for part in &mut entry.parts {
            let PartKind::Tool(tool) = &mut part.kind else {
                continue;
            };
            if tool.state.is_finished() {
                continue;
            }
            let start = match &tool.state {
                ToolState::Running { time, .. } => time.start,
                _ => now,
            };
            tool.state = ToolState::Error {
                input: tool.state.input().clone(),
                error: "interrupted: cairn stopped before this tool finished".into(),
                metadata: Some(json!({ "interrupted": true })),
                time: ToolTime {
                    start,
                    end: Some(now),
                    compacted: None,
                },
            };
            ctx.writer.part(part).await?;
        }
        if !message_open {
            repaired += 1;
            continue;
        }
        if let Some(info) = entry.message.as_assistant_mut() {
            info.error = Some(MessageError {
                kind: MessageErrorKind::Aborted,
                message: "cairn stopped while this answer was being written".into(),
            });
            info.time_completed = Some(now);
        }
        ctx.writer.message(&entry.message).await?;
        repaired += 1;
    }
    if repaired > 0 {
        tracing::warn!(session = %ctx.session_id, repaired, "closed turns left unfinished by a crash");
    }
    Ok(repaired)
}
