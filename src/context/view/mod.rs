//! History -> the messages the model sees (spec 6, seed 002 sections 4-5).
//!
//! Input is what the store's model view read returns (oldest first, from the last
//! completed compaction point or its verbatim tail); output is provider-neutral
//! `ChatMessage`s with every tool call answered right after it. Pure: never
//! reads the store, never counts against a network. Sub-modules: `counting`
//! (what one part costs), `pairing` (the tool-result invariant), `breakdown`
//! (`/context`).

pub mod breakdown;
mod counting;
mod pairing;
#[cfg(test)]
pub(crate) mod test_history;

use std::borrow::Cow;

use base64::Engine;

use crate::message::{
    FilePart, MessageErrorKind, MessageWithParts, ModelRef, Part, PartKind, ToolPart, ToolState,
};
use crate::provider::{ChatMessage, ChatRole, Content};

pub use breakdown::{BreakdownInput, build_breakdown};
pub use counting::{
    FillReport, IMAGE_TOKENS, PART_FRAMING, fill_part_tokens, part_framing, part_model_text,
    part_tokens, pruned_savings,
};
pub use pairing::{MISSING_TOOL_RESULT, Repair, ensure_tool_pairing, is_well_paired};

/// What the compaction part's user message says to the model.
pub const COMPACTION_QUESTION: &str = "What did we do so far?";
/// What a subtask part's user message says to the model.
pub const SUBTASK_TEXT: &str = "The following tool was executed by the user";
/// A pruned tool output, as the model sees it.
pub const CLEARED_TOOL_RESULT: &str = "[Old tool result content cleared]";
/// The result of a tool call that never finished (Anthropic needs one).
pub const INTERRUPTED_TOOL_RESULT: &str = "[Tool execution was interrupted]";
/// Leads the user message carrying tool-result media for providers that
/// cannot take media inside tool results.
pub const TOOL_MEDIA_PROMPT: &str = "Attached media from tool result:";

/// How the history is rendered for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelViewOptions {
    /// Replace media with `[Attached {mime}: {filename}]` (compaction requests).
    pub strip_media: bool,
    /// Cut tool outputs to this many characters (compaction requests: 2,000).
    pub tool_output_max_chars: Option<usize>,
    /// The provider accepts images inside tool results; otherwise they follow
    /// in a user message.
    pub media_in_tool_results: bool,
}

impl Default for ModelViewOptions {
    fn default() -> Self {
        Self {
            strip_media: false,
            tool_output_max_chars: None,
            media_in_tool_results: true,
        }
    }
}

/// Reorders a model view read so the model sees the latest summary first:
/// `[compaction-user ..= summary] ++ [tail .. compaction-user) ++ (summary ..]`
/// (spec 7.6). Earlier compaction pairs that appear inside the tail are hidden.
pub fn order_for_model(history: Vec<MessageWithParts>) -> Vec<MessageWithParts> {
    let pairs = completed_compaction_pairs(&history);
    let Some(&(compaction, summary)) = pairs.last() else {
        return history;
    };
    let hidden: Vec<usize> = pairs[..pairs.len() - 1]
        .iter()
        .flat_map(|&(c, s)| [c, s])
        .collect();
    let mut slots: Vec<Option<MessageWithParts>> = history.into_iter().map(Some).collect();
    let order = (compaction..=summary)
        .chain(0..compaction)
        .chain(summary + 1..slots.len());
    order
        .filter(|i| !hidden.contains(i))
        .filter_map(|i| slots[i].take())
        .collect()
}

/// [`order_for_model`] of a borrowed read, copying nothing when there is
/// nothing to reorder (no completed compaction in it): the view of a session
/// never summarised is its history as read. A reordered view is bounded by
/// the window, since the read starts at the compaction point.
pub fn model_view(history: &[MessageWithParts]) -> Cow<'_, [MessageWithParts]> {
    if completed_compaction_pairs(history).is_empty() {
        Cow::Borrowed(history)
    } else {
        Cow::Owned(order_for_model(history.to_vec()))
    }
}

/// Indices `(compaction-user, summary-assistant)` of every completed
/// compaction in `history`, oldest first.
pub fn completed_compaction_pairs(history: &[MessageWithParts]) -> Vec<(usize, usize)> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_completed_summary())
        .filter_map(|(s, summary)| {
            let parent = &summary.message.as_assistant()?.parent_id;
            let c = history[..s]
                .iter()
                .rposition(|m| &m.message.id == parent && m.compaction().is_some())?;
            Some((c, s))
        })
        .collect()
}

/// Renders the history as provider-neutral messages (spec 6).
pub fn to_model_messages(
    history: &[MessageWithParts],
    current_model: &ModelRef,
    options: ModelViewOptions,
) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(history.len() * 2);
    // The working state just pushed: a user message that follows it joins
    // it, so roles still alternate (some chat templates insist).
    let mut after_state = false;
    for message in history {
        match &message.message.role {
            crate::message::Role::User(_) => {
                let content = user_content(&message.parts, options);
                if content.is_empty() {
                    continue;
                }
                match out.last_mut() {
                    Some(state) if after_state => state.content.extend(content),
                    _ => out.push(ChatMessage {
                        role: ChatRole::User,
                        content,
                    }),
                }
                after_state = false;
            }
            crate::message::Role::Assistant(assistant) => {
                if let Some(error) = &assistant.error {
                    let keeps_partial_answer = error.kind == MessageErrorKind::Aborted
                        && message.parts.iter().any(is_content_part);
                    if !keeps_partial_answer {
                        continue;
                    }
                }
                let same_model = &assistant.model == current_model;
                for step in message
                    .parts
                    .split(|p| matches!(p.kind, PartKind::StepStart(_)))
                {
                    push_assistant_step(&mut out, step, same_model, options);
                }
                after_state = push_working_state(&mut out, message);
            }
        }
    }
    out
}

/// A summary's working state, sent after it as the user's side of the
/// conversation (it holds the user's own words); whether one was pushed.
fn push_working_state(out: &mut Vec<ChatMessage>, message: &MessageWithParts) -> bool {
    if !message.is_completed_summary() {
        return false;
    }
    let texts: Vec<Content> = message
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) if t.is_working_state() && !t.text.is_empty() => {
                Some(Content::Text {
                    text: t.text.clone(),
                })
            }
            _ => None,
        })
        .collect();
    if texts.is_empty() {
        return false;
    }
    out.push(ChatMessage {
        role: ChatRole::User,
        content: texts,
    });
    true
}

/// Step-start, step-finish and reasoning alone do not make an aborted
/// message worth keeping.
fn is_content_part(part: &Part) -> bool {
    !matches!(
        part.kind,
        PartKind::StepStart(_) | PartKind::StepFinish(_) | PartKind::Reasoning(_)
    )
}

fn user_content(parts: &[Part], options: ModelViewOptions) -> Vec<Content> {
    let mut content = Vec::new();
    for part in parts {
        match &part.kind {
            PartKind::Text(text) if !text.ignored && !text.text.is_empty() => {
                content.push(Content::Text {
                    text: text.text.clone(),
                });
            }
            // `read` already inlined these as synthetic text at prompt time.
            PartKind::File(file) if is_inlined_text(file) => {}
            PartKind::File(file) => content.push(file_content(file, options.strip_media)),
            PartKind::Compaction(_) => content.push(Content::Text {
                text: COMPACTION_QUESTION.into(),
            }),
            PartKind::Subtask(_) => content.push(Content::Text {
                text: SUBTASK_TEXT.into(),
            }),
            _ => {}
        }
    }
    content
}

fn is_inlined_text(file: &FilePart) -> bool {
    file.mime == "text/plain" || file.mime == "application/x-directory"
}

/// An image from a `data:` URL, or a text marker for anything we cannot send.
fn file_content(file: &FilePart, strip_media: bool) -> Content {
    if !strip_media
        && file.mime.starts_with("image/")
        && let Some(data) = data_url_payload(&file.url)
    {
        return Content::Image {
            mime: file.mime.clone(),
            data,
        };
    }
    Content::Text {
        text: attachment_marker(file),
    }
}

/// `[Attached {mime}: {filename}]`, what the model sees of stripped media.
pub fn attachment_marker(file: &FilePart) -> String {
    format!(
        "[Attached {}: {}]",
        file.mime,
        file.filename.as_deref().unwrap_or("file")
    )
}

/// The base64 payload of a `data:...;base64,` URL; plain data URLs are encoded.
fn data_url_payload(url: &str) -> Option<String> {
    let rest = url.strip_prefix("data:")?;
    let (meta, payload) = rest.split_once(',')?;
    if meta.ends_with(";base64") {
        Some(payload.to_string())
    } else {
        Some(base64::engine::general_purpose::STANDARD.encode(payload.as_bytes()))
    }
}

/// One step of an assistant message: its content, then a user message with
/// the results of the calls it made (and tool media, when needed).
fn push_assistant_step(
    out: &mut Vec<ChatMessage>,
    parts: &[Part],
    same_model: bool,
    options: ModelViewOptions,
) {
    let has_signed_reasoning = same_model
        && parts.iter().any(|p| {
            matches!(&p.kind, PartKind::Reasoning(r) if r.signature.is_some() || r.redacted.is_some())
        });
    let mut content = Vec::new();
    let mut results = Vec::new();
    let mut media = Vec::new();
    for part in parts {
        match &part.kind {
            // Signed reasoning blocks must keep their positions.
            PartKind::Text(text) if text.text.is_empty() && has_signed_reasoning => {
                content.push(Content::Text { text: " ".into() });
            }
            PartKind::Text(text) if text.text.is_empty() || text.is_working_state() => {}
            PartKind::Text(text) => content.push(Content::Text {
                text: text.text.clone(),
            }),
            // Unsigned blank reasoning carries nothing for any provider.
            PartKind::Reasoning(reasoning)
                if reasoning.text.trim().is_empty()
                    && reasoning.signature.is_none()
                    && reasoning.redacted.is_none() => {}
            PartKind::Reasoning(reasoning) if same_model => {
                if let Some(data) = &reasoning.redacted {
                    content.push(Content::RedactedReasoning { data: data.clone() });
                } else {
                    content.push(Content::Reasoning {
                        text: reasoning.text.clone(),
                        signature: reasoning.signature.clone(),
                    });
                }
            }
            // Another model's reasoning is plain text to this one; signatures
            // would be rejected.
            PartKind::Reasoning(reasoning) if !reasoning.text.trim().is_empty() => {
                content.push(Content::Text {
                    text: reasoning.text.clone(),
                });
            }
            PartKind::Tool(tool) => {
                content.push(Content::ToolCall {
                    id: tool.call_id.clone(),
                    name: tool.tool.clone(),
                    input: tool.state.input().clone(),
                });
                let (result, tool_media) = tool_result(tool, options);
                results.push(result);
                media.extend(tool_media);
            }
            _ => {}
        }
    }
    if content.is_empty() {
        return;
    }
    out.push(ChatMessage {
        role: ChatRole::Assistant,
        content,
    });
    if !media.is_empty() {
        results.push(Content::Text {
            text: TOOL_MEDIA_PROMPT.into(),
        });
        results.extend(media);
    }
    if !results.is_empty() {
        out.push(ChatMessage {
            role: ChatRole::User,
            content: results,
        });
    }
}

/// The result of one call, and media to send after it when the provider
/// cannot take media inside tool results.
fn tool_result(tool: &ToolPart, options: ModelViewOptions) -> (Content, Vec<Content>) {
    let result = |text: String, is_error: bool, extra: Vec<Content>| {
        let mut content = vec![Content::Text { text }];
        content.extend(extra);
        Content::ToolResult {
            call_id: tool.call_id.clone(),
            content,
            is_error,
        }
    };
    match &tool.state {
        ToolState::Completed {
            output,
            time,
            attachments,
            ..
        } => {
            if time.compacted.is_some() {
                return (
                    result(CLEARED_TOOL_RESULT.into(), false, Vec::new()),
                    Vec::new(),
                );
            }
            let text = match options.tool_output_max_chars {
                Some(max) => truncate_for_compaction(output, max),
                None => output.clone(),
            };
            let media: Vec<Content> = attachments
                .iter()
                .filter(|_| !options.strip_media)
                .map(|file| file_content(file, false))
                .collect();
            if options.media_in_tool_results {
                (result(text, false, media), Vec::new())
            } else {
                (result(text, false, Vec::new()), media)
            }
        }
        ToolState::Error {
            error, metadata, ..
        } => {
            let interrupted = metadata
                .as_ref()
                .is_some_and(|m| m.get("interrupted").and_then(|v| v.as_bool()) == Some(true));
            let partial_output = metadata
                .as_ref()
                .and_then(|m| m.get("output").and_then(|v| v.as_str()))
                .filter(|_| interrupted);
            match partial_output {
                // Interrupted bash: what it printed is a useful, successful result.
                Some(output) if !output.is_empty() => {
                    (result(output.to_string(), false, Vec::new()), Vec::new())
                }
                // An interrupted `task` or MCP call left nothing: an empty
                // success would read as "done, nothing to say".
                _ if interrupted => (
                    result(INTERRUPTED_TOOL_RESULT.into(), true, Vec::new()),
                    Vec::new(),
                ),
                _ => (result(error.clone(), true, Vec::new()), Vec::new()),
            }
        }
        ToolState::Pending { .. } | ToolState::Running { .. } => (
            result(INTERRUPTED_TOOL_RESULT.into(), true, Vec::new()),
            Vec::new(),
        ),
    }
}

/// `text[..max] + "\n[Tool output truncated for compaction: omitted {n} chars]"`,
/// counting characters, not bytes, so a cut never splits one.
pub fn truncate_for_compaction(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => {
            let omitted = text[cut..].chars().count();
            format!(
                "{}\n[Tool output truncated for compaction: omitted {omitted} chars]",
                &text[..cut]
            )
        }
    }
}

#[cfg(test)]
mod tests;
