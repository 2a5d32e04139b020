//! The message of `cairn run`: its words, stdin, or both, as `claude -p`
//! takes them.
//!
//! With no words (or the single word `-`) the prompt is stdin. With words
//! and a stdin that is not a terminal, what stdin holds is attached below
//! them in a `<stdin>` block (`git diff | cairn run "review this"`); an
//! empty stdin adds nothing. A terminal is never read: it would wait for
//! the user to type and press Ctrl+D. A pipe is read to its end, however
//! long that takes (`cargo test | cairn run "why?"`); when it stays silent a
//! while, stderr says the run is waiting for it.

use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How long a silent stdin is waited for before the run says it waits.
const STDIN_QUIET: Duration = Duration::from_secs(2);

/// The message of `cairn run` from its `words` and the process's stdin.
///
/// # Errors
/// [`MessageError::Missing`] when neither holds one; `Stdin` when stdin
/// cannot be read.
pub fn read_message(words: &[String]) -> Result<String, MessageError> {
    let stdin = std::io::stdin();
    let is_terminal = stdin.is_terminal();
    if !is_terminal && !has_news(&stdin, STDIN_QUIET) {
        let why = if words.is_empty() || words == ["-"] {
            "it is the message"
        } else {
            "it is attached below the message"
        };
        // Ignored when stderr is gone: the wait goes on regardless.
        let _ = writeln!(
            std::io::stderr(),
            "cairn run: waiting for stdin to end ({why}); run it with `< /dev/null` to send the message alone"
        );
    }
    message_from(words, stdin.lock(), is_terminal)
}

/// Whether `stdin` has bytes or its end to read within `wait`.
fn has_news(stdin: &std::io::Stdin, wait: Duration) -> bool {
    let mut watched = libc::pollfd {
        fd: stdin.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd for the duration of the call. An error (or
    // EINTR) counts as news: the read that follows reports or waits.
    unsafe { libc::poll(&mut watched, 1, millis) != 0 }
}

/// Why no message could be made; a usage error (exit 2).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MessageError {
    #[error(
        "no message: give it as arguments (`cairn run \"...\"`) or pipe it (`echo ... | cairn run`)"
    )]
    Missing,
    #[error("cannot read the message from stdin: {0}")]
    Stdin(String),
}

/// Whether `cairn run WORDS` takes its whole message from stdin: no words,
/// or the single word `-`.
pub fn is_piped(words: &[String]) -> bool {
    words.is_empty() || words == ["-"]
}

/// The message from `words` and `stdin`; `stdin` is read only when it is
/// not a terminal (`stdin_is_terminal` false).
pub fn message_from(
    words: &[String],
    stdin: impl Read,
    stdin_is_terminal: bool,
) -> Result<String, MessageError> {
    let piped = if stdin_is_terminal {
        String::new()
    } else {
        read_all(stdin)?
    };
    let words_given = !is_piped(words);
    if !words_given {
        let prompt = piped.trim_end();
        return match prompt.trim_start().is_empty() {
            true => Err(MessageError::Missing),
            false => Ok(prompt.to_string()),
        };
    }
    let message = words.join(" ");
    if piped.trim().is_empty() {
        return Ok(message);
    }
    let block = piped.strip_suffix('\n').unwrap_or(&piped);
    Ok(format!("{message}\n\n<stdin>\n{block}\n</stdin>"))
}

fn read_all(mut stdin: impl Read) -> Result<String, MessageError> {
    let mut bytes = Vec::new();
    stdin
        .read_to_end(&mut bytes)
        .map_err(|error| MessageError::Stdin(error.to_string()))?;
    // Not UTF-8 (a binary file piped by mistake): sent as the model would
    // see it shown, not refused.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn stdin_alone_or_after_a_dash_is_the_prompt() {
        assert_eq!(message_from(&[], &b"hi\n"[..], false), Ok("hi".into()));
        assert_eq!(
            message_from(&words(&["-"]), &b"hi\n"[..], false),
            Ok("hi".into())
        );
    }

    #[test]
    fn words_and_stdin_are_both_sent() {
        let message = message_from(&words(&["review", "this"]), &b"a\nb\n"[..], false);
        assert_eq!(message, Ok("review this\n\n<stdin>\na\nb\n</stdin>".into()));
    }

    #[test]
    fn a_terminal_or_an_empty_stdin_adds_nothing() {
        assert_eq!(
            message_from(&words(&["hi"]), &b"unread"[..], true),
            Ok("hi".into())
        );
        assert_eq!(
            message_from(&words(&["hi"]), &b""[..], false),
            Ok("hi".into())
        );
        assert_eq!(
            message_from(&[], &b" \n"[..], false),
            Err(MessageError::Missing)
        );
        assert_eq!(
            message_from(&[], &b"typed"[..], true),
            Err(MessageError::Missing)
        );
    }
}
