use serde_json::json;

use super::test_history::{HistoryBuilder, completed, model};
use super::*;
use crate::message::{MessageError, TextPart, ToolTime};

fn view(history: &[MessageWithParts]) -> Vec<ChatMessage> {
    to_model_messages(history, &model(), ModelViewOptions::default())
}

fn texts(message: &ChatMessage) -> Vec<String> {
    message
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.clone(),
            Content::Reasoning { text, signature } => format!("reasoning:{text}:{signature:?}"),
            Content::ToolCall { id, .. } => format!("call:{id}"),
            Content::ToolResult {
                content, is_error, ..
            } => {
                let Some(Content::Text { text }) = content.first() else {
                    return "result:?".into();
                };
                format!("result{}:{text}", if *is_error { "!" } else { "" })
            }
            Content::Image { mime, .. } => format!("image:{mime}"),
            Content::RedactedReasoning { .. } => "redacted".into(),
        })
        .collect()
}

#[test]
fn order_puts_the_summary_first_then_the_tail_then_the_rest() {
    let mut h = HistoryBuilder::new();
    h.user("tail user")
        .assistant()
        .text("tail answer")
        .finish(1);
    let tail_start = h.messages[0].message.id.clone();
    h.compaction_request(true, Some(tail_start));
    h.summary("the summary");
    h.user("after");
    let ordered = order_for_model(h.build());
    let view = view(&ordered);
    let flat: Vec<String> = view.iter().flat_map(texts).collect();
    assert_eq!(
        flat,
        [
            "What did we do so far?",
            "the summary",
            "tail user",
            "tail answer",
            "after"
        ]
    );
}

#[test]
fn order_hides_earlier_compaction_pairs_inside_the_tail() {
    let mut h = HistoryBuilder::new();
    h.compaction_request(true, None);
    h.summary("old summary");
    h.user("kept").assistant().text("kept answer").finish(1);
    let tail = h.messages[0].message.id.clone();
    h.compaction_request(true, Some(tail));
    h.summary("new summary");
    let flat: Vec<String> = view(&order_for_model(h.build()))
        .iter()
        .flat_map(texts)
        .collect();
    assert_eq!(
        flat,
        [
            "What did we do so far?",
            "new summary",
            "kept",
            "kept answer"
        ]
    );
}

#[test]
fn user_parts_follow_the_spec() {
    let mut h = HistoryBuilder::new();
    h.user("visible");
    h.part(PartKind::Text(TextPart {
        text: "hidden".into(),
        ignored: true,
        ..TextPart::default()
    }));
    h.part(PartKind::Text(TextPart {
        text: "synthetic".into(),
        synthetic: true,
        ..TextPart::default()
    }));
    h.text("");
    h.part(PartKind::File(FilePart {
        mime: "text/plain".into(),
        filename: None,
        url: "file:///a.txt".into(),
    }));
    h.part(PartKind::File(FilePart {
        mime: "image/png".into(),
        filename: Some("a.png".into()),
        url: "data:image/png;base64,iVBO".into(),
    }));
    h.part(PartKind::Subtask(crate::message::SubtaskPart {
        prompt: "p".into(),
        description: "d".into(),
        agent: "general".into(),
        model: None,
    }));
    let history = h.build();
    assert_eq!(
        texts(&view(&history)[0]),
        [
            "visible",
            "synthetic",
            "image:image/png",
            "The following tool was executed by the user"
        ]
    );
    let stripped = to_model_messages(
        &history,
        &model(),
        ModelViewOptions {
            strip_media: true,
            ..Default::default()
        },
    );
    assert_eq!(texts(&stripped[0])[2], "[Attached image/png: a.png]");
}

#[test]
fn tool_states_become_calls_and_results_per_step() {
    let mut h = HistoryBuilder::new();
    h.user("go").assistant().text("checking");
    h.tool_done("bash", "ok output");
    h.tool(
        "bash",
        ToolState::Error {
            input: json!({}),
            error: "exit 1".into(),
            metadata: None,
            time: ToolTime::default(),
        },
    );
    h.tool(
        "bash",
        ToolState::Error {
            input: json!({}),
            error: "Tool execution aborted".into(),
            metadata: Some(json!({"interrupted": true, "output": "partial lines"})),
            time: ToolTime::default(),
        },
    );
    h.tool(
        "read",
        ToolState::Running {
            input: json!({}),
            title: None,
            metadata: None,
            time: ToolTime::default(),
        },
    );
    let mut pruned = completed("big old output");
    if let ToolState::Completed { time, .. } = &mut pruned {
        time.compacted = Some(5);
    }
    h.tool("grep", pruned);
    h.step().text("done");
    let view = view(&h.build());
    assert_eq!(view.len(), 4);
    assert_eq!(view[1].role, ChatRole::Assistant);
    assert_eq!(texts(&view[1])[0], "checking");
    assert_eq!(
        texts(&view[2]),
        [
            "result:ok output",
            "result!:exit 1",
            "result:partial lines",
            "result!:[Tool execution was interrupted]",
            "result:[Old tool result content cleared]",
        ]
    );
    assert_eq!(
        texts(&view[3]),
        ["done"],
        "the second step follows the results"
    );
}

#[test]
fn compaction_view_truncates_outputs_by_characters() {
    assert_eq!(truncate_for_compaction("short", 10), "short");
    assert_eq!(
        truncate_for_compaction("汉字汉字汉", 2),
        "汉字\n[Tool output truncated for compaction: omitted 3 chars]"
    );
}

#[test]
fn errored_assistants_are_skipped_unless_aborted_with_content() {
    let mut h = HistoryBuilder::new();
    h.user("q");
    h.assistant().text("partial answer");
    h.messages
        .last_mut()
        .and_then(|m| m.message.as_assistant_mut())
        .expect("assistant")
        .error = Some(MessageError {
        kind: MessageErrorKind::Aborted,
        message: "interrupted".into(),
    });
    h.assistant().reasoning("thinking only", None);
    h.messages
        .last_mut()
        .and_then(|m| m.message.as_assistant_mut())
        .expect("assistant")
        .error = Some(MessageError {
        kind: MessageErrorKind::Aborted,
        message: "interrupted".into(),
    });
    h.assistant().text("failed");
    h.messages
        .last_mut()
        .and_then(|m| m.message.as_assistant_mut())
        .expect("assistant")
        .error = Some(MessageError {
        kind: MessageErrorKind::Api,
        message: "500".into(),
    });
    h.assistant(); // step-start only
    let flat: Vec<String> = view(&h.build()).iter().flat_map(texts).collect();
    assert_eq!(flat, ["q", "partial answer"]);
}

#[test]
fn reasoning_keeps_signatures_only_for_the_same_model() {
    let mut h = HistoryBuilder::new();
    h.user("q")
        .assistant()
        .reasoning("plan", Some("sig"))
        .reasoning(" ", None)
        .text("");
    h.assistant_with(ModelRef::new("openai", "gpt-5"), false)
        .reasoning("other plan", Some("sig2"))
        .reasoning("  ", None)
        .text("answer");
    let view = view(&h.build());
    assert_eq!(texts(&view[1]), ["reasoning:plan:Some(\"sig\")", " "]);
    assert_eq!(texts(&view[2]), ["other plan", "answer"]);
}

#[test]
fn tool_media_moves_to_the_results_message_when_the_provider_cannot_take_it() {
    let mut h = HistoryBuilder::new();
    h.user("screenshot").assistant();
    let mut state = completed("captured");
    if let ToolState::Completed { attachments, .. } = &mut state {
        attachments.push(FilePart {
            mime: "image/png".into(),
            filename: None,
            url: "data:image/png;base64,iVBO".into(),
        });
    }
    h.tool("screenshot", state);
    let history = h.build();
    let inside = view(&history);
    assert!(
        matches!(&inside[2].content[0], Content::ToolResult { content, .. } if content.len() == 2)
    );
    let outside = to_model_messages(
        &history,
        &model(),
        ModelViewOptions {
            media_in_tool_results: false,
            ..Default::default()
        },
    );
    assert_eq!(
        texts(&outside[2]),
        ["result:captured", TOOL_MEDIA_PROMPT, "image:image/png"]
    );
    assert!(is_well_paired(&outside));
}

#[test]
fn an_interrupted_call_that_left_nothing_says_it_was_interrupted() {
    for (output, want, is_error) in [
        ("", INTERRUPTED_TOOL_RESULT, true),
        ("partial lines\n", "partial lines\n", false),
    ] {
        let mut h = HistoryBuilder::new();
        h.user("go").assistant();
        h.tool(
            "fixture_slow",
            ToolState::Error {
                input: serde_json::json!({}),
                error: "Tool execution aborted".into(),
                metadata: Some(serde_json::json!({ "interrupted": true, "output": output })),
                time: crate::message::ToolTime::default(),
            },
        );
        let messages = to_model_messages(&h.build(), &model(), ModelViewOptions::default());
        let result = messages
            .iter()
            .flat_map(|m| &m.content)
            .find_map(|c| match c {
                Content::ToolResult {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .expect("a tool result");
        assert!(
            matches!(&result.0[0], Content::Text { text } if text == want),
            "{result:?}"
        );
        assert_eq!(result.1, is_error);
    }
}
