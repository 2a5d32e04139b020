//! `/undo` and `/redo` in `cairn run`: served from the store and the
//! snapshots without starting the loop or calling the model.

use std::io::Write;

use super::Outcome;

/// `/undo`, `/undo --force` and `/redo` typed as the message of `cairn run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryCommand {
    Undo { force: bool },
    Redo,
}

impl HistoryCommand {
    pub fn parse(message: &str) -> Option<Self> {
        match message.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["/undo"] => Some(Self::Undo { force: false }),
            ["/undo", "--force"] => Some(Self::Undo { force: true }),
            ["/redo"] => Some(Self::Redo),
            _ => None,
        }
    }
}

/// Runs `command` on the session without calling the model and says what
/// it did. A refused undo (files edited since the turn) exits 1 with the list.
pub async fn run_history_command(
    store: &crate::store::Store,
    snapshots: Option<&crate::snapshot::Snapshots>,
    session_id: &str,
    command: HistoryCommand,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    use crate::session::undo;
    let (verb, result) = match command {
        HistoryCommand::Undo { force } => (
            "undid",
            undo::undo(store, snapshots, session_id, force).await,
        ),
        HistoryCommand::Redo => ("redid", undo::redo(store, snapshots, session_id).await),
    };
    let done = match result {
        Ok(done) => done,
        Err(error) => {
            writeln!(stderr, "error: {error}")?;
            return Ok(Outcome::Failed);
        }
    };
    let files = if done.files.is_empty() {
        "no files changed".to_owned()
    } else {
        format!("files restored: {}", done.files.join(", "))
    };
    writeln!(
        stdout,
        "{verb} the last turn ({} messages; {files})",
        done.messages
    )?;
    if let Some(tokens) = done.compaction_removed {
        writeln!(
            stdout,
            "compaction removed: the model sees the full history again (about {tokens} tokens, the size of the last request before it)"
        )?;
    }
    if matches!(command, HistoryCommand::Undo { .. }) && !done.prompt.is_empty() {
        writeln!(stdout, "prompt: {}", done.prompt)?;
    }
    Ok(Outcome::Success)
}
