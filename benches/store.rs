//! Store benchmarks on real SQLite files: bulk inserts (100,000 parts over
//! 10,000 messages), `read_view` of a 10,000-message session whose last
//! compaction point is 200 messages from the end (target < 5 ms; cold, warm,
//! warm with one part appended between reads, and the agent loop's kept read
//! brought up to date by `refresh_view`), and `list_sessions(1000)` over
//! 1,000 sessions (target < 20 ms).
//!
//! Run with `cargo bench --bench store`.

use std::time::{Duration, Instant};

use cairn::clock::now_millis;
use cairn::id;
use cairn::message::*;
use cairn::store::{LiveView, Store};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const MESSAGES: usize = 10_000;
const PARTS_PER_MESSAGE: usize = 10;
/// Messages from the compaction request to the newest one.
const CONTEXT_MESSAGES: usize = 200;
/// Messages written per transaction by the batched insert.
const BATCH: usize = 100;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn new_session(directory: &str) -> Session {
    let now = now_millis();
    Session {
        id: id::session_id(),
        title: "benchmark session".into(),
        directory: directory.into(),
        parent_id: None,
        time_created: now,
        time_updated: now,
        cost: 0.0,
        tokens: Tokens::default(),
    }
}

fn message(session: &Session, user: Option<&Message>, summary: bool) -> Message {
    let role = match user {
        None => Role::User(UserMessage {
            agent: "build".into(),
            model: ModelRef::new("anthropic", "claude-sonnet-4.5"),
            system: None,
        }),
        Some(parent) => Role::Assistant(AssistantMessage {
            parent_id: parent.id.clone(),
            agent: "build".into(),
            model: ModelRef::new("anthropic", "claude-sonnet-4.5"),
            path: MessagePath::default(),
            summary,
            finish: Some(FinishReason::Stop),
            error: None,
            tokens: Tokens::default(),
            cost: 0.01,
            time_completed: Some(now_millis()),
        }),
    };
    Message {
        id: id::message_id(),
        session_id: session.id.clone(),
        time_created: now_millis(),
        role,
    }
}

/// Ten parts of the mix an agent turn produces: steps, reasoning, text and
/// completed tool calls with a few hundred bytes of output each.
fn parts(message: &Message, compaction: bool) -> Vec<Part> {
    let text = |text: String| {
        PartKind::Text(TextPart {
            text,
            ..TextPart::default()
        })
    };
    let tool = |n: usize| {
        PartKind::Tool(ToolPart {
            call_id: format!("call_{n}"),
            tool: "read".into(),
            state: ToolState::Completed {
                input: json!({"filePath": format!("/repo/src/file{n}.rs")}),
                output: "fn main() { println!(\"hello\"); }\n".repeat(12),
                title: format!("src/file{n}.rs"),
                metadata: json!({"lines": 12}),
                time: ToolTime {
                    start: 1,
                    end: Some(2),
                    compacted: None,
                },
                attachments: Vec::new(),
            },
        })
    };
    let mut kinds = vec![
        PartKind::StepStart(StepStartPart::default()),
        PartKind::Reasoning(ReasoningPart {
            text: "Let me look at the files first.".into(),
            ..ReasoningPart::default()
        }),
        text("I will read the relevant files and fix the bug. ".repeat(4)),
    ];
    kinds.extend((0..5).map(tool));
    kinds.push(text("Done: the parser now handles empty input.".into()));
    kinds.push(if compaction {
        PartKind::Compaction(CompactionPart {
            auto: true,
            ..CompactionPart::default()
        })
    } else {
        PartKind::StepFinish(StepFinishPart {
            reason: FinishReason::Stop,
            tokens: Tokens {
                input: 1200,
                output: 300,
                ..Tokens::default()
            },
            cost: 0.002,
            snapshot: None,
        })
    });
    debug_assert_eq!(kinds.len(), PARTS_PER_MESSAGE);
    kinds
        .into_iter()
        .map(|kind| Part::new(message, kind))
        .collect()
}

/// `MESSAGES` alternating user/assistant messages; the completed compaction
/// point (request + summary) starts `CONTEXT_MESSAGES` from the end.
fn history(session: &Session) -> Vec<MessageWithParts> {
    let compaction_at = MESSAGES - CONTEXT_MESSAGES;
    let mut history = Vec::with_capacity(MESSAGES);
    let mut last_user: Option<Message> = None;
    for index in 0..MESSAGES {
        let is_user = index % 2 == 0;
        let message = if is_user {
            message(session, None, false)
        } else {
            message(session, last_user.as_ref(), index == compaction_at + 1)
        };
        let parts = parts(&message, index == compaction_at);
        if is_user {
            last_user = Some(message.clone());
        }
        history.push(MessageWithParts { message, parts });
    }
    history
}

async fn fill(store: &Store, history: &[MessageWithParts]) {
    for chunk in history.chunks(BATCH) {
        store.upsert_messages(chunk).await.expect("batch insert");
    }
}

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("cairn.db")).expect("open store")
}

fn insert(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("insert");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((MESSAGES * PARTS_PER_MESSAGE) as u64));
    group.bench_function("100k parts, 100 messages per transaction", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let dir = tempfile::tempdir().expect("temp dir");
                let store = open(&dir);
                let session = new_session("/repo");
                let history = history(&session);
                rt.block_on(store.create_session(&session))
                    .expect("session");
                let start = Instant::now();
                rt.block_on(fill(&store, &history));
                total += start.elapsed();
            }
            total
        })
    });
    group.bench_function("100k parts, one message + one part batch at a time", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let dir = tempfile::tempdir().expect("temp dir");
                let store = open(&dir);
                let session = new_session("/repo");
                let history = history(&session);
                rt.block_on(store.create_session(&session))
                    .expect("session");
                let start = Instant::now();
                rt.block_on(async {
                    for entry in &history {
                        store.upsert_message(&entry.message).await.expect("message");
                        store.upsert_parts(&entry.parts).await.expect("parts");
                    }
                });
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn read_view(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir);
    let session = new_session("/repo");
    let history = history(&session);
    rt.block_on(async {
        store.create_session(&session).await.expect("session");
        fill(&store, &history).await;
    });
    let context = rt.block_on(store.read_view(&session.id)).expect("read");
    assert_eq!(
        context.len(),
        CONTEXT_MESSAGES,
        "stops at the compaction point"
    );
    let newest = &history.last().expect("history is not empty").message;

    let mut group = c.benchmark_group("read_view 10k messages, point 200 from the end");
    // A handle that has never read the session: everything is decoded.
    group.bench_function("cold (new handle, first read)", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let cold = open(&dir);
                let start = Instant::now();
                rt.block_on(cold.read_view(&session.id)).expect("read");
                total += start.elapsed();
            }
            total
        })
    });
    group.bench_function("warm, nothing changed", |b| {
        b.iter(|| rt.block_on(store.read_view(&session.id)).expect("read"))
    });
    // The loop's case: the previous step added a part to the newest message.
    // The part is removed again after the timed read (untimed, raw SQL) so
    // that the newest message does not grow over thousands of iterations.
    group.bench_function("warm, one part appended since the last read", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let part = streamed_part(newest);
                rt.block_on(store.upsert_part(&part)).expect("append");
                let start = Instant::now();
                let context = rt.block_on(store.read_view(&session.id)).expect("read");
                total += start.elapsed();
                assert_eq!(
                    context.last().map(|m| m.parts.len()),
                    Some(PARTS_PER_MESSAGE + 1)
                );
                let id = part.id.clone();
                rt.block_on(store.call(move |connection| {
                    connection
                        .execute("DELETE FROM part WHERE id = ?1", [&id])
                        .map_err(|source| cairn::store::Error::Sqlite {
                            operation: "remove the appended part",
                            source,
                        })
                }))
                .expect("remove");
            }
            total
        })
    });
    // The agent loop's read: it keeps its previous read (`LiveView`) and
    // has the store bring it up to date, so unchanged messages are neither
    // decoded nor copied.
    let mut kept = Some(
        rt.block_on(store.refresh_view(LiveView::new(&session.id)))
            .expect("first kept read"),
    );
    let refresh = |kept: &mut Option<LiveView>| {
        let previous = kept
            .take()
            .expect("the kept read is put back after each refresh");
        let fresh = rt.block_on(store.refresh_view(previous)).expect("refresh");
        *kept = Some(fresh);
    };
    group.bench_function("kept read (refresh_view), nothing changed", |b| {
        b.iter(|| refresh(&mut kept))
    });
    // Parts are not removed again here: a raw delete is caught by the
    // refresh's row counts and makes it read everything again, which is not
    // the loop's case. The newest message grows instead, which a kept read
    // does not mind (it only touches the new part).
    group.bench_function("kept read (refresh_view), one part appended", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let part = streamed_part(newest);
                rt.block_on(store.upsert_part(&part)).expect("append");
                let start = Instant::now();
                refresh(&mut kept);
                total += start.elapsed();
            }
            total
        })
    });
    let kept = kept.expect("the kept read is back");
    let fresh = rt
        .block_on(open(&dir).read_view(&session.id))
        .expect("read");
    // Not assert_eq: a mismatch would print 200 messages.
    assert!(
        kept.messages() == fresh,
        "the kept read matches a fresh one"
    );
    group.finish();
}

/// A part the loop's previous step might have added to the newest message.
fn streamed_part(newest: &Message) -> Part {
    Part::new(
        newest,
        PartKind::Text(TextPart {
            text: "one more streamed answer. ".repeat(8),
            ..TextPart::default()
        }),
    )
}

fn list_sessions(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir);
    rt.block_on(async {
        for n in 0..1_000 {
            let session = new_session(&format!("/repo/{}", n % 20));
            store.create_session(&session).await.expect("session");
            let user = message(&session, None, false);
            let entry = MessageWithParts {
                parts: parts(&user, false),
                message: user,
            };
            store.upsert_messages(&[entry]).await.expect("message");
        }
    });
    assert_eq!(
        rt.block_on(store.list_sessions(1_000)).expect("list").len(),
        1_000
    );
    c.bench_function("list_sessions(1000) over 1000 sessions", |b| {
        b.iter(|| rt.block_on(store.list_sessions(1_000)).expect("list"))
    });
}

criterion_group!(benches, read_view, list_sessions, insert);
criterion_main!(benches);
