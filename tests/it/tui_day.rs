//! Issue #34's working day, through the real binary in a pseudo-terminal:
//! the rough edges a day of use finds, and `cairn "prompt"`.

use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs, trust_in_terminal_env};

/// The first user text of the request `n`.
fn asked(server: &ScriptedServer, n: usize) -> String {
    let requests = server.requests();
    let request = requests.get(n).expect("the request");
    let body: serde_json::Value = serde_json::from_slice(&request.body).expect("a JSON body");
    crate::scenario::messages_of(&body)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(crate::scenario::message_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message that starts with a path is text for the model: only the
/// table's commands (by whole name) are commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_starting_with_a_path_is_sent() {
    let server = ScriptedServer::start([text("It has two lines.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("/etc/hosts is empty?\r");
        let screen = terminal.wait_for("the answer", |s| s.contains("It has two lines."));
        assert!(!screen.contains("unknown command"), "{screen}");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert!(asked(&server, 0).contains("/etc/hosts is empty?"));
}

/// `cairn "fix the failing test"` opens the TUI with that prompt sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_on_the_command_line_opens_the_tui_with_it_sent() {
    let server = ScriptedServer::start([text("Fixed it.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &["fix", "the failing test"]);
        let screen = terminal.wait_for("the answer", |s| s.contains("Fixed it."));
        assert!(screen.contains("fix the failing test"), "{screen}");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(server.requests().len(), 1);
    assert!(asked(&server, 0).contains("fix the failing test"));
}

/// First run with no model: keys typed while the welcome box is up reach
/// the composer; a message sent before a model is chosen is held, said so,
/// and sent once `/model` picks one (the TUI restarts on that model).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_run_keeps_typed_keys_and_sends_the_held_message_after_model() {
    let server = ScriptedServer::start([text("Hello from the model.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    // The provider is defined, no model is chosen: the first-run screen.
    std::fs::write(
        project.path().join("cairn.toml"),
        format!(
            "[provider.scripted]\nwire = \"openai\"\nbase_url = \"{}/v1\"\n[provider.scripted.models.\"test-model\"]\ncontext = 32000\noutput = 4000\n",
            server.url()
        ),
    )
    .expect("config");
    trust_in_terminal_env(project.path(), data.path(), config_home.path());
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let no_keys: Vec<(&str, Option<&str>)> = [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
            "GROQ_API_KEY",
            "VLLM_API_KEY",
        ]
        .into_iter()
        .map(|name| (name, None))
        .collect();
        let mut terminal = Terminal::start_with_env(&p, &d, &c, &[], &no_keys);
        terminal.wait_for("the welcome box", |s| s.contains("cairn needs a model"));
        terminal.type_text("hello there");
        terminal.wait_for("the keys in the composer", |s| {
            s.lines().any(|l| l.starts_with("> hello there"))
        });
        terminal.type_text("\r");
        let screen = terminal.wait_for("the held message said", |s| {
            s.contains("sent once you pick a model")
        });
        assert!(!screen.contains("session has stopped"), "{screen}");
        terminal.type_text("/model scripted/test-model\r");
        terminal.wait_for("the held message answered", |s| {
            s.contains("Hello from the model.")
        });
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(server.requests().len(), 1);
    assert!(asked(&server, 0).contains("hello there"));
}

/// `/sessions` lists neither the undone-turns stash nor subagent sessions,
/// and is read again when opened (a session started since shows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_hide_internal_ones_and_are_read_when_opened() {
    let server =
        ScriptedServer::start([text("First answer.", 300), text("Other answer.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("first prompt\r");
        terminal.wait_for("the answer", |s| s.contains("First answer."));
        terminal.type_text("/undo\r");
        terminal.wait_for("the undo", |s| s.contains("undid the last turn"));
        terminal.type_text("\x15");
        // Another session of the project, started while this one is open.
        let mut other = Terminal::start(&p, &d, &c, &["run", "another task"]);
        other.wait_exit();
        terminal.type_text("/sessions\r");
        let screen = terminal.wait_for("the picker with the new session", |s| {
            s.contains("another task")
        });
        assert!(!screen.contains("undone turns"), "{screen}");
        terminal.type_text("\x1b");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}

/// The `/skills` picker says "Enter picks": Enter puts the skill into the
/// composer for the user to finish the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skills_picker_enter_picks_the_skill() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let skill = project.path().join(".cairn/skills/tidy-imports");
    std::fs::create_dir_all(&skill).expect("skill dir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: tidy-imports\ndescription: Sort and group imports the way this project does.\n---\nGroup std, then crates, then the crate's own.\n",
    )
    .expect("SKILL.md");
    trust_in_terminal_env(project.path(), data.path(), config_home.path());
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("/skills\r");
        terminal.wait_for("the picker", |s| s.contains("Sort and group imports"));
        terminal.type_text("\r");
        terminal.wait_for("the skill in the composer", |s| {
            !s.contains("Sort and group imports")
                && s.lines()
                    .any(|l| l.starts_with("> ") && l.contains("tidy-imports"))
        });
        terminal.type_text("\x15");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert!(server.requests().is_empty(), "picking sends nothing");
}

/// `/help` names Ctrl+Z and says where `/export` writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_names_ctrl_z_and_where_export_writes() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("/help\r");
        terminal.wait_for("Ctrl+Z in the keys", |s| {
            s.contains("Ctrl+Z") && s.contains("suspend to the shell")
        });
        // The commands are below the keys: scroll to them.
        terminal.type_text(&"\x1b[B".repeat(60));
        terminal.wait_for("where /export writes", |s| {
            s.contains("exports/ in the data") && s.contains("directory, or to path")
        });
        terminal.type_text("\x1b");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}

/// Shift+Tab cycles build → accept edits → plan → build, shown in the
/// status line. In accept-edits a write inside the project is applied
/// without asking; a write outside it and a bash command still ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_edits_on_shift_tab_writes_inside_unasked_and_asks_the_rest() {
    use crate::scenario::tool_call;
    use serde_json::json;
    let outside = tempfile::tempdir().expect("outside dir");
    let outside_file = outside.path().join("out.txt");
    let server = ScriptedServer::start([
        tool_call(
            "call_0",
            "write",
            json!({ "path": "inside.txt", "content": "in\n" }),
            300,
        ),
        tool_call(
            "call_1",
            "write",
            json!({ "path": outside_file.display().to_string(), "content": "out\n" }),
            300,
        ),
        tool_call(
            "call_2",
            "bash",
            json!({ "command": "touch made.txt" }),
            300,
        ),
        text("Done.", 300),
    ])
    .await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("\x1b[Z");
        terminal.wait_for("accept edits on the status line", |s| {
            s.lines().last().is_some_and(|l| l.contains("accept edits"))
        });
        terminal.type_text("write the files\r");
        terminal.wait_for("the ask for the outside path", |s| {
            s.contains("outside the project")
        });
        assert!(p.join("inside.txt").exists(), "written without an ask");
        crate::tui_subtask::allow_once(&mut terminal);
        let screen = terminal.wait_for("the ask to write the outside file", |s| {
            s.contains("Write /") && s.contains("Allow once")
        });
        assert!(screen.contains("out.txt"), "{screen}");
        crate::tui_subtask::allow_once(&mut terminal);
        terminal.wait_for("the bash ask", |s| {
            s.contains("touch made.txt") && s.contains("Allow once")
        });
        crate::tui_subtask::allow_once(&mut terminal);
        terminal.wait_for("the answer", |s| s.contains("Done."));
        terminal.type_text("\x1b[Z");
        terminal.wait_for("plan on the status line", |s| {
            s.lines().last().is_some_and(|l| l.starts_with(" plan "))
        });
        terminal.type_text("\x1b[Z");
        terminal.wait_for("build on the status line", |s| {
            s.lines().last().is_some_and(|l| l.starts_with(" build "))
        });
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(
        std::fs::read_to_string(&outside_file).ok().as_deref(),
        Some("out\n")
    );
}

/// Ctrl+X opens `$VISUAL`/`$EDITOR` on the draft (Ctrl+G stays the subtask
/// key); what the editor saves comes back into the composer, unsent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_x_edits_the_draft_in_the_external_editor() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let tools = tempfile::tempdir().expect("editor dir");
    let editor = tools.path().join("editor.sh");
    // Keeps the draft it was given and adds a line, as a user would.
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf '%s and more from the editor\\n' \"$(cat \"$1\")\" > \"$1\"\n",
    )
    .expect("editor script");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("executable");
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    let editor = editor.display().to_string();
    tokio::task::spawn_blocking(move || {
        let env = [("VISUAL", None), ("EDITOR", Some(editor.as_str()))];
        let mut terminal = Terminal::start_with_env(&p, &d, &c, &[], &env);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("draft words");
        terminal.type_text("\x18");
        terminal.wait_for("the edited draft back in the composer", |s| {
            s.lines()
                .any(|l| l.starts_with("> draft words and more from the editor"))
        });
        terminal.type_text("\x15");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert!(server.requests().is_empty(), "nothing sent");
}

/// A turn longer than `[tui] notify_after_secs` that ends while the
/// terminal is not focused is notified (OSC 9 on a terminal that takes it);
/// with the terminal focused, nothing is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_ending_unfocused_is_notified() {
    use crate::scenario::slow_text;
    use std::time::Duration;
    let server = ScriptedServer::start([
        slow_text("Seen while focused.", 300, Duration::from_millis(800)),
        slow_text("Finished away.", 300, Duration::from_millis(800)),
    ])
    .await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let config = std::fs::read_to_string(project.path().join("cairn.toml")).expect("config");
    std::fs::write(
        project.path().join("cairn.toml"),
        format!("{config}[tui]\nnotify_after_secs = 1\n"),
    )
    .expect("config");
    trust_in_terminal_env(project.path(), data.path(), config_home.path());
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let env = [("TERM_PROGRAM", Some("WezTerm"))];
        let mut terminal = Terminal::start_with_env(&p, &d, &c, &[], &env);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("first\r");
        terminal.wait_for("the first answer", |s| s.contains("Seen while focused."));
        assert!(!terminal.wrote(b"\x1b]9;"), "focused: no notification");
        terminal.type_text("second\r");
        // Focus out, as a terminal reports it once asked to (CSI ? 1004 h).
        terminal.type_text("\x1b[O");
        terminal.wait_for("the second answer", |s| s.contains("Finished away."));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !terminal.wrote(b"\x1b]9;") {
            assert!(
                std::time::Instant::now() < deadline,
                "no OSC 9 notification"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        terminal.type_text("\x1b[I");
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}
