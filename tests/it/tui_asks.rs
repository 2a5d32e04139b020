//! The permission dialog as the model reaches it, through the real binary in
//! a pseudo-terminal (issue #28): a bash line that both runs a command and
//! writes a file through `>` is one question listing both reasons, not two
//! dialogs in a row; an MCP call's dialog shows the arguments it sends, as
//! the bash ask shows the command.

use crate::mcp_client::fixture;
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};
use crate::tui_subtask::allow_once;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_with_a_redirect_is_one_dialog_with_both_reasons() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "touch made && echo hi > out.txt", "description": "two things" }),
            2_000,
        ),
        text("Both done.", 2_100),
    ])
    .await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let (project_path, data_path, config_path) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        terminal.type_text("do both\r");
        let dialog = terminal.wait_for("the ask", |s| s.contains("permission: bash"));
        assert!(dialog.contains("touch made"), "{dialog}");
        assert!(
            dialog.contains("out.txt"),
            "the write is asked about in the same dialog:\n{dialog}"
        );
        allow_once(&mut terminal);
        // A second dialog would hold the turn: the answer never comes.
        let screen = terminal.wait_for("the answer with no second dialog", |s| {
            s.contains("Both done.") || s.contains("permission: edit")
        });
        assert!(
            !screen.contains("permission: edit"),
            "a second dialog for the redirect:\n{screen}"
        );
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(
        std::fs::read_to_string(project.path().join("out.txt")).expect("out.txt"),
        "hi\n"
    );
    assert!(project.path().join("made").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_ask_shows_the_arguments_of_the_call() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "fixture_echo",
            json!({ "text": "send-this-to-the-server" }),
            2_000,
        ),
        text("Echoed.", 2_100),
    ])
    .await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let config = project.path().join("cairn.toml");
    let mut toml = std::fs::read_to_string(&config).expect("config");
    toml.push_str(&format!(
        "[mcp.fixture]\ncommand = {:?}\nargs = [\"--odd-names\"]\ntimeout = 20\n",
        fixture()
    ));
    std::fs::write(&config, toml).expect("config");
    crate::tui_pty::trust_in_terminal_env(project.path(), data.path(), config_home.path());
    let (project_path, data_path, config_path) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        terminal.type_text("echo it\r");
        let dialog = terminal.wait_for("the MCP ask", |s| s.contains("permission: mcp"));
        assert!(
            dialog.contains("Call echo (MCP server fixture)"),
            "{dialog}"
        );
        assert!(
            dialog.contains("\"text\": \"send-this-to-the-server\""),
            "the arguments are shown:\n{dialog}"
        );
        allow_once(&mut terminal);
        terminal.wait_for("the answer", |s| s.contains("Echoed."));
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}
