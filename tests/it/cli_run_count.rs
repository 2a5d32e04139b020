//! The local server's own prompt count through `cairn run` (issue #31):
//! only a server identified as llama-server (its `GET /props`) or vLLM is
//! sent the conversation to count, the answer is remembered in the data dir,
//! and a server whose counting paths never answer costs a run nothing (it
//! cost every run 3 s).

use crate::project::{Project, describe, text_of};
use crate::scenario::text;
use crate::support::{RecordedRequest, ScriptedResponse, ScriptedServer};

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

/// Each request's method, path and arrival time, in order.
type Seen = Arc<Mutex<Vec<(String, String, Instant)>>>;

/// A server answering `answer(path)` for its extra paths, and a text answer
/// to any chat request; it keeps what it was asked in `seen`.
async fn server(
    seen: &Seen,
    answer: impl Fn(&RecordedRequest) -> Option<ScriptedResponse> + Send + Sync + 'static,
) -> ScriptedServer {
    let seen = seen.clone();
    ScriptedServer::answering(move |request| {
        seen.lock()
            .unwrap()
            .push((request.method.clone(), request.path.clone(), request.at));
        answer(request).unwrap_or_else(|| text("Answered.", 500))
    })
    .await
}

fn paths(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(method, path, _)| format!("{method} {path}"))
        .collect()
}

async fn run(project: &Project) {
    let output = project.cairn(&["run", "hello?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout), "Answered.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_counting_paths_never_answer_neither_delays_the_run_nor_gets_the_conversation()
 {
    let seen = Seen::default();
    // An OpenAI-compatible server that is not llama-server: /props is not
    // found, and what would count a prompt never answers.
    let server = server(&seen, |request| match request.path.as_str() {
        "/tokenize" | "/apply-template" => Some(ScriptedResponse::no_answer()),
        "/props" => Some(ScriptedResponse::json(404, r#"{"error":"not found"}"#)),
        "/v1/models" => Some(ScriptedResponse::json(
            200,
            r#"{"object":"list","data":[{"id":"test-model","object":"model","owned_by":"organization_owner"}]}"#,
        )),
        _ => None,
    })
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    for _ in 0..2 {
        seen.lock().unwrap().clear();
        run(&project).await;
        let asked = seen.lock().unwrap().clone();
        let chat = asked
            .iter()
            .find(|(_, path, _)| path == "/v1/chat/completions")
            .expect("the chat request")
            .2;
        // The count waited on the paths for 3 s before the request went.
        let first = asked[0].2;
        assert!(
            chat - first < Duration::from_millis(1_000),
            "the request waited {:?} after cairn's first contact: {:?}",
            chat - first,
            paths(&seen)
        );
        let posted = paths(&seen);
        assert!(
            !posted
                .iter()
                .any(|p| p.contains("/tokenize") || p.contains("/apply-template")),
            "{posted:?}"
        );
    }
    let remembered = std::fs::read_to_string(project.data_dir().join("cache/local-servers.json"))
        .expect("the answer is remembered");
    assert!(remembered.contains("\"other\""), "{remembered}");
    assert!(
        !paths(&seen).iter().any(|p| p.contains("/props")),
        "the second run does not ask again: {:?}",
        paths(&seen)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_server_is_identified_once_and_counts_the_first_request() {
    let seen = Seen::default();
    let server = server(&seen, |request| {
        let body = match request.path.as_str() {
            // The fields llama-server's /props has (recorded from llama.cpp).
            "/props" => json!({
                "default_generation_settings": {"n_ctx": 200_000, "params": {}},
                "total_slots": 1,
                "model_path": "SmolLM2-135M-Instruct-Q4_1.gguf",
                "chat_template": "{{ messages }}",
                "build_info": "b6000-abcdef0",
            }),
            "/apply-template" => json!({"prompt": "<|im_start|>user\nhello?<|im_end|>"}),
            "/tokenize" => json!({"tokens": vec![1; 1_234]}),
            _ => return None,
        };
        Some(ScriptedResponse::json(200, &body.to_string()))
    })
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    run(&project).await;
    assert!(
        paths(&seen).contains(&"GET /props".to_owned()),
        "{:?}",
        paths(&seen)
    );
    let remembered = std::fs::read_to_string(project.data_dir().join("cache/local-servers.json"))
        .expect("the answer is remembered");
    assert!(remembered.contains("\"llama-server\""), "{remembered}");

    seen.lock().unwrap().clear();
    run(&project).await;
    assert_eq!(
        paths(&seen),
        [
            "POST /apply-template",
            "POST /tokenize",
            "POST /apply-template",
            "POST /tokenize",
            "POST /v1/chat/completions"
        ],
        "known from the first run, counted before the first answer: the whole \
         request, and its fixed part (issue #30: the window-too-small check rests \
         on the server's count)"
    );
}
