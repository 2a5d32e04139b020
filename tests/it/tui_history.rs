//! Prompt history that lasts (issue #34), through the real binary in a
//! pseudo-terminal: a prompt typed in one session is reached by ↑ and by
//! Ctrl+R in a new session of the same project after a restart.

use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn earlier_prompts_are_reached_by_up_and_ctrl_r_after_a_restart() {
    let server =
        ScriptedServer::start([text("First answer.", 300), text("Second answer.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let (project_path, data_path, config_path) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        terminal.type_text("alpha: check the parser\r");
        terminal.wait_for("the first answer", |s| s.contains("First answer."));
        terminal.type_text("beta: run the tests\r");
        terminal.wait_for("the second answer", |s| s.contains("Second answer."));
        terminal.quit();

        // A new process and a new session of the same project.
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        assert!(
            !terminal.contents().contains("First answer."),
            "a new session"
        );
        terminal.type_text("\x1b[A");
        terminal.wait_for("the last prompt on Up", |s| {
            s.lines().any(|l| l.starts_with("> beta: run the tests"))
        });
        terminal.type_text("\x1b[A");
        terminal.wait_for("the one before on Up", |s| {
            s.lines()
                .any(|l| l.starts_with("> alpha: check the parser"))
        });
        terminal.type_text("\x1b[B\x1b[B");
        terminal.wait_for("the empty draft again", |s| {
            !s.lines()
                .any(|l| l.starts_with("> alpha") || l.starts_with("> beta"))
        });
        terminal.type_text("\x12");
        terminal.type_text("pars");
        let screen = terminal.wait_for("the search's match", |s| {
            s.lines()
                .any(|l| l.starts_with("> alpha: check the parser"))
        });
        assert!(screen.contains("search earlier prompts: pars"), "{screen}");
        terminal.type_text("\r");
        terminal.wait_for("the search closed with the match kept", |s| {
            !s.contains("search earlier prompts")
                && s.lines()
                    .any(|l| l.starts_with("> alpha: check the parser"))
        });
        terminal.type_text("\x15");
        terminal.wait_for("the composer emptied", |s| s.contains("ask anything"));
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(
        server.requests().len(),
        2,
        "Enter in the search sent nothing"
    );
}
