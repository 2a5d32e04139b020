//! Scenario helpers: a real `App` (SQLite, tools, permissions) in a temp
//! project, pointed at the scripted server, plus builders for OpenAI-format
//! streamed answers. Shared by the loop and context scenario tests.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn::app::{App, SessionChoice};
use cairn::bus::{Event, SessionStatus};
use cairn::config::{Config, ModelConfig, ProviderConfig, Wire};
use cairn::message::{MessageWithParts, ModelRef, Session};
use cairn::permission::Mode;
use cairn::session::command::Command;
use cairn::session::runtime::SessionHandle;
use serde_json::{Value, json};

use crate::support::{ScriptedResponse, ScriptedServer};

pub const MODEL: &str = "scripted/test-model";

pub struct Scenario {
    pub server: ScriptedServer,
    pub app: App,
    pub project: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

/// Config for a scripted OpenAI-compatible provider with a known window.
pub fn config(server_url: &str, context: u64, output: u64) -> Config {
    let mut config = Config {
        model: Some(ModelRef::parse(MODEL).expect("valid model")),
        yolo: true,
        ..Default::default()
    };
    let mut provider = ProviderConfig {
        wire: Some(Wire::OpenAi),
        base_url: Some(cairn::config::NonEmpty::new(format!("{server_url}/v1")).expect("url")),
        ..Default::default()
    };
    provider.models.insert(
        "test-model".into(),
        ModelConfig {
            context: Some(context),
            output: Some(output),
            ..Default::default()
        },
    );
    config.provider.insert("scripted".into(), provider);
    config
}

impl Scenario {
    pub async fn start(responses: Vec<ScriptedResponse>) -> Self {
        Self::with_config(responses, |_| {}).await
    }

    pub async fn with_config(
        responses: Vec<ScriptedResponse>,
        edit: impl FnOnce(&mut Config),
    ) -> Self {
        Self::around(ScriptedServer::start(responses).await, edit)
    }

    /// A scenario whose server answers each request with `responder(request)`
    /// (a model that reacts to what it is sent) and keeps no request.
    pub async fn answering(
        responder: impl Fn(&crate::support::RecordedRequest) -> ScriptedResponse + Send + Sync + 'static,
        edit: impl FnOnce(&mut Config),
    ) -> Self {
        Self::around(ScriptedServer::answering(responder).await, edit)
    }

    /// A fresh project and data dir whose config points at `server`.
    fn around(server: ScriptedServer, edit: impl FnOnce(&mut Config)) -> Self {
        let project = tempfile::tempdir().expect("project dir");
        std::fs::create_dir(project.path().join(".git")).expect("mark as git repo");
        let data = tempfile::tempdir().expect("data dir");
        let mut config = config(&server.url(), 200_000, 32_000);
        edit(&mut config);
        let app = App::open(config, project.path().to_path_buf(), data.path()).expect("open app");
        Self {
            server,
            app,
            project,
            data,
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.project.path().join(name)
    }

    pub async fn session(&self, mode: Mode) -> (Session, SessionHandle) {
        self.app
            .start(SessionChoice::New, mode)
            .await
            .expect("start session")
    }

    /// Runs one message headless to the end; returns (exit code, stdout, stderr).
    pub async fn run(&self, handle: &SessionHandle, message: &str) -> (u8, String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let outcome = tokio::time::timeout(
            Duration::from_secs(30),
            cairn::headless::run(
                handle,
                &self.app.bus,
                &self.app.store,
                message.to_string(),
                cairn::headless::Format::Text,
                &mut out,
                &mut err,
            ),
        )
        .await
        .expect("the run finishes within 30 s")
        .expect("writes to memory");
        (
            outcome.exit_code(),
            String::from_utf8_lossy(&out).into(),
            String::from_utf8_lossy(&err).into(),
        )
    }

    pub async fn history(&self, session_id: &str) -> Vec<MessageWithParts> {
        self.app
            .store
            .read_all(session_id)
            .await
            .expect("read session")
    }

    /// The JSON bodies the model received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.server.requests().iter().map(|r| r.json()).collect()
    }

    /// Records every bus event from now on (subscribe before sending).
    pub fn record(&self) -> Recorder {
        Recorder::start(&self.app.bus)
    }

    /// Polls the store until `done` holds for the session's history.
    pub async fn history_until(
        &self,
        session_id: &str,
        limit: Duration,
        done: impl Fn(&[MessageWithParts]) -> bool,
    ) -> Vec<MessageWithParts> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let history = self.history(session_id).await;
            if done(&history) {
                return history;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the history did not reach the expected state within {limit:?}: {history:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Sends a user message through the handle, as a front end does.
pub fn prompt(handle: &SessionHandle, text: &str) {
    assert!(
        handle.send(Command::Prompt {
            text: text.to_string(),
            agent: None,
            model: None,
            piped: false,
        }),
        "the session runtime is running"
    );
}

const LAGGED: &str = "recorder lagged by ";

/// Every bus event published since `start`, in order, gathered by a task.
pub struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Recorder {
    fn start(bus: &cairn::bus::Bus) -> Self {
        let mut receiver = bus.subscribe();
        let events = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let events = Arc::clone(&events);
            async move {
                loop {
                    match receiver.recv().await {
                        Ok(event) => events.lock().expect("events lock").push(event),
                        // A panic here would not fail the test: leave a mark `events` checks.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                            events.lock().expect("events lock").push(Event::Notice {
                                session_id: String::new(),
                                message: format!("{LAGGED}{missed}"),
                            })
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    }
                }
            }
        });
        Self { events, task }
    }

    pub fn events(&self) -> Vec<Event> {
        let events = self.events.lock().expect("events lock").clone();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::Notice { message, .. } if message.starts_with(LAGGED))),
            "the recorder missed events"
        );
        events
    }

    /// Waits until an event matching `found` was published; returns it.
    pub async fn wait_for(&self, limit: Duration, found: impl Fn(&Event) -> bool) -> Event {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(event) = self.events().into_iter().find(|e| found(e)) {
                return event;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no matching event within {limit:?}; saw: {:#?}",
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits for the session's `n`-th `Idle` status (1-based).
    pub async fn wait_idle(&self, session_id: &str, n: usize, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.idle_count(session_id) < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the session was not idle {n} time(s) within {limit:?}: {:?}",
                self.statuses(session_id)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn idle_count(&self, session_id: &str) -> usize {
        self.statuses(session_id)
            .iter()
            .filter(|s| **s == SessionStatus::Idle)
            .count()
    }

    /// The session's status changes, in order.
    pub fn statuses(&self, session_id: &str) -> Vec<SessionStatus> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Status {
                    session_id: id,
                    status,
                } if id == session_id => Some(status),
                _ => None,
            })
            .collect()
    }
}

pub fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }]
    });
    format!("data: {body}\n\n")
}

pub fn usage(prompt: u64, completion: u64) -> String {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion }
    });
    format!("data: {body}\n\n")
}

/// A streamed text answer in a few chunks, with usage.
pub fn text(answer: &str, prompt_tokens: u64) -> ScriptedResponse {
    let mut response =
        ScriptedResponse::sse().chunk(chunk(json!({"role": "assistant", "content": ""}), None));
    let words: Vec<&str> = answer.split_inclusive(' ').collect();
    for piece in words.chunks(3) {
        response = response.chunk(chunk(json!({ "content": piece.concat() }), None));
    }
    response
        .chunk(chunk(json!({}), Some("stop")))
        .chunk(usage(prompt_tokens, 20))
        .chunk("data: [DONE]\n\n")
}

/// A streamed text answer, one word a chunk, waiting `pause` before each word.
pub fn slow_text(answer: &str, prompt_tokens: u64, pause: Duration) -> ScriptedResponse {
    let mut response =
        ScriptedResponse::sse().chunk(chunk(json!({"role": "assistant", "content": ""}), None));
    for word in answer.split_inclusive(' ') {
        response = response
            .delay(pause)
            .chunk(chunk(json!({ "content": word }), None));
    }
    response
        .chunk(chunk(json!({}), Some("stop")))
        .chunk(usage(prompt_tokens, 20))
        .chunk("data: [DONE]\n\n")
}

/// Streams `partial` as text, then keeps the connection open and silent.
pub fn text_then_stall(partial: &str) -> ScriptedResponse {
    ScriptedResponse::sse()
        .chunk(chunk(json!({"role": "assistant", "content": ""}), None))
        .chunk(chunk(json!({ "content": partial }), None))
        .then_stall()
}

/// Some text, then one tool call, in one streamed answer.
pub fn text_then_tool_call(
    said: &str,
    id: &str,
    name: &str,
    arguments: Value,
    prompt_tokens: u64,
) -> ScriptedResponse {
    ScriptedResponse::sse()
        .chunk(chunk(json!({"role": "assistant", "content": said}), None))
        .chunk(chunk(json!({"tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}), None))
        .chunk(chunk(json!({}), Some("tool_calls")))
        .chunk(usage(prompt_tokens, 30))
        .chunk("data: [DONE]\n\n")
}

/// The tool parts of the session, in order.
pub fn tool_parts(history: &[MessageWithParts]) -> Vec<cairn::message::ToolPart> {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool().cloned())
        .collect()
}

/// One streamed tool call, arguments split across chunks, with usage.
pub fn tool_call(id: &str, name: &str, arguments: Value, prompt_tokens: u64) -> ScriptedResponse {
    let args = arguments.to_string();
    let (first, second) = args.split_at(args.len() / 2);
    ScriptedResponse::sse()
        .chunk(chunk(json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), None))
        .chunk(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": first}}]}), None))
        .chunk(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": second}}]}), None))
        .chunk(chunk(json!({}), Some("tool_calls")))
        .chunk(usage(prompt_tokens, 30))
        .chunk("data: [DONE]\n\n")
}

/// The text of every non-synthetic text part of the session's assistants.
pub fn assistant_text(history: &[MessageWithParts]) -> String {
    history
        .iter()
        .filter(|m| !m.message.is_user())
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            cairn::message::PartKind::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

// ---- Context-management helpers (tests/context_scenarios.rs, tests/context_shapes.rs) ----

/// Watches one session's events on the bus while commands run.
pub struct Watch {
    receiver: tokio::sync::broadcast::Receiver<cairn::bus::Event>,
    session_id: String,
    /// Every event of the session seen so far, in order.
    pub seen: Vec<cairn::bus::Event>,
}

/// Starts watching before a command is sent, so nothing is missed.
pub fn watch(scenario: &Scenario, session_id: &str) -> Watch {
    Watch {
        receiver: scenario.app.bus.subscribe(),
        session_id: session_id.to_string(),
        seen: Vec::new(),
    }
}

impl Watch {
    /// The next event of the session, or `None` after `quiet` without one.
    async fn next(&mut self, quiet: Duration) -> Option<cairn::bus::Event> {
        loop {
            match tokio::time::timeout(quiet, self.receiver.recv()).await {
                Err(_) => return None,
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return None,
                Ok(Ok(event)) if event.session_id() == self.session_id => {
                    self.seen.push(event.clone());
                    return Some(event);
                }
                Ok(Ok(_)) => continue,
            }
        }
    }

    /// Waits (at most 30 s) until an event matches `wanted`.
    pub async fn until(&mut self, wanted: impl Fn(&cairn::bus::Event) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(
                !left.is_zero(),
                "no matching event within 30 s: {:?}",
                self.seen
            );
            if let Some(event) = self.next(left).await
                && wanted(&event)
            {
                return;
            }
        }
    }

    /// Waits until the loop went busy, came back to idle, and stayed idle for
    /// 300 ms (the runtime restarts the loop once when a prompt was queued).
    pub async fn until_settled(&mut self) {
        use cairn::bus::{Event, SessionStatus};
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        // A status seen by an earlier `until` counts: the loop may already be busy.
        let mut busy = self
            .seen
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Status { status, .. } => Some(*status != SessionStatus::Idle),
                _ => None,
            })
            .unwrap_or(false);
        let mut idle = false;
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the session did not settle within 30 s: {:?}",
                self.seen
            );
            match self.next(Duration::from_millis(300)).await {
                Some(Event::Status { status, .. }) => {
                    idle = status == SessionStatus::Idle && busy;
                    busy |= status != SessionStatus::Idle;
                }
                Some(_) => {}
                None if idle => return,
                None => {}
            }
        }
    }

    pub fn notices(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|e| match e {
                cairn::bus::Event::Notice { message, .. } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn errors(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|e| match e {
                cairn::bus::Event::Error { message, .. } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    /// The gauges measured before requests: those published between the
    /// first step-start and the last step-finish seen. The gauge shown when a
    /// session opens and the one refreshed after a run ends are left out.
    pub fn request_gauges(&self) -> Vec<cairn::context::ContextGauge> {
        use cairn::message::PartKind;
        let is_step = |e: &cairn::bus::Event, finish: bool| match e {
            cairn::bus::Event::PartUpdated { part } => {
                if finish {
                    matches!(part.kind, PartKind::StepFinish(_))
                } else {
                    matches!(part.kind, PartKind::StepStart(_))
                }
            }
            _ => false,
        };
        let (Some(first_start), Some(last_finish)) = (
            self.seen.iter().position(|e| is_step(e, false)),
            self.seen.iter().rposition(|e| is_step(e, true)),
        ) else {
            return Vec::new();
        };
        // The gauge before the first request is published just before its step-start.
        let from = self.seen[..first_start]
            .iter()
            .rposition(|e| matches!(e, cairn::bus::Event::Gauge { .. }))
            .unwrap_or(first_start);
        self.seen[from..last_finish]
            .iter()
            .filter_map(|e| match e {
                cairn::bus::Event::Gauge { gauge, .. } => Some(*gauge),
                _ => None,
            })
            .collect()
    }

    pub fn gauges(&self) -> Vec<cairn::context::ContextGauge> {
        self.seen
            .iter()
            .filter_map(|e| match e {
                cairn::bus::Event::Gauge { gauge, .. } => Some(*gauge),
                _ => None,
            })
            .collect()
    }
}

/// Sends a prompt and waits until the session settles; returns what the bus said.
pub async fn prompt_and_settle(scenario: &Scenario, handle: &SessionHandle, text: &str) -> Watch {
    command_and_settle(
        scenario,
        handle,
        cairn::session::command::Command::Prompt {
            text: text.to_string(),
            agent: None,
            model: None,
            piped: false,
        },
    )
    .await
}

/// Sends a command that runs the loop and waits until the session settles.
pub async fn command_and_settle(
    scenario: &Scenario,
    handle: &SessionHandle,
    command: cairn::session::command::Command,
) -> Watch {
    let mut watch = watch(scenario, &handle.session_id);
    assert!(handle.send(command), "the session runtime is running");
    watch.until_settled().await;
    watch
}

/// OpenAI's answer to a request larger than the window (HTTP 400).
pub fn openai_overflow() -> ScriptedResponse {
    ScriptedResponse::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 20000 tokens. However, your messages resulted in 23456 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    )
}

/// Like [`text`], but the server waits `delay` before the first byte of the body.
pub fn delayed_text(delay: Duration, answer: &str, prompt_tokens: u64) -> ScriptedResponse {
    ScriptedResponse::sse()
        .delay(delay)
        .chunk(chunk(json!({"role": "assistant", "content": answer}), None))
        .chunk(chunk(json!({}), Some("stop")))
        .chunk(usage(prompt_tokens, 20))
        .chunk("data: [DONE]\n\n")
}

/// Deterministic text of about `bytes` bytes that tokenizes densely (hex
/// words, roughly 2 characters per token), in lines of about 100 characters.
pub fn dense_text(seed: u64, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 128);
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while out.len() < bytes {
        for _ in 0..11 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.push_str(&format!("{:08x} ", state as u32));
        }
        out.push('\n');
    }
    out
}

/// The text of a Chat Completions message: a string, or its text parts joined.
pub fn message_text(message: &Value) -> String {
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

/// [`message_text`] without the working state a compaction puts in front
/// of the next user message: what the user (or the loop) said.
pub fn said_text(message: &Value) -> String {
    match &message["content"] {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .filter(|t| !t.starts_with("<working-state>"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => message_text(message),
    }
}

/// The messages of a recorded request body.
pub fn messages_of(request: &Value) -> Vec<Value> {
    request["messages"].as_array().cloned().unwrap_or_default()
}

/// One `bash` call per command (`call_0`, `call_1`, ...), then an answer.
pub fn bash_calls<'a>(commands: impl Iterator<Item = &'a str>) -> Vec<ScriptedResponse> {
    let mut script: Vec<_> = commands
        .enumerate()
        .map(|(i, command)| {
            tool_call(
                &format!("call_{i}"),
                "bash",
                json!({ "command": command }),
                1_000,
            )
        })
        .collect();
    script.push(text("Done.", 1_000));
    script
}
