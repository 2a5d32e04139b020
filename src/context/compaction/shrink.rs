//! The shrink ladder for a summary request that itself overflows (DESIGN,
//! "Never dead-end"): instead of giving up like upstream, cut the input and
//! retry. Step 0 is the history as is; step 1 cuts tool outputs to 2,000
//! characters and strips media; each later step also drops the oldest half of
//! the turns still kept, until one turn is left.

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
    let keep = |step: u32| -> usize {
        let divisor = 1usize.checked_shl(step - 1).unwrap_or(usize::MAX);
        turns.div_ceil(divisor).max(1)
    };
    let kept = keep(step);
    if turns == 0 || kept == keep(step - 1).min(turns) {
        return None;
    }
    let first_kept = starts[turns - kept];
    let dropped = turns - kept;
    let mut tail = shrunk.split_off(first_kept);
    let note_message = &mut tail[0];
    let note = Part {
        id: format!("{}-omitted", note_message.message.id),
        message_id: note_message.message.id.clone(),
        session_id: note_message.message.session_id.clone(),
        kind: PartKind::Text(TextPart {
            text: omitted_turns_note(dropped),
            synthetic: true,
            ..TextPart::default()
        }),
        tokens: None,
    };
    note_message.parts.insert(0, note);
    Some(Cow::Owned(tail))
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
    fn a_single_turn_cannot_shrink_past_step_one() {
        let mut h = HistoryBuilder::new();
        h.user("only").assistant().finish(1);
        let history = h.build();
        assert!(shrink_step(&history, 1).is_some());
        assert_eq!(shrink_step(&history, 2), None);
    }
}
