//! The output of a running `bash` command, collected with bounded memory: a
//! rolling tail for the model, a spill file capped at [`SPILL_MAX_BYTES`],
//! and live text for the UI sent at a bounded rate. Never runs or kills a
//! process; `bash` feeds it the bytes the pipe gave.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use super::truncate::{self, Direction};
use super::{OutputLimits, ToolProgress, ToolScope};

/// Live output is sent at most this often: a command printing gigabytes
/// must not queue them all for the UI faster than it can take them.
const LIVE_INTERVAL: Duration = Duration::from_millis(50);
/// Live output waiting for its turn is cut to its last this many bytes (the
/// UI shows a tail; the model gets the real output at the end anyway).
const LIVE_PENDING_MAX: usize = 32 * 1024;
/// The spill file stops growing here: a runaway command (`yes`) must not
/// fill the disk before its timeout. The model still gets the real tail.
pub const SPILL_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Collects a command's output with bounded memory: a rolling window of the
/// last `2 * max_bytes` bytes, a spill file holding the output (up to
/// [`SPILL_MAX_BYTES`]) once it passes the caps, and the live text not yet
/// sent to the UI.
pub(super) struct OutputSink<'a> {
    ctx: &'a ToolScope,
    window: Vec<u8>,
    total_bytes: u64,
    total_lines: usize,
    spill: Option<Spill>,
    live: LiveText,
}

/// The spill file and how much of the output it holds.
struct Spill {
    path: PathBuf,
    file: std::fs::File,
    /// Input bytes taken (before redaction).
    written: u64,
    /// Keeps secrets out of the file, even one split across two chunks.
    redactor: crate::secret::StreamRedactor,
}

/// Output waiting to be streamed live, sent at most every [`LIVE_INTERVAL`].
struct LiveText {
    pending: Vec<u8>,
    /// Bytes dropped from `pending` since the last send (the UI was behind).
    skipped: usize,
    last_sent: Option<tokio::time::Instant>,
}

impl<'a> OutputSink<'a> {
    pub(super) fn new(ctx: &'a ToolScope) -> Self {
        Self {
            ctx,
            window: Vec::new(),
            total_bytes: 0,
            total_lines: 0,
            spill: None,
            live: LiveText {
                pending: Vec::new(),
                skipped: 0,
                last_sent: None,
            },
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.queue_live(chunk);
        self.total_bytes += chunk.len() as u64;
        self.total_lines += chunk.iter().filter(|b| **b == b'\n').count();
        let limits = self.ctx.limits;
        if self.spill.is_none()
            && (self.total_bytes > limits.max_bytes as u64 || self.total_lines > limits.max_lines)
        {
            // The window still holds everything: it only starts dropping past 2x the cap.
            let (path, file) = truncate::create_spill_file(&self.ctx.tool_output_dir)?;
            let mut spill = Spill {
                path,
                file,
                written: 0,
                redactor: crate::secret::StreamRedactor::new(crate::secret::registered()),
            };
            spill.write(&self.window)?;
            self.spill = Some(spill);
        }
        if let Some(spill) = &mut self.spill {
            spill.write(chunk)?;
        }
        self.window.extend_from_slice(chunk);
        let keep = 2 * limits.max_bytes;
        // Drop in big steps: trimming on every chunk would move the whole window each time.
        if self.window.len() > 2 * keep {
            self.window.drain(..self.window.len() - keep);
        }
        Ok(())
    }

    fn queue_live(&mut self, chunk: &[u8]) {
        if self.ctx.progress.is_none() {
            return;
        }
        let live = &mut self.live;
        live.pending.extend_from_slice(chunk);
        if live.pending.len() > LIVE_PENDING_MAX {
            let cut = live.pending.len() - LIVE_PENDING_MAX;
            live.pending.drain(..cut);
            live.skipped += cut;
        }
        if live
            .last_sent
            .is_none_or(|at| at.elapsed() >= LIVE_INTERVAL)
        {
            self.send_live();
        }
    }

    /// When the pending live text should be sent, if there is any.
    pub(super) fn live_due(&self) -> Option<tokio::time::Instant> {
        if self.live.pending.is_empty() {
            return None;
        }
        Some(
            self.live
                .last_sent
                .map_or_else(tokio::time::Instant::now, |at| at + LIVE_INTERVAL),
        )
    }

    /// Sends the pending live text, except an incomplete UTF-8 character at its end.
    pub(super) fn send_live(&mut self) {
        let live = &mut self.live;
        let valid = match std::str::from_utf8(&live.pending) {
            Ok(_) => live.pending.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => live.pending.len(),
        };
        let mut text = String::new();
        if live.skipped > 0 {
            text.push_str(&format!(
                "\n... ({} bytes not shown live) ...\n",
                live.skipped
            ));
            live.skipped = 0;
        }
        text.push_str(&String::from_utf8_lossy(&live.pending[..valid]));
        live.pending.drain(..valid);
        live.last_sent = Some(tokio::time::Instant::now());
        if !text.is_empty() {
            self.ctx.report(ToolProgress::Output(text));
        }
    }

    /// The text for the model, and the spill file if the output overflowed.
    pub(super) fn finish(
        mut self,
        limits: &OutputLimits,
    ) -> std::io::Result<(String, Option<PathBuf>)> {
        let keep = 2 * limits.max_bytes;
        if self.window.len() > keep {
            self.window.drain(..self.window.len() - keep);
        }
        let text = String::from_utf8_lossy(&self.window).into_owned();
        let Some(mut spill) = self.spill else {
            let text = if text.is_empty() {
                "(no output)".to_string()
            } else {
                text
            };
            return Ok((text, None));
        };
        let rest = std::mem::take(&mut spill.redactor).finish();
        spill.file.write_all(&rest)?;
        spill.file.flush()?;
        let tail = truncate::preview(&text, limits, Direction::Tail).map_or(text, |cut| cut.text);
        let saved = if spill.written < self.total_bytes {
            format!(
                "The first {} of the output ({} in all) saved to: {}",
                human_bytes(spill.written),
                human_bytes(self.total_bytes),
                spill.path.display()
            )
        } else {
            format!("Full output saved to: {}", spill.path.display())
        };
        Ok((
            format!("...output truncated...\n\n{saved}\n\n{tail}"),
            Some(spill.path),
        ))
    }
}

impl Spill {
    /// Appends what still fits under [`SPILL_MAX_BYTES`].
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let room = SPILL_MAX_BYTES.saturating_sub(self.written);
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if take > 0 {
            let clean = self.redactor.push(&bytes[..take]);
            self.file.write_all(&clean)?;
            self.written += take as u64;
        }
        Ok(())
    }
}

fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= 1024 * MIB {
        format!("{:.1} GiB", bytes as f64 / (1024 * MIB) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}
