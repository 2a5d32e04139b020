//! "Always" answers kept per project (issue #11): the real binary in a
//! pseudo-terminal, the model a scripted server asking to run a command.
//! An "always" given in one cairn process holds in a new session of a new
//! process, `/permissions` lists it, and `/permissions revoke N` makes cairn
//! ask again.

use crate::scenario;
use crate::support;
use crate::tui_pty::{Terminal, pty_dirs};

use std::path::Path;

use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

const COMMAND: &str = "touch made-by-the-model";

/// Quits the TUI (Ctrl+C twice) and waits for the process to end.
fn quit(mut terminal: Terminal) {
    terminal.quit();
}

/// Answers the open dialog "Always allow" the exact command, as a person
/// does: after reading it (keys within its guard time are ignored, which is
/// the dialog's point, so the wait is the subject here), ↓ until "Always
/// allow" is chosen (the first ↓ may only focus the dialog), then Enter.
fn answer_always(terminal: &mut Terminal) {
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    for _ in 0..3 {
        terminal.type_text("\x1b[B");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if terminal.contents().contains("› Always allow") {
                terminal.type_text("\r");
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    panic!("could not choose Always allow:\n{}", terminal.contents());
}

fn start(project: &Path, data: &Path, config: &Path) -> Terminal {
    let terminal = Terminal::start(project, data, config, &[]);
    terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
    terminal
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_answer_outlives_the_process_until_revoked() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    for (round, answer) in ["First run done.", "Second run done."].iter().enumerate() {
        server.push(tool_call(
            &format!("call_{round}"),
            "bash",
            json!({ "command": COMMAND, "description": "make a file" }),
            500,
        ));
        server.push(text(answer, 600));
    }
    // Asked again after the revocation; the user's "no" ends the turn.
    server.push(tool_call(
        "call_2",
        "bash",
        json!({ "command": COMMAND, "description": "make a file" }),
        500,
    ));
    let marker = project.path().join("made-by-the-model");
    let (project_path, data_path, config_path) = (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    );
    tokio::task::spawn_blocking(move || {
        // 1. The model asks; the user answers "always".
        let mut first = start(&project_path, &data_path, &config_path);
        first.type_text("make the file\r");
        first.wait_for("the question", |s| s.contains("Always allow `"));
        answer_always(&mut first);
        first.wait_for("the first answer", |s| s.contains("First run done."));
        assert!(marker.exists(), "the allowed command ran");
        std::fs::remove_file(&marker).expect("remove the marker");
        quit(first);

        // 2. A new process, a new session: no question, the command runs.
        let mut second = start(&project_path, &data_path, &config_path);
        second.type_text("make it again\r");
        let screen = second.wait_for("the second answer", |s| s.contains("Second run done."));
        assert!(
            !screen.contains("always would allow"),
            "asked again:\n{screen}"
        );
        assert!(marker.exists(), "the remembered command ran unasked");

        // 3. Listed, then revoked.
        second.type_text("/permissions\r");
        let listed = second.wait_for("the listing", |s| s.contains("remembered permissions"));
        assert!(
            listed.contains(&format!("1  bash  {COMMAND}")),
            "the rule, numbered:\n{listed}"
        );
        assert!(listed.contains("(added 20"), "its date:\n{listed}");
        second.type_text("/permissions revoke 1\r");
        second.wait_for("the revocation", |s| s.contains("revoked 1"));

        // 4. Revoked in this process: cairn asks again; the user says no.
        second.type_text("once more\r");
        second.wait_for("the question again", |s| s.contains("Always allow `"));
        // Past the dialog's guard time, like a person who read it.
        std::thread::sleep(std::time::Duration::from_millis(1_000));
        second.type_text("\x1b");
        second.wait_for("the refusal", |s| {
            s.contains("The user rejected permission")
        });
        quit(second);

        // 5. And the revocation holds after a restart.
        let mut third = start(&project_path, &data_path, &config_path);
        third.type_text("/permissions\r");
        third.wait_for("an empty listing", |s| {
            s.contains("no remembered permissions")
        });
        quit(third);
    })
    .await
    .expect("the terminal sessions");
    assert_eq!(server.requests().len(), 5);
}
