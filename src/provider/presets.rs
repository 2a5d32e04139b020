//! Built-in providers (base URL, key variable, wire format, cache-key
//! support) and resolving a provider name plus user overrides into a ready
//! `Provider`.
//!
//! Keys are read from environment variables at resolve time; errors name the
//! variable, never its value.

use super::client::{Endpoint, Provider, Wire};
use super::error::Error;

/// A provider cairn knows without configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub wire: Wire,
    pub base_url: &'static str,
    /// Variable that overrides `base_url` (the providers' own SDK convention).
    pub base_url_env: Option<&'static str>,
    pub api_key_env: Option<&'static str>,
    /// Without a key the provider is unusable (cloud); local servers do not need one.
    pub requires_key: bool,
    pub sends_prompt_cache_key: bool,
    pub uses_max_completion_tokens: bool,
    /// Sends its Responses-only models to `/responses` (see `Endpoint`).
    pub routes_to_responses: bool,
    /// Runs on the user's machine: free, and its window can be probed.
    pub is_local: bool,
}

const fn cloud(
    name: &'static str,
    wire: Wire,
    base_url: &'static str,
    key: &'static str,
) -> Preset {
    Preset {
        name,
        wire,
        base_url,
        base_url_env: None,
        api_key_env: Some(key),
        requires_key: true,
        sends_prompt_cache_key: false,
        uses_max_completion_tokens: false,
        routes_to_responses: false,
        is_local: false,
    }
}

const fn local(name: &'static str, base_url: &'static str) -> Preset {
    Preset {
        name,
        wire: Wire::OpenAi,
        base_url,
        base_url_env: None,
        api_key_env: None,
        requires_key: false,
        sends_prompt_cache_key: false,
        uses_max_completion_tokens: false,
        routes_to_responses: false,
        is_local: true,
    }
}

pub const PRESETS: &[Preset] = &[
    Preset {
        base_url_env: Some("ANTHROPIC_BASE_URL"),
        ..cloud(
            "anthropic",
            Wire::Anthropic,
            "https://api.anthropic.com",
            "ANTHROPIC_API_KEY",
        )
    },
    Preset {
        base_url_env: Some("OPENAI_BASE_URL"),
        sends_prompt_cache_key: true,
        uses_max_completion_tokens: true,
        routes_to_responses: true,
        ..cloud(
            "openai",
            Wire::OpenAi,
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
        )
    },
    Preset {
        sends_prompt_cache_key: true,
        ..cloud(
            "openrouter",
            Wire::OpenAi,
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
        )
    },
    cloud(
        "deepseek",
        Wire::OpenAi,
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    ),
    cloud(
        "groq",
        Wire::OpenAi,
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
    ),
    local("ollama", "http://localhost:11434/v1"),
    local("llamacpp", "http://localhost:8080/v1"),
    // vLLM only checks a key when started with --api-key.
    Preset {
        api_key_env: Some("VLLM_API_KEY"),
        ..local("vllm", "http://localhost:8000/v1")
    },
    local("lmstudio", "http://localhost:1234/v1"),
];

/// Every environment variable a preset reads its key from.
pub fn key_variables() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().filter_map(|preset| preset.api_key_env)
}

pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|preset| preset.name == name)
}

/// What the user's configuration changes about a provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderOverrides {
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// The key itself (`api_key` in config): used before any variable.
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub wire: Option<Wire>,
}

/// Resolves `name` (a preset, or any name when `base_url` and `wire` are
/// given) into a `Provider`, reading keys from the process environment.
///
/// # Errors
/// `Config`: unknown provider, key variable unset, invalid header.
pub fn resolve_provider(name: &str, overrides: &ProviderOverrides) -> Result<Provider, Error> {
    resolve_provider_with_env(name, overrides, |variable| std::env::var(variable).ok())
}

/// `resolve_provider` with the environment passed in (tests, config layers).
///
/// # Errors
/// As `resolve_provider`.
pub fn resolve_provider_with_env(
    name: &str,
    overrides: &ProviderOverrides,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Provider, Error> {
    let preset = match (preset(name), &overrides.base_url) {
        (Some(known), _) => *known,
        // A user's own OpenAI-compatible server: keyless unless told otherwise.
        (None, Some(_)) => local("custom", ""),
        (None, None) => {
            let names: Vec<&str> = PRESETS.iter().map(|preset| preset.name).collect();
            return Err(Error::config(format!(
                "unknown provider {name:?}: use one of {} or give it a base_url (and wire = \"openai\", \"responses\" or \"anthropic\")",
                names.join(", ")
            )));
        }
    };
    let env_value = |variable: &str| env(variable).filter(|value| !value.trim().is_empty());
    let base_url = overrides
        .base_url
        .clone()
        .or_else(|| preset.base_url_env.and_then(env_value))
        .unwrap_or_else(|| preset.base_url.to_owned());
    let key_variable = overrides.api_key_env.as_deref().or(preset.api_key_env);
    let inline_key = overrides
        .api_key
        .clone()
        .filter(|key| !key.trim().is_empty());
    let key_source = match (&inline_key, key_variable) {
        (Some(_), _) => Some(format!("api_key for provider {name} in the config")),
        (None, Some(variable)) => env_value(variable).map(|_| variable.to_string()),
        (None, None) => None,
    };
    let api_key = inline_key.or_else(|| key_variable.and_then(env_value));
    let key_required = preset.requires_key || overrides.api_key_env.is_some();
    if let (None, Some(variable), true) = (&api_key, key_variable, key_required) {
        return Err(Error::config(format!(
            "provider {name} needs an API key: set the environment variable {variable}"
        )));
    }
    let mut config = Endpoint::new(name, overrides.wire.unwrap_or(preset.wire), base_url);
    config.api_key = api_key;
    config.key_source = key_source;
    config.headers = overrides.headers.clone();
    config.sends_prompt_cache_key = preset.sends_prompt_cache_key;
    config.uses_max_completion_tokens = preset.uses_max_completion_tokens;
    // A wire the user chose is the wire used, for every model.
    config.routes_to_responses = preset.routes_to_responses && overrides.wire.is_none();
    Provider::new(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ErrorKind;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        |variable| {
            pairs
                .iter()
                .find(|(name, _)| *name == variable)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn anthropic_reads_key_and_base_url_from_the_environment() {
        let provider = resolve_provider_with_env(
            "anthropic",
            &ProviderOverrides::default(),
            env_of(&[
                ("ANTHROPIC_API_KEY", "sk-ant-xyz"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
            ]),
        )
        .unwrap();
        assert_eq!(provider.endpoint(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(provider.config().api_key.as_deref(), Some("sk-ant-xyz"));
        assert!(!format!("{provider:?}").contains("sk-ant-xyz"));
    }

    #[test]
    fn a_refused_key_is_traced_to_the_variable_or_config_it_came_from() {
        let refusal = || {
            crate::provider::Error::from_http(
                "openai",
                401,
                &reqwest::header::HeaderMap::new(),
                r#"{"error":{"message":"bad key"}}"#,
            )
        };
        let from_env = resolve_provider_with_env(
            "openai",
            &ProviderOverrides::default(),
            env_of(&[("OPENAI_API_KEY", "k")]),
        )
        .unwrap();
        let source = from_env.config().key_source.as_deref();
        assert_eq!(source, Some("OPENAI_API_KEY"));
        let message = refusal().naming_key_source(source).to_string();
        assert!(message.ends_with("; check OPENAI_API_KEY"), "{message}");
        let chosen = ProviderOverrides {
            api_key_env: Some("MY_KEY".into()),
            ..ProviderOverrides::default()
        };
        let from_own = resolve_provider_with_env(
            "openai",
            &chosen,
            env_of(&[("MY_KEY", "k"), ("OPENAI_API_KEY", "o")]),
        )
        .unwrap();
        assert_eq!(from_own.config().key_source.as_deref(), Some("MY_KEY"));
        let inline = ProviderOverrides {
            api_key: Some("k".into()),
            ..ProviderOverrides::default()
        };
        let from_config = resolve_provider_with_env("openai", &inline, env_of(&[])).unwrap();
        assert_eq!(
            from_config.config().key_source.as_deref(),
            Some("api_key for provider openai in the config")
        );
        let keyless = refusal().naming_key_source(None).to_string();
        assert!(keyless.contains("no API key was sent"), "{keyless}");
        let overloaded = crate::provider::Error::from_http(
            "openai",
            529,
            &reqwest::header::HeaderMap::new(),
            "",
        )
        .naming_key_source(Some("OPENAI_API_KEY"))
        .to_string();
        assert!(!overloaded.contains("OPENAI_API_KEY"), "{overloaded}");
    }

    #[test]
    fn missing_key_names_the_variable() {
        let error = resolve_provider_with_env("openai", &ProviderOverrides::default(), env_of(&[]))
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");
    }

    #[test]
    fn local_servers_need_no_key_and_custom_names_need_a_base_url() {
        let provider =
            resolve_provider_with_env("llamacpp", &ProviderOverrides::default(), env_of(&[]))
                .unwrap();
        assert_eq!(
            provider.endpoint(),
            "http://localhost:8080/v1/chat/completions"
        );
        assert_eq!(provider.config().api_key, None);

        let error = resolve_provider_with_env("mine", &ProviderOverrides::default(), env_of(&[]))
            .unwrap_err();
        assert!(
            error.to_string().contains("unknown provider \"mine\""),
            "{error}"
        );

        let overrides = ProviderOverrides {
            base_url: Some("http://10.0.0.2:9000/v1".into()),
            api_key_env: Some("MY_KEY".into()),
            headers: vec![("x-team".into(), "a".into())],
            wire: Some(Wire::OpenAi),
            ..ProviderOverrides::default()
        };
        let provider =
            resolve_provider_with_env("mine", &overrides, env_of(&[("MY_KEY", "k1")])).unwrap();
        assert_eq!(
            provider.endpoint(),
            "http://10.0.0.2:9000/v1/chat/completions"
        );
        assert_eq!(provider.config().api_key.as_deref(), Some("k1"));
        let error = resolve_provider_with_env("mine", &overrides, env_of(&[])).unwrap_err();
        assert!(error.to_string().contains("MY_KEY"), "{error}");
    }

    /// An inline `api_key` for a server of the user's own, with no
    /// `api_key_env`: it was silently never sent.
    #[test]
    fn an_inline_key_without_a_variable_is_used() {
        let overrides = ProviderOverrides {
            base_url: Some("http://10.0.0.2:9000/v1".into()),
            api_key: Some("inline-key-123".into()),
            wire: Some(Wire::OpenAi),
            ..ProviderOverrides::default()
        };
        let provider = resolve_provider_with_env("mine", &overrides, env_of(&[])).unwrap();
        assert_eq!(provider.config().api_key.as_deref(), Some("inline-key-123"));
    }
}
