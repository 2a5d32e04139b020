//! Custom slash commands in the real binary's terminal UI (issue #32): the
//! completion lists a project's `.claude/commands/` file by its namespaced
//! name, and choosing it sends the expanded prompt.

use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_lists_a_custom_command_and_running_it_sends_its_prompt() {
    let server = ScriptedServer::start([text("Component made.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let dir = project.path().join(".claude/commands/frontend");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("component.md"),
        "---\ndescription: Create a React component\nargument-hint: [name]\n---\nCreate a React component named $ARGUMENTS.\n",
    )
    .expect("write");
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    let (listed, answered) = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("/fron");
        let listed = terminal.wait_for("the completion popup", |s| {
            s.contains("/frontend:component") && s.contains("Create a React component")
        });
        terminal.type_text("tend:component Button\r");
        let answered = terminal.wait_for("the answer", |s| s.contains("Component made."));
        terminal.quit();
        (listed, answered)
    })
    .await
    .expect("the terminal session");
    assert!(listed.contains("[name]"), "{listed}");
    assert!(answered.contains("Component made."), "{answered}");
    let said = server.requests()[0].json()["messages"].to_string();
    assert!(
        said.contains("Create a React component named Button."),
        "{said}"
    );
}
