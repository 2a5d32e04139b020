//! Failures of the loop as a user meets them through the real `cairn run`:
//! a session opened twice at once is refused clearly (issue 12), never
//! answered twice.

use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support;

use std::time::{Duration, Instant};

use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

/// The model's bash call says it is running, then waits for the test's go.
const GATED_COMMAND: &str = "touch ready; while [ ! -e go ]; do sleep 0.05; done; echo ran";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_on_a_session_in_use_is_refused_with_exit_4_and_sends_nothing() {
    let project = Project::new();
    let server = ScriptedServer::start([
        text("Started.", 300),
        tool_call(
            "call_gate",
            "bash",
            json!({ "command": GATED_COMMAND, "description": "wait for go" }),
            500,
        ),
        text("First run done.", 700),
        text("Third run done.", 900),
    ])
    .await;
    project.use_scripted(&server);
    project.ok(&["run", "start"]).await;

    let first = project
        .command(&["run", "--continue", "run the gated command"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the first run");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !project.path("ready").exists() {
        assert!(Instant::now() < deadline, "the bash tool never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let requests_before = server.requests().len();

    let started = Instant::now();
    let second = project.cairn(&["run", "--continue", "answer me too"]).await;
    assert_eq!(second.status.code(), Some(4), "{}", describe(&second));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused promptly: {:?}",
        started.elapsed()
    );
    let stderr = text_of(&second.stderr);
    let pid = first.id().expect("the first run is alive");
    assert!(
        stderr.contains(&format!("is in use by another cairn (pid {pid})")),
        "{stderr}"
    );
    assert!(text_of(&second.stdout).is_empty(), "{}", describe(&second));
    assert_eq!(
        server.requests().len(),
        requests_before,
        "the second sent nothing"
    );

    // The TUI opening the same session refuses the same way, before taking the screen.
    let tui = crate::tui_pty::Terminal::start(
        project.root.path(),
        &project.data_dir(),
        &project.home.path().join("config"),
        &["--continue"],
    );
    tui.wait_for("the TUI's refusal", |screen| {
        screen.contains("is in use by another cairn")
    });
    assert_eq!(
        server.requests().len(),
        requests_before,
        "the TUI sent nothing"
    );

    std::fs::write(project.path("go"), "").expect("let the command finish");
    let first = tokio::time::timeout(Duration::from_secs(60), first.wait_with_output())
        .await
        .expect("the first run ends")
        .expect("wait for the first run");
    assert_eq!(first.status.code(), Some(0), "{}", describe(&first));
    assert!(text_of(&first.stdout).contains("First run done."));
    // The running tool was not "recovered" as crashed by the refused opener.
    assert!(
        !text_of(&first.stderr).contains("interrupted"),
        "{}",
        describe(&first)
    );

    // Released with the first process: the session continues.
    let third = project.ok(&["run", "--continue", "and now?"]).await;
    assert!(third.contains("Third run done."), "{third}");
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json().to_string())
        .collect();
    assert!(
        prompts.iter().all(|body| !body.contains("answer me too")),
        "the refused message never reached the model"
    );
}

/// A file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so writes fail with
/// EFBIG as on a full disk) that the database outgrows while saving the answer.
fn with_file_size_limit(command: &mut tokio::process::Command, bytes: u64) {
    // SAFETY: between fork and exec only async-signal-safe calls (setrlimit,
    // signal) are made, on the child's own state.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_big_to_save_is_an_error_with_exit_1_not_a_hang() {
    let project = Project::new();
    // Under the 4 MiB a streamed part keeps, over the 2 MiB limit below.
    let big = "y".repeat(3 * 1024 * 1024);
    let server = ScriptedServer::start([text(&big, 300)]).await;
    project.use_scripted(&server);
    let mut command = project.command(&["run", "say a lot"]);
    with_file_size_limit(&mut command, 2 * 1024 * 1024);
    let started = Instant::now();
    let output = tokio::time::timeout(Duration::from_secs(40), command.output())
        .await
        .expect("cairn ends promptly when a write fails")
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(1), "{}", describe_short(&output));
    let stderr = text_of(&output.stderr);
    assert!(stderr.contains("may NOT be saved"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(server.requests().len(), 1, "no retry of a failed write");

    // Space again: the next --continue answers (it neither hangs nor repeats the error).
    server.push(text("Recovered.", 400));
    let again = project.cairn(&["run", "--continue", "again"]).await;
    assert_eq!(again.status.code(), Some(0), "{}", describe_short(&again));
    assert!(text_of(&again.stdout).contains("Recovered."));
}

/// Like `describe`, without megabytes of stdout.
fn describe_short(output: &std::process::Output) -> String {
    format!(
        "exit {:?}, {} bytes of stdout\n--- stderr\n{}",
        output.status.code(),
        output.stdout.len(),
        text_of(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_a_run_waiting_on_a_silent_server() {
    let project = Project::new();
    let server = ScriptedServer::start([support::ScriptedResponse::no_answer()]).await;
    project.use_scripted(&server);
    let child = project
        .command(&["run", "hello?"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "the request never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = child.id().expect("cairn is running") as i32;
    // SAFETY: kill(2) on the child we spawned and still own.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = tokio::time::timeout(Duration::from_secs(7), child.wait_with_output())
        .await
        .expect("cairn ends within 7 s of one Ctrl+C, the server still silent")
        .expect("wait for cairn");
    assert_eq!(output.status.code(), Some(130), "{}", describe(&output));
    assert!(text_of(&output.stderr).contains("Ctrl+C: interrupting"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_bigger_than_the_window_exits_1_after_a_bounded_few_requests() {
    let project = Project::new();
    let overflow = || {
        support::ScriptedResponse::json(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 30000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        )
    };
    let server = ScriptedServer::start((0..40).map(|_| overflow())).await;
    project.use_scripted(&server);
    let huge = "word ".repeat(20_000);
    let started = Instant::now();
    let output = project.cairn(&["run", &huge]).await;
    let stderr = text_of(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        text_of(&output.stdout).trim().is_empty(),
        "{}",
        describe(&output)
    );
    let requests = server.requests().len();
    assert!(requests <= 6, "{requests} requests: {stderr}");
    assert!(
        stderr.contains("error: your message alone does not fit the model's context window"),
        "{stderr}"
    );
    assert!(!stderr.contains("/prune"), "pruning cannot help: {stderr}");
}

/// An answer that passes the 4 MiB a streamed part keeps is cut there, and
/// the run says the answer is incomplete (it must not pass for a whole one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_at_the_part_cap_is_not_a_success() {
    let project = Project::new();
    let big = "y".repeat(6 * 1024 * 1024);
    let server = ScriptedServer::start([text(&big, 300)]).await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "say a lot"]).await;
    assert_ne!(output.status.code(), Some(0), "{}", describe_short(&output));
    let stderr = text_of(&output.stderr);
    assert!(stderr.contains("passed 4 MiB without ending"), "{stderr}");
}
