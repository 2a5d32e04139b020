//! Planning one summary request: which messages are summarized, which user
//! message is replayed after an overflow, where the verbatim tail starts, the
//! prompt, and the first rung of the shrink ladder worth trying.

use crate::context::view::{ModelViewOptions, ensure_tool_pairing, to_model_messages};
use crate::message::{MessageWithParts, ModelRef};
use crate::provider::{ChatMessage, ChatRole, Content};
use crate::token;

use super::{
    build_prompt, find_previous_summary, hide_completed_compactions, messages_tokens,
    overflow_replay, recent_budget, select_tail,
};

/// The `[compaction]` settings tail selection needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailSettings {
    /// `compaction.tail_turns` (default 2; 0 keeps no tail).
    pub tail_turns: usize,
    /// `compaction.preserve_recent_tokens`.
    pub preserve_recent_tokens: Option<u64>,
}

impl Default for TailSettings {
    fn default() -> Self {
        Self {
            tail_turns: super::DEFAULT_TAIL_TURNS,
            preserve_recent_tokens: None,
        }
    }
}

/// What the loop sends for a compaction request, and what it writes after.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPlan {
    /// Messages to summarize (feed `shrink_step(&head, step)` to `summary_messages`).
    pub head: Vec<MessageWithParts>,
    /// Persist into the compaction part: first message kept verbatim.
    pub tail_start_id: Option<String>,
    /// After an overflow: the user message to re-send after the summary.
    pub replay: Option<MessageWithParts>,
    /// The final user message of the summary request.
    pub prompt: String,
    /// First shrink step worth sending: 1 when the head alone cannot fit.
    pub first_step: u32,
}

/// Plans the summary for the compaction request `compaction_message_id`.
///
/// `context` is the store's model view read (oldest first, not reordered),
/// taken whole: the head is moved out of it, not copied (the read of a
/// session never compacted holds a window's worth of history or more).
/// `usable` is the window from `context::usable`. Returns `None` when the
/// compaction request is not in `context`.
pub fn plan_summary(
    mut context: Vec<MessageWithParts>,
    compaction_message_id: &str,
    settings: TailSettings,
    usable: u64,
) -> Option<SummaryPlan> {
    let index = context
        .iter()
        .position(|m| m.message.id == compaction_message_id)?;
    let request = context[index].compaction()?.clone();
    context.truncate(index);
    let mut before = context;
    let mut replay = None;
    // A question not yet answered when the window filled (automatic
    // compaction before sending) is replayed like an overflowed one:
    // summarized, it would reach the model only as a paraphrase, followed by
    // "Continue if you have next steps". Manual compactions never replay.
    let unanswered = request.auto
        && before
            .last()
            .is_some_and(|m| m.message.is_user() && m.compaction().is_none());
    // Messages after the replayed one (its failed answer, the turn's steps)
    // stay in the store, between the tail and the summary.
    let mut replay_has_followers = false;
    if (request.overflow || unanswered)
        && let Some(replay_index) = overflow_replay(&before)
    {
        replay_has_followers = before.len() > replay_index + 1;
        // What followed the replayed message (its failed answer) is dropped.
        replay = before.drain(replay_index..).next();
    }
    let previous = find_previous_summary(&before);
    let visible = hide_completed_compactions(before);
    let budget = recent_budget(settings.preserve_recent_tokens, usable);
    // The model reads the store from the tail's first message on: a tail
    // would bring back what followed the replayed message (issue #30: the
    // user's message was sent twice). Then everything is summarized; when
    // nothing followed, the loop moves the message instead of copying it.
    let tail_turns = if replay_has_followers {
        0
    } else {
        settings.tail_turns
    };
    let tail = select_tail(&visible, tail_turns, budget, messages_tokens);
    let mut head = visible;
    head.truncate(tail.head_len);
    let prompt = build_prompt(previous.as_deref(), request.instructions.as_deref());
    let needed = messages_tokens(&head) + token::estimate(&prompt) as u64;
    let first_step = if usable != 0 && needed > usable { 1 } else { 0 };
    Some(SummaryPlan {
        head,
        tail_start_id: tail.tail_start_id,
        replay,
        prompt,
        first_step,
    })
}

/// The messages of a summary request: the (shrunk) head as the model sees it,
/// media stripped, then the prompt. Sent with the compaction system prompt
/// and no tools.
pub fn summary_messages(
    head: &[MessageWithParts],
    model: &ModelRef,
    prompt: &str,
    media_in_tool_results: bool,
) -> Vec<ChatMessage> {
    let options = ModelViewOptions {
        strip_media: true,
        tool_output_max_chars: None,
        media_in_tool_results,
    };
    let mut messages = to_model_messages(head, model, options);
    ensure_tool_pairing(&mut messages);
    messages.push(ChatMessage {
        role: ChatRole::User,
        content: vec![Content::Text {
            text: prompt.to_string(),
        }],
    });
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::{HistoryBuilder, model};
    use crate::message::PartKind;

    #[test]
    fn plans_head_tail_and_anchored_prompt() {
        let mut h = HistoryBuilder::new();
        h.compaction_request(true, None);
        h.summary("old facts");
        h.user("one").assistant().text("a").finish(1);
        h.user("two").assistant().text("b").finish(1);
        let id = h.compaction_request(true, None);
        let context = h.build();
        let plan =
            plan_summary(context.clone(), &id, TailSettings::default(), 100_000).expect("planned");
        // Both turns fit the 8,000 budget: nothing left to summarize but the
        // tail would be everything, so everything is summarized.
        assert_eq!(plan.tail_start_id, None);
        assert_eq!(plan.head.len(), 4, "the old pair is hidden");
        assert!(
            plan.prompt
                .contains("<previous-summary>\nold facts\n</previous-summary>")
        );
        assert_eq!((plan.first_step, plan.replay.is_none()), (0, true));

        let one_turn = TailSettings {
            tail_turns: 1,
            ..TailSettings::default()
        };
        let plan = plan_summary(context.clone(), &id, one_turn, 100_000).expect("planned");
        assert_eq!(plan.head.len(), 2);
        assert_eq!(
            plan.tail_start_id.as_deref(),
            Some(context[4].message.id.as_str())
        );

        let messages = summary_messages(&plan.head, &model(), &plan.prompt, true);
        assert_eq!(messages.len(), 3);
        assert!(matches!(&messages[2].content[0], Content::Text { text } if text == &plan.prompt));
    }

    #[test]
    fn overflow_replays_the_last_user_message_and_big_heads_start_shrunk() {
        let mut h = HistoryBuilder::new();
        h.user("first").assistant();
        h.tool_done("read", &"word ".repeat(10_000)).finish(1);
        h.user("huge paste");
        let id = h.compaction_request(true, None);
        let mut context = h.build();
        if let PartKind::Compaction(c) = &mut context[3].parts[0].kind {
            c.overflow = true;
            c.instructions = Some("keep the API".into());
        }
        let no_tail = TailSettings {
            tail_turns: 0,
            ..TailSettings::default()
        };
        let plan = plan_summary(context.clone(), &id, no_tail, 5_000).expect("planned");
        assert_eq!(
            plan.replay.map(|m| m.message.id),
            Some(context[2].message.id.clone())
        );
        assert_eq!(plan.head.len(), 2);
        assert_eq!(
            plan.first_step, 1,
            "10,000 tokens of output cannot fit 5,000"
        );
        assert!(plan.prompt.ends_with("keep the API"));
        assert_eq!(
            plan_summary(context.clone(), "msg_missing", no_tail, 5_000),
            None
        );
    }

    #[test]
    fn an_unanswered_question_is_replayed_by_automatic_compaction_only() {
        for auto in [true, false] {
            let mut h = HistoryBuilder::new();
            h.user("one").assistant().text("a").finish(1);
            h.user("the new question");
            let id = h.compaction_request(auto, None);
            let context = h.build();
            let no_tail = TailSettings {
                tail_turns: 0,
                ..TailSettings::default()
            };
            let plan = plan_summary(context.clone(), &id, no_tail, 100_000).expect("planned");
            let replayed = plan.replay.map(|m| m.message.id);
            if auto {
                assert_eq!(replayed, Some(context[2].message.id.clone()));
                assert_eq!(plan.head.len(), 2, "the question is not summarized");
            } else {
                assert_eq!(replayed, None);
                assert_eq!(plan.head.len(), 3);
            }
        }
    }
}
