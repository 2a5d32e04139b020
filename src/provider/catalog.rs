//! What cairn knows about models without asking: context and output limits,
//! prices per million tokens, and the cost of a step's usage. Local servers
//! are asked for their window (`probe_context`), since it is a launch flag.
//!
//! The table is a snapshot (late 2025 list prices); an unknown model gets
//! `None` and the caller falls back to configuration.

use std::time::Duration;

use serde_json::{Value, json};

use super::Usage;

/// Token limits of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The whole window: input plus output.
    pub context: u64,
    /// A separate cap on input, for models that have one (GPT-5: 272k of 400k).
    pub input: Option<u64>,
    pub output: u64,
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// The catalog key that matched (`claude-sonnet-4-5`).
    pub id: &'static str,
    pub limits: Limits,
    pub prices: Prices,
}

const fn model(
    id: &'static str,
    context: u64,
    input: Option<u64>,
    output: u64,
    prices: [f64; 4],
) -> ModelInfo {
    ModelInfo {
        id,
        limits: Limits {
            context,
            input,
            output,
        },
        prices: Prices {
            input: prices[0],
            output: prices[1],
            cache_read: prices[2],
            cache_write: prices[3],
        },
    }
}

/// Keys are matched after `normalize`, longest prefix first.
const MODELS: &[ModelInfo] = &[
    // Anthropic: cache writes (5-minute TTL) cost 1.25x input, reads 0.1x.
    model(
        "claude-opus-4-5",
        200_000,
        None,
        64_000,
        [5.0, 25.0, 0.5, 6.25],
    ),
    model(
        "claude-opus-4-1",
        200_000,
        None,
        32_000,
        [15.0, 75.0, 1.5, 18.75],
    ),
    model(
        "claude-opus-4",
        200_000,
        None,
        32_000,
        [15.0, 75.0, 1.5, 18.75],
    ),
    model(
        "claude-sonnet-4-5",
        200_000,
        None,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
    ),
    model(
        "claude-sonnet-4",
        200_000,
        None,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
    ),
    model(
        "claude-3-7-sonnet",
        200_000,
        None,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
    ),
    model(
        "claude-haiku-4-5",
        200_000,
        None,
        64_000,
        [1.0, 5.0, 0.1, 1.25],
    ),
    model(
        "claude-3-5-haiku",
        200_000,
        None,
        8_192,
        [0.8, 4.0, 0.08, 1.0],
    ),
    // OpenAI: cached input is discounted, cache writes are free.
    model(
        "gpt-5",
        400_000,
        Some(272_000),
        128_000,
        [1.25, 10.0, 0.125, 0.0],
    ),
    model(
        "gpt-5-mini",
        400_000,
        Some(272_000),
        128_000,
        [0.25, 2.0, 0.025, 0.0],
    ),
    model(
        "gpt-5-nano",
        400_000,
        Some(272_000),
        128_000,
        [0.05, 0.4, 0.005, 0.0],
    ),
    model(
        "gpt-5-codex",
        400_000,
        Some(272_000),
        128_000,
        [1.25, 10.0, 0.125, 0.0],
    ),
    model("gpt-4-1", 1_047_576, None, 32_768, [2.0, 8.0, 0.5, 0.0]),
    model(
        "gpt-4-1-mini",
        1_047_576,
        None,
        32_768,
        [0.4, 1.6, 0.1, 0.0],
    ),
    model(
        "gpt-4-1-nano",
        1_047_576,
        None,
        32_768,
        [0.1, 0.4, 0.025, 0.0],
    ),
    model("gpt-4o", 128_000, None, 16_384, [2.5, 10.0, 1.25, 0.0]),
    model(
        "gpt-4o-mini",
        128_000,
        None,
        16_384,
        [0.15, 0.6, 0.075, 0.0],
    ),
    model("o3", 200_000, None, 100_000, [2.0, 8.0, 0.5, 0.0]),
    model("o3-mini", 200_000, None, 100_000, [1.1, 4.4, 0.55, 0.0]),
    model("o4-mini", 200_000, None, 100_000, [1.1, 4.4, 0.275, 0.0]),
    // DeepSeek V3.2 prices (cache hit 0.028).
    model(
        "deepseek-chat",
        128_000,
        None,
        8_192,
        [0.28, 0.42, 0.028, 0.0],
    ),
    model(
        "deepseek-reasoner",
        128_000,
        None,
        64_000,
        [0.28, 0.42, 0.028, 0.0],
    ),
    // Open models: typical hosted prices; local servers are free (see `lookup`).
    model("qwen3-coder", 262_144, None, 65_536, [0.22, 0.95, 0.0, 0.0]),
    model("qwen3", 131_072, None, 32_768, [0.2, 0.6, 0.0, 0.0]),
    model("qwen2-5-coder", 32_768, None, 8_192, [0.1, 0.2, 0.0, 0.0]),
    model(
        "llama-3-3-70b",
        131_072,
        None,
        32_768,
        [0.59, 0.79, 0.0, 0.0],
    ),
    model("llama-3-1-8b", 131_072, None, 8_192, [0.05, 0.08, 0.0, 0.0]),
    model("llama3-3", 131_072, None, 32_768, [0.0, 0.0, 0.0, 0.0]),
    model("llama3-1", 131_072, None, 8_192, [0.0, 0.0, 0.0, 0.0]),
    model("gpt-oss-120b", 131_072, None, 32_768, [0.15, 0.6, 0.0, 0.0]),
    model("gpt-oss-20b", 131_072, None, 32_768, [0.075, 0.3, 0.0, 0.0]),
    model("kimi-k2", 262_144, None, 16_384, [0.6, 2.5, 0.15, 0.0]),
    model("glm-4-6", 200_000, None, 128_000, [0.6, 2.2, 0.11, 0.0]),
];

/// Lowercase, without a router prefix (`anthropic/`), with version dots as
/// dashes so `claude-sonnet-4.5` and `gpt-4.1` match their keys.
fn normalize(model_id: &str) -> String {
    let base = model_id.rsplit('/').next().unwrap_or(model_id);
    base.to_ascii_lowercase().replace('.', "-")
}

/// The catalog entry for `model_id`: the longest key that is the whole id or
/// a prefix followed by `-` or `:` (dated snapshots, Ollama tags).
pub fn lookup(model_id: &str) -> Option<ModelInfo> {
    let id = normalize(model_id);
    MODELS
        .iter()
        .filter(|info| {
            id.strip_prefix(info.id).is_some_and(|rest| {
                rest.is_empty() || rest.starts_with('-') || rest.starts_with(':')
            })
        })
        .max_by_key(|info| info.id.len())
        .copied()
}

/// The catalog's models each hosted preset serves, as its API names them,
/// for `/model` to offer once the provider's key is set. Every name is a
/// catalog entry (a test checks it), so limits and prices are known.
const SERVED: &[(&str, &[&str])] = &[
    (
        "anthropic",
        &[
            "claude-sonnet-4-5",
            "claude-opus-4-5",
            "claude-haiku-4-5",
            "claude-opus-4-1",
            "claude-sonnet-4-0",
            "claude-3-7-sonnet-latest",
            "claude-3-5-haiku-latest",
        ],
    ),
    (
        "openai",
        &[
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-5-codex",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-4.1-nano",
            "gpt-4o",
            "gpt-4o-mini",
            "o3",
            "o3-mini",
            "o4-mini",
        ],
    ),
    (
        "openrouter",
        &[
            "anthropic/claude-sonnet-4.5",
            "anthropic/claude-opus-4.5",
            "anthropic/claude-haiku-4.5",
            "openai/gpt-5",
            "openai/gpt-5-mini",
            "qwen/qwen3-coder",
            "moonshotai/kimi-k2",
            "z-ai/glm-4.6",
            "deepseek/deepseek-chat",
            "openai/gpt-oss-120b",
        ],
    ),
    ("deepseek", &["deepseek-chat", "deepseek-reasoner"]),
    (
        "groq",
        &[
            "openai/gpt-oss-120b",
            "openai/gpt-oss-20b",
            "moonshotai/kimi-k2-instruct",
            "llama-3.3-70b-versatile",
            "llama-3.1-8b-instant",
        ],
    ),
];

/// The catalog models `provider` (a preset name) serves; none for a
/// provider cairn has no list for (local servers are asked instead).
pub fn served_by(provider: &str) -> &'static [&'static str] {
    SERVED
        .iter()
        .find(|(name, _)| *name == provider)
        .map_or(&[], |(_, models)| *models)
}

/// OpenAI models served only by the Responses API: the codex family
/// (`gpt-5-codex`, `gpt-5.1-codex-max`, `codex-mini-latest`) and the `-pro`
/// reasoning models (`o1-pro`, `o3-pro`, `gpt-5-pro`).
pub fn needs_responses(model_id: &str) -> bool {
    let id = normalize(model_id);
    id.contains("codex") || (is_openai_reasoning(&id) && id.split('-').any(|word| word == "pro"))
}

/// OpenAI's reasoning models (the o-series, the gpt-5 family, codex): the
/// ones that accept a `reasoning` setting and stream reasoning summaries.
pub fn is_openai_reasoning(model_id: &str) -> bool {
    let id = normalize(model_id);
    let o_series = id.starts_with('o') && id[1..].starts_with(|c: char| c.is_ascii_digit());
    o_series || id.starts_with("gpt-5") || id.contains("codex")
}

/// `lookup`, priced at zero when the model runs on the user's own machine.
pub fn lookup_for(model_id: &str, is_local: bool) -> Option<ModelInfo> {
    lookup(model_id).map(|info| {
        if is_local {
            ModelInfo {
                prices: Prices::default(),
                ..info
            }
        } else {
            info
        }
    })
}

/// Dollars for one step. Reasoning is billed as output; cache reads and
/// writes at their own rates.
pub fn cost(usage: &Usage, prices: &Prices) -> f64 {
    let per_token = |count: u64, price: f64| count as f64 * price / 1_000_000.0;
    per_token(usage.input, prices.input)
        + per_token(usage.output + usage.reasoning, prices.output)
        + per_token(usage.cache_read, prices.cache_read)
        + per_token(usage.cache_write, prices.cache_write)
}

/// The window a local server really runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextProbe {
    pub context: u64,
    /// Set when the value is the fallback; the caller should show it.
    pub warning: Option<String>,
}

/// A probe must not hold up startup when the server is not running.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long the probe waits for a llama-server still loading its model (it
/// answers 503 until the model is in memory) before using the fallback: long
/// enough for a small model, short enough not to stall a first prompt much.
const LOADING_WAIT: Duration = Duration::from_secs(2);

/// The pause between two asks while the server loads.
const LOADING_RETRY: Duration = Duration::from_millis(200);

/// Asks a local server for its context size: llama-server `GET {root}/props`
/// (`default_generation_settings.n_ctx`; asked again for up to
/// [`LOADING_WAIT`] while it answers 503, loading), then Ollama
/// `POST {root}/api/show` (`num_ctx` parameter, else the model's trained
/// length). Falls back to `fallback` with a warning that says why.
pub async fn probe_context(base_url: &str, model_id: &str, fallback: u64) -> ContextProbe {
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let client = match reqwest::Client::builder().timeout(PROBE_TIMEOUT).build() {
        Ok(client) => client,
        Err(error) => return fallback_probe(fallback, &format!("cannot set up HTTP: {error}")),
    };
    let props = match llama_server_props(&client, root).await {
        Props::Answered(props) => Some(props),
        Props::Loading => {
            let why = format!(
                "the server at {root} was still loading its model (503) after {} s",
                LOADING_WAIT.as_secs()
            );
            return fallback_probe(fallback, &why);
        }
        Props::Other => None,
    };
    if let Some(n_ctx) = props.as_ref().and_then(llama_server_context) {
        return ContextProbe {
            context: n_ctx,
            warning: None,
        };
    }
    let show = get_json(
        client
            .post(format!("{root}/api/show"))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(json!({"model": model_id}).to_string()),
    )
    .await;
    if let Some(context) = show.as_ref().and_then(ollama_context) {
        return ContextProbe {
            context,
            warning: None,
        };
    }
    fallback_probe(
        fallback,
        &format!("{root} answered neither /props (llama-server) nor /api/show (Ollama)"),
    )
}

/// What `/props` gave.
enum Props {
    Answered(Value),
    /// 503 until [`LOADING_WAIT`] ran out.
    Loading,
    /// Anything else: not a llama-server, not running, not JSON.
    Other,
}

/// `GET {root}/props`, asked again every [`LOADING_RETRY`] while the server
/// answers 503 (loading), for at most [`LOADING_WAIT`].
async fn llama_server_props(client: &reqwest::Client, root: &str) -> Props {
    let deadline = tokio::time::Instant::now() + LOADING_WAIT;
    loop {
        let response = match client.get(format!("{root}/props")).send().await {
            Ok(response) => response,
            Err(_) => return Props::Other,
        };
        if response.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
            if tokio::time::Instant::now() + LOADING_RETRY > deadline {
                return Props::Loading;
            }
            tokio::time::sleep(LOADING_RETRY).await;
            continue;
        }
        if !response.status().is_success() {
            return Props::Other;
        }
        return match response
            .bytes()
            .await
            .map(|body| serde_json::from_slice(&body))
        {
            Ok(Ok(props)) => Props::Answered(props),
            _ => Props::Other,
        };
    }
}

fn fallback_probe(fallback: u64, why: &str) -> ContextProbe {
    ContextProbe {
        context: fallback,
        warning: Some(format!(
            "could not read the model's context size ({why}); assuming {fallback} tokens"
        )),
    }
}

async fn get_json(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = response.bytes().await.ok()?;
    serde_json::from_slice(&body).ok()
}

pub(crate) fn llama_server_context(props: &Value) -> Option<u64> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// Ollama serves `num_ctx` when the model file sets it; otherwise it runs
/// with its default window, not the trained length, but the trained length
/// is the best bound we can read.
pub(crate) fn ollama_context(show: &Value) -> Option<u64> {
    let from_parameters = show["parameters"].as_str().and_then(|parameters| {
        parameters.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
    });
    from_parameters.or_else(|| {
        show["model_info"]
            .as_object()?
            .iter()
            .find_map(|(key, value)| {
                key.ends_with(".context_length")
                    .then(|| value.as_u64())
                    .flatten()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_model_is_in_the_catalog_and_its_provider_is_a_preset() {
        for (provider, models) in SERVED {
            assert!(
                super::super::presets::preset(provider).is_some(),
                "{provider} is not a preset"
            );
            for model in *models {
                assert!(lookup(model).is_some(), "{provider}/{model} has no entry");
            }
        }
        assert!(served_by("anthropic").contains(&"claude-sonnet-4-5"));
        assert!(served_by("ollama").is_empty());
    }

    #[test]
    fn lookup_matches_snapshots_routers_and_tags() {
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            lookup("anthropic/claude-sonnet-4.5").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            lookup("claude-opus-4-1-20250805").unwrap().limits.output,
            32_000
        );
        assert_eq!(lookup("gpt-4o-mini-2024-07-18").unwrap().id, "gpt-4o-mini");
        assert_eq!(lookup("gpt-4.1").unwrap().limits.context, 1_047_576);
        assert_eq!(lookup("gpt-5").unwrap().limits.input, Some(272_000));
        assert_eq!(lookup("qwen3-coder:30b").unwrap().id, "qwen3-coder");
        assert_eq!(lookup("o3-pro-x"), lookup("o3"));
    }

    #[test]
    fn responses_only_models_are_the_codex_and_pro_ones() {
        for id in [
            "gpt-5-codex",
            "gpt-5.1-codex-max",
            "codex-mini-latest",
            "o3-pro",
            "openai/gpt-5-pro",
        ] {
            assert!(needs_responses(id), "{id}");
        }
        for id in [
            "gpt-5",
            "gpt-4o",
            "o3",
            "o4-mini",
            "qwen2.5-coder-pro",
            "llama-3-pro",
        ] {
            assert!(!needs_responses(id), "{id}");
        }
        assert!(is_openai_reasoning("o4-mini") && is_openai_reasoning("gpt-5.1"));
        assert!(!is_openai_reasoning("gpt-4o") && !is_openai_reasoning("ollama"));
        assert_eq!(lookup("gpt-4"), None);
        assert_eq!(lookup("mystery-model"), None);
        assert_eq!(
            lookup_for("qwen3-coder", true).unwrap().prices,
            Prices::default()
        );
    }

    #[test]
    fn cost_prices_cache_and_reasoning_separately() {
        let prices = lookup("claude-sonnet-4-5").unwrap().prices;
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            reasoning: 100_000,
            cache_read: 2_000_000,
            cache_write: 1_000_000,
        };
        // 3 + 0.2 * 15 + 2 * 0.3 + 3.75
        assert!(
            (cost(&usage, &prices) - 10.35).abs() < 1e-9,
            "{}",
            cost(&usage, &prices)
        );
    }

    #[test]
    fn server_answers_are_read() {
        let props = json!({"default_generation_settings": {"n_ctx": 2048}});
        assert_eq!(llama_server_context(&props), Some(2048));
        let show = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192", "model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_context(&show), Some(8192));
        let show = json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_context(&show), Some(32768));
    }
}
