//! The size of the next request, anchored on what the provider reported.
//!
//! Everything already sent is known exactly from the last request's usage
//! (input + cache read + cache write + output, the output being history now);
//! only the parts added since then are counted by us, once each (their counts
//! are kept in `Part.tokens`), and outputs pruned since then are taken off.
//! Counting what a part *sends* is the session layer's job (it knows the model
//! view); this module only adds up.

use crate::message::{MessageWithParts, ModelRef, Part, PartKind, Tokens, ToolState};

use crate::token::Calibration;

/// The next request's size and whether any of it is a cheap estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NextRequest {
    pub tokens: u64,
    pub estimated: bool,
}

/// What the last request told us, and the parts it did not include.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestAnchor<'a> {
    /// The provider-reported usage of the last request, when it describes the
    /// history the next request extends.
    pub usage: Option<Tokens>,
    /// Parts the last request did not carry (all parts when there is no usage).
    pub added: Vec<&'a Part>,
    /// Tool parts the last request carried in full that were pruned since:
    /// the usage counts their whole output, the next request only the
    /// placeholder. Empty when there is no usage.
    pub pruned: Vec<&'a Part>,
}

/// Splits `history` (the model's view, oldest first) into the last request's
/// usage and the parts added after it.
///
/// There is no anchor when nothing was sent yet, when the last request was a
/// compaction summary (it measured the history before the summary), or when
/// it ran on another model (its tokens are in another tokenizer's units).
/// Only requests newer than the latest summary can anchor: the verbatim tail
/// kept by a compaction sits after the summary in the model's view, but its
/// usage measured the whole pre-compaction history.
/// Tool parts of the last step count as added: their results arrived after
/// the request (their call input is counted twice, a few tokens).
pub fn added_since_last_request<'a>(
    history: &'a [MessageWithParts],
    current_model: &ModelRef,
) -> RequestAnchor<'a> {
    let everything = || RequestAnchor {
        usage: None,
        added: history.iter().flat_map(|m| m.parts.iter()).collect(),
        pruned: Vec::new(),
    };
    let Some((message_index, finish_index, tokens)) = last_step_finish(history) else {
        return everything();
    };
    let message = &history[message_index];
    let Some(assistant) = message.message.as_assistant() else {
        return everything();
    };
    if assistant.summary || &assistant.model != current_model {
        return everything();
    }
    let step_start = message.parts[..finish_index]
        .iter()
        .rposition(|p| matches!(p.kind, PartKind::StepStart(_)))
        .unwrap_or(0);
    let mut added: Vec<&Part> = message.parts[step_start..finish_index]
        .iter()
        .filter(|p| matches!(p.kind, PartKind::Tool(_)))
        .collect();
    added.extend(&message.parts[finish_index + 1..]);
    added.extend(
        history[message_index + 1..]
            .iter()
            .flat_map(|m| m.parts.iter()),
    );
    let sent_at = message.message.time_created;
    let pruned = history[..message_index]
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter(|p| pruned_after(p, sent_at))
        .collect();
    RequestAnchor {
        usage: Some(tokens),
        added,
        pruned,
    }
}

/// A tool output cleared at or after `sent_at`: the request sent then still
/// carried all of it.
fn pruned_after(part: &Part, sent_at: crate::clock::Millis) -> bool {
    matches!(
        &part.kind,
        PartKind::Tool(tool) if matches!(
            &tool.state,
            ToolState::Completed { time, .. } if time.compacted.is_some_and(|at| at >= sent_at)
        )
    )
}

/// The newest step-finish with usage in a message no older than the latest
/// completed summary (the summary itself included).
fn last_step_finish(history: &[MessageWithParts]) -> Option<(usize, usize, Tokens)> {
    let floor = history
        .iter()
        .filter(|m| m.is_completed_summary())
        .map(|m| m.message.id.as_str())
        .max()
        .unwrap_or("");
    history.iter().enumerate().rev().find_map(|(mi, m)| {
        if m.message.id.as_str() < floor {
            return None;
        }
        m.parts
            .iter()
            .enumerate()
            .rev()
            .find_map(|(pi, p)| match &p.kind {
                PartKind::StepFinish(finish) if finish.tokens.context_count() > 0 => {
                    Some((mi, pi, finish.tokens))
                }
                _ => None,
            })
    })
}

/// The next request's size: the anchor's `context_count` (or, with no anchor,
/// `fixed` = system prompt + tool definitions) plus the added parts' counts,
/// minus what pruning took off anchored parts (`removed`), our counts scaled
/// by `calibration`. Each count is `(tokens, estimated)`.
pub fn next_request_tokens(
    anchor: Option<&Tokens>,
    fixed: (u64, bool),
    added: impl IntoIterator<Item = (u64, bool)>,
    removed: impl IntoIterator<Item = (u64, bool)>,
    calibration: &Calibration,
) -> NextRequest {
    let (mut ours, mut estimated) = match anchor {
        Some(_) => (0, false),
        None => fixed,
    };
    for (tokens, is_estimate) in added {
        ours += tokens;
        estimated |= is_estimate;
    }
    let mut freed = 0;
    for (tokens, is_estimate) in removed {
        freed += tokens;
        estimated |= is_estimate;
    }
    let anchored = anchor.map(Tokens::context_count).unwrap_or(0);
    NextRequest {
        tokens: (anchored + calibration.scale(ours)).saturating_sub(calibration.scale(freed)),
        estimated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::{HistoryBuilder, model};

    #[test]
    fn anchors_on_the_last_step_and_adds_its_tool_results_and_later_parts() {
        let mut h = HistoryBuilder::new();
        h.user("first").assistant().text("a").finish(1_000);
        h.user("second").assistant().text("calling");
        h.tool_done("bash", "result");
        h.finish(2_000);
        h.user("third");
        let history = h.build();
        let anchor = added_since_last_request(&history, &model());
        assert_eq!(anchor.usage.map(|t| t.context_count()), Some(2_000));
        let kinds: Vec<&str> = anchor.added.iter().map(|p| p.kind.type_name()).collect();
        assert_eq!(kinds, ["tool", "text"]);

        let added = anchor.added.iter().map(|_| (10, false));
        let next = next_request_tokens(
            anchor.usage.as_ref(),
            (500, false),
            added,
            [],
            &Calibration::default(),
        );
        assert_eq!(
            next,
            NextRequest {
                tokens: 2_020,
                estimated: false
            }
        );
    }

    #[test]
    fn no_anchor_after_a_summary_or_a_model_switch() {
        let mut h = HistoryBuilder::new();
        h.compaction_request(true, None);
        h.summary("summary");
        h.user("next");
        let history = h.build();
        let anchor = added_since_last_request(&history, &model());
        assert_eq!(anchor.usage, None);
        assert_eq!(
            anchor.added.len(),
            history.iter().map(|m| m.parts.len()).sum::<usize>()
        );

        let mut h = HistoryBuilder::new();
        h.user("q").assistant().finish(3_000);
        let other = ModelRef::new("openai", "gpt-5");
        assert_eq!(added_since_last_request(&h.build(), &other).usage, None);
    }

    #[test]
    fn unanchored_requests_count_the_fixed_prompt_and_scale_our_counts() {
        let claude = Calibration::for_model(&model());
        let next = next_request_tokens(None, (1_000, true), [(1_000, false)], [], &claude);
        assert_eq!(
            next,
            NextRequest {
                tokens: 2_200,
                estimated: true
            }
        );
    }

    #[test]
    fn a_verbatim_tail_after_the_summary_never_anchors() {
        // A compaction that kept the task's turn verbatim: the model's view
        // is the summary, then the tail (with the pre-compaction usage).
        let mut h = HistoryBuilder::new();
        h.user("task")
            .assistant()
            .tool_done("bash", "out")
            .finish(15_000);
        let tail_start = h.build()[0].message.id.clone();
        h.compaction_request(true, Some(tail_start));
        h.summary("summary");
        let view = crate::context::view::order_for_model(h.build());
        assert!(view[1].is_completed_summary() && !view[3].is_completed_summary());
        let anchor = added_since_last_request(&view, &model());
        assert_eq!(
            anchor.usage, None,
            "the tail's 15,000 describe the old history"
        );
        assert_eq!(
            anchor.added.len(),
            view.iter().map(|m| m.parts.len()).sum::<usize>()
        );

        // A step after the summary anchors again.
        let mut h = HistoryBuilder::new();
        h.compaction_request(true, None);
        h.summary("summary");
        h.user("next").assistant().text("ok").finish(2_000);
        let history = h.build();
        let anchor = added_since_last_request(&history, &model());
        assert_eq!(anchor.usage.map(|t| t.context_count()), Some(2_000));
    }

    #[test]
    fn outputs_pruned_after_the_anchor_request_are_taken_off() {
        let mut h = HistoryBuilder::new();
        h.user("old")
            .assistant()
            .tool_done("read", "big output")
            .finish(1);
        h.user("new").assistant().text("answer").finish(50_000);
        let mut history = h.build();
        let sent_at = history[3].message.time_created;
        let set_compacted = |history: &mut Vec<MessageWithParts>, at| {
            if let PartKind::Tool(tool) = &mut history[1].parts[1].kind
                && let ToolState::Completed { time, .. } = &mut tool.state
            {
                time.compacted = Some(at);
            }
        };
        set_compacted(&mut history, sent_at - 1);
        let anchor = added_since_last_request(&history, &model());
        assert!(
            anchor.pruned.is_empty(),
            "pruned before the request: already out of its usage"
        );
        set_compacted(&mut history, sent_at + 5);
        let anchor = added_since_last_request(&history, &model());
        assert_eq!(anchor.pruned.len(), 1);
        let next = next_request_tokens(
            anchor.usage.as_ref(),
            (0, false),
            [],
            [(20_000, false)],
            &Calibration::default(),
        );
        assert_eq!(next.tokens, 30_000);
    }
}
