//! The `write` tool: writes a whole file, creating parent directories.
//! Asks the `edit` permission with the diff against the old content.

use serde::Deserialize;
use serde_json::{Value, json};

use super::edit::unified_diff;
use crate::permission::Preview;

use super::{Tool, ToolContext, ToolError, ToolOutput, parse_args};

pub struct Write;

#[derive(Deserialize)]
struct Args {
    #[serde(alias = "filePath", alias = "file_path")]
    path: String,
    content: String,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/write.txt");

#[async_trait::async_trait]
impl Tool for Write {
    fn name(&self) -> &'static str {
        "write"
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The file to write" },
                "content": { "type": "string", "description": "The whole content of the file" }
            },
            "required": ["path", "content"]
        })
    }
    fn is_read_only(&self) -> bool {
        false
    }

    async fn execute(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args("write", input)?;
        let path = ctx.resolve(&args.path);
        let shown = ctx.display_path(&path);
        if path.is_dir() {
            return Err(ToolError::Failed(format!(
                "{} is a directory; give a file path.",
                path.display()
            )));
        }
        ctx.check_external(&path, false).await?;
        let old = std::fs::read_to_string(&path).ok();
        let diff = unified_diff(&shown, old.as_deref().unwrap_or(""), &args.content);
        // Over an existing file the change is what matters; a new file is all new.
        let preview = match old {
            Some(_) => Preview::Diff {
                path: shown.clone(),
                diff: diff.clone(),
            },
            None => Preview::Content {
                path: shown.clone(),
                content: args.content.clone(),
            },
        };
        ctx.ask_showing(
            Some(preview),
            "edit",
            vec![shown.clone()],
            vec![shown.clone()],
            format!("Write {shown}"),
            json!({ "path": shown, "diff": diff }),
        )
        .await?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ToolError::io("create directory", parent, e))?;
        }
        std::fs::write(&path, &args.content).map_err(|e| ToolError::io("write", &path, e))?;
        let verb = if old.is_some() {
            "Overwrote"
        } else {
            "Created"
        };
        let output = format!(
            "{verb} {shown} ({} bytes, {} lines).",
            args.content.len(),
            args.content.lines().count()
        );
        Ok(ToolOutput::text(
            shown,
            output,
            json!({ "diff": diff, "exists": old.is_some() }),
        ))
    }
}
