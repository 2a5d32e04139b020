//! A session reopened after a crash: the unfinished turn is closed like an
//! interrupt, and the session goes on.

use crate::scenario;

use cairn::app::SessionChoice;
use cairn::clock::now_millis;
use cairn::message::{
    AssistantMessage, Message, MessagePath, ModelRef, Part, PartKind, Role, TextPart, ToolPart,
    ToolState, ToolTime, UserMessage,
};
use cairn::permission::Mode;
use scenario::{Scenario, text};
use serde_json::json;

#[tokio::test]
async fn a_turn_left_running_by_a_crash_is_closed_on_reopen_and_the_session_continues() {
    let scenario = Scenario::start(vec![]).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    drop(handle);
    let assistant = leave_a_crashed_turn(&scenario, &session.id).await;

    scenario.server.push(text(
        "The tests were interrupted; running them again is safe.",
        900,
    ));
    let (_, handle) = scenario
        .app
        .start(SessionChoice::Id(session.id.clone()), Mode::Headless)
        .await
        .expect("reopen");
    let (code, out, err) = scenario.run(&handle, "what happened?").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("interrupted"), "{out}");

    let history = scenario.history(&session.id).await;
    let repaired = history
        .iter()
        .find(|m| m.message.id == assistant.id)
        .expect("the crashed turn is kept");
    let info = repaired.message.as_assistant().expect("assistant");
    assert_eq!(
        info.error.as_ref().map(|e| e.kind),
        Some(cairn::message::MessageErrorKind::Aborted)
    );
    let tool = repaired
        .parts
        .iter()
        .find_map(Part::as_tool)
        .expect("tool part");
    assert!(
        matches!(&tool.state, ToolState::Error { error, .. } if error.contains("interrupted")),
        "{:?}",
        tool.state
    );
    assert!(
        repaired
            .parts
            .iter()
            .any(|p| matches!(&p.kind, PartKind::Text(t) if t.text == "Running them now."))
    );

    // The model saw the call with an error result, and the streamed text.
    let request = &scenario.requests()[0];
    let messages = request["messages"].as_array().expect("messages");
    let tool_result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a result for the crashed call");
    assert_eq!(tool_result["tool_call_id"], "call_1");
    assert!(messages.iter().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.contains("Running them now."))
    }));
}

/// Writes what a kill -9 mid-tool leaves behind: a user message, an assistant
/// with streamed text and a running tool, no finish, no error. Returns the
/// assistant message.
async fn leave_a_crashed_turn(scenario: &Scenario, session_id: &str) -> Message {
    let model = ModelRef::parse(scenario::MODEL).expect("model");
    let user = Message {
        id: cairn::id::message_id(),
        session_id: session_id.to_string(),
        time_created: now_millis(),
        role: Role::User(UserMessage {
            agent: "build".into(),
            model: model.clone(),
            system: None,
        }),
    };
    let assistant = Message {
        id: cairn::id::message_id(),
        session_id: session_id.to_string(),
        time_created: now_millis(),
        role: Role::Assistant(AssistantMessage {
            parent_id: user.id.clone(),
            agent: "build".into(),
            model,
            path: MessagePath::default(),
            summary: false,
            finish: None,
            error: None,
            tokens: Default::default(),
            cost: 0.0,
            time_completed: None,
        }),
    };
    let store = &scenario.app.store;
    store.upsert_message(&user).await.expect("user");
    store
        .upsert_part(&Part::new(
            &user,
            PartKind::Text(TextPart {
                text: "run the tests".into(),
                ..Default::default()
            }),
        ))
        .await
        .expect("user text");
    store.upsert_message(&assistant).await.expect("assistant");
    store
        .upsert_part(&Part::new(
            &assistant,
            PartKind::Text(TextPart {
                text: "Running them now.".into(),
                ..Default::default()
            }),
        ))
        .await
        .expect("assistant text");
    let running = Part::new(
        &assistant,
        PartKind::Tool(ToolPart {
            call_id: "call_1".into(),
            tool: "bash".into(),
            state: ToolState::Running {
                input: json!({ "command": "cargo test" }),
                title: None,
                metadata: None,
                time: ToolTime {
                    start: now_millis(),
                    end: None,
                    compacted: None,
                },
            },
        }),
    );
    store.upsert_part(&running).await.expect("running tool");
    assistant
}
