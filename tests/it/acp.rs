//! `cairn acp` (issue #33) through the real binary: an editor built on the
//! client side of the same SDK (`agent-client-protocol`) drives it over
//! stdin/stdout against the scripted model. Every line the binary writes on
//! stdout is recorded and must be a JSON-RPC message.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, ContentChunk, EmbeddedResource,
    EmbeddedResourceResource, FileSystemCapabilities, ImageContent, InitializeRequest,
    ListSessionsRequest, LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest,
    PermissionOptionKind, PlanEntryPriority, PlanEntryStatus, PromptRequest, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionConfigKind, SessionConfigOption,
    SessionId, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionModeRequest, StopReason, TextResourceContents, ToolCallContent, ToolCallStatus,
    ToolKind, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, Client, Error, Lines};
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::permission_shell_run::tool_result;
use crate::project::{Project, describe};
use crate::scenario::{text, text_then_stall, tool_call};
use crate::support::ScriptedServer;

/// No test may hang.
const LIMIT: Duration = Duration::from_secs(60);

/// How the editor answers permission questions.
#[derive(Clone, Copy)]
enum Answer {
    Kind(PermissionOptionKind),
    Cancelled,
}

/// What the editor saw: every update, every question, every stdout line.
#[derive(Clone, Default)]
struct Seen {
    questions: Arc<Mutex<Vec<RequestPermissionRequest>>>,
    /// The editor's buffers, unsaved: what `fs/read_text_file` serves
    /// before the disk, and where `fs/write_text_file` writes.
    buffers: Arc<Mutex<HashMap<PathBuf, String>>>,
    /// The paths `fs/read_text_file` was asked for.
    reads: Arc<Mutex<Vec<PathBuf>>>,
    lines: Arc<Mutex<Vec<String>>>,
}

/// `cairn acp` in `project`, connected to an editor that answers asks with
/// `answer`; runs `body` with the connection and the stream of updates.
async fn editor<T>(
    project: &Project,
    answer: Answer,
    body: impl AsyncFnOnce(
        ConnectionTo<Agent>,
        mpsc::UnboundedReceiver<SessionUpdate>,
    ) -> Result<T, Error>,
) -> (T, Seen) {
    editor_with(project, answer, Seen::default(), body).await
}

/// [`editor`] with buffers open in the editor (`seen.buffers`).
async fn editor_with<T>(
    project: &Project,
    answer: Answer,
    seen: Seen,
    body: impl AsyncFnOnce(
        ConnectionTo<Agent>,
        mpsc::UnboundedReceiver<SessionUpdate>,
    ) -> Result<T, Error>,
) -> (T, Seen) {
    let mut child = project
        .command(&["acp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn cairn acp");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (to_agent, mut outgoing) = futures::channel::mpsc::unbounded::<String>();
    tokio::spawn(async move {
        while let Some(line) = outgoing.next().await {
            if stdin
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let lines = seen.lines.clone();
    let incoming = futures::stream::unfold(BufReader::new(stdout).lines(), move |mut reader| {
        let lines = lines.clone();
        async move {
            let line = reader.next_line().await.transpose()?;
            if let Ok(line) = &line {
                lines.lock().unwrap().push(line.clone());
            }
            Some((line, reader))
        }
    });
    let transport = Lines::new(to_agent.sink_map_err(std::io::Error::other), incoming);
    let (updates, received) = mpsc::unbounded_channel();
    let questions = seen.questions.clone();
    let (buffers, reads) = (seen.buffers.clone(), seen.reads.clone());
    let written = seen.buffers.clone();
    let run = Client
        .v1()
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                reads.lock().unwrap().push(request.path.clone());
                let open = buffers.lock().unwrap().get(&request.path).cloned();
                let content = match open {
                    Some(text) => text,
                    None => std::fs::read_to_string(&request.path)
                        .map_err(|e| Error::internal_error().data(e.to_string()))?,
                };
                responder.respond(ReadTextFileResponse::new(content))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                written
                    .lock()
                    .unwrap()
                    .insert(request.path.clone(), request.content.clone());
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = updates.send(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                questions.lock().unwrap().push(request.clone());
                let outcome = pick(answer, &request);
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx| body(cx, received).await);
    let result = tokio::time::timeout(LIMIT, run)
        .await
        .expect("the editor's session ends within a minute")
        .expect("the editor's session succeeds");
    // Closing stdin ends the agent.
    let status = tokio::time::timeout(LIMIT, child.wait()).await;
    assert!(
        status.is_ok(),
        "cairn acp exits when the editor closes stdin"
    );
    only_protocol_on_stdout(&seen);
    (result, seen)
}

/// The editor's answer to `request`.
fn pick(answer: Answer, request: &RequestPermissionRequest) -> RequestPermissionOutcome {
    match answer {
        Answer::Cancelled => RequestPermissionOutcome::Cancelled,
        Answer::Kind(kind) => {
            let option = request
                .options
                .iter()
                .find(|o| o.kind == kind)
                .expect("the option offered");
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                option.option_id.clone(),
            ))
        }
    }
}

fn only_protocol_on_stdout(seen: &Seen) {
    for line in seen.lines.lock().unwrap().iter() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|_| panic!("stdout carries only protocol messages: {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

async fn start(cx: &ConnectionTo<Agent>, project: &Project) -> Result<SessionId, Error> {
    start_as(cx, project, ClientCapabilities::new()).await
}

async fn start_as(
    cx: &ConnectionTo<Agent>,
    project: &Project,
    capabilities: ClientCapabilities,
) -> Result<SessionId, Error> {
    let init = cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities))
        .block_task()
        .await?;
    assert!(init.agent_capabilities.load_session);
    assert!(init.agent_capabilities.prompt_capabilities.embedded_context);
    assert!(init.agent_capabilities.prompt_capabilities.image);
    assert!(init.agent_capabilities.mcp_capabilities.http);
    let session = cx
        .send_request(NewSessionRequest::new(project.root.path()))
        .block_task()
        .await?;
    let modes = session.modes.expect("build and plan are session modes");
    let ids: Vec<String> = modes
        .available_modes
        .iter()
        .map(|m| m.id.0.to_string())
        .collect();
    assert_eq!(ids, ["build", "plan"]);
    Ok(session.session_id)
}

async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: &SessionId,
    blocks: Vec<ContentBlock>,
) -> Result<StopReason, Error> {
    let response = cx
        .send_request(PromptRequest::new(session.clone(), blocks))
        .block_task()
        .await?;
    Ok(response.stop_reason)
}

/// Everything already received, without waiting.
fn drain(received: &mut mpsc::UnboundedReceiver<SessionUpdate>) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    while let Ok(update) = received.try_recv() {
        updates.push(update);
    }
    updates
}

fn said(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(ContentChunk {
                content: ContentBlock::Text(t),
                ..
            }) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn text_block(text: &str) -> ContentBlock {
    ContentBlock::from(text.to_string())
}

/// Step 1: initialize, new, a text prompt streamed as chunks, `end_turn`;
/// commands and the gauge reach the editor; the session is an ordinary one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_the_answer_and_ends_the_turn() {
    let server = ScriptedServer::start([text("Hello from cairn, in the editor.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let ((session, stop, updates), _) =
        editor(&project, Answer::Cancelled, async |cx, mut received| {
            let session = start(&cx, &project).await?;
            let stop = prompt(&cx, &session, vec![text_block("say hello")]).await?;
            Ok((session, stop, drain(&mut received)))
        })
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(said(&updates), "Hello from cairn, in the editor.");
    let chunks = updates
        .iter()
        .filter(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)))
        .count();
    assert!(chunks > 1, "the answer streams in chunks: {updates:?}");
    let commands = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::AvailableCommandsUpdate(c) => Some(c),
            _ => None,
        })
        .expect("available_commands_update");
    let names: Vec<&str> = commands
        .available_commands
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    for name in [
        "compact", "prune", "context", "undo", "redo", "diff", "help",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let usage = updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::UsageUpdate(usage) => Some(usage),
            _ => None,
        })
        .expect("the gauge as a usage update");
    assert!(usage.used > 0 && usage.size > usage.used, "{usage:?}");
    let gauge = usage.meta.as_ref().and_then(|m| m.get("cairn/gauge"));
    assert!(gauge.is_some_and(|g| g["compact_at"].is_u64()), "{usage:?}");
    // An ordinary cairn session: `cairn sessions` lists it.
    let listed = project.ok(&["sessions"]).await;
    assert!(listed.contains(session.0.as_ref()), "{listed}");
}

/// Step 1: a line that is not JSON, an unknown method and a prompt for a
/// session that does not exist each get a JSON-RPC error, and the agent
/// keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_unknown_messages_get_errors_and_serving_goes_on() {
    let server = ScriptedServer::start([]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let mut child = project
        .command(&["acp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn cairn acp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .expect("an answer within a minute")
            .expect("read stdout")
            .expect("a line before stdout closes");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line:?}"))
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .expect("write");
    let initialized = next().await;
    assert_eq!(initialized["result"]["protocolVersion"], 1, "{initialized}");
    let requests = [
        "this is not json".to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "cairn/unknown", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
               "params": {"sessionId": "ses_none", "prompt": []}})
        .to_string(),
    ];
    for request in &requests {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("write");
    }
    let mut answers = Vec::new();
    for _ in 0..requests.len() {
        answers.push(next().await);
    }
    let by_id = |id: Value| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer for id {id} in {answers:?}"))
            .clone()
    };
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700, "{answers:?}");
    assert_eq!(by_id(json!(2))["error"]["code"], -32601, "{answers:?}");
    assert!(by_id(json!(3))["error"]["code"].is_i64(), "{answers:?}");
    // Still serving after all three.
    let again = json!({"jsonrpc": "2.0", "id": 4, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdin
        .write_all(format!("{again}\n").as_bytes())
        .await
        .expect("write");
    let answer = next().await;
    assert_eq!(answer["id"], 4, "{answer}");
    // A line that is not UTF-8 is one more parse error, not the end (the
    // blind review of #33: the crate's stdio transport stopped there).
    stdin
        .write_all(b"\xff\xfe{\"x\":1}\n")
        .await
        .expect("write");
    let answer = next().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    let again = json!({"jsonrpc": "2.0", "id": 5, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdin
        .write_all(format!("{again}\n").as_bytes())
        .await
        .expect("write");
    let answer = next().await;
    assert_eq!(answer["id"], 5, "{answer}");
    // A relative cwd is refused (the blind review of #33 saw it accepted).
    let relative = json!({"jsonrpc": "2.0", "id": 6, "method": "session/new",
                          "params": {"cwd": "relative/path", "mcpServers": []}});
    stdin
        .write_all(format!("{relative}\n").as_bytes())
        .await
        .expect("write");
    let answer = next().await;
    assert_eq!(answer["id"], 6, "{answer}");
    assert!(
        answer["error"].to_string().contains("absolute path"),
        "{answer}"
    );
    drop(stdin);
    let status = tokio::time::timeout(LIMIT, child.wait()).await;
    assert!(status.is_ok(), "cairn acp exits at end of input");
}

/// Step 2: a tool call reaches the editor as `tool_call` then
/// `tool_call_update`, with its kind, the file it touches and, for an
/// edit, the diff; an embedded resource (the editor's buffer) is part of
/// the prompt the model receives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_arrive_with_kind_locations_and_diff() {
    let server = ScriptedServer::start([
        tool_call(
            "call_bash",
            "bash",
            json!({"command": "echo from-bash"}),
            1_000,
        ),
        tool_call(
            "call_edit",
            "edit",
            json!({"path": "notes.txt", "old_string": "old line", "new_string": "new line"}),
            1_000,
        ),
        text("Edited.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    std::fs::write(project.path("notes.txt"), "old line\n").unwrap();
    let selection = EmbeddedResource::new(EmbeddedResourceResource::TextResourceContents(
        TextResourceContents::new("selected text from the buffer", "file:///tmp/buffer.rs"),
    ));
    let ((stop, updates), _) = editor(&project, Answer::Cancelled, async |cx, mut received| {
        let session = start(&cx, &project).await?;
        let blocks = vec![
            text_block("fix the notes"),
            ContentBlock::Resource(selection),
        ];
        let stop = prompt(&cx, &session, blocks).await?;
        Ok((stop, drain(&mut received)))
    })
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(project.read("notes.txt").as_deref(), Some("new line\n"));
    let first = server.requests()[0].json().to_string();
    assert!(first.contains("selected text from the buffer"), "{first}");
    let calls: Vec<_> = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    let bash = calls
        .iter()
        .find(|c| c.tool_call_id.0.as_ref() == "call_bash")
        .expect("tool_call for bash");
    assert_eq!(bash.kind, ToolKind::Execute);
    let edit = calls
        .iter()
        .find(|c| c.tool_call_id.0.as_ref() == "call_edit")
        .expect("tool_call for edit");
    assert_eq!(edit.kind, ToolKind::Edit);
    let located = updates.iter().any(|u| match u {
        SessionUpdate::ToolCallUpdate(update) if update.tool_call_id.0.as_ref() == "call_edit" => {
            update.fields.locations.as_ref().is_some_and(|l| {
                l.first()
                    .is_some_and(|l| l.path == project.path("notes.txt"))
            })
        }
        _ => false,
    });
    assert!(
        located || !edit.locations.is_empty(),
        "the edit's location: {updates:?}"
    );
    let finished = |id: &str| {
        updates
            .iter()
            .filter_map(|u| match u {
                SessionUpdate::ToolCallUpdate(update) if update.tool_call_id.0.as_ref() == id => {
                    Some(update)
                }
                _ => None,
            })
            .find(|u| u.fields.status == Some(ToolCallStatus::Completed))
            .unwrap_or_else(|| panic!("{id} completed: {updates:?}"))
    };
    let bash_content = format!("{:?}", finished("call_bash").fields.content);
    assert!(bash_content.contains("from-bash"), "{bash_content}");
    let diff = finished("call_edit")
        .fields
        .content
        .as_ref()
        .and_then(|c| c.first())
        .expect("the edit's content");
    let ToolCallContent::Diff(diff) = diff else {
        panic!("an edit shows a diff: {diff:?}");
    };
    assert_eq!(diff.path, project.path("notes.txt"));
    assert_eq!(diff.old_text.as_deref(), Some("old line"));
    assert_eq!(diff.new_text, "new line");
}

const ASK_BASH: &str = "[permission.bash]\n\"*\" = \"ask\"\n";

/// Step 3: an ask becomes `session/request_permission` with allow once,
/// always and reject; "always" is stored as cairn stores it (the same
/// command does not ask again); "cancelled" is a reject.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_go_to_the_editor_and_always_is_remembered() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({"command": "echo asked-once"}),
            1_000,
        ),
        tool_call(
            "call_2",
            "bash",
            json!({"command": "echo asked-once"}),
            1_000,
        ),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "", ASK_BASH);
    let (stop, seen) = editor(
        &project,
        Answer::Kind(PermissionOptionKind::AllowAlways),
        async |cx, _received| {
            let session = start(&cx, &project).await?;
            prompt(&cx, &session, vec![text_block("write it")]).await
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(tool_result(&server, "call_2").contains("asked-once"));
    let questions = seen.questions.lock().unwrap();
    assert_eq!(questions.len(), 1, "always is remembered: {questions:?}");
    let kinds: Vec<_> = questions[0].options.iter().map(|o| o.kind).collect();
    assert!(
        kinds.contains(&PermissionOptionKind::AllowOnce),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&PermissionOptionKind::AllowAlways),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&PermissionOptionKind::RejectOnce),
        "{kinds:?}"
    );
    assert_eq!(questions[0].tool_call.tool_call_id.0.as_ref(), "call_1");
}

/// A subagent's ask reaches the editor too (it has a session of its own,
/// which the editor never opened): before, the turn waited for an answer
/// no one was asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_ask_goes_to_the_editor() {
    let server = ScriptedServer::start([
        tool_call(
            "call_task",
            "task",
            json!({"description": "run it", "prompt": "Run echo.", "subagent_type": "general"}),
            1_000,
        ),
        tool_call(
            "call_child",
            "bash",
            json!({"command": "echo from-the-child"}),
            1_000,
        ),
        text("The child ran it.", 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "", ASK_BASH);
    let (stop, seen) = editor(
        &project,
        Answer::Kind(PermissionOptionKind::AllowOnce),
        async |cx, _received| {
            let session = start(&cx, &project).await?;
            prompt(&cx, &session, vec![text_block("delegate it")]).await
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    // The child's last request holds its bash result (the parent's does not).
    let ran = server.requests().iter().any(|request| {
        request.json()["messages"]
            .as_array()
            .is_some_and(|messages| {
                messages.iter().any(|m| {
                    m["tool_call_id"] == "call_child"
                        && m["content"].to_string().contains("from-the-child")
                })
            })
    });
    assert!(ran, "the child's command ran after the editor allowed it");
    let questions = seen.questions.lock().unwrap();
    assert_eq!(questions.len(), 1, "{questions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_cancels_the_question_rejects() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({"command": "touch never.txt"}),
            1_000,
        ),
        text("Understood.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "", ASK_BASH);
    let (stop, seen) = editor(&project, Answer::Cancelled, async |cx, _received| {
        let session = start(&cx, &project).await?;
        prompt(&cx, &session, vec![text_block("touch it")]).await
    })
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(seen.questions.lock().unwrap().len(), 1);
    assert!(
        !project.path("never.txt").exists(),
        "a cancelled question ran the command"
    );
    let result = tool_result(&server, "call_1");
    assert!(
        result.contains("reject") || result.contains("cancel"),
        "{result}"
    );
}

/// Step 4: `session/cancel` while the model streams ends the turn at once
/// with `cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_stream_returns_cancelled() {
    let server = ScriptedServer::start([text_then_stall("Thinking about it")]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let (stop, _) = editor(&project, Answer::Cancelled, async |cx, mut received| {
        let session = start(&cx, &project).await?;
        let pending = cx.send_request(PromptRequest::new(
            session.clone(),
            vec![text_block("think")],
        ));
        while let Some(update) = received.recv().await {
            if matches!(update, SessionUpdate::AgentMessageChunk(_)) {
                break;
            }
        }
        cx.send_notification(CancelNotification::new(session.clone()))?;
        let response = tokio::time::timeout(Duration::from_secs(10), pending.block_task())
            .await
            .expect("the prompt returns at once after the cancel")?;
        Ok(response.stop_reason)
    })
    .await;
    assert_eq!(stop, StopReason::Cancelled);
}

/// Step 4: a running command is stopped by the cancel and marked interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_tool() {
    let server = ScriptedServer::start([
        tool_call(
            "call_sleep",
            "bash",
            json!({"command": "echo started; sleep 30"}),
            1_000,
        ),
        text("never asked", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let ((stop, updates), _) = editor(&project, Answer::Cancelled, async |cx, mut received| {
        let session = start(&cx, &project).await?;
        let pending = cx.send_request(PromptRequest::new(
            session.clone(),
            vec![text_block("sleep")],
        ));
        let mut updates = Vec::new();
        while let Some(update) = received.recv().await {
            // The command's output as it comes, before it finishes.
            let running = matches!(&update, SessionUpdate::ToolCallUpdate(u)
                if u.fields.status == Some(ToolCallStatus::InProgress)
                    && format!("{:?}", u.fields.content).contains("started"));
            updates.push(update);
            if running {
                break;
            }
        }
        cx.send_notification(CancelNotification::new(session.clone()))?;
        let response = tokio::time::timeout(Duration::from_secs(10), pending.block_task())
            .await
            .expect("the prompt returns at once after the cancel")?;
        updates.extend(drain(&mut received));
        Ok((response.stop_reason, updates))
    })
    .await;
    assert_eq!(stop, StopReason::Cancelled);
    let failed = updates.iter().any(|u| matches!(u, SessionUpdate::ToolCallUpdate(u)
        if u.tool_call_id.0.as_ref() == "call_sleep" && u.fields.status == Some(ToolCallStatus::Failed)));
    assert!(
        failed,
        "the interrupted command is marked failed: {updates:?}"
    );
    assert_eq!(server.requests().len(), 1, "no step after the cancel");
}

/// Step 5: `session/load` replays an earlier session's history, and a
/// terminal's `cairn run --continue` picks the ACP session up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_an_earlier_session_and_continue_picks_it_up() {
    let server = ScriptedServer::start([
        text("The first answer.", 1_000),
        text("The second answer.", 1_000),
        text("From the terminal.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let (session, _) = editor(&project, Answer::Cancelled, async |cx, _received| {
        let session = start(&cx, &project).await?;
        prompt(&cx, &session, vec![text_block("first question")]).await?;
        Ok(session)
    })
    .await;
    let (updates, _) = editor(&project, Answer::Cancelled, async |cx, mut received| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        cx.send_request(LoadSessionRequest::new(
            session.clone(),
            project.root.path(),
        ))
        .block_task()
        .await?;
        let replayed = drain(&mut received);
        cx.send_request(SetSessionModeRequest::new(session.clone(), "plan"))
            .block_task()
            .await?;
        prompt(&cx, &session, vec![text_block("second question")]).await?;
        Ok(replayed)
    })
    .await;
    let user: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::UserMessageChunk(ContentChunk {
                content: ContentBlock::Text(t),
                ..
            }) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(user, "first question");
    assert_eq!(said(&updates), "The first answer.");
    let second = server.requests()[1].json().to_string();
    assert!(
        second.contains("first question"),
        "the loaded session continues: {second}"
    );
    let out = project.ok(&["run", "--continue", "third question"]).await;
    assert!(out.contains("From the terminal."), "{out}");
    let third = server.requests()[2].json().to_string();
    assert!(
        third.contains("second question"),
        "--continue picks up the ACP session: {third}"
    );
}

/// A loaded session offers the model its next prompt uses (the one chosen
/// in it), not the configured default, as the TUI's status line shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_session_offers_its_own_model() {
    let server = ScriptedServer::start([text("From the other model.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted_with(
        &server,
        "",
        "[provider.scripted.models.\"other-model\"]\ncontext = 200000\noutput = 32000\n",
    );
    let output = project
        .cairn(&[
            "run",
            "--model",
            "scripted/other-model",
            "--output-format",
            "json",
            "hello",
        ])
        .await;
    // One JSON event per line; each names the session.
    let id = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|event| event["session_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no session id: {}", describe(&output)));
    let (options, _) = editor(&project, Answer::Cancelled, async |cx, _received| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let loaded = cx
            .send_request(LoadSessionRequest::new(
                SessionId::new(id.clone()),
                project.root.path(),
            ))
            .block_task()
            .await?;
        Ok(loaded.config_options.expect("config options"))
    })
    .await;
    match &options[0].kind {
        SessionConfigKind::Select(select) => {
            assert_eq!(select.current_value.0.as_ref(), "scripted/other-model");
        }
        other => panic!("the model is a select: {other:?}"),
    }
}

/// Step 6: with `fs` advertised, `read` is served from the editor's unsaved
/// buffer and `edit` is written through `fs/write_text_file`: the buffer
/// changes, the disk does not (the editor saves it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_edits_go_through_the_editors_buffers() {
    let server = ScriptedServer::start([
        tool_call("call_read", "read", json!({"path": "main.rs"}), 1_000),
        tool_call(
            "call_edit",
            "edit",
            json!({"path": "main.rs", "old_string": "unsaved", "new_string": "edited"}),
            1_000,
        ),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    std::fs::write(project.path("main.rs"), "fn main() {} // on disk\n").unwrap();
    let seen = Seen::default();
    seen.buffers.lock().unwrap().insert(
        project.path("main.rs"),
        "fn main() {} // unsaved in the editor\n".to_string(),
    );
    let fs = FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    let (stop, seen) = editor_with(&project, Answer::Cancelled, seen, async |cx, _received| {
        let session = start_as(&cx, &project, ClientCapabilities::new().fs(fs)).await?;
        prompt(&cx, &session, vec![text_block("read and fix main.rs")]).await
    })
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let read = tool_result(&server, "call_read");
    assert!(
        read.contains("unsaved in the editor"),
        "the model read the buffer: {read}"
    );
    assert!(
        seen.reads
            .lock()
            .unwrap()
            .contains(&project.path("main.rs"))
    );
    let buffer = seen
        .buffers
        .lock()
        .unwrap()
        .get(&project.path("main.rs"))
        .cloned();
    assert_eq!(
        buffer.as_deref(),
        Some("fn main() {} // edited in the editor\n")
    );
    assert_eq!(
        project.read("main.rs").as_deref(),
        Some("fn main() {} // on disk\n"),
        "the edit went to the editor, not around it"
    );
}

/// Step 2 and 7: the todo list reaches the editor as a `plan`; a slash
/// command sent as a prompt runs in cairn (the model is not asked), and
/// `session/list` lists the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_slash_commands_and_the_session_list() {
    let todos = json!({"todos": [
        {"content": "read the code", "status": "completed", "priority": "high"},
        {"content": "fix the bug", "status": "in_progress"},
        {"content": "run the tests", "status": "pending", "priority": "low"},
    ]});
    let server = ScriptedServer::start([
        tool_call("call_todo", "todowrite", todos, 1_000),
        text("Planned.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let ((planned, context, listed, session), _) =
        editor(&project, Answer::Cancelled, async |cx, mut received| {
            let session = start(&cx, &project).await?;
            prompt(&cx, &session, vec![text_block("plan it")]).await?;
            let planned = drain(&mut received);
            let stop = prompt(&cx, &session, vec![text_block("/context")]).await?;
            assert_eq!(stop, StopReason::EndTurn);
            let context = said(&drain(&mut received));
            let listed = cx
                .send_request(ListSessionsRequest::new().cwd(project.root.path().to_path_buf()))
                .block_task()
                .await?;
            Ok((planned, context, listed, session))
        })
        .await;
    let plan = planned
        .iter()
        .find_map(|u| match u {
            SessionUpdate::Plan(plan) => Some(plan),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a plan update: {planned:?}"));
    let entries: Vec<(&str, PlanEntryStatus, PlanEntryPriority)> = plan
        .entries
        .iter()
        .map(|e| (e.content.as_str(), e.status.clone(), e.priority.clone()))
        .collect();
    assert_eq!(
        entries,
        [
            (
                "read the code",
                PlanEntryStatus::Completed,
                PlanEntryPriority::High
            ),
            (
                "fix the bug",
                PlanEntryStatus::InProgress,
                PlanEntryPriority::Medium
            ),
            (
                "run the tests",
                PlanEntryStatus::Pending,
                PlanEntryPriority::Low
            ),
        ]
    );
    assert!(
        context.contains("tool definitions"),
        "/context answered: {context}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "/context is not sent to the model"
    );
    let ids: Vec<&str> = listed
        .sessions
        .iter()
        .map(|s| s.session_id.0.as_ref())
        .collect();
    assert_eq!(ids, [session.0.as_ref()]);
}

/// Step 7: the model is a session config option; choosing another sends
/// the next prompt to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_a_config_option() {
    let server = ScriptedServer::start([text("From the other model.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted_with(
        &server,
        "yolo = true\n",
        "[provider.scripted.models.\"other-model\"]\ncontext = 200000\noutput = 32000\n",
    );
    let (options, _) = editor(&project, Answer::Cancelled, async |cx, _received| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(project.root.path()))
            .block_task()
            .await?;
        let before = session.config_options.clone().expect("config options");
        let id = session.session_id;
        let after = cx
            .send_request(SetSessionConfigOptionRequest::new(
                id.clone(),
                "model",
                "scripted/other-model",
            ))
            .block_task()
            .await?;
        prompt(&cx, &id, vec![text_block("hello")]).await?;
        Ok((before, after.config_options))
    })
    .await;
    let current = |options: &[SessionConfigOption]| match &options[0].kind {
        SessionConfigKind::Select(select) => select.current_value.0.to_string(),
        other => panic!("the model is a select: {other:?}"),
    };
    assert_eq!(current(&options.0), "scripted/test-model");
    assert_eq!(current(&options.1), "scripted/other-model");
    assert_eq!(server.requests()[0].json()["model"], "other-model");
}

/// The editor's MCP servers join the configured ones, and their prompts
/// are commands: `/fx:hello` sent as a prompt is the prompt's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_mcp_server_and_its_prompts_as_commands() {
    let server = ScriptedServer::start([text("Hello, fixture.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let fixture = McpServer::Stdio(McpServerStdio::new("fx", crate::mcp_client::fixture()));
    let (names, _) = editor(&project, Answer::Cancelled, async |cx, mut received| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(project.root.path()).mcp_servers(vec![fixture]))
            .block_task()
            .await?;
        // The list is sent again once the server is ready.
        let names = loop {
            let update = tokio::time::timeout(LIMIT, received.recv())
                .await
                .expect("the server's prompts are announced")
                .expect("updates");
            if let SessionUpdate::AvailableCommandsUpdate(list) = update {
                let names: Vec<String> = list
                    .available_commands
                    .iter()
                    .map(|c| c.name.clone())
                    .collect();
                if names.iter().any(|n| n.starts_with("fx:")) {
                    break names;
                }
            }
        };
        prompt(&cx, &session.session_id, vec![text_block("/fx:hello")]).await?;
        Ok(names)
    })
    .await;
    assert!(names.contains(&"fx:hello".to_string()), "{names:?}");
    let sent = server.requests()[0].json().to_string();
    assert!(sent.contains("Say hello to the fixture."), "{sent}");
}

/// A session in another directory than the one `cairn acp` started in
/// reads that project's configuration (here: its model server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_elsewhere_uses_that_projects_config() {
    let here = ScriptedServer::start([text("From here.", 1_000)]).await;
    let there = ScriptedServer::start([text("From there.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted(&here);
    let other = Project::new();
    other.use_scripted(&there);
    // Trusted by this user (the home `cairn acp` runs with), as `cairn trust` there would.
    let mut trust = project.std_command();
    trust.current_dir(other.root.path());
    crate::support::trust_project(trust);
    let (updates, _) = editor(&project, Answer::Cancelled, async |cx, mut received| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        let session = cx
            .send_request(NewSessionRequest::new(other.root.path()))
            .block_task()
            .await?;
        prompt(&cx, &session.session_id, vec![text_block("hello")]).await?;
        Ok(drain(&mut received))
    })
    .await;
    assert_eq!(said(&updates), "From there.");
    assert!(
        here.requests().is_empty(),
        "the process's project was not asked"
    );
}

/// A 1x1 PNG.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// An image in the prompt reaches the model as an image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_the_prompt_reaches_the_model() {
    let server = ScriptedServer::start([text("A pixel.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let (stop, _) = editor(&project, Answer::Cancelled, async |cx, _received| {
        let session = start(&cx, &project).await?;
        let blocks = vec![
            text_block("what is this?"),
            ContentBlock::Image(ImageContent::new(PIXEL, "image/png")),
        ];
        prompt(&cx, &session, blocks).await
    })
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let sent = server.requests()[0].json().to_string();
    assert!(
        sent.contains(&format!("data:image/png;base64,{PIXEL}")),
        "{sent}"
    );
}
