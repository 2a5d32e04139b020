//! Inputs of the TUI loop besides keys and bus events: results of background
//! work (file index, /context reply, reload, export) coming back as messages.
//!
//! Background tasks never touch `App`; they send an [`Internal`] that the
//! loop applies between frames.

use crate::context::ContextBreakdown;
use crate::message::MessageWithParts;

#[derive(Debug)]
pub enum Internal {
    /// The `@` completion file list is ready.
    Files(Vec<String>),
    /// The custom slash commands found for the session's directory.
    CustomCommands(Vec<crate::custom_command::CustomCommand>),
    /// The reply to `/context`; `None` when the session dropped the request.
    Context(Option<ContextBreakdown>),
    /// The newest page of the history, reread after a lag.
    Reloaded(Vec<MessageWithParts>),
    /// A page of older messages, or why it could not be read.
    Older(Result<Vec<MessageWithParts>, String>),
    /// A line for the status bar (export done, copy done, reload failed).
    Flash(String),
    /// The local model servers found at start-up (first-run screen only).
    Discovered(super::Discovered),
    /// A child session's newest page, to show it (or why it could not be read).
    ChildLoaded {
        session_id: String,
        history: Result<Vec<MessageWithParts>, String>,
    },
    /// The MCP servers' states and prompts changed.
    Mcp(Vec<crate::mcp::Status>, Vec<crate::mcp::PromptCommand>),
    /// An MCP prompt's text, to send as the user's message.
    Submit(String),
    /// `/sessions`' list and message counts read again, or why not.
    Sessions(
        Result<
            (
                Vec<crate::message::Session>,
                std::collections::HashMap<String, u64>,
            ),
            String,
        >,
    ),
    /// The session's answer to `/diff`.
    Diff(Result<String, crate::session::undo::Error>),
    /// The diff of a patch card's step.
    PatchDiff {
        part_id: String,
        result: Result<String, crate::session::undo::Error>,
    },
    /// The session's answer to `/undo` (`redo == false`) or `/redo`.
    Undone {
        redo: bool,
        result: Result<crate::session::undo::Outcome, crate::session::undo::Error>,
    },
}
