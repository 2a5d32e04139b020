//! Assembly: config -> store, bus, models, tools, permissions -> a running session.
//!
//! Front ends (`main` for the TUI and `cairn run`, tests for scenarios) call
//! this instead of wiring the layers themselves, so every front end runs the
//! same session the same way. It owns no behaviour of its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod claude_permissions;

use anyhow::Context;

use crate::bus::Bus;
use crate::clock::now_millis;
use crate::config::Config;
use crate::message::{ModelRef, Session};
use crate::permission::{Mode, Permissions};
use crate::session::agent::{AgentOverride, Agents};
use crate::session::ctx::{ModelSource, SessionCtx, Settings};
use crate::session::lock::{LOCK_WAIT, SessionLock};
use crate::session::models::{ConfiguredModels, default_model_from_env};
use crate::session::prompt::Environment;
use crate::session::runtime::{SessionHandle, spawn};
use crate::session::writer::Writer;
use crate::store::Store;
use crate::tool::{OutputLimits, Registry};

const NO_MODEL: &str = crate::provider::discover::ADVICE;

/// Deletes saved tool outputs older than a week on a thread of its own, off
/// the path to the first frame; a failure is logged, never fatal.
fn sweep_tool_outputs(dir: PathBuf) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name("tool-output-sweep".into())
        .spawn(move || {
            match crate::tool::truncate::sweep(&dir, crate::tool::truncate::RETENTION) {
                Ok(0) => {}
                Ok(removed) => {
                    tracing::info!(removed, dir = %dir.display(), "swept old tool outputs")
                }
                Err(error) => {
                    tracing::warn!(%error, dir = %dir.display(), "cannot sweep old tool outputs")
                }
            }
        });
    spawned
        .inspect_err(|error| tracing::warn!(%error, "cannot start the tool-output sweep"))
        .ok()
}

impl Drop for App {
    fn drop(&mut self) {
        if let Some(sweep) = self.sweep.take() {
            let _ = sweep.join();
        }
    }
}

/// Old snapshot objects are collected on a thread of their own: start-up
/// and the first frame never wait for it.
fn collect_snapshots(data_dir: &Path, max_age_days: u32) {
    let data_dir = data_dir.to_owned();
    let spawned = std::thread::Builder::new()
        .name("snapshot-gc".into())
        .spawn(move || {
            for (store, error) in crate::snapshot::collect(&data_dir, max_age_days) {
                tracing::warn!("collecting old snapshots in {}: {error}", store.display());
            }
        });
    if let Err(error) = spawned {
        tracing::warn!("could not start collecting old snapshots: {error}");
    }
}

/// With no model configured and no key set, asks the usual local servers
/// (within `discover::BUDGET`) and points `config` at the first that serves
/// a model: its model becomes the default, its URL the provider's, and the
/// window it reports the model's context. Returns what answered.
///
/// # Errors
/// `discover::SERVERS_ENV` is set but malformed.
pub async fn discover_local_model(
    config: &mut Config,
) -> anyhow::Result<Vec<crate::provider::discover::LocalServer>> {
    use crate::provider::discover;
    if config.model.is_some() || default_model_from_env().is_some() {
        return Ok(Vec::new());
    }
    let candidates = discover::candidates().map_err(anyhow::Error::msg)?;
    let found = discover::discover(&candidates, discover::BUDGET).await;
    if let Some((server, model)) = found.first().and_then(|s| Some((s, s.model_ref()?))) {
        use_local_server(config, server, model);
    }
    Ok(found)
}

/// Makes `model`, served by `server`, the default, reached at its URL.
pub fn use_local_server(
    config: &mut Config,
    server: &crate::provider::discover::LocalServer,
    model: ModelRef,
) {
    let provider = config.provider.entry(model.provider.clone()).or_default();
    crate::session::models::serve_from(provider, server);
    tracing::info!(model = %model, url = %server.base_url(), context = ?server.context, "using a local server");
    config.model = Some(model);
}

/// The risky settings of the project in `cwd` (see `crate::trust`): all
/// of them, and those not applied because the user has not trusted them.
#[derive(Debug, Default)]
pub struct ProjectRisks {
    pub all: Vec<crate::trust::Risk>,
    pub pending: Vec<crate::trust::Risk>,
    /// Warnings for the repository's servers named like the user's.
    pub shadowed: Vec<String>,
}

impl ProjectRisks {
    /// Gathers the project file's (from loading), the repository's MCP
    /// servers and its agent files' `allow` rules.
    pub fn gather(loaded: &crate::config::Loaded, cwd: &Path) -> Self {
        let config = &loaded.config;
        let mut risks = Self::default();
        risks.add(&loaded.project_risks, !loaded.project_trusted);
        let env = Environment::discover(cwd);
        let home = crate::paths::home();
        let servers =
            crate::mcp::config::discover(&config.mcp, &env.root, home.as_deref(), &config.trust);
        risks.shadowed = servers
            .held
            .iter()
            .filter(|held| held.state == crate::mcp::State::Shadowed)
            .map(|held| {
                format!(
                    "the project's MCP server {} is ignored: {}",
                    held.name, held.note
                )
            })
            .collect();
        for risk in &servers.risks {
            risks.add(
                std::slice::from_ref(risk),
                !config.trust.trusts(std::slice::from_ref(risk)),
            );
        }
        let agents = crate::session::agent_files::project_risks(&env);
        risks.add(&agents, !config.trust.trusts(&agents));
        for hook in crate::hook::project_risks(&env.root) {
            let pending = !config.trust.trusts(std::slice::from_ref(&hook));
            risks.add(std::slice::from_ref(&hook), pending);
        }
        let commands = command_risks(&env);
        risks.add(&commands, !config.trust.trusts(&commands));
        let claude = claude_permissions::gather(&env.root, env.home.as_deref(), |_| false);
        risks.add(&claude.risks, !config.trust.trusts(&claude.risks));
        risks
    }

    fn add(&mut self, risks: &[crate::trust::Risk], pending: bool) {
        self.all.extend_from_slice(risks);
        if pending {
            self.pending.extend_from_slice(risks);
        }
    }
}

/// The custom commands for a session in `env` (see `crate::custom_command`).
fn discover_commands(env: &Environment) -> crate::custom_command::Discovered {
    crate::custom_command::discover(&crate::custom_command::CommandRoots {
        cwd: env.cwd.clone(),
        root: env.root.clone(),
        home: env.home.clone(),
        config_dir: crate::paths::config_dir(),
    })
}

/// The custom commands in `cwd`, for `/help` and completion.
pub fn custom_commands(cwd: &Path) -> crate::custom_command::Discovered {
    discover_commands(&Environment::discover(cwd))
}

/// The `allowed-tools` of the project's custom commands in `env`.
fn command_risks(env: &Environment) -> Vec<crate::trust::Risk> {
    crate::custom_command::project_risks(&discover_commands(env), &env.root)
}

/// Which session to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    New,
    /// The most recent session in this directory (`--continue`).
    Latest,
    Id(String),
}

/// [`crate::config::load`], and what only the provider presets can tell: a
/// `[provider.NAME]` that is a preset's name in another case (`OpenAI`)
/// configures nothing the user meant, and a model named `openai/...` goes to
/// the preset's own address. Said, not guessed at.
///
/// # Errors
/// As [`crate::config::load`].
pub fn load_config(
    options: &crate::config::LoadOptions,
) -> Result<crate::config::Loaded, crate::config::Error> {
    let mut loaded = crate::config::load(options)?;
    for name in loaded.config.provider.keys() {
        let preset = crate::provider::presets::PRESETS
            .iter()
            .find(|p| p.name != name && p.name.eq_ignore_ascii_case(name));
        if let Some(preset) = preset {
            loaded.warnings.push(format!(
                "[provider.{name}] does not configure `{0}`: provider names are case-sensitive \
                 (write [provider.{0}])",
                preset.name
            ));
        }
    }
    Ok(loaded)
}

pub struct App {
    pub config: Config,
    pub store: Store,
    pub bus: Bus,
    pub models: Arc<dyn ModelSource>,
    pub tools: Arc<Registry>,
    pub cwd: PathBuf,
    pub data_dir: PathBuf,
    /// The editor's files, set by `cairn acp` before `start` when the
    /// editor serves them.
    pub editor: Option<Arc<dyn crate::tool::EditorFiles>>,
    /// The start-up sweep of old saved tool outputs, joined on drop so that
    /// a short `cairn run` does not exit in the middle of it.
    sweep: Option<std::thread::JoinHandle<()>>,
}

impl App {
    /// Opens the store in `data_dir` (`paths::data_dir()` in the binary).
    pub fn open(config: Config, cwd: PathBuf, data_dir: &Path) -> anyhow::Result<Self> {
        let store = Store::open(&data_dir.join("cairn.db"))?;
        let models: Arc<dyn ModelSource> = Arc::new(ConfiguredModels::new(&config));
        // Keys stay out of the commands the model runs (and so out of its context).
        crate::tool::hide_from_commands(
            config
                .provider
                .values()
                .filter_map(|p| p.api_key_env.as_ref().map(|v| v.as_str().to_string()))
                .chain(crate::provider::presets::key_variables().map(str::to_string)),
        );
        // ... but /proc/$PPID/environ still shows them: redact them from every output.
        crate::secret::register(config_secrets(&config));
        collect_snapshots(data_dir, config.snapshot.max_age_days);
        crate::provider::server_kind::use_cache_dir(data_dir.join("cache"));
        let root = Environment::discover(&cwd).root;
        let home = crate::paths::home();
        let mut discovery =
            crate::mcp::config::discover(&config.mcp, &root, home.as_deref(), &config.trust);
        discovery.held.extend(config.held_mcp.iter().cloned());
        let sandbox = crate::sandbox::Policy::new(&config.sandbox, &root, &own_dirs(data_dir));
        let mcp = crate::mcp::Hub::discovered(discovery, Some(Arc::new(sandbox)));
        Ok(Self {
            config,
            store,
            bus: Bus::new(),
            models,
            tools: Arc::new(Registry::builtin().with_mcp(mcp)),
            cwd,
            data_dir: data_dir.to_path_buf(),
            editor: None,
            sweep: sweep_tool_outputs(data_dir.join(crate::paths::TOOL_OUTPUT_DIR)),
        })
    }

    /// The model new messages use: config or flag, else a provider whose key is set.
    pub fn default_model(&self) -> Option<ModelRef> {
        self.config.model.clone().or_else(default_model_from_env)
    }

    /// The model a session's next prompt uses: one chosen with `/model`,
    /// else that of the last user message in `recent` (the newest page of
    /// its history), else the default: a reopened session keeps its model.
    ///
    /// # Errors
    /// The store cannot be read.
    pub async fn next_model(
        &self,
        session_id: &str,
        recent: &[crate::message::MessageWithParts],
    ) -> Result<Option<ModelRef>, crate::store::Error> {
        let last = recent
            .iter()
            .rev()
            .find_map(|m| m.message.as_user().map(|user| user.model.clone()));
        Ok(self
            .store
            .chosen_model(session_id)
            .await?
            .or(last)
            .or_else(|| self.default_model()))
    }

    /// What `/model` offers (see `model_choices`), with the models of the
    /// local servers found so far.
    pub fn model_choices(
        &self,
        servers: &[crate::provider::discover::LocalServer],
    ) -> Vec<crate::session::model_choices::ModelChoice> {
        crate::session::model_choices::choices(
            &self.config,
            self.default_model().as_ref(),
            servers,
            |variable| std::env::var(variable).ok(),
        )
    }

    /// Finds or creates the session and starts its runtime.
    pub async fn start(
        &self,
        choice: SessionChoice,
        mode: Mode,
    ) -> anyhow::Result<(Session, SessionHandle)> {
        // Fail before creating anything: a run that cannot start leaves no empty session.
        let default_model = self.default_model().context(NO_MODEL)?;
        // In the background: the first frame never waits for a server.
        if let Some(hub) = self.tools.mcp() {
            hub.start();
        }
        let directory = self.cwd.display().to_string();
        let session = match choice {
            SessionChoice::New => self.new_session(&directory).await?,
            SessionChoice::Latest => match self.store.latest_session(&directory).await? {
                Some(session) => session,
                // `cairn run --continue` means "add to what I did": a
                // silently fresh session would lose that context.
                None if mode == Mode::Headless => anyhow::bail!(
                    "no earlier session in {directory} to continue; leave out --continue to start one"
                ),
                None => self.new_session(&directory).await?,
            },
            SessionChoice::Id(id) => {
                self.store.get_session(&id).await?.with_context(|| {
                    format!("no session with id {id}; `cairn sessions` lists them")
                })?
            }
        };
        // Before recovery: another process's running tools are not a crash.
        let lock = self.lock_session(&session.id).await?;
        let mut ctx = self.session_ctx(&session, mode, default_model);
        // A subagent's session opened on its own keeps its place in the tree.
        ctx.depth = crate::session::subtask::depth(&self.store, &session.id).await?;
        let project = ctx.env.root.display().to_string();
        crate::session::remembered::load(&self.store, &project, &ctx.permissions).await?;
        let ctx = Arc::new(ctx);
        let (handle, _task) = spawn(ctx, lock);
        Ok((session, handle))
    }

    /// Takes the session's lock off the async threads (it may wait
    /// [`LOCK_WAIT`] for another holder).
    async fn lock_session(&self, session_id: &str) -> anyhow::Result<SessionLock> {
        let data_dir = self.data_dir.clone();
        let id = session_id.to_string();
        let lock =
            tokio::task::spawn_blocking(move || SessionLock::acquire(&data_dir, &id, LOCK_WAIT))
                .await
                .context("the session lock task failed")??;
        Ok(lock)
    }

    /// The snapshot store of `session`'s project; `None` when snapshots are off.
    pub fn snapshots(&self, session: &Session) -> Option<crate::snapshot::Snapshots> {
        let root = Environment::discover(Path::new(&session.directory)).root;
        self.config.snapshot.enabled.then(|| {
            crate::snapshot::Snapshots::new(
                &self.data_dir,
                &root,
                self.config.snapshot.max_file_bytes,
            )
        })
    }

    async fn new_session(&self, directory: &str) -> anyhow::Result<Session> {
        let now = now_millis();
        let session = Session {
            id: crate::id::session_id(),
            title: String::new(),
            directory: directory.to_string(),
            parent_id: None,
            time_created: now,
            time_updated: now,
            cost: 0.0,
            tokens: Default::default(),
        };
        self.store.create_session(&session).await?;
        Ok(session)
    }

    /// The sandbox of the session's commands in the project at `root`:
    /// cairn's own config and data directories are never theirs to read.
    pub fn sandbox_policy(&self, root: &Path) -> crate::sandbox::Policy {
        crate::sandbox::Policy::new(&self.config.sandbox, root, &own_dirs(&self.data_dir))
    }

    /// The session's agents: agent files first (a repository's once
    /// trusted), config `[agent.NAME]` last, since the config has the last
    /// word; with what the files could not give.
    fn agents(&self, env: &Environment, default_model: &ModelRef) -> (Agents, Vec<String>) {
        let config = &self.config;
        let untrusted = if config
            .trust
            .trusts(&crate::session::agent_files::project_risks(env))
        {
            Vec::new()
        } else {
            crate::session::agent_files::project_directories(env)
        };
        let mut files = crate::session::agent_files::load(
            &crate::session::agent_files::directories(env),
            &untrusted,
            &env.root,
        );
        crate::session::agent_files::resolve_models(&mut files, default_model);
        let configured = config.agent.iter().map(|(name, agent)| {
            (
                name.clone(),
                AgentOverride {
                    model: agent.model.clone(),
                    steps: agent.steps,
                    temperature: agent.temperature.map(|t| t as f32),
                    prompt: agent.prompt.clone(),
                    ..Default::default()
                },
            )
        });
        let agents = Agents::new(files.agents.into_iter().chain(configured));
        (agents, files.problems)
    }

    fn session_ctx(&self, session: &Session, mode: Mode, default_model: ModelRef) -> SessionCtx {
        let config = &self.config;
        let mut env = Environment::discover(Path::new(&session.directory));
        let claude = claude_permissions::gather(&env.root, env.home.as_deref(), |risks| {
            config.trust.trusts(risks)
        });
        let rules =
            crate::permission::ruleset_with_imported(&config.permission, claude.rules, config.yolo);
        let mut restrictions = crate::permission::config_rules(&config.restrictions);
        restrictions.extend(claude.restrictions);
        let permissions = Arc::new(
            Permissions::new(rules, self.bus.clone(), mode).with_restrictions(restrictions),
        );
        env.config_dir = crate::paths::config_dir();
        env.extra_instructions = config.instructions.clone();
        let sandbox = self.sandbox_policy(&env.root);
        env.sandbox = sandbox.for_model();
        let (agents, agent_problems) = self.agents(&env, &default_model);
        // One directory per session: the model may page through its own
        // saved outputs unasked, not through other sessions' (or projects').
        let tool_output_dir = self
            .data_dir
            .join(crate::paths::TOOL_OUTPUT_DIR)
            .join(&session.id);
        // The user's own hooks always; a repository's once trusted.
        let hooks = crate::hook::discover(
            &config.hooks,
            &env.root,
            crate::paths::home().as_deref(),
            |risk| config.trust.trusts(std::slice::from_ref(risk)),
        );
        let settings = Settings {
            compaction: config.compaction.clone(),
            doom_threshold: config.doom_loop.threshold as usize,
            doom_hard_stop: config.doom_loop.hard_stop as usize,
            tool_limits: OutputLimits {
                max_lines: config.tool_output.max_lines,
                max_bytes: config.tool_output.max_bytes,
                bash_timeout: std::time::Duration::from_millis(config.bash.timeout_ms),
            },
            tool_output_dir,
            default_agent: config.default_agent.as_str().to_string(),
            retry: Default::default(),
            task: config.task.clone(),
            small_model: config.small_model.clone(),
            sandbox: Arc::new(sandbox),
            editor: self.editor.clone(),
            hooks: Arc::new(crate::hook::Hooks::new(
                hooks.hooks,
                env.root.clone(),
                env.cwd.clone(),
                self.data_dir.join("cairn.db"),
            )),
            commands_trusted: config.trust.trusts(&command_risks(&env)),
        };
        let snapshots = self.snapshots(session);
        let hooks_problems = hooks.problems;
        let ctx = SessionCtx {
            session_id: session.id.clone(),
            depth: 0,
            writer: Writer::new(self.store.clone(), self.bus.clone()),
            tools: self.tools.clone(),
            permissions,
            agents,
            models: self.models.clone(),
            settings,
            env,
            default_model,
            accounting: Default::default(),
            kept_view: Default::default(),
            reported: Default::default(),
            remote_instructions: Default::default(),
            instruction_folders: Default::default(),
            snapshots,
            snapshot_chain: Default::default(),
        };
        for problem in agent_problems
            .iter()
            .chain(&hooks_problems)
            .chain(&claude.warnings)
        {
            ctx.report_once(problem);
        }
        if let Some(warning) = ctx.settings.sandbox.warning() {
            ctx.report_once(&warning);
        }
        ctx
    }
}

/// cairn's own config and data directories: no command reads them.
fn own_dirs(data_dir: &Path) -> Vec<PathBuf> {
    crate::paths::config_dir()
        .into_iter()
        .chain([data_dir.to_path_buf()])
        .collect()
}

/// Every secret the config gives cairn: provider keys (inline, from their
/// variables, and any `*_API_KEY` variable), custom header values, and
/// passwords in a `base_url`.
fn config_secrets(config: &Config) -> Vec<String> {
    let from_env = |name: &str| std::env::var(name).ok();
    let mut secrets: Vec<String> = std::env::vars()
        .filter(|(name, _)| name.ends_with("_API_KEY"))
        .map(|(_, value)| value)
        .collect();
    secrets.extend(crate::provider::presets::key_variables().filter_map(from_env));
    for provider in config.provider.values() {
        secrets.extend(provider.api_key.clone());
        secrets.extend(
            provider
                .api_key_env
                .as_ref()
                .and_then(|name| from_env(name.as_str())),
        );
        secrets.extend(provider.headers.values().cloned());
        secrets.extend(
            provider
                .base_url
                .as_ref()
                .and_then(|url| crate::secret::url_password(url.as_str()).map(str::to_string)),
        );
    }
    secrets
}
