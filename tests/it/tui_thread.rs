//! The working state in the terminal (issue #29), through the real binary in
//! a pseudo-terminal: after `/compact` with a useless summary, the marker
//! says what was summarized and carried verbatim and that the summary is
//! thin, Ctrl+O shows the exact text the model now reads after the summary,
//! and `/context` gives the working state its own row.

use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};

use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_marker_ctrl_o_and_context_show_what_the_compaction_carried() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    server.push(tool_call(
        "call_w",
        "write",
        json!({ "path": "notes/plan.md", "content": "step one\nstep two\n" }),
        2_000,
    ));
    server.push(text("Wrote the plan.", 2_100));
    server.push(text("ok", 2_200)); // the useless summary
    let (project_path, data_path, config_path) = owned_paths(&project, &data, &config_home);
    let screens = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("Constraint: plans stay under ten lines.\r");
        terminal.wait_for("the answer", |s| s.contains("Wrote the plan."));
        terminal.type_text("/compact\r");
        let marker = terminal.wait_for("the marker with what was carried", |s| {
            s.contains("history compacted") && s.contains("carried verbatim")
        });
        terminal.type_text("\x0f");
        let expanded = terminal.wait_for("the working state, whole", |s| {
            s.contains("sent after the summary") && s.contains("step two")
        });
        terminal.type_text("\x0f");
        terminal.type_text("/context\r");
        let context = terminal.wait_for("the context overlay", |s| s.contains("working state"));
        terminal.type_text("\x1b");
        terminal.quit();
        (marker, expanded, context)
    })
    .await
    .expect("the terminal session");
    let (marker, expanded, context) = screens;
    for needle in [
        "summarized",
        "1 of your messages",
        "1 file changed",
        "the summary is thin",
    ] {
        assert!(
            marker.contains(needle),
            "{needle:?} not on the marker:\n{marker}"
        );
    }
    assert!(
        expanded.contains("Constraint: plans stay under ten lines."),
        "{expanded}"
    );
    assert!(expanded.contains("notes/plan.md"), "{expanded}");
    let row = context
        .lines()
        .find(|l| l.contains("working state"))
        .expect("a working state row");
    assert!(row.contains('%'), "{row}");
}
