//! The shrink ladder for a summary request that itself overflows (DESIGN,
//! "Never dead-end"): instead of giving up like upstream, cut the input and
//! retry. Step 0 is the history as is; step 1 cuts tool outputs to 2,000
//! characters and strips media; each later step also drops the oldest half of
//! the turns still kept, until one turn is left, then the oldest half of that
//! turn's steps, until one step is left.

use std::borrow::Cow;

use crate::context::view::{attachment_marker, truncate_for_compaction};
use crate::message::{MessageWithParts, Part, PartKind, TextPart, ToolPart, ToolState};

use super::tail::turn_starts;

/// Tool outputs are cut to this many characters from step 1 on.
pub const SHRUNK_TOOL_OUTPUT_CHARS: usize = 2_000;

/// Tells the summarizer that turns are missing, so it does not present a
/// partial history as complete.
pub fn omitted_turns_note(turns: usize) -> String {
    format!(
        "[{turns} earlier turn(s) were left out of this summary request because they did not fit in the model's context window]"
    )
}

/// Tells the summarizer that the session goes back further than what it is
/// given (a never-compacted session read only as far as a window reaches).
pub fn note_omitted_history(head: &mut [MessageWithParts]) {
    let Some(first) = head.first_mut() else {
        return;
    };
    let note = Part {
        id: format!("{}-omitted-history", first.message.id),
        message_id: first.message.id.clone(),
        session_id: first.message.session_id.clone(),
        kind: PartKind::Text(TextPart {
            text: "[the session goes back further than these messages: its oldest turns were left out of this summary request because they could not fit in any context window]".into(),
            synthetic: true,
            ..TextPart::default()
        }),
        tokens: None,
    };
    first.parts.insert(0, note);
}

/// The input for attempt `step` of a summary request, or `None` when nothing
/// more can be dropped (the caller then reports that compaction cannot help).
/// Step 0 is `history` itself, not a copy.
pub fn shrink_step(history: &[MessageWithParts], step: u32) -> Option<Cow<'_, [MessageWithParts]>> {
    if step == 0 {
        return Some(Cow::Borrowed(history));
    }
    let mut shrunk: Vec<MessageWithParts> = history.iter().map(shrink_message).collect();
    if step == 1 {
        return Some(Cow::Owned(shrunk));
    }
    let starts = turn_starts(&shrunk);
    let turns = starts.len();
    // Halvings that bring the turns down to one; later ones halve the steps
    // of that last turn (one turn of hundreds of tool calls must still fit).
    let turn_halvings = (0..usize::BITS)
        .find(|&h| halved(turns, h) <= 1)
        .unwrap_or(0);
    let halvings = step - 1;
    if halvings <= turn_halvings {
        let kept = halved(turns, halvings);
        let first_kept = starts[turns - kept];
        let mut tail = shrunk.split_off(first_kept);
        insert_note(&mut tail[0], "omitted", omitted_turns_note(turns - kept));
        return Some(Cow::Owned(tail));
    }
    // The last turn alone: its user message, then the newest of its steps.
    let start = starts.last().copied().unwrap_or(0);
    let mut turn = shrunk.split_off(start);
    let body_start = usize::from(!starts.is_empty());
    let steps = turn.len() - body_start;
    let (kept, before) = (
        halved(steps, halvings - turn_halvings),
        halved(steps, halvings - turn_halvings - 1),
    );
    if steps == 0 || kept == before {
        return None;
    }
    turn.drain(body_start..body_start + (steps - kept));
    insert_note(
        &mut turn[0],
        "omitted-steps",
        omitted_steps_note(steps - kept),
    );
    if turns > 1 {
        insert_note(&mut turn[0], "omitted", omitted_turns_note(turns - 1));
    }
    Some(Cow::Owned(turn))
}

/// `total` halved `times`, rounding up, never below one.
fn halved(total: usize, times: u32) -> usize {
    let divisor = 1usize.checked_shl(times).unwrap_or(usize::MAX);
    total.div_ceil(divisor).max(1)
}

/// Tells the summarizer that the oldest steps of the current turn are missing.
pub fn omitted_steps_note(steps: usize) -> String {
    format!(
        "[the {steps} oldest step(s) of this turn were left out of this summary request because they did not fit in the model's context window]"
    )
}

fn insert_note(message: &mut MessageWithParts, suffix: &str, text: String) {
    let note = Part {
        id: format!("{}-{suffix}", message.message.id),
        message_id: message.message.id.clone(),
        session_id: message.message.session_id.clone(),
        kind: PartKind::Text(TextPart {
            text,
            synthetic: true,
            ..TextPart::default()
        }),
        tokens: None,
    };
    message.parts.insert(0, note);
}

/// A copy of `message` as step 1 sends it. Built part by part: a tool output
/// is copied only up to its cut, never whole first (on a read that reaches
/// a window's worth of history, a whole copy would double it).
fn shrink_message(message: &MessageWithParts) -> MessageWithParts {
    MessageWithParts {
        message: message.message.clone(),
        parts: message.parts.iter().map(shrink_part).collect(),
    }
}

fn shrink_part(part: &Part) -> Part {
    let kind = match &part.kind {
        PartKind::File(file) => PartKind::Text(TextPart {
            text: attachment_marker(file),
            synthetic: true,
            ..TextPart::default()
        }),
        PartKind::Tool(tool) => PartKind::Tool(ToolPart {
            call_id: tool.call_id.clone(),
            tool: tool.tool.clone(),
            state: shrink_state(&tool.state),
        }),
        other => other.clone(),
    };
    Part {
        id: part.id.clone(),
        message_id: part.message_id.clone(),
        session_id: part.session_id.clone(),
        kind,
        tokens: None,
    }
}

fn shrink_state(state: &ToolState) -> ToolState {
    match state {
        ToolState::Completed {
            input,
            output,
            title,
            metadata,
            time,
            attachments: _,
        } => ToolState::Completed {
            input: input.clone(),
            output: truncate_for_compaction(output, SHRUNK_TOOL_OUTPUT_CHARS),
            title: title.clone(),
            metadata: metadata.clone(),
            time: time.clone(),
            attachments: Vec::new(),
        },
        ToolState::Error {
            input,
            error,
            metadata,
            time,
        } => ToolState::Error {
            input: input.clone(),
            error: truncate_for_compaction(error, SHRUNK_TOOL_OUTPUT_CHARS),
            metadata: metadata.clone(),
            time: time.clone(),
        },
        ToolState::Pending { .. } | ToolState::Running { .. } => state.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::view::test_history::HistoryBuilder;
    use crate::message::FilePart;

    fn five_turns() -> Vec<MessageWithParts> {
        let mut h = HistoryBuilder::new();
        for n in 0..5 {
            h.user(&format!("turn {n}")).assistant();
            h.tool_done("bash", &"o".repeat(10_000)).finish(1);
        }
        h.part(PartKind::File(FilePart {
            mime: "image/png".into(),
            filename: Some("shot.png".into()),
            url: "data:image/png;base64,AAAA".into(),
        }));
        h.build()
    }

    fn output_len(m: &MessageWithParts) -> usize {
        m.parts
            .iter()
            .find_map(|p| match &p.kind {
                PartKind::Tool(t) => match &t.state {
                    ToolState::Completed { output, .. } => Some(output.chars().count()),
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or(0)
    }

    #[test]
    fn step_zero_is_unchanged_and_step_one_cuts_outputs_and_media() {
        let history = five_turns();
        assert_eq!(shrink_step(&history, 0).as_deref(), Some(&history[..]));
        let step1 = shrink_step(&history, 1).expect("step 1 always exists");
        assert_eq!(step1.len(), history.len());
        assert!(output_len(&step1[1]) < 2_100 && output_len(&step1[1]) > 2_000);
        let last = step1.last().expect("messages");
        assert!(
            matches!(&last.parts.last().expect("part").kind, PartKind::Text(t) if t.text == "[Attached image/png: shot.png]")
        );
    }

    #[test]
    fn later_steps_halve_the_turns_until_one_is_left() {
        let history = five_turns();
        let turns = |step| shrink_step(&history, step).map(|h| turn_starts(&h).len());
        assert_eq!(turns(2), Some(3));
        assert_eq!(turns(3), Some(2));
        assert_eq!(turns(4), Some(1));
        assert_eq!(turns(5), None);
        let step2 = shrink_step(&history, 2).expect("step 2");
        assert!(
            matches!(&step2[0].parts[0].kind, PartKind::Text(t) if t.text == omitted_turns_note(2) && t.synthetic)
        );
        assert!(matches!(&step2[0].parts[1].kind, PartKind::Text(t) if t.text == "turn 2"));
    }

    #[test]
    fn a_single_step_cannot_shrink_past_step_one() {
        let mut h = HistoryBuilder::new();
        h.user("only").assistant().finish(1);
        let history = h.build();
        assert!(shrink_step(&history, 1).is_some());
        assert_eq!(shrink_step(&history, 2), None);
    }

    #[test]
    fn one_turn_of_many_steps_drops_its_oldest_steps() {
        let mut h = HistoryBuilder::new();
        h.user("earlier").assistant().finish(1);
        h.user("read everything");
        for n in 0..300 {
            h.assistant();
            h.tool_done("read", &format!("file {n}")).finish(1);
        }
        let history = h.build();
        let steps = |step| shrink_step(&history, step).map(|h| h.len() - 1);
        assert_eq!(steps(2), Some(300), "first the older turn goes");
        assert_eq!(steps(3), Some(150));
        assert_eq!(steps(4), Some(75));
        let mut step = 4;
        while let Some(kept) = steps(step + 1) {
            step += 1;
            assert!(kept >= 1);
        }
        assert_eq!(steps(step), Some(1), "down to the newest step");
        let step3 = shrink_step(&history, 3).expect("step 3");
        assert!(
            matches!(&step3[0].parts[0].kind, PartKind::Text(t) if t.text == omitted_turns_note(1))
        );
        assert!(
            matches!(&step3[0].parts[1].kind, PartKind::Text(t) if t.text == omitted_steps_note(150))
        );
        assert!(
            matches!(&step3[0].parts[2].kind, PartKind::Text(t) if t.text == "read everything")
        );
    }
}
