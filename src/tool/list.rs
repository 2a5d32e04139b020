//! The `list` tool: a directory as an indented tree, ignore-aware, capped
//! at [`MAX_ENTRIES`] files. Never reads file contents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for, walk};

/// The name the model calls it by, which is also its permission.
const NAME: &str = "list";

pub struct List;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The directory to list (default: the working directory)
    path: Option<String>,
}

/// Files shown at most (OpenCode's `ls` limit).
pub const MAX_ENTRIES: usize = 100;

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/list.txt");

/// A directory's children: subdirectories and files, each sorted by name.
#[derive(Default)]
struct Node {
    dirs: BTreeMap<String, Node>,
    files: Vec<String>,
}

impl Node {
    fn insert(&mut self, relative: &Path, is_dir: bool) {
        let parts: Vec<String> = relative
            .iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect();
        let Some((last, parents)) = parts.split_last() else {
            return;
        };
        let mut node = self;
        for part in parents {
            node = node.dirs.entry(part.clone()).or_default();
        }
        if is_dir {
            node.dirs.entry(last.clone()).or_default();
        } else {
            node.files.push(last.clone());
        }
    }

    fn render(&self, depth: usize, out: &mut String) {
        let indent = "  ".repeat(depth);
        for (name, child) in &self.dirs {
            out.push_str(&format!("{indent}{name}/\n"));
            child.render(depth + 1, out);
        }
        let mut files = self.files.clone();
        files.sort();
        for name in files {
            out.push_str(&format!("{indent}{name}\n"));
        }
    }
}

#[async_trait::async_trait]
impl Tool for List {
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
        if !root.is_dir() {
            return Err(ToolError::Failed(format!(
                "{} is not a directory.",
                root.display()
            )));
        }
        ctx.check_external(&root, true).await?;
        let shown = ctx.display_path(&root);
        ctx.ask(
            NAME,
            vec![shown.clone()],
            vec!["*".into()],
            format!("List {shown}"),
            json!({}),
        )
        .await?;
        let search_root: PathBuf = root.clone();
        let (tree, files) = tokio::task::spawn_blocking(move || {
            let mut tree = Node::default();
            let mut files = 0;
            for entry in walk::walker(&search_root).flatten() {
                let Ok(relative) = entry.path().strip_prefix(&search_root) else {
                    continue;
                };
                if relative.as_os_str().is_empty() {
                    continue;
                }
                let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
                if !is_dir {
                    files += 1;
                    if files > MAX_ENTRIES {
                        continue;
                    }
                }
                tree.insert(relative, is_dir);
            }
            (tree, files)
        })
        .await
        .map_err(|error| ToolError::Failed(format!("listing stopped unexpectedly: {error}")))?;
        let mut output = format!("{}/\n", root.display());
        tree.render(1, &mut output);
        let capped = files > MAX_ENTRIES;
        if capped {
            output.push_str(&format!(
                "\n(Showing {MAX_ENTRIES} of {files} files. List a subdirectory or use glob to see more.)\n"
            ));
        }
        Ok(ToolOutput::text(
            shown,
            output.trim_end().to_string(),
            json!({ "files": files, "capped": capped }),
        ))
    }
}
