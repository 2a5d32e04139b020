//! Slash commands in the editor: `available_commands_update` lists the
//! rows of [`crate::slash::COMMANDS`] offered in [`FrontEnd::Acp`], and a
//! prompt that names one runs it instead of going to the model.
//!
//! The commands are the session's own (`session::command`): a compaction
//! runs in the loop and streams like a turn; a prune, `/permissions`,
//! `/undo`, `/redo` and `/context` answer with a message.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate, StopReason,
    UnstructuredCommandInput,
};
use agent_client_protocol::{Client, Error};
use std::sync::Arc;

use tokio::sync::oneshot;

use super::session::Open;
use super::turn;
use super::update::message_chunk;
use crate::session::command::Command;
use crate::slash::{FrontEnd, Verb};

/// A slash command the editor may send as a prompt.
#[derive(Debug)]
pub enum Slash {
    /// Work in the session loop, streamed like a turn (`/compact`).
    Loop(Command),
    /// Served at once; its notices are the answer (`/prune`).
    Served(Command),
    Undo {
        force: bool,
    },
    Redo {
        force: bool,
    },
    Context,
    Diff,
    Help,
    /// In the table for editors, not served here yet: said, not sent to the model.
    NotYet(&'static str),
}

/// Tells the editor which commands `open` offers.
///
/// # Errors
/// The connection to the editor is gone.
pub fn announce(cx: &ConnectionTo<Client>, open: &Open) -> Result<(), Error> {
    let commands = crate::slash::COMMANDS
        .iter()
        .filter(|c| {
            c.front_ends.contains(&FrontEnd::Acp)
                && !matches!(parse(c.name), None | Some(Slash::NotYet(_)))
        })
        .map(|c| {
            let command = AvailableCommand::new(c.name.trim_start_matches('/'), c.help);
            if c.args.is_empty() {
                command
            } else {
                command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(c.args),
                ))
            }
        })
        .chain(mcp_prompts(open))
        .collect();
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    turn::send(cx, open, update)
}

/// How long the list waits for MCP servers that are still starting before it
/// is sent again with their prompts (a slow server's come later, or never).
const MCP_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// [`announce`] now, and again once the MCP servers are ready, so their
/// prompts (`/server:prompt`) reach the editor's list too.
///
/// # Errors
/// The connection to the editor is gone.
pub fn announce_with_mcp(cx: &ConnectionTo<Client>, open: &Arc<Open>) -> Result<(), Error> {
    announce(cx, open)?;
    let Some(hub) = open.app.tools.mcp().cloned() else {
        return Ok(());
    };
    let (cx, open) = (cx.clone(), open.clone());
    cx.clone().spawn(async move {
        hub.wait_ready(MCP_WAIT).await;
        announce(&cx, &open)
    })
}

/// The ready MCP servers' prompts, as the editor's commands.
fn mcp_prompts(open: &Open) -> Vec<AvailableCommand> {
    let Some(hub) = open.app.tools.mcp() else {
        return Vec::new();
    };
    hub.prompt_commands()
        .into_iter()
        .map(|prompt| {
            let command = AvailableCommand::new(
                prompt.command.trim_start_matches('/'),
                format!("{} (MCP prompt)", prompt.description),
            );
            if prompt.usage.trim() == prompt.command {
                command
            } else {
                command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(prompt.usage),
                ))
            }
        })
        .collect()
}

/// `/server:prompt args` as the prompt's messages (as in the terminal);
/// any other text as it is.
///
/// # Errors
/// The server failed to give the prompt: said to the user, not sent.
pub async fn expand_mcp(open: &Open, text: String) -> Result<String, String> {
    let Some(hub) = open.app.tools.mcp() else {
        return Ok(text);
    };
    if !text.starts_with('/') {
        return Ok(text);
    }
    hub.expand_prompt(&text).await.unwrap_or(Ok(text))
}

/// The command `text` names; `None` when it is text for the model.
pub fn parse(text: &str) -> Option<Slash> {
    let (command, args) = crate::slash::parse(text)?;
    if !command.front_ends.contains(&FrontEnd::Acp) {
        return None;
    }
    let force = args == "--force";
    Some(match command.verb {
        Verb::Compact => Slash::Loop(Command::Compact {
            instructions: (!args.is_empty()).then(|| args.to_string()),
        }),
        Verb::Prune => Slash::Served(Command::Prune),
        Verb::Permissions => Slash::Served(Command::Permissions {
            revoke: crate::session::remembered::parse_args(args).ok()?,
        }),
        Verb::Undo => Slash::Undo { force },
        Verb::Redo => Slash::Redo { force },
        Verb::Context => Slash::Context,
        Verb::Diff => Slash::Diff,
        Verb::Help => Slash::Help,
        Verb::Model if !args.is_empty() => Slash::Served(Command::UseModel {
            model: crate::message::ModelRef::parse(args).ok()?,
        }),
        _ => Slash::NotYet(command.name),
    })
}

/// Runs `slash` in `open`; its answer streams as the agent's message.
///
/// # Errors
/// The connection to the editor is gone.
pub async fn run(
    open: &Open,
    cx: &ConnectionTo<Client>,
    slash: Slash,
) -> Result<StopReason, Error> {
    let text = match slash {
        Slash::Loop(command) => return turn::run_command(open, cx, command).await,
        Slash::Served(command) => return served(open, cx, command).await,
        Slash::Undo { force } => {
            let (reply, answer) = oneshot::channel();
            open.handle.send(Command::Undo { force, reply });
            match answer.await {
                Ok(Ok(outcome)) => format!(
                    "Undone: {} message(s), {} file(s) restored.\n{}",
                    outcome.messages,
                    outcome.files.len(),
                    outcome.not_restored.join("\n")
                ),
                Ok(Err(error)) => format!("{error}"),
                Err(_) => "the session stopped".to_string(),
            }
        }
        Slash::Redo { force } => {
            let (reply, answer) = oneshot::channel();
            open.handle.send(Command::Redo { force, reply });
            match answer.await {
                Ok(Ok(outcome)) => format!(
                    "Redone: {} message(s), {} file(s) written.",
                    outcome.messages,
                    outcome.files.len()
                ),
                Ok(Err(error)) => format!("{error}"),
                Err(_) => "the session stopped".to_string(),
            }
        }
        Slash::Diff => {
            let (reply, answer) = oneshot::channel();
            open.handle.send(Command::Diff { reply });
            match answer.await {
                Ok(Ok(diff)) => diff,
                Ok(Err(error)) => format!("{error}"),
                Err(_) => "the session stopped".to_string(),
            }
        }
        Slash::Help => crate::slash::help_text(FrontEnd::Acp),
        Slash::NotYet(name) => {
            format!("{name} is not offered in the editor yet; it works in the terminal UI.")
        }
        Slash::Context => {
            let (reply, answer) = oneshot::channel();
            open.handle.send(Command::Context { reply });
            match answer.await {
                Ok(breakdown) => breakdown
                    .categories
                    .iter()
                    .map(|(name, tokens)| format!("{name}: {tokens} tokens\n"))
                    .chain(std::iter::once(format!(
                        "used {} of {} usable tokens\n",
                        breakdown.gauge.used, breakdown.gauge.usable
                    )))
                    .collect(),
                Err(_) => "the session stopped".to_string(),
            }
        }
    };
    turn::send(cx, open, message_chunk(text))?;
    Ok(StopReason::EndTurn)
}

/// Sends `command` and forwards the notices it makes until the session has
/// served it.
async fn served(
    open: &Open,
    cx: &ConnectionTo<Client>,
    command: Command,
) -> Result<StopReason, Error> {
    let mut events = open.app.bus.subscribe();
    let (reply, done) = oneshot::channel();
    open.handle.send(command);
    open.handle.send(Command::Sync { reply });
    let _ = done.await;
    while let Ok(event) = events.try_recv() {
        if let crate::bus::Event::Notice {
            session_id,
            message,
        } = &event
            && *session_id == open.session.id
        {
            turn::send(cx, open, message_chunk(format!("{message}\n")))?;
        }
    }
    Ok(StopReason::EndTurn)
}
