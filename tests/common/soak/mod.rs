//! The soak (issue 7): a long scripted session run at full speed through the
//! real App, with a model server that answers from the request itself and
//! checks every request it receives. Shared by tests/hardening_soak.rs (short,
//! for CI) and benches/soak.rs (hundreds of steps, figures).
//!
//! The server keeps counters only (no recorded bodies), so the process's
//! memory is the App's. Each user turn is read -> bash -> grep -> a long
//! Markdown answer; usage is a quarter of the request's size, so the context
//! grows as it would and the loop prunes and compacts on its own.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn::app::{App, SessionChoice};
use cairn::permission::Mode;
use serde_json::{Value, json};

use crate::support::{ScriptedResponse, ScriptedServer};

/// What the server saw, shared with the driver.
#[derive(Default)]
pub struct Seen {
    pub requests: AtomicUsize,
    pub summaries: AtomicUsize,
    /// Requests without tools that are not summaries (titles).
    pub other: AtomicUsize,
    /// Requests carrying at least one cleared (pruned) tool result.
    pub pruned_requests: AtomicUsize,
    pub largest_request: AtomicUsize,
    /// Each broken pairing, described (empty when the invariant held).
    pub violations: Mutex<Vec<String>>,
}

pub struct SoakServer {
    pub url: String,
    pub seen: Arc<Seen>,
    _server: ScriptedServer,
}

impl SoakServer {
    pub async fn start() -> Self {
        let seen = Arc::new(Seen::default());
        let server = ScriptedServer::answering({
            let seen = Arc::clone(&seen);
            move |request| reply(&request.body, &seen)
        })
        .await;
        Self {
            url: server.url(),
            seen,
            _server: server,
        }
    }
}

/// The model's reply to one request: what the request shows of the turn
/// decides the next tool or the answer; the counters record what was seen.
fn reply(body: &[u8], seen: &Seen) -> ScriptedResponse {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return ScriptedResponse::json(400, r#"{"error":{"message":"the body is not JSON"}}"#);
    };
    seen.requests.fetch_add(1, Ordering::Relaxed);
    seen.largest_request
        .fetch_max(body.len(), Ordering::Relaxed);
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let index = seen.requests.load(Ordering::Relaxed);
    for violation in pairing_violations(&messages) {
        seen.violations
            .lock()
            .expect("violations lock")
            .push(format!("request {index}: {violation}"));
    }
    if messages
        .iter()
        .any(|m| m["role"] == "tool" && text_of(m) == cairn::context::view::CLEARED_TOOL_RESULT)
    {
        seen.pruned_requests.fetch_add(1, Ordering::Relaxed);
    }
    let prompt_tokens = (body.len() / 4) as u64;
    let is_summary = messages.first().is_some_and(|m| {
        m["role"] == "system" && text_of(m) == cairn::context::compaction::SYSTEM_PROMPT
    });
    let sse = if is_summary {
        seen.summaries.fetch_add(1, Ordering::Relaxed);
        text_stream(&summary(index), prompt_tokens)
    } else if request.get("tools").is_none() {
        seen.other.fetch_add(1, Ordering::Relaxed);
        text_stream("Soak session", prompt_tokens)
    } else {
        match results_since_user(&messages) {
            0 => tool_stream(index, "read", json!({ "path": "module.rs" }), prompt_tokens),
            1 => tool_stream(
                index,
                "bash",
                json!({ "command": "seq -f 'line %g of the build log' 1 600", "description": "print the log" }),
                prompt_tokens,
            ),
            2 => tool_stream(
                index,
                "grep",
                json!({ "pattern": "fn step_" }),
                prompt_tokens,
            ),
            _ => text_stream(&answer(index), prompt_tokens),
        }
    };
    ScriptedResponse::sse().chunk(sse)
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The pairing invariant on the wire: every assistant tool call is answered
/// by exactly one tool message right after it, and no tool message answers
/// anything else.
pub fn pairing_violations(messages: &[Value]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or("").to_string();
            match open.iter().position(|call| *call == id) {
                Some(found) => {
                    open.remove(found);
                }
                None => violations.push(format!(
                    "message {at}: a result for `{id}`, which no open call made"
                )),
            }
            continue;
        }
        if !open.is_empty() {
            violations.push(format!(
                "message {at} ({role}): calls {open:?} were never answered"
            ));
            open.clear();
        }
        if let Some(calls) = message["tool_calls"].as_array() {
            open = calls
                .iter()
                .filter_map(|call| call["id"].as_str().map(str::to_string))
                .collect();
        }
    }
    if !open.is_empty() {
        violations.push(format!("the request ends with calls {open:?} unanswered"));
    }
    violations
}

/// Tool results after the last user message.
fn results_since_user(messages: &[Value]) -> usize {
    messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count()
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-soak", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }]
    });
    format!("data: {body}\n\n")
}

fn usage(prompt: u64, completion: u64) -> String {
    let body = json!({
        "id": "chatcmpl-soak", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion }
    });
    format!("data: {body}\n\ndata: [DONE]\n\n")
}

fn text_stream(text: &str, prompt_tokens: u64) -> String {
    let mut sse = chunk(json!({"role": "assistant", "content": ""}), None);
    for piece in text.as_bytes().chunks(400) {
        sse.push_str(&chunk(
            json!({ "content": String::from_utf8_lossy(piece) }),
            None,
        ));
    }
    sse.push_str(&chunk(json!({}), Some("stop")));
    sse.push_str(&usage(prompt_tokens, (text.len() / 4) as u64));
    sse
}

fn tool_stream(index: usize, name: &str, arguments: Value, prompt_tokens: u64) -> String {
    let id = format!("call_{index}_{name}");
    let mut sse = chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [
        {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
        None,
    );
    sse.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments.to_string()}}]}),
        None,
    ));
    sse.push_str(&chunk(json!({}), Some("tool_calls")));
    sse.push_str(&usage(prompt_tokens, 40));
    sse
}

/// A long Markdown answer (about 12 KB), different at every step.
fn answer(index: usize) -> String {
    let mut text = format!("## Step {index} done\n\nWhat changed and why:\n\n");
    for line in 0..120 {
        text.push_str(&format!(
            "- item {line} of step {index}: the loop read the module, ran the log and searched `step_{line}`\n"
        ));
    }
    text
}

fn summary(index: usize) -> String {
    format!(
        "## Goal\n- keep soaking (summary written at request {index})\n## Accomplished\n- many steps\n## Relevant files\n- module.rs\n"
    )
}

/// A ~24 KB Rust-looking file for the read and grep steps.
pub fn write_project_files(root: &Path) {
    let mut module = String::from("//! A module the soak reads again and again.\n\n");
    for n in 0..400 {
        module.push_str(&format!(
            "fn step_{n}() -> usize {{\n    {n} * 2 // doubled\n}}\n"
        ));
    }
    std::fs::write(root.join("module.rs"), module).expect("write module.rs");
}

/// One turn's measurements.
pub struct Turn {
    pub elapsed: Duration,
    pub steps: usize,
    pub rss_kib: u64,
    /// Compaction summaries written before this turn started.
    pub summaries_before: usize,
}

/// What a soak run did.
pub struct Report {
    pub turns: Vec<Turn>,
    pub requests: usize,
    pub summaries: usize,
    pub pruned_requests: usize,
    pub largest_request: usize,
    pub violations: Vec<String>,
    pub exit_codes: Vec<u8>,
    pub peak_rss_kib: u64,
}

impl Report {
    /// Mean time per step over a range of turns.
    #[allow(dead_code)] // the soak bench reports it; the soak test checks cycles instead
    pub fn step_time(&self, turns: std::ops::Range<usize>) -> Duration {
        let picked = &self.turns[turns];
        let steps: usize = picked.iter().map(|t| t.steps.max(1)).sum();
        let total: Duration = picked.iter().map(|t| t.elapsed).sum();
        total / u32::try_from(steps).expect("step count fits u32")
    }

    /// Mean time per step of each complete compaction cycle (the turns from
    /// one summary to the next), in order. Each cycle grows the context from
    /// small to full, so cycles compare like with like: a later cycle being
    /// slower means the session's age costs time.
    pub fn cycle_step_times(&self) -> Vec<Duration> {
        (0..self.summaries)
            .filter_map(|cycle| {
                let turns: Vec<&Turn> = self
                    .turns
                    .iter()
                    .filter(|t| t.summaries_before == cycle)
                    .collect();
                let steps: usize = turns.iter().map(|t| t.steps).sum();
                let total: Duration = turns.iter().map(|t| t.elapsed).sum();
                u32::try_from(steps)
                    .ok()
                    .filter(|s| *s > 0)
                    .map(|s| total / s)
            })
            .collect()
    }
}

pub fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// When a run may stop early: once this many compaction summaries and
/// requests with pruned results were seen (`None`: run every turn).
#[derive(Debug, Clone, Copy)]
pub struct Enough {
    pub summaries: usize,
    pub pruned_requests: usize,
}

/// Runs up to `turns` user turns through a real App whose window is
/// `context` tokens (`output` kept for the answer); returns what happened.
pub async fn run(turns: usize, context: u64, output: u64, enough: Option<Enough>) -> Report {
    let server = SoakServer::start().await;
    let project = tempfile::tempdir().expect("project dir");
    std::fs::create_dir(project.path().join(".git")).expect("mark as a git repo");
    write_project_files(project.path());
    let data = tempfile::tempdir().expect("data dir");
    let mut config = cairn::config::Config {
        model: Some(cairn::message::ModelRef::parse("scripted/test-model").expect("model")),
        yolo: true,
        ..Default::default()
    };
    let mut provider = cairn::config::ProviderConfig {
        wire: Some(cairn::config::Wire::OpenAi),
        base_url: Some(cairn::config::NonEmpty::new(format!("{}/v1", server.url)).expect("url")),
        ..Default::default()
    };
    provider.models.insert(
        "test-model".into(),
        cairn::config::ModelConfig {
            context: Some(context),
            output: Some(output),
            ..Default::default()
        },
    );
    config.provider.insert("scripted".into(), provider);
    let app = App::open(config, project.path().to_path_buf(), data.path()).expect("open app");
    let (_session, handle) = app
        .start(SessionChoice::New, Mode::Headless)
        .await
        .expect("start session");
    let mut report = Report {
        turns: Vec::with_capacity(turns),
        requests: 0,
        summaries: 0,
        pruned_requests: 0,
        largest_request: 0,
        violations: Vec::new(),
        exit_codes: Vec::new(),
        peak_rss_kib: 0,
    };
    let mut out = Vec::new();
    let mut err = Vec::new();
    for turn in 0..turns {
        let before = server.seen.requests.load(Ordering::Relaxed);
        let summaries_before = server.seen.summaries.load(Ordering::Relaxed);
        let started = Instant::now();
        out.clear();
        err.clear();
        let outcome = tokio::time::timeout(
            Duration::from_secs(60),
            cairn::headless::run(
                &handle,
                &app.bus,
                &app.store,
                format!("turn {turn}: read the module, run the log, search, report"),
                cairn::headless::Format::Text,
                &mut out,
                &mut err,
            ),
        )
        .await
        .expect("a turn finishes within 60 s")
        .expect("writes to memory");
        report.exit_codes.push(outcome.exit_code());
        report.turns.push(Turn {
            elapsed: started.elapsed(),
            steps: server.seen.requests.load(Ordering::Relaxed) - before,
            rss_kib: rss_kib("VmRSS:"),
            summaries_before,
        });
        if (turn + 1) % 100 == 0 {
            // Progress of a long soak, so a run stopped early still says
            // how its step time and memory went.
            let last = report.turns.len() - 100..report.turns.len();
            eprintln!(
                "soak progress: {} turns, {:.1} ms per step over the last 100, RSS {} KiB",
                turn + 1,
                report.step_time(last).as_secs_f64() * 1000.0,
                rss_kib("VmRSS:")
            );
        }
        if enough.is_some_and(|enough| {
            server.seen.summaries.load(Ordering::Relaxed) >= enough.summaries
                && server.seen.pruned_requests.load(Ordering::Relaxed) >= enough.pruned_requests
        }) {
            break;
        }
    }
    let seen = &server.seen;
    report.requests = seen.requests.load(Ordering::Relaxed);
    report.summaries = seen.summaries.load(Ordering::Relaxed);
    report.pruned_requests = seen.pruned_requests.load(Ordering::Relaxed);
    report.largest_request = seen.largest_request.load(Ordering::Relaxed);
    report.violations = seen.violations.lock().expect("violations lock").clone();
    report.peak_rss_kib = rss_kib("VmHWM:");
    report
}
