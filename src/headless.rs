//! `cairn run`: the loop without a terminal UI, for scripts and CI.
//!
//! A second front end on the same commands and events as the TUI: it sends one
//! prompt, prints the assistant's text to stdout as it streams and tool
//! activity to stderr (or, with `--format json`, every event as one JSON line
//! on stdout), and returns how the run ended. Ctrl+C interrupts like Esc.

use std::collections::HashMap;
use std::io::Write;

use tokio::sync::broadcast::error::RecvError;

use crate::bus::{Bus, Event, SessionStatus};
pub use crate::cli::Format;
use crate::message::{PartKind, ToolState};
use crate::session::command::Command;
use crate::session::runtime::SessionHandle;

/// How a headless run ended; maps to the process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failed,
    Interrupted,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Failed => 1,
            Outcome::Interrupted => 130,
        }
    }
}

/// Sends `message` and prints the session's events until the loop is idle.
pub async fn run(
    handle: &SessionHandle,
    bus: &Bus,
    message: String,
    format: Format,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    let mut events = bus.subscribe();
    if !handle.send(Command::Prompt {
        text: message,
        agent: None,
        model: None,
    }) {
        writeln!(
            stderr,
            "error: the session stopped before the message was sent"
        )?;
        return Ok(Outcome::Failed);
    }
    let mut printer = Printer {
        format,
        printed: HashMap::new(),
        failed: false,
        interrupted: false,
        seen_busy: false,
        ends_with_newline: true,
        announced: Default::default(),
    };
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        let event = tokio::select! {
            _ = &mut interrupt, if !printer.interrupted => {
                printer.interrupted = true;
                writeln!(stderr, "\ninterrupting...")?;
                handle.send(Command::Interrupt);
                continue;
            }
            event = events.recv() => event,
        };
        let event = match event {
            Ok(event) => event,
            // Missed deltas are printed from the part's final update instead.
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => break,
        };
        if event.session_id() != handle.session_id {
            continue;
        }
        if printer.print(&event, stdout, stderr)? {
            break;
        }
    }
    if format == Format::Text && !printer.ends_with_newline {
        writeln!(stdout)?;
    }
    stdout.flush()?;
    Ok(if printer.interrupted {
        Outcome::Interrupted
    } else if printer.failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

struct Printer {
    format: Format,
    /// Bytes of each text part already printed.
    printed: HashMap<String, usize>,
    failed: bool,
    interrupted: bool,
    seen_busy: bool,
    ends_with_newline: bool,
    /// (part id, status) pairs already printed.
    announced: std::collections::HashSet<(String, &'static str)>,
}

impl Printer {
    /// Prints one event; true when the run is over.
    fn print(
        &mut self,
        event: &Event,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<bool> {
        let done = match event {
            Event::Status {
                status: SessionStatus::Idle,
                ..
            } => self.seen_busy,
            Event::Status { .. } => {
                self.seen_busy = true;
                false
            }
            _ => false,
        };
        if let Event::Error { .. } = event {
            self.failed = true;
        }
        match self.format {
            Format::Json => {
                serde_json::to_writer(&mut *stdout, event)?;
                writeln!(stdout)?;
            }
            Format::Text => self.print_text(event, stdout, stderr)?,
        }
        Ok(done)
    }

    fn print_text(
        &mut self,
        event: &Event,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<()> {
        match event {
            Event::PartDelta {
                part_id,
                field: crate::bus::DeltaField::Text,
                delta,
                ..
            } => {
                self.write_text(stdout, delta)?;
                *self.printed.entry(part_id.clone()).or_default() += delta.len();
            }
            Event::PartUpdated { part } => match &part.kind {
                PartKind::Text(text)
                    if !text.synthetic && text.time.is_some_and(|t| t.end.is_some()) =>
                {
                    let printed = self.printed.get(&part.id).copied().unwrap_or(0);
                    if let Some(rest) = text.text.get(printed..)
                        && !rest.is_empty()
                    {
                        self.write_text(stdout, rest)?;
                    }
                    self.printed.insert(part.id.clone(), text.text.len());
                }
                PartKind::Tool(tool) => {
                    // A running part is updated again for its live title; say so once.
                    let first_sight = self
                        .announced
                        .insert((part.id.clone(), tool.state.status_name()));
                    if first_sight {
                        self.print_tool(&tool.tool, &tool.state, stdout, stderr)?;
                    }
                }
                _ => {}
            },
            Event::Error { message, .. } => writeln!(stderr, "error: {message}")?,
            Event::Notice { message, .. } => writeln!(stderr, "{message}")?,
            Event::Status {
                status:
                    SessionStatus::Retrying {
                        attempt, message, ..
                    },
                ..
            } => {
                writeln!(stderr, "retrying (attempt {attempt}): {message}")?;
            }
            _ => {}
        }
        Ok(())
    }

    fn write_text(&mut self, stdout: &mut impl Write, text: &str) -> std::io::Result<()> {
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
        self.ends_with_newline = text.ends_with('\n');
        Ok(())
    }

    fn print_tool(
        &mut self,
        tool: &str,
        state: &ToolState,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<()> {
        if !self.ends_with_newline {
            // Keep tool lines off the end of a half-printed line of text.
            writeln!(stdout)?;
            self.ends_with_newline = true;
        }
        match state {
            ToolState::Running { input, .. } => {
                writeln!(stderr, "> {tool} {}", key_argument(input))
            }
            ToolState::Completed { time, title, .. } => {
                let ms = time.end.unwrap_or(time.start) - time.start;
                writeln!(
                    stderr,
                    "  {tool} done in {:.1}s: {title}",
                    ms as f64 / 1000.0
                )
            }
            ToolState::Error { error, .. } => {
                let first = error.lines().next().unwrap_or("");
                writeln!(stderr, "  {tool} failed: {first}")
            }
            ToolState::Pending { .. } => Ok(()),
        }
    }
}

/// The argument that says most about a call: the command, the path, the pattern.
pub fn key_argument(input: &serde_json::Value) -> String {
    ["command", "file_path", "filePath", "path", "pattern", "url"]
        .iter()
        .find_map(|key| input.get(key).and_then(|v| v.as_str()))
        .map(|value| {
            let line = value.lines().next().unwrap_or("");
            if line.chars().count() > 100 {
                format!("{}...", line.chars().take(97).collect::<String>())
            } else {
                line.to_string()
            }
        })
        .unwrap_or_default()
}

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
