//! The streamable-HTTP transport's HTTP client: rmcp's `StreamableHttpClient`
//! trait implemented over cairn's reqwest 0.12 client.
//!
//! rmcp ships this trait's implementation for reqwest 0.13 only; enabling it
//! would build a second reqwest (and its TLS stack) beside ours. The protocol
//! (session ids, SSE resumption, retries, version headers) stays rmcp's: this
//! module only sends the requests it asks for and classifies the responses.
//! Bodies and single SSE events are bounded by the limits rmcp passes in, so
//! a server cannot fill memory.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpClientTransportConfig,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

const SESSION_ID: &str = "Mcp-Session-Id";
const LAST_EVENT_ID: &str = "Last-Event-Id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

type Error = StreamableHttpError<reqwest::Error>;

/// cairn's HTTP client, as rmcp's streamable-HTTP transport uses it.
#[derive(Clone, Debug)]
pub struct Http(reqwest::Client);

/// The transport for `url`, sending `headers` (already `${VAR}`-expanded)
/// with every request.
pub fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<Http>, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|error| format!("header name {name:?}: {error}"))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|error| format!("header {name}: {error}"))?;
        custom.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    config.retry_config = Arc::new(reconnect_policy());
    Ok(StreamableHttpClientTransport::with_client(
        Http(client),
        config,
    ))
}

/// How often a broken response stream is resumed. rmcp's default retries
/// forever, so a call to a server that died waited for the call's whole
/// timeout (30 s); two quick tries still ride over a dropped connection.
fn reconnect_policy() -> ExponentialBackoff {
    let mut policy = ExponentialBackoff::default();
    policy.max_times = Some(RECONNECT_TRIES);
    policy.base_duration = std::time::Duration::from_millis(250);
    policy.max_delay = Some(std::time::Duration::from_secs(1));
    policy
}

/// Resumptions of a broken stream before the call fails (see [`reconnect_policy`]).
const RECONNECT_TRIES: usize = 2;

/// Adds the request's optional headers.
fn with_headers(
    mut request: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth_token: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(token) = auth_token {
        request = request.bearer_auth(token);
    }
    if let Some(id) = session_id {
        request = request.header(SESSION_ID, id);
    }
    for (name, value) in custom {
        request = request.header(name, value);
    }
    request
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_ascii_lowercase)
}

fn is(content_type: Option<&str>, mime: &str) -> bool {
    content_type.is_some_and(|ct| ct.split(';').next().unwrap_or("").trim() == mime)
}

/// 401 with a challenge: rmcp reports it as "authorization required".
fn auth_required(response: &reqwest::Response) -> Option<Error> {
    if response.status() != StatusCode::UNAUTHORIZED {
        return None;
    }
    let header = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(
        header.to_string(),
    )))
}

/// The body, refused past `limit` bytes (a server cannot fill memory).
async fn read_limited(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Error> {
    if response
        .content_length()
        .is_some_and(|len| len as usize > limit)
    {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(StreamableHttpError::Client)?
    {
        if body.len() + chunk.len() > limit {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn sse(response: reqwest::Response, max_event: usize) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut event = EventSize::new(max_event);
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        event.feed(&chunk)?;
        Ok::<_, std::io::Error>(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// Counts the bytes of the SSE event being received (a blank line ends
/// one) and refuses one larger than the limit.
struct EventSize {
    limit: usize,
    size: usize,
    after_newline: bool,
}

impl EventSize {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            size: 0,
            after_newline: false,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        for &byte in chunk {
            match byte {
                b'\n' if self.after_newline => self.size = 0,
                b'\n' => self.after_newline = true,
                b'\r' => {}
                _ => {
                    self.after_newline = false;
                    self.size += 1;
                }
            }
            if self.size > self.limit {
                return Err(std::io::Error::other(format!(
                    "an SSE event over {} bytes",
                    self.limit
                )));
            }
        }
        Ok(())
    }
}

/// A failed POST: a JSON-RPC error in the body is the answer; otherwise the
/// status and the start of the body.
async fn failed_post(
    response: reqwest::Response,
    session: Option<String>,
    limits: StreamableHttpResponseLimits,
) -> Result<StreamableHttpPostResponse, Error> {
    let status = response.status();
    let json = is(content_type(&response).as_deref(), JSON);
    let body = read_limited(response, limits.max_json_response_size)
        .await
        .unwrap_or_default();
    if json
        && let Ok(message @ ServerJsonRpcMessage::Error(_)) =
            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
    {
        return Ok(StreamableHttpPostResponse::Json(message, session));
    }
    let end = body.len().min(limits.max_error_response_size).min(512);
    let text = String::from_utf8_lossy(&body[..end]);
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!("HTTP {status}: {text}"),
    )))
}

impl Http {
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message)?;
        let request = self
            .0
            .post(uri.as_ref())
            .header(reqwest::header::ACCEPT, format!("{EVENT_STREAM}, {JSON}"))
            .header(reqwest::header::CONTENT_TYPE, JSON)
            .body(body);
        let request = with_headers(request, session_id.as_deref(), auth_token, custom);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if let Some(error) = auth_required(&response) {
            return Err(error);
        }
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        if !status.is_success() {
            return failed_post(response, session, limits).await;
        }
        let kind = content_type(&response);
        if is(kind.as_deref(), EVENT_STREAM) {
            let stream = sse(response, limits.max_sse_event_size);
            return Ok(StreamableHttpPostResponse::Sse(stream, session));
        }
        let expects_answer = matches!(message, ClientJsonRpcMessage::Request(_));
        let body = read_limited(response, limits.max_json_response_size).await?;
        if body.is_empty() && !expects_answer {
            // Some servers answer a notification with an empty 200.
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !is(kind.as_deref(), JSON) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        let message = serde_json::from_slice(&body)?;
        Ok(StreamableHttpPostResponse::Json(message, session))
    }
}

impl StreamableHttpClient for Http {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post(uri, message, session_id, auth_token, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post(uri, message, session_id, auth_token, custom_headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let request = self.0.delete(uri.as_ref());
        let request = with_headers(request, Some(&session_id), auth_token, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map(|_| ())
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let max_event = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            max_event,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_event: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut request = self
            .0
            .get(uri.as_ref())
            .header(reqwest::header::ACCEPT, EVENT_STREAM);
        if let Some(id) = last_event_id {
            request = request.header(LAST_EVENT_ID, id);
        }
        let request = with_headers(request, session_id.as_deref(), auth_token, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(error) = auth_required(&response) {
            return Err(error);
        }
        let response = response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        let kind = content_type(&response);
        if !is(kind.as_deref(), EVENT_STREAM) {
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        Ok(sse(response, max_event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sse_event_over_the_limit_is_refused_across_chunks() {
        // (chunks, limit, accepted)
        let cases: &[(&[&[u8]], usize, bool)] = &[
            (&[b"data: abc\n\n"], 9, true),
            (&[b"data: abcd\n\n"], 9, false),
            (&[b"data: abc\n\ndata: abc\n\n"], 9, true),
            (&[b"data: abc\r\n\r\n", b"data: abc\r\n\r\n"], 9, true),
            (&[b"data: ab", b"cd\n\n"], 9, false),
            (&[b"data: a\n", b"data: b\n\n"], 14, true),
            (&[b"data: a\n", b"data: bc\n\n"], 14, false),
            (&[b"data: abc\n", b"\n", b"data: abc\n\n"], 9, true),
        ];
        for (chunks, limit, accepted) in cases {
            let mut size = EventSize::new(*limit);
            let result = chunks.iter().try_for_each(|chunk| size.feed(chunk));
            assert_eq!(result.is_ok(), *accepted, "{chunks:?} limit {limit}");
        }
    }
}
