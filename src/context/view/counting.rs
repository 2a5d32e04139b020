//! What one part costs in the model's view, counted once and kept in `Part.tokens`.
//!
//! The text counted is what `to_model_messages` sends for the part in a
//! normal request (a pruned output counts as its placeholder); images count a
//! flat [`IMAGE_TOKENS`]. Only exact counts are stored: an estimate is used
//! for the moment and replaced once the encoder is ready.

use std::borrow::Cow;

use crate::message::{Part, PartKind, ToolState};
use crate::token;

use super::{
    CLEARED_TOOL_RESULT, COMPACTION_QUESTION, INTERRUPTED_TOOL_RESULT, SUBTASK_TEXT,
    attachment_marker,
};

/// An image's cost: Anthropic charges about width*height/750, capped near
/// 1,600; most screenshots sent by tools land around this.
pub const IMAGE_TOKENS: u64 = 1_000;

/// The text a part sends to the model (empty for parts that send nothing).
pub fn part_model_text(part: &Part) -> Cow<'_, str> {
    match &part.kind {
        PartKind::Text(text) if text.ignored => Cow::Borrowed(""),
        PartKind::Text(text) => Cow::Borrowed(&text.text),
        PartKind::Reasoning(reasoning) => Cow::Borrowed(&reasoning.text),
        PartKind::Tool(tool) => {
            let result = match &tool.state {
                ToolState::Completed { time, .. } if time.compacted.is_some() => {
                    CLEARED_TOOL_RESULT
                }
                ToolState::Completed { output, .. } => output,
                ToolState::Error { error, .. } => error,
                ToolState::Pending { .. } | ToolState::Running { .. } => INTERRUPTED_TOOL_RESULT,
            };
            Cow::Owned(format!("{}{}{}", tool.tool, tool.state.input(), result))
        }
        PartKind::File(file) if file.mime.starts_with("image/") => Cow::Borrowed(""),
        PartKind::File(file) => Cow::Owned(attachment_marker(file)),
        PartKind::Compaction(_) => Cow::Borrowed(COMPACTION_QUESTION),
        PartKind::Subtask(_) => Cow::Borrowed(SUBTASK_TEXT),
        PartKind::StepStart(_) | PartKind::StepFinish(_) | PartKind::Patch(_) => Cow::Borrowed(""),
    }
}

/// What a part costs a request beyond its text: the chat template's
/// message markers, a tool call's id and JSON frame (our units). Counted for
/// parts added since the last reported usage, which otherwise come out a few
/// tokens short each; on a 4k window those add up to a request over the edge.
pub const PART_FRAMING: u64 = 8;

/// [`PART_FRAMING`] for a part the model sees as a message or a call, else 0.
pub fn part_framing(part: &Part) -> u64 {
    match &part.kind {
        PartKind::Text(text) if !text.ignored => PART_FRAMING,
        PartKind::Tool(_) => 2 * PART_FRAMING, // the call and its result
        _ => 0,
    }
}

fn image_count(part: &Part) -> u64 {
    match &part.kind {
        PartKind::File(file) if file.mime.starts_with("image/") => 1,
        PartKind::Tool(tool) => match &tool.state {
            ToolState::Completed {
                attachments, time, ..
            } if time.compacted.is_none() => attachments
                .iter()
                .filter(|f| f.mime.starts_with("image/"))
                .count() as u64,
            _ => 0,
        },
        _ => 0,
    }
}

/// The part's tokens and whether that is an estimate: the stored count, else
/// an exact count if the encoder is ready, else the cheap estimate.
pub fn part_tokens(part: &Part) -> (u64, bool) {
    if let Some(stored) = part.tokens {
        return (u64::from(stored), false);
    }
    let (text_tokens, estimated) = token::count_or_estimate(&part_model_text(part));
    (
        text_tokens as u64 + image_count(part) * IMAGE_TOKENS,
        estimated,
    )
}

/// What pruning `part` took off a request that carried it in full: the
/// output's cost minus the placeholder's; zero for a part that is not pruned.
pub fn pruned_savings(part: &Part) -> (u64, bool) {
    let PartKind::Tool(tool) = &part.kind else {
        return (0, false);
    };
    let ToolState::Completed { time, .. } = &tool.state else {
        return (0, false);
    };
    if time.compacted.is_none() {
        return (0, false);
    }
    let mut whole = part.clone();
    whole.tokens = None;
    if let PartKind::Tool(tool) = &mut whole.kind
        && let ToolState::Completed { time, .. } = &mut tool.state
    {
        time.compacted = None;
    }
    let (full, full_estimated) = part_tokens(&whole);
    let (placeholder, placeholder_estimated) = part_tokens(part);
    (
        full.saturating_sub(placeholder),
        full_estimated || placeholder_estimated,
    )
}

/// What [`fill_part_tokens`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FillReport {
    /// Parts that got a stored count now (the caller persists them).
    pub filled: usize,
    /// Parts still without a count because the encoder is not ready.
    pub missing: usize,
}

impl FillReport {
    /// Whether a sum over these parts includes estimates.
    pub fn is_estimated(&self) -> bool {
        self.missing > 0
    }
}

/// Stores exact counts on parts that have none, when the encoder is ready.
pub fn fill_part_tokens<'a>(parts: impl IntoIterator<Item = &'a mut Part>) -> FillReport {
    let mut report = FillReport::default();
    for part in parts {
        if part.tokens.is_some() {
            continue;
        }
        match token::count_exact(&part_model_text(part)) {
            Some(exact) => {
                let total = exact as u64 + image_count(part) * IMAGE_TOKENS;
                part.tokens = Some(u32::try_from(total).unwrap_or(u32::MAX));
                report.filled += 1;
            }
            None => report.missing += 1,
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::{HistoryBuilder, completed};

    #[test]
    fn a_pruned_output_costs_its_placeholder_and_stored_counts_are_reused() {
        token::count("warm");
        let mut history = HistoryBuilder::new();
        history.user("go").assistant();
        history.tool_done("bash", &"word ".repeat(1000));
        let mut messages = history.build();
        let parts = &mut messages[1].parts;
        let report = fill_part_tokens(parts.iter_mut());
        assert_eq!(
            report,
            FillReport {
                filled: 2,
                missing: 0
            }
        );
        let full = parts[1].tokens.expect("filled");
        assert!(full > 1000, "{full}");

        let mut pruned = parts[1].clone();
        if let PartKind::Tool(tool) = &mut pruned.kind {
            let mut state = completed("x");
            if let ToolState::Completed { time, .. } = &mut state {
                time.compacted = Some(1);
            }
            tool.state = state;
        }
        pruned.tokens = None;
        let (cleared, estimated) = part_tokens(&pruned);
        assert!(!estimated);
        assert!(cleared < 20, "{cleared}");
        assert_eq!(part_tokens(&parts[1]), (u64::from(full), false));
        let mut big_pruned = parts[1].clone();
        if let PartKind::Tool(tool) = &mut big_pruned.kind
            && let ToolState::Completed { time, .. } = &mut tool.state
        {
            time.compacted = Some(1);
        }
        big_pruned.tokens = None;
        let (saved, estimated) = pruned_savings(&big_pruned);
        assert!(!estimated);
        assert_eq!(saved + part_tokens(&big_pruned).0, u64::from(full));
        assert_eq!(pruned_savings(&parts[1]), (0, false), "not pruned");
        assert_eq!(fill_part_tokens(parts.iter_mut()), FillReport::default());
    }
}
