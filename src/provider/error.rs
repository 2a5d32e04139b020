//! `provider::Error`: what went wrong with a model call, as a kind the
//! session decides on (retry, compact, stop) and a message for users.
//!
//! Messages say what failed and what to try; they never contain an API key
//! (`redact` removes it from any echoed server text). Classifying HTTP
//! replies and stream error objects into kinds lives in `classify.rs`.

use std::time::Duration;

/// What kind of failure, without the text: what the session decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request does not fit the model's window: compact, never retry.
    ContextOverflow,
    RateLimited {
        retry_after: Option<Duration>,
    },
    Overloaded,
    Server {
        status: u16,
    },
    Auth,
    BadRequest,
    /// Could not connect, or the connection broke.
    Network,
    /// No event (or, before the reply, no answer) for longer than the stall timeout.
    Stalled,
    /// The server sent something that is not the wire format.
    Malformed,
    Cancelled,
    /// The provider is not usable as configured (unknown name, key unset).
    Config,
}

/// The end of an auth error's message until the client names where the key
/// came from ([`Error::naming_key_source`]). Here, not in `classify` which
/// writes it, so that the error type does not import its classifier.
pub const AUTH_ADVICE: &str = "check the API key variable for this provider";

/// A failed model call. `Display` is the message for users.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The server's requested wait (`retry-after-ms` / `retry-after`).
    retry_after: Option<Duration>,
    /// A connection refused by a local address: nothing listens there, and
    /// waiting will not start it (one quick retry covers a restart).
    local_refusal: bool,
    /// The window the provider said the model has, when an overflow states it.
    stated_context: Option<u64>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let retry_after = match kind {
            ErrorKind::RateLimited { retry_after } => retry_after,
            _ => None,
        };
        Self {
            kind,
            message: message.into(),
            retry_after,
            local_refusal: false,
            stated_context: None,
        }
    }

    /// `network` for a connection that a local address refused.
    pub fn refused_locally(url: &str, detail: impl std::fmt::Display) -> Self {
        Self {
            local_refusal: true,
            ..Self::new(
                ErrorKind::Network,
                format!(
                    "nothing is listening at {url} ({detail}); start the server or fix base_url in the config"
                ),
            )
        }
    }

    pub fn is_local_refusal(&self) -> bool {
        self.local_refusal
    }

    /// The same failure with `advice` appended to its message.
    pub fn with_advice(mut self, advice: impl std::fmt::Display) -> Self {
        self.message = format!("{}; {advice}", self.message);
        self
    }

    /// An auth failure's advice names where the key came from: the variable
    /// read (`ANTHROPIC_API_KEY`, or the one `api_key_env` chose), the
    /// config's `api_key`, or that no key was sent. Other kinds are unchanged.
    pub fn naming_key_source(mut self, source: Option<&str>) -> Self {
        if self.kind != ErrorKind::Auth {
            return self;
        }
        let advice = match source {
            Some(source) => format!("check {source}"),
            None => "no API key was sent: set api_key_env or api_key for this provider".into(),
        };
        if let Some(start) = self.message.rfind(AUTH_ADVICE) {
            self.message.truncate(start);
            self.message.push_str(&advice);
        }
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// How long the server asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The model's window as the provider stated it in an overflow error.
    pub fn stated_context(&self) -> Option<u64> {
        self.stated_context
    }

    pub fn with_stated_context(mut self, tokens: Option<u64>) -> Self {
        self.stated_context = tokens.filter(|tokens| *tokens > 0);
        self
    }

    pub fn with_retry_after(mut self, wait: Option<Duration>) -> Self {
        if wait.is_some() {
            self.retry_after = wait;
            if let ErrorKind::RateLimited { retry_after } = &mut self.kind {
                *retry_after = wait;
            }
        }
        self
    }

    /// Whether trying the same request again can succeed. The caller only
    /// retries before any event reached the user, so `Network` counts.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ErrorKind::RateLimited { .. }
            | ErrorKind::Overloaded
            | ErrorKind::Network
            | ErrorKind::Stalled => true,
            ErrorKind::Server { status } => status >= 500,
            ErrorKind::ContextOverflow
            | ErrorKind::Auth
            | ErrorKind::BadRequest
            | ErrorKind::Malformed
            | ErrorKind::Cancelled
            | ErrorKind::Config => false,
        }
    }

    pub fn is_context_overflow(&self) -> bool {
        self.kind == ErrorKind::ContextOverflow
    }

    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "the request was cancelled")
    }

    pub fn network(url: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorKind::Network,
            format!(
                "connection to {url} failed: {detail}; check the base URL and your network, cairn retries a few times"
            ),
        )
    }

    /// The body ended cleanly but before the format's end marker: a dropped
    /// connection or a proxy cutting the response.
    pub fn truncated(provider: &str, missing: &str) -> Self {
        Self::new(
            ErrorKind::Network,
            format!(
                "the response from {provider} ended early ({missing}); the connection was probably dropped, try again"
            ),
        )
    }

    pub fn stalled(url: &str, after: Duration) -> Self {
        Self::new(
            ErrorKind::Stalled,
            format!(
                "{url} sent no event for {} s, so the request was abandoned; the server may be overloaded, try again",
                after.as_secs_f32()
            ),
        )
    }

    /// A web page where the API should answer; quotes the page's title.
    pub fn html_page(url: &str, status: u16, page: &str) -> Self {
        let title = html_title(page)
            .map(|title| format!(" titled \"{}\"", excerpt(&title)))
            .unwrap_or_default();
        Self::new(
            ErrorKind::Malformed,
            format!(
                "the server at {url} answered with an HTML page, not an API response (HTTP {status}{title}); a login portal, proxy or wrong base_url is in the way: check base_url and open it in a browser"
            ),
        )
    }

    pub fn malformed(provider: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorKind::Malformed,
            format!(
                "{provider} sent a response cairn cannot read: {detail}; is the base URL pointing at the right kind of server?"
            ),
        )
    }

    /// `malformed` for one event the decoder could not read, quoting only
    /// its start: an event may be megabytes, the parser's detail may quote a
    /// whole string of it, and the message is stored and shown.
    pub fn malformed_event(provider: &str, detail: impl std::fmt::Display, data: &str) -> Self {
        let detail = detail.to_string();
        Self::malformed(
            provider,
            format!("{} in event {}", excerpt(&detail), excerpt(data)),
        )
    }

    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }

    /// Removes `secret` and every registered secret (`crate::secret`) from
    /// the message: servers echo keys back in 401 bodies, and URLs may hold
    /// passwords. A value too short to be a secret (`x`) is left alone, so
    /// words holding it stay whole.
    pub fn redact(mut self, secret: Option<&str>) -> Self {
        let mut secrets = crate::secret::registered();
        if let Some(secret) = secret {
            secrets.add(secret);
        }
        if let std::borrow::Cow::Owned(clean) = secrets.redact(&self.message) {
            self.message = clean;
        }
        self
    }
}

/// The text of a page's `<title>`, whitespace collapsed.
fn html_title(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = page
        .get(start..end)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!title.is_empty()).then_some(title)
}

/// The longest piece of a server's event quoted in a message.
const MAX_EXCERPT_CHARS: usize = 200;

/// The first `MAX_EXCERPT_CHARS` characters of `data`, with its full size when cut.
fn excerpt(data: &str) -> String {
    match data.char_indices().nth(MAX_EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes)", &data[..cut], data.len()),
        None => data.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;

    fn http(status: u16, body: &str) -> Error {
        Error::from_http("test", status, &HeaderMap::new(), body)
    }

    #[test]
    fn redact_removes_the_key_from_echoed_text() {
        let error = http(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-123"}}"#,
        )
        .redact(Some("sk-secret-123"));
        assert!(!error.to_string().contains("sk-secret-123"));
        assert!(!format!("{error:?}").contains("sk-secret-123"));
        assert!(error.to_string().contains("[redacted]"));
    }

    /// Issue #12: with `OPENAI_API_KEY=x`, every `x` became `[redacted]`.
    #[test]
    fn a_key_too_short_to_be_a_secret_leaves_words_whole() {
        let error = http(400, "the request exceeds the context window").redact(Some("x"));
        assert!(
            error.to_string().contains("exceeds the context window"),
            "{error}"
        );
    }
}
