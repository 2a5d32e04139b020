//! Cost of one TUI frame with a long history: 5,000 messages (2,500 exchanges,
//! Markdown answers and tool cards). Target: under 4 ms per frame.
//!
//! `warm`: the steady state (nothing changed but the frame is redrawn);
//! `streaming`: one delta appended to the answer being written, then a frame;
//! `cold`: the first frame of a freshly loaded session (nothing cached yet).

use std::hint::black_box;

use cairn::bus::DeltaField;
use cairn::clock::Millis;
use cairn::message::*;
use cairn::tui::app::{App, AppInit};
use cairn::tui::view;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

const MESSAGES: usize = 5_000;
const NOW: Millis = 1_763_780_000_000;

fn message(id: String, role: Role) -> Message {
    Message {
        id,
        session_id: "ses_bench".into(),
        time_created: NOW,
        role,
    }
}

fn part(id: String, message: &Message, kind: PartKind) -> Part {
    Part {
        id,
        message_id: message.id.clone(),
        session_id: "ses_bench".into(),
        kind,
        tokens: None,
    }
}

fn history() -> Vec<MessageWithParts> {
    let model = ModelRef::new("anthropic", "claude-sonnet-4-5");
    let mut out = Vec::with_capacity(MESSAGES);
    for n in 0..MESSAGES / 2 {
        let user = message(
            format!("msg_{n:06}a"),
            Role::User(UserMessage {
                agent: "build".into(),
                model: model.clone(),
                system: None,
            }),
        );
        let assistant = message(
            format!("msg_{n:06}b"),
            Role::Assistant(AssistantMessage {
                parent_id: user.id.clone(),
                agent: "build".into(),
                model: model.clone(),
                path: MessagePath::default(),
                summary: false,
                finish: Some(FinishReason::Stop),
                error: None,
                tokens: Tokens::default(),
                cost: 0.01,
                time_completed: Some(NOW),
            }),
        );
        let question = PartKind::Text(TextPart {
            text: format!("question {n}: why does the parser fail on empty input?"),
            ..Default::default()
        });
        let answer = PartKind::Text(TextPart {
            text: format!(
                "## Finding {n}\n\nThe **lexer** returns `None` on empty input, so:\n\n- check `len()` first\n- add a test\n\n```rust\nif input.is_empty() {{\n    return Ok(Vec::new());\n}}\n```\n"
            ),
            ..Default::default()
        });
        let tool = PartKind::Tool(ToolPart {
            call_id: format!("call_{n}"),
            tool: "bash".into(),
            state: ToolState::Completed {
                input: json!({ "command": "cargo test" }),
                output: "running 12 tests\ntest result: ok. 12 passed".into(),
                title: "cargo test".into(),
                metadata: json!({}),
                time: ToolTime {
                    start: NOW - 2_000,
                    end: Some(NOW),
                    compacted: None,
                },
                attachments: vec![],
            },
        });
        let user_parts = vec![part(format!("prt_{n:06}a"), &user, question)];
        let assistant_parts = vec![
            part(format!("prt_{n:06}b"), &assistant, tool),
            part(format!("prt_{n:06}c"), &assistant, answer),
        ];
        out.push(MessageWithParts {
            message: user,
            parts: user_parts,
        });
        out.push(MessageWithParts {
            message: assistant,
            parts: assistant_parts,
        });
    }
    out
}

fn app(history: Vec<MessageWithParts>) -> App {
    let session = Session {
        id: "ses_bench".into(),
        title: "bench".into(),
        directory: "/tmp".into(),
        parent_id: None,
        time_created: NOW,
        time_updated: NOW,
        cost: 1.0,
        tokens: Tokens::default(),
    };
    App::new(AppInit {
        session,
        history,
        model_label: "anthropic/claude-sonnet-4-5".into(),
        agent: "build".into(),
        gauge: None,
        first_run: None,
        models: vec![],
        sessions: vec![],
        now: NOW,
    })
}

fn frame(terminal: &mut Terminal<TestBackend>, app: &mut App) {
    terminal
        .draw(|frame| {
            view::prepare(app, frame.area());
            view::draw(app, frame);
        })
        .expect("drawing to a test backend");
}

fn bench(c: &mut Criterion) {
    let history = history();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");

    let mut warm = app(history.clone());
    frame(&mut terminal, &mut warm);
    c.bench_function("frame_5000_messages_warm", |b| {
        b.iter(|| frame(&mut terminal, black_box(&mut warm)))
    });

    let mut streaming = app(history.clone());
    let last = streaming
        .timeline
        .messages()
        .last()
        .expect("history")
        .message
        .id
        .clone();
    let part_id = format!("prt_{:06}c", MESSAGES / 2 - 1);
    let original = streaming.timeline.messages().last().expect("history").parts[1].clone();
    let mut appended = 0;
    c.bench_function("frame_5000_messages_streaming_delta", |b| {
        b.iter(|| {
            // Keep the streamed answer at a realistic size (up to ~2 KB).
            appended += 1;
            if appended % 200 == 0 {
                streaming.timeline.upsert_part(&original);
            }
            streaming
                .timeline
                .apply_delta(&last, &part_id, DeltaField::Text, "more words ");
            frame(&mut terminal, black_box(&mut streaming))
        })
    });

    c.bench_function("frame_5000_messages_cold", |b| {
        // By reference, so dropping 5,000 messages is not counted as drawing.
        b.iter_batched_ref(
            || app(history.clone()),
            |fresh| frame(&mut terminal, fresh),
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
