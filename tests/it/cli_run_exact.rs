//! `cairn run`'s stdout is exactly the answer, whoever reads it and however
//! slowly (issue #31): a reader that starts late or pauses mid-stream, and a
//! stream that dropped mid-answer and was retried. The real binary, its
//! stdout a pipe (or a pty) this test reads when it chooses; the model a
//! scripted server. On a pipe the text of a step is held until the step
//! ends, so the event lag a slow reader causes is met by the JSON tests and
//! by the terminal one, where the text streams.

use crate::project::{Project, describe, text_of};
use crate::scenario::{chunk, usage};
use crate::support::{ScriptedResponse, ScriptedServer};

use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// Words of the long answer: far more deltas than the event bus holds for
/// a subscriber that falls behind, and more bytes than a pipe buffers.
const WORDS: usize = 30_000;

/// How long the reader stays away once the whole answer has been sent.
const READER_AWAY: Duration = Duration::from_secs(8);

/// The note on the last chunk of the long answer.
const SENT_ALL: &str = "[sent all]";

/// `w00000 w00001 ...`: every word different, so a lost or repeated
/// stretch shows.
fn long_answer() -> String {
    (0..WORDS).map(|n| format!("w{n:05} ")).collect()
}

/// `answer` one word a chunk, the last chunk noted as [`SENT_ALL`].
fn word_by_word(answer: &str) -> ScriptedResponse {
    let mut response =
        ScriptedResponse::sse().chunk(chunk(json!({"role": "assistant", "content": ""}), None));
    for word in answer.split_inclusive(' ') {
        response = response.chunk(chunk(json!({ "content": word }), None));
    }
    response
        .chunk(chunk(json!({}), Some("stop")))
        .chunk(usage(1_000, WORDS as u64))
        .noted_chunk("data: [DONE]\n\n", SENT_ALL)
}

/// Where the reader stops for a while.
#[derive(Clone, Copy)]
enum Away {
    /// Before reading anything.
    AtStart,
    /// After the first bytes.
    MidStream,
}

/// Runs `cairn run [args] question` with stdout a pipe that is not read
/// while the server sends the whole long answer and for [`READER_AWAY`]
/// after; returns the output with every byte of stdout.
async fn run_with_reader_away(args: &[&str], away: Away) -> Output {
    let project = Project::new();
    let server = ScriptedServer::start([word_by_word(&long_answer())]).await;
    project.use_scripted(&server);
    let mut command_args = vec!["run"];
    command_args.extend_from_slice(args);
    command_args.push("write a long answer");
    let mut child = project
        .command(&command_args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut printed = Vec::new();
    if let Away::MidStream = away {
        let mut piece = vec![0u8; 16 * 1024];
        let read = tokio::time::timeout(Duration::from_secs(30), stdout.read(&mut piece))
            .await
            .expect("the answer starts within 30 s")
            .expect("read cairn's stdout");
        printed.extend_from_slice(&piece[..read]);
    }
    tokio::time::timeout(Duration::from_secs(60), async {
        while !server.sent_text().iter().any(|(_, text)| text == SENT_ALL) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server sends the whole answer within 60 s");
    tokio::time::sleep(READER_AWAY).await;
    let output = tokio::time::timeout(Duration::from_secs(60), async {
        stdout
            .read_to_end(&mut printed)
            .await
            .expect("read cairn's stdout");
        child.wait_with_output().await
    })
    .await
    .expect("cairn finishes within 60 s once read")
    .expect("wait for cairn");
    Output {
        stdout: printed,
        ..output
    }
}

/// Where `actual` first differs from `expected`, for a readable failure.
fn first_difference(actual: &str, expected: &str) -> String {
    let at = actual
        .bytes()
        .zip(expected.bytes())
        .position(|(a, e)| a != e)
        .unwrap_or(actual.len().min(expected.len()));
    let around = |s: &str| {
        s.get(at.saturating_sub(20)..(at + 40).min(s.len()))
            .unwrap_or("")
            .to_string()
    };
    format!(
        "lengths {} (got) vs {} (expected); first difference at byte {at}: got {:?}, expected {:?}",
        actual.len(),
        expected.len(),
        around(actual),
        around(expected)
    )
}

fn assert_text_exact(output: &Output) {
    let expected = long_answer();
    assert_eq!(output.status.code(), Some(0), "{}", text_of(&output.stderr));
    let stdout = text_of(&output.stdout);
    // The answer ends with a space: the line is ended for the terminal.
    let want = format!("{expected}\n");
    assert!(stdout == want, "{}", first_difference(&stdout, &want));
}

fn assert_json_exact(output: &Output) {
    let expected = long_answer();
    assert_eq!(output.status.code(), Some(0), "{}", text_of(&output.stderr));
    let stdout = text_of(&output.stdout);
    let last = stdout.lines().last().expect("a result line");
    let result: Value = serde_json::from_str(last).expect("the result is JSON");
    assert_eq!(result["type"], "result", "{last}");
    let text = result["text"].as_str().expect("result.text");
    assert!(text == expected, "{}", first_difference(text, &expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_starts_late_gets_the_exact_answer() {
    let output = run_with_reader_away(&[], Away::AtStart).await;
    assert_text_exact(&output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_pauses_mid_stream_gets_the_exact_answer() {
    let output = run_with_reader_away(&[], Away::MidStream).await;
    assert_text_exact(&output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_reader_that_starts_late_gets_the_exact_result_text() {
    let output = run_with_reader_away(&["--format", "json"], Away::AtStart).await;
    assert_json_exact(&output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_reader_that_pauses_mid_stream_gets_the_exact_result_text() {
    let output = run_with_reader_away(&["--format", "json"], Away::MidStream).await;
    assert_json_exact(&output);
}

/// A pipe whose write end is non-blocking, as a parent that set O_NONBLOCK
/// on a shared pipe or terminal leaves it: (read end, write end).
fn nonblocking_pipe() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors it creates; fcntl reads and
    // sets the flags of one of them; each is then owned exactly once.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        let flags = libc::fcntl(fds[1], libc::F_GETFL);
        assert_eq!(
            libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK),
            0
        );
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_blocking_stdout_read_late_gets_the_exact_answer() {
    let project = Project::new();
    let server = ScriptedServer::start([word_by_word(&long_answer())]).await;
    project.use_scripted(&server);
    let (mut reader, writer) = nonblocking_pipe();
    let child = project
        .command(&["run", "write a long answer"])
        .stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    tokio::time::timeout(Duration::from_secs(60), async {
        while !server.sent_text().iter().any(|(_, text)| text == SENT_ALL) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server sends the whole answer within 60 s");
    tokio::time::sleep(READER_AWAY).await;
    let printed = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut printed = Vec::new();
        reader.read_to_end(&mut printed).map(|_| printed)
    });
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("cairn finishes within 60 s once read")
        .expect("wait for cairn");
    let stdout = printed.await.expect("reader").expect("read the pipe");
    assert_text_exact(&Output { stdout, ..output });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_stream_prints_only_the_final_answer() {
    let project = Project::new();
    let server = ScriptedServer::start([
        ScriptedResponse::sse()
            .chunk(chunk(
                json!({"role": "assistant", "content": "The abandoned fragm"}),
                None,
            ))
            .then_drop(),
        crate::scenario::text("The answer is 42.", 500),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "what is the answer?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(server.requests().len(), 2, "{}", describe(&output));
    assert_eq!(
        text_of(&output.stdout),
        "The answer is 42.\n",
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_on_a_piped_stderr_is_a_plain_line() {
    let project = Project::new();
    let server = ScriptedServer::start([
        ScriptedResponse::sse()
            .chunk(chunk(json!({"role": "assistant", "content": "Cut"}), None))
            .then_drop(),
        crate::scenario::text("Whole.", 500),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "a question"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stderr = text_of(&output.stderr);
    // A CI log gets lines, not a countdown redrawn in place.
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    assert!(!stderr.contains('\r'), "{stderr:?}");
    let retry = stderr
        .lines()
        .find(|line| line.starts_with("retry 1 in "))
        .unwrap_or_else(|| panic!("no retry line: {stderr:?}"));
    assert!(retry.contains(" s: "), "{retry:?}");
}

/// Ctrl+S on a terminal: stdout is a tty (the text streams) that nobody
/// reads while the whole answer is sent and for [`READER_AWAY`] after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_that_stops_reading_gets_the_exact_answer() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let project = Project::new();
    let server = ScriptedServer::start([word_by_word(&long_answer())]).await;
    project.use_scripted(&server);
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pty");
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_cairn"));
    command.args(["run", "write a long answer"]);
    command.cwd(project.root.path());
    command.env("HOME", project.home.path());
    command.env("XDG_CONFIG_HOME", project.home.path().join("config"));
    command.env("CAIRN_DATA_DIR", project.data_dir());
    command.env("CAIRN_LOCAL_SERVERS", "");
    command.env_remove("CAIRN_CONFIG");
    let mut child = pair.slave.spawn_command(command).expect("spawn cairn");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("pty reader");
    tokio::time::timeout(Duration::from_secs(60), async {
        while !server.sent_text().iter().any(|(_, text)| text == SENT_ALL) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server sends the whole answer within 60 s");
    tokio::time::sleep(READER_AWAY).await;
    let printed = tokio::task::spawn_blocking(move || {
        let _master = pair.master; // the pty stays open while it is read
        let mut printed = Vec::new();
        let mut buffer = [0u8; 8192];
        // The end is EIO once cairn has exited and closed its side.
        while let Ok(read) = std::io::Read::read(&mut reader, &mut buffer) {
            if read == 0 {
                break;
            }
            printed.extend_from_slice(&buffer[..read]);
        }
        printed
    })
    .await
    .expect("reader");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("waiter")
        .expect("wait for cairn");
    assert!(status.success(), "{status:?}: {}", text_of(&printed));
    // The terminal turns the last newline into \r\n.
    let want = format!("{}\r\n", long_answer());
    let got = text_of(&printed);
    assert!(got == want, "{}", first_difference(&got, &want));
}

/// A script that follows the events (a progress display) gets each line
/// as it happens, not when a buffer fills or the run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_are_written_as_they_happen() {
    let project = Project::new();
    let server = ScriptedServer::start([crate::scenario::text_then_stall("Half of it")]).await;
    project.use_scripted(&server);
    let mut child = project
        .command(&["run", "--format", "json", "a long question"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start cairn");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut printed = Vec::new();
    let mut piece = [0u8; 4096];
    // The stream stalls after its text: the delta's line must already be out.
    while !text_of(&printed).contains("\"delta\":\"Half of it\"") {
        let read = tokio::time::timeout(Duration::from_secs(20), stdout.read(&mut piece))
            .await
            .unwrap_or_else(|_| panic!("no delta line within 20 s: {}", text_of(&printed)))
            .expect("read cairn's stdout");
        assert!(read > 0, "stdout closed early: {}", text_of(&printed));
        printed.extend_from_slice(&piece[..read]);
    }
    child.start_kill().expect("stop cairn");
}

/// stdout is the answer, plus one newline only when the answer has none
/// (as the README says); `result` is the answer as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_ends_with_one_newline_and_result_is_the_answer_as_is() {
    for (answer, printed) in [
        ("héllo wörld ✓ no newline", "héllo wörld ✓ no newline\n"),
        ("two\nlines\n", "two\nlines\n"),
        ("x\n\n\n", "x\n\n\n"),
    ] {
        let server = ScriptedServer::start([
            crate::scenario::text(answer, 300),
            crate::scenario::text(answer, 300),
        ])
        .await;
        let project = Project::new();
        project.use_scripted(&server);
        let out = project.cairn(&["run", "say it"]).await;
        assert_eq!(text_of(&out.stdout), printed, "{}", describe(&out));
        let json = project
            .ok(&["run", "--format", "json", "say it again"])
            .await;
        let result: Value = json
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "result")
            .expect("a result");
        assert_eq!(result["result"], answer);
    }
}
