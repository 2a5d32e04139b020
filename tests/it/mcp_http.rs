//! The MCP client over streamable HTTP, against the fixture server
//! (examples/mcp_fixture.rs `--http`) in its own process on 127.0.0.1:
//! listing, a call, an error, an image, a list change, a call that never
//! answers (timeout, cancel), a crash mid-call, headers with `${VAR}`
//! expansion (a server that requires one refuses a client without it), and
//! `cairn run /mcp` on Claude Code's `"type": "http"` entry.

use crate::mcp_client::fixture;
use crate::tools_common;

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use cairn::mcp::{Hub, ServerConfig, State};
use cairn::tool::{Registry, ToolError};
use serde_json::json;
use tools_common::Project;

/// The fixture serving HTTP; killed when dropped.
pub(crate) struct HttpFixture {
    child: std::process::Child,
    url: String,
}

impl HttpFixture {
    pub(crate) fn start(extra: &[&str]) -> Self {
        let mut child = std::process::Command::new(fixture())
            .arg("--http")
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the HTTP fixture");
        let stdout = child.stdout.take().expect("its stdout");
        let mut url = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut url)
            .expect("the fixture prints its URL");
        Self {
            child,
            url: url.trim().to_string(),
        }
    }

    pub(crate) fn config(&self, timeout: u64, headers: &[(&str, &str)]) -> ServerConfig {
        ServerConfig {
            url: Some(self.url.clone()),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            timeout: Some(timeout),
            ..Default::default()
        }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn ready_hub(servers: BTreeMap<String, ServerConfig>) -> (Arc<Hub>, Registry) {
    let hub = Hub::new(servers);
    hub.start();
    hub.wait_ready(Duration::from_secs(30)).await;
    (hub.clone(), Registry::builtin().with_mcp(hub))
}

#[tokio::test]
async fn http_tools_are_listed_called_and_fail_with_headers_expanded() {
    let open = HttpFixture::start(&[]);
    let guarded = HttpFixture::start(&["--require-header", "X-Token=s3cret"]);
    let servers = BTreeMap::from([
        ("fx".into(), open.config(10, &[])),
        (
            "guarded".into(),
            guarded.config(10, &[("X-Token", "${CAIRN_TEST_UNSET_TOKEN:-s3cret}")]),
        ),
        (
            "refused".into(),
            guarded.config(10, &[("X-Token", "wrong")]),
        ),
    ]);
    let (hub, registry) = ready_hub(servers).await;
    let by_name: BTreeMap<String, _> = hub
        .statuses()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    assert_eq!(by_name["fx"].state, State::Ready, "{:?}", by_name["fx"]);
    assert_eq!((by_name["fx"].tools, by_name["fx"].prompts), (7, 2));
    assert_eq!(by_name["guarded"].state, State::Ready, "{by_name:?}");
    assert_eq!(by_name["refused"].state, State::Failed);
    let refused = by_name["refused"].last_error.clone().unwrap_or_default();
    assert!(
        refused.contains("handshake failed") && refused.contains("Auth required"),
        "{refused}"
    );
    assert!(!refused.contains("rmcp::"), "no Rust type names: {refused}");

    let specs = registry.specs(|_| true);
    let echo = specs.iter().find(|s| s.name == "fx_echo").expect("fx_echo");
    assert_eq!(echo.parameters["properties"]["text"]["type"], "string");

    let ctx = Project::new().context();
    let out = registry
        .run("guarded_echo", json!({"text": "over http"}), &ctx)
        .await
        .expect("echo");
    assert_eq!(out.output, "echo: over http");
    let error = registry
        .run("fx_fail", json!({}), &ctx)
        .await
        .expect_err("fails");
    assert_eq!(
        error.to_string(),
        "fx_fail failed: the fixture failed on purpose"
    );
    let image = registry
        .run("fx_image", json!({}), &ctx)
        .await
        .expect("image");
    assert_eq!(image.attachments[0].mime, "image/png");
    let text = hub
        .expand_prompt("/fx:review a.rs speed")
        .await
        .expect("a prompt")
        .expect("its text");
    assert_eq!(
        text,
        "Please review a.rs with a focus on speed.\n\nBe brief."
    );
}

#[tokio::test]
async fn http_list_change_adds_the_new_tool() {
    let server = HttpFixture::start(&[]);
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server.config(10, &[]))])).await;
    let ctx = Project::new().context();
    assert!(!hub.has_tool("fx_extra"));
    let mut changes = hub.subscribe();
    registry
        .run("fx_grow", json!({}), &ctx)
        .await
        .expect("grow");
    tokio::time::timeout(Duration::from_secs(10), async {
        while !hub.has_tool("fx_extra") {
            changes.changed().await.expect("hub alive");
        }
    })
    .await
    .expect("fx_extra appears");
    let out = registry
        .run("fx_extra", json!({}), &ctx)
        .await
        .expect("extra");
    assert_eq!(out.output, "extra ran");
}

#[tokio::test]
async fn http_call_that_never_answers_times_out_cancels_and_a_crash_fails_the_call() {
    let server = HttpFixture::start(&[]);
    let (hub, registry) = ready_hub(BTreeMap::from([("fx".into(), server.config(2, &[]))])).await;
    let ctx = Project::new().context();
    let error = registry
        .run("fx_hang", json!({}), &ctx)
        .await
        .expect_err("times out");
    assert!(
        error.to_string().contains("no answer within 2 s"),
        "{error}"
    );
    // The server is still usable after a timed-out call.
    let out = registry
        .run("fx_echo", json!({"text": "still here"}), &ctx)
        .await
        .expect("echo after the timeout");
    assert_eq!(out.output, "echo: still here");

    let ctx = Project::new().context();
    let cancel = ctx.cancel.clone();
    let call = registry.run("fx_hang", json!({}), &ctx);
    let (result, ()) = tokio::join!(call, async { cancel.cancel() });
    assert!(
        matches!(result, Err(ToolError::Interrupted { .. })),
        "{result:?}"
    );

    let ctx = Project::new().context();
    let error = registry
        .run("fx_crash", json!({}), &ctx)
        .await
        .expect_err("the server exits mid-call");
    assert!(error.to_string().contains("MCP server `fx`"), "{error}");
    assert!(hub.statuses()[0].last_error.is_some() || hub.statuses()[0].state == State::Failed);
}

/// Claude Code's `"type": "http"` entry in `.mcp.json`, unchanged.
#[tokio::test]
async fn cairn_run_mcp_lists_an_http_server_from_mcp_json() {
    let server = HttpFixture::start(&["--require-header", "Authorization=Bearer t0ken"]);
    let project = crate::project::Project::new();
    let file = json!({"mcpServers": {
        "remote": {"type": "http", "url": server.url,
                   "headers": {"Authorization": "Bearer ${CAIRN_TEST_UNSET_KEY:-t0ken}"}}
    }});
    std::fs::write(project.path(".mcp.json"), file.to_string()).expect("write .mcp.json");
    project.trust();
    let out = project.ok(&["run", "/mcp"]).await;
    assert!(out.contains("remote: ready, 7 tools, 2 prompts"), "{out}");
}
