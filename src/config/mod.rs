//! TOML configuration: the typed `Config`, its defaults, and loading it from
//! defaults, files, environment and flags with a record of where each value came from.
//!
//! Defaults live here and in `config.example.toml` (a test keeps them equal).
//! This module reads config files and environment only; it never writes files
//! and never decides behaviour: the session, tools and TUI read the values.

pub mod claude_settings;
mod error;
pub mod hooks;
mod instruction_paths;
mod load;
mod locate;
pub mod mcp;
pub mod permission;
mod project;
mod render;
mod value;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use error::Error;
pub use load::{LoadOptions, Loaded, Origin, Overrides, Trust, load};
pub use permission::PermissionConfig;
pub use project::quote_arg;
pub use value::{Fraction, ModelRef, NonEmpty};

/// Default number of lines a tool result keeps before it is truncated.
pub const DEFAULT_TOOL_OUTPUT_MAX_LINES: usize = 2000;
/// Default number of bytes a tool result keeps (50 KiB, OpenCode's limit).
pub const DEFAULT_TOOL_OUTPUT_MAX_BYTES: usize = 51_200;
/// Default shell command timeout: two minutes, like OpenCode.
pub const DEFAULT_BASH_TIMEOUT_MS: u64 = 120_000;

/// The whole configuration after merging every source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The main model, `provider/model`. None: the user must pick one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// A cheaper model for titles and other small jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub small_model: Option<ModelRef>,
    /// The agent a new session starts with.
    pub default_agent: NonEmpty,
    /// Extra instruction files (paths or globs) added to the system prompt.
    pub instructions: Vec<String>,
    /// Skip every permission question (allow all). Also `--yolo`.
    pub yolo: bool,
    pub compaction: CompactionConfig,
    pub tool_output: ToolOutputConfig,
    pub bash: BashConfig,
    pub sandbox: SandboxConfig,
    pub doom_loop: DoomLoopConfig,
    pub permission: PermissionConfig,
    pub agent: BTreeMap<String, AgentConfig>,
    pub provider: BTreeMap<String, ProviderConfig>,
    pub tui: TuiConfig,
    pub log: LogConfig,
    pub snapshot: SnapshotConfig,
    pub task: TaskConfig,
    /// `[mcp.NAME]`: MCP servers to start in the background.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, mcp::ServerConfig>,
    /// `[[hooks.EVENT]]`: commands run at the session's events, in Claude
    /// Code's shape (see `crate::hook`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub hooks: hooks::HookTable,
    /// An untrusted project file's `ask`/`deny` permission entries: they
    /// only make answers stricter (never written in a file).
    #[serde(skip)]
    pub restrictions: PermissionConfig,
    /// Which of the project's risky settings apply; read again for the
    /// project's `.mcp.json`, `opencode.json` and agent files.
    #[serde(skip)]
    pub trust: Trust,
    /// The project file's MCP servers that do not start, for `/mcp`.
    #[serde(skip)]
    pub held_mcp: Vec<mcp::Held>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            model: None,
            small_model: None,
            default_agent: NonEmpty::new("build").expect("a literal non-empty name"),
            instructions: Vec::new(),
            yolo: false,
            compaction: CompactionConfig::default(),
            tool_output: ToolOutputConfig::default(),
            bash: BashConfig::default(),
            sandbox: SandboxConfig::default(),
            doom_loop: DoomLoopConfig::default(),
            permission: PermissionConfig::new(),
            agent: BTreeMap::new(),
            provider: BTreeMap::new(),
            tui: TuiConfig::default(),
            log: LogConfig::default(),
            snapshot: SnapshotConfig::default(),
            task: TaskConfig::default(),
            mcp: BTreeMap::new(),
            hooks: BTreeMap::new(),
            restrictions: PermissionConfig::new(),
            trust: Trust::default(),
            held_mcp: Vec::new(),
        }
    }
}

/// `[compaction]`: when and how the context window is summarised and pruned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionConfig {
    /// Compact automatically when the window fills up.
    pub auto: bool,
    /// Clear old tool outputs after each loop.
    pub prune: bool,
    /// Tokens kept free for the answer. None: min(20000, the model's max output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved: Option<u64>,
    /// Fraction of the usable window at which compaction triggers.
    pub threshold: Fraction,
    /// Recent user turns kept verbatim after a summary.
    pub tail_turns: u32,
    /// Tokens of recent history kept verbatim. None: derived from the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preserve_recent_tokens: Option<u64>,
    /// Model used to write summaries. None: the session's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Windows smaller than this many tokens get the lean prompt: a short
    /// system prompt and environment block, one-line tool descriptions, no
    /// todowrite. 0 never uses it.
    pub lean_prompt_below: u64,
}

/// `compaction.lean_prompt_below` by default: 8k and 4k windows are lean; a
/// 16k window still has room for the full prompt (~2,400 tokens, 17%).
pub const LEAN_PROMPT_BELOW: u64 = 16_384;

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            auto: true,
            prune: true,
            reserved: None,
            threshold: Fraction::ONE,
            tail_turns: 2,
            preserve_recent_tokens: None,
            model: None,
            lean_prompt_below: LEAN_PROMPT_BELOW,
        }
    }
}

/// `[snapshot]`: the private snapshots of the working tree behind `/undo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnapshotConfig {
    /// Snapshot the working tree around every step (needs `git` on PATH).
    pub enabled: bool,
    /// Files bigger than this are left out of snapshots (and of `/undo`).
    pub max_file_bytes: u64,
    /// Snapshot objects older than this many days are collected at start-up.
    pub max_age_days: u32,
}

/// Files bigger than this are left out of snapshots unless configured
/// (`[snapshot] max_file_bytes`).
pub const DEFAULT_SNAPSHOT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

impl Default for SnapshotConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_bytes: DEFAULT_SNAPSHOT_MAX_FILE_BYTES,
            max_age_days: 7,
        }
    }
}

/// `[tool_output]`: the truncation limits for one tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolOutputConfig {
    #[serde(deserialize_with = "value::positive")]
    pub max_lines: usize,
    #[serde(deserialize_with = "value::positive")]
    pub max_bytes: usize,
}

impl Default for ToolOutputConfig {
    fn default() -> Self {
        Self {
            max_lines: DEFAULT_TOOL_OUTPUT_MAX_LINES,
            max_bytes: DEFAULT_TOOL_OUTPUT_MAX_BYTES,
        }
    }
}

/// `[bash]`: the shell tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BashConfig {
    #[serde(deserialize_with = "value::positive")]
    pub timeout_ms: u64,
}

impl Default for BashConfig {
    fn default() -> Self {
        Self {
            timeout_ms: DEFAULT_BASH_TIMEOUT_MS,
        }
    }
}

/// `[sandbox]`: what every `bash` command may write, read and connect to,
/// enforced by the kernel (see `crate::sandbox`). From a project file the
/// whole table waits for trust: it can only loosen what the user chose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `workspace-write`, `read-only` or `off`. Also `--sandbox MODE`.
    pub mode: SandboxMode,
    /// Commands may open network connections (loopback included).
    pub network: bool,
    /// More directories commands may write under (`~/` expands).
    pub writable_roots: Vec<String>,
    /// More paths commands may not read, added to the built-in list.
    pub deny_read: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            writable_roots: Vec::new(),
            deny_read: Vec::new(),
        }
    }
}

/// How far a command's writes reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// The project, the temp directory and `writable_roots`; never the files
    /// that decide what runs later (`.git/hooks`, `.git/config`, cairn's and
    /// the peers' project config).
    WorkspaceWrite,
    /// The temp directory only.
    ReadOnly,
    /// No confinement at all: the user's explicit choice.
    Off,
}

impl SandboxMode {
    /// Every mode, by its config name.
    pub const ALL: [(&'static str, SandboxMode); 3] = [
        ("workspace-write", SandboxMode::WorkspaceWrite),
        ("read-only", SandboxMode::ReadOnly),
        ("off", SandboxMode::Off),
    ];

    /// The config name of this mode.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, mode)| *mode == self)
            .map_or("workspace-write", |(name, _)| name)
    }

    /// The mode named `text`, as `--sandbox` takes it.
    pub fn parse(text: &str) -> Option<SandboxMode> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, mode)| *mode)
    }
}

/// `[doom_loop]`: identical tool calls in a row before asking, and before stopping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DoomLoopConfig {
    #[serde(deserialize_with = "value::positive")]
    pub threshold: u32,
    #[serde(deserialize_with = "value::positive")]
    pub hard_stop: u32,
}

impl Default for DoomLoopConfig {
    fn default() -> Self {
        Self {
            threshold: 3,
            hard_stop: 10,
        }
    }
}

/// `[task]`: subagents started by the `task` tool (and `@agent` mentions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TaskConfig {
    /// `task` calls of one step that run at once; the rest wait for a slot.
    #[serde(deserialize_with = "value::positive")]
    pub max_concurrency: usize,
    /// Levels of subagents below a top-level session: 1 lets a session start
    /// children that cannot start their own; 0 turns subagents off.
    pub max_depth: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            max_concurrency: 4,
            max_depth: 1,
        }
    }
}

/// `[agent.NAME]`: overrides for one agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Maximum loop steps before the agent must stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The agent's system prompt; replaces the base prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`/chat/completions`) and compatible servers.
    #[serde(alias = "openai-compatible")]
    OpenAi,
    /// OpenAI Responses (`/responses`): OpenAI's newest coding models.
    Responses,
}

/// `[provider.NAME]`: how to reach one provider.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// Optional for the built-in names `anthropic` and `openai`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<Wire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<NonEmpty>,
    /// The NAME of the environment variable holding the key, never the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<NonEmpty>,
    /// The key itself. Discouraged: loading warns when the file is readable by others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub models: BTreeMap<String, ModelConfig>,
}

/// `[provider.NAME.models."MODEL"]`: limits and prices (per million tokens).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Context window in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// Input limit in tokens, when the provider states one apart from the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Maximum output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_input: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_output: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_cache_read: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_cache_write: Option<f64>,
}

/// `[tui]`: the terminal UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TuiConfig {
    pub mouse: bool,
    /// Notify (OSC 9 / OSC 777 / bell) when a long turn ends or an ask
    /// waits while the terminal is not focused.
    pub notify: bool,
    /// What counts as a long turn, in seconds.
    pub notify_after_secs: u64,
}

impl Default for TuiConfig {
    fn default() -> Self {
        Self {
            mouse: true,
            notify: true,
            notify_after_secs: 10,
        }
    }
}

/// `[log]`: the log file in the data directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A level (`error` .. `trace`) or a tracing filter (`info,cairn::provider=debug`).
    pub level: NonEmpty,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: NonEmpty::new("info").expect("a literal non-empty level"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example file documents every key; parsing it keeps it honest.
    const EXAMPLE: &str = include_str!("../../config.example.toml");

    #[test]
    fn example_file_parses_and_states_the_defaults() {
        let example: Config = toml::from_str(EXAMPLE).expect("config.example.toml must parse");
        let defaults = Config::default();
        // Everything the example sets outside the sample tables is a default.
        assert_eq!(example.default_agent, defaults.default_agent);
        assert_eq!(example.instructions, defaults.instructions);
        assert_eq!(example.yolo, defaults.yolo);
        assert_eq!(example.compaction, defaults.compaction);
        assert_eq!(example.tool_output, defaults.tool_output);
        assert_eq!(example.bash, defaults.bash);
        assert_eq!(example.sandbox, defaults.sandbox);
        assert_eq!(example.doom_loop, defaults.doom_loop);
        assert_eq!(example.task, defaults.task);
        assert_eq!(example.tui, defaults.tui);
        assert_eq!(example.log, defaults.log);
    }

    #[test]
    fn example_file_mentions_every_key() {
        let defaults = toml::Table::try_from(Config::default()).expect("defaults serialize");
        for (table, value) in &defaults {
            assert!(
                EXAMPLE.contains(&format!("{table} =")) || EXAMPLE.contains(&format!("[{table}")),
                "config.example.toml does not mention `{table}`"
            );
            if let toml::Value::Table(keys) = value {
                for key in keys.keys() {
                    assert!(
                        EXAMPLE.contains(&format!("{key} =")),
                        "config.example.toml does not mention `{table}.{key}`"
                    );
                }
            }
        }
        let optional = [
            "model",
            "small_model",
            "reserved",
            "preserve_recent_tokens",
            "steps",
            "temperature",
            "prompt",
            "wire",
            "base_url",
            "api_key_env",
            "api_key",
            "headers",
            "context",
            "input",
            "output",
            "price_input",
            "price_output",
            "price_cache_read",
            "price_cache_write",
        ];
        for key in optional {
            assert!(
                EXAMPLE.contains(&format!("{key} =")),
                "config.example.toml does not mention `{key}`"
            );
        }
    }

    /// The commented-out samples must parse too: uncomment every line that
    /// looks like a key or a table header and load the result.
    #[test]
    fn example_file_samples_parse_when_uncommented() {
        let sample_line =
            regex::Regex::new(r#"^# (\[|"[^"]*" = |[A-Za-z_]\w* = )"#).expect("valid regex");
        let uncommented: String = EXAMPLE
            .lines()
            .map(|line| {
                if sample_line.is_match(line) {
                    &line[2..]
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let parsed: Config = toml::from_str(&uncommented).unwrap_or_else(|error| {
            panic!("uncommented samples do not parse: {error}\n{uncommented}")
        });
        assert_eq!(
            parsed.model.map(|m| m.to_string()).as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(parsed.compaction.reserved, Some(20_000));
        assert_eq!(parsed.agent["build"].steps, Some(50));
        let local = &parsed.provider["local"];
        assert_eq!(local.wire, Some(Wire::OpenAi));
        assert_eq!(local.models["qwen3-coder"].context, Some(32_768));
        assert_eq!(local.models["qwen3-coder"].price_cache_write, Some(0.0));
        assert!(matches!(
            parsed.permission.get("bash"),
            Some(permission::PermissionSetting::Patterns(patterns)) if patterns.len() == 3
        ));
    }

    #[test]
    fn empty_file_gives_the_defaults() {
        let parsed: Config = toml::from_str("").expect("empty file is valid");
        assert_eq!(parsed, Config::default());
    }
}
