//! Loading: defaults, then the user's file, the project file, `CAIRN_CONFIG`,
//! environment variables and flags, later sources winning key by key.
//!
//! Each file is validated on its own first so errors point at its lines; the
//! sources are then merged as TOML tables while recording, for every leaf key,
//! which source set it. Reads files and the given environment only.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::locate::{dotted, key_at, line_of};
use super::value::{ModelRef, NonEmpty, parse_env_bool};
use super::{Config, Error};

/// Project config file names, looked for in the working directory and each parent.
const PROJECT_FILES: [&str; 2] = ["cairn.toml", ".cairn/config.toml"];

/// Everything `load` reads besides files: the process environment is captured
/// here once, so tests can pass their own and never race on `std::env`.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Where the search for a project file starts.
    pub cwd: PathBuf,
    /// The user's config file; None when there is no home (or in tests).
    pub global_file: Option<PathBuf>,
    /// The `CAIRN_*` environment variables.
    pub env: BTreeMap<String, String>,
    pub overrides: Overrides,
    /// Names of the environment variables that are set and not empty: a
    /// project may not point a provider that would carry one at its URL.
    pub set_vars: BTreeSet<String>,
    /// Whether the project's risky settings apply (see `crate::trust`).
    pub trust: Trust,
}

impl LoadOptions {
    /// Options from the real process: its `CAIRN_*` variables and the XDG config file.
    pub fn from_process(cwd: PathBuf, overrides: Overrides) -> Self {
        Self {
            cwd,
            global_file: crate::paths::global_config_file(),
            env: std::env::vars()
                .filter(|(name, _)| name.starts_with("CAIRN_"))
                .collect(),
            overrides,
            set_vars: std::env::vars_os()
                .filter(|(_, value)| !value.is_empty())
                .filter_map(|(name, _)| name.into_string().ok())
                .collect(),
            trust: Trust::default(),
        }
    }
}

/// Which risky project settings apply: all (`--trust-project`), or those
/// the user's record trusts. The default trusts none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    pub all: bool,
    pub store: Option<crate::trust::Store>,
}

impl Trust {
    /// Whether every one of `risks` may apply. A record that cannot be read
    /// trusts nothing (and is logged): it never stops cairn from starting.
    pub fn trusts(&self, risks: &[crate::trust::Risk]) -> bool {
        if self.all || risks.is_empty() {
            return true;
        }
        let Some(store) = &self.store else {
            return false;
        };
        store.trusts(risks).unwrap_or_else(|error| {
            tracing::warn!("{error}");
            false
        })
    }
}

/// Values given on the command line; they win over every other source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--model provider/model`
    pub model: Option<String>,
    /// `--agent NAME`
    pub agent: Option<String>,
    /// `--yolo`
    pub yolo: bool,
    /// `--sandbox MODE`
    pub sandbox: Option<String>,
}

/// Where one key's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Default,
    File(PathBuf),
    Env(&'static str),
    Flag(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Env(var) => write!(f, "env {var}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// The merged configuration and the origin of each leaf key (dotted path).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub origins: BTreeMap<String, Origin>,
    /// The files that were read, in load order.
    pub files: Vec<PathBuf>,
    /// Problems worth telling the user that do not stop loading.
    pub warnings: Vec<String>,
    /// The project file's risky settings (see `project.rs`), applied only
    /// when `project_trusted`.
    pub project_risks: Vec<crate::trust::Risk>,
    pub project_trusted: bool,
    /// The root of the project file's project (see `project::root_of`).
    pub project_root: Option<PathBuf>,
    /// The project file's `[mcp.NAME]` entries dropped for a user server's name.
    pub shadowed: Vec<String>,
}

/// Loads and merges every source. See the module doc for the order.
///
/// # Errors
/// A file that cannot be read or does not validate, a missing `CAIRN_CONFIG`
/// file, or a bad environment or flag value.
pub fn load(options: &LoadOptions) -> Result<Loaded, Error> {
    let mut merged =
        Table::try_from(Config::default()).expect("Config serializes: every map key is a string");
    let mut origins = BTreeMap::new();
    record_origins(
        &Value::Table(merged.clone()),
        &mut Vec::new(),
        &Origin::Default,
        &mut origins,
    );
    let mut files = Vec::new();
    let mut warnings = Vec::new();

    let mut candidates = Vec::new();
    if let Some(global) = &options.global_file {
        candidates.push((global.clone(), false));
    }
    if let Some(project) = find_project_file(&options.cwd) {
        candidates.push((project, true));
    }
    if let Some(extra) = options.env.get("CAIRN_CONFIG").filter(|p| !p.is_empty()) {
        let extra = options.cwd.join(extra);
        if !extra.is_file() {
            return Err(Error::MissingExtraFile { path: extra });
        }
        candidates.push((extra, false));
    }
    let mut project = ProjectPart::default();
    for (path, is_project) in candidates {
        let Some((table, text)) = read_file(&path, &mut warnings)? else {
            continue;
        };
        let table = if is_project {
            project = split_project(table, &text, &path, &merged, options);
            std::mem::take(&mut project.kept)
        } else {
            table
        };
        merge(
            &mut merged,
            table,
            &mut Vec::new(),
            &Origin::File(path.clone()),
            &mut origins,
        );
        files.push(path);
    }

    for (origin, table) in env_layers(&options.env)? {
        merge(&mut merged, table, &mut Vec::new(), &origin, &mut origins);
    }
    for (origin, table) in flag_layers(&options.overrides)? {
        merge(&mut merged, table, &mut Vec::new(), &origin, &mut origins);
    }

    // Every layer was validated alone and keeps each key's type, so this
    // should not fail; if it does, say so rather than panic.
    let mut config: Config =
        Value::Table(merged)
            .try_into()
            .map_err(|error: toml::de::Error| Error::Merged {
                files: files.clone(),
                message: error.message().trim_end().to_owned(),
            })?;
    config.held_mcp = project.held_mcp();
    config.restrictions = project.restrictions;
    config.trust = options.trust.clone();
    for name in &project.shadowed {
        warnings.push(format!(
            "the project's MCP server `{name}` is ignored: your own server of that name is used"
        ));
    }
    Ok(Loaded {
        config,
        origins,
        files,
        warnings,
        project_risks: project.risks,
        project_trusted: project.trusted,
        project_root: project.root,
        shadowed: project.shadowed,
    })
}

impl ProjectPart {
    /// Its servers that do not start: shadowed, or held until trusted.
    fn held_mcp(&self) -> Vec<super::mcp::Held> {
        use super::mcp::State;
        let file = self
            .file
            .as_ref()
            .and_then(|file| file.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let shadowed = self.shadowed.iter().map(|name| super::mcp::Held {
            name: format!("{name} ({file})"),
            state: State::Shadowed,
            note: "your own server of that name is used instead".to_string(),
        });
        let held = self.held.iter().map(|name| super::mcp::Held {
            name: name.clone(),
            state: State::Untrusted,
            note: format!("from {file}; not started until you trust the project (`cairn trust`)"),
        });
        shadowed.chain(held).collect()
    }
}

/// The project file, split into what applies now and what waits for trust.
#[derive(Default)]
struct ProjectPart {
    kept: Table,
    risks: Vec<crate::trust::Risk>,
    restrictions: super::PermissionConfig,
    shadowed: Vec<String>,
    held: Vec<String>,
    trusted: bool,
    root: Option<PathBuf>,
    file: Option<PathBuf>,
}

fn split_project(
    table: Table,
    text: &str,
    path: &Path,
    merged: &Table,
    options: &LoadOptions,
) -> ProjectPart {
    let root = super::project::root_of(path);
    let context = |trusted| super::project::Context {
        file: path,
        root: &root,
        cwd: &options.cwd,
        text,
        base: merged,
        set_vars: &options.set_vars,
        trusted,
    };
    let untrusted = super::project::split(table.clone(), &context(false));
    let trusted = options.trust.trusts(&untrusted.risks);
    let split = if trusted {
        super::project::split(table, &context(true))
    } else {
        untrusted
    };
    ProjectPart {
        kept: split.kept,
        risks: split.risks,
        restrictions: split.restrictions,
        shadowed: split.shadowed,
        held: split.held,
        trusted,
        root: Some(root),
        file: Some(path.to_path_buf()),
    }
}

/// The nearest project file walking up from `cwd`.
fn find_project_file(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .flat_map(|dir| PROJECT_FILES.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Reads and validates one file: its table and text. Ok(None) when it does not exist.
fn read_file(path: &Path, warnings: &mut Vec<String>) -> Result<Option<(Table, String)>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let invalid = |error: toml::de::Error| {
        let offset = error.span().map(|span| span.start);
        Error::Invalid {
            path: path.to_owned(),
            line: offset.map(|offset| line_of(&text, offset)),
            key: offset.and_then(|offset| key_at(&text, offset)),
            message: plain_message(error.message()),
        }
    };
    let config: Config = toml::from_str(&text).map_err(invalid)?;
    let table: Table = toml::from_str(&text).map_err(invalid)?;
    if config
        .provider
        .values()
        .any(|provider| provider.api_key.is_some())
        && is_readable_by_others(path)
    {
        warnings.push(format!(
            "{} holds an api_key and is readable by other users; \
             use api_key_env, or chmod 600 the file",
            path.display()
        ));
    }
    Ok(Some((table, text)))
}

/// serde's wording for a bad `[permission]` value names a Rust type; say what
/// the user may write instead.
fn plain_message(message: &str) -> String {
    if message.contains("untagged enum PermissionSetting") {
        "expected \"allow\", \"ask\", \"deny\" or a table of patterns like { \"git *\" = \"allow\" }"
            .to_owned()
    } else {
        message.trim_end().to_owned()
    }
}

#[cfg(unix)]
fn is_readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0)
}

#[cfg(not(unix))]
fn is_readable_by_others(_path: &Path) -> bool {
    false
}

/// One single-key table per recognised environment variable, validated.
fn env_layers(env: &BTreeMap<String, String>) -> Result<Vec<(Origin, Table)>, Error> {
    let mut layers = Vec::new();
    let bad = |var: &'static str| move |message: String| Error::Env { var, message };
    for (var, key) in [
        ("CAIRN_MODEL", "model"),
        ("CAIRN_SMALL_MODEL", "small_model"),
    ] {
        if let Some(text) = env.get(var) {
            let model = ModelRef::parse(text).map_err(bad(var))?;
            layers.push((
                Origin::Env(var),
                single(&[key], Value::String(model.to_string())),
            ));
        }
    }
    for (var, key) in [
        ("CAIRN_COMPACTION_AUTO", "auto"),
        ("CAIRN_COMPACTION_PRUNE", "prune"),
    ] {
        if let Some(text) = env.get(var) {
            let flag = parse_env_bool(text).map_err(bad(var))?;
            layers.push((
                Origin::Env(var),
                single(&["compaction", key], Value::Boolean(flag)),
            ));
        }
    }
    if let Some(text) = env.get("CAIRN_LOG") {
        let level = NonEmpty::new(text.as_str()).map_err(bad("CAIRN_LOG"))?;
        layers.push((
            Origin::Env("CAIRN_LOG"),
            single(&["log", "level"], Value::String(level.to_string())),
        ));
    }
    Ok(layers)
}

/// One single-key table per flag given, validated.
fn flag_layers(overrides: &Overrides) -> Result<Vec<(Origin, Table)>, Error> {
    let mut layers = Vec::new();
    if let Some(text) = &overrides.model {
        let model = ModelRef::parse(text).map_err(|message| Error::Flag {
            flag: "--model",
            message,
        })?;
        layers.push((
            Origin::Flag("--model"),
            single(&["model"], Value::String(model.to_string())),
        ));
    }
    if let Some(text) = &overrides.agent {
        let agent = NonEmpty::new(text.as_str()).map_err(|message| Error::Flag {
            flag: "--agent",
            message,
        })?;
        layers.push((
            Origin::Flag("--agent"),
            single(&["default_agent"], Value::String(agent.to_string())),
        ));
    }
    if overrides.yolo {
        layers.push((
            Origin::Flag("--yolo"),
            single(&["yolo"], Value::Boolean(true)),
        ));
    }
    if let Some(text) = &overrides.sandbox {
        let mode = super::SandboxMode::parse(text).ok_or_else(|| Error::Flag {
            flag: "--sandbox",
            message: format!(
                "`{text}` is not a sandbox mode: use workspace-write, read-only or off"
            ),
        })?;
        layers.push((
            Origin::Flag("--sandbox"),
            single(&["sandbox", "mode"], Value::String(mode.name().to_string())),
        ));
    }
    Ok(layers)
}

/// A table holding `value` at the nested `path`.
fn single(path: &[&str], value: Value) -> Table {
    let mut value = value;
    for key in path.iter().rev() {
        let mut table = Table::new();
        table.insert((*key).to_owned(), value);
        value = Value::Table(table);
    }
    match value {
        Value::Table(table) => table,
        _ => Table::new(),
    }
}

/// Merges `layer` into `base`: tables merge key by key, anything else replaces.
fn merge(
    base: &mut Table,
    layer: Table,
    path: &mut Vec<String>,
    origin: &Origin,
    origins: &mut BTreeMap<String, Origin>,
) {
    for (key, value) in layer {
        path.push(key.clone());
        match (base.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(incoming)) => {
                merge(existing, incoming, path, origin, origins);
            }
            // Hooks add up: a later file's hooks for an event run after the
            // user's, never instead of them (a guard hook stays).
            (Some(Value::Array(existing)), Value::Array(incoming))
                if path.len() == 2 && path[0] == "hooks" =>
            {
                existing.extend(incoming);
            }
            (_, value) => {
                // What was there (maybe a whole table) is gone: forget its origins.
                let prefix = dotted(path);
                origins
                    .retain(|leaf, _| leaf != &prefix && !leaf.starts_with(&format!("{prefix}.")));
                record_origins(&value, path, origin, origins);
                base.insert(key, value);
            }
        }
        path.pop();
    }
}

/// Records `origin` for every leaf under `value`. Empty tables count as leaves
/// so `[agent.review]` with no keys still shows where it came from.
fn record_origins(
    value: &Value,
    path: &mut Vec<String>,
    origin: &Origin,
    origins: &mut BTreeMap<String, Origin>,
) {
    match value {
        Value::Table(table) if !table.is_empty() => {
            for (key, inner) in table {
                path.push(key.clone());
                record_origins(inner, path, origin, origins);
                path.pop();
            }
        }
        _ if !path.is_empty() => {
            origins.insert(dotted(path), origin.clone());
        }
        _ => {}
    }
}
