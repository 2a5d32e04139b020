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
}

pub fn is_summary_request(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains("summar"))
        && request["tools"].as_array().is_none_or(Vec::is_empty)
}

pub fn counted(request: &Value) -> u64 {
    let text = format!("{}{}", request["messages"], request["tools"]);
    cairn::token::count(&text) as u64
}

impl Counting {
    pub async fn start(window: u64, model: Model) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rejected = Arc::new(Mutex::new(0));
        let answered = Arc::new(Mutex::new(0usize));
        let server = ScriptedServer::answering({
            let (seen, rejected) = (Arc::clone(&seen), Arc::clone(&rejected));
            move |request| {
                if !request.path.ends_with("/chat/completions") {
                    return ScriptedResponse::json(404, "{}");
                }
                let body = request.json();
                let tokens = counted(&body);
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
        }
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
