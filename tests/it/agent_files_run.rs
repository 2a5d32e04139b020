//! Claude Code agent files through `cairn run`: the parent model delegates
//! to the agent with the `task` tool and the child's request (the second
//! the scripted server receives) shows which tools and model it got.
//! The files are copied in shape from public repositories' `.claude/agents/`
//! (a read-only `verifier` with `disallowedTools: Write, Edit`, an agent
//! with `model: opus`, Claude Code's documented `code-reviewer`).

use crate::mcp_client::fixture;
use crate::project::{Project, describe};
use crate::scenario::{text, tool_call};
use crate::support::{RecordedRequest, ScriptedServer};

use serde_json::{Value, json};

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.json()["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results the model was sent back in `request`.
fn tool_results(request: &RecordedRequest) -> String {
    request.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn delegate(agent: &str) -> crate::support::ScriptedResponse {
    tool_call(
        "call_task",
        "task",
        json!({ "description": "check it", "prompt": "Check the change.", "subagent_type": agent }),
        500,
    )
}

fn write_agent(project: &Project, name: &str, text: &str) {
    let dir = project.path(".claude/agents");
    std::fs::create_dir_all(&dir).expect("agents dir");
    std::fs::write(dir.join(format!("{name}.md")), text).expect("agent file");
}

/// Shape of a public repository's read-only verifier agent.
const VERIFIER: &str = "---
name: verifier
description: Independent verification agent. Checks that implementations match specifications with evidence-based assertions. READ-ONLY.
model: inherit
disallowedTools: Write, Edit, Bash
---

You are the Verifier. You independently verify that implementations match their specifications.
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disallowed_tools_are_taken_from_the_agent() {
    let project = Project::new();
    write_agent(&project, "verifier", VERIFIER);
    let server = ScriptedServer::start([
        delegate("verifier"),
        // The child asks for bash anyway: it is refused, not run.
        tool_call(
            "call_bash",
            "bash",
            json!({ "command": "touch made-by-verifier", "description": "touch" }),
            400,
        ),
        text("Verified.", 400),
        text("The verifier says it holds.", 600),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "verify the change"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", describe(&output));
    let child = tool_names(&requests[1]);
    assert!(child.contains(&"read".to_string()), "{child:?}");
    for gone in ["write", "edit", "bash"] {
        assert!(!child.contains(&gone.to_string()), "{gone} in {child:?}");
    }
    let result = tool_results(&requests[2]);
    assert!(result.contains("not available to this agent"), "{result}");
    assert!(project.read("made-by-verifier").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_with_a_claude_mcp_name_gives_that_mcp_tool() {
    let project = Project::new();
    write_agent(
        &project,
        "echoer",
        "---\nname: echoer\ndescription: Echoes things through the fixture server.\ntools: Read, mcp__fixture__echo\n---\n\nEcho what you are given.\n",
    );
    let server = ScriptedServer::start([
        delegate("echoer"),
        tool_call("call_echo", "fixture_echo", json!({ "text": "hi" }), 400),
        text("Echoed.", 400),
        text("Done.", 600),
    ])
    .await;
    let tables = format!("[mcp.fixture]\ncommand = {:?}\ntimeout = 20\n", fixture());
    project.use_scripted_with(&server, "yolo = true\n", &tables);
    let output = project.cairn(&["run", "echo hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", describe(&output));
    let mut child = tool_names(&requests[1]);
    child.sort();
    assert_eq!(child, ["fixture_echo", "read"], "{}", describe(&output));
    let result = tool_results(&requests[2]);
    assert!(result.contains("hi"), "{result}");
    assert!(!result.contains("not available"), "{result}");
}

/// An agent asking for `opus` under a provider the alias table does not
/// cover runs on the session's model, and the user is told so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_alias_without_a_mapping_is_reported() {
    let project = Project::new();
    write_agent(
        &project,
        "architect",
        "---\nname: architect\ndescription: Designs changes.\nmodel: opus\n---\n\nDesign it.\n",
    );
    let server = ScriptedServer::start([
        delegate("architect"),
        text("Designed.", 400),
        text("Done.", 600),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "design it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&output));
    assert_eq!(requests[1].json()["model"], "test-model");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("architect") && stderr.contains("`opus`") && stderr.contains("scripted"),
        "{}",
        describe(&output)
    );
}

/// Under OpenRouter (here the scripted server in its place) `sonnet` is
/// Anthropic's Sonnet as OpenRouter names it; `inherit` is the session's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_aliases_map_to_the_providers_models() {
    let project = Project::new();
    write_agent(
        &project,
        "writer",
        "---\nname: writer\ndescription: Writes.\nmodel: sonnet\n---\n\nWrite.\n",
    );
    let server = ScriptedServer::start([
        delegate("writer"),
        text("Written.", 400),
        text("Done.", 600),
    ])
    .await;
    let config = format!(
        "model = \"openrouter/qwen/qwen3-coder\"\nyolo = true\n\n\
         [provider.openrouter]\nbase_url = \"{}/v1\"\napi_key = \"test-key\"\n",
        server.url()
    );
    std::fs::write(project.path("cairn.toml"), config).expect("cairn.toml");
    project.trust();
    let output = project.cairn(&["run", "write it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&output));
    assert_eq!(requests[0].json()["model"], "qwen/qwen3-coder");
    assert_eq!(requests[1].json()["model"], "anthropic/claude-sonnet-4.5");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("`sonnet`"), "{}", describe(&output));
}

/// OpenCode's `.opencode/agent/review.md`, as the poolifier repository has
/// it: a subagent whose `tools` map turns write, edit and bash off.
const OPENCODE_REVIEW: &str = "---
description: Reviews code.
mode: subagent
temperature: 0.1
tools:
  write: false
  edit: false
  bash: false
---

You are in code review mode. Focus on:

- Code quality
- Bugs
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opencode_agent_file_is_a_subagent_with_its_tools_off() {
    let project = Project::new();
    let dir = project.path(".opencode/agent");
    std::fs::create_dir_all(&dir).expect("agent dir");
    std::fs::write(dir.join("review.md"), OPENCODE_REVIEW).expect("agent file");
    let server = ScriptedServer::start([
        delegate("review"),
        text("Reviewed.", 400),
        text("Done.", 600),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "review it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&output));
    let result = tool_results(&requests[2]);
    assert!(!result.contains("Unknown agent"), "{result}");
    let child = tool_names(&requests[1]);
    assert!(child.contains(&"read".to_string()), "{child:?}");
    for gone in ["write", "edit", "bash"] {
        assert!(!child.contains(&gone.to_string()), "{gone} in {child:?}");
    }
    let system = requests[1].json()["messages"][0]["content"].to_string();
    assert!(system.contains("You are in code review mode"), "{system}");
}
