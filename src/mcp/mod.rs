//! The MCP client: starts the configured servers in the background, keeps
//! each one's state and tool list, and runs calls with a timeout and the
//! call's cancel token. Tools are exposed to the model as `SERVER_tool`.
//!
//! Built on `rmcp` (the official SDK) so the protocol handshake, framing and
//! version negotiation are the SDK's, not ours. A server that fails, crashes
//! or hangs only changes its own [`State`]; it never fails the session.

mod content;
mod http;
pub mod prompt;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
use rmcp::service::{NotificationContext, RunningService, RunningServiceCancellationToken};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Which servers to start is configuration: it lives in the bottom layer
/// with the rest of it, and is re-exported here under its old path.
pub use crate::config::mcp::{self as config, ServerConfig, State};
pub use prompt::{McpPrompt, PromptCommand};

use crate::provider::ToolSpec;
use crate::tool::{ToolError, ToolOutput, ToolScope};

/// One tool a server offers.
#[derive(Debug, Clone)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// What `/mcp` and the status line show about one server.
#[derive(Debug, Clone)]
pub struct Status {
    pub name: String,
    pub state: State,
    pub tools: usize,
    pub prompts: usize,
    pub last_error: Option<String>,
}

type Client = RunningService<RoleClient, Handler>;

#[derive(Default)]
struct Inner {
    state: Option<State>,
    tools: Vec<McpTool>,
    prompts: Vec<McpPrompt>,
    last_error: Option<String>,
    /// Where requests go while the server is ready; the connection itself
    /// is owned by the task that watches it end (see [`watch_exit`]).
    client: Option<Peer<RoleClient>>,
    /// Closes the connection on a restart or shutdown.
    stop: Option<RunningServiceCancellationToken>,
    /// Bumped by every (re)start: a connection that ends after its server
    /// was restarted does not fail the new one.
    generation: u64,
    /// The stdio server's process group (its pid: it is started as the
    /// group's leader), killed whole when cairn stops it or exits, so a
    /// server still starting, or one that runs `npx` → `node`, is not left
    /// behind.
    group: Option<u32>,
}

impl Inner {
    /// Forgets the connection and kills what it ran; the caller sets the state.
    fn disconnect(&mut self) {
        self.client = None;
        self.tools.clear();
        self.prompts.clear();
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        if let Some(group) = self.group.take() {
            kill_group(group);
        }
    }
}

/// SIGKILL to a server's whole process group. A group that is already gone
/// (ESRCH) is fine: the server exited by itself.
fn kill_group(group: u32) {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return;
    };
    if group > 1 {
        // SAFETY: kill(2) with a negative pid signals the process group this
        // server was started as the leader of; no memory is involved.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
    }
}

struct Server {
    name: String,
    config: ServerConfig,
    inner: Mutex<Inner>,
    /// Bumped on every state change, so waiters wake on events.
    changed: watch::Sender<u64>,
    /// The hub's, bumped with `changed`: the TUI redraws `/mcp` on it.
    hub_changed: Arc<watch::Sender<u64>>,
    /// Where a `sandbox = true` server runs confined.
    sandbox: Option<Arc<crate::sandbox::Policy>>,
    /// Listed only (a repository's server held back, a server file that
    /// does not parse): never started, never restarted.
    held: bool,
}

impl Server {
    fn update(&self, apply: impl FnOnce(&mut Inner)) {
        if let Ok(mut inner) = self.inner.lock() {
            apply(&mut inner);
        }
        self.changed.send_modify(|n| *n += 1);
        self.hub_changed.send_modify(|n| *n += 1);
    }

    fn state(&self) -> State {
        self.inner
            .lock()
            .ok()
            .and_then(|inner| inner.state.clone())
            .unwrap_or(State::Starting)
    }

    /// A repository's server that must never start (untrusted, shadowed,
    /// or a file that does not parse).
    fn is_held(&self) -> bool {
        self.held
    }

    fn fail(&self, error: String) {
        tracing::warn!("mcp server {}: {error}", self.name);
        self.update(|inner| {
            inner.disconnect();
            inner.state = Some(State::Failed);
            inner.last_error = Some(error);
        });
    }

    fn generation(&self) -> u64 {
        self.inner.lock().map(|inner| inner.generation).unwrap_or(0)
    }
}

impl Drop for Server {
    /// The last safety net: whatever way cairn ends, a server it started
    /// does not outlive it.
    fn drop(&mut self) {
        if let Ok(inner) = self.inner.get_mut() {
            inner.disconnect();
        }
    }
}

/// Re-lists a server's tools when it says they changed.
struct Handler {
    server: Weak<Server>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let peer = context.peer.clone();
        // Listing is a request; it must not block the notification loop.
        tokio::spawn(async move {
            match peer.list_all_tools().await {
                Ok(tools) => server.update(|inner| inner.tools = convert_tools(tools)),
                Err(error) => server.update(|inner| {
                    inner.last_error = Some(format!("listing tools: {error}"));
                }),
            }
        });
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let peer = context.peer.clone();
        tokio::spawn(async move {
            match peer.list_all_prompts().await {
                Ok(prompts) => server.update(|inner| inner.prompts = prompt::convert(prompts)),
                Err(error) => server.update(|inner| {
                    inner.last_error = Some(format!("listing prompts: {error}"));
                }),
            }
        });
    }
}

fn convert_tools(tools: Vec<rmcp::model::Tool>) -> Vec<McpTool> {
    tools
        .into_iter()
        .map(|tool| McpTool {
            name: tool.name.to_string(),
            description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
            schema: Value::Object((*tool.input_schema).clone()),
        })
        .collect()
}

/// All configured servers.
#[derive(Default)]
pub struct Hub {
    servers: Vec<Arc<Server>>,
    started: std::sync::atomic::AtomicBool,
    changed: Arc<watch::Sender<u64>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.servers.iter().map(|server| &server.name))
            .finish()
    }
}

impl Hub {
    /// The servers, not started yet (see [`Hub::start`]).
    pub fn new(servers: BTreeMap<String, ServerConfig>) -> Arc<Self> {
        Self::discovered(
            config::Discovery {
                servers,
                ..Default::default()
            },
            None,
        )
    }

    /// The servers to start, and the repository's servers held back (listed
    /// by `/mcp` with their reason, never started). Servers whose entry
    /// says `sandbox = true` run confined by `sandbox`.
    pub fn discovered(
        discovery: config::Discovery,
        sandbox: Option<Arc<crate::sandbox::Policy>>,
    ) -> Arc<Self> {
        let lookup = |name: &str| std::env::var(name).ok();
        let changed = Arc::new(watch::channel(0).0);
        let server = |name: String, config: ServerConfig, inner: Inner, held: bool| {
            Arc::new(Server {
                name,
                config,
                inner: Mutex::new(inner),
                changed: watch::channel(0).0,
                hub_changed: changed.clone(),
                sandbox: sandbox.clone(),
                held,
            })
        };
        let mut servers: Vec<Arc<Server>> = discovery
            .servers
            .into_iter()
            .map(|(name, config)| server(name, config.expanded(&lookup), Inner::default(), false))
            .collect();
        servers.extend(discovery.held.into_iter().map(|held| {
            let inner = Inner {
                state: Some(held.state),
                last_error: Some(held.note),
                ..Inner::default()
            };
            server(held.name, ServerConfig::default(), inner, true)
        }));
        Arc::new(Self {
            servers,
            started: std::sync::atomic::AtomicBool::new(false),
            changed,
        })
    }

    /// Starts every enabled server in the background and returns at once;
    /// later calls do nothing. Must be called inside a tokio runtime.
    pub fn start(&self) {
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        for server in self.servers.iter().filter(|server| !server.is_held()) {
            spawn_connect(server.clone());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Changes with every server's state, tools or prompts.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Waits until no server is still starting, or `limit` passes.
    pub async fn wait_ready(&self, limit: Duration) {
        let all = async {
            for server in &self.servers {
                let mut changes = server.changed.subscribe();
                while server.state() == State::Starting {
                    if changes.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(limit, all).await;
    }

    pub fn statuses(&self) -> Vec<Status> {
        self.servers
            .iter()
            .map(|server| {
                let inner = server.inner.lock();
                let (tools, prompts, last_error) = inner
                    .map(|inner| {
                        let error = inner.last_error.clone();
                        (inner.tools.len(), inner.prompts.len(), error)
                    })
                    .unwrap_or((0, 0, None));
                Status {
                    name: server.name.clone(),
                    state: server.state(),
                    tools,
                    prompts,
                    last_error,
                }
            })
            .collect()
    }

    /// The ready servers' tools as the model sees them.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for server in &self.servers {
            let Ok(inner) = server.inner.lock() else {
                continue;
            };
            for tool in &inner.tools {
                specs.push(ToolSpec {
                    name: exposed_name(&server.name, &tool.name),
                    description: tool.description.clone(),
                    parameters: tool.schema.clone(),
                });
            }
        }
        specs
    }

    /// The server and tool behind an exposed name.
    fn resolve(&self, exposed: &str) -> Option<(Arc<Server>, String)> {
        self.servers.iter().find_map(|server| {
            let inner = server.inner.lock().ok()?;
            inner
                .tools
                .iter()
                .find(|tool| exposed_name(&server.name, &tool.name) == exposed)
                .map(|tool| (server.clone(), tool.name.clone()))
        })
    }

    /// Claude Code's name of an exposed tool, `mcp__server__tool`, for
    /// hook matchers written for it.
    pub fn claude_name(&self, exposed: &str) -> Option<String> {
        let (server, tool) = self.resolve(exposed)?;
        Some(format!("mcp__{}__{tool}", server.name))
    }

    pub fn has_tool(&self, exposed: &str) -> bool {
        self.resolve(exposed).is_some()
    }

    /// The ready servers' prompts as slash commands, sorted.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut commands: Vec<PromptCommand> = self
            .servers
            .iter()
            .filter_map(|server| server.inner.lock().ok().map(|inner| (server, inner)))
            .flat_map(|(server, inner)| {
                inner
                    .prompts
                    .iter()
                    .map(|found| PromptCommand {
                        command: prompt::command_name(&server.name, &found.name),
                        usage: prompt::usage(found),
                        description: found.description.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        commands.sort_by(|a, b| a.command.cmp(&b.command));
        commands
    }

    /// The server and prompt behind `/server:prompt`.
    fn resolve_prompt(&self, command: &str) -> Option<(Arc<Server>, McpPrompt)> {
        self.servers.iter().find_map(|server| {
            let inner = server.inner.lock().ok()?;
            inner
                .prompts
                .iter()
                .find(|found| prompt::command_name(&server.name, &found.name) == command)
                .map(|found| (server.clone(), found.clone()))
        })
    }

    /// `/server:prompt args…` as the text of a user message; `None` when the
    /// line names no prompt of a ready server (it is then no MCP command).
    pub async fn expand_prompt(&self, line: &str) -> Option<Result<String, String>> {
        let line = line.trim();
        let (command, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let (server, found) = self.resolve_prompt(command)?;
        Some(self.get_prompt(&server, command, &found, args).await)
    }

    async fn get_prompt(
        &self,
        server: &Server,
        command: &str,
        found: &McpPrompt,
        args: &str,
    ) -> Result<String, String> {
        let arguments = prompt::bind_arguments(command, found, args)?;
        let client = server
            .inner
            .lock()
            .ok()
            .and_then(|inner| inner.client.clone())
            .ok_or_else(|| format!("{command}: the server `{}` is not running", server.name))?;
        let mut params = GetPromptRequestParams::new(found.name.clone());
        params.arguments = Some(arguments);
        let timeout = server.config.timeout();
        match tokio::time::timeout(timeout, client.get_prompt(params)).await {
            Err(_) => Err(format!(
                "{command}: no answer within {} s",
                timeout.as_secs()
            )),
            Ok(Err(error)) => Err(format!(
                "{command}: {}",
                without_type_names(&error.to_string())
            )),
            Ok(Ok(result)) => match prompt::messages_text(&result) {
                text if text.trim().is_empty() => Err(format!("{command}: the prompt is empty")),
                text => Ok(text),
            },
        }
    }

    /// Stops and starts `name` again.
    pub fn restart(&self, name: &str) -> bool {
        let found = self
            .servers
            .iter()
            .find(|server| server.name == name && !server.is_held());
        let Some(server) = found else {
            return false;
        };
        server.update(|inner| {
            inner.disconnect();
            inner.state = None;
        });
        spawn_connect(server.clone());
        true
    }

    /// Stops every server now, killing each stdio server's process group
    /// (those still starting too). For a cairn that is about to exit: the
    /// servers stay stopped.
    pub fn shutdown(&self) {
        for server in &self.servers {
            if let Ok(mut inner) = server.inner.lock() {
                inner.generation += 1;
                inner.disconnect();
            }
        }
    }

    /// Runs an MCP tool after asking the `mcp` permission for `server/tool`.
    pub async fn call(
        &self,
        exposed: &str,
        input: Value,
        scope: &ToolScope,
    ) -> Result<ToolOutput, ToolError> {
        let (server, tool) = self
            .resolve(exposed)
            .ok_or_else(|| ToolError::UnknownTool {
                name: exposed.to_string(),
                available: self
                    .specs()
                    .into_iter()
                    .map(|spec| spec.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let pattern = format!("{}/{tool}", server.name);
        let arguments = serde_json::to_string_pretty(&input).unwrap_or_else(|_| input.to_string());
        scope
            .ask_showing(
                Some(crate::permission::Preview::Call { arguments }),
                "mcp",
                vec![pattern.clone()],
                crate::permission::exact_always(&pattern),
                format!("Call {tool} (MCP server {})", server.name),
                json!({"server": server.name, "tool": tool, "input": input}),
            )
            .await?;
        let client = server
            .inner
            .lock()
            .ok()
            .and_then(|inner| inner.client.clone())
            .ok_or_else(|| call_failed(&server.name, "the server is not running"))?;
        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments {
                    tool: exposed.to_string(),
                    detail: format!("expected an object, got {other}"),
                });
            }
        };
        let mut params = CallToolRequestParams::new(tool.clone());
        params.arguments = arguments;
        let timeout = server.config.timeout();
        let result = tokio::select! {
            () = scope.cancel.cancelled() => {
                return Err(ToolError::Interrupted { output: String::new() })
            }
            result = tokio::time::timeout(timeout, client.call_tool(params)) => result,
        };
        match result {
            Err(_) => {
                server.update(|inner| {
                    inner.last_error = Some(format!("{tool} timed out after {timeout:?}"));
                });
                Err(call_failed(
                    &server.name,
                    &format!("no answer within {} s", timeout.as_secs()),
                ))
            }
            Ok(Err(error)) => {
                // Over HTTP the connection's task may outlive a dead server:
                // a request that lost its transport is the sign it is gone.
                let lost = matches!(
                    error,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                );
                let error = without_type_names(&error.to_string());
                if lost || client.is_transport_closed() {
                    server.fail(format!("the server exited during {tool}: {error}"));
                    return Err(call_failed(
                        &server.name,
                        &format!(
                            "the server exited during the call ({error}); its tools are withdrawn until it is restarted"
                        ),
                    ));
                }
                Err(call_failed(&server.name, &error))
            }
            Ok(Ok(result)) => content::to_output(exposed, &result),
        }
    }
}

/// `/mcp`: one line per server (state, tool count, last error), or a line
/// saying none is configured.
pub fn render(statuses: &[Status]) -> String {
    if statuses.is_empty() {
        return "no MCP servers configured ([mcp.NAME] in cairn.toml, or .mcp.json)\n".into();
    }
    let mut out = String::new();
    for status in statuses {
        let state = status.state.label();
        out.push_str(&format!("{}: {state}, {} tools", status.name, status.tools));
        if status.prompts > 0 {
            out.push_str(&format!(", {} prompts", status.prompts));
        }
        match (&status.state, &status.last_error) {
            (State::Untrusted | State::Shadowed, Some(note)) => out.push_str(&format!(" ({note})")),
            (_, Some(error)) => out.push_str(&format!(" (last error: {error})")),
            (_, None) => {}
        }
        out.push('\n');
    }
    out
}

fn call_failed(server: &str, detail: &str) -> ToolError {
    ToolError::Failed(format!("MCP server `{server}`: {detail}"))
}

/// The longest tool name providers take (OpenAI rejects longer ones).
pub const MAX_TOOL_NAME: usize = 64;

/// `SERVER_tool`, with anything a provider would reject in a tool name
/// replaced by `_`. A name that had to be changed (characters replaced, or
/// longer than [`MAX_TOOL_NAME`]) ends in `_` and 8 hex digits of the
/// original's hash, cut to fit: `my.server` and `my_server` stay two names,
/// a 78-character one is accepted, and both are the same on every run.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let raw = format!("{server}_{tool}");
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean == raw && clean.len() <= MAX_TOOL_NAME {
        return clean;
    }
    let tag = format!("_{:08x}", fnv1a(raw.as_bytes()) as u32);
    let head: String = clean.chars().take(MAX_TOOL_NAME - tag.len()).collect();
    format!("{head}{tag}")
}

/// Claude Code's spelling of an MCP tool, `mcp__SERVER__TOOL` (in agent
/// files' `tools:` lists and permission rules), as cairn exposes that tool
/// ([`exposed_name`]); `None` for any other name, and for the server-wide
/// `mcp__SERVER` (it names no one tool). The server is what comes before the
/// first `__`: Claude Code cannot tell `a__b` apart either.
pub fn from_claude_name(name: &str) -> Option<String> {
    let wanted = ClaudeToolName::parse(name)?;
    Some(exposed_name(&wanted.server, wanted.tool.as_deref()?))
}

/// What Claude Code's `mcp__SERVER__TOOL` spelling names (in permission
/// rules, agents' `tools:` lists, hooks' matchers): one tool, or with
/// `mcp__SERVER` alone every tool of that server. `None` for any other name.
/// Claude Code writes the server's name with characters outside
/// `[A-Za-z0-9_-]` as `_`, so [`ClaudeToolName::matches`] compares names
/// cleaned the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeToolName {
    pub server: String,
    pub tool: Option<String>,
}

impl ClaudeToolName {
    pub fn parse(spelling: &str) -> Option<Self> {
        let rest = spelling.strip_prefix("mcp__")?;
        let (server, tool) = match rest.split_once("__") {
            Some((server, tool)) => (server, Some(tool.to_string())),
            None => (rest, None),
        };
        (!server.is_empty() && tool.as_deref() != Some("")).then(|| Self {
            server: server.to_string(),
            tool,
        })
    }

    /// Whether this spelling covers `tool` of the server named `server`.
    pub fn matches(&self, server: &str, tool: &str) -> bool {
        let clean = |name: &str| -> String {
            name.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        clean(server) == self.server
            && self
                .tool
                .as_deref()
                .is_none_or(|wanted| wanted == clean(tool))
    }
}

impl Hub {
    /// cairn's exposed names for Claude Code's `mcp__SERVER__TOOL` (or
    /// `mcp__SERVER`) among the ready servers' tools; empty when none.
    pub fn from_claude_spelling(&self, spelling: &str) -> Vec<String> {
        let Some(wanted) = ClaudeToolName::parse(spelling) else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for server in &self.servers {
            let Ok(inner) = server.inner.lock() else {
                continue;
            };
            for tool in &inner.tools {
                if wanted.matches(&server.name, &tool.name) {
                    names.push(exposed_name(&server.name, &tool.name));
                }
            }
        }
        names
    }
}

/// FNV-1a, 64 bits: a hash that never changes between builds or Rust
/// versions (std's `DefaultHasher` may), for names that must be stable.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn spawn_connect(server: Arc<Server>) {
    if !server.config.is_enabled() {
        server.update(|inner| inner.state = Some(State::Disabled));
        return;
    }
    let mut generation = 0;
    server.update(|inner| {
        inner.generation += 1;
        generation = inner.generation;
        inner.state = Some(State::Starting);
    });
    tokio::spawn(async move {
        let timeout = server.config.timeout();
        let connected = tokio::time::timeout(timeout, connect(&server)).await;
        if server.generation() != generation {
            // Restarted or shut down meanwhile: this connection is stale.
            return;
        }
        match connected {
            Ok(Ok((client, tools, prompts))) => {
                server.update(|inner| {
                    inner.tools = tools;
                    inner.prompts = prompts;
                    inner.client = Some(client.peer().clone());
                    inner.stop = Some(client.cancellation_token());
                    inner.state = Some(State::Ready);
                    inner.last_error = None;
                });
                watch_exit(server, client, generation).await;
            }
            Ok(Err(error)) => server.fail(error),
            Err(_) => server.fail(format!("did not start within {} s", timeout.as_secs())),
        }
    });
}

/// Waits for the connection to end: a server that exits (or whose HTTP
/// session breaks) while ready is failed at once, so its tools leave the
/// next request and the status line and `/mcp` say so, instead of every
/// later call failing with "Transport closed".
async fn watch_exit(server: Arc<Server>, client: Client, generation: u64) {
    let weak = Arc::downgrade(&server);
    drop(server);
    let ended = client.waiting().await;
    let Some(server) = weak.upgrade() else {
        return;
    };
    if server.generation() != generation || server.state() != State::Ready {
        return;
    }
    let why = match ended {
        Ok(rmcp::service::QuitReason::Cancelled) => "the connection was closed",
        Ok(_) => "the server exited (its connection closed)",
        Err(_) => "the connection's task ended",
    };
    server.fail(why.to_string());
}

type Connected = (Client, Vec<McpTool>, Vec<McpPrompt>);

async fn connect(server: &Arc<Server>) -> Result<Connected, String> {
    let config = &server.config;
    let handler = Handler {
        server: Arc::downgrade(server),
    };
    let client = match (&config.command, &config.url) {
        (Some(program), _) => {
            let policy = server.sandbox.as_deref().filter(|_| config.sandbox);
            let transport = child(config, program, policy)?;
            // Recorded before the handshake: a server still starting is
            // killed like a ready one.
            let group = transport.id();
            server.update(|inner| inner.group = group);
            handler.serve(transport).await
        }
        (None, Some(url)) => handler.serve(http::transport(url, &config.headers)?).await,
        (None, None) => return Err("neither `command` nor `url` is set".to_string()),
    }
    .map_err(|error| {
        format!(
            "handshake failed: {}",
            without_type_names(&error.to_string())
        )
    })?;
    let tools = client
        .list_all_tools()
        .await
        .map_err(|error| format!("listing tools failed: {error}"))?;
    // Prompts are optional: only asked of servers that offer them, and a
    // failed listing costs the prompts, not the server.
    let offers_prompts = client
        .peer_info()
        .is_some_and(|info| info.capabilities.prompts.is_some());
    let prompts = if offers_prompts {
        client.list_all_prompts().await.unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok((client, convert_tools(tools), prompt::convert(prompts)))
}

/// rmcp's transport errors name the transport's Rust type in brackets
/// (`Transport [rmcp::…<cairn::mcp::http::Http>] error: Auth required`):
/// noise in `/mcp`, so it is dropped.
fn without_type_names(message: &str) -> String {
    let Some(start) = message.find(" [rmcp::") else {
        return message.to_string();
    };
    let mut depth = 0usize;
    for (offset, c) in message[start + 1..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' if depth == 1 => {
                let end = start + 1 + offset + 1;
                return format!("{}{}", &message[..start], &message[end..]);
            }
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    message.to_string()
}

/// The stdio transport: `program` as a child process.
/// The server's process, confined by `sandbox` when it asks for it.
fn child(
    config: &ServerConfig,
    program: &str,
    sandbox: Option<&crate::sandbox::Policy>,
) -> Result<TokioChildProcess, String> {
    let mut command = tokio::process::Command::new(program);
    command.args(&config.args).envs(&config.env);
    // Its own process group: the terminal's Ctrl+C is cairn's to handle,
    // and stopping the server kills what it started too (`npx` → `node`).
    command.process_group(0);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    let confinement = match sandbox {
        Some(policy) => crate::sandbox::Confinement::prepare(policy)
            .map_err(|error| format!("not started: its sandbox could not be set up ({error})"))?,
        None => None,
    };
    if let Some(mut confinement) = confinement {
        // SAFETY: `apply` makes system calls only, which is what may run
        // between fork and exec.
        unsafe {
            command.pre_exec(move || confinement.apply());
        }
    }
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot run `{program}`: {error}"))?;
    Ok(transport)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_type_names_are_dropped_from_errors() {
        let cases = [
            (
                "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<cairn::mcp::http::Http>>] error: Auth required, when send initialize request",
                "Send message error Transport error: Auth required, when send initialize request",
            ),
            (
                "connection closed: initialize response",
                "connection closed: initialize response",
            ),
            ("odd [rmcp::unclosed", "odd [rmcp::unclosed"),
        ];
        for (message, want) in cases {
            assert_eq!(without_type_names(message), want);
        }
    }

    #[test]
    fn claude_code_spelling_table() {
        let some = |server: &str, tool: Option<&str>| {
            Some(ClaudeToolName {
                server: server.into(),
                tool: tool.map(str::to_string),
            })
        };
        let cases = [
            (
                "mcp__github__create_issue",
                some("github", Some("create_issue")),
            ),
            ("mcp__github", some("github", None)),
            ("mcp__my_server__do__it", some("my_server", Some("do__it"))),
            ("mcp____x", None),
            ("mcp__github__", None),
            ("github_create_issue", None),
            ("Bash", None),
        ];
        for (spelling, want) in cases {
            assert_eq!(ClaudeToolName::parse(spelling), want, "{spelling}");
        }
        let dotted = ClaudeToolName::parse("mcp__my_server__read").expect("parses");
        assert!(dotted.matches("my.server", "read"));
        assert!(!dotted.matches("my.server", "write"));
        let all = ClaudeToolName::parse("mcp__fs").expect("parses");
        assert!(all.matches("fs", "anything") && !all.matches("fs2", "x"));
    }

    #[test]
    fn exposed_names_are_provider_safe() {
        let cases = [
            ("github", "create_issue", "github_create_issue"),
            ("fs", "read-file", "fs_read-file"),
        ];
        for (server, tool, want) in cases {
            assert_eq!(exposed_name(server, tool), want);
        }
        let changed = exposed_name("my.server", "do thing");
        assert!(changed.starts_with("my_server_do_thing_"), "{changed}");
        assert_ne!(
            changed,
            exposed_name("my_server", "do thing"),
            "no collision"
        );
        assert_eq!(changed, exposed_name("my.server", "do thing"), "stable");
        let long = exposed_name(
            "github-enterprise-server-production",
            "create_or_update_repository_file_contents",
        );
        assert_eq!(long.len(), MAX_TOOL_NAME, "{long}");
        assert!(long.starts_with("github-enterprise-server-production_create_or_upd"));
        let other = exposed_name(
            "github-enterprise-server-production",
            "create_or_update_repository_file_contents_v2",
        );
        assert_ne!(long, other, "names cut to the same head stay apart");
    }

    #[test]
    fn claude_code_mcp_names_map_to_exposed_names() {
        let cases = [
            ("mcp__fixture__echo", Some("fixture_echo".to_string())),
            (
                "mcp__github__create_issue",
                Some("github_create_issue".to_string()),
            ),
            ("mcp__github", None),
            ("mcp____echo", None),
            ("mcp__github__", None),
            ("Read", None),
            ("github_create_issue", None),
        ];
        for (name, want) in cases {
            assert_eq!(from_claude_name(name), want, "{name}");
        }
    }
}
