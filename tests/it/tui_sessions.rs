//! Issue 17's sessions half, through the real binary in a pseudo-terminal:
//! the welcome of a new session, `/new`'s feedback, `/sessions`, and a
//! terminal that closes under a cairn that ignores SIGHUP.

use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, pty_dirs};

/// A new session opens with the welcome (version, directory, model, hints);
/// the first message replaces it with the transcript; `/new` says so and
/// shows the welcome again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_welcomes_until_something_is_sent_and_new_says_so() {
    let server = ScriptedServer::start([text("Hello back.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    );
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        let version = format!("cairn {}", env!("CARGO_PKG_VERSION"));
        let screen = terminal.wait_for("the welcome", |s| s.contains(&version));
        let shown_dir = p.display().to_string();
        assert!(
            screen.contains(&shown_dir) || screen.contains("directory"),
            "{screen}"
        );
        assert!(screen.contains("scripted/test-model"), "{screen}");
        assert!(
            screen.contains("/help") && screen.contains("@path"),
            "{screen}"
        );
        terminal.type_text("hello there\r");
        let screen = terminal.wait_for("the answer", |s| s.contains("Hello back."));
        assert!(!screen.contains(&version), "the welcome is gone:\n{screen}");
        terminal.type_text("/new\r");
        terminal.wait_for("the notice and the welcome again", |s| {
            s.contains("new session started") && s.contains(&version) && !s.contains("Hello back.")
        });
        for _ in 0..2 {
            terminal.type_text("\x03");
        }
        terminal.wait_exit();
    })
    .await
    .expect("the terminal session");
}
