//! The `edit` tool: replaces `old_string` with `new_string` in a file.
//!
//! Exact match first; when there is none, a unique match of the same lines
//! with leading/trailing whitespace ignored. Ambiguity is refused with the
//! count, never guessed. Asks the `edit` permission with the diff, and
//! returns it (unified, from `similar`) in `metadata.diff`.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for};
use crate::permission::Preview;

/// The name the model calls it by, which is also its permission.
const NAME: &str = "edit";

pub struct Edit;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The file to edit
    #[serde(alias = "filePath", alias = "file_path")]
    path: String,
    /// The exact text to replace
    #[serde(alias = "oldString")]
    old_string: String,
    /// The text to replace it with
    #[serde(alias = "newString")]
    new_string: String,
    /// Replace every occurrence (default false)
    #[serde(default, alias = "replaceAll")]
    replace_all: bool,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/edit.txt");

#[async_trait::async_trait]
impl Tool for Edit {
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
        if args.old_string == args.new_string {
            return Err(ToolError::Failed(
                "old_string and new_string are the same; there is nothing to change.".into(),
            ));
        }
        let path = ctx.resolve(&args.path);
        let shown = ctx.display_path(&path);
        ctx.check_external(&path, false).await?;
        if let Ok(meta) = std::fs::metadata(&path) {
            super::refuse_special_file(&path, &meta)?;
        }
        let old = match read_text(ctx, &path).await {
            Ok(text) => text,
            Err(error)
                if error.kind() == std::io::ErrorKind::NotFound && args.old_string.is_empty() =>
            {
                String::new()
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::Failed(format!(
                    "File not found: {}. Check the path with glob, or use write to create a new file.",
                    path.display()
                )));
            }
            Err(error) => return Err(ToolError::io("read", &path, error)),
        };
        let (new, replacements) = if args.old_string.is_empty() {
            if path.exists() {
                return Err(ToolError::Failed(format!(
                    "old_string is empty, which creates a new file, but {shown} already exists. Give the text to replace."
                )));
            }
            (args.new_string.clone(), 1)
        } else {
            replace(&old, &args.old_string, &args.new_string, args.replace_all)
                .map_err(|miss| ToolError::Failed(miss.message(&shown)))?
        };
        let diff = unified_diff(&shown, &old, &new);
        let preview = Preview::Diff {
            path: shown.clone(),
            diff: diff.clone(),
        };
        ctx.ask_edit(
            &path,
            preview,
            &shown,
            format!("Edit {shown}"),
            json!({ "path": shown, "diff": diff }),
        )
        .await?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ToolError::io("create directory", parent, e))?;
        }
        write_text(ctx, &path, &new).await?;
        let (additions, deletions) = count_changes(&old, &new);
        let output = format!(
            "Edited {shown}: {replacements} replacement(s), +{additions} -{deletions} lines."
        );
        Ok(ToolOutput::text(
            shown,
            output,
            json!({ "diff": diff, "replacements": replacements, "additions": additions, "deletions": deletions }),
        ))
    }
}

/// The file's text: the editor's buffer when an editor serves it
/// (`ToolScope::editor`), else the disk.
pub(super) async fn read_text(ctx: &ToolScope, path: &Path) -> std::io::Result<String> {
    if let Some(editor) = &ctx.editor
        && let Ok(text) = editor.read_text(path).await
    {
        return Ok(text);
    }
    std::fs::read_to_string(path)
}

/// Writes `text` through the editor when one serves files (the edit lands
/// in its buffer, and it saves the file), else to disk.
pub(super) async fn write_text(ctx: &ToolScope, path: &Path, text: &str) -> Result<(), ToolError> {
    match &ctx.editor {
        Some(editor) => editor.write_text(path, text).await,
        None => std::fs::write(path, text),
    }
    .map_err(|e| ToolError::io("write", path, e))
}

/// Why `old_string` could not be applied.
#[derive(Debug, PartialEq, Eq)]
pub enum Miss {
    NotFound,
    Ambiguous(usize),
}

impl Miss {
    fn message(&self, path: &str) -> String {
        match self {
            Miss::NotFound => format!(
                "Could not find old_string in {path}. It must match the file exactly, including whitespace and \
                 indentation. Read the file again and copy the text from it."
            ),
            Miss::Ambiguous(count) => format!(
                "Found {count} matches of old_string in {path}. Include more surrounding lines in old_string to \
                 make it unique, or set replace_all to true to change every occurrence."
            ),
        }
    }
}

/// Applies the edit to `text`: the new text and how many places changed.
///
/// # Errors
/// `NotFound` when neither the exact text nor a unique whitespace-trimmed
/// line match exists; `Ambiguous` when the exact text occurs more than once
/// and `replace_all` is off.
pub fn replace(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), Miss> {
    let count = text.matches(old).count();
    match count {
        0 => {}
        1 => return Ok((text.replacen(old, new, 1), 1)),
        _ if replace_all => return Ok((text.replace(old, new), count)),
        _ => return Err(Miss::Ambiguous(count)),
    }
    let range = trimmed_line_match(text, old)?;
    Ok((
        format!("{}{new}{}", &text[..range.start], &text[range.end..]),
        1,
    ))
}

/// The byte range of the lines of `text` that equal `old`'s lines once
/// each is trimmed, when exactly one such run exists. The range excludes
/// the last line's newline, like `old` usually does.
fn trimmed_line_match(text: &str, old: &str) -> Result<std::ops::Range<usize>, Miss> {
    let wanted: Vec<&str> = old
        .trim_end_matches('\n')
        .split('\n')
        .map(str::trim)
        .collect();
    let mut starts = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        starts.push((offset, line));
        offset += line.len();
    }
    let matches: Vec<std::ops::Range<usize>> = starts
        .windows(wanted.len())
        .filter(|window| {
            window
                .iter()
                .zip(&wanted)
                .all(|((_, line), want)| line.trim() == *want)
        })
        .map(|window| {
            let (start, _) = window[0];
            let (last_start, last) = window[window.len() - 1];
            start..last_start + last.trim_end_matches(['\n', '\r']).len()
        })
        .collect();
    match matches.as_slice() {
        [] => Err(Miss::NotFound),
        [only] => Ok(only.clone()),
        many => Err(Miss::Ambiguous(many.len())),
    }
}

/// A unified diff of `old` -> `new`, with `path` in the headers.
/// Above this many bytes (old and new together) no line diff is computed:
/// the permission prompt and the stored metadata get a summary instead. A
/// line diff of two 100 MB files is hours of CPU and a diff nobody reads.
pub const MAX_DIFF_BYTES: usize = 4 * 1024 * 1024;
/// Line diffs below the size cap still stop refining after this long and
/// return a coarser (still correct) diff: Myers is quadratic on files whose
/// every line changed.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    if old.len() + new.len() > MAX_DIFF_BYTES {
        return too_large_to_diff(path, old.len(), new.len());
    }
    line_diff(old, new)
        .unified_diff()
        .context_radius(3)
        .header(path, path)
        .to_string()
}

/// What the prompt shows in place of a diff over the size cap.
pub fn too_large_to_diff(path: &str, old_bytes: usize, new_bytes: usize) -> String {
    format!(
        "--- {path}\n+++ {path}\n(diff not shown: {old_bytes} bytes replaced by {new_bytes} bytes; files over {} MB together are not diffed)\n",
        MAX_DIFF_BYTES / (1024 * 1024)
    )
}

fn line_diff<'a>(old: &'a str, new: &'a str) -> similar::TextDiff<'a, 'a, 'a, str> {
    similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new)
}

fn count_changes(old: &str, new: &str) -> (usize, usize) {
    if old.len() + new.len() > MAX_DIFF_BYTES {
        return (new.lines().count(), old.lines().count());
    }
    line_diff(old, new)
        .iter_all_changes()
        .fold((0, 0), |(add, del), change| match change.tag() {
            similar::ChangeTag::Insert => (add + 1, del),
            similar::ChangeTag::Delete => (add, del + 1),
            similar::ChangeTag::Equal => (add, del),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_match_replaces_once() {
        assert_eq!(replace("a b c", "b", "x", false), Ok(("a x c".into(), 1)));
    }

    #[test]
    fn several_matches_need_replace_all() {
        assert_eq!(replace("b b b", "b", "x", false), Err(Miss::Ambiguous(3)));
        assert_eq!(replace("b b b", "b", "x", true), Ok(("x x x".into(), 3)));
    }

    #[test]
    fn trimmed_lines_match_when_unique() {
        let text = "fn main() {\n    let x = 1;\n    call(x);\n}\n";
        let (new, _) =
            replace(text, "let x = 1;\ncall(x);", "    let y = 2;", false).expect("trimmed match");
        assert_eq!(new, "fn main() {\n    let y = 2;\n}\n");
        let twice = "  a\n  b\n  a\n  b\n";
        assert_eq!(
            replace(twice, "a \nb ", "c", false),
            Err(Miss::Ambiguous(2))
        );
        assert_eq!(
            replace(text, "nothing like it", "c", false),
            Err(Miss::NotFound)
        );
    }
}
