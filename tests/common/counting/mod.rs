//! A scripted server that counts every chat request with cairn's own
//! tokenizer and rejects one over its window as llama-server does: summary
//! requests are answered "ok" (the useless summary), every other request by
//! a model function with usage equal to the real count. Shared by the
//! small-window (#30) and working-state (#29) suites.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::scenario::text;
use crate::support::{ScriptedResponse, ScriptedServer};

/// What the model answers to the `n`th non-summary request it accepted.
pub type Model = Box<dyn Fn(usize, &Value, u64) -> ScriptedResponse + Send + Sync>;

/// The server and every chat request it saw, with its count.
pub struct Counting {
    pub server: ScriptedServer,
    seen: Arc<Mutex<Vec<(Value, u64)>>>,
    rejected: Arc<Mutex<u32>>,
    tokenized: Arc<Mutex<Vec<u64>>>,
}

pub fn is_summary_request(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains("summar"))
        && request["tools"].as_array().is_none_or(Vec::is_empty)
}

/// The text a request is counted as (the server's "template").
fn rendered(request: &Value) -> String {
    format!("{}{}", request["messages"], request["tools"])
}

/// How the server counts: as cairn does, or as SmolLM2's tokenizer does
/// with numbers (one token per digit where `o200k_base` takes up to three),
/// which teaches cairn's calibration a ratio that misfires on prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    Ours,
    DigitsApart,
}

impl Tokenizer {
    pub fn count(self, text: &str) -> u64 {
        match self {
            Self::Ours => cairn::token::count(text) as u64,
            Self::DigitsApart => {
                let digits = text.chars().filter(char::is_ascii_digit).count() as u64;
                let rest: String = text.chars().filter(|c| !c.is_ascii_digit()).collect();
                cairn::token::count(&rest) as u64 + digits
            }
        }
    }
}

/// What else the server answers besides chat: nothing (a generic
/// OpenAI-compatible server), or llama-server's `/props`, `/apply-template`
/// and `/tokenize`, so cairn can have its prompts counted exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Generic,
    LlamaServer,
}

impl Counting {
    pub async fn start(window: u64, model: Model) -> Self {
        Self::start_as(window, model, Tokenizer::Ours, Kind::Generic).await
    }

    pub async fn start_as(window: u64, model: Model, tokenizer: Tokenizer, kind: Kind) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rejected = Arc::new(Mutex::new(0));
        let tokenized = Arc::new(Mutex::new(Vec::new()));
        let answered = Arc::new(Mutex::new(0usize));
        let server = ScriptedServer::answering({
            let (seen, rejected) = (Arc::clone(&seen), Arc::clone(&rejected));
            let tokenized = Arc::clone(&tokenized);
            move |request| {
                if kind == Kind::LlamaServer
                    && let Some(answer) =
                        llama_server_path(request, window, tokenizer, &tokenized)
                {
                    return answer;
                }
                if !request.path.ends_with("/chat/completions") {
                    return ScriptedResponse::json(404, "{}");
                }
                let body = request.json();
                let tokens = tokenizer.count(&rendered(&body));
                seen.lock().unwrap().push((body.clone(), tokens));
                if tokens > window {
                    *rejected.lock().unwrap() += 1;
                    let error = format!(
                        r#"{{"error":{{"message":"This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}}}"#
                    );
                    return ScriptedResponse::json(400, &error);
                }
                if is_summary_request(&body) {
                    return text("ok", tokens);
                }
                let mut n = answered.lock().unwrap();
                *n += 1;
                model(*n - 1, &body, tokens)
            }
        })
        .await;
        Self {
            server,
            seen,
            rejected,
            tokenized,
        }
    }

    /// Each `/tokenize` answer, in order (llama-server only).
    pub fn tokenized(&self) -> Vec<u64> {
        self.tokenized.lock().unwrap().clone()
    }

    pub fn seen(&self) -> Vec<(Value, u64)> {
        self.seen.lock().unwrap().clone()
    }

    pub fn rejected(&self) -> u32 {
        *self.rejected.lock().unwrap()
    }

    pub fn summaries(&self) -> usize {
        self.seen()
            .iter()
            .filter(|(r, _)| is_summary_request(r))
            .count()
    }
}

/// llama-server's extra paths, answered as a recorded llama.cpp does: the
/// template renders a chat request into the text the chat path counts.
fn llama_server_path(
    request: &crate::support::RecordedRequest,
    window: u64,
    tokenizer: Tokenizer,
    tokenized: &Mutex<Vec<u64>>,
) -> Option<ScriptedResponse> {
    let body = match request.path.as_str() {
        "/props" => serde_json::json!({
            "default_generation_settings": {"n_ctx": window, "params": {}},
            "total_slots": 1,
            "model_path": "SmolLM2-135M-Instruct-Q4_1.gguf",
            "chat_template": "{{ messages }}",
            "build_info": "b6000-abcdef0",
        }),
        "/apply-template" => serde_json::json!({ "prompt": rendered(&request.json()) }),
        "/tokenize" => {
            let content = request.json()["content"].as_str().unwrap_or("").to_string();
            let count = tokenizer.count(&content);
            tokenized.lock().unwrap().push(count);
            let tokens = vec![1; count as usize];
            serde_json::json!({ "tokens": tokens })
        }
        _ => return None,
    };
    Some(ScriptedResponse::json(200, &body.to_string()))
}
