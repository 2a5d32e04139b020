//! The request bodies the model receives around a prune and a compaction,
//! as insta snapshots: what changes (cleared outputs, the summary first, the
//! compaction agent's prompt without tools) is visible in a diff. Long texts
//! are abbreviated to their start and length; the temp project path, session
//! ids and the agent's system prompt (owned elsewhere) are filtered.

use crate::scenario;

use cairn::bus::Event;
use cairn::permission::Mode;
use cairn::session::command::Command;
use scenario::{Scenario, dense_text, text, tool_call, watch};
use serde_json::{Value, json};

/// Strings longer than this are shown as their start and length.
const LONG: usize = 160;

/// The body with long strings abbreviated, the system prompt named instead of
/// shown, tools reduced to their names, and volatile values filtered.
fn shape(body: &Value, project: &str) -> String {
    let mut body = body.clone();
    if let Some(messages) = body["messages"].as_array_mut() {
        for message in messages.iter_mut().filter(|m| m["role"] == "system") {
            let system = message["content"].as_str().unwrap_or_default();
            message["content"] = if system == cairn::context::compaction::SYSTEM_PROMPT {
                json!("<compaction agent system prompt>")
            } else {
                // Its instruction files depend on the machine (~/.claude).
                json!("<agent system prompt>")
            };
        }
    }
    if let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools.iter_mut() {
            *tool = tool["function"]["name"].clone();
        }
    }
    abbreviate(&mut body);
    let pretty = serde_json::to_string_pretty(&body).expect("JSON");
    let session = regex::Regex::new(r"ses_[0-9A-Za-z]+").expect("valid regex");
    session
        .replace_all(&pretty.replace(project, "[project]"), "[session]")
        .into_owned()
}

fn abbreviate(value: &mut Value) {
    match value {
        Value::String(text) if text.chars().count() > LONG => {
            let start: String = text.chars().take(60).collect();
            *text = format!("{start}... <{} chars>", text.chars().count());
        }
        Value::Array(items) => items.iter_mut().for_each(abbreviate),
        Value::Object(fields) => fields.values_mut().for_each(abbreviate),
        _ => {}
    }
}

#[tokio::test]
async fn request_shapes_before_and_after_a_prune() {
    cairn::token::count("exact counts, so the prune plan is the same every run");
    let scenario = Scenario::with_config(vec![], |config| config.compaction.prune = false).await;
    for n in 0..6u64 {
        let path = scenario.path(&format!("data{n}.txt"));
        std::fs::write(&path, dense_text(n, 20_000)).expect("write");
        let args = json!({ "file_path": path.display().to_string() });
        scenario
            .server
            .push(tool_call(&format!("call_{n}"), "read", args, 1_000));
    }
    for answer in [
        "Read all six.",
        "Second answer.",
        "Third answer.",
        "Fourth.",
    ] {
        scenario.server.push(text(answer, 1_000));
    }
    let (session, handle) = scenario.session(Mode::Headless).await;
    for question in ["read the data files", "second", "third"] {
        assert_eq!(scenario.run(&handle, question).await.0, 0);
    }
    let mut watched = watch(&scenario, &session.id);
    assert!(handle.send(Command::Prune));
    watched.until(|e| matches!(e, Event::Notice { .. })).await;
    assert!(watched.notices()[0].starts_with("pruned "));
    assert_eq!(scenario.run(&handle, "fourth").await.0, 0);

    let requests = scenario.requests();
    let project = scenario.project.path().display().to_string();
    insta::assert_snapshot!("before_prune", shape(&requests[8], &project));
    insta::assert_snapshot!("after_prune", shape(&requests[9], &project));
}

#[tokio::test]
async fn request_shapes_before_during_and_after_a_compaction() {
    let scenario = Scenario::with_config(vec![], |config| {
        let model = config
            .provider
            .get_mut("scripted")
            .and_then(|p| p.models.get_mut("test-model"))
            .expect("the scenario config has the scripted model");
        model.context = Some(19_200);
        model.output = Some(3_200);
    })
    .await;
    std::fs::write(scenario.path("notes.txt"), "remember the milk\n").expect("write");
    let args = json!({ "file_path": scenario.path("notes.txt").display().to_string() });
    scenario
        .server
        .push(tool_call("call_1", "read", args, 2_000));
    let args = json!({ "command": "echo step-two", "description": "second step" });
    scenario
        .server
        .push(tool_call("call_2", "bash", args, 16_500));
    scenario.server.push(text(
        "## Goal\n- finish the scripted task\n## Accomplished\n- read notes.txt",
        3_000,
    ));
    scenario.server.push(text("Task finished.", 1_500));
    let (_, handle) = scenario.session(Mode::Headless).await;
    assert_eq!(scenario.run(&handle, "do the scripted task").await.0, 0);

    let requests = scenario.requests();
    assert_eq!(requests.len(), 4);
    let project = scenario.project.path().display().to_string();
    insta::assert_snapshot!("before_compaction", shape(&requests[1], &project));
    insta::assert_snapshot!("summary_request", shape(&requests[2], &project));
    insta::assert_snapshot!("after_compaction", shape(&requests[3], &project));
}
