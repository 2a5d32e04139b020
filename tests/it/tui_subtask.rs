//! Issue 15's TUI half through the real binary in a pseudo-terminal, against
//! the scripted server: a `task` call's card follows the child live (its
//! permission ask named in the parent's dialog, its running command, tool
//! count and tokens), the child session opens from the card and Esc goes
//! back, and the card ends as done with the child's figures.
//!
//! The child waits on a file the test creates, so every step is a screen
//! the test waits for, not a sleep.

use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, pty_dirs};

use std::time::{Duration, Instant};

use serde_json::json;

const GATE_COMMAND: &str = "while [ ! -f gate ]; do sleep 0.05; done; echo gate-open";

/// ↓ until "Allow once" is chosen (nothing is chosen when the dialog
/// opens, and its guard time ignores the first keys), then Enter.
pub(crate) fn allow_once(terminal: &mut Terminal) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !terminal.contents().contains("› Allow once") {
        assert!(Instant::now() < deadline, "cannot select Allow once");
        terminal.type_text("\x1b[B");
        std::thread::sleep(Duration::from_millis(50));
    }
    terminal.type_text("\r");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subtask_card_follows_the_child_and_the_child_opens_and_closes() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    server.push(tool_call(
        "call_task",
        "task",
        json!({
            "description": "wait for the gate",
            "prompt": "Wait until the file `gate` exists, then say so.",
            "subagent_type": "general",
        }),
        2_000,
    ));
    server.push(tool_call(
        "call_gate",
        "bash",
        json!({ "command": GATE_COMMAND, "description": "wait for gate" }),
        3_100,
    ));
    server.push(text("The gate opened.", 3_600));
    server.push(text("Done: the child saw the gate open.", 2_400));

    let gate = project.path().join("gate");
    let (project_path, data_path, config_path) = (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    );
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("delegate the wait\r");

        // The child's bash ask reaches the parent's dialog, naming the child.
        let screen = terminal.wait_for("the child's ask", |s| {
            s.contains("general (subtask): wait for the gate · wants to:")
        });
        assert!(screen.contains("permission: bash"), "{screen}");
        assert!(
            screen.contains("waiting for permission"),
            "the card:\n{screen}"
        );
        allow_once(&mut terminal);

        // Live: the card shows the child's running command and its figures.
        let screen = terminal.wait_for("the card following the child", |s| {
            s.contains("bash wait for gate · 1 tool · 3.1k tokens")
        });
        assert!(
            screen.contains("◐ general (subtask) wait for the gate  running"),
            "{screen}"
        );
        assert!(
            screen.contains("ctrl+g opens the child session"),
            "{screen}"
        );

        // Open the child: its own transcript, and how to go back.
        terminal.type_text("\x07");
        let child = terminal.wait_for("the child session", |s| {
            s.contains("general (subtask): wait for the gate · child of")
                && s.contains("Wait until the file `gate` exists")
        });
        assert!(child.contains("Esc or ctrl+g goes back"), "{child}");
        assert!(
            child.contains("◐ bash"),
            "the child's running tool:\n{child}"
        );
        assert!(!child.contains("┃ delegate the wait"), "{child}");

        // The child goes on while shown: its answer arrives live.
        std::fs::write(&gate, "").expect("open the gate");
        terminal.wait_for("the child's answer in the child view", |s| {
            s.contains("The gate opened.") && s.contains("✓ bash")
        });

        // Esc: back in the parent, which has finished meanwhile.
        terminal.type_text("\x1b");
        let parent = terminal.wait_for("the parent again", |s| {
            s.contains("Done: the child saw the gate open.")
                && s.contains("✓ general (subtask) wait for the gate  done")
        });
        assert!(!parent.contains("child of"), "{parent}");
        assert!(parent.contains("┃ delegate the wait"), "{parent}");
        assert!(parent.contains("1 tool · 3.6k tokens"), "{parent}");
        assert!(
            parent.contains("The gate opened."),
            "the answer's first line:\n{parent}"
        );

        // The ended child opens again, read from the store.
        terminal.type_text("\x07");
        terminal.wait_for("the ended child", |s| {
            s.contains("child of") && s.contains("gate-open")
        });
        terminal.type_text("\x07");
        terminal.wait_for("the parent once more", |s| {
            !s.contains("child of") && s.contains("Done: the child saw the gate open.")
        });
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(server.requests().len(), 4, "parent, child x2, parent");
}
