//! Test builders: sessions, messages and parts with fixed ids and times, so
//! rendered frames are stable without filters. Test-only.

use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use crate::bus::Event;
use crate::clock::Millis;
use crate::context::ContextGauge;
use crate::message::*;

use super::app::{App, AppInit};
use super::view;

/// The fixed "now" of every test, in milliseconds.
pub const NOW: Millis = 1_763_780_000_000;
pub const SESSION: &str = "ses_test";

pub fn session() -> Session {
    Session {
        id: SESSION.into(),
        title: "fix the failing test".into(),
        directory: "/work/demo".into(),
        parent_id: None,
        time_created: NOW - 60_000,
        time_updated: NOW,
        cost: 0.42,
        tokens: Tokens::default(),
    }
}

pub fn model() -> ModelRef {
    ModelRef::new("anthropic", "claude-sonnet-4-5")
}

pub fn user(id: &str) -> Message {
    Message {
        id: id.into(),
        session_id: SESSION.into(),
        time_created: NOW - 30_000,
        role: Role::User(UserMessage {
            agent: "build".into(),
            model: model(),
            system: None,
        }),
    }
}

pub fn assistant(id: &str, parent: &str) -> Message {
    Message {
        id: id.into(),
        session_id: SESSION.into(),
        time_created: NOW - 29_000,
        role: Role::Assistant(AssistantMessage {
            parent_id: parent.into(),
            agent: "build".into(),
            model: model(),
            path: MessagePath::default(),
            summary: false,
            finish: Some(FinishReason::Stop),
            error: None,
            tokens: Tokens::default(),
            cost: 0.0,
            time_completed: Some(NOW - 1_000),
        }),
    }
}

pub fn part(id: &str, message: &Message, kind: PartKind) -> Part {
    Part {
        id: id.into(),
        message_id: message.id.clone(),
        session_id: SESSION.into(),
        kind,
        tokens: None,
    }
}

pub fn text(text: &str) -> PartKind {
    PartKind::Text(TextPart {
        text: text.into(),
        ..Default::default()
    })
}

pub fn tool(name: &str, state: ToolState) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: format!("call_{name}"),
        tool: name.into(),
        state,
    })
}

pub fn span(start_ago: Millis, took: Option<Millis>) -> ToolTime {
    ToolTime {
        start: NOW - start_ago,
        end: took.map(|t| NOW - start_ago + t),
        compacted: None,
    }
}

pub fn bash_input(command: &str) -> serde_json::Value {
    json!({ "command": command })
}

pub fn with_parts(message: Message, parts: Vec<Part>) -> MessageWithParts {
    MessageWithParts { message, parts }
}

/// A question and a short answer.
pub fn exchange(n: usize) -> Vec<MessageWithParts> {
    let u = user(&format!("msg_{n:05}a"));
    let a = assistant(&format!("msg_{n:05}b"), &u.id);
    vec![
        with_parts(
            u.clone(),
            vec![part(
                &format!("prt_{n:05}a"),
                &u,
                text(&format!("question number {n}: what does `main` do?")),
            )],
        ),
        with_parts(
            a.clone(),
            vec![part(
                &format!("prt_{n:05}b"),
                &a,
                text(&format!(
                    "Answer {n}: it **parses** the arguments and starts the loop.\n\n- one\n- two"
                )),
            )],
        ),
    ]
}

pub fn app(history: Vec<MessageWithParts>) -> App {
    App::new(AppInit {
        session: session(),
        history,
        has_older: false,
        model_label: "anthropic/claude-sonnet-4-5".into(),
        agent: "build".into(),
        gauge: Some(gauge(62_000)),
        first_run: None,
        models: choices(&["anthropic/claude-sonnet-4-5", "llamacpp/local"]),
        sessions: vec![session()],
        now: NOW,
    })
}

pub fn gauge(used: u64) -> ContextGauge {
    ContextGauge {
        used,
        usable: 180_000,
        compact_at: Some(160_000),
        reserved: 20_000,
        context: 200_000,
        estimated: false,
    }
}

pub fn apply(app: &mut App, event: Event) {
    app.apply_event(&event);
}

pub fn part_event(part: Part) -> Event {
    Event::PartUpdated {
        part: Arc::new(part),
    }
}

/// Prepares and draws one frame; returns the screen as text.
pub fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal
        .draw(|frame| {
            view::prepare(app, frame.area());
            view::draw(app, frame);
        })
        .expect("drawing to a test backend");
    terminal.backend().to_string()
}

/// `/model` choices from `provider/model` names; local presets marked local.
pub fn choices(names: &[&str]) -> Vec<crate::session::model_choices::ModelChoice> {
    names
        .iter()
        .map(|name| {
            let model = crate::message::ModelRef::parse(name).expect("provider/model");
            crate::session::model_choices::ModelChoice {
                local: crate::provider::presets::preset(&model.provider)
                    .is_some_and(|preset| preset.is_local),
                model,
            }
        })
        .collect()
}
