//! Rendered frames (insta) of issue #17's cards and notices, each at 120, 60
//! and 40 columns: one snapshot holds the three frames, widest first. Each
//! was reviewed by eye against what its name claims.

use insta::assert_snapshot;
use serde_json::{Value, json};

use crate::message::*;

use super::app::App;
use super::fixtures::*;

/// The frame at 120, 60 and 40 columns, each under a line naming its width.
fn at_three_widths(app: &mut App, height: u16) -> String {
    [120, 60, 40]
        .iter()
        .map(|&width| format!("── {width} columns\n{}", render(app, width, height)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The screen's rows, trimmed and joined by spaces: text wrapped at words
/// reads as it was written.
fn joined(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.trim_matches('"').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// An answer holding one finished call of `name`.
fn one_call(name: &str, input: Value, output: &str, metadata: Value) -> App {
    let u = user("msg_00001a");
    let a = assistant("msg_00001b", &u.id);
    let call = tool(
        name,
        ToolState::Completed {
            input,
            output: output.into(),
            title: String::new(),
            metadata,
            time: span(5_000, Some(1_200)),
            attachments: vec![],
        },
    );
    app(vec![
        with_parts(u.clone(), vec![part("prt_0", &u, text("go on"))]),
        with_parts(a.clone(), vec![part("prt_1", &a, call)]),
    ])
}

#[test]
fn bash_card_counts_the_hidden_lines() {
    let output: Vec<String> = (1..=10).map(|n| format!("test case_{n} ... ok")).collect();
    let mut app = one_call(
        "bash",
        bash_input("cargo test"),
        &output.join("\n"),
        json!({ "truncated": false, "exit": 0 }),
    );
    let screen = at_three_widths(&mut app, 14);
    assert!(screen.contains("… 6 more lines (Ctrl+O)"), "{screen}");
    assert_snapshot!(screen);
    app.expand_details = true;
    app.timeline.bump_all();
    let expanded = render(&mut app, 120, 20);
    assert!(expanded.contains("test case_1 ... ok"), "{expanded}");
    assert!(!expanded.contains("more lines"), "{expanded}");
}

#[test]
fn bash_card_marks_a_tail_the_model_got_truncated() {
    let tail: Vec<String> = (99_995..=100_000).map(|n| n.to_string()).collect();
    let output = format!(
        "...output truncated...\n\nFull output saved to: /data/tool-output/tool_01JX\n\n{}",
        tail.join("\n")
    );
    let metadata = json!({
        "truncated": true,
        "exit": 0,
        "output_path": "/data/tool-output/tool_01JX",
    });
    let mut app = one_call("bash", bash_input("seq 1 100000"), &output, metadata);
    let screen = at_three_widths(&mut app, 14);
    assert!(
        screen.contains("✂ the model got only the last 6 lines · full output in"),
        "{screen}"
    );
    assert!(!screen.contains("...output truncated..."), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn read_card_shows_the_file_not_the_wrapper() {
    let output = "<path>/work/demo/src/main.rs</path>\n<type>file</type>\n<content>\n1: use std::env;\n2: \n3: fn main() {\n4:     let args: Vec<String> = env::args().collect();\n5:     println!(\"{args:?}\");\n6: }\n\n(End of file - total 6 lines)\n</content>";
    let mut app = one_call(
        "read",
        json!({ "filePath": "/work/demo/src/main.rs" }),
        output,
        json!({ "truncated": false, "lines": 6 }),
    );
    let screen = at_three_widths(&mut app, 12);
    for wrapper in ["<path>", "<type>", "<content>", "End of file"] {
        assert!(!screen.contains(wrapper), "{wrapper}: {screen}");
    }
    assert!(screen.contains("6 lines · 1.2s"), "{screen}");
    assert!(screen.contains("… 2 more lines (Ctrl+O)"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn todowrite_card_is_a_checklist() {
    let todos = json!([
        { "content": "Reproduce the failing parser test", "status": "completed", "priority": "high" },
        { "content": "Fix the off-by-one in the lexer's line counter", "status": "in_progress", "priority": "high" },
        { "content": "Add a regression test", "status": "pending", "priority": "medium" },
        { "content": "Try the old tokenizer", "status": "cancelled", "priority": "low" },
    ]);
    let mut app = one_call(
        "todowrite",
        json!({ "todos": todos }),
        &serde_json::to_string_pretty(&todos).expect("json"),
        json!({ "todos": todos, "truncated": false }),
    );
    let screen = at_three_widths(&mut app, 12);
    assert!(!screen.contains("\"status\""), "{screen}");
    for mark in [
        "☑ Reproduce",
        "◐ Fix the off-by-one",
        "☐ Add a regression",
        "☒ Try",
    ] {
        assert!(screen.contains(mark), "{mark}: {screen}");
    }
    assert_snapshot!(screen);
    let buffer = render_buffer(&mut app, 120, 12);
    let colour_of = |needle: &str| {
        let (x, y) = find(&buffer, needle);
        buffer[(x, y)].fg
    };
    use ratatui::style::Color;
    assert_eq!(colour_of("☑"), Color::Green);
    assert_eq!(colour_of("◐ Fix"), Color::Yellow);
}

fn render_buffer(app: &mut App, width: u16, height: u16) -> ratatui::buffer::Buffer {
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

/// The cell where `needle` starts on screen.
fn find(buffer: &ratatui::buffer::Buffer, needle: &str) -> (u16, u16) {
    for y in 0..buffer.area.height {
        let cells: Vec<String> = (0..buffer.area.width)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        let row = cells.concat();
        if let Some(at) = row.find(needle) {
            let x = cells
                .iter()
                .scan(0, |bytes, cell| {
                    *bytes += cell.len();
                    Some(*bytes)
                })
                .position(|end| end > at)
                .unwrap_or(0);
            return (x as u16, y);
        }
    }
    panic!("{needle} is not on screen");
}

#[test]
fn a_shell_run_is_shown_as_the_users_own() {
    let u = user("msg_00001a");
    let request = PartKind::Text(TextPart {
        text: crate::session::shell::SHELL_RUN_TEXT.into(),
        synthetic: true,
        ..Default::default()
    });
    let a = assistant("msg_00001b", &u.id);
    let run = tool(
        "bash",
        ToolState::Completed {
            input: json!({ "command": "git status --short", "description": "Run the user's command" }),
            output: " M src/main.rs\n?? notes.md".into(),
            title: "git status --short".into(),
            metadata: json!({ "truncated": false, "exit": 0 }),
            time: span(5_000, Some(40)),
            attachments: vec![],
        },
    );
    let mut app = app(vec![
        with_parts(u.clone(), vec![part("prt_0", &u, request)]),
        with_parts(a.clone(), vec![part("prt_1", &a, run)]),
    ]);
    let screen = at_three_widths(&mut app, 9);
    assert!(!screen.contains("executed by the user"), "{screen}");
    assert!(!screen.contains("◆ build"), "{screen}");
    assert!(screen.contains("$ git status --short"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn status_notices_are_never_cut_by_the_gauge() {
    let path = "/home/ada/.local/share/cairn/exports/cairn-00XH4qwW.md";
    let mut app = app(exchange(1));
    app.flash = Some(format!("exported to {path}"));
    let screen = at_three_widths(&mut app, 16);
    let wide = render(&mut app, 120, 10);
    assert!(wide.contains(&format!("exported to {path}")), "{wide}");
    assert!(
        wide.contains("compact at 160k"),
        "the gauge stays whole: {wide}"
    );
    assert_snapshot!(screen);
    app.flash = Some("unknown command /bogus; /help lists them".into());
    for width in [120, 60, 40] {
        let screen = render(&mut app, width, 16);
        assert!(
            joined(&screen).contains("unknown command /bogus; /help lists them"),
            "{width}: {screen}"
        );
    }
}

#[test]
fn an_error_is_shown_whole_under_its_answer() {
    let u = user("msg_00001a");
    let mut a = assistant("msg_00001b", &u.id);
    if let Some(info) = a.as_assistant_mut() {
        info.error = Some(MessageError {
            kind: MessageErrorKind::Api,
            message: "anthropic refused the credentials (HTTP 401: invalid x-api-key); check ANTHROPIC_API_KEY\nthe request was not retried".into(),
        });
    }
    let mut app = app(vec![
        with_parts(u.clone(), vec![part("prt_0", &u, text("hello"))]),
        with_parts(a, vec![]),
    ]);
    // The session publishes the same error after recording it on the answer.
    apply(
        &mut app,
        crate::bus::Event::Error {
            session_id: SESSION.into(),
            message: "anthropic refused the credentials (HTTP 401: invalid x-api-key); check ANTHROPIC_API_KEY\nthe request was not retried".into(),
        },
    );
    let screen = at_three_widths(&mut app, 10);
    assert_eq!(
        render(&mut app, 120, 10).matches("not retried").count(),
        1,
        "said once"
    );
    for width in [120, 60, 40] {
        let screen = render(&mut app, width, 10);
        let joined = joined(&screen);
        assert!(
            joined.contains("check ANTHROPIC_API_KEY"),
            "{width}: {screen}"
        );
        assert!(
            joined.contains("the request was not retried"),
            "{width}: {screen}"
        );
    }
    assert_snapshot!(screen);
}

#[test]
fn ctrl_o_and_ctrl_t_say_which_way_they_toggled() {
    use super::action::Action;
    use super::update::update;
    let mut app = app(exchange(1));
    update(&mut app, Action::ToggleDetails);
    assert_eq!(
        app.flash.as_deref(),
        Some("tool output and summaries expanded (Ctrl+O folds)")
    );
    update(&mut app, Action::ToggleReasoning);
    let screen = at_three_widths(&mut app, 9);
    assert!(
        screen.contains("reasoning expanded (Ctrl+T folds)"),
        "{screen}"
    );
    assert_snapshot!(screen);
    update(&mut app, Action::ToggleDetails);
    assert_eq!(
        app.flash.as_deref(),
        Some("tool output and summaries folded (Ctrl+O expands)")
    );
}

#[test]
fn slash_menu_descriptions_wrap_under_themselves() {
    use super::action::Action;
    use super::update::update;
    let mut app = app(Vec::new());
    for c in "/pe".chars() {
        update(&mut app, Action::Insert(c));
    }
    let screen = at_three_widths(&mut app, 8);
    assert!(
        screen.contains("forget one"),
        "the description is whole: {screen}"
    );
    assert_snapshot!(screen);
}

#[test]
fn help_wraps_at_words_at_60_and_40_columns() {
    let mut app = app(Vec::new());
    app.overlay = Some(super::app::Overlay::Help);
    let screen = at_three_widths(&mut app, 50);
    assert!(screen.contains("forget one"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn compaction_marker_and_model_name_wrap_at_40_columns() {
    let c = user("msg_00002a");
    let compaction = PartKind::Compaction(CompactionPart {
        auto: true,
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
    let u = user("msg_00003a");
    let mut a = assistant("msg_00003b", &u.id);
    if let Some(info) = a.as_assistant_mut() {
        info.model = ModelRef::new("openrouter", "anthropic/claude-sonnet-4-5-20250929");
    }
    let mut app = app(vec![
        with_parts(c.clone(), vec![part("prt_c", &c, compaction)]),
        with_parts(
            summary.clone(),
            vec![part("prt_d", &summary, text("Goal: fix the parser."))],
        ),
        with_parts(u.clone(), vec![part("prt_e", &u, text("next?"))]),
        with_parts(a.clone(), vec![part("prt_f", &a, text("The lexer."))]),
    ]);
    app.model_label = "openrouter/anthropic/claude-sonnet-4-5-20250929".into();
    let screen = at_three_widths(&mut app, 20);
    let narrow = render(&mut app, 40, 20);
    assert!(
        joined(&narrow).contains("history compacted · 142,310 -> 3,100 tokens"),
        "{narrow}"
    );
    assert!(narrow.contains("claude-sonnet-4-5-20250929"), "{narrow}");
    assert_snapshot!(screen);
}

/// What the TUI receives for an overflow that cairn compacted by itself:
/// the rejected answer, the request with the gauge's figures, the summary,
/// the replayed message and the compaction's notice, then the answer.
fn overflow_compacted(tokens: CompactedTokens) -> App {
    let u = user("msg_00001a");
    let mut rejected = assistant("msg_00001b", &u.id);
    if let Some(info) = rejected.as_assistant_mut() {
        info.finish = None;
        info.error = Some(MessageError {
            kind: MessageErrorKind::ContextOverflow,
            message: "the request does not fit the model's context window".into(),
        });
    }
    let c = user("msg_00002a");
    let compaction = PartKind::Compaction(CompactionPart {
        auto: true,
        overflow: true,
        tokens: Some(tokens),
        ..Default::default()
    });
    let mut summary = assistant("msg_00002b", &c.id);
    if let Some(s) = summary.as_assistant_mut() {
        s.summary = true;
    }
    let replay = user("msg_00003a");
    let mut app = app(vec![
        with_parts(u.clone(), vec![part("prt_a", &u, text("fix the parser"))]),
        with_parts(rejected, vec![]),
        with_parts(c.clone(), vec![part("prt_c", &c, compaction)]),
        with_parts(
            summary.clone(),
            vec![part(
                "prt_d",
                &summary,
                text("## Goal\nRepair the lexer.\n\n## Done\n- split tokens\n- ran the tests"),
            )],
        ),
        with_parts(
            replay.clone(),
            vec![part("prt_e", &replay, text("fix the parser"))],
        ),
    ]);
    apply(
        &mut app,
        crate::bus::Event::Notice {
            session_id: SESSION.into(),
            message: crate::session::compaction_task::compaction_notice(
                true,
                true,
                tokens,
                &Default::default(),
            ),
        },
    );
    apply(
        &mut app,
        crate::bus::Event::Gauge {
            session_id: SESSION.into(),
            gauge: gauge(tokens.after),
        },
    );
    let answer = assistant("msg_00003b", &replay.id);
    apply(
        &mut app,
        crate::bus::Event::MessageUpdated {
            message: answer.clone().into(),
        },
    );
    apply(&mut app, part_event(part("prt_f", &answer, text("Fixed."))));
    app
}

#[test]
fn an_overflow_shows_one_notice_with_the_markers_figures() {
    let tokens = CompactedTokens {
        before: 9_020,
        after: 1_204,
    };
    let mut app = overflow_compacted(tokens);
    let screen = at_three_widths(&mut app, 24);
    for width in [120, 60, 40] {
        let text = joined(&render(&mut app, width, 24));
        assert_eq!(
            text.matches("9,020 -> 1,204 tokens").count(),
            2,
            "{width}: {text}"
        );
        assert_eq!(
            text.matches("· compacted the conversation").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains("history compacted · 9,020 -> 1,204 tokens"),
            "{text}"
        );
        assert!(!text.contains("does not fit"), "{width}: {text}");
        assert_eq!(text.matches("fix the parser").count(), 1, "{text}");
        // The fold under the summary wraps rather than losing its key.
        assert!(text.contains("more lines (Ctrl+O)"), "{width}: {text}");
    }
    assert_snapshot!(screen);
}

#[test]
fn a_retry_reason_is_read_whole() {
    let mut app = app(exchange(1));
    apply(
        &mut app,
        crate::bus::Event::Status {
            session_id: SESSION.into(),
            status: crate::bus::SessionStatus::Retrying {
                attempt: 2,
                message: "anthropic is overloaded (HTTP 529: Overloaded); cairn waits and retries, or try again in a few minutes".into(),
                next_at: NOW + 4_000,
            },
        },
    );
    let screen = at_three_widths(&mut app, 12);
    for width in [120, 60, 40] {
        let screen = render(&mut app, width, 12);
        assert!(
            joined(&screen).contains("or try again in a few minutes"),
            "{width}: {screen}"
        );
    }
    assert_snapshot!(screen);
}

#[test]
fn help_taller_than_the_terminal_scrolls_to_its_last_entry() {
    use super::action::Action;
    use super::update::update;
    let mut app = app(Vec::new());
    for c in "/help".chars() {
        update(&mut app, Action::Insert(c));
    }
    update(&mut app, Action::Enter);
    let top = render(&mut app, 80, 24);
    assert!(top.contains("↑↓ scroll"), "{top}");
    assert!(!top.contains("leave cairn"), "{top}");
    for _ in 0..50 {
        update(&mut app, Action::Down);
    }
    let bottom = render(&mut app, 80, 24);
    assert!(bottom.contains("leave cairn"), "{bottom}");
    update(&mut app, Action::Up);
    let one_up = render(&mut app, 80, 24);
    assert!(
        one_up.contains("keys and commands") && !one_up.contains("leave cairn"),
        "one row up from the end, not fifty: {one_up}"
    );
    update(&mut app, Action::PageUp);
    update(&mut app, Action::PageUp);
    update(&mut app, Action::PageUp);
    assert!(
        render(&mut app, 80, 24).contains("send (queued"),
        "back at the top"
    );
    assert_snapshot!(bottom);
}

#[test]
fn a_mentioned_file_is_named_not_dumped_and_ctrl_o_shows_its_lines() {
    let u = user("msg_00001a");
    let attached = PartKind::Text(TextPart {
        text: format!(
            "{}{{\"path\":\"/work/demo/notes.md\"}}\n<path>/work/demo/notes.md</path>\n<type>file</type>\n<content>\n1: first note\n2: second note\n\n(End of file - total 2 lines)\n</content>",
            crate::session::mention::MENTION_READ_LEAD
        ),
        synthetic: true,
        ..Default::default()
    });
    let file = PartKind::File(FilePart {
        mime: "text/plain".into(),
        filename: Some("notes.md".into()),
        url: "file:///work/demo/notes.md".into(),
    });
    let mut app = app(vec![with_parts(
        u.clone(),
        vec![
            part("prt_0", &u, text("look at @notes.md")),
            part("prt_1", &u, attached),
            part("prt_2", &u, file),
        ],
    )]);
    let folded = render(&mut app, 80, 10);
    for hidden in ["Called the Read tool", "<content>", "first note"] {
        assert!(!folded.contains(hidden), "{hidden}: {folded}");
    }
    assert!(folded.contains("📎 notes.md"), "{folded}");
    app.expand_details = true;
    app.timeline.bump_all();
    let screen = at_three_widths(&mut app, 10);
    assert!(screen.contains("┃ 1 first note"), "{screen}");
    assert!(!screen.contains("<content>"), "{screen}");
    assert_snapshot!(screen);
}

/// Expanded cards stop at 200 lines: the line for the rest says where the
/// whole output is, not "Ctrl+O" (which folds by then).
#[test]
fn an_expanded_card_past_its_limit_says_where_the_rest_is() {
    let output: Vec<String> = (1..=2_000).map(|n| format!("line {n}")).collect();
    let mut app = one_call(
        "bash",
        bash_input("seq 2000"),
        &output.join("\n"),
        json!({ "truncated": false, "exit": 0 }),
    );
    app.expand_details = true;
    app.timeline.bump_all();
    app.scroll.top();
    let expanded = render(&mut app, 120, 20);
    assert!(
        expanded.contains("… 1800 more lines · /export writes the whole output"),
        "{expanded}"
    );
    assert!(!expanded.contains("(Ctrl+O)"), "{expanded}");
}

/// A Markdown table in an answer: its columns line up under the header at
/// every width (issue #34 saw `│ concept│ meaning`).
#[test]
fn an_answers_table_is_aligned() {
    let u = user("msg_00001a");
    let a = assistant("msg_00001b", &u.id);
    let answer = "Terms:\n\n| concept | meaning |\n|---|---|\n| turn | one prompt and its answer |\n| step | one request |\n";
    let mut app = app(vec![
        with_parts(u.clone(), vec![part("prt_0", &u, text("define"))]),
        with_parts(a.clone(), vec![part("prt_1", &a, text(answer))]),
    ]);
    let screen = at_three_widths(&mut app, 14);
    assert!(
        screen.contains("turn    │ one prompt and its answer"),
        "{screen}"
    );
    assert_snapshot!(screen);
}

/// The accept-edits mode (Shift+Tab) is named on the status line at every
/// width.
#[test]
fn the_status_line_names_the_accept_edits_mode() {
    let u = user("msg_00001a");
    let mut app = app(vec![with_parts(
        u.clone(),
        vec![part("prt_0", &u, text("hello"))],
    )]);
    let effects = app.cycle_mode();
    assert!(matches!(
        effects.as_slice(),
        [super::app::Effect::Send(
            crate::session::command::Command::AcceptEdits { on: true }
        )]
    ));
    let screen = at_three_widths(&mut app, 6);
    assert_eq!(screen.matches(" accept edits ").count(), 3, "{screen}");
    assert_snapshot!(screen);
}
