//! A hung model server and a hung tool, end to end through the real App and
//! the headless printer (issue 7): the stall timeout and the bash timeout cut
//! them off, the user is told what happened and what to do, and the session
//! stays consistent and usable. The provider-level stall tests live in
//! tests/provider_*.rs, the tool-level bash timeout in tests/tools_bash.rs.

use crate::scenario;
use crate::support;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use cairn::bus::SessionStatus;
use cairn::message::{ModelRef, PartKind, ToolState};
use cairn::permission::Mode;
use cairn::provider::Provider;
use cairn::session::ctx::{ModelSource, ResolvedModel};
use scenario::{Scenario, text, text_then_stall, tool_call};
use serde_json::json;
use support::ScriptedResponse;

/// The configured models, with the provider's stall timeout shortened so a
/// test does not wait the default two minutes.
struct ShortStall {
    inner: Arc<dyn ModelSource>,
    stall: Duration,
}

#[async_trait::async_trait]
impl ModelSource for ShortStall {
    async fn resolve(&self, model: &ModelRef) -> Result<Arc<ResolvedModel>, String> {
        let found = self.inner.resolve(model).await?;
        let mut config = found.provider.config().clone();
        config.stall_timeout = self.stall;
        let provider = Provider::new(config).map_err(|error| error.to_string())?;
        Ok(Arc::new(ResolvedModel {
            model: found.model.clone(),
            provider: Arc::new(provider),
            limits: found.limits,
            prices: found.prices,
            warning: None,
            warned: AtomicBool::new(false),
        }))
    }
}

async fn with_short_stall(responses: Vec<ScriptedResponse>) -> Scenario {
    let mut scenario = Scenario::start(responses).await;
    scenario.app.models = Arc::new(ShortStall {
        inner: scenario.app.models.clone(),
        stall: Duration::from_millis(300),
    });
    scenario
}

const STALL_ADVICE: &str = "sent no event for 0.3 s, so the request was abandoned; the server may be overloaded, try again";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_mid_answer_is_cut_off_the_partial_text_kept_and_the_step_retried() {
    let scenario = with_short_stall(vec![
        text_then_stall("The first half of"),
        text("The whole answer, second try.", 900),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let recorder = scenario.record();
    let started = Instant::now();
    let (code, out, err) = scenario.run(&handle, "explain everything").await;
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    // 0.3 s of silence, then the first backoff (2 s).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.contains("The whole answer, second try."), "{out}");
    // The cut-off text is kept in the session (below) but not printed: stdout
    // is not a terminal, so a step's text waits for the step, and an
    // abandoned step leaves nothing there (issue #31).
    assert_eq!(out, "The whole answer, second try.\n");
    assert!(err.contains(STALL_ADVICE), "the user is told why: {err}");
    assert_eq!(scenario.requests().len(), 2);
    assert_eq!(stall_notices(&recorder, &session.id), 1);

    // The cut-off step is closed with its text and its error; the retry is a new message.
    let history = scenario.history(&session.id).await;
    let assistants: Vec<_> = history
        .iter()
        .filter_map(|m| m.message.as_assistant().map(|a| (a.clone(), m)))
        .collect();
    assert_eq!(assistants.len(), 2, "{history:#?}");
    let (stalled, stalled_parts) = &assistants[0];
    assert!(stalled.error.is_some(), "{stalled:?}");
    assert!(stalled.time_completed.is_some());
    assert_eq!(
        scenario::assistant_text(std::slice::from_ref(stalled_parts)),
        "The first half of"
    );
    let (retried, _) = &assistants[1];
    assert!(retried.error.is_none(), "{retried:?}");

    // The session goes on normally.
    scenario.server.push(text("Back again.", 1000));
    let (code, out, err) = scenario.run(&handle, "go on").await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("Back again."), "{out}");
}

/// How many times the session said it would retry after a stall.
fn stall_notices(recorder: &scenario::Recorder, session_id: &str) -> usize {
    recorder
        .statuses(session_id)
        .into_iter()
        .filter(|status| matches!(status, SessionStatus::Retrying { message, .. } if message.contains(STALL_ADVICE)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_after_its_headers_is_retried_and_the_user_sees_why() {
    let scenario = with_short_stall(vec![
        ScriptedResponse::sse().then_stall(),
        text("Answered on the second try.", 800),
    ])
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let recorder = scenario.record();
    let started = Instant::now();
    let (code, out, err) = scenario.run(&handle, "hello?").await;
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("Answered on the second try."), "{out}");
    // 0.3 s of silence, then the first backoff (2 s).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(scenario.requests().len(), 2);
    assert_eq!(stall_notices(&recorder, &session.id), 1);
    assert!(
        err.contains(STALL_ADVICE),
        "the printer tells the user too: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_command_is_killed_at_the_bash_timeout_and_the_model_is_told() {
    let scenario = Scenario::with_config(
        vec![
            tool_call(
                "call_1",
                "bash",
                json!({ "command": "echo started; sleep 60" }),
                1000,
            ),
            text("The command hung, I will try something else.", 1500),
        ],
        |config| config.bash.timeout_ms = 500,
    )
    .await;
    let (session, handle) = scenario.session(Mode::Headless).await;
    let started = Instant::now();
    let (code, out, err) = scenario.run(&handle, "run the slow thing").await;
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.contains("I will try something else."), "{out}");

    let requests = scenario.requests();
    assert_eq!(requests.len(), 2);
    let result = scenario::messages_of(&requests[1])
        .into_iter()
        .find(|m| m["role"] == "tool")
        .map(|m| scenario::message_text(&m))
        .expect("the tool result reached the model");
    assert!(result.starts_with("started\n"), "{result}");
    assert!(
        result.contains(
            "shell tool terminated command after exceeding timeout 500 ms. If this command is expected to take longer"
        ),
        "{result}"
    );
    let history = scenario.history(&session.id).await;
    let tools = scenario::tool_parts(&history);
    assert_eq!(tools.len(), 1);
    match &tools[0].state {
        ToolState::Completed { metadata, .. } => {
            assert_eq!(metadata["timed_out"], true, "{metadata}");
        }
        other => panic!("the timed-out call should complete with its output: {other:?}"),
    }
    assert!(
        history
            .iter()
            .flat_map(|m| m.parts.iter())
            .all(|p| !matches!(&p.kind, PartKind::Tool(t) if !t.state.is_finished())),
        "no tool is left running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_remarked_on_before_it_is_given_up() {
    let mut scenario = Scenario::start(vec![
        text_then_stall("Thinking about"),
        text("Done after all.", 900),
    ])
    .await;
    scenario.app.models = Arc::new(ShortStall {
        inner: scenario.app.models.clone(),
        stall: Duration::from_secs(2),
    });
    let (_session, handle) = scenario.session(Mode::Headless).await;
    let (code, out, err) = scenario.run(&handle, "explain").await;
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(
        err.contains("no response from the server for 0.5 s; cairn gives up after 2.0 s of silence (Ctrl+C stops now)"),
        "{err}"
    );
    assert!(
        err.contains("no response from the server for 1.5 s"),
        "{err}"
    );
    assert!(out.contains("Done after all."), "{out}");
}
