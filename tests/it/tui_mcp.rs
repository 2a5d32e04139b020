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
