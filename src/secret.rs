//! Secrets cairn holds (provider keys, custom header values, passwords in a
//! `base_url`) and their removal from text the model, the store or the user
//! could see: tool outputs, saved tool-output files, error messages.
//!
//! Why redaction and not only a scrubbed environment: commands run without
//! the keys in their environment, but `/proc/$PPID/environ` (cairn's own)
//! stays readable by them, so the key can still be printed. Every tool
//! output is therefore redacted before it is stored or sent. Redaction
//! catches the key as written; an encoded form (`base64`, `xxd`, `rev`) or a
//! piece of it gets through: that is the limit of this defence.
//!
//! [`Secrets`] is a set of values; [`register`] adds to the process-wide set
//! that [`redact`] and [`StreamRedactor`] use (global, like the hidden
//! variables of `tool::bash`: the set is the process's, not a session's).

use std::borrow::Cow;
use std::sync::RwLock;

use memchr::memmem;

/// The shortest value treated as a secret. A key like `x` or `none` (common
/// for local servers) is no secret, and redacting it would mangle every word
/// holding that letter ("conte[redacted]t window").
pub const MIN_SECRET_LEN: usize = 8;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// A set of secret values, each at least [`MIN_SECRET_LEN`] bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// Adds `value` when it is long enough to be a secret (surrounding
    /// whitespace ignored); returns whether it was added.
    pub fn add(&mut self, value: &str) -> bool {
        let value = value.trim();
        if value.len() < MIN_SECRET_LEN {
            return false;
        }
        if !self.values.iter().any(|known| known == value) {
            self.values.push(value.to_string());
            // Longest first: a secret containing another is replaced whole.
            self.values
                .sort_by_key(|known| std::cmp::Reverse(known.len()));
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every whole occurrence of every secret replaced by
    /// [`REDACTED`]. Occurrences glued to other text are replaced too
    /// (`tr -d '\0' < /proc/$PPID/environ` glues the key to the next name);
    /// pieces of a secret are not.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_bytes(text.as_bytes(), text.len()) {
            (Cow::Borrowed(_), _) => Cow::Borrowed(text),
            (Cow::Owned(bytes), _) => Cow::Owned(
                // Replacing whole UTF-8 strings by ASCII keeps the text valid UTF-8.
                String::from_utf8(bytes).expect("whole UTF-8 secrets replaced by ASCII"),
            ),
        }
    }

    /// Redacts the occurrences in `bytes` that start before `limit`; returns
    /// the redacted bytes up to where it stopped and how many input bytes
    /// that consumed (at least `limit`, more when a secret spans it).
    fn redact_bytes<'a>(&self, bytes: &'a [u8], limit: usize) -> (Cow<'a, [u8]>, usize) {
        let mut out: Option<Vec<u8>> = None;
        let mut at = 0;
        while let Some((start, len)) = self.next_match(bytes, at).filter(|(s, _)| *s < limit) {
            let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = start + len;
        }
        let end = limit.max(at);
        match out {
            None => (Cow::Borrowed(&bytes[..end]), end),
            Some(mut out) => {
                out.extend_from_slice(&bytes[at..end]);
                (Cow::Owned(out), end)
            }
        }
    }

    /// The leftmost occurrence of any secret at or after `from` (the longest
    /// secret on a tie): its start and length.
    fn next_match(&self, bytes: &[u8], from: usize) -> Option<(usize, usize)> {
        self.values
            .iter()
            .filter_map(|secret| {
                memmem::find(&bytes[from..], secret.as_bytes()).map(|i| (from + i, secret.len()))
            })
            .min_by_key(|(start, len)| (*start, std::cmp::Reverse(*len)))
    }

    fn longest(&self) -> usize {
        self.values.first().map_or(0, String::len)
    }
}

/// Redacts a stream of bytes written in chunks (a command's output saved to
/// a file): a secret split across two chunks is still caught, because the
/// last `longest - 1` bytes are held back until the next chunk or `finish`.
#[derive(Debug, Default)]
pub struct StreamRedactor {
    secrets: Secrets,
    held: Vec<u8>,
}

impl StreamRedactor {
    pub fn new(secrets: Secrets) -> Self {
        Self {
            secrets,
            held: Vec::new(),
        }
    }

    /// The bytes of `chunk` (and of earlier chunks held back) that are now
    /// safe to write.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return chunk.to_vec();
        }
        self.held.extend_from_slice(chunk);
        let keep = self.secrets.longest() - 1;
        let limit = self.held.len().saturating_sub(keep);
        let (out, consumed) = self.secrets.redact_bytes(&self.held, limit);
        let out = out.into_owned();
        self.held.drain(..consumed);
        out
    }

    /// The rest, redacted.
    pub fn finish(mut self) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        let (out, _) = self.secrets.redact_bytes(&held, held.len());
        out.into_owned()
    }
}

static REGISTERED: RwLock<Secrets> = RwLock::new(Secrets { values: Vec::new() });

/// Adds `values` to the process-wide secrets (those long enough to be secrets).
pub fn register<I: IntoIterator<Item = String>>(values: I) {
    let mut registered = REGISTERED
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for value in values {
        registered.add(&value);
    }
}

/// A copy of the process-wide secrets.
pub fn registered() -> Secrets {
    REGISTERED
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// `text` without any registered secret.
pub fn redact(text: &str) -> Cow<'_, str> {
    let registered = REGISTERED
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match registered.redact(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(text) => Cow::Owned(text),
    }
}

/// Every string inside `value` (a tool's metadata), redacted in place.
pub fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            if let Cow::Owned(clean) = redact(text) {
                *text = clean;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(redact_json),
        _ => {}
    }
}

/// Also used by `config` to keep a password out of the files it writes:
/// defined in the bottom layer, with no secrets of its own.
pub use crate::shared::url_password;

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(values: &[&str]) -> Secrets {
        let mut set = Secrets::default();
        for value in values {
            set.add(value);
        }
        set
    }

    #[test]
    fn a_short_key_is_not_a_secret_and_words_stay_whole() {
        let set = secrets(&["x", "none", "sk-1234"]);
        assert!(set.is_empty());
        assert_eq!(
            set.redact("context window exceeded"),
            "context window exceeded"
        );
    }

    #[test]
    fn every_whole_occurrence_is_replaced_glued_or_not() {
        let set = secrets(&["sk-secret-123456"]);
        assert_eq!(
            set.redact("KEY=sk-secret-123456\0PATH=/bin sk-secret-123456OTHER=1"),
            "KEY=[redacted]\0PATH=/bin [redacted]OTHER=1"
        );
        // A piece of the key is not the key.
        assert_eq!(set.redact("sk-secret-12345"), "sk-secret-12345");
    }

    #[test]
    fn the_longer_of_overlapping_secrets_wins() {
        let set = secrets(&["abcdefgh", "abcdefgh-and-more"]);
        assert_eq!(set.redact("[abcdefgh-and-more]"), "[[redacted]]");
        assert_eq!(set.redact("[abcdefgh]"), "[[redacted]]");
    }

    #[test]
    fn a_secret_split_across_chunks_is_caught_at_every_split() {
        let set = secrets(&["sk-secret-123456", "hunter2-password"]);
        let text = "a sk-secret-123456 b hunter2-password c sk-secret-123456";
        let expected = set.redact(text).into_owned();
        for size in 1..text.len() {
            let mut stream = StreamRedactor::new(set.clone());
            let mut out = Vec::new();
            for chunk in text.as_bytes().chunks(size) {
                out.extend(stream.push(chunk));
            }
            out.extend(stream.finish());
            assert_eq!(
                String::from_utf8(out).expect("utf8"),
                expected,
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn url_passwords_are_found() {
        assert_eq!(
            url_password("https://me:pa55word@host/v1"),
            Some("pa55word")
        );
        assert_eq!(url_password("https://me@host/v1"), None);
        assert_eq!(url_password("http://host:8080/v1"), None);
        assert_eq!(url_password("http://host/a@b"), None);
    }
}
