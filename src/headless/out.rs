//! The stdout and stderr of `cairn run`: writes that wait for a slow reader
//! whatever mode the descriptor is in.
//!
//! A descriptor may be non-blocking (O_NONBLOCK set by whoever shares the
//! pipe or terminal: a parent process, a previous program on the tty). A
//! full pipe then makes `write` fail with EAGAIN, which std passes up: the
//! run stopped with "Resource temporarily unavailable" and a cut answer, and
//! a retry through std's line buffer could write a piece twice (issue #31).
//! [`Patient`] writes to its own duplicate of the descriptor with no buffer
//! of std's in between, and on EAGAIN waits until it is writable and writes
//! the same bytes again: none were taken.

use std::fs::File;
use std::io::{self, LineWriter, Write};
use std::os::fd::{AsFd, AsRawFd};

/// A descriptor written with `write(2)` that waits out EAGAIN.
pub struct Patient {
    file: File,
}

impl Patient {
    /// Writes to a duplicate of `fd` (same pipe, same mode).
    ///
    /// # Errors
    /// When the descriptor cannot be duplicated (too many open files).
    pub fn of(fd: impl AsFd) -> io::Result<Self> {
        Ok(Self {
            file: File::from(fd.as_fd().try_clone_to_owned()?),
        })
    }

    /// Blocks until the descriptor takes bytes again (or is closed, which
    /// the next write then reports).
    fn wait_writable(&self) -> io::Result<()> {
        let mut watched = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd for the duration of the call.
            if unsafe { libc::poll(&mut watched, 1, -1) } >= 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

impl Write for Patient {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write(bytes) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => self.wait_writable()?,
                written => return written,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// stdout for `cairn run`: line-buffered, as std's stdout is (a JSON line
/// is written in pieces, and a script following the events gets each line
/// when it is whole), over a [`Patient`] writer, so the buffer never sees
/// EAGAIN.
///
/// # Errors
/// As [`Patient::of`].
pub fn stdout() -> io::Result<LineWriter<Patient>> {
    Patient::of(io::stdout()).map(LineWriter::new)
}

/// stderr for `cairn run`: unbuffered, as stderr is.
///
/// # Errors
/// As [`Patient::of`].
pub fn stderr() -> io::Result<Patient> {
    Patient::of(io::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};

    /// A pipe whose write end is non-blocking.
    fn nonblocking_pipe() -> (File, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: pipe creates the two descriptors, owned once each below.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let flags = libc::fcntl(fds[1], libc::F_GETFL);
            assert_eq!(
                libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK),
                0
            );
            (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
        }
    }

    #[test]
    fn a_full_non_blocking_pipe_is_waited_for_and_nothing_is_lost() {
        let (mut reader, writer) = nonblocking_pipe();
        let mut out = LineWriter::new(Patient::of(&writer).expect("dup"));
        drop(writer);
        // Several times a pipe's buffer, every line different.
        let text: String = (0..100_000).map(|n| format!("line {n}\n")).collect();
        let expected = text.clone();
        let reading = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let mut got = String::new();
            reader.read_to_string(&mut got).map(|_| got)
        });
        out.write_all(text.as_bytes()).expect("written in full");
        out.flush().expect("flushed");
        drop(out);
        let got = reading.join().expect("reader").expect("read");
        assert!(
            got == expected,
            "{} bytes, expected {}",
            got.len(),
            expected.len()
        );
    }
}
