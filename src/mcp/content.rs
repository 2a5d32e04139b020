//! An MCP call result as a tool output: text parts joined, images kept as
//! attachments, embedded resources inlined as text (or attached when
//! binary). Truncation is left to the registry like any other tool.

use serde_json::{Value, json};

use crate::message::FilePart;
use crate::tool::{ToolError, ToolOutput};

/// Converts through JSON, the wire shape the spec fixes, so SDK type churn
/// does not reach cairn.
pub fn to_output(
    exposed: &str,
    result: &rmcp::model::CallToolResult,
) -> Result<ToolOutput, ToolError> {
    let value =
        serde_json::to_value(result).map_err(|error| ToolError::Failed(error.to_string()))?;
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for part in value
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        read_part(part, &mut text, &mut attachments);
    }
    if text.is_empty()
        && let Some(structured) = value.get("structuredContent")
    {
        text.push(structured.to_string());
    }
    let output = text.join("\n");
    if value.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(ToolError::Failed(format!("{exposed} failed: {output}")));
    }
    let mut out = ToolOutput::text(exposed, output, json!({"mcp": true}));
    out.attachments = attachments;
    Ok(out)
}

fn read_part(part: &Value, text: &mut Vec<String>, attachments: &mut Vec<FilePart>) {
    let field = |key: &str| part.get(key).and_then(Value::as_str);
    match field("type") {
        Some("text") => text.push(field("text").unwrap_or_default().to_string()),
        Some("image") | Some("audio") => {
            let mime = field("mimeType").unwrap_or("application/octet-stream");
            let data = field("data").unwrap_or_default();
            text.push(format!("[{mime} attached]"));
            attachments.push(FilePart {
                mime: mime.to_string(),
                filename: None,
                url: format!("data:{mime};base64,{data}"),
            });
        }
        Some("resource") => {
            let resource = part.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            if let Some(body) = resource.get("text").and_then(Value::as_str) {
                text.push(format!("[resource {uri}]\n{body}"));
            } else if let Some(blob) = resource.get("blob").and_then(Value::as_str) {
                let mime = resource
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("application/octet-stream");
                text.push(format!("[resource {uri} ({mime}) attached]"));
                attachments.push(FilePart {
                    mime: mime.to_string(),
                    filename: Some(uri.to_string()),
                    url: format!("data:{mime};base64,{blob}"),
                });
            }
        }
        Some("resource_link") => text.push(format!(
            "[resource link {}]",
            field("uri").unwrap_or_default()
        )),
        _ => text.push(part.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> rmcp::model::CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn parts_become_text_and_attachments() {
        let out = to_output(
            "s_t",
            &result(json!({"content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}
            ]})),
        )
        .expect("ok");
        assert_eq!(
            out.output,
            "hello\n[image/png attached]\n[resource file:///a]\nbody"
        );
        assert_eq!(out.attachments[0].url, "data:image/png;base64,AAAA");
    }

    #[test]
    fn is_error_is_a_failure_the_model_reads() {
        let error = to_output(
            "s_t",
            &result(
                json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
            ),
        )
        .expect_err("an error");
        assert_eq!(error.to_string(), "s_t failed: no such file");
    }
}
