//! Slash commands in `cairn run` (issue #12, headless parity): the real
//! binary, the scripted server as the model. A command runs; it is never
//! sent to the model as text.

use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support;

use scenario::text;
use support::ScriptedServer;

/// A project on the scripted server, after a first run so that `--continue`
/// has a session with an answer.
async fn answered_project(server: &ScriptedServer) -> Project {
    let project = Project::new();
    project.use_scripted(server);
    let output = project
        .cairn(&["run", "what is the capital of France?"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    project
}

/// Every message text the model received in `request`.
fn said(request: &support::RecordedRequest) -> String {
    request.json()["messages"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_with_a_focus_asks_for_a_summary_with_it_and_prints_it() {
    let server = ScriptedServer::start([
        text("The capital is Paris.", 300),
        text("SUMMARY: the user asked about Paris.", 400),
    ])
    .await;
    let project = answered_project(&server).await;
    let output = project
        .cairn(&["run", "--continue", "/compact focus on the capital cities"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the answer, then the summary");
    let summary_request = said(&requests[1]);
    assert!(
        summary_request.contains("focus on the capital cities"),
        "{summary_request}"
    );
    assert!(!summary_request.contains("/compact"), "{summary_request}");
    assert_eq!(
        text_of(&output.stdout),
        "SUMMARY: the user asked about Paris.\n"
    );
    assert!(
        text_of(&output.stderr).contains("compacted the conversation (manual)"),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_prints_the_breakdown_without_calling_the_model() {
    let server = ScriptedServer::start([text("The capital is Paris.", 300)]).await;
    let project = answered_project(&server).await;
    let output = project.cairn(&["run", "--continue", "/context"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(server.requests().len(), 1, "no model call for /context");
    let stdout = text_of(&output.stdout);
    assert!(stdout.starts_with("system prompt "), "{stdout}");
    assert!(stdout.contains("\nfree "), "{stdout}");
    assert!(
        stdout.contains(" usable (200,000 window - 32,000 for output)"),
        "{stdout}"
    );

    let json = project
        .cairn(&["run", "--continue", "--format", "json", "/context"])
        .await;
    assert_eq!(json.status.code(), Some(0), "{}", describe(&json));
    let events: Vec<serde_json::Value> = text_of(&json.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
        .collect();
    let context = events
        .iter()
        .find(|e| e["type"] == "context")
        .expect("a context event");
    assert_eq!(context["breakdown"]["gauge"]["context"], 200_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_runs_and_the_model_never_reads_it() {
    let server = ScriptedServer::start([
        text("The capital is Paris.", 300),
        text("You are welcome.", 400),
    ])
    .await;
    let project = answered_project(&server).await;
    let pruned = project.cairn(&["run", "--continue", "/prune"]).await;
    assert_eq!(pruned.status.code(), Some(0), "{}", describe(&pruned));
    assert_eq!(server.requests().len(), 1, "no model call for /prune");
    assert!(
        text_of(&pruned.stdout).contains("prune"),
        "the prune's report is the answer: {}",
        describe(&pruned)
    );
    let thanks = project.cairn(&["run", "--continue", "thanks"]).await;
    assert_eq!(thanks.status.code(), Some(0), "{}", describe(&thanks));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let history = said(&requests[1]);
    assert!(history.contains("thanks"), "{history}");
    assert!(!history.contains("/prune"), "{history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_writes_the_session_as_markdown_and_prints_the_path() {
    let server = ScriptedServer::start([text("The capital is Paris.", 300)]).await;
    let project = answered_project(&server).await;
    let output = project.cairn(&["run", "--continue", "/export"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(server.requests().len(), 1, "no model call for /export");
    let stdout = text_of(&output.stdout);
    let path = std::path::Path::new(stdout.trim_end());
    // Into the data dir, never the repository as an untracked file.
    assert_eq!(
        path.parent(),
        Some(project.data_dir().join("exports").as_path()),
        "{stdout}"
    );
    let markdown = std::fs::read_to_string(path).expect("read the export");
    assert!(
        markdown.contains("## You\n\nwhat is the capital of France?"),
        "{markdown}"
    );
    assert!(markdown.contains("The capital is Paris."), "{markdown}");
    let untracked: Vec<_> = std::fs::read_dir(project.root.path())
        .expect("project dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".md"))
        .collect();
    assert!(untracked.is_empty(), "{untracked:?}");
    // A path given is relative to the session's directory.
    let output = project
        .cairn(&["run", "--continue", "/export notes/talk.md"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let given = project.root.path().join("notes/talk.md");
    assert_eq!(
        text_of(&output.stdout).trim_end(),
        given.display().to_string()
    );
    assert!(
        std::fs::read_to_string(&given)
            .expect("the given path")
            .contains("The capital is Paris.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screen_command_is_a_usage_error_and_a_path_is_text() {
    let server = ScriptedServer::start([text("That file lists host names.", 300)]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let output = project.cairn(&["run", "/agent", "plan"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        text_of(&output.stderr).contains("pass --agent NAME"),
        "{}",
        describe(&output)
    );
    assert!(server.requests().is_empty());

    let output = project.cairn(&["run", "/etc/hosts: what is it for?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(said(&server.requests()[0]).contains("/etc/hosts: what is it for?"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_lists_the_remembered_answers_without_calling_the_model() {
    let server = ScriptedServer::start([text("The capital is Paris.", 300)]).await;
    let project = answered_project(&server).await;
    let output = project.cairn(&["run", "--continue", "/permissions"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(server.requests().len(), 1, "no model call for /permissions");
    assert!(
        text_of(&output.stdout).contains("no remembered permissions"),
        "{}",
        describe(&output)
    );
    let bad = project
        .cairn(&["run", "--continue", "/permissions revoke x"])
        .await;
    assert_eq!(bad.status.code(), Some(2), "{}", describe(&bad));
    assert_eq!(server.requests().len(), 1);
}

/// Issue #26: a message whose first word merely starts like a command
/// (`/mcp.json`) was taken as `/mcp` by a prefix match and never reached the
/// model. Commands match by whole name; anything else is the user's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_that_starts_like_a_command_reaches_the_model() {
    let server = ScriptedServer::start([
        text("Its braces do not match.", 300),
        text("That file lists host names.", 300),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    for (i, message) in ["/mcp.json is broken, why?", "/etc/hosts is empty?"]
        .into_iter()
        .enumerate()
    {
        let output = project.cairn(&["run", message]).await;
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), i + 1, "{message:?} reaches the model");
        assert!(
            said(&requests[i]).contains(message),
            "{}",
            said(&requests[i])
        );
    }
}

/// `cairn run /help` prints the slash-command table, the same one the TUI's
/// `/help` shows (both are generated from `cairn::slash::COMMANDS`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_prints_the_one_command_table() {
    let server = ScriptedServer::start([]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let output = project.cairn(&["run", "/help"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(server.requests().is_empty(), "no model call for /help");
    // The table, then the custom commands: here only `/init`, which comes
    // with cairn.
    let shown = text_of(&output.stdout);
    let table = cairn::slash::help_text(cairn::slash::FrontEnd::Run);
    assert_eq!(
        shown.strip_prefix(&table),
        Some(
            "\ncustom commands:\n/init [what to focus on]  explore the repository and write or update AGENTS.md (built in)\n"
        ),
        "{shown}"
    );
    // The README's text and the table agree on where /export writes.
    assert!(
        text_of(&output.stdout).contains("/export [path]"),
        "{}",
        describe(&output)
    );
}
