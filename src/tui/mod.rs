//! The terminal UI: a ratatui front end that talks to the session only through
//! [`Command`]s and bus [`Event`]s, never by calling into the loop.
//!
//! Shape (STYLE.md "The TUI"): terminal input becomes an [`action::Action`]
//! (`keys`), `update` applies it to the [`app::App`] state and returns effects
//! that `runner` performs; bus events are applied by `App::apply_event`;
//! `view::prepare` measures (wrapping and caching only what is visible) and
//! `view::draw` paints from state alone. Frames are coalesced (at most 60/s,
//! none while idle) and the terminal is restored on exit and on panic.
//!
//! Key files: `terminal` (raw mode, panic hook), `runner` (the loop),
//! `timeline` (messages rebuilt from events), `viewport` (visible rows, cache),
//! `composer` (editing), `markdown` + `highlight`, `view/` (one file per pane).

pub mod action;
pub mod app;
pub mod burst;
pub mod child_view;
pub mod children;
pub mod completion;
pub mod composer;
pub mod editor;
pub mod event;
pub mod export;
pub mod highlight;
pub mod history_search;
pub mod input_end;
pub mod keymap;
pub mod keys;
pub mod markdown;
mod memory;
pub mod notify;
pub mod runner;
pub mod scroll;
pub mod slash;
pub mod terminal;
pub mod timeline;
pub mod undo;
pub mod update;
pub mod view;
pub mod viewport;
pub mod wrap;

use crate::session::model_choices::ModelChoice;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::{broadcast, mpsc};

use crate::bus::Event;
use crate::clock::now_millis;
use crate::context::ContextGauge;
use crate::message::{MessageWithParts, Session};
use crate::session::command::Command;

/// Messages the TUI holds at first and reads per page as the user scrolls
/// back: a long session opens as fast as a short one.
pub const HISTORY_PAGE: usize = 200;

/// What the TUI asks of the session's stored history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryRead {
    /// Up to [`HISTORY_PAGE`] messages older than `before` (the newest when
    /// `None`: opening, and rebuilding after the bus receiver lagged).
    Page { before: Option<String> },
    /// Every message, oldest first (`/export`).
    All,
    /// Up to [`HISTORY_PAGE`] messages of a child session (a subagent's,
    /// opened from its subtask card) older than `before`, newest when `None`.
    Child {
        session_id: String,
        before: Option<String>,
    },
}

/// Reads the session's history from the store; the TUI never opens the
/// store itself.
pub type History =
    dyn Fn(HistoryRead) -> BoxFuture<'static, anyhow::Result<Vec<MessageWithParts>>> + Send + Sync;

/// Reads the sessions `/sessions` offers and their message counts again,
/// each time it opens (a session started elsewhere since shows).
pub type ReadSessions = dyn Fn()
        -> BoxFuture<'static, anyhow::Result<(Vec<Session>, std::collections::HashMap<String, u64>)>>
    + Send
    + Sync;

/// Everything the TUI needs, prepared by `main`.
pub struct TuiInput {
    pub session: Session,
    /// The session's newest [`HISTORY_PAGE`] messages, oldest first.
    pub history: Vec<MessageWithParts>,
    /// A bus subscription taken *before* `history` was read, so nothing is missed.
    pub events: broadcast::Receiver<Event>,
    pub commands: mpsc::UnboundedSender<Command>,
    /// `provider/model` shown in the status line.
    pub model_label: String,
    /// `build` or `plan`; Tab switches.
    pub agent: String,
    pub gauge: Option<ContextGauge>,
    /// Why no provider is usable; shows the first-run screen when `Some`.
    pub first_run: Option<String>,
    /// What `/model` offers, grouped by provider.
    pub models: Vec<ModelChoice>,
    /// Sessions of this directory for `/sessions`, newest first.
    pub sessions: Vec<Session>,
    /// See [`History`]; without it the TUI shows only `history`, and a lag
    /// only shows a notice.
    pub read_history: Option<Arc<History>>,
    /// `KeyMap::default()`, or `KeyMap::with_overrides` from config.
    pub keymap: keymap::KeyMap,
    /// The local-server search still under way on the first-run screen.
    pub discovery: Option<tokio::sync::oneshot::Receiver<Discovered>>,
    /// The MCP servers (already starting in the background), if any.
    pub mcp: Option<Arc<crate::mcp::Hub>>,
    /// Shown on the status line at start: what `/new` or `/sessions` did.
    pub notice: Option<String>,
    /// Stored message count of each session in `sessions`, for `/sessions`.
    pub message_counts: std::collections::HashMap<String, u64>,
    /// The untrusted project's risky settings: the trust dialog opens on them.
    pub untrusted: Vec<String>,
    /// The prompts typed earlier in this project, oldest first: the
    /// composer's Up/Down and Ctrl+R start from them.
    pub prompt_history: Vec<String>,
    /// `cairn "PROMPT"`: sent as if typed once the TUI is up (held on the
    /// first-run screen until a model is picked).
    pub initial_prompt: Option<String>,
    /// See [`ReadSessions`]; without it `/sessions` shows `sessions`.
    pub read_sessions: Option<Arc<ReadSessions>>,
    /// `[tui] notify_after_secs`, `None` when `[tui] notify = false`.
    pub notify_after: Option<std::time::Duration>,
}

/// How the TUI ended, for `main` to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TuiExit {
    Quit,
    /// `/sessions` picked another session: start the TUI again on it.
    SwitchSession(String),
    /// `/new`: start the TUI again on a fresh session.
    NewSession,
    /// `/model provider/model` on the first-run screen: start the TUI again
    /// with that model, and send the message held while there was none.
    UseModel {
        model: String,
        held: Option<String>,
    },
    /// `t` in the trust dialog: store the trust and start again with the
    /// project's settings applied.
    TrustProject,
}

/// What the start-up search for local model servers found, delivered after
/// the first frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// What `/model` offers now, with the local servers' models.
    pub models: Vec<ModelChoice>,
    /// The first-run screen's new text (unused in a session).
    pub text: String,
}

/// Runs the TUI until the user quits, switches or starts a session.
///
/// # Errors
/// When the terminal cannot be set up (stdout is not a terminal) or stops
/// accepting output. The terminal is restored in every case.
pub async fn run(input: TuiInput) -> anyhow::Result<TuiExit> {
    let mut app = app::App::new(app::AppInit {
        session: input.session,
        has_older: input.history.len() >= HISTORY_PAGE,
        history: input.history,
        model_label: input.model_label,
        agent: input.agent,
        gauge: input.gauge,
        first_run: input.first_run,
        models: input.models,
        sessions: input.sessions,
        now: now_millis(),
    });
    app.flash = input.notice;
    if !input.untrusted.is_empty() && app.overlay.is_none() {
        app.overlay = Some(app::Overlay::Trust(input.untrusted));
    }
    app.message_counts = input.message_counts;
    app.notify_after = input
        .notify_after
        .map(|after| i64::try_from(after.as_millis()).unwrap_or(i64::MAX));
    app.composer.set_history(input.prompt_history);
    let start = match input.initial_prompt {
        Some(prompt) => update::send_now(&mut app, &prompt),
        None => Vec::new(),
    };
    let mut guard = terminal::TerminalGuard::enter()?;
    let channels = runner::Channels {
        events: input.events,
        commands: input.commands,
        read_history: input.read_history,
        keymap: input.keymap,
        discovery: input.discovery,
        mcp: input.mcp,
        read_sessions: input.read_sessions,
        start,
    };
    runner::run_loop(guard.terminal(), &mut app, channels).await
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod render_edges_tests;
#[cfg(test)]
mod render_tests;
#[cfg(test)]
mod session_render_tests;
#[cfg(test)]
mod subtask_tests;
#[cfg(test)]
mod update_tests;
