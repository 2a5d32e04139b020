//! Builders for the store tests: sessions, messages and parts with every
//! optional field set, so that a round trip that drops a field fails.

use cairn::clock::now_millis;
use cairn::id;
use cairn::message::*;
use cairn::store::Store;
use serde_json::json;

pub fn open_temp() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("data/cairn.db")).expect("open store");
    (dir, store)
}

pub fn session(directory: &str) -> Session {
    let now = now_millis();
    Session {
        id: id::session_id(),
        title: "fix the failing test".into(),
        directory: directory.into(),
        parent_id: None,
        time_created: now,
        time_updated: now,
        cost: 0.0,
        tokens: Tokens::default(),
    }
}

pub fn user(session: &Session) -> Message {
    Message {
        id: id::message_id(),
        session_id: session.id.clone(),
        time_created: now_millis(),
        role: Role::User(UserMessage {
            agent: "build".into(),
            model: ModelRef::new("anthropic", "claude-sonnet-4.5"),
            system: Some("answer in French".into()),
        }),
    }
}

pub fn assistant(session: &Session, parent: &Message) -> Message {
    Message {
        id: id::message_id(),
        session_id: session.id.clone(),
        time_created: now_millis(),
        role: Role::Assistant(AssistantMessage {
            parent_id: parent.id.clone(),
            agent: "build".into(),
            model: ModelRef::new("openai", "gpt-5"),
            path: MessagePath {
                cwd: "/repo/src".into(),
                root: "/repo".into(),
            },
            summary: false,
            finish: Some(FinishReason::ToolCalls),
            error: Some(MessageError {
                kind: MessageErrorKind::Aborted,
                message: "interrupted".into(),
            }),
            tokens: tokens(1),
            cost: 0.25,
            time_completed: Some(now_millis()),
        }),
    }
}

/// A compaction summary answering `parent`; `error` makes it a failed one.
pub fn summary(session: &Session, parent: &Message, error: bool) -> Message {
    let mut message = assistant(session, parent);
    let assistant = message.as_assistant_mut().expect("built as assistant");
    assistant.summary = true;
    assistant.finish = Some(FinishReason::Stop);
    assistant.error = error.then(|| MessageError {
        kind: MessageErrorKind::ContextOverflow,
        message: "prompt is too long".into(),
    });
    message
}

/// A plain successful assistant reply.
pub fn reply(session: &Session, parent: &Message) -> Message {
    let mut message = assistant(session, parent);
    let assistant = message.as_assistant_mut().expect("built as assistant");
    assistant.finish = Some(FinishReason::Stop);
    assistant.error = None;
    message
}

pub fn tokens(scale: u64) -> Tokens {
    Tokens {
        total: Some(100 * scale),
        input: 10 * scale,
        output: 20 * scale,
        reasoning: 3 * scale,
        cache: CacheTokens {
            read: 40 * scale,
            write: 5 * scale,
        },
    }
}

pub fn text(message: &Message, text: &str) -> Part {
    Part::new(
        message,
        PartKind::Text(TextPart {
            text: text.into(),
            ..TextPart::default()
        }),
    )
}

pub fn compaction(message: &Message, tail_start_id: Option<&str>) -> Part {
    Part::new(
        message,
        PartKind::Compaction(CompactionPart {
            auto: true,
            overflow: false,
            tail_start_id: tail_start_id.map(str::to_string),
            instructions: None,
            tokens: None,
            carried: None,
        }),
    )
}

pub fn step_finish(message: &Message, cost: f64, scale: u64) -> Part {
    Part::new(
        message,
        PartKind::StepFinish(StepFinishPart {
            reason: FinishReason::Stop,
            tokens: tokens(scale),
            cost,
            snapshot: Some("4b825dc".into()),
        }),
    )
}

fn tool_time() -> ToolTime {
    ToolTime {
        start: 1_700_000_000_000,
        end: Some(1_700_000_000_500),
        compacted: Some(1_700_000_009_000),
    }
}

fn file() -> FilePart {
    FilePart {
        mime: "image/png".into(),
        filename: Some("shot.png".into()),
        url: "data:image/png;base64,iVBORw0KGgo=".into(),
    }
}

/// One tool state of each kind, every optional field set.
pub fn tool_states() -> Vec<ToolState> {
    let input = json!({"command": "cargo test", "timeout": 120});
    vec![
        ToolState::Pending {
            input: json!({}),
            raw: "{\"command\": \"car".into(),
        },
        ToolState::Running {
            input: input.clone(),
            title: Some("cargo test".into()),
            metadata: Some(json!({"output": "Compiling"})),
            time: tool_time(),
        },
        ToolState::Completed {
            input: input.clone(),
            output: "test result: ok. 3 passed\n".into(),
            title: "cargo test".into(),
            metadata: json!({"exit": 0, "truncated": false}),
            time: tool_time(),
            attachments: vec![file()],
        },
        ToolState::Error {
            input,
            error: "exit status 101".into(),
            metadata: Some(json!({"exit": 101})),
            time: tool_time(),
        },
    ]
}

/// One part of every kind (tools in every state), every optional field set.
pub fn every_part_kind(message: &Message) -> Vec<Part> {
    let mut kinds = vec![
        PartKind::Text(TextPart {
            text: "héllo 世界".into(),
            synthetic: true,
            ignored: true,
            time: Some(TimeSpan {
                start: 1,
                end: Some(2),
            }),
            metadata: Some(json!({"source": "queue"})),
        }),
        PartKind::Reasoning(ReasoningPart {
            text: "thinking".into(),
            signature: Some("sig-abc".into()),
            redacted: Some("opaque".into()),
            time: TimeSpan {
                start: 3,
                end: Some(4),
            },
        }),
        PartKind::File(file()),
        PartKind::Compaction(CompactionPart {
            auto: true,
            overflow: true,
            tail_start_id: Some("msg_0000000000000001aaaaaa".into()),
            instructions: Some("keep the API decisions".into()),
            tokens: Some(CompactedTokens {
                before: 45_210,
                after: 1_951,
            }),
            carried: Some(cairn::message::Carried {
                summarized_messages: 12,
                user_messages: 3,
                omitted_user_messages: 1,
                changed_files: 2,
                read_files: 1,
                file_texts: 2,
                todos: 3,
                open_todos: 2,
                skills: 1,
                tokens: 812,
                thin_summary: true,
            }),
        }),
        PartKind::Subtask(SubtaskPart {
            prompt: "find the bug".into(),
            description: "search".into(),
            agent: "explore".into(),
            model: Some(ModelRef::new("openrouter", "anthropic/claude-haiku")),
        }),
        PartKind::StepStart(StepStartPart {
            snapshot: Some("abc123".into()),
        }),
        PartKind::StepFinish(StepFinishPart {
            reason: FinishReason::ContentFilter,
            tokens: tokens(2),
            cost: 0.125,
            snapshot: Some("def456".into()),
        }),
        PartKind::Patch(PatchPart {
            hash: "def456".into(),
            files: vec!["src/lib.rs".into(), "src/main.rs".into()],
            after: Some("abc999".into()),
            changes: vec![cairn::message::PatchFile {
                path: "src/lib.rs".into(),
                kind: "modified".into(),
                added: 2,
                removed: 1,
                by: "edit".into(),
            }],
            kept: vec![cairn::message::KeptFile {
                path: "/p/.env".into(),
                before: Some("pre_0001".into()),
                after: Some(cairn::message::Fingerprint {
                    len: 8,
                    hash: "00000000deadbeef".into(),
                }),
            }],
            unrestorable: vec!["build/ is ignored".into()],
            refreshed: Vec::new(),
        }),
    ];
    for (index, state) in tool_states().into_iter().enumerate() {
        kinds.push(PartKind::Tool(ToolPart {
            call_id: format!("call_{index}"),
            tool: "bash".into(),
            state,
        }));
    }
    kinds
        .into_iter()
        .map(|kind| Part {
            tokens: Some(42),
            ..Part::new(message, kind)
        })
        .collect()
}

/// A finished exchange: user prompt and assistant reply with one text part each.
pub async fn exchange(store: &Store, session: &Session, words: &str) -> (Message, Message) {
    let question = user(session);
    let answer = reply(session, &question);
    store.upsert_message(&question).await.expect("user message");
    store
        .upsert_part(&text(&question, words))
        .await
        .expect("user text");
    store.upsert_message(&answer).await.expect("reply");
    store
        .upsert_part(&text(&answer, "done"))
        .await
        .expect("reply text");
    (question, answer)
}

pub fn ids(messages: &[MessageWithParts]) -> Vec<String> {
    messages.iter().map(|m| m.message.id.clone()).collect()
}
