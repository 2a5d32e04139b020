//! The MCP client against a real MCP server in its own process
//! (examples/mcp_fixture.rs, built by cargo with the tests): listing, calls,
//! errors, a crash mid-call, a server that never answers, a list change, an
//! image, a huge result truncated with the hint, and a server that fails to
//! start without breaking anything else.

use crate::tools_common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn::mcp::{Hub, ServerConfig, State};
use cairn::tool::{Registry, ToolError};
use serde_json::json;
use tools_common::Project;

/// The fixture server `examples/mcp_fixture.rs`, built once per test run
/// into this test binary's target dir. `cargo test --all-targets` builds
/// examples as test harnesses, not as the server, hence the build here
/// (cargo holds no lock while tests run).
pub(crate) fn fixture() -> String {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "mcp_fixture"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo");
            assert!(status.success(), "cargo build --example mcp_fixture failed");
            let exe = std::env::current_exe().expect("test binary path");
            exe.parent()
                .and_then(|deps| deps.parent())
                .expect("target/debug")
                .join("examples")
                .join("mcp_fixture")
        })
        .display()
        .to_string()
}

fn server(args: &[&str], timeout: u64) -> ServerConfig {
    ServerConfig {
        command: Some(fixture()),
        args: args.iter().map(|a| a.to_string()).collect(),
        timeout: Some(timeout),
        ..Default::default()
    }
}

async fn ready_hub(servers: BTreeMap<String, ServerConfig>) -> (Arc<Hub>, Registry) {
    let hub = Hub::new(servers);
    hub.start();
    hub.wait_ready(Duration::from_secs(30)).await;
    (hub.clone(), Registry::builtin().with_mcp(hub))
}

#[tokio::test]
async fn tools_are_listed_with_schemas_and_called() {
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 10))])).await;
    let status = &hub.statuses()[0];
    assert_eq!(status.state, State::Ready, "{status:?}");
    assert_eq!(status.tools, 7);
    assert_eq!(status.prompts, 2);
    let specs = registry.specs(|_| true);
    let echo = specs
        .iter()
        .find(|s| s.name == "fx_echo")
        .expect("fx_echo offered");
    assert_eq!(echo.parameters["properties"]["text"]["type"], "string");
    // the plan agent's filter (read-only tools) keeps no MCP tool
    assert!(
        registry
            .specs(|t| t.is_read_only())
            .iter()
            .all(|s| !s.name.starts_with("fx_"))
    );

    let project = Project::new();
    let ctx = project.context();
    let out = registry
        .run("fx_echo", json!({"text": "hi"}), &ctx)
        .await
        .expect("echo");
    assert_eq!(out.output, "echo: hi");

    let error = registry
        .run("fx_fail", json!({}), &ctx)
        .await
        .expect_err("fails");
    assert!(
        error.to_string().contains("the fixture failed on purpose"),
        "{error}"
    );

    let image = registry
        .run("fx_image", json!({}), &ctx)
        .await
        .expect("image");
    assert_eq!(image.attachments.len(), 1);
    assert_eq!(image.attachments[0].mime, "image/png");

    let huge = registry
        .run("fx_huge", json!({"lines": 5000}), &ctx)
        .await
        .expect("huge");
    assert_eq!(huge.metadata["truncated"], true);
    assert!(huge.output.contains("line 0"));
    assert!(!huge.output.contains("line 4999"));
    assert!(
        huge.output.contains("truncated"),
        "the hint: {}",
        huge.output
    );
}

#[tokio::test]
async fn a_list_change_adds_the_new_tool() {
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 10))])).await;
    let ctx = Project::new().context();
    assert!(!hub.has_tool("fx_extra"));
    registry
        .run("fx_grow", json!({}), &ctx)
        .await
        .expect("grow");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !hub.has_tool("fx_extra") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "fx_extra never appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = registry
        .run("fx_extra", json!({}), &ctx)
        .await
        .expect("extra");
    assert_eq!(out.output, "extra ran");
}

#[tokio::test]
async fn a_crash_mid_call_fails_the_call_and_marks_the_server() {
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 10))])).await;
    let ctx = Project::new().context();
    let error = registry
        .run("fx_crash", json!({}), &ctx)
        .await
        .expect_err("crashes");
    assert!(error.to_string().contains("MCP server `fx`"), "{error}");
    assert!(hub.restart("fx"));
    hub.wait_ready(Duration::from_secs(30)).await;
    let out = registry
        .run("fx_echo", json!({"text": "again"}), &ctx)
        .await
        .expect("restarted");
    assert_eq!(out.output, "echo: again");
}

#[tokio::test]
async fn a_call_that_never_answers_times_out_and_cancel_interrupts() {
    let (_hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 1))])).await;
    let ctx = Project::new().context();
    let error = registry
        .run("fx_hang", json!({}), &ctx)
        .await
        .expect_err("times out");
    assert!(
        error.to_string().contains("no answer within 1 s"),
        "{error}"
    );

    let (_hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 60))])).await;
    let ctx = Project::new().context();
    let cancel = ctx.cancel.clone();
    let call = registry.run("fx_hang", json!({}), &ctx);
    let (result, ()) = tokio::join!(call, async { cancel.cancel() });
    assert!(
        matches!(result, Err(ToolError::Interrupted { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_or_is_slow_breaks_nothing_else() {
    let servers = BTreeMap::from([
        ("good".into(), server(&[], 10)),
        ("slow".into(), server(&["--start-delay-ms", "5000"], 1)),
        (
            "missing".into(),
            ServerConfig {
                command: Some("/nonexistent/mcp-server".into()),
                ..Default::default()
            },
        ),
    ]);
    let (hub, registry) = ready_hub(servers).await;
    let by_name: BTreeMap<String, _> = hub
        .statuses()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    assert_eq!(by_name["good"].state, State::Ready);
    assert_eq!(by_name["slow"].state, State::Failed);
    assert!(
        by_name["slow"]
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("did not start")
    );
    assert_eq!(by_name["missing"].state, State::Failed);
    assert!(
        by_name["missing"]
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("cannot run")
    );
    let ctx = Project::new().context();
    assert!(
        registry
            .run("good_echo", json!({"text": "x"}), &ctx)
            .await
            .is_ok()
    );
}

/// `permission.mcp` patterns are `SERVER/tool`; with no rule the call asks,
/// and a headless run with nobody to answer does not run it.
#[tokio::test]
async fn calls_go_through_the_mcp_permission() {
    use cairn::permission::{Mode, PermissionConfig, ruleset};
    let (_hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 10))])).await;
    let project = Project::new();
    let config: PermissionConfig =
        toml::from_str("mcp = { \"*\" = \"allow\", \"fx/echo\" = \"deny\" }").expect("toml");
    let ctx = project.context_with(ruleset(&config, false), Mode::Headless);
    let denied = registry.run("fx_echo", json!({"text": "x"}), &ctx).await;
    assert!(
        matches!(denied, Err(ToolError::PermissionDenied { .. })),
        "{denied:?}"
    );
    assert!(registry.run("fx_image", json!({}), &ctx).await.is_ok());

    let ctx = project.context_with(ruleset(&PermissionConfig::new(), false), Mode::Headless);
    let asked = registry.run("fx_echo", json!({"text": "x"}), &ctx).await;
    assert!(
        matches!(
            asked,
            Err(ToolError::PermissionRejected { .. } | ToolError::PermissionDenied { .. })
        ),
        "{asked:?}"
    );
}

/// Claude Code's documented project file, unchanged, seen by `cairn run /mcp`
/// (no model needed), with `${VAR}` defaults and a server that cannot start.
#[tokio::test]
async fn cairn_run_mcp_lists_servers_from_claude_codes_mcp_json() {
    let project = crate::project::Project::new();
    let file = json!({"mcpServers": {
        "fixture": {"type": "stdio", "command": fixture(), "args": [], "env": {"X": "${UNSET:-y}"}},
        "broken": {"command": "/nonexistent/server"}
    }});
    std::fs::write(project.path(".mcp.json"), file.to_string()).expect("write .mcp.json");
    project.trust();
    let out = project.ok(&["run", "/mcp"]).await;
    assert!(out.contains("fixture: ready, 7 tools"), "{out}");
    assert!(
        out.contains("broken: failed, 0 tools (last error: cannot run"),
        "{out}"
    );
    let out = project.ok(&["run", "/mcp restart fixture"]).await;
    assert!(out.contains("fixture: ready, 7 tools"), "{out}");
}

/// `cairn run "/fx:review FILE FOCUS…"`: the server's prompt, filled with the
/// arguments, is the user message the model gets; a missing required
/// argument is a clear error and nothing is sent; a list change adds a
/// prompt.
#[tokio::test]
async fn cairn_run_sends_an_mcp_prompt_as_the_user_message() {
    use crate::scenario::text;
    let server = crate::support::ScriptedServer::start([text("Reviewed.", 300)]).await;
    let project = crate::project::Project::new();
    let tables = format!("[mcp.fx]\ncommand = \"{}\"\n", fixture());
    project.use_scripted_with(&server, "yolo = true\n", &tables);

    let out = project
        .ok(&["run", "/fx:review src/a.rs error handling, please"])
        .await;
    assert!(out.contains("Reviewed."), "{out}");
    let request = server.requests()[0].json();
    let user = request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message")
        .to_string();
    assert!(
        user.contains(
            "Please review src/a.rs with a focus on error handling, please.\\n\\nBe brief."
        ),
        "{user}"
    );

    let failed = project.cairn(&["run", "/fx:review"]).await;
    assert_eq!(failed.status.code(), Some(1));
    let stderr = crate::project::text_of(&failed.stderr);
    assert!(
        stderr.contains("/fx:review needs <file>; usage: /fx:review <file> [focus]"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1, "nothing sent for the bad line");

    let out = project.ok(&["run", "/mcp"]).await;
    assert!(out.contains("fx: ready, 7 tools, 2 prompts"), "{out}");
}

/// `notifications/prompts/list_changed` re-lists the prompts.
#[tokio::test]
async fn a_prompt_list_change_adds_the_new_prompt() {
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server(&[], 10))])).await;
    let names = |hub: &Hub| -> Vec<String> {
        hub.prompt_commands()
            .into_iter()
            .map(|p| p.command)
            .collect()
    };
    assert_eq!(names(&hub), ["/fx:hello", "/fx:review"]);
    let mut changes = hub.subscribe();
    let project = Project::new();
    registry
        .run("fx_grow", json!({}), &project.context())
        .await
        .expect("grow");
    tokio::time::timeout(Duration::from_secs(10), async {
        while !names(&hub).contains(&"/fx:later".to_string()) {
            changes.changed().await.expect("hub alive");
        }
    })
    .await
    .expect("the new prompt is listed");
    let text = hub
        .expand_prompt("/fx:later")
        .await
        .expect("a prompt")
        .expect("its text");
    assert_eq!(text, "A later prompt.");
    assert!(hub.expand_prompt("/nope:x").await.is_none());
}

/// Issue 27: a stdio server whose entry says `sandbox = true` runs in the
/// commands' sandbox (it cannot write outside the project, here at its
/// start), and one without it runs unconfined, as the README says.
#[tokio::test]
async fn a_server_with_sandbox_true_runs_confined() {
    if !cairn::sandbox::support().confines() {
        return;
    }
    for sandbox in [true, false] {
        let project = crate::project::Project::new();
        let temp = project.home.path().join("tmp");
        std::fs::create_dir_all(&temp).expect("temp dir");
        let marker = project.home.path().join("server-was-here");
        let config = format!(
            "[mcp.fx]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}; exec {}\"]\nsandbox = {sandbox}\n",
            marker.display(),
            fixture()
        );
        std::fs::write(project.path("cairn.toml"), config).expect("write cairn.toml");
        project.trust();
        let output = project
            .command(&["run", "/mcp"])
            .env("TMPDIR", &temp)
            .output()
            .await
            .expect("run cairn");
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(
            out.contains("fx: ready, 7 tools"),
            "sandbox = {sandbox}: {out}"
        );
        assert_eq!(marker.exists(), !sandbox, "sandbox = {sandbox}");
    }
}

/// A `.mcp.json` that does not parse is said on stderr (file, line and
/// column) and in `/mcp`, not only in the log; an `opencode.jsonc` with
/// comments and trailing commas, as OpenCode users write it, is read.
#[tokio::test]
async fn a_broken_server_file_is_said_and_jsonc_is_read() {
    use crate::scenario::text;
    let server = crate::support::ScriptedServer::start([text("Hi.", 300)]).await;
    let project = crate::project::Project::new();
    std::fs::write(
        project.path(".mcp.json"),
        "{\n  \"mcpServers\": {\n    \"fx\": {\"command\": \"x\"},,\n  }\n}\n",
    )
    .expect("write .mcp.json");
    std::fs::write(
        project.path("opencode.jsonc"),
        format!(
            "{{\n  // the fixture server\n  \"mcp\": {{\n    \"oc\": {{\"type\": \"local\", \"command\": [\"{}\"],}},\n  }},\n}}\n",
            fixture()
        ),
    )
    .expect("write opencode.jsonc");
    project.use_scripted_with(&server, "yolo = true\n", "");
    let listed = project.ok(&["run", "/mcp"]).await;
    assert!(listed.contains(".mcp.json: failed"), "{listed}");
    assert!(listed.contains("does not parse"), "{listed}");
    assert!(listed.contains("oc: ready"), "{listed}");
    let out = project.cairn(&["run", "hello"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cairn: MCP .mcp.json failed: does not parse"),
        "{stderr}"
    );
    assert!(stderr.contains("line 3"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
