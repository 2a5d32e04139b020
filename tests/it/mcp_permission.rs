//! Permissions for MCP tools, driven by the model: the scripted model calls
//! a tool of the fixture server (examples/mcp_fixture.rs, a real MCP server
//! in its own process) through `cairn run`, and the `mcp` permission with
//! the pattern `SERVER/tool` decides. Then an adversarial table of rules and
//! of the names a server may choose (prefixes, `/`, `*`, case).

use crate::mcp_client::fixture;
use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support::{RecordedRequest, ScriptedServer};

use cairn::permission::{Action, PermissionConfig, PermissionSetting, evaluate, ruleset};
use serde_json::json;

/// `[mcp.fixture]` running the fixture server (with its odd tool names),
/// then `permission` (TOML tables) as given.
fn tables(permission: &str) -> String {
    format!(
        "[mcp.fixture]\ncommand = {:?}\nargs = [\"--odd-names\"]\ntimeout = 20\n\n{permission}",
        fixture()
    )
}

/// The text of the tool results the model was sent back.
fn tool_results(request: &RecordedRequest) -> String {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The model calls `tool` (an exposed name) once, then answers; returns
/// what the tool call gave back to the model, and the run's output.
async fn model_calls(tool: &str, top: &str, permission: &str) -> (String, std::process::Output) {
    let server = ScriptedServer::start([
        scenario::tool_call("call_1", tool, json!({"text": "hi"}), 200),
        scenario::text("Done.", 300),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, top, &tables(permission));
    let output = project.cairn(&["run", "use the fixture"]).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&output));
    assert!(
        requests[0].json()["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == tool)),
        "the first request offers {tool}"
    );
    (tool_results(&requests[1]), output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_the_call_is_asked_and_refused_without_a_terminal() {
    let (result, output) = model_calls("fixture_echo", "", "").await;
    assert!(
        !result.contains("echo: hi"),
        "the tool did not run: {result}"
    );
    assert!(
        result.contains("needs an answer, but cairn is running without a terminal"),
        "{result}"
    );
    assert!(
        result.contains("[permission.mcp]\n\"fixture/echo\" = \"allow\""),
        "the advice names the exact rule: {result}"
    );
    assert!(
        text_of(&output.stdout).contains("Done."),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_allowing_server_slash_tool_runs_it() {
    let allow = "[permission.mcp]\n\"fixture/echo\" = \"allow\"\n";
    let (result, output) = model_calls("fixture_echo", "", allow).await;
    assert!(
        result.contains("echo: hi"),
        "{result}\n{}",
        describe(&output)
    );
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denying_the_server_refuses_even_with_yolo() {
    let deny = "[permission.mcp]\n\"fixture/*\" = \"deny\"\n";
    let (result, output) = model_calls("fixture_echo", "yolo = true\n", deny).await;
    assert!(!result.contains("echo: hi"), "{result}");
    assert!(
        result.contains("`mcp` is denied for fixture/echo"),
        "{result}\n{}",
        describe(&output)
    );
}

/// End to end, the names a server chooses: a rule for one tool never lets
/// another through, whatever its name holds (a glob character, a slash,
/// another case), and a rule for a server whose name is a prefix does not
/// cover this one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_tool_names_and_server_prefixes_are_not_let_through() {
    // Odd names are changed to be provider-safe, with a hash of the original.
    let star = cairn::mcp::exposed_name("fixture", "*");
    let a_b = cairn::mcp::exposed_name("fixture", "a/b");
    let cases: [(&str, &str, bool); 6] = [
        // The tool named `*` under an exact rule for another tool.
        (&star, "\"fixture/echo\" = \"allow\"", false),
        // `Echo` is not `echo`.
        ("fixture_Echo", "\"fixture/echo\" = \"allow\"", false),
        // `a/b` is not `a`.
        (&a_b, "\"fixture/a\" = \"allow\"", false),
        // `fix` is another server.
        ("fixture_echo", "\"fix/*\" = \"allow\"", false),
        // ... and case matters in server names too.
        ("fixture_echo", "\"Fixture/echo\" = \"allow\"", false),
        // The exact name of an odd tool allows it.
        (&a_b, "\"fixture/a/b\" = \"allow\"", true),
    ];
    for (tool, rule, runs) in cases {
        let permission = format!("[permission.mcp]\n{rule}\n");
        let (result, output) = model_calls(tool, "", &permission).await;
        assert_eq!(
            result.contains(" ran"),
            runs,
            "{tool} under {rule}: {result}\n{}",
            describe(&output)
        );
        if !runs {
            assert!(
                result.contains("needs an answer"),
                "{tool} under {rule}: {result}"
            );
            // The tool named `*` is never advised as `"fixture/*"`, which
            // would allow every tool of the server.
            assert!(
                !result.contains("\"fixture/*\" = \"allow\""),
                "{tool} under {rule}: {result}"
            );
        }
    }
}

fn rules(patterns: &[(&str, Action)]) -> Vec<cairn::permission::Rule> {
    let table = patterns
        .iter()
        .map(|(pattern, action)| (pattern.to_string(), *action))
        .collect();
    let config: PermissionConfig = [("mcp".to_string(), PermissionSetting::Patterns(table))]
        .into_iter()
        .collect();
    ruleset(&config, false)
}

/// The rules against `SERVER/tool` texts as the hub builds them
/// (`format!("{server}/{tool}")`), names chosen by an adversarial server.
#[test]
fn mcp_rules_match_server_and_tool_exactly() {
    use Action::{Allow, Ask, Deny};
    let exact = rules(&[("fixture/echo", Allow)]);
    let prefix = rules(&[("fix/*", Allow)]);
    let server = rules(&[("fixture/*", Deny)]);
    let carve_out = rules(&[("fixture/*", Allow), ("fixture/crash", Deny)]);
    let any_server = rules(&[("*/echo", Allow)]);
    let cases: [(&[cairn::permission::Rule], &str, Action); 20] = [
        (&exact, "fixture/echo", Allow),
        (&exact, "fixture/echo2", Ask),
        (&exact, "fixture/echo ", Ask),
        (&exact, "fixture/Echo", Ask),
        (&exact, "Fixture/echo", Ask),
        (&exact, "fixture2/echo", Ask),
        (&exact, "fixture/*", Ask),
        (&exact, "fixture/e?ho", Ask),
        (&exact, "fixture/a/echo", Ask),
        (&prefix, "fixture/echo", Ask),
        (&prefix, "fix/echo", Allow),
        (&prefix, "fix/a/b", Allow),
        (&server, "fixture/echo", Deny),
        (&server, "fixture/*", Deny),
        (&server, "fixture2/echo", Ask),
        (&server, "fixtur/echo", Ask),
        (&carve_out, "fixture/crash", Deny),
        (&carve_out, "fixture/echo", Allow),
        (&any_server, "other/echo", Allow),
        (&any_server, "other/echo_all", Ask),
    ];
    for (rules, text, want) in cases {
        assert_eq!(evaluate("mcp", text, rules).0, want, "{text}");
    }
    // Rules of another permission never apply to MCP calls.
    let bash = ruleset(
        &[("bash".to_string(), PermissionSetting::Action(Action::Allow))]
            .into_iter()
            .collect(),
        false,
    );
    assert_eq!(evaluate("mcp", "fixture/echo", &bash).0, Ask);
}
