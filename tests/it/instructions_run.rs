//! CLAUDE.md and AGENTS.md through `cairn run`, read from the request the
//! scripted server receives: `@path` imports as Claude Code makes them
//! (shape of public repositories' CLAUDE.md: `@AGENTS.md`, `@docs/...`),
//! with the refusals of mentions; which files a directory tree gives; the
//! folder's file attached when the model first reads there.

use crate::project::{Project, describe};
use crate::scenario::{text, tool_call};
use crate::support::{RecordedRequest, ScriptedServer};

use serde_json::json;

/// The system prompt of `request` (the first message, as the OpenAI wire
/// sends it), as text.
fn system(request: &RecordedRequest) -> String {
    let body = request.json();
    match &body["messages"][0]["content"] {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn write(project: &Project, name: &str, text: &str) {
    let path = project.path(name);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
    std::fs::write(path, text).expect("write");
}

async fn first_system(project: &Project) -> (String, std::process::Output) {
    let server = ScriptedServer::start([text("ok", 300)]).await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{}", describe(&output));
    (system(&requests[0]), output)
}

/// Each row: what the import names, whether its marker reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_md_imports_follow_claude_codes_rules() {
    let project = Project::new();
    project.git(&["init", "-q"]);
    let home = project.home.path();
    std::fs::create_dir_all(home.join(".ssh")).expect("ssh dir");
    std::fs::write(home.join(".ssh/id_rsa"), "IMPORT-SSH-KEY").expect("key");
    std::fs::write(home.join("notes.md"), "IMPORT-HOME-NOTES").expect("notes");
    std::os::unix::fs::symlink(home.join("notes.md"), project.path("linked.md")).expect("link");
    write(&project, "AGENTS.md", "IMPORT-AGENTS-MD");
    write(&project, "docs/style.md", "IMPORT-STYLE\nsee @deeper.md");
    write(&project, "docs/deeper.md", "IMPORT-DEEPER-RELATIVE");
    // A chain of imports: CLAUDE.md is depth 0, so chain/4.md (depth 4) is
    // read and chain/5.md (depth 5) is past Claude Code's limit.
    write(&project, "chain/1.md", "IMPORT-HOP-1 @2.md");
    write(&project, "chain/2.md", "IMPORT-HOP-2 @3.md");
    write(&project, "chain/3.md", "IMPORT-HOP-3 @4.md");
    write(&project, "chain/4.md", "IMPORT-HOP-4 @5.md");
    write(&project, "chain/5.md", "IMPORT-HOP-5 @6.md");
    write(&project, "chain/6.md", "IMPORT-HOP-6");
    write(&project, "span.md", "IMPORT-IN-CODE-SPAN");
    write(&project, "block.md", "IMPORT-IN-CODE-BLOCK");
    write(&project, "loop.md", "IMPORT-LOOP @loop.md");
    let outside = project
        .root
        .path()
        .parent()
        .expect("a parent")
        .join(format!("outside-{}.md", std::process::id()));
    std::fs::write(&outside, "IMPORT-OUTSIDE-PROJECT").expect("outside");
    let claude_md = format!(
        "# Project\n\n@AGENTS.md\n\nStyle: @docs/style.md\n\n- @chain/1.md\n- @loop.md\n\n\
         Not an import: `@span.md`, nor:\n\n```\n@block.md\n```\n\n\
         Refused: @linked.md @~/.ssh/id_rsa @../{} @~/notes.md @missing.md\n",
        outside.file_name().expect("name").to_string_lossy()
    );
    write(&project, "CLAUDE.md", &claude_md);
    let (system, output) = first_system(&project).await;
    std::fs::remove_file(&outside).ok();
    let rows = [
        ("IMPORT-AGENTS-MD", true),
        ("IMPORT-STYLE", true),
        ("IMPORT-DEEPER-RELATIVE", true),
        ("IMPORT-HOP-1", true),
        ("IMPORT-HOP-4", true),
        ("IMPORT-HOP-5", false),
        ("IMPORT-HOP-6", false),
        ("IMPORT-LOOP", true),
        ("IMPORT-IN-CODE-SPAN", false),
        ("IMPORT-IN-CODE-BLOCK", false),
        ("IMPORT-HOME-NOTES", false),
        ("IMPORT-SSH-KEY", false),
        ("IMPORT-OUTSIDE-PROJECT", false),
    ];
    let wrong: Vec<String> = rows
        .iter()
        .filter(|(marker, want)| system.contains(marker) != *want)
        .map(|(marker, want)| format!("{marker}: want sent = {want}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{wrong:#?}\n{system}\n{}",
        describe(&output)
    );
    assert_eq!(system.matches("IMPORT-LOOP").count(), 1, "{system}");
    assert_eq!(system.matches("IMPORT-AGENTS-MD").count(), 1, "{system}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("linked.md"), "{}", describe(&output));
}

/// An AGENTS.md at the root no longer hides the CLAUDE.md of the folder
/// cairn runs in: each folder gives its AGENTS.md and its CLAUDE.md, a copy
/// of a file already sent being sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_md_above_does_not_hide_a_claude_md_below() {
    let project = Project::new();
    project.git(&["init", "-q"]);
    write(&project, "AGENTS.md", "ROOT-AGENTS");
    write(&project, "CLAUDE.md", "ROOT-CLAUDE-BESIDE-AGENTS");
    write(&project, "app/CLAUDE.md", "APP-CLAUDE");
    write(&project, "app/AGENTS.md", "APP-CLAUDE\n");
    let server = ScriptedServer::start([text("ok", 300)]).await;
    project.use_scripted(&server);
    let mut command = project.command(&["run", "hello"]);
    command.current_dir(project.path("app"));
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("cairn finishes within 60 s")
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let system = system(&server.requests()[0]);
    assert!(system.contains("ROOT-AGENTS"), "{system}");
    assert_eq!(system.matches("APP-CLAUDE").count(), 1, "{system}");
    assert!(system.contains("ROOT-CLAUDE-BESIDE-AGENTS"), "{system}");
}

/// The model reads a file in `pkg/api/`: that folder's CLAUDE.md (and the
/// AGENTS.md of `pkg/`) come with the read's result, once per folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subfolders_instructions_come_with_the_first_read_there() {
    let project = Project::new();
    project.git(&["init", "-q"]);
    write(&project, "AGENTS.md", "ROOT-RULES");
    write(&project, "pkg/AGENTS.md", "PKG-RULES");
    write(&project, "pkg/api/CLAUDE.md", "API-RULES");
    write(&project, "pkg/api/handler.rs", "fn handler() {}\n");
    write(&project, "pkg/api/routes.rs", "fn routes() {}\n");
    let read = |id: &str, file: &str| {
        tool_call(
            id,
            "read",
            json!({ "file_path": project.path(file).display().to_string() }),
            400,
        )
    };
    let server = ScriptedServer::start([
        read("call_1", "pkg/api/handler.rs"),
        read("call_2", "pkg/api/routes.rs"),
        text("Read both.", 600),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "read the api"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&output));
    let first = requests[0].json().to_string();
    assert!(first.contains("ROOT-RULES"), "{first}");
    assert!(!first.contains("API-RULES") && !first.contains("PKG-RULES"));
    let last = requests[2].json().to_string();
    assert_eq!(last.matches("API-RULES").count(), 1, "{last}");
    assert_eq!(last.matches("PKG-RULES").count(), 1, "{last}");
    assert_eq!(last.matches("ROOT-RULES").count(), 1, "{last}");
}
