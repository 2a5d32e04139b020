//! Commands: what a front end (TUI, headless runner) asks a session to do.
//!
//! Front ends never call into the loop; they send these and watch the bus.

use tokio::sync::oneshot;

use crate::context::ContextBreakdown;
use crate::message::ModelRef;
use crate::permission::PermissionAnswer;
use crate::session::undo;

#[derive(Debug)]
pub enum Command {
    /// A user message; queued and picked up by the running loop when busy.
    Prompt {
        text: String,
        agent: Option<String>,
        model: Option<ModelRef>,
        /// The whole text came from stdin (`cat TODO.md | cairn run`):
        /// someone else may have written it, so its `@` mentions attach
        /// nothing (issue #28's blind review).
        piped: bool,
    },
    /// `!cmd`: run a shell command directly, without the model.
    Shell { command: String },
    /// Esc: stop the running loop, keep what was received.
    Interrupt,
    /// `/compact [instructions]`.
    Compact { instructions: Option<String> },
    /// `/prune`: clear old tool outputs now; reports what it freed on the bus.
    Prune,
    /// `/context`: the breakdown of the next request.
    Context {
        reply: oneshot::Sender<ContextBreakdown>,
    },
    AnswerPermission {
        request_id: String,
        answer: PermissionAnswer,
    },
    /// The questions of this session and its subagents that wait for an
    /// answer: how a front end that fell behind the bus (and so may have
    /// missed a `PermissionAsked`) finds them again.
    PendingAsks {
        reply: oneshot::Sender<Vec<crate::permission_request::PermissionRequest>>,
    },
    /// Answered once every command sent before it has been served (commands
    /// are served in order): how `cairn run` knows a `/prune` is done.
    Sync { reply: oneshot::Sender<()> },
    /// `/model provider/model` in `cairn run`: checks the model can be used,
    /// then keeps it as the model of the session's next prompt (one that
    /// names none), for this run and later ones; reported as a notice.
    UseModel { model: ModelRef },
    /// The TUI's accept-edits mode (Shift+Tab): edits and writes inside the
    /// project are applied without asking while it is on; see
    /// `Permissions::accepts_edit`.
    AcceptEdits { on: bool },
    /// `/permissions`: list the "always" answers this project remembers, or
    /// forget one (`/permissions revoke N`); the result is a notice.
    Permissions { revoke: Option<i64> },
    /// `/undo [--force]`: takes the last user turn back (files and
    /// messages); refused with `undo::Error::Busy` while the loop runs.
    Undo {
        force: bool,
        reply: oneshot::Sender<Result<undo::Outcome, undo::Error>>,
    },
    /// `/redo [--force]`: brings back the turn undone last; idle only, as
    /// `Undo`; `force` overwrites files edited since the undo.
    Redo {
        force: bool,
        reply: oneshot::Sender<Result<undo::Outcome, undo::Error>>,
    },
    /// `/diff`: the session's changes so far as a unified diff.
    Diff {
        reply: oneshot::Sender<Result<String, undo::Error>>,
    },
    /// One step's changes as a unified diff (a patch card expanded).
    PatchDiff {
        patch: crate::message::PatchPart,
        reply: oneshot::Sender<Result<String, undo::Error>>,
    },
}
