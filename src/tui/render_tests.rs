//! Snapshot tests of rendered frames (ratatui TestBackend + insta). Each
//! snapshot was reviewed by eye: it must show what its name claims.

use std::sync::Arc;

use insta::assert_snapshot;
use serde_json::json;

use crate::bus::{DeltaField, Event, SessionStatus};
use crate::context::ContextBreakdown;
use crate::message::*;
use crate::permission::{PermissionRequest, Preview};

use super::app::Overlay;
use super::fixtures::*;

#[test]
fn streaming_answer_mid_way() {
    let mut history = exchange(1);
    let u = user("msg_00002a");
    history.push(with_parts(
        u.clone(),
        vec![part("prt_00002a", &u, text("show me a rust hello world"))],
    ));
    let mut app = app(history);
    let mut a = assistant("msg_00002b", &u.id);
    if let Some(assistant) = a.as_assistant_mut() {
        assistant.finish = None;
        assistant.time_completed = None;
    }
    apply(
        &mut app,
        Event::MessageUpdated {
            message: Arc::new(a.clone()),
        },
    );
    apply(
        &mut app,
        Event::Status {
            session_id: SESSION.into(),
            status: SessionStatus::Busy,
        },
    );
    apply(&mut app, part_event(part("prt_00002b", &a, text(""))));
    for delta in [
        "## Hello",
        "\n\nHere is the *classic*:\n\n```rust\nfn main() {\n",
        "    println!(\"hi\");\n",
    ] {
        apply(
            &mut app,
            Event::PartDelta {
                session_id: SESSION.into(),
                message_id: a.id.clone(),
                part_id: "prt_00002b".into(),
                field: DeltaField::Text,
                delta: delta.into(),
            },
        );
    }
    app.now = NOW + 3_000;
    assert_snapshot!(render(&mut app, 80, 24));
}

fn tool_screen() -> String {
    let u = user("msg_00001a");
    let a = assistant("msg_00001b", &u.id);
    let parts = vec![
        part(
            "prt_1",
            &a,
            tool(
                "read",
                ToolState::Pending {
                    input: json!({}),
                    raw: String::new(),
                },
            ),
        ),
        part(
            "prt_2",
            &a,
            tool(
                "bash",
                ToolState::Running {
                    input: bash_input("cargo test"),
                    title: None,
                    metadata: None,
                    time: span(7_000, None),
                },
            ),
        ),
        part(
            "prt_3",
            &a,
            tool(
                "grep",
                ToolState::Completed {
                    input: json!({ "pattern": "fn parse" }),
                    output: "src/a.rs:3: fn parse()\nsrc/b.rs:9: fn parse_all()".into(),
                    title: "2 matches".into(),
                    metadata: json!({}),
                    time: span(20_000, Some(340)),
                    attachments: vec![],
                },
            ),
        ),
        part(
            "prt_4",
            &a,
            tool(
                "bash",
                ToolState::Error {
                    input: bash_input("make lint"),
                    error: "make: *** No rule to make target 'lint'.  Stop.".into(),
                    metadata: None,
                    time: span(10_000, Some(2_500)),
                },
            ),
        ),
    ];
    let mut app = app(vec![
        with_parts(u.clone(), vec![part("prt_0", &u, text("run the tests"))]),
        with_parts(a, parts),
    ]);
    app.timeline.apply_delta(
        "msg_00001b",
        "prt_2",
        DeltaField::ToolOutput,
        "Compiling cairn\nrunning 12 tests\ntest a ... ok\n",
    );
    render(&mut app, 80, 22)
}

#[test]
fn tool_cards_pending_running_completed_error() {
    assert_snapshot!(tool_screen());
}

#[test]
fn edit_diff_is_coloured_by_line() {
    let u = user("msg_00001a");
    let a = assistant("msg_00001b", &u.id);
    let diff = "Index: src/main.rs\n--- src/main.rs\n+++ src/main.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hello\");\n+    println!(\"hello, world\");\n }\n";
    let edit = tool(
        "edit",
        ToolState::Completed {
            input: json!({ "filePath": "src/main.rs" }),
            output: "Edit applied".into(),
            title: "src/main.rs".into(),
            metadata: json!({ "diff": diff }),
            time: span(5_000, Some(12)),
            attachments: vec![],
        },
    );
    let mut app = app(vec![with_parts(a.clone(), vec![part("prt_1", &a, edit)])]);
    let screen = render(&mut app, 70, 12);
    assert_snapshot!(screen);
    let buffer = render_buffer(&mut app, 70, 12);
    let colour_of = |needle: &str| {
        let row = (0..12)
            .find(|&y| row_text(&buffer, y).contains(needle))
            .expect("diff line on screen");
        let x = row_text(&buffer, row).find(needle).expect("needle") as u16;
        buffer[(x, row)].fg
    };
    assert_eq!(colour_of("+    println"), ratatui::style::Color::Green);
    assert_eq!(colour_of("-    println"), ratatui::style::Color::Red);
}

fn render_buffer(app: &mut super::app::App, width: u16, height: u16) -> ratatui::buffer::Buffer {
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).expect("backend");
    terminal
        .draw(|frame| {
            super::view::prepare(app, frame.area());
            super::view::draw(app, frame);
        })
        .expect("draw");
    terminal.backend().buffer().clone()
}

fn row_text(buffer: &ratatui::buffer::Buffer, y: u16) -> String {
    (0..buffer.area.width)
        .map(|x| buffer[(x, y)].symbol().chars().next().unwrap_or(' '))
        .collect()
}

#[test]
fn compaction_marker_summary_and_pruned_output() {
    let old_u = user("msg_00001a");
    let old_a = assistant("msg_00001b", &old_u.id);
    let pruned = tool(
        "bash",
        ToolState::Completed {
            input: bash_input("cat big.log"),
            output: "line 1\nline 2".into(),
            title: "cat".into(),
            metadata: json!({}),
            time: ToolTime {
                compacted: Some(NOW - 100),
                ..span(90_000, Some(800))
            },
            attachments: vec![],
        },
    );
    let c = user("msg_00002a");
    let compaction = PartKind::Compaction(CompactionPart {
        auto: false,
        instructions: Some("keep the API decisions".into()),
        tokens: Some(CompactedTokens {
            before: 142_310,
            after: 3_100,
        }),
        ..Default::default()
    });
    let mut summary = assistant("msg_00002b", &c.id);
    if let Some(s) = summary.as_assistant_mut() {
        s.summary = true;
    }
    let summary_text = "## Goal\nFix the parser.\n\n## Done\n- split lexer\n- added tests\n\n## Next\n- wire errors";
    let mut app = app(vec![
        with_parts(
            old_u.clone(),
            vec![part("prt_a", &old_u, text("look at the log"))],
        ),
        with_parts(old_a.clone(), vec![part("prt_b", &old_a, pruned)]),
        with_parts(c.clone(), vec![part("prt_c", &c, compaction)]),
        with_parts(
            summary.clone(),
            vec![part("prt_d", &summary, text(summary_text))],
        ),
    ]);
    assert_snapshot!(render(&mut app, 80, 20));
}

#[test]
fn a_failed_compaction_says_so_and_that_the_history_is_unchanged() {
    let c = user("msg_00002a");
    let compaction = PartKind::Compaction(CompactionPart::default());
    let mut summary = assistant("msg_00002b", &c.id);
    if let Some(s) = summary.as_assistant_mut() {
        s.summary = true;
        s.error = Some(MessageError {
            kind: MessageErrorKind::Api,
            message: "Tool call not allowed while generating summary: read".into(),
        });
    }
    let mut app = app(vec![
        with_parts(c.clone(), vec![part("prt_c", &c, compaction)]),
        with_parts(summary, vec![]),
    ]);
    let screen = render(&mut app, 120, 10);
    assert!(
        screen.contains("compaction failed · Tool call not allowed while generating summary: read · history unchanged"),
        "{screen}"
    );
    assert!(!screen.contains("history compacted"), "{screen}");
}

fn status_line(used: u64) -> String {
    let mut app = app(Vec::new());
    app.gauge = Some(gauge(used));
    render(&mut app, 100, 3)
}

#[test]
fn gauge_at_10_85_and_100_percent() {
    assert_snapshot!("gauge_10", status_line(16_000));
    assert_snapshot!("gauge_85", status_line(136_000));
    assert_snapshot!("gauge_100", status_line(160_000));
}

#[test]
fn context_overlay_bars_add_up_to_the_gauge() {
    let mut app = app(exchange(1));
    let gauge = gauge(62_000);
    app.overlay = Some(Overlay::Context(Some(ContextBreakdown {
        categories: vec![
            ("system prompt".into(), 3_200),
            ("instruction files".into(), 1_800),
            ("tool definitions".into(), 9_000),
            ("summary".into(), 0),
            ("messages".into(), 18_000),
            ("tool outputs".into(), 30_000),
        ],
        difference: 0,
        prunable: 22_000,
        gauge,
        last_compaction: Some((142_000, 3_100)),
        last_cache: Some(crate::message::CacheTokens {
            read: 41_000,
            write: 2_100,
        }),
        notes: Vec::new(),
    })));
    assert_snapshot!(render(&mut app, 80, 24));
}

#[test]
fn bash_dialog_shows_the_command_why_it_asks_and_both_always_scopes() {
    let mut app = app(exchange(1));
    let command = "git status -s && echo $(curl -s x.sh)";
    let request = PermissionRequest {
        id: "per_1".into(),
        session_id: SESSION.into(),
        call_id: Some("call_bash".into()),
        permission: "bash".into(),
        patterns: vec!["git status -s".into(), "curl -s x.sh".into()],
        always: vec!["curl -s x.sh".into()],
        always_broad: vec!["curl *".into()],
        reasons: vec!["the `$(curl -s x.sh)` substitution".into()],
        title: format!("Run: {command}"),
        metadata: json!({}),
        preview: Some(Preview::Command {
            command: command.into(),
            description: Some("Show status and fetch the script".into()),
        }),
    };
    apply(
        &mut app,
        Event::PermissionAsked {
            session_id: SESSION.into(),
            request: Arc::new(request),
        },
    );
    assert_snapshot!(render(&mut app, 80, 24));
}

#[test]
fn edit_dialog_shows_the_diff_that_will_be_applied() {
    let mut app = app(exchange(1));
    let diff = "--- src/main.rs\n+++ src/main.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n }\n";
    let request = PermissionRequest {
        id: "per_1".into(),
        session_id: SESSION.into(),
        call_id: Some("call_edit".into()),
        permission: "edit".into(),
        patterns: vec!["src/main.rs".into()],
        always: vec!["src/main.rs".into()],
        title: "Edit src/main.rs".into(),
        metadata: json!({}),
        preview: Some(Preview::Diff {
            path: "src/main.rs".into(),
            diff: diff.into(),
        }),
        ..Default::default()
    };
    apply(
        &mut app,
        Event::PermissionAsked {
            session_id: SESSION.into(),
            request: Arc::new(request),
        },
    );
    assert_snapshot!(render(&mut app, 80, 24));
}

#[test]
fn first_run_screen_explains_how_to_configure_a_provider() {
    let mut app = app(Vec::new());
    app.overlay = Some(Overlay::FirstRun(crate::provider::discover::ADVICE.into()));
    assert_snapshot!(render(&mut app, 90, 24));
}

#[test]
fn narrow_terminal_of_60_columns_wraps_everything() {
    let mut history = exchange(1);
    history.extend(exchange(2));
    let mut app = app(history);
    app.composer
        .set_text("a long draft that needs to wrap inside the narrow composer pane");
    assert_snapshot!(render(&mut app, 60, 24));
}

#[test]
fn model_picker_filters_as_you_type() {
    use super::action::Action;
    use super::update::update;
    let mut app = app(Vec::new());
    app.models = super::fixtures::choices(&[
        "anthropic/claude-sonnet-4-5",
        "openai/gpt-5",
        "ollama/qwen3-coder:30b",
        "ollama/llama3.2:latest",
        "lmstudio/qwen/qwen3-4b",
    ]);
    for c in "/model".chars() {
        update(&mut app, Action::Insert(c));
    }
    update(&mut app, Action::Enter);
    for c in "QWEN".chars() {
        update(&mut app, Action::Insert(c));
    }
    update(&mut app, Action::Down);
    assert_snapshot!(render(&mut app, 80, 16));
    update(&mut app, Action::Enter);
    assert_eq!(app.model_label, "lmstudio/qwen/qwen3-4b");
}

/// A command run outside the sandbox: the choices are always on screen,
/// however long the command and its reasons, with "reject" first.
#[test]
fn unsandboxed_dialog_keeps_its_choices_in_view_with_reject_first() {
    for (width, height) in [(80, 24), (60, 20), (40, 16)] {
        let mut app = app(exchange(1));
        let command = format!("echo {} >> ~/.bashrc", "x".repeat(360));
        let request = PermissionRequest {
            id: "per_1".into(),
            session_id: SESSION.into(),
            call_id: Some("call_bash".into()),
            permission: crate::sandbox::UNCONFINED.into(),
            patterns: vec![command.clone()],
            reasons: vec![
                "blocked by the sandbox: write to ~/.bashrc is outside the project and the temp directory"
                    .into(),
            ],
            title: format!("Run once outside the sandbox: {command}"),
            metadata: json!({}),
            preview: Some(Preview::Command {
                command: command.clone(),
                description: None,
            }),
            ..PermissionRequest::default()
        };
        apply(
            &mut app,
            Event::PermissionAsked {
                session_id: SESSION.into(),
                request: Arc::new(request),
            },
        );
        let screen = render(&mut app, width, height);
        let reject = screen
            .find("  Reject")
            .unwrap_or_else(|| panic!("{width}x{height}:\n{screen}"));
        let once = screen
            .find("Allow once")
            .unwrap_or_else(|| panic!("{width}x{height}:\n{screen}"));
        assert!(reject < once, "{width}x{height}:\n{screen}");
        assert!(
            screen.contains("Shift+↑/↓"),
            "the command scrolls: {width}x{height}:\n{screen}"
        );
        if width == 80 {
            assert_snapshot!(screen);
        }
    }
}
