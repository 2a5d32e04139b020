//! Model resolution: `provider/model` -> a client, limits and prices.
//!
//! Combines the `[provider.NAME]` config tables, the built-in presets and the
//! model catalog; per-model config overrides win over the catalog. A local
//! server the catalog does not know is asked for its real window (llama-server
//! `/props`, Ollama `/api/show`); failing that, a stated default is used and
//! the user is warned once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{self, ProviderConfig};
use crate::message::ModelRef;
use crate::provider::catalog::{self, Limits, Prices};
use crate::provider::discover::LocalServer;
use crate::provider::{ProviderOverrides, presets};
use crate::session::ctx::{ModelSource, ResolvedModel};

/// The window assumed for a local model whose server did not say.
const LOCAL_FALLBACK_CONTEXT: u64 = 32_768;
/// Limits assumed for a hosted model the catalog does not know.
const UNKNOWN_MODEL_LIMITS: Limits = Limits {
    context: 128_000,
    input: None,
    output: 16_384,
};

pub struct ConfiguredModels {
    /// The config's tables, plus where local servers found later answer.
    providers: std::sync::Mutex<BTreeMap<String, ProviderConfig>>,
    resolved: tokio::sync::Mutex<HashMap<ModelRef, Arc<ResolvedModel>>>,
}

impl ConfiguredModels {
    pub fn new(config: &config::Config) -> Self {
        Self {
            providers: std::sync::Mutex::new(config.provider.clone()),
            resolved: Default::default(),
        }
    }
}

#[async_trait::async_trait]
impl ModelSource for ConfiguredModels {
    async fn resolve(&self, model: &ModelRef) -> Result<Arc<ResolvedModel>, String> {
        let mut resolved = self.resolved.lock().await;
        if let Some(found) = resolved.get(model) {
            return Ok(found.clone());
        }
        let found = Arc::new(self.build(model).await?);
        resolved.insert(model.clone(), found.clone());
        Ok(found)
    }

    /// A local preset the config does not point anywhere is reached at the
    /// server found for it (which may listen on another port).
    fn learn_local(&self, servers: &[LocalServer]) {
        let mut providers = crate::shared::lock(&self.providers);
        for server in servers {
            let settings = providers
                .entry(server.flavour.provider().to_string())
                .or_default();
            if settings.base_url.is_none() {
                serve_from(settings, server);
                // Nothing resolved before is kept with the old URL.
                if let Ok(mut resolved) = self.resolved.try_lock() {
                    resolved.retain(|model, _| model.provider != server.flavour.provider());
                }
            }
        }
    }
}

/// Points a provider's table at `server`: its URL, and the window it
/// reported for its first model (the one it has loaded).
pub fn serve_from(settings: &mut ProviderConfig, server: &LocalServer) {
    settings.base_url = config::NonEmpty::new(server.base_url()).ok();
    if let (Some(context), Some(first)) = (server.context, server.models.first()) {
        let model = settings.models.entry(first.clone()).or_default();
        model.context.get_or_insert(context);
        // A catalog model's output limit is for its full trained window;
        // within the smaller window the server runs, keep room for input
        // (the same share the context probe of a local model leaves).
        model.output.get_or_insert((context / 4).max(1));
    }
}

impl ConfiguredModels {
    async fn build(&self, model: &ModelRef) -> Result<ResolvedModel, String> {
        let custom = crate::shared::lock(&self.providers)
            .get(&model.provider)
            .cloned()
            .unwrap_or_default();
        let overrides = ProviderOverrides {
            base_url: custom.base_url.as_ref().map(|u| u.as_str().to_string()),
            api_key_env: custom.api_key_env.as_ref().map(|v| v.as_str().to_string()),
            api_key: custom.api_key.clone(),
            headers: custom
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            wire: custom.wire,
        };
        let provider = presets::resolve_provider(&model.provider, &overrides)
            .map_err(|error| format!("cannot use model {model}: {error}"))?;
        let local_preset = presets::preset(&model.provider).is_some_and(|p| p.is_local);
        let is_local = local_preset
            || crate::shared::reach(&provider.config().base_url)
                == crate::shared::Reach::ThisMachine;
        // Prices follow who serves the model, not where the URL points: a
        // localhost proxy to a paid API still bills. Only the local
        // presets (the user's own server) are free.
        let known = catalog::lookup_for(&model.model, local_preset);
        let overridden = custom.models.get(&model.model);
        let mut warning = None;
        let mut limits = known.map(|info| info.limits);
        if limits.is_none() && overridden.and_then(|m| m.context).is_none() {
            if is_local {
                let probe = catalog::probe_context(
                    &provider.config().base_url,
                    &model.model,
                    LOCAL_FALLBACK_CONTEXT,
                )
                .await;
                warning = probe
                    .warning
                    .map(|why| format!("{why}; if that is wrong, {}", context_advice(model)));
                limits = Some(Limits {
                    context: probe.context,
                    input: None,
                    output: (probe.context / 4).max(1),
                });
            } else {
                warning = Some(format!(
                    "model {model} is not in cairn's catalog: assuming a {}-token window; {}",
                    UNKNOWN_MODEL_LIMITS.context,
                    context_advice(model)
                ));
            }
        }
        let mut limits = limits.unwrap_or(UNKNOWN_MODEL_LIMITS);
        let mut prices = known.map(|info| info.prices).unwrap_or_default();
        if let Some(custom) = overridden {
            limits.context = custom.context.unwrap_or(limits.context);
            limits.input = custom.input.or(limits.input);
            limits.output = custom.output.unwrap_or(limits.output);
            prices = Prices {
                input: custom.price_input.unwrap_or(prices.input),
                output: custom.price_output.unwrap_or(prices.output),
                cache_read: custom.price_cache_read.unwrap_or(prices.cache_read),
                cache_write: custom.price_cache_write.unwrap_or(prices.cache_write),
            };
        }
        if let Some(warning) = &warning {
            tracing::warn!(%model, %warning, "model limits fall back to a default");
        }
        Ok(ResolvedModel {
            model: model.clone(),
            provider: Arc::new(provider),
            limits,
            prices: Some(prices),
            warning,
            warned: AtomicBool::new(false),
        })
    }
}

/// How to state `model`'s window in the config: the table and key exactly
/// as `cairn.toml` spells them, so the advice can be pasted.
fn context_advice(model: &ModelRef) -> String {
    format!(
        "set the window in cairn.toml: [provider.{}.models.\"{}\"] context = TOKENS",
        model.provider, model.model
    )
}

impl ResolvedModel {
    /// The fallback warning, the first time it is asked for.
    pub fn take_warning(&self) -> Option<&str> {
        match &self.warning {
            Some(warning) if !self.warned.swap(true, Ordering::Relaxed) => Some(warning),
            _ => None,
        }
    }
}

/// The model to use when neither config nor flags name one: whichever
/// provider has a key in the environment.
pub fn default_model_from_env() -> Option<ModelRef> {
    let has = |variable: &str| std::env::var(variable).is_ok_and(|v| !v.trim().is_empty());
    if has("ANTHROPIC_API_KEY") {
        Some(ModelRef::new("anthropic", "claude-sonnet-4-5"))
    } else if has("OPENAI_API_KEY") {
        Some(ModelRef::new("openai", "gpt-5"))
    } else if has("OPENROUTER_API_KEY") {
        Some(ModelRef::new("openrouter", "anthropic/claude-sonnet-4.5"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn prices_of(provider: &str, base_url: &str, model: &str) -> Prices {
        let mut config = config::Config::default();
        let settings = config::ProviderConfig {
            wire: Some(config::Wire::OpenAi),
            base_url: Some(config::NonEmpty::new(base_url).expect("url")),
            ..Default::default()
        };
        config.provider.insert(provider.into(), settings);
        let resolved = ConfiguredModels::new(&config)
            .resolve(&ModelRef::new(provider, model))
            .await
            .expect("resolve");
        resolved.prices.expect("catalog prices")
    }

    #[tokio::test]
    async fn a_localhost_proxy_to_a_paid_model_is_priced_a_local_server_is_free() {
        let proxied = prices_of("proxy", "http://127.0.0.1:9/v1", "claude-sonnet-4-5").await;
        assert_eq!(
            proxied,
            catalog::lookup("claude-sonnet-4-5").expect("known").prices
        );
        assert!(proxied.input > 0.0);
        let local = prices_of("ollama", "http://127.0.0.1:9/v1", "qwen3-coder:30b").await;
        assert_eq!(local, Prices::default());
    }

    #[tokio::test]
    async fn the_window_warning_names_a_key_the_config_accepts() {
        let mut config = config::Config::default();
        let provider = config::ProviderConfig {
            wire: Some(config::Wire::OpenAi),
            // Nothing listens on the discard port: the probe fails.
            base_url: Some(config::NonEmpty::new("http://127.0.0.1:9/v1").expect("url")),
            ..Default::default()
        };
        config.provider.insert("local".into(), provider);
        let model = ModelRef::new("local", "house-model-7b");
        let resolved = ConfiguredModels::new(&config)
            .resolve(&model)
            .await
            .expect("resolve");
        let warning = resolved.take_warning().expect("a fallback warning");
        assert!(!warning.contains("limit.context"), "{warning}");
        let advice = warning
            .split("cairn.toml: ")
            .nth(1)
            .expect("the advice names the config file");
        let (table, key) = advice.split_once(' ').expect("table then key");
        let pasted = format!("{table}\n{}", key.replace("TOKENS", "8192"));
        let parsed: config::Config = toml::from_str(&pasted)
            .unwrap_or_else(|error| panic!("{pasted:?} does not parse: {error}"));
        assert_eq!(
            parsed.provider["local"].models["house-model-7b"].context,
            Some(8192)
        );
    }
}
