//! `cairn run`: the loop without a terminal UI, for scripts and CI.
//!
//! A second front end on the same commands and events as the TUI: it sends one
//! prompt, prints the assistant's text to stdout (as it streams on a
//! terminal, step by step elsewhere: `hold.rs`) and tool activity to stderr
//! (or, with `--format json`, every event as one JSON line on stdout, then
//! one `result`: `result.rs`), and returns how the run ended. Ctrl+C
//! interrupts like Esc.
//!
//! stdout carries exactly the visible answer: the hidden summary of a
//! compaction made during the run is not printed (`/compact` asked for
//! explicitly is the exception: its summary is the answer), nor the text of
//! a step abandoned for a retry, and a reader that falls behind misses
//! nothing (`lag.rs`, `out.rs`). The message itself may come from stdin
//! (`prompt.rs`).

use std::collections::{HashMap, HashSet};
use std::io::Write;

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::oneshot;

use crate::bus::{Bus, Event, SessionStatus};
pub use crate::cli::Format;
use crate::cli::{EXIT_FAILED_AFTER_ANSWER, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use crate::message::{FinishReason, PartKind, Role, ToolState};
use crate::session::command::Command;
use crate::session::runtime::SessionHandle;
use crate::store::Store;

mod history;
pub use history::{HistoryCommand, run_history_command};
mod hold;
mod lag;
pub mod out;
mod prompt;
pub use prompt::{MessageError, is_piped, read_message};
mod result;
pub use result::{write_failure as write_failure_result, write_report as write_report_result};
mod slash;

/// How a headless run ended; maps to the process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Nothing or only part of an answer was delivered.
    Failed,
    /// The answer was delivered, then a later step (a compaction, a prune)
    /// failed: a script may use the answer, and should look at stderr.
    FailedAfterAnswer,
    /// The message named a command `cairn run` cannot do (it needs a screen).
    Usage,
    Interrupted,
    /// The session is open in another cairn process.
    SessionBusy,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Success => EXIT_OK,
            Outcome::Failed => EXIT_FAILURE,
            Outcome::FailedAfterAnswer => EXIT_FAILED_AFTER_ANSWER,
            Outcome::Usage => EXIT_USAGE,
            Outcome::Interrupted => 130,
            Outcome::SessionBusy => crate::cli::EXIT_SESSION_BUSY,
        }
    }

    /// How the `result` event names it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failed => "failed",
            Outcome::FailedAfterAnswer => "failed_after_answer",
            Outcome::Usage => "usage",
            Outcome::Interrupted => "interrupted",
            Outcome::SessionBusy => "session_busy",
        }
    }
}

/// Sends `message` (or runs the slash command it names, see [`slash`]) and
/// prints the session's events until the work is done.
pub async fn run(
    handle: &SessionHandle,
    bus: &Bus,
    store: &Store,
    message: String,
    format: Format,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    let events = bus.subscribe();
    let streams = Streams {
        holds: true,
        stderr_is_terminal: false,
    };
    run_from(
        handle,
        events,
        store,
        (message, false),
        (format, streams),
        stdout,
        stderr,
    )
    .await
}

/// [`run`] with `events` subscribed before the session was opened, so what
/// opening it reports (a broken agent file, a repaired crash) is printed too;
/// `stdout` is the process's, and the text streams only when it is a
/// terminal (see `hold.rs`).
pub async fn run_watching(
    handle: &SessionHandle,
    events: tokio::sync::broadcast::Receiver<Event>,
    store: &Store,
    (message, piped): (String, bool),
    format: Format,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    use std::io::IsTerminal;
    let streams = Streams {
        holds: !std::io::stdout().is_terminal(),
        stderr_is_terminal: std::io::stderr().is_terminal(),
    };
    run_from(
        handle,
        events,
        store,
        (message, piped),
        (format, streams),
        stdout,
        stderr,
    )
    .await
}

/// What stdout and stderr are: how the answer's text and the status lines
/// are written.
#[derive(Debug, Clone, Copy)]
struct Streams {
    /// Hold each step's text until the step is kept ([`hold`]).
    holds: bool,
    /// Rewrite the retry countdown in place (`\r`, `ESC[2K`) instead of
    /// printing a line per retry.
    stderr_is_terminal: bool,
}

/// `piped`: the whole message came from stdin (see `Command::Prompt`).
async fn run_from(
    handle: &SessionHandle,
    events: tokio::sync::broadcast::Receiver<Event>,
    store: &Store,
    (message, piped): (String, bool),
    (format, streams): (Format, Streams),
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<Outcome> {
    let parsed = slash::parse(&message);
    let mut watch = Watch {
        handle,
        store,
        run_start: crate::id::message_id(),
        events,
        printer: Printer::new(format, streams),
        subagents: HashSet::new(),
    };
    match parsed {
        Err(usage) => {
            writeln!(stderr, "error: {usage}")?;
            watch.printer.usage = true;
            watch.printer.tally.add_error(usage);
        }
        Ok(Some(command)) => slash::run(command, &mut watch, store, stdout, stderr).await?,
        Ok(None) => {
            let prompt = Command::Prompt {
                text: message,
                agent: None,
                model: None,
                piped,
            };
            if watch.send(prompt, stderr)? {
                watch.until_idle(stdout, stderr).await?;
            }
        }
    }
    let mut printer = watch.printer;
    let rest = printer.steps.release();
    if !rest.is_empty() {
        printer.write_text(stdout, &rest)?;
    }
    let outcome = printer.outcome();
    match format {
        Format::Text if !printer.ends_with_newline => writeln!(stdout)?,
        Format::Text => {}
        Format::Json => {
            let result = printer.tally.result(Some(&handle.session_id), outcome);
            serde_json::to_writer(&mut *stdout, &result)?;
            writeln!(stdout)?;
        }
    }
    stdout.flush()?;
    Ok(outcome)
}

/// A run in progress: the session it drives, its events, what was printed.
struct Watch<'a> {
    handle: &'a SessionHandle,
    /// Where the events dropped by a lag are read back from.
    store: &'a Store,
    /// A message id minted before the run sent anything: the run's own
    /// messages sort after it.
    run_start: String,
    events: broadcast::Receiver<Event>,
    printer: Printer,
    /// The subagent sessions below this one seen so far.
    subagents: HashSet<String>,
}

impl Watch<'_> {
    /// Sends `command`; false, and a failed run, when the session has stopped.
    fn send(&mut self, command: Command, stderr: &mut impl Write) -> std::io::Result<bool> {
        if self.handle.send(command) {
            return Ok(true);
        }
        let message = "the session stopped before the command was sent";
        self.printer.failed = true;
        self.printer.tally.add_error(message.into());
        writeln!(stderr, "error: {message}")?;
        Ok(false)
    }

    /// Prints events until the session goes idle after being busy.
    async fn until_idle(
        &mut self,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<()> {
        self.until::<()>(None, stdout, stderr).await.map(drop)
    }

    /// Prints events until `reply` answers. `None` when the session dropped
    /// the reply or the user interrupted the wait.
    async fn until_reply<T>(
        &mut self,
        reply: oneshot::Receiver<T>,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<Option<T>> {
        self.until(Some(reply), stdout, stderr).await
    }

    async fn until<T>(
        &mut self,
        reply: Option<oneshot::Receiver<T>>,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<Option<T>> {
        let waits_for_reply = reply.is_some();
        let answer = async move {
            match reply {
                Some(reply) => reply.await.ok(),
                None => std::future::pending().await,
            }
        };
        tokio::pin!(answer);
        let mut stops = Stops::listen()?;
        // Set at the first stop: past it (or at a second stop) the run ends
        // without waiting for the loop, so a stuck loop can never keep it alive.
        let mut give_up_at: Option<tokio::time::Instant> = None;
        loop {
            let give_up = async {
                match give_up_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let event = tokio::select! {
                // Events first: those published before the reply was sent are
                // printed before the wait ends.
                biased;
                name = stops.next() => {
                    if self.printer.interrupted {
                        writeln!(stderr, "\n{name} again: stopping now; unfinished tools are marked interrupted when the session is reopened")?;
                        return Ok(None);
                    }
                    self.printer.interrupted = true;
                    give_up_at = Some(tokio::time::Instant::now() + STOP_GRACE);
                    writeln!(stderr, "\n{name}: interrupting...")?;
                    if waits_for_reply {
                        return Ok(None);
                    }
                    self.handle.send(Command::Interrupt);
                    continue;
                }
                () = give_up => {
                    writeln!(stderr, "the session did not stop within {}s: stopping now; unfinished tools are marked interrupted when the session is reopened", STOP_GRACE.as_secs())?;
                    return Ok(None);
                }
                event = self.events.recv() => event,
                answer = &mut answer => return Ok(answer),
            };
            let event = match event {
                Ok(event) => event,
                Err(RecvError::Lagged(_)) => {
                    self.catch_up(stdout, stderr).await?;
                    continue;
                }
                Err(RecvError::Closed) => return Ok(None),
            };
            if event.session_id() != self.handle.session_id {
                self.follow_subagents(&event);
                continue;
            }
            if self.printer.print(&event, stdout, stderr)? && !waits_for_reply {
                return Ok(None);
            }
        }
    }

    /// Counts what the session's subagents (and theirs) spend: a subagent
    /// session announces itself (with its parent) before its first message.
    fn follow_subagents(&mut self, event: &Event) {
        match event {
            Event::SessionUpdated { session } => {
                if let Some(parent) = &session.parent_id
                    && (*parent == self.handle.session_id || self.subagents.contains(parent))
                {
                    self.subagents.insert(session.id.clone());
                }
            }
            Event::MessageUpdated { message } if self.subagents.contains(&message.session_id) => {
                self.printer.tally.observe_subagent(event);
            }
            _ => {}
        }
    }

    /// Reports a failure of the run itself (not of the session), as the
    /// session reports its own: an `error` event.
    fn fail(
        &mut self,
        message: String,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<()> {
        let event = Event::Error {
            session_id: self.handle.session_id.clone(),
            message,
        };
        self.printer.print(&event, stdout, stderr).map(drop)
    }
}

/// Lines of a tool's error printed on stderr; the model sees all of it.
const MAX_ERROR_LINES: usize = 12;

/// How long an interrupted run waits for the loop to settle before it ends
/// anyway.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The signals that stop a run: Ctrl+C, and SIGTERM / SIGHUP (a supervisor,
/// a closed terminal), handled the same way so the running tool is killed
/// and recorded as interrupted instead of orphaned.
pub struct Stops {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Stops {
    pub fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next stop signal; returns its name for the message.
    /// Cancel-safe: a signal that arrives between two calls is kept.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "Ctrl+C",
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.hangup.recv() => "SIGHUP",
        }
    }

    /// The exit status a shell gives a process its signal `name` (from
    /// [`Stops::next`]) ended: 128 + the signal's number.
    pub fn exit_code(name: &str) -> u8 {
        match name {
            "SIGTERM" => 128 + 15,
            "SIGHUP" => 128 + 1,
            _ => 128 + 2,
        }
    }
}

struct Printer {
    format: Format,
    /// Print compaction summaries as the answer (`/compact` asked for them).
    show_summaries: bool,
    /// Print notices on stdout: they are the answer of `/prune` and the like.
    notices_are_answers: bool,
    /// Bytes of each text part already printed.
    printed: HashMap<String, usize>,
    streams: Streams,
    /// Each step's text on its way to stdout (held on a pipe).
    steps: hold::Steps,
    /// Set at a lag to a part id minted then: the text of older parts is
    /// printed from their final update only (see [`lag`]).
    delta_floor: Option<String>,
    /// Messages whose text is not part of the answer (compaction summaries).
    hidden: HashSet<String>,
    /// An assistant message finished with an answer (not tool calls, no error).
    answered: bool,
    /// An error came before the answer was delivered.
    failed: bool,
    /// An error came after the answer was delivered.
    failed_after_answer: bool,
    /// The message named a command that needs a screen.
    usage: bool,
    /// What the `result` event reports.
    tally: result::Tally,
    interrupted: bool,
    seen_busy: bool,
    ends_with_newline: bool,
    /// (part id, status) pairs already printed.
    announced: std::collections::HashSet<(String, &'static str)>,
    /// The retry countdown is the last stderr line and has no newline yet:
    /// the next retry rewrites it, anything else ends it first.
    retry_line_open: bool,
}

impl Printer {
    fn new(format: Format, streams: Streams) -> Self {
        Self {
            format,
            streams,
            steps: hold::Steps::new(streams.holds),
            show_summaries: false,
            notices_are_answers: false,
            printed: HashMap::new(),
            delta_floor: None,
            hidden: HashSet::new(),
            answered: false,
            failed: false,
            failed_after_answer: false,
            usage: false,
            tally: result::Tally::new(),
            interrupted: false,
            seen_busy: false,
            ends_with_newline: true,
            announced: Default::default(),
            retry_line_open: false,
        }
    }

    fn outcome(&self) -> Outcome {
        if self.interrupted {
            Outcome::Interrupted
        } else if self.usage {
            Outcome::Usage
        } else if self.failed {
            Outcome::Failed
        } else if self.failed_after_answer {
            Outcome::FailedAfterAnswer
        } else {
            Outcome::Success
        }
    }

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
        match event {
            Event::Error { .. } if self.answered => self.failed_after_answer = true,
            Event::Error { .. } => self.failed = true,
            Event::MessageUpdated { message } => {
                if let Role::Assistant(assistant) = &message.role {
                    if assistant.summary && !self.show_summaries {
                        self.hidden.insert(message.id.clone());
                    } else if assistant.error.is_none()
                        && assistant
                            .finish
                            .is_some_and(|finish| finish != FinishReason::ToolCalls)
                    {
                        self.answered = true;
                    }
                }
            }
            _ => {}
        }
        self.tally.observe(event);
        let visible = self.visible_text(event);
        if let Some((key, text)) = &visible {
            self.tally.add_text(key, text);
        }
        match self.format {
            Format::Json => {
                serde_json::to_writer(&mut *stdout, event)?;
                writeln!(stdout)?;
            }
            Format::Text => {
                if let Some(now) = self.release_text(event, visible.as_ref()) {
                    self.write_text(stdout, &now)?;
                }
                self.print_text(event, stdout, stderr)?;
            }
        }
        Ok(done)
    }

    /// The text to print now for `event`, which adds `visible`: a notice at
    /// once, a step's text as [`hold`] lets it through.
    fn release_text(
        &mut self,
        event: &Event,
        visible: Option<&(String, String)>,
    ) -> Option<String> {
        match (event, visible) {
            (Event::Notice { .. }, Some((_, text))) => Some(text.clone()),
            (_, Some((message_id, text))) => self.steps.text(message_id, text),
            (Event::MessageUpdated { message }, None) => self.steps.settle(message),
            _ => None,
        }
    }

    /// The answer's text that `event` adds: (message id, or the command's
    /// report, and the text). Summaries are hidden unless asked for.
    fn visible_text(&mut self, event: &Event) -> Option<(String, String)> {
        match event {
            Event::PartDelta {
                message_id,
                part_id,
                field: crate::bus::DeltaField::Text,
                delta,
                ..
            } if !self.hidden.contains(message_id) && self.prints_deltas_of(part_id) => {
                *self.printed.entry(part_id.clone()).or_default() += delta.len();
                Some((message_id.clone(), delta.clone()))
            }
            Event::PartUpdated { part } => match &part.kind {
                PartKind::Text(text)
                    if !text.synthetic
                        && text.time.is_some_and(|t| t.end.is_some())
                        && !self.hidden.contains(&part.message_id) =>
                {
                    let printed = self.printed.insert(part.id.clone(), text.text.len());
                    let rest = text.text.get(printed.unwrap_or(0)..)?;
                    (!rest.is_empty()).then(|| (part.message_id.clone(), rest.to_string()))
                }
                _ => None,
            },
            Event::Notice { message, .. } if self.notices_are_answers => {
                Some(("notices".to_string(), format!("{message}\n")))
            }
            _ => None,
        }
    }

    fn print_text(
        &mut self,
        event: &Event,
        stdout: &mut impl Write,
        stderr: &mut impl Write,
    ) -> std::io::Result<()> {
        let is_retry = matches!(
            event,
            Event::Status {
                status: SessionStatus::Retrying { .. },
                ..
            }
        );
        if self.retry_line_open && !is_retry {
            writeln!(stderr)?;
            self.retry_line_open = false;
        }
        match event {
            Event::PartUpdated { part } => {
                if let PartKind::Tool(tool) = &part.kind
                    && !is_pruning(&tool.state)
                {
                    // A running part is updated again for its live title; say so once.
                    let first_sight = self
                        .announced
                        .insert((part.id.clone(), tool.state.status_name()));
                    if first_sight {
                        self.print_tool(&tool.tool, &tool.state, stdout, stderr)?;
                    }
                }
            }
            Event::Error { message, .. } => writeln!(stderr, "error: {message}")?,
            Event::Notice { .. } if self.notices_are_answers => {}
            Event::Notice { message, .. } => writeln!(stderr, "{message}")?,
            Event::Status {
                status:
                    SessionStatus::Retrying {
                        attempt,
                        message,
                        next_at,
                    },
                ..
            } => {
                let wait = (next_at - crate::clock::now_millis()).max(0) as f64 / 1000.0;
                let digits = if wait < 10.0 { 1 } else { 0 };
                let line = format!("retry {attempt} in {wait:.digits$} s: {message}");
                if self.streams.stderr_is_terminal {
                    // Each retry rewrites the line on a screen.
                    write!(stderr, "\r\x1b[2K{line}")?;
                    self.retry_line_open = true;
                } else {
                    // A CI log keeps every line and shows no control codes.
                    writeln!(stderr, "{line}")?;
                }
                stderr.flush()?;
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
            ToolState::Completed {
                time,
                title,
                output,
                ..
            } => {
                let ms = time.end.unwrap_or(time.start) - time.start;
                writeln!(
                    stderr,
                    "  {tool} done in {:.1}s: {title}",
                    ms as f64 / 1000.0
                )?;
                // What the sandbox refused, where a script's user looks.
                for line in output
                    .lines()
                    .filter(|l| l.starts_with(crate::sandbox::BLOCKED))
                {
                    writeln!(stderr, "    {line}")?;
                }
                Ok(())
            }
            ToolState::Error { error, .. } => {
                // Whole, up to a limit: a refusal ends with the config lines
                // that would allow the call.
                let mut lines = error.lines();
                writeln!(stderr, "  {tool} failed: {}", lines.next().unwrap_or(""))?;
                for line in lines.by_ref().take(MAX_ERROR_LINES - 1) {
                    writeln!(stderr, "    {line}")?;
                }
                let rest = lines.count();
                if rest > 0 {
                    writeln!(stderr, "    ... ({rest} more lines)")?;
                }
                Ok(())
            }
            ToolState::Pending { .. } => Ok(()),
        }
    }
}

/// A finished call whose output a prune just cleared: the same call
/// rewritten (perhaps from an earlier run), not news to print again.
fn is_pruning(state: &ToolState) -> bool {
    matches!(state, ToolState::Completed { time, .. } if time.compacted.is_some())
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
