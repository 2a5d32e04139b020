//! Context management end to end (issue 5): a real session against the
//! scripted server, which plays both the working model and the compaction
//! agent. Each test checks the stored parts, the requests the server received
//! and what the bus said.

use crate::scenario;

use std::time::Duration;

use cairn::bus::{Event, SessionStatus};
use cairn::config::Config;
use cairn::context::compaction::{AUTO_CONTINUE, SYSTEM_PROMPT};
use cairn::context::view::{CLEARED_TOOL_RESULT, COMPACTION_QUESTION};
use cairn::message::{FinishReason, MessageErrorKind, MessageWithParts, PartKind, ToolState};
use cairn::permission::Mode;
use cairn::session::command::Command;
use scenario::{
    Scenario, assistant_text, command_and_settle, delayed_text, dense_text, message_text,
    messages_of, openai_overflow, prompt_and_settle, said_text, text, tool_call, watch,
};
use serde_json::{Value, json};

const SUMMARY: &str = "## Goal\n- finish the scripted task\n## Accomplished\n- read notes.txt";

/// A window of `context` tokens with `output` kept for the answer.
fn window(config: &mut Config, context: u64, output: u64) {
    let model = config
        .provider
        .get_mut("scripted")
        .and_then(|p| p.models.get_mut("test-model"))
        .expect("the scenario config has the scripted model");
    model.context = Some(context);
    model.output = Some(output);
}

/// The usable window is 16,000 tokens: 19,200 minus 3,200 of output (a
/// sixth of the window, the most a step may ask for).
fn small_window(config: &mut Config) {
    window(config, 19_200, 3_200);
}

fn is_summary_request(request: &Value) -> bool {
    let messages = messages_of(request);
    messages
        .first()
        .is_some_and(|m| m["role"] == "system" && message_text(m) == SYSTEM_PROMPT)
        && request.get("tools").is_none()
}

/// The first two messages after the system prompt: the compaction question
/// and the summary the model wrote.
fn starts_with_summary(request: &Value, summary: &str) -> bool {
    let messages = messages_of(request);
    messages.len() > 2
        && messages[1]["role"] == "user"
        && message_text(&messages[1]) == COMPACTION_QUESTION
        && messages[2]["role"] == "assistant"
        && message_text(&messages[2]) == summary
}

fn last_message(request: &Value) -> Value {
    messages_of(request).last().cloned().expect("a message")
}

fn all_text(request: &Value) -> String {
    messages_of(request)
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn compaction_parts(history: &[MessageWithParts]) -> Vec<cairn::message::CompactionPart> {
    history
        .iter()
        .filter_map(|m| m.compaction().cloned())
        .collect()
}

fn summaries(history: &[MessageWithParts]) -> Vec<&MessageWithParts> {
    history
        .iter()
        .filter(|m| m.message.as_assistant().is_some_and(|a| a.summary))
        .collect()
}

fn continue_messages(history: &[MessageWithParts]) -> usize {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter(|p| matches!(&p.kind, PartKind::Text(t) if t.text == AUTO_CONTINUE && t.synthetic))
        .count()
}

#[tokio::test]
async fn auto_compaction_mid_task_summarizes_then_continues_the_task() {
    let scenario = Scenario::with_config(vec![], small_window).await;
    std::fs::write(scenario.path("notes.txt"), "remember the milk\n").expect("write");
    let notes = scenario.path("notes.txt").display().to_string();
    scenario.server.push(tool_call(
        "call_1",
        "read",
        json!({ "file_path": notes }),
        2_000,
    ));
    // This step's usage crosses the usable window (16,000) while calling tools.
    scenario.server.push(tool_call(
        "call_2",
        "bash",
        json!({ "command": "echo step-two", "description": "second step" }),
        16_500,
    ));
    scenario.server.push(text(SUMMARY, 3_000));
    scenario
        .server
        .push(text("Task finished after compaction.", 1_500));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "do the scripted task").await;
    assert!(watched.errors().is_empty(), "{:?}", watched.errors());

    let requests = scenario.requests();
    assert_eq!(
        requests.len(),
        4,
        "two steps, the summary, the continuation"
    );
    // Gauges: before request 0, before 1, the size that triggered the
    // compaction (the step's reported usage), after the summary, before 3.
    let gauges = watched.request_gauges();
    assert_eq!(gauges.len(), 5, "{gauges:?}");
    assert!(gauges[1].used > 2_030, "anchored on the first step's usage");
    assert!(gauges[2].used >= gauges[2].compact_at.expect("auto is on"));
    let after = gauges[3];
    assert!(
        after.used < after.compact_at.expect("auto is on") / 2,
        "{after:?}"
    );
    assert!(
        after.used < gauges[4].used,
        "the continue message adds a little"
    );
    let summary_request = &requests[2];
    assert!(is_summary_request(summary_request), "{summary_request:#}");
    let prompt = message_text(&last_message(summary_request));
    for heading in [
        "## Goal",
        "## Instructions",
        "## Discoveries",
        "## Accomplished",
        "## Relevant files",
    ] {
        assert!(prompt.contains(heading), "missing {heading}: {prompt}");
    }
    let summarized = all_text(summary_request);
    let tool_results: Vec<String> = messages_of(summary_request)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(message_text)
        .collect();
    assert!(summarized.contains("do the scripted task"));
    assert_eq!(tool_results.len(), 2, "both steps are summarized");
    assert!(tool_results[0].contains("remember the milk"));
    assert!(tool_results[1].contains("step-two"));

    let continued = &requests[3];
    assert!(starts_with_summary(continued, SUMMARY), "{continued:#}");
    assert_eq!(said_text(&last_message(continued)), AUTO_CONTINUE);
    assert!(continued["tools"].as_array().is_some_and(|t| !t.is_empty()));
    // The task is no longer a message of its own: the working state quotes it.
    let messages = messages_of(continued);
    assert!(
        !messages
            .iter()
            .map(said_text)
            .any(|t| t.contains("do the scripted task"))
    );
    assert!(message_text(&last_message(continued)).contains("[message 1]\ndo the scripted task"));

    let history = scenario.history(&session.id).await;
    let compactions = compaction_parts(&history);
    assert_eq!(compactions.len(), 1);
    assert!(compactions[0].auto && !compactions[0].overflow);
    let summary = summaries(&history);
    assert_eq!(summary.len(), 1);
    let info = summary[0].message.as_assistant().expect("assistant");
    assert_eq!(
        (info.agent.as_str(), info.finish),
        ("compaction", Some(FinishReason::Stop))
    );
    assert_eq!(continue_messages(&history), 1);
    assert!(assistant_text(&history).contains("Task finished after compaction."));
}

#[tokio::test]
async fn manual_compaction_with_instructions_does_not_continue() {
    let scenario = Scenario::start(vec![text("The first answer.", 1_000)]).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, err) = scenario.run(&handle, "first question").await;
    assert_eq!(code, 0, "{err}");

    scenario.server.push(text(SUMMARY, 1_200));
    let watched = command_and_settle(
        &scenario,
        &handle,
        Command::Compact {
            instructions: Some("focus on X".into()),
        },
    )
    .await;
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2, "exactly one summary request");
    assert!(is_summary_request(&requests[1]));
    let prompt = message_text(&last_message(&requests[1]));
    assert!(prompt.ends_with("focus on X"), "{prompt}");
    assert!(
        watched
            .notices()
            .iter()
            .any(|n| n.starts_with("compacted the conversation (manual)")),
        "{:?}",
        watched.notices()
    );
    assert!(watched.errors().is_empty(), "{:?}", watched.errors());
    let history = scenario.history(&session.id).await;
    assert_eq!(continue_messages(&history), 0);
    assert!(!compaction_parts(&history)[0].auto);
    assert_eq!(
        history
            .last()
            .and_then(|m| m.message.as_assistant())
            .map(|a| a.summary),
        Some(true),
        "the loop ended with the summary"
    );

    scenario.server.push(text("The second answer.", 900));
    let (code, out, _) = scenario.run(&handle, "second question").await;
    assert_eq!(code, 0);
    assert!(out.contains("The second answer."));
    let requests = scenario.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        starts_with_summary(&requests[2], SUMMARY),
        "{:#}",
        requests[2]
    );
    assert_eq!(said_text(&last_message(&requests[2])), "second question");
    // The first question is no longer a message: the working state quotes it.
    let messages = messages_of(&requests[2]);
    assert!(
        !messages
            .iter()
            .map(said_text)
            .any(|t| t.contains("first question"))
    );
    assert!(message_text(&last_message(&requests[2])).contains("first question"));
}

/// A model that answers the summary request with a tool call (the tools
/// scenario of benches/scripted_server.py does, and small local models do)
/// must not leave an empty "summary" that would replace the history.
#[tokio::test]
async fn a_summary_answered_with_a_tool_call_fails_and_keeps_the_history() {
    let scenario = Scenario::start(vec![text("The first answer.", 1_000)]).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    assert_eq!(scenario.run(&handle, "first question").await.0, 0);

    let args = json!({ "file_path": "README.md" });
    scenario
        .server
        .push(tool_call("call_9", "read", args, 1_200));
    let watched =
        command_and_settle(&scenario, &handle, Command::Compact { instructions: None }).await;
    let errors = watched.errors();
    assert!(
        errors.iter().any(
            |e| e.starts_with("compaction failed: Tool call not allowed")
                && e.contains("The conversation is unchanged")
        ),
        "{errors:?}"
    );
    let history = scenario.history(&session.id).await;
    let summary = summaries(&history)[0].message.as_assistant().cloned();
    let summary = summary.expect("the summary message is an assistant");
    assert_eq!(summary.finish, Some(FinishReason::Error));
    assert!(
        summary.error.is_some(),
        "the failed summary carries its error"
    );

    scenario.server.push(text("The second answer.", 1_100));
    assert_eq!(scenario.run(&handle, "second question").await.0, 0);
    let requests = scenario.requests();
    let last = requests.last().expect("the second question was sent");
    assert!(
        all_text(last).contains("first question"),
        "the history before the failed compaction is still sent"
    );
}

#[tokio::test]
async fn a_summary_request_that_overflows_is_retried_smaller() {
    let scenario = Scenario::with_config(vec![], small_window).await;
    std::fs::write(scenario.path("big.txt"), dense_text(1, 20_000)).expect("write");
    let big = scenario.path("big.txt").display().to_string();
    scenario.server.push(tool_call(
        "call_1",
        "read",
        json!({ "file_path": big }),
        2_000,
    ));
    scenario.server.push(tool_call(
        "call_2",
        "bash",
        json!({ "command": "echo done", "description": "finish" }),
        16_500,
    ));
    scenario.server.push(openai_overflow());
    scenario.server.push(text(SUMMARY, 3_000));
    scenario.server.push(text("Finished.", 1_500));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "summarize big.txt").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("Finished."));

    let requests = scenario.requests();
    assert_eq!(requests.len(), 5);
    let (first, second) = (&requests[2], &requests[3]);
    assert!(is_summary_request(first) && is_summary_request(second));
    let size = |r: &Value| r.to_string().len();
    assert!(
        size(second) * 2 < size(first),
        "the retry is much smaller: {} -> {} bytes",
        size(first),
        size(second)
    );
    assert!(!all_text(first).contains("[Tool output truncated for compaction"));
    let cut = messages_of(second)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(message_text)
        .find(|t| t.contains("[Tool output truncated for compaction: omitted"));
    assert!(cut.is_some(), "the read's output is cut: {second:#}");
    assert!(starts_with_summary(&requests[4], SUMMARY));
    assert_eq!(message_text(&last_message(&requests[4])), AUTO_CONTINUE);

    let history = scenario.history(&session.id).await;
    let summary = summaries(&history);
    assert_eq!(
        summary.len(),
        2,
        "the failed attempt and the one that worked"
    );
    let failed = summary[0].message.as_assistant().expect("assistant");
    assert_eq!(
        failed.error.as_ref().map(|e| e.kind),
        Some(MessageErrorKind::ContextOverflow)
    );
    assert!(summary[1].is_completed_summary());
}

#[tokio::test]
async fn overflow_with_auto_compaction_off_advises_prune_and_compact() {
    let scenario = Scenario::with_config(vec![openai_overflow()], |config| {
        small_window(config);
        config.compaction.auto = false;
    })
    .await;
    scenario.server.push(text("must never be requested", 1_000));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "hello").await;
    assert_eq!(scenario.requests().len(), 1, "no compaction request");
    let errors = watched.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("/prune") && e.contains("/compact")),
        "{errors:?}"
    );
    let history = scenario.history(&session.id).await;
    assert!(compaction_parts(&history).is_empty());
    assert!(summaries(&history).is_empty());
}

#[tokio::test]
async fn provider_overflow_compacts_and_replays_the_user_message() {
    let scenario =
        Scenario::with_config(vec![text("The first answer.", 1_000)], small_window).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, _) = scenario.run(&handle, "first question").await;
    assert_eq!(code, 0);

    scenario.server.push(openai_overflow());
    scenario.server.push(text(SUMMARY, 1_500));
    scenario
        .server
        .push(text("Here is what the paste says.", 2_000));
    let paste = format!(
        "PASTE-MARKER explain this log\n{}",
        "error: disk full\n".repeat(50)
    );
    let (code, out, err) = scenario.run(&handle, &paste).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Here is what the paste says."), "{out}");

    let requests = scenario.requests();
    assert_eq!(requests.len(), 4, "first, rejected, summary, replay");
    assert!(all_text(&requests[1]).contains("PASTE-MARKER"));
    let summary_request = &requests[2];
    assert!(is_summary_request(summary_request));
    assert!(all_text(summary_request).contains("first question"));
    assert!(
        !all_text(summary_request).contains("PASTE-MARKER"),
        "the replayed message is not summarized"
    );
    let replayed = &requests[3];
    assert!(starts_with_summary(replayed, SUMMARY), "{replayed:#}");
    assert_eq!(said_text(&last_message(replayed)), paste);
    assert!(!all_text(replayed).contains(AUTO_CONTINUE));

    let history = scenario.history(&session.id).await;
    let compactions = compaction_parts(&history);
    assert_eq!(compactions.len(), 1);
    assert!(compactions[0].auto && compactions[0].overflow);
    let pastes = history
        .iter()
        .filter(|m| m.message.is_user())
        .filter(|m| {
            m.parts
                .iter()
                .any(|p| matches!(&p.kind, PartKind::Text(t) if t.text == paste))
        })
        .count();
    assert_eq!(pastes, 2, "the original and its replay after the summary");
    assert_eq!(continue_messages(&history), 0);
}

/// (call id, output) of every completed tool part, and whether it was pruned.
fn tool_outputs(history: &[MessageWithParts]) -> Vec<(String, bool)> {
    history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool())
        .filter_map(|t| match &t.state {
            ToolState::Completed { time, .. } => {
                Some((t.call_id.clone(), time.compacted.is_some()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn prune_clears_old_tool_outputs_and_says_what_it_freed() {
    cairn::token::count("exact counts from the start, so the plan is deterministic");
    let scenario = Scenario::with_config(vec![], |config| config.compaction.prune = false).await;
    let mut files = Vec::new();
    for n in 0..6 {
        let path = scenario.path(&format!("data{n}.txt"));
        std::fs::write(&path, dense_text(n, 20_000)).expect("write");
        files.push(path.display().to_string());
    }
    for (n, file) in files.iter().enumerate() {
        scenario.server.push(tool_call(
            &format!("call_{n}"),
            "read",
            json!({ "file_path": file }),
            1_000,
        ));
    }
    scenario.server.push(text("Read all six.", 1_000));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let (code, _, err) = scenario.run(&handle, "read the data files").await;
    assert_eq!(code, 0, "{err}");

    // Everything is in the last two turns: nothing may be pruned, and the user hears why.
    let mut watched = watch(&scenario, &session.id);
    assert!(handle.send(Command::Prune));
    watched.until(|e| matches!(e, Event::Notice { .. })).await;
    let notice = watched.notices().pop().expect("a notice");
    assert!(
        notice.starts_with("nothing to prune: only 0 tokens"),
        "{notice}"
    );

    for (question, answer) in [("second", "Second answer."), ("third", "Third answer.")] {
        scenario.server.push(text(answer, 1_100));
        let (code, _, _) = scenario.run(&handle, question).await;
        assert_eq!(code, 0);
    }
    let mut watched = watch(&scenario, &session.id);
    assert!(handle.send(Command::Prune));
    watched.until(|e| matches!(e, Event::Notice { .. })).await;
    let notice = watched.notices().pop().expect("a notice");
    let pattern = regex::Regex::new(r"^pruned (\d+) tool outputs, freed ([\d,]+) tokens$")
        .expect("valid regex");
    let captures = pattern
        .captures(&notice)
        .unwrap_or_else(|| panic!("{notice}"));
    let pruned: usize = captures[1].parse().expect("a number");
    let freed: u64 = captures[2].replace(',', "").parse().expect("a number");
    assert!(freed > 20_000, "{notice}");

    let history = scenario.history(&session.id).await;
    let outputs = tool_outputs(&history);
    let cleared: Vec<&String> = outputs
        .iter()
        .filter(|(_, c)| *c)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(cleared.len(), pruned);
    assert!(
        pruned >= 1 && pruned < outputs.len(),
        "the newest 40,000 tokens stay"
    );
    assert_eq!(cleared[0], "call_0", "the oldest output goes first");
    let updates = watched
        .seen
        .iter()
        .filter(|e| matches!(e, Event::PartUpdated { .. }))
        .count();
    assert_eq!(updates, pruned, "each cleared part is published");

    scenario.server.push(text("Fourth answer.", 1_200));
    let (code, _, _) = scenario.run(&handle, "fourth").await;
    assert_eq!(code, 0);
    let last = scenario.requests().pop().expect("a request");
    for message in messages_of(&last).iter().filter(|m| m["role"] == "tool") {
        let id = message["tool_call_id"]
            .as_str()
            .expect("call id")
            .to_string();
        let content = message_text(message);
        if cleared.contains(&&id) {
            assert_eq!(content, CLEARED_TOOL_RESULT, "{id}");
        } else {
            assert!(content.len() > 19_000, "{id} keeps its output");
        }
    }
}

#[tokio::test]
async fn an_instruction_file_bigger_than_the_window_is_diagnosed_before_sending() {
    // The instruction file alone is bigger than the usable window: compacting
    // cannot help, and cairn says so before sending or summarizing anything
    // (issue 19; it used to compact, then stop with advice).
    let scenario = Scenario::with_config(vec![], small_window).await;
    std::fs::write(scenario.path("AGENTS.md"), dense_text(7, 50_000)).expect("write");
    let (session, handle) = scenario.session(Mode::Headless).await;
    let watched = prompt_and_settle(&scenario, &handle, "hello").await;
    let errors = watched.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("this model's window of 19,200 tokens is smaller than")
            && errors[0].contains("(instruction files included)"),
        "{errors:?}"
    );
    assert!(scenario.requests().is_empty(), "nothing is sent");
    let history = scenario.history(&session.id).await;
    assert_eq!(compaction_parts(&history).len(), 0);
}

#[tokio::test]
async fn a_prompt_typed_during_compaction_waits_and_is_answered_after_it() {
    // A window wide enough that the usage reported below (far above what
    // was sent, so calibration doubles every count) leaves the prompt room.
    let scenario = Scenario::with_config(vec![], |config| window(config, 32_000, 4_000)).await;
    scenario.server.push(tool_call(
        "call_1",
        "bash",
        json!({ "command": "echo working", "description": "work" }),
        29_000,
    ));
    scenario
        .server
        .push(delayed_text(Duration::from_millis(800), SUMMARY, 3_000));
    scenario
        .server
        .push(text("Answering the typed question.", 1_500));
    let (session, handle) = scenario.session(Mode::Headless).await;
    let mut watched = watch(&scenario, &session.id);
    assert!(handle.send(Command::Prompt {
        text: "start the work".into(),
        agent: None,
        model: None,
        piped: false,
    }));
    watched
        .until(|e| {
            matches!(
                e,
                Event::Status {
                    status: SessionStatus::Compacting,
                    ..
                }
            )
        })
        .await;
    assert!(handle.send(Command::Prompt {
        text: "TYPED while compacting".into(),
        agent: None,
        model: None,
        piped: false,
    }));
    watched.until_settled().await;

    let requests = scenario.requests();
    assert_eq!(requests.len(), 3, "work, summary, the typed question");
    assert!(is_summary_request(&requests[1]));
    assert!(!all_text(&requests[1]).contains("TYPED"));
    let answer = &requests[2];
    assert!(starts_with_summary(answer, SUMMARY), "{answer:#}");
    assert_eq!(
        said_text(&last_message(answer)),
        "TYPED while compacting",
        "the typed question is what the model answers next"
    );
    assert!(!all_text(answer).contains(AUTO_CONTINUE), "{answer:#}");
    let history = scenario.history(&session.id).await;
    assert!(assistant_text(&history).contains("Answering the typed question."));
}

/// What one run of the gauge scenario recorded.
struct GaugeRun {
    requests: Vec<Value>,
    /// The gauge published right before each request.
    predicted: Vec<u64>,
    /// The gauge published by `/prune`, and its notice.
    after_prune: u64,
    /// `/context` after turn 3, when nothing was added since the last request.
    breakdown: cairn::context::ContextBreakdown,
}

/// Our count of a request as the server received it: the JSON of its
/// messages (system prompt included) and of its tool definitions.
fn real_count(request: &Value) -> u64 {
    let json = |v: &Value| serde_json::to_string(v).expect("JSON");
    let tools = request.get("tools").map(json).unwrap_or_default();
    (cairn::token::count(&json(&request["messages"])) + cairn::token::count(&tools)) as u64
}

/// Five reads of about 16,000 tokens and a shell step across three turns,
/// `/prune`, then a fourth turn. `counts[k]` is the usage the server reports
/// for request `k` (1,000 when absent).
async fn gauge_run(counts: &[u64]) -> GaugeRun {
    cairn::token::count("exact counts from the start, so both passes match");
    let scenario = Scenario::with_config(vec![], |config| config.compaction.prune = false).await;
    let reported = |k: usize| counts.get(k).copied().unwrap_or(1_000);
    let mut step = 0;
    let mut next = || {
        step += 1;
        step - 1
    };
    for n in 0..5u64 {
        let path = scenario.path(&format!("data{n}.txt"));
        std::fs::write(&path, dense_text(n, 25_000)).expect("write");
        let args = json!({ "file_path": path.display().to_string() });
        scenario.server.push(tool_call(
            &format!("call_r{n}"),
            "read",
            args,
            reported(next()),
        ));
        if n == 1 {
            let args = json!({ "command": "echo checked", "description": "check" });
            scenario
                .server
                .push(tool_call("call_b1", "bash", args, reported(next())));
        }
    }
    scenario
        .server
        .push(text("Read them all.", reported(next())));
    scenario
        .server
        .push(text("Second answer.", reported(next())));
    scenario
        .server
        .push(text("Third answer.", reported(next())));
    let args = json!({ "command": "echo fourth", "description": "four" });
    scenario
        .server
        .push(tool_call("call_b2", "bash", args, reported(next())));
    scenario
        .server
        .push(text("Fourth answer.", reported(next())));

    let (session, handle) = scenario.session(Mode::Headless).await;
    let mut predicted = Vec::new();
    for question in ["read the data files", "second", "third"] {
        let watched = prompt_and_settle(&scenario, &handle, question).await;
        predicted.extend(watched.request_gauges().iter().map(|g| g.used));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    assert!(handle.send(Command::Context { reply }));
    let breakdown = answer.await.expect("a breakdown");
    let mut watched = watch(&scenario, &session.id);
    assert!(handle.send(Command::Prune));
    watched.until(|e| matches!(e, Event::Gauge { .. })).await;
    let after_prune = watched.gauges()[0].used;
    let watched = prompt_and_settle(&scenario, &handle, "fourth").await;
    predicted.extend(watched.request_gauges().iter().map(|g| g.used));
    let requests = scenario.requests();
    assert_eq!(
        predicted.len(),
        requests.len(),
        "one gauge before each request"
    );
    GaugeRun {
        requests,
        predicted,
        after_prune,
        breakdown,
    }
}

#[tokio::test]
async fn the_gauge_predicts_the_next_request_and_context_adds_up_to_it() {
    // Pass 1 learns what each request really weighs; pass 2 replays the same
    // session with the server reporting those counts, as a real one would.
    let learned: Vec<u64> = gauge_run(&[])
        .await
        .requests
        .iter()
        .map(real_count)
        .collect();
    let run = gauge_run(&learned).await;
    let real: Vec<u64> = run.requests.iter().map(real_count).collect();
    println!("request  predicted  real(tiktoken of body)  diff");
    let mut worst: f64 = 0.0;
    for (k, (&predicted, &real)) in run.predicted.iter().zip(&real).enumerate() {
        let diff = (predicted as f64 - real as f64) / real as f64 * 100.0;
        println!("{k:>7}  {predicted:>9}  {real:>22}  {diff:+.2}%");
        // Request 0 has no usage to anchor on; request 9 follows /prune, checked below.
        if k > 0 && k != 9 {
            worst = worst.max(diff.abs());
        }
    }
    println!("worst anchored difference: {worst:.2}%");
    assert!(worst < 2.0, "the gauge is within 2% of the next request");

    // Turn 3 ended with a text answer: nothing was added since its request.
    let gauge = run.breakdown.gauge;
    assert_eq!(gauge.used, learned[8] + 20, "reported input + output");
    let sum: u64 = run.breakdown.categories.iter().map(|(_, n)| n).sum();
    assert_eq!(
        sum as i64 + run.breakdown.difference,
        gauge.used as i64,
        "{:?}",
        run.breakdown
    );
    assert!(run.breakdown.prunable > 20_000, "{:?}", run.breakdown);

    // /prune lowers the gauge to what the next request weighs.
    let next = real[9];
    let diff = (run.after_prune as f64 - next as f64) / next as f64 * 100.0;
    println!(
        "after prune: predicted {} real {next} ({diff:+.2}%)",
        run.after_prune
    );
    assert!(run.after_prune < gauge.used - 20_000);
    // The savings are counted on the outputs' text, the body escapes them as
    // JSON (about 1.5% more tokens); taking off several times what remains
    // magnifies that, hence the wider bound.
    assert!(diff.abs() < 3.0, "{diff:+.2}%");
}

#[tokio::test]
async fn a_summary_that_overflows_twice_drops_the_oldest_turns() {
    let scenario = Scenario::with_config(vec![], |config| {
        small_window(config);
        config.compaction.tail_turns = 0;
    })
    .await;
    for answer in ["Answer one.", "Answer two."] {
        scenario.server.push(text(answer, 1_000));
    }
    let args = json!({ "command": "echo three", "description": "three" });
    scenario
        .server
        .push(tool_call("call_3", "bash", args, 16_500));
    scenario.server.push(openai_overflow());
    scenario.server.push(openai_overflow());
    scenario.server.push(text(SUMMARY, 2_000));
    scenario.server.push(text("Done with three.", 1_500));
    let (session, handle) = scenario.session(Mode::Headless).await;
    for question in ["FIRST question", "SECOND question", "THIRD question"] {
        let (code, _, err) = scenario.run(&handle, question).await;
        assert_eq!(code, 0, "{err}");
    }
    let requests = scenario.requests();
    assert_eq!(
        requests.len(),
        7,
        "3 steps, 3 summary attempts, the continuation"
    );
    let attempts: Vec<String> = requests[3..6].iter().map(all_text).collect();
    assert!(requests[3..6].iter().all(is_summary_request));
    assert!(attempts[0].contains("FIRST question") && attempts[1].contains("FIRST question"));
    assert!(
        !attempts[2].contains("FIRST question"),
        "the oldest turn is dropped"
    );
    assert!(attempts[2].contains("SECOND question") && attempts[2].contains("THIRD question"));
    assert!(
        attempts[2].contains(&cairn::context::compaction::omitted_turns_note(1)),
        "the summarizer is told a turn is missing: {}",
        attempts[2]
    );
    assert!(starts_with_summary(&requests[6], SUMMARY));
    let history = scenario.history(&session.id).await;
    assert_eq!(summaries(&history).len(), 3);
    assert!(assistant_text(&history).contains("Done with three."));
}

#[tokio::test]
async fn a_prompt_typed_while_an_overflow_is_compacted_follows_the_replay() {
    let scenario =
        Scenario::with_config(vec![text("The first answer.", 1_000)], small_window).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    assert_eq!(scenario.run(&handle, "first question").await.0, 0);
    scenario.server.push(openai_overflow());
    scenario
        .server
        .push(delayed_text(Duration::from_millis(800), SUMMARY, 1_500));
    scenario.server.push(text("Answering both.", 2_000));
    let mut watched = watch(&scenario, &session.id);
    for (text, wait_for_compaction) in [("PASTE that overflowed", true), ("TYPED meanwhile", false)]
    {
        assert!(handle.send(Command::Prompt {
            text: text.into(),
            agent: None,
            model: None,
            piped: false,
        }));
        if wait_for_compaction {
            watched
                .until(|e| {
                    matches!(
                        e,
                        Event::Status {
                            status: SessionStatus::Compacting,
                            ..
                        }
                    )
                })
                .await;
        }
    }
    watched.until_settled().await;
    let requests = scenario.requests();
    assert_eq!(requests.len(), 4, "first, rejected, summary, answer");
    let messages = messages_of(&requests[3]);
    let texts: Vec<String> = messages.iter().map(said_text).collect();
    assert!(starts_with_summary(&requests[3], SUMMARY), "{texts:?}");
    assert_eq!(
        texts[texts.len() - 2..],
        ["PASTE that overflowed", "TYPED meanwhile"],
        "the replayed message, then the prompt typed meanwhile"
    );
    assert!(!texts.iter().any(|t| t == AUTO_CONTINUE));
}

#[tokio::test]
async fn interrupting_a_compaction_leaves_the_session_as_it_was() {
    let scenario = Scenario::start(vec![text("The first answer.", 1_000)]).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    assert_eq!(scenario.run(&handle, "first question").await.0, 0);
    let before = scenario.history(&session.id).await;
    scenario
        .server
        .push(delayed_text(Duration::from_secs(5), SUMMARY, 1_500));
    let mut watched = watch(&scenario, &session.id);
    assert!(handle.send(Command::Compact { instructions: None }));
    watched
        .until(|e| {
            matches!(
                e,
                Event::Status {
                    status: SessionStatus::Compacting,
                    ..
                }
            )
        })
        .await;
    // Let the summary request reach the server before interrupting it.
    while scenario.requests().len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(handle.send(Command::Interrupt));
    watched.until_settled().await;
    assert_eq!(scenario.history(&session.id).await, before);

    scenario.server.push(text("The second answer.", 1_100));
    assert_eq!(scenario.run(&handle, "second question").await.0, 0);
    let last = scenario.requests().pop().expect("a request");
    assert!(
        all_text(&last).contains("first question"),
        "nothing was summarized"
    );
    assert!(!all_text(&last).contains(COMPACTION_QUESTION));
}

#[tokio::test]
async fn a_paste_larger_than_the_window_stops_after_one_compaction() {
    // llama-server's case: the replayed message alone overflows again.
    let scenario =
        Scenario::with_config(vec![text("The first answer.", 1_000)], small_window).await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    assert_eq!(scenario.run(&handle, "first question").await.0, 0);
    scenario.server.push(openai_overflow());
    scenario.server.push(text(SUMMARY, 1_500));
    for _ in 0..4 {
        scenario.server.push(openai_overflow());
        scenario.server.push(text(SUMMARY, 1_500));
    }
    let paste = format!("PASTE {}", dense_text(3, 80_000));
    let watched = prompt_and_settle(&scenario, &handle, &paste).await;
    let errors = watched.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("compaction cannot help")),
        "{errors:?}"
    );
    let requests = scenario.requests();
    assert_eq!(
        requests.len(),
        3,
        "first answer, rejected paste, one summary"
    );
    assert!(!all_text(&requests[2]).contains("PASTE"));
    let history = scenario.history(&session.id).await;
    assert_eq!(compaction_parts(&history).len(), 1);
}

#[tokio::test]
async fn a_question_that_fills_the_window_is_replayed_after_the_summary() {
    // The gauge fires before sending: the new question is unanswered and too
    // big for the verbatim tail (4,000 tokens), so it must follow the summary
    // word for word. Usage is reported close to the real sizes.
    cairn::token::count("exact counts: the sizes below are o200k tokens");
    let scenario = Scenario::with_config(vec![], small_window).await;
    std::fs::write(scenario.path("big.txt"), dense_text(4, 13_500)).expect("write");
    let args = json!({ "file_path": scenario.path("big.txt").display().to_string() });
    scenario
        .server
        .push(tool_call("call_1", "read", args, 2_000));
    scenario.server.push(text("Read it.", 11_500));
    let (session, handle) = scenario.session(Mode::Headless).await;
    assert_eq!(scenario.run(&handle, "read big.txt").await.0, 0);
    scenario.server.push(text(SUMMARY, 1_500));
    scenario.server.push(text("Answering the question.", 9_000));
    let question = format!("QUESTION about this log:\n{}", dense_text(5, 9_000));
    let watched = prompt_and_settle(&scenario, &handle, &question).await;
    assert!(watched.errors().is_empty(), "{:?}", watched.errors());
    let requests = scenario.requests();
    assert_eq!(requests.len(), 4, "two steps, summary, answer");
    assert!(is_summary_request(&requests[2]));
    assert!(!all_text(&requests[2]).contains("QUESTION"));
    assert!(starts_with_summary(&requests[3], SUMMARY));
    assert_eq!(message_text(&last_message(&requests[3])), question);
    assert!(!all_text(&requests[3]).contains(AUTO_CONTINUE));
    let history = scenario.history(&session.id).await;
    let compactions = compaction_parts(&history);
    assert!(compactions[0].auto && !compactions[0].overflow);
}
