//! The models `/model` offers: the default, the models named in the config,
//! every catalog model of each hosted provider whose key is set, and what
//! the local servers that answered reported; grouped by provider.
//!
//! One list for the TUI's picker and `cairn run "/model"`. Choosing does
//! not resolve anything: that is `models.rs`, when a prompt uses it.

use crate::config::Config;
use crate::message::ModelRef;
use crate::provider::discover::LocalServer;
use crate::provider::{catalog, presets};

/// One model `/model` can switch to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub model: ModelRef,
    /// Runs on this machine: a local preset, or reported by a local server.
    pub local: bool,
}

impl ModelChoice {
    /// `provider/model`, what `/model` takes.
    pub fn name(&self) -> String {
        self.model.to_string()
    }

    /// The name, marked `(local)` when it runs on this machine.
    pub fn label(&self) -> String {
        match self.local {
            true => format!("{}  (local)", self.model),
            false => self.model.to_string(),
        }
    }
}

/// Every choice, grouped by provider (groups in the order their first model
/// comes: the default's first, then configured, keyed, local), each model
/// once. `env` reads an environment variable (the process's in the binary).
pub fn choices(
    config: &Config,
    default: Option<&ModelRef>,
    servers: &[LocalServer],
    env: impl Fn(&str) -> Option<String>,
) -> Vec<ModelChoice> {
    let is_local_preset =
        |provider: &str| presets::preset(provider).is_some_and(|preset| preset.is_local);
    let choice = |model: ModelRef| ModelChoice {
        local: is_local_preset(&model.provider),
        model,
    };
    let mut found: Vec<ModelChoice> = default.cloned().map(choice).into_iter().collect();
    for (provider, settings) in &config.provider {
        found.extend(
            settings
                .models
                .keys()
                .map(|model| choice(ModelRef::new(provider.as_str(), model.as_str()))),
        );
    }
    for preset in presets::PRESETS {
        if has_key(config, preset.name, &env) {
            found.extend(
                catalog::served_by(preset.name)
                    .iter()
                    .map(|model| choice(ModelRef::new(preset.name, *model))),
            );
        }
    }
    for server in servers {
        found.extend(server.models.iter().map(|model| ModelChoice {
            model: ModelRef::new(server.flavour.provider(), model.as_str()),
            local: true,
        }));
    }
    grouped(found)
}

/// Whether a hosted preset can be used: its key is given in the config, or
/// its variable (the config's `api_key_env`, else the preset's) is set.
fn has_key(config: &Config, provider: &str, env: &impl Fn(&str) -> Option<String>) -> bool {
    let Some(preset) = presets::preset(provider).filter(|preset| preset.requires_key) else {
        return false;
    };
    let settings = config.provider.get(provider);
    if settings.is_some_and(|s| {
        s.api_key
            .as_deref()
            .is_some_and(|key| !key.trim().is_empty())
    }) {
        return true;
    }
    let variable = settings
        .and_then(|s| s.api_key_env.as_ref())
        .map(|v| v.as_str().to_string())
        .or_else(|| preset.api_key_env.map(str::to_string));
    variable
        .and_then(|variable| env(&variable))
        .is_some_and(|value| !value.trim().is_empty())
}

/// Stable grouping by provider, first occurrence wins; a model found again
/// as local (a server reporting a configured model) is marked local.
fn grouped(found: Vec<ModelChoice>) -> Vec<ModelChoice> {
    let mut providers: Vec<String> = Vec::new();
    for choice in &found {
        if !providers.contains(&choice.model.provider) {
            providers.push(choice.model.provider.clone());
        }
    }
    let mut out: Vec<ModelChoice> = Vec::with_capacity(found.len());
    for provider in providers {
        for choice in found.iter().filter(|c| c.model.provider == provider) {
            match out.iter_mut().find(|kept| kept.model == choice.model) {
                Some(kept) => kept.local |= choice.local,
                None => out.push(choice.clone()),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::discover::Flavour;

    fn names(choices: &[ModelChoice]) -> Vec<String> {
        choices.iter().map(ModelChoice::label).collect()
    }

    fn config(toml: &str) -> Config {
        toml::from_str(toml).expect("config")
    }

    #[test]
    fn keyed_providers_bring_their_catalog_and_unkeyed_ones_nothing() {
        let config = config("");
        let env = |name: &str| (name == "DEEPSEEK_API_KEY").then(|| "sk-1".to_string());
        let default = ModelRef::new("deepseek", "deepseek-chat");
        let found = choices(&config, Some(&default), &[], env);
        assert_eq!(
            names(&found),
            ["deepseek/deepseek-chat", "deepseek/deepseek-reasoner"]
        );
        // A blank variable is no key.
        let blank = |name: &str| (name == "OPENAI_API_KEY").then(|| " ".to_string());
        assert!(choices(&config, None, &[], blank).is_empty());
    }

    #[test]
    fn a_key_in_the_config_or_its_own_variable_counts() {
        let config = config(
            "[provider.deepseek]\napi_key = \"sk-inline\"\n\
             [provider.groq]\napi_key_env = \"MY_GROQ\"\n",
        );
        let env = |name: &str| (name == "MY_GROQ").then(|| "gsk".to_string());
        let found = names(&choices(&config, None, &[], env));
        assert!(found.contains(&"deepseek/deepseek-reasoner".to_string()));
        assert!(found.contains(&"groq/llama-3.3-70b-versatile".to_string()));
        // GROQ_API_KEY is not what this config reads.
        let wrong = |name: &str| (name == "GROQ_API_KEY").then(|| "gsk".to_string());
        let found = names(&choices(&config, None, &[], wrong));
        assert!(
            !found.iter().any(|name| name.starts_with("groq/")),
            "{found:?}"
        );
    }

    #[test]
    fn configured_and_local_models_are_grouped_and_local_ones_marked() {
        let config = config(
            "[provider.ollama.models.\"qwen3:8b\"]\ncontext = 8192\n\
             [provider.house]\nwire = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             [provider.house.models.big]\n",
        );
        let server = LocalServer {
            flavour: Flavour::Ollama,
            root: "http://127.0.0.1:11434".into(),
            models: vec!["llama3.1:8b".into(), "qwen3:8b".into()],
            context: None,
        };
        let default = ModelRef::new("house", "big");
        let found = choices(&config, Some(&default), &[server], |_| None);
        assert_eq!(
            names(&found),
            [
                "house/big",
                "ollama/qwen3:8b  (local)",
                "ollama/llama3.1:8b  (local)"
            ]
        );
    }
}
