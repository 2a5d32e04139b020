//! A small MCP server over stdio, written with rmcp's server side, that the
//! integration tests run as a separate process: a tool that answers, one
//! that errors, one that crashes the process, one that never answers, an
//! image, a huge text, and one that changes the tool list.
//!
//! `mcp_fixture [--start-delay-ms N] [--odd-names]`: N delays the handshake
//! (slow servers); `--odd-names` also lists tools named `*`, `a/b` and `Echo`
//! (permission patterns are built from tool names the server chooses).

use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Default)]
struct Fixture {
    /// Set by `grow`: the `extra` tool is listed from then on.
    grown: AtomicBool,
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

const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

impl ServerHandler for Fixture {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
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
    if let Some(ms) = args
        .iter()
        .position(|arg| arg == "--start-delay-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|ms| ms.parse::<u64>().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let fixture = Fixture {
        odd_names: args.iter().any(|arg| arg == "--odd-names"),
        ..Fixture::default()
    };
    let service = fixture.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
