//! `/context`: the next request broken down by category, adding up exactly to
//! the gauge's `used`.
//!
//! Categories are counted with our tokenizer; the gauge's figure is anchored on
//! provider usage and calibrated, so the two differ by framing tokens and
//! tokenizer. That difference is its own row ([`ContextBreakdown::difference`]),
//! not spread over the categories: spread in proportion, it made tool
//! definitions look 55k when the provider simply counted more than cairn.
//! Categories plus difference add up exactly to the gauge.

use serde::Serialize;

use crate::gauge::ContextGauge;
use crate::message::{CacheTokens, MessageWithParts, PartKind};
use crate::provider::ToolSpec;
use crate::token;

use super::part_tokens;

/// `/context`: the next request broken down by category. The categories
/// plus `difference` add up exactly to the gauge's `used`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextBreakdown {
    /// (category, tokens), in display order: system prompt, instruction files,
    /// tool definitions, summary, working state, messages, tool outputs.
    pub categories: Vec<(String, u64)>,
    /// The gauge's figure (the provider's count, calibrated) minus the sum of
    /// the categories (cairn's count): framing and tokenizer differences.
    /// Negative when cairn counts more than the provider.
    pub difference: i64,
    /// Tool-output tokens that `/prune` could clear now.
    pub prunable: u64,
    pub gauge: ContextGauge,
    /// Tokens before -> after the last compaction, if any.
    pub last_compaction: Option<(u64, u64)>,
    /// What the last answered request read from and wrote to the provider's
    /// prompt cache; `None` when it used no cache.
    pub last_cache: Option<CacheTokens>,
    /// What the fixed part left out to stay small, one line each (the
    /// skills whose descriptions were cut or left out of the list).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// The fixed part (system prompt, instruction files, tools) as the
    /// model's server counted it, where it counts: the three rows are shown
    /// in its tokens, shared in proportion to our counts.
    pub fixed_exact: Option<u64>,
}

pub const SYSTEM_PROMPT: &str = "system prompt";
pub const INSTRUCTION_FILES: &str = "instruction files";
pub const TOOL_DEFINITIONS: &str = "tool definitions";
pub const SUMMARY: &str = "summary";
/// What the last compaction carried verbatim past the summary.
pub const WORKING_STATE: &str = "working state";
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
    let mut working_state = 0;
    let mut messages = 0;
    let mut tool_outputs = 0;
    for message in input.history {
        let is_summary = message.is_completed_summary();
        for part in &message.parts {
            let (tokens, _) = part_tokens(part);
            match &part.kind {
                PartKind::Text(text) if is_summary && text.is_working_state() => {
                    working_state += tokens
                }
                _ if is_summary => summary += tokens,
                PartKind::Tool(_) => tool_outputs += tokens,
                _ => messages += tokens,
            }
        }
    }
    let fixed = in_server_tokens(
        [
            text_tokens(input.base_prompt),
            text_tokens(input.instruction_files),
            token::count_or_estimate(&tool_json).0 as u64,
        ],
        input.fixed_exact,
    );
    let raw = [
        (SYSTEM_PROMPT, fixed[0]),
        (INSTRUCTION_FILES, fixed[1]),
        (TOOL_DEFINITIONS, fixed[2]),
        (SUMMARY, summary),
        (WORKING_STATE, working_state),
        (MESSAGES, messages),
        (TOOL_OUTPUTS, tool_outputs),
    ];
    let used = input.gauge.used;
    let counted: u64 = raw.iter().map(|(_, n)| n).sum();
    let difference =
        i64::try_from(used).unwrap_or(i64::MAX) - i64::try_from(counted).unwrap_or(i64::MAX);
    ContextBreakdown {
        categories: raw.iter().map(|(name, n)| (name.to_string(), *n)).collect(),
        difference,
        prunable: input.prunable.min(tool_outputs),
        gauge: input.gauge,
        last_compaction: input.last_compaction,
        last_cache: last_cache(input.history),
        notes: Vec::new(),
    }
}

/// `ours` (our counts of the fixed rows) shared out so they add up to the
/// server's count of the fixed part, when there is one; the last row takes
/// the rounding.
fn in_server_tokens(ours: [u64; 3], exact: Option<u64>) -> [u64; 3] {
    let total: u64 = ours.iter().sum();
    let Some(exact) = exact.filter(|_| total > 0) else {
        return ours;
    };
    let share = |n: u64| (n as f64 * exact as f64 / total as f64).round() as u64;
    let first = share(ours[0]);
    let second = share(ours[1]);
    [first, second, exact.saturating_sub(first + second)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CompactionConfig;
    use crate::context::view::test_history::HistoryBuilder;
    use crate::context::window::{Limits, gauge};

    #[test]
    fn categories_and_the_difference_add_up_to_the_gauge() {
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
            fixed_exact: None,
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
                WORKING_STATE,
                MESSAGES,
                TOOL_OUTPUTS
            ]
        );
        let sum: u64 = breakdown.categories.iter().map(|(_, n)| n).sum();
        // Our counts as they are; the provider's extra is its own row.
        assert_eq!(sum as i64 + breakdown.difference, 7_777);
        assert_eq!(breakdown.categories[2].1, {
            let json = serde_json::to_string(&tools).expect("tools");
            token::count_or_estimate(&json).0 as u64
        });
        let tool_outputs = breakdown.categories[6].1;
        assert!(
            tool_outputs > breakdown.categories[5].1,
            "{:?}",
            breakdown.categories
        );
        assert!(breakdown.categories[3].1 > 0);
        assert!(breakdown.prunable > 0 && breakdown.prunable <= tool_outputs);
    }

    #[test]
    fn the_fixed_rows_add_up_to_the_servers_count_when_it_counts() {
        assert_eq!(
            in_server_tokens([300, 100, 107], Some(812)),
            [480, 160, 172]
        );
        assert_eq!(
            in_server_tokens([300, 0, 207], Some(812))
                .iter()
                .sum::<u64>(),
            812
        );
        assert_eq!(in_server_tokens([300, 100, 107], None), [300, 100, 107]);
        assert_eq!(in_server_tokens([0, 0, 0], Some(5)), [0, 0, 0]);
    }
}
