//! Finding a local model server with nothing configured: each flavour's
//! real endpoints served by a scripted server on an ephemeral port, the
//! probe's time bound, and `cairn run` using what it found or giving advice.

use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support::{RecordedRequest, ScriptedResponse, ScriptedServer};

use std::time::{Duration, Instant};

use cairn::provider::discover::{self, Candidate, Flavour, LocalServer};
use serde_json::json;

fn ok(body: serde_json::Value) -> ScriptedResponse {
    ScriptedResponse::json(200, &body.to_string())
}

fn not_found() -> ScriptedResponse {
    ScriptedResponse::json(404, r#"{"error":"not found"}"#)
}

/// llama-server: OpenAI model list, window in `/props`.
fn llama_server(request: &RecordedRequest) -> ScriptedResponse {
    match request.path.as_str() {
        "/v1/models" => ok(json!({"object": "list", "data": [
            {"id": "qwen2.5-coder-7b-instruct-q4_k_m.gguf", "object": "model", "owned_by": "llamacpp",
             "meta": {"n_ctx_train": 32768}}
        ]})),
        "/props" => ok(json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1})),
        _ => not_found(),
    }
}

/// Ollama: `/api/tags` lists, `/api/show` tells `num_ctx` or the trained length.
fn ollama(request: &RecordedRequest) -> ScriptedResponse {
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/api/tags") => ok(json!({"models": [
            {"name": "qwen3-coder:30b", "model": "qwen3-coder:30b", "size": 18556700761u64},
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189u64}
        ]})),
        ("POST", "/api/show") if request.json()["model"] == "qwen3-coder:30b" => ok(json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx                        16384",
            "model_info": {"qwen3moe.context_length": 262144}
        })),
        _ => not_found(),
    }
}

/// LM Studio: OpenAI list plus its own `/api/v0/models` with window sizes.
fn lm_studio(request: &RecordedRequest) -> ScriptedResponse {
    match request.path.as_str() {
        "/v1/models" => ok(json!({"object": "list", "data": [
            {"id": "qwen/qwen3-4b", "object": "model", "owned_by": "organization_owner"}
        ]})),
        "/api/v0/models" => ok(json!({"object": "list", "data": [
            {"id": "qwen/qwen3-4b", "type": "llm", "state": "loaded",
             "max_context_length": 40960, "loaded_context_length": 4096}
        ]})),
        _ => not_found(),
    }
}

/// vLLM: the window is `max_model_len` in the model list.
fn vllm(request: &RecordedRequest) -> ScriptedResponse {
    match request.path.as_str() {
        "/v1/models" => ok(json!({"object": "list", "data": [
            {"id": "Qwen/Qwen2.5-Coder-32B-Instruct", "object": "model", "owned_by": "vllm",
             "root": "Qwen/Qwen2.5-Coder-32B-Instruct", "max_model_len": 32768}
        ]})),
        _ => not_found(),
    }
}

/// One flavour's scripted server.
type Responder = fn(&RecordedRequest) -> ScriptedResponse;

async fn probe_one(flavour: Flavour, server: &ScriptedServer) -> Vec<LocalServer> {
    let candidates = [Candidate {
        flavour,
        root: server.url(),
    }];
    discover::discover(&candidates, discover::BUDGET).await
}

#[tokio::test]
async fn each_flavour_is_found_with_its_models_and_window() {
    let cases: [(Flavour, Responder, &str, u64); 4] = [
        (
            Flavour::LlamaServer,
            llama_server,
            "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
            8192,
        ),
        (Flavour::Ollama, ollama, "qwen3-coder:30b", 16384),
        (Flavour::LmStudio, lm_studio, "qwen/qwen3-4b", 4096),
        (
            Flavour::Vllm,
            vllm,
            "Qwen/Qwen2.5-Coder-32B-Instruct",
            32768,
        ),
    ];
    for (flavour, responder, model, context) in cases {
        let server = ScriptedServer::answering(responder).await;
        let found = probe_one(flavour, &server).await;
        assert_eq!(found.len(), 1, "{flavour:?}: {found:?}");
        assert_eq!(found[0].models[0], model, "{flavour:?}");
        assert_eq!(found[0].context, Some(context), "{flavour:?}");
        assert_eq!(
            found[0].model_ref().expect("a model").to_string(),
            format!("{}/{model}", flavour.provider())
        );
        assert_eq!(found[0].base_url(), format!("{}/v1", server.url()));
    }
}

#[tokio::test]
async fn a_server_of_another_kind_or_with_no_models_is_not_used() {
    // An Ollama probe at a vLLM server: no /api/tags.
    let server = ScriptedServer::answering(vllm).await;
    assert_eq!(probe_one(Flavour::Ollama, &server).await, Vec::new());
    let empty = ScriptedServer::answering(|_| ok(json!({"object": "list", "data": []}))).await;
    assert_eq!(probe_one(Flavour::Vllm, &empty).await, Vec::new());
    let garbage = ScriptedServer::answering(|_| ScriptedResponse::json(200, "<html>")).await;
    assert_eq!(probe_one(Flavour::LlamaServer, &garbage).await, Vec::new());
}

#[tokio::test]
async fn the_probe_is_bounded_when_servers_stall_or_nothing_listens() {
    let stalled = ScriptedServer::answering(|_| ScriptedResponse::no_answer()).await;
    // The status line at once, the body only after five seconds.
    let slow = ScriptedServer::answering(|_| {
        ScriptedResponse::new(200)
            .delay(Duration::from_secs(5))
            .chunk(r#"{"data":[{"id":"late-model"}]}"#)
    })
    .await;
    let fast = ScriptedServer::answering(ollama).await;
    // A port that was bound and released: connections are refused.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("address"))
    };
    let candidates = [
        Candidate {
            flavour: Flavour::LlamaServer,
            root: stalled.url(),
        },
        Candidate {
            flavour: Flavour::Vllm,
            root: slow.url(),
        },
        Candidate {
            flavour: Flavour::LmStudio,
            root: closed,
        },
        Candidate {
            flavour: Flavour::Ollama,
            root: fast.url(),
        },
    ];
    let started = Instant::now();
    let found = discover::discover(&candidates, discover::BUDGET).await;
    let took = started.elapsed();
    assert!(
        took < discover::BUDGET + Duration::from_millis(100),
        "{took:?}"
    );
    let flavours: Vec<Flavour> = found.iter().map(|s| s.flavour).collect();
    assert_eq!(flavours, [Flavour::Ollama]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_nothing_configured_uses_the_local_server_it_finds() {
    let project = Project::new();
    let server = ScriptedServer::answering(|request| match request.path.as_str() {
        "/v1/chat/completions" => {
            let body = request.json();
            assert_eq!(body["model"], "qwen3-coder:30b");
            scenario::text("Hello from the local model.", 100)
        }
        _ => ollama(request),
    })
    .await;
    let output = project
        .command(&["run", "say hello"])
        .env("CAIRN_LOCAL_SERVERS", format!("ollama={}", server.url()))
        .output()
        .await
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        text_of(&output.stdout).contains("Hello from the local model."),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_nothing_configured_and_nothing_found_gives_advice() {
    let project = Project::new();
    let output = project.cairn(&["run", "say hello"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = text_of(&output.stderr);
    for needle in [
        "ANTHROPIC_API_KEY",
        "llama-server on :8080",
        "Ollama on :11434",
        "--model",
    ] {
        assert!(stderr.contains(needle), "{needle}: {}", describe(&output));
    }
}

/// Nothing configured in a real terminal: the first screen says what the
/// search found, `/model` picks it without a restart, and a message is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_screen_lists_the_local_server_and_model_switches_to_it() {
    let server = ScriptedServer::answering(|request| match request.path.as_str() {
        "/v1/chat/completions" => scenario::text("Hello from the local model.", 100),
        _ => ollama(request),
    })
    .await;
    let servers = format!("ollama={}", server.url());
    let (project, data, config_home) = empty_dirs();
    tokio::task::spawn_blocking(move || {
        let mut terminal = unconfigured_terminal(&project, &data, &config_home, &servers);
        terminal.wait_for("the servers found", |s| {
            s.contains("cairn found local model servers")
                && s.contains("ollama/qwen3-coder:30b  (local)")
                && s.contains("16384-token window")
        });
        terminal.type_text("\x1b");
        terminal.type_text("/model ollama/qwen3-coder:30b\r");
        terminal.wait_for("the model in the status line", |s| {
            s.contains("ollama/qwen3-coder:30b") && s.contains("compact at")
        });
        terminal.type_text("say hello\r");
        terminal.wait_for("the answer", |s| s.contains("Hello from the local model."));
        terminal.quit();
    })
    .await
    .expect("terminal session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_screen_with_nothing_found_gives_advice_and_stays_usable() {
    let (project, data, config_home) = empty_dirs();
    tokio::task::spawn_blocking(move || {
        let mut terminal = unconfigured_terminal(&project, &data, &config_home, "");
        terminal.wait_for("the advice", |s| {
            s.contains("No local server answered") && s.contains("ANTHROPIC_API_KEY")
        });
        terminal.type_text("\x1b");
        terminal.type_text("/model nonsense\r");
        terminal.wait_for("the parse error", |s| s.contains("/model nonsense"));
        terminal.quit();
    })
    .await
    .expect("terminal session");
}

fn empty_dirs() -> (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir) {
    let project = tempfile::tempdir().expect("project");
    std::fs::create_dir(project.path().join(".git")).expect("git dir");
    let data = tempfile::tempdir().expect("data");
    let config_home = tempfile::tempdir().expect("config home");
    (project, data, config_home)
}

fn unconfigured_terminal(
    project: &tempfile::TempDir,
    data: &tempfile::TempDir,
    config_home: &tempfile::TempDir,
    servers: &str,
) -> crate::tui_pty::Terminal {
    let mut env = vec![
        ("CAIRN_LOCAL_SERVERS", Some(servers)),
        ("CAIRN_MODEL", None),
    ];
    env.extend(cairn::provider::presets::key_variables().map(|name| (name, None)));
    crate::tui_pty::Terminal::start_with_env(
        project.path(),
        data.path(),
        config_home.path(),
        &[],
        &env,
    )
}

/// A llama-server still loading its model answers 503 to everything; it
/// answers `/props` once the model is in memory (here after `loading` asks).
fn loading_llama_server(loading: usize) -> impl Fn(&RecordedRequest) -> ScriptedResponse {
    let asked = std::sync::atomic::AtomicUsize::new(0);
    move |request| match request.path.as_str() {
        "/props" if asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < loading => {
            ScriptedResponse::json(
                503,
                r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
            )
        }
        "/props" => ok(json!({"default_generation_settings": {"n_ctx": 8192}})),
        "/v1/chat/completions" => scenario::text("Loaded now.", 100),
        _ => not_found(),
    }
}

#[tokio::test]
async fn the_window_probe_waits_for_a_loading_llama_server() {
    let server = ScriptedServer::answering(loading_llama_server(3)).await;
    let probe = cairn::provider::catalog::probe_context(
        &format!("{}/v1", server.url()),
        "house-model",
        32_768,
    )
    .await;
    assert_eq!(probe.context, 8192);
    assert_eq!(probe.warning, None);
}

#[tokio::test]
async fn the_window_probe_gives_up_on_a_server_that_keeps_loading_and_says_so() {
    let server = ScriptedServer::answering(loading_llama_server(usize::MAX)).await;
    let started = Instant::now();
    let probe = cairn::provider::catalog::probe_context(
        &format!("{}/v1", server.url()),
        "house-model",
        32_768,
    )
    .await;
    let waited = started.elapsed();
    assert_eq!(probe.context, 32_768);
    let warning = probe.warning.expect("the fallback is said");
    assert!(
        warning.contains("still loading its model (503) after 2 s")
            && warning.contains("assuming 32768 tokens"),
        "{warning}"
    );
    assert!(
        waited >= Duration::from_millis(1700) && waited < Duration::from_secs(4),
        "bounded near 2 s: {waited:?}"
    );
}

/// Through `cairn run`: the window `/context` reports is the one the
/// server gave once loaded, not the fallback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_uses_the_window_of_a_llama_server_that_finished_loading() {
    let server = ScriptedServer::answering(loading_llama_server(2)).await;
    let project = Project::new();
    let config = format!(
        "model = \"llamacpp/house-model\"\n[provider.llamacpp]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    std::fs::write(project.path("cairn.toml"), config).expect("write cairn.toml");
    let output = project.cairn(&["run", "/context"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stdout = text_of(&output.stdout);
    assert!(stdout.contains("(8,192 window"), "{}", describe(&output));
    assert!(!stdout.contains("32,768"), "{}", describe(&output));
}
