//! The `task` tool end to end: a subagent in a child session, against the
//! scripted server; real store, real tools.

use crate::scenario;
use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn::session::command::Command;
use scenario::{Scenario, message_text, messages_of, slow_text, text, tool_call};
use serde_json::{Value, json};

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn all_text(request: &Value) -> String {
    messages_of(request)
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn explore_child_reads_and_only_its_answer_reaches_the_parent() {
    let scenario = Scenario::start(vec![]).await;
    let secret_line = "the-file-body-marker-42";
    let file = scenario.path("notes.txt");
    std::fs::write(&file, format!("{secret_line}\n")).expect("write");
    let path = file.display().to_string();
    for response in [
        tool_call(
            "call_task",
            "task",
            json!({ "description": "find marker", "prompt": "What does notes.txt say?", "subagent_type": "explore" }),
            1_000,
        ),
        tool_call("call_read", "read", json!({ "file_path": path }), 500),
        text("notes.txt:1 holds a marker line.", 800),
        text("The child says notes.txt holds a marker.", 1_200),
    ] {
        scenario.server.push(response);
    }
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let recorder = scenario.record();
    let (code, out, err) = scenario.run(&handle, "delegate it").await;
    // While it ran, the task part named its child (a front end can open it).
    let running_child = recorder.events().iter().find_map(|event| match event {
        cairn::bus::Event::PartUpdated { part, .. } => match part.as_tool().map(|t| &t.state) {
            Some(cairn::message::ToolState::Running {
                metadata: Some(metadata),
                ..
            }) => metadata["session_id"].as_str().map(str::to_string),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("holds a marker"), "stdout: {out}");

    let requests = scenario.requests();
    assert_eq!(requests.len(), 4, "out: {out}\nerr: {err}\n{requests:#?}");
    // The parent (build) is offered the task tool, listing the subagents.
    let parent_tools = tool_names(&requests[0]);
    assert!(
        parent_tools.contains(&"task".to_string()),
        "{parent_tools:?}"
    );
    let task_spec = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap()
        .to_string();
    assert!(task_spec.contains("explore") && task_spec.contains("general"));
    // The child: explore's prompt replaces the base prompt, read-only tools only.
    let child_system = message_text(&messages_of(&requests[1])[0]);
    assert!(child_system.contains("You are explore"), "{child_system}");
    let child_tools = tool_names(&requests[1]);
    assert!(child_tools.contains(&"read".to_string()), "{child_tools:?}");
    for forbidden in ["bash", "write", "edit", "task"] {
        assert!(
            !child_tools.contains(&forbidden.to_string()),
            "{child_tools:?}"
        );
    }
    assert!(all_text(&requests[2]).contains(secret_line));
    // The parent's next request: the answer, none of the child's read output.
    let parent_next = all_text(&requests[3]);
    assert!(
        parent_next.contains("notes.txt:1 holds a marker line."),
        "{parent_next}"
    );
    assert!(!parent_next.contains(secret_line), "{parent_next}");

    // The child is a session of its own, with the parent recorded.
    let history = scenario.history(&session.id).await;
    let task = history
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.as_tool())
        .find(|t| t.tool == "task")
        .expect("task part");
    let cairn::message::ToolState::Completed {
        metadata, output, ..
    } = &task.state
    else {
        panic!("task not completed: {:?}", task.state)
    };
    let child_id = metadata["session_id"].as_str().expect("child id");
    assert_eq!(running_child.as_deref(), Some(child_id));
    assert!(output.starts_with(&format!("task_id: {child_id}")));
    let child = scenario
        .app
        .store
        .get_session(child_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(child.parent_id.as_deref(), Some(session.id.as_str()));
    let child_history = scenario.history(child_id).await;
    assert_eq!(
        child_history
            .first()
            .unwrap()
            .message
            .as_user()
            .unwrap()
            .agent,
        "explore"
    );
}

#[tokio::test]
async fn an_unknown_agent_or_a_grandchild_is_refused_with_the_choices() {
    let scenario = Scenario::start(vec![]).await;
    for response in [
        tool_call(
            "call_bad",
            "task",
            json!({ "description": "x", "prompt": "y", "subagent_type": "nobody" }),
            1_000,
        ),
        tool_call(
            "call_task",
            "task",
            json!({ "description": "d", "prompt": "p", "subagent_type": "general" }),
            1_000,
        ),
        // The general child tries to delegate in turn.
        tool_call(
            "call_inner",
            "task",
            json!({ "description": "d2", "prompt": "p2", "subagent_type": "explore" }),
            500,
        ),
        text("could not delegate", 600),
        text("done", 1_200),
    ] {
        scenario.server.push(response);
    }
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "go").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = scenario.requests();
    let after_bad = all_text(&requests[1]);
    assert!(after_bad.contains("Unknown agent `nobody`"), "{after_bad}");
    assert!(after_bad.contains("explore"), "{after_bad}");
    // At max depth (1 by default) the child is not offered `task`; a call
    // made anyway is refused.
    assert!(!tool_names(&requests[2]).contains(&"task".to_string()));
    let child_after_inner = all_text(&requests[3]);
    assert!(
        child_after_inner.contains("cannot start subagents"),
        "{child_after_inner}"
    );
}

/// One answer with two `task` calls (to explore and to general).
fn two_task_calls() -> support::ScriptedResponse {
    let call = |index: u32, id: &str, agent: &str| {
        let args = json!({ "description": format!("look {index}"), "prompt": format!("question {index}"), "subagent_type": agent });
        json!({"index": index, "id": id, "type": "function", "function": {"name": "task", "arguments": args.to_string()}})
    };
    support::ScriptedResponse::sse()
        .chunk(scenario::chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [call(0, "call_a", "explore"), call(1, "call_b", "general")]}),
            None,
        ))
        .chunk(scenario::chunk(json!({}), Some("tool_calls")))
        .chunk(scenario::usage(1_000, 40))
        .chunk("data: [DONE]\n\n")
}

#[tokio::test]
async fn two_task_calls_run_concurrently_and_both_answers_return() {
    let scenario = Scenario::start(vec![]).await;
    scenario.server.push(two_task_calls());
    let pause = Duration::from_millis(600);
    // Each child streams three words, `pause` before each: run one after
    // the other they would take twice as long.
    scenario
        .server
        .push(slow_text("first child answer", 300, pause));
    scenario
        .server
        .push(slow_text("second child answer", 300, pause));
    scenario.server.push(text("both done", 1_500));
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let started = Instant::now();
    let (code, out, err) = scenario.run(&handle, "two at once").await;
    let took = started.elapsed();
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("both done"), "{out}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 4);
    let last = all_text(&requests[3]);
    assert!(
        last.contains("first child answer") && last.contains("second child answer"),
        "{last}"
    );
    assert!(
        took < pause * 5,
        "children ran one after the other: {took:?}"
    );
}

#[tokio::test]
async fn interrupting_the_parent_stops_both_children_and_pairs_every_call() {
    let scenario = Scenario::start(vec![]).await;
    scenario.server.push(two_task_calls());
    scenario
        .server
        .push(scenario::text_then_stall("child one working"));
    scenario
        .server
        .push(scenario::text_then_stall("child two working"));
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let recorder = scenario.record();
    scenario::prompt(&handle, "two at once");
    // Both children are mid-answer once the server has their requests.
    let deadline = Instant::now() + Duration::from_secs(20);
    while scenario.requests().len() < 3 {
        assert!(Instant::now() < deadline, "children never asked the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(20))
        .await;
    let history = scenario.history(&session.id).await;
    let tasks: Vec<_> = scenario::tool_parts(&history);
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().all(|t| t.state.is_finished()), "{tasks:?}");
    let children = scenario.app.store.list_sessions(50).await.unwrap();
    let children: Vec<_> = children
        .into_iter()
        .filter(|s| s.parent_id.as_deref() == Some(session.id.as_str()))
        .collect();
    assert_eq!(children.len(), 2);
    for child in children {
        let child_history = scenario.history(&child.id).await;
        for tool in scenario::tool_parts(&child_history) {
            assert!(tool.state.is_finished(), "{tool:?}");
        }
        // The child's answer was cut off: no finished, unpaired step is left.
        let assistant = child_history.iter().rev().find(|m| !m.message.is_user());
        assert!(assistant.is_some(), "the child started answering");
    }
}

/// Claude Code's documented subagent file, copied unchanged.
const CLAUDE_REVIEWER: &str = "---
name: code-reviewer
description: Expert code review specialist. Proactively reviews code for quality, security, and maintainability. Use immediately after writing or modifying code.
tools: Read, Grep, Glob, Bash
model: inherit
---

You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
2. Focus on modified files
3. Begin review immediately
";

#[tokio::test]
async fn a_claude_code_agent_file_is_offered_and_runs_with_its_prompt_and_tools() {
    let scenario = Scenario::start(vec![]).await;
    let agents = scenario.project.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).expect("mkdir");
    std::fs::write(agents.join("code-reviewer.md"), CLAUDE_REVIEWER).expect("write");
    scenario.server.push(tool_call(
        "call_task",
        "task",
        json!({ "description": "review", "prompt": "review the diff", "subagent_type": "code-reviewer" }),
        1_000,
    ));
    scenario.server.push(text("Looks fine.", 400));
    scenario.server.push(text("Reviewed.", 1_200));
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "review please").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 3);
    let task_spec = requests[0]["tools"].to_string();
    assert!(
        task_spec.contains("code-reviewer: Expert code review"),
        "{task_spec}"
    );
    let system = message_text(&messages_of(&requests[1])[0]);
    assert!(
        system.starts_with("You are a senior code reviewer"),
        "{system}"
    );
    let mut tools = tool_names(&requests[1]);
    tools.sort();
    assert_eq!(tools, ["bash", "glob", "grep", "read"]);
    assert!(all_text(&requests[2]).contains("Looks fine."));
}

/// Figure: the parent's growth per delegated task. The child reads ~50,000
/// tokens of files and answers in ~1,000; the parent must grow by the answer
/// plus under 300 tokens (the call, the task id and the wrapper).
#[tokio::test]
async fn parent_grows_by_the_answer_plus_under_300_tokens() {
    let scenario = Scenario::start(vec![]).await;
    let mut paths = Vec::new();
    for i in 0..5 {
        let file = scenario.path(&format!("big{i}.txt"));
        // ~10k tokens each (dense hex), under the read tool's 50 KB / 2000-line caps.
        std::fs::write(&file, scenario::dense_text(i, 15_500)).expect("write");
        paths.push(file.display().to_string());
    }
    let answer = scenario::dense_text(99, 1_650).replace('\n', " ");
    scenario.server.push(tool_call(
        "call_task",
        "task",
        json!({ "description": "read all", "prompt": "summarize the big files", "subagent_type": "explore" }),
        1_000,
    ));
    for (i, path) in paths.iter().enumerate() {
        scenario.server.push(tool_call(
            &format!("r{i}"),
            "read",
            json!({ "file_path": path }),
            500,
        ));
    }
    scenario.server.push(text(&answer, 50_000));
    scenario.server.push(text("ok", 2_000));
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "delegate the reading").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = scenario.requests();
    let tokens = |r: &Value| cairn::token::count(&serde_json::to_string(&r["messages"]).unwrap());
    let child_read = tokens(&requests[6]) - tokens(&requests[1]);
    let growth = tokens(&requests[7]) - tokens(&requests[0]);
    let answer_tokens = cairn::token::count(&answer);
    eprintln!(
        "figure: child read {child_read} tokens; parent grew {growth} tokens for a {answer_tokens}-token answer (overhead {})",
        growth - answer_tokens
    );
    assert!(
        child_read > 45_000,
        "the child read only {child_read} tokens"
    );
    assert!(
        growth < answer_tokens + 300,
        "grew {growth} for {answer_tokens}"
    );
}

/// The `task` tool is offered only where a call could succeed: down to
/// `[task] max_depth` levels (2 here: a child may start one more level),
/// and not at all with `max_depth = 0`.
#[tokio::test]
async fn the_task_tool_is_offered_down_to_max_depth_only() {
    let scenario = Scenario::with_config(vec![], |config| config.task.max_depth = 2).await;
    let delegate = |id: &str, prompt: &str| {
        tool_call(
            id,
            "task",
            json!({ "description": "go deeper", "prompt": prompt, "subagent_type": "general" }),
            1_000,
        )
    };
    for response in [
        delegate("call_child", "level one"),
        delegate("call_grandchild", "level two"),
        text("grandchild answer", 500),
        text("child answer", 700),
        text("parent answer", 1_200),
    ] {
        scenario.server.push(response);
    }
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "nest").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("parent answer"), "{out}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 5);
    let offers_task = |r: &Value| tool_names(r).contains(&"task".to_string());
    assert!(offers_task(&requests[0]), "the parent may delegate");
    assert!(
        offers_task(&requests[1]),
        "the child may delegate at max_depth 2"
    );
    assert!(!offers_task(&requests[2]), "the grandchild is at max depth");
    assert!(all_text(&requests[3]).contains("grandchild answer"));

    let off = Scenario::with_config(vec![text("by myself", 500)], |config| {
        config.task.max_depth = 0;
    })
    .await;
    let (_session, handle) = off.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = off.run(&handle, "no subagents").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(!offers_task(&off.requests()[0]));
}

/// With `max_concurrency = 1` the two `task` calls of one step take turns:
/// the second child's session starts only after the first child answered.
#[tokio::test]
async fn max_concurrency_one_runs_task_calls_in_turn() {
    let scenario = Scenario::with_config(vec![], |config| config.task.max_concurrency = 1).await;
    scenario.server.push(two_task_calls());
    scenario.server.push(text("first child answer", 300));
    scenario.server.push(text("second child answer", 300));
    scenario.server.push(text("both done", 1_500));
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "one at a time").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("both done"), "{out}");
    let mut children: Vec<_> = scenario
        .app
        .store
        .list_sessions(50)
        .await
        .unwrap()
        .into_iter()
        .filter(|s| s.parent_id.as_deref() == Some(session.id.as_str()))
        .collect();
    assert_eq!(children.len(), 2);
    children.sort_by_key(|s| s.time_created);
    // The first child's `task` call in the parent ended when its answer came back.
    let history = scenario.history(&session.id).await;
    let answered_at = scenario::tool_parts(&history)
        .iter()
        .find_map(|t| match &t.state {
            cairn::message::ToolState::Completed { metadata, time, .. }
                if metadata["session_id"] == children[0].id.as_str() =>
            {
                time.end
            }
            _ => None,
        })
        .expect("the first child answered");
    assert!(
        children[1].time_created >= answered_at,
        "the second child started at {} before the first answered at {answered_at}",
        children[1].time_created
    );
}

/// `explore` runs on `small_model` when one is configured; `general` (which
/// does not prefer it) on the parent's model.
#[tokio::test]
async fn explore_runs_on_the_small_model() {
    let scenario = Scenario::with_config(vec![], |config| {
        config.small_model = Some(cairn::message::ModelRef::parse("scripted/small-model").unwrap());
        let provider = config.provider.get_mut("scripted").unwrap();
        provider.models.insert(
            "small-model".into(),
            cairn::config::ModelConfig {
                context: Some(100_000),
                output: Some(8_000),
                ..Default::default()
            },
        );
    })
    .await;
    scenario.server.push(two_task_calls());
    scenario.server.push(text("one child answer", 300));
    scenario.server.push(text("another child answer", 300));
    scenario.server.push(text("both done", 1_500));
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "two at once").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let system = message_text(&messages_of(request)[0]);
        let expected = if system.contains("You are explore") {
            "small-model"
        } else {
            "test-model"
        };
        assert_eq!(request["model"], expected, "{system:.80}");
    }
    let explore_requests = requests
        .iter()
        .filter(|r| r["model"] == "small-model")
        .count();
    assert_eq!(explore_requests, 1);
}

const TASK_HINT: &str = "Use the Task tool to have explore agent process this file";
const PLAIN_HINT: &str = "Use Grep to search the full content or Read with offset/limit";

/// A truncated output tells an agent that has the `task` tool to delegate
/// the full text to explore (seed 001), and one without it (the explore
/// child, the plan agent) to page through it with Grep and Read.
#[tokio::test]
async fn the_truncation_hint_points_to_the_task_tool_only_for_agents_that_have_it() {
    let scenario = Scenario::with_config(vec![], |config| config.tool_output.max_lines = 5).await;
    for i in 0..12 {
        std::fs::write(scenario.path(&format!("file{i:02}.txt")), "x\n").expect("write");
    }
    let glob = |id: &str| tool_call(id, "glob", json!({ "pattern": "*.txt" }), 800);
    for response in [
        glob("call_glob"),
        tool_call(
            "call_task",
            "task",
            json!({ "description": "list", "prompt": "list the txt files", "subagent_type": "explore" }),
            900,
        ),
        glob("call_child_glob"),
        text("twelve files", 600),
        text("done", 1_000),
    ] {
        scenario.server.push(response);
    }
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "count the files").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 5);
    let build_sees = all_text(&requests[1]);
    assert!(build_sees.contains("output was truncated"), "{build_sees}");
    assert!(build_sees.contains(TASK_HINT), "{build_sees}");
    assert!(!build_sees.contains(PLAIN_HINT), "{build_sees}");
    let explore_sees = all_text(&requests[3]);
    assert!(explore_sees.contains(PLAIN_HINT), "{explore_sees}");
    assert!(!explore_sees.contains(TASK_HINT), "{explore_sees}");

    // plan (read-only, no task tool) gets the plain hint too.
    let plan = Scenario::with_config(vec![glob("call_glob"), text("ok", 900)], |config| {
        config.tool_output.max_lines = 5;
        config.default_agent = cairn::config::NonEmpty::new("plan").unwrap();
    })
    .await;
    for i in 0..12 {
        std::fs::write(plan.path(&format!("file{i:02}.txt")), "x\n").expect("write");
    }
    let (_session, handle) = plan.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = plan.run(&handle, "count the files").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = plan.requests();
    assert!(!tool_names(&requests[0]).contains(&"task".to_string()));
    let plan_sees = all_text(&requests[1]);
    assert!(plan_sees.contains(PLAIN_HINT), "{plan_sees}");
    assert!(!plan_sees.contains(TASK_HINT), "{plan_sees}");
}

/// Runs `message` headless with `--format json`; returns its `result` line.
async fn run_json(
    scenario: &Scenario,
    handle: &cairn::session::runtime::SessionHandle,
    message: &str,
) -> Value {
    let mut out = Vec::new();
    let mut err = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(30),
        cairn::headless::run(
            handle,
            &scenario.app.bus,
            &scenario.app.store,
            message.to_string(),
            cairn::headless::Format::Json,
            &mut out,
            &mut err,
        ),
    )
    .await
    .expect("the run finishes within 30 s")
    .expect("writes to memory");
    let out = String::from_utf8_lossy(&out).to_string();
    let last = out.lines().last().expect("a result line");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A child's tokens and cost count in its parent's totals: the stored
/// session row (and the status line's live `session.updated` events) and
/// the `cairn run --format json` result, priced at the configured rates.
#[tokio::test]
async fn a_childs_tokens_and_cost_roll_up_into_the_parents_totals() {
    let scenario = Scenario::with_config(vec![], |config| {
        let model = config
            .provider
            .get_mut("scripted")
            .and_then(|p| p.models.get_mut("test-model"))
            .unwrap();
        model.price_input = Some(3.0);
        model.price_output = Some(15.0);
    })
    .await;
    std::fs::write(scenario.path("notes.txt"), "hello\n").expect("write");
    let path = scenario.path("notes.txt").display().to_string();
    for response in [
        tool_call(
            "call_task",
            "task",
            json!({ "description": "read", "prompt": "read notes.txt", "subagent_type": "explore" }),
            1_000,
        ),
        tool_call("call_read", "read", json!({ "file_path": path }), 500),
        text("it says hello", 800),
        text("the file says hello", 1_200),
    ] {
        scenario.server.push(response);
    }
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let recorder = scenario.record();
    let result = run_json(&scenario, &handle, "what does notes.txt say?").await;
    // Input 1,000 + 500 + 800 + 1,200; output 30 + 30 + 20 + 20 (tool calls
    // report 30, texts 20); $3 / $15 per million.
    let all_cost = 3_500.0 * 3e-6 + 100.0 * 15e-6;
    let own_cost = 2_200.0 * 3e-6 + 50.0 * 15e-6;
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(result["tokens"]["input"], 3_500, "{result}");
    assert_eq!(result["tokens"]["output"], 100, "{result}");
    let cost = result["cost"].as_f64().unwrap();
    assert!(close(cost, all_cost), "{cost} != {all_cost}");

    let parent = scenario
        .app
        .store
        .get_session(&session.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(parent.tokens.input, 3_500);
    assert_eq!(parent.tokens.output, 100);
    assert!(
        close(parent.cost, all_cost),
        "{} != {all_cost}",
        parent.cost
    );
    let children = scenario.app.store.list_sessions(10).await.unwrap();
    let child = children
        .iter()
        .find(|s| s.parent_id.as_deref() == Some(session.id.as_str()))
        .expect("child session");
    assert!(close(child.cost, all_cost - own_cost), "{}", child.cost);
    assert_eq!(child.tokens.input, 1_300);

    // Live: the parent's total moved when the child's first step finished
    // (parent's task step + child's read step), before the parent answered.
    let parent_costs: Vec<f64> = recorder
        .events()
        .iter()
        .filter_map(|event| match event {
            cairn::bus::Event::SessionUpdated { session: s } if s.id == session.id => Some(s.cost),
            _ => None,
        })
        .collect();
    let after_child_step = (1_500.0 * 3e-6) + (60.0 * 15e-6);
    assert!(
        parent_costs.iter().any(|c| close(*c, after_child_step)),
        "{parent_costs:?}"
    );

    // Deleting the child alone takes its spending out of the parent's totals.
    assert!(scenario.app.store.delete_session(&child.id).await.unwrap());
    let parent = scenario
        .app
        .store
        .get_session(&session.id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        close(parent.cost, own_cost),
        "{} != {own_cost}",
        parent.cost
    );
    assert_eq!(parent.tokens.input, 2_200);
}

/// `@explore ...` in a `cairn run` message: the loop runs the subagent
/// first (the parent's model is not asked until the child answered), the
/// child's prompt is the message without the mention, and the parent's model
/// then sees the child's answer as a `task` call's result.
#[tokio::test]
async fn an_agent_mention_runs_that_subagent_first() {
    let scenario = Scenario::start(vec![]).await;
    let marker = "the-mention-body-marker-7";
    std::fs::write(scenario.path("notes.txt"), format!("{marker}\n")).expect("write");
    let path = scenario.path("notes.txt").display().to_string();
    for response in [
        tool_call("call_read", "read", json!({ "file_path": path }), 500),
        text("notes.txt:1 holds the marker.", 700),
        text("The explorer found the marker in notes.txt.", 1_200),
    ] {
        scenario.server.push(response);
    }
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, out, err) = scenario
        .run(&handle, "@explore what does notes.txt say?")
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("found the marker"), "{out}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    // The first request is the child's: explore's prompt, the message
    // without the mention.
    let child = messages_of(&requests[0]);
    assert!(message_text(&child[0]).contains("You are explore"));
    assert_eq!(message_text(&child[1]), "what does notes.txt say?");
    assert!(all_text(&requests[1]).contains(marker));
    // The parent's only request: the answer as the task result, none of
    // the child's read output.
    let parent = all_text(&requests[2]);
    assert!(parent.contains("notes.txt:1 holds the marker."), "{parent}");
    assert!(!parent.contains(marker), "{parent}");
    let parent_messages = messages_of(&requests[2]);
    let calls: Vec<&Value> = parent_messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1, "{parent}");
    assert_eq!(calls[0]["function"]["name"], "task");

    let history = scenario.history(&session.id).await;
    let subtask = history[0]
        .parts
        .iter()
        .find_map(|p| match &p.kind {
            cairn::message::PartKind::Subtask(s) => Some(s.clone()),
            _ => None,
        })
        .expect("the message holds a subtask part");
    assert_eq!(subtask.agent, "explore");
    let task = scenario::tool_parts(&history);
    assert_eq!(task.len(), 1);
    assert!(matches!(
        task[0].state,
        cairn::message::ToolState::Completed { .. }
    ));
    let answer = history[1].message.as_assistant().unwrap();
    assert_eq!(answer.parent_id, history[0].message.id);
    assert_eq!(answer.finish, Some(cairn::message::FinishReason::ToolCalls));
}

/// A message that mentions no subagent (`@build` is primary, `@notes.txt` a
/// file) makes no subtask: the parent's model answers it directly.
#[tokio::test]
async fn a_mention_of_a_primary_agent_or_a_file_makes_no_subtask() {
    let scenario = Scenario::start(vec![text("plain answer", 900)]).await;
    std::fs::write(scenario.path("notes.txt"), "hello\n").expect("write");
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "@build read @notes.txt").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("plain answer"), "{out}");
    assert_eq!(scenario.requests().len(), 1);
    let history = scenario.history(&session.id).await;
    assert!(
        history
            .iter()
            .flat_map(|m| m.parts.iter())
            .all(|p| !matches!(p.kind, cairn::message::PartKind::Subtask(_)))
    );
}

/// The small model's window in the overflow scenario.
const CHILD_WINDOW: u64 = 12_000;

/// The summary marker the scripted small model writes when asked to compact.
const CHILD_SUMMARY: &str = "## Goal\n- child-summary-marker: read the big files";

/// The scripted models of the overflow scenario: the parent (test-model)
/// delegates once then answers; the child (small-model, `CHILD_WINDOW`)
/// reads big files until it has a summary, then answers. Usage is honest
/// (the gauge learns from it) and an over-window prompt is rejected like
/// llama-server does. Every chat request is kept in `seen`.
fn overflow_models(
    seen: Arc<Mutex<Vec<Value>>>,
) -> impl Fn(&support::RecordedRequest) -> support::ScriptedResponse {
    move |request: &support::RecordedRequest| {
        if !request.path.ends_with("/chat/completions") {
            // Not llama-server: cairn counts the prompt itself.
            return support::ScriptedResponse::json(404, "{}");
        }
        let body = request.json();
        seen.lock().unwrap().push(body.clone());
        // Honest usage: the gauge learns its calibration from it.
        let prompt = cairn::token::count(&body.to_string()) as u64;
        let messages = messages_of(&body);
        let everything: String = messages.iter().map(message_text).collect();
        let tool_results = messages.iter().filter(|m| m["role"] == "tool").count();
        if body["model"] == "test-model" {
            return if tool_results == 0 {
                tool_call(
                    "call_task",
                    "task",
                    json!({ "description": "read big files", "prompt": "read big0.txt to big2.txt and report", "subagent_type": "explore" }),
                    prompt,
                )
            } else {
                text("parent done", prompt)
            };
        }
        if prompt > CHILD_WINDOW {
            // llama-server's answer to a prompt longer than its window.
            let error = json!({"error": {"code": 400, "message": format!("request ({prompt} tokens) exceeds the available context size ({CHILD_WINDOW} tokens), try increasing it"), "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": CHILD_WINDOW}});
            return support::ScriptedResponse::json(400, &error.to_string());
        }
        if body.get("tools").is_none() {
            return text(CHILD_SUMMARY, prompt);
        }
        if everything.contains("child-summary-marker") || tool_results >= 12 {
            return text("child answer: the big files hold hex", prompt);
        }
        let file = format!("big{}.txt", tool_results % 3);
        tool_call(
            &format!("r{tool_results}"),
            "read",
            json!({ "file_path": file }),
            prompt,
        )
    }
}

/// A child whose window fills compacts on its own: explore runs on a small
/// model (12k window) and keeps reading ~4k-token files; its loop sends its
/// own compaction request to that model, answers after the summary, and the
/// parent (on a 200k model, never compacted) gets that answer.
#[tokio::test]
async fn a_child_that_overflows_compacts_on_its_own() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let responder = overflow_models(seen.clone());
    let scenario = Scenario::answering(responder, |config| {
        config.small_model = Some(cairn::message::ModelRef::parse("scripted/small-model").unwrap());
        config.provider.get_mut("scripted").unwrap().models.insert(
            "small-model".into(),
            cairn::config::ModelConfig {
                context: Some(CHILD_WINDOW),
                output: Some(2_000),
                ..Default::default()
            },
        );
    })
    .await;
    for i in 0..3 {
        std::fs::write(
            scenario.path(&format!("big{i}.txt")),
            scenario::dense_text(i, 6_000),
        )
        .expect("write");
    }
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "delegate the reading").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("parent done"), "{out}");
    let requests = seen.lock().unwrap().clone();
    let summaries: Vec<&Value> = requests
        .iter()
        .filter(|r| r.get("tools").is_none())
        .collect();
    assert!(!summaries.is_empty(), "the child never compacted");
    assert!(summaries.iter().all(|r| r["model"] == "small-model"));
    // The parent never compacted, and its last request holds the answer.
    let parent: Vec<&Value> = requests
        .iter()
        .filter(|r| r["model"] == "test-model")
        .collect();
    assert_eq!(parent.len(), 2);
    assert!(all_text(parent[1]).contains("child answer: the big files hold hex"));
    let history = scenario.history(&session.id).await;
    assert!(
        history
            .iter()
            .all(|m| m.message.as_assistant().is_none_or(|a| !a.summary))
    );
    // The summary is the child's: a summary message in the child session.
    let child = scenario
        .app
        .store
        .list_sessions(10)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.parent_id.as_deref() == Some(session.id.as_str()))
        .expect("child");
    let child_history = scenario.app.store.read_all(&child.id).await.unwrap();
    assert!(
        child_history
            .iter()
            .any(|m| m.message.as_assistant().is_some_and(|a| a.summary))
    );
}

/// An agent file's `permission:` rules hold for that subagent's calls (here:
/// no reading `*secret*`), on top of the session's, and only for it: the
/// parent reads the same file.
#[tokio::test]
async fn an_agent_files_permission_rules_hold_for_its_calls_only() {
    let scenario = Scenario::start(vec![]).await;
    let agents = scenario.project.path().join(".cairn/agents");
    std::fs::create_dir_all(&agents).expect("mkdir");
    std::fs::write(
        agents.join("auditor.md"),
        "---\ndescription: Audits the project without reading secrets.\nmode: subagent\ntools:\n  bash: false\npermission:\n  read:\n    \"*secret*\": deny\n---\nYou are auditor.\n",
    )
    .expect("write");
    let secret = "the-secret-body-marker-3";
    std::fs::write(scenario.path("secret.txt"), format!("{secret}\n")).expect("write");
    let path = scenario.path("secret.txt").display().to_string();
    for response in [
        tool_call(
            "call_task",
            "task",
            json!({ "description": "audit", "prompt": "read secret.txt", "subagent_type": "auditor" }),
            1_000,
        ),
        tool_call("call_child_read", "read", json!({ "file_path": path }), 500),
        text("I may not read it.", 700),
        tool_call("call_read", "read", json!({ "file_path": path }), 1_200),
        text("done", 1_400),
    ] {
        scenario.server.push(response);
    }
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let (code, _out, err) = scenario.run(&handle, "audit").await;
    assert_eq!(code, 0, "stderr: {err}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 5);
    assert!(message_text(&messages_of(&requests[1])[0]).contains("You are auditor"));
    let child_after = all_text(&requests[2]);
    assert!(!child_after.contains(secret), "{child_after}");
    assert!(
        child_after.to_lowercase().contains("denied"),
        "{child_after}"
    );
    assert!(
        all_text(&requests[4]).contains(secret),
        "the parent may read it"
    );
}

/// Esc while an `@explore` subtask runs: the child stops, the `task` call
/// ends paired (an error result), the answer is marked aborted, and the
/// session goes idle without asking the parent's model anything.
#[tokio::test]
async fn interrupting_an_agent_mention_stops_the_child_and_pairs_the_call() {
    let scenario = Scenario::start(vec![scenario::text_then_stall("looking")]).await;
    let (session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let recorder = scenario.record();
    scenario::prompt(&handle, "@explore look around");
    let deadline = Instant::now() + Duration::from_secs(20);
    while scenario.requests().is_empty() {
        assert!(Instant::now() < deadline, "the child never asked the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(handle.send(Command::Interrupt));
    recorder
        .wait_idle(&session.id, 1, Duration::from_secs(20))
        .await;
    assert_eq!(scenario.requests().len(), 1, "only the child's request");
    let history = scenario.history(&session.id).await;
    let tasks = scenario::tool_parts(&history);
    assert_eq!(tasks.len(), 1);
    assert!(
        matches!(tasks[0].state, cairn::message::ToolState::Error { .. }),
        "{:?}",
        tasks[0].state
    );
    let answer = history[1].message.as_assistant().unwrap();
    assert!(answer.error.is_some(), "{answer:?}");
    // The interrupted subtask is not run again by the next turn.
    scenario.server.push(text("fine, by myself", 900));
    let (code, out, err) = scenario.run(&handle, "never mind").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("by myself"), "{out}");
    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    assert!(!message_text(&messages_of(&requests[1])[0]).contains("You are explore"));
}
