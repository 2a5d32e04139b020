//! `cairn acp`: the Agent Client Protocol front end, so an editor (Zed,
//! JetBrains, Neovim, Emacs) drives a cairn session over stdin/stdout.
//!
//! Protocol wiring lives here: one handler per ACP method, on the official
//! SDK's agent side (`agent-client-protocol`, which also frames JSON-RPC and
//! answers malformed or unknown messages with an error and keeps serving).
//! The jobs are split by file: `session` (ACP session = cairn session),
//! `turn` (a prompt and its stop reason), `update` (bus events -> session
//! updates, history replay), `ask` (permission questions), `commands`
//! (slash commands as ACP commands). Like `headless`, it talks to a session
//! only through `session::command` and the bus.
//!
//! stdout carries protocol messages only: logs go to the log file.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionListCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Lines};

use crate::app::SessionChoice;
use crate::config::{Config, LoadOptions};
use crate::session::command::Command;

mod ask;
mod commands;
mod files;
mod session;
mod turn;
mod update;

use session::{Open, Sessions};

/// Serves ACP on stdin/stdout until the editor closes the connection;
/// `config` was loaded with `options` in the process's directory.
///
/// # Errors
/// The transport failed (stdin or stdout closed abnormally).
pub async fn serve(config: Config, options: LoadOptions, data_dir: PathBuf) -> anyhow::Result<()> {
    let sessions = Arc::new(Sessions::new(config, options, data_dir));
    let (s0, s1, s2, s3, s4, s5, s6, s7) = (
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
    );
    Agent
        .v1()
        .name("cairn")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                s0.set_fs(request.client_capabilities.fs.clone());
                responder.respond(initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                new_session(s1.clone(), request, responder, cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                load_session(s2.clone(), request, responder, cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| prompt(&s3, request, responder, &cx),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Some(open) = s4.get(&notification.session_id.0) {
                    open.cancel();
                    open.handle.send(Command::Interrupt);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let Some(open) = s5.get(&request.session_id.0) else {
                    return responder.respond_with_error(unknown_session());
                };
                if open.set_agent(&request.mode_id.0) {
                    responder.respond(SetSessionModeResponse::new())
                } else {
                    responder.respond_with_error(
                        Error::invalid_params().data(format!("no mode {}", request.mode_id.0)),
                    )
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, cx| {
                set_config_option(&s7, request, responder, &cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| match s6
                .list(request.cwd.as_deref())
                .await
            {
                Ok(sessions) => responder.respond(ListSessionsResponse::new(sessions)),
                Err(error) => respond_error(responder, &error),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(stdio_lines())
        .await
        .map_err(|error| anyhow::anyhow!("the ACP connection failed: {error}"))
}

/// stdin and stdout as the protocol's lines. stdin is read as bytes and
/// decoded lossily: a line that is not UTF-8 reaches the protocol layer as
/// text that does not parse (a JSON-RPC parse error, and serving goes on)
/// instead of ending the connection, which the crate's own `Stdio` does
/// (the blind review of #33).
fn stdio_lines() -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let outgoing = futures::sink::unfold(tokio::io::stdout(), async |mut out, line: String| {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
        Ok::<_, std::io::Error>(out)
    });
    let incoming = futures::stream::unfold(
        tokio::io::BufReader::new(tokio::io::stdin()),
        async |mut reader| {
            let mut bytes = Vec::new();
            match reader.read_until(b'\n', &mut bytes).await {
                Ok(0) => None,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&bytes);
                    let line = line.trim_end_matches(['\n', '\r']).to_string();
                    Some((Ok(line), reader))
                }
                Err(error) => Some((Err(error), reader)),
            }
        },
    );
    Lines::new(outgoing, incoming)
}

/// `session/new`: opening starts MCP servers and takes a lock, so it runs
/// off the dispatch loop.
fn new_session(
    sessions: Arc<Sessions>,
    request: NewSessionRequest,
    responder: Responder<NewSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    cx.clone().spawn(async move {
        let editor = editor_files(&sessions, &cx);
        let opened = sessions
            .open(
                &request.cwd,
                &request.mcp_servers,
                SessionChoice::New,
                editor,
            )
            .await;
        match opened {
            Ok(open) => {
                let response = NewSessionResponse::new(open.session.id.clone())
                    .modes(open.modes())
                    .config_options(open.config_options());
                responder.respond(response)?;
                commands::announce_with_mcp(&cx, &open)
            }
            Err(error) => respond_error(responder, &error),
        }
    })
}

/// `session/load`: the history is replayed before the response, as the
/// protocol asks.
fn load_session(
    sessions: Arc<Sessions>,
    request: LoadSessionRequest,
    responder: Responder<LoadSessionResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    cx.clone().spawn(async move {
        let choice = SessionChoice::Id(request.session_id.0.to_string());
        let editor = editor_files(&sessions, &cx);
        let opened = sessions
            .open(&request.cwd, &request.mcp_servers, choice, editor)
            .await;
        match opened {
            Ok(open) => {
                load(&cx, &open).await?;
                let response = LoadSessionResponse::new()
                    .modes(open.modes())
                    .config_options(open.config_options());
                responder.respond(response)?;
                commands::announce_with_mcp(&cx, &open)
            }
            Err(error) => respond_error(responder, &error),
        }
    })
}

/// `session/prompt`: a slash command (cairn's or an MCP server's prompt)
/// or a turn, run off the dispatch loop so that `session/cancel` and the
/// answers to the turn's questions get through while it runs.
fn prompt(
    sessions: &Sessions,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(open) = sessions.get(&request.session_id.0) else {
        return responder.respond_with_error(unknown_session());
    };
    // Beside the session's saved tool outputs: swept with them after a week.
    let image_dir = open
        .app
        .data_dir
        .join(crate::paths::TOOL_OUTPUT_DIR)
        .join(&open.session.id);
    let text = match turn::prompt_text(&request.prompt, &image_dir) {
        Ok(text) => text,
        Err(error) => return responder.respond_with_error(error),
    };
    let cx = cx.clone();
    cx.clone().spawn(async move {
        let text = match commands::expand_mcp(&open, text).await {
            Ok(text) => text,
            Err(why) => {
                let said = update::message_chunk(format!("error: {why}\n"));
                turn::send(&cx, &open, said)?;
                return responder.respond(PromptResponse::new(StopReason::EndTurn));
            }
        };
        let stop = match commands::parse(&text) {
            Some(command) => commands::run(&open, &cx, command).await?,
            None => turn::run(&open, &cx, text).await?,
        };
        responder.respond(PromptResponse::new(stop))
    })
}

/// `session/set_config_option`: the model (the only option), switched off
/// the dispatch loop (the session confirms it in order with its commands).
fn set_config_option(
    sessions: &Sessions,
    request: SetSessionConfigOptionRequest,
    responder: Responder<SetSessionConfigOptionResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(open) = sessions.get(&request.session_id.0) else {
        return responder.respond_with_error(unknown_session());
    };
    let value = request.value.as_value_id().map(|v| v.0.to_string());
    let is_model = &*request.config_id.0 == session::MODEL_OPTION;
    let Some(model) = value.filter(|_| is_model) else {
        return responder.respond_with_error(
            Error::invalid_params().data(format!("no option {}", request.config_id.0)),
        );
    };
    cx.spawn(async move {
        match open.set_model(&model).await {
            Ok(()) => responder.respond(SetSessionConfigOptionResponse::new(open.config_options())),
            Err(why) => responder.respond_with_error(Error::invalid_params().data(why)),
        }
    })
}

/// What cairn supports, whatever the client offered: sessions can be
/// loaded; prompts may embed the editor's text (selections, files); MCP
/// servers may be reached over HTTP as well as stdio; images are attached
/// as `@path` mentions of saved copies. Audio is not offered.
fn initialize(request: &InitializeRequest) -> InitializeResponse {
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()))
        .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true));
    let version = std::cmp::min(request.protocol_version, ProtocolVersion::V1);
    InitializeResponse::new(version)
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("cairn", env!("CARGO_PKG_VERSION")))
}

/// Replays the stored history of `open` as updates, before `session/load` answers.
async fn load(cx: &ConnectionTo<Client>, open: &Open) -> Result<(), Error> {
    let history = open
        .app
        .store
        .read_all(&open.session.id)
        .await
        .map_err(|e| Error::internal_error().data(e.to_string()))?;
    for update in update::replay(&history, &open.cwd()) {
        turn::send(cx, open, update)?;
    }
    Ok(())
}

/// The editor's files for a session about to open, when it serves them.
fn editor_files(sessions: &Sessions, cx: &ConnectionTo<Client>) -> Option<session::Editor> {
    let id = Arc::new(std::sync::OnceLock::new());
    let files = files::ClientFiles::new(cx, &sessions.fs(), id.clone())?;
    Some((Arc::new(files), id))
}

fn unknown_session() -> Error {
    Error::invalid_params().data("no such session on this connection")
}

fn respond_error<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    error: &anyhow::Error,
) -> Result<(), Error> {
    tracing::warn!("ACP request failed: {error:#}");
    responder.respond_with_error(Error::internal_error().data(format!("{error:#}")))
}
