//! The guard against compact-and-retry loops (OpenCode issues #31111, #27924):
//! when the context is still over the trigger after summarizing (fixed costs
//! such as instruction files and tool schemas fill the window), two
//! compactions in a row freed almost nothing, or the turn does not get past
//! its compactions (the model redoes what the summary took away: re-reads
//! the same files, issue #30), compacting again cannot help.

use std::collections::HashSet;

use crate::shared::thousands;

/// A compaction that frees less than this fraction of the context made no progress.
pub const MIN_FREED_FRACTION: f64 = 0.10;
/// Compactions in a row without progress before the guard stops.
const MAX_STALLED: u32 = 2;
/// Compactions in a row, within one turn, after which the model made only
/// calls it had made before in the turn. Two: one repeat can be a model
/// checking what the summary lost; a second is the read-compact loop.
const MAX_UNPRODUCTIVE: u32 = 2;
/// Repeated calls named in the guard's message.
const NAMED_CALLS: usize = 3;

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
    /// Tool calls of the current turn (tool and input), as compactions saw them.
    turn_calls: HashSet<String>,
    unproductive: u32,
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

    /// Records an automatic compaction's view of the turn: `calls` are the
    /// tool calls (tool and input) in the history it summarized or kept.
    /// A compaction after which the model made no call it had not made
    /// before in this turn let the turn make no progress; after
    /// `MAX_UNPRODUCTIVE` of them in a row the turn stops.
    pub fn record_turn(&mut self, calls: &[String]) -> GuardVerdict {
        // No calls at all: not the read-compact loop, and nothing to judge
        // progress by (the other checks watch the sizes).
        if calls.is_empty() {
            return GuardVerdict::Continue;
        }
        let new = calls
            .iter()
            .filter(|c| !self.turn_calls.contains(*c))
            .count();
        self.turn_calls.extend(calls.iter().cloned());
        if new > 0 {
            self.unproductive = 0;
            return GuardVerdict::Continue;
        }
        self.unproductive += 1;
        if self.unproductive < MAX_UNPRODUCTIVE {
            return GuardVerdict::Continue;
        }
        let mut named: Vec<&str> = Vec::new();
        for call in calls.iter().rev() {
            if named.len() < NAMED_CALLS && !named.contains(&call.as_str()) {
                named.push(call);
            }
        }
        GuardVerdict::Stop {
            message: format!(
                "compaction cannot help: after each of the last {MAX_UNPRODUCTIVE} compactions the model only repeated tool calls it had already made in this turn ({}), so the turn was going in circles. What it needs at once does not fit the window: ask for a smaller step (a part of a file, with offset and limit), or switch to a model with a bigger context window.",
                named.join("; ")
            ),
        }
    }

    /// A turn that ended, or a new one: the counts start afresh.
    pub fn reset(&mut self) {
        self.stalled = 0;
        self.unproductive = 0;
        self.turn_calls.clear();
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

    #[test]
    fn a_turn_that_only_repeats_its_calls_after_compactions_stops() {
        let calls = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let mut guard = CompactionGuard::new();
        let first = calls(&["read a", "read b"]);
        assert_eq!(guard.record_turn(&first), GuardVerdict::Continue);
        assert_eq!(
            guard.record_turn(&calls(&["read b", "read a"])),
            GuardVerdict::Continue,
            "one repeat is allowed"
        );
        assert_eq!(
            guard.record_turn(&calls(&["read a", "edit a"])),
            GuardVerdict::Continue,
            "a new call is progress"
        );
        assert_eq!(guard.record_turn(&first), GuardVerdict::Continue);
        let GuardVerdict::Stop { message } = guard.record_turn(&first) else {
            panic!("two compactions in a row without a new call must stop");
        };
        assert!(message.contains("read b; read a"), "{message}");
        guard.reset();
        assert_eq!(guard.record_turn(&first), GuardVerdict::Continue);
    }
}
