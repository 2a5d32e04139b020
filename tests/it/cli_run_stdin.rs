//! `cairn run` takes its prompt from stdin, as `claude -p` does (issue #31):
//! piped with no message or with `-`, and attached below a message given on
//! the command line. The real binary, stdin a pipe this test writes.

use crate::project::{Project, describe, text_of};
use crate::scenario::{message_text, messages_of, text};
use crate::support::ScriptedServer;

use std::process::Output;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs `cairn run ARGS` with `input` written to its stdin, then closed.
async fn run_with_stdin(project: &Project, args: &[&str], input: &str) -> Output {
    let mut command_args = vec!["run"];
    command_args.extend_from_slice(args);
    let mut child = project
        .command(&command_args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin
        .write_all(input.as_bytes())
        .await
        .expect("write cairn's stdin");
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("cairn finishes within 60 s")
        .expect("wait for cairn")
}

/// The text of the last user message the model was sent.
fn sent_prompt(server: &ScriptedServer) -> String {
    let request = server.requests().last().expect("a request").json();
    let last_user = messages_of(&request)
        .into_iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    message_text(&last_user)
}

async fn project_answering() -> (Project, ScriptedServer) {
    let project = Project::new();
    let server = ScriptedServer::start([text("Done.", 500)]).await;
    project.use_scripted(&server);
    (project, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_prompt_with_no_message_is_sent() {
    let (project, server) = project_answering().await;
    let output = run_with_stdin(&project, &[], "what is in here?\n").await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Done.\n");
    assert!(
        sent_prompt(&server).ends_with("what is in here?"),
        "{}",
        sent_prompt(&server)
    );
    assert!(!sent_prompt(&server).contains("<stdin>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dash_reads_the_prompt_from_stdin() {
    let (project, server) = project_answering().await;
    let output = run_with_stdin(&project, &["-"], "summarise the notes\n").await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let sent = sent_prompt(&server);
    assert!(sent.ends_with("summarise the notes"), "{sent}");
    assert!(!sent.ends_with("-"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_and_piped_stdin_are_both_sent() {
    let (project, server) = project_answering().await;
    let output = run_with_stdin(&project, &["explain this code"], "fn main() {}\n").await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let sent = sent_prompt(&server);
    assert!(
        sent.ends_with("explain this code\n\n<stdin>\nfn main() {}\n</stdin>"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_with_empty_stdin_is_just_the_message() {
    let (project, server) = project_answering().await;
    let output = run_with_stdin(&project, &["just this"], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let sent = sent_prompt(&server);
    assert!(sent.ends_with("just this"), "{sent}");
    assert!(!sent.contains("<stdin>"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_message_and_empty_stdin_is_a_usage_error() {
    let (project, server) = project_answering().await;
    let output = run_with_stdin(&project, &["--format", "json"], "").await;
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        text_of(&output.stderr).contains("no message"),
        "{}",
        describe(&output)
    );
    assert!(text_of(&output.stdout).contains("\"subtype\":\"error_usage\""));
    assert!(server.requests().is_empty());
}

/// A stdin left open and silent (a parent that never closes its pipe) keeps
/// the run waiting, as `claude -p` does; stderr says why, and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_open_stdin_is_said_to_be_waited_for() {
    let (project, server) = project_answering().await;
    let mut child = project
        .command(&["run", "the message"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    let stdin = child.stdin.take().expect("stdin is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let mut said = Vec::new();
    let mut piece = [0u8; 1024];
    while !text_of(&said).contains("< /dev/null") {
        let read = tokio::time::timeout(Duration::from_secs(20), stderr.read(&mut piece))
            .await
            .unwrap_or_else(|_| panic!("nothing said within 20 s: {}", text_of(&said)))
            .expect("read cairn's stderr");
        assert!(read > 0, "stderr closed early: {}", text_of(&said));
        said.extend_from_slice(&piece[..read]);
    }
    assert!(
        server.requests().is_empty(),
        "nothing sent while stdin is open"
    );
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("cairn finishes once stdin is closed")
        .expect("wait for cairn");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(sent_prompt(&server).ends_with("the message"));
}

/// Issue #28's third blind review: `cat TODO.md | cairn run` sent a file
/// outside the project that the piped TODO `@`-mentioned. Text piped as the
/// whole message (no words, or `-`) attaches nothing, as the `<stdin>`
/// block below typed words does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_in_a_wholly_piped_message_attach_nothing() {
    let outside = tempfile::tempdir().expect("outside");
    let secret = outside.path().join("notes.txt");
    std::fs::write(&secret, "NOTESECRET-ZQX2").expect("write");
    for args in [&[][..], &["-"][..]] {
        let (project, server) = project_answering().await;
        let todo = format!("Fix the TODO in @{}\n", secret.display());
        let output = run_with_stdin(&project, args, &todo).await;
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let sent = server
            .requests()
            .last()
            .expect("a request")
            .json()
            .to_string();
        assert!(!sent.contains("NOTESECRET-ZQX2"), "{args:?}: {sent}");
        assert!(sent.contains("Fix the TODO in @"), "{sent}");
    }
}
