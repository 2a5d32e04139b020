//! The thread survives compaction (issue #29), through the real binary: a
//! session with an early constraint, a later decision, a written-then-edited
//! file, a todo list, a loaded skill and a bulky tool output is compacted by
//! a summarizer that answers "ok", and the next request still carries the
//! user's words, the file's name and current text, the open todos and the
//! skill, without the bulky output.

use crate::counting::{Counting, is_summary_request};
use crate::project::Project;
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;

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

/// A counting server whose model answers from `answers` in order.
async fn counting(window: u64, answers: Vec<Answer>) -> Counting {
    Counting::start(
        window,
        Box::new(move |n, _, tokens| {
            answers
                .get(n)
                .cloned()
                .unwrap_or(Answer::Text("Nothing more to do."))
                .respond(tokens)
        }),
    )
    .await
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
        let counting = counting(window, bulky_session()).await;
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
        assert_eq!(counting.rejected(), 0, "{window}: a request was rejected");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_provider_rejects_a_request_the_compaction_keeps_the_thread() {
    // cairn assumes 32k; the server takes 12,000 at most and says so.
    let server_window = 12_000;
    let counting = counting(server_window, bulky_session()).await;
    let project = project_on(&counting.server, Some((32_768, 8_192)));
    project.ok(&["run", CONSTRAINT]).await;
    project.ok(&["run", "--continue", DECISION]).await;
    let seen = counting.seen();
    let rejected = counting.rejected();
    assert!(rejected >= 1, "the server never rejected a request");
    let summary = (0..seen.len())
        .rfind(|&i| is_summary_request(&seen[i].0))
        .expect("a compaction after the rejection");
    let (next, tokens) = seen
        .iter()
        .skip(summary + 1)
        .find(|(request, tokens)| !is_summary_request(request) && *tokens <= server_window)
        .expect("a request that fits after the compaction");
    assert_thread_kept_within(&conversation(next), 8_192);
    assert!(*tokens <= server_window);
}

/// One turn of many small tool outputs (a model reading a whole tree, one
/// file a step) with no earlier turn to summarize, and a summary model whose
/// window is a quarter of the main one's: the summary drops the turn's
/// oldest steps until it fits instead of giving up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_turn_too_long_to_summarize_whole_is_still_compacted() {
    const FILES: usize = 90;
    let project_files: Vec<String> = (0..FILES).map(|i| format!("src/m{i:03}.rs")).collect();
    let mut answers: Vec<Answer> = project_files
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let id: &'static str = Box::leak(format!("call_{i}").into_boxed_str());
            Answer::Tool(id, "read", json!({ "path": path }))
        })
        .collect();
    answers.push(Answer::Text("Read them all."));
    let counting = counting(32_768, answers).await;
    let project = project_on(&counting.server, Some((32_768, 8_192)));
    let config = std::fs::read_to_string(project.path("cairn.toml")).expect("config");
    std::fs::write(
        project.path("cairn.toml"),
        format!(
            "{config}\n[provider.scripted.models.\"small-model\"]\ncontext = 8192\noutput = 2048\n\n[compaction]\nmodel = \"scripted/small-model\"\n"
        ),
    )
    .expect("config");
    project.trust();
    std::fs::create_dir_all(project.path("src")).expect("src");
    for (i, path) in project_files.iter().enumerate() {
        let body: String = (0..40)
            .map(|l| {
                format!(
                    "pub const C{i}_{l}: &str = \"value {i} {l} {}\";\n",
                    "x".repeat(20)
                )
            })
            .collect();
        std::fs::write(project.path(path), body).expect("write module");
    }
    let out = project
        .cairn(&["run", "read every module, one at a time"])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("too large to compact"),
        "gave up instead of compacting: {stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let seen = counting.seen();
    let summary = seen
        .iter()
        .find(|(r, _)| is_summary_request(r))
        .unwrap_or_else(|| panic!("no summary request in {} requests", seen.len()));
    assert_eq!(summary.0["model"], "small-model");
    assert!(
        summary.1 <= 8_192,
        "the summary request holds {}",
        summary.1
    );
    assert!(conversation(&summary.0).contains("oldest step(s) of this turn were left out"));
}

/// The provider accepted a request larger than the window cairn assumed
/// (its real window is larger): the session goes on, it is never refused
/// later for a size the provider took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_provider_accepted_is_never_refused_later() {
    let server = ScriptedServer::start([
        text("Read it: the log shows one failure.", 12_000),
        text("You're welcome.", 12_100),
        text("Still here.", 12_200),
    ])
    .await;
    let project = project_on(&server, Some((8_192, 2_048)));
    let first = project
        .cairn(&["run", "here is the log, what failed?"])
        .await;
    let said = String::from_utf8_lossy(&first.stderr);
    assert!(
        said.contains("accepted a request of 12,000 tokens, more than the 8,192-token window"),
        "{said}"
    );
    let out = project.cairn(&["run", "--continue", "thanks"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("does not fit"), "{stderr}");
    assert!(
        !stderr.contains("compacted"),
        "nothing to compact: {stderr}"
    );
    project.ok(&["run", "--continue", "still there?"]).await;
    assert_eq!(server.requests().len(), 3, "{stderr}");
}

/// Attacks on the state's own reads (cairn re-reads files nobody asks about
/// again): a file the model read, then swapped for a symlink to a key
/// outside the project; a `.env` a command wrote, which reading would ask
/// for. Neither text may reach the model after the compaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_never_reads_what_the_model_could_not() {
    const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- hunter2-key-material";
    const ENV_SECRET: &str = "API_TOKEN=sk-live-attack-table-0001";
    let server = ScriptedServer::start(scripted(vec![
        Answer::Tool("call_r", "read", json!({ "path": "notes.txt" })),
        Answer::Tool(
            "call_l",
            "bash",
            json!({ "command": "echo QVBJX1RPS0VOPXNrLWxpdmUtYXR0YWNrLXRhYmxlLTAwMDEK | base64 -d > .env" }),
        ),
        Answer::Text("Done."),
        Answer::Text("ok"),
        Answer::Text("Nothing left."),
    ]))
    .await;
    let project = Project::new();
    std::fs::write(project.path("notes.txt"), "ordinary notes\n").expect("notes");
    let ssh = project.home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).expect("ssh dir");
    std::fs::write(ssh.join("id_ed25519"), KEY).expect("key");
    // Not yolo: reading `.env` asks (and a headless run cannot answer);
    // commands and edits are allowed.
    project.use_scripted_with(
        &server,
        "",
        "[permission]\nbash = \"allow\"\nedit = \"allow\"\n",
    );
    let first = project.cairn(&["run", "read notes.txt and tidy up"]).await;
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        crate::project::describe(&first)
    );
    assert_eq!(
        project.read(".env").as_deref(),
        Some("API_TOKEN=sk-live-attack-table-0001\n"),
        "the command ran: {}",
        crate::project::describe(&first)
    );
    // The link the model used to make with `ln -sf "$HOME/..."`: a word
    // known only at run time now asks whatever the rules say (issue #28),
    // so the test makes it, before the compaction reads the files.
    std::fs::remove_file(project.path("notes.txt")).expect("remove notes");
    std::os::unix::fs::symlink(ssh.join("id_ed25519"), project.path("notes.txt"))
        .expect("link notes.txt to the key");
    project.ok(&["run", "--continue", "/compact"]).await;
    project.ok(&["run", "--continue", "what is left?"]).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for (i, request) in requests.iter().enumerate() {
        let body = String::from_utf8_lossy(&request.body);
        assert!(!body.contains("hunter2"), "request {i} carries the key");
        assert!(!body.contains(ENV_SECRET), "request {i} carries .env");
    }
    let after = conversation(&requests[4].json());
    assert!(after.contains("<working-state>"), "{after}");
    assert!(after.contains(".env"), "the file is still named: {after}");
}

/// A prompt inside the configured window (28,500 of 32,000, more than the
/// usable 28,000) teaches nothing about the window: it stays 32,000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_inside_the_window_does_not_grow_it() {
    // The second run compacts first (28,500 is past the compaction point).
    let server =
        ScriptedServer::start([text("done1", 28_500), text("ok", 500), text("done2", 900)]).await;
    let project = project_on(&server, Some((32_000, 4_000)));
    let first = project.cairn(&["run", "hello"]).await;
    let said = String::from_utf8_lossy(&first.stderr);
    assert!(!said.contains("accepted a request"), "{said}");
    let json = project
        .ok(&["run", "--continue", "--format", "json", "again"])
        .await;
    assert!(!json.contains("\"context\":32768"), "{json}");
    assert!(json.contains("\"context\":32000"), "{json}");
}
