//! MCP in the terminal UI, through the real binary in a pty with the fixture
//! server (examples/mcp_fixture.rs) and one that cannot start: the status
//! line names the failed server, `/mcp` lists both (state, tools, prompts,
//! last error) and restarts the selected one with `r`, and a server prompt
//! offered in the slash menu becomes the user message.

use crate::mcp_client::fixture;
use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, pty_dirs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_prompts_and_failures_in_the_terminal() {
    let server = ScriptedServer::start([text("Reviewed in the TUI.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let config = project.path().join("cairn.toml");
    let mut toml = std::fs::read_to_string(&config).expect("config");
    let starts = project.path().join("starts.txt");
    toml.push_str(&format!(
        "[mcp.fx]\ncommand = \"{}\"\nargs = [\"--starts-file\", \"{}\"]\n\
         [mcp.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
        fixture(),
        starts.display()
    ));
    std::fs::write(&config, toml).expect("config");
    // The user trusts their project's servers (the trust suite covers not trusting).
    crate::tui_pty::trust_in_terminal_env(project.path(), data.path(), config_home.path());

    let (project_path, data_path, config_path) = (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    );
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the failed server in the status line", |s| {
            s.contains("scripted/test-model") && s.contains("mcp: broken failed")
        });

        terminal.type_text("/mcp\r");
        let overlay = terminal.wait_for("the /mcp overlay with fx ready", |s| {
            s.contains("MCP servers") && s.contains("fx  ready  7 tools, 2 prompts")
        });
        assert!(overlay.contains("broken  failed  0 tools"), "{overlay}");
        assert!(overlay.contains("last error: cannot run"), "{overlay}");

        // Down to fx, restart it: a second process starts and is listed
        // ready with its tools.
        terminal.type_text("\x1b[B");
        terminal.type_text("r");
        terminal.wait_for("the second start of fx", |s| {
            let started = std::fs::read_to_string(&starts).unwrap_or_default();
            started.lines().count() == 2 && s.contains("fx  ready  7 tools")
        });
        terminal.type_text("\x1b");
        terminal.wait_for("the overlay closed", |s| !s.contains("MCP servers"));

        // The prompt is in the slash menu, and sends the server's text.
        terminal.type_text("/fx:re");
        terminal.wait_for("the prompt in the slash menu", |s| {
            s.contains("/fx:review") && s.contains("<file> [focus]")
        });
        terminal.type_text("view src/a.rs naming\r");
        terminal.wait_for("the answer", |s| s.contains("Reviewed in the TUI."));
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    let request = server.requests()[0].json();
    let sent = request["messages"].to_string();
    assert!(
        sent.contains("Please review src/a.rs with a focus on naming."),
        "{sent}"
    );
}

/// A cloned repository's server and `yolo`: the trust dialog lists them;
/// Enter (a habit key) keeps the project untrusted and the server never
/// starts; `t` trusts it, and the server starts without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_dialog_enter_keeps_out_t_trusts() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let config = project.path().join("cairn.toml");
    let starts = project.path().join("starts.txt");
    let toml = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        format!(
            "yolo = true\n{toml}\n[mcp.fx]\ncommand = \"{}\"\nargs = [\"--starts-file\", \"{}\"]\nenv = {{ FX_TOKEN = \"${{FX_TOKEN}}\" }}\n",
            fixture(),
            starts.display()
        ),
    )
    .expect("config");
    let (project_path, data_path, config_path) = (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    );
    let starts_seen = starts.clone();
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        let dialog = terminal.wait_for("the trust dialog", |s| {
            s.contains("untrusted project") && s.contains("trust this project")
        });
        assert!(dialog.contains("cairn.toml:1: yolo = true"), "{dialog}");
        assert!(dialog.contains("mcp.fx = "), "{dialog}");
        assert!(dialog.contains("--starts-file"), "{dialog}");
        // Every field that changes what runs or what is sent, as written
        // (issue #28): the reference, never a value.
        assert!(dialog.contains("FX_TOKEN=\"${FX_TOKEN}\""), "{dialog}");
        terminal.type_text("\r");
        terminal.wait_for("the dialog closed", |s| {
            !s.contains("untrusted project") && s.contains("not applied")
        });
        terminal.type_text("/mcp\r");
        let overlay = terminal.wait_for("fx listed, not trusted", |s| {
            s.contains("MCP servers") && s.contains("fx  not trusted")
        });
        assert!(!starts_seen.exists(), "{overlay}");
        terminal.type_text("\x1b");
        terminal.quit();

        // Again: the same dialog; `t` trusts, and fx starts in this process.
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the trust dialog again", |s| {
            s.contains("untrusted project")
        });
        terminal.type_text("t");
        terminal.wait_for("trusted", |s| s.contains("project trusted"));
        terminal.type_text("/mcp\r");
        terminal.wait_for("fx ready", |s| s.contains("fx  ready  7 tools"));
        assert_eq!(
            std::fs::read_to_string(&starts_seen)
                .unwrap_or_default()
                .lines()
                .count(),
            1
        );
        terminal.type_text("\x1b");
        terminal.quit();

        // Trusted: no dialog on the next start.
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        let screen = terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        assert!(!screen.contains("untrusted project"), "{screen}");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}
