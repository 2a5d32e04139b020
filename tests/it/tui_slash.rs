//! Slash commands in the real binary's terminal UI (issue #26): a message
//! whose first word is not a command is the user's text and is sent.

use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};

/// `/etc/hosts is empty?` was refused as "unknown command /etc/hosts" and
/// nothing was sent; it is a question about a path, so the model gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_typed_as_the_first_word_is_sent_to_the_model() {
    let server = ScriptedServer::start([text("That file lists host names.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    let screen = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("/etc/hosts is empty?\r");
        let screen = terminal.wait_for("the answer or a refusal", |s| {
            s.contains("That file lists host names.") || s.contains("unknown command")
        });
        terminal.quit();
        screen
    })
    .await
    .expect("the terminal session");
    assert!(!screen.contains("unknown command"), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{screen}");
    let said = requests[0].json()["messages"].to_string();
    assert!(said.contains("/etc/hosts is empty?"), "{said}");
}
