//! Issue 17's rough edges, through the real binary in a pseudo-terminal:
//! the live session cost, Ctrl+C on a busy turn, Esc Esc on a queue.

use crate::scenario::{text, text_then_stall, tool_call};
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};

use std::io::Write as _;

/// The status line's cost moves after a priced turn: 10,000 prompt tokens at
/// $100 per million are $1.00, read back from the store, not the opening value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_cost_updates_after_a_priced_turn() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(project.path().join("cairn.toml"))
        .expect("config");
    config
        .write_all(b"price_input = 100.0\nprice_output = 0.0\n")
        .expect("price");
    server.push(text("Priced answer.", 10_000));
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the opening cost", |s| s.contains("$0.00"));
        terminal.type_text("what does it cost\r");
        terminal.wait_for("the answer", |s| s.contains("Priced answer."));
        terminal.wait_for("the cost of the turn", |s| {
            s.contains("$1.00") && !s.contains("$0.00")
        });
        for _ in 0..2 {
            terminal.type_text("\x03");
        }
        // Back on the normal screen: how to come back to this session.
        terminal.wait_for("the resume hint", |s| {
            s.contains("resume with `cairn --continue` or `cairn --session ses_")
        });
        terminal.wait_exit();
    })
    .await
    .expect("the terminal session");
}

/// Ctrl+C while the model streams interrupts the turn and keeps cairn open
/// with the draft; Esc Esc puts a queued message back into the composer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_a_busy_turn_and_esc_esc_returns_the_queue() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    server.push(text_then_stall("Thinking about it"));
    server.push(text_then_stall("Second try"));
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("start working\r");
        terminal.wait_for("the stalled stream", |s| s.contains("Thinking about it"));
        terminal.type_text("a draft");
        terminal.type_text("\x03");
        // The turn is marked interrupted, "interrupting…" is gone, cairn is
        // still open with the draft.
        let screen = terminal.wait_for("the interrupt", |s| {
            s.contains("interrupted") && !s.contains("interrupting")
        });
        assert!(screen.contains("> a draft"), "the draft stays:\n{screen}");
        // Clear the draft, start another stalled turn, queue a message.
        terminal.type_text("\x03");
        terminal.type_text("go again\r");
        terminal.wait_for("the second stream", |s| s.contains("Second try"));
        terminal.type_text("queued words\r");
        terminal.wait_for("the queue", |s| s.contains("queued"));
        terminal.type_text("\x1b");
        terminal.type_text("\x1b");
        terminal.wait_for("the queue back in the composer", |s| {
            s.contains("queued message back in the composer") && s.contains("queued words")
        });
        terminal.type_text("\x03");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(server.requests().len(), 2, "the queued text was not sent");
}

/// SIGTERM while a turn streams: cairn leaves the alternate screen, turns
/// mouse reporting off, exits, and `--continue` opens the same transcript.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_restores_the_terminal_and_the_session_continues() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    server.push(text_then_stall("Halfway through"));
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        assert_eq!(
            terminal.modes(),
            (true, true),
            "the TUI runs on the alternate screen with mouse reporting"
        );
        terminal.type_text("a long job\r");
        terminal.wait_for("the stalled stream", |s| s.contains("Halfway through"));
        let pid = i32::try_from(terminal.pid()).expect("a pid");
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        terminal.wait_exit();
        assert_eq!(
            terminal.modes(),
            (false, false),
            "alternate screen and mouse reporting are off"
        );

        let mut reopened = Terminal::start(&p, &d, &c, &["--continue"]);
        reopened.wait_for("the same transcript", |s| {
            s.contains("a long job") && s.contains("compact at")
        });
        reopened.quit();
    })
    .await
    .expect("the terminal session");
}

/// `!cmd` is the user's own shell run on screen (`$ cmd` under their
/// header, its output under it, no model header, no synthetic message),
/// while the model still gets what it always got: the synthetic user text,
/// then a `bash` call and its output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_run_is_the_users_on_screen_and_unchanged_for_the_model() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    server.push(text("It printed a greeting.", 500));
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("!echo shell-said-hi\r");
        let screen = terminal.wait_for("the shell run", |s| {
            s.contains("$ echo shell-said-hi") && s.contains("│ shell-said-hi")
        });
        assert!(screen.contains("▌ you · shell"), "{screen}");
        assert!(!screen.contains("executed by the user"), "{screen}");
        assert!(!screen.contains("◆ build"), "no model header:\n{screen}");
        terminal.type_text("what did it print\r");
        terminal.wait_for("the answer", |s| s.contains("It printed a greeting."));
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the shell run alone calls no model");
    let sent = requests[0].json().to_string();
    for expected in [
        "The following tool was executed by the user",
        "echo shell-said-hi",
        "shell-said-hi\\n",
        "what did it print",
    ] {
        assert!(sent.contains(expected), "{expected} in {sent}");
    }
    let messages = requests[0].json()["messages"].clone();
    let calls: Vec<&serde_json::Value> = messages
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m.get("tool_calls"))
        .collect();
    assert_eq!(calls.len(), 1, "one bash call: {messages}");
    assert_eq!(calls[0][0]["function"]["name"], "bash");
}

/// The cards through the real binary: a bash output the model got only the
/// tail of is marked and counts what the card hides; a read shows the file,
/// not the wrapper; todowrite is a checklist. A notice is whole beside the
/// gauge at 120 columns, and Ctrl+O says which way it toggled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_and_notices_show_what_the_user_needs() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let notes = project.path().join("notes.md");
    std::fs::write(&notes, "first note\nsecond note\n").expect("notes");
    server.push(tool_call(
        "call_1",
        "bash",
        serde_json::json!({ "command": "seq 1 3000", "description": "count" }),
        1_000,
    ));
    server.push(tool_call(
        "call_2",
        "read",
        serde_json::json!({ "filePath": notes.display().to_string() }),
        1_100,
    ));
    server.push(tool_call(
        "call_3",
        "todowrite",
        serde_json::json!({ "todos": [
            { "content": "Count", "status": "completed", "priority": "high" },
            { "content": "Read the notes", "status": "in_progress", "priority": "high" },
            { "content": "Plan the fix", "status": "pending", "priority": "low" },
        ] }),
        1_200,
    ));
    server.push(text("Planned.", 1_300));
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("count, read and plan\r");
        let screen = terminal.wait_for("the answer", |s| s.contains("Planned."));
        for expected in [
            "✂ the model got only the last 2000 lines · full output in",
            "… 1996 more lines (Ctrl+O)",
            "│ 3000",
            "2 lines · ",
            "│ 1 first note",
            "│ 2 second note",
            "☑ Count",
            "◐ Read the notes",
            "☐ Plan the fix",
        ] {
            assert!(screen.contains(expected), "{expected}:\n{screen}");
        }
        for unwanted in ["...output truncated...", "<content>", "\"status\""] {
            assert!(!screen.contains(unwanted), "{unwanted}:\n{screen}");
        }
        // A command's refusal as the long notice (`/bogus` alone is a
        // prompt for the model since #26: only whole command names run).
        terminal.type_text("/agent bogus\r");
        terminal.wait_for("the whole notice", |s| {
            s.contains("no agent named \"bogus\"; try build or plan") && s.contains("compact at")
        });
        terminal.type_text("\x0f");
        terminal.wait_for("the toggle's notice", |s| {
            s.contains("tool output and summaries expanded (Ctrl+O folds)") && s.contains("│ 2980")
        });
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}
