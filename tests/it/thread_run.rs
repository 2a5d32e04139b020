//! The thread survives compaction (issue #29), through the real binary: a
//! session with an early constraint, a later decision, a written-then-edited
//! file, a todo list, a loaded skill and a bulky tool output is compacted by
//! a summarizer that answers "ok", and the next request still carries the
//! user's words, the file's name and current text, the open todos and the
//! skill, without the bulky output.

use crate::project::Project;
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

const CONSTRAINT: &str = "Constraint: never use unsafe code, and keep the MSRV at 1.70.";
const DECISION: &str =
    "Decision: errors go through thiserror, not anyhow. Make parse return a Result.";
const EDITED: &str = "pub fn parse() -> Result<(), ParseError> { Ok(()) }";
const SKILL: &str = "---\nname: rust-style\ndescription: How this team writes Rust.\n---\nPrefer iterators over index loops; name errors FooError.\n";
/// A number only the bulky output holds (in what its truncation kept).
const BULKY_MARK: &str = "119997";
/// The same for the oldest of the three bulky outputs of `bulky_session`
/// (the newest may be in the verbatim tail, as it should).
const OLD_BULKY_MARK: &str = "102999";

/// One scripted answer, sized when it is sent: its usage reports what the
/// request really held.
#[derive(Clone)]
enum Answer {
    Tool(&'static str, &'static str, Value),
    Text(&'static str),
}

impl Answer {
    fn respond(&self, prompt_tokens: u64) -> crate::support::ScriptedResponse {
        match self {
            Answer::Tool(id, name, args) => tool_call(id, name, args.clone(), prompt_tokens),
            Answer::Text(said) => text(said, prompt_tokens),
        }
    }
}

/// The scripted turns before the compaction: 7 requests.
fn working_session() -> Vec<Answer> {
    vec![
        Answer::Tool(
            "call_w",
            "write",
            json!({ "path": "src/parser.rs", "content": "pub fn parse() {}\n" }),
        ),
        Answer::Text("Wrote src/parser.rs."),
        Answer::Tool(
            "call_e",
            "edit",
            json!({ "file_path": "src/parser.rs", "old_string": "pub fn parse() {}", "new_string": EDITED }),
        ),
        Answer::Tool(
            "call_t",
            "todowrite",
            json!({ "todos": [
                { "content": "create parser.rs", "status": "completed" },
                { "content": "wire the lexer errors", "status": "in_progress" },
                { "content": "add parser tests", "status": "pending" }
            ]}),
        ),
        Answer::Tool("call_s", "skill", json!({ "name": "rust-style" })),
        Answer::Tool("call_b", "bash", json!({ "command": "seq 100000 120000" })),
        Answer::Text("Done; next I wire the lexer errors."),
    ]
}

/// The fixed script of the first test, with usage that grows as a real one.
fn scripted(answers: Vec<Answer>) -> Vec<crate::support::ScriptedResponse> {
    answers
        .iter()
        .enumerate()
        .map(|(i, a)| a.respond(900 + 100 * i as u64))
        .collect()
}

fn project_on(server: &ScriptedServer, window: Option<(u64, u64)>) -> Project {
    let project = Project::new();
    std::fs::create_dir_all(project.path(".cairn/skills/rust-style")).expect("skill dir");
    std::fs::write(project.path(".cairn/skills/rust-style/SKILL.md"), SKILL).expect("skill");
    project.use_scripted(server);
    if let Some((context, output)) = window {
        let config = std::fs::read_to_string(project.path("cairn.toml")).expect("config");
        let config = config
            .replace("context = 200000", &format!("context = {context}"))
            .replace("output = 32000", &format!("output = {output}"));
        std::fs::write(project.path("cairn.toml"), config).expect("write config");
        project.trust();
    }
    project
}

/// Every message text of a recorded request but the system prompt.
fn conversation(request: &Value) -> String {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the request after a compaction must carry, whatever the summary said.
fn assert_thread_kept(after: &str, bulky_mark: &str) {
    for needle in [
        CONSTRAINT,
        DECISION,
        "src/parser.rs",
        EDITED,
        "wire the lexer errors",
        "add parser tests",
        "Prefer iterators over index loops",
    ] {
        assert!(after.contains(needle), "missing {needle:?} in:\n{after}");
    }
    assert!(
        !after.contains(bulky_mark),
        "the bulky output was not summarized away"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_useless_summary_loses_nothing_the_user_said_or_the_session_did() {
    let mut script = scripted(working_session());
    script.push(text("ok", 500)); // the summary
    script.push(text("The lexer errors are left.", 600));
    let server = ScriptedServer::start(script).await;
    let project = project_on(&server, None);
    project.ok(&["run", CONSTRAINT]).await;
    project.ok(&["run", "--continue", DECISION]).await;
    assert_eq!(server.requests().len(), 7);
    let before = conversation(&server.requests()[6].json());
    assert!(before.contains(BULKY_MARK), "the bulky output was sent");

    let json = project
        .ok(&["run", "--continue", "--format", "json", "/compact"])
        .await;
    let carried = json
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|event| {
            let carried = event.pointer("/part/kind/carried").or_else(|| {
                event
                    .pointer("/properties/part/carried")
                    .or_else(|| event.pointer("/part/carried"))
            })?;
            (!carried.is_null()).then(|| carried.clone())
        })
        .unwrap_or_else(|| panic!("no compaction event carries the working state:\n{json}"));
    assert_eq!(carried["user_messages"], 2, "{carried}");
    assert_eq!(carried["changed_files"], 1, "{carried}");
    assert_eq!(carried["open_todos"], 2, "{carried}");
    assert_eq!(carried["skills"], 1, "{carried}");
    assert_eq!(carried["thin_summary"], true, "{carried}");

    project.ok(&["run", "--continue", "what is left?"]).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 9);
    let after = conversation(&requests[8].json());
    assert_thread_kept(&after, BULKY_MARK);
    assert!(
        after.len() < before.len() / 2,
        "after {} bytes, before {}",
        after.len(),
        before.len()
    );
}

/// A server that counts each request with cairn's tokenizer, rejects one
/// over `window` as llama-server does, answers summary requests "ok" and
/// everything else from `script` in order; every request is kept.
struct Counting {
    server: ScriptedServer,
    seen: Arc<Mutex<Vec<(Value, u64)>>>,
    rejected: Arc<Mutex<u32>>,
}

fn is_summary_request(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains("summar"))
        && request["tools"].as_array().is_none_or(Vec::is_empty)
}

fn counted(request: &Value) -> u64 {
    let text = format!("{}{}", request["messages"], request["tools"]);
    cairn::token::count(&text) as u64
}

impl Counting {
    async fn start(window: u64, script: Vec<Answer>) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rejected = Arc::new(Mutex::new(0));
        let next = Arc::new(Mutex::new(script.into_iter()));
        let server = ScriptedServer::answering({
            let (seen, rejected) = (Arc::clone(&seen), Arc::clone(&rejected));
            move |request| {
                // Only chat requests: a local server's /tokenize and the like get nothing.
                if !request.path.ends_with("/chat/completions") {
                    return crate::support::ScriptedResponse::json(404, "{}");
                }
                let body = request.json();
                let tokens = counted(&body);
                seen.lock().unwrap().push((body.clone(), tokens));
                if tokens > window {
                    *rejected.lock().unwrap() += 1;
                    let error = format!(
                        r#"{{"error":{{"message":"This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}}}"#
                    );
                    return crate::support::ScriptedResponse::json(400, &error);
                }
                if is_summary_request(&body) {
                    return text("ok", tokens);
                }
                next.lock()
                    .unwrap()
                    .next()
                    .unwrap_or(Answer::Text("Nothing more to do."))
                    .respond(tokens)
            }
        })
        .await;
        Self {
            server,
            seen,
            rejected,
        }
    }

    fn seen(&self) -> Vec<(Value, u64)> {
        self.seen.lock().unwrap().clone()
    }
}

/// The working session with three bulky outputs: at 8k and 32k the window
/// fills mid-task and the compaction is automatic.
fn bulky_session() -> Vec<Answer> {
    let mut script = working_session();
    let done = script.pop().expect("the closing answer");
    for (id, range) in [
        ("call_b1", "seq 100000 103000"),
        ("call_b2", "seq 110000 113000"),
        ("call_b3", "seq 117000 120000"),
    ] {
        script.push(Answer::Tool(id, "bash", json!({ "command": range })));
    }
    script.push(done);
    script
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_compaction_at_8k_and_32k_keeps_the_thread_and_every_request_fits() {
    for (window, output) in [(8_192, 2_048), (32_768, 8_192)] {
        let counting = Counting::start(window, bulky_session()).await;
        let project = project_on(&counting.server, Some((window, output)));
        project.ok(&["run", CONSTRAINT]).await;
        project.ok(&["run", "--continue", DECISION]).await;
        project.ok(&["run", "--continue", "what is left?"]).await;
        let seen = counting.seen();
        let summaries: Vec<usize> = (0..seen.len())
            .filter(|&i| is_summary_request(&seen[i].0))
            .collect();
        assert!(!summaries.is_empty(), "{window}: no compaction happened");
        let after = seen
            .iter()
            .skip(summaries[summaries.len() - 1] + 1)
            .map(|(request, _)| conversation(request))
            .next()
            .unwrap_or_else(|| panic!("{window}: no request after the summary"));
        assert_thread_kept_within(&after, window);
        assert_eq!(
            *counting.rejected.lock().unwrap(),
            0,
            "{window}: a request was rejected"
        );
        let largest = seen.iter().map(|(_, t)| *t).max().unwrap_or(0);
        assert!(largest <= window, "{window}: largest request {largest}");
    }
}

/// At 8k the budget is ~1,000 tokens: the user's words, the changed file,
/// the open todos must be there; the file's text and the skill's
/// instructions when they fit.
fn assert_thread_kept_within(after: &str, window: u64) {
    for needle in [
        CONSTRAINT,
        DECISION,
        "src/parser.rs",
        "wire the lexer errors",
        "rust-style",
    ] {
        assert!(
            after.contains(needle),
            "{window}: missing {needle:?} in:\n{after}"
        );
    }
    assert!(
        !after.contains(OLD_BULKY_MARK),
        "{window}: the old bulky output was sent"
    );
    if window >= 32_768 {
        assert_thread_kept(after, OLD_BULKY_MARK);
    }
}
