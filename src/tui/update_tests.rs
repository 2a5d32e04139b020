//! Behaviour tests of `update` and `apply_event`: what the user does and what
//! the session says, checked through state, effects and rendered rows.

use std::sync::Arc;

use crate::bus::{DeltaField, Event, SessionStatus};
use crate::message::*;
use crate::permission::{PermissionAnswer, PermissionRequest};
use crate::session::command::Command;

use super::TuiExit;
use super::action::Action;
use super::app::{App, Effect, Overlay};
use super::fixtures::*;
use super::update::update;

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        update(app, Action::Insert(c));
    }
}

fn sent(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|e| match e {
            Effect::Send(Command::Prompt { text, agent, .. }) => {
                format!("prompt[{}] {text}", agent.clone().unwrap_or_default())
            }
            Effect::Send(command) => format!("{command:?}"),
            other => format!("{other:?}"),
        })
        .collect()
}

fn busy(app: &mut App) {
    app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Busy,
    });
}

#[test]
fn deltas_append_then_part_updated_replaces_the_text() {
    let mut app = app(Vec::new());
    let a = assistant("msg_1", "msg_0");
    app.apply_event(&Event::MessageUpdated {
        message: Arc::new(a.clone()),
    });
    app.apply_event(&part_event(part("prt_1", &a, text(""))));
    for delta in ["Hel", "lo"] {
        app.apply_event(&Event::PartDelta {
            session_id: SESSION.into(),
            message_id: a.id.clone(),
            part_id: "prt_1".into(),
            field: DeltaField::Text,
            delta: delta.into(),
        });
    }
    let shown = |app: &App| match &app.timeline.messages()[0].parts[0].kind {
        PartKind::Text(t) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    };
    assert_eq!(shown(&app), "Hello");
    assert!(render(&mut app, 40, 8).contains("Hello"));
    app.apply_event(&part_event(part("prt_1", &a, text("Hello, world."))));
    assert_eq!(shown(&app), "Hello, world.");
    assert!(
        render(&mut app, 40, 8).contains("Hello, world."),
        "cached lines were invalidated"
    );
}

#[test]
fn events_of_other_sessions_are_ignored() {
    let mut app = app(Vec::new());
    app.apply_event(&Event::Error {
        session_id: "ses_other".into(),
        message: "boom".into(),
    });
    assert!(app.timeline.notes().is_empty());
}

#[test]
fn parts_arriving_before_their_message_are_kept() {
    let mut app = app(Vec::new());
    let a = assistant("msg_1", "msg_0");
    app.apply_event(&part_event(part("prt_1", &a, text("early"))));
    app.apply_event(&Event::MessageUpdated {
        message: Arc::new(a),
    });
    assert_eq!(app.timeline.messages()[0].parts.len(), 1);
}

#[test]
fn enter_sends_a_prompt_with_the_current_agent() {
    let mut app = app(Vec::new());
    update(&mut app, Action::Tab);
    typed(&mut app, "hello");
    let effects = update(&mut app, Action::Enter);
    assert_eq!(sent(&effects), ["prompt[plan] hello"]);
    assert!(app.composer.is_empty());
}

#[test]
fn messages_typed_while_busy_are_queued_then_sent_when_idle() {
    let mut app = app(Vec::new());
    busy(&mut app);
    typed(&mut app, "next");
    assert!(update(&mut app, Action::Enter).is_empty());
    assert!(render(&mut app, 60, 10).contains("⏸ queued next"));
    let effects = app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Idle,
    });
    assert_eq!(sent(&effects), ["prompt[build] next"]);
    assert!(app.queued.is_empty());
}

#[test]
fn escape_interrupts_and_a_second_escape_returns_the_queue_to_the_composer() {
    let mut app = app(Vec::new());
    busy(&mut app);
    typed(&mut app, "later");
    update(&mut app, Action::Enter);
    typed(&mut app, "and more");
    assert_eq!(sent(&update(&mut app, Action::Escape)), ["Interrupt"]);
    let flash = app.flash.clone().unwrap_or_default();
    assert!(flash.contains("queued message waits"), "{flash}");
    // The interrupt makes the loop idle: the queue is held, and says so.
    let effects = app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Idle,
    });
    assert!(effects.is_empty());
    assert_eq!(
        app.flash.as_deref(),
        Some(super::app::QUEUE_HELD),
        "interrupting… gives way to what the queue waits for"
    );
    app.now += 200;
    update(&mut app, Action::Escape);
    assert!(app.queued.is_empty());
    assert_eq!(app.composer.text(), "later\nand more");
    assert!(app.tick(NOW + 5_000).is_empty());
}

#[test]
fn ctrl_c_interrupts_a_busy_turn_before_clearing_or_quitting() {
    let mut app = app(Vec::new());
    busy(&mut app);
    typed(&mut app, "draft");
    assert_eq!(sent(&update(&mut app, Action::CtrlC)), ["Interrupt"]);
    assert_eq!(
        app.composer.text(),
        "draft",
        "the draft survives the interrupt"
    );
    assert_eq!(app.exit, None);
    app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Idle,
    });
    app.now += 2_000;
    assert!(sent(&update(&mut app, Action::CtrlC)).is_empty());
    assert!(app.composer.is_empty());
    update(&mut app, Action::CtrlC);
    assert_eq!(app.exit, None);
    update(&mut app, Action::CtrlC);
    assert_eq!(app.exit, Some(TuiExit::Quit));
}

#[test]
fn home_and_end_edit_a_draft_and_scroll_an_empty_composer() {
    let mut app = app(exchange(30));
    typed(&mut app, "middle");
    update(&mut app, Action::Home);
    assert_eq!(app.composer.cursor(), 0);
    update(&mut app, Action::Insert('>'));
    update(&mut app, Action::End);
    update(&mut app, Action::Insert('<'));
    assert_eq!(app.composer.text(), ">middle<");
    app.composer.clear();
    update(&mut app, Action::Home);
    assert!(
        app.scroll.anchor.is_some(),
        "Home on an empty composer scrolls up"
    );
    update(&mut app, Action::End);
    assert!(app.scroll.anchor.is_none());
}

#[test]
fn a_queue_held_by_esc_waits_for_enter_and_goes_before_new_text() {
    let mut app = app(Vec::new());
    busy(&mut app);
    typed(&mut app, "later");
    update(&mut app, Action::Enter);
    update(&mut app, Action::Escape);
    app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Idle,
    });
    // Not sent at once, nor when the double-press window has passed.
    assert!(app.tick(NOW + 1_500).is_empty());
    assert!(app.tick(NOW + 60_000).is_empty());
    assert_eq!(app.queued, ["later"]);
    assert!(!app.needs_tick(), "a held queue needs no clock");
    // Enter on an empty composer sends it.
    assert_eq!(
        sent(&update(&mut app, Action::Enter)),
        ["prompt[build] later"]
    );
    assert_eq!(app.flash, None);
    // Held again, then new text sent: the queue goes first.
    busy(&mut app);
    typed(&mut app, "first");
    update(&mut app, Action::Enter);
    app.now += 5_000;
    update(&mut app, Action::Escape);
    app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Idle,
    });
    typed(&mut app, "second");
    assert_eq!(
        sent(&update(&mut app, Action::Enter)),
        ["prompt[build] first", "prompt[build] second"]
    );
}

#[test]
fn ctrl_c_clears_input_then_quits_on_a_double_press() {
    let mut app = app(Vec::new());
    typed(&mut app, "draft");
    update(&mut app, Action::CtrlC);
    assert!(app.composer.is_empty());
    update(&mut app, Action::CtrlC);
    assert_eq!(app.exit, None);
    update(&mut app, Action::CtrlC);
    assert_eq!(app.exit, Some(TuiExit::Quit));
}

#[test]
fn slash_commands_become_commands_and_overlays() {
    let mut app = app(exchange(1));
    typed(&mut app, "/compact keep the API");
    assert_eq!(
        sent(&update(&mut app, Action::Enter)),
        ["Compact { instructions: Some(\"keep the API\") }"]
    );
    typed(&mut app, "/prune");
    assert_eq!(sent(&update(&mut app, Action::Enter)), ["Prune"]);
    typed(&mut app, "/context");
    assert_eq!(sent(&update(&mut app, Action::Enter)), ["RequestContext"]);
    assert_eq!(app.overlay, Some(Overlay::Context(None)));
    update(&mut app, Action::Escape);
    typed(&mut app, "!ls -la");
    assert_eq!(
        sent(&update(&mut app, Action::Enter)),
        ["Shell { command: \"ls -la\" }"]
    );
    typed(&mut app, "/export");
    let effects = update(&mut app, Action::Enter);
    assert!(
        matches!(&effects[..], [Effect::Export { to: None }]),
        "{effects:?}"
    );
    typed(&mut app, "/export notes/talk.md");
    let effects = update(&mut app, Action::Enter);
    assert!(
        matches!(&effects[..], [Effect::Export { to: Some(to) }] if to == "notes/talk.md"),
        "{effects:?}"
    );
}

#[test]
fn slash_popup_completes_on_tab() {
    let mut app = app(Vec::new());
    typed(&mut app, "/pru");
    assert_eq!(app.completion.len(), 1);
    update(&mut app, Action::Tab);
    assert_eq!(app.composer.text(), "/prune");
    assert_eq!(
        app.agent, "build",
        "Tab completed instead of switching agent"
    );
}

#[test]
fn model_picker_changes_the_model_of_the_next_prompt() {
    let mut app = app(Vec::new());
    typed(&mut app, "/model");
    update(&mut app, Action::Enter);
    update(&mut app, Action::Down);
    update(&mut app, Action::Enter);
    assert_eq!(app.model_label, "llamacpp/local");
    typed(&mut app, "hi");
    match &update(&mut app, Action::Enter)[..] {
        [Effect::Send(Command::Prompt { model, .. })] => {
            assert_eq!(
                model.as_ref().map(ToString::to_string).as_deref(),
                Some("llamacpp/local")
            )
        }
        other => panic!("expected a prompt, got {other:?}"),
    }
}

fn ask(app: &mut App, id: &str) {
    ask_with(
        app,
        PermissionRequest {
            id: id.into(),
            session_id: SESSION.into(),
            permission: "bash".into(),
            patterns: vec!["git status -s".into()],
            always: vec!["git status -s".into()],
            always_broad: vec!["git status *".into()],
            title: "Run: git status -s".into(),
            ..Default::default()
        },
    );
}

fn ask_with(app: &mut App, request: PermissionRequest) {
    app.apply_event(&Event::PermissionAsked {
        session_id: SESSION.into(),
        request: Arc::new(request),
    });
}

fn answers(effects: &[Effect]) -> Vec<(String, PermissionAnswer)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send(Command::AnswerPermission { request_id, answer }) => {
                Some((request_id.clone(), answer.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Moves the clock past the open dialog's guard time.
fn past_guard(app: &mut App) {
    app.now = app.permission_dialog.armed_at;
}

#[test]
fn permission_reject_with_a_typed_reason() {
    let mut app = app(Vec::new());
    ask(&mut app, "per_1");
    past_guard(&mut app);
    for _ in 0..4 {
        update(&mut app, Action::Down);
    }
    assert!(answers(&update(&mut app, Action::Enter)).is_empty());
    typed(&mut app, "not now");
    let effects = update(&mut app, Action::Enter);
    assert_eq!(
        answers(&effects),
        [(
            "per_1".to_string(),
            PermissionAnswer::Reject {
                message: Some("not now".into())
            }
        )]
    );
    assert!(app.permissions.is_empty());
    assert!(app.composer.is_empty(), "the reason is not a message");
}

/// The typing race of issue 11: "also check the readme" typed while a
/// dialog opens mid-sentence. No letter answers it (the old dialog took
/// the `a` as "always"), and the Enter that ends the sentence queues it.
#[test]
fn text_typed_as_a_dialog_opens_stays_in_the_composer_and_answers_nothing() {
    let mut app = app(Vec::new());
    busy(&mut app);
    typed(&mut app, "also check ");
    ask(&mut app, "per_1");
    let mut effects = Vec::new();
    for c in "the readme, and yes: 1 2 3 o a y r".chars() {
        app.now += 150; // well past the guard by the end
        effects.extend(update(&mut app, Action::Insert(c)));
    }
    assert!(app.now > app.permission_dialog.armed_at);
    effects.extend(update(&mut app, Action::Enter));
    assert!(answers(&effects).is_empty(), "answered: {effects:?}");
    assert_eq!(app.permissions.len(), 1, "the dialog is still open");
    assert_eq!(
        app.queued,
        ["also check the readme, and yes: 1 2 3 o a y r".to_string()]
    );
    // Back to the dialog only on purpose: ↑/↓ focus it, Enter alone still
    // answers nothing, ↓ chooses "Allow once", Enter then answers.
    update(&mut app, Action::Down);
    assert!(!app.permission_dialog.composer_focused);
    assert!(answers(&update(&mut app, Action::Enter)).is_empty());
    update(&mut app, Action::Down);
    let effects = update(&mut app, Action::Enter);
    assert_eq!(
        answers(&effects),
        [("per_1".to_string(), PermissionAnswer::Once)]
    );
}

/// Issue #28's habit Enter: text typed while the model streams, the dialog
/// opens, and the Enter meant to send the text comes after the guard time.
/// Nothing is chosen until ↑/↓ choose, so that Enter sends (or queues) the
/// message and answers nothing; so does any number of Enters after it.
#[test]
fn a_habit_enter_sends_the_message_and_answers_nothing() {
    let mut app = app(Vec::new());
    busy(&mut app);
    typed(&mut app, "then run the tests");
    ask(&mut app, "per_1");
    assert!(!app.permission_dialog.composer_focused);
    for wait in [0, 400, 800, 2_000] {
        app.now += wait;
        let effects = update(&mut app, Action::Enter);
        assert!(answers(&effects).is_empty(), "answered: {effects:?}");
    }
    assert_eq!(app.permissions.len(), 1, "the dialog is still open");
    assert_eq!(app.queued, ["then run the tests".to_string()]);
    assert_eq!(app.permission_dialog.selected, None);
}

#[test]
fn keys_are_ignored_for_the_guard_time_and_longer_after_typing() {
    let mut app = app(Vec::new());
    app.permission_guard.quiet_ms = 400;
    app.permission_guard.typing_ms = 800;
    ask(&mut app, "per_1");
    app.now += 399;
    update(&mut app, Action::Down);
    assert_eq!(app.permission_dialog.selected, None, "too early to choose");
    assert!(answers(&update(&mut app, Action::Escape)).is_empty());
    app.now += 1;
    update(&mut app, Action::Down);
    assert_eq!(
        answers(&update(&mut app, Action::Enter)),
        [("per_1".to_string(), PermissionAnswer::Once)]
    );
    // That Enter was a key in the last second: the next dialog waits longer.
    let opened = app.now;
    ask(&mut app, "per_2");
    app.now = opened + 799;
    assert!(answers(&update(&mut app, Action::Escape)).is_empty());
    app.now = opened + 800;
    assert_eq!(
        answers(&update(&mut app, Action::Escape)),
        [(
            "per_2".to_string(),
            PermissionAnswer::Reject { message: None }
        )]
    );
}

#[test]
fn a_double_enter_answers_one_of_two_queued_dialogs() {
    let mut app = app(Vec::new());
    ask(&mut app, "per_1");
    ask(&mut app, "per_2");
    past_guard(&mut app);
    update(&mut app, Action::Down);
    let first = update(&mut app, Action::Enter);
    app.now += 120;
    let second = update(&mut app, Action::Enter);
    past_guard(&mut app);
    let third = update(&mut app, Action::Enter);
    assert_eq!(answers(&first).len(), 1);
    assert!(answers(&second).is_empty(), "the next dialog is guarded");
    assert!(answers(&third).is_empty(), "and chooses nothing by itself");
    assert_eq!(app.permissions.len(), 1);
}

#[test]
fn arrows_choose_the_exact_or_the_broad_always() {
    let mut app = app(Vec::new());
    ask(&mut app, "per_1");
    past_guard(&mut app);
    update(&mut app, Action::Down);
    update(&mut app, Action::Down);
    assert_eq!(
        answers(&update(&mut app, Action::Enter)),
        [("per_1".to_string(), PermissionAnswer::Always)]
    );
    ask(&mut app, "per_2");
    past_guard(&mut app);
    update(&mut app, Action::Down);
    update(&mut app, Action::Down);
    update(&mut app, Action::Down);
    assert_eq!(
        answers(&update(&mut app, Action::Enter)),
        [("per_2".to_string(), PermissionAnswer::AlwaysBroad)]
    );
}

#[test]
fn page_keys_scroll_the_transcript_behind_an_open_dialog() {
    let history: Vec<MessageWithParts> = (0..30).flat_map(exchange).collect();
    let mut app = app(history);
    ask(&mut app, "per_1");
    let before = render(&mut app, 60, 30);
    update(&mut app, Action::PageUp);
    let screen = render(&mut app, 60, 30);
    assert!(app.scroll.anchor.is_some(), "scrolled away from the bottom");
    assert_ne!(before, screen);
    assert!(screen.contains("permission: bash"), "{screen}");
    assert_eq!(app.permissions.len(), 1);
}

#[test]
fn a_long_preview_scrolls_inside_the_dialog() {
    let mut app = app(Vec::new());
    let content: String = (1..=80).map(|n| format!("line {n}\n")).collect();
    ask_with(
        &mut app,
        PermissionRequest {
            id: "per_1".into(),
            session_id: SESSION.into(),
            permission: "edit".into(),
            patterns: vec!["notes.txt".into()],
            title: "Write notes.txt".into(),
            preview: Some(crate::permission::Preview::Content {
                path: "notes.txt".into(),
                content,
            }),
            ..Default::default()
        },
    );
    let before = render(&mut app, 60, 30);
    assert!(before.contains("line 1 ") && !before.contains("line 40"));
    for _ in 0..40 {
        update(&mut app, Action::ScrollLines(1));
    }
    let after = render(&mut app, 60, 30);
    assert!(
        after.contains("line 41") && !after.contains("line 1 "),
        "{after}"
    );
}

#[test]
fn scrolled_up_view_stays_put_while_new_text_arrives() {
    let history: Vec<MessageWithParts> = (0..30).flat_map(exchange).collect();
    let mut app = app(history);
    render(&mut app, 60, 20);
    update(&mut app, Action::PageUp);
    let before = render(&mut app, 60, 20);
    assert!(before.contains("↓ newer below"));
    let u = user("msg_99999a");
    app.apply_event(&Event::MessageUpdated {
        message: Arc::new(u.clone()),
    });
    app.apply_event(&part_event(part(
        "prt_99999a",
        &u,
        text("brand new question"),
    )));
    let after = render(&mut app, 60, 20);
    assert_eq!(before, after);
    update(&mut app, Action::ScrollBottom);
    assert!(render(&mut app, 60, 20).contains("brand new question"));
}

#[test]
fn home_shows_the_first_message_and_scrolling_down_returns_to_follow() {
    let history: Vec<MessageWithParts> = (0..10).flat_map(exchange).collect();
    let mut app = app(history);
    update(&mut app, Action::Home);
    assert!(render(&mut app, 60, 20).contains("question number 0"));
    for _ in 0..40 {
        update(&mut app, Action::PageDown);
    }
    render(&mut app, 60, 20);
    assert!(
        app.scroll.anchor.is_none(),
        "reaching the bottom resumes following"
    );
}

#[test]
fn only_blocks_that_reach_the_screen_are_wrapped() {
    let history: Vec<MessageWithParts> = (0..2_000).flat_map(exchange).collect();
    let mut app = app(history);
    let screen = render(&mut app, 80, 30);
    assert!(screen.contains("question number 1999"));
    assert!(
        app.viewport.cached_blocks() < 20,
        "{} blocks wrapped",
        app.viewport.cached_blocks()
    );
}

#[test]
fn lag_asks_for_a_reload_and_the_reload_replaces_the_transcript() {
    let mut app = app(exchange(1));
    assert!(matches!(app.lagged()[..], [Effect::Reload]));
    app.reloaded(exchange(7), false);
    let screen = render(&mut app, 60, 16);
    assert!(screen.contains("question number 7"));
    assert!(!screen.contains("question number 1:"));
}

#[test]
fn ctrl_o_expands_a_long_tool_output() {
    let u = user("msg_1a");
    let a = assistant("msg_1b", &u.id);
    let output: String = (1..=30).map(|n| format!("out {n}\n")).collect();
    let card = tool(
        "bash",
        ToolState::Completed {
            input: bash_input("seq 30"),
            output,
            title: "seq".into(),
            metadata: serde_json::json!({}),
            time: span(3_000, Some(10)),
            attachments: vec![],
        },
    );
    let mut app = app(vec![with_parts(a.clone(), vec![part("prt_1", &a, card)])]);
    let collapsed = render(&mut app, 60, 40);
    assert!(collapsed.contains("out 30") && !collapsed.contains("out 20"));
    update(&mut app, Action::ToggleDetails);
    let expanded = render(&mut app, 60, 40);
    assert!(expanded.contains("out 20") && expanded.contains("out 30"));
}

#[test]
fn reasoning_is_folded_until_ctrl_t() {
    let a = assistant("msg_1b", "msg_1a");
    let thinking = PartKind::Reasoning(ReasoningPart {
        text: "first I read the file\nthen the secret second thought".into(),
        ..Default::default()
    });
    let mut app = app(vec![with_parts(
        a.clone(),
        vec![part("prt_1", &a, thinking)],
    )]);
    let folded = render(&mut app, 70, 10);
    assert!(folded.contains("▸ thinking: first I read the file"));
    assert!(!folded.contains("secret second thought"));
    update(&mut app, Action::ToggleReasoning);
    assert!(render(&mut app, 70, 10).contains("secret second thought"));
}

#[test]
fn retry_countdown_and_errors_show_inline() {
    let mut app = app(Vec::new());
    app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Retrying {
            attempt: 2,
            message: "429 rate limited".into(),
            next_at: NOW + 4_000,
        },
    });
    app.apply_event(&Event::Error {
        session_id: SESSION.into(),
        message: "the provider refused the key; check ANTHROPIC_API_KEY".into(),
    });
    let screen = render(&mut app, 80, 10);
    assert!(
        screen.contains("↻ retrying in 4s (attempt 2): 429 rate limited"),
        "{screen}"
    );
    assert!(screen.contains("✗ the provider refused the key; check ANTHROPIC_API_KEY"));
    assert!(app.needs_tick(), "a countdown needs the 1 s tick");
}

#[test]
fn idle_screen_needs_no_tick() {
    let app = app(exchange(1));
    assert!(!app.needs_tick());
}

#[test]
fn slash_skills_lists_the_session_directory_skills() {
    let dir = tempfile::tempdir().expect("tempdir");
    let skill = dir.path().join(".claude/skills/pdf");
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: pdf\ndescription: Fill PDF forms\n---\nbody\n",
    )
    .expect("write");
    let mut app = app(Vec::new());
    app.session.directory = dir.path().display().to_string();
    typed(&mut app, "/skills");
    update(&mut app, Action::Escape); // close the completion popup
    typed(&mut app, "");
    let effects = update(&mut app, Action::Enter);
    assert!(effects.is_empty(), "{effects:?}");
    match &app.overlay {
        Some(Overlay::Picker(picker)) => {
            assert_eq!(
                picker.entries,
                [("pdf".to_string(), "pdf  ·  Fill PDF forms".to_string())]
            )
        }
        other => panic!("expected the skills list, got {other:?}"),
    }
}
