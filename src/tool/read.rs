//! The `read` tool: a file as numbered lines, paged with offset/limit, a
//! directory as a listing, an image as an attachment.
//!
//! Reads line by line, so a huge file costs only the lines shown (even a
//! single gigabyte line); caps lines at 2000 chars and the output at 50 KB,
//! or the step's window-scaled `max_bytes` when smaller, and says how to
//! continue. Refuses binary files and oversized images.
//! Truncates itself, so the registry does not.

use std::path::Path;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolError, ToolOutput, ToolScope, lines, parse_args, schema_for, walk};
use crate::message::FilePart;

/// The name the model calls it by, which is also its permission.
const NAME: &str = "read";

pub struct Read;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The file or directory to read
    #[serde(alias = "filePath", alias = "file_path")]
    path: String,
    /// The line number to start from (1-based)
    offset: Option<usize>,
    /// How many lines to read (default 2000)
    limit: Option<usize>,
}

/// Lines shown when the call gives no limit.
const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 2000;
/// The output stops before passing this many bytes.
const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Bytes of a line kept while reading: enough for [`MAX_LINE_CHARS`]
/// characters of up to 4 bytes each, so a line is never held whole.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 4;
/// Images larger than this are refused rather than loaded and encoded
/// (providers reject images over 5 MB anyway).
const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;
/// Directory entries shown at most.
const MAX_DIR_ENTRIES: usize = 1000;
/// Near-miss names suggested for a missing file.
const MAX_SUGGESTIONS: usize = 3;

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/read.txt");

#[async_trait::async_trait]
impl Tool for Read {
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
        let path = ctx.resolve(&args.path);
        let shown = ctx.display_path(&path);
        ctx.check_external(&path, path.is_dir()).await?;
        ctx.ask(
            NAME,
            vec![shown.clone()],
            crate::permission::exact_always(&shown),
            format!("Read {shown}"),
            json!({ "path": shown }),
        )
        .await?;
        if let Some(output) = read_from_editor(ctx, &path, &shown, &args).await? {
            return Ok(output);
        }
        let meta = std::fs::metadata(&path).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => ToolError::Failed(not_found(&path)),
            _ => ToolError::io(NAME, &path, error),
        })?;
        if meta.is_dir() {
            return read_dir(&path, &shown);
        }
        super::refuse_special_file(&path, &meta)?;
        if let Some(mime) = image_mime(&path) {
            if meta.len() > MAX_IMAGE_BYTES {
                return Err(ToolError::Failed(format!(
                    "Image too large to read: {} is {} bytes, the limit is {MAX_IMAGE_BYTES}. Resize it first (for example with ImageMagick's `convert`).",
                    path.display(),
                    meta.len()
                )));
            }
            let bytes = std::fs::read(&path).map_err(|e| ToolError::io(NAME, &path, e))?;
            let url = format!(
                "data:{mime};base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&bytes)
            );
            let filename = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            let mut output = ToolOutput::text(
                shown,
                "Image read successfully",
                json!({ "truncated": false, "mime": mime }),
            );
            output.attachments.push(FilePart {
                mime: mime.to_string(),
                filename,
                url,
            });
            return Ok(output);
        }
        if walk::file_looks_binary(&path) {
            return Err(ToolError::Failed(format!(
                "Cannot read binary file: {}",
                path.display()
            )));
        }
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        // The window-scaled cap binds here too: read truncates itself, so
        // the registry's cap never applies, and a 50 KB page at 4k forced a
        // compaction at once (issue #30).
        let max_bytes = MAX_OUTPUT_BYTES.min(ctx.limits.max_bytes).max(1);
        let page = read_lines(&path, offset, limit, max_bytes)?;
        Ok(ToolOutput::text(
            shown,
            page.render(&path, offset),
            json!({ "truncated": page.more, "lines": page.total }),
        ))
    }
}

struct Page {
    numbered: Vec<String>,
    total: usize,
    /// The byte cap that stopped the page, when one did.
    capped_by_bytes: Option<usize>,
    /// There are lines after the ones shown.
    more: bool,
}

impl Page {
    fn render(&self, path: &Path, offset: usize) -> String {
        let last = offset + self.numbered.len().saturating_sub(1);
        let next = offset + self.numbered.len();
        let ending = if let Some(cap) = self.capped_by_bytes {
            format!(
                "(Output capped at {}. Showing lines {offset}-{last}. Use offset={next} to continue.)",
                size_words(cap)
            )
        } else if self.more {
            format!(
                "(Showing lines {offset}-{last} of {}. Use offset={next} to continue.)",
                self.total
            )
        } else {
            format!("(End of file - total {} lines)", self.total)
        };
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n{}\n\n{ending}\n</content>",
            path.display(),
            self.numbered.join("\n")
        )
    }
}

/// A byte cap as the model reads it: "50 KB", "2,560 bytes".
fn size_words(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{} bytes", crate::shared::thousands(bytes as u64))
    }
}

/// Lines `offset..` of `path`, at most `limit` of them and `max_bytes` of text.
fn read_lines(
    path: &Path,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> Result<Page, ToolError> {
    let file = std::fs::File::open(path).map_err(|e| ToolError::io(NAME, path, e))?;
    read_lines_from(
        std::io::BufReader::new(file),
        path,
        offset,
        limit,
        max_bytes,
    )
}

/// The page of a text file the editor served (`ToolScope::editor`): its
/// buffer, saved or not. `None` when there is no editor, or it does not
/// serve this path (a directory, an image, a file it cannot read): the disk
/// is read then, as without an editor.
async fn read_from_editor(
    ctx: &ToolScope,
    path: &Path,
    shown: &str,
    args: &Args,
) -> Result<Option<ToolOutput>, ToolError> {
    let Some(editor) = &ctx.editor else {
        return Ok(None);
    };
    if path.is_dir() || image_mime(path).is_some() {
        return Ok(None);
    }
    let text = match editor.read_text(path).await {
        Ok(text) => text,
        Err(error) => {
            tracing::debug!(%error, path = %path.display(), "the editor did not serve a read");
            return Ok(None);
        }
    };
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let max_bytes = MAX_OUTPUT_BYTES.min(ctx.limits.max_bytes).max(1);
    let page = read_lines_from(
        std::io::Cursor::new(text.into_bytes()),
        path,
        offset,
        limit,
        max_bytes,
    )?;
    Ok(Some(ToolOutput::text(
        shown,
        page.render(path, offset),
        json!({ "truncated": page.more, "lines": page.total, "from_editor": true }),
    )))
}

fn read_lines_from(
    mut reader: impl std::io::BufRead,
    path: &Path,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> Result<Page, ToolError> {
    let mut page = Page {
        numbered: Vec::new(),
        total: 0,
        capped_by_bytes: None,
        more: false,
    };
    let mut bytes = 0;
    let mut raw = Vec::new();
    loop {
        if lines::read_capped_line(&mut reader, &mut raw, MAX_LINE_BYTES)
            .map_err(|e| ToolError::io(NAME, path, e))?
            == 0
        {
            break;
        }
        page.total += 1;
        let number = page.total;
        if number < offset || page.more {
            continue;
        }
        if page.numbered.len() == limit {
            page.more = true;
            continue;
        }
        let text = String::from_utf8_lossy(&raw);
        let line = text.trim_end_matches(['\n', '\r']);
        let line = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!(
                "{}... (line truncated to {MAX_LINE_CHARS} chars)",
                &line[..cut]
            ),
            None => line.to_string(),
        };
        let entry = format!("{number}: {line}");
        if bytes + entry.len() + 1 > max_bytes {
            page.capped_by_bytes = Some(max_bytes);
            page.more = true;
            continue;
        }
        bytes += entry.len() + 1;
        page.numbered.push(entry);
    }
    if offset > page.total.max(1) {
        return Err(ToolError::Failed(format!(
            "Offset {offset} is past the end of {} ({} lines).",
            path.display(),
            page.total
        )));
    }
    Ok(page)
}

fn read_dir(path: &Path, shown: &str) -> Result<ToolOutput, ToolError> {
    let entries = std::fs::read_dir(path).map_err(|e| ToolError::io("list", path, e))?;
    let mut names: Vec<String> = entries
        .flatten()
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_DIR_ENTRIES);
    let more = if total > MAX_DIR_ENTRIES {
        format!("\n({} more entries not shown)", total - MAX_DIR_ENTRIES)
    } else {
        String::new()
    };
    let output = format!(
        "<path>{}</path>\n<type>directory</type>\n<entries>\n{}{more}\n({total} entries)\n</entries>",
        path.display(),
        names.join("\n")
    );
    Ok(ToolOutput::text(
        shown,
        output,
        json!({ "capped": total > MAX_DIR_ENTRIES }),
    ))
}

fn image_mime(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_string_lossy().to_lowercase();
    match extension.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// What an `@path` mention in a user message attaches: the read tool's
/// output for a file or directory (same format and caps), or an image.
#[derive(Debug, Clone, PartialEq)]
pub enum Mentioned {
    Text { output: String, is_dir: bool },
    Image(FilePart),
}

/// Reads `path` (absolute) as the read tool would, without asking: the user
/// named it. Errors are the read tool's (binary, special file, too large).
pub fn read_mentioned(path: &Path) -> Result<Mentioned, ToolError> {
    let meta = std::fs::metadata(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => ToolError::Failed(not_found(path)),
        _ => ToolError::io(NAME, path, error),
    })?;
    let shown = path.display().to_string();
    if meta.is_dir() {
        let output = read_dir(path, &shown)?.output;
        return Ok(Mentioned::Text {
            output,
            is_dir: true,
        });
    }
    super::refuse_special_file(path, &meta)?;
    if let Some(mime) = image_mime(path) {
        if meta.len() > MAX_IMAGE_BYTES {
            return Err(ToolError::Failed(format!(
                "Image too large to attach: {shown} is {} bytes, the limit is {MAX_IMAGE_BYTES}.",
                meta.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| ToolError::io(NAME, path, e))?;
        return Ok(Mentioned::Image(FilePart {
            mime: mime.to_string(),
            filename: path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned()),
            url: format!(
                "data:{mime};base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&bytes)
            ),
        }));
    }
    if walk::file_looks_binary(path) {
        return Err(ToolError::Failed(format!(
            "Cannot attach binary file: {shown}"
        )));
    }
    // The user chose to attach it: the fixed cap, not the window's.
    let page = read_lines(path, 1, DEFAULT_LIMIT, MAX_OUTPUT_BYTES)?;
    Ok(Mentioned::Text {
        output: page.render(path, 1),
        is_dir: false,
    })
}

/// "File not found", with names in the same directory that look alike.
fn not_found(path: &Path) -> String {
    let mut message = format!("File not found: {}", path.display());
    let (Some(dir), Some(wanted)) = (path.parent(), path.file_name()) else {
        return message;
    };
    let wanted = wanted.to_string_lossy().to_lowercase();
    let stem = wanted.split('.').next().unwrap_or(&wanted).to_string();
    let mut similar: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            let lower = name.to_lowercase();
            lower.contains(&wanted)
                || wanted.contains(&lower)
                || (!stem.is_empty() && lower.starts_with(&stem))
        })
        .collect();
    similar.sort();
    similar.truncate(MAX_SUGGESTIONS);
    if !similar.is_empty() {
        let list: Vec<String> = similar
            .iter()
            .map(|name| dir.join(name).display().to_string())
            .collect();
        message.push_str(&format!(
            "\n\nDid you mean one of these?\n{}",
            list.join("\n")
        ));
    }
    message
}
