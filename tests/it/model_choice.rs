//! `/model` in a session that has a model: what it offers (catalog models of
//! the providers with a key, configured ones, local servers that answered),
//! switching in the terminal UI, and `cairn run "/model provider/model"`
//! keeping the choice for the session's following runs.

use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support::{RecordedRequest, ScriptedResponse, ScriptedServer};

use serde_json::json;

/// A second configured model on the scripted server.
const OTHER_MODEL: &str = "[provider.scripted.models.\"other-model\"]\ncontext = 100000\n";

fn model_of(request: &RecordedRequest) -> String {
    request.json()["model"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// An Ollama server with one model, answering chat requests too.
fn ollama(request: &RecordedRequest) -> ScriptedResponse {
    let ok = |body: serde_json::Value| ScriptedResponse::json(200, &body.to_string());
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/api/tags") => ok(json!({"models": [
            {"name": "qwen3-coder:30b", "model": "qwen3-coder:30b"}
        ]})),
        ("POST", "/api/show") => ok(json!({"parameters": "num_ctx 16384"})),
        ("POST", "/v1/chat/completions") => {
            scenario::text(&format!("local {} here.", model_of(request)), 100)
        }
        _ => ScriptedResponse::json(404, r#"{"error":"not found"}"#),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_model_keeps_the_choice_for_the_following_runs() {
    let server = ScriptedServer::start([
        scenario::text("First answer.", 100),
        scenario::text("Second answer.", 100),
        scenario::text("Third answer.", 100),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "yolo = true\n", OTHER_MODEL);
    project.ok(&["run", "hello"]).await;

    let chosen = project
        .cairn(&["run", "--continue", "/model scripted/other-model"])
        .await;
    assert_eq!(chosen.status.code(), Some(0), "{}", describe(&chosen));
    assert!(
        text_of(&chosen.stdout).contains("model scripted/other-model"),
        "{}",
        describe(&chosen)
    );
    assert_eq!(server.requests().len(), 1, "choosing calls no model");

    project.ok(&["run", "--continue", "again"]).await;
    // The choice is now the session's last model: it stays.
    project.ok(&["run", "--continue", "and again"]).await;
    let models: Vec<String> = server.requests().iter().map(model_of).collect();
    assert_eq!(models, ["test-model", "other-model", "other-model"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_model_refuses_what_it_cannot_use_and_changes_nothing() {
    let server = ScriptedServer::start([
        scenario::text("First answer.", 100),
        scenario::text("Second answer.", 100),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    project.ok(&["run", "hello"]).await;

    // No key in the environment: the error names the variable.
    let keyless = project
        .cairn(&["run", "--continue", "/model anthropic/claude-sonnet-4-5"])
        .await;
    assert_eq!(keyless.status.code(), Some(1), "{}", describe(&keyless));
    assert!(
        text_of(&keyless.stderr).contains("ANTHROPIC_API_KEY"),
        "{}",
        describe(&keyless)
    );
    let unknown = project
        .cairn(&["run", "--continue", "/model nowhere/x"])
        .await;
    assert_eq!(unknown.status.code(), Some(1), "{}", describe(&unknown));
    for malformed in ["/model gpt-5", "/model"] {
        let output = project.cairn(&["run", "--continue", malformed]).await;
        if malformed == "/model" {
            // Alone, it lists; that is not a change either.
            assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
            continue;
        }
        assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
        assert!(
            text_of(&output.stderr).contains("provider/model"),
            "{}",
            describe(&output)
        );
    }
    project.ok(&["run", "--continue", "still there?"]).await;
    let models: Vec<String> = server.requests().iter().map(model_of).collect();
    assert_eq!(models, ["test-model", "test-model"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_model_alone_lists_keyed_configured_and_local_models() {
    let local = ScriptedServer::answering(ollama).await;
    let server = ScriptedServer::start([]).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", OTHER_MODEL);
    let output = project
        .command(&["run", "/model"])
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CAIRN_LOCAL_SERVERS", format!("ollama={}", local.url()))
        .output()
        .await
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stdout = text_of(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // Grouped by provider: the default's first, then keyed, then local.
    let position = |name: &str| {
        lines
            .iter()
            .position(|line| *line == name)
            .unwrap_or_else(|| panic!("{name} missing: {stdout}"))
    };
    assert_eq!(position("scripted/test-model"), 0);
    assert_eq!(position("scripted/other-model"), 1);
    assert!(position("anthropic/claude-sonnet-4-5") > 1);
    assert!(position("anthropic/claude-haiku-4-5") > 1);
    assert_eq!(position("ollama/qwen3-coder:30b  (local)"), lines.len() - 1);
    assert!(!stdout.contains("openai/"), "no OpenAI key: {stdout}");
    assert!(server.requests().is_empty(), "listing calls no model");

    let json = project
        .command(&["run", "--format", "json", "/models"])
        .env("CAIRN_LOCAL_SERVERS", format!("ollama={}", local.url()))
        .output()
        .await
        .expect("run cairn");
    // The `models` line, then the `result` every `--format json` run ends with.
    let stdout = text_of(&json.stdout);
    let event: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap_or(""))
        .unwrap_or_else(|_| panic!("{}", describe(&json)));
    assert_eq!(event["type"], "models");
    assert_eq!(
        event["models"],
        json!([
            {"model": "scripted/test-model", "local": false},
            {"model": "scripted/other-model", "local": false},
            {"model": "ollama/qwen3-coder:30b", "local": true}
        ])
    );
}

/// A configured session in a real terminal: `/model` shows the local server
/// that answered after start-up, typing filters, Enter switches, and the
/// next prompt goes to that server at the address where it was found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_picker_offers_a_local_server_found_after_start_and_switches_to_it() {
    let local = ScriptedServer::answering(ollama).await;
    let server = ScriptedServer::start([]).await;
    let project = Project::new();
    project.use_scripted_with(&server, "yolo = true\n", OTHER_MODEL);
    let servers = format!("ollama={}", local.url());
    let root = project.root.path().to_path_buf();
    let data = project.data_dir();
    let config_home = project.home.path().join("config");
    tokio::task::spawn_blocking(move || {
        let env = [
            ("CAIRN_LOCAL_SERVERS", Some(servers.as_str())),
            ("ANTHROPIC_API_KEY", None),
            ("OPENAI_API_KEY", None),
            ("OPENROUTER_API_KEY", None),
        ];
        let mut terminal =
            crate::tui_pty::Terminal::start_with_env(&root, &data, &config_home, &[], &env);
        terminal.wait_for("the session", |s| s.contains("scripted/test-model"));
        open_picker_until(&mut terminal, |s| {
            s.contains("ollama/qwen3-coder:30b  (local)") && s.contains("scripted/other-model")
        });
        terminal.type_text("coder");
        terminal.wait_for("the filter", |s| {
            s.contains("filter: coder") && !s.contains("scripted/other-model")
        });
        terminal.type_text("\r");
        terminal.wait_for("the model in the status line", |s| {
            s.contains("ollama/qwen3-coder:30b") && !s.contains("filter:")
        });
        terminal.type_text("say hello\r");
        terminal.wait_for("the local answer", |s| {
            s.contains("local qwen3-coder:30b here.")
        });
        terminal.quit();
    })
    .await
    .expect("terminal session");
    assert!(
        server.requests().is_empty(),
        "the configured server was not asked"
    );
}

/// Opens `/model` until it shows what `test` wants: the search for local
/// servers ends after the first frame, within its budget (at most 40 tries).
fn open_picker_until(terminal: &mut crate::tui_pty::Terminal, test: impl Fn(&str) -> bool) {
    for _ in 0..40 {
        terminal.type_text("/model\r");
        let screen = terminal.wait_for("the picker", |s| s.contains("Esc closes"));
        if test(&screen) {
            return;
        }
        terminal.type_text("\x1b");
        terminal.wait_for("the picker closed", |s| !s.contains("Esc closes"));
    }
    panic!("the picker never showed it:\n{}", terminal.contents());
}

/// `--model` with `--continue`: the continued session follows the flag from
/// this run on, not its last model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_continue_with_a_model_flag_switches_the_session() {
    let server = ScriptedServer::start([
        scenario::text("First answer.", 100),
        scenario::text("Second answer.", 100),
        scenario::text("Third answer.", 100),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "yolo = true\n", OTHER_MODEL);
    project.ok(&["run", "hello"]).await;
    project
        .ok(&[
            "run",
            "--continue",
            "--model",
            "scripted/other-model",
            "again",
        ])
        .await;
    project.ok(&["run", "--continue", "and again"]).await;
    let models: Vec<String> = server.requests().iter().map(model_of).collect();
    assert_eq!(models, ["test-model", "other-model", "other-model"]);
}

/// The same in the terminal UI: `cairn --continue --model X` sends the next
/// prompt to X.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_continue_with_a_model_flag_switches_the_session() {
    let server = ScriptedServer::start([
        scenario::text("First answer.", 100),
        scenario::text("Second answer.", 100),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "yolo = true\n", OTHER_MODEL);
    project.ok(&["run", "hello"]).await;
    let root = project.root.path().to_path_buf();
    let data = project.data_dir();
    let config_home = project.home.path().join("config");
    tokio::task::spawn_blocking(move || {
        let args = ["--continue", "--model", "scripted/other-model"];
        let env = [("CAIRN_LOCAL_SERVERS", Some(""))];
        let mut terminal =
            crate::tui_pty::Terminal::start_with_env(&root, &data, &config_home, &args, &env);
        terminal.wait_for("the session", |s| s.contains("First answer."));
        terminal.type_text("again\r");
        terminal.wait_for("the answer", |s| s.contains("Second answer."));
        terminal.quit();
    })
    .await
    .expect("terminal session");
    let models: Vec<String> = server.requests().iter().map(model_of).collect();
    assert_eq!(models, ["test-model", "other-model"]);
}

/// A session reopened in the terminal UI shows the model its next prompt
/// uses: the one `cairn run "/model ..."` chose, not the config's default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tui_reopened_session_shows_the_model_it_will_use() {
    let server = ScriptedServer::start([scenario::text("First answer.", 100)]).await;
    let project = Project::new();
    project.use_scripted_with(&server, "yolo = true\n", OTHER_MODEL);
    project.ok(&["run", "hello"]).await;
    project
        .ok(&["run", "--continue", "/model scripted/other-model"])
        .await;
    let root = project.root.path().to_path_buf();
    let data = project.data_dir();
    let config_home = project.home.path().join("config");
    tokio::task::spawn_blocking(move || {
        let env = [("CAIRN_LOCAL_SERVERS", Some(""))];
        let mut terminal = crate::tui_pty::Terminal::start_with_env(
            &root,
            &data,
            &config_home,
            &["--continue"],
            &env,
        );
        let screen = terminal.wait_for("the session", |s| s.contains("First answer."));
        let status = screen
            .lines()
            .rev()
            .find(|line| line.contains(" build "))
            .unwrap_or_default()
            .to_string();
        assert!(status.contains("scripted/other-model"), "{screen}");
        terminal.quit();
    })
    .await
    .expect("terminal session");
}
