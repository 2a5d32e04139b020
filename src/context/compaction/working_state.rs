//! The working state: what a compaction carries past the summary, built by
//! cairn from the session's own records, never by the model. Whatever the
//! summary says (even "ok"), the next request still carries the user's own
//! words, the files the session changed and read, the current text of the
//! files touched last, the todo list and the skills loaded.
//!
//! Pure: the session reads the records from the store and the files' text
//! from disk ([`files_to_read`] says which), then [`build`] lays them out
//! within a budget that scales with the window ([`Budget::for_usable`]).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::message::{Carried, MessageWithParts, PartKind, ToolPart, ToolState};
use crate::token;

/// The whole working state's share of the usable window, and its cap.
pub const WORKING_STATE_FRACTION: f64 = 0.15;
pub const WORKING_STATE_MAX_TOKENS: u64 = 16_000;

/// Each section's most, as shares of the whole: no one section can starve
/// the others. What a section leaves unused goes to the files' text.
const USER_SHARE: f64 = 0.35;
const FILES_LIST_SHARE: f64 = 0.20;
const TODO_SHARE: f64 = 0.15;
const SKILL_SHARE: f64 = 0.10;

/// Files whose current text is read for the state, newest touched first.
pub const MAX_FILE_TEXTS: usize = 6;

/// User messages left out that are named by their first words; the rest
/// are counted.
const NAMED_OMISSIONS: usize = 3;

/// A file text shorter than this many tokens of room is not started.
const MIN_FILE_ROOM: u64 = 64;

/// The tools whose records the state is built from (the store reads only these).
pub const RECORD_TOOLS: &[&str] = &["read", "edit", "write", "todowrite", "skill"];

/// The working state's token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub total: u64,
}

impl Budget {
    /// `min(16,000, 15% of usable)`; the cap when the window is unknown.
    /// 8k: 1,024; 32k: 4,096; 128k and 200k: 16,000.
    pub fn for_usable(usable: u64) -> Self {
        Self {
            total: crate::context::scaled(WORKING_STATE_MAX_TOKENS, WORKING_STATE_FRACTION, usable),
        }
    }

    fn share(self, fraction: f64) -> u64 {
        (self.total as f64 * fraction).floor() as u64
    }
}

/// A file's current text as the session read it from disk for the state:
/// `None` when it is gone or cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileText {
    pub path: String,
    pub text: Option<String>,
    /// The file's size on disk, when `text` is only its beginning.
    pub cut_at: Option<u64>,
}

/// The working state: the text sent after the summary and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkingState {
    pub text: String,
    pub carried: Carried,
}

/// What the records say the session did, in the order it happened.
#[derive(Debug, Default)]
struct Thread<'a> {
    /// The user's own words, oldest first: (message number from 1, text),
    /// without those the conversation carries verbatim anyway.
    user: Vec<(usize, String)>,
    changed: Vec<Changed>,
    read: Vec<String>,
    todos: Option<&'a Value>,
    skills: Vec<(String, Option<&'a str>)>,
    /// Every file touched, newest last (a later touch moves it to the end).
    touched: Vec<String>,
    /// Files `edit` and `write` changed, with the tool, as their calls say.
    written: Vec<(String, String)>,
}

/// One file the session changed, summed over its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Changed {
    path: String,
    kind: String,
    added: u64,
    removed: u64,
    by: Vec<String>,
}

/// Which files' current text to read: the ones edited or read most
/// recently, newest first, at most [`MAX_FILE_TEXTS`].
pub fn files_to_read(records: &[MessageWithParts], root: &Path) -> Vec<String> {
    let thread = Thread::from_records(records, root, None);
    let deleted: Vec<&str> = thread
        .changed
        .iter()
        .filter(|c| c.kind == "deleted")
        .map(|c| c.path.as_str())
        .collect();
    thread
        .touched
        .iter()
        .rev()
        .filter(|p| !deleted.contains(&p.as_str()))
        .take(MAX_FILE_TEXTS)
        .cloned()
        .collect()
}

/// Lays the records out within `budget`. Paths under `root` are named
/// relative to it, as patches name them. `verbatim_from`: the first message
/// kept verbatim after the summary (the tail, or the compaction request):
/// user messages from it on are in the conversation already. `files`: the
/// current text of [`files_to_read`]'s answer, in its order.
pub fn build(
    records: &[MessageWithParts],
    root: &Path,
    verbatim_from: Option<&str>,
    files: &[FileText],
    budget: Budget,
) -> WorkingState {
    let thread = Thread::from_records(records, root, verbatim_from);
    // Sections are measured one by one; the joins and a whole message that
    // just fits can still tip the sum over, so lay out again a little
    // smaller until the whole fits.
    let mut target = budget;
    for _ in 0..8 {
        let state = lay_out(&thread, files, target);
        if state.carried.tokens <= budget.total {
            return state;
        }
        let ratio = budget.total as f64 / state.carried.tokens as f64;
        target = Budget {
            total: (target.total as f64 * ratio * 0.95).floor() as u64,
        };
    }
    WorkingState {
        text: String::new(),
        carried: Carried::default(),
    }
}

fn lay_out(thread: &Thread<'_>, files: &[FileText], budget: Budget) -> WorkingState {
    let mut carried = Carried::default();
    let mut sections = Vec::new();
    // The lead, the closing tag and the blank lines between sections.
    let mut left = budget.total.saturating_sub(tokens(LEAD) + 16);
    let mut take = |section: Option<String>, left: &mut u64| {
        if let Some(section) = section {
            *left = left.saturating_sub(tokens(&section));
            sections.push(section);
        }
    };
    take(
        user_section(thread, budget.share(USER_SHARE), &mut carried),
        &mut left,
    );
    take(
        files_section(thread, budget.share(FILES_LIST_SHARE), &mut carried),
        &mut left,
    );
    take(
        todo_section(thread.todos, budget.share(TODO_SHARE), &mut carried),
        &mut left,
    );
    take(
        skill_section(thread, budget.share(SKILL_SHARE), &mut carried),
        &mut left,
    );
    take(text_section(files, left, &mut carried), &mut left);
    if sections.is_empty() {
        return WorkingState {
            text: String::new(),
            carried,
        };
    }
    let text = format!("{LEAD}\n\n{}\n</working-state>", sections.join("\n\n"));
    carried.tokens = tokens(&text);
    WorkingState { text, carried }
}

/// Opens the state: whose words these are and how far to trust them.
pub const LEAD: &str = "<working-state>\nRecorded by cairn from the session itself when the history above was summarized, not written by the summarizer: where the two disagree, this is right. Files' text is as it was on disk at that moment.";

/// Whether a summary is too thin to rely on: empty, very short, or naming
/// none of the files the session changed.
pub fn is_thin(summary: &str, records: &[MessageWithParts], root: &Path) -> bool {
    const MIN_WORDS: usize = 25;
    if summary.split_whitespace().count() < MIN_WORDS {
        return true;
    }
    let thread = Thread::from_records(records, root, None);
    !thread.changed.is_empty()
        && !thread.changed.iter().any(|c| {
            let name = c.path.rsplit('/').next().unwrap_or(&c.path);
            names(summary, &c.path) || names(summary, name)
        })
}

/// `text` names `file` as a whole word: `data.txt` does not name `a.txt`.
fn names(text: &str, file: &str) -> bool {
    let part_of_name = |c: char| c.is_alphanumeric() || "_-./".contains(c);
    text.match_indices(file).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + file.len()..].chars().next();
        !before.is_some_and(part_of_name)
            && !after.is_some_and(|c| c.is_alphanumeric() || "_-/".contains(c))
    })
}

/// Exact counts (the encoder is built on first use; the state is laid out
/// off the runtime): an estimate while it warms up would make the same
/// session's state differ from run to run.
fn tokens(text: &str) -> u64 {
    token::count(text) as u64
}

impl<'a> Thread<'a> {
    fn from_records(
        records: &'a [MessageWithParts],
        root: &Path,
        verbatim_from: Option<&str>,
    ) -> Self {
        let mut thread = Thread::default();
        let mut number = 0;
        let mut changed: HashMap<String, usize> = HashMap::new();
        for message in records {
            let in_view = verbatim_from.is_some_and(|from| message.message.id.as_str() >= from);
            if message.message.is_user() && message.compaction().is_none() {
                let words = user_words(message);
                if !words.is_empty() {
                    number += 1;
                    if !in_view {
                        thread.user.push((number, words));
                    }
                }
            }
            for part in &message.parts {
                match &part.kind {
                    PartKind::Patch(patch) => {
                        for file in &patch.changes {
                            thread.record_change(&mut changed, file);
                        }
                    }
                    PartKind::Tool(tool) => thread.record_tool(tool, root),
                    _ => {}
                }
            }
        }
        // An edit or write the snapshots did not record (outside the
        // project): named without line counts.
        for (path, by) in std::mem::take(&mut thread.written) {
            if !thread.changed.iter().any(|c| c.path == path) {
                thread.changed.push(Changed {
                    path,
                    kind: "changed".into(),
                    added: 0,
                    removed: 0,
                    by: vec![by],
                });
            }
        }
        thread
            .read
            .retain(|p| !thread.changed.iter().any(|c| &c.path == p));
        thread
    }

    fn record_change(
        &mut self,
        index: &mut HashMap<String, usize>,
        file: &crate::message::PatchFile,
    ) {
        let at = *index.entry(file.path.clone()).or_insert_with(|| {
            self.changed.push(Changed {
                path: file.path.clone(),
                kind: file.kind.clone(),
                added: 0,
                removed: 0,
                by: Vec::new(),
            });
            self.changed.len() - 1
        });
        let entry = &mut self.changed[at];
        entry.added += u64::from(file.added);
        entry.removed += u64::from(file.removed);
        // Added then modified is still new; anything then deleted is gone.
        if entry.kind != "added" || file.kind == "deleted" {
            entry.kind = file.kind.clone();
        }
        if !entry.by.contains(&file.by) {
            entry.by.push(file.by.clone());
        }
        self.touch(&file.path);
    }

    fn record_tool(&mut self, tool: &'a ToolPart, root: &Path) {
        let input = tool.state.input();
        // The names the file tools accept for their path.
        let path = ["path", "filePath", "file_path"]
            .iter()
            .find_map(|key| input.get(key).and_then(Value::as_str))
            .map(|p| relative_to(p, root));
        let path = path.as_deref();
        match (tool.tool.as_str(), &tool.state) {
            ("read", ToolState::Completed { .. }) => {
                if let Some(path) = path {
                    if !self.read.iter().any(|p| p == path) {
                        self.read.push(path.to_string());
                    }
                    self.touch(path);
                }
            }
            ("edit" | "write", ToolState::Completed { .. }) => {
                if let Some(path) = path {
                    self.touch(path);
                    self.written.push((path.to_string(), tool.tool.clone()));
                }
            }
            ("todowrite", ToolState::Completed { .. }) => self.todos = input.get("todos"),
            ("skill", ToolState::Completed { output, .. }) => {
                if let Some(name) = input.get("name").and_then(Value::as_str) {
                    self.skills.retain(|(n, _)| n != name);
                    self.skills.push((name.to_string(), Some(output.as_str())));
                }
            }
            _ => {}
        }
    }

    fn touch(&mut self, path: &str) {
        self.touched.retain(|p| p != path);
        self.touched.push(path.to_string());
    }
}

/// `path` relative to `root` when it lies under it, as patches name files.
fn relative_to(path: &str, root: &Path) -> String {
    let path = lexical(Path::new(path));
    path.strip_prefix(root)
        .ok()
        .and_then(|p| p.to_str())
        .filter(|p| !p.is_empty())
        .map_or_else(|| path.display().to_string(), str::to_string)
}

/// `path` with `.` and `dir/..` folded away, without asking the disk
/// (`sub/../a.txt` and `a.txt` are one file).
fn lexical(path: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The text a user typed in one message (not what cairn attached to it).
fn user_words(message: &MessageWithParts) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) if !t.synthetic && !t.ignored && !t.text.trim().is_empty() => {
                Some(t.text.as_str())
            }
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// The user's messages, newest first, each whole or not at all: a long
/// paste that does not fit is named, and older short ones still get in (the
/// first message often holds the task's constraints).
fn user_section(thread: &Thread<'_>, room: u64, carried: &mut Carried) -> Option<String> {
    if thread.user.is_empty() {
        return None;
    }
    let mut kept = Vec::new();
    let mut omitted = Vec::new();
    let mut used = 0;
    for (number, text) in thread.user.iter().rev() {
        let entry = format!("[message {number}]\n{text}");
        let cost = tokens(&entry);
        if used + cost <= room {
            used += cost;
            kept.push(entry);
        } else {
            omitted.push(format!("{number} ({})", opening(text)));
        }
    }
    carried.user_messages = kept.len() as u32;
    carried.omitted_user_messages = omitted.len() as u32;
    let mut out = String::from(
        "## What the user said before the summary (verbatim, newest first; the most recent messages follow in the conversation)",
    );
    for entry in &kept {
        out.push_str("\n\n");
        out.push_str(entry);
    }
    if !omitted.is_empty() {
        // Name the newest few; a long session's hundreds are only counted.
        let named = omitted.len().min(NAMED_OMISSIONS);
        let more = match omitted.len() - named {
            0 => String::new(),
            rest => format!("; and {rest} older"),
        };
        out.push_str(&format!(
            "\n\nLeft out for room ({} message(s), see the summary): {}{more}",
            omitted.len(),
            omitted[..named].join("; ")
        ));
    }
    Some(out)
}

/// The first words of a message, to name one left out.
fn opening(text: &str) -> String {
    const WORDS: usize = 8;
    let words: Vec<&str> = text.split_whitespace().take(WORDS + 1).collect();
    let more = if words.len() > WORDS { " …" } else { "" };
    format!("\"{}{more}\"", words[..words.len().min(WORDS)].join(" "))
}

fn todo_section(todos: Option<&Value>, room: u64, carried: &mut Carried) -> Option<String> {
    let todos = todos?.as_array()?;
    let mut out = String::from("## Todo list (as it stands)");
    let mut shown = 0;
    for todo in todos {
        let content = todo.get("content").and_then(Value::as_str).unwrap_or("");
        let status = todo
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("pending");
        let line = format!("\n- [{status}] {content}");
        if tokens(&out) + tokens(&line) > room {
            out.push_str(&format!("\n- … {} more item(s)", todos.len() - shown));
            break;
        }
        out.push_str(&line);
        shown += 1;
        if matches!(status, "pending" | "in_progress") {
            carried.open_todos += 1;
        }
    }
    carried.todos = shown as u32;
    (!todos.is_empty()).then_some(out)
}

fn files_section(thread: &Thread<'_>, room: u64, carried: &mut Carried) -> Option<String> {
    if thread.changed.is_empty() && thread.read.is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    if !thread.changed.is_empty() {
        lines.push("## Files this session changed".to_string());
        for c in &thread.changed {
            lines.push(if c.kind == "changed" {
                format!(
                    "- {}: changed by {} (outside the project's snapshots)",
                    c.path,
                    c.by.join(", ")
                )
            } else {
                format!(
                    "- {}: {}, +{} -{} (by {})",
                    c.path,
                    c.kind,
                    c.added,
                    c.removed,
                    c.by.join(", ")
                )
            });
        }
    }
    if !thread.read.is_empty() {
        lines.push("## Files this session read (unchanged)".to_string());
        lines.extend(thread.read.iter().map(|p| format!("- {p}")));
    }
    carried.changed_files = thread.changed.len() as u32;
    carried.read_files = thread.read.len() as u32;
    Some(fit_lines(lines, room))
}

/// Keeps whole lines while they fit `room`, then says how many are left out.
fn fit_lines(lines: Vec<String>, room: u64) -> String {
    let total = lines.len();
    let mut out = String::new();
    for (i, line) in lines.into_iter().enumerate() {
        let candidate = tokens(&line) + 1;
        if i > 0 && tokens(&out) + candidate > room {
            out.push_str(&format!("\n- … {} more line(s)", total - i));
            break;
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&line);
    }
    out
}

fn skill_section(thread: &Thread<'_>, room: u64, carried: &mut Carried) -> Option<String> {
    if thread.skills.is_empty() {
        return None;
    }
    let mut out = String::from("## Skills loaded (newest last)");
    let mut used = tokens(&out);
    for (i, (name, instructions)) in thread.skills.iter().enumerate() {
        let whole = instructions.map(|text| format!("\n\n### skill: {name}\n{text}"));
        let named = format!(
            "\n\n### skill: {name}\n(its instructions did not fit here: load it again with the skill tool before relying on it)"
        );
        let entry = match whole {
            Some(whole) if used + tokens(&whole) <= room => whole,
            _ if used + tokens(&named) <= room => named,
            _ => {
                let rest: Vec<&str> = thread.skills[i..].iter().map(|(n, _)| n.as_str()).collect();
                let line = format!(
                    "\n\nAlso loaded, load again when needed: {}",
                    rest.join(", ")
                );
                if used + tokens(&line) <= room {
                    out.push_str(&line);
                } else {
                    out.push_str(&format!("\n\n… and {} more skill(s)", rest.len()));
                }
                break;
            }
        };
        used += tokens(&entry);
        out.push_str(&entry);
    }
    carried.skills = thread.skills.len() as u32;
    Some(out)
}

/// The files' current text, newest touched first, each whole when it fits,
/// else its first lines with where to read on.
fn text_section(files: &[FileText], room: u64, carried: &mut Carried) -> Option<String> {
    let mut out = String::from("## Current text of the files touched last");
    let header = tokens(&out);
    let mut left = room.saturating_sub(header);
    let mut count = 0;
    for file in files {
        if left < MIN_FILE_ROOM {
            break;
        }
        let Some(text) = &file.text else {
            out.push_str(&format!(
                "\n\n### {}\n(gone, or not readable now)",
                file.path
            ));
            continue;
        };
        let block = file_block(&file.path, text, file.cut_at, left);
        left = left.saturating_sub(tokens(&block));
        out.push_str(&block);
        count += 1;
    }
    carried.file_texts = count;
    (count > 0).then_some(out)
}

/// One file's text within `room` tokens: whole, or cut at a line with the
/// offset to read on from.
fn file_block(path: &str, text: &str, size: Option<u64>, room: u64) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(size) = size {
        // Only the beginning was read: its last line may be cut, and the
        // file's own line count is unknown.
        lines.pop();
        return file_head(path, &lines, &format!("a {size}-byte file"), room);
    }
    let noun = if lines.len() == 1 { "line" } else { "lines" };
    let whole = format!(
        "\n\n### {path} ({} {noun})\n```\n{}\n```",
        lines.len(),
        text.trim_end_matches('\n')
    );
    if tokens(&whole) <= room {
        return whole;
    }
    file_head(path, &lines, &format!("{} lines", lines.len()), room)
}

/// The longest run of first lines that fits `room`, with where to read on.
fn file_head(path: &str, lines: &[&str], of: &str, room: u64) -> String {
    let fits = |n: usize| tokens(&cut_block(path, &lines[..n].join("\n"), n, of)) <= room;
    let (mut low, mut high) = (0, lines.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        if fits(mid) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    cut_block(path, &lines[..low].join("\n"), low, of)
}

fn cut_block(path: &str, head: &str, shown: usize, of: &str) -> String {
    format!(
        "\n\n### {path} (lines 1-{shown} of {of}; read it with offset={} for the rest)\n```\n{head}\n```",
        shown + 1
    )
}

#[cfg(test)]
mod tests;
