//! A small MCP server over stdio, written with rmcp's server side, that the
//! integration tests run as a separate process: a tool that answers, one
//! that errors, one that crashes the process, one that never answers, an
//! image, a huge text, and one that changes the tool list (and the prompt
//! list: `grow` adds the `later` prompt). Prompts: `review <file> [focus]`
//! and `hello`.
//!
//! `mcp_fixture [--start-delay-ms N] [--starts-file PATH]`: N delays the
//! handshake (slow servers); PATH gets a line per start (restarts counted).
//! `--http [--require-header NAME=VALUE]`: streamable HTTP instead of stdio,
//! on 127.0.0.1 at a free port, whose URL is the first line printed; with a
//! required header, requests without it get 401.
//! `--odd-names` also lists tools named `*`, `a/b` and `Echo` (permission
//! patterns are built from tool names the server chooses).

use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InitializeResult, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptMessage, Role, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Default, Clone)]
struct Fixture {
    /// Set by `grow`: the `extra` tool is listed from then on. Shared, as
    /// the HTTP server makes a handler per session.
    grown: Arc<AtomicBool>,
    /// `--odd-names`: see the header.
    odd_names: bool,
}

/// Tool names with a glob character, a slash, or another case.
const ODD_NAMES: [&str; 3] = ["*", "a/b", "Echo"];

fn tool(name: &str, description: &str, properties: Value) -> Tool {
    serde_json::from_value(json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    }))
    .expect("a valid tool")
}

impl Fixture {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(
                "echo",
                "Echoes text back",
                json!({"text": {"type": "string"}}),
            ),
            tool("fail", "Always fails", json!({})),
            tool("crash", "Exits the server mid-call", json!({})),
            tool("hang", "Never answers", json!({})),
            tool("image", "Returns a 1x1 PNG", json!({})),
            tool(
                "huge",
                "Returns many lines",
                json!({"lines": {"type": "integer"}}),
            ),
            tool("grow", "Adds the `extra` tool", json!({})),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool("extra", "Appears after grow", json!({})));
        }
        if self.odd_names {
            tools.extend(ODD_NAMES.map(|name| tool(name, "Says it ran", json!({}))));
        }
        tools
    }
}

impl Fixture {
    fn prompts(&self) -> Vec<Prompt> {
        let mut prompts = vec![
            serde_json::from_value(json!({
                "name": "review",
                "description": "Review a file",
                "arguments": [
                    {"name": "file", "required": true},
                    {"name": "focus", "required": false}
                ]
            }))
            .expect("a valid prompt"),
            Prompt::new("hello", Some("Say hello"), None),
        ];
        if self.grown.load(Ordering::SeqCst) {
            prompts.push(Prompt::new("later", Some("Appears after grow"), None));
        }
        prompts
    }
}

const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

impl ServerHandler for Fixture {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .build();
        InitializeResult::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or("");
        let messages = match request.name.as_str() {
            "review" => vec![
                PromptMessage::new_text(
                    Role::User,
                    format!(
                        "Please review {} with a focus on {}.",
                        arg("file"),
                        arg("focus")
                    ),
                ),
                PromptMessage::new_text(Role::User, "Be brief."),
            ],
            "hello" => vec![PromptMessage::new_text(
                Role::User,
                "Say hello to the fixture.",
            )],
            "later" => vec![PromptMessage::new_text(Role::User, "A later prompt.")],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt {other}"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or("");
                CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))])
            }
            "fail" => {
                CallToolResult::error(vec![ContentBlock::text("the fixture failed on purpose")])
            }
            "crash" => std::process::exit(3),
            "hang" => std::future::pending().await,
            "image" => CallToolResult::success(vec![ContentBlock::image(PNG_1X1, "image/png")]),
            "huge" => {
                let lines = args.get("lines").and_then(Value::as_u64).unwrap_or(10_000);
                let text: Vec<String> = (0..lines).map(|n| format!("line {n}")).collect();
                CallToolResult::success(vec![ContentBlock::text(text.join("\n"))])
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                let _ = context.peer.notify_prompt_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra ran")]),
            odd if self.odd_names && ODD_NAMES.contains(&odd) => {
                CallToolResult::success(vec![ContentBlock::text(format!("{odd} ran"))])
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(path) = args
        .iter()
        .position(|arg| arg == "--starts-file")
        .and_then(|i| args.get(i + 1))
    {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(file, "started")?;
    }
    if let Some(ms) = args
        .iter()
        .position(|arg| arg == "--start-delay-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|ms| ms.parse::<u64>().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    // Dies on its own while idle (no call running): the client must notice.
    if let Some(ms) = args
        .iter()
        .position(|arg| arg == "--exit-after-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|ms| ms.parse::<u64>().ok())
    {
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            std::process::exit(4);
        });
    }
    if args.iter().any(|arg| arg == "--http") {
        let required = args
            .iter()
            .position(|arg| arg == "--require-header")
            .and_then(|i| args.get(i + 1))
            .and_then(|pair| pair.split_once('='))
            .map(|(name, value)| (name.to_string(), value.to_string()));
        return serve_http(required).await;
    }
    let fixture = Fixture {
        odd_names: args.iter().any(|arg| arg == "--odd-names"),
        ..Fixture::default()
    };
    let service = fixture.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

/// Streamable HTTP on 127.0.0.1:0 (rmcp's server side), one connection per
/// task, until the process is killed.
async fn serve_http(required: Option<(String, String)>) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    std::io::stdout().flush()?;
    let fixture = Fixture::default();
    let service = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        let required = required.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: hyper::Request<_>| {
                let service = service.clone();
                let allowed = required.as_ref().is_none_or(|(name, value)| {
                    request.headers().get(name).and_then(|v| v.to_str().ok()) == Some(value)
                });
                async move {
                    if !allowed {
                        return Ok::<_, Infallible>(unauthorized());
                    }
                    Ok(service.handle(request).await)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
}

fn unauthorized() -> hyper::Response<http_body_util::combinators::BoxBody<bytes::Bytes, Infallible>>
{
    use http_body_util::BodyExt;
    let mut response = hyper::Response::new(
        http_body_util::Full::new(bytes::Bytes::from_static(b"missing the required header"))
            .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    response
}
