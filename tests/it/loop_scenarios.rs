//! The agent loop end to end: real SQLite, real tools and processes, the
//! scripted server as the model.

use crate::scenario;
use crate::support;

use std::time::{Duration, Instant};

use cairn::bus::{Event, SessionStatus};
use cairn::message::{MessageErrorKind, MessageWithParts, PartKind, ToolState};
use cairn::permission::{Action, Mode, PermissionAnswer, PermissionSetting};
use cairn::session::command::Command;
use scenario::{
    Recorder, Scenario, assistant_text, prompt, slow_text, text, text_then_stall,
    text_then_tool_call, tool_call, tool_parts,
};
use serde_json::{Value, json};
use support::ScriptedResponse;

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

/// The text of one Chat Completions message, whether its content is a string
/// or a list of parts.
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// (role, text) of a request's messages, without the system prompt.
fn conversation(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                content_text(m),
            )
        })
        .collect()
}

fn last_assistant(history: &[MessageWithParts]) -> cairn::message::AssistantMessage {
    history
        .iter()
        .rev()
        .find_map(|m| m.message.as_assistant().cloned())
        .expect("an assistant message")
}

fn text_parts(history: &[MessageWithParts]) -> Vec<cairn::message::TextPart> {
    history
        .iter()
        .filter(|m| !m.message.is_user())
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

/// Processes whose command line contains `marker` (other than pgrep itself).
fn processes_matching(marker: &str) -> Vec<String> {
    let output = std::process::Command::new("pgrep")
        .args(["-a", "-f", marker])
        .output()
        .expect("run pgrep");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_message_sent_while_busy_is_answered_in_the_same_run() {
    let scenario = Scenario::start(vec![
        slow_text(
            "the first answer arrives slowly",
            500,
            Duration::from_millis(80),
        ),
        text("The second answer.", 700),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "first question");
    recorder
        .wait_for(
            Duration::from_secs(5),
            |e| matches!(e, Event::PartDelta { delta, .. } if delta.contains("first")),
        )
        .await;
    prompt(&handle, "second question");
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(15))
        .await;

    // When the session first went idle both answers were stored: one run.
    let history = scenario.history(&session.id).await;
    let answers = assistant_text(&history);
    assert!(
        answers.contains("the first answer arrives slowly"),
        "{answers}"
    );
    assert!(answers.contains("The second answer."), "{answers}");
    let second_user = history
        .iter()
        .filter(|m| m.message.is_user())
        .nth(1)
        .expect("the second user message");
    assert_eq!(last_assistant(&history).parent_id, second_user.message.id);

    // Two requests, in sequence: the second carries the whole first answer,
    // so it left only after the first stream had ended.
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        conversation(&requests[0]),
        [("user".to_string(), "first question".to_string())]
    );
    assert_eq!(
        conversation(&requests[1]),
        [
            ("user".to_string(), "first question".to_string()),
            (
                "assistant".to_string(),
                "the first answer arrives slowly".to_string()
            ),
            ("user".to_string(), "second question".to_string()),
        ]
    );
    // And no second run follows: the session stays idle, once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let statuses = recorder.statuses(&session.id);
    assert_eq!(
        statuses.last(),
        Some(&SessionStatus::Idle),
        "statuses: {statuses:?}"
    );
    assert_eq!(
        recorder.idle_count(&session.id),
        1,
        "statuses: {statuses:?}"
    );
    assert_eq!(scenario.requests().len(), 2);
}

#[tokio::test]
async fn interrupt_mid_stream_keeps_the_text_and_marks_the_message_aborted() {
    let scenario = Scenario::start(vec![text_then_stall("Partial answer so far")]).await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "tell me everything");
    recorder
        .wait_for(
            Duration::from_secs(5),
            |e| matches!(e, Event::PartDelta { delta, .. } if delta.contains("Partial")),
        )
        .await;
    let asked = Instant::now();
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(1))
        .await;
    assert!(asked.elapsed() < Duration::from_secs(1));

    let history = scenario.history(&session.id).await;
    let texts = text_parts(&history);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert_eq!(texts[0].text, "Partial answer so far");
    assert!(texts[0].time.is_some_and(|t| t.end.is_some()));
    let assistant = last_assistant(&history);
    let error = assistant.error.expect("the message has an error");
    assert_eq!(error.kind, MessageErrorKind::Aborted);
    assert!(assistant.time_completed.is_some());

    // The next message works and the model sees what was said before.
    scenario.server.push(text("Picking up again.", 800));
    let (code, out, err) = scenario.run(&handle, "go on").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("Picking up again."), "{out}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        conversation(&requests[1])
            .iter()
            .any(|(role, text)| role == "assistant" && text.contains("Partial answer so far")),
        "{:?}",
        conversation(&requests[1])
    );
}

#[tokio::test]
async fn interrupt_mid_tool_kills_the_process_group_and_keeps_the_text() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_nanos();
    // A sleep no other process runs: its command line is the marker.
    let marker = format!("sleep 30.{nanos:09}");
    let command = format!("echo started; {marker} & {marker}; echo never");
    let scenario = Scenario::start(vec![text_then_tool_call(
        "Let me run the long job.",
        "call_1",
        "bash",
        json!({ "command": command, "description": "long job" }),
        500,
    )])
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "run the long job");
    let deadline = Instant::now() + Duration::from_secs(10);
    // bash -c, the background sleep and the foreground sleep.
    while processes_matching(&marker).len() < 3 {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The answer has fully streamed: only the tool is left running.
    scenario
        .history_until(&session.id, Duration::from_secs(5), |history| {
            history.iter().any(|m| {
                m.parts
                    .iter()
                    .any(|p| matches!(p.kind, PartKind::StepFinish(_)))
            })
        })
        .await;
    let asked = Instant::now();
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(2))
        .await;
    assert!(asked.elapsed() < Duration::from_secs(2));
    // SIGKILL is delivered at once; give the kernel a moment to reap.
    let deadline = Instant::now() + Duration::from_millis(500);
    while !processes_matching(&marker).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(processes_matching(&marker), Vec::<String>::new());

    let history = scenario.history(&session.id).await;
    let tools = tool_parts(&history);
    assert_eq!(tools.len(), 1);
    match &tools[0].state {
        ToolState::Error {
            error, metadata, ..
        } => {
            let lowered = error.to_lowercase();
            assert!(
                lowered.contains("interrupt") || lowered.contains("abort"),
                "{error}"
            );
            let metadata = metadata.as_ref().expect("metadata on an interrupted call");
            assert_eq!(metadata["interrupted"], true, "{metadata}");
            assert!(
                metadata["output"]
                    .as_str()
                    .unwrap_or("")
                    .contains("started"),
                "the output so far is kept: {metadata}"
            );
        }
        other => panic!("expected an error part, got {other:?}"),
    }
    assert_eq!(
        text_parts(&history)
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>(),
        ["Let me run the long job."]
    );
    let assistant = last_assistant(&history);
    assert_eq!(
        assistant.error.map(|e| e.kind),
        Some(MessageErrorKind::Aborted)
    );
    assert_eq!(
        scenario.requests().len(),
        1,
        "no request after the interrupt"
    );
}

/// A config where bash runs without asking but everything else asks.
fn bash_allowed(config: &mut cairn::config::Config) {
    config.yolo = false;
    config
        .permission
        .insert("bash".into(), PermissionSetting::Action(Action::Allow));
    // `>> count.txt` is a write: it needs `edit` as well (issue #11).
    config
        .permission
        .insert("edit".into(), PermissionSetting::Action(Action::Allow));
}

fn append_call(id: &str) -> ScriptedResponse {
    tool_call(
        id,
        "bash",
        json!({ "command": "echo again >> count.txt", "description": "count" }),
        500,
    )
}

#[tokio::test]
async fn third_identical_call_asks_about_a_doom_loop_and_reject_stops() {
    let scenario = Scenario::with_config(
        vec![
            append_call("call_1"),
            append_call("call_2"),
            append_call("call_3"),
            text("should never be asked for", 600),
        ],
        bash_allowed,
    )
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "count");
    let asked = recorder
        .wait_for(Duration::from_secs(10), |e| {
            matches!(e, Event::PermissionAsked { .. })
        })
        .await;
    let Event::PermissionAsked { request, .. } = asked else {
        unreachable!("matched above")
    };
    assert_eq!(request.permission, "doom_loop");
    assert_eq!(request.patterns, ["bash"]);
    assert_eq!(request.call_id.as_deref(), Some("call_3"));
    assert!(request.title.contains("doom loop"), "{}", request.title);
    // The third call has not run: two lines so far.
    let count = || std::fs::read_to_string(scenario.path("count.txt")).expect("count file");
    assert_eq!(count(), "again\nagain\n");

    assert!(handle.send(Command::AnswerPermission {
        request_id: request.id.clone(),
        answer: PermissionAnswer::Reject { message: None },
    }));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(5))
        .await;
    assert_eq!(count(), "again\nagain\n", "the rejected call must not run");
    let history = scenario.history(&session.id).await;
    let states: Vec<&str> = tool_parts(&history)
        .iter()
        .map(|t| t.state.status_name())
        .collect();
    assert_eq!(states, ["completed", "completed", "error"]);
    assert_eq!(scenario.requests().len(), 3, "the loop stopped");
    assert!(recorder.events().iter().any(
        |e| matches!(e, Event::PermissionReplied { request_id, .. } if *request_id == request.id)
    ));
    match &tool_parts(&history)[2].state {
        ToolState::Error { error, .. } => assert!(error.contains("rejected"), "{error}"),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn headless_doom_loop_fails_closed_and_the_run_ends() {
    let scenario = Scenario::with_config(
        vec![
            append_call("call_1"),
            append_call("call_2"),
            append_call("call_3"),
            text("should never be asked for", 600),
        ],
        bash_allowed,
    )
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let recorder = scenario.record();
    let (code, _out, err) = scenario.run(&handle, "count").await;
    // Nobody can answer headless: the question is published (for `cairn
    // run --format json`) and closed at once, never left waiting.
    let events = recorder.events();
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::PermissionAsked { request, .. } => Some(request.id.as_str()),
            _ => None,
        })
        .collect();
    let replied: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::PermissionReplied { request_id, .. } => Some(request_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 1, "the doom-loop question is published once");
    assert_eq!(asked, replied, "and closed at once");
    assert_eq!(
        std::fs::read_to_string(scenario.path("count.txt")).expect("count file"),
        "again\nagain\n"
    );
    let history = scenario.history(&session.id).await;
    let tools = tool_parts(&history);
    match &tools.last().expect("three calls").state {
        ToolState::Error { error, .. } => {
            assert!(error.contains("doom_loop"), "{error}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(tools.len(), 3);
    assert_eq!(scenario.requests().len(), 3);
    assert_eq!(
        code, 1,
        "a run stopped by a doom loop failed; stderr: {err}"
    );
    assert!(err.contains("doom loop"), "{err}");
}

/// Issue #12: the doom-loop check counted calls across user turns, so a user
/// asking three times for the same file got a doom-loop question (headless:
/// a failed run). Only the calls of one user turn count.
#[tokio::test]
async fn the_same_read_in_three_user_turns_is_not_a_doom_loop() {
    // Not yolo: a doom-loop question is real (and fails closed headless).
    let scenario = Scenario::with_config(vec![], bash_allowed).await;
    let file = scenario.path("notes.txt");
    std::fs::write(&file, "remember the milk\n").expect("write notes");
    let path = file.display().to_string();
    for turn in 1..=3 {
        scenario.server.push(tool_call(
            &format!("call_{turn}"),
            "read",
            json!({ "file_path": path }),
            500,
        ));
        scenario
            .server
            .push(text(&format!("It says milk ({turn})."), 600));
    }
    let (session, handle) = scenario.session(Mode::Headless).await;
    for turn in 1..=3 {
        let (code, out, err) = scenario.run(&handle, "what does notes.txt say?").await;
        assert_eq!(code, 0, "turn {turn}: stderr: {err}");
        assert!(out.contains(&format!("It says milk ({turn}).")), "{out}");
        assert!(!err.contains("doom"), "turn {turn}: {err}");
    }
    let history = scenario.history(&session.id).await;
    let states: Vec<&str> = tool_parts(&history)
        .iter()
        .map(|t| t.state.status_name())
        .collect();
    assert_eq!(states, ["completed", "completed", "completed"]);
}

#[tokio::test]
async fn long_bash_output_keeps_the_tail_and_saves_the_whole() {
    let scenario = Scenario::start(vec![
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "for i in $(seq 1 3000); do echo \"line $i\"; done", "description": "count" }),
            500,
        ),
        text("Counted.", 900),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, err) = scenario.run(&handle, "count to 3000").await;
    assert_eq!(code, 0, "stderr: {err}");
    let history = scenario.history(&session.id).await;
    let output = match &tool_parts(&history)[0].state {
        ToolState::Completed { output, .. } => output.clone(),
        other => panic!("expected completed, got {other:?}"),
    };
    let lines: Vec<&str> = output.lines().collect();
    assert!(lines.contains(&"line 3000"), "the tail is kept");
    assert!(!lines.contains(&"line 1"), "the head is cut");
    let saved = output
        .lines()
        .find_map(|l| {
            l.split_once("Full output saved to: ")
                .map(|(_, p)| p.trim())
        })
        .expect("the output names the full-output file");
    let saved = std::path::Path::new(saved);
    assert!(
        saved.starts_with(scenario.data.path().join("tool-output")),
        "{}",
        saved.display()
    );
    let full = std::fs::read_to_string(saved).expect("read the full output");
    let expected: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(full, expected);
    // The model got the truncated text, not all 3000 lines.
    let second = &scenario.requests()[1];
    let result = second["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .map(content_text)
        .expect("tool result");
    assert!(result.contains("line 3000") && !result.lines().any(|l| l == "line 1"));
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_wait() {
    let scenario = Scenario::start(vec![
        ScriptedResponse::json(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after-ms", "100"),
        text("Done after waiting.", 500),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let recorder = scenario.record();
    let started = Instant::now();
    let (code, out, err) = scenario.run(&handle, "hello").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("Done after waiting."), "{out}");
    // The server asked for 100 ms; the default backoff would be 2 s.
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert!(err.contains("retry 1 in"), "{err}");
    let retrying = recorder
        .statuses(&session.id)
        .into_iter()
        .find_map(|s| match s {
            SessionStatus::Retrying {
                attempt, message, ..
            } => Some((attempt, message)),
            _ => None,
        })
        .expect("a Retrying status");
    assert_eq!(retrying.0, 1);
    assert!(
        retrying.1.to_lowercase().contains("rate limit"),
        "{}",
        retrying.1
    );
    assert_eq!(scenario.requests().len(), 2);
    let history = scenario.history(&session.id).await;
    assert!(last_assistant(&history).error.is_none());
}

#[tokio::test]
async fn auth_error_fails_the_run_and_the_next_prompt_works() {
    let scenario = Scenario::start(vec![ScriptedResponse::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "hello").await;
    assert_eq!(code, 1, "stdout: {out}");
    let error_lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(error_lines.len(), 1, "{err}");
    assert!(
        error_lines[0].contains("Incorrect API key provided"),
        "{err}"
    );
    assert_eq!(scenario.requests().len(), 1, "401 is not retried");
    let history = scenario.history(&session.id).await;
    let error = last_assistant(&history)
        .error
        .expect("the message has the error");
    assert_eq!(error.kind, MessageErrorKind::Auth);
    assert!(error.message.contains("Incorrect API key provided"));

    scenario.server.push(text("Working again.", 600));
    let (code, out, err) = scenario.run(&handle, "try again").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("Working again."), "{out}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    let users: Vec<String> = conversation(&requests[1])
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(users, ["hello", "try again"]);
}

#[tokio::test]
async fn shell_command_is_recorded_without_calling_the_model() {
    let scenario = Scenario::start(vec![]).await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    assert!(handle.send(Command::Shell {
        command: "echo shell-marker-$((40 + 2))".into(),
    }));
    let history = scenario
        .history_until(&session.id, Duration::from_secs(10), |history| {
            history
                .iter()
                .any(|m| m.message.as_assistant().is_some_and(|a| a.finish.is_some()))
        })
        .await;
    assert_eq!(history.len(), 2, "{history:#?}");
    let user = &history[0];
    assert!(user.message.is_user());
    match &user.parts[..] {
        [part] => match &part.kind {
            PartKind::Text(text) => assert!(text.synthetic, "{text:?}"),
            other => panic!("expected a text part, got {other:?}"),
        },
        parts => panic!("expected one part, got {parts:?}"),
    }
    let assistant = history[1].message.as_assistant().expect("assistant");
    assert_eq!(assistant.parent_id, user.message.id);
    assert!(assistant.error.is_none());
    let tools = tool_parts(&history);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].tool, "bash");
    match &tools[0].state {
        ToolState::Completed { output, input, .. } => {
            assert!(output.contains("shell-marker-42"), "{output}");
            assert_eq!(input["command"], "echo shell-marker-$((40 + 2))");
        }
        other => panic!("expected completed, got {other:?}"),
    }
    assert!(scenario.requests().is_empty(), "the model was not called");

    // The model sees the command and its output on the next turn.
    scenario.server.push(text("It printed 42.", 600));
    let (code, _, err) = scenario.run(&handle, "what did it print?").await;
    assert_eq!(code, 0, "stderr: {err}");
    let request = &scenario.requests()[0];
    let result = request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .map(content_text)
        .expect("the shell command's result");
    assert!(result.contains("shell-marker-42"), "{result}");
}

#[tokio::test]
async fn shell_command_while_busy_does_not_end_the_agents_turn() {
    let scenario = Scenario::start(vec![
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "sleep 0.5; echo slept", "description": "wait" }),
            500,
        ),
        text("The wait is over.", 600),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "wait a little");
    recorder
        .wait_for(Duration::from_secs(5), |e| {
            matches!(e, Event::PartUpdated { part } if part.as_tool().is_some_and(|t| t.state.status_name() == "running"))
        })
        .await;
    assert!(handle.send(Command::Shell {
        command: "echo from-the-user".into(),
    }));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(10))
        .await;
    // The shell command is either refused (an error event) or queued, and
    // then runs to completion after the turn.
    let refused = |recorder: &Recorder| {
        recorder
            .events()
            .iter()
            .any(|e| matches!(e, Event::Error { message, .. } if message.contains("busy")))
    };
    if !refused(&recorder) {
        scenario
            .history_until(&session.id, Duration::from_secs(5), |history| {
                tool_parts(history).iter().any(|t| {
                    t.state.input()["command"] == "echo from-the-user"
                        && t.state.status_name() == "completed"
                })
            })
            .await;
    }
    let history = scenario.history(&session.id).await;
    assert!(
        assistant_text(&history).contains("The wait is over."),
        "the turn went on after the tool: {history:#?}"
    );
    assert_eq!(scenario.requests().len(), 2);
    // The shell command either ran after the turn or was refused with a reason.
    let ran = tool_parts(&history)
        .iter()
        .any(|t| t.state.input()["command"] == "echo from-the-user");
    let refused = refused(&recorder);
    assert!(ran != refused, "ran: {ran}, refused: {refused}");
}

#[tokio::test]
async fn prompt_during_a_shell_command_waits_for_it_and_interrupt_stops_it() {
    let scenario = Scenario::with_config(vec![], |config| {
        let provider = config
            .provider
            .get_mut("scripted")
            .expect("scripted provider");
        let model = provider.models["test-model"].clone();
        provider.models.insert("other-model".into(), model);
    })
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    // A prompt that picks another model: later messages keep it.
    scenario.server.push(text("Using the other model.", 400));
    assert!(handle.send(Command::Prompt {
        text: "switch".into(),
        agent: None,
        model: Some(cairn::message::ModelRef::new("scripted", "other-model")),
        piped: false,
    }));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(10))
        .await;

    assert!(handle.send(Command::Shell {
        command: "sleep 0.4; echo shell-done".into(),
    }));
    scenario.server.push(text("I saw shell-done.", 600));
    prompt(&handle, "what did the command print?");
    recorder
        .wait_idle(&session.id, 3, Duration::from_secs(10))
        .await;
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1]["model"], "other-model",
        "the shell kept the model"
    );
    let result = requests[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .map(content_text)
        .expect("the shell command's result");
    assert!(
        result.contains("shell-done"),
        "the prompt waited for the command: {result}"
    );

    // Esc stops a running command.
    assert!(handle.send(Command::Shell {
        command: "echo begun; sleep 30".into(),
    }));
    // Interrupt once the command's first output is shown.
    recorder
        .wait_for(
            Duration::from_secs(5),
            |e| matches!(e, Event::PartDelta { delta, .. } if delta.contains("begun")),
        )
        .await;
    let asked = Instant::now();
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 4, Duration::from_secs(2))
        .await;
    assert!(asked.elapsed() < Duration::from_secs(2));
    let history = scenario.history(&session.id).await;
    let last = tool_parts(&history).pop().expect("the shell part");
    match &last.state {
        ToolState::Error { metadata, .. } => {
            let metadata = metadata.as_ref().expect("metadata");
            assert_eq!(metadata["interrupted"], true);
            assert!(metadata["output"].as_str().unwrap_or("").contains("begun"));
        }
        other => panic!("expected an interrupted part, got {other:?}"),
    }
    assert_eq!(
        last_assistant(&history).error.map(|e| e.kind),
        Some(MessageErrorKind::Aborted)
    );
    assert_eq!(scenario.requests().len(), 2, "no model call for a command");
}

#[tokio::test]
async fn interrupt_while_waiting_to_retry_stops_at_once() {
    let scenario = Scenario::start(vec![
        ScriptedResponse::json(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after-ms", "20000"),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "hello");
    recorder
        .wait_for(Duration::from_secs(5), |e| {
            matches!(
                e,
                Event::Status {
                    status: SessionStatus::Retrying { .. },
                    ..
                }
            )
        })
        .await;
    let asked = Instant::now();
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(1))
        .await;
    assert!(asked.elapsed() < Duration::from_secs(1));
    let history = scenario.history(&session.id).await;
    assert_eq!(
        last_assistant(&history).error.map(|e| e.kind),
        Some(MessageErrorKind::Aborted)
    );
    assert_eq!(scenario.requests().len(), 1);
}

#[tokio::test]
async fn dropped_stream_is_retried_and_the_answer_completes() {
    let scenario = Scenario::start(vec![
        ScriptedResponse::sse()
            .chunk(
                "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"test-model\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello wor\"},\"finish_reason\":null}]}\n\n",
            )
            .then_drop(),
        text("Hello world.", 500),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let recorder = scenario.record();
    let (code, out, err) = scenario.run(&handle, "greet").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("Hello world."), "{out}");
    assert!(
        recorder
            .statuses(&session.id)
            .iter()
            .any(|s| matches!(s, SessionStatus::Retrying { attempt: 1, .. })),
        "the countdown was shown"
    );
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    // The retry asks the same question again: the cut-off attempt is not
    // presented to the model as something it said.
    assert_eq!(conversation(&requests[1]), conversation(&requests[0]));
    let history = scenario.history(&session.id).await;
    let last = last_assistant(&history);
    assert!(last.error.is_none(), "{last:?}");
    assert_eq!(last.finish, Some(cairn::message::FinishReason::Stop));
}

#[tokio::test]
async fn a_message_sent_during_a_tool_call_follows_the_tool_result() {
    let scenario = Scenario::start(vec![
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "sleep 0.5; echo tool-finished", "description": "wait" }),
            500,
        ),
        text("Both handled.", 700),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "start the job");
    recorder
        .wait_for(Duration::from_secs(5), |e| {
            matches!(e, Event::PartUpdated { part } if part.as_tool().is_some_and(|t| t.state.status_name() == "running"))
        })
        .await;
    prompt(&handle, "also, say hi");
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(10))
        .await;
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1]["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["role"].as_str())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"]);
    let last = messages.last().expect("a message");
    assert_eq!(content_text(last), "also, say hi");
    let tool = messages.iter().find(|m| m["role"] == "tool").expect("tool");
    assert!(content_text(tool).contains("tool-finished"));
}

#[tokio::test]
async fn interrupt_while_a_doom_loop_question_is_open() {
    let scenario = Scenario::with_config(
        vec![
            append_call("call_1"),
            append_call("call_2"),
            append_call("call_3"),
        ],
        bash_allowed,
    )
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "count");
    let asked = recorder
        .wait_for(Duration::from_secs(10), |e| {
            matches!(e, Event::PermissionAsked { .. })
        })
        .await;
    let Event::PermissionAsked { request, .. } = asked else {
        unreachable!("matched above")
    };
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(2))
        .await;
    // The question is withdrawn so a front end closes its dialog.
    assert!(recorder.events().iter().any(
        |e| matches!(e, Event::PermissionReplied { request_id, .. } if *request_id == request.id)
    ));
    let history = scenario.history(&session.id).await;
    let states: Vec<&str> = tool_parts(&history)
        .iter()
        .map(|t| t.state.status_name())
        .collect();
    assert_eq!(states, ["completed", "completed", "error"]);
    assert_eq!(
        std::fs::read_to_string(scenario.path("count.txt")).expect("count"),
        "again\nagain\n"
    );
    assert_eq!(
        last_assistant(&history).error.map(|e| e.kind),
        Some(MessageErrorKind::Aborted)
    );
}

/// Issue #12: an agent's `[agent.NAME] model` was parsed and never used.
#[tokio::test]
async fn an_agents_model_is_used_when_that_agent_runs() {
    let scenario = Scenario::with_config(vec![text("Planned.", 300)], |config| {
        let plan = cairn::config::AgentConfig {
            model: Some(cairn::config::ModelRef::parse("scripted/planner").expect("valid model")),
            ..Default::default()
        };
        config.agent.insert("plan".into(), plan);
        let provider = config
            .provider
            .get_mut("scripted")
            .expect("scripted provider");
        let known = provider.models["test-model"].clone();
        provider.models.insert("planner".into(), known);
    })
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let recorder = scenario.record();
    assert!(handle.send(Command::Prompt {
        text: "plan the change".into(),
        agent: Some("plan".into()),
        model: None,
        piped: false,
    }));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(10))
        .await;
    let requests = scenario.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "planner");
}

/// Issue 11: a tool's duration is its own work, not the time the user took
/// to answer its ask. The sleep is the subject (the user thinking), not a
/// wait for an event.
#[tokio::test]
async fn time_spent_answering_an_ask_is_not_in_the_tool_duration() {
    let scenario = Scenario::with_config(
        vec![
            tool_call(
                "call_w",
                "write",
                json!({ "file_path": "notes.txt", "content": "one\n" }),
                500,
            ),
            text("written", 500),
        ],
        |config| config.yolo = false,
    )
    .await;
    let (session, handle) = scenario.session(Mode::Interactive).await;
    let recorder = scenario.record();
    prompt(&handle, "write the notes");
    let asked = recorder
        .wait_for(Duration::from_secs(10), |e| {
            matches!(e, Event::PermissionAsked { .. })
        })
        .await;
    let Event::PermissionAsked { request, .. } = asked else {
        unreachable!("matched above")
    };
    let thinking = Duration::from_millis(1_500);
    tokio::time::sleep(thinking).await;
    assert!(handle.send(Command::AnswerPermission {
        request_id: request.id.clone(),
        answer: PermissionAnswer::Once,
    }));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(10))
        .await;
    let history = scenario.history(&session.id).await;
    let tools = tool_parts(&history);
    let ToolState::Completed { time, .. } = &tools[0].state else {
        panic!("expected a completed write, got {:?}", tools[0].state);
    };
    let took = time.end.expect("finished") - time.start;
    assert!(
        (0..1_000).contains(&took),
        "the write took {took} ms, including the {thinking:?} spent answering"
    );
}
