//! One automatic compaction end to end, on pure data: plan the summary, write
//! what the loop would write (tail start, summary, auto-continue), read the
//! context back as the store does, and check what the model sees next.

use cairn::context::compaction::{
    AUTO_CONTINUE, SummaryPlan, TailSettings, plan_summary, shrink_step, summary_messages,
};
use cairn::context::view::{ModelViewOptions, is_well_paired, order_for_model, to_model_messages};
use cairn::message::{FinishReason, HistoryScan, MessageWithParts, PartKind, ScanStep};
use cairn::provider::{ChatMessage, Content};

use crate::history;

const SES: &str = "ses";

/// A build-agent answer to `parent` holding `text`.
fn answer(parent: &MessageWithParts, text: &str) -> MessageWithParts {
    let mut message = history::assistant(SES, &parent.message.id, FinishReason::Stop);
    history::push(&mut message, history::text(text));
    message
}

fn read_view(all: &[MessageWithParts]) -> Vec<MessageWithParts> {
    let mut scan = HistoryScan::new();
    let mut out = Vec::new();
    for message in all.iter().rev() {
        out.push(message.clone());
        if scan.push(message) == ScanStep::KeepAndStop {
            break;
        }
    }
    out.reverse();
    out
}

fn flat(messages: &[ChatMessage]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|c| match c {
            Content::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn after_compaction_the_model_sees_summary_tail_and_continue() {
    let mut all = Vec::new();
    for n in 0..4 {
        let u = history::user(SES, &format!("request {n}"));
        let a = answer(&u, &format!("answer {n} ").repeat(500));
        all.push(u);
        all.push(a);
    }
    let request = history::compaction_request(SES, None);
    let request_id = request.message.id.clone();
    all.push(request);

    // A small window: the 2,000-token tail budget keeps only the newest turn.
    let context = read_view(&all);
    let SummaryPlan {
        head,
        tail_start_id,
        prompt,
        first_step,
        ..
    } = plan_summary(context.clone(), &request_id, TailSettings::default(), 8_000)
        .expect("planned");
    assert_eq!(tail_start_id.as_deref(), Some(all[6].message.id.as_str()));
    assert_eq!(head.len(), 6);
    assert_eq!(first_step, 0);
    let request_messages = summary_messages(
        &shrink_step(&head, first_step).expect("step"),
        &history::model(),
        &prompt,
        true,
    );
    assert!(is_well_paired(&request_messages));
    assert_eq!(flat(&request_messages).last(), Some(&prompt));
    assert!(
        !flat(&request_messages)
            .iter()
            .any(|t| t.starts_with("request 3"))
    );

    // What the loop writes: the tail start, the summary, the continue message.
    if let PartKind::Compaction(c) = &mut all[8].parts[0].kind {
        c.tail_start_id = tail_start_id;
    }
    let summary = history::summary(SES, &all[8].message.id, "## Goal\nthe summary");
    all.push(summary);
    let mut resume = history::user(SES, AUTO_CONTINUE);
    if let PartKind::Text(t) = &mut resume.parts[0].kind {
        t.synthetic = true;
        t.metadata = Some(serde_json::json!({ "compaction_continue": true }));
    }
    all.push(resume);

    let next = to_model_messages(
        &order_for_model(read_view(&all)),
        &history::model(),
        ModelViewOptions::default(),
    );
    let texts = flat(&next);
    assert_eq!(texts[0], "What did we do so far?");
    assert_eq!(texts[1], "## Goal\nthe summary");
    assert_eq!(texts[2], "request 3");
    assert!(texts[3].starts_with("answer 3"));
    assert_eq!(texts[4], AUTO_CONTINUE);
    assert_eq!(
        texts.len(),
        5,
        "older turns are behind the summary: {texts:?}"
    );
}
