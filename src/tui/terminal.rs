//! The terminal wrapper: raw mode, alternate screen, bracketed paste and mouse
//! capture on entry; all of it undone in `Drop` and in a panic hook that runs
//! *before* the panic message prints, so a crash never leaves a broken shell.
//!
//! Owns nothing else: no drawing, no input decoding.

use std::io::{Stdout, Write, stdout};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("cannot set up the terminal ({operation}): {source}; is stdout a terminal?")]
    Setup {
        operation: &'static str,
        #[source]
        source: std::io::Error,
    },
}

pub type Backend = CrosstermBackend<Stdout>;

/// The terminal in TUI mode; dropping it restores the user's terminal.
pub struct TerminalGuard {
    terminal: Terminal<Backend>,
}

impl TerminalGuard {
    pub fn enter() -> Result<Self, TerminalError> {
        install_panic_hook();
        let setup = |operation| move |source| TerminalError::Setup { operation, source };
        enable_raw_mode().map_err(setup("enable raw mode"))?;
        let guard_on_error = RestoreOnDrop;
        execute!(
            stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            EnableFocusChange
        )
        .map_err(setup("enter the alternate screen"))?;
        let terminal =
            Terminal::new(CrosstermBackend::new(stdout())).map_err(setup("query the size"))?;
        std::mem::forget(guard_on_error);
        Ok(Self { terminal })
    }

    pub fn terminal(&mut self) -> &mut Terminal<Backend> {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Ctrl+Z: hands the terminal back to the shell, stops the process, and takes
/// the terminal again when the shell resumes it (`fg`).
#[cfg(unix)]
pub fn suspend(terminal: &mut Terminal<Backend>) -> Result<(), TerminalError> {
    restore();
    // SAFETY: raising a signal on our own process has no memory preconditions;
    // SIGTSTP's default action stops every thread until SIGCONT.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    resume(terminal)
}

/// Takes the terminal again after [`restore`] handed it over (Ctrl+Z, the
/// external editor), and clears it for a full redraw.
pub fn resume(terminal: &mut Terminal<Backend>) -> Result<(), TerminalError> {
    let setup = |operation| move |source| TerminalError::Setup { operation, source };
    enable_raw_mode().map_err(setup("enable raw mode after resuming"))?;
    execute!(
        stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture,
        EnableFocusChange,
        Clear(ClearType::All)
    )
    .map_err(setup("enter the alternate screen after resuming"))?;
    // An empty frame makes ratatui's idea of the screen blank too, so the
    // next frame is drawn whole. Not `Terminal::clear`: it asks the
    // terminal where the cursor is, and one that does not answer (or keys
    // typed meanwhile) would stall or fail the resume.
    terminal
        .draw(|_| {})
        .map(|_| ())
        .map_err(setup("clear the screen after resuming"))
}

/// Restores the terminal if `enter` fails half-way.
struct RestoreOnDrop;

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back; safe to call more than once. Errors are ignored:
/// there is nothing better to do with them while exiting or panicking.
pub fn restore() {
    let _ = disable_raw_mode();
    let mut out = stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableFocusChange,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
    let _ = out.flush();
}

fn install_panic_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
