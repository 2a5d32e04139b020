use super::*;
use crate::context::view::test_history::HistoryBuilder;

#[test]
fn previous_summary_is_the_latest_completed_one() {
    let mut h = HistoryBuilder::new();
    h.user("a").assistant().finish(1);
    h.compaction_request(true, None);
    h.summary("first summary");
    h.user("b").assistant().finish(1);
    h.compaction_request(false, None);
    h.summary("second summary");
    h.user("c");
    let history = h.build();
    assert_eq!(
        find_previous_summary(&history).as_deref(),
        Some("second summary")
    );
    let visible = hide_completed_compactions(history);
    let texts: Vec<String> = visible
        .iter()
        .map(|m| match &m.parts[0].kind {
            PartKind::Text(t) => t.text.clone(),
            PartKind::StepStart(_) => "step".into(),
            other => other.type_name().into(),
        })
        .collect();
    assert_eq!(texts, ["a", "step", "b", "step", "c"]);
    assert_eq!(find_previous_summary(&visible), None);
}

#[test]
fn a_failed_summary_is_not_a_previous_summary() {
    let mut h = HistoryBuilder::new();
    h.user("a");
    h.compaction_request(true, None);
    h.assistant_with(crate::context::view::test_history::model(), true)
        .text("half");
    let history = h.build();
    assert_eq!(find_previous_summary(&history), None);
    assert_eq!(hide_completed_compactions(history.clone()), history);
}

#[test]
fn overflow_replay_summarizes_before_the_last_real_user_message() {
    let mut h = HistoryBuilder::new();
    h.user("first").assistant().finish(1);
    h.user("huge paste");
    let history = h.build();
    assert_eq!(overflow_replay(&history), Some(2));
    let mut h = HistoryBuilder::new();
    h.user("only message");
    assert_eq!(overflow_replay(&h.build()), None, "nothing real before it");
    let mut h = HistoryBuilder::new();
    h.compaction_request(true, None);
    h.summary("s");
    let mut history = h.build();
    history.truncate(1);
    assert_eq!(
        overflow_replay(&history),
        None,
        "no real user message at all"
    );
}

#[test]
fn auto_continue_text_is_upstreams() {
    assert_eq!(
        AUTO_CONTINUE,
        "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
    );
}
