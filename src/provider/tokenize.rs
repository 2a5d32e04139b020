//! Exact prompt counts from a local server's own tokenizer.
//!
//! llama-server renders a chat request with the model's template at
//! `POST /apply-template` (same body as `/v1/chat/completions`) and counts
//! text at `POST /tokenize`; together they give the prompt size the server
//! will report, before the first answer. vLLM has no `/apply-template` but
//! counts a whole chat at `POST /tokenize` (`messages`, `tools` -> `count`).
//! Only a server identified as one of them (`server_kind`) is asked: others
//! (Ollama, LM Studio, a proxy) keep the calibrated estimate and are never
//! sent the conversation.

use std::time::Duration;

use serde_json::{Value, json};

use super::client::{Provider, is_local_address};
use super::server_kind::{self, ServerKind};
use super::{ChatRequest, Wire};

/// A count must not hold up a step: the server is local and answers in ms.
const COUNT_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest a step waits to learn what the server is, the first time
/// cairn meets it (after that the answer is remembered): the question is
/// asked when the session opens, so it is usually answered by now.
pub const IDENTIFY_WAIT: Duration = Duration::from_millis(10);

/// Why no exact count came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCount {
    /// Not a local OpenAI-compatible server: never asked.
    NotLocal,
    /// The server does not offer the endpoints (not llama-server): do not
    /// ask again.
    Unsupported,
    /// It failed this time (busy, restarting): asking later may work.
    Failed(String),
}

/// The prompt tokens `request` will cost on `provider`'s server, counted by
/// the server itself.
pub async fn count_prompt(provider: &Provider, request: &ChatRequest) -> Result<u64, NoCount> {
    let config = provider.config();
    if config.wire != Wire::OpenAi || !is_local_address(&config.base_url) {
        return Err(NoCount::NotLocal);
    }
    let root = server_root(&config.base_url);
    let kind = server_kind::kind_within(root, IDENTIFY_WAIT)
        .await
        .ok_or_else(|| NoCount::Failed("the server is not identified yet".to_owned()))?;
    let http = reqwest::Client::builder()
        .timeout(COUNT_TIMEOUT)
        .build()
        .map_err(|error| NoCount::Failed(error.to_string()))?;
    let body = provider.request_body(request);
    let counted = match kind {
        ServerKind::Other => return Err(NoCount::Unsupported),
        ServerKind::Vllm => count_chat_vllm(&http, root, &body).await,
        ServerKind::LlamaServer => count_llama_server(&http, root, &body).await,
    };
    if counted == Err(NoCount::Unsupported) {
        // Another server answers there now: not asked again.
        server_kind::record(root, ServerKind::Other);
    }
    counted
}

/// Starts finding out what `provider`'s server is, when it is one that may
/// count (a local OpenAI-compatible one), so a first step need not wait.
pub fn identify_soon(provider: &Provider) {
    let config = provider.config();
    if config.wire == Wire::OpenAi && is_local_address(&config.base_url) {
        server_kind::identify_soon(server_root(&config.base_url));
    }
}

/// The server's root: the base URL without `/v1`.
fn server_root(base_url: &str) -> &str {
    let root = base_url.trim_end_matches('/');
    root.strip_suffix("/v1").unwrap_or(root)
}

/// llama-server: the request rendered by `/apply-template`, counted by `/tokenize`.
async fn count_llama_server(
    http: &reqwest::Client,
    root: &str,
    body: &Value,
) -> Result<u64, NoCount> {
    let rendered = post(http, &format!("{root}/apply-template"), body).await?;
    let prompt = rendered["prompt"].as_str().ok_or(NoCount::Unsupported)?;
    let body = json!({ "content": prompt, "add_special": true, "parse_special": true });
    let tokens = post(http, &format!("{root}/tokenize"), &body).await?;
    tokens["tokens"]
        .as_array()
        .map(|tokens| tokens.len() as u64)
        .ok_or(NoCount::Unsupported)
}

/// vLLM's chat form of `/tokenize`: the request's messages and tools,
/// rendered and counted by the server.
async fn count_chat_vllm(http: &reqwest::Client, root: &str, body: &Value) -> Result<u64, NoCount> {
    let mut chat = json!({ "messages": body["messages"], "add_generation_prompt": true });
    for key in ["model", "tools"] {
        if let Some(value) = body.get(key) {
            chat[key] = value.clone();
        }
    }
    let counted = post(http, &format!("{root}/tokenize"), &chat).await?;
    counted["count"].as_u64().ok_or(NoCount::Unsupported)
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> Result<Value, NoCount> {
    let response = http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|error| NoCount::Failed(error.to_string()))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::METHOD_NOT_ALLOWED
    {
        return Err(NoCount::Unsupported);
    }
    if !status.is_success() {
        return Err(NoCount::Failed(format!("HTTP {status}")));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|error| NoCount::Failed(error.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|_| NoCount::Unsupported)
}
