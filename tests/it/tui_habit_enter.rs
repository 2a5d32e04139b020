//! Issue #28's habit Enter, through the real binary in a pseudo-terminal: a
//! user types a follow-up while the model works, pauses, and presses Enter
//! once or twice to send it; the model's ask for `touch` opens at every point
//! of that sequence. No Enter may approve it: the follow-up is queued (or
//! sent), the dialog stays open until Esc rejects it, and no file is made.

use std::time::{Duration, Instant};

use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;
use crate::tui_pty::{Terminal, owned_paths, pty_dirs};
use serde_json::json;

/// When the follow-up starts being typed, and each key after it, from the
/// moment the prompt is sent.
const TYPING_STARTS_MS: u64 = 150;
const KEY_GAP_MS: u64 = 25;
const FOLLOW_UP: &str = "note it";
const SECOND_ENTER_GAP_MS: u64 = 120;

/// One trial: the pause before the Enter, how many Enters, and when the
/// dialog opens (the server's delay before the tool call).
#[derive(Debug, Clone, Copy)]
struct Trial {
    pause_ms: u64,
    enters: u64,
    opens_ms: u64,
}

fn typing_ends_ms() -> u64 {
    TYPING_STARTS_MS + KEY_GAP_MS * FOLLOW_UP.len() as u64
}

/// Every point of the sequence for every pause and Enter count: before the
/// typing, in the middle of it, just after it, in the middle of the pause,
/// at the first Enter, between the Enters (or just after a single one), and
/// well after. An ask opening in the pause is the one the review saw
/// approved: the Enter then came after the dialog's guard time.
fn trials() -> Vec<Trial> {
    let mut out = Vec::new();
    for pause_ms in [0, 1_000, 2_000] {
        for enters in [1, 2] {
            let first_enter = typing_ends_ms() + pause_ms;
            let mut points = vec![
                0,
                TYPING_STARTS_MS + 60,
                typing_ends_ms() + 50,
                typing_ends_ms() + pause_ms / 2,
                first_enter,
                first_enter + SECOND_ENTER_GAP_MS / 2,
                first_enter + SECOND_ENTER_GAP_MS + 400,
            ];
            points.sort_unstable();
            points.dedup();
            for opens_ms in points {
                out.push(Trial {
                    pause_ms,
                    enters,
                    opens_ms,
                });
            }
        }
    }
    out
}

/// Sleeps until `offset` after `start`.
fn at(start: Instant, offset_ms: u64) {
    let due = start + Duration::from_millis(offset_ms);
    if let Some(left) = due.checked_duration_since(Instant::now()) {
        std::thread::sleep(left);
    }
}

/// Types the follow-up, pauses, and presses Enter as `trial` says.
fn habit(terminal: &mut Terminal, start: Instant, trial: Trial) {
    for (i, c) in FOLLOW_UP.chars().enumerate() {
        at(start, TYPING_STARTS_MS + KEY_GAP_MS * i as u64);
        terminal.press(&c.to_string());
    }
    let first_enter = typing_ends_ms() + trial.pause_ms;
    for n in 0..trial.enters {
        at(start, first_enter + n * SECOND_ENTER_GAP_MS);
        terminal.press("\r");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_enter_typed_around_an_opening_ask_approves_it() {
    let server = ScriptedServer::start([]).await;
    let (project, data, config_home) = pty_dirs(&server, false);
    let trials = trials();
    for (k, trial) in trials.iter().enumerate() {
        server.push(
            tool_call(
                &format!("call_{k}"),
                "bash",
                json!({ "command": format!("touch pwned-{k}"), "description": "make a file" }),
                2_000,
            )
            .after(Duration::from_millis(trial.opens_ms)),
        );
        // The queued follow-up, sent once Esc has stopped the turn.
        server.push(text(&format!("ack-{k:02}"), 2_100));
    }
    let (project_path, data_path, config_path) = owned_paths(&project, &data, &config_home);
    let made = project_path.clone();
    tokio::task::spawn_blocking(move || {
        let mut terminal = Terminal::start(&project_path, &data_path, &config_path, &[]);
        terminal.wait_for("the status line", |s| s.contains("scripted/test-model"));
        for (k, trial) in trials.iter().copied().enumerate() {
            let start = Instant::now();
            terminal.press(&format!("go {k}\r"));
            habit(&mut terminal, start, trial);
            let pwned = made.join(format!("pwned-{k}"));
            let screen = terminal.wait_for("the bash ask (or the file it makes)", |s| {
                s.contains("permission: bash") || pwned.exists()
            });
            assert!(
                !pwned.exists(),
                "trial {k} {trial:?} approved by Enter:\n{screen}"
            );
            // Esc (after the dialog's guard time) rejects; the follow-up
            // then goes out and is answered.
            let deadline = Instant::now() + Duration::from_secs(10);
            while terminal.contents().contains("permission: bash") {
                assert!(Instant::now() < deadline, "Esc never rejected");
                terminal.press("\x1b");
                std::thread::sleep(Duration::from_millis(150));
            }
            // An Enter right after the last letter is taken as part of a
            // paste (a newline, see `tui/burst.rs`), so the follow-up may
            // still be in the composer: send it on purpose.
            std::thread::sleep(Duration::from_millis(300));
            if terminal
                .contents()
                .lines()
                .any(|line| line.starts_with("> note it"))
            {
                terminal.press("\r");
            }
            terminal.wait_for("the follow-up answered", |s| {
                s.contains(&format!("ack-{k:02}"))
            });
        }
        terminal.quit();
    })
    .await
    .expect("the terminal session");
    let approved: Vec<String> = std::fs::read_dir(project.path())
        .expect("project")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("pwned-"))
        .collect();
    assert_eq!(approved, Vec::<String>::new(), "approvals by Enter");
    let sent = server
        .requests()
        .iter()
        .filter(|r| r.json()["messages"].to_string().contains(FOLLOW_UP))
        .count();
    assert!(sent >= 1, "the follow-ups were sent");
}
