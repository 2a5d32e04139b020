//! The loop's first branch (seed 002 section 9: subtask > compaction >
//! overflow > normal): a user message that mentioned a subagent
//! (`@explore where is the config read?`) carries a `subtask` part, which
//! runs as a `task` call before the model is asked anything.
//!
//! Recorded like OpenCode's `handleSubtask`: an assistant message answering
//! the user message with one `task` tool part, finished with `tool-calls`, so
//! the next step shows the model the child's answer as that call's result.
//! The runtime writes the part (`subtask_for`); the loop runs it (`run`).

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::clock::now_millis;
use crate::message::{
    FinishReason, MessageError, MessageErrorKind, MessageWithParts, Part, PartKind, SubtaskPart,
    ToolPart, ToolState,
};
use crate::session::Error;
use crate::session::agent::{Agents, TASK_TOOL, ToolAccess};
use crate::session::ctx::SessionCtx;
use crate::session::tool_runner::{ToolCall, ToolRunner};

/// Words of the message that make the subtask's short description.
const DESCRIPTION_WORDS: usize = 5;

/// The subtask a message asks for: its first `@name` naming a subagent.
/// The child's prompt is the message without that mention.
pub fn subtask_for(text: &str, agents: &Agents) -> Option<SubtaskPart> {
    let agent = crate::session::mention::mentioned_paths(text)
        .into_iter()
        .find(|name| agents.find(name).is_some_and(|a| a.is_subagent()))?;
    let mention = format!("@{agent}");
    let prompt: Vec<&str> = text
        .split_whitespace()
        .filter(|word| word.trim_end_matches(PUNCTUATION) != mention)
        .collect();
    let prompt = if prompt.is_empty() {
        text.trim().to_string()
    } else {
        prompt.join(" ")
    };
    let description = prompt
        .split_whitespace()
        .take(DESCRIPTION_WORDS)
        .collect::<Vec<_>>()
        .join(" ");
    Some(SubtaskPart {
        prompt,
        description,
        agent,
        model: None,
    })
}

/// What may follow a mention in prose (as `mention::mentioned_paths` trims).
const PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', ')', '"', '\''];

/// The newest user message newer than the last finished answer that holds a
/// `subtask` part no assistant message has answered yet.
pub fn pending<'a>(
    history: &'a [MessageWithParts],
    finished_id: &str,
) -> Option<(&'a MessageWithParts, &'a SubtaskPart)> {
    let newer = history
        .iter()
        .rposition(|m| m.message.id.as_str() <= finished_id)
        .map_or(0, |i| i + 1);
    let recent = &history[newer..];
    recent.iter().enumerate().rev().find_map(|(i, m)| {
        if !m.message.is_user() {
            return None;
        }
        let subtask = m.parts.iter().find_map(|p| match &p.kind {
            PartKind::Subtask(subtask) => Some(subtask),
            _ => None,
        })?;
        let answered = recent[i + 1..].iter().any(|later| {
            later
                .message
                .as_assistant()
                .is_some_and(|a| a.parent_id == m.message.id)
        });
        (!answered).then_some((m, subtask))
    })
}

/// Runs the subtask of `user_message` as a `task` call, to its end or until
/// `cancel` fires (the child stops; the call ends paired, interrupted).
pub async fn run(
    ctx: &Arc<SessionCtx>,
    cancel: &CancellationToken,
    user_message: &MessageWithParts,
    subtask: &SubtaskPart,
) -> Result<(), Error> {
    let Some(user) = user_message.message.as_user() else {
        return Ok(());
    };
    let mut assistant = crate::session::request::new_assistant(
        ctx,
        &user_message.message.id,
        user,
        &user.agent,
        false,
    );
    ctx.writer.message(&assistant).await?;
    let input = json!({
        "description": subtask.description,
        "prompt": subtask.prompt,
        "subagent_type": subtask.agent,
    });
    let part = Part::new(
        &assistant,
        PartKind::Tool(ToolPart {
            call_id: crate::id::call_id(),
            tool: TASK_TOOL.into(),
            state: ToolState::Pending {
                input: input.clone(),
                raw: String::new(),
            },
        }),
    );
    ctx.writer.part(&part).await?;
    // The user asked for it: no agent tool list or doom-loop check applies.
    let mut runner = ToolRunner::new(ctx.clone(), ToolAccess::All, Vec::new(), cancel.clone());
    runner.submit(ToolCall {
        part,
        name: TASK_TOOL.into(),
        input,
        refusal: None,
    });
    let interrupted = tokio::select! {
        drained = runner.drain() => { drained?; false }
        () = cancel.cancelled() => true,
    };
    if interrupted {
        runner.cancel_all(ctx).await?;
    }
    if let Some(info) = assistant.as_assistant_mut() {
        info.finish = Some(FinishReason::ToolCalls);
        info.time_completed = Some(now_millis());
        if interrupted {
            info.error = Some(MessageError {
                kind: MessageErrorKind::Aborted,
                message: "Interrupted by the user".into(),
            });
        }
    }
    ctx.writer.message(&assistant).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_subagent_mention_makes_the_subtask() {
        let agents = Agents::builtin();
        let subtask =
            subtask_for("@explore where is the config read? see @notes.txt", &agents).unwrap();
        assert_eq!(subtask.agent, "explore");
        assert_eq!(subtask.prompt, "where is the config read? see @notes.txt");
        assert_eq!(subtask.description, "where is the config read?");
        let trailing = subtask_for("ask @general, please.", &agents).unwrap();
        assert_eq!(trailing.agent, "general");
        assert_eq!(trailing.prompt, "ask please.");
    }

    #[test]
    fn primary_agents_paths_and_unknown_names_make_none() {
        let agents = Agents::builtin();
        for text in [
            "@build do it",
            "@plan it",
            "read @src/main.rs",
            "mail me@explore.com",
            "@compaction now",
            "@nobody there",
        ] {
            assert_eq!(subtask_for(text, &agents), None, "{text}");
        }
        let only = subtask_for("@explore", &agents).unwrap();
        assert_eq!(only.prompt, "@explore");
    }
}
