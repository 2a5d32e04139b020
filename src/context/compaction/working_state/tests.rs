use serde_json::json;

use super::*;
use crate::context::view::test_history::HistoryBuilder;
use crate::message::{PatchFile, PatchPart, ToolTime};

fn done(tool: &str, input: Value, output: &str) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: format!("call_{tool}"),
        tool: tool.into(),
        state: ToolState::Completed {
            input,
            output: output.into(),
            title: tool.into(),
            metadata: json!({}),
            time: ToolTime::default(),
            attachments: Vec::new(),
        },
    })
}

fn patch(path: &str, kind: &str, added: u32, by: &str) -> PartKind {
    PartKind::Patch(PatchPart {
        hash: "h".into(),
        files: vec![path.into()],
        after: None,
        kept: Vec::new(),
        unrestorable: Vec::new(),
        refreshed: Vec::new(),
        changes: vec![PatchFile {
            path: path.into(),
            kind: kind.into(),
            added,
            removed: 1,
            by: by.into(),
        }],
    })
}

/// A constraint, a decision, a written-then-edited file, a read, a todo
/// list and a skill: the held-out session of the issue.
fn session() -> Vec<MessageWithParts> {
    let mut h = HistoryBuilder::new();
    h.user("Constraint: never use unsafe, and keep the MSRV at 1.70.");
    h.assistant()
        .part(done(
            "write",
            json!({"path": "src/parser.rs", "content": "fn a() {}"}),
            "wrote",
        ))
        .part(patch("src/parser.rs", "added", 10, "write"))
        .finish(10);
    h.user("Decision: errors go through thiserror, not anyhow.");
    h.assistant()
        .part(done("read", json!({"path": "/p/src/lexer.rs"}), "lexer"))
        .part(done(
            "edit",
            json!({"path": "src/parser.rs", "old_string": "a", "new_string": "b"}),
            "edited",
        ))
        .part(patch("src/parser.rs", "modified", 2, "edit"))
        .part(done(
            "todowrite",
            json!({"todos": [
                {"content": "wire errors", "status": "in_progress"},
                {"content": "split lexer", "status": "completed"},
                {"content": "add tests", "status": "pending"}
            ]}),
            "[]",
        ))
        .part(done(
            "skill",
            json!({"name": "rust-style"}),
            "Prefer iterators.",
        ))
        .finish(10);
    h.user("now the last thing");
    h.build()
}

fn texts() -> Vec<FileText> {
    vec![
        FileText {
            path: "src/parser.rs".into(),
            text: Some("fn b() {}\n".into()),
            cut_at: None,
        },
        FileText {
            path: "src/lexer.rs".into(),
            text: Some("pub fn lex() {}\n".into()),
            cut_at: None,
        },
    ]
}

#[test]
fn carries_words_files_text_todos_and_skills_whatever_the_summary() {
    let records = session();
    assert_eq!(
        files_to_read(&records, Path::new("/p")),
        ["src/parser.rs", "src/lexer.rs"]
    );
    let last = records.last().map(|m| m.message.id.clone());
    let state = build(
        &records,
        Path::new("/p"),
        last.as_deref(),
        &texts(),
        Budget::for_usable(27_307),
    );
    let text = &state.text;
    for needle in [
        "Constraint: never use unsafe, and keep the MSRV at 1.70.",
        "Decision: errors go through thiserror, not anyhow.",
        "- src/parser.rs: added, +12 -2 (by write, edit)",
        "- src/lexer.rs",
        "fn b() {}",
        "- [in_progress] wire errors",
        "- [pending] add tests",
        "### skill: rust-style\nPrefer iterators.",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(
        !text.contains("now the last thing"),
        "a message kept verbatim after the summary is not repeated"
    );
    assert!(
        text.find("Decision").unwrap() < text.find("Constraint").unwrap(),
        "newest first"
    );
    let c = &state.carried;
    assert_eq!(
        (c.user_messages, c.changed_files, c.read_files, c.file_texts),
        (2, 1, 1, 2)
    );
    assert_eq!((c.todos, c.open_todos, c.skills), (3, 2, 1));
    assert!(c.tokens > 0 && c.tokens <= Budget::for_usable(27_307).total);
}

#[test]
fn budgets_scale_with_the_window() {
    assert_eq!(Budget::for_usable(6_827).total, 1_024);
    assert_eq!(Budget::for_usable(27_307).total, 4_096);
    assert_eq!(Budget::for_usable(106_667).total, 16_000);
    assert_eq!(Budget::for_usable(168_000).total, 16_000);
    assert_eq!(Budget::for_usable(0).total, 16_000);
}

#[test]
fn a_long_paste_is_named_and_older_short_messages_still_fit() {
    let mut h = HistoryBuilder::new();
    h.user("Constraint: keep the public API.");
    h.assistant().finish(1);
    h.user(&"log line 12345 failed at 0xdeadbeef\n".repeat(400));
    h.assistant().finish(1);
    let records = h.build();
    let state = build(
        &records,
        Path::new("/p"),
        None,
        &[],
        Budget::for_usable(6_827),
    );
    assert!(state.text.contains("Constraint: keep the public API."));
    assert!(state.text.contains("Left out for room (1 message(s)"));
    assert!(
        state
            .text
            .contains("\"log line 12345 failed at 0xdeadbeef log line")
    );
    assert_eq!(
        (
            state.carried.user_messages,
            state.carried.omitted_user_messages
        ),
        (1, 1)
    );
    assert!(state.carried.tokens <= 1_024, "{}", state.carried.tokens);
}

#[test]
fn a_big_file_is_cut_at_a_line_with_where_to_read_on() {
    let records = session();
    let big: String = (1..=2_000).map(|i| format!("let x{i} = {i};\n")).collect();
    let files = [FileText {
        path: "src/parser.rs".into(),
        text: Some(big),
        cut_at: None,
    }];
    let budget = Budget::for_usable(6_827);
    let state = build(&records, Path::new("/p"), None, &files, budget);
    assert!(
        state.text.contains("### src/parser.rs (lines 1-"),
        "{}",
        state.text
    );
    assert!(state.text.contains("read it with offset="));
    assert!(
        state.carried.tokens <= budget.total + 16,
        "{}",
        state.carried.tokens
    );
}

#[test]
fn thin_summaries_are_caught() {
    let records = session();
    assert!(is_thin("ok", &records, Path::new("/p")));
    assert!(is_thin("", &records, Path::new("/p")));
    let vague = "We worked on several things together and made good progress on the task overall; the remaining work is to continue in the same direction as before and finish what was started earlier today.";
    assert!(
        is_thin(vague, &records, Path::new("/p")),
        "names no changed file"
    );
    let named = format!("{vague} The parser lives in src/parser.rs.");
    assert!(!is_thin(&named, &records, Path::new("/p")));
}

#[test]
fn nothing_recorded_means_no_state() {
    let state = build(&[], Path::new("/p"), None, &[], Budget::for_usable(6_827));
    assert_eq!(state.text, "");
    assert_eq!(state.carried, Carried::default());
}

#[test]
fn hundreds_of_left_out_messages_still_fit_the_budget() {
    let mut h = HistoryBuilder::new();
    for n in 0..500 {
        h.user(&format!(
            "Turn {n}: fix case {n} in module m{} and keep the API.",
            n % 40
        ));
        h.assistant().finish(1);
    }
    let records = h.build();
    for usable in [6_827, 27_307, 168_000] {
        let budget = Budget::for_usable(usable);
        let state = build(&records, Path::new("/p"), None, &[], budget);
        assert!(
            state.carried.tokens <= budget.total,
            "{usable}: {} > {}",
            state.carried.tokens,
            budget.total
        );
        assert!(state.text.contains("older"), "the rest are counted");
    }
}

#[test]
fn the_attack_table_of_the_blind_review() {
    let root = Path::new("/p");
    // `data.txt` does not name `a.txt`: the summary is still thin.
    let mut h = HistoryBuilder::new();
    h.user("change a");
    h.assistant()
        .part(patch("a.txt", "modified", 1, "edit"))
        .finish(1);
    let records = h.build();
    let summary = format!(
        "We worked on data.txt and nothing else. {}",
        "word ".repeat(30)
    );
    assert!(is_thin(&summary, &records, root));
    assert!(!is_thin(&format!("{summary} Then a.txt."), &records, root));
    // `sub/../b.txt` is `b.txt`; a write outside the project is named.
    let mut h = HistoryBuilder::new();
    h.user("write");
    h.assistant()
        .part(done("write", json!({"path": "sub/../b.txt"}), "ok"))
        .part(patch("b.txt", "added", 1, "write"))
        .part(done("write", json!({"path": "/elsewhere/out.txt"}), "ok"))
        .finish(1);
    let records = h.build();
    assert_eq!(
        files_to_read(&records, root),
        ["/elsewhere/out.txt", "b.txt"]
    );
    let state = build(&records, root, None, &[], Budget::for_usable(27_307));
    assert!(state.text.contains("- b.txt: added"), "{}", state.text);
    assert!(
        state
            .text
            .contains("- /elsewhere/out.txt: changed by write"),
        "{}",
        state.text
    );
    assert_eq!(state.carried.changed_files, 2);
    // A file read only in part says so, not a line count it cannot know.
    let files = [FileText {
        path: "b.txt".into(),
        text: Some("y\n".repeat(100_000)),
        cut_at: Some(50_000_000),
    }];
    let state = build(&records, root, None, &files, Budget::for_usable(27_307));
    assert!(
        state
            .text
            .contains("of a 50000000-byte file; read it with offset="),
        "{}",
        state.text
    );
}

#[test]
fn whatever_the_records_the_state_fits_its_budget() {
    // Whole messages that just fit, long file lists, many skills.
    for (n, size) in [(3, 900), (12, 300), (40, 60), (200, 20)] {
        let mut h = HistoryBuilder::new();
        for i in 0..n {
            h.user(&format!("message {i} {}", "palabra ".repeat(size)));
            let mut a = h.assistant();
            for f in 0..5 {
                a = a.part(patch(&format!("dir{i}/file{f}.rs"), "modified", 3, "edit"));
            }
            a.part(done(
                "skill",
                json!({"name": format!("skill{i}")}),
                &"rule ".repeat(size),
            ))
            .finish(1);
        }
        let records = h.build();
        let files = [FileText {
            path: "dir0/file0.rs".into(),
            text: Some("let x = 1;\n".repeat(3_000)),
            cut_at: None,
        }];
        for usable in [3_414, 6_827, 27_307, 168_000] {
            let budget = Budget::for_usable(usable);
            let state = build(&records, Path::new("/p"), None, &files, budget);
            assert!(
                state.carried.tokens <= budget.total,
                "{n}x{size} at {usable}: {} > {}",
                state.carried.tokens,
                budget.total
            );
            assert!(state.carried.changed_files > 0);
        }
    }
}
