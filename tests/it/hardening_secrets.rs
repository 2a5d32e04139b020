//! Secrets: the real binary with a provider key from `api_key_env`, a session
//! with a tool whose output spills to a file, then a 401 whose body echoes
//! the key, in text and `--format json`. The key must appear nowhere in the
//! data directory (database, WAL, log, tool output) nor on stdout/stderr,
//! and the data directory and its files must be private (0700 / 0600).

use crate::scenario;
use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;
use support::{ScriptedResponse, ScriptedServer};

const KEY_ENV: &str = "CAIRN_TEST_KEY";

/// A temp project with `cairn.toml` pointing at `server_url` with the key
/// read from `CAIRN_TEST_KEY`.
struct Project {
    root: tempfile::TempDir,
    key: String,
}

impl Project {
    fn new(server_url: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join(".git")).expect("project dir");
        let config = format!(
            "model = \"scripted/test-model\"\nyolo = true\n\n[provider.scripted]\nwire = \"openai\"\nbase_url = \"{server_url}/v1\"\napi_key_env = \"{KEY_ENV}\"\n\n[provider.scripted.models.\"test-model\"]\ncontext = 200000\noutput = 32000\n"
        );
        std::fs::write(work.join("cairn.toml"), config).expect("write cairn.toml");
        let key = format!("sk-cairn-secret-{:016x}", fastrand::u64(..));
        let project = Self { root, key };
        project.trust();
        project
    }

    /// `cairn trust` with the environment `run` gives cairn (the key set:
    /// `api_key_env` naming a set variable is what needs trust).
    fn trust(&self) {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .current_dir(self.root.path().join("work"))
            .env("HOME", self.root.path())
            .env("XDG_CONFIG_HOME", self.root.path().join("config"));
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CAIRN_")) {
            command.env_remove(name);
        }
        command
            .env("CAIRN_DATA_DIR", self.data())
            .env(KEY_ENV, &self.key);
        support::trust_project(command);
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// Runs cairn with the key in its environment and the most verbose log.
    async fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
        command
            .args(args)
            .current_dir(self.root.path().join("work"))
            .env("HOME", self.root.path())
            .env("XDG_CONFIG_HOME", self.root.path().join("config"))
            .stdin(Stdio::null());
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CAIRN_")) {
            command.env_remove(name);
        }
        command
            .env("CAIRN_DATA_DIR", self.data())
            .env("CAIRN_LOG", "trace")
            .env(KEY_ENV, &self.key);
        let output = tokio::task::spawn_blocking(move || command.output().expect("run cairn"));
        support::within(std::time::Duration::from_secs(60), output)
            .await
            .expect("join")
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(files_under(&path));
        }
        files.push(path);
    }
    files
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

fn assert_no_key_in_output(output: &Output, key: &str, what: &str) {
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(key),
            "{what}: the key is on {stream}: {text}"
        );
    }
}

/// Every file under the data dir is free of `key`; returns them.
fn assert_no_key_in_data(data: &Path, key: &str) -> Vec<PathBuf> {
    let files = files_under(data);
    for file in files.iter().filter(|f| f.is_file()) {
        let bytes = std::fs::read(file).expect("read data file");
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "the key is in {}",
            file.display()
        );
    }
    files
}

fn unauthorized(key: &str) -> ScriptedResponse {
    let body = json!({"error": {"message": format!("Incorrect API key provided: {key}. You can find your API key at https://example.invalid/keys."),
        "type": "invalid_request_error", "code": "invalid_api_key"}});
    ScriptedResponse::json(401, &body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_never_reaches_disk_or_output_and_the_data_dir_is_private() {
    let server = ScriptedServer::start([]).await;
    let project = Project::new(&server.url());
    let key = project.key.clone();
    // A tool whose output passes the truncation caps (a spill file), then an answer.
    server.push(scenario::tool_call(
        "call_1",
        "bash",
        json!({"command": "seq 1 100000", "description": "count"}),
        100,
    ));
    server.push(scenario::text("Counted.", 200));
    let output = project.run(&["run", "count to a lot"]).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_no_key_in_output(&output, &key, "first run");
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {key}").as_str()),
        "the key from {KEY_ENV} is the one sent"
    );

    // The key is refused and echoed back, in both output formats.
    for format in ["text", "json"] {
        server.push(unauthorized(&key));
        let output = project
            .run(&["run", "--continue", "--format", format, "again"])
            .await;
        assert_ne!(output.status.code(), Some(0), "a 401 is a failed run");
        let shown = String::from_utf8_lossy(&output.stderr).to_string()
            + &String::from_utf8_lossy(&output.stdout);
        assert!(
            shown.contains("[redacted]") || shown.contains("credentials"),
            "{format}: the failure is reported: {shown}"
        );
        assert!(
            shown.contains(&format!("check {KEY_ENV}")),
            "{format}: the advice names the variable the key came from: {shown}"
        );
        assert_no_key_in_output(&output, &key, format);
    }
    assert_eq!(server.requests().len(), 4, "401 is not retried");
    let output = project.run(&["config"]).await;
    assert_eq!(output.status.code(), Some(0));
    assert_no_key_in_output(&output, &key, "cairn config");

    let data = project.data();
    let files = assert_no_key_in_data(&data, &key);
    assert_eq!(mode(&data), 0o700, "{}", data.display());
    let db = data.join("cairn.db");
    assert!(db.is_file(), "files: {files:?}");
    let spills: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.is_file() && f.starts_with(data.join("tool-output")))
        .collect();
    assert!(!spills.is_empty(), "the big output spilled: {files:?}");
    for file in &files {
        if file.is_dir() {
            assert_eq!(mode(file), 0o700, "{}", file.display());
        } else {
            // 0600, or 0400 for git's read-only snapshot objects: never
            // readable by anyone else.
            assert_eq!(mode(file) & 0o077, 0, "{}", file.display());
        }
    }
    eprintln!("checked files: {files:?}");
    let log = data.join("log/cairn.log");
    assert!(
        std::fs::metadata(&log).is_ok_and(|m| m.len() > 0),
        "the trace log was written, so it was checked: {files:?}"
    );
}

/// A command the model runs inherits cairn's environment, so `env` hands the
/// provider key to the model and into the stored tool output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_model_runs_does_not_see_the_key() {
    let server = ScriptedServer::start([]).await;
    let project = Project::new(&server.url());
    server.push(scenario::tool_call(
        "call_1",
        "bash",
        json!({"command": format!("printenv {KEY_ENV}; echo checked"), "description": "env"}),
        100,
    ));
    server.push(scenario::text("Done.", 200));
    let output = project.run(&["run", "show the environment"]).await;
    assert_eq!(output.status.code(), Some(0));
    let requests = server.requests();
    let result = requests[1].json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["tool_call_id"] == "call_1")
        .map(|m| m["content"].to_string())
        .expect("the tool result");
    assert!(result.contains("checked"), "the command ran: {result}");
    assert!(!result.contains(&project.key), "the model received the key");
    assert_no_key_in_data(&project.data(), &project.key);
}

/// How a secret-reading command is stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Guard {
    /// The command reads cairn's own environment through `/proc`: the key is
    /// printed and must be replaced by `[redacted]` in the result.
    Redaction,
    /// The command reads its own environment, which holds no key.
    ScrubbedEnv,
}

/// Commands the model may run to read the provider key (issue #11). Not in
/// this table because redaction cannot catch them (documented in
/// `src/secret.rs`): encodings of the environment (`base64`, `xxd`, `od -c`,
/// `rev`) and pieces of the key (`cut -c1-10`).
const ATTACKS: &[(&str, Guard)] = &[
    ("cat /proc/$PPID/environ", Guard::Redaction),
    ("tr '\\0' '\\n' < /proc/$PPID/environ", Guard::Redaction),
    // The key glued to the next variable's name.
    ("tr -d '\\0' < /proc/$PPID/environ", Guard::Redaction),
    (
        "grep -a -o 'CAIRN_TEST_KEY=[^[:cntrl:]]*' /proc/$PPID/environ",
        Guard::Redaction,
    ),
    ("cat /proc/$PPID/environ >&2", Guard::Redaction),
    ("env; echo done", Guard::ScrubbedEnv),
    ("printenv CAIRN_TEST_KEY; echo done", Guard::ScrubbedEnv),
    ("echo \"k=$CAIRN_TEST_KEY\"", Guard::ScrubbedEnv),
];

/// The tool result the model received for `call_id` in `request`.
fn tool_result_in(request: &support::RecordedRequest, call_id: &str) -> String {
    request.json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["tool_call_id"] == call_id)
        .map(|m| m["content"].to_string())
        .unwrap_or_else(|| panic!("no tool result for {call_id}"))
}

/// The model reads cairn's environment through `/proc/$PPID/environ` and
/// its own: the key reaches neither the next request, nor the database nor
/// any saved output, whether the output is short or spills to a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_read_through_proc_never_reaches_the_model_or_the_store() {
    let server = ScriptedServer::start([]).await;
    let project = Project::new(&server.url());
    for (i, (command, _)) in ATTACKS.iter().enumerate() {
        server.push(scenario::tool_call(
            &format!("call_{i}"),
            "bash",
            json!({"command": command, "description": "look"}),
            100,
        ));
    }
    // A spill file full of environments: the key split across read chunks.
    server.push(scenario::tool_call(
        "call_spill",
        "bash",
        json!({"command": "for i in $(seq 3000); do cat /proc/$PPID/environ; echo; done",
               "description": "many"}),
        100,
    ));
    server.push(scenario::tool_call(
        "call_read",
        "read",
        json!({"filePath": "/proc/self/environ"}),
        100,
    ));
    server.push(scenario::text("Done.", 200));
    // Unconfined: the sandbox refuses these reads (`sandbox_run`); redaction
    // is the guard left with `--sandbox off`, and this checks that guard.
    let output = project
        .run(&["run", "--sandbox", "off", "read the environment"])
        .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), ATTACKS.len() + 3);
    let last = requests.last().expect("requests");
    let body = String::from_utf8_lossy(&last.body).to_string();
    assert!(
        !body.contains(&project.key),
        "the key is in the next request"
    );
    for (i, (command, guard)) in ATTACKS.iter().enumerate() {
        let result = tool_result_in(last, &format!("call_{i}"));
        match guard {
            Guard::Redaction => assert!(
                result.contains("[redacted]"),
                "`{command}` read the environment and was redacted: {result}"
            ),
            Guard::ScrubbedEnv => {
                assert!(result.contains("done") || result.contains("k="), "{result}")
            }
        }
    }
    let spill = tool_result_in(last, "call_spill");
    assert!(spill.contains("saved to"), "the output spilled: {spill}");
    assert_no_key_in_output(&output, &project.key, "run");
    let files = assert_no_key_in_data(&project.data(), &project.key);
    assert!(
        files
            .iter()
            .any(|f| f.starts_with(project.data().join("tool-output"))),
        "a spill file was written and checked: {files:?}"
    );
}

/// An inline `api_key` with no `api_key_env` is sent (it was silently
/// dropped), and it, a custom header's value and a `base_url` password stay
/// out of `cairn config` and of what the model reads (`cat cairn.toml`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_keys_are_sent_and_config_secrets_are_redacted_everywhere() {
    let server = ScriptedServer::start([]).await;
    let project = Project::new(&server.url());
    let work = project.root.path().join("work");
    let suffix = format!("{:016x}", fastrand::u64(..));
    let (inline, header, password) = (
        format!("sk-inline-{suffix}"),
        format!("hdr-secret-{suffix}"),
        format!("url-secret-{suffix}"),
    );
    let config = format!(
        "model = \"scripted/test-model\"\nyolo = true\n\n\
         [provider.scripted]\nwire = \"openai\"\nbase_url = \"{}/v1\"\napi_key = \"{inline}\"\n\
         headers = {{ \"x-team-token\" = \"{header}\" }}\n\n\
         [provider.scripted.models.\"test-model\"]\ncontext = 200000\noutput = 32000\n\n\
         [provider.other]\nwire = \"openai\"\nbase_url = \"http://me:{password}@10.0.0.1/v1\"\n",
        server.url()
    );
    let path = work.join("cairn.toml");
    std::fs::write(&path, config).expect("write cairn.toml");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    project.trust();
    server.push(scenario::tool_call(
        "call_1",
        "bash",
        json!({"command": "cat cairn.toml", "description": "config"}),
        100,
    ));
    server.push(scenario::text("Done.", 200));
    let output = project.run(&["run", "show the config"]).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {inline}").as_str()),
        "the inline key is sent"
    );
    assert_eq!(requests[0].header("x-team-token"), Some(header.as_str()));
    let result = tool_result_in(&requests[1], "call_1");
    assert!(
        result.contains("x-team-token"),
        "the file was read: {result}"
    );
    let body = String::from_utf8_lossy(&requests[1].body).to_string();
    let shown = project.run(&["config"]).await;
    assert_eq!(shown.status.code(), Some(0));
    let config_text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(config_text.contains("<redacted>"), "{config_text}");
    for secret in [&inline, &header, &password] {
        assert!(
            !body.contains(secret.as_str()),
            "{secret} reached the model"
        );
        assert!(
            !config_text.contains(secret.as_str()),
            "{secret} in cairn config"
        );
        assert_no_key_in_output(&output, secret, "run");
        assert_no_key_in_data(&project.data(), secret);
    }
}
