//! The TUI loop: waits on terminal input, bus events, background results, the
//! frame deadline and (only while something counts seconds) a 1 s tick; turns
//! each into `update`/`apply_event` calls; performs the resulting effects;
//! draws at most once per frame interval and only when something changed.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior};

use crate::bus::Event;
use crate::clock::now_millis;
use crate::session::command::Command;

use super::app::{App, Effect};
use super::event::Internal;
use super::export::osc52;
use super::keymap::KeyMap;
use super::terminal::Backend;
use super::update::update;
use super::{HISTORY_PAGE, History, HistoryRead, TuiExit, burst, view};

/// Redraws after a key are coalesced to at most 60 per second.
const FRAME_INTERVAL: Duration = Duration::from_millis(16);
/// While only bus events (a streaming answer) changed the screen, to at most
/// 30 per second: smooth for text, and half the drawing cost of a stream.
const STREAM_FRAME_INTERVAL: Duration = Duration::from_millis(33);
/// Clock resolution of elapsed times and countdowns.
const TICK_INTERVAL: Duration = Duration::from_secs(1);

pub struct Channels {
    pub events: broadcast::Receiver<Event>,
    pub commands: mpsc::UnboundedSender<Command>,
    pub read_history: Option<Arc<History>>,
    pub keymap: KeyMap,
    pub discovery: Option<oneshot::Receiver<super::Discovered>>,
    /// The MCP servers, for `/mcp`, the status line and prompt commands.
    pub mcp: Option<Arc<crate::mcp::Hub>>,
    /// See `tui::ReadSessions`.
    pub read_sessions: Option<Arc<super::ReadSessions>>,
    /// Performed once the loop runs: the prompt of `cairn "PROMPT"`.
    pub start: Vec<Effect>,
}

pub async fn run_loop(
    terminal: &mut ratatui::Terminal<Backend>,
    app: &mut App,
    mut channels: Channels,
) -> anyhow::Result<TuiExit> {
    app.open_key = channels.keymap.open_subtask.label();
    let (internal_tx, mut internal_rx) = mpsc::unbounded_channel::<Internal>();
    spawn_background(app, &mut channels, &internal_tx);
    for effect in std::mem::take(&mut channels.start) {
        perform(effect, app, &channels, &internal_tx);
    }
    let mut input = crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(TICK_INTERVAL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut last_frame = Instant::now()
        .checked_sub(STREAM_FRAME_INTERVAL)
        .unwrap_or_else(Instant::now);
    // Set by the user's keys and by answers to them; cleared by a frame.
    let mut user_waiting = true;
    let mut bus_open = true;
    let mut signals = Hangups::listen().context("listening for SIGTERM and SIGHUP")?;
    let mut input_end = super::input_end::watch();
    loop {
        let next_frame = last_frame
            + if user_waiting {
                FRAME_INTERVAL
            } else {
                STREAM_FRAME_INTERVAL
            };
        if app.dirty && Instant::now() >= next_frame {
            if !draw_frame(terminal, app)? {
                return Ok(leave(app, &channels));
            }
            app.dirty = false;
            user_waiting = false;
            last_frame = Instant::now();
            if let Some(load) = app.older_wanted() {
                perform(load, app, &channels, &internal_tx);
            }
            continue;
        }
        if let Some(exit) = app.exit.take() {
            return Ok(exit);
        }
        let effects = tokio::select! {
            biased;
            term = input.next() => match term {
                Some(Ok(event)) => {
                    user_waiting = true;
                    app.now = now_millis();
                    let events = read_burst(event);
                    burst::actions(&events, &channels.keymap)
                        .into_iter()
                        .flat_map(|action| update(app, action))
                        .collect()
                }
                Some(Err(error)) => return Err(error).context("reading terminal input"),
                None => return Ok(TuiExit::Quit),
            },
            bus = channels.events.recv(), if bus_open => match bus {
                Ok(event) => {
                    app.now = now_millis();
                    if matches!(event, Event::Gauge { .. }) {
                        // A gauge follows every measure of the whole session
                        // (opening it, each step, prune, compaction): the
                        // decoded copies that measure made are free now.
                        tokio::task::spawn_blocking(super::memory::release_freed_memory);
                    }
                    app.apply_event(&event)
                }
                Err(broadcast::error::RecvError::Lagged(_)) => app.lagged(),
                Err(broadcast::error::RecvError::Closed) => {
                    bus_open = false;
                    app.flash = Some("the session has stopped; restart cairn".into());
                    app.dirty = true;
                    Vec::new()
                }
            },
            Some(message) = internal_rx.recv() => {
                user_waiting = true;
                apply_internal(app, message)
            }
            // SIGTERM / SIGHUP: stop the turn and leave; the guard restores
            // the terminal on the way out, as for /quit.
            () = signals.next() => return Ok(leave(app, &channels)),
            // The terminal closed without a SIGHUP: the same way out.
            Ok(_) = input_end.wait_for(|ended| *ended) => return Ok(leave(app, &channels)),
            _ = tokio::time::sleep_until(next_frame), if app.dirty => Vec::new(),
            _ = tick.tick(), if app.needs_tick() => app.tick(now_millis()),
        };
        for effect in effects {
            if matches!(effect, Effect::Suspend) {
                suspend(terminal, app)?;
                continue;
            }
            if let Effect::EditDraft(draft) = effect {
                // A new stream: the old one's reader thread stops, so no
                // key meant for the editor is read here meanwhile.
                input = crossterm::event::EventStream::new();
                edit_draft(terminal, app, &draft)?;
                continue;
            }
            perform(effect, app, &channels, &internal_tx);
        }
    }
}

/// The work whose results come back as [`Internal`] messages: the file
/// index, the local-server search, the MCP servers' reports.
fn spawn_background(
    app: &App,
    channels: &mut Channels,
    internal_tx: &mpsc::UnboundedSender<Internal>,
) {
    spawn_file_index(app.session.directory.clone(), internal_tx.clone());
    if let Some(discovery) = channels.discovery.take() {
        let internal_tx = internal_tx.clone();
        tokio::spawn(async move {
            if let Ok(found) = discovery.await {
                let _ = internal_tx.send(Internal::Discovered(found));
            }
        });
    }
    if let Some(hub) = &channels.mcp {
        spawn_mcp_watch(hub.clone(), internal_tx.clone());
    }
}

/// Draws one frame; false when the terminal has closed under it (leave as
/// on SIGHUP: there is nowhere left to report an error).
fn draw_frame(terminal: &mut ratatui::Terminal<Backend>, app: &mut App) -> anyhow::Result<bool> {
    app.now = now_millis();
    let drawn = terminal.draw(|frame| {
        view::prepare(app, frame.area());
        view::draw(app, frame);
    });
    match drawn {
        Ok(_) => Ok(true),
        Err(error) if super::input_end::is_terminal_gone(&error) => Ok(false),
        Err(error) => Err(error).context("drawing the screen"),
    }
}

/// Events read together are one burst (see `burst`); at most this many.
const MAX_BURST: usize = 65_536;
/// Once a second event is waiting, a pause this short between the next ones
/// still belongs to the same paste (a terminal writes a long one in chunks).
const BURST_GAP: Duration = Duration::from_millis(5);

/// `first` and the terminal events already waiting behind it. A single key
/// costs one zero-timeout poll; a paste is read to its end. The stream's
/// waker thread is idle here (it has just delivered `first`), so these
/// reads do not wait on it.
fn read_burst(first: crossterm::event::Event) -> Vec<crossterm::event::Event> {
    let mut events = vec![first];
    while events.len() < MAX_BURST {
        let wait = if events.len() > 1 {
            BURST_GAP
        } else {
            Duration::ZERO
        };
        match crossterm::event::poll(wait) {
            Ok(true) => match crossterm::event::read() {
                Ok(event) => events.push(event),
                Err(_) => break,
            },
            _ => break,
        }
    }
    events
}

/// SIGTERM, SIGHUP or a closed terminal: stop the turn and quit. Every part
/// is already in the store, so `--continue` reopens the session as it was.
fn leave(app: &mut App, channels: &Channels) -> TuiExit {
    if app.is_busy() {
        send(app, channels, Command::Interrupt);
    }
    TuiExit::Quit
}

/// SIGTERM and SIGHUP (a supervisor, a closed terminal window): reasons to
/// leave cleanly instead of dying with the terminal in raw mode.
#[cfg(unix)]
struct Hangups {
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Hangups {
    fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }
}

#[cfg(not(unix))]
struct Hangups;

#[cfg(not(unix))]
impl Hangups {
    fn listen() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn next(&mut self) {
        std::future::pending::<()>().await
    }
}

#[cfg(unix)]
fn suspend(terminal: &mut ratatui::Terminal<Backend>, app: &mut App) -> anyhow::Result<()> {
    super::terminal::suspend(terminal)?;
    app.dirty = true;
    Ok(())
}

#[cfg(not(unix))]
fn suspend(_terminal: &mut ratatui::Terminal<Backend>, app: &mut App) -> anyhow::Result<()> {
    app.flash = Some("suspending is not supported on this platform".into());
    app.dirty = true;
    Ok(())
}

/// Runs the user's editor on `draft` with the terminal handed over, then
/// puts what was saved into the composer; a failure is said on the status
/// line and the draft stays.
fn edit_draft(
    terminal: &mut ratatui::Terminal<Backend>,
    app: &mut App,
    draft: &str,
) -> anyhow::Result<()> {
    super::terminal::restore();
    let edited = super::editor::edit(draft);
    super::terminal::resume(terminal)?;
    match edited {
        Ok(text) => app.composer.set_text(text.trim_end_matches('\n')),
        Err(error) => app.flash = Some(error.to_string()),
    }
    app.dirty = true;
    Ok(())
}

/// Applies a background result; an undo's answer asks for a reload.
fn apply_internal(app: &mut App, message: Internal) -> Vec<Effect> {
    app.dirty = true;
    match message {
        Internal::Undone { redo, result } => return super::undo::answered(app, redo, result),
        Internal::Diff(result) => super::undo::diff_answered(app, result),
        Internal::PatchDiff { part_id, result } => {
            super::undo::patch_diff_answered(app, &part_id, result)
        }
        Internal::Files(files) => app.files = Arc::new(files),
        Internal::CustomCommands(commands) => {
            app.custom_commands = commands;
            // A `/fr` typed before the list arrived gets its popup now.
            super::update::refresh_completion(app);
        }
        Internal::Sessions(Ok((sessions, counts))) => {
            super::slash::sessions_read(app, sessions, counts)
        }
        Internal::Sessions(Err(error)) => app.flash = Some(error),
        Internal::Context(Some(breakdown)) => {
            if matches!(app.overlay, Some(super::app::Overlay::Context(None))) {
                app.overlay = Some(super::app::Overlay::Context(Some(breakdown)));
            }
        }
        Internal::Context(None) => {
            app.overlay = None;
            app.flash = Some("the session did not answer /context; is it still running?".into());
        }
        // A page of the view left since it was asked for is not shown.
        Internal::Reloaded(history) if !app.page_is_shown(&history) => {}
        Internal::Older(Ok(page)) if !app.page_is_shown(&page) => {}
        Internal::Reloaded(history) => {
            let has_older = history.len() >= HISTORY_PAGE;
            app.reloaded(history, has_older);
            return super::undo::wanted_patch_diffs(app);
        }
        Internal::Older(Ok(page)) => {
            let has_older = page.len() >= HISTORY_PAGE;
            app.older_loaded(page, has_older);
            return super::undo::wanted_patch_diffs(app);
        }
        // `loading_older` stays set: the store is not asked again each frame.
        Internal::Older(Err(error)) => app.flash = Some(error),
        Internal::Flash(text) => app.flash = Some(text),
        Internal::ChildLoaded {
            session_id,
            history,
        } => match history {
            Ok(history) => app.child_loaded(&session_id, history),
            Err(error) => {
                app.leave_child();
                app.flash = Some(error);
            }
        },
        Internal::Discovered(found) => {
            app.models = found.models;
            match &mut app.overlay {
                Some(super::app::Overlay::FirstRun(_)) => {
                    app.overlay = Some(super::app::Overlay::FirstRun(found.text));
                }
                // An open `/model` picker takes the new list, keeping the filter.
                Some(super::app::Overlay::Picker(picker))
                    if picker.kind == super::app::PickerKind::Model =>
                {
                    picker.entries = super::slash::model_entries(&app.models);
                    picker.selected = picker
                        .selected
                        .min(picker.visible().len().saturating_sub(1));
                }
                _ => {}
            }
        }
        Internal::Mcp(statuses, prompts) => {
            if let Some(super::app::Overlay::Mcp(selected)) = &mut app.overlay {
                *selected = (*selected).min(statuses.len().saturating_sub(1));
            }
            app.mcp = statuses;
            app.mcp_prompts = prompts;
        }
        Internal::Submit(text) if app.is_busy() => app.queued.push_back(text),
        Internal::Submit(text) => return vec![Effect::Send(app.prompt(text))],
    }
    Vec::new()
}

/// Reports the hub's state to the loop at start and on every change.
fn spawn_mcp_watch(hub: Arc<crate::mcp::Hub>, internal: mpsc::UnboundedSender<Internal>) {
    let mut changes = hub.subscribe();
    tokio::spawn(async move {
        loop {
            let report = Internal::Mcp(hub.statuses(), hub.prompt_commands());
            if internal.send(report).is_err() {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    });
}

fn perform(
    effect: Effect,
    app: &mut App,
    channels: &Channels,
    internal: &mpsc::UnboundedSender<Internal>,
) {
    match effect {
        Effect::Send(command) => send(app, channels, command),
        Effect::RequestContext => {
            let (reply, answer) = oneshot::channel();
            send(app, channels, Command::Context { reply });
            let internal = internal.clone();
            tokio::spawn(async move {
                let _ = internal.send(Internal::Context(answer.await.ok()));
            });
        }
        Effect::Export { to } => export(app, channels, internal, to),
        Effect::McpRestart(name) => {
            if let Some(hub) = &channels.mcp {
                hub.restart(&name);
            }
        }
        Effect::McpPrompt(line) => {
            let Some(hub) = channels.mcp.clone() else {
                return;
            };
            let internal = internal.clone();
            tokio::spawn(async move {
                let message = match hub.expand_prompt(&line).await {
                    Some(Ok(text)) => Internal::Submit(text),
                    Some(Err(error)) => Internal::Flash(error),
                    None => Internal::Flash(format!("{line}: the MCP prompt is gone")),
                };
                let _ = internal.send(message);
            });
        }
        Effect::Undo { force } => undo_or_redo(app, channels, internal, false, force),
        Effect::Redo { force } => undo_or_redo(app, channels, internal, true, force),
        Effect::Diff => {
            let (reply, answer) = oneshot::channel();
            send(app, channels, Command::Diff { reply });
            answer_later(internal, answer, Internal::Diff);
        }
        Effect::PatchDiffs(patches) => patch_diffs(channels, internal, patches),
        Effect::ReadSessions => read_sessions(channels, internal),
        Effect::Copy(text) => {
            let mut out = std::io::stdout();
            let written = out
                .write_all(osc52(&text).as_bytes())
                .and_then(|()| out.flush());
            app.flash = Some(match written {
                Ok(()) => format!("copied {} characters (OSC 52)", text.chars().count()),
                Err(error) => format!("cannot copy: {error}"),
            });
        }
        Effect::Suspend | Effect::EditDraft(_) => {}
        Effect::Notify(text) => notify(&text),
        Effect::LoadChild(session_id) => load_child(channels, internal, session_id),
        Effect::Reload => match &channels.read_history {
            Some(read) => {
                let future = read(page_of(app, None));
                let internal = internal.clone();
                tokio::spawn(async move {
                    let message = match future.await {
                        Ok(history) => Internal::Reloaded(history),
                        Err(error) => {
                            Internal::Flash(format!("cannot reload the session: {error:#}"))
                        }
                    };
                    let _ = internal.send(message);
                });
            }
            None => {
                app.flash =
                    Some("some streamed text was skipped; it is complete in the store".into())
            }
        },
        Effect::LoadOlder(before) => {
            let Some(read) = &channels.read_history else {
                return;
            };
            let future = read(page_of(app, Some(before)));
            let internal = internal.clone();
            tokio::spawn(async move {
                let page = future
                    .await
                    .map_err(|error| format!("cannot read older messages: {error:#}"));
                let _ = internal.send(Internal::Older(page));
            });
        }
    }
}

/// `/sessions`: the list read again in the background.
fn read_sessions(channels: &Channels, internal: &mpsc::UnboundedSender<Internal>) {
    let Some(read) = &channels.read_sessions else {
        return;
    };
    let future = read();
    let internal = internal.clone();
    tokio::spawn(async move {
        let read = future
            .await
            .map_err(|error| format!("cannot read the sessions: {error:#}"));
        let _ = internal.send(Internal::Sessions(read));
    });
}

/// Writes the terminal's notification sequence for `text`.
fn notify(text: &str) {
    let sequence = super::notify::sequence(text, &super::notify::Terminal::from_env());
    let mut out = std::io::stdout();
    // Nothing to do when it cannot be written: the screen says it too.
    let _ = out
        .write_all(sequence.as_bytes())
        .and_then(|()| out.flush());
}

/// A page of the transcript shown: the child's while one is open.
fn page_of(app: &App, before: Option<String>) -> HistoryRead {
    match app.shown_child() {
        Some(session_id) => HistoryRead::Child {
            session_id: session_id.to_string(),
            before,
        },
        None => HistoryRead::Page { before },
    }
}

/// Reads the newest page of the child session being opened.
fn load_child(channels: &Channels, internal: &mpsc::UnboundedSender<Internal>, session_id: String) {
    let internal = internal.clone();
    let Some(read) = &channels.read_history else {
        let _ = internal.send(Internal::ChildLoaded {
            session_id,
            history: Err("this session's store cannot be read here".into()),
        });
        return;
    };
    let future = read(HistoryRead::Child {
        session_id: session_id.clone(),
        before: None,
    });
    tokio::spawn(async move {
        let history = future
            .await
            .map_err(|error| format!("cannot read the subtask's session: {error:#}"));
        let _ = internal.send(Internal::ChildLoaded {
            session_id,
            history,
        });
    });
}

/// `/export [path]`: the whole session from the store (the timeline may
/// hold only its newest pages), as Markdown, to the data dir or `to`.
fn export(
    app: &mut App,
    channels: &Channels,
    internal: &mpsc::UnboundedSender<Internal>,
    to: Option<String>,
) {
    let session = app.session.clone();
    let data_dir = match crate::paths::locate_data_dir() {
        Ok(dir) => dir,
        Err(error) => {
            app.flash = Some(format!("cannot export: {error}"));
            return;
        }
    };
    let path = crate::session::export::export_path(&session, &data_dir, to.as_deref());
    let loaded = app.timeline.messages().to_vec();
    let read = channels
        .read_history
        .as_ref()
        .map(|read| read(HistoryRead::All));
    let internal = internal.clone();
    tokio::spawn(async move {
        let messages = match read {
            Some(read) => match read.await {
                Ok(messages) => messages,
                Err(error) => {
                    let flash = format!("cannot read the session to export: {error:#}");
                    let _ = internal.send(Internal::Flash(flash));
                    return;
                }
            },
            None => loaded,
        };
        let contents = crate::session::export::session_markdown(&session, &messages);
        let shown = crate::session::export::display_path(&path);
        let flash = match crate::session::export::write_export(&path, contents).await {
            Ok(()) => format!("exported to {shown}"),
            Err(error) => format!("cannot write {shown}: {error}"),
        };
        let _ = internal.send(Internal::Flash(flash));
    });
}

/// `/undo` or `/redo` (`redo`), each `--force`able: the session does the
/// work (files and store, off this thread); its answer comes back as an
/// [`Internal::Undone`].
fn undo_or_redo(
    app: &mut App,
    channels: &Channels,
    internal: &mpsc::UnboundedSender<Internal>,
    redo: bool,
    force: bool,
) {
    let (reply, answer) = oneshot::channel();
    let command = if redo {
        Command::Redo { force, reply }
    } else {
        Command::Undo { force, reply }
    };
    send(app, channels, command);
    answer_later(internal, answer, move |result| Internal::Undone {
        redo,
        result,
    });
}

/// The diffs of expanded patch cards, one request at a time: a long
/// session's hundreds of cards never start hundreds of `git diff`s at once.
fn patch_diffs(
    channels: &Channels,
    internal: &mpsc::UnboundedSender<Internal>,
    patches: Vec<(String, crate::message::PatchPart)>,
) {
    let commands = channels.commands.clone();
    let internal = internal.clone();
    tokio::spawn(async move {
        for (part_id, patch) in patches {
            let (reply, answer) = oneshot::channel();
            if commands.send(Command::PatchDiff { patch, reply }).is_err() {
                return;
            }
            let Ok(result) = answer.await else { return };
            if internal
                .send(Internal::PatchDiff { part_id, result })
                .is_err()
            {
                return;
            }
        }
    });
}

/// Waits for the session's reply off the UI loop and hands it back as an
/// [`Internal`]; a dropped reply becomes a notice.
fn answer_later<T: Send + 'static>(
    internal: &mpsc::UnboundedSender<Internal>,
    answer: oneshot::Receiver<T>,
    wrap: impl FnOnce(T) -> Internal + Send + 'static,
) {
    let internal = internal.clone();
    tokio::spawn(async move {
        let message = match answer.await {
            Ok(reply) => wrap(reply),
            Err(_) => Internal::Flash("the session did not answer; is it still running?".into()),
        };
        let _ = internal.send(message);
    });
}

fn send(app: &mut App, channels: &Channels, command: Command) {
    if channels.commands.send(command).is_err() {
        app.flash = Some("the session has stopped; restart cairn".into());
        app.dirty = true;
    }
}

fn spawn_file_index(directory: String, internal: mpsc::UnboundedSender<Internal>) {
    tokio::task::spawn_blocking(move || {
        let directory = std::path::Path::new(&directory);
        let commands = crate::app::custom_commands(directory).commands;
        let _ = internal.send(Internal::CustomCommands(commands));
        let files = super::completion::index_files(directory);
        let _ = internal.send(Internal::Files(files));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ContextBreakdown;
    use crate::tui::app::Overlay;
    use crate::tui::fixtures::{app, gauge};

    fn channels() -> (Channels, mpsc::UnboundedReceiver<Command>) {
        let (_bus, events) = broadcast::channel(8);
        let (commands, received) = mpsc::unbounded_channel();
        (
            Channels {
                events,
                commands,
                read_history: None,
                keymap: KeyMap::default(),
                discovery: None,
                mcp: None,
                read_sessions: None,
                start: Vec::new(),
            },
            received,
        )
    }

    #[tokio::test]
    async fn context_request_round_trips_through_the_session_reply() {
        let mut app = app(Vec::new());
        app.overlay = Some(Overlay::Context(None));
        let (channels, mut received) = channels();
        let (internal_tx, mut internal_rx) = mpsc::unbounded_channel();
        perform(Effect::RequestContext, &mut app, &channels, &internal_tx);
        let Some(Command::Context { reply }) = received.recv().await else {
            panic!("expected a Context command");
        };
        let breakdown = ContextBreakdown {
            categories: vec![("messages".into(), 62_000)],
            difference: 0,
            prunable: 0,
            gauge: gauge(62_000),
            last_compaction: None,
            last_cache: None,
            notes: Vec::new(),
        };
        reply.send(breakdown.clone()).expect("the TUI is waiting");
        let message = internal_rx.recv().await.expect("the reply comes back");
        let _ = apply_internal(&mut app, message);
        assert_eq!(app.overlay, Some(Overlay::Context(Some(breakdown))));
    }

    #[test]
    fn an_open_model_picker_takes_the_models_found_later_and_keeps_its_filter() {
        let mut app = app(Vec::new());
        super::super::slash::run_slash(&mut app, "/model");
        if let Some(Overlay::Picker(picker)) = &mut app.overlay {
            picker.filter = "qwen".into();
        }
        let models = crate::tui::fixtures::choices(&[
            "anthropic/claude-sonnet-4-5",
            "ollama/qwen3:8b",
            "ollama/qwen3-coder:30b",
        ]);
        let found = super::super::Discovered {
            models,
            text: String::new(),
        };
        apply_internal(&mut app, Internal::Discovered(found));
        let Some(Overlay::Picker(picker)) = &app.overlay else {
            panic!("the picker stays open");
        };
        let visible: Vec<&str> = picker.visible().iter().map(|(v, _)| v.as_str()).collect();
        assert_eq!(visible, ["ollama/qwen3:8b", "ollama/qwen3-coder:30b"]);
        assert_eq!(picker.filter, "qwen");
    }

    #[tokio::test]
    async fn export_writes_the_file_and_says_where() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.md").to_string_lossy().into_owned();
        let mut app = app(vec![crate::tui::fixtures::exchange(1).remove(0)]);
        let (channels, _received) = channels();
        let (internal_tx, mut internal_rx) = mpsc::unbounded_channel();
        let export = Effect::Export {
            to: Some(path.clone()),
        };
        perform(export, &mut app, &channels, &internal_tx);
        let _ = apply_internal(&mut app, internal_rx.recv().await.expect("a flash"));
        assert_eq!(app.flash, Some(format!("exported to {path}")));
        let written = std::fs::read_to_string(&path).expect("exported file");
        let expected =
            crate::session::export::session_markdown(&app.session, app.timeline.messages());
        assert_eq!(written, expected);
    }

    #[tokio::test]
    async fn a_stopped_session_is_reported_instead_of_panicking() {
        let mut app = app(Vec::new());
        let (channels, received) = channels();
        drop(received);
        let (internal_tx, _internal_rx) = mpsc::unbounded_channel();
        perform(
            Effect::Send(Command::Prune),
            &mut app,
            &channels,
            &internal_tx,
        );
        assert_eq!(
            app.flash.as_deref(),
            Some("the session has stopped; restart cairn")
        );
    }
}
