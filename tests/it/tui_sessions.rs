//! Issue 17's sessions half, through the real binary in a pseudo-terminal:
//! the welcome of a new session, `/new`'s feedback, `/sessions`, and a
//! terminal that closes under a cairn that ignores SIGHUP.

use crate::scenario::text;
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};

use std::path::Path;
use std::time::{Duration, Instant};

/// A new session opens with the welcome (version, directory, model, hints);
/// the first message replaces it with the transcript; `/new` says so and
/// shows the welcome again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_welcomes_until_something_is_sent_and_new_says_so() {
    let server = ScriptedServer::start([text("Hello back.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
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
        terminal.quit();
    })
    .await
    .expect("the terminal session");
}

/// `/sessions` shows each session's message count (the open one's live);
/// `cairn sessions` in a terminal prints a header row above the same
/// counts (scripts, reading a pipe, get no header: see
/// `cli_run::continue_resumes_the_last_session_with_its_history`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_show_message_counts_and_a_header_in_a_terminal() {
    let server = ScriptedServer::start([text("Counted.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("count me\r");
        terminal.wait_for("the answer", |s| s.contains("Counted."));
        terminal.type_text("/sessions\r");
        terminal.wait_for("the live count in the picker", |s| {
            s.contains("2 messages") && s.contains("just now")
        });
        terminal.type_text("\x1b");
        terminal.quit();

        let mut listing = Terminal::start(&p, &d, &c, &["sessions"]);
        let screen = listing.wait_for("the listing", |s| s.contains("2 msg"));
        let header = screen.lines().next().unwrap_or_default();
        for column in ["SESSION", "UPDATED", "TOKENS", "COST", "MESSAGES", "TITLE"] {
            assert!(header.contains(column), "{column} in the header:\n{screen}");
        }
        // The title ("count me") is wider than its header: the directory
        // still starts under DIRECTORY.
        let row = screen.lines().nth(1).unwrap_or_default();
        let directory = p.display().to_string();
        assert_eq!(
            header.find("DIRECTORY"),
            row.find(directory.as_str()),
            "the directory lines up under its header:\n{screen}"
        );
        listing.wait_exit();
    })
    .await
    .expect("the terminal session");
}

/// The figures after `lead` on the screen, up to " tokens": the marker's
/// and the notice's "before -> after".
fn figures_after<'a>(screen: &'a str, lead: &str) -> &'a str {
    let start = screen
        .find(lead)
        .unwrap_or_else(|| panic!("no {lead:?} on the screen:\n{screen}"))
        + lead.len();
    let len = screen[start..]
        .find(" tokens")
        .unwrap_or_else(|| panic!("no figures after {lead:?}:\n{screen}"));
    &screen[start..start + len]
}

/// The provider rejects a request as too large: cairn compacts by itself,
/// and says so in one notice (the rejection has none of its own, and nothing
/// says "compact the session (/compact)") whose figures are the marker's;
/// the user's message is shown once, with no empty assistant header left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_shows_one_notice_and_the_message_once() {
    let server = ScriptedServer::start([
        text("First answer.", 300),
        crate::scenario::openai_overflow(),
        text("## Goal\n- answer the question", 400),
        text("Answered after compacting.", 500),
    ])
    .await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    let screen = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("warm up\r");
        terminal.wait_for("the first answer", |s| s.contains("First answer."));
        terminal.type_text("the big question\r");
        let screen = terminal.wait_for("the answer after compacting", |s| {
            s.contains("Answered after compacting.")
        });
        terminal.quit();
        screen
    })
    .await
    .expect("the terminal session");
    assert_eq!(
        screen
            .matches("· compacted the conversation (auto)")
            .count(),
        1,
        "one notice:\n{screen}"
    );
    assert!(
        screen.contains("after the model rejected the request as too large"),
        "{screen}"
    );
    assert!(
        !screen.contains("does not fit"),
        "no rejection notice:\n{screen}"
    );
    assert!(!screen.contains("(/compact)"), "{screen}");
    let marker = figures_after(&screen, "history compacted · ");
    let notice = figures_after(&screen, "compacted the conversation (auto): ");
    assert!(marker.contains(" -> "), "{screen}");
    assert_eq!(marker, notice, "one event, one pair of figures:\n{screen}");
    assert_eq!(
        screen.matches("the big question").count(),
        1,
        "the message shows once:\n{screen}"
    );
    assert!(
        !screen.contains("✗ scripted says"),
        "no empty rejected answer under a header:\n{screen}"
    );
}

/// A single Esc interrupts a turn with a message queued: the message waits
/// (the notice says so) until the user's Enter sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_esc_keeps_the_queue_until_enter() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    server.push(crate::scenario::text_then_stall("Working on it"));
    server.push(text("Queued one answered.", 300));
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    let mut terminal = tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("long job\r");
        terminal.wait_for("the stalled stream", |s| s.contains("Working on it"));
        terminal.type_text("queued words\r");
        terminal.wait_for("the queue", |s| s.contains("queued words"));
        terminal.type_text("\x1b");
        // Idle after the interrupt, the queue held and said so.
        terminal.wait_for("the held queue", |s| {
            s.contains("interrupted")
                && s.contains("queued message waits: Enter sends")
                && !s.contains("interrupting")
        });
        terminal
    })
    .await
    .expect("the terminal session");
    // The one wait that is not for an event: an absence. Before, the queue
    // went out once Esc's double-press window (1 s) had passed.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(server.requests().len(), 1, "nothing sent until Enter");
    tokio::task::spawn_blocking(move || {
        terminal.type_text("\r");
        terminal.wait_for("the queued message answered", |s| {
            s.contains("Queued one answered.")
        });
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    assert_eq!(server.requests().len(), 2);
}

/// A terminal without bracketed paste sends a pasted block as keys in one
/// read, its line breaks as Enter: it arrives as one message, not one per
/// line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_line_paste_without_bracketed_paste_is_one_message() {
    let server = ScriptedServer::start([text("One message received.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&p, &d, &c, &[]);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        // No ESC[200~ markers: plain keys, as such a terminal sends them.
        terminal.type_text("line one\rline two\rline three");
        terminal.wait_for("the pasted lines in the composer", |s| {
            s.contains("line three")
        });
        terminal.type_text("\r");
        terminal.wait_for("the answer", |s| s.contains("One message received."));
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one message, not one per line");
    let said = requests[0].json()["messages"].to_string();
    assert!(said.contains("line one\\nline two\\nline three"), "{said}");
}

/// cairn in a pseudo-terminal that is not its controlling terminal and with
/// SIGHUP ignored (as under `nohup` or some wrappers): closing the terminal
/// sends it no signal, only the end of its input.
struct Detached {
    master: Option<std::os::fd::OwnedFd>,
    child: std::process::Child,
    screen: vt100::Parser,
}

impl Detached {
    fn start(project: &Path, data: &Path, config: &Path) -> Self {
        use std::os::fd::FromRawFd as _;
        use std::os::unix::process::CommandExt as _;
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills two fds; null name and termios are allowed.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(opened, 0, "openpty");
        // openpty's fds are inherited by default: cairn holding the master
        // would keep its own terminal open.
        // SAFETY: fcntl on the fd just opened.
        assert_eq!(
            unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) },
            0
        );
        // SAFETY: both fds were just opened and are owned here alone.
        let (master, slave) = unsafe {
            (
                std::os::fd::OwnedFd::from_raw_fd(master),
                std::os::fd::OwnedFd::from_raw_fd(slave),
            )
        };
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .current_dir(project)
            .env("CAIRN_DATA_DIR", data)
            .env("XDG_CONFIG_HOME", config)
            .env("TERM", "xterm-256color")
            .env_remove("CAIRN_CONFIG")
            .stdin(slave.try_clone().expect("slave fd"))
            .stdout(slave.try_clone().expect("slave fd"))
            .stderr(slave);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                // A session of its own with no controlling terminal: the
                // pty's hang-up signals nobody.
                libc::setsid();
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn cairn");
        Self {
            master: Some(master),
            child,
            screen: vt100::Parser::new(40, 120, 0),
        }
    }

    /// Reads the terminal until its screen satisfies `test`.
    fn wait_for(&mut self, what: &str, test: impl Fn(&str) -> bool) {
        use std::os::fd::AsRawFd as _;
        let fd = self.master.as_ref().expect("open master").as_raw_fd();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut buffer = [0u8; 8192];
        while !test(&self.screen.screen().contents()) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{}",
                self.screen.screen().contents()
            );
            let mut watched = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, then a read into a local buffer.
            let read = unsafe {
                if libc::poll(&mut watched, 1, 100) <= 0 {
                    continue;
                }
                libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len())
            };
            if read > 0 {
                self.screen.process(&buffer[..read as usize]);
            }
        }
    }

    fn type_text(&mut self, text: &str) {
        use std::os::fd::AsRawFd as _;
        let fd = self.master.as_ref().expect("open master").as_raw_fd();
        // SAFETY: writes from a live buffer to an open fd.
        let written = unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) };
        assert_eq!(written, text.len() as isize);
    }
}

/// With SIGHUP ignored and no controlling terminal, closing the terminal
/// ends cairn's input: it exits promptly (it used to spin at 99% CPU on the
/// ended input), and what was said is kept for `--continue`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_terminal_ends_cairn_even_with_sighup_ignored() {
    let server = ScriptedServer::start([text("Noted.", 300)]).await;
    let (project, data, config_home) = pty_dirs(&server, true);
    let (p, d, c) = owned_paths(&project, &data, &config_home);
    tokio::task::spawn_blocking(move || {
        let mut terminal = Detached::start(&p, &d, &c);
        terminal.wait_for("the status line", |s| s.contains("compact at"));
        terminal.type_text("remember the tea\r");
        terminal.wait_for("the answer", |s| s.contains("Noted."));
        drop(terminal.master.take());
        let closed_at = Instant::now();
        let status = loop {
            if let Some(status) = terminal.child.try_wait().expect("wait") {
                break status;
            }
            if closed_at.elapsed() > Duration::from_secs(5) {
                let _ = terminal.child.kill();
                panic!("cairn kept running after its terminal closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "cairn exited with {status:?}");

        let mut reopened = Terminal::start(&p, &d, &c, &["--continue"]);
        reopened.wait_for("the same transcript", |s| {
            s.contains("remember the tea") && s.contains("Noted.")
        });
        reopened.quit();
    })
    .await
    .expect("the terminal session");
}
