//! `cairn run` and `cairn sessions` as a user runs them: the real binary in a
//! temp git repository, its config from a project `cairn.toml`, the model a
//! scripted server inside this test process.

use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support;

use std::process::Output;
use std::time::Duration;

use scenario::{text, tool_call};
use serde_json::{Value, json};
use support::ScriptedServer;
use tokio::io::AsyncReadExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_fixes_a_file_and_sessions_lists_it() {
    let project = Project::new();
    let file = project.path("notes.txt");
    std::fs::write(&file, "teh cat sat\n").expect("write notes");
    let path = file.display().to_string();
    let server = ScriptedServer::start([
        tool_call("call_1", "read", json!({ "file_path": path }), 1_000),
        tool_call(
            "call_2",
            "edit",
            json!({ "file_path": path, "old_string": "teh", "new_string": "the" }),
            1_200,
        ),
        text("Fixed the typo: it now reads the cat sat.", 1_400),
    ])
    .await;
    project.use_scripted(&server);

    let output = project
        .cairn(&["run", "fix the typo\nin notes.txt, please"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(
        std::fs::read_to_string(&file).expect("read notes"),
        "the cat sat\n"
    );
    let stdout = text_of(&output.stdout);
    assert!(
        stdout.contains("Fixed the typo: it now reads the cat sat."),
        "{}",
        describe(&output)
    );
    let stderr = text_of(&output.stderr);
    assert!(
        stderr.contains(&format!("> read {path}")),
        "{}",
        describe(&output)
    );
    assert!(
        stderr.contains(&format!("> edit {path}")),
        "{}",
        describe(&output)
    );
    assert!(stderr.contains("  edit done in"), "{}", describe(&output));
    assert!(!stderr.contains("error"), "{}", describe(&output));
    // The tool lines went to stderr only.
    assert!(!stdout.contains("> read"), "{}", describe(&output));
    assert_eq!(server.requests().len(), 3);

    let listed = project.cairn(&["sessions"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", describe(&listed));
    let listing = text_of(&listed.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 1, "{listing}");
    assert!(lines[0].starts_with("ses"), "{listing}");
    // The title is the first line of the message, and the directory is the project.
    assert!(lines[0].contains("  fix the typo  "), "{listing}");
    assert!(!lines[0].contains("notes.txt, please"), "{listing}");
    assert!(
        lines[0].ends_with(&project.root.path().display().to_string()),
        "{listing}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_format_prints_one_event_per_line() {
    let project = Project::new();
    let server = ScriptedServer::start([
        tool_call("call_1", "list", json!({ "path": "." }), 800),
        text("Nothing much here.", 900),
    ])
    .await;
    project.use_scripted(&server);

    let output = project
        .cairn(&["run", "--format", "json", "what is here?"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stdout = text_of(&output.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not one JSON object ({error}): {line:?}"))
        })
        .collect();
    assert!(events.iter().all(Value::is_object));
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.len(), events.len(), "every event names its type");
    for expected in ["status", "part_updated", "part_delta", "message_updated"] {
        assert!(kinds.contains(&expected), "no {expected} in {kinds:?}");
    }
    // The session's events end on the idle status; one result event follows.
    let (last, events) = events.split_last().expect("events");
    let before_last = events.last().expect("events before the result");
    assert_eq!(before_last["type"], "status");
    assert_eq!(before_last["status"]["type"], "idle");
    assert_eq!(last["type"], "result", "{last}");
    assert_eq!(kinds.iter().filter(|k| **k == "result").count(), 1);
    assert_eq!(last["text"], "Nothing much here.");
    assert_eq!(last["stop_reason"], "stop");
    assert_eq!(last["outcome"], "success");
    assert_eq!(last["exit_code"], 0);
    assert!(last["error"].is_null(), "{last}");
    assert!(
        last["session_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("ses"))
    );
    // Two requests: 800 + 900 prompt tokens, 30 (tool call) + 20 completion.
    assert_eq!(
        last["tokens"]["input"].as_u64().unwrap_or(0)
            + last["tokens"]["cache"]["read"].as_u64().unwrap_or(0),
        1_700,
        "{last}"
    );
    assert_eq!(last["tokens"]["output"], 50, "{last}");
    assert!(last["cost"].is_number(), "{last}");
    assert!(last["duration_ms"].is_u64(), "{last}");
    assert!(events.iter().any(|e| e["type"] == "part_updated"
        && e["part"]["tool"] == "list"
        && e["part"]["state"]["status"] == "completed"));
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "part_delta" && e["field"] == "text")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(streamed, "Nothing much here.");
    // The tool call's arguments streamed too, as `tool_input` pieces.
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "part_delta" && e["field"] == "tool_input")
    );
}

/// Runs `cairn run` with `config` as the project file and no provider keys.
async fn run_without_keys(config: &str) -> Output {
    let project = Project::new();
    std::fs::write(project.path("cairn.toml"), config).expect("write cairn.toml");
    project.trust();
    project.cairn(&["run", "hello"]).await
}

fn assert_one_error_line(output: &Output, names: &[&str]) {
    assert_eq!(output.status.code(), Some(1), "{}", describe(output));
    let stderr = text_of(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {}", describe(output));
    assert!(lines[0].starts_with("error: "), "{}", describe(output));
    for name in names {
        assert!(
            lines[0].contains(name),
            "names {name}: {}",
            describe(output)
        );
    }
    assert!(
        text_of(&output.stdout).trim().is_empty(),
        "{}",
        describe(output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_model_names_what_to_set() {
    let output = run_without_keys("").await;
    assert_one_error_line(&output, &["ANTHROPIC_API_KEY", "--model", "model"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_key_names_the_variable() {
    let output = run_without_keys("model = \"anthropic/claude-sonnet-4-5\"\n").await;
    assert_one_error_line(&output, &["ANTHROPIC_API_KEY"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_model_leaves_no_empty_session() {
    let project = Project::new();
    std::fs::write(project.path("cairn.toml"), "").expect("write cairn.toml");
    let failed = project.cairn(&["run", "hello"]).await;
    assert_eq!(failed.status.code(), Some(1), "{}", describe(&failed));
    let listed = project.cairn(&["sessions"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", describe(&listed));
    assert!(
        text_of(&listed.stdout).starts_with("no sessions yet"),
        "{}",
        describe(&listed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_the_run_and_keeps_the_partial_answer() {
    let project = Project::new();
    let server = ScriptedServer::start([scenario::text_then_stall("Half of the answer")]).await;
    project.use_scripted(&server);
    let mut child = project
        .command(&["run", "a long question"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    // Interrupt once the partial answer has come, as a user would. stdout
    // is a pipe, so the answer is held until its step ends (a step retried
    // after a dropped stream must not leave its fragment there, issue #31):
    // the text part opened in the store says it came.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut printed = Vec::new();
    wait_for_a_text_part(&project).await;
    let pid = child.id().expect("cairn is running") as i32;
    // SAFETY: kill(2) on the child we spawned and still own; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = tokio::time::timeout(Duration::from_secs(5), async {
        stdout
            .read_to_end(&mut printed)
            .await
            .expect("read cairn's stdout");
        child.wait_with_output().await
    })
    .await
    .expect("cairn stops within 5 s of Ctrl+C")
    .expect("wait for cairn");
    assert_eq!(output.status.code(), Some(130), "{}", describe(&output));
    assert!(
        text_of(&printed).contains("Half of the answer"),
        "{}",
        describe(&output)
    );
    assert!(
        text_of(&output.stderr).contains("interrupting"),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_resumes_the_last_session_with_its_history() {
    let project = Project::new();
    let server = ScriptedServer::start([
        text("The capital is Paris.", 300),
        text("About two million people.", 400),
    ])
    .await;
    project.use_scripted(&server);
    let first = project.cairn(&["run", "capital of France?"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    let second = project
        .cairn(&["run", "--continue", "how many live there?"])
        .await;
    assert_eq!(second.status.code(), Some(0), "{}", describe(&second));
    assert!(text_of(&second.stdout).contains("About two million people."));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let said: Vec<String> = requests[1].json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(said.len(), 3, "{said:?}");
    assert!(said[0].contains("capital of France?"), "{said:?}");
    assert!(said[1].contains("The capital is Paris."), "{said:?}");
    assert!(said[2].contains("how many live there?"), "{said:?}");
    let listed = project.cairn(&["sessions"]).await;
    assert_eq!(text_of(&listed.stdout).lines().count(), 1, "one session");
}

/// `--continue` in a directory with no session says so (exit 1) and creates
/// nothing, instead of quietly answering in a fresh session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_without_an_earlier_session_says_so() {
    let project = Project::new();
    let server = ScriptedServer::start([text("should not be asked", 300)]).await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "--continue", "carry on"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        text_of(&output.stderr).contains("no earlier session")
            && text_of(&output.stderr).contains("--continue"),
        "{}",
        describe(&output)
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    let listed = project.cairn(&["sessions"]).await;
    assert!(
        !text_of(&listed.stdout).contains("carry on"),
        "no session was created: {}",
        describe(&listed)
    );
}

/// A text answer whose step fills the 200k window, so that a compaction
/// follows it in the same run.
fn answer_that_fills_the_window(answer: &str) -> support::ScriptedResponse {
    text(answer, 190_000)
}

/// Issue #12: the hidden summary of a compaction made during the run was
/// printed to stdout glued to the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_during_the_run_keeps_its_summary_off_stdout() {
    let project = Project::new();
    let server = ScriptedServer::start([
        answer_that_fills_the_window("The answer is 42."),
        text("SUMMARY-OF-THE-CONVERSATION", 500),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "what is the answer?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(server.requests().len(), 2, "the answer, then the summary");
    assert_eq!(text_of(&output.stdout), "The answer is 42.\n");
    assert!(
        text_of(&output.stderr).contains("compacted the conversation (auto)"),
        "{}",
        describe(&output)
    );
}

/// Issue #12: a run whose answer was delivered exited 1, like a run with no
/// answer, when the compaction after it failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_the_answer_exits_3_with_the_answer_on_stdout() {
    let project = Project::new();
    let server = ScriptedServer::start([
        answer_that_fills_the_window("The answer is 42."),
        support::ScriptedResponse::json(
            400,
            r#"{"error":{"message":"summaries are not allowed","type":"invalid_request_error"}}"#,
        ),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "what is the answer?"]).await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "The answer is 42.\n");
    assert!(
        text_of(&output.stderr).contains("compaction failed"),
        "{}",
        describe(&output)
    );
}

/// Issue #12: headless refusals promise the config lines that would allow
/// the call, and stderr printed only the first line of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_permission_prints_the_config_that_would_allow_it() {
    let project = Project::new();
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "touch made.txt", "description": "make a file" }),
            500,
        ),
        text("I could not make the file.", 600),
    ])
    .await;
    project.use_scripted(&server);
    let config = std::fs::read_to_string(project.path("cairn.toml")).expect("read config");
    std::fs::write(
        project.path("cairn.toml"),
        config.replace("yolo = true", "yolo = false"),
    )
    .expect("write config");
    let output = project.cairn(&["run", "make a file"]).await;
    let stderr = text_of(&output.stderr);
    assert!(stderr.contains("  bash failed: "), "{}", describe(&output));
    assert!(
        stderr.contains("    [permission.bash]"),
        "{}",
        describe(&output)
    );
    assert!(
        stderr.contains("= \"allow\""),
        "the config line: {}",
        describe(&output)
    );
    assert!(stderr.contains("--yolo"), "{}", describe(&output));
    assert!(!project.path("made.txt").exists());
}

/// Issue #12: `--format json` ends with one `result` event, on failure too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_format_ends_with_a_result_event_when_the_run_fails() {
    let project = Project::new();
    let server = ScriptedServer::start([support::ScriptedResponse::json(
        400,
        r#"{"error":{"message":"the model does not exist","type":"invalid_request_error"}}"#,
    )])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "--format", "json", "hello"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stdout = text_of(&output.stdout);
    let last: Value =
        serde_json::from_str(stdout.lines().last().expect("a line")).expect("one JSON object");
    assert_eq!(last["type"], "result", "{stdout}");
    assert_eq!(stdout.matches("\"type\":\"result\"").count(), 1, "{stdout}");
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["exit_code"], 1);
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|e| e.contains("the model does not exist")),
        "{last}"
    );

    // A usage error, before any session work, still ends with a result.
    let usage = project
        .cairn(&["run", "--format", "json", "/agent", "plan"])
        .await;
    assert_eq!(usage.status.code(), Some(2), "{}", describe(&usage));
    let last: Value = serde_json::from_str(text_of(&usage.stdout).lines().last().expect("a line"))
        .expect("one JSON object");
    assert_eq!(last["type"], "result");
    assert_eq!(last["outcome"], "usage");
    assert!(last["stop_reason"].is_null(), "{last}");
}

/// Issue #12: the 7-day sweep of saved tool outputs existed but was never
/// called, so `tool-output/` grew forever. Any start of cairn sweeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_sweeps_tool_outputs_older_than_a_week() {
    let project = Project::new();
    let server = ScriptedServer::start([text("Hello.", 300)]).await;
    project.use_scripted(&server);
    let dir = project.data_dir().join("tool-output");
    std::fs::create_dir_all(&dir).expect("create tool-output");
    let old = dir.join("tool_old");
    let recent = dir.join("tool_recent");
    for path in [&old, &recent] {
        std::fs::write(path, "saved output").expect("write a saved output");
    }
    let eight_days = Duration::from_secs(8 * 24 * 60 * 60);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .expect("open the old output")
        .set_modified(std::time::SystemTime::now() - eight_days)
        .expect("age the old output");
    let output = project.cairn(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(!old.exists(), "an output older than 7 days is swept");
    assert!(recent.exists(), "a recent output stays");
}

/// Issue #12: `instructions` entries that are globs (documented in
/// config.example.toml) were dropped with only a log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instruction_globs_are_expanded_and_a_broken_entry_is_shown() {
    let project = Project::new();
    let server = ScriptedServer::start([text("Hello.", 300)]).await;
    project.use_scripted(&server);
    std::fs::create_dir_all(project.path("docs/deeper")).expect("create docs");
    std::fs::write(project.path("docs/a.md"), "RULE-ALPHA\n").expect("write a.md");
    std::fs::write(project.path("docs/b.md"), "RULE-BRAVO\n").expect("write b.md");
    std::fs::write(project.path("docs/deeper/c.md"), "RULE-CHARLIE\n").expect("write c.md");
    let config = std::fs::read_to_string(project.path("cairn.toml")).expect("read config");
    std::fs::write(
        project.path("cairn.toml"),
        format!("instructions = [\"docs/*.md\", \"rules/*.txt\"]\n{config}"),
    )
    .expect("write config");
    let output = project.cairn(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let request = server.requests()[0].json().to_string();
    assert!(request.contains("RULE-ALPHA"), "{request}");
    assert!(request.contains("RULE-BRAVO"), "{request}");
    assert!(
        !request.contains("RULE-CHARLIE"),
        "* does not cross /: {request}"
    );
    let stderr = text_of(&output.stderr);
    assert_eq!(
        stderr.matches("\"rules/*.txt\"").count(),
        1,
        "said once: {}",
        describe(&output)
    );
    assert!(stderr.contains("matches no file"), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Hello.\n");
}

/// Issue #12 (seed 001: instructions are "files or URLs"): a URL entry was
/// dropped with only a log line. It is fetched once per session; a failure
/// is shown and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instruction_urls_are_fetched_once_and_a_failure_is_shown() {
    let project = Project::new();
    let notes = project.path("notes.txt");
    std::fs::write(&notes, "milk\n").expect("write notes");
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "read",
            json!({ "file_path": notes.display().to_string() }),
            300,
        ),
        text("It says milk.", 400),
    ])
    .await;
    project.use_scripted(&server);
    let rules = ScriptedServer::start([support::ScriptedResponse::new(200)
        .header("content-type", "text/markdown")
        .chunk("RULE-FROM-THE-WEB\n")])
    .await;
    let missing = ScriptedServer::start([support::ScriptedResponse::json(404, "{}")]).await;
    let config = std::fs::read_to_string(project.path("cairn.toml")).expect("read config");
    std::fs::write(
        project.path("cairn.toml"),
        format!(
            "instructions = [\"{}/rules.md\", \"{}/gone.md\"]\n{config}",
            rules.url(),
            missing.url()
        ),
    )
    .expect("write config");
    // Instructions at a URL connect where the project says: trusted first.
    project.trust();
    let output = project.cairn(&["run", "what do my notes say?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let body = request.json().to_string();
        assert!(body.contains("RULE-FROM-THE-WEB"), "{body}");
    }
    assert_eq!(rules.requests().len(), 1, "fetched once for the session");
    let stderr = text_of(&output.stderr);
    assert_eq!(
        stderr.matches("cannot fetch instructions from").count(),
        1,
        "{}",
        describe(&output)
    );
    assert!(stderr.contains("404"), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "It says milk.\n");
}

/// A broken agent file is found when the session opens, before `cairn run`
/// sends anything: the run must still say so, once, and go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_agent_file_is_shown_by_cairn_run() {
    let project = Project::new();
    let server = ScriptedServer::start([text("Hello.", 300)]).await;
    project.use_scripted(&server);
    std::fs::create_dir_all(project.path(".cairn/agents")).expect("create agents");
    std::fs::write(
        project.path(".cairn/agents/broken.md"),
        "---\nname: [unclosed\n---\nbody\n",
    )
    .expect("write agent file");
    let output = project.cairn(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stderr = text_of(&output.stderr);
    assert_eq!(
        stderr.matches("agent file").count(),
        1,
        "said once: {}",
        describe(&output)
    );
    assert!(stderr.contains("broken.md"), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Hello.\n");
}

/// Waits (at most 20 s) until the run's answer has a text part in the store:
/// the part is saved when its first text arrives.
async fn wait_for_a_text_part(project: &Project) {
    let store =
        cairn::store::Store::open(&project.data_dir().join("cairn.db")).expect("open store");
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let sessions = store.list_sessions(1).await.expect("list sessions");
            if let Some(session) = sessions.first() {
                let messages = store.read_all(&session.id).await.expect("read session");
                let has_text = messages.iter().any(|m| {
                    !m.message.is_user()
                        && m.parts
                            .iter()
                            .any(|p| matches!(p.kind, cairn::message::PartKind::Text(_)))
                });
                if has_text {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the answer starts within 20 s");
}
