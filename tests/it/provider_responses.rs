//! The OpenAI Responses wire beyond what every wire shares (provider_wires):
//! the exact stateless request, which models the `openai` provider sends
//! there, the terminal events that are not `response.completed`, and a tool
//! round trip through `cairn run`.

use crate::project::{Project, describe, text_of};
use crate::provider_openai::conversation;
use crate::support;

use std::time::Duration;

use cairn::message::FinishReason;
use cairn::provider::presets::resolve_provider_with_env;
use cairn::provider::{Endpoint, ErrorKind, Provider, ProviderOverrides, StreamEvent, Usage, Wire};
use serde_json::{Value, json};
use support::{ScriptedResponse, ScriptedServer, collect_events, within};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

fn sse(events: &[Value]) -> ScriptedResponse {
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            )
        })
        .collect();
    ScriptedResponse::sse().chunk(body)
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "object": "response",
        "status": "completed", "usage": usage}})
}

fn text_answer(text: &str) -> ScriptedResponse {
    sse(&[
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        completed(json!({"input_tokens": 10, "output_tokens": 2})),
    ])
}

fn responses_provider(server: &ScriptedServer) -> Provider {
    let mut config = Endpoint::new("openai", Wire::Responses, format!("{}/v1/", server.url()));
    config.api_key = Some("sk-shape".into());
    config.sends_prompt_cache_key = true;
    config.stall_timeout = Duration::from_millis(500);
    Provider::new(config).unwrap()
}

async fn stream(
    provider: &Provider,
    request: &cairn::provider::ChatRequest,
) -> (Vec<StreamEvent>, Option<cairn::provider::Error>) {
    within(LIMIT, async {
        match provider.stream(request, CancellationToken::new()).await {
            Ok(stream) => collect_events(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    })
    .await
}

#[tokio::test]
async fn the_request_is_the_whole_input_with_store_off() {
    let server = ScriptedServer::start([text_answer("ok")]).await;
    let mut request = conversation();
    request.model = "gpt-5-codex".into();
    let (_, error) = stream(&responses_provider(&server), &request).await;
    assert!(error.is_none(), "{error:?}");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-shape"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-5-codex",
            "stream": true,
            "store": false,
            "max_output_tokens": 4096,
            "temperature": 0.2,
            "prompt_cache_key": "ses_1",
            "reasoning": {"summary": "auto"},
            "instructions": "You are cairn.\n\nProject rules: be terse.",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "Read main.rs"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBOR"},
                ]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"src/main.rs\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{\"path\": broken"},
                {"type": "function_call_output", "call_id": "call_1", "output": "fn main() {}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "invalid arguments"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now explain."}]},
            ],
            "tools": [{"type": "function", "name": "read", "description": "Read a file", "strict": false,
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
        })
    );
}

/// The `openai` provider sends its Responses-only models to `/responses` and
/// the rest to `/chat/completions`; a wire the user set is used for all.
#[tokio::test]
async fn the_openai_provider_routes_codex_models_to_responses() {
    let server = ScriptedServer::start([]).await;
    let base = format!("{}/v1", server.url());
    let env = |variable: &str| match variable {
        "OPENAI_API_KEY" => Some("sk-route".to_owned()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    };
    let openai = resolve_provider_with_env("openai", &ProviderOverrides::default(), env).unwrap();
    assert_eq!(openai.wire_for("gpt-5-codex"), Wire::Responses);
    assert_eq!(openai.wire_for("o3-pro"), Wire::Responses);
    assert_eq!(openai.wire_for("gpt-5"), Wire::OpenAi);
    let chosen = ProviderOverrides {
        wire: Some(Wire::OpenAi),
        ..ProviderOverrides::default()
    };
    let pinned = resolve_provider_with_env("openai", &chosen, env).unwrap();
    assert_eq!(pinned.wire_for("gpt-5-codex"), Wire::OpenAi);
    let openrouter = resolve_provider_with_env(
        "openrouter",
        &ProviderOverrides::default(),
        |variable: &str| (variable == "OPENROUTER_API_KEY").then(|| "k".to_owned()),
    )
    .unwrap();
    assert_eq!(openrouter.wire_for("openai/gpt-5-codex"), Wire::OpenAi);

    server.script([text_answer("via responses"), {
        ScriptedResponse::sse().chunk(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"via chat\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        )
    }]);
    let mut request = conversation();
    request.model = "gpt-5-codex".into();
    assert!(stream(&openai, &request).await.1.is_none());
    request.model = "gpt-5".into();
    assert!(stream(&openai, &request).await.1.is_none());
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/responses", "/v1/chat/completions"]);
}

#[tokio::test]
async fn an_incomplete_response_ends_with_length_and_its_usage() {
    let server = ScriptedServer::start([sse(&[
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "long"}),
        json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40},
                "output_tokens": 64, "output_tokens_details": {"reasoning_tokens": 60}}}}),
    ])])
    .await;
    let (events, error) = stream(&responses_provider(&server), &conversation()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish {
            reason: FinishReason::Length,
            usage: Usage {
                input: 60,
                output: 4,
                reasoning: 60,
                cache_read: 40,
                cache_write: 0,
            }
        })
    );
}

#[tokio::test]
async fn failed_and_error_events_are_classified() {
    let cases = [
        (
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                "error": {"code": "server_error", "message": "The model failed to generate a response."}}}),
            ErrorKind::Server { status: 500 },
        ),
        (
            json!({"type": "error", "code": "rate_limit_exceeded",
                "message": "Rate limit reached for gpt-5-codex. Please try again in 2s.", "param": null}),
            ErrorKind::RateLimited { retry_after: None },
        ),
    ];
    for (event, expected) in cases {
        let server = ScriptedServer::start([sse(std::slice::from_ref(&event))]).await;
        let (_, error) = stream(&responses_provider(&server), &conversation()).await;
        let error = error.expect("an error");
        assert_eq!(
            std::mem::discriminant(&error.kind()),
            std::mem::discriminant(&expected),
            "{event}: {error}"
        );
    }
}

/// `cairn run` on `wire = "responses"`: the model calls `read`, the next
/// request carries the call and its output as items, and stdout is the answer.
#[tokio::test]
async fn cairn_run_round_trips_a_tool_call_over_responses() {
    let server = ScriptedServer::start([
        sse(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "fc_1", "type": "function_call", "call_id": "call_read", "name": "read", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
                "delta": "{\"path\":\"notes.txt\"}"}),
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "fc_1", "type": "function_call", "call_id": "call_read", "name": "read",
                    "arguments": "{\"path\":\"notes.txt\"}"}}),
            completed(json!({"input_tokens": 900, "output_tokens": 20})),
        ]),
        text_answer("The note says hello."),
    ])
    .await;
    let project = Project::new();
    std::fs::write(project.path("notes.txt"), "hello from the notes\n").unwrap();
    std::fs::write(
        project.path("cairn.toml"),
        format!(
            "model = \"codex/gpt-5-codex\"\nyolo = true\n\n[provider.codex]\nwire = \"responses\"\n\
             base_url = \"{}/v1\"\n\n[provider.codex.models.\"gpt-5-codex\"]\ncontext = 200000\noutput = 32000\n",
            server.url()
        ),
    )
    .unwrap();
    project.trust();
    let output = project.cairn(&["run", "what does notes.txt say?"]).await;
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(text_of(&output.stdout).trim(), "The note says hello.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&output));
    assert!(
        requests
            .iter()
            .all(|request| request.path == "/v1/responses")
    );
    let input = requests[1].json()["input"].clone();
    let items = input.as_array().expect("input items");
    let call = items
        .iter()
        .find(|item| item["type"] == "function_call")
        .expect("the call is sent back");
    assert_eq!(call["call_id"], "call_read");
    let result = items
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("the result is sent");
    assert_eq!(result["call_id"], "call_read");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("hello from the notes"),
        "{result}"
    );
}
