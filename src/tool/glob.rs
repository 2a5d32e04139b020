//! The `glob` tool: file paths matching a pattern, newest first, capped at
//! [`walk::RESULT_LIMIT`]. Ignore-aware; never reads file contents; holds
//! only the paths it can show, whatever the size of the tree.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::lines::NewestFiles;
use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for, walk};

/// The name the model calls it by, which is also its permission.
const NAME: &str = "glob";

pub struct Glob;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The glob, such as **/*.rs
    pattern: String,
    /// The directory to search (default: the working directory)
    path: Option<String>,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/glob.txt");

#[async_trait::async_trait]
impl Tool for Glob {
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
        true
    }

    async fn execute(&self, input: Value, ctx: &ToolScope) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, input)?;
        let root = ctx.resolve(args.path.as_deref().unwrap_or("."));
        ctx.check_external(&root, true).await?;
        ctx.ask(
            NAME,
            vec![args.pattern.clone()],
            vec!["*".into()],
            format!("Glob {}", args.pattern),
            json!({}),
        )
        .await?;
        let matcher = FileMatcher::new(&args.pattern)?;
        let search_root = root.clone();
        let cancel = ctx.cancel.clone();
        let (total, newest) = tokio::task::spawn_blocking(move || {
            let mut total = 0;
            let mut newest = NewestFiles::new(walk::RESULT_LIMIT);
            for entry in walk::walker(&search_root).flatten() {
                if cancel.is_cancelled() {
                    break;
                }
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    continue;
                }
                let relative = entry
                    .path()
                    .strip_prefix(&search_root)
                    .unwrap_or(entry.path());
                if matcher.is_match(relative) {
                    total += 1;
                    newest.insert(
                        walk::modified(entry.path()),
                        entry.path().to_path_buf(),
                        vec![()],
                    );
                }
            }
            (total, newest)
        })
        .await
        .map_err(|error| ToolError::Failed(format!("glob search stopped unexpectedly: {error}")))?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Interrupted {
                output: String::new(),
            });
        }
        let found: Vec<PathBuf> = newest.into_files().map(|(path, _)| path).collect();
        let truncated = total > walk::RESULT_LIMIT;
        let mut output = if found.is_empty() {
            "No files found".to_string()
        } else {
            found
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        if truncated {
            output.push_str(&format!(
                "\n\n(Results are truncated: showing first {} results. Consider using a more specific path or pattern.)",
                walk::RESULT_LIMIT
            ));
        }
        Ok(ToolOutput::text(
            args.pattern,
            output,
            json!({ "count": total, "capped": truncated }),
        ))
    }
}

/// A glob applied like ripgrep's `--glob`: with a `/` it matches the path
/// relative to the search root, without one it matches the file name.
pub struct FileMatcher {
    glob: globset::GlobMatcher,
    whole_path: bool,
}

impl FileMatcher {
    /// # Errors
    /// `InvalidArguments` when the pattern is not a valid glob.
    pub fn new(pattern: &str) -> Result<Self, ToolError> {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|error| ToolError::InvalidArguments {
                tool: NAME.into(),
                detail: format!("bad pattern `{pattern}`: {error}"),
            })?;
        Ok(Self {
            glob: glob.compile_matcher(),
            whole_path: pattern.contains('/'),
        })
    }

    pub fn is_match(&self, relative: &std::path::Path) -> bool {
        if self.whole_path {
            self.glob.is_match(relative)
        } else {
            relative
                .file_name()
                .is_some_and(|name| self.glob.is_match(name))
        }
    }
}
