//! Prune: clear old tool outputs from the model's view (seed 000 layer 2, spec 7.2).
//!
//! `plan_prune` decides, `apply` marks `time.compacted` on the chosen parts and
//! returns them for the caller to persist. The output stays in the store (the
//! TUI still shows it); the model sees `[Old tool result content cleared]`.
//! Pure: never touches the store.

use crate::clock::Millis;
use crate::message::{MessageWithParts, Part, PartKind, ToolState};
use crate::shared::thousands;

/// Prune acts only when it would free more than this many tokens (large
/// windows; [`PRUNE_MINIMUM_FRACTION`] of the window below).
pub const PRUNE_MINIMUM: u64 = 20_000;
/// The newest tool output, up to this many tokens, is never pruned (large
/// windows; [`PRUNE_PROTECT_FRACTION`] of the window below).
pub const PRUNE_PROTECT: u64 = 40_000;
/// The seed's constants are 20% and 10% of the 200k window they were tuned
/// for; below it they would hardly let prune act (a 60k window cannot hold
/// 40k of protected output plus 20k to free), so they scale with the window.
pub const PRUNE_PROTECT_FRACTION: f64 = 0.20;
pub const PRUNE_MINIMUM_FRACTION: f64 = 0.10;

/// Prune's two thresholds for a context window (`0`: unknown, the seed's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneLimits {
    pub protect: u64,
    pub minimum: u64,
}

impl PruneLimits {
    pub fn for_window(context: u64) -> Self {
        Self {
            protect: crate::context::scaled(PRUNE_PROTECT, PRUNE_PROTECT_FRACTION, context),
            minimum: crate::context::scaled(PRUNE_MINIMUM, PRUNE_MINIMUM_FRACTION, context),
        }
    }
}
/// Tools whose output is never pruned: a loaded skill is instructions.
pub const PRUNE_PROTECTED_TOOLS: &[&str] = &["skill"];
/// The newest user turns whose tool outputs are never pruned.
const PROTECTED_TURNS: usize = 2;

/// What a prune would do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrunePlan {
    /// Tool parts to clear, newest first.
    pub part_ids: Vec<String>,
    pub freed_tokens: u64,
    /// How many outputs would be cleared.
    pub outputs: usize,
    /// Why nothing is pruned, for the user; `None` when the plan acts.
    pub reason_if_none: Option<String>,
}

impl PrunePlan {
    pub fn acts(&self) -> bool {
        !self.part_ids.is_empty()
    }
}

/// Chooses the tool outputs to clear: newest to oldest, skipping the last two
/// user turns, stopping at a summary or an already-pruned output, keeping the
/// newest `limits.protect` tokens and protected tools; acts only above
/// `limits.minimum`. `count` gives a part's tokens (`Part.tokens` or an estimate).
pub fn plan_prune(
    messages: &[MessageWithParts],
    limits: PruneLimits,
    count: impl Fn(&Part) -> u64,
) -> PrunePlan {
    let mut turns = 0;
    let mut seen = 0u64;
    let mut freed = 0u64;
    let mut candidates = Vec::new();
    'messages: for message in messages.iter().rev() {
        if message.message.is_user() {
            turns += 1;
        }
        if turns < PROTECTED_TURNS {
            continue;
        }
        if message.message.as_assistant().is_some_and(|a| a.summary) {
            break;
        }
        for part in message.parts.iter().rev() {
            let PartKind::Tool(tool) = &part.kind else {
                continue;
            };
            let ToolState::Completed { time, .. } = &tool.state else {
                continue;
            };
            if PRUNE_PROTECTED_TOOLS.contains(&tool.tool.as_str()) {
                continue;
            }
            if time.compacted.is_some() {
                break 'messages;
            }
            let tokens = count(part);
            seen += tokens;
            if seen > limits.protect {
                freed += tokens;
                candidates.push(part.id.clone());
            }
        }
    }
    if freed > limits.minimum {
        PrunePlan {
            outputs: candidates.len(),
            part_ids: candidates,
            freed_tokens: freed,
            reason_if_none: None,
        }
    } else {
        PrunePlan {
            reason_if_none: Some(format!(
                "nothing to prune: only {} tokens of old tool output (prune acts above {})",
                thousands(freed),
                thousands(limits.minimum)
            )),
            ..PrunePlan::default()
        }
    }
}

/// The planned parts with `time.compacted = now` and their stored token count
/// cleared (it now counts the placeholder); the caller persists them.
pub fn apply<'a>(
    plan: &PrunePlan,
    parts: impl IntoIterator<Item = &'a Part>,
    now: Millis,
) -> Vec<Part> {
    parts
        .into_iter()
        .filter(|part| plan.part_ids.contains(&part.id))
        .filter_map(|part| {
            let mut part = part.clone();
            let PartKind::Tool(tool) = &mut part.kind else {
                return None;
            };
            let ToolState::Completed { time, .. } = &mut tool.state else {
                return None;
            };
            time.compacted = Some(now);
            part.tokens = None;
            Some(part)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::HistoryBuilder;

    const SEED: PruneLimits = PruneLimits {
        protect: PRUNE_PROTECT,
        minimum: PRUNE_MINIMUM,
    };

    /// Each tool output's token count is its length in characters.
    fn by_len(part: &Part) -> u64 {
        match &part.kind {
            PartKind::Tool(tool) => match &tool.state {
                ToolState::Completed { output, .. } => output.len() as u64,
                _ => 0,
            },
            _ => 0,
        }
    }

    /// An old turn with one output of `old` tokens, then a turn whose output
    /// fills the protected 40,000, then the two protected turns.
    fn history_with_old_output(old: usize) -> Vec<MessageWithParts> {
        let mut h = HistoryBuilder::new();
        h.user("old")
            .assistant()
            .tool_done("bash", &"x".repeat(old))
            .finish(10);
        h.user("mid")
            .assistant()
            .tool_done("read", &"y".repeat(40_000))
            .finish(10);
        h.user("previous")
            .assistant()
            .tool_done("bash", &"z".repeat(50_000))
            .finish(10);
        h.user("current")
            .assistant()
            .tool_done("bash", &"w".repeat(50_000));
        h.build()
    }

    #[test]
    fn acts_only_above_the_minimum() {
        let plan = plan_prune(&history_with_old_output(19_999), SEED, by_len);
        assert!(!plan.acts());
        assert_eq!(
            plan.reason_if_none.as_deref(),
            Some(
                "nothing to prune: only 19,999 tokens of old tool output (prune acts above 20,000)"
            )
        );
        let plan = plan_prune(&history_with_old_output(20_000), SEED, by_len);
        assert!(!plan.acts(), "exactly the minimum is not more than it");
        let history = history_with_old_output(20_001);
        let plan = plan_prune(&history, SEED, by_len);
        assert_eq!((plan.outputs, plan.freed_tokens), (1, 20_001));
        assert_eq!(plan.part_ids, vec![history[1].parts[1].id.clone()]);
    }

    #[test]
    fn small_windows_scale_protect_and_minimum() {
        // A 4k window: protect 819, act above 409.
        let limits = PruneLimits::for_window(4_096);
        assert_eq!(
            limits,
            PruneLimits {
                protect: 819,
                minimum: 409
            }
        );
        assert_eq!(PruneLimits::for_window(0), SEED);
        assert_eq!(
            PruneLimits::for_window(200_000),
            SEED,
            "Claude keeps the seed"
        );
        assert_eq!(PruneLimits::for_window(1_000_000), SEED);
        let mut h = HistoryBuilder::new();
        h.user("old")
            .assistant()
            .tool_done("read", &"o".repeat(500))
            .finish(1);
        h.user("mid")
            .assistant()
            .tool_done("read", &"m".repeat(600))
            .finish(1);
        h.user("previous")
            .assistant()
            .tool_done("bash", &"p".repeat(900))
            .finish(1);
        h.user("current")
            .assistant()
            .tool_done("bash", &"c".repeat(900));
        let history = h.build();
        assert!(
            !plan_prune(&history, SEED, by_len).acts(),
            "the seed never acts here"
        );
        let plan = plan_prune(&history, limits, by_len);
        assert_eq!((plan.outputs, plan.freed_tokens), (1, 500));
        assert_eq!(plan.part_ids, vec![history[1].parts[1].id.clone()]);
    }

    #[test]
    fn the_last_two_turns_are_protected_exactly() {
        // Only two turns, with huge outputs: nothing is old enough.
        let mut h = HistoryBuilder::new();
        h.user("previous")
            .assistant()
            .tool_done("bash", &"a".repeat(100_000))
            .finish(1);
        h.user("current")
            .assistant()
            .tool_done("bash", &"b".repeat(100_000));
        assert!(!plan_prune(&h.build(), SEED, by_len).acts());
        // A third turn becomes prunable once past the protected 40,000.
        let mut h = HistoryBuilder::new();
        h.user("old")
            .assistant()
            .tool_done("bash", &"c".repeat(70_000))
            .finish(1);
        h.user("previous")
            .assistant()
            .tool_done("bash", &"a".repeat(100_000))
            .finish(1);
        h.user("current")
            .assistant()
            .tool_done("bash", &"b".repeat(100_000));
        let plan = plan_prune(&h.build(), SEED, by_len);
        // The part that crosses the protected 40,000 is cleared whole (upstream rule).
        assert_eq!((plan.outputs, plan.freed_tokens), (1, 70_000));
    }

    #[test]
    fn skill_output_is_never_pruned_nor_counted() {
        let mut h = HistoryBuilder::new();
        h.user("old")
            .assistant()
            .tool_done("skill", &"s".repeat(90_000))
            .finish(1);
        h.user("previous").assistant().finish(1);
        h.user("current");
        let plan = plan_prune(&h.build(), SEED, by_len);
        assert!(!plan.acts());
        assert_eq!(plan.freed_tokens, 0);
    }

    #[test]
    fn stops_at_a_summary() {
        let mut h = HistoryBuilder::new();
        h.user("before")
            .assistant()
            .tool_done("bash", &"o".repeat(90_000))
            .finish(1);
        h.compaction_request(true, None);
        h.summary("summary");
        h.user("after")
            .assistant()
            .tool_done("bash", &"p".repeat(30_000))
            .finish(1);
        h.user("previous").assistant().finish(1);
        h.user("current");
        let plan = plan_prune(&h.build(), SEED, by_len);
        assert!(
            !plan.acts(),
            "the 90,000 before the summary are not reached"
        );
        assert_eq!(plan.freed_tokens, 0);
    }

    #[test]
    fn stops_at_an_already_pruned_output_and_apply_marks_parts() {
        let history = history_with_old_output(30_000);
        let plan = plan_prune(&history, SEED, by_len);
        assert!(plan.acts());
        let all_parts = history.iter().flat_map(|m| m.parts.iter());
        let updated = apply(&plan, all_parts, 1_234);
        assert_eq!(updated.len(), 1);
        assert!(
            matches!(&updated[0].kind, PartKind::Tool(t) if matches!(&t.state, ToolState::Completed { time, .. } if time.compacted == Some(1_234)))
        );

        let mut pruned_history = history.clone();
        pruned_history[1].parts[1] = updated[0].clone();
        // An even older output sits beyond the pruned one: never reached.
        let mut h = HistoryBuilder::new();
        h.user("ancient")
            .assistant()
            .tool_done("bash", &"q".repeat(90_000))
            .finish(1);
        let mut combined = h.build();
        combined.extend(pruned_history);
        let plan = plan_prune(&combined, SEED, by_len);
        assert!(!plan.acts());
    }
}
