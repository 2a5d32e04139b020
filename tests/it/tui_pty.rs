//! The real binary in a pseudo-terminal, read through a terminal emulator,
//! against the scripted server: what a user sees, keystroke by keystroke.

use crate::scenario;
use crate::support;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

const ROWS: u16 = 40;
const COLS: u16 = 120;

/// A running `cairn` in a pty, its screen kept current by a reader thread.
pub(crate) struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    /// Every byte cairn wrote, for sequences the screen does not keep
    /// (notifications).
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Terminal {
    /// Quits as a user does (Ctrl+C twice on an idle, empty composer) and
    /// waits for the process to end.
    pub(crate) fn quit(&mut self) {
        self.type_text("\x03");
        self.type_text("\x03");
        self.wait_exit();
    }

    pub(crate) fn start(project: &Path, data: &Path, config: &Path, args: &[&str]) -> Self {
        Self::start_with_env(project, data, config, args, &[])
    }

    /// `start` with variables set (`Some`) or removed (`None`).
    pub(crate) fn start_with_env(
        project: &Path,
        data: &Path,
        config: &Path,
        args: &[&str],
        env: &[(&str, Option<&str>)],
    ) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_cairn"));
        command.args(args);
        command.cwd(project);
        command.env("CAIRN_DATA_DIR", data);
        command.env("XDG_CONFIG_HOME", config);
        command.env("TERM", "xterm-256color");
        command.env_remove("CAIRN_CONFIG");
        for (name, value) in env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            }
        }
        let child = pair.slave.spawn_command(command).expect("spawn cairn");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
        let feed = screen.clone();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let log = raw.clone();
        std::thread::spawn(move || {
            let _master = pair.master; // keep the pty open while reading
            let mut buffer = [0u8; 8192];
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                feed.lock().expect("screen lock").process(&buffer[..read]);
                log.lock()
                    .expect("raw lock")
                    .extend_from_slice(&buffer[..read]);
            }
        });
        Self {
            screen,
            raw,
            writer,
            child,
        }
    }

    /// The process id, to send it signals.
    pub(crate) fn pid(&self) -> u32 {
        self.child.process_id().expect("a running child")
    }

    /// (alternate screen on, mouse reporting on) as the terminal sees them.
    pub(crate) fn modes(&self) -> (bool, bool) {
        let parser = self.screen.lock().expect("screen lock");
        let screen = parser.screen();
        (
            screen.alternate_screen(),
            screen.mouse_protocol_mode() != vt100::MouseProtocolMode::None,
        )
    }

    /// Whether cairn has written `bytes` so far.
    pub(crate) fn wrote(&self, bytes: &[u8]) -> bool {
        let raw = self.raw.lock().expect("raw lock");
        raw.windows(bytes.len()).any(|w| w == bytes)
    }

    pub(crate) fn contents(&self) -> String {
        self.screen.lock().expect("screen lock").screen().contents()
    }

    /// Waits until the screen satisfies `test`; panics with the screen otherwise.
    pub(crate) fn wait_for(&self, what: &str, test: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.contents();
            if test(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes `keys` at once, with no pause after: for tests where the
    /// timing of keys is the subject.
    pub(crate) fn press(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("type");
        self.writer.flush().expect("flush");
    }

    pub(crate) fn type_text(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).expect("type");
        self.writer.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(100));
    }

    pub(crate) fn wait_exit(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "cairn exited with {status:?}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("cairn did not quit; the screen shows:\n{}", self.contents());
    }
}

/// `12% · 3.4k/28k` in the status line -> 12.
fn gauge_percent(screen: &str) -> u32 {
    let status = screen
        .lines()
        .rev()
        .find(|l| l.contains("compact at"))
        .expect("a status line with the gauge");
    let before = status.split('%').next().expect("a percentage");
    let digits: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits
        .chars()
        .rev()
        .collect::<String>()
        .parse()
        .expect("a number before %")
}

/// A project (a `.git` dir and a `cairn.toml` on the scripted server, a
/// 32k window), a data dir and a config home for one terminal session;
/// `yolo` allows every ask.
pub(crate) fn pty_dirs(
    server: &ScriptedServer,
    yolo: bool,
) -> (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir) {
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    let config_home = tempfile::tempdir().expect("config home");
    std::fs::create_dir(project.path().join(".git")).expect("git dir");
    let yolo = if yolo { "yolo = true\n" } else { "" };
    std::fs::write(
        project.path().join("cairn.toml"),
        format!(
            "model = \"scripted/test-model\"\n{yolo}[provider.scripted]\nwire = \"openai\"\nbase_url = \"{}/v1\"\n[provider.scripted.models.\"test-model\"]\ncontext = 32000\noutput = 4000\n",
            server.url()
        ),
    )
    .expect("config");
    trust_in_terminal_env(project.path(), data.path(), config_home.path());
    (project, data, config_home)
}

/// The paths of [`pty_dirs`]' directories, owned, for the blocking thread
/// that drives the terminal (the directories stay with the test).
pub(crate) fn owned_paths(
    project: &tempfile::TempDir,
    data: &tempfile::TempDir,
    config_home: &tempfile::TempDir,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    )
}

/// `cairn trust` with the environment [`Terminal::start`] gives cairn.
pub(crate) fn trust_in_terminal_env(project: &Path, data: &Path, config_home: &Path) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .current_dir(project)
        .env("CAIRN_DATA_DIR", data)
        .env("XDG_CONFIG_HOME", config_home)
        .env_remove("CAIRN_CONFIG");
    crate::support::trust_project(command);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_session_in_a_real_terminal() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    // A tool call with a large output, the answer, then the summary for /compact.
    server.push(tool_call(
        "call_1",
        "bash",
        json!({ "command": "seq 1 1500", "description": "count" }),
        2_500,
    ));
    server.push(text(
        "Counted to fifteen hundred. The plan: count, then report.",
        12_000,
    ));
    server.push(text(
        "## Goal\n- count to 1500\n## Accomplished\n- counted",
        12_500,
    ));

    let project_path = project.path().to_path_buf();
    let (data_path, config_path) = (data.path().to_path_buf(), config_home.path().to_path_buf());
    let session = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| {
            s.contains("scripted/test-model") && s.contains("compact at")
        });

        terminal.type_text("count to 1500\r");
        let screen = terminal.wait_for("the answer", |s| s.contains("Counted to fifteen hundred"));
        assert!(
            screen.contains("✓ bash"),
            "a completed tool card:\n{screen}"
        );
        let before = terminal.wait_for("the gauge after the answer", |s| gauge_percent(s) >= 30);

        terminal.type_text("/compact keep the plan\r");
        let after = terminal.wait_for("the compaction marker", |s| {
            s.contains("history compacted") && s.contains("compacted the conversation")
        });
        assert!(after.contains("focus: keep the plan"), "{after}");
        assert!(
            gauge_percent(&after) < gauge_percent(&before),
            "the gauge drops:\nbefore:\n{before}\nafter:\n{after}"
        );

        terminal.type_text("/prune\r");
        terminal.wait_for("the prune report", |s| s.contains("prune"));
        terminal.type_text("\x03");
        terminal.type_text("\x03");
        terminal.wait_exit();

        let mut reopened =
            Terminal::start(&project_path, &data_path, &config_path, &["--continue"]);
        let screen = reopened.wait_for("the same transcript", |s| {
            s.contains("history compacted")
                && s.contains("focus: keep the plan")
                && s.contains("compact at")
        });
        reopened.type_text("\x03");
        reopened.type_text("\x03");
        reopened.wait_exit();
        screen
    })
    .await
    .expect("the terminal session");
    assert!(session.contains("compact at"));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "tool step, answer, summary");
    let summary_prompt = requests[2].json()["messages"].to_string();
    assert!(summary_prompt.contains("keep the plan"));
}

/// Issue 11's typing race, through the real binary: a message is being typed
/// while the agent works, and an edit ask opens in the middle of it. The
/// letters (including the old answer keys `a`, `y`, `o`, `1`) end up in the
/// composer, the dialog stays open showing the diff, the file is untouched;
/// only ↓ + Enter, pressed on purpose later, answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_while_an_ask_opens_fills_the_composer_and_answers_nothing() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let greeting = project.path().join("greeting.txt");
    std::fs::write(&greeting, "hello world\n").expect("file to edit");
    server.push(tool_call(
        "call_1",
        "edit",
        json!({ "file_path": "greeting.txt", "old_string": "world", "new_string": "cairn" }),
        2_000,
    ));
    server.push(text("Edited the greeting.", 2_500));

    let project_path = project.path().to_path_buf();
    let (data_path, config_path) = (data.path().to_path_buf(), config_home.path().to_path_buf());
    let edited = greeting.clone();
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        terminal.type_text("greet cairn\r");
        // Typed while the agent works; the ask opens somewhere in here.
        for word in ["also ", "check ", "the ", "readme "] {
            terminal.type_text(word);
        }
        let screen = terminal.wait_for("the edit dialog", |s| s.contains("permission: edit"));
        // Straight on, as a typist does: the old dialog's answer keys.
        terminal.type_text("a y o 1 2");
        let screen_after = terminal.wait_for("the typed text in the composer", |s| {
            s.contains("also check the readme a y o 1 2")
        });
        assert!(
            screen_after.contains("permission: edit"),
            "the dialog is still open:\n{screen_after}"
        );
        for line in ["-hello world", "+hello cairn"] {
            assert!(
                screen.contains(line),
                "the dialog shows the diff line {line}:\n{screen}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(&edited).expect("greeting"),
            "hello world\n",
            "nothing answered the ask"
        );

        // On purpose: ↓ focuses the dialog (it does not move the choice), a
        // second ↓ chooses "Allow once", Enter answers.
        // A person reads the dialog first; keys within its guard time (800 ms
        // after typing) are ignored, which is the point, so wait it out.
        std::thread::sleep(Duration::from_millis(1_000));
        terminal.type_text("\x1b[B");
        terminal.wait_for("the dialog focused", |s| {
            !s.contains("typing goes to the composer")
        });
        terminal.type_text("\x1b[B");
        terminal.wait_for("Allow once chosen", |s| s.contains("› Allow once"));
        terminal.type_text("\r");
        terminal.wait_for("the answer after the edit", |s| {
            s.contains("Edited the greeting.")
        });
        assert_eq!(
            std::fs::read_to_string(&edited).expect("greeting"),
            "hello cairn\n"
        );
        let screen = terminal.contents();
        assert!(
            screen.contains("also check the readme a y o 1 2"),
            "the draft is still in the composer:\n{screen}"
        );
        // The first Ctrl+C clears the draft, the next two quit.
        for _ in 0..3 {
            terminal.type_text("\x03");
        }
        terminal.wait_exit();
    })
    .await
    .expect("the terminal session");
}

/// Issue 19: while the model writes a long tool call, its card shows the
/// command as far as it has come and the bytes received, not silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_being_written_shows_its_partial_command() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let sse = |delta: serde_json::Value| {
        let body = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
        format!("data: {body}\n\n")
    };
    let long_tail = "x".repeat(1_500);
    server.push(
        support::ScriptedResponse::sse()
            .chunk(sse(json!({"role": "assistant", "content": null, "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}}]})))
            .chunk(sse(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\": \"printf streaming-args-"}}]})))
            .chunk(sse(json!({"tool_calls": [{"index": 0, "function": {"arguments": long_tail}}]})))
            .then_stall(),
    );
    let (project_path, data_path, config_path) = (
        project.path().to_path_buf(),
        data.path().to_path_buf(),
        config_home.path().to_path_buf(),
    );
    let screen = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("print something long\r");
        let screen = terminal.wait_for("the partial call", |s| {
            s.contains("receiving arguments · 1.5 KB") && s.contains("printf streaming-args-")
        });
        terminal.type_text("\x1b");
        terminal.type_text("\x03");
        terminal.type_text("\x03");
        terminal.wait_exit();
        screen
    })
    .await
    .expect("the terminal session");
    assert!(screen.contains("bash"), "{screen}");
}

/// Issue 27: a command the sandbox blocked asks, in the dialog, to run
/// once outside it, even under yolo; "reject" is the first choice, so a
/// habit Enter never leaves the sandbox, and only a deliberate ↓ does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_command_asks_to_leave_the_sandbox_and_enter_does_not() {
    if !cairn::sandbox::support().confines() {
        return;
    }
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let outside = tempfile::tempdir().expect("outside dir");
    let temp = tempfile::tempdir().expect("command temp dir");
    let first = outside.path().join("first");
    let second = outside.path().join("second");
    for (i, target) in [&first, &second].iter().enumerate() {
        server.push(tool_call(
            &format!("call_{i}"),
            "bash",
            json!({ "command": format!("echo x > {}", target.display()) }),
            1_000,
        ));
    }
    server.push(text("Both tried.", 1_000));
    let (project_path, data_path, config_path) = owned_paths(&project, &data, &config_home);
    let temp_path = temp.path().to_string_lossy().into_owned();
    let (first_path, second_path) = (first.clone(), second.clone());
    tokio::task::spawn_blocking(move || {
        let env = [("TMPDIR", Some(temp_path.as_str()))];
        let mut terminal =
            Terminal::start_with_env(&project_path, &data_path, &config_path, &[], &env);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        terminal.type_text("write outside\r");
        let screen =
            terminal.wait_for("the sandbox ask", |s| s.contains("permission: unsandboxed"));
        assert!(
            screen.find("Reject") < screen.find("Allow once"),
            "reject is offered first:\n{screen}"
        );
        assert!(
            screen.contains("is outside the project"),
            "it says why:\n{screen}"
        );
        // Past the dialog's guard time, a habit Enter (and another) choose
        // nothing; Esc rejects.
        std::thread::sleep(Duration::from_millis(1_000));
        terminal.type_text("\r");
        terminal.type_text("\r");
        terminal.type_text("\x1b");
        terminal.wait_for("the second ask", |s| {
            s.contains("permission: unsandboxed") && s.contains("second")
        });
        assert!(!first_path.exists(), "Enter left the sandbox");
        std::thread::sleep(Duration::from_millis(1_000));
        terminal.type_text("\x1b[B");
        terminal.type_text("\x1b[B");
        terminal.wait_for("Allow once chosen", |s| s.contains("› Allow once"));
        terminal.type_text("\r");
        terminal.wait_for("the answer", |s| s.contains("Both tried."));
        assert!(
            second_path.exists(),
            "a chosen 'Allow once' runs it outside"
        );
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}
