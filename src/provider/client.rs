//! `Provider`: one configured backend that turns a `ChatRequest` into a live
//! stream of `StreamEvent`s over HTTP.
//!
//! Owns the HTTP request (URL, headers, body), status classification, the
//! stall timeout and cancellation while streaming, and retry of failures that
//! happen before the first event. It never stores, publishes or logs keys.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::anthropic::{self, AnthropicDecoder, AnthropicOptions};
use super::catalog;
use super::error::{Error, ErrorKind};
use super::openai::{self, OpenAiDecoder, OpenAiOptions};
use super::responses::{self, ResponsesDecoder, ResponsesOptions};
use super::retry::{RetryNotice, RetryPolicy};
use super::sse::{SseDecoder, SseEvent};
use super::{ChatRequest, StreamEvent, WireDecoder};
pub use crate::config::Wire;

/// How long a stream may send no event before it is abandoned. Reasoning
/// models can think silently for a while, but providers send pings.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Connecting should be quick even to a busy server; a long wait here means
/// a wrong address or a firewall.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes one streamed response may have. The longest real answers
/// (128k output tokens at ~200 bytes of SSE framing each) are ~25 MiB; past
/// this the server is streaming without end, and the text is held in memory.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// The longest error body we read: enough for any real message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Everything needed to reach one provider.
#[derive(Clone)]
pub struct Endpoint {
    /// Shown in messages: `anthropic`, `llamacpp`, a user's own name.
    pub name: String,
    pub wire: Wire,
    /// Anthropic: the host root (`https://api.anthropic.com`); OpenAI: up to `/v1`.
    pub base_url: String,
    /// The key itself, never its variable name; `None` for local servers.
    pub api_key: Option<String>,
    /// Where `api_key` came from, named when the provider refuses it: the
    /// variable (`ANTHROPIC_API_KEY`) or `api_key in the config`.
    pub key_source: Option<String>,
    pub headers: Vec<(String, String)>,
    pub sends_prompt_cache_key: bool,
    pub uses_max_completion_tokens: bool,
    /// A Chat Completions provider whose Responses-only models
    /// (`catalog::needs_responses`) are sent to `/responses` instead (OpenAI).
    pub routes_to_responses: bool,
    pub thinking_budget: Option<u32>,
    pub stall_timeout: Duration,
    /// A response body longer than this is abandoned as `Malformed`.
    pub max_response_bytes: usize,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Endpoint")
            .field("name", &self.name)
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("key_source", &self.key_source)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("sends_prompt_cache_key", &self.sends_prompt_cache_key)
            .field(
                "uses_max_completion_tokens",
                &self.uses_max_completion_tokens,
            )
            .field("routes_to_responses", &self.routes_to_responses)
            .field("thinking_budget", &self.thinking_budget)
            .field("stall_timeout", &self.stall_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl Endpoint {
    /// A config with defaults for everything but the address and format.
    pub fn new(name: impl Into<String>, wire: Wire, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            wire,
            base_url: base_url.into(),
            api_key: None,
            key_source: None,
            headers: Vec::new(),
            sends_prompt_cache_key: false,
            uses_max_completion_tokens: false,
            routes_to_responses: false,
            thinking_budget: None,
            stall_timeout: DEFAULT_STALL_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// The events of one response; ends after `Finish` or the first error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, Error>> + Send>>;

/// A ready-to-use backend. Cheap to clone (the HTTP pool is shared).
#[derive(Clone, Debug)]
pub struct Provider {
    config: Endpoint,
    http: reqwest::Client,
    headers: HeaderMap,
}

/// An auth error names where the key came from when that is known, or says
/// that none was sent; a key set without a source (in code) or sent in a
/// configured header keeps the general advice.
fn with_key_advice(error: Error, config: &Endpoint) -> Error {
    let in_header = config.headers.iter().any(|(name, _)| {
        ["authorization", "x-api-key", "api-key"]
            .iter()
            .any(|key| name.eq_ignore_ascii_case(key))
    });
    if config.key_source.is_some() || (config.api_key.is_none() && !in_header) {
        error.naming_key_source(config.key_source.as_deref())
    } else {
        error
    }
}

impl Provider {
    /// # Errors
    /// `Config` when a header name or value (including the key) is not valid HTTP.
    pub fn new(config: Endpoint) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|error| Error::config(format!("cannot set up the HTTP client: {error}")))?;
        let headers = build_headers(&config)?;
        Ok(Self {
            config,
            http,
            headers,
        })
    }

    pub fn config(&self) -> &Endpoint {
        &self.config
    }

    /// The wire `model` is spoken to with: the configured one, except that
    /// OpenAI's Responses-only models go to `/responses`.
    pub fn wire_for(&self, model: &str) -> Wire {
        match self.config.wire {
            Wire::OpenAi if self.config.routes_to_responses && catalog::needs_responses(model) => {
                Wire::Responses
            }
            wire => wire,
        }
    }

    /// Where requests go on the configured wire.
    pub fn endpoint(&self) -> String {
        self.url_for(self.config.wire)
    }

    fn url_for(&self, wire: Wire) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        match wire {
            Wire::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Wire::Anthropic => format!("{base}/v1/messages"),
            Wire::OpenAi => format!("{base}/chat/completions"),
            Wire::Responses => format!("{base}/responses"),
        }
    }

    /// The exact JSON body `stream` sends for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        match self.wire_for(&request.model) {
            Wire::Anthropic => anthropic::encode_request(
                request,
                AnthropicOptions {
                    thinking_budget: self.config.thinking_budget,
                },
            ),
            Wire::OpenAi => openai::encode_request(
                request,
                OpenAiOptions {
                    sends_prompt_cache_key: self.config.sends_prompt_cache_key,
                    uses_max_completion_tokens: self.config.uses_max_completion_tokens,
                },
            ),
            Wire::Responses => responses::encode_request(
                request,
                ResponsesOptions {
                    sends_prompt_cache_key: self.config.sends_prompt_cache_key,
                    reasoning_summaries: catalog::is_openai_reasoning(&request.model),
                },
            ),
        }
    }

    /// Sends `request` and returns its events as they arrive.
    ///
    /// # Errors
    /// Connection failures, non-success statuses (classified), cancellation.
    /// Errors after this returns arrive as items of the stream.
    pub async fn stream(
        &self,
        request: &ChatRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, Error> {
        let secret = self.config.api_key.clone();
        let redact = |error: Error| error.redact(secret.as_deref());
        let wire = self.wire_for(&request.model);
        let url = self.url_for(wire);
        let body = serde_json::to_vec(&self.request_body(request))
            .map_err(|error| Error::config(format!("cannot encode the request: {error}")))?;
        let send = self
            .http
            .post(&url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let stall = self.config.stall_timeout;
        let response = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(Error::cancelled()),
            response = tokio::time::timeout(stall, send) => match response {
                Err(_) => return Err(Error::stalled(&url, stall)),
                Ok(Err(error)) => return Err(redact(connect_error(&url, &error))),
                Ok(Ok(response)) => response,
            },
        };
        let status = response.status();
        if is_html(response.headers()) {
            let text = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::cancelled()),
                text = tokio::time::timeout(stall, read_error_body(response)) => text.unwrap_or_default(),
            };
            return Err(redact(Error::html_page(&url, status.as_u16(), &text)));
        }
        if !status.is_success() {
            let headers = response.headers().clone();
            let text = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::cancelled()),
                text = tokio::time::timeout(stall, read_error_body(response)) => text.unwrap_or_default(),
            };
            let error = Error::from_http(&self.config.name, status.as_u16(), &headers, &text);
            return Err(redact(with_key_advice(error, &self.config)));
        }
        let decoder: Box<dyn WireDecoder> = match wire {
            Wire::Anthropic => Box::new(AnthropicDecoder::new()),
            Wire::OpenAi => Box::new(OpenAiDecoder::new()),
            Wire::Responses => Box::new(ResponsesDecoder::new()),
        };
        let state = StreamState {
            body: Box::pin(response.bytes_stream()),
            sse: SseDecoder::new(),
            decoder,
            sse_events: Vec::new(),
            decoded: Vec::new(),
            pending: VecDeque::new(),
            pending_error: None,
            cancel,
            stall,
            last_event: tokio::time::Instant::now(),
            received: 0,
            max_bytes: self.config.max_response_bytes,
            url,
            secret,
            finished: false,
        };
        Ok(Box::pin(futures::stream::unfold(
            state,
            |mut state| async move { state.next_event().await.map(|item| (item, state)) },
        )))
    }

    /// `stream`, retried while nothing has been received: failures before the
    /// first event (status errors, drops, stalls, a mid-stream error before
    /// any content) are retried per `policy`, each wait reported to `on_retry`.
    ///
    /// `retries` counts the step's retries so far, whoever made them.
    ///
    /// # Errors
    /// The last failure, or `Cancelled`.
    pub async fn stream_with_retry(
        &self,
        request: &ChatRequest,
        cancel: CancellationToken,
        policy: &RetryPolicy,
        retries: &mut u32,
        on_retry: impl FnMut(RetryNotice),
    ) -> Result<EventStream, Error> {
        let cancel = &cancel;
        policy
            .run(cancel, retries, on_retry, || async move {
                let mut events = self.stream(request, cancel.clone()).await?;
                match events.next().await {
                    Some(Ok(first)) => {
                        Ok(Box::pin(futures::stream::iter([Ok(first)]).chain(events))
                            as EventStream)
                    }
                    Some(Err(error)) => Err(error),
                    None => Err(Error::truncated(&self.config.name, "no events at all")),
                }
            })
            .await
    }
}

fn build_headers(config: &Endpoint) -> Result<HeaderMap, Error> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    );
    let invalid_key = || {
        Error::config(format!(
            "the API key for {} contains characters not allowed in an HTTP header",
            config.name
        ))
    };
    match (config.wire, &config.api_key) {
        (Wire::Anthropic, key) => {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(anthropic::API_VERSION),
            );
            if let Some(key) = key {
                let mut value = HeaderValue::from_str(key).map_err(|_| invalid_key())?;
                value.set_sensitive(true);
                headers.insert("x-api-key", value);
            }
        }
        (Wire::OpenAi | Wire::Responses, Some(key)) => {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| invalid_key())?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        (Wire::OpenAi | Wire::Responses, None) => {}
    }
    for (name, value) in &config.headers {
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::config(format!(
                "header name {name:?} for {} is not valid HTTP",
                config.name
            ))
        })?;
        let header_value = HeaderValue::from_str(value).map_err(|_| {
            Error::config(format!(
                "the value of header {name} for {} is not valid HTTP",
                config.name
            ))
        })?;
        headers.insert(header_name, header_value);
    }
    Ok(headers)
}

/// Whether the reply is a web page: a login portal or a proxy's error page
/// stands where the API should be, and no retry will change that.
fn is_html(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("text/html")
        })
}

/// A request that never got an answer. A local address that refuses the
/// connection has no server running: said so, and retried only once.
fn connect_error(url: &str, error: &reqwest::Error) -> Error {
    let refused =
        std::iter::successors(Some(error as &(dyn std::error::Error + 'static)), |error| {
            error.source()
        })
        .filter_map(|error| error.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
    if refused && is_local_address(url) {
        Error::refused_locally(url, "connection refused")
    } else {
        Error::network(url, error_chain(error))
    }
}

/// Whether `url`'s host is this machine or a private network (see
/// [`crate::shared::reach`]): a server the user runs, not a hosted API.
pub fn is_local_address(url: &str) -> bool {
    crate::shared::reach(url) != crate::shared::Reach::Elsewhere
}

/// reqwest's top-level message hides the cause ("error sending request").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn read_error_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            body.truncate(MAX_ERROR_BODY_BYTES);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The decoding pipeline of one response body.
struct StreamState {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    sse: SseDecoder,
    decoder: Box<dyn WireDecoder>,
    sse_events: Vec<SseEvent>,
    decoded: Vec<StreamEvent>,
    pending: VecDeque<StreamEvent>,
    /// Yielded once the events decoded before it are out.
    pending_error: Option<Error>,
    cancel: CancellationToken,
    stall: Duration,
    /// When the last SSE event arrived. The stall timeout counts from here,
    /// not from the last byte: a server (or proxy) that only sends keep-alive
    /// comments forever is as stuck as a silent one.
    last_event: tokio::time::Instant,
    received: usize,
    max_bytes: usize,
    url: String,
    secret: Option<String>,
    finished: bool,
}

impl StreamState {
    async fn next_event(&mut self) -> Option<Result<StreamEvent, Error>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if let Some(error) = self.pending_error.take() {
                return Some(Err(error.redact(self.secret.as_deref())));
            }
            if self.finished {
                return None;
            }
            let next = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => Err(Error::cancelled()),
                next = tokio::time::timeout_at(self.last_event + self.stall, self.body.next()) => match next {
                    Err(_) => Err(Error::stalled(&self.url, self.stall)),
                    Ok(next) => Ok(next),
                },
            };
            let outcome = match next {
                Err(error) => Err(error),
                Ok(Some(Ok(bytes))) => {
                    self.received = self.received.saturating_add(bytes.len());
                    if self.received > self.max_bytes {
                        Err(Error::malformed(
                            &self.url,
                            format!(
                                "the response passed {} MiB without ending",
                                self.max_bytes / (1024 * 1024)
                            ),
                        ))
                    } else {
                        self.decode_bytes(&bytes)
                    }
                }
                Ok(Some(Err(error))) => Err(Error::network(&self.url, error_chain(&error))),
                Ok(None) => self.decode_end(),
            };
            self.pending.extend(self.decoded.drain(..));
            if let Err(error) = outcome {
                self.pending_error = Some(error);
                self.finished = true;
            } else if self.decoder.is_done() {
                // Stop reading: whatever follows the end marker is not ours.
                self.finished = true;
            }
        }
    }

    fn decode_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.sse
            .feed(bytes, &mut self.sse_events)
            .map_err(|error| Error::malformed(&self.url, error))?;
        if !self.sse_events.is_empty() {
            self.last_event = tokio::time::Instant::now();
        }
        self.decode_events()
    }

    fn decode_end(&mut self) -> Result<(), Error> {
        self.finished = true;
        let cut_mid_event = self.sse.is_mid_event();
        self.sse
            .finish(&mut self.sse_events)
            .map_err(|error| Error::malformed(&self.url, error))?;
        match self.decode_events() {
            // An event cut by a dropped connection is half JSON: that is the
            // network's fault (retryable), not a server speaking another format.
            Err(error) if cut_mid_event && error.kind() == ErrorKind::Malformed => {
                return Err(Error::truncated(&self.url, "the last event was cut off"));
            }
            outcome => outcome?,
        }
        self.decoder.finish(&mut self.decoded)
    }

    fn decode_events(&mut self) -> Result<(), Error> {
        for event in self.sse_events.drain(..) {
            self.decoder.decode(&event, &mut self.decoded)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_advice_is_only_as_specific_as_what_is_known() {
        let refused = || {
            Error::from_http(
                "local",
                401,
                &HeaderMap::new(),
                r#"{"error":{"message":"no"}}"#,
            )
        };
        let mut config = Endpoint::new("local", Wire::OpenAi, "http://127.0.0.1:9/v1");
        let keyless = with_key_advice(refused(), &config).to_string();
        assert!(keyless.contains("no API key was sent"), "{keyless}");
        config.headers = vec![("Authorization".into(), "Bearer x".into())];
        let by_header = with_key_advice(refused(), &config).to_string();
        assert!(
            by_header.ends_with(crate::provider::error::AUTH_ADVICE),
            "{by_header}"
        );
        config.headers.clear();
        config.api_key = Some("k".into());
        let unnamed = with_key_advice(refused(), &config).to_string();
        assert!(
            unnamed.ends_with(crate::provider::error::AUTH_ADVICE),
            "{unnamed}"
        );
        config.key_source = Some("LOCAL_KEY".into());
        let named = with_key_advice(refused(), &config).to_string();
        assert!(named.ends_with("check LOCAL_KEY"), "{named}");
    }
}
