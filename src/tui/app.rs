//! The TUI's state and how bus events change it.
//!
//! `App` holds everything the view draws: the timeline, the composer, the
//! status, dialogs and scroll position. Bus events are applied here
//! ([`App::apply_event`]); user actions in `update`. Nothing here does I/O:
//! work for the outside world leaves as [`Effect`]s that the runner performs.

use crate::session::model_choices::ModelChoice;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::bus::{Event, SessionStatus};
use crate::clock::Millis;
use crate::context::{ContextBreakdown, ContextGauge};
use crate::message::{MessageWithParts, ModelRef, PartKind, Session};
use crate::permission::PermissionRequest;
use crate::session::command::Command;

use super::TuiExit;
use super::completion::Candidate;
use super::composer::Composer;
use super::scroll::Scroll;
use super::timeline::Timeline;
use super::viewport::Viewport;

/// How close (in blocks) to the oldest message held the view may scroll
/// before the next older page is read, so it usually arrives before the
/// user gets there.
pub const PREFETCH_BLOCKS: usize = 60;

/// The flash shown while an interrupt is on its way; cleared once idle.
pub const INTERRUPTING: &str = "interrupting…";

/// Said while Esc holds the queue (during the interrupt and after it).
pub const QUEUE_HELD: &str = "queued message waits: Enter sends, Esc Esc edits";

/// Something the runner must do for `update`, which does no I/O itself.
#[derive(Debug)]
pub enum Effect {
    Send(Command),
    /// Send `Command::Context` and show the reply in the /context overlay.
    RequestContext,
    /// Write the session as Markdown (`/export [path]`): to the data dir,
    /// or to `to` when given (see `session::export::export_path`). The
    /// runner reads it whole from the store, as the timeline may hold only
    /// its newest pages.
    Export {
        to: Option<String>,
    },
    /// Put `text` on the clipboard through OSC 52 (`/copy`).
    Copy(String),
    /// Reread the newest page of the history (after a lag).
    Reload,
    /// Read the page of messages older than this id (scrolled near the top).
    LoadOlder(String),
    /// Ctrl+Z: give the terminal back to the shell until resumed.
    Suspend,
    /// Tell the user, away from the terminal, that `0` happened (a long
    /// turn ended, an ask waits): see `tui::notify`.
    Notify(String),
    /// Ctrl+X: the draft, to edit in `$VISUAL`/`$EDITOR`; what is saved
    /// comes back into the composer.
    EditDraft(String),
    /// Read a child session's newest page to show it (its subtask card was opened).
    LoadChild(String),
    /// `/mcp restart NAME`, or `r` in the `/mcp` overlay.
    McpRestart(String),
    /// `/server:prompt args…`: get the prompt, then send its text.
    McpPrompt(String),
    /// `/undo [--force]`: the session takes the last turn back.
    Undo {
        force: bool,
    },
    /// `/redo [--force]`: the session brings the undone turn back.
    Redo {
        force: bool,
    },
    /// `/diff`: the session's changes, shown in the diff overlay.
    Diff,
    /// `/sessions`: read the list again (see `tui::ReadSessions`).
    ReadSessions,
    /// The diffs of these steps (part id, patch), for their patch cards
    /// expanded by Ctrl+O; asked one after the other, never all at once.
    PatchDiffs(Vec<(String, crate::message::PatchPart)>),
}

/// A layer drawn over the transcript that takes the keys while open.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    /// `/context`: `None` while the reply is on its way.
    Context(Option<ContextBreakdown>),
    Help,
    Picker(Picker),
    FirstRun(String),
    /// `/mcp`: the servers (live from [`App::mcp`]); the index is the
    /// selected row, which `r` restarts.
    Mcp(usize),
    /// `/undo` refused: these files were edited since the turn; overwrite?
    UndoConflict(Vec<String>),
    /// `/diff`: the session's changes, scrollable.
    Diff(super::undo::DiffView),
    /// The project's risky settings, not applied until it is trusted.
    Trust(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    Model,
    Session,
    /// `/skills`: a list to read; choosing closes it.
    Skill,
    /// The subtasks (child sessions) to open.
    Subtask,
}

/// A list to choose one entry from (`/model`, `/sessions`).
#[derive(Debug, Clone, PartialEq)]
pub struct Picker {
    pub kind: PickerKind,
    pub title: String,
    /// (value returned, label shown)
    pub entries: Vec<(String, String)>,
    /// Index into `visible()`.
    pub selected: usize,
    /// Typed while the picker is open: only labels containing it are shown.
    pub filter: String,
}

impl Picker {
    /// The entries whose label contains the filter, ignoring case.
    pub fn visible(&self) -> Vec<&(String, String)> {
        let filter = self.filter.to_lowercase();
        self.entries
            .iter()
            .filter(|(_, label)| label.to_lowercase().contains(&filter))
            .collect()
    }
}

/// The permission dialog's state for the request at the front of the queue.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PermissionDialog {
    /// `Some` while the user types a reason for rejecting.
    pub reason: Option<String>,
    /// Index into [`choices`] of the highlighted answer; `None` until the
    /// user moves the selection, so that an Enter pressed by habit (the
    /// one that would have sent a message) never answers: with nothing
    /// chosen, Enter goes to the composer.
    pub selected: Option<usize>,
    /// Text was typed while the dialog was open: keys go to the composer
    /// (Enter sends or queues the message) until ↑/↓ focus the dialog again.
    pub composer_focused: bool,
    /// Lines the preview (diff, content, command) is scrolled down.
    pub preview_scroll: u16,
    /// No key answers before this time: see [`PermissionGuard`].
    pub armed_at: Millis,
}

/// An answer the dialog offers, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    /// The request's `always` patterns (exact command or path).
    Always,
    /// The request's `always_broad` patterns (`git status *`).
    AlwaysBroad,
    /// Opens the reason line; Enter there rejects.
    Reject,
}

/// The answers offered for `request`: "always" only when it has patterns,
/// the broad one only when it differs from the exact one. Running a command
/// outside the sandbox offers "reject" first, so that no habit key leaves it.
pub fn choices(request: &PermissionRequest) -> Vec<Choice> {
    if request.permission == crate::sandbox::UNCONFINED {
        return vec![Choice::Reject, Choice::Once];
    }
    let mut out = vec![Choice::Once];
    if !request.always.is_empty() {
        out.push(Choice::Always);
    }
    if !request.always_broad.is_empty() && request.always_broad != request.always {
        out.push(Choice::AlwaysBroad);
    }
    out.push(Choice::Reject);
    out
}

/// How long a newly opened dialog ignores keys, so that keys typed for the
/// composer just before it appeared cannot answer it. Injected (not a
/// constant) so tests move the clock instead of sleeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermissionGuard {
    /// Ignore keys this long after the dialog opens.
    pub quiet_ms: i64,
    /// ...or this long when the user was typing when it opened.
    pub typing_ms: i64,
    /// "Was typing": a key within this long before the dialog opened.
    pub recent_key_ms: i64,
}

impl Default for PermissionGuard {
    fn default() -> Self {
        Self {
            quiet_ms: 400,
            typing_ms: 800,
            recent_key_ms: 1000,
        }
    }
}

impl PermissionGuard {
    /// When a dialog opening at `now` starts taking answers.
    pub fn armed_at(&self, now: Millis, last_key: Option<Millis>) -> Millis {
        let typing = last_key.is_some_and(|at| now - at <= self.recent_key_ms);
        now + if typing {
            self.typing_ms
        } else {
            self.quiet_ms
        }
    }
}

/// The flash while the transcript is reread after the bus receiver lagged.
const LAGGED: &str = "display fell behind; reloading the session";

/// Two presses of Esc or Ctrl+C within this many milliseconds count as a double press.
pub const DOUBLE_PRESS_MS: i64 = 1000;

pub struct App {
    pub session: Session,
    pub timeline: Timeline,
    pub composer: Composer,
    pub status: SessionStatus,
    /// When the current busy period started, for the elapsed time shown.
    pub busy_since: Option<Millis>,
    pub gauge: Option<ContextGauge>,
    pub agent: String,
    pub model_label: String,
    /// Chosen with /model; `None` leaves the session's default.
    pub model: Option<ModelRef>,
    pub models: Vec<ModelChoice>,
    pub sessions: Vec<Session>,
    /// Stored message counts of `sessions` when the TUI opened; the open
    /// session's own count is kept live from the timeline.
    pub message_counts: std::collections::HashMap<String, u64>,
    /// The newest message held when the TUI opened: messages after it are
    /// new since the counts were read.
    pub newest_at_open: Option<String>,
    pub overlay: Option<Overlay>,
    pub permissions: VecDeque<Arc<PermissionRequest>>,
    pub permission_dialog: PermissionDialog,
    pub permission_guard: PermissionGuard,
    /// When the user last pressed a key, for [`PermissionGuard`].
    pub last_key: Option<Millis>,
    /// Prompts typed while busy, sent when the agent is free again.
    pub queued: VecDeque<String>,
    /// Esc interrupted the turn while prompts were queued: they wait for
    /// the user's Enter (or Esc Esc to edit) instead of going out at once.
    pub queue_held: bool,
    pub completion: Vec<Candidate>,
    pub completion_selected: usize,
    /// Ctrl+R's search of earlier prompts, while it is open.
    pub history_search: Option<super::history_search::HistorySearch>,
    pub files: Arc<Vec<String>>,
    /// One line under the composer: hints, export paths, errors.
    pub flash: Option<String>,
    pub expand_details: bool,
    pub show_reasoning: bool,
    /// Rows the /help overlay is scrolled down; kept in range by `view::prepare`.
    pub help_scroll: u16,
    pub now: Millis,
    pub last_escape: Option<Millis>,
    pub last_ctrl_c: Option<Millis>,
    pub scroll: Scroll,
    pub viewport: Viewport,
    /// A page of older messages is being read ([`Effect::LoadOlder`]).
    pub loading_older: bool,
    pub exit: Option<TuiExit>,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// What the TUI follows of each child session (subtask cards).
    pub children: super::children::Children,
    /// `Some` while a child session is shown instead of this one.
    pub child_view: Option<super::child_view::ChildView>,
    /// The key that opens a subtask, as the cards' hint names it.
    pub open_key: String,
    /// The MCP servers as last reported by the hub (empty: none configured).
    pub mcp: Vec<crate::mcp::Status>,
    /// The ready servers' prompts, offered as `/server:prompt` commands.
    pub mcp_prompts: Vec<crate::mcp::PromptCommand>,
    /// Custom slash commands (`.claude/commands/`, ...), for completion.
    pub custom_commands: Vec<crate::custom_command::CustomCommand>,
    /// A message sent on the first-run screen, before any model: sent
    /// once `/model` picks one (`TuiExit::UseModel`).
    pub held_prompt: Option<String>,
    /// The accept-edits mode (Shift+Tab); the session's permission layer
    /// holds the real setting, sent by `Command::AcceptEdits`.
    pub accept_edits: bool,
    /// Whether the terminal has the focus (focus events; assumed at start).
    pub focused: bool,
    /// Turns at least this long (ms) that end unfocused are notified, and
    /// asks while unfocused; `None`: notifications are off.
    pub notify_after: Option<Millis>,
}

/// Inputs to build an [`App`]; see `TuiInput` for what each means.
pub struct AppInit {
    pub session: Session,
    pub history: Vec<MessageWithParts>,
    pub has_older: bool,
    pub model_label: String,
    pub agent: String,
    pub gauge: Option<ContextGauge>,
    pub first_run: Option<String>,
    pub models: Vec<ModelChoice>,
    pub sessions: Vec<Session>,
    pub now: Millis,
}

impl App {
    /// `/agent NAME`, or Tab between build and plan; either leaves the
    /// accept-edits mode.
    pub fn switch_agent(&mut self, to: Option<&str>) -> Vec<Effect> {
        self.agent = match to {
            Some(agent) => agent.to_string(),
            None if self.agent == "build" => "plan".to_string(),
            None => "build".to_string(),
        };
        self.set_accept_edits(false)
    }

    /// Shift+Tab: build → accept edits (build, with edits inside the
    /// project applied unasked) → plan → build, as Claude Code cycles.
    pub fn cycle_mode(&mut self) -> Vec<Effect> {
        match (self.agent.as_str(), self.accept_edits) {
            ("build", false) => self.set_accept_edits(true),
            (_, true) => {
                self.agent = "plan".into();
                self.set_accept_edits(false)
            }
            _ => {
                self.agent = "build".into();
                Vec::new()
            }
        }
    }

    /// The session's permission layer holds the mode (not the TUI), so a
    /// change is sent to it.
    fn set_accept_edits(&mut self, on: bool) -> Vec<Effect> {
        if self.accept_edits == on {
            return Vec::new();
        }
        self.accept_edits = on;
        vec![Effect::Send(Command::AcceptEdits { on })]
    }

    /// What the status line names: the agent, or "accept edits".
    pub fn mode_label(&self) -> &str {
        if self.accept_edits {
            "accept edits"
        } else {
            &self.agent
        }
    }

    pub fn new(init: AppInit) -> Self {
        let children = super::children::Children::noting(&init.history);
        let newest_at_open = init.history.iter().map(|m| m.message.id.clone()).max();
        Self {
            session: init.session,
            timeline: Timeline::paged(init.history, init.has_older),
            composer: Composer::default(),
            status: SessionStatus::Idle,
            busy_since: None,
            gauge: init.gauge,
            agent: init.agent,
            model_label: init.model_label,
            model: None,
            models: init.models,
            sessions: init.sessions,
            message_counts: std::collections::HashMap::new(),
            newest_at_open,
            overlay: init.first_run.map(Overlay::FirstRun),
            permissions: VecDeque::new(),
            permission_dialog: PermissionDialog::default(),
            permission_guard: PermissionGuard::default(),
            last_key: None,
            queued: VecDeque::new(),
            queue_held: false,
            completion: Vec::new(),
            completion_selected: 0,
            history_search: None,
            files: Arc::new(Vec::new()),
            flash: None,
            expand_details: false,
            show_reasoning: false,
            help_scroll: 0,
            now: init.now,
            last_escape: None,
            last_ctrl_c: None,
            scroll: Scroll::default(),
            loading_older: false,
            viewport: Viewport::default(),
            exit: None,
            dirty: true,
            children,
            child_view: None,
            open_key: "ctrl+g".into(),
            mcp: Vec::new(),
            mcp_prompts: Vec::new(),
            custom_commands: Vec::new(),
            held_prompt: None,
            accept_edits: false,
            focused: true,
            notify_after: None,
        }
    }

    pub fn is_busy(&self) -> bool {
        !matches!(self.status, SessionStatus::Idle)
    }

    /// True while something on screen counts seconds (elapsed, countdown), so
    /// the runner ticks once a second; otherwise it sleeps until input.
    pub fn needs_tick(&self) -> bool {
        self.is_busy()
            || (!self.queued.is_empty() && !self.queue_held)
            || self.timeline.has_running_tool()
            || self.last_ctrl_c.is_some()
    }

    /// Applies one bus event; returns effects (a reload after a lag).
    pub fn apply_event(&mut self, event: &Event) -> Vec<Effect> {
        if event.session_id() != self.session.id {
            // Another session's event: a child's (subtask card, child view);
            // its permission asks are answered here like the parent's.
            let changed = self.follow_child(event);
            self.dirty |= changed;
            if !matches!(
                event,
                Event::PermissionAsked { .. } | Event::PermissionReplied { .. }
            ) {
                return Vec::new();
            }
        }
        self.dirty = true;
        let mut effects = Vec::new();
        match event {
            Event::SessionUpdated { session } => self.session = (**session).clone(),
            Event::MessageUpdated { message } => self.own_timeline().upsert_message(message),
            Event::PartUpdated { part } => {
                let is_step_end = matches!(part.kind, PartKind::StepFinish(_));
                self.children.note_task(part);
                self.own_timeline().upsert_part(part);
                if matches!(part.kind, PartKind::Patch(_)) {
                    effects.extend(super::undo::wanted_patch_diffs(self));
                }
                if is_step_end {
                    // The loop rereads the store at the next step: a queued
                    // prompt sent now is picked up without waiting for idle.
                    self.flush_queue(&mut effects);
                }
            }
            Event::PartDelta {
                message_id,
                part_id,
                field,
                delta,
                ..
            } => self
                .own_timeline()
                .apply_delta(message_id, part_id, *field, delta),
            Event::Status { status, .. } => {
                if matches!(status, SessionStatus::Idle) {
                    effects.extend(self.notify_turn_end());
                    self.busy_since = None;
                    self.clear_interrupting();
                } else if self.busy_since.is_none() {
                    self.busy_since = Some(self.now);
                }
                self.status = status.clone();
                if !self.is_busy() && !self.escape_is_recent() {
                    self.flush_queue(&mut effects);
                }
            }
            Event::Error { message, .. } => {
                self.own_timeline().push_note(true, message.clone());
                if self.child_view.is_none() {
                    self.scroll.follow();
                }
            }
            Event::Notice { message, .. } => self.own_timeline().push_note(false, message.clone()),
            Event::PermissionAsked { request, .. } => {
                if !self.focused && self.notify_after.is_some() {
                    effects.push(Effect::Notify(format!("cairn asks: {}", request.title)));
                }
                if self.permissions.is_empty() {
                    self.open_permission_dialog();
                }
                self.permissions.push_back(request.clone());
            }
            Event::PermissionReplied { request_id, .. } => {
                let front_answered = self
                    .permissions
                    .front()
                    .is_some_and(|r| &r.id == request_id);
                self.permissions.retain(|r| &r.id != request_id);
                if front_answered {
                    self.open_permission_dialog();
                }
            }
            Event::Gauge { gauge, .. } => self.gauge = Some(*gauge),
        }
        effects
    }

    /// A notification for a busy period ending now, when it lasted past
    /// the threshold and the user is elsewhere.
    fn notify_turn_end(&self) -> Option<Effect> {
        let (since, after) = (self.busy_since?, self.notify_after?);
        let took = self.now - since;
        (!self.focused && took >= after)
            .then(|| Effect::Notify(format!("cairn: the turn finished after {} s", took / 1000)))
    }

    /// The turn has stopped: an "interrupting…" notice is no longer true.
    fn clear_interrupting(&mut self) {
        if self
            .flash
            .as_deref()
            .is_some_and(|f| f.starts_with(INTERRUPTING))
        {
            self.flash =
                (self.queue_held && !self.queued.is_empty()).then(|| QUEUE_HELD.to_string());
        }
    }

    /// A fresh dialog for the (next) front request, taking focus and
    /// ignoring keys until its guard time has passed.
    pub fn open_permission_dialog(&mut self) {
        self.permission_dialog = PermissionDialog {
            armed_at: self.permission_guard.armed_at(self.now, self.last_key),
            ..PermissionDialog::default()
        };
    }

    /// The receiver lagged: deltas were lost, so ask for the stored history.
    pub fn lagged(&mut self) -> Vec<Effect> {
        self.flash = Some(LAGGED.into());
        self.mark_parent_stale();
        self.dirty = true;
        vec![Effect::Reload]
    }

    pub fn reloaded(&mut self, history: Vec<MessageWithParts>, has_older: bool) {
        self.timeline.reset(history, has_older);
        self.loading_older = false;
        // What an undo said stays; the lag notice is done.
        if self.flash.as_deref() == Some(LAGGED) {
            self.flash = None;
        }
        self.dirty = true;
    }

    /// The page to read next when the view is scrolled within
    /// [`PREFETCH_BLOCKS`] of the oldest message held and the store has
    /// older ones; marks it as loading so it is asked for once.
    pub fn older_wanted(&mut self) -> Option<Effect> {
        let near_top = self
            .scroll
            .anchor
            .is_some_and(|anchor| anchor.block < PREFETCH_BLOCKS);
        if self.loading_older || !near_top {
            return None;
        }
        let before = self.timeline.older_than()?.to_string();
        self.loading_older = true;
        Some(Effect::LoadOlder(before))
    }

    /// A page of older messages arrived: it goes above what is shown, and
    /// the view stays on the lines the user was reading, unless they were at
    /// the very top (Home), where it stays to show the session's start.
    pub fn older_loaded(&mut self, page: Vec<MessageWithParts>, has_older: bool) {
        self.loading_older = false;
        let added = self.timeline.prepend(page, has_older);
        if let Some(anchor) = &mut self.scroll.anchor
            && (anchor.block, anchor.line) != (0, 0)
        {
            anchor.block += added;
        }
        self.dirty = true;
    }

    /// Once a second while [`App::needs_tick`].
    pub fn tick(&mut self, now: Millis) -> Vec<Effect> {
        self.now = now;
        self.dirty = true;
        if self.last_ctrl_c.is_some_and(|t| now - t > DOUBLE_PRESS_MS) {
            self.last_ctrl_c = None;
            self.flash = None;
        }
        let mut effects = Vec::new();
        if !self.is_busy() && !self.escape_is_recent() {
            self.flush_queue(&mut effects);
        }
        effects
    }

    pub fn escape_is_recent(&self) -> bool {
        self.last_escape
            .is_some_and(|t| self.now - t <= DOUBLE_PRESS_MS)
    }

    /// How many messages the open session holds now: the count read at
    /// open plus those that arrived since.
    pub fn live_message_count(&self) -> u64 {
        let stored = self
            .message_counts
            .get(&self.session.id)
            .copied()
            .unwrap_or(0);
        let newer = self
            .timeline
            .messages()
            .iter()
            .filter(|m| self.newest_at_open.as_ref() < Some(&m.message.id))
            .count();
        stored + newer as u64
    }

    /// Sends every queued prompt, oldest first, unless Esc held them.
    pub fn flush_queue(&mut self, effects: &mut Vec<Effect>) {
        if self.queue_held {
            return;
        }
        while let Some(text) = self.queued.pop_front() {
            effects.push(Effect::Send(self.prompt(text)));
        }
    }

    pub fn prompt(&self, text: String) -> Command {
        Command::Prompt {
            text,
            agent: Some(self.agent.clone()),
            model: self.model.clone(),
            piped: false,
        }
    }
}
