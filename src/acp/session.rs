//! Session mapping: an ACP session is an ordinary cairn session.
//!
//! Each one is opened by `app::App` in the editor's `cwd`, with the editor's
//! MCP servers added to the configured ones, and stored like any other (the
//! ACP session id *is* the cairn session id), so `cairn --continue` in a
//! terminal picks it up. Owns the open sessions of one connection and what
//! ACP adds to them: the chosen mode (agent) and the cancel flag of the turn.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, McpServer, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionInfo, SessionMode, SessionModeState,
};

use crate::app::{App, SessionChoice};
use crate::config::mcp::ServerConfig;
use crate::config::{Config, LoadOptions};
use crate::message::Session;
use crate::permission::Mode;
use crate::session::agent::{BUILD, PLAN};
use crate::session::command::Command;
use crate::session::runtime::SessionHandle;
use crate::tool::EditorFiles;

/// The editor's files for a session about to open, and where the
/// session's id goes once it exists (the requests to the editor name it).
pub type Editor = (Arc<dyn EditorFiles>, Arc<OnceLock<String>>);

/// One open session.
pub struct Open {
    pub app: App,
    pub session: Session,
    pub handle: SessionHandle,
    /// The agent the next prompt runs as (the session mode).
    agent: Mutex<String>,
    /// The model of the next prompts, as the editor's config option shows it.
    model: Mutex<String>,
    /// Set by `session/cancel`: the running turn ends `cancelled`.
    cancelled: AtomicBool,
    /// One turn at a time: a second prompt waits for the first.
    pub turn: tokio::sync::Mutex<()>,
}

impl Open {
    pub fn cwd(&self) -> PathBuf {
        PathBuf::from(&self.session.directory)
    }

    pub fn agent(&self) -> String {
        self.agent
            .lock()
            .map(|a| a.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Switches the session mode; false for a mode cairn does not have.
    pub fn set_agent(&self, mode: &str) -> bool {
        if ![BUILD, PLAN].contains(&mode) {
            return false;
        }
        match self.agent.lock() {
            Ok(mut agent) => *agent = mode.to_string(),
            Err(poisoned) => *poisoned.into_inner() = mode.to_string(),
        }
        true
    }

    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    /// Clears the flag at the start of a turn; reads it at the end.
    pub fn take_cancelled(&self) -> bool {
        self.cancelled.swap(false, Ordering::SeqCst)
    }

    /// The session's config options: the model, chosen from what `/model`
    /// offers in the terminal (configured models, and the catalog's models of
    /// providers whose key is set).
    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        let current = self.model.lock().map(|m| m.clone()).unwrap_or_default();
        let mut options: Vec<SessionConfigSelectOption> = self
            .app
            .model_choices(&[])
            .iter()
            .map(|choice| SessionConfigSelectOption::new(choice.model.to_string(), choice.label()))
            .collect();
        if !options.iter().any(|o| *o.value.0 == *current) {
            options.insert(
                0,
                SessionConfigSelectOption::new(current.clone(), current.clone()),
            );
        }
        vec![
            SessionConfigOption::select(MODEL_OPTION, "Model", current, options)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// Makes `model` the model of the next prompts (as `/model provider/model`).
    ///
    /// # Errors
    /// `model` is not `provider/model`, or the session has stopped.
    pub async fn set_model(&self, model: &str) -> Result<(), String> {
        let parsed = crate::message::ModelRef::parse(model)?;
        let (reply, done) = tokio::sync::oneshot::channel();
        self.handle.send(Command::UseModel { model: parsed });
        self.handle.send(Command::Sync { reply });
        done.await
            .map_err(|_| "the session has stopped".to_string())?;
        match self.model.lock() {
            Ok(mut current) => *current = model.to_string(),
            Err(poisoned) => *poisoned.into_inner() = model.to_string(),
        }
        Ok(())
    }

    /// The modes the editor may switch between, this session's current.
    pub fn modes(&self) -> SessionModeState {
        let modes = vec![
            SessionMode::new(BUILD, "Build")
                .description("edits files and runs commands (asks as configured)"),
            SessionMode::new(PLAN, "Plan").description("reads and plans; makes no changes"),
        ];
        SessionModeState::new(self.agent(), modes)
    }
}

/// The id of the model's config option.
pub const MODEL_OPTION: &str = "model";

/// Newest messages read to find a loaded session's last model.
const RECENT_MESSAGES: usize = 50;

/// Sessions `session/list` returns at most (it offers no paging yet).
const LIST_LIMIT: usize = 200;

/// The open sessions of one connection, by id.
pub struct Sessions {
    config: Config,
    /// How `config` was loaded: a session in another directory loads that
    /// project's configuration the same way (its `cairn.toml`, its trust).
    options: LoadOptions,
    data_dir: PathBuf,
    open: Mutex<HashMap<String, Arc<Open>>>,
    /// What the client said at `initialize` it serves of its files.
    fs: Mutex<FileSystemCapabilities>,
}

impl Sessions {
    pub fn new(config: Config, options: LoadOptions, data_dir: PathBuf) -> Self {
        Self {
            config,
            options,
            data_dir,
            open: Mutex::new(HashMap::new()),
            fs: Mutex::new(FileSystemCapabilities::default()),
        }
    }

    /// The configuration in `cwd`: the one loaded at start when it is the
    /// process's directory, else loaded for that project as it was for this one.
    async fn config_for(&self, cwd: &Path) -> anyhow::Result<Config> {
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        if same(cwd, &self.options.cwd) {
            return Ok(self.config.clone());
        }
        let mut options = self.options.clone();
        options.cwd = cwd.to_path_buf();
        let mut loaded = crate::app::load_config(&options)?;
        for warning in &loaded.warnings {
            tracing::warn!("{}: {warning}", cwd.display());
        }
        crate::app::discover_local_model(&mut loaded.config).await?;
        Ok(loaded.config)
    }

    /// `session/list`: the stored sessions (not subagents'), newest first,
    /// in `cwd` when given.
    ///
    /// # Errors
    /// The store cannot be opened or read.
    pub async fn list(&self, cwd: Option<&Path>) -> anyhow::Result<Vec<SessionInfo>> {
        let store = crate::store::Store::open(&self.data_dir.join("cairn.db"))?;
        let sessions = store.list_sessions(LIST_LIMIT).await?;
        Ok(sessions
            .into_iter()
            .filter(|s| s.parent_id.is_none())
            .filter(|s| cwd.is_none_or(|cwd| Path::new(&s.directory) == cwd))
            .map(|s| {
                let title = (!s.title.is_empty()).then_some(s.title);
                SessionInfo::new(s.id, s.directory).title(title)
            })
            .collect())
    }

    pub fn set_fs(&self, fs: FileSystemCapabilities) {
        *self.fs.lock().unwrap_or_else(|e| e.into_inner()) = fs;
    }

    pub fn fs(&self) -> FileSystemCapabilities {
        self.fs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn get(&self, id: &str) -> Option<Arc<Open>> {
        self.lock().get(id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Open>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens (`choice`) a session in `cwd` with the editor's `servers`.
    ///
    /// # Errors
    /// No model is configured, the store cannot be opened, the session does
    /// not exist or is open in another cairn process.
    pub async fn open(
        &self,
        cwd: &Path,
        servers: &[McpServer],
        choice: SessionChoice,
        editor: Option<Editor>,
    ) -> anyhow::Result<Arc<Open>> {
        // ACP gives the session's directory as an absolute path; a relative
        // one would be read against wherever cairn happened to start.
        anyhow::ensure!(
            cwd.is_absolute(),
            "the session's cwd must be an absolute path, not {:?}",
            cwd.display().to_string()
        );
        if let SessionChoice::Id(id) = &choice
            && let Some(open) = self.get(id)
        {
            return Ok(open);
        }
        let mut config = self.config_for(cwd).await?;
        for server in servers {
            if let Some((name, server)) = server_config(server) {
                config.mcp.insert(name, server);
            }
        }
        let default_agent = config.default_agent.as_str().to_string();
        let mut app = App::open(config, cwd.to_path_buf(), &self.data_dir)?;
        app.editor = editor.as_ref().map(|(files, _)| files.clone());
        let (session, handle) = app.start(choice, Mode::Interactive).await?;
        // A loaded session offers the model its next prompt uses, as the
        // TUI's status line shows it.
        let recent = app
            .store
            .messages_before(&session.id, None, RECENT_MESSAGES)
            .await?;
        let model = app
            .next_model(&session.id, &recent)
            .await?
            .map(|m| m.to_string())
            .unwrap_or_default();
        if let Some((_, id)) = &editor {
            let _ = id.set(session.id.clone());
        }
        let agent = if [BUILD, PLAN].contains(&default_agent.as_str()) {
            default_agent
        } else {
            BUILD.to_string()
        };
        let open = Arc::new(Open {
            app,
            session,
            handle,
            agent: Mutex::new(agent),
            model: Mutex::new(model),
            cancelled: AtomicBool::new(false),
            turn: tokio::sync::Mutex::new(()),
        });
        self.lock().insert(open.session.id.clone(), open.clone());
        Ok(open)
    }
}

/// An editor's MCP server as a config entry (`None` for a transport cairn
/// does not speak: SSE).
fn server_config(server: &McpServer) -> Option<(String, ServerConfig)> {
    match server {
        McpServer::Stdio(stdio) => Some((
            stdio.name.clone(),
            ServerConfig {
                command: Some(stdio.command.display().to_string()),
                args: stdio.args.clone(),
                env: stdio
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect::<BTreeMap<_, _>>(),
                ..Default::default()
            },
        )),
        McpServer::Http(http) => Some((
            http.name.clone(),
            ServerConfig {
                url: Some(http.url.clone()),
                headers: http
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
                ..Default::default()
            },
        )),
        _ => {
            tracing::warn!("an MCP server over a transport cairn does not speak is skipped");
            None
        }
    }
}
