//! Finding a model server already running on this machine, for a start
//! with no key and no model configured.
//!
//! The usual local servers (llama-server, Ollama, LM Studio, vLLM) are asked
//! in parallel, each through its own real endpoints, for the models it serves
//! and the context size it runs with. The whole probe is bounded by one
//! budget so that a machine with nothing running pays at most that.

use std::time::Duration;

use serde_json::{Value, json};

use super::catalog::{llama_server_context, ollama_context};
use crate::message::ModelRef;

/// The most a start-up may spend asking local servers.
pub const BUDGET: Duration = Duration::from_millis(150);

/// Test-only override of where to look: `provider=root,...` (for example
/// `ollama=http://127.0.0.1:4567`); empty means look nowhere. Tests bind
/// scripted servers on ephemeral ports and point the probe at them.
pub const SERVERS_ENV: &str = "CAIRN_LOCAL_SERVERS";

/// The kinds of local server cairn knows; each is also a provider preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    LlamaServer,
    Ollama,
    LmStudio,
    Vllm,
}

impl Flavour {
    pub const ALL: [Flavour; 4] = [
        Flavour::LlamaServer,
        Flavour::Ollama,
        Flavour::LmStudio,
        Flavour::Vllm,
    ];

    /// The preset name (`presets::PRESETS`) requests to this server go through.
    pub fn provider(self) -> &'static str {
        match self {
            Flavour::LlamaServer => "llamacpp",
            Flavour::Ollama => "ollama",
            Flavour::LmStudio => "lmstudio",
            Flavour::Vllm => "vllm",
        }
    }

    fn default_root(self) -> &'static str {
        match self {
            Flavour::LlamaServer => "http://127.0.0.1:8080",
            Flavour::Ollama => "http://127.0.0.1:11434",
            Flavour::LmStudio => "http://127.0.0.1:1234",
            Flavour::Vllm => "http://127.0.0.1:8000",
        }
    }

    fn from_provider(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.provider() == name)
    }
}

/// Where one server may be listening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub flavour: Flavour,
    /// Scheme, host and port, without `/v1`.
    pub root: String,
}

/// A server that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    pub flavour: Flavour,
    pub root: String,
    pub models: Vec<String>,
    /// The window of the first model, when the server tells it.
    pub context: Option<u64>,
}

impl LocalServer {
    /// The OpenAI-compatible base URL all four flavours serve.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root)
    }

    /// The model a start without configuration uses: the server's first.
    pub fn model_ref(&self) -> Option<ModelRef> {
        let model = self.models.first()?;
        Some(ModelRef::new(self.flavour.provider(), model.clone()))
    }
}

/// Where to look: `SERVERS_ENV` when set, else every flavour's usual port.
///
/// # Errors
/// The override names an unknown provider or lacks `=`.
pub fn candidates() -> Result<Vec<Candidate>, String> {
    match std::env::var(SERVERS_ENV) {
        Ok(spec) => parse_candidates(&spec),
        Err(_) => Ok(Flavour::ALL
            .into_iter()
            .map(|flavour| Candidate {
                flavour,
                root: flavour.default_root().to_string(),
            })
            .collect()),
    }
}

/// Parses `provider=root,...`.
///
/// # Errors
/// An entry without `=` or with a provider that is not a local flavour.
pub fn parse_candidates(spec: &str) -> Result<Vec<Candidate>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (name, root) = entry
                .split_once('=')
                .ok_or_else(|| format!("{SERVERS_ENV}: `{entry}` is not provider=url"))?;
            let flavour = Flavour::from_provider(name.trim()).ok_or_else(|| {
                format!("{SERVERS_ENV}: `{name}` is not one of llamacpp, ollama, lmstudio, vllm")
            })?;
            Ok(Candidate {
                flavour,
                root: root.trim().trim_end_matches('/').to_string(),
            })
        })
        .collect()
}

/// Asks every candidate at once; returns those that answered within
/// `budget` with at least one model, in the candidates' order.
pub async fn discover(candidates: &[Candidate], budget: Duration) -> Vec<LocalServer> {
    let Ok(client) = reqwest::Client::builder()
        .timeout(budget)
        .connect_timeout(budget)
        .build()
    else {
        return Vec::new();
    };
    let probes = candidates.iter().map(|candidate| {
        let client = client.clone();
        async move {
            tokio::time::timeout(budget, probe(&client, candidate))
                .await
                .ok()
                .flatten()
        }
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

async fn probe(client: &reqwest::Client, candidate: &Candidate) -> Option<LocalServer> {
    let root = candidate.root.as_str();
    let (models, context) = match candidate.flavour {
        Flavour::Ollama => {
            let tags = get_json(client.get(format!("{root}/api/tags"))).await?;
            let models = names(&tags["models"], "name");
            let show = match models.first() {
                Some(first) => {
                    let body = json!({ "model": first }).to_string();
                    get_json(client.post(format!("{root}/api/show")).body(body)).await
                }
                None => None,
            };
            (models, show.as_ref().and_then(ollama_context))
        }
        Flavour::LlamaServer => {
            let (listed, props) = futures::join!(
                get_json(client.get(format!("{root}/v1/models"))),
                get_json(client.get(format!("{root}/props")))
            );
            let models = names(&listed?["data"], "id");
            (models, props.as_ref().and_then(llama_server_context))
        }
        Flavour::LmStudio => {
            let (listed, native) = futures::join!(
                get_json(client.get(format!("{root}/v1/models"))),
                get_json(client.get(format!("{root}/api/v0/models")))
            );
            let models = names(&listed?["data"], "id");
            let context = models
                .first()
                .and_then(|first| lm_studio_context(native.as_ref()?, first));
            (models, context)
        }
        Flavour::Vllm => {
            let listed = get_json(client.get(format!("{root}/v1/models"))).await?;
            let context = listed
                .pointer("/data/0/max_model_len")
                .and_then(Value::as_u64);
            (names(&listed["data"], "id"), context)
        }
    };
    (!models.is_empty()).then(|| LocalServer {
        flavour: candidate.flavour,
        root: root.to_string(),
        models,
        context: context.filter(|n| *n > 0),
    })
}

/// `field` of every object in the array `list` (model ids or names).
fn names(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[field].as_str())
        .filter(|name| !name.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// LM Studio's own API says both the window a model is loaded with and its
/// trained maximum; the loaded one is what requests get.
fn lm_studio_context(native: &Value, model: &str) -> Option<u64> {
    let entry = native["data"]
        .as_array()?
        .iter()
        .find(|entry| entry["id"].as_str() == Some(model))?;
    entry["loaded_context_length"]
        .as_u64()
        .or_else(|| entry["max_context_length"].as_u64())
}

async fn get_json(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    serde_json::from_slice(&response.bytes().await.ok()?).ok()
}

/// What to do when nothing is configured and nothing answered.
pub const ADVICE: &str = "no model configured and no local server found. Set ANTHROPIC_API_KEY or OPENAI_API_KEY, \
or start a local server (llama-server on :8080, Ollama on :11434, LM Studio on :1234, vLLM on :8000), \
or pass --model provider/model, or set `model` in ~/.config/cairn/config.toml";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_and_reject_unknown_providers() {
        let parsed = parse_candidates(" ollama=http://127.0.0.1:9/ , vllm=http://h:1").unwrap();
        assert_eq!(parsed[0].flavour, Flavour::Ollama);
        assert_eq!(parsed[0].root, "http://127.0.0.1:9");
        assert_eq!(parsed[1].flavour, Flavour::Vllm);
        assert_eq!(parse_candidates("").unwrap(), Vec::new());
        assert!(parse_candidates("openai=http://x").is_err());
        assert!(parse_candidates("ollama").is_err());
    }

    #[test]
    fn lm_studio_prefers_the_loaded_window() {
        let native = json!({"data": [
            {"id": "a", "max_context_length": 32768},
            {"id": "b", "loaded_context_length": 4096, "max_context_length": 32768}
        ]});
        assert_eq!(lm_studio_context(&native, "a"), Some(32768));
        assert_eq!(lm_studio_context(&native, "b"), Some(4096));
        assert_eq!(lm_studio_context(&native, "c"), None);
    }
}
