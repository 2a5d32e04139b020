//! Tool-output truncation: the first layer of context management (spec 8).
//!
//! Cuts an output to `max_lines` lines or `max_bytes` bytes at line
//! granularity, saves the full text as `tool_<id>` in the spill directory
//! and tells the model how to page through it. Also sweeps old spill files.
//! Never decides which tools are truncated: the registry does.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::OutputLimits;

/// Spill files older than this are deleted by [`sweep`].
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Which end of the output to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Head,
    /// Shell output: the end (errors, summaries) matters most.
    Tail,
}

/// The (possibly) shortened output and where the full text went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    pub text: String,
    pub output_path: Option<PathBuf>,
}

/// The hint that follows a truncated output. An agent that can delegate
/// (`delegate`: it has the task tool) is told to hand the file to `explore`,
/// so the full text never enters its own context (seed 001).
pub fn hint(path: &Path, delegate: bool) -> String {
    let what_next = if delegate {
        "Use the Task tool to have explore agent process this file with Grep and Read (with offset/limit). Do NOT read the full file yourself - delegate to save context."
    } else {
        "Use Grep to search the full content or Read with offset/limit to view specific sections."
    };
    format!(
        "The tool call succeeded but the output was truncated. Full output saved to: {}\n{what_next}",
        path.display()
    )
}

/// What survives a cut: the kept text and how much was removed, in which unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub text: String,
    pub removed: usize,
    pub unit: &'static str,
}

/// Cuts `text` to the limits, or `None` when it fits. A trailing newline
/// does not count as an extra (empty) line. Counting follows OpenCode: the
/// newline between kept lines counts as a byte; when the byte cap is hit,
/// `removed` is in bytes, else in lines.
pub fn preview(text: &str, limits: &OutputLimits, direction: Direction) -> Option<Preview> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = body.split('\n').collect();
    if lines.len() <= limits.max_lines && text.len() <= limits.max_bytes {
        return None;
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    let mut hit_bytes = false;
    let ordered: Box<dyn Iterator<Item = &&str>> = match direction {
        Direction::Head => Box::new(lines.iter()),
        Direction::Tail => Box::new(lines.iter().rev()),
    };
    for line in ordered.take(limits.max_lines) {
        let size = line.len() + usize::from(!kept.is_empty());
        if bytes + size > limits.max_bytes {
            hit_bytes = true;
            if kept.is_empty() {
                // One giant line: keep a clipped piece of it rather than nothing.
                let clipped = clip(line, limits.max_bytes, direction);
                bytes = clipped.len();
                kept.push(clipped);
            }
            break;
        }
        bytes += size;
        kept.push(line);
    }
    if direction == Direction::Tail {
        kept.reverse();
    }
    let (removed, unit) = if hit_bytes {
        (text.len() - bytes, "bytes")
    } else {
        (lines.len() - kept.len(), "lines")
    };
    Some(Preview {
        text: kept.join("\n"),
        removed,
        unit,
    })
}

/// At most `max` bytes of `line` from the kept end, on a char boundary.
fn clip(line: &str, max: usize, direction: Direction) -> &str {
    match direction {
        Direction::Head => {
            let mut end = max.min(line.len());
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            &line[..end]
        }
        Direction::Tail => {
            let mut start = line.len().saturating_sub(max);
            while !line.is_char_boundary(start) {
                start += 1;
            }
            &line[start..]
        }
    }
}

/// Truncates `text` when over the limits, saving the full text in `dir`;
/// the hint is the one for an agent without the task tool.
///
/// # Errors
/// When the spill directory or file cannot be written.
pub fn truncate(
    text: &str,
    limits: &OutputLimits,
    direction: Direction,
    dir: &Path,
) -> std::io::Result<Truncated> {
    truncate_for(text, limits, direction, dir, false)
}

/// [`truncate`], with the hint for an agent that can delegate when `delegate`.
///
/// # Errors
/// When the spill directory or file cannot be written.
pub fn truncate_for(
    text: &str,
    limits: &OutputLimits,
    direction: Direction,
    dir: &Path,
    delegate: bool,
) -> std::io::Result<Truncated> {
    let Some(cut) = preview(text, limits, direction) else {
        return Ok(Truncated {
            text: text.to_string(),
            output_path: None,
        });
    };
    let (path, mut file) = create_spill_file(dir)?;
    file.write_all(text.as_bytes())?;
    let marker = format!("...{} {} truncated...", cut.removed, cut.unit);
    let hint = hint(&path, delegate);
    let text = match direction {
        Direction::Head => format!("{}\n\n{marker}\n\n{hint}", cut.text),
        Direction::Tail => format!("{marker}\n\n{hint}\n\n{}", cut.text),
    };
    Ok(Truncated {
        text,
        output_path: Some(path),
    })
}

/// Creates a new `tool_<ascending id>` file in `dir` (dir 0700, file 0600:
/// outputs may hold secrets the command printed).
///
/// # Errors
/// When `dir` or the file cannot be created.
pub fn create_spill_file(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    crate::paths::private_dir_builder().create(dir)?;
    let id = crate::id::part_id();
    let path = dir.join(format!("tool_{}", id.trim_start_matches("prt_")));
    let file = crate::paths::private_file_options()
        .write(true)
        .create_new(true)
        .open(&path)?;
    Ok((path, file))
}

/// Deletes `tool_*` files in `dir` and in its per-session folders last
/// modified more than `older_than` ago, and the folders left empty; returns
/// how many files. A missing directory means nothing to sweep.
///
/// # Errors
/// When `dir` exists but cannot be listed.
pub fn sweep(dir: &Path, older_than: Duration) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            removed += sweep(&entry.path(), older_than)?;
            // Only an emptied folder goes; one with newer outputs stays.
            let _ = std::fs::remove_dir(entry.path());
            continue;
        }
        let is_spill = entry.file_name().to_string_lossy().starts_with("tool_");
        let age = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok());
        if is_spill
            && age.is_some_and(|age| age > older_than)
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> OutputLimits {
        OutputLimits {
            max_lines,
            max_bytes,
            ..OutputLimits::default()
        }
    }

    #[test]
    fn head_counts_lines_and_bytes_like_opencode() {
        let cut =
            preview("a\nb\nc\nd", &limits(2, 100), Direction::Head).expect("over the line cap");
        assert_eq!(
            cut,
            Preview {
                text: "a\nb".into(),
                removed: 2,
                unit: "lines"
            }
        );
        // "aaa" (3) + "\nbbb" (4) = 7 > 6: only the first line fits.
        let cut =
            preview("aaa\nbbb\nccc", &limits(10, 6), Direction::Head).expect("over the byte cap");
        assert_eq!(
            cut,
            Preview {
                text: "aaa".into(),
                removed: 8,
                unit: "bytes"
            }
        );
    }

    #[test]
    fn tail_keeps_the_end() {
        let cut =
            preview("a\nb\nc\nd\n", &limits(2, 100), Direction::Tail).expect("over the line cap");
        assert_eq!(
            cut,
            Preview {
                text: "c\nd".into(),
                removed: 2,
                unit: "lines"
            }
        );
    }

    #[test]
    fn one_giant_line_is_clipped_on_a_char_boundary() {
        let line = "é".repeat(10);
        let cut = preview(&line, &limits(10, 5), Direction::Head).expect("over the byte cap");
        assert_eq!(cut.text, "éé");
        let cut = preview(&line, &limits(10, 5), Direction::Tail).expect("over the byte cap");
        assert_eq!(cut.text, "éé");
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the text, the preview is a piece of it from the kept end,
        /// within both caps, and the reported removal adds up.
        #[test]
        fn preview_stays_within_the_caps(
            text in "[a-zé\n]{0,400}",
            max_lines in 1usize..20,
            max_bytes in 4usize..200,
            tail in any::<bool>(),
        ) {
            let limits = OutputLimits { max_lines, max_bytes, ..OutputLimits::default() };
            let direction = if tail { Direction::Tail } else { Direction::Head };
            match preview(&text, &limits, direction) {
                None => {
                    prop_assert!(text.len() <= max_bytes);
                    prop_assert!(text.strip_suffix('\n').unwrap_or(&text).split('\n').count() <= max_lines);
                }
                Some(cut) => {
                    prop_assert!(cut.text.len() <= max_bytes);
                    prop_assert!(cut.text.split('\n').count() <= max_lines);
                    if tail {
                        prop_assert!(text.strip_suffix('\n').unwrap_or(&text).ends_with(&cut.text));
                    } else {
                        prop_assert!(text.starts_with(&cut.text));
                    }
                    if cut.unit == "bytes" {
                        prop_assert_eq!(cut.removed, text.len() - cut.text.len());
                    }
                }
            }
        }
    }

    #[test]
    fn sweep_reaches_into_session_folders_and_removes_them_when_empty() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old_session = dir.path().join("ses_old");
        let live_session = dir.path().join("ses_live");
        std::fs::create_dir_all(&old_session).expect("folder");
        std::fs::create_dir_all(&live_session).expect("folder");
        let week_ago = SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
        for path in [old_session.join("tool_1"), live_session.join("tool_2")] {
            let file = std::fs::File::create(&path).expect("spill file");
            file.set_modified(week_ago).expect("set mtime");
        }
        std::fs::write(live_session.join("tool_3"), "new").expect("new spill file");
        let removed = sweep(dir.path(), RETENTION).expect("sweep");
        assert_eq!(removed, 2);
        assert!(!old_session.exists(), "an emptied session folder goes");
        assert!(live_session.join("tool_3").exists(), "newer outputs stay");
    }
}
