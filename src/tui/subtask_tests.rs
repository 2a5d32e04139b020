//! Subtask cards, opening a child session and leaving it, and a child's
//! permission ask in the parent's dialog: rendered frames (insta, reviewed
//! by eye) and behaviour through `update` / `apply_event`.

use std::sync::Arc;

use insta::assert_snapshot;
use serde_json::json;

use crate::bus::{Event, SessionStatus};
use crate::message::*;
use crate::permission::{PermissionAnswer, PermissionRequest};
use crate::session::command::Command;

use super::action::Action;
use super::app::{App, Effect, Overlay, PickerKind};
use super::fixtures::*;
use super::update::update;

const CHILD: &str = "ses_child";

fn task_input(description: &str, agent: &str) -> serde_json::Value {
    json!({ "description": description, "prompt": "look", "subagent_type": agent })
}

fn task_part(id: &str, message: &Message, call: &str, state: ToolState) -> Part {
    let mut part = part(id, message, tool("task", state));
    if let PartKind::Tool(tool) = &mut part.kind {
        tool.call_id = call.into();
    }
    part
}

fn running_task(child: &str, description: &str, agent: &str, ago: i64) -> ToolState {
    ToolState::Running {
        input: task_input(description, agent),
        title: Some(description.into()),
        metadata: Some(json!({ "session_id": child, "agent": agent })),
        time: span(ago, None),
    }
}

/// A parent with one running `task` call to explore (child `ses_child`).
fn parent_with_task() -> (App, Message) {
    let u = user("msg_00001a");
    let a = assistant("msg_00001b", &u.id);
    let app = app(vec![
        with_parts(
            u.clone(),
            vec![part("prt_0", &u, text("where is the marker?"))],
        ),
        with_parts(
            a.clone(),
            vec![task_part(
                "prt_1",
                &a,
                "call_t1",
                running_task(CHILD, "find the marker", "explore", 4_000),
            )],
        ),
    ]);
    (app, a)
}

fn child_message(id: &str, tokens: u64) -> Message {
    let mut message = assistant(id, "msg_c0");
    message.session_id = CHILD.into();
    if let Some(a) = message.as_assistant_mut() {
        a.agent = "explore".into();
        a.finish = None;
        a.tokens.input = tokens;
    }
    message
}

fn child_tool(message: &Message, id: &str, name: &str, state: ToolState) -> Event {
    let mut part = part(id, message, tool(name, state));
    part.session_id = CHILD.into();
    if let PartKind::Tool(tool) = &mut part.kind {
        tool.call_id = format!("call_{id}");
    }
    part_event(part)
}

fn grep_running(pattern: &str) -> ToolState {
    ToolState::Running {
        input: json!({ "pattern": pattern }),
        title: None,
        metadata: None,
        time: span(1_000, None),
    }
}

fn done(input: serde_json::Value) -> ToolState {
    ToolState::Completed {
        input,
        output: "found".into(),
        title: String::new(),
        metadata: json!({}),
        time: span(2_000, Some(100)),
        attachments: vec![],
    }
}

/// The child has read one file, is grepping, and its context is 12.4k.
fn child_works(app: &mut App) -> Message {
    let m = child_message("msg_c1", 12_400);
    app.apply_event(&Event::MessageUpdated {
        message: Arc::new(m.clone()),
    });
    app.apply_event(&child_tool(
        &m,
        "c1",
        "read",
        done(json!({ "file_path": "notes.txt" })),
    ));
    app.apply_event(&child_tool(&m, "c2", "grep", grep_running("marker")));
    m
}

/// Every state of the card, one under the other.
fn cards_screen(width: u16) -> String {
    let (mut app, a) = parent_with_task();
    child_works(&mut app);
    let finished = [
        (
            "prt_2",
            "call_t2",
            ToolState::Completed {
                input: task_input("summarise the README", "general"),
                output: "task_id: ses_done (pass it as session_id to continue this task)\n\n<task_result>\nREADME.md:1 says cairn is a terminal coding agent.\n</task_result>".into(),
                title: "summarise the README".into(),
                metadata: json!({ "session_id": "ses_done", "agent": "general" }),
                time: span(30_000, Some(4_200)),
                attachments: vec![],
            },
        ),
        (
            "prt_3",
            "call_t3",
            ToolState::Error {
                input: task_input("run the slow check", "general"),
                error: "interrupted".into(),
                metadata: Some(json!({ "interrupted": true })),
                time: span(20_000, Some(1_500)),
            },
        ),
        (
            "prt_4",
            "call_t4",
            ToolState::Error {
                input: task_input("ask the oracle", "oracle"),
                error: "Unknown agent `oracle`. The agents you can delegate to are: general, explore.".into(),
                metadata: None,
                time: span(10_000, Some(20)),
            },
        ),
    ];
    for (id, call, state) in finished {
        app.apply_event(&part_event(task_part(id, &a, call, state)));
    }
    render(&mut app, width, 24)
}

#[test]
fn subtask_cards_at_120_columns() {
    assert_snapshot!(cards_screen(120));
}

#[test]
fn subtask_cards_at_60_columns() {
    assert_snapshot!(cards_screen(60));
}

#[test]
fn subtask_cards_at_40_columns() {
    assert_snapshot!(cards_screen(40));
}

#[test]
fn the_card_follows_the_child_live() {
    let (mut app, _) = parent_with_task();
    let screen = render(&mut app, 100, 12);
    assert!(screen.contains("thinking"), "{screen}");
    let m = child_works(&mut app);
    let screen = render(&mut app, 100, 12);
    assert!(
        screen.contains("grep marker · 2 tools · 12k tokens"),
        "{screen}"
    );
    app.apply_event(&child_tool(&m, "c2", "grep", done(json!({}))));
    let screen = render(&mut app, 100, 12);
    assert!(screen.contains("thinking · 2 tools"), "{screen}");
    // Nothing of the child's transcript is drawn in the parent.
    assert!(!screen.contains("found"), "{screen}");
}

#[test]
fn an_interrupted_card_still_opens_the_child_it_started() {
    let (mut app, a) = parent_with_task();
    app.apply_event(&part_event(task_part(
        "prt_1",
        &a,
        "call_t1",
        ToolState::Error {
            input: task_input("find the marker", "explore"),
            error: "interrupted".into(),
            metadata: Some(json!({ "interrupted": true, "output": "" })),
            time: span(4_000, Some(3_000)),
        },
    )));
    let screen = render(&mut app, 100, 12);
    assert!(screen.contains("interrupted · 3.0s"), "{screen}");
    let effects = update(&mut app, Action::OpenSubtask);
    assert!(
        matches!(effects.as_slice(), [Effect::LoadChild(id)] if id == CHILD),
        "{effects:?}"
    );
}

/// Scrolled up in the parent, opens the child, which fills with its stored
/// history and its live events, while the parent's go to the parent; Esc
/// comes back to the same place.
#[test]
fn opening_a_child_and_going_back_keeps_the_parents_place() {
    let (mut app, a) = parent_with_task();
    for n in 2..40 {
        app.apply_event(&part_event(part(
            &format!("prt_{n:02}"),
            &a,
            text(&format!("parent line {n}")),
        )));
    }
    render(&mut app, 80, 16);
    update(&mut app, Action::PageUp);
    render(&mut app, 80, 16);
    let parent_before = app.viewport.rows.clone();
    let anchor = app.scroll.anchor;
    assert!(anchor.is_some(), "scrolled up");

    let effects = update(&mut app, Action::OpenSubtask);
    assert!(matches!(effects.as_slice(), [Effect::LoadChild(id)] if id == CHILD));
    let cu = {
        let mut u = user("msg_c0");
        u.session_id = CHILD.into();
        u
    };
    let mut prompt = part("prt_c0", &cu, text("look for the marker"));
    prompt.session_id = CHILD.into();
    app.child_loaded(CHILD, vec![with_parts(cu, vec![prompt])]);
    child_works(&mut app);
    // The parent goes on meanwhile, out of sight.
    app.apply_event(&part_event(part("prt_90", &a, text("parent news"))));
    let child = render(&mut app, 80, 16);
    assert!(
        child.contains("explore (subtask): find the marker"),
        "{child}"
    );
    assert!(child.contains("Esc or ctrl+g goes back"), "{child}");
    assert!(child.contains("look for the marker"), "{child}");
    assert!(child.contains("grep marker"), "{child}");
    assert!(!child.contains("parent news"), "{child}");

    // Typing there does not send to the parent, and the draft is kept.
    for c in "hello".chars() {
        update(&mut app, Action::Insert(c));
    }
    assert!(update(&mut app, Action::Enter).is_empty());
    assert_eq!(app.composer.text(), "hello");

    assert!(
        update(&mut app, Action::Escape).is_empty(),
        "Esc only leaves"
    );
    assert_eq!(app.scroll.anchor, anchor);
    render(&mut app, 80, 16);
    assert_eq!(app.viewport.rows, parent_before, "the same lines in view");
    assert!(
        app.timeline.messages()[1]
            .parts
            .iter()
            .any(|p| p.id == "prt_90")
    );
}

#[test]
fn several_children_are_offered_in_a_picker_running_first() {
    let (mut app, a) = parent_with_task();
    app.apply_event(&part_event(task_part(
        "prt_2",
        &a,
        "call_t2",
        running_task("ses_two", "read the docs", "general", 1_000),
    )));
    assert!(update(&mut app, Action::OpenSubtask).is_empty());
    let Some(Overlay::Picker(picker)) = &app.overlay else {
        panic!("a picker: {:?}", app.overlay);
    };
    assert_eq!(picker.kind, PickerKind::Subtask);
    assert_eq!(picker.entries.len(), 2);
    update(&mut app, Action::Down);
    let effects = update(&mut app, Action::Enter);
    assert!(
        matches!(effects.as_slice(), [Effect::LoadChild(id)] if id == CHILD),
        "{effects:?}"
    );
}

#[test]
fn no_subtask_says_so() {
    let mut app = app(exchange(1));
    assert!(update(&mut app, Action::OpenSubtask).is_empty());
    assert_eq!(
        app.flash.as_deref(),
        Some("no subtask to open in this session")
    );
}

fn child_ask() -> PermissionRequest {
    PermissionRequest {
        id: "per_child".into(),
        session_id: CHILD.into(),
        call_id: Some("call_c9".into()),
        permission: "bash".into(),
        patterns: vec!["make check".into()],
        always: vec!["make check".into()],
        title: "Run: make check".into(),
        ..Default::default()
    }
}

#[test]
fn a_childs_ask_names_the_child_and_the_answer_goes_back() {
    let (mut app, _) = parent_with_task();
    app.apply_event(&Event::Status {
        session_id: SESSION.into(),
        status: SessionStatus::Busy,
    });
    app.apply_event(&Event::PermissionAsked {
        session_id: CHILD.into(),
        request: Arc::new(child_ask()),
    });
    let screen = render(&mut app, 100, 30);
    assert!(
        screen.contains("explore (subtask): find the marker · wants to:"),
        "{screen}"
    );
    assert!(screen.contains("Run: make check"), "{screen}");
    assert!(
        screen.contains("waiting for permission"),
        "the card:\n{screen}"
    );
    app.now = app.permission_dialog.armed_at;
    update(&mut app, Action::Down);
    let effects = update(&mut app, Action::Enter);
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::Send(Command::AnswerPermission { request_id, answer: PermissionAnswer::Once })]
                if request_id == "per_child"
        ),
        "{effects:?}"
    );
    app.apply_event(&Event::PermissionReplied {
        session_id: CHILD.into(),
        request_id: "per_child".into(),
    });
    assert!(app.permissions.is_empty());
    let screen = render(&mut app, 100, 30);
    assert!(!screen.contains("waiting for permission"), "{screen}");
}

#[test]
fn a_childs_ask_dialog_at_60_columns() {
    let (mut app, _) = parent_with_task();
    app.apply_event(&Event::PermissionAsked {
        session_id: CHILD.into(),
        request: Arc::new(child_ask()),
    });
    assert_snapshot!(render(&mut app, 60, 20));
}

#[test]
fn a_parent_page_read_while_a_child_is_shown_is_reread_on_return() {
    let (mut app, _) = parent_with_task();
    let parent_page = app.timeline.messages().to_vec();
    update(&mut app, Action::OpenSubtask);
    assert!(
        !app.page_is_shown(&parent_page),
        "not into the child's view"
    );
    let effects = update(&mut app, Action::Escape);
    assert!(
        matches!(effects.as_slice(), [Effect::Reload]),
        "{effects:?}"
    );
    assert!(app.page_is_shown(&parent_page));
}

#[test]
fn opening_a_child_that_ran_before_fills_in_its_cards_figures() {
    let u = user("msg_00001a");
    let a = assistant("msg_00001b", &u.id);
    let ended = ToolState::Completed {
        input: task_input("find the marker", "explore"),
        output: "task_id: ses_child\n\n<task_result>\nfound it\n</task_result>".into(),
        title: "find the marker".into(),
        metadata: json!({ "session_id": CHILD, "agent": "explore" }),
        time: span(9_000, Some(5_000)),
        attachments: vec![],
    };
    let mut app = app(vec![with_parts(
        a.clone(),
        vec![task_part("prt_1", &a, "call_t1", ended)],
    )]);
    let before = render(&mut app, 80, 10);
    assert!(!before.contains("tool"), "{before}");
    update(&mut app, Action::OpenSubtask);
    let m = child_message("msg_c1", 7_000);
    let mut read = part(
        "prt_c1",
        &m,
        tool("read", done(json!({ "file_path": "a" }))),
    );
    read.session_id = CHILD.into();
    app.child_loaded(CHILD, vec![with_parts(m, vec![read])]);
    update(&mut app, Action::Escape);
    let after = render(&mut app, 80, 10);
    assert!(after.contains("1 tool · 7.0k tokens"), "{after}");
}
