//! Compaction: the pure decisions behind summarizing history (seed 002 section
//! 8, seed 003, spec 7.3-7.4).
//!
//! The loop writes the compaction request and runs the summary; this module
//! says what to summarize (`prompt`, previous summary, overflow replay, `tail`),
//! how to shrink a summary request that itself overflows (`shrink`), when
//! compacting again cannot help (`guard`), and what is carried verbatim past
//! the summary (`working_state`). Never touches the store or network.

mod guard;
mod prompt;
mod request;
mod shrink;
mod tail;
pub mod working_state;

use crate::context::view::completed_compaction_pairs;
use crate::message::{MessageWithParts, PartKind};

pub use guard::{CompactionGuard, GuardVerdict, MIN_FREED_FRACTION};
pub use prompt::{SYSTEM_PROMPT, build_prompt};
pub use request::{SummaryPlan, TailSettings, plan_summary, summary_messages};
pub use shrink::{SHRUNK_TOOL_OUTPUT_CHARS, note_omitted_history, omitted_turns_note, shrink_step};
pub use tail::{
    DEFAULT_TAIL_TURNS, MAX_PRESERVE_RECENT_TOKENS, MIN_PRESERVE_RECENT_TOKENS, TailSelection,
    messages_tokens, recent_budget, select_tail, turn_starts,
};

/// The synthetic user message after an automatic compaction (metadata
/// `compaction_continue: true`); manual `/compact` adds none.
pub const AUTO_CONTINUE: &str = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.";

/// Metadata key marking the auto-continue message, so it is never mistaken
/// for the user's words.
pub const AUTO_CONTINUE_METADATA: &str = "compaction_continue";

/// Prefixed to the auto-continue text when the provider rejected the request
/// as too large and nothing could be replayed.
pub const OVERFLOW_CONTINUE_PREFIX: &str = "The previous request exceeded the provider's size limit due to large media attachments. The conversation was compacted and media files were removed from context. If the user was asking about attached images or files, explain that the attachments were too large to process and suggest they try again with smaller or fewer files.\n\n";

/// The latest completed summary's text, to anchor the next one on.
pub fn find_previous_summary(history: &[MessageWithParts]) -> Option<String> {
    let &(_, summary) = completed_compaction_pairs(history).last()?;
    let text: Vec<&str> = history[summary]
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text(t)
                if !t.ignored && !t.is_working_state() && !t.text.trim().is_empty() =>
            {
                Some(t.text.as_str())
            }
            _ => None,
        })
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

/// `history` without earlier (compaction request, summary) pairs: their
/// content reaches the summarizer as the previous summary instead.
pub fn hide_completed_compactions(history: Vec<MessageWithParts>) -> Vec<MessageWithParts> {
    let hidden: Vec<usize> = completed_compaction_pairs(&history)
        .into_iter()
        .flat_map(|(c, s)| [c, s])
        .collect();
    history
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !hidden.contains(i))
        .map(|(_, m)| m)
        .collect()
}

/// Overflow replay (spec 7.3 step 1): when the provider rejected the last
/// request, summarize only what came before the last real user message (one
/// without a compaction part) and replay that message afterwards.
///
/// `history` excludes the compaction request itself. Returns the replayed
/// message's index (the head to summarize is `history[..index]`), or `None`
/// when nothing real precedes it: then everything is summarized.
pub fn overflow_replay(history: &[MessageWithParts]) -> Option<usize> {
    let index = history
        .iter()
        .rposition(|m| m.message.is_user() && m.compaction().is_none())?;
    let head_has_content = history[..index].iter().any(|m| m.compaction().is_none());
    head_has_content.then_some(index)
}

#[cfg(test)]
mod tests;
