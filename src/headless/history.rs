//! `/undo`, `/redo` and `/diff` in `cairn run`: served from the store and
//! the snapshots without starting the loop or calling the model.

use std::io::Write;

use super::Outcome;

/// `/undo`, `/undo --force`, `/redo` and `/diff` typed as the message of
/// `cairn run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryCommand {
    Undo {
        force: bool,
    },
    Redo,
    /// The session's changes so far as a unified diff on stdout.
    Diff,
}

impl HistoryCommand {
    /// The history command `message` is, whole; `/undo` with other
    /// arguments is left to [`super::slash::parse`], which says the usage.
    pub fn parse(message: &str) -> Option<Self> {
        use crate::slash::Verb;
        match crate::slash::parse(message).map(|(command, args)| (command.verb, args)) {
            Some((Verb::Undo, "")) => Some(Self::Undo { force: false }),
            Some((Verb::Undo, "--force")) => Some(Self::Undo { force: true }),
            Some((Verb::Redo, "")) => Some(Self::Redo),
            Some((Verb::Diff, "")) => Some(Self::Diff),
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
        HistoryCommand::Diff => {
            return print_diff(store, snapshots, session_id, stdout, stderr).await;
        }
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

/// `/diff`: the unified diff on stdout, or a line saying there is none.
async fn print_diff(
    store: &crate::store::Store,
    snapshots: Option<&crate::snapshot::Snapshots>,
    session_id: &str,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    match crate::session::undo::session_diff(store, snapshots, session_id).await {
        Ok(diff) if diff.is_empty() => writeln!(stdout, "no files changed in this session")?,
        Ok(diff) => stdout.write_all(diff.as_bytes())?,
        Err(error) => {
            writeln!(stderr, "error: {error}")?;
            return Ok(Outcome::Failed);
        }
    }
    Ok(Outcome::Success)
}
