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
use cairn::tui::HISTORY_PAGE;
use cairn::tui::action::Action;
use cairn::tui::app::{App, AppInit};
use cairn::tui::update::update;
use cairn::tui::view;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

#[path = "../tests/common/history/mod.rs"]
mod history;

const MESSAGES: usize = 5_000;
const SES: &str = "ses_bench";
const NOW: Millis = 1_763_780_000_000;

/// `MESSAGES` messages: questions answered by a `cargo test` card and a
/// Markdown finding.
fn long_session() -> Vec<MessageWithParts> {
    let mut out = Vec::with_capacity(MESSAGES);
    for n in 0..MESSAGES / 2 {
        let user = history::user(
            SES,
            &format!("question {n}: why does the parser fail on empty input?"),
        );
        let mut assistant = history::assistant(SES, &user.message.id, FinishReason::Stop);
        history::push(
            &mut assistant,
            history::tool(
                format!("call_{n}"),
                "bash",
                json!({ "command": "cargo test" }),
                "running 12 tests\ntest result: ok. 12 passed",
            ),
        );
        history::push(
            &mut assistant,
            history::text(format!(
                "## Finding {n}\n\nThe **lexer** returns `None` on empty input, so:\n\n- check `len()` first\n- add a test\n\n```rust\nif input.is_empty() {{\n    return Ok(Vec::new());\n}}\n```\n"
            )),
        );
        out.push(user);
        out.push(assistant);
    }
    out
}

fn app(history: Vec<MessageWithParts>) -> App {
    app_with_older(history, false)
}

/// An App holding `history`, the newest messages of a longer session when
/// `has_older`.
fn app_with_older(history: Vec<MessageWithParts>, has_older: bool) -> App {
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
        has_older,
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
    let history = long_session();
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
    let original = streaming.timeline.messages().last().expect("history").parts[1].clone();
    let part_id = original.id.clone();
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

/// Scrolling a paged session from the bottom to the top, a page (PageUp) per
/// frame; the older pages the App asks for are handed to it between frames
/// as the runner does (their store read runs off the UI thread and is not
/// counted). Per frame: target under 8 ms.
fn scroll(c: &mut Criterion) {
    let history = long_session();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    let paged = || app_with_older(history[history.len() - HISTORY_PAGE..].to_vec(), true);
    let older_page = |app: &App| {
        let first = app.timeline.older_than()?.to_string();
        let end = history.partition_point(|m| m.message.id < first);
        Some(history[end.saturating_sub(HISTORY_PAGE)..end].to_vec())
    };
    c.bench_function("frame_scrolling_to_the_top_of_5000_paged_messages", |b| {
        b.iter_custom(|frames| {
            let mut app = paged();
            let mut drawing = std::time::Duration::ZERO;
            for _ in 0..frames {
                let started = std::time::Instant::now();
                update(&mut app, Action::PageUp);
                frame(&mut terminal, &mut app);
                drawing += started.elapsed();
                if app.older_wanted().is_some() {
                    match older_page(&app) {
                        Some(page) => {
                            let has_older = page.len() == HISTORY_PAGE;
                            app.older_loaded(page, has_older);
                        }
                        None => app = paged(),
                    }
                }
                if app.timeline.older_than().is_none()
                    && app.scroll.anchor == Some(cairn::tui::scroll::Anchor { block: 0, line: 0 })
                {
                    app = paged();
                }
            }
            drawing
        })
    });
}

/// Issue 15: the 5,000-message session whose newest step is a running
/// `task` call. `subtask_card_live`: one child event (a tool of the child
/// starting) folded into the card's summary, then a frame. `open_and_leave`:
/// opening the child (its 200 stored messages handed over as the runner
/// does, the store read not counted), a frame of it, going back, a frame of
/// the parent at the same place. Per frame: target under 4 ms.
fn subtask(c: &mut Criterion) {
    const CHILD: &str = "ses_child";
    let mut history = long_session();
    let user = history::user(SES, "delegate the search");
    let mut parent = history::assistant(SES, &user.message.id, FinishReason::ToolCalls);
    let task =
        json!({ "description": "find the parser", "prompt": "look", "subagent_type": "explore" });
    let mut part = Part::new(
        &parent.message,
        PartKind::Tool(ToolPart {
            call_id: "call_task".into(),
            tool: "task".into(),
            state: ToolState::Running {
                input: task,
                title: Some("find the parser".into()),
                metadata: Some(json!({ "session_id": CHILD, "agent": "explore" })),
                time: ToolTime {
                    start: NOW,
                    end: None,
                    compacted: None,
                },
            },
        }),
    );
    part.session_id = SES.into();
    parent.parts.push(part);
    history.push(user);
    history.push(parent);
    let child_history: Vec<MessageWithParts> = long_session()[..HISTORY_PAGE]
        .iter()
        .cloned()
        .map(|mut m| {
            m.message.session_id = CHILD.into();
            m
        })
        .collect();
    let child_message = child_history[1].message.clone();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");

    let mut live = app(history.clone());
    frame(&mut terminal, &mut live);
    let mut n = 0u64;
    c.bench_function("frame_5000_messages_subtask_card_live", |b| {
        b.iter(|| {
            n += 1;
            let mut event = Part::new(
                &child_message,
                PartKind::Tool(ToolPart {
                    call_id: format!("call_{n}"),
                    tool: "grep".into(),
                    state: ToolState::Running {
                        input: json!({ "pattern": format!("fn parse_{n}") }),
                        title: None,
                        metadata: None,
                        time: ToolTime {
                            start: NOW,
                            end: None,
                            compacted: None,
                        },
                    },
                }),
            );
            event.session_id = CHILD.into();
            live.apply_event(&cairn::bus::Event::PartUpdated {
                part: std::sync::Arc::new(event),
            });
            frame(&mut terminal, black_box(&mut live))
        })
    });

    let mut switching = app(history);
    frame(&mut terminal, &mut switching);
    c.bench_function("open_child_of_200_messages_and_leave_two_frames", |b| {
        b.iter_batched(
            || child_history.clone(),
            |page| {
                switching.open_child(CHILD);
                switching.child_loaded(CHILD, page);
                frame(&mut terminal, &mut switching);
                switching.leave_child();
                frame(&mut terminal, &mut switching);
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench, scroll, subtask);
criterion_main!(benches);
