//! `/undo`, `/redo` and `/diff` in `cairn run`: served from the store and
//! the snapshots without starting the loop or calling the model; with
//! `--format json` their report is the `result`'s text.

use std::io::Write;

use super::Outcome;
use super::result::Tally;
use crate::cli::Format;

/// `/undo`, `/undo --force`, `/redo` and `/diff` typed as the message of
/// `cairn run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryCommand {
    Undo {
        force: bool,
    },
    Redo {
        force: bool,
    },
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
            Some((Verb::Redo, "")) => Some(Self::Redo { force: false }),
            Some((Verb::Redo, "--force")) => Some(Self::Redo { force: true }),
            Some((Verb::Diff, "")) => Some(Self::Diff),
            _ => None,
        }
    }
}

/// Runs `command` on the session without calling the model and says what
/// it did: as text, or with `--format json` as one `result` (its `text` is
/// what text would print). A refused undo (files edited since the turn)
/// exits 1 with the list.
pub async fn run_history_command(
    store: &crate::store::Store,
    snapshots: Option<&crate::snapshot::Snapshots>,
    session_id: &str,
    command: HistoryCommand,
    format: Format,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    let report = match command {
        HistoryCommand::Diff => diff(store, snapshots, session_id).await,
        _ => undo_or_redo(store, snapshots, session_id, command).await,
    };
    let mut tally = Tally::new();
    let outcome = match report {
        Ok(text) => {
            tally.add_text("report", &text);
            if format == Format::Text {
                stdout.write_all(text.as_bytes())?;
            }
            Outcome::Success
        }
        Err(error) => {
            writeln!(stderr, "error: {error}")?;
            tally.add_error(error);
            Outcome::Failed
        }
    };
    if format == Format::Json {
        serde_json::to_writer(&mut *stdout, &tally.result(Some(session_id), outcome))?;
        writeln!(stdout)?;
    }
    stdout.flush()?;
    Ok(outcome)
}

/// `/undo` or `/redo`: what was done, or why not.
async fn undo_or_redo(
    store: &crate::store::Store,
    snapshots: Option<&crate::snapshot::Snapshots>,
    session_id: &str,
    command: HistoryCommand,
) -> Result<String, String> {
    use crate::session::undo;
    let (verb, result) = match command {
        HistoryCommand::Undo { force } => (
            "undid",
            undo::undo(store, snapshots, session_id, force).await,
        ),
        HistoryCommand::Redo { force } => (
            "redid",
            undo::redo(store, snapshots, session_id, force).await,
        ),
        HistoryCommand::Diff => return Err("not an undo or redo".to_owned()),
    };
    let done = result.map_err(|error| error.to_string())?;
    let mut files = if done.files.is_empty() {
        "no files changed".to_owned()
    } else {
        format!("files restored: {}", done.files.join(", "))
    };
    if !done.not_restored.is_empty() {
        files.push_str(&format!("; not restored: {}", done.not_restored.join("; ")));
    }
    let mut text = format!(
        "{verb} the last turn ({} messages; {files})\n",
        done.messages
    );
    if let Some(tokens) = done.compaction_removed {
        text.push_str(&format!(
            "compaction removed: the model sees the full history again (about {tokens} tokens, the size of the last request before it)\n"
        ));
    }
    if matches!(command, HistoryCommand::Undo { .. }) && !done.prompt.is_empty() {
        text.push_str(&format!("prompt: {}\n", done.prompt));
    }
    Ok(text)
}

/// `/diff`: the unified diff, or a line saying there is none.
async fn diff(
    store: &crate::store::Store,
    snapshots: Option<&crate::snapshot::Snapshots>,
    session_id: &str,
) -> Result<String, String> {
    match crate::session::undo::session_diff(store, snapshots, session_id).await {
        Ok(diff) if diff.is_empty() => Ok("no files changed in this session\n".to_string()),
        Ok(diff) => Ok(diff),
        Err(error) => Err(error.to_string()),
    }
}
