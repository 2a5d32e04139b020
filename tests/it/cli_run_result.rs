//! `cairn run --format json` ends every exit path with exactly one `result`
//! object, shaped like `claude -p --output-format json`'s (issue #31): the
//! paths of the README's table, each through the real binary.

use crate::project::{Project, describe, text_of};
use crate::scenario::{self, text};
use crate::support::ScriptedServer;

use std::process::Output;
use std::time::Duration;

use serde_json::Value;

/// Every line of stdout is one JSON object and exactly one, the last, is
/// the result; checks its claude-shaped fields against the exit code.
fn the_one_result(output: &Output) -> Value {
    let stdout = text_of(&output.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| {
                panic!(
                    "not one JSON object ({error}): {line:?}\n{}",
                    describe(output)
                )
            })
        })
        .collect();
    let results = lines.iter().filter(|l| l["type"] == "result").count();
    assert_eq!(results, 1, "{}", describe(output));
    let result = lines.last().expect("a result line").clone();
    assert_eq!(result["type"], "result", "{}", describe(output));
    let code = output.status.code().expect("an exit code");
    assert_eq!(result["exit_code"], code, "{result}");
    assert_eq!(result["is_error"], code != 0, "{result}");
    let subtype = result["subtype"].as_str().expect("subtype");
    assert_eq!(subtype == "success", code == 0, "{result}");
    assert!(
        subtype == "success" || subtype.starts_with("error_"),
        "{result}"
    );
    assert!(result["result"].is_string(), "{result}");
    assert!(result["num_turns"].is_u64(), "{result}");
    assert!(result["duration_ms"].is_u64(), "{result}");
    let cost = result["total_cost_usd"].as_f64().expect("total_cost_usd");
    assert!(cost >= 0.0 && !cost.is_sign_negative(), "{result}");
    assert!(!stdout.contains("-0.0"), "{stdout}");
    for key in [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ] {
        assert!(result["usage"][key].is_u64(), "usage.{key}: {result}");
    }
    result
}

async fn answered_project(answers: usize) -> (Project, ScriptedServer) {
    let project = Project::new();
    let server = ScriptedServer::start(
        (0..answers).map(|n| text(&format!("Answer {n}."), 500 + n as u64 * 100)),
    )
    .await;
    project.use_scripted(&server);
    (project, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_ends_with_a_claude_shaped_result() {
    let (project, _server) = answered_project(2).await;
    let output = project
        .cairn(&["run", "--format", "json", "a question"])
        .await;
    let result = the_one_result(&output);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["result"], "Answer 0.");
    assert_eq!(result["text"], "Answer 0.", "cairn's own field stays");
    assert_eq!(result["num_turns"], 1);
    assert!(
        result["session_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("ses"))
    );
    assert_eq!(result["usage"]["input_tokens"], 500);

    // claude's flag and mode names: the same JSON lines.
    let output = project
        .cairn(&[
            "run",
            "--continue",
            "--output-format",
            "stream-json",
            "again",
        ])
        .await;
    let result = the_one_result(&output);
    assert_eq!(result["result"], "Answer 1.");
    assert!(
        text_of(&output.stdout).lines().count() > 1,
        "the events come first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_commands_end_with_a_result() {
    let (project, _server) = answered_project(1).await;
    project.ok(&["run", "a question"]).await;
    for (command, code) in [("/diff", 0), ("/undo", 0), ("/redo", 0), ("/redo", 1)] {
        let output = project
            .cairn(&["run", "--continue", "--format", "json", command])
            .await;
        assert_eq!(
            output.status.code(),
            Some(code),
            "{command}: {}",
            describe(&output)
        );
        let result = the_one_result(&output);
        assert_eq!(result["total_cost_usd"], 0.0, "{command}: {result}");
        if command == "/diff" {
            assert_eq!(result["result"], "no files changed in this session\n");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_error_ends_with_a_result() {
    let (project, _server) = answered_project(1).await;
    let output = project.cairn(&["run", "--format", "json", "/new"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    let result = the_one_result(&output);
    assert_eq!(result["subtype"], "error_usage");
    assert_eq!(result["total_cost_usd"], 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_before_the_session_opens_end_with_a_result() {
    let (project, _server) = answered_project(1).await;
    let cases: [&[&str]; 2] = [
        &[
            "run",
            "--format",
            "json",
            "--continue",
            "nothing to continue",
        ],
        &["run", "--format", "json", "--session", "ses_none", "who?"],
    ];
    for args in cases {
        let output = project.cairn(args).await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            describe(&output)
        );
        let result = the_one_result(&output);
        assert_eq!(result["subtype"], "error_during_execution", "{result}");
        assert!(
            result["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{result}"
        );
    }
    std::fs::write(project.path("cairn.toml"), "model = [broken\n").expect("write config");
    let output = project.cairn(&["run", "--format", "json", "hi"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let result = the_one_result(&output);
    assert!(result["session_id"].is_null(), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_use_ends_with_a_result_and_exit_4() {
    let project = Project::new();
    let server =
        ScriptedServer::start([text("Started.", 300), scenario::text_then_stall("Working")]).await;
    project.use_scripted(&server);
    project.ok(&["run", "start"]).await;
    let _first = project
        .command(&["run", "--continue", "a long one"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the first run");
    tokio::time::timeout(Duration::from_secs(30), async {
        while server.requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the first run asks the model within 30 s");
    let output = project
        .cairn(&["run", "--continue", "--format", "json", "me too"])
        .await;
    assert_eq!(output.status.code(), Some(4), "{}", describe(&output));
    let result = the_one_result(&output);
    assert_eq!(result["subtype"], "error_session_busy");
}

/// Issue #31 part 5: a question refused because nobody can answer it
/// is still published (failed before `Permissions::unanswered`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_ask_is_published_as_permission_asked() {
    let project = Project::new();
    let server = ScriptedServer::start([
        scenario::tool_call(
            "call_1",
            "bash",
            serde_json::json!({ "command": "touch made.txt", "description": "make a file" }),
            500,
        ),
        text("I could not make the file.", 600),
    ])
    .await;
    project.use_scripted_with(&server, "yolo = false\n", "");
    let output = project
        .cairn(&["run", "--format", "json", "make a file"])
        .await;
    let stdout = text_of(&output.stdout);
    let asked: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "permission_asked")
        .collect();
    assert_eq!(asked.len(), 1, "{}", describe(&output));
    assert_eq!(asked[0]["request"]["permission"], "bash");
    assert!(!project.path("made.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toml_syntax_error_names_file_line_and_key() {
    let (project, _server) = answered_project(1).await;
    let config = project.path("cairn.toml");
    let text = std::fs::read_to_string(&config).expect("read config");
    std::fs::write(&config, format!("{text}\n[log]\nlevel = \n")).expect("write config");
    let line = text.lines().count() + 3;
    let output = project.cairn(&["run", "--format", "json", "hi"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let located = format!("{}:{line}: log.level: ", config.display());
    let stderr = text_of(&output.stderr);
    assert!(stderr.contains(&located), "want {located:?} in {stderr}");
    let result = the_one_result(&output);
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains(&located)),
        "{result}"
    );
}

/// `ulimit -f` as a shell sets it: a file size limit and SIGXFSZ left at its
/// default, which kills the process whose write crosses the limit.
fn with_ulimit_f(command: &mut tokio::process::Command, bytes: u64) {
    // SAFETY: between fork and exec only setrlimit (async-signal-safe) is
    // called, on the child's own limits.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_size_limit_is_reported_like_a_full_disk() {
    let project = Project::new();
    // Under the 4 MiB a streamed part keeps, over the 2 MiB limit below.
    let big = "y".repeat(3 * 1024 * 1024);
    let server = ScriptedServer::start([text(&big, 300)]).await;
    project.use_scripted(&server);
    let mut command = project.command(&["run", "--format", "json", "say a lot"]);
    with_ulimit_f(&mut command, 2 * 1024 * 1024);
    let output = tokio::time::timeout(Duration::from_secs(40), command.output())
        .await
        .expect("cairn ends promptly when a write fails")
        .expect("run cairn");
    // Not killed by SIGXFSZ (no exit code): the failed save is reported.
    assert_eq!(output.status.code(), Some(1), "{:?}", output.status);
    let result = the_one_result(&output);
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("may NOT be saved")),
        "{}",
        result["error"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_end_with_a_result() {
    let (project, server) = answered_project(1).await;
    let output = project.cairn(&["run", "--format", "json", "/models"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    the_one_result(&output);
    let first: Value = serde_json::from_str(text_of(&output.stdout).lines().next().unwrap_or(""))
        .expect("the models line");
    assert_eq!(first["type"], "models", "{first}");

    let output = project.cairn(&["run", "--format", "json", "/mcp"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    the_one_result(&output);
    assert!(server.requests().is_empty(), "listing calls no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_the_answer_ends_with_a_result_and_exit_3() {
    let project = Project::new();
    let server = ScriptedServer::start([
        // Fills the window: a compaction follows, and is refused.
        text("The answer is 42.", 190_000),
        crate::support::ScriptedResponse::json(
            400,
            r#"{"error":{"message":"summaries are not allowed","type":"invalid_request_error"}}"#,
        ),
    ])
    .await;
    project.use_scripted(&server);
    let output = project
        .cairn(&["run", "--format", "json", "what is the answer?"])
        .await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let result = the_one_result(&output);
    assert_eq!(result["subtype"], "error_after_answer");
    assert_eq!(result["result"], "The answer is 42.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_ends_with_a_result_and_exit_130() {
    let project = Project::new();
    let server = ScriptedServer::start([scenario::text_then_stall("Half of the answer")]).await;
    project.use_scripted(&server);
    let child = project
        .command(&["run", "--format", "json", "a long question"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    tokio::time::timeout(Duration::from_secs(30), async {
        while server.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the model is asked within 30 s");
    let pid = child.id().expect("cairn is running") as i32;
    // SAFETY: kill(2) on the child we spawned and still own.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("cairn stops within 10 s of Ctrl+C")
        .expect("wait for cairn");
    assert_eq!(output.status.code(), Some(130), "{}", describe(&output));
    let result = the_one_result(&output);
    assert_eq!(result["subtype"], "error_interrupted");
}
