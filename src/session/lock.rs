//! One cairn per session: an advisory lock file per session in the data dir.
//!
//! Two `cairn run --continue` on one session would both read the same last
//! user message and both answer it, and each would "recover" the other's
//! running tools as crashed. So a process holds `DATA/locks/SESSION.lock`
//! (`flock`, released by the kernel when the process dies, even by SIGKILL)
//! from before recovery until the session is closed. A second opener waits
//! briefly (a TUI switching back to a session it just left), then refuses
//! with [`SessionBusy`], which names the holder's pid.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a second opener waits for the holder to let go.
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// How often a waiting opener tries again.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// Another process has the session open.
#[derive(Debug, thiserror::Error)]
#[error(
    "session {session_id} is in use by another cairn{holder}; wait for it to finish, or start a new session (without --continue/--session)"
)]
pub struct SessionBusy {
    pub session_id: String,
    /// " (pid N)" when the holder wrote its pid, else empty.
    holder: String,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Busy(#[from] SessionBusy),
    #[error("cannot open the session lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Held while a session is open in this process; dropping it releases the
/// session (closing the file drops the `flock`).
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Takes `session_id`'s lock under `data_dir`, waiting up to `wait`.
    pub fn acquire(data_dir: &Path, session_id: &str, wait: Duration) -> Result<Self, LockError> {
        let path = lock_path(data_dir, session_id);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            crate::paths::private_dir_builder()
                .create(dir)
                .map_err(io)?;
        }
        let mut file = crate::paths::private_file_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let deadline = Instant::now() + wait;
        loop {
            match try_flock(&file) {
                Ok(true) => break,
                Ok(false) if Instant::now() < deadline => std::thread::sleep(LOCK_POLL),
                Ok(false) => {
                    return Err(SessionBusy {
                        session_id: session_id.to_string(),
                        holder: holder(&mut file),
                    }
                    .into());
                }
                Err(error) => return Err(io(error)),
            }
        }
        // The pid is only for the refusal message: a failure to write it
        // does not make the lock less held.
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| write!(file, "{}", std::process::id()));
        Ok(Self { _file: file })
    }
}

fn lock_path(data_dir: &Path, session_id: &str) -> PathBuf {
    // Session ids are cairn's own (ses_...), but one from `--session` is typed
    // by the user: keep it a single file name inside locks/.
    let name: String = session_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    data_dir.join("locks").join(format!("{name}.lock"))
}

/// An exclusive, non-blocking `flock`; false when another open file holds it.
fn try_flock(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock only reads the descriptor, which `file` keeps open for
    // the duration of the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        Some(libc::EINTR) => Ok(false),
        _ => Err(error),
    }
}

/// " (pid N)" from the lock file's content, or nothing when unreadable.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    if file.rewind().is_err() || file.read_to_string(&mut text).is_err() {
        return String::new();
    }
    match text.trim().parse::<u32>() {
        Ok(pid) => format!(" (pid {pid})"),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_naming_the_first_and_gets_it_once_released() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = SessionLock::acquire(dir.path(), "ses_a", Duration::ZERO).expect("first");
        let started = Instant::now();
        let refused = SessionLock::acquire(dir.path(), "ses_a", Duration::from_millis(200))
            .expect_err("the session is held");
        assert!(started.elapsed() >= Duration::from_millis(200), "it waited");
        let message = refused.to_string();
        assert!(
            message.contains("ses_a is in use by another cairn"),
            "{message}"
        );
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        // Another session is not affected.
        SessionLock::acquire(dir.path(), "ses_b", Duration::ZERO).expect("other session");
        drop(first);
        // Not `ZERO`: a child another test forks holds a copy of the
        // descriptor, and so the lock, until it execs.
        SessionLock::acquire(dir.path(), "ses_a", Duration::from_secs(5)).expect("released");
    }

    #[test]
    fn a_waiting_opener_gets_the_lock_when_it_is_released_in_time() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = SessionLock::acquire(dir.path(), "ses_a", Duration::ZERO).expect("first");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(first);
        });
        SessionLock::acquire(dir.path(), "ses_a", Duration::from_secs(5)).expect("waited");
        release.join().expect("join");
    }

    #[test]
    fn typed_ids_stay_one_file_inside_locks() {
        let dir = Path::new("/data");
        assert_eq!(
            lock_path(dir, "../../etc/passwd"),
            Path::new("/data/locks/______etc_passwd.lock")
        );
        assert_eq!(
            lock_path(dir, "ses_01J-x"),
            Path::new("/data/locks/ses_01J-x.lock")
        );
    }
}
