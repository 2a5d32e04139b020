//! The body of a tool card, per tool: what the user needs to see of an
//! output that was written for the model. A bash tail (live or finished) with a line for
//! what is hidden and a mark when the model itself got only a truncated
//! tail; a read's file text without its model-facing wrapper; a todowrite
//! list as a checklist. Other tools show the head of their output.
//!
//! Pure: reads the stored output and metadata, never the files they name.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// What leads bash output the model got only the tail of (`bash_output.rs`).
const BASH_TRUNCATED: &str = "...output truncated...";

/// The body of a completed call of `tool`, at most about `limit` lines.
pub fn completed(tool: &str, output: &str, metadata: &Value, limit: usize) -> Vec<Line<'static>> {
    match tool {
        "bash" => bash(output, metadata, limit),
        "read" => match unwrap_read(output) {
            Some(read) => read_lines(&read, limit),
            None => head(output, limit),
        },
        "todowrite" => match metadata.get("todos").and_then(Value::as_array) {
            Some(todos) => checklist(todos, limit * 3),
            None => head(output, limit),
        },
        _ => match cut_head(output, metadata) {
            Some((shown, path)) => {
                let received = shown.lines().count();
                let mut out = vec![cut_mark(&format!(
                    "the model got only the first {received} lines · full output in {path}"
                ))];
                out.extend(head(shown, limit));
                out
            }
            None => head(output, limit),
        },
    }
}

/// An output the truncation layer cut for the model (`metadata.truncated`
/// with its spill file): the head it kept, without the marker and hint the
/// layer appended, and the spill file's path.
fn cut_head<'a>(output: &'a str, metadata: &'a Value) -> Option<(&'a str, &'a str)> {
    if metadata.get("truncated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let path = metadata.get("output_path").and_then(Value::as_str)?;
    let at = output.rfind("\n\n...")?;
    output[at..]
        .contains(" truncated...")
        .then(|| (&output[..at], path))
}

/// The `✂` line saying the model got less than the tool produced.
fn cut_mark(text: &str) -> Line<'static> {
    let style = Style::default().fg(Color::Yellow);
    Line::from(vec![
        Span::styled("✂ ", style),
        Span::styled(text.to_string(), style),
    ])
}

/// The first `limit` lines and how many more there are.
fn head(output: &str, limit: usize) -> Vec<Line<'static>> {
    let total = output.lines().count();
    let mut out: Vec<Line<'static>> = output.lines().take(limit).map(plain).collect();
    if total > limit {
        out.push(more(total - limit));
    }
    out
}

/// The last `limit` lines of shell output, after a line counting those
/// above them: shell output's end (errors, summaries) matters most.
pub fn tail(output: &str, limit: usize) -> Vec<Line<'static>> {
    let lines: Vec<&str> = output.lines().collect();
    let hidden = lines.len().saturating_sub(limit);
    let mut out = Vec::new();
    if hidden > 0 {
        out.push(more(hidden));
    }
    out.extend(lines[hidden..].iter().copied().map(plain));
    out
}

/// A bash result. When the output overflowed, the model got only its tail
/// after a header naming the spill file: the header becomes one marked line.
fn bash(output: &str, metadata: &Value, limit: usize) -> Vec<Line<'static>> {
    let truncated = metadata.get("truncated").and_then(Value::as_bool) == Some(true);
    let Some(rest) = output.strip_prefix(BASH_TRUNCATED).filter(|_| truncated) else {
        return tail(output, limit);
    };
    // `\n\n{where the full output was saved}\n\n{tail}`
    let rest = rest.trim_start_matches('\n');
    let (saved, shown) = rest.split_once("\n\n").unwrap_or((rest, ""));
    let received = shown.lines().count();
    // "The first 1.0 GiB of the output (…) saved to: …" is kept as it is:
    // the file does not hold the full output then.
    let whole_file = saved.starts_with("Full output saved to:");
    let saved = match metadata.get("output_path").and_then(Value::as_str) {
        Some(path) if whole_file => format!("full output in {path}"),
        _ => saved.to_string(),
    };
    let mut out = vec![cut_mark(&format!(
        "the model got only the last {received} lines · {saved}"
    ))];
    out.extend(tail(shown, limit));
    out
}

/// A read's page, as the read tool wrapped it for the model.
#[derive(Debug, PartialEq)]
struct ReadPage<'a> {
    /// (line number, text); the number is empty for directory entries.
    lines: Vec<(&'a str, &'a str)>,
    /// `(End of file - total 12 lines)`, `(Showing lines 1-2000 of 5000…)`.
    ending: Option<&'a str>,
}

/// The content between `<content>` (or `<entries>`) and its closing tag,
/// numbered lines split from their numbers, the trailing `(…)` line apart.
/// `None` when the output is not in that shape (an image, an old format).
fn unwrap_read(output: &str) -> Option<ReadPage<'_>> {
    let (open, close) = ["content", "entries"].iter().find_map(|tag| {
        let open = format!("<{tag}>\n");
        let start = output.find(&open)? + open.len();
        let end = output.rfind(&format!("</{tag}>"))?;
        (end >= start).then_some((start, end))
    })?;
    let mut body: Vec<&str> = output[open..close].lines().collect();
    let ending = body
        .last()
        .filter(|last| last.starts_with('(') && last.ends_with(')'))
        .copied();
    if ending.is_some() {
        body.pop();
    }
    while body.last().is_some_and(|last| last.is_empty()) {
        body.pop();
    }
    let lines = body
        .into_iter()
        .map(|line| match line.split_once(": ") {
            Some((number, text))
                if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) =>
            {
                (number, text)
            }
            _ => ("", line),
        })
        .collect();
    Some(ReadPage { lines, ending })
}

/// A read's lines with their numbers as a dim gutter, then how many more
/// lines the model got and, for a partial read, which part it got.
fn read_lines(page: &ReadPage<'_>, limit: usize) -> Vec<Line<'static>> {
    let number_width = page
        .lines
        .iter()
        .map(|(number, _)| number.len())
        .max()
        .unwrap_or(0);
    let dim = Style::default().fg(Color::DarkGray);
    let mut out: Vec<Line<'static>> = page
        .lines
        .iter()
        .take(limit)
        .map(|(number, text)| {
            let mut spans = Vec::new();
            if number_width > 0 {
                spans.push(Span::styled(format!("{number:>number_width$} "), dim));
            }
            spans.push(Span::styled(
                (*text).to_string(),
                Style::default().fg(Color::Gray),
            ));
            Line::from(spans)
        })
        .collect();
    if page.lines.len() > limit {
        out.push(more(page.lines.len() - limit));
    }
    if let Some(ending) = page.ending.filter(|e| !e.starts_with("(End of file")) {
        out.push(Line::styled(ending.to_string(), dim));
    }
    out
}

/// A read output's content as a read card shows it, `None` when it is not
/// in the read tool's wrapper (a mentioned file's attachment uses it too).
pub fn read_body(output: &str, limit: usize) -> Option<Vec<Line<'static>>> {
    unwrap_read(output).map(|page| read_lines(&page, limit))
}

/// The lines of a read's content, for the card's head.
pub fn read_line_count(output: &str) -> Option<usize> {
    unwrap_read(output).map(|page| page.lines.len())
}

/// A todo list as a checklist: ☐ pending, ◐ in progress, ☑ completed,
/// ☒ cancelled, each in its colour.
fn checklist(todos: &[Value], limit: usize) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = todos
        .iter()
        .take(limit)
        .map(|todo| {
            let content = todo.get("content").and_then(Value::as_str).unwrap_or("");
            let status = todo.get("status").and_then(Value::as_str).unwrap_or("");
            let (mark, style) = todo_look(status);
            Line::from(vec![
                Span::styled(
                    format!("{mark} "),
                    style.remove_modifier(Modifier::CROSSED_OUT),
                ),
                Span::styled(content.to_string(), style),
            ])
        })
        .collect();
    if todos.len() > limit {
        out.push(more(todos.len() - limit));
    }
    out
}

fn todo_look(status: &str) -> (&'static str, Style) {
    match status {
        "in_progress" => (
            "◐",
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ),
        "completed" => ("☑", Style::default().fg(Color::Green)),
        "cancelled" => (
            "☒",
            Style::default()
                .fg(Color::DarkGray)
                .add_modifier(Modifier::CROSSED_OUT),
        ),
        _ => ("☐", Style::default().fg(Color::Gray)),
    }
}

/// A line of output as the card shows it (tool cards and card bodies).
pub(super) fn plain(line: &str) -> Line<'static> {
    Line::styled(line.to_string(), Style::default().fg(Color::Gray))
}

/// The line standing for `hidden` lines that Ctrl+O shows.
pub(super) fn more(hidden: usize) -> Line<'static> {
    let noun = if hidden == 1 { "line" } else { "lines" };
    Line::styled(
        format!("… {hidden} more {noun}{EXPANDS}"),
        Style::default().fg(Color::DarkGray),
    )
}

const EXPANDS: &str = " (Ctrl+O)";

/// A [`more`] line of a card already expanded (past its 200 lines): it
/// names where the whole output is, `/export`'s file, instead of Ctrl+O.
pub(super) fn past_expanded(line: &mut Line<'static>) {
    if let [span] = line.spans.as_mut_slice()
        && span.content.starts_with("… ")
        && let Some(count) = span.content.strip_suffix(EXPANDS)
    {
        span.content = format!("{count} · /export writes the whole output").into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_read_page_loses_its_wrapper_and_keeps_its_numbers() {
        let output = "<path>/p/a.rs</path>\n<type>file</type>\n<content>\n1: fn main() {\n2: \n3: }: x\n\n(End of file - total 3 lines)\n</content>";
        let page = unwrap_read(output).expect("the wrapper is read");
        assert_eq!(page.lines, [("1", "fn main() {"), ("2", ""), ("3", "}: x")]);
        assert_eq!(page.ending, Some("(End of file - total 3 lines)"));
        assert_eq!(read_line_count(output), Some(3));
        let dir = "<path>/p</path>\n<type>directory</type>\n<entries>\na.rs\nsrc/\n(2 entries)\n</entries>";
        assert_eq!(
            unwrap_read(dir).expect("entries").lines,
            [("", "a.rs"), ("", "src/")]
        );
        assert_eq!(unwrap_read("Image read successfully"), None);
    }

    #[test]
    fn a_partial_read_says_which_lines_the_model_got() {
        let numbered: Vec<String> = (1..=6).map(|n| format!("{n}: line {n}")).collect();
        let output = format!(
            "<path>/p/a</path>\n<type>file</type>\n<content>\n{}\n\n(Showing lines 1-6 of 90. Use offset=7 to continue.)\n</content>",
            numbered.join("\n")
        );
        let page = unwrap_read(&output).expect("page");
        assert_eq!(
            texts(&read_lines(&page, 4)),
            [
                "1 line 1",
                "2 line 2",
                "3 line 3",
                "4 line 4",
                "… 2 more lines (Ctrl+O)",
                "(Showing lines 1-6 of 90. Use offset=7 to continue.)"
            ]
        );
    }

    #[test]
    fn other_output_the_truncation_layer_cut_is_marked_without_its_hint() {
        let metadata = serde_json::json!({ "truncated": true, "output_path": "/d/tool_2" });
        let output = "a.rs:1\nb.rs:2\nc.rs:3\n\n...9 lines truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /d/tool_2\nUse Grep to search the full content or Read with offset/limit to view specific sections.";
        assert_eq!(
            texts(&completed("grep", output, &metadata, 2)),
            [
                "✂ the model got only the first 3 lines · full output in /d/tool_2",
                "a.rs:1",
                "b.rs:2",
                "… 1 more line (Ctrl+O)"
            ]
        );
        let whole = serde_json::json!({ "truncated": false });
        assert_eq!(completed("grep", output, &whole, 2).len(), 3);
    }

    #[test]
    fn bash_output_the_model_got_cut_is_marked_and_counts_what_is_hidden() {
        let metadata = serde_json::json!({ "truncated": true, "output_path": "/d/tool_1" });
        let output = "...output truncated...\n\nFull output saved to: /d/tool_1\n\n98\n99\n100";
        assert_eq!(
            texts(&bash(output, &metadata, 2)),
            [
                "✂ the model got only the last 3 lines · full output in /d/tool_1",
                "… 1 more line (Ctrl+O)",
                "99",
                "100"
            ]
        );
        let partial = "...output truncated...\n\nThe first 1.0 GiB of the output (2.5 GiB in all) saved to: /d/tool_1\n\n99\n100";
        assert_eq!(
            texts(&bash(partial, &metadata, 2))[0],
            "✂ the model got only the last 2 lines · The first 1.0 GiB of the output (2.5 GiB in all) saved to: /d/tool_1"
        );
        // The same text from a command that printed it is not a truncation.
        assert_eq!(
            texts(&bash(output, &serde_json::json!({ "truncated": false }), 9))[0],
            "...output truncated..."
        );
    }
}
