//! One transcript block as lines: message headers, user text, Markdown
//! answers, reasoning, tool cards, compaction markers, inline notes.
//!
//! Pure: everything comes from the [`BlockInputs`]; the viewport caches the
//! result per block and width.

use std::collections::HashSet;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::clock::Millis;
use crate::message::{Message, MessageErrorKind, Part, PartKind, Role, ToolState};
use crate::session::mention::MENTION_READ_LEAD;
use crate::tui::markdown::{WrapMemo, render_markdown, render_markdown_reusing};
use crate::tui::timeline::{Block, Timeline};
use crate::tui::wrap::wrap_into;

use super::subtask_card;
use super::tool_card::{CardInputs, shell_run_card, tool_card};

/// Summary lines shown before Ctrl+O expands a compaction summary.
const SUMMARY_PREVIEW_LINES: usize = 3;

pub struct BlockInputs<'a> {
    pub timeline: &'a Timeline,
    pub now: Millis,
    pub expand_details: bool,
    pub show_reasoning: bool,
    /// Tool calls waiting for a permission answer.
    pub awaiting: &'a HashSet<String>,
    /// What is known of child sessions, for subtask cards.
    pub children: &'a crate::tui::children::Children,
    /// The key that opens a subtask's child session.
    pub open_key: &'a str,
}

impl BlockInputs<'_> {
    /// True when the block's look depends on the clock or on dialogs, so it
    /// must not be cached.
    pub fn is_volatile(&self, block: Block) -> bool {
        let Block::Part(m, p) = block else {
            return false;
        };
        let part = &self.timeline.messages()[m].parts[p];
        matches!(&part.kind, PartKind::Tool(t) if matches!(t.state, ToolState::Running { .. }))
    }
}

/// The block's lines at `width`. `memo`, when given, keeps the wrapped rows
/// of an answer's logical lines between calls: the viewport passes one for
/// the block that is changing (a streaming answer).
pub fn block_lines(
    cx: &BlockInputs<'_>,
    block: Block,
    width: usize,
    memo: Option<&mut WrapMemo>,
) -> Vec<Line<'static>> {
    let messages = cx.timeline.messages();
    match block {
        Block::Header(m) if cx.timeline.is_shell_run(m) => shell_run_header(&messages[m].message),
        Block::Header(m) => header(&messages[m].message, cx.timeline.compaction_of(m), width),
        Block::Part(m, p) if cx.timeline.is_shell_run(m) => {
            let part = &messages[m].parts[p];
            match &part.kind {
                PartKind::Tool(tool) => shell_run_card(tool, &card_inputs(cx, part, tool), width),
                _ => Vec::new(),
            }
        }
        Block::Part(m, p) => {
            let message = &messages[m];
            part_lines(cx, &message.message, &message.parts[p], width, memo)
        }
        Block::Note(n) => {
            let note = &cx.timeline.notes()[n];
            let (mark, style) = if note.is_error {
                ("✗ ", Style::default().fg(Color::Red))
            } else {
                ("· ", Style::default().fg(Color::DarkGray))
            };
            let mut out = Vec::new();
            for (i, text) in note.text.lines().enumerate() {
                let lead = if i == 0 { mark } else { "  " };
                let line = Line::from(vec![
                    Span::styled(lead, style),
                    Span::styled(text.to_string(), style),
                ]);
                wrap_into(&line, width, 2, &mut out);
            }
            out.push(Line::default());
            out
        }
    }
}

/// A `!cmd` run is the user's: their header, with `interrupted` when they
/// stopped it.
fn shell_run_header(message: &Message) -> Vec<Line<'static>> {
    let mut spans = vec![Span::styled(
        "▌ you",
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )];
    spans.push(Span::styled(
        " · shell",
        Style::default().fg(Color::DarkGray),
    ));
    let aborted = message
        .as_assistant()
        .and_then(|a| a.error.as_ref())
        .is_some_and(|e| e.kind == MessageErrorKind::Aborted);
    if aborted {
        spans.push(Span::styled(
            "  interrupted",
            Style::default().fg(Color::Red),
        ));
    }
    vec![Line::from(spans)]
}

fn card_inputs<'a>(
    cx: &BlockInputs<'a>,
    part: &Part,
    tool: &crate::message::ToolPart,
) -> CardInputs<'a> {
    CardInputs {
        live_output: cx.timeline.live_output(&part.id),
        now: cx.now,
        expanded: cx.expand_details,
        awaiting_permission: cx.awaiting.contains(&tool.call_id),
    }
}

/// Every block ends with its own blank line, so headers need none before them.
/// A header wider than the pane wraps at words under its text, and an
/// error is shown whole, every line of it, under the header. `compacted`:
/// a summary's compaction: the gauge's before and after, as its notice gave
/// them, and what was carried verbatim (none until the summary is in place,
/// and none in sessions recorded before they were kept).
fn header(
    message: &Message,
    compacted: Option<&crate::message::CompactionPart>,
    width: usize,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut error_lines = Vec::new();
    let line = match &message.role {
        Role::User(_) => Line::styled(
            "▌ you",
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
        ),
        Role::Assistant(a) if a.summary => {
            let (label, color) = match (&a.error, a.finish) {
                (Some(error), _) => (
                    format!(
                        "━━ compaction failed · {} · history unchanged",
                        error.message
                    ),
                    Color::Red,
                ),
                (None, None) => ("━━ compacting history…".to_string(), Color::Magenta),
                (None, Some(_)) => (
                    match compacted.and_then(|c| c.tokens) {
                        Some(tokens) => format!(
                            "━━ history compacted · {} -> {} tokens",
                            crate::shared::thousands(tokens.before),
                            crate::shared::thousands(tokens.after)
                        ),
                        None => "━━ history compacted".to_string(),
                    },
                    Color::Magenta,
                ),
            };
            Line::styled(
                label,
                Style::default().fg(color).add_modifier(Modifier::BOLD),
            )
        }
        Role::Assistant(a) => {
            let mut spans = vec![
                Span::styled("◆ ", Style::default().fg(Color::LightBlue)),
                Span::styled(
                    a.agent.clone(),
                    Style::default()
                        .fg(Color::LightBlue)
                        .add_modifier(Modifier::BOLD),
                ),
                Span::styled(
                    format!(" · {}", a.model),
                    Style::default().fg(Color::DarkGray),
                ),
            ];
            match &a.error {
                Some(error) if error.kind == MessageErrorKind::Aborted => spans.push(Span::styled(
                    "  interrupted",
                    Style::default().fg(Color::Red),
                )),
                Some(error) => error_lines = error_rows(&error.message, width),
                None => {}
            }
            Line::from(spans)
        }
    };
    // Under the text after `◆ ` / `━━ `.
    let indent = if message.as_assistant().is_some_and(|a| a.summary) {
        3
    } else {
        2
    };
    wrap_into(&line, width, indent, &mut out);
    if let Some(carried) = compacted.and_then(|c| c.carried.as_ref())
        && message.as_assistant().is_some_and(|a| a.finish.is_some())
    {
        for row in carried_rows(carried) {
            wrap_into(&row, width, indent, &mut out);
        }
    }
    out.extend(error_lines);
    out
}

/// Under a compaction's marker: what was summarized, what the working state
/// carried verbatim, and a thin summary said plainly.
fn carried_rows(carried: &crate::message::Carried) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let mut text = format!(
        "   summarized {} messages",
        crate::shared::thousands(u64::from(carried.summarized_messages))
    );
    if let Some(words) = carried.words() {
        text.push_str(&format!(" · carried verbatim: {words}"));
    }
    text.push_str(" · Ctrl+O shows what the model now reads");
    let mut rows = vec![Line::styled(text, dim)];
    if carried.thin_summary {
        rows.push(Line::styled(
            "   the summary is thin; the working state carries the rest",
            Style::default().fg(Color::Yellow),
        ));
    }
    rows
}

/// An answer's error under its header: `✗ ` and every line of the message,
/// wrapped at words with continuation rows under the text.
fn error_rows(message: &str, width: usize) -> Vec<Line<'static>> {
    let style = Style::default().fg(Color::Red);
    let mut out = Vec::new();
    for (i, text) in message.lines().enumerate() {
        let lead = if i == 0 { "  ✗ " } else { "    " };
        let line = Line::from(vec![
            Span::styled(lead, style),
            Span::styled(text.to_string(), style),
        ]);
        wrap_into(&line, width, 4, &mut out);
    }
    out
}

fn part_lines(
    cx: &BlockInputs<'_>,
    message: &Message,
    part: &Part,
    width: usize,
    memo: Option<&mut WrapMemo>,
) -> Vec<Line<'static>> {
    let is_summary = message.as_assistant().is_some_and(|a| a.summary);
    match &part.kind {
        PartKind::Text(text)
            if message.is_user() && text.synthetic && text.text.starts_with(MENTION_READ_LEAD) =>
        {
            mention_lines(&text.text, cx.expand_details, width)
        }
        PartKind::Text(text) if message.is_user() => {
            let style = if text.synthetic {
                Style::default().fg(Color::DarkGray)
            } else {
                Style::default()
            };
            let mut out = Vec::new();
            for line in text.text.lines() {
                let row = Line::from(vec![
                    Span::styled("┃ ", Style::default().fg(Color::Cyan)),
                    Span::styled(line.to_string(), style),
                ]);
                wrap_into(&row, width, 2, &mut out);
            }
            out.push(Line::default());
            out
        }
        // The marker says what the state carried; Ctrl+O shows it whole.
        PartKind::Text(text) if is_summary && text.is_working_state() => {
            if cx.expand_details {
                working_state_lines(&text.text, width)
            } else {
                Vec::new()
            }
        }
        PartKind::Text(text) if is_summary && !cx.expand_details => {
            let mut lines = render_markdown(&text.text, width);
            let hidden = lines.len().saturating_sub(SUMMARY_PREVIEW_LINES);
            lines.truncate(SUMMARY_PREVIEW_LINES);
            if hidden > 0 {
                let fold = Line::styled(
                    format!("… summary continues, {hidden} more lines (Ctrl+O)"),
                    Style::default().fg(Color::DarkGray),
                );
                wrap_into(&fold, width, 2, &mut lines);
            }
            lines.push(Line::default());
            lines
        }
        PartKind::Text(text) => {
            let mut lines = match memo {
                Some(memo) => render_markdown_reusing(&text.text, width, memo),
                None => render_markdown(&text.text, width),
            };
            lines.push(Line::default());
            lines
        }
        PartKind::Reasoning(reasoning) => {
            reasoning_lines(&reasoning.text, cx.show_reasoning, width)
        }
        PartKind::Tool(tool) if tool.tool == crate::session::agent::TASK_TOOL => {
            task_lines(cx, tool, width)
        }
        PartKind::Tool(tool) => tool_card(tool, &card_inputs(cx, part, tool), width),
        PartKind::Compaction(c) => compaction_lines(c, width),
        PartKind::File(file) => vec![Line::styled(
            format!(
                "📎 {}",
                file.filename.clone().unwrap_or_else(|| file.mime.clone())
            ),
            Style::default().fg(Color::DarkGray),
        )],
        PartKind::Subtask(task) => vec![Line::styled(
            format!("↳ subtask ({}): {}", task.agent, task.description),
            Style::default().fg(Color::DarkGray),
        )],
        PartKind::Patch(patch) => {
            let mut out = vec![Line::styled(
                patch_summary(patch),
                Style::default().fg(Color::DarkGray),
            )];
            if cx.expand_details {
                out.extend(super::diff::card_lines(cx.timeline.patch_diff(&part.id)));
            }
            out
        }
        PartKind::StepStart(_) | PartKind::StepFinish(_) => Vec::new(),
    }
}

/// A mentioned file's attached content: the `📎` line after it names the
/// file, so it shows only on Ctrl+O, as a read card shows a file (numbered
/// lines, not the wrapper the model gets).
fn mention_lines(text: &str, expanded: bool, width: usize) -> Vec<Line<'static>> {
    if !expanded {
        return Vec::new();
    }
    let output = text.split_once('\n').map_or("", |(_, output)| output);
    let Some(body) = super::card_body::read_body(output, MENTION_EXPANDED_LINES) else {
        return Vec::new();
    };
    let gutter = Span::styled("┃ ", Style::default().fg(Color::Cyan));
    let mut out = Vec::new();
    for line in body {
        let mut rows = Vec::new();
        wrap_into(&line, width.saturating_sub(2).max(8), 0, &mut rows);
        for mut row in rows {
            row.spans.insert(0, gutter.clone());
            out.push(row);
        }
    }
    out
}

/// Lines of a mentioned file Ctrl+O shows, as for a tool card.
const MENTION_EXPANDED_LINES: usize = 200;

/// The marker of a compaction request: why it was asked and its focus.
/// The working state as the model reads it after the summary, verbatim.
fn working_state_lines(text: &str, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    wrap_into(
        &Line::styled(
            "── sent after the summary: the working state cairn carried ──",
            Style::default().fg(Color::Magenta),
        ),
        width,
        3,
        &mut out,
    );
    for line in text.lines() {
        wrap_into(
            &Line::styled(format!("   {line}"), Style::default().fg(Color::Gray)),
            width,
            3,
            &mut out,
        );
    }
    out.push(Line::default());
    out
}

fn compaction_lines(c: &crate::message::CompactionPart, width: usize) -> Vec<Line<'static>> {
    let mut label = format!(
        "━━ compaction requested ({})",
        if c.overflow {
            "overflow"
        } else if c.auto {
            "auto"
        } else {
            "manual"
        }
    );
    if let Some(focus) = &c.instructions {
        label.push_str(&format!(" · focus: {focus}"));
    }
    let mut out = Vec::new();
    wrap_into(
        &Line::styled(label, Style::default().fg(Color::Magenta)),
        width,
        3,
        &mut out,
    );
    out.push(Line::default());
    out
}

/// A `task` call: the subtask card, with what is known of its child.
fn task_lines(
    cx: &BlockInputs<'_>,
    tool: &crate::message::ToolPart,
    width: usize,
) -> Vec<Line<'static>> {
    let session_id = cx.children.child_of(tool);
    let inputs = subtask_card::SubtaskInputs {
        session_id,
        child: session_id.and_then(|id| cx.children.get(id)),
        now: cx.now,
        open_key: cx.open_key,
    };
    subtask_card::subtask_card(tool, &inputs, width)
}

/// Files a patch card names before "and N more": the card is one line.
const PATCH_FILES_SHOWN: usize = 3;

/// The patch card under a step: how many files, added/modified/deleted,
/// line counts, and who changed which (a `bash` change is otherwise
/// invisible in the tool-by-tool view).
fn patch_summary(patch: &crate::message::PatchPart) -> String {
    let notes = patch.unrestorable.join("; ");
    if patch.files.is_empty() && patch.changes.is_empty() && !notes.is_empty() {
        return format!("± not restored by /undo: {notes}");
    }
    let mut line = changed_summary(patch);
    if !notes.is_empty() {
        line.push_str(&format!(" · not restored by /undo: {notes}"));
    }
    line
}

/// The files part of the patch card: count, kinds, lines, who changed them.
fn changed_summary(patch: &crate::message::PatchPart) -> String {
    let count = patch.files.len().max(patch.changes.len());
    let noun = if count == 1 { "file" } else { "files" };
    let mut line = format!("± {count} {noun} changed");
    if patch.changes.is_empty() {
        return line;
    }
    let kinds: Vec<String> = ["added", "modified", "deleted"]
        .iter()
        .filter_map(|kind| {
            let n = patch.changes.iter().filter(|c| c.kind == *kind).count();
            (n > 0).then(|| format!("{n} {kind}"))
        })
        .collect();
    let added: u32 = patch.changes.iter().map(|c| c.added).sum();
    let removed: u32 = patch.changes.iter().map(|c| c.removed).sum();
    line.push_str(&format!(": {} (+{added} −{removed})", kinds.join(", ")));
    let shown: Vec<String> = patch
        .changes
        .iter()
        .take(PATCH_FILES_SHOWN)
        .map(|c| format!("{} {}", c.by, c.path))
        .collect();
    line.push_str(&format!(" · {}", shown.join(", ")));
    if patch.changes.len() > PATCH_FILES_SHOWN {
        line.push_str(&format!(
            " and {} more",
            patch.changes.len() - PATCH_FILES_SHOWN
        ));
    }
    line
}

fn reasoning_lines(text: &str, shown: bool, width: usize) -> Vec<Line<'static>> {
    let style = Style::default()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC);
    if text.trim().is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if shown {
        for line in text.lines() {
            wrap_into(&Line::styled(line.to_string(), style), width, 0, &mut out);
        }
    } else {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let label = format!("▸ thinking: {first}");
        let room = width.saturating_sub(22);
        let shown: String = label.chars().take(room.max(10)).collect();
        let count = text.lines().count();
        out.push(Line::from(vec![
            Span::styled(shown, style),
            Span::styled(
                format!("  ({count} lines, Ctrl+T)"),
                Style::default().fg(Color::DarkGray),
            ),
        ]));
    }
    out.push(Line::default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{PatchFile, PatchPart};

    fn change(path: &str, kind: &str, added: u32, removed: u32, by: &str) -> PatchFile {
        PatchFile {
            path: path.into(),
            kind: kind.into(),
            added,
            removed,
            by: by.into(),
        }
    }

    #[test]
    fn a_patch_card_says_what_changed_how_much_and_by_whom() {
        let mut patch = PatchPart {
            hash: "h".into(),
            files: vec!["notes.txt".into(), "new.txt".into()],
            after: None,
            changes: vec![
                change("notes.txt", "modified", 1, 1, "edit"),
                change("new.txt", "added", 1, 0, "bash"),
            ],
            ..PatchPart::default()
        };
        assert_eq!(
            patch_summary(&patch),
            "± 2 files changed: 1 added, 1 modified (+2 −1) · edit notes.txt, bash new.txt"
        );
        for n in 0..3 {
            patch
                .changes
                .push(change(&format!("gone{n}"), "deleted", 0, 2, "bash"));
        }
        assert_eq!(
            patch_summary(&patch),
            "± 5 files changed: 1 added, 1 modified, 3 deleted (+2 −7) \
             · edit notes.txt, bash new.txt, bash gone0 and 2 more"
        );
        patch.changes.clear();
        patch.files.truncate(1);
        assert_eq!(patch_summary(&patch), "± 1 file changed");
    }

    /// Issue #35: a file kept as a pre-image counts like any other, and
    /// what `/undo` cannot restore is named on the card.
    #[test]
    fn a_patch_card_names_kept_files_and_what_undo_cannot_restore() {
        let patch = PatchPart {
            hash: "h".into(),
            changes: vec![change(".env", "modified", 1, 1, "edit")],
            unrestorable: vec!["build/ is ignored".into(), "2 files over 10 MiB".into()],
            ..PatchPart::default()
        };
        assert_eq!(
            patch_summary(&patch),
            "± 1 file changed: 1 modified (+1 −1) · edit .env \
             · not restored by /undo: build/ is ignored; 2 files over 10 MiB"
        );
        let only_notes = PatchPart {
            unrestorable: vec!["build/ is ignored".into()],
            ..PatchPart::default()
        };
        assert_eq!(
            patch_summary(&only_notes),
            "± not restored by /undo: build/ is ignored"
        );
    }
}
