//! The working state a compaction carries (issue #29): the time to build it
//! from a 1,000-message session's records, and the tokens it adds at each
//! window size (printed once).
//!
//! Run: `cargo bench --bench working_state`

use std::hint::black_box;
use std::path::Path;

use cairn::context::compaction::working_state::{Budget, FileText, build, files_to_read};
use cairn::message::{FinishReason, MessageWithParts, PartKind, PatchFile, PatchPart, ToolState};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

#[path = "../tests/common/history/mod.rs"]
mod history;

const SES: &str = "ses";
const ROOT: &str = "/project";

/// 500 turns: each a user message and an answer that reads, edits, writes
/// or keeps its todo list, with a patch for every change; a skill loaded
/// early. The records a compaction reads, 1,000 messages.
fn session() -> Vec<MessageWithParts> {
    let mut messages = Vec::new();
    for turn in 0..500 {
        let user = history::user(
            SES,
            &format!(
                "Turn {turn}: fix the handling of case {turn} in module m{}, keep the API stable.",
                turn % 40
            ),
        );
        let mut answer = history::assistant(SES, &user.message.id, FinishReason::Stop);
        let path = format!("src/m{:02}.rs", turn % 40);
        let (tool, input) = match turn % 4 {
            0 => ("read", json!({ "path": path })),
            1 => ("edit", json!({ "path": path })),
            2 => ("write", json!({ "path": path })),
            _ => (
                "todowrite",
                json!({ "todos": (0..8).map(|i| json!({"content": format!("item {i} of turn {turn}"), "status": if i < 4 { "completed" } else { "pending" }})).collect::<Vec<_>>() }),
            ),
        };
        history::push(
            &mut answer,
            history::tool(format!("call_{turn}"), tool, input, "done"),
        );
        if turn == 3 {
            history::push(
                &mut answer,
                history::tool(
                    "call_skill",
                    "skill",
                    json!({"name": "style"}),
                    "Prefer iterators. ".repeat(40),
                ),
            );
        }
        if matches!(turn % 4, 1 | 2) {
            history::push(
                &mut answer,
                PartKind::Patch(PatchPart {
                    hash: "h".into(),
                    files: vec![path.clone()],
                    after: None,
                    kept: Vec::new(),
                    unrestorable: Vec::new(),
                    refreshed: Vec::new(),
                    changes: vec![PatchFile {
                        path,
                        kind: "modified".into(),
                        added: 3,
                        removed: 1,
                        by: tool.into(),
                    }],
                }),
            );
        }
        messages.push(user);
        messages.push(answer);
    }
    messages
}

fn texts(paths: &[String]) -> Vec<FileText> {
    paths
        .iter()
        .map(|p| FileText {
            path: p.clone(),
            text: Some(
                (0..200)
                    .map(|l| format!("    let value_{l} = compute({l});\n"))
                    .collect(),
            ),
            cut_at: None,
        })
        .collect()
}

/// (window, usable) as `context::usable` gives them for an unknown output limit.
const WINDOWS: [(&str, u64); 4] = [
    ("8k", 6_827),
    ("32k", 27_307),
    ("128k", 106_667),
    ("200k", 168_000),
];

fn bench(c: &mut Criterion) {
    let records = session();
    assert_eq!(records.len(), 1_000);
    assert!(records.iter().any(|m| m.parts.iter().any(
        |p| matches!(&p.kind, PartKind::Tool(t) if matches!(t.state, ToolState::Completed { .. }))
    )));
    let root = Path::new(ROOT);
    let files = texts(&files_to_read(&records, root));
    let verbatim_from = records[996].message.id.clone();
    eprintln!("working state after a compaction of a 1,000-message session:");
    for (name, usable) in WINDOWS {
        let state = build(
            &records,
            root,
            Some(&verbatim_from),
            &files,
            Budget::for_usable(usable),
        );
        eprintln!(
            "  {name:>4} window: budget {:>6}, carried {:>6} tokens ({} messages, {} omitted, {} files changed, {} files' text, {} todos)",
            Budget::for_usable(usable).total,
            state.carried.tokens,
            state.carried.user_messages,
            state.carried.omitted_user_messages,
            state.carried.changed_files,
            state.carried.file_texts,
            state.carried.todos,
        );
    }
    for (name, usable) in [WINDOWS[0], WINDOWS[3]] {
        c.bench_function(
            &format!("working state, 1,000 messages, {name} window"),
            |b| {
                b.iter(|| {
                    let paths = files_to_read(black_box(&records), root);
                    black_box(build(
                        &records,
                        root,
                        Some(&verbatim_from),
                        &texts(&paths),
                        Budget::for_usable(usable),
                    ))
                })
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
