//! The end of terminal input: the terminal was closed (its window, an ssh
//! connection) and no SIGHUP came, because cairn was started with it
//! ignored or outside the terminal's session.
//!
//! crossterm's reader does not report this: on a hung-up tty each read
//! returns 0 bytes and it reads again, forever, at 100% CPU, and its stream
//! never ends. So one thread waits in `poll(2)` on stdin for the hang-up,
//! and the loop leaves as it does on SIGHUP. It never reads: the bytes are
//! crossterm's.

use std::sync::OnceLock;

use tokio::sync::watch;

/// Set once, when stdin reports a hang-up or an error. Held here for the
/// life of the process, so receivers never see the sender dropped.
static ENDED: OnceLock<watch::Sender<bool>> = OnceLock::new();

/// A receiver that turns `true` once terminal input has ended. The first
/// call starts the one watching thread; later TUI sessions (after `/new`)
/// share it.
pub fn watch() -> watch::Receiver<bool> {
    ENDED
        .get_or_init(|| {
            let (sender, _) = watch::channel(false);
            let notify = sender.clone();
            let spawned = std::thread::Builder::new()
                .name("cairn-input-end".into())
                .spawn(move || {
                    if wait_for_hangup() {
                        notify.send_replace(true);
                    }
                });
            if let Err(error) = spawned {
                tracing::warn!("cannot watch for the terminal closing: {error}");
            }
            sender
        })
        .subscribe()
}

/// True for the error a write to a closed terminal gets (EIO): the screen
/// is gone, which is a reason to leave, not a failure to report (there is
/// nowhere left to report it).
pub fn is_terminal_gone(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    if error.raw_os_error() == Some(libc::EIO) {
        return true;
    }
    error.kind() == std::io::ErrorKind::BrokenPipe
}

/// How long the watcher lets crossterm take input that is ready before it
/// polls again: input wakes it, but only the hang-up is its business.
const INPUT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(20);

/// Blocks until stdin is hung up or in error (true), or until it cannot be
/// watched (false).
#[cfg(unix)]
fn wait_for_hangup() -> bool {
    loop {
        // POLLIN is asked for although only the hang-up matters: a tty's
        // hang-up wakes pollers for input and output only, so a poll that
        // asked for nothing would sleep through it.
        let mut watched = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut watched, 1, -1) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if watched.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return true;
        }
        std::thread::sleep(INPUT_BACKOFF);
    }
}

#[cfg(not(unix))]
fn wait_for_hangup() -> bool {
    false
}
