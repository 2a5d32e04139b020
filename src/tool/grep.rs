//! The `grep` tool: lines matching a regex, as `path:line: text`, files
//! newest first, capped at [`walk::RESULT_LIMIT`] matches. Ignore-aware,
//! skips binary files, clips long lines. Holds only the matches it can show,
//! whatever the size of the tree or of a line.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::glob::FileMatcher;
use super::lines::{NewestFiles, read_capped_line};
use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for, walk};

/// The name the model calls it by, which is also its permission.
const NAME: &str = "grep";

pub struct Grep;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The regular expression to search for
    pattern: String,
    /// The directory or file to search (default: the working directory)
    path: Option<String>,
    /// Only search files matching this glob, such as *.rs
    include: Option<String>,
}

/// Matching lines longer than this many characters are clipped.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of a line searched: a match further into a longer line is missed,
/// the price of never holding a gigabyte line in memory.
const MAX_LINE_BYTES: usize = 1024 * 1024;

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/grep.txt");

/// A file's matching lines: how many, and the first few as (number, text).
struct FileMatches {
    count: usize,
    first: Vec<(usize, String)>,
}

#[async_trait::async_trait]
impl Tool for Grep {
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
        ctx.check_external(&root, root.is_dir()).await?;
        ctx.ask(
            NAME,
            vec![args.pattern.clone()],
            vec!["*".into()],
            format!("Grep {}", args.pattern),
            json!({}),
        )
        .await?;
        let regex =
            regex::Regex::new(&args.pattern).map_err(|error| ToolError::InvalidArguments {
                tool: NAME.into(),
                detail: format!("bad regular expression `{}`: {error}", args.pattern),
            })?;
        let include = args.include.as_deref().map(FileMatcher::new).transpose()?;
        let cancel = ctx.cancel.clone();
        let search_root = root.clone();
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
                let relative = if relative.as_os_str().is_empty() {
                    entry.path()
                } else {
                    relative
                };
                if include
                    .as_ref()
                    .is_some_and(|glob| !glob.is_match(relative))
                    || walk::file_looks_binary(entry.path())
                {
                    continue;
                }
                let found = matching_lines(entry.path(), &regex);
                if found.count > 0 {
                    total += found.count;
                    newest.insert(
                        walk::modified(entry.path()),
                        entry.path().to_path_buf(),
                        found.first,
                    );
                }
            }
            (total, newest)
        })
        .await
        .map_err(|error| ToolError::Failed(format!("grep search stopped unexpectedly: {error}")))?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Interrupted {
                output: String::new(),
            });
        }
        let mut shown = Vec::new();
        for (path, lines) in newest.into_files() {
            for (number, text) in lines {
                if shown.len() < walk::RESULT_LIMIT {
                    shown.push(format!("{}:{number}: {text}", path.display()));
                }
            }
        }
        let truncated = total > walk::RESULT_LIMIT;
        let mut output = if shown.is_empty() {
            "No matches found".to_string()
        } else {
            format!("Found {}\n{}", match_count(total), shown.join("\n"))
        };
        if truncated {
            output.push_str(&format!(
                "\n\n(Results are truncated: showing first {} matches. Consider using a more specific path or pattern.)",
                walk::RESULT_LIMIT
            ));
        }
        Ok(ToolOutput::text(
            args.pattern,
            output,
            json!({ "matches": total, "capped": truncated }),
        ))
    }
}

fn matching_lines(path: &std::path::Path, regex: &regex::Regex) -> FileMatches {
    let mut found = FileMatches {
        count: 0,
        first: Vec::new(),
    };
    let Ok(file) = std::fs::File::open(path) else {
        return found;
    };
    let mut reader = std::io::BufReader::new(file);
    let mut raw = Vec::new();
    let mut number = 0;
    while read_capped_line(&mut reader, &mut raw, MAX_LINE_BYTES).is_ok_and(|n| n > 0) {
        number += 1;
        let line = String::from_utf8_lossy(&raw);
        let line = line.trim_end_matches(['\n', '\r']);
        if !regex.is_match(line) {
            continue;
        }
        found.count += 1;
        if found.first.len() < walk::RESULT_LIMIT {
            let clipped = match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{}...", &line[..cut]),
                None => line.to_string(),
            };
            found.first.push((number, clipped));
        }
    }
    found
}

/// "1 match", "2 matches": the count the model and the card read.
fn match_count(total: usize) -> String {
    if total == 1 {
        "1 match".to_string()
    } else {
        format!("{total} matches")
    }
}

#[cfg(test)]
mod tests {
    use super::match_count;

    #[test]
    fn one_match_is_singular() {
        assert_eq!(match_count(1), "1 match");
        assert_eq!(match_count(2), "2 matches");
        assert_eq!(match_count(0), "0 matches");
    }
}
