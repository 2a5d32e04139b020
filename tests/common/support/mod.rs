//! The one scripted HTTP server of the tests and benches: binds 127.0.0.1:0
//! (or another of this machine's addresses, for a host that must not count as
//! this machine), answers each request with the next response from a queue (or from a
//! function of the request), and records every request (method, path,
//! headers, body, arrival time) for assertions.
//!
//! Responses can stream body chunks with delays, drop the connection after a
//! chunk, or stall forever, so tests exercise real sockets and real framing;
//! a chunk can be noted with the text it carries, and the server keeps when
//! each noted chunk left the socket (the crash test measures loss with it).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the whole request had arrived.
    pub at: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON; panics (failing the test) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// What happens after the scripted chunks are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// A complete response (terminating chunk for chunked bodies).
    Complete,
    /// Close the socket without finishing the body.
    Drop,
    /// Keep the socket open and send nothing more, ever.
    Stall,
}

#[derive(Debug, Clone)]
enum Step {
    Chunk(Vec<u8>),
    /// A chunk whose send time is kept with the text it carries.
    Noted(Vec<u8>, String),
    Delay(Duration),
    /// One chunk written this many times (an endless-looking stream without
    /// building it in memory).
    Repeated(Vec<u8>, usize),
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct ScriptedResponse {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    steps: Vec<Step>,
    ending: Ending,
    /// Send the body with `Content-Length` (plain JSON errors) instead of chunked.
    fixed_length: bool,
    /// Never send even the status line.
    silent: bool,
}

impl ScriptedResponse {
    /// An empty reply with `status`; add headers and chunks with the builders.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            reason: reason_phrase(status).to_owned(),
            headers: Vec::new(),
            steps: Vec::new(),
            ending: Ending::Complete,
            fixed_length: false,
            silent: false,
        }
    }

    /// Accept the request and never answer, not even the status line.
    pub fn no_answer() -> Self {
        let mut response = Self::new(200);
        response.silent = true;
        response
    }

    /// HTTP 200 `text/event-stream`, body sent chunked.
    pub fn sse() -> Self {
        Self::new(200).header("content-type", "text/event-stream")
    }

    /// A JSON body with `Content-Length`, as error replies are sent.
    pub fn json(status: u16, body: &str) -> Self {
        let mut response = Self::new(status)
            .header("content-type", "application/json")
            .chunk(body);
        response.fixed_length = true;
        response
    }

    /// Replays a recording: `headers` is the raw head (status line and
    /// headers, as in the fixtures' `.headers.txt`); framing headers are
    /// replaced by our own (the body is re-framed), the rest kept verbatim.
    pub fn recorded(headers: &str, body: &[u8]) -> Self {
        let mut lines = headers.lines();
        let status_line = lines.next().unwrap_or("HTTP/1.1 200 OK");
        let mut parts = status_line.splitn(3, ' ');
        let _version = parts.next();
        let status = parts
            .next()
            .and_then(|code| code.parse().ok())
            .unwrap_or(200);
        let mut response = Self::new(status);
        let mut body = body;
        response.reason = parts.next().unwrap_or("").to_owned();
        for line in lines.filter(|line| !line.is_empty()) {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let lowered = name.trim().to_ascii_lowercase();
            if lowered == "content-length" {
                // The recordings end with curl's newline after the counted body.
                let length: usize = value.trim().parse().unwrap_or(body.len());
                body = &body[..length.min(body.len())];
                response.fixed_length = true;
                continue;
            }
            if matches!(
                lowered.as_str(),
                "transfer-encoding" | "connection" | "keep-alive"
            ) {
                continue;
            }
            response
                .headers
                .push((name.trim().to_owned(), value.trim().to_owned()));
        }
        response.steps.push(Step::Chunk(body.to_vec()));
        response
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Appends one body chunk, written with one `write` call.
    pub fn chunk(mut self, bytes: impl AsRef<[u8]>) -> Self {
        self.steps.push(Step::Chunk(bytes.as_ref().to_vec()));
        self
    }

    /// Appends each piece as its own chunk.
    pub fn chunks<I: IntoIterator<Item = B>, B: AsRef<[u8]>>(mut self, pieces: I) -> Self {
        for piece in pieces {
            self = self.chunk(piece);
        }
        self
    }

    /// Splits `bytes` into chunks of `size` bytes (mid-line, mid-character).
    pub fn chunked_every(self, bytes: impl AsRef<[u8]>, size: usize) -> Self {
        let pieces: Vec<Vec<u8>> = bytes
            .as_ref()
            .chunks(size.max(1))
            .map(<[u8]>::to_vec)
            .collect();
        self.chunks(pieces)
    }

    /// A chunk carrying model `text`: the server keeps when it was sent
    /// ([`ScriptedServer::sent_text`]).
    pub fn noted_chunk(mut self, bytes: impl AsRef<[u8]>, text: &str) -> Self {
        self.steps
            .push(Step::Noted(bytes.as_ref().to_vec(), text.to_owned()));
        self
    }

    pub fn delay(mut self, wait: Duration) -> Self {
        self.steps.push(Step::Delay(wait));
        self
    }

    /// Waits `wait` before the first chunk (a reply that comes late).
    pub fn after(mut self, wait: Duration) -> Self {
        self.steps.insert(0, Step::Delay(wait));
        self
    }

    /// `bytes` as `times` chunks, generated as they are written.
    pub fn chunk_repeated(mut self, bytes: impl AsRef<[u8]>, times: usize) -> Self {
        self.steps
            .push(Step::Repeated(bytes.as_ref().to_vec(), times));
        self
    }

    /// Close the connection after the chunks so far, without ending the body.
    pub fn then_drop(mut self) -> Self {
        self.ending = Ending::Drop;
        self
    }

    /// Keep the connection open and silent after the chunks so far.
    pub fn then_stall(mut self) -> Self {
        self.ending = Ending::Stall;
        self
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// The running server. Dropping it stops accepting connections.
pub struct ScriptedServer {
    address: std::net::SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

/// Answers a request from its content (a model that reacts to what it is sent).
type Responder = dyn Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync;

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<ScriptedResponse>>,
    /// Set by [`ScriptedServer::answering`]; the queue is then unused.
    responder: Option<Box<Responder>>,
    /// False for long runs whose memory is measured: requests are not kept.
    record: bool,
    /// `/props` and `/v1/models` are answered from the queue, not with 404.
    scripts_identity: bool,
    requests: Mutex<Vec<RecordedRequest>>,
    sent_text: Mutex<Vec<(Instant, String)>>,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl ScriptedServer {
    /// Starts a server that will answer with `responses`, in order. Requests
    /// beyond the script get HTTP 500 `no scripted response left`.
    pub async fn start(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        Self::serve(Shared {
            queue: Mutex::new(responses.into_iter().collect()),
            record: true,
            ..Shared::default()
        })
        .await
    }

    /// [`ScriptedServer::start`] on `ip` (port chosen by the system): a
    /// server cairn must treat as another host although the test reaches it.
    pub async fn start_on(
        ip: std::net::IpAddr,
        responses: impl IntoIterator<Item = ScriptedResponse>,
    ) -> Self {
        Self::serve_on(
            std::net::SocketAddr::new(ip, 0),
            Shared {
                queue: Mutex::new(responses.into_iter().collect()),
                record: true,
                ..Shared::default()
            },
        )
        .await
    }

    /// [`ScriptedServer::start`], whose script answers `/props` and
    /// `/v1/models` too (a test of what cairn asks them).
    pub async fn start_asked_what_it_is(
        responses: impl IntoIterator<Item = ScriptedResponse>,
    ) -> Self {
        Self::serve(Shared {
            queue: Mutex::new(responses.into_iter().collect()),
            record: true,
            scripts_identity: true,
            ..Shared::default()
        })
        .await
    }

    /// Starts a server that answers every request with `responder(request)`
    /// and keeps no request (its memory stays flat over thousands of them).
    pub async fn answering(
        responder: impl Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync + 'static,
    ) -> Self {
        Self::serve(Shared {
            responder: Some(Box::new(responder)),
            ..Shared::default()
        })
        .await
    }

    async fn serve(shared: Shared) -> Self {
        Self::serve_on(std::net::SocketAddr::from(([127, 0, 0, 1], 0)), shared).await
    }

    async fn serve_on(bind: std::net::SocketAddr, shared: Shared) -> Self {
        let listener = TcpListener::bind(bind)
            .await
            .unwrap_or_else(|error| panic!("bind {bind}: {error}"));
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let shared = Arc::new(shared);
        let accept_task = tokio::spawn({
            let shared = Arc::clone(&shared);
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move { serve(socket, &shared).await });
                }
            }
        });
        Self {
            address,
            shared,
            accept_task,
        }
    }

    /// `http://127.0.0.1:PORT` (the address it was bound to)
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The address it listens on.
    pub fn address(&self) -> std::net::SocketAddr {
        self.address
    }

    /// Queues more responses after the ones given at start.
    pub fn push(&self, response: ScriptedResponse) {
        self.shared
            .queue
            .lock()
            .expect("queue lock")
            .push_back(response);
    }

    /// Replaces what is left of the script and forgets the noted sends.
    pub fn script(&self, responses: impl IntoIterator<Item = ScriptedResponse>) {
        *self.shared.queue.lock().expect("queue lock") = responses.into_iter().collect();
        self.shared.sent_text.lock().expect("sent lock").clear();
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().expect("requests lock").clone()
    }

    /// Each noted chunk's text, with when it was written to the socket.
    pub fn sent_text(&self) -> Vec<(Instant, String)> {
        self.shared.sent_text.lock().expect("sent lock").clone()
    }
}

/// Paths only llama-server offers (cairn's exact prompt count).
const LLAMA_SERVER_ONLY: [&str; 2] = ["/apply-template", "/tokenize"];

/// The questions that tell which local server it is (asked when a session
/// opens), answered from the script only by [`ScriptedServer::start_asked_what_it_is`].
const IDENTITY: [&str; 2] = ["/props", "/v1/models"];

async fn serve(mut socket: TcpStream, shared: &Shared) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let response = match &shared.responder {
        Some(responder) => responder(&request),
        // A scripted answer is a chat response: llama-server's counting
        // and identifying endpoints (asked before a first answer) get what
        // a server without them answers, not a scripted response.
        None if LLAMA_SERVER_ONLY.contains(&request.path.as_str())
            || (!shared.scripts_identity && IDENTITY.contains(&request.path.as_str())) =>
        {
            let _ = write_response(
                &mut socket,
                ScriptedResponse::json(404, r#"{"error":"not found"}"#),
                &shared.sent_text,
            )
            .await;
            return;
        }
        None => shared
            .queue
            .lock()
            .expect("queue lock")
            .pop_front()
            .unwrap_or_else(|| {
                ScriptedResponse::json(500, r#"{"error":{"message":"no scripted response left"}}"#)
            }),
    };
    if shared.record {
        shared.requests.lock().expect("requests lock").push(request);
    }
    let _ = write_response(&mut socket, response, &shared.sent_text).await;
}

async fn read_request(socket: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position;
        }
        let mut piece = [0u8; 8192];
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&piece[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let mut piece = [0u8; 8192];
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(&piece[..read]);
    }
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
    })
}

async fn write_response(
    socket: &mut TcpStream,
    response: ScriptedResponse,
    sent_text: &Mutex<Vec<(Instant, String)>>,
) -> std::io::Result<()> {
    if response.silent {
        return std::future::pending().await;
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, response.reason);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("connection: close\r\n");
    if response.fixed_length {
        let length: usize = response
            .steps
            .iter()
            .map(|step| match step {
                Step::Chunk(bytes) | Step::Noted(bytes, _) => bytes.len(),
                Step::Repeated(bytes, times) => bytes.len() * times,
                Step::Delay(_) => 0,
            })
            .sum();
        head.push_str(&format!("content-length: {length}\r\n\r\n"));
    } else {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
    }
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    for step in &response.steps {
        match step {
            Step::Delay(wait) => tokio::time::sleep(*wait).await,
            Step::Chunk(bytes) => write_chunk(socket, bytes, response.fixed_length).await?,
            Step::Repeated(bytes, times) => {
                for _ in 0..*times {
                    write_chunk(socket, bytes, response.fixed_length).await?;
                }
            }
            Step::Noted(bytes, text) => {
                write_chunk(socket, bytes, response.fixed_length).await?;
                socket.flush().await?;
                let now = Instant::now();
                sent_text
                    .lock()
                    .expect("sent lock")
                    .push((now, text.clone()));
            }
        }
        socket.flush().await?;
    }
    match response.ending {
        Ending::Complete => {
            if !response.fixed_length {
                socket.write_all(b"0\r\n\r\n").await?;
            }
            socket.shutdown().await
        }
        // Dropping the socket closes it mid-body.
        Ending::Drop => Ok(()),
        Ending::Stall => std::future::pending().await,
    }
}

async fn write_chunk(
    socket: &mut TcpStream,
    bytes: &[u8],
    fixed_length: bool,
) -> std::io::Result<()> {
    if fixed_length {
        return socket.write_all(bytes).await;
    }
    if bytes.is_empty() {
        // An empty chunk would end a chunked body.
        return Ok(());
    }
    let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
    frame.extend_from_slice(bytes);
    frame.extend_from_slice(b"\r\n");
    socket.write_all(&frame).await
}

/// A file of the recorded llama-server fixtures (tests/common/support/fixtures).
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/common/support/fixtures/llama-server")
        .join(name)
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|error| panic!("read fixture {name}: {error}"))
}

/// Runs `future`, failing the test if it takes longer than `limit`: no test
/// may hang.
pub async fn within<T>(limit: Duration, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .expect("the test finished in time")
}

/// Drains a provider event stream: the events, then the error that ended it
/// (if any). Bounded by `within` in callers.
pub async fn collect_events(
    mut stream: cairn::provider::EventStream,
) -> (
    Vec<cairn::provider::StreamEvent>,
    Option<cairn::provider::Error>,
) {
    use futures::StreamExt;
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

/// The concatenated text deltas of `events`.
pub fn text_of(events: &[cairn::provider::StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            cairn::provider::StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Trusts the project `command` runs in, as its user would: `cairn trust`
/// with the environment the test then runs cairn with (data dir, config
/// home, key variables: they decide what counts as risky).
pub fn trust_project(mut command: std::process::Command) {
    let output = command
        .arg("trust")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run cairn trust");
    assert!(
        output.status.success(),
        "cairn trust failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
