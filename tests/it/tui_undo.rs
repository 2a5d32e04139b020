//! `/undo` and `/redo` in the terminal UI (issue #14), through the real
//! binary in a pseudo-terminal against the scripted server: a turn edits a
//! file through the model's `edit` call; `/undo` puts the file back on disk,
//! drops the turn from the transcript and puts its prompt back in the
//! composer; `/redo` brings the edit back. `/diff` opens the session's
//! changes and Ctrl+O expands the patch card to its step's diff. A file edited by hand since the
//! turn opens a dialog naming it: `k` keeps it, `o` overwrites it.

use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, pty_dirs};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

const ORIGINAL: &str = "teh cat sat\n";
const EDITED: &str = "the cat sat\n";

/// A turn that fixes the typo in `notes.txt`, then says so.
fn push_the_fix(server: &ScriptedServer) {
    server.push(tool_call(
        "call_1",
        "edit",
        json!({ "file_path": "notes.txt", "old_string": "teh", "new_string": "the" }),
        1_000,
    ));
    server.push(text("Fixed the typo.", 1_100));
}

/// Waits until `path` holds `expected`; panics with what it holds.
fn wait_for_file(path: &Path, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = std::fs::read_to_string(path).unwrap_or_default();
        if now == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {now:?}, not {expected:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn dirs(server: &ScriptedServer) -> (Vec<tempfile::TempDir>, [PathBuf; 3]) {
    let (project, data, config_home) = pty_dirs(server, true);
    std::fs::write(project.path().join("notes.txt"), ORIGINAL).expect("notes");
    let paths = [
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    ];
    (vec![project, data, config_home], paths)
}

/// Runs the fix turn in a fresh terminal and waits for its answer.
fn fixed(paths: &[PathBuf; 3]) -> Terminal {
    let [p, d, c] = paths;
    let mut terminal = Terminal::start(p, d, c, &[]);
    terminal.wait_for("the status line", |s| s.contains("compact at"));
    terminal.type_text("fix notes.txt\r");
    terminal.wait_for("the answer", |s| s.contains("Fixed the typo."));
    wait_for_file(&p.join("notes.txt"), EDITED);
    terminal
}

fn quit(mut terminal: Terminal) {
    terminal.type_text("\x03");
    terminal.quit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_the_file_and_the_prompt_and_redo_brings_the_edit_back() {
    let server = ScriptedServer::start([]).await;
    push_the_fix(&server);
    let (_dirs, paths) = dirs(&server);
    let notes = paths[0].join("notes.txt");
    tokio::task::spawn_blocking(move || {
        let mut terminal = fixed(&paths);
        // /diff opens the session's changes over the transcript; Esc closes it.
        terminal.type_text("/diff\r");
        let screen = terminal.wait_for("the diff overlay", |s| {
            s.contains("/diff · 1 file") && s.contains("▸ notes.txt")
        });
        assert!(screen.contains("+the cat sat"), "{screen}");
        terminal.type_text("\x1b");
        terminal.wait_for("the overlay closing", |s| !s.contains("/diff · 1 file"));
        // Ctrl+O expands the patch card to its step's diff, read on demand.
        terminal.type_text("\x0f");
        terminal.wait_for("the expanded patch card", |s| s.contains("│ ▸ notes.txt"));
        terminal.type_text("\x0f");

        terminal.type_text("/undo\r");
        let screen = terminal.wait_for("the undo", |s| s.contains("undid the last turn"));
        wait_for_file(&notes, ORIGINAL);
        assert!(screen.contains("restored notes.txt"), "{screen}");
        let screen = terminal.wait_for("the turn leaving the transcript", |s| {
            !s.contains("Fixed the typo.")
        });
        assert!(
            screen.contains("> fix notes.txt"),
            "the prompt is back in the composer:\n{screen}"
        );

        terminal.type_text("\x03"); // clear the composer
        terminal.type_text("/redo\r");
        let screen = terminal.wait_for("the redo", |s| {
            s.contains("redid the last turn") && s.contains("Fixed the typo.")
        });
        wait_for_file(&notes, EDITED);
        assert!(!screen.contains("> fix notes.txt"), "{screen}");
        quit(terminal);
    })
    .await
    .expect("the terminal session");
    assert_eq!(server.requests().len(), 2, "undo and redo call no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_over_a_hand_edit_asks_and_keeps_or_overwrites_it() {
    let server = ScriptedServer::start([]).await;
    push_the_fix(&server);
    let (_dirs, paths) = dirs(&server);
    let notes = paths[0].join("notes.txt");
    tokio::task::spawn_blocking(move || {
        let mut terminal = fixed(&paths);
        std::fs::write(&notes, "my own words\n").expect("edit by hand");
        terminal.type_text("/undo\r");
        let screen = terminal.wait_for("the conflict dialog", |s| {
            s.contains("files edited since the turn") && s.contains("overwrite them")
        });
        assert!(screen.contains("  notes.txt"), "{screen}");
        terminal.type_text("k");
        terminal.wait_for("the dialog closing", |s| {
            s.contains("nothing undone; your edits are kept")
        });
        assert_eq!(
            std::fs::read_to_string(&notes).expect("notes"),
            "my own words\n"
        );
        assert!(
            terminal.contents().contains("Fixed the typo."),
            "nothing undone"
        );

        terminal.type_text("/undo\r");
        terminal.wait_for("the dialog again", |s| s.contains("overwrite them"));
        terminal.type_text("o");
        terminal.wait_for("the forced undo", |s| {
            s.contains("undid the last turn") && !s.contains("Fixed the typo.")
        });
        wait_for_file(&notes, ORIGINAL);
        quit(terminal);
    })
    .await
    .expect("the terminal session");
}

/// `/undo` while the model streams: a notice says to wait or press Esc and
/// nothing moves; after Esc the interrupted turn can be undone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_while_busy_says_to_wait_and_works_after_esc() {
    let server = ScriptedServer::start([]).await;
    server.push(crate::scenario::text_then_stall("Working on it"));
    let (_dirs, paths) = dirs(&server);
    tokio::task::spawn_blocking(move || {
        let [p, d, c] = &paths;
        let mut terminal = Terminal::start(p, d, c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("a long job\r");
        terminal.wait_for("the stalled stream", |s| s.contains("Working on it"));
        terminal.type_text("/undo\r");
        let screen = terminal.wait_for("the busy notice", |s| {
            s.contains("wait for the turn to finish or Esc")
        });
        assert!(
            screen.contains("Working on it"),
            "nothing undone:\n{screen}"
        );
        terminal.type_text("\x1b");
        terminal.wait_for("the interrupt", |s| {
            s.contains("interrupted") && !s.contains("interrupting")
        });
        terminal.type_text("/undo\r");
        let screen = terminal.wait_for("the undo", |s| {
            s.contains("undid the last turn") && !s.contains("Working on it")
        });
        assert!(screen.contains("> a long job"), "{screen}");
        quit(terminal);
    })
    .await
    .expect("the terminal session");
}

/// Issue #35 in the terminal: an edit of an ignored `.env` shows on the
/// step's card and in `/diff`, and `/undo` puts it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_of_an_ignored_file_shows_on_the_card_and_restores_it() {
    let server = ScriptedServer::start([]).await;
    server.push(tool_call(
        "call_1",
        "edit",
        json!({ "file_path": ".env", "old_string": "KEY=old", "new_string": "KEY=new" }),
        1_000,
    ));
    server.push(text("Changed the key.", 1_100));
    let (_dirs, paths) = dirs(&server);
    let env = paths[0].join(".env");
    std::fs::write(paths[0].join(".gitignore"), ".env\n").expect("gitignore");
    std::fs::write(&env, "KEY=old\n").expect(".env");
    tokio::task::spawn_blocking(move || {
        let [p, d, c] = &paths;
        let mut terminal = Terminal::start(p, d, c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("change the key\r");
        let screen = terminal.wait_for("the card", |s| {
            s.contains("Changed the key.") && s.contains("1 file changed")
        });
        assert!(screen.contains("edit .env"), "{screen}");
        wait_for_file(&env, "KEY=new\n");
        terminal.type_text("/diff\r");
        let screen = terminal.wait_for("the diff overlay", |s| s.contains("▸ .env"));
        assert!(screen.contains("+KEY=new"), "{screen}");
        terminal.type_text("\x1b");
        terminal.wait_for("the overlay closing", |s| !s.contains("▸ .env"));
        terminal.type_text("/undo\r");
        let screen = terminal.wait_for("the undo", |s| s.contains("undid the last turn"));
        assert!(screen.contains("restored .env"), "{screen}");
        wait_for_file(&env, "KEY=old\n");
        quit(terminal);
    })
    .await
    .expect("the terminal session");
}
