//! The guard against compact-and-retry loops (OpenCode issues #31111, #27924):
//! when the context is still over the trigger after summarizing (fixed costs
//! such as instruction files and tool schemas fill the window), or two
//! compactions in a row freed almost nothing, compacting again cannot help.

use crate::shared::thousands;

/// A compaction that frees less than this fraction of the context made no progress.
pub const MIN_FREED_FRACTION: f64 = 0.10;
/// Compactions in a row without progress before the guard stops.
const MAX_STALLED: u32 = 2;

/// What the loop should do after a compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardVerdict {
    Continue,
    /// Do not compact again; show `message` to the user and stop the turn.
    Stop {
        message: String,
    },
}

/// Watches consecutive automatic compactions of one session.
#[derive(Debug, Clone, Default)]
pub struct CompactionGuard {
    stalled: u32,
}

impl CompactionGuard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a compaction: the next request's tokens `before` and `after`
    /// it, against the automatic trigger `compact_at` (`None` when automatic
    /// compaction is off).
    pub fn record(&mut self, before: u64, after: u64, compact_at: Option<u64>) -> GuardVerdict {
        if let Some(at) = compact_at
            && after >= at
        {
            return GuardVerdict::Stop {
                message: format!(
                    "compaction cannot help: the context is still {} tokens after summarizing, and automatic compaction fires at {}. {}",
                    thousands(after),
                    thousands(at),
                    ADVICE
                ),
            };
        }
        let freed = before.saturating_sub(after);
        if (freed as f64) < before as f64 * MIN_FREED_FRACTION {
            self.stalled += 1;
        } else {
            self.stalled = 0;
        }
        if self.stalled >= MAX_STALLED {
            return GuardVerdict::Stop {
                message: format!(
                    "compaction cannot help: the last {MAX_STALLED} compactions freed less than {}% each ({} -> {} tokens). {}",
                    (MIN_FREED_FRACTION * 100.0) as u32,
                    thousands(before),
                    thousands(after),
                    ADVICE
                ),
            };
        }
        GuardVerdict::Continue
    }

    /// A turn that ended normally resets the count.
    pub fn reset(&mut self) {
        self.stalled = 0;
    }
}

const ADVICE: &str = "Try /prune to clear old tool outputs, switch to a model with a bigger context window, start a new session, or shorten the instruction files (AGENTS.md, CLAUDE.md).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn still_over_the_trigger_stops_at_once_with_advice() {
        let mut guard = CompactionGuard::new();
        let verdict = guard.record(9_000, 7_800, Some(7_700));
        let GuardVerdict::Stop { message } = verdict else {
            panic!("expected stop, got {verdict:?}");
        };
        assert!(message.contains("7,800 tokens"), "{message}");
        assert!(message.contains("/prune") && message.contains("new session"));
    }

    #[test]
    fn two_compactions_without_progress_stop_and_progress_resets() {
        let mut guard = CompactionGuard::new();
        assert_eq!(
            guard.record(100_000, 95_000, Some(150_000)),
            GuardVerdict::Continue
        );
        assert_eq!(
            guard.record(100_000, 20_000, Some(150_000)),
            GuardVerdict::Continue
        );
        assert_eq!(
            guard.record(100_000, 95_000, Some(150_000)),
            GuardVerdict::Continue
        );
        assert!(matches!(
            guard.record(95_000, 94_000, None),
            GuardVerdict::Stop { .. }
        ));
        guard.reset();
        assert_eq!(guard.record(100_000, 91_000, None), GuardVerdict::Continue);
        assert_eq!(
            guard.record(100_000, 90_000, None),
            GuardVerdict::Continue,
            "exactly 10% is progress"
        );
    }
}
