//! The `write` tool: writes a whole file, creating parent directories.
//! Asks the `edit` permission with the diff against the old content.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::edit::{MAX_DIFF_BYTES, too_large_to_diff, unified_diff};
use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for};
use crate::permission::Preview;

/// The name the model calls it by, which is also its permission.
const NAME: &str = "write";

pub struct Write;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The file to write
    #[serde(alias = "filePath", alias = "file_path")]
    path: String,
    /// The whole content of the file
    content: String,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/write.txt");

#[async_trait::async_trait]
impl Tool for Write {
    fn name(&self) -> &'static str {
        NAME
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }
    fn is_read_only(&self) -> bool {
        false
    }

    async fn execute(&self, input: Value, ctx: &ToolScope) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, input)?;
        let path = ctx.resolve(&args.path);
        let shown = ctx.display_path(&path);
        if path.is_dir() {
            return Err(ToolError::Failed(format!(
                "{} is a directory; give a file path.",
                path.display()
            )));
        }
        ctx.check_external(&path, false).await?;
        let (exists, diff) = old_content_diff(&path, &shown, &args.content)?;
        // Over an existing file the change is what matters; a new file is all new.
        let preview = if exists {
            Preview::Diff {
                path: shown.clone(),
                diff: diff.clone(),
            }
        } else {
            Preview::Content {
                path: shown.clone(),
                content: args.content.clone(),
            }
        };
        ctx.ask_edit(
            &path,
            preview,
            &shown,
            format!("Write {shown}"),
            json!({ "path": shown, "diff": diff }),
        )
        .await?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ToolError::io("create directory", parent, e))?;
        }
        super::edit::write_text(ctx, &path, &args.content).await?;
        let verb = if exists { "Overwrote" } else { "Created" };
        let output = format!(
            "{verb} {shown} ({} bytes, {} lines).",
            args.content.len(),
            args.content.lines().count()
        );
        Ok(ToolOutput::text(
            shown,
            output,
            json!({ "diff": diff, "exists": exists }),
        ))
    }
}

/// Whether the file exists, and the diff the prompt shows. A special file is
/// refused (reading a FIFO blocks); a file too large to diff is not even read.
fn old_content_diff(path: &Path, shown: &str, new: &str) -> Result<(bool, String), ToolError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok((false, unified_diff(shown, "", new)));
    };
    super::refuse_special_file(path, &meta)?;
    let old_bytes = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    if old_bytes.saturating_add(new.len()) > MAX_DIFF_BYTES {
        return Ok((true, too_large_to_diff(shown, old_bytes, new.len())));
    }
    let old = std::fs::read_to_string(path).unwrap_or_default();
    Ok((true, unified_diff(shown, &old, new)))
}
