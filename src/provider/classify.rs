//! Classifying provider failures: HTTP status + body (Anthropic, OpenAI,
//! llama-server shapes), error objects sent inside streams, the overflow
//! phrases of opencode-spec 7.5, and `retry-after` headers.
//!
//! Pure functions over what the server sent; never performs I/O.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::error::{AUTH_ADVICE, Error, ErrorKind};

/// Longest excerpt of a server's error text kept in a message.
const MAX_DETAIL_CHARS: usize = 600;

/// Provider phrases meaning "the prompt does not fit the context window"
/// (opencode `provider/error.ts`), matched case-insensitively.
static OVERFLOW_PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    let patterns = [
        r"prompt is too long",
        r"input is too long for requested model",
        r"exceeds the context window",
        r"input token count.*exceeds the maximum",
        r"tokens in request more than max tokens allowed",
        r"maximum prompt length is \d+",
        r"reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds the limit of \d+",
        r"exceeds the available context size",
        r"greater than the context length",
        r"context window exceeds limit",
        r"exceeded model token limit",
        r"context[_ ]length[_ ]exceeded",
        r"request entity too large",
        r"context length is only \d+ tokens",
        r"input length.*exceeds.*context length",
        r"prompt too long; exceeded (max )?context length",
        r"too large for model with \d+ maximum context length",
        r"model_context_window_exceeded",
        r"^4(00|13)\s*(status code)?\s*\(no body\)",
    ];
    Regex::new(&format!("(?is){}", patterns.join("|")))
        .expect("the overflow patterns are valid regexes")
});

/// Where overflow errors state the model's real window: OpenAI "maximum
/// context length is N tokens", Anthropic "prompt is too long: X tokens > N
/// maximum", llama-server "available context size (N tokens)" and `n_ctx`.
static STATED_WINDOW: LazyLock<Regex> = LazyLock::new(|| {
    let patterns = [
        r"maximum context length is (\d+)",
        r"tokens > (\d+) maximum",
        r"available context size \((\d+) tokens\)",
        r#""n_ctx"\s*:\s*(\d+)"#,
        r"context length is only (\d+)",
        r"maximum prompt length is (\d+)",
        r"(\d+) maximum context length",
    ];
    Regex::new(&format!("(?i){}", patterns.join("|")))
        .expect("the stated-window patterns are valid regexes")
});

/// The window an overflow error states, if it states one.
fn stated_window(body: &ErrorBody) -> Option<u64> {
    [&body.message, &body.raw].into_iter().find_map(|text| {
        let found = STATED_WINDOW.captures(text)?;
        found
            .iter()
            .skip(1)
            .flatten()
            .find_map(|group| group.as_str().parse().ok())
    })
}

/// Rate-limit wording some providers use without a 429 status.
static RATE_LIMIT_PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)rate limit|too many requests|rate increased too quickly|rate_limit")
        .expect("the rate-limit pattern is a valid regex")
});

impl Error {
    /// Classifies a non-success HTTP reply from its status, headers and body.
    pub fn from_http(
        provider: &str,
        status: u16,
        headers: &reqwest::header::HeaderMap,
        body: &str,
    ) -> Self {
        let parsed = ErrorBody::parse(body);
        let kind = classify(Some(status), &parsed);
        let detail = parsed.detail();
        let message = describe(provider, kind, Some(status), &detail);
        let stated = (kind == ErrorKind::ContextOverflow)
            .then(|| stated_window(&parsed))
            .flatten();
        Self::new(kind, message)
            .with_retry_after(retry_after_from_headers(headers))
            .with_stated_context(stated)
    }

    /// Classifies an error object sent inside a stream (Anthropic `error`
    /// event, OpenAI-compatible `data: {"error": ...}`).
    pub fn from_stream_error(provider: &str, value: &Value) -> Self {
        let parsed = ErrorBody::from_value(value);
        let status = parsed.numeric_code;
        let mut kind = classify(status, &parsed);
        if kind == ErrorKind::BadRequest && status.is_none() {
            // An unexplained failure after HTTP 200 is the server's, not ours.
            kind = ErrorKind::Server { status: 500 };
        }
        let detail = parsed.detail();
        let stated = (kind == ErrorKind::ContextOverflow)
            .then(|| stated_window(&parsed))
            .flatten();
        Self::new(kind, describe(provider, kind, status, &detail)).with_stated_context(stated)
    }
}

/// The fields every family's error body has in some shape.
#[derive(Debug, Default)]
struct ErrorBody {
    error_type: String,
    code: String,
    numeric_code: Option<u16>,
    message: String,
    raw: String,
}

impl ErrorBody {
    fn parse(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => Self::from_value(&value),
            Err(_) => Self {
                raw: body.trim().to_owned(),
                ..Self::default()
            },
        }
    }

    /// Anthropic `{"type":"error","error":{"type","message"}}`; OpenAI and
    /// llama-server `{"error":{"message","type","code"}}`; some proxies send
    /// the error object bare or `{"message": ...}`.
    fn from_value(value: &Value) -> Self {
        let error = value.get("error").unwrap_or(value);
        if let Some(text) = error.as_str() {
            return Self {
                message: text.to_owned(),
                ..Self::default()
            };
        }
        let text = |key: &str| {
            error
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let code_value = error.get("code");
        Self {
            error_type: text("type"),
            code: code_value
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            numeric_code: code_value
                .and_then(Value::as_u64)
                .and_then(|code| u16::try_from(code).ok()),
            message: text("message"),
            raw: value.to_string(),
        }
    }

    fn detail(&self) -> String {
        let text = if self.message.is_empty() {
            &self.raw
        } else {
            &self.message
        };
        let text = if text.is_empty() {
            "no error body"
        } else {
            text.as_str()
        };
        match text.char_indices().nth(MAX_DETAIL_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_owned(),
        }
    }
}

fn classify(status: Option<u16>, body: &ErrorBody) -> ErrorKind {
    let text = if body.message.is_empty() {
        &body.raw
    } else {
        &body.message
    };
    let is_overflow = status == Some(413)
        || body.code == "context_length_exceeded"
        || body.error_type == "exceed_context_size_error"
        || body.error_type == "request_too_large"
        || OVERFLOW_PATTERNS.is_match(text)
        // The AI SDK's `400 status code (no body)`: some gateways answer an
        // oversized prompt with an empty 400 (opencode-spec 7.5).
        || (body.message.is_empty()
            && status.is_some_and(|s| s == 400 || s == 413)
            && body.raw.is_empty());
    if is_overflow {
        return ErrorKind::ContextOverflow;
    }
    match (status, body.error_type.as_str(), body.code.as_str()) {
        (_, "insufficient_quota", _) | (_, _, "insufficient_quota") => ErrorKind::BadRequest,
        (Some(401 | 403), _, _) | (_, "authentication_error" | "permission_error", _) => {
            ErrorKind::Auth
        }
        (Some(429), _, _) | (_, "rate_limit_error" | "rate_limit_exceeded", _) => {
            ErrorKind::RateLimited { retry_after: None }
        }
        (Some(529), _, _) | (_, "overloaded_error", _) => ErrorKind::Overloaded,
        (Some(status), _, _) if status >= 500 => ErrorKind::Server { status },
        (None, "api_error" | "server_error", _) => ErrorKind::Server { status: 500 },
        _ if RATE_LIMIT_PATTERNS.is_match(text) => ErrorKind::RateLimited { retry_after: None },
        _ => ErrorKind::BadRequest,
    }
}

fn describe(provider: &str, kind: ErrorKind, status: Option<u16>, detail: &str) -> String {
    let http = status
        .map(|status| format!("HTTP {status}: "))
        .unwrap_or_default();
    match kind {
        ErrorKind::ContextOverflow => format!(
            "{provider} says the conversation does not fit the model's context window ({http}{detail})"
        ),
        ErrorKind::RateLimited { .. } => format!(
            "{provider} is rate limiting requests ({http}{detail}); cairn waits and retries, and if it keeps happening check your plan's limits"
        ),
        ErrorKind::Overloaded => format!(
            "{provider} is overloaded ({http}{detail}); cairn waits and retries, or try again in a few minutes"
        ),
        ErrorKind::Server { .. } => format!(
            "{provider} failed on its side ({http}{detail}); cairn retries, and if it persists try again later"
        ),
        ErrorKind::Auth => {
            format!("{provider} refused the credentials ({http}{detail}); {AUTH_ADVICE}")
        }
        ErrorKind::BadRequest => format!(
            "{provider} rejected the request ({http}{detail}); check the model name and options for this provider"
        ),
        _ => format!("{provider} failed ({http}{detail})"),
    }
}

/// `retry-after-ms` (milliseconds), else `retry-after` (seconds or an HTTP date).
pub fn retry_after_from_headers(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        return Some(Duration::from_secs_f64(millis / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    fn http(status: u16, body: &str) -> Error {
        Error::from_http("test", status, &HeaderMap::new(), body)
    }

    #[test]
    fn overflow_errors_state_the_real_window() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let llama = include_str!(
            "../../tests/common/support/fixtures/llama-server/smollm2-overflow-nonstream.json"
        );
        assert_eq!(http(400, anthropic).stated_context(), Some(200_000));
        assert_eq!(http(400, openai).stated_context(), Some(128_000));
        assert_eq!(http(400, llama).stated_context(), Some(2048));
        assert_eq!(http(413, "").stated_context(), None);
    }

    #[test]
    fn overflow_bodies_of_each_family_are_context_overflow() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let llama = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/common/support/fixtures/llama-server/smollm2-overflow-stream.sse.txt"
        ));
        for body in [anthropic, openai, llama] {
            let error = http(400, body);
            assert_eq!(error.kind(), ErrorKind::ContextOverflow, "{body}");
            assert!(!error.is_retryable());
        }
        assert_eq!(http(413, "").kind(), ErrorKind::ContextOverflow);
        assert_eq!(
            http(400, r#"{"error":{"code":"context_length_exceeded"}}"#).kind(),
            ErrorKind::ContextOverflow
        );
        assert_eq!(
            http(
                400,
                "Input length 9000 exceeds the model's context length 8192"
            )
            .kind(),
            ErrorKind::ContextOverflow
        );
        assert_eq!(
            http(400, "400 status code (no body)").kind(),
            ErrorKind::ContextOverflow
        );
    }

    #[test]
    fn statuses_and_types_map_to_kinds() {
        assert_eq!(http(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#).kind(), ErrorKind::Auth);
        assert_eq!(
            http(429, "{}").kind(),
            ErrorKind::RateLimited { retry_after: None }
        );
        assert_eq!(
            http(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .kind(),
            ErrorKind::Overloaded
        );
        assert_eq!(
            http(503, "upstream down").kind(),
            ErrorKind::Server { status: 503 }
        );
        assert_eq!(
            http(400, r#"{"error":{"message":"unknown model"}}"#).kind(),
            ErrorKind::BadRequest
        );
        assert_eq!(
            http(
                429,
                r#"{"error":{"type":"insufficient_quota","message":"quota"}}"#
            )
            .kind(),
            ErrorKind::BadRequest
        );
        assert!(http(503, "").is_retryable());
        assert!(!http(400, "bad").is_retryable());
        assert!(!http(401, "bad").is_retryable());
    }

    #[test]
    fn stream_errors_are_classified() {
        let overloaded = serde_json::json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        assert_eq!(
            Error::from_stream_error("anthropic", &overloaded).kind(),
            ErrorKind::Overloaded
        );
        let llama = serde_json::json!({"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}});
        let error = Error::from_stream_error("llamacpp", &llama);
        assert_eq!(error.kind(), ErrorKind::Server { status: 500 });
        assert!(error.to_string().contains("peg-native format"), "{error}");
    }

    #[test]
    fn retry_after_headers_are_read() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(
            retry_after_from_headers(&headers),
            Some(Duration::from_secs(7))
        );
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(
            retry_after_from_headers(&headers),
            Some(Duration::from_millis(1500))
        );
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_str(&httpdate::fmt_http_date(later)).unwrap(),
        );
        let wait = retry_after_from_headers(&dated).unwrap();
        assert!(
            wait > Duration::from_secs(110) && wait <= Duration::from_secs(120),
            "{wait:?}"
        );
        let error = Error::from_http("openai", 429, &headers, "{}");
        assert_eq!(
            error.kind(),
            ErrorKind::RateLimited {
                retry_after: Some(Duration::from_millis(1500))
            }
        );
    }
}
