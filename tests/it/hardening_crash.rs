//! Crash safety: the real `cairn run` binary is SIGKILLed mid-stream and
//! mid-tool; the database must stay intact, keep the text streamed more than
//! ~300 ms before the kill, and a `run --continue` must send a well-paired
//! request. The model is a tiny local server that timestamps every text piece
//! it sends, so the loss is measured against what really left the socket.
//! `CAIRN_CRASH_RUNS=N cargo test --test it hardening_crash -- --ignored --nocapture`
//! runs N kills at random points and prints the figures.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn::message::{MessageWithParts, PartKind};
use serde_json::{Value, json};

use crate::support::{ScriptedResponse, ScriptedServer};

/// Text pieces of the first answer and the pause before each.
const TEXT_PIECES: usize = 20;
const PIECE_DELAY: Duration = Duration::from_millis(40);
/// The processor flushes text every 250 ms; older text must be on disk. The
/// ages are measured from the server's send, so the client's own scheduling
/// delay on a loaded machine counts too: 300 ms is the target (figures in the
/// long run), 400 ms the bound that fails.
const DURABLE_AFTER: Duration = Duration::from_millis(400);

fn sse(delta: Value, finish: Option<&str>) -> Vec<u8> {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n").into_bytes()
}

fn closing(response: ScriptedResponse, finish: &str) -> ScriptedResponse {
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
        "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}});
    response
        .chunk(sse(json!({}), Some(finish)))
        .chunk(format!("data: {usage}\n\ndata: [DONE]\n\n"))
}

/// Slow text (TEXT_PIECES x PIECE_DELAY), each piece noted with its send
/// time, then a `sleep 2` bash call.
fn slow_text_then_sleeping_tool() -> ScriptedResponse {
    let mut response =
        ScriptedResponse::sse().chunk(sse(json!({"role": "assistant", "content": ""}), None));
    for index in 0..TEXT_PIECES {
        let piece = format!("piece{index:02} ");
        response = response
            .delay(PIECE_DELAY)
            .noted_chunk(sse(json!({"content": piece}), None), &piece);
    }
    let arguments = json!({"command": "sleep 2", "description": "wait"}).to_string();
    let call = sse(
        json!({"tool_calls": [{"index": 0, "id": "call_sleep", "type": "function",
            "function": {"name": "bash", "arguments": arguments}}]}),
        None,
    );
    closing(response.chunk(call), "tool_calls")
}

fn plain_answer(text: &str) -> ScriptedResponse {
    closing(
        ScriptedResponse::sse().chunk(sse(json!({"content": text}), None)),
        "stop",
    )
}

/// A temp project with `cairn.toml`, a private data dir and config home.
struct Project {
    root: tempfile::TempDir,
}

impl Project {
    fn new(server_url: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join(".git")).expect("project dir");
        let config = format!(
            "model = \"scripted/test-model\"\nyolo = true\n\n[provider.scripted]\nwire = \"openai\"\nbase_url = \"{server_url}/v1\"\n\n[provider.scripted.models.\"test-model\"]\ncontext = 200000\noutput = 32000\n"
        );
        std::fs::write(work.join("cairn.toml"), config).expect("write cairn.toml");
        let project = Self { root };
        crate::support::trust_project(project.command(&[]));
        project
    }

    fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .args(args)
            .current_dir(self.work())
            .env("HOME", self.root.path())
            .env("XDG_CONFIG_HOME", self.root.path().join("config"))
            .env("CAIRN_DATA_DIR", self.data())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CAIRN_")) {
            if name != "CAIRN_DATA_DIR" {
                command.env_remove(name);
            }
        }
        command
    }
}

/// Waits for `child` at most `limit`, killing it (and failing) past that.
async fn wait_with_limit(mut child: Child, limit: Duration) -> std::process::Output {
    let started = Instant::now();
    loop {
        if child.try_wait().expect("poll child").is_some() {
            return child.wait_with_output().expect("collect output");
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("collect output");
            panic!(
                "cairn did not finish within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What one kill left behind.
#[derive(Debug)]
struct CrashFigures {
    kill_after: Duration,
    sent_chars: usize,
    stored_chars: usize,
    /// Age at the kill of the oldest sent piece missing from the store.
    oldest_lost: Option<Duration>,
    tool_state: Option<&'static str>,
}

fn assistant_text(history: &[MessageWithParts]) -> String {
    history
        .iter()
        .filter(|m| !m.message.is_user())
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) if !t.synthetic => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn integrity_check(db: &Path) {
    let connection = rusqlite::Connection::open(db).expect("open db with rusqlite");
    let verdict: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check runs");
    assert_eq!(verdict, "ok", "{}", db.display());
}

/// Every tool call in the request has a result after it, and every result
/// answers an earlier call.
fn assert_well_paired(request: &Value) {
    let messages = request["messages"].as_array().expect("messages");
    let mut open: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for message in messages {
        if message["role"] == "tool" {
            let id = message["tool_call_id"].as_str().expect("tool_call_id");
            assert!(seen.contains(id), "result for unknown call {id}: {request}");
            open.retain(|call| call != id);
            continue;
        }
        assert!(
            open.is_empty(),
            "calls {open:?} have no result before the next message: {request}"
        );
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let id = call["id"].as_str().expect("call id").to_owned();
            seen.insert(id.clone());
            open.push(id);
        }
    }
    assert!(open.is_empty(), "calls {open:?} have no result: {request}");
}

/// Starts `cairn run`, SIGKILLs it `kill_after` the first request arrived,
/// checks the database and a `--continue` run; returns the figures.
async fn crash_once(kill_after: Duration) -> CrashFigures {
    let server =
        ScriptedServer::start([slow_text_then_sleeping_tool(), plain_answer("unused")]).await;
    let project = Project::new(&server.url());
    let child = project
        .command(&["run", "count slowly then sleep"])
        .spawn()
        .expect("spawn cairn");
    let deadline = Instant::now() + Duration::from_secs(20);
    let arrived = loop {
        if let Some(request) = server.requests().first() {
            break request.at;
        }
        assert!(Instant::now() < deadline, "cairn never called the model");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    tokio::time::sleep_until((arrived + kill_after).into()).await;
    let mut child = child;
    child.kill().expect("SIGKILL cairn");
    let killed_at = Instant::now();
    let _ = child.wait_with_output();
    let sent = server.sent_text();

    let db = project.data().join("cairn.db");
    integrity_check(&db);
    let store = cairn::store::Store::open(&db).expect("cairn opens the killed db");
    let sessions = store.list_sessions(10).await.expect("list sessions");
    assert_eq!(sessions.len(), 1, "one session was started");
    let history = store.read_all(&sessions[0].id).await.expect("read session");
    drop(store);
    let stored = assistant_text(&history);
    let sent_before_kill: Vec<&(Instant, String)> =
        sent.iter().filter(|(at, _)| *at <= killed_at).collect();
    let sent_text: String = sent_before_kill.iter().map(|(_, t)| t.as_str()).collect();
    assert!(
        sent_text.starts_with(&stored),
        "stored text is not a prefix of what was sent: {stored:?} vs {sent_text:?}"
    );
    let oldest_lost = sent_before_kill
        .iter()
        .scan(0usize, |end, (at, piece)| {
            *end += piece.len();
            Some((*end, *at))
        })
        .find(|(end, _)| *end > stored.len())
        .map(|(_, at)| killed_at - at);
    if let Some(age) = oldest_lost {
        assert!(
            age <= DURABLE_AFTER,
            "text sent {age:?} before the kill is missing: stored {stored:?}, sent {sent_text:?}"
        );
    }
    let tool_state = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool())
        .map(|t| t.state.status_name())
        .next_back();
    if let Some(state) = tool_state {
        assert!(
            matches!(state, "running" | "error" | "pending"),
            "the killed tool is {state}"
        );
    }

    continue_after_the_crash(&server, &project, tool_state).await;
    integrity_check(&db);

    CrashFigures {
        kill_after,
        sent_chars: sent_text.len(),
        stored_chars: stored.len(),
        oldest_lost,
        tool_state,
    }
}

/// A `run --continue` after the kill answers, with one well-paired request in
/// which an interrupted tool call has a result saying why.
async fn continue_after_the_crash(
    server: &ScriptedServer,
    project: &Project,
    tool_state: Option<&str>,
) {
    server.script([plain_answer("resumed fine")]);
    let before = server.requests().len();
    let child = project
        .command(&["run", "--continue", "next"])
        .spawn()
        .expect("spawn cairn --continue");
    let output = wait_with_limit(child, Duration::from_secs(30)).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "continue after the crash; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("resumed fine"));
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1, "one request for the continue");
    let request = &requests[before].json();
    assert_well_paired(request);
    if tool_state == Some("running") {
        let result = request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["tool_call_id"] == "call_sleep")
            .expect("the interrupted call has a result");
        assert!(
            !result["content"].as_str().unwrap_or_default().is_empty(),
            "the interrupted call's result says why: {result}"
        );
    }
}

fn stream_length() -> Duration {
    PIECE_DELAY * TEXT_PIECES as u32
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_keeps_flushed_text_and_the_session_continues() {
    let figures = crash_once(stream_length() * 3 / 4).await;
    eprintln!("{figures:?}");
    assert!(figures.stored_chars > 0, "{figures:?}");
    assert_eq!(figures.tool_state, None, "no tool had started: {figures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_tool_leaves_a_running_tool_the_next_run_answers_as_error() {
    let figures = crash_once(stream_length() + Duration::from_millis(700)).await;
    eprintln!("{figures:?}");
    assert_eq!(figures.stored_chars, figures.sent_chars, "{figures:?}");
    assert!(
        figures.tool_state.is_some(),
        "the tool started: {figures:?}"
    );
}

/// `CAIRN_CRASH_RUNS=N`: N kills at random points over the stream and the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: set CAIRN_CRASH_RUNS and run with --ignored"]
async fn many_sigkills_at_random_points() {
    let runs: usize = std::env::var("CAIRN_CRASH_RUNS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(20);
    let span = stream_length() + Duration::from_millis(1800);
    let mut worst_chars = 0;
    let mut worst_age = Duration::ZERO;
    let mut states = std::collections::BTreeMap::new();
    for run in 0..runs {
        let kill_after = Duration::from_millis(fastrand::u64(50..span.as_millis() as u64));
        let figures = crash_once(kill_after).await;
        eprintln!("run {run}, kill at {:?}: {figures:?}", figures.kill_after);
        worst_chars = worst_chars.max(figures.sent_chars - figures.stored_chars);
        worst_age = worst_age.max(figures.oldest_lost.unwrap_or_default());
        *states
            .entry(figures.tool_state.unwrap_or("none"))
            .or_insert(0) += 1;
    }
    eprintln!(
        "{runs} runs: worst loss {worst_chars} chars, oldest lost piece {worst_age:?}; tool states {states:?}"
    );
}
