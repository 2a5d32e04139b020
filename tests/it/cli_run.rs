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
    // The run ends on the idle status, and the tool and answer are in between.
    let last = events.last().expect("events");
    assert_eq!(last["type"], "status");
    assert_eq!(last["status"]["type"], "idle");
    assert!(events.iter().any(|e| e["type"] == "part_updated"
        && e["part"]["tool"] == "list"
        && e["part"]["state"]["status"] == "completed"));
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "part_delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(streamed, "Nothing much here.");
}

/// Runs `cairn run` with `config` as the project file and no provider keys.
async fn run_without_keys(config: &str) -> Output {
    let project = Project::new();
    std::fs::write(project.path("cairn.toml"), config).expect("write cairn.toml");
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
    // Interrupt once the partial answer has been printed, as a user would.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut printed = Vec::new();
    let mut piece = [0u8; 4096];
    while !text_of(&printed).contains("Half of the answer") {
        let read = tokio::time::timeout(Duration::from_secs(20), stdout.read(&mut piece))
            .await
            .expect("the partial answer is printed within 20 s")
            .expect("read cairn's stdout");
        assert!(read > 0, "stdout closed early: {}", text_of(&printed));
        printed.extend_from_slice(&piece[..read]);
    }
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
