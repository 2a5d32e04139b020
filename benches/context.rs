//! Context figures: token-count accuracy on a mixed English/Chinese/code corpus
//! (printed once), counting speed, and the per-step cost of assembling a
//! ~200,000-token session for the model with cached per-part counts.
//!
//! Run: `cargo bench --bench context`

use std::hint::black_box;

use cairn::context::view::{
    ModelViewOptions, ensure_tool_pairing, fill_part_tokens, order_for_model, part_tokens,
    to_model_messages,
};
use cairn::message::{FinishReason, MessageWithParts, ModelRef, PartKind, StepStartPart, Tokens};
use cairn::token::{count, estimate};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

#[path = "../tests/common/history/mod.rs"]
mod history;

const SES: &str = "ses";

const CORPUS: &[(&str, &str)] = &[
    (
        "english prose",
        include_str!("../tests/fixtures/token_corpus/english.md"),
    ),
    (
        "chinese prose",
        include_str!("../tests/fixtures/token_corpus/chinese.md"),
    ),
    (
        "chinese with code",
        include_str!("../tests/fixtures/token_corpus/chinese_with_code.md"),
    ),
    ("rust code", include_str!("../src/message.rs")),
];

fn print_accuracy() {
    let pct = |guess: usize, exact: usize| (guess as f64 - exact as f64) / exact as f64 * 100.0;
    let mut totals = (0, 0, 0);
    eprintln!("token-count accuracy vs tiktoken o200k_base (exact for OpenAI):");
    for (name, text) in CORPUS {
        let exact = count(text);
        let ours = estimate(text);
        let naive = (text.chars().count() as f64 / 4.0).round() as usize;
        totals = (totals.0 + exact, totals.1 + ours, totals.2 + naive);
        eprintln!(
            "  {name:>18}: exact {exact:>6}  estimate {:>+6.1}%  chars/4 {:>+6.1}%",
            pct(ours, exact),
            pct(naive, exact)
        );
    }
    eprintln!(
        "  {:>18}: exact {:>6}  estimate {:>+6.1}%  chars/4 {:>+6.1}%",
        "all",
        totals.0,
        pct(totals.1, totals.0),
        pct(totals.2, totals.0)
    );
}

fn model() -> ModelRef {
    ModelRef::new("anthropic", "claude-bench")
}

/// A session of user turns, each answered by a text and three tool calls
/// whose outputs are slices of the corpus, until about `target` tokens.
fn session(target: u64) -> Vec<MessageWithParts> {
    let mut messages = Vec::new();
    let mut total = 0u64;
    let mut turn = 0usize;
    while total < target {
        let mut user = history::user(
            SES,
            "请检查 src/message.rs 并修复失败的测试, then run cargo test again",
        );
        let mut assistant = history::assistant(SES, &user.message.id, FinishReason::Stop);
        history::push(
            &mut assistant,
            PartKind::StepStart(StepStartPart::default()),
        );
        history::push(
            &mut assistant,
            history::text("I will read the file, run the tests and look at the failures."),
        );
        for call in 0..3 {
            let (_, source) = CORPUS[(turn + call) % CORPUS.len()];
            let start = source
                .char_indices()
                .nth((turn * 97) % 500)
                .map_or(0, |(i, _)| i);
            let output: String = source[start..].chars().take(2_000).collect();
            history::push(
                &mut assistant,
                history::tool(
                    format!("call_{turn}_{call}"),
                    "read",
                    json!({"filePath": "src/message.rs", "offset": turn}),
                    output,
                ),
            );
        }
        history::push(
            &mut assistant,
            history::step_finish(FinishReason::Stop, Tokens::default()),
        );
        for m in [&mut user, &mut assistant] {
            fill_part_tokens(m.parts.iter_mut());
            total += m.parts.iter().map(|p| part_tokens(p).0).sum::<u64>();
        }
        messages.push(user);
        messages.push(assistant);
        turn += 1;
    }
    messages
}

fn benches(c: &mut Criterion) {
    print_accuracy();
    let all: String = CORPUS.iter().map(|(_, t)| *t).collect();
    c.bench_function("count_exact 35KB mixed corpus", |b| {
        b.iter(|| count(black_box(&all)))
    });
    c.bench_function("estimate 35KB mixed corpus", |b| {
        b.iter(|| estimate(black_box(&all)))
    });

    let history = session(200_000);
    let tokens: u64 = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .map(|p| part_tokens(p).0)
        .sum();
    eprintln!(
        "assembly session: {} messages, {tokens} tokens (cached per part)",
        history.len()
    );
    c.bench_function(
        "assemble 200k-token session (order + view + pairing + count)",
        |b| {
            b.iter(|| {
                let ordered = order_for_model(black_box(history.clone()));
                let mut messages =
                    to_model_messages(&ordered, &model(), ModelViewOptions::default());
                let repairs = ensure_tool_pairing(&mut messages);
                let used: u64 = ordered
                    .iter()
                    .flat_map(|m| m.parts.iter())
                    .map(|p| part_tokens(p).0)
                    .sum();
                black_box((messages.len(), repairs.len(), used))
            })
        },
    );
}

criterion_group!(context, benches);
criterion_main!(context);
