//! Property: whatever the history (steps, prunes, compactions, interrupts,
//! model switches), the request built from it pairs every tool call with
//! exactly one result in the next user message, and no result is orphaned.

use cairn::context::compaction::{hide_completed_compactions, messages_tokens, select_tail};
use cairn::context::view::{
    ModelViewOptions, ensure_tool_pairing, order_for_model, to_model_messages,
};
use cairn::message::{
    AssistantMessage, CompactionPart, FinishReason, Message, MessageError, MessageErrorKind,
    MessageWithParts, ModelRef, Part, PartKind, Role, StepFinishPart, StepStartPart, TextPart,
    Tokens, ToolPart, ToolState, ToolTime, UserMessage,
};
use cairn::message::{HistoryScan, ScanStep};
use cairn::provider::{ChatMessage, ChatRole, Content};
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Outcome {
    Completed,
    Failed,
    InterruptedBash,
    Pending,
    Running,
}

#[derive(Debug, Clone)]
enum Op {
    User,
    /// An assistant message with steps; each step has tool outcomes and
    /// maybe text.
    Assistant {
        steps: Vec<(Vec<Outcome>, bool)>,
        ending: Ending,
        other_model: bool,
    },
    Prune(usize),
    Compact {
        budget: u64,
        summary_ok: bool,
    },
}

#[derive(Debug, Clone)]
enum Ending {
    Finished,
    Aborted,
    ApiError,
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        4 => Just(Outcome::Completed),
        1 => Just(Outcome::Failed),
        1 => Just(Outcome::InterruptedBash),
        1 => Just(Outcome::Pending),
        1 => Just(Outcome::Running),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let ending = prop_oneof![
        6 => Just(Ending::Finished),
        2 => Just(Ending::Aborted),
        1 => Just(Ending::ApiError),
    ];
    prop_oneof![
        3 => Just(Op::User),
        6 => (
            prop::collection::vec((prop::collection::vec(outcome(), 0..4), any::<bool>()), 0..4),
            ending,
            prop::bool::weighted(0.2),
        )
            .prop_map(|(steps, ending, other_model)| Op::Assistant { steps, ending, other_model }),
        1 => (0usize..50).prop_map(Op::Prune),
        1 => (0u64..400, prop::bool::weighted(0.8))
            .prop_map(|(budget, summary_ok)| Op::Compact { budget, summary_ok }),
    ]
}

fn model() -> ModelRef {
    ModelRef::new("anthropic", "claude-test")
}

struct Builder {
    messages: Vec<MessageWithParts>,
    last_user: String,
}

impl Builder {
    fn message(&mut self, role: Role) {
        self.messages.push(MessageWithParts {
            message: Message {
                id: cairn::id::message_id(),
                session_id: "ses".into(),
                time_created: 0,
                role,
            },
            parts: Vec::new(),
        });
    }

    fn part(&mut self, kind: PartKind) {
        let message = self.messages.last_mut().expect("message first");
        message.parts.push(Part {
            id: cairn::id::part_id(),
            message_id: message.message.id.clone(),
            session_id: "ses".into(),
            kind,
            tokens: None,
        });
    }

    fn user(&mut self, compaction: Option<CompactionPart>) {
        self.message(Role::User(UserMessage {
            agent: "build".into(),
            model: model(),
            system: None,
        }));
        self.last_user = self
            .messages
            .last()
            .expect("just pushed")
            .message
            .id
            .clone();
        match compaction {
            Some(c) => self.part(PartKind::Compaction(c)),
            None => self.part(PartKind::Text(TextPart {
                text: "do it".into(),
                ..TextPart::default()
            })),
        }
    }

    fn assistant(&mut self, model: ModelRef, summary: bool) {
        let parent_id = self.last_user.clone();
        self.message(Role::Assistant(AssistantMessage {
            parent_id,
            agent: "build".into(),
            model,
            path: Default::default(),
            summary,
            finish: None,
            error: None,
            tokens: Tokens::default(),
            cost: 0.0,
            time_completed: None,
        }));
    }

    fn end(&mut self, ending: &Ending) {
        let assistant = self
            .messages
            .last_mut()
            .and_then(|m| m.message.as_assistant_mut())
            .expect("assistant last");
        match ending {
            Ending::Finished => assistant.finish = Some(FinishReason::Stop),
            Ending::Aborted => {
                assistant.error = Some(MessageError {
                    kind: MessageErrorKind::Aborted,
                    message: "interrupted".into(),
                })
            }
            Ending::ApiError => {
                assistant.error = Some(MessageError {
                    kind: MessageErrorKind::Api,
                    message: "500".into(),
                })
            }
        }
    }
}

fn tool_state(outcome: &Outcome) -> ToolState {
    let time = ToolTime::default();
    match outcome {
        Outcome::Completed => ToolState::Completed {
            input: json!({"n": 1}),
            output: "output ".repeat(20),
            title: "t".into(),
            metadata: json!({}),
            time,
            attachments: Vec::new(),
        },
        Outcome::Failed => ToolState::Error {
            input: json!({}),
            error: "boom".into(),
            metadata: None,
            time,
        },
        Outcome::InterruptedBash => ToolState::Error {
            input: json!({}),
            error: "Tool execution aborted".into(),
            metadata: Some(json!({"interrupted": true, "output": "partial"})),
            time,
        },
        Outcome::Pending => ToolState::Pending {
            input: json!({}),
            raw: String::new(),
        },
        Outcome::Running => ToolState::Running {
            input: json!({}),
            title: None,
            metadata: None,
            time,
        },
    }
}

/// What the store's model view read returns: newest first until the scan stops, reversed.
fn read_view(all: &[MessageWithParts]) -> Vec<MessageWithParts> {
    let mut scan = HistoryScan::new();
    let mut out = Vec::new();
    for message in all.iter().rev() {
        out.push(message.clone());
        if scan.push(message) == ScanStep::KeepAndStop {
            break;
        }
    }
    out.reverse();
    out
}

fn build(ops: &[Op]) -> Vec<MessageWithParts> {
    let mut b = Builder {
        messages: Vec::new(),
        last_user: String::new(),
    };
    b.user(None);
    for op in ops {
        match op {
            Op::User => b.user(None),
            Op::Assistant {
                steps,
                ending,
                other_model,
            } => {
                let m = if *other_model {
                    ModelRef::new("openai", "gpt-5")
                } else {
                    model()
                };
                b.assistant(m, false);
                for (outcomes, text) in steps {
                    b.part(PartKind::StepStart(StepStartPart::default()));
                    if *text {
                        b.part(PartKind::Text(TextPart {
                            text: "thinking aloud".into(),
                            ..TextPart::default()
                        }));
                    }
                    for outcome in outcomes {
                        b.part(PartKind::Tool(ToolPart {
                            call_id: format!("call_{}", cairn::id::part_id()),
                            tool: "bash".into(),
                            state: tool_state(outcome),
                        }));
                    }
                    if matches!(ending, Ending::Finished) {
                        b.part(PartKind::StepFinish(StepFinishPart {
                            reason: FinishReason::ToolCalls,
                            tokens: Tokens {
                                input: 100,
                                ..Tokens::default()
                            },
                            cost: 0.0,
                            snapshot: None,
                        }));
                    }
                }
                b.end(ending);
            }
            Op::Prune(n) => {
                let mut seen = 0;
                for part in b.messages.iter_mut().flat_map(|m| m.parts.iter_mut()) {
                    if let PartKind::Tool(ToolPart {
                        state: ToolState::Completed { time, .. },
                        ..
                    }) = &mut part.kind
                    {
                        if seen < *n {
                            time.compacted = Some(1);
                        }
                        seen += 1;
                    }
                }
            }
            Op::Compact { budget, summary_ok } => {
                let context = hide_completed_compactions(read_view(&b.messages));
                let tail = select_tail(&context, 2, *budget, messages_tokens);
                b.user(Some(CompactionPart {
                    auto: true,
                    tail_start_id: tail.tail_start_id,
                    ..CompactionPart::default()
                }));
                b.assistant(model(), true);
                b.part(PartKind::Text(TextPart {
                    text: "## Goal\nsummary".into(),
                    ..TextPart::default()
                }));
                b.end(if *summary_ok {
                    &Ending::Finished
                } else {
                    &Ending::ApiError
                });
            }
        }
    }
    b.messages
}

/// The invariant, checked independently of the repair code.
fn check_pairing(messages: &[ChatMessage]) -> Result<(), String> {
    for (i, message) in messages.iter().enumerate() {
        let calls: Vec<&str> = message
            .content
            .iter()
            .filter_map(|c| match c {
                Content::ToolCall { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let results_here = message
            .content
            .iter()
            .any(|c| matches!(c, Content::ToolResult { .. }));
        if message.role == ChatRole::Assistant && results_here {
            return Err(format!("message {i}: a result inside an assistant message"));
        }
        if message.role == ChatRole::User {
            let answered_previous = i > 0 && messages[i - 1].role == ChatRole::Assistant;
            if results_here && !answered_previous {
                return Err(format!("message {i}: orphan results"));
            }
            continue;
        }
        if calls.is_empty() {
            continue;
        }
        let next = messages
            .get(i + 1)
            .ok_or(format!("message {i}: calls at the end"))?;
        if next.role != ChatRole::User {
            return Err(format!("message {i}: calls not followed by a user message"));
        }
        let results: Vec<&str> = next
            .content
            .iter()
            .filter_map(|c| match c {
                Content::ToolResult { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        for call in &calls {
            let n = results.iter().filter(|r| *r == call).count();
            if n != 1 {
                return Err(format!("message {i}: call {call} has {n} results"));
            }
        }
        if let Some(orphan) = results.iter().find(|r| !calls.contains(r)) {
            return Err(format!("message {}: orphan result {orphan}", i + 1));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_call_has_exactly_one_result_right_after_it(
        ops in prop::collection::vec(op(), 0..30),
        strip_media in any::<bool>(),
        cut in prop::option::of(1usize..50),
        media_in_results in any::<bool>(),
    ) {
        let all = build(&ops);
        let context = order_for_model(read_view(&all));
        let options = ModelViewOptions { strip_media, tool_output_max_chars: cut, media_in_tool_results: media_in_results };
        let mut messages = to_model_messages(&context, &model(), options);
        let before = messages.clone();
        let repairs = ensure_tool_pairing(&mut messages);
        prop_assert!(check_pairing(&messages).is_ok(), "{:?}", check_pairing(&messages));
        // The model view is already well paired; the repair is a safety net.
        prop_assert!(repairs.is_empty(), "repairs {:?}", repairs);
        prop_assert_eq!(&messages, &before);
    }
}

#[test]
fn the_checker_catches_a_broken_request() {
    let call = Content::ToolCall {
        id: "a".into(),
        name: "bash".into(),
        input: json!({}),
    };
    let broken = vec![
        ChatMessage {
            role: ChatRole::User,
            content: vec![Content::Text { text: "q".into() }],
        },
        ChatMessage {
            role: ChatRole::Assistant,
            content: vec![call],
        },
        ChatMessage {
            role: ChatRole::User,
            content: vec![Content::Text {
                text: "next".into(),
            }],
        },
    ];
    assert!(check_pairing(&broken).is_err());
    let mut repaired = broken.clone();
    assert_eq!(ensure_tool_pairing(&mut repaired).len(), 1);
    assert!(check_pairing(&repaired).is_ok());
}
