//! Markdown to styled terminal lines (pulldown-cmark).
//!
//! Headings, paragraphs, lists, emphasis, inline code, block quotes, rules,
//! links and fenced code blocks (highlighted by `highlight`). Produces logical
//! lines with a continuation indent; `wrap` turns them into rows. Pure.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::highlight_line;
use super::wrap::{str_width, wrap_into};

/// Renders `text` as Markdown and wraps it to `width` cells.
pub fn render_markdown(text: &str, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (line, indent) in &logical_lines(text) {
        wrap_into(line, width, *indent, &mut out);
    }
    out
}

/// The wrapped rows of the last text rendered through it, per logical line.
/// A streaming answer only grows at its end: every earlier line is unchanged
/// and reuses its rows instead of being wrapped again on every frame.
#[derive(Debug, Default)]
pub struct WrapMemo {
    width: usize,
    lines: Vec<MemoLine>,
}

#[derive(Debug)]
struct MemoLine {
    line: Line<'static>,
    indent: usize,
    rows: Vec<Line<'static>>,
}

/// [`render_markdown`], wrapping only the logical lines that differ from
/// those `memo` saw last time (same result, less work for a growing text).
pub fn render_markdown_reusing(
    text: &str,
    width: usize,
    memo: &mut WrapMemo,
) -> Vec<Line<'static>> {
    if memo.width != width {
        memo.width = width;
        memo.lines.clear();
    }
    let logical = logical_lines(text);
    let count = logical.len();
    let mut out = Vec::new();
    for (index, (line, indent)) in logical.into_iter().enumerate() {
        if let Some(seen) = memo.lines.get(index)
            && seen.indent == indent
            && seen.line == line
        {
            out.extend(seen.rows.iter().cloned());
            continue;
        }
        let mut rows = Vec::new();
        wrap_into(&line, width, indent, &mut rows);
        out.extend(rows.iter().cloned());
        let fresh = MemoLine { line, indent, rows };
        match memo.lines.get_mut(index) {
            Some(seen) => *seen = fresh,
            None => memo.lines.push(fresh),
        }
    }
    memo.lines.truncate(count);
    out
}

/// Markdown as logical lines with their continuation indent, before wrapping.
fn logical_lines(text: &str) -> Vec<(Line<'static>, usize)> {
    let mut writer = Writer::default();
    let parser = Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES);
    for event in parser {
        writer.event(event);
    }
    writer.flush();
    while writer.lines.last().is_some_and(|(l, _)| l.spans.is_empty()) {
        writer.lines.pop();
    }
    writer.lines
}

#[derive(Default)]
struct Writer {
    lines: Vec<(Line<'static>, usize)>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number for ordered lists.
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    code_lang: Option<String>,
    link_url: Option<String>,
    /// Prefix for the first row of the current block (bullet), then blanks.
    pending_prefix: Option<String>,
    /// The table being read: its rows are laid out at its end, when every
    /// column's width is known.
    table: Option<Table>,
}

/// A table's cells as read, each a run of styled spans.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    /// Rows of the header (drawn above a rule).
    head: usize,
}

impl Table {
    fn end_row(&mut self) {
        self.rows.push(std::mem::take(&mut self.row));
    }

    /// The rows with every column padded to its widest cell, cells apart
    /// by ` │ `, and a rule under the header.
    fn lines(self) -> Vec<Line<'static>> {
        let width = |cell: &[Span<'_>]| cell.iter().map(|s| str_width(&s.content)).sum::<usize>();
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| width(cell))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let rule = Style::default().fg(Color::DarkGray);
        let mut out = Vec::new();
        for (index, row) in self.rows.into_iter().enumerate() {
            let count = row.len();
            let mut spans = Vec::new();
            for (c, cell) in row.into_iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(" │ ", rule));
                }
                let pad = widths[c].saturating_sub(width(&cell));
                spans.extend(cell);
                if c + 1 < count && pad > 0 {
                    spans.push(Span::raw(" ".repeat(pad)));
                }
            }
            out.push(Line::from(spans));
            if index + 1 == self.head {
                let parts: Vec<String> = widths
                    .iter()
                    .enumerate()
                    .map(|(c, w)| {
                        let edges = usize::from(c > 0) + usize::from(c + 1 < columns);
                        "─".repeat(w + edges)
                    })
                    .collect();
                out.push(Line::styled(parts.join("┼"), rule));
            }
        }
        out
    }
}

impl Writer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, patch: Style) {
        let next = self.style().patch(patch);
        self.styles.push(next);
    }

    fn text(&mut self, text: &str) {
        if self.current.is_empty() && self.table.is_none() {
            self.start_line();
        }
        self.current
            .push(Span::styled(text.to_string(), self.style()));
    }

    fn base_indent(&self) -> usize {
        self.lists.len().saturating_sub(1) * 2 + self.quote_depth * 2
    }

    fn start_line(&mut self) {
        let mut prefix = "│ ".repeat(self.quote_depth);
        let indent = self.lists.len().saturating_sub(1) * 2;
        prefix.push_str(&" ".repeat(indent));
        match self.pending_prefix.take() {
            Some(bullet) => prefix.push_str(&bullet),
            None if !self.lists.is_empty() => prefix.push_str("  "),
            None => {}
        }
        if !prefix.is_empty() {
            self.current
                .push(Span::styled(prefix, Style::default().fg(Color::DarkGray)));
        }
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            let indent = self.base_indent() + if self.lists.is_empty() { 0 } else { 2 };
            self.lines
                .push((Line::from(std::mem::take(&mut self.current)), indent));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|(l, _)| !l.spans.is_empty()) {
            self.lines.push((Line::default(), 0));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match self.code_lang.clone() {
                Some(lang) => self.code(&lang, &text),
                None => self.text(&text),
            },
            Event::Code(code) => {
                if self.current.is_empty() && self.table.is_none() {
                    self.start_line();
                }
                self.current.push(Span::styled(
                    code.to_string(),
                    Style::default().fg(Color::Yellow),
                ));
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.lines.push((
                    Line::styled("─".repeat(24), Style::default().fg(Color::DarkGray)),
                    0,
                ));
                self.lines.push((Line::default(), 0));
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.flush();
                // Colour and weight mark a heading; literal `##` would be
                // Markdown source showing through. H1 is also underlined.
                let style = if level == HeadingLevel::H1 {
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                } else {
                    Style::default()
                        .fg(Color::LightCyan)
                        .add_modifier(Modifier::BOLD)
                };
                self.push_style(style);
            }
            Tag::Paragraph => self.flush(),
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_string(),
                };
                self.pending_prefix = Some(bullet);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote_depth += 1;
                self.push_style(Style::default().add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => {
                        lang.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                let label = if lang.is_empty() {
                    "code".to_string()
                } else {
                    lang.clone()
                };
                self.lines.push((
                    Line::styled(format!("┌ {label}"), Style::default().fg(Color::DarkGray)),
                    0,
                ));
                self.code_lang = Some(lang);
            }
            Tag::Emphasis => self.push_style(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(Style::default().add_modifier(Modifier::CROSSED_OUT))
            }
            Tag::Link { dest_url, .. } => {
                self.link_url = Some(dest_url.to_string());
                self.push_style(
                    Style::default()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
            }
            Tag::Table(_) => {
                self.flush();
                self.table = Some(Table::default());
            }
            Tag::TableCell => self.current.clear(),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::Paragraph => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.styles.pop();
                self.blank();
            }
            TagEnd::CodeBlock => {
                self.code_lang = None;
                self.lines
                    .push((Line::styled("└", Style::default().fg(Color::DarkGray)), 0));
                self.lines.push((Line::default(), 0));
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link_url.take() {
                    let shown: String = self.current.iter().map(|s| s.content.as_ref()).collect();
                    if !shown.ends_with(url.as_str()) {
                        self.current.push(Span::styled(
                            format!(" ({url})"),
                            Style::default().fg(Color::DarkGray),
                        ));
                    }
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.current);
                if let Some(table) = &mut self.table {
                    table.row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.end_row();
                    table.head = table.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    table.end_row();
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.lines.extend(table.lines().into_iter().map(|l| (l, 0)));
                }
                self.blank();
            }
            _ => {}
        }
    }

    fn code(&mut self, lang: &str, text: &str) {
        for raw in text.split_inclusive('\n') {
            let content = raw.trim_end_matches('\n');
            let mut line = highlight_line(lang, content);
            line.spans
                .insert(0, Span::styled("│ ", Style::default().fg(Color::DarkGray)));
            self.lines.push((line, 2));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::wrap::str_width;

    fn widest(lines: &[Line<'_>]) -> usize {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| str_width(&s.content)).sum::<usize>())
            .max()
            .unwrap_or(0)
    }

    fn texts(text: &str, width: usize) -> Vec<String> {
        render_markdown(text, width)
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn headings_lists_and_code_blocks_keep_their_shape() {
        let out = texts(
            "# Title\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n",
            40,
        );
        assert_eq!(
            out,
            [
                "Title",
                "",
                "• one",
                "• two",
                "",
                "┌ rust",
                "│ fn main() {}",
                "└"
            ]
        );
    }

    #[test]
    fn ordered_lists_count_from_their_start() {
        let out = texts("3. three\n4. four\n", 40);
        assert_eq!(out, ["3. three", "4. four"]);
    }

    #[test]
    fn long_list_items_wrap_under_their_text() {
        let out = texts("- alpha beta gamma delta", 14);
        assert_eq!(out, ["• alpha beta", "  gamma delta"]);
        assert!(widest(&render_markdown("- alpha beta gamma delta", 14)) <= 14);
    }

    #[test]
    fn reusing_a_memo_gives_the_same_rows_as_rendering_afresh() {
        let answer = "# Plan\n\nThe loop reads the session back, orders it for the model and sends one request per step.\n\n- first item that is long enough to wrap twice at this width\n- second\n\n```rust\nfn main() {}\n```\n\nLast paragraph grows token by token";
        let mut memo = WrapMemo::default();
        // Every prefix, as a stream delivers it, then a width change.
        for end in (0..=answer.len()).filter(|&end| answer.is_char_boundary(end)) {
            let prefix = &answer[..end];
            assert_eq!(
                render_markdown_reusing(prefix, 30, &mut memo),
                render_markdown(prefix, 30),
                "prefix {prefix:?}"
            );
        }
        assert_eq!(
            render_markdown_reusing(answer, 50, &mut memo),
            render_markdown(answer, 50)
        );
        assert_eq!(
            render_markdown_reusing("", 50, &mut memo),
            Vec::<Line>::new()
        );
    }

    #[test]
    fn unfinished_stream_text_renders_without_panicking_on_open_fences() {
        let out = texts("Here:\n```py\nprint(1", 40);
        assert_eq!(out, ["Here:", "", "┌ py", "│ print(1", "└"]);
    }

    #[test]
    fn table_columns_line_up_under_their_header() {
        let out = texts(
            "| concept | meaning |\n|---|---|\n| turn | one prompt and its answer |\n| step | one request |\n",
            60,
        );
        assert_eq!(
            out,
            [
                "concept │ meaning",
                "────────┼──────────────────────────",
                "turn    │ one prompt and its answer",
                "step    │ one request",
            ]
        );
    }
}
