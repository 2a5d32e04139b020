//! The one history builder of the tests and benches: messages and parts as
//! the loop writes them (`user`, `assistant`, `summary`, `compaction_request`,
//! `push` with `text` / `tool` / `step_finish`), and `HistoryBuilder`, a
//! realistic session for the figures: turns of a user message answered by two
//! tool steps (read + grep, bash + edit) and a final Markdown answer, each
//! step closed by a step-finish with growing usage.
//!
//! It builds data only and never touches a store or a server itself.
#![allow(dead_code)] // each bench and suite uses a different subset

use cairn::clock::now_millis;
use cairn::config::{Config, ModelConfig, NonEmpty, ProviderConfig, Wire};
use cairn::message::{
    AssistantMessage, CacheTokens, CompactionPart, FinishReason, Message, MessagePath,
    MessageWithParts, ModelRef, Part, PartKind, ReasoningPart, Role, StepFinishPart, StepStartPart,
    TextPart, Tokens, ToolPart, ToolState, ToolTime, UserMessage,
};
use serde_json::json;

pub const MODEL: &str = "scripted/test-model";

/// Sources the read tool "returns": real files, so token counts are realistic.
const SOURCES: &[(&str, &str)] = &[
    (
        "src/session/run.rs",
        include_str!("../../../src/session/run.rs"),
    ),
    ("src/message.rs", include_str!("../../../src/message.rs")),
    (
        "src/store/reads.rs",
        include_str!("../../../src/store/reads.rs"),
    ),
    (
        "src/tool/bash.rs",
        include_str!("../../../src/tool/bash.rs"),
    ),
];

const CARGO_TEST: &str = "   Compiling cairn v0.1.0 (/repo)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s\n     Running unittests src/lib.rs (target/debug/deps/cairn-3f2a)\n\nrunning 212 tests\ntest message::tests::round_trip ... ok\ntest session::run::tests::latest_finds_the_newest_user ... ok\ntest store::tests::read_context_starts_at_compaction ... FAILED\n\nfailures:\n\n---- store::tests::read_context_starts_at_compaction stdout ----\nthread 'store::tests::read_context_starts_at_compaction' panicked at src/store/reads.rs:88:9:\nassertion `left == right` failed\n  left: 12\n right: 10\n\ntest result: FAILED. 211 passed; 1 failed; 0 ignored\n";

/// The config of a scripted OpenAI-compatible provider with a 200k window.
pub fn config(base_url: &str) -> Config {
    let mut config = Config {
        model: Some(model()),
        yolo: true,
        ..Default::default()
    };
    let mut provider = ProviderConfig {
        wire: Some(Wire::OpenAi),
        base_url: Some(NonEmpty::new(base_url.to_string()).expect("a non-empty literal URL")),
        ..Default::default()
    };
    provider.models.insert(
        "test-model".into(),
        ModelConfig {
            context: Some(200_000),
            output: Some(32_000),
            ..Default::default()
        },
    );
    config.provider.insert("scripted".into(), provider);
    config
}

pub fn model() -> ModelRef {
    ModelRef::parse(MODEL).expect("a valid literal model name")
}

/// An empty message of `role`, created now.
pub fn message(session_id: &str, role: Role) -> MessageWithParts {
    MessageWithParts {
        message: Message {
            id: cairn::id::message_id(),
            session_id: session_id.into(),
            time_created: now_millis(),
            role,
        },
        parts: Vec::new(),
    }
}

/// Adds a part to `message`.
pub fn push(message: &mut MessageWithParts, kind: PartKind) {
    let part = Part::new(&message.message, kind);
    message.parts.push(part);
}

pub fn text(text: impl Into<String>) -> PartKind {
    PartKind::Text(TextPart {
        text: text.into(),
        ..TextPart::default()
    })
}

/// A completed tool call.
pub fn tool(
    call: impl Into<String>,
    name: &str,
    input: serde_json::Value,
    output: impl Into<String>,
) -> PartKind {
    let now = now_millis();
    PartKind::Tool(ToolPart {
        call_id: call.into(),
        tool: name.into(),
        state: ToolState::Completed {
            title: input.to_string(),
            input,
            output: output.into(),
            metadata: json!({}),
            time: ToolTime {
                start: now,
                end: Some(now),
                compacted: None,
            },
            attachments: Vec::new(),
        },
    })
}

/// A user message of the build agent holding `text`.
pub fn user(session_id: &str, text_: &str) -> MessageWithParts {
    let mut message = message(
        session_id,
        Role::User(UserMessage {
            agent: "build".into(),
            model: model(),
            system: None,
        }),
    );
    push(&mut message, text(text_));
    message
}

/// A completed assistant step answering `parent_id`, with no parts yet.
pub fn assistant(session_id: &str, parent_id: &str, finish: FinishReason) -> MessageWithParts {
    message(
        session_id,
        Role::Assistant(AssistantMessage {
            parent_id: parent_id.into(),
            agent: "build".into(),
            model: model(),
            path: MessagePath {
                cwd: "/repo".into(),
                root: "/repo".into(),
            },
            summary: false,
            finish: Some(finish),
            error: None,
            tokens: Tokens::default(),
            cost: 0.0,
            time_completed: Some(now_millis()),
        }),
    )
}

/// The compaction agent's summary answering the compaction request
/// `parent_id`.
pub fn summary(session_id: &str, parent_id: &str, text_: &str) -> MessageWithParts {
    let mut message = assistant(session_id, parent_id, FinishReason::Stop);
    if let Some(assistant) = message.message.as_assistant_mut() {
        assistant.agent = "compaction".into();
        assistant.summary = true;
    }
    push(&mut message, text(text_));
    message
}

/// A user message asking for a compaction, keeping the tail from
/// `tail_start_id` when there is one.
pub fn compaction_request(session_id: &str, tail_start_id: Option<&str>) -> MessageWithParts {
    let mut request = user(session_id, "");
    request.parts.clear();
    push(
        &mut request,
        PartKind::Compaction(CompactionPart {
            auto: true,
            tail_start_id: tail_start_id.map(String::from),
            ..CompactionPart::default()
        }),
    );
    request
}

/// The part closing a step, with the usage the provider reported.
pub fn step_finish(reason: FinishReason, tokens: Tokens) -> PartKind {
    PartKind::StepFinish(StepFinishPart {
        reason,
        tokens,
        cost: 0.0,
        snapshot: None,
    })
}

/// `lines` lines of a real source file, starting at a turn-dependent line.
fn excerpt(turn: usize, lines: usize) -> (&'static str, String) {
    let (path, source) = SOURCES[turn % SOURCES.len()];
    let all: Vec<&str> = source.lines().collect();
    let start = (turn * 37) % all.len().saturating_sub(lines).max(1);
    let body = all[start..(start + lines).min(all.len())]
        .iter()
        .enumerate()
        .map(|(i, line)| format!("{:>5}\t{line}\n", start + i + 1))
        .collect();
    (path, body)
}

/// Builds the messages of a session, in order, until `count` messages.
pub struct HistoryBuilder {
    session_id: String,
    /// Running size of the conversation in tokens, for the step-finish usage.
    context_tokens: u64,
}

impl HistoryBuilder {
    pub fn new(session_id: &str) -> Self {
        Self {
            session_id: session_id.into(),
            // System prompt and tool definitions.
            context_tokens: 9_000,
        }
    }

    pub fn build(mut self, count: usize) -> Vec<MessageWithParts> {
        let mut history = Vec::with_capacity(count);
        let mut turn = 0;
        while history.len() < count {
            for message in self.turn(turn) {
                if history.len() < count {
                    history.push(message);
                }
            }
            turn += 1;
        }
        history
    }

    fn usage(&mut self, parts: &[Part], output: u64) -> Tokens {
        let added: usize = parts
            .iter()
            .map(|p| serde_json::to_string(&p.kind).map_or(0, |s| s.len()))
            .sum();
        let input = self.context_tokens;
        self.context_tokens += (added / 4) as u64;
        Tokens {
            total: Some(input + output),
            input: input / 10,
            output,
            reasoning: 0,
            cache: CacheTokens {
                read: input - input / 10,
                write: 0,
            },
        }
    }

    fn assistant(&self, parent: &str, finish: FinishReason) -> MessageWithParts {
        let mut message = assistant(&self.session_id, parent, finish);
        push(&mut message, PartKind::StepStart(StepStartPart::default()));
        message
    }

    fn finish(&mut self, message: &mut MessageWithParts, reason: FinishReason, output: u64) {
        let tokens = self.usage(&message.parts, output);
        if let Some(assistant) = message.message.as_assistant_mut() {
            assistant.tokens = tokens;
        }
        push(message, step_finish(reason, tokens));
    }

    /// One user message and the three assistant steps answering it.
    fn turn(&mut self, turn: usize) -> Vec<MessageWithParts> {
        let (path, body) = excerpt(turn, 30);
        let mut user = message(
            &self.session_id,
            Role::User(UserMessage {
                agent: "build".into(),
                model: model(),
                system: None,
            }),
        );
        push(
            &mut user,
            text(format!(
                "The test read_context_starts_at_compaction fails after my change to {path} (turn {turn}). Can you find why and fix it?"
            )),
        );
        let parent = user.message.id.clone();

        let mut read = self.assistant(&parent, FinishReason::ToolCalls);
        push(
            &mut read,
            PartKind::Reasoning(ReasoningPart {
                text: format!(
                    "The failure is in the store; {path} is where the query is built, read it first."
                ),
                ..ReasoningPart::default()
            }),
        );
        push(
            &mut read,
            text(format!("Let me read `{path}` and look for the query.")),
        );
        push(
            &mut read,
            tool(
                format!("call_{turn}_read"),
                "read",
                json!({"filePath": path, "offset": turn % 200}),
                body,
            ),
        );
        push(
            &mut read,
            tool(
                format!("call_{turn}_grep"),
                "grep",
                json!({"pattern": "compaction", "path": "src"}),
                "src/store/reads.rs:42: // from the last completed compaction\nsrc/session/run.rs:4: // completed compaction point\nsrc/session/compaction.rs:1: //! Compaction\n",
            ),
        );
        self.finish(&mut read, FinishReason::ToolCalls, 180);

        let mut test = self.assistant(&parent, FinishReason::ToolCalls);
        push(
            &mut test,
            tool(
                format!("call_{turn}_bash"),
                "bash",
                json!({"command": "cargo test --lib store"}),
                CARGO_TEST,
            ),
        );
        push(
            &mut test,
            tool(
                format!("call_{turn}_edit"),
                "edit",
                json!({"filePath": path, "oldString": "> ?1", "newString": ">= ?1"}),
                format!("Edited {path}: 1 line changed"),
            ),
        );
        self.finish(&mut test, FinishReason::ToolCalls, 120);

        let mut answer = self.assistant(&parent, FinishReason::Stop);
        push(
            &mut answer,
            text(format!(
                "Fixed. The query in `{path}` compared ids with `>` and skipped the compaction message itself:\n\n```rust\nWHERE session_id = ?1 AND id >= ?2\n```\n\n- the test passes now\n- no other caller relied on the old bound\n"
            )),
        );
        self.finish(&mut answer, FinishReason::Stop, 90);
        vec![user, read, test, answer]
    }
}
