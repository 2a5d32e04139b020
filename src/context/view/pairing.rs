//! The invariant every request must hold before it is sent: each tool call
//! has exactly one result, in the user message right after its assistant
//! message, and no result answers a call that is not there.
//!
//! `to_model_messages` already produces this; `ensure_tool_pairing` checks and
//! repairs what a bug or an odd history broke, and says what it changed.

use std::collections::HashSet;

use crate::provider::{ChatMessage, ChatRole, Content};

/// The result given to a call whose result is missing.
pub const MISSING_TOOL_RESULT: &str = "[Tool result missing: the call did not complete]";

/// One change `ensure_tool_pairing` made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// A call had no result; an error placeholder was added.
    MissingResult { call_id: String },
    /// A result answered no call of the preceding assistant message; dropped.
    OrphanResult { call_id: String },
    /// A second result for the same call; dropped.
    DuplicateResult { call_id: String },
    /// The same call id twice in one assistant message; the second dropped.
    DuplicateCall { call_id: String },
}

/// Repairs `messages` in place so the invariant holds; returns the repairs.
pub fn ensure_tool_pairing(messages: &mut Vec<ChatMessage>) -> Vec<Repair> {
    let mut repairs = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        if messages[index].role == ChatRole::User {
            // A user message not right after calls may hold no results.
            drop_all_results(&mut messages[index], &mut repairs);
            if messages[index].content.is_empty() {
                messages.remove(index);
                continue;
            }
            index += 1;
            continue;
        }
        let calls = dedup_calls(&mut messages[index], &mut repairs);
        if calls.is_empty() {
            index += 1;
            continue;
        }
        let next = index + 1;
        if messages.get(next).is_none_or(|m| m.role != ChatRole::User) {
            messages.insert(
                next,
                ChatMessage {
                    role: ChatRole::User,
                    content: Vec::new(),
                },
            );
        }
        pair_results(&calls, &mut messages[next], &mut repairs);
        index = next + 1;
    }
    repairs
}

/// The call ids of an assistant message, duplicates removed.
fn dedup_calls(message: &mut ChatMessage, repairs: &mut Vec<Repair>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut calls = Vec::new();
    message.content.retain(|content| match content {
        Content::ToolCall { id, .. } => {
            if seen.insert(id.clone()) {
                calls.push(id.clone());
                true
            } else {
                repairs.push(Repair::DuplicateCall {
                    call_id: id.clone(),
                });
                false
            }
        }
        _ => true,
    });
    calls
}

fn drop_all_results(message: &mut ChatMessage, repairs: &mut Vec<Repair>) {
    message.content.retain(|content| match content {
        Content::ToolResult { call_id, .. } => {
            repairs.push(Repair::OrphanResult {
                call_id: call_id.clone(),
            });
            false
        }
        _ => true,
    });
}

/// Rebuilds the user message as: one result per call, in call order, then
/// whatever else it carried (text, media).
fn pair_results(calls: &[String], message: &mut ChatMessage, repairs: &mut Vec<Repair>) {
    let mut results: Vec<Option<Content>> = vec![None; calls.len()];
    let mut rest = Vec::new();
    for content in std::mem::take(&mut message.content) {
        let Content::ToolResult { call_id, .. } = &content else {
            rest.push(content);
            continue;
        };
        match calls.iter().position(|id| id == call_id) {
            None => repairs.push(Repair::OrphanResult {
                call_id: call_id.clone(),
            }),
            Some(slot) if results[slot].is_some() => repairs.push(Repair::DuplicateResult {
                call_id: call_id.clone(),
            }),
            Some(slot) => results[slot] = Some(content),
        }
    }
    let mut content = Vec::with_capacity(calls.len() + rest.len());
    for (call_id, result) in calls.iter().zip(results) {
        content.push(result.unwrap_or_else(|| {
            repairs.push(Repair::MissingResult {
                call_id: call_id.clone(),
            });
            Content::ToolResult {
                call_id: call_id.clone(),
                content: vec![Content::Text {
                    text: MISSING_TOOL_RESULT.into(),
                }],
                is_error: true,
            }
        }));
    }
    content.extend(rest);
    message.content = content;
}

/// Checks the invariant without changing anything; for tests and debug asserts.
pub fn is_well_paired(messages: &[ChatMessage]) -> bool {
    let mut copy = messages.to_vec();
    ensure_tool_pairing(&mut copy).is_empty() && copy == messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> Content {
        Content::ToolCall {
            id: id.into(),
            name: "bash".into(),
            input: json!({}),
        }
    }

    fn result(id: &str) -> Content {
        Content::ToolResult {
            call_id: id.into(),
            content: vec![Content::Text { text: "ok".into() }],
            is_error: false,
        }
    }

    fn msg(role: ChatRole, content: Vec<Content>) -> ChatMessage {
        ChatMessage { role, content }
    }

    #[test]
    fn repairs_missing_orphan_and_duplicate_results() {
        let mut messages = vec![
            msg(
                ChatRole::User,
                vec![Content::Text { text: "hi".into() }, result("x")],
            ),
            msg(ChatRole::Assistant, vec![call("a"), call("b"), call("a")]),
            msg(ChatRole::User, vec![result("b"), result("b"), result("zz")]),
            msg(ChatRole::Assistant, vec![call("c")]),
        ];
        let repairs = ensure_tool_pairing(&mut messages);
        assert_eq!(
            repairs,
            vec![
                Repair::OrphanResult {
                    call_id: "x".into()
                },
                Repair::DuplicateCall {
                    call_id: "a".into()
                },
                Repair::DuplicateResult {
                    call_id: "b".into()
                },
                Repair::OrphanResult {
                    call_id: "zz".into()
                },
                Repair::MissingResult {
                    call_id: "a".into()
                },
                Repair::MissingResult {
                    call_id: "c".into()
                },
            ]
        );
        assert_eq!(messages.len(), 5);
        assert!(
            matches!(&messages[2].content[..], [Content::ToolResult { call_id: a, is_error: true, .. }, Content::ToolResult { call_id: b, is_error: false, .. }] if a == "a" && b == "b")
        );
        assert_eq!(messages[4].role, ChatRole::User);
        assert!(is_well_paired(&messages));
    }

    #[test]
    fn a_well_paired_request_is_left_alone() {
        let mut messages = vec![
            msg(ChatRole::User, vec![Content::Text { text: "hi".into() }]),
            msg(ChatRole::Assistant, vec![call("a")]),
            msg(
                ChatRole::User,
                vec![
                    result("a"),
                    Content::Text {
                        text: "more".into(),
                    },
                ],
            ),
        ];
        let before = messages.clone();
        assert!(ensure_tool_pairing(&mut messages).is_empty());
        assert_eq!(messages, before);
    }
}
