//! The agent loop end to end: real SQLite, real tools and processes, the
//! scripted server as the model.

mod scenario;
mod support;

use cairn::message::{PartKind, ToolState};
use cairn::permission::Mode;
use scenario::{Scenario, assistant_text, text, tool_call};
use serde_json::json;

fn tool_states(history: &[cairn::message::MessageWithParts]) -> Vec<(String, &'static str)> {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool())
        .map(|t| (t.tool.clone(), t.state.status_name()))
        .collect()
}

#[tokio::test]
async fn multi_step_tool_task_reads_edits_and_runs() {
    let scenario = Scenario::start(vec![]).await;
    let file = scenario.path("greeting.txt");
    std::fs::write(&file, "hello world\n").expect("write file");
    let path = file.display().to_string();
    for response in [
        tool_call("call_1", "read", json!({ "file_path": path }), 1_000),
        tool_call(
            "call_2",
            "edit",
            json!({ "file_path": path, "old_string": "world", "new_string": "cairn" }),
            1_200,
        ),
        tool_call(
            "call_3",
            "bash",
            json!({ "command": "cat greeting.txt", "description": "show" }),
            1_400,
        ),
        text("The greeting now says hello cairn.", 1_600),
    ] {
        scenario.server.push(response);
    }
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "change world to cairn").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("hello cairn"), "stdout: {out}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "hello cairn\n"
    );

    let history = scenario.history(&session.id).await;
    assert_eq!(
        tool_states(&history),
        [
            ("read".into(), "completed"),
            ("edit".into(), "completed"),
            ("bash".into(), "completed")
        ]
    );
    let bash_output = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool())
        .find_map(|t| match &t.state {
            ToolState::Completed { output, .. } if t.tool == "bash" => Some(output.clone()),
            _ => None,
        })
        .expect("bash output");
    assert!(bash_output.contains("hello cairn"), "{bash_output}");

    // The second request carries the read's result right after its call.
    let requests = scenario.requests();
    assert_eq!(requests.len(), 4);
    let messages = requests[1]["messages"].as_array().expect("messages");
    let tool_message = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    assert_eq!(tool_message["tool_call_id"], "call_1");
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap_or("")
            .contains("hello world")
    );
    // Step-finish tokens replace, not add: the last assistant holds the last request's size.
    let last = history
        .iter()
        .rev()
        .find_map(|m| m.message.as_assistant())
        .expect("assistant");
    assert_eq!(last.tokens.input, 1_600);
    assert!(assistant_text(&history).contains("hello cairn"));
}

#[tokio::test]
async fn denied_permission_reaches_the_model_as_a_tool_error() {
    let scenario = Scenario::with_config(vec![], |config| config.yolo = false).await;
    scenario.server.push(tool_call(
        "call_1",
        "bash",
        json!({ "command": "touch made.txt", "description": "x" }),
        500,
    ));
    scenario.server.push(text("I could not run it.", 600));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, _) = scenario.run(&handle, "make a file").await;
    assert_eq!(code, 0);
    assert!(
        !scenario.path("made.txt").exists(),
        "the denied command must not run"
    );
    let history = scenario.history(&session.id).await;
    let error = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool())
        .find_map(|t| match &t.state {
            ToolState::Error { error, .. } => Some(error.clone()),
            _ => None,
        })
        .expect("an errored tool part");
    assert!(
        error.contains("yolo") || error.contains("permission"),
        "{error}"
    );
    // The model saw the error as the call's result.
    let second = &scenario.requests()[1];
    let tool_message = second["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result");
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap_or("")
            .contains(&error[..20.min(error.len())])
    );
}

#[tokio::test]
async fn max_steps_ends_with_a_text_answer() {
    let scenario = Scenario::with_config(vec![], |config| {
        config.agent.insert(
            "build".into(),
            cairn::config::AgentConfig {
                steps: Some(2),
                ..Default::default()
            },
        );
    })
    .await;
    scenario
        .server
        .push(tool_call("call_1", "list", json!({ "path": "." }), 500));
    scenario
        .server
        .push(text("Maximum steps reached; here is what I did.", 600));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, out, _) = scenario.run(&handle, "explore").await;
    assert_eq!(code, 0);
    assert!(out.contains("Maximum steps reached"));
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1]["messages"]
        .as_array()
        .expect("messages")
        .last()
        .expect("a message")
        .clone();
    assert_eq!(last["role"], "assistant");
    assert!(
        last["content"]
            .as_str()
            .unwrap_or("")
            .contains("MAXIMUM STEPS REACHED")
    );
    assert!(
        scenario
            .history(&session.id)
            .await
            .iter()
            .any(|m| m.parts.iter().any(|p| matches!(p.kind, PartKind::Text(_))))
    );
}
