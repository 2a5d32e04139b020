//! A prompt turn: the editor's content blocks -> one cairn prompt, the
//! session's events -> `session/update`s until the session is idle again,
//! and the stop reason.
//!
//! Runs outside the connection's dispatch loop (the handler spawns it), so
//! `session/cancel` and the answers to permission questions arrive while it
//! waits.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, ImageContent, SessionNotification, SessionUpdate,
    StopReason,
};
use agent_client_protocol::{Client, Error};
use tokio::sync::broadcast::error::RecvError;

use super::session::Open;
use super::update::Translator;
use crate::bus::{Event, SessionStatus};
use crate::message::{FinishReason, MessageErrorKind, Role};
use crate::permission_request::PermissionRequest;
use crate::session::command::Command;

/// The prompt's text: text blocks as they are, an embedded resource (an
/// editor's selection or file) as its text under its URI, a resource link
/// as an `@path` mention cairn reads itself, and an image saved in
/// `image_dir` and mentioned the same way (a mention attaches an image as
/// the model's image input, as `@shot.png` typed in the terminal does).
///
/// # Errors
/// A block cairn cannot pass to the model (audio, binary data, an image in
/// a format the model is not sent, or one that cannot be saved): the prompt
/// capabilities say so, and a client that sends one anyway gets
/// `invalid_params` instead of a silently shorter prompt.
pub fn prompt_text(blocks: &[ContentBlock], image_dir: &Path) -> Result<String, Error> {
    let mut text = String::new();
    for block in blocks {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                let path = link.uri.strip_prefix("file://").unwrap_or(&link.uri);
                text.push_str(&format!("@{path}"));
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    text.push_str(&format!(
                        "<file uri=\"{}\">\n{}\n</file>",
                        contents.uri, contents.text
                    ));
                }
                _ => return Err(unsupported("binary embedded resources")),
            },
            ContentBlock::Image(image) => {
                let path = save_image(image, image_dir)?;
                text.push_str(&format!("@{}", path.display()));
            }
            ContentBlock::Audio(_) => return Err(unsupported("audio")),
            _ => return Err(unsupported("this kind of content")),
        }
    }
    Ok(text)
}

/// Writes `image` to a file of its own in `dir`, named for its format.
fn save_image(image: &ImageContent, dir: &Path) -> Result<PathBuf, Error> {
    use base64::Engine;
    let extension = match image.mime_type.as_str() {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => return Err(unsupported(&format!("{} images", image.mime_type))),
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image.data.as_bytes())
        .map_err(|e| Error::invalid_params().data(format!("the image is not base64: {e}")))?;
    let saved =
        |e: std::io::Error| Error::internal_error().data(format!("cannot save the image: {e}"));
    std::fs::create_dir_all(dir).map_err(saved)?;
    let path = dir.join(format!("{}.{extension}", crate::id::part_id()));
    std::fs::write(&path, bytes).map_err(saved)?;
    Ok(path)
}

fn unsupported(what: &str) -> Error {
    Error::invalid_params().data(format!("cairn cannot pass {what} to the model"))
}

/// Sends `text` as a prompt and streams the session's events to the editor
/// until the session is idle; returns why the turn stopped.
///
/// # Errors
/// The connection to the editor is gone.
pub async fn run(
    open: &Open,
    cx: &ConnectionTo<Client>,
    text: String,
) -> Result<StopReason, Error> {
    let prompt = Command::Prompt {
        text,
        agent: Some(open.agent()),
        model: None,
        piped: false,
    };
    run_command(open, cx, prompt).await
}

/// [`run`] for any command whose work runs in the session loop (a prompt,
/// a compaction).
///
/// # Errors
/// The connection to the editor is gone.
pub async fn run_command(
    open: &Open,
    cx: &ConnectionTo<Client>,
    command: Command,
) -> Result<StopReason, Error> {
    let _one_at_a_time = open.turn.lock().await;
    let mut events = open.app.bus.subscribe();
    open.take_cancelled();
    let sent = open.handle.send(command);
    if !sent {
        return Err(Error::internal_error().data("the session has stopped"));
    }
    let mut translator = Translator::new(&open.cwd());
    let mut stop = StopReason::EndTurn;
    let mut seen_busy = false;
    // Ids of the questions sent to the editor: after a lag they are looked
    // up again, and none is asked twice.
    let mut asked: HashSet<String> = HashSet::new();
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            // Deltas lost are carried by the final parts that follow (the
            // translator sends what the deltas did not); a question lost
            // would wait forever, so the session says which ones wait.
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "the editor's update stream fell behind");
                for request in pending_asks(open).await {
                    if asked.insert(request.id.clone()) {
                        super::ask::forward(cx, open, request)?;
                    }
                }
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        // The session's bus carries only it and its subagents: a
        // subagent's question is the editor's to answer too.
        if let Event::PermissionAsked { request, .. } = &event
            && asked.insert(request.id.clone())
        {
            super::ask::forward(cx, open, request.as_ref().clone())?;
        }
        if event.session_id() != open.session.id {
            continue;
        }
        match &event {
            Event::Status {
                status: SessionStatus::Idle,
                ..
            } if seen_busy => break,
            Event::Status { .. } => seen_busy = true,
            Event::MessageUpdated { message } => {
                if let Role::Assistant(assistant) = &message.role
                    && !assistant.summary
                {
                    stop = stop_reason(assistant.finish, assistant.error.as_ref().map(|e| &e.kind));
                }
            }
            _ => {}
        }
        for update in translator.translate(&event) {
            send(cx, open, update)?;
        }
    }
    if open.take_cancelled() {
        return Ok(StopReason::Cancelled);
    }
    Ok(stop)
}

/// The questions of `open`'s session and its subagents that wait for an
/// answer (none when the session has stopped).
async fn pending_asks(open: &Open) -> Vec<PermissionRequest> {
    let (reply, pending) = tokio::sync::oneshot::channel();
    if !open.handle.send(Command::PendingAsks { reply }) {
        return Vec::new();
    }
    pending.await.unwrap_or_default()
}

/// Sends one update for `open`'s session.
///
/// # Errors
/// The connection to the editor is gone.
pub fn send(cx: &ConnectionTo<Client>, open: &Open, update: SessionUpdate) -> Result<(), Error> {
    cx.send_notification(SessionNotification::new(open.session.id.clone(), update))
}

/// ACP's stop reason for how the last answer finished.
fn stop_reason(finish: Option<FinishReason>, error: Option<&MessageErrorKind>) -> StopReason {
    match (finish, error) {
        (_, Some(MessageErrorKind::Aborted)) => StopReason::Cancelled,
        (Some(FinishReason::Length), _) | (_, Some(MessageErrorKind::OutputLength)) => {
            StopReason::MaxTokens
        }
        (Some(FinishReason::ContentFilter), _) | (_, Some(MessageErrorKind::ContentFilter)) => {
            StopReason::Refusal
        }
        _ => StopReason::EndTurn,
    }
}
