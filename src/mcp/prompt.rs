//! MCP prompts as slash commands: `/SERVER:PROMPT args…` (OpenCode's naming:
//! both names with anything outside `[A-Za-z0-9_-]` replaced by `_`).
//!
//! Arguments are positional, in the order the server declares them; the last
//! one takes the rest of the line, so a free-text argument needs no quoting.
//! The prompt's messages, read through their JSON wire shape like tool
//! results, become the text of one user message.

use serde_json::{Map, Value};

/// One prompt a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    pub name: String,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    pub name: String,
    pub required: bool,
}

/// A prompt as the slash menu lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    /// `/server:prompt`
    pub command: String,
    /// `<required> [optional]`
    pub usage: String,
    pub description: String,
}

pub fn convert(prompts: Vec<rmcp::model::Prompt>) -> Vec<McpPrompt> {
    prompts
        .into_iter()
        .map(|prompt| McpPrompt {
            description: prompt.description.unwrap_or_default(),
            arguments: prompt
                .arguments
                .unwrap_or_default()
                .into_iter()
                .map(|argument| PromptArgument {
                    required: argument.required.unwrap_or(false),
                    name: argument.name,
                })
                .collect(),
            name: prompt.name,
        })
        .collect()
}

/// `/server:prompt` for a server's prompt.
pub fn command_name(server: &str, prompt: &str) -> String {
    format!("/{}:{}", sanitize(server), sanitize(prompt))
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn usage(prompt: &McpPrompt) -> String {
    prompt
        .arguments
        .iter()
        .map(|argument| {
            if argument.required {
                format!("<{}>", argument.name)
            } else {
                format!("[{}]", argument.name)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The typed words as the prompt's arguments: one word each, the last
/// argument the rest of the line. A missing required argument is an error
/// that shows the usage.
pub fn bind_arguments(
    command: &str,
    prompt: &McpPrompt,
    line: &str,
) -> Result<Map<String, Value>, String> {
    let mut rest = line.trim();
    let mut bound = Map::new();
    let count = prompt.arguments.len();
    for (index, argument) in prompt.arguments.iter().enumerate() {
        let value = if index + 1 == count {
            std::mem::take(&mut rest)
        } else {
            let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = after.trim_start();
            word
        };
        if value.is_empty() {
            if argument.required {
                return Err(format!(
                    "{command} needs <{}>; usage: {command} {}",
                    argument.name,
                    usage(prompt)
                ));
            }
            continue;
        }
        bound.insert(argument.name.clone(), Value::String(value.to_string()));
    }
    if !rest.is_empty() {
        return Err(format!(
            "{command} takes no arguments here: {rest:?}; usage: {command} {}",
            usage(prompt)
        ));
    }
    Ok(bound)
}

/// The messages of a `prompts/get` result as one text: each message's text
/// (and embedded text resources), separated by blank lines; what cannot be
/// text (an image) is named.
pub fn messages_text(result: &rmcp::model::GetPromptResult) -> String {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    let parts: Vec<String> = value
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|message| message.get("content"))
        .map(content_text)
        .filter(|text| !text.is_empty())
        .collect();
    parts.join("\n\n")
}

fn content_text(content: &Value) -> String {
    let field = |key: &str| content.get(key).and_then(Value::as_str);
    match field("type") {
        Some("text") => field("text").unwrap_or_default().to_string(),
        Some("resource") => {
            let resource = content.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(body) => format!("[resource {uri}]\n{body}"),
                None => format!("[resource {uri} not shown: binary]"),
            }
        }
        Some("resource_link") => format!("[resource link {}]", field("uri").unwrap_or_default()),
        Some(other) => format!("[{other} from the prompt not shown]"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(arguments: &[(&str, bool)]) -> McpPrompt {
        McpPrompt {
            name: "review".into(),
            description: String::new(),
            arguments: arguments
                .iter()
                .map(|(name, required)| PromptArgument {
                    name: (*name).into(),
                    required: *required,
                })
                .collect(),
        }
    }

    #[test]
    fn command_names_follow_opencode() {
        assert_eq!(command_name("github", "review-pr"), "/github:review-pr");
        assert_eq!(command_name("my.srv", "a b/c"), "/my_srv:a_b_c");
    }

    #[test]
    fn arguments_bind_by_position_the_last_takes_the_rest() {
        let two = prompt(&[("file", true), ("focus", false)]);
        let cases: &[(&McpPrompt, &str, Result<Value, &str>)] = &[
            (
                &two,
                "src/a.rs look at errors",
                Ok(json!({"file": "src/a.rs", "focus": "look at errors"})),
            ),
            (&two, "  src/a.rs  ", Ok(json!({"file": "src/a.rs"}))),
            (
                &two,
                "",
                Err("/s:review needs <file>; usage: /s:review <file> [focus]"),
            ),
            (&prompt(&[]), "", Ok(json!({}))),
            (
                &prompt(&[]),
                "extra",
                Err("/s:review takes no arguments here: \"extra\"; usage: /s:review "),
            ),
            (
                &prompt(&[("text", false)]),
                "a \"quoted\" line; rm -rf /",
                Ok(json!({"text": "a \"quoted\" line; rm -rf /"})),
            ),
        ];
        for (prompt, line, want) in cases {
            let got = bind_arguments("/s:review", prompt, line).map(Value::Object);
            assert_eq!(got, want.clone().map_err(str::to_string), "{line:?}");
        }
    }

    #[test]
    fn messages_become_one_text() {
        let result: rmcp::model::GetPromptResult = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Review this."}},
                {"role": "assistant", "content": {"type": "text", "text": "Which file?"}},
                {"role": "user", "content": {"type": "resource",
                    "resource": {"uri": "file:///a.rs", "text": "fn main() {}"}}},
                {"role": "user", "content": {"type": "image", "data": "AA", "mimeType": "image/png"}}
            ]
        }))
        .expect("a GetPromptResult");
        assert_eq!(
            messages_text(&result),
            "Review this.\n\nWhich file?\n\n[resource file:///a.rs]\nfn main() {}\n\n[image from the prompt not shown]"
        );
    }
}
