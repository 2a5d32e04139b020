//! Decoding throughput: a recorded-looking stream of 100,000 chunks in each
//! wire format (Chat Completions, Anthropic Messages, Responses), fed in 1,400-byte network reads through the SSE decoder and
//! the wire decoder. Reports chunks/s (`elements`) and MB/s (`bytes`).
//!
//! Run: `cargo bench --bench decode`. Target: over 1,000,000 chunks/s.

use std::hint::black_box;

use cairn::provider::anthropic::AnthropicDecoder;
use cairn::provider::openai::OpenAiDecoder;
use cairn::provider::responses::ResponsesDecoder;
use cairn::provider::sse::SseDecoder;
use cairn::provider::{StreamEvent, WireDecoder};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const CHUNKS: usize = 100_000;

/// A typical TCP read size for a streamed response.
const READ_SIZE: usize = 1_400;

/// Token-sized words, some multi-byte, as models stream them.
const WORDS: [&str; 8] = [
    " the",
    " function",
    " returns",
    " `Result`",
    " 世界",
    "\n",
    " é",
    " ok",
];

/// OpenAI chunks shaped like llama-server's (id, created, model, fingerprint),
/// a tool call every 500 chunks, then finish, usage and `[DONE]`.
fn openai_stream() -> Vec<u8> {
    let mut body = String::new();
    for index in 0..CHUNKS - 3 {
        let delta = if index % 500 == 499 {
            json!({"tool_calls": [{"index": 0, "id": format!("call_{index}"), "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]})
        } else {
            json!({"content": WORDS[index % WORDS.len()]})
        };
        let chunk = json!({"choices": [{"finish_reason": null, "index": 0, "delta": delta}],
            "created": 1795313979, "id": "chatcmpl-KNVkohRoKjw7nmQ3dkqiLq2Uk6LJLRnV", "model": "smollm2",
            "system_fingerprint": "b0-unknown", "object": "chat.completion.chunk"});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [{"finish_reason": "stop", "index": 0, "delta": {}}]})
    ));
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 42, "completion_tokens": 99_997, "prompt_tokens_details": {"cached_tokens": 7}}})
    ));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Anthropic events: one text block of deltas with pings, then the end.
fn anthropic_stream() -> Vec<u8> {
    let mut body = String::new();
    let mut push = |name: &str, data: serde_json::Value| {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"))
    };
    push(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5", "usage": {"input_tokens": 12, "cache_read_input_tokens": 5000, "output_tokens": 1}}}),
    );
    push(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for index in 0..CHUNKS - 5 {
        if index % 1000 == 999 {
            push("ping", json!({"type": "ping"}));
        } else {
            push(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": WORDS[index % WORDS.len()]}}),
            );
        }
    }
    push(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    push(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 99_995}}),
    );
    push("message_stop", json!({"type": "message_stop"}));
    body.into_bytes()
}

/// Responses events as OpenAI sends them (`event:` line, `sequence_number`,
/// item and content indexes): text deltas with a function call every 500
/// events, then `response.completed` with usage.
fn responses_stream() -> Vec<u8> {
    let mut body = String::new();
    let mut sequence = 0;
    let mut push = |data: serde_json::Value| {
        let mut data = data;
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        body.push_str(&format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or("")
        ));
    };
    push(
        json!({"type": "response.created", "response": {"id": "resp_01", "object": "response", "status": "in_progress", "model": "gpt-5-codex", "output": []}}),
    );
    for index in 0..CHUNKS - 2 {
        if index % 500 == 499 {
            let item = json!({"type": "function_call", "id": format!("fc_{index}"), "call_id": format!("call_{index}"), "name": "read", "arguments": "{\"path\":\"a.rs\"}", "status": "completed"});
            push(json!({"type": "response.output_item.done", "output_index": 1, "item": item}));
        } else if index % 500 == 498 {
            let item = json!({"type": "function_call", "id": format!("fc_{}", index + 1), "call_id": format!("call_{}", index + 1), "name": "read", "arguments": "", "status": "in_progress"});
            push(json!({"type": "response.output_item.added", "output_index": 1, "item": item}));
        } else {
            push(
                json!({"type": "response.output_text.delta", "item_id": "msg_01", "output_index": 0, "content_index": 0, "delta": WORDS[index % WORDS.len()], "logprobs": []}),
            );
        }
    }
    push(
        json!({"type": "response.completed", "response": {"id": "resp_01", "object": "response", "status": "completed",
        "usage": {"input_tokens": 42, "input_tokens_details": {"cached_tokens": 7}, "output_tokens": 99_997, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 100_039}}}),
    );
    body.into_bytes()
}

/// Decodes `bytes` fully; returns the number of events (kept alive for black_box).
fn decode(bytes: &[u8], mut decoder: impl WireDecoder) -> usize {
    let mut sse = SseDecoder::new();
    let mut sse_events = Vec::new();
    let mut events: Vec<StreamEvent> = Vec::new();
    let mut count = 0;
    for read in bytes.chunks(READ_SIZE) {
        sse.feed(read, &mut sse_events)
            .expect("the generated stream is valid SSE");
        for event in sse_events.drain(..) {
            decoder
                .decode(&event, &mut events)
                .expect("the generated stream is valid");
        }
        count += events.len();
        events.clear();
    }
    sse.finish(&mut sse_events).expect("valid SSE");
    decoder
        .finish(&mut events)
        .expect("the stream ends properly");
    assert!(decoder.is_done(), "the stream reached its end marker");
    count + events.len()
}

fn bench(criterion: &mut Criterion) {
    let streams = [
        ("openai", openai_stream()),
        ("anthropic", anthropic_stream()),
        ("responses", responses_stream()),
    ];
    for (name, bytes) in &streams {
        let run = |bytes: &[u8]| match *name {
            "openai" => decode(bytes, OpenAiDecoder::new()),
            "responses" => decode(bytes, ResponsesDecoder::new()),
            _ => decode(bytes, AnthropicDecoder::new()),
        };
        assert!(run(bytes) >= CHUNKS - 1_000, "{name}: every chunk decoded");
        let mut group = criterion.benchmark_group(format!("decode_{name}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(CHUNKS as u64));
        group.bench_function("chunks", |bencher| {
            bencher.iter(|| black_box(run(black_box(bytes))))
        });
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function("bytes", |bencher| {
            bencher.iter(|| black_box(run(black_box(bytes))))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
