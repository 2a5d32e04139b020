//! Catching up after the bus dropped events for a run that fell behind.
//!
//! `cairn run` writes to stdout as it reads the bus, so a reader that pauses
//! (a pager, Ctrl+S, `| (sleep 2; cat)`) stalls it and the bus, which never
//! waits for a subscriber, drops the oldest events it holds (issue #31: a
//! long answer printed with a stretch missing and another repeated). Memory
//! stays bounded by the bus; what was dropped is read back from the store,
//! where every full part and message update is saved before it is published.
//!
//! Deltas are not saved, so after a lag the text of a part that already
//! existed is printed from its final update only ([`Printer::delta_floor`]).

use std::sync::Arc;

use crate::bus::Event;

use super::{Printer, Watch};

impl Watch<'_> {
    /// Reprints this run's messages and parts as the store holds them now:
    /// full updates are idempotent, so what was seen already adds nothing,
    /// and the parts whose events were dropped are printed in their place.
    pub(super) async fn catch_up(
        &mut self,
        stdout: &mut impl std::io::Write,
        stderr: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        // Minted now: every part made from here on has a larger id, and all
        // of its deltas are still to come.
        self.printer.delta_floor = Some(crate::id::part_id());
        let messages = match self.store.read_all(&self.handle.session_id).await {
            Ok(messages) => messages,
            Err(error) => {
                // The final updates still to come print what they hold.
                tracing::warn!(%error, "cannot read the session back after a lag");
                return Ok(());
            }
        };
        let of_this_run = messages
            .into_iter()
            .filter(|m| m.message.id.as_str() > self.run_start.as_str());
        for message in of_this_run {
            let updated = Event::MessageUpdated {
                message: Arc::new(message.message),
            };
            self.printer.print(&updated, stdout, stderr)?;
            for part in message.parts {
                let updated = Event::PartUpdated {
                    part: Arc::new(part),
                };
                self.printer.print(&updated, stdout, stderr)?;
            }
        }
        Ok(())
    }
}

impl Printer {
    /// Whether a delta of `part_id` may be printed: not when the part
    /// existed before a lag, whose dropped deltas would leave a hole.
    pub(super) fn prints_deltas_of(&self, part_id: &str) -> bool {
        self.delta_floor
            .as_deref()
            .is_none_or(|floor| part_id > floor)
    }
}
