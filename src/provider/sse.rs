//! Incremental Server-Sent Events decoder: bytes in, `(event, data)` records out.
//!
//! Owns line splitting (`\n`, `\r\n`, `\r`, even when a chunk ends between
//! `\r` and `\n`), multi-line `data:`, comments and `event:` names. Bytes are
//! buffered until a line is complete, so a chunk may end inside a UTF-8
//! character. It never interprets JSON; the wire decoders do.
//!
//! What each provider sends:
//! - Anthropic Messages: `event: <name>` + one `data:` line per event, names
//!   `message_start`, `content_block_start|delta|stop`, `message_delta`,
//!   `message_stop`, `ping`, `error`. The name is repeated in the JSON `type`.
//! - OpenAI Chat Completions (and llama-server, vLLM, Ollama, OpenRouter): no
//!   `event:` lines, one `data: {chunk}` per event, then `data: [DONE]`.
//!   OpenRouter sends `: OPENROUTER PROCESSING` comments while waiting.
//!
//! Ignored: comments (lines starting with `:`), `id:` and `retry:` fields (we
//! never reconnect a model stream: a resumed generation is a new request), and
//! unknown fields.

use thiserror::Error;

/// One line or one event longer than this is treated as a broken stream: no
/// model sends a single 16 MiB chunk, and buffering without bound would let a
/// misbehaving server exhaust memory.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event. `event` is empty when the server sent no `event:` line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SseError {
    #[error("server-sent event larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("server-sent event is not valid UTF-8 (after {valid_up_to} bytes of a line)")]
    InvalidUtf8 { valid_up_to: usize },
}

/// Decoder state kept between chunks.
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of the current, still incomplete line.
    partial_line: Vec<u8>,
    /// The previous chunk ended with `\r`: a leading `\n` is the same line break.
    skip_leading_lf: bool,
    event: String,
    data: String,
    has_data: bool,
    limit: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder with a different size cap (tests use a small one).
    pub fn with_limit(limit: usize) -> Self {
        Self {
            partial_line: Vec::new(),
            skip_leading_lf: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            limit,
        }
    }

    /// Feeds one chunk of bytes, appending every event it completes to `out`.
    ///
    /// # Errors
    /// A line or event over the cap, or a line that is not UTF-8. The decoder
    /// should not be used after an error.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.skip_leading_lf {
            self.skip_leading_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        loop {
            // A blank line (the end of every event) needs no search.
            let end = if bytes.first() == Some(&b'\n') {
                0
            } else {
                match memchr::memchr2(b'\n', b'\r', bytes) {
                    Some(end) => end,
                    None => break,
                }
            };
            let line_tail = &bytes[..end];
            let after_break = match bytes[end] {
                b'\r' if end + 1 == bytes.len() => {
                    self.skip_leading_lf = true;
                    end + 1
                }
                b'\r' if bytes[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            if self.partial_line.is_empty() {
                self.process_line(line_tail, out)?;
            } else {
                self.check_size(self.partial_line.len() + line_tail.len())?;
                let mut line = std::mem::take(&mut self.partial_line);
                line.extend_from_slice(line_tail);
                self.process_line(&line, out)?;
                line.clear();
                self.partial_line = line;
            }
            bytes = &bytes[after_break..];
        }
        if !bytes.is_empty() {
            self.check_size(self.partial_line.len() + bytes.len())?;
            self.partial_line.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// Ends the stream: an event still missing its blank line is dispatched,
    /// as browsers do not but servers that close right after the last `data:`
    /// line (llama-server's error line) expect.
    ///
    /// # Errors
    /// The trailing partial line is not UTF-8.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.partial_line.is_empty() {
            let line = std::mem::take(&mut self.partial_line);
            self.process_line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    /// The bytes so far end inside an event (a line or a blank line is
    /// missing): a body closing now was cut, unless the event is whole anyway.
    pub fn is_mid_event(&self) -> bool {
        !self.partial_line.is_empty() || self.has_data
    }

    fn check_size(&self, len: usize) -> Result<(), SseError> {
        if len > self.limit {
            Err(SseError::TooLarge { limit: self.limit })
        } else {
            Ok(())
        }
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|error| SseError::InvalidUtf8 {
            valid_up_to: error.valid_up_to(),
        })?;
        // `data:` lines are nearly all lines: they skip the search for the colon.
        let (field, value) = match line.strip_prefix("data:") {
            Some(value) => ("data", value.strip_prefix(' ').unwrap_or(value)),
            None => match line.find(':') {
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
                }
                None => (line, ""),
            },
        };
        match field {
            "data" => {
                self.check_size(self.data.len() + value.len() + 1)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        }
        self.event.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            decoder.feed(chunk, &mut out).expect("valid stream");
        }
        decoder.finish(&mut out).expect("valid stream");
        out
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            event: name.into(),
            data: data.into(),
        }
    }

    #[test]
    fn every_split_point_and_line_ending_gives_the_same_events() {
        let text = "event: a\ndata: héllo 世界\n\n: comment\ndata: x\ndata:  y\n\nid: 7\nretry: 10\n\ndata: [DONE]\n\n";
        let expected = vec![
            event("a", "héllo 世界"),
            event("", "x\n y"),
            event("", "[DONE]"),
        ];
        for ending in ["\n", "\r\n", "\r"] {
            let input = text.replace('\n', ending);
            for piece in 1..=input.len() {
                assert_eq!(
                    decode_in_pieces(input.as_bytes(), piece),
                    expected,
                    "ending {ending:?}, pieces of {piece}"
                );
            }
        }
    }

    #[test]
    fn field_without_colon_and_without_space_are_read() {
        let out = decode_in_pieces(b"data\ndata:x\n\n", 100);
        assert_eq!(out, vec![event("", "\nx")]);
    }

    #[test]
    fn finish_dispatches_an_unterminated_last_event() {
        let out = decode_in_pieces(b"data: {\"error\":1}\n", 4);
        assert_eq!(out, vec![event("", "{\"error\":1}")]);
        let out = decode_in_pieces(b"data: tail-without-newline", 4);
        assert_eq!(out, vec![event("", "tail-without-newline")]);
    }

    #[test]
    fn oversized_line_or_event_is_an_error() {
        let mut decoder = SseDecoder::with_limit(16);
        let mut out = Vec::new();
        let error = decoder.feed(&[b'a'; 17], &mut out).unwrap_err();
        assert_eq!(error, SseError::TooLarge { limit: 16 });

        let mut decoder = SseDecoder::with_limit(16);
        decoder.feed(b"data: 0123456789\n", &mut out).unwrap();
        let error = decoder.feed(b"data: 0123456789\n", &mut out).unwrap_err();
        assert_eq!(error, SseError::TooLarge { limit: 16 });
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut decoder = SseDecoder::new();
        let error = decoder
            .feed(b"data: \xff\xfe\n\n", &mut Vec::new())
            .unwrap_err();
        assert_eq!(error, SseError::InvalidUtf8 { valid_up_to: 6 });
    }
}
