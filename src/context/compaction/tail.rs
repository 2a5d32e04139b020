//! Tail selection (spec 7.3 step 4): the newest turns kept verbatim after the
//! summary, within a token budget; everything before them is summarized.

use crate::context::view::part_tokens;
use crate::message::MessageWithParts;

/// Turns kept verbatim by default (`compaction.tail_turns`).
pub const DEFAULT_TAIL_TURNS: usize = 2;
/// Bounds of the default verbatim-tail budget, a quarter of the usable window.
pub const MIN_PRESERVE_RECENT_TOKENS: u64 = 2_000;
pub const MAX_PRESERVE_RECENT_TOKENS: u64 = 8_000;

/// Share of the usable window the verbatim tail may take.
pub const PRESERVE_RECENT_FRACTION: f64 = 0.25;

/// `preserve_recent_tokens ?? min(floor(usable * 0.25), 8_000)`; 2,000 when
/// the window is unknown. Below 8k usable the quarter is below the seed's
/// 2,000 floor, and the floor is dropped: 2,000 tokens of tail plus a
/// summary and the fixed prompt would not fit a 4k window.
pub fn recent_budget(preserve_recent_tokens: Option<u64>, usable: u64) -> u64 {
    preserve_recent_tokens.unwrap_or_else(|| match usable {
        0 => MIN_PRESERVE_RECENT_TOKENS,
        usable => {
            crate::context::scaled(MAX_PRESERVE_RECENT_TOKENS, PRESERVE_RECENT_FRACTION, usable)
        }
    })
}

/// Where each turn starts: a user message without a compaction part.
pub fn turn_starts(history: &[MessageWithParts]) -> Vec<usize> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.message.is_user() && m.compaction().is_none())
        .map(|(i, _)| i)
        .collect()
}

/// The tokens of some messages, from stored part counts or estimates.
pub fn messages_tokens(messages: &[MessageWithParts]) -> u64 {
    messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .map(|p| part_tokens(p).0)
        .sum()
}

/// The split between what is summarized and what is kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSelection {
    /// `history[..head_len]` is summarized.
    pub head_len: usize,
    /// First message kept verbatim; `None` when everything is summarized.
    pub tail_start_id: Option<String>,
}

/// Keeps up to `tail_turns` newest turns verbatim: whole turns from the newest
/// while they fit `budget`; the first that does not fit is split at the
/// earliest message (after its user message) whose suffix fits. No tail when
/// nothing fits or the tail would be the whole history. `size` measures a run
/// of messages (normally [`messages_tokens`]).
pub fn select_tail(
    history: &[MessageWithParts],
    tail_turns: usize,
    budget: u64,
    size: impl Fn(&[MessageWithParts]) -> u64,
) -> TailSelection {
    let everything = TailSelection {
        head_len: history.len(),
        tail_start_id: None,
    };
    if tail_turns == 0 {
        return everything;
    }
    let starts = turn_starts(history);
    let turns: Vec<(usize, usize)> = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| (start, starts.get(i + 1).copied().unwrap_or(history.len())))
        .collect();
    let mut total = 0u64;
    let mut keep_start = None;
    for &(start, end) in turns.iter().rev().take(tail_turns) {
        let turn_size = size(&history[start..end]);
        if total + turn_size <= budget {
            total += turn_size;
            keep_start = Some(start);
            continue;
        }
        let remaining = budget - total;
        if let Some(split) = (start + 1..end).find(|&i| size(&history[i..end]) <= remaining) {
            keep_start = Some(split);
        }
        break;
    }
    match keep_start {
        Some(start) if start > 0 => TailSelection {
            head_len: start,
            tail_start_id: Some(history[start].message.id.clone()),
        },
        _ => everything,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::HistoryBuilder;

    /// One token per message, so sizes are easy to reason about.
    fn count(messages: &[MessageWithParts]) -> u64 {
        messages.len() as u64
    }

    fn three_turns() -> Vec<MessageWithParts> {
        let mut h = HistoryBuilder::new();
        h.user("one").assistant().finish(1); // 0, 1
        h.user("two").assistant().finish(1).assistant().finish(1); // 2, 3, 4
        h.user("three").assistant().finish(1); // 5, 6
        h.build()
    }

    #[test]
    fn budget_defaults_to_a_clamped_quarter_of_the_window() {
        assert_eq!(recent_budget(None, 168_000), 8_000);
        assert_eq!(recent_budget(None, 20_000), 5_000);
        assert_eq!(recent_budget(None, 4_000), 1_000);
        assert_eq!(recent_budget(None, 0), 2_000);
        assert_eq!(recent_budget(Some(500), 168_000), 500);
    }

    #[test]
    fn keeps_whole_turns_that_fit() {
        let history = three_turns();
        let selection = select_tail(&history, 2, 5, count);
        assert_eq!(selection.head_len, 2);
        assert_eq!(
            selection.tail_start_id.as_deref(),
            Some(history[2].message.id.as_str())
        );
        let only_last = select_tail(&history, 1, 100, count);
        assert_eq!(only_last.head_len, 5);
    }

    #[test]
    fn splits_the_first_turn_that_does_not_fit_at_the_earliest_fitting_suffix() {
        let history = three_turns();
        // Last turn (2) fits, leaving 2 for "two" (3 messages): suffix [3, 4] fits.
        let selection = select_tail(&history, 2, 4, count);
        assert_eq!(selection.head_len, 3);
        // Leaving 1: suffix [4] fits.
        assert_eq!(select_tail(&history, 2, 3, count).head_len, 4);
    }

    #[test]
    fn no_tail_when_nothing_fits_or_tail_is_everything() {
        let history = three_turns();
        assert_eq!(select_tail(&history, 2, 0, count).tail_start_id, None);
        assert_eq!(select_tail(&history, 5, 1_000, count).tail_start_id, None);
        assert_eq!(
            select_tail(&history, 0, 1_000, count).head_len,
            history.len()
        );
    }
}
