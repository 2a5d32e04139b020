//! Custom slash commands through the real binary (issue #32): Claude Code's
//! and OpenCode's command files, run with `cairn run "/name args"`; the
//! scripted model's requests show what the command became.
//!
//! The files are copied in shape from public repositories: Claude Code's
//! documented `/fix-issue` example and the commit commands of
//! anthropics/claude-code's `commit-commands` plugin (front matter
//! `allowed-tools: Bash(git add:*), ...` and `` !`git status` `` lines), and
//! OpenCode's `command` table in `opencode.json`.

use crate::project::{Project, describe, text_of};
use crate::scenario::text;
use crate::support::ScriptedServer;

/// Every user message's content the model received, in the first request.
fn user_text(server: &ScriptedServer) -> String {
    let requests = server.requests();
    let first = requests.first().expect("the model was called").json();
    first["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match m["content"].as_str() {
            Some(text) => text.to_string(),
            None => m["content"].to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn write(project: &Project, name: &str, text: &str) {
    let path = project.path(name);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A project whose model answers once; asks are asked (no `yolo`).
async fn asking_project() -> (ScriptedServer, Project) {
    let server = ScriptedServer::start(vec![text("Done.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", "");
    (server, project)
}

const FIX_ISSUE: &str = "---\n\
description: Fix a GitHub issue\n\
argument-hint: [issue-number] [priority]\n\
---\n\
\n\
Fix issue #$1 with priority $2 following our coding standards.\n\
All arguments: $ARGUMENTS\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_source_of_commands_runs_with_its_arguments() {
    // (file, its text, the message, what the model must receive)
    let rows: &[(&str, &str, &str, &str)] = &[
        (
            ".claude/commands/fix-issue.md",
            FIX_ISSUE,
            "/fix-issue 123 high",
            "Fix issue #123 with priority high following our coding standards.\nAll arguments: 123 high",
        ),
        (
            ".claude/commands/frontend/component.md",
            "---\ndescription: Create a component\n---\nCreate a React component named $ARGUMENTS.\n",
            "/frontend:component Button",
            "Create a React component named Button.",
        ),
        (
            ".cairn/commands/explain.md",
            "Explain this code simply.\n",
            "/explain src/lib.rs",
            "Explain this code simply.\n\nARGUMENTS: src/lib.rs",
        ),
        (
            ".opencode/command/test.md",
            "---\ndescription: Run tests with coverage\nagent: build\n---\nRun the full test suite for $1.\n",
            "/test parser",
            "Run the full test suite for parser.",
        ),
        (
            "opencode.json",
            "{\n  // OpenCode allows comments\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"command\": {\n    \"component\": {\n      \"template\": \"Create a new component named $ARGUMENTS with TypeScript.\",\n      \"description\": \"Create a new component\",\n    },\n  },\n}\n",
            "/component Card",
            "Create a new component named Card with TypeScript.",
        ),
    ];
    let mut failures = Vec::new();
    for (file, body, message, expected) in rows {
        let (server, project) = asking_project().await;
        write(&project, file, body);
        let output = project.cairn(&["run", message]).await;
        let got = if server.requests().is_empty() {
            format!("no request; {}", describe(&output))
        } else {
            user_text(&server)
        };
        if output.status.code() != Some(0) || !got.contains(expected) || got.contains(message) {
            failures.push(format!("{file} {message}: {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n---\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_slash_word_is_still_text() {
    let (server, project) = asking_project().await;
    write(&project, ".claude/commands/fix-issue.md", FIX_ISSUE);
    let output = project.cairn(&["run", "/fix-issues 1 2"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(user_text(&server).contains("/fix-issues 1 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_command_shell_line_allowed_by_its_allowed_tools_runs() {
    let (server, project) = asking_project().await;
    let home_command = project.home.path().join(".claude/commands/status.md");
    std::fs::create_dir_all(home_command.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &home_command,
        "---\nallowed-tools: Bash(echo:*)\ndescription: Status\n---\n## Context\n\n- Marker: !`echo shell-said-$1`\n\nSummarise.\n",
    )
    .expect("write");
    let output = project.cairn(&["run", "/status hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let got = user_text(&server);
    assert!(got.contains("- Marker: shell-said-hi\n"), "{got}");
    assert!(!got.contains("!`"), "{got}");
}

const STAMP: &str = "---\n\
allowed-tools: Bash(touch:*)\n\
description: Stamp the tree\n\
---\n\
Stamped: !`touch stamped.txt`\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_line_no_rule_allows_is_refused_and_nothing_is_sent() {
    let (server, project) = asking_project().await;
    write(
        &project,
        ".claude/commands/touchy.md",
        "Touched: !`touch touched.txt`\n",
    );
    let output = project.cairn(&["run", "/touchy"]).await;
    let stderr = text_of(&output.stderr);
    assert!(
        !project.path("touched.txt").exists(),
        "{}",
        describe(&output)
    );
    assert!(server.requests().is_empty(), "the model was called");
    assert!(stderr.contains("touch touched.txt"), "{stderr}");
    assert!(stderr.contains("was not sent"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_commands_allowed_tools_wait_for_trust() {
    let (server, project) = asking_project().await;
    write(&project, ".claude/commands/stamp.md", STAMP);

    // Untrusted: the grant is not applied, the line is refused, and both the
    // start-up notice and the command say why.
    let output = project.cairn(&["run", "/stamp"]).await;
    let stderr = text_of(&output.stderr);
    assert!(
        !project.path("stamped.txt").exists(),
        "{}",
        describe(&output)
    );
    assert!(server.requests().is_empty(), "the model was called");
    assert!(stderr.contains("allowed-tools"), "{stderr}");
    assert!(stderr.contains("trust"), "{stderr}");

    // Trusted: the same line runs, and the model gets the prompt.
    project.trust();
    let output = project.cairn(&["run", "/stamp"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        project.path("stamped.txt").exists(),
        "{}",
        describe(&output)
    );
    assert!(
        user_text(&server).contains("Stamped: "),
        "{}",
        user_text(&server)
    );

    // An edit to the grant asks again.
    write(
        &project,
        ".claude/commands/stamp.md",
        &STAMP.replace("Bash(touch:*)", "Bash(touch:*), Bash(rm:*)"),
    );
    std::fs::remove_file(project.path("stamped.txt")).expect("rm");
    let output = project.cairn(&["run", "/stamp"]).await;
    assert!(
        !project.path("stamped.txt").exists(),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_reference_in_a_command_attaches_the_file() {
    let (server, project) = asking_project().await;
    write(&project, "src/lib.rs", "pub fn marker_fn_for_review() {}\n");
    std::fs::write(
        project.home.path().join("notes.txt"),
        "home-secret-marker\n",
    )
    .expect("write");
    write(
        &project,
        ".claude/commands/review.md",
        "---\ndescription: Review a file\n---\nReview the implementation in @src/lib.rs\nSee also @~/notes.txt\n",
    );
    let output = project.cairn(&["run", "/review"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let got = user_text(&server);
    assert!(got.contains("marker_fn_for_review"), "{got}");
    // The repository's command may not attach the user's own files.
    assert!(!got.contains("home-secret-marker"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_custom_commands_and_reports_a_clash_with_a_built_in() {
    let project = Project::new();
    write(
        &project,
        ".claude/commands/frontend/component.md",
        "---\ndescription: Create a component\nargument-hint: [name]\n---\nx\n",
    );
    write(&project, ".claude/commands/help.md", "My own help\n");
    let output = project.cairn(&["run", "/help"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stdout = text_of(&output.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with("/frontend:component [name] "));
    assert!(
        row.is_some_and(|l| l.ends_with("Create a component (project)")),
        "{stdout}"
    );
    assert!(
        stdout.contains("has the name of a built-in command: the built-in runs"),
        "{stdout}"
    );
    assert!(!stdout.contains("My own help"), "{stdout}");
}

/// `/init` (issue #34) comes with cairn: the model is asked to explore the
/// repository and write or improve AGENTS.md (through the usual asks); a
/// project's own `/init` file replaces it; `/help` lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_asks_the_model_for_agents_md_and_a_projects_file_replaces_it() {
    let (server, project) = asking_project().await;
    let help = project.ok(&["run", "/help"]).await;
    assert!(help.contains("/init"), "{help}");
    project.ok(&["run", "/init", "focus on the tests"]).await;
    let sent = user_text(&server);
    assert!(
        sent.contains("write an AGENTS.md file") && sent.contains("focus on the tests"),
        "{sent}"
    );

    let (server, project) = asking_project().await;
    write(
        &project,
        ".claude/commands/init.md",
        "Our own init: $ARGUMENTS\n",
    );
    project.ok(&["run", "/init now"]).await;
    let sent = user_text(&server);
    assert!(sent.contains("Our own init: now"), "{sent}");
    assert!(!sent.contains("AGENTS.md file"), "{sent}");
}

/// The fifth blind review of trust (#28): a mention built from an empty
/// argument (`@$1~/notes.txt`) and a mention printed by a `!` line attached
/// the user's files; the fence now holds after the arguments and outputs are
/// in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_made_by_arguments_or_shell_output_attach_nothing() {
    let server = ScriptedServer::start(vec![text("Done.", 1_000), text("Done.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", "[permission.bash]\n\"printf *\" = \"allow\"\n");
    std::fs::write(
        project.home.path().join("notes.txt"),
        "home-secret-marker\n",
    )
    .expect("write");
    write(&project, ".claude/commands/c5.md", "P @$1~/notes.txt Q\n");
    write(
        &project,
        ".claude/commands/c3.md",
        "Look: !`printf '%s%s\\n' '@' '~/notes.txt'`\n",
    );
    for command in ["/c5", "/c3"] {
        let output = project.cairn(&["run", command]).await;
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    }
    for request in server.requests() {
        let body = request.json().to_string();
        assert!(!body.contains("home-secret-marker"), "{body}");
    }
    assert_eq!(server.requests().len(), 2);
}
