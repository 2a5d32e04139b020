//! Claude Code's `.claude/settings.json` permissions through the real binary
//! (issue #32): the scripted model asks to read a denied path and to run a
//! command; `cairn run` answers as the rules say, before and after trust.
//!
//! The files are copied in shape from Claude Code's documented settings
//! example (`permissions.allow` / `ask` / `deny` with `Bash(npm run test:*)`,
//! `Read(./secrets/**)`) as public repositories commit it.

use serde_json::json;

use crate::permission_shell_run::tool_result;
use crate::project::{Project, describe, text_of};
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;

/// The model reads `secrets/key.txt`, then runs `touch made.txt`; the
/// same twice, for a run before and one after trust.
fn read_then_touch() -> Vec<crate::support::ScriptedResponse> {
    let once = || {
        [
            tool_call(
                "call_read",
                "read",
                json!({ "path": "secrets/key.txt" }),
                1_000,
            ),
            tool_call(
                "call_touch",
                "bash",
                json!({ "command": "touch made.txt" }),
                1_000,
            ),
            text("Done.", 1_000),
        ]
    };
    once().into_iter().chain(once()).collect()
}

/// A project (no `yolo`: what no rule allows is refused, as nobody can be
/// asked) with `settings` as its `.claude/settings.json`.
async fn project_with(settings: &serde_json::Value, tables: &str) -> (ScriptedServer, Project) {
    let server = ScriptedServer::start(read_then_touch()).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", tables);
    std::fs::create_dir_all(project.path("secrets")).expect("mkdir");
    std::fs::write(project.path("secrets/key.txt"), "sk-secret-marker\n").expect("write");
    std::fs::create_dir_all(project.path(".claude")).expect("mkdir");
    std::fs::write(project.path(".claude/settings.json"), settings.to_string()).expect("write");
    (server, project)
}

/// What one run did: (read was denied, the file was made), and stderr.
async fn run(project: &Project, server: &ScriptedServer) -> (bool, bool, String) {
    let _ = std::fs::remove_file(project.path("made.txt"));
    let output = project.cairn(&["run", "read the key, then touch"]).await;
    let read = tool_result(server, "call_read");
    assert!(output.status.code().is_some(), "{}", describe(&output));
    let denied = !read.contains("sk-secret-marker") && read.contains("denied");
    (
        denied,
        project.path("made.txt").exists(),
        text_of(&output.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_deny_applies_at_once_and_its_allow_waits_for_trust() {
    let settings = json!({ "permissions": {
        "allow": ["Bash(touch:*)"],
        "deny": ["Read(./secrets/**)"],
    }});
    let (server, project) = project_with(&settings, "").await;
    let (denied, made, stderr) = run(&project, &server).await;
    assert!(
        denied,
        "untrusted: the deny must hold: {}",
        tool_result(&server, "call_read")
    );
    assert!(!made, "untrusted: the allow applied: {stderr}");
    assert!(stderr.contains("permissions.allow"), "{stderr}");

    project.trust();
    let (denied, made, stderr) = run(&project, &server).await;
    assert!(denied, "trusted: {}", tool_result(&server, "call_read"));
    assert!(made, "trusted: the allow did not apply: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_ask_holds_over_cairns_allow_trusted_or_not() {
    let settings = json!({ "permissions": { "ask": ["Bash(touch:*)"] } });
    let tables = "[permission.bash]\n\"touch *\" = \"allow\"\n";
    let (server, project) = project_with(&settings, tables).await;
    let (_, made, stderr) = run(&project, &server).await;
    assert!(!made, "untrusted: {stderr}");
    assert!(
        tool_result(&server, "call_touch").contains("refused"),
        "{}",
        tool_result(&server, "call_touch")
    );
    project.trust();
    let (_, made, stderr) = run(&project, &server).await;
    assert!(!made, "trusted: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_own_settings_apply_without_trust() {
    let (server, project) = project_with(&json!({}), "").await;
    std::fs::create_dir_all(project.home.path().join(".claude")).expect("mkdir");
    std::fs::write(
        project.home.path().join(".claude/settings.json"),
        json!({ "permissions": {
            "allow": ["Bash(touch:*)"],
            "deny": ["Read(./secrets/**)"],
        }})
        .to_string(),
    )
    .expect("write");
    let (denied, made, stderr) = run(&project, &server).await;
    assert!(denied, "{}", tool_result(&server, "call_read"));
    assert!(made, "{stderr}");
    assert!(!stderr.contains("permissions.allow"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_cairn_cannot_map_is_named_with_its_file() {
    let settings = json!({ "permissions": {
        "allow": ["WebFetch(domain:example.com)"],
        "deny": ["WebSearch"],
    }});
    let (server, project) = project_with(&settings, "").await;
    project.trust();
    let (_, _, stderr) = run(&project, &server).await;
    for rule in ["WebFetch(domain:example.com)", "WebSearch"] {
        let line = stderr.lines().find(|line| line.contains(rule));
        assert!(
            line.is_some_and(
                |line| line.contains(".claude/settings.json") && line.contains("not used")
            ),
            "{rule}: {stderr}"
        );
    }
}
