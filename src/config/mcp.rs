//! Which MCP servers to start: cairn's own `[mcp.NAME]` tables, plus the
//! servers users already configured for Claude Code (`.mcp.json`,
//! `~/.claude.json` project entries) and OpenCode (`opencode.json` `mcp`),
//! read unchanged. `${VAR}` references are expanded from the environment
//! here so secrets stay out of config files. Also the [`State`] a server is
//! in, as a held-back one is reported before any server runs. `mcp`
//! re-exports all of it (`crate::mcp::config`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Seconds a server has to start, and a call to answer, unless configured.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Starting,
    Ready,
    Failed,
    Disabled,
    /// A repository's server the user has not trusted: never started.
    Untrusted,
    /// A repository's server named like one of the user's: never started.
    Shadowed,
}

impl State {
    pub fn label(&self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Failed => "failed",
            State::Disabled => "disabled",
            State::Untrusted => "not trusted",
            State::Shadowed => "shadowed",
        }
    }
}

/// `[mcp.NAME]`: one server, local (`command`) or remote (`url`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// The program to run (stdio transport).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A streamable-HTTP endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// Absent means enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Seconds for start-up and for each call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Run a stdio server in the same sandbox as commands (`[sandbox]`).
    /// Off by default: servers often need their own caches and the network.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
}

impl ServerConfig {
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1))
    }

    /// A copy with every `${VAR}` in command, args, env, cwd, url and headers
    /// replaced by `lookup(VAR)` (empty when unset, as a shell would).
    pub fn expanded(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let one = |text: &String| expand(text, lookup);
        Self {
            command: self.command.as_ref().map(one),
            args: self.args.iter().map(one).collect(),
            env: self.env.iter().map(|(k, v)| (k.clone(), one(v))).collect(),
            cwd: self.cwd.as_ref().map(one),
            url: self.url.as_ref().map(one),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), one(v)))
                .collect(),
            enabled: self.enabled,
            timeout: self.timeout,
            sandbox: self.sandbox,
        }
    }
}

/// Replaces `${NAME}` and `${NAME:-default}` (Claude Code's and cairn's
/// spelling), then OpenCode's `{env:NAME}` and `{file:PATH}` (the file's
/// text, trimmed, as OpenCode reads it; PATH is absolute by then, see
/// [`anchor_files`]); anything else is kept as is.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    expand_opencode(&expand_dollar(text, lookup), lookup)
}

fn expand_dollar(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let value = lookup(name)
            .filter(|value| !value.is_empty())
            .or(default.map(str::to_string))
            .unwrap_or_default();
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// OpenCode's `{env:NAME}` (empty when unset, as OpenCode does) and
/// `{file:PATH}` (empty when unreadable, with a warning in the log).
fn expand_opencode(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = [("{env:", true), ("{file:", false)]
            .into_iter()
            .filter_map(|(open, is_env)| rest.find(open).map(|at| (at, open, is_env)))
            .min_by_key(|(at, _, _)| *at);
        let Some((start, open, is_env)) = next else {
            break;
        };
        let after = &rest[start + open.len()..];
        let Some(end) = after.find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &after[..end];
        if is_env {
            out.push_str(&lookup(inner).unwrap_or_default());
        } else {
            match std::fs::read_to_string(home_relative(inner, lookup)) {
                Ok(text) => out.push_str(text.trim()),
                Err(error) => tracing::warn!("{{file:{inner}}}: {error}"),
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `~/x` under `$HOME`; anything else as written.
fn home_relative(path: &str, lookup: &dyn Fn(&str) -> Option<String>) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), lookup("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// Every relative `{file:PATH}` in `value`'s strings made absolute against
/// `dir`, the directory of the file it was written in (OpenCode resolves it
/// there). Done when the file is read, so the trust record shows the path,
/// never the file's text.
fn anchor_files(value: &Value, dir: &Path) -> Value {
    match value {
        Value::String(text) => {
            let mut out = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(start) = rest.find("{file:") {
                let (head, tail) = rest.split_at(start + "{file:".len());
                out.push_str(head);
                let relative = !tail.starts_with('/') && !tail.starts_with("~/");
                if relative {
                    out.push_str(&format!("{}/", dir.display()));
                }
                rest = tail;
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| anchor_files(v, dir)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), anchor_files(v, dir)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Claude Code's entry (`.mcp.json` `mcpServers`, `~/.claude.json`
/// `projects.<dir>.mcpServers`): `type` is `stdio`, `http` or `sse`.
fn from_claude(entry: &Value) -> Option<ServerConfig> {
    let strings = |key: &str| -> BTreeMap<String, String> {
        entry
            .get(key)
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let config = ServerConfig {
        command: entry
            .get("command")
            .and_then(Value::as_str)
            .map(str::to_string),
        args: string_list(entry.get("args")),
        env: strings("env"),
        cwd: entry.get("cwd").and_then(Value::as_str).map(str::to_string),
        url: entry.get("url").and_then(Value::as_str).map(str::to_string),
        headers: strings("headers"),
        enabled: entry.get("disabled").and_then(Value::as_bool).map(|d| !d),
        timeout: None,
        sandbox: false,
    };
    (config.command.is_some() || config.url.is_some()).then_some(config)
}

/// OpenCode's entry: `type` `local` with `command` as one array, or `remote`
/// with `url`; `environment`, `enabled`, `timeout` in milliseconds. `dir` is
/// the file's directory, for relative `{file:…}` references.
///
/// # Errors
/// A `command` given as one string: OpenCode itself refuses it, and
/// splitting it on spaces would guess at the user's quoting, so it is said
/// (in `/mcp`, on stderr in `cairn run`) instead of silently dropped.
fn from_opencode(entry: &Value, dir: &Path) -> Result<Option<ServerConfig>, String> {
    if let Some(line) = entry.get("command").and_then(Value::as_str) {
        return Err(format!(
            "`command` is one string ({line:?}); OpenCode's format wants an array, \
             e.g. [\"npx\", \"-y\", \"server\"]"
        ));
    }
    let entry = &anchor_files(entry, dir);
    let mut command = string_list(entry.get("command"));
    let program = (!command.is_empty()).then(|| command.remove(0));
    let map = |key: &str| -> BTreeMap<String, String> {
        entry
            .get(key)
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let config = ServerConfig {
        command: program,
        args: command,
        env: map("environment"),
        cwd: None,
        url: entry.get("url").and_then(Value::as_str).map(str::to_string),
        headers: map("headers"),
        enabled: entry.get("enabled").and_then(Value::as_bool),
        timeout: entry
            .get("timeout")
            .and_then(Value::as_u64)
            .map(|ms| ms.div_ceil(1000)),
        sandbox: false,
    };
    Ok((config.command.is_some() || config.url.is_some()).then_some(config))
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(value) => Some(value),
        Err(error) => {
            tracing::warn!("ignoring {}: {error}", path.display());
            None
        }
    }
}

fn claude_servers(value: Option<&Value>, into: &mut BTreeMap<String, ServerConfig>) {
    let Some(servers) = value.and_then(Value::as_object) else {
        return;
    };
    for (name, entry) in servers {
        if let Some(config) = from_claude(entry) {
            into.entry(name.clone()).or_insert(config);
        }
    }
}

/// A server named in a repository's own file (`.mcp.json`, `opencode.json`).
#[derive(Debug, Clone)]
pub struct ProjectServer {
    pub name: String,
    pub config: ServerConfig,
    pub risk: crate::trust::Risk,
}

/// A repository's server file that exists but cannot be read as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file's name (`.mcp.json`).
    pub file: String,
    /// The one entry that cannot be used, when the file itself parses.
    pub server: Option<String>,
    /// Why, with the line and column.
    pub error: String,
}

/// The servers a repository's files name, in file order (`.mcp.json` first).
pub fn project_servers(root: &Path) -> Vec<ProjectServer> {
    project_files(root).0
}

/// [`project_servers`], and the files that name servers but do not parse
/// (they must be said where the user looks, not only in the log).
pub fn project_files(root: &Path) -> (Vec<ProjectServer>, Vec<Unreadable>) {
    let canonical = crate::trust::canonical(root);
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    let mut add = |file: &Path, text: &str, section: &str, name: &str, config: ServerConfig| {
        let risk = crate::trust::Risk {
            root: canonical.clone(),
            file: file.to_path_buf(),
            line: json_line(text, name),
            key: format!("{section}.{}", super::quote_arg(name)),
            value: format!("{}{}", summary(&config), file_fingerprints(&config)),
        };
        found.push(ProjectServer {
            name: name.to_string(),
            config,
            risk,
        });
    };
    let file = root.join(".mcp.json");
    if let Some((value, text)) = read_json_text(&file, &mut unreadable)
        && let Some(servers) = value.get("mcpServers").and_then(Value::as_object)
    {
        for (name, entry) in servers {
            if let Some(config) = from_claude(entry) {
                add(&file, &text, "mcpServers", name, config);
            }
        }
    }
    for name in ["opencode.json", "opencode.jsonc"] {
        let file = root.join(name);
        let Some((value, text)) = read_json_text(&file, &mut unreadable) else {
            continue;
        };
        let Some(entries) = value.get("mcp").and_then(Value::as_object) else {
            continue;
        };
        for (server, entry) in entries {
            match from_opencode(entry, root) {
                Ok(Some(config)) => add(&file, &text, "mcp", server, config),
                Ok(None) => {}
                Err(error) => unreadable.push(Unreadable {
                    file: name.to_string(),
                    server: Some(server.clone()),
                    error,
                }),
            }
        }
    }
    (found, unreadable)
}

/// A server as a user would read it, and as the trust record keeps it:
/// its command line or URL, then every other field that changes what runs
/// or what is sent (`url` beside a command, `cwd`, `env`, `headers`), as
/// written: `${VAR}` references are shown, never their values. A trusted
/// server whose summary changes asks again (issue #28: an `env` with
/// `LD_PRELOAD`, or `headers` carrying `${OPENAI_API_KEY}`, added to a
/// trusted server). Timeouts, `enabled` and `sandbox` are left out: they do
/// not change what runs or where anything goes.
///
/// Every piece is quoted by `quote_arg`, which always quotes `;` and spaces,
/// so the `; ` between fields cannot be forged by an argument.
pub fn summary(config: &ServerConfig) -> String {
    let quote = |text: &str| super::quote_arg(text);
    let mut parts = vec![match (&config.command, &config.url) {
        (Some(command), _) => std::iter::once(command)
            .chain(&config.args)
            .map(|arg| quote(arg))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(url)) => quote(url),
        (None, None) => "(no command or url)".to_string(),
    }];
    if let (Some(_), Some(url)) = (&config.command, &config.url) {
        parts.push(format!("url {}", quote(url)));
    }
    if let Some(cwd) = &config.cwd {
        parts.push(format!("cwd {}", quote(cwd)));
    }
    for (field, map) in [("env", &config.env), ("headers", &config.headers)] {
        if !map.is_empty() {
            let pairs: Vec<String> = map
                .iter()
                .map(|(name, value)| format!("{}={value:?}", quote_name(name)))
                .collect();
            parts.push(format!("{field} {}", pairs.join(" ")));
        }
    }
    parts.join("; ")
}

/// A fingerprint of each file a server's `{file:PATH}` reads, for its trust
/// record: what the server is started with is that file's text, so a
/// changed file must ask again like a changed argument (the fifth blind
/// review of #28). Empty when the entry reads no file.
fn file_fingerprints(config: &ServerConfig) -> String {
    let written = serde_json::to_string(config).unwrap_or_default();
    let mut out = String::new();
    let mut rest = written.as_str();
    while let Some(start) = rest.find("{file:") {
        let after = &rest[start + "{file:".len()..];
        let Some(end) = after.find('}') else {
            break;
        };
        let path = &after[..end];
        let home = std::env::var("HOME").ok();
        let file = home_relative(path, &|name| {
            (name == "HOME").then(|| home.clone()).flatten()
        });
        let mark = match std::fs::read(&file) {
            Ok(bytes) => {
                use sha2::Digest;
                let digest = sha2::Sha256::digest(&bytes);
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                format!("sha256:{}", &hex[..16])
            }
            Err(_) => "unreadable".to_string(),
        };
        out.push_str(&format!("; {{file:{path}}} {mark}"));
        rest = &after[end + 1..];
    }
    out
}

/// An `env` or `headers` name: as is when plain, else quoted (a name holding
/// `=` must not read like a value).
fn quote_name(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// The 1-based line where `"name"` first appears as a key in `text`.
fn json_line(text: &str, name: &str) -> Option<usize> {
    let quoted = serde_json::to_string(name).ok()?;
    let offset = text
        .find(&format!("{quoted}:"))
        .or_else(|| text.find(&quoted))?;
    Some(text[..offset].matches('\n').count() + 1)
}

/// The file as JSON with comments and trailing commas allowed (OpenCode's
/// `opencode.jsonc`, and hand-edited `.mcp.json` files have both), read
/// with the `jsonc-parser` crate; `None` when it is missing, and noted in
/// `unreadable` when it does not parse.
fn read_json_text(path: &Path, unreadable: &mut Vec<Unreadable>) -> Option<(Value, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let parsed = jsonc_parser::parse_to_serde_value(&text, &jsonc_parser::ParseOptions::default());
    let problem = match parsed {
        Ok(Some(value)) => return Some((value, text)),
        Ok(None) => "the file is empty".to_string(),
        Err(error) => error.to_string(),
    };
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    tracing::warn!("ignoring {}: {problem}", path.display());
    unreadable.push(Unreadable {
        file,
        server: None,
        error: problem,
    });
    None
}

/// OpenCode's global config directory: `$XDG_CONFIG_HOME/opencode`, else
/// `~/.config/opencode` (where OpenCode itself looks).
fn opencode_global_dir(home: Option<&Path>) -> Option<std::path::PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .filter(|dir| dir.is_absolute());
    match xdg {
        Some(dir) => Some(dir.join("opencode")),
        None => home.map(|home| home.join(".config").join("opencode")),
    }
}

/// The user's own OpenCode servers (`opencode.json`, then `.jsonc`, in
/// `dir`): the user's like `~/.claude.json`'s, so no trust is asked; a name
/// already taken keeps its first entry.
fn user_opencode_servers(
    dir: &Path,
    servers: &mut BTreeMap<String, ServerConfig>,
    unreadable: &mut Vec<Unreadable>,
) {
    for name in ["opencode.json", "opencode.jsonc"] {
        let file = dir.join(name);
        let Some((value, _)) = read_json_text(&file, unreadable) else {
            continue;
        };
        let Some(entries) = value.get("mcp").and_then(Value::as_object) else {
            continue;
        };
        for (server, entry) in entries {
            match from_opencode(entry, dir) {
                Ok(Some(config)) => {
                    servers.entry(server.clone()).or_insert(config);
                }
                Ok(None) => {}
                Err(error) => unreadable.push(Unreadable {
                    file: format!("~/.config/opencode/{name}"),
                    server: Some(server.clone()),
                    error,
                }),
            }
        }
    }
}

/// A repository's server that does not start, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub name: String,
    pub state: State,
    pub note: String,
}

/// What runs: the servers to start, and the repository's servers held back.
#[derive(Debug, Default)]
pub struct Discovery {
    pub servers: BTreeMap<String, ServerConfig>,
    pub held: Vec<Held>,
    /// The repository's servers that are not shadowed: they start only
    /// when trusted (the trust dialog lists them).
    pub risks: Vec<crate::trust::Risk>,
}

/// Every server for a session in `root`: cairn's own first, then the
/// user's `~/.claude.json` entries for `root`, then the repository's files.
/// A repository's server whose name (ignoring case) is taken is shadowed;
/// one the user has not trusted is held back.
pub fn discover(
    own: &BTreeMap<String, ServerConfig>,
    root: &Path,
    home: Option<&Path>,
    trust: &super::Trust,
) -> Discovery {
    let mut servers = own.clone();
    if let Some(value) = home.and_then(|home| read_json(&home.join(".claude.json"))) {
        let project = value
            .get("projects")
            .and_then(|projects| projects.get(root.to_string_lossy().as_ref()));
        claude_servers(project.and_then(|p| p.get("mcpServers")), &mut servers);
    }
    let mut held = Vec::new();
    let mut risks = Vec::new();
    let (project, mut unreadable) = project_files(root);
    if let Some(dir) = opencode_global_dir(home) {
        user_opencode_servers(&dir, &mut servers, &mut unreadable);
    }
    held.extend(unreadable.into_iter().map(|bad| match bad.server {
        Some(server) => Held {
            name: server,
            state: State::Failed,
            note: format!("in {}: {}", bad.file, bad.error),
        },
        None => Held {
            name: bad.file,
            state: State::Failed,
            note: format!(
                "does not parse, so none of its servers start: {}",
                bad.error
            ),
        },
    }));
    for found in project {
        let file = found
            .risk
            .file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let taken = servers
            .keys()
            .find(|name| name.to_lowercase() == found.name.to_lowercase());
        if let Some(taken) = taken {
            held.push(Held {
                name: format!("{} ({file})", found.name),
                state: State::Shadowed,
                note: format!("your own server `{taken}` is used instead"),
            });
            continue;
        }
        risks.push(found.risk.clone());
        if trust.trusts(std::slice::from_ref(&found.risk)) {
            servers.insert(found.name, found.config);
        } else {
            held.push(Held {
                name: found.name,
                state: State::Untrusted,
                note: format!(
                    "from {file}; not started until you trust the project (`cairn trust`)"
                ),
            });
        }
    }
    Discovery {
        servers,
        held,
        risks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expansion_table() {
        let cases = [
            ("Bearer ${TOKEN}", "Bearer s3cret"),
            ("${MISSING}", ""),
            ("${MISSING:-fallback}", "fallback"),
            ("${EMPTY:-fallback}", "fallback"),
            ("$TOKEN stays", "$TOKEN stays"),
            ("unclosed ${TOKEN", "unclosed ${TOKEN"),
            ("${TOKEN}${TOKEN}", "s3crets3cret"),
            // an expanded value is not expanded again
            ("${A}", ""),
            // OpenCode's spelling
            ("Bearer {env:TOKEN}", "Bearer s3cret"),
            ("{env:MISSING}x", "x"),
            ("{env:TOKEN", "{env:TOKEN"),
            ("{file:/nonexistent/cairn-test}", ""),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &env), want, "{input}");
        }
    }

    /// A relative `{file:…}` is anchored at its file's directory when read,
    /// so the trust record names the path, and the text is read at start.
    #[test]
    fn file_references_are_anchored_then_read_trimmed() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("key.txt"), "k3y\n").expect("write");
        let entry = json!({"command": ["srv", "{file:key.txt}", "{file:/abs}", "{file:~/h}"]});
        let anchored = anchor_files(&entry, dir.path());
        let first = anchored["command"][1]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_eq!(first, format!("{{file:{}/key.txt}}", dir.path().display()));
        assert_eq!(anchored["command"][2], "{file:/abs}");
        assert_eq!(anchored["command"][3], "{file:~/h}");
        assert_eq!(expand(&first, &env), "k3y");
        let line = json!({"command": "npx -y server"});
        assert!(
            from_opencode(&line, dir.path()).is_err(),
            "a string command is said"
        );
    }

    /// Trust drift (issue #28): what a trusted server's record holds must
    /// change with every field that changes what runs or what is sent, and
    /// show `${VAR}` references as written, never their values.
    #[test]
    fn the_trusted_summary_covers_every_field_that_runs_or_sends() {
        let base = ServerConfig {
            command: Some("npx".into()),
            args: vec!["srv".into()],
            ..Default::default()
        };
        let remote = ServerConfig {
            url: Some("https://mcp.example/mcp".into()),
            ..Default::default()
        };
        let with = |from: &ServerConfig, change: fn(&mut ServerConfig)| {
            let mut changed = from.clone();
            change(&mut changed);
            (from.clone(), changed)
        };
        let pairs = |items: &[(&str, &str)]| -> BTreeMap<String, String> {
            items
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let env_preload = pairs(&[("LD_PRELOAD", "/tmp/evil.so")]);
        let env_node = pairs(&[("NODE_OPTIONS", "--require /tmp/x.js")]);
        let key_header = pairs(&[("Authorization", "Bearer ${OPENAI_API_KEY}")]);
        let changes = [
            ("args", with(&base, |c| c.args = vec!["other".into()])),
            (
                "env LD_PRELOAD",
                (
                    base.clone(),
                    ServerConfig {
                        env: env_preload,
                        ..base.clone()
                    },
                ),
            ),
            (
                "env NODE_OPTIONS",
                (
                    base.clone(),
                    ServerConfig {
                        env: env_node,
                        ..base.clone()
                    },
                ),
            ),
            ("cwd", with(&base, |c| c.cwd = Some("/tmp".into()))),
            (
                "headers",
                (
                    remote.clone(),
                    ServerConfig {
                        headers: key_header,
                        ..remote.clone()
                    },
                ),
            ),
            (
                "url",
                with(&remote, |c| c.url = Some("https://evil.example/mcp".into())),
            ),
            (
                "headers on a command server",
                with(&base, |c| {
                    c.headers = BTreeMap::from([("X".into(), "y".into())]);
                }),
            ),
            (
                "url beside a command",
                with(&base, |c| c.url = Some("https://evil.example/mcp".into())),
            ),
            // An argument must not read like a field.
            (
                "args spelling a field",
                with(&base, |c| {
                    c.args = vec!["srv; env LD_PRELOAD=\"/x\"".into()];
                }),
            ),
        ];
        let mut wrong = Vec::new();
        for (name, (before, after)) in &changes {
            if summary(before) == summary(after) {
                wrong.push(format!("{name}: {}", summary(after)));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of {} unseen:\n{}",
            wrong.len(),
            changes.len(),
            wrong.join("\n")
        );
        let shown = summary(&changes[4].1.1);
        assert!(shown.contains("${OPENAI_API_KEY}"), "{shown}");
        // A trusted server whose arguments spell a field is not the server
        // with that field.
        let env_for_real = ServerConfig {
            env: pairs(&[("LD_PRELOAD", "/x")]),
            ..base.clone()
        };
        assert_ne!(summary(&changes[8].1.1), summary(&env_for_real));
    }

    /// Timeouts, the sandbox flag and `enabled` change neither what runs
    /// nor where anything goes: changing them keeps the trust.
    #[test]
    fn harmless_fields_leave_the_summary_alone() {
        let base = ServerConfig {
            command: Some("npx".into()),
            ..Default::default()
        };
        let harmless = ServerConfig {
            timeout: Some(5),
            enabled: Some(false),
            sandbox: true,
            ..base.clone()
        };
        assert_eq!(summary(&harmless), summary(&base));
    }

    /// A record stored before the summary held `env` (only the command
    /// line) still trusts that server as it was, and asks again once it
    /// has an `env`: an old record never trusts a field it did not show.
    #[test]
    fn a_record_in_the_old_shape_does_not_trust_new_fields() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = tempfile::tempdir().expect("tempdir");
        let root = crate::trust::canonical(dir.path());
        let old = json!({"projects": {root.to_string_lossy(): {
            "trusted_at": 1,
            "settings": [".mcp.json: mcpServers.x = sh -c \"touch marker\""]
        }}});
        std::fs::write(data.path().join(crate::trust::FILE), old.to_string()).expect("write");
        let trust = crate::config::Trust {
            all: false,
            store: Some(crate::trust::Store::in_dir(data.path())),
        };
        let server = json!({"command": "sh", "args": ["-c", "touch marker"]});
        let mut drifted = server.clone();
        drifted["env"] = json!({"LD_PRELOAD": "/tmp/evil.so"});
        for (config, starts) in [(server, true), (drifted, false)] {
            let file = json!({"mcpServers": {"x": config}});
            std::fs::write(dir.path().join(".mcp.json"), file.to_string()).expect("write");
            let found = discover(&BTreeMap::new(), dir.path(), None, &trust);
            assert_eq!(found.servers.contains_key("x"), starts, "{:?}", found.risks);
        }
    }

    #[test]
    fn claude_code_mcp_json_is_read_unchanged() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The format Claude Code documents for project-scoped servers.
        let file = json!({"mcpServers": {
            "shared-server": {"command": "/path/to/server", "args": [], "env": {}},
            "api-server": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp",
                           "headers": {"Authorization": "Bearer ${API_KEY}"}}
        }});
        std::fs::write(dir.path().join(".mcp.json"), file.to_string()).expect("write");
        let all = crate::config::Trust {
            all: true,
            store: None,
        };
        let servers = discover(&BTreeMap::new(), dir.path(), None, &all).servers;
        assert_eq!(
            servers["shared-server"].command.as_deref(),
            Some("/path/to/server")
        );
        let api = servers["api-server"].expanded(&|_| None);
        assert_eq!(api.url.as_deref(), Some("https://api.example.com/mcp"));
        assert_eq!(api.headers["Authorization"], "Bearer ");
    }

    #[test]
    fn opencode_and_claude_json_entries_and_own_config_wins() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = tempfile::tempdir().expect("tempdir");
        let opencode = json!({"mcp": {
            "local": {"type": "local", "command": ["npx", "-y", "srv"], "enabled": false,
                      "environment": {"K": "v"}, "timeout": 5000},
            "mine": {"type": "local", "command": ["other"]}
        }});
        std::fs::write(dir.path().join("opencode.json"), opencode.to_string()).expect("write");
        let claude = json!({"projects": {dir.path().to_string_lossy(): {"mcpServers": {
            "fromhome": {"command": "h"}
        }}}});
        std::fs::write(home.path().join(".claude.json"), claude.to_string()).expect("write");
        let own = BTreeMap::from([(
            "mine".to_string(),
            ServerConfig {
                command: Some("cairn-own".into()),
                ..Default::default()
            },
        )]);
        let all = crate::config::Trust {
            all: true,
            store: None,
        };
        let found = discover(&own, dir.path(), Some(home.path()), &all);
        assert_eq!(found.held.len(), 1, "{:?}", found.held);
        assert_eq!(found.held[0].name, "mine (opencode.json)");
        let servers = found.servers;
        let local = &servers["local"];
        assert_eq!(local.command.as_deref(), Some("npx"));
        assert_eq!(local.args, ["-y", "srv"]);
        assert!(!local.is_enabled());
        assert_eq!(local.timeout, Some(5));
        assert_eq!(servers["mine"].command.as_deref(), Some("cairn-own"));
        assert_eq!(servers["fromhome"].command.as_deref(), Some("h"));
    }

    /// The fifth blind review of #28: a trusted OpenCode server whose
    /// `{file:c.txt}` changed started with the new text unasked. The trust
    /// record now changes with the file.
    #[test]
    fn a_file_reference_changes_the_trust_record_with_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("opencode.json"),
            r#"{"mcp":{"m1":{"type":"local","command":["sh","-c","{file:c.txt}; exec sleep 30"]}}}"#,
        )
        .expect("write");
        let record = || {
            project_servers(dir.path())
                .first()
                .expect("the server")
                .risk
                .value
                .clone()
        };
        std::fs::write(dir.path().join("c.txt"), "touch /tmp/a").expect("write");
        let before = record();
        assert_eq!(before, record(), "stable while nothing changes");
        std::fs::write(dir.path().join("c.txt"), "touch /tmp/b").expect("write");
        assert_ne!(before, record(), "{before}");
    }
}
