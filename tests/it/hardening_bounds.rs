//! Resource bounds through the real binary (issue 7): `cairn run` drives a
//! tool call against the scripted server and its peak RSS (VmHWM) is
//! sampled from /proc while it runs. A command printing hundreds of megabytes, a huge single-line
//! file, grep and glob over 20,000 files, a 20,000-message session: memory
//! stays bounded and the model gets a truncated result that says so.
//! Full-size figures (2 GB, 1 GB, 200,000 files): `benches/bounds.sh`.

use crate::history;
use crate::project::Project;
use crate::scenario;
use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::ScriptedServer;

/// What one run of the binary did.
struct Measured {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    peak_rss_mib: f64,
    elapsed: Duration,
}

impl Measured {
    fn describe(&self) -> String {
        let tail = |text: &str| {
            let start = text.len().saturating_sub(2000);
            let start = (start..text.len())
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(text.len());
            text[start..].to_string()
        };
        format!(
            "exit {:?}, peak RSS {:.1} MiB, {:?}\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}",
            self.code,
            self.peak_rss_mib,
            self.elapsed,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

/// Runs the binary like `Project::cairn`, measuring it as it goes.
trait Measure {
    async fn measured(&self, args: &[&str], limit: Duration) -> Measured;
}

impl Measure for Project {
    /// Runs the binary to its end (at most `limit`) and measures it.
    async fn measured(&self, args: &[&str], limit: Duration) -> Measured {
        let out_path = self.home.path().join("stdout");
        let err_path = self.home.path().join("stderr");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .args(args)
            .current_dir(self.root.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("CAIRN_DATA_DIR", self.data_dir())
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"));
        let started = Instant::now();
        let child = command.spawn().expect("start cairn");
        let pid = child.id() as i32;
        // The poller owns the child; the timeout below kills it by pid.
        let waited = tokio::time::timeout(
            limit,
            tokio::task::spawn_blocking(move || wait_with_peak_rss(child)),
        )
        .await;
        let Ok(waited) = waited else {
            // SAFETY: kill(2) on the child we spawned and have not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("cairn did not finish within {limit:?}");
        };
        let (code, peak_kib) = waited.expect("wait for cairn");
        let read = |path: &Path| {
            String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
        };
        Measured {
            code,
            stdout: read(&out_path),
            stderr: read(&err_path),
            peak_rss_mib: peak_kib as f64 / 1024.0,
            elapsed: started.elapsed(),
        }
    }
}

/// Waits for `child` and returns its exit code and peak RSS in KiB.
///
/// VmHWM is sampled every few milliseconds until the process exits: wait4's
/// `ru_maxrss` would not do, since Linux carries the forking test process's
/// own peak into the child across exec.
fn wait_with_peak_rss(mut child: std::process::Child) -> (Option<i32>, i64) {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(hwm) = std::fs::read_to_string(&status_path)
            .ok()
            .and_then(|status| vm_hwm_kib(&status))
        {
            peak = peak.max(hwm);
        }
        match child.try_wait().expect("poll cairn") {
            Some(status) => return (status.code(), peak),
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn vm_hwm_kib(status: &str) -> Option<i64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The tool results the model was sent, in order, from every recorded request's last one.
fn tool_results(server: &ScriptedServer) -> Vec<String> {
    let requests = server.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    scenario::messages_of(&last.json())
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(scenario::message_text)
        .collect()
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_printing_300_mb_keeps_the_tail_with_bounded_memory_and_spill() {
    let command = "yes 'a line from a runaway command' | head -c 300M; echo; echo the-very-end";
    let server = ScriptedServer::start([
        scenario::tool_call("call_1", "bash", json!({ "command": command }), 1000),
        scenario::text("Done.", 2000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let run = project
        .measured(&["run", "print a lot"], Duration::from_secs(120))
        .await;
    eprintln!(
        "bash 300 MB: {}",
        run.describe().lines().next().unwrap_or("")
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.peak_rss_mib < 120.0,
        "peak RSS {:.1} MiB for 300 MB of output",
        run.peak_rss_mib
    );
    let results = tool_results(&server);
    assert_eq!(results.len(), 1, "{results:?}");
    let result = &results[0];
    assert!(
        result.len() < 60 * 1024,
        "{} bytes sent to the model",
        result.len()
    );
    assert!(
        result.trim_end().ends_with("the-very-end"),
        "{}",
        &result[result.len() - 200..]
    );
    // One directory per session, holding its saved outputs.
    let sessions = files_in(&project.data_dir().join("tool-output"));
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let spilled = files_in(&sessions[0]);
    assert_eq!(spilled.len(), 1, "{spilled:?}");
    let size = std::fs::metadata(&spilled[0]).expect("spill file").len();
    assert_eq!(size, 256 * 1024 * 1024, "the spill file stops at its cap");
    assert!(
        result.contains(&format!(
            "The first 256.0 MiB of the output (300.0 MiB in all) saved to: {}",
            spilled[0].display()
        )),
        "{}",
        &result[..300]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_a_200_mb_single_line_file_holds_one_clipped_line() {
    let server = ScriptedServer::start([
        scenario::tool_call("call_1", "read", json!({ "path": "huge.txt" }), 1000),
        scenario::text("Done.", 2000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    {
        use std::io::Write as _;
        let file = std::fs::File::create(project.path("huge.txt")).expect("create huge.txt");
        let mut writer = std::io::BufWriter::new(file);
        let block = vec![b'q'; 1024 * 1024];
        for _ in 0..200 {
            writer.write_all(&block).expect("write huge.txt");
        }
        writer
            .write_all(b"\nsecond line\n")
            .expect("write huge.txt");
    }
    let run = project
        .measured(&["run", "read it"], Duration::from_secs(120))
        .await;
    eprintln!(
        "read 200 MB line: {}",
        run.describe().lines().next().unwrap_or("")
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.peak_rss_mib < 80.0,
        "peak RSS {:.1} MiB reading a 200 MB line",
        run.peak_rss_mib
    );
    let results = tool_results(&server);
    assert_eq!(results.len(), 1, "{results:?}");
    let result = &results[0];
    assert!(result.len() < 8 * 1024, "{} bytes", result.len());
    assert!(
        result.contains(&format!(
            "1: {}... (line truncated to 2000 chars)",
            "q".repeat(2000)
        )),
        "{}",
        &result[..300]
    );
    assert!(result.contains("2: second line"), "{result}");
    assert!(result.contains("(End of file - total 2 lines)"), "{result}");
}

/// `dirs` x `per_dir` small text files, each with two lines holding "needle".
fn make_tree(root: &Path, dirs: usize, per_dir: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("pkg{d:04}"));
        std::fs::create_dir_all(&dir).expect("create tree dir");
        for f in 0..per_dir {
            std::fs::write(
                dir.join(format!("file{f:03}.txt")),
                format!("first needle {d}/{f}\nnothing\nsecond needle\n"),
            )
            .expect("write tree file");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_and_glob_over_20k_files_cap_their_results() {
    let server = ScriptedServer::start([
        scenario::tool_call("call_1", "grep", json!({ "pattern": "needle" }), 1000),
        scenario::tool_call("call_2", "glob", json!({ "pattern": "**/*.txt" }), 1500),
        scenario::text("Done.", 2000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let made = Instant::now();
    make_tree(project.root.path(), 200, 100);
    eprintln!("20,000 files made in {:?}", made.elapsed());
    let run = project
        .measured(&["run", "find the needles"], Duration::from_secs(120))
        .await;
    eprintln!(
        "grep+glob 20k files: {}",
        run.describe().lines().next().unwrap_or("")
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.peak_rss_mib < 80.0,
        "peak RSS {:.1} MiB for 20,000 files",
        run.peak_rss_mib
    );
    let results = tool_results(&server);
    assert_eq!(results.len(), 2, "{results:?}");
    let grep = &results[0];
    assert!(
        grep.starts_with("Found 40000 matches\n"),
        "{}",
        &grep[..200]
    );
    assert_eq!(grep.lines().filter(|l| l.contains(": ")).count(), 100 + 1);
    assert!(grep.contains("(Results are truncated: showing first 100 matches."));
    let glob = &results[1];
    assert_eq!(glob.lines().filter(|l| l.ends_with(".txt")).count(), 100);
    assert!(glob.contains("(Results are truncated: showing first 100 results."));
}

const SESSION_MESSAGES: usize = 2_000;

/// Seeds a realistic session of `messages` messages for the project; returns its id.
async fn seed_session(project: &Project, messages: usize) -> String {
    let directory = std::fs::canonicalize(project.root.path()).expect("project path");
    std::fs::create_dir_all(project.data_dir()).expect("data dir");
    let store =
        cairn::store::Store::open(&project.data_dir().join("cairn.db")).expect("open store");
    let now = cairn::clock::now_millis();
    let session = cairn::message::Session {
        id: cairn::id::session_id(),
        title: format!("seeded, {messages} messages"),
        directory: directory.display().to_string(),
        parent_id: None,
        time_created: now,
        time_updated: now,
        cost: 0.0,
        tokens: Default::default(),
    };
    store
        .create_session(&session)
        .await
        .expect("create session");
    let history = history::HistoryBuilder::new(&session.id).build(messages);
    for batch in history.chunks(500) {
        store.upsert_messages(batch).await.expect("seed messages");
    }
    session.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2k_message_session_opens_and_steps_with_bounded_memory() {
    // The seeded usage is past the window: the step may compact first, so
    // every request gets an answer that works as a summary or as the reply.
    let server =
        ScriptedServer::start((0..4).map(|_| scenario::text("Still here and answering.", 3000)))
            .await;
    let project = Project::new();
    project.use_scripted(&server);
    let seeded = Instant::now();
    // 2,000 in CI (a debug build takes ~90 s and ~500 MB for 20,000 without
    // compaction); benches/bounds.sh opens 20,000 with a release build.
    let id = seed_session(&project, SESSION_MESSAGES).await;
    eprintln!(
        "{SESSION_MESSAGES} messages seeded in {:?}",
        seeded.elapsed()
    );
    let run = project
        .measured(
            &["run", "--session", &id, "one more step"],
            Duration::from_secs(120),
        )
        .await;
    eprintln!(
        "{SESSION_MESSAGES}-message session: {}",
        run.describe().lines().next().unwrap_or("")
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stdout.contains("Still here and answering."),
        "{}",
        run.describe()
    );
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert!(!requests.is_empty());
    assert!(
        run.peak_rss_mib < 250.0,
        "peak RSS {:.1} MiB opening {SESSION_MESSAGES} messages",
        run.peak_rss_mib
    );
}

/// A never-compacted session of 40 turns, each reading 300 KB (12 MB of
/// content, past the model view's 8 MiB read budget).
async fn seed_heavy_session(project: &Project) -> String {
    let directory = std::fs::canonicalize(project.root.path()).expect("project path");
    std::fs::create_dir_all(project.data_dir()).expect("data dir");
    let store =
        cairn::store::Store::open(&project.data_dir().join("cairn.db")).expect("open store");
    let mut session = crate::store_support::session(&directory.display().to_string());
    session.title = "heavy, never compacted".into();
    store
        .create_session(&session)
        .await
        .expect("create session");
    let mut messages = Vec::new();
    for turn in 0..40 {
        let user = history::user(&session.id, &format!("TURN-{turn:02} please read big.txt"));
        let mut read = history::assistant(
            &session.id,
            &user.message.id,
            cairn::message::FinishReason::ToolCalls,
        );
        history::push(
            &mut read,
            history::tool(
                format!("call_{turn}"),
                "read",
                json!({"filePath": "big.txt"}),
                "x".repeat(300 * 1024),
            ),
        );
        let mut answer = history::assistant(
            &session.id,
            &user.message.id,
            cairn::message::FinishReason::Stop,
        );
        history::push(&mut answer, history::text(format!("ANSWER-{turn:02}")));
        messages.extend([user, read, answer]);
    }
    store
        .upsert_messages(&messages)
        .await
        .expect("seed messages");
    session.id
}

/// Issue #18: a session never compacted and longer than any window is read
/// only as far back as a window reaches, and summarized before the model
/// sees it; the summary request says older turns were left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_compacted_session_past_the_read_budget_is_summarized_first() {
    let server = ScriptedServer::start([
        scenario::text("## Goal\nread big files", 3000),
        scenario::text("Answered after the summary.", 3000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let id = seed_heavy_session(&project).await;
    let run = project
        .measured(
            &["run", "--session", &id, "one more step"],
            Duration::from_secs(120),
        )
        .await;
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stdout.contains("Answered after the summary."),
        "{}",
        run.describe()
    );
    let requests: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json().to_string())
        .collect();
    assert_eq!(requests.len(), 2, "a summary, then the answer");
    let summary = &requests[0];
    assert!(
        summary.contains("its oldest turns were left out"),
        "{summary:.300}"
    );
    assert!(!summary.contains("TURN-00"), "the oldest turn is not read");
    assert!(summary.contains("TURN-39"), "the newest turn is summarized");
    // What was read is bounded by the budget, not the 12 MB session.
    assert!(summary.len() < 10 << 20, "{} bytes", summary.len());
    assert!(
        requests[1].contains("read big files"),
        "the answer sees the summary"
    );
    // The oldest turn reaches the answer only as the user's own words,
    // quoted in the working state (#29), never as history.
    let outside_state = requests[1]
        .split("<working-state>")
        .enumerate()
        .map(
            |(i, piece)| match (i, piece.split_once("</working-state>")) {
                (0, _) => piece,
                (_, Some((_, after))) => after,
                (_, None) => piece,
            },
        )
        .collect::<String>();
    assert!(!outside_state.contains("TURN-00"));
}

/// Issue #18: how far back a never-compacted session is read follows the
/// model's window (8 bytes of content per token of it), not a fixed 8 MiB:
/// with 300 KiB turns, a 50,000-token window reads back 2 turns and a
/// 200,000-token window 6, and only those reach the summary request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_of_a_never_compacted_session_follows_the_window() {
    for (window, oldest_read) in [(50_000, 38), (200_000, 34)] {
        let server = ScriptedServer::start([
            scenario::text("## Goal\nread big files", 3000),
            scenario::text("Answered after the summary.", 3000),
        ])
        .await;
        let project = Project::new();
        let config = format!(
            "model = \"scripted/test-model\"\nyolo = true\n\n\
             [provider.scripted]\nwire = \"openai\"\nbase_url = \"{}/v1\"\n\n\
             [provider.scripted.models.\"test-model\"]\ncontext = {window}\noutput = 8000\n",
            server.url()
        );
        std::fs::write(project.path("cairn.toml"), config).expect("write cairn.toml");
        project.trust();
        let id = seed_heavy_session(&project).await;
        let run = project
            .measured(
                &["run", "--session", &id, "one more step"],
                Duration::from_secs(120),
            )
            .await;
        assert_eq!(run.code, Some(0), "window {window}: {}", run.describe());
        let requests = server.requests();
        let summary = requests
            .first()
            .expect("a summary request")
            .json()
            .to_string();
        assert!(
            summary.contains(&format!("TURN-{oldest_read:02}")),
            "window {window}: the oldest turn read is summarized"
        );
        assert!(
            !summary.contains(&format!("TURN-{:02}", oldest_read - 1)),
            "window {window}: the turn before is not read"
        );
    }
}
