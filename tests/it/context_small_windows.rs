//! Small windows (issue 19): 20-turn tool-using sessions against a server
//! that behaves like llama-server with a 4k, 8k or 16k window. The server
//! counts prompts with its own (harsher than o200k) tokenizer, reports that
//! count as usage, rejects what does not fit with llama-server's overflow
//! error, and answers like a small agent: read a file, run a command, then
//! explain. Every request must fit; prune and compaction must both act.

use std::sync::{Arc, Mutex};

use cairn::config::Config;
use cairn::context::compaction::SYSTEM_PROMPT;
use cairn::message::{MessageWithParts, PartKind, ToolState};
use cairn::permission::Mode;
use serde_json::{Value, json};

use crate::scenario::{
    self, Scenario, message_text, messages_of, prompt_and_settle, text, tool_call,
};
use crate::support::{RecordedRequest, ScriptedResponse};

/// What the server saw of one request.
#[derive(Debug, Clone, Copy)]
struct Seen {
    prompt: u64,
    max_tokens: u64,
    summary: bool,
}

/// The server's chat template: each message's text (a tool call as its
/// name and arguments) behind a marker, then the tool definitions.
fn apply_template(body: &Value) -> String {
    let mut prompt = String::new();
    for message in messages_of(body) {
        prompt.push_str(MARKER);
        prompt.push_str(&message_text(&message));
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            prompt.push_str(call["function"]["name"].as_str().unwrap_or(""));
            prompt.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    if let Some(tools) = body.get("tools") {
        prompt.push_str(MARKER);
        prompt.push_str(&tools.to_string());
    }
    prompt
}

const MARKER: &str = "<|m|>";

/// The server's tokenizer: 20% more tokens than o200k for the same text
/// (the gap the issue measured for models whose tokenizer is not o200k),
/// and 5 tokens for each message marker.
fn tokenize(prompt: &str) -> u64 {
    let markers = prompt.matches(MARKER).count() as u64;
    let text = prompt.replace(MARKER, "");
    (cairn::token::count(&text) as f64 * 1.2).ceil() as u64 + 5 * markers
}

fn server_count(body: &Value) -> u64 {
    tokenize(&apply_template(body))
}

/// llama-server's `/apply-template` and `/tokenize`, which cairn asks for an
/// exact count before the first answer; `None` for the chat endpoint.
fn llama_server_endpoints(request: &RecordedRequest) -> Option<ScriptedResponse> {
    let answer = match request.path.as_str() {
        // What tells llama-server from other servers (asked first).
        "/props" => json!({"default_generation_settings": {"n_ctx": 8_192}, "total_slots": 1}),
        "/apply-template" => json!({ "prompt": apply_template(&request.json()) }),
        "/tokenize" => {
            let count = tokenize(request.json()["content"].as_str().unwrap_or(""));
            json!({ "tokens": vec![1; count as usize] })
        }
        _ => return None,
    };
    Some(ScriptedResponse::json(200, &answer.to_string()))
}

fn is_summary(body: &Value) -> bool {
    body.get("tools").is_none()
        && messages_of(body)
            .first()
            .is_some_and(|m| message_text(m) == SYSTEM_PROMPT)
}

/// llama-server's reply to a prompt longer than its window.
fn overflow(prompt: u64, window: u64) -> ScriptedResponse {
    let body = json!({"error": {"code": 400, "message": format!("request ({prompt} tokens) exceeds the available context size ({window} tokens), try increasing it"), "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": window}});
    ScriptedResponse::json(400, &body.to_string())
}

/// Words of prose, `n` of them.
fn prose(n: usize, seed: usize) -> String {
    const WORDS: [&str; 8] = [
        "the", "parser", "reads", "each", "line", "and", "checks", "totals",
    ];
    (0..n)
        .map(|i| WORDS[(i * 7 + seed) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A small agent: for a turn's task, read the file it names, run `wc` on it,
/// then explain (`answer_words` words). Summaries are `answer_words` long.
fn agent(
    window: u64,
    answer_words: usize,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> impl Fn(&RecordedRequest) -> ScriptedResponse {
    move |request| {
        if let Some(answer) = llama_server_endpoints(request) {
            return answer;
        }
        let body = request.json();
        let prompt = server_count(&body);
        let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
        let summary = is_summary(&body);
        seen.lock().unwrap().push(Seen {
            prompt,
            max_tokens,
            summary,
        });
        if prompt > window {
            return overflow(prompt, window);
        }
        if summary {
            return text(&format!("## Goal\n- {}", prose(answer_words, 1)), prompt);
        }
        let messages = messages_of(&body);
        let last_user = messages
            .iter()
            .rposition(|m| m["role"] == "user")
            .unwrap_or(0);
        let task = message_text(&messages[last_user]);
        let tools_since = messages[last_user..]
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        let file = task
            .split_whitespace()
            .map(|w| w.trim_end_matches('?'))
            .find(|w| w.ends_with(".txt"))
            .map(str::to_string);
        match (file, tools_since) {
            (Some(file), 0) => tool_call("r", "read", json!({ "path": file }), prompt),
            (Some(file), 1) => tool_call(
                "w",
                "bash",
                json!({ "command": format!("wc -l {file}"), "description": "count lines" }),
                prompt,
            ),
            _ => text(
                &format!("Done. {}", prose(answer_words, tools_since)),
                prompt,
            ),
        }
    }
}

fn window(config: &mut Config, context: u64) {
    let model = config
        .provider
        .get_mut("scripted")
        .and_then(|p| p.models.get_mut("test-model"))
        .expect("the scenario config has the scripted model");
    model.context = Some(context);
    // What cairn assumes for a probed local window: a quarter for output.
    model.output = Some(context / 4);
}

fn pruned_outputs(history: &[MessageWithParts]) -> usize {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter(|p| matches!(&p.kind, PartKind::Tool(t) if matches!(&t.state, ToolState::Completed { time, .. } if time.compacted.is_some())))
        .count()
}

/// What a 20-turn session at `context` tokens did.
#[derive(Debug)]
struct Outcome {
    requests: Vec<Seen>,
    summaries: usize,
    pruned: usize,
    first_compaction_turn: Option<usize>,
    answers: usize,
}

async fn twenty_turns(context: u64) -> Outcome {
    // File and answer sizes grow with the window, so each size is under the
    // same pressure: a file is ~1/12 of the window, an answer ~1/80.
    let file_bytes = context as usize / 3;
    let answer_words = (context / 100) as usize;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let scenario = Scenario::answering(agent(context, answer_words, seen.clone()), |c| {
        window(c, context)
    })
    .await;
    for turn in 1..=20 {
        let line = format!("{} {turn}\n", prose(6, turn));
        let body = line.repeat(file_bytes / line.len());
        std::fs::write(scenario.path(&format!("f{turn}.txt")), body).expect("write");
    }
    let (session, handle) = scenario.session(Mode::Headless).await;
    let mut first_compaction_turn = None;
    for turn in 1..=20 {
        let watched = prompt_and_settle(
            &scenario,
            &handle,
            &format!("turn {turn}: how many lines in f{turn}.txt?"),
        )
        .await;
        assert!(
            watched.errors().is_empty(),
            "turn {turn}: {:?}",
            watched.errors()
        );
        let summaries = seen.lock().unwrap().iter().filter(|s| s.summary).count();
        if summaries > 0 && first_compaction_turn.is_none() {
            first_compaction_turn = Some(turn);
        }
    }
    let history = scenario.history(&session.id).await;
    for message in &history {
        if let Some(info) = message.message.as_assistant() {
            assert!(info.error.is_none(), "a failed step: {message:#?}");
        }
    }
    let answers = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter(|p| matches!(&p.kind, PartKind::Text(t) if t.text.starts_with("Done.")))
        .count();
    let requests = seen.lock().unwrap().clone();
    Outcome {
        summaries: requests.iter().filter(|s| s.summary).count(),
        requests,
        pruned: pruned_outputs(&history),
        first_compaction_turn,
        answers,
    }
}

fn assert_small_window_session(context: u64, outcome: &Outcome) {
    let prompts: Vec<u64> = outcome.requests.iter().map(|s| s.prompt).collect();
    eprintln!(
        "{context}: first compaction in turn {:?}, {} summaries, {} outputs pruned, prompts {prompts:?}",
        outcome.first_compaction_turn, outcome.summaries, outcome.pruned
    );
    for (i, seen) in outcome.requests.iter().enumerate() {
        assert!(
            seen.prompt + seen.max_tokens <= context,
            "request {i} does not fit {context}: {seen:?}"
        );
    }
    assert!(outcome.pruned > 0, "prune never acted: {outcome:?}");
    assert!(outcome.summaries > 0, "never compacted: {outcome:?}");
    assert!(
        outcome.answers >= 20,
        "every turn was answered: {outcome:?}"
    );
}

#[tokio::test]
async fn twenty_turns_fit_a_4k_window() {
    let outcome = twenty_turns(4_096).await;
    assert_small_window_session(4_096, &outcome);
}

#[tokio::test]
async fn twenty_turns_fit_an_8k_window() {
    let outcome = twenty_turns(8_192).await;
    assert_small_window_session(8_192, &outcome);
}

#[tokio::test]
async fn twenty_turns_fit_a_16k_window() {
    let outcome = twenty_turns(16_384).await;
    assert_small_window_session(16_384, &outcome);
}

#[tokio::test]
async fn a_2k_window_is_diagnosed_in_one_line_without_compacting() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let scenario = Scenario::answering(agent(2_048, 10, seen.clone()), |c| window(c, 2_048)).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "what does this project do?").await;
    assert_eq!(code, 1, "{err}");
    let diagnosis: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("this model's window of 2,048 tokens is smaller than"))
        .collect();
    assert_eq!(diagnosis.len(), 1, "{err}");
    eprintln!("{}", diagnosis[0]);
    assert!(
        diagnosis[0].contains("cairn's smallest prompt of "),
        "{err}"
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
    let history = scenario.history(&session.id).await;
    assert!(
        history.iter().all(|m| m.compaction().is_none()),
        "no compaction"
    );
    assert!(
        history
            .iter()
            .all(|m| m.message.as_assistant().is_none_or(|a| !a.summary))
    );
}

#[tokio::test]
async fn the_lean_prompt_is_used_below_the_configured_window_only() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(Vec::new()));
    for (context, lean) in [(8_192, true), (16_384, false)] {
        let bodies = seen.clone();
        let scenario = Scenario::answering(
            move |request| {
                if request.method == "GET" {
                    // Asked which server it is: none in particular.
                    return ScriptedResponse::json(404, "{}");
                }
                bodies.lock().unwrap().push(request.json());
                text("ok", 100)
            },
            |c| window(c, context),
        )
        .await;
        let (_session, handle) = scenario.session(Mode::Headless).await;
        let (code, _, err) = scenario.run(&handle, "hi").await;
        assert_eq!(code, 0, "{err}");
        let body = seen.lock().unwrap().pop().expect("a request");
        let names: Vec<&str> = body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(names.contains(&"todowrite"), !lean, "{context}: {names:?}");
        let system = message_text(&messages_of(&body)[0]);
        assert_eq!(system.contains("# How to work"), !lean, "{context}");
        let max_tokens = body["max_tokens"].as_u64().expect("max_tokens");
        assert_eq!(max_tokens, context / 6, "a sixth of the window");
    }
    let _ = scenario::MODEL;
}

#[tokio::test]
async fn before_the_first_answer_the_gauge_is_the_servers_own_count() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let scenario = Scenario::answering(agent(8_192, 10, seen.clone()), |c| window(c, 8_192)).await;
    let (_session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "what is in f1.txt?").await;
    let gauges = watched.request_gauges();
    let first = seen.lock().unwrap()[0];
    assert_eq!(gauges[0].used, first.prompt, "exact, from /tokenize");
    assert!(!gauges[0].estimated, "an exact count shows no ~");
}

#[tokio::test]
async fn without_a_server_tokenizer_the_first_gauge_is_marked_as_an_estimate() {
    let scenario = Scenario::answering(
        |request| match request.path.as_str() {
            "/v1/chat/completions" => text("ok", 700),
            _ => ScriptedResponse::json(404, r#"{"error":"not found"}"#),
        },
        |c| window(c, 8_192),
    )
    .await;
    let (_session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "hi").await;
    let gauges = watched.request_gauges();
    assert!(gauges[0].estimated, "not anchored: {gauges:?}");
}

#[tokio::test]
async fn json_output_shows_a_tool_calls_arguments_as_they_stream() {
    let scenario = Scenario::start(vec![
        tool_call(
            "c1",
            "bash",
            json!({ "command": "echo streamed-arguments", "description": "say it" }),
            900,
        ),
        text("Said it.", 950),
    ])
    .await;
    let (_session, handle) = scenario.session(Mode::Headless).await;
    let mut out = Vec::new();
    let mut err = Vec::new();
    let outcome = crate::support::within(
        std::time::Duration::from_secs(30),
        cairn::headless::run(
            &handle,
            &scenario.app.bus,
            &scenario.app.store,
            "run it".to_string(),
            cairn::headless::Format::Json,
            &mut out,
            &mut err,
        ),
    )
    .await
    .expect("writes to memory");
    assert_eq!(outcome.exit_code(), 0);
    let deltas: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["type"] == "part_delta" && e["field"] == "tool_input")
        .filter_map(|e| e["delta"].as_str().map(str::to_string))
        .collect();
    assert!(
        deltas.len() >= 2,
        "the arguments arrive in pieces: {deltas:?}"
    );
    let whole: Value = serde_json::from_str(&deltas.concat()).expect("the pieces make the JSON");
    assert_eq!(whole["command"], "echo streamed-arguments");
}

#[tokio::test]
async fn a_big_file_read_on_a_4k_window_is_cut_to_a_quarter_of_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(Vec::new()));
    let model = agent(4_096, 10, seen.clone());
    let kept = bodies.clone();
    let scenario = Scenario::answering(
        move |request| {
            if request.path == "/v1/chat/completions" {
                kept.lock().unwrap().push(request.json());
            }
            model(request)
        },
        |c| window(c, 4_096),
    )
    .await;
    let line = format!("{}\n", prose(8, 3));
    std::fs::write(scenario.path("big.txt"), line.repeat(40_000 / line.len())).expect("write");
    let (_session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "how many lines in big.txt?").await;
    assert!(watched.errors().is_empty(), "{:?}", watched.errors());
    let bodies = bodies.lock().unwrap();
    let read_result = bodies
        .iter()
        .flat_map(messages_of)
        .find(|m| m["role"] == "tool")
        .map(|m| message_text(&m))
        .expect("the read's result was sent");
    // A quarter of the usable 3,414 tokens at 3 bytes a token, plus the
    // note on where the full output is.
    assert!(read_result.len() < 2_560 + 600, "{}", read_result.len());
    for s in seen.lock().unwrap().iter() {
        assert!(s.prompt + s.max_tokens <= 4_096, "{s:?}");
    }
}

#[tokio::test]
async fn a_vllm_server_counts_the_first_request_with_its_chat_tokenize() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = agent(8_192, 10, seen.clone());
    let scenario = Scenario::answering(
        move |request| match request.path.as_str() {
            // vLLM: no /apply-template; /tokenize takes the chat itself.
            "/apply-template" | "/props" => ScriptedResponse::json(404, r#"{"detail":"Not Found"}"#),
            "/v1/models" => ScriptedResponse::json(
                200,
                r#"{"object":"list","data":[{"id":"test-model","object":"model","owned_by":"vllm"}]}"#,
            ),
            "/tokenize" => {
                let count = server_count(&request.json());
                let body = json!({"count": count, "max_model_len": 8_192, "tokens": vec![1; count as usize]});
                ScriptedResponse::json(200, &body.to_string())
            }
            _ => model(request),
        },
        |c| window(c, 8_192),
    )
    .await;
    let (_session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "what is in f1.txt?").await;
    let gauges = watched.request_gauges();
    let first = seen.lock().unwrap()[0];
    assert_eq!(
        gauges[0].used, first.prompt,
        "exact, from vLLM's /tokenize: {gauges:?}"
    );
    assert!(!gauges[0].estimated);
}
