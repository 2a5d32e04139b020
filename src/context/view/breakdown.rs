//! `/context`: the next request broken down by category, adding up exactly to
//! the gauge's `used`.
//!
//! Categories are counted with our tokenizer; the gauge's figure is anchored on
//! provider usage and calibrated, so the two differ by framing tokens and
//! tokenizer. The categories are scaled to the gauge with the largest-remainder
//! method: each gets its proportional share rounded down, and the leftover
//! tokens (fewer than the number of categories) go one each to the categories
//! with the largest dropped fractions, so the sum is exact and no row is invented.

use serde::Serialize;

use crate::context::ContextGauge;
use crate::message::{CacheTokens, MessageWithParts, PartKind};
use crate::provider::ToolSpec;
use crate::token;

use super::part_tokens;

/// `/context`: the next request broken down by category. The categories add
/// up exactly to the gauge's `used`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextBreakdown {
    /// (category, tokens), in display order: system prompt, instruction files,
    /// tool definitions, summary, messages, tool outputs.
    pub categories: Vec<(String, u64)>,
    /// Tool-output tokens that `/prune` could clear now.
    pub prunable: u64,
    pub gauge: ContextGauge,
    /// Tokens before -> after the last compaction, if any.
    pub last_compaction: Option<(u64, u64)>,
    /// What the last answered request read from and wrote to the provider's
    /// prompt cache; `None` when it used no cache.
    pub last_cache: Option<CacheTokens>,
}

impl ContextBreakdown {
    /// The part sent with every request whatever the conversation: system
    /// prompt, instruction files, tool definitions. On a small window this
    /// is what decides whether the model is usable at all.
    pub fn fixed(&self) -> u64 {
        self.categories
            .iter()
            .filter(|(name, _)| {
                [SYSTEM_PROMPT, INSTRUCTION_FILES, TOOL_DEFINITIONS].contains(&name.as_str())
            })
            .map(|(_, tokens)| tokens)
            .sum()
    }
}

/// What the next request is made of.
#[derive(Debug, Clone, Copy)]
pub struct BreakdownInput<'a> {
    /// The base system prompt blocks (agent prompt, environment).
    pub base_prompt: &'a [String],
    /// Instruction files (AGENTS.md, CLAUDE.md), as sent.
    pub instruction_files: &'a [String],
    pub tools: &'a [ToolSpec],
    /// The model's view of the history (after `order_for_model`).
    pub history: &'a [MessageWithParts],
    /// Tokens `/prune` could clear now (`PrunePlan::freed_tokens`, our units).
    pub prunable: u64,
    pub gauge: ContextGauge,
    pub last_compaction: Option<(u64, u64)>,
}

pub const SYSTEM_PROMPT: &str = "system prompt";
pub const INSTRUCTION_FILES: &str = "instruction files";
pub const TOOL_DEFINITIONS: &str = "tool definitions";
pub const SUMMARY: &str = "summary";
pub const MESSAGES: &str = "messages";
pub const TOOL_OUTPUTS: &str = "tool outputs";

/// Fills the `/context` breakdown; its categories sum to `input.gauge.used`.
pub fn build_breakdown(input: &BreakdownInput<'_>) -> ContextBreakdown {
    let text_tokens = |blocks: &[String]| -> u64 {
        blocks
            .iter()
            .map(|b| token::count_or_estimate(b).0 as u64)
            .sum()
    };
    let tool_json = serde_json::to_string(input.tools).unwrap_or_default();
    let mut summary = 0;
    let mut messages = 0;
    let mut tool_outputs = 0;
    for message in input.history {
        let is_summary = message.is_completed_summary();
        for part in &message.parts {
            let (tokens, _) = part_tokens(part);
            match &part.kind {
                _ if is_summary => summary += tokens,
                PartKind::Tool(_) => tool_outputs += tokens,
                _ => messages += tokens,
            }
        }
    }
    let raw = [
        (SYSTEM_PROMPT, text_tokens(input.base_prompt)),
        (INSTRUCTION_FILES, text_tokens(input.instruction_files)),
        (
            TOOL_DEFINITIONS,
            token::count_or_estimate(&tool_json).0 as u64,
        ),
        (SUMMARY, summary),
        (MESSAGES, messages),
        (TOOL_OUTPUTS, tool_outputs),
    ];
    let used = input.gauge.used;
    let counted: u64 = raw.iter().map(|(_, n)| n).sum();
    let scaled = scale_exactly(&raw.map(|(_, n)| n), used);
    let prunable = if counted == 0 {
        0
    } else {
        ((u128::from(input.prunable) * u128::from(used) / u128::from(counted)) as u64)
            .min(scaled[5])
    };
    ContextBreakdown {
        categories: raw
            .iter()
            .zip(scaled)
            .map(|((name, _), n)| (name.to_string(), n))
            .collect(),
        prunable,
        gauge: input.gauge,
        last_compaction: input.last_compaction,
        last_cache: last_cache(input.history),
    }
}

/// The cache use of the newest answered request in the view.
fn last_cache(history: &[MessageWithParts]) -> Option<CacheTokens> {
    history
        .iter()
        .rev()
        .filter_map(|m| m.message.as_assistant())
        .find(|a| a.finish.is_some())
        .map(|a| a.tokens.cache)
        .filter(|cache| cache.read + cache.write > 0)
}

/// Scales `counts` so they sum to exactly `target` (largest remainder).
/// With nothing counted, everything is attributed to messages.
fn scale_exactly(counts: &[u64; 6], target: u64) -> [u64; 6] {
    let total: u128 = counts.iter().map(|&n| u128::from(n)).sum();
    if total == 0 {
        let mut out = [0; 6];
        out[4] = target;
        return out;
    }
    let target = u128::from(target);
    let mut out = [0u64; 6];
    let mut fractions = [(0u128, 0usize); 6];
    for (i, &n) in counts.iter().enumerate() {
        let share = u128::from(n) * target;
        out[i] = (share / total) as u64;
        fractions[i] = (share % total, i);
    }
    let assigned: u128 = out.iter().map(|&n| u128::from(n)).sum();
    let leftover = (target - assigned) as usize;
    fractions.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in fractions.iter().take(leftover) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CompactionConfig;
    use crate::context::view::test_history::HistoryBuilder;
    use crate::context::{Limits, gauge};

    #[test]
    fn scaling_is_exact_for_awkward_ratios() {
        for target in [0, 1, 7, 999, 123_457] {
            let scaled = scale_exactly(&[3, 3, 3, 0, 1, 1], target);
            assert_eq!(scaled.iter().sum::<u64>(), target);
            assert_eq!(scaled[3], 0, "an empty category stays empty");
        }
        assert_eq!(scale_exactly(&[0; 6], 50), [0, 0, 0, 0, 50, 0]);
    }

    #[test]
    fn categories_add_up_to_the_gauge() {
        let mut h = HistoryBuilder::new();
        h.compaction_request(true, None);
        h.summary("## Goal\nfix the parser");
        h.user("now run the tests").assistant();
        h.tool_done("bash", &"test result ok\n".repeat(200));
        h.text("all green").finish(5_000);
        let history = h.build();
        let limits = Limits {
            context: 200_000,
            input: None,
            output: 32_000,
        };
        let g = gauge(7_777, false, &limits, &CompactionConfig::default());
        let tools = vec![ToolSpec {
            name: "bash".into(),
            description: "Run a shell command".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let breakdown = build_breakdown(&BreakdownInput {
            base_prompt: &["You are cairn, a coding agent.".to_string()],
            instruction_files: &["Instructions from: AGENTS.md\nUse cargo fmt.".to_string()],
            tools: &tools,
            history: &history,
            prunable: 100,
            gauge: g,
            last_compaction: None,
        });
        let names: Vec<&str> = breakdown
            .categories
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(
            names,
            [
                SYSTEM_PROMPT,
                INSTRUCTION_FILES,
                TOOL_DEFINITIONS,
                SUMMARY,
                MESSAGES,
                TOOL_OUTPUTS
            ]
        );
        let sum: u64 = breakdown.categories.iter().map(|(_, n)| n).sum();
        assert_eq!(sum, 7_777);
        let tool_outputs = breakdown.categories[5].1;
        assert!(
            tool_outputs > breakdown.categories[4].1,
            "{:?}",
            breakdown.categories
        );
        assert!(breakdown.categories[3].1 > 0);
        assert!(breakdown.prunable > 0 && breakdown.prunable <= tool_outputs);
    }
}
