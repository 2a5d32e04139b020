//! Word wrapping of styled lines to a width in terminal cells.
//!
//! Owns the one rule every pane uses to turn logical lines into screen rows,
//! so that measured heights and drawn rows always agree. Pure: no terminal
//! access. Words longer than the width are cut; continuation rows can be
//! indented so list items and code keep their shape.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps `line` to `width` cells, appending the rows to `out`. Continuation
/// rows start with `indent` spaces (capped so at least a few cells remain).
pub fn wrap_into(line: &Line<'_>, width: usize, indent: usize, out: &mut Vec<Line<'static>>) {
    let width = width.max(1);
    let indent = if indent + 4 > width { 0 } else { indent };
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = line.style.patch(span.style);
            span.content.chars().map(move |c| (c, style))
        })
        .filter(|(c, _)| *c != '\n' && *c != '\r')
        .collect();
    if cells.is_empty() {
        out.push(Line::default());
        return;
    }
    let mut row: Vec<(char, Style)> = Vec::new();
    let mut row_width = 0usize;
    let mut index = 0;
    while index < cells.len() {
        let is_space = cells[index].0 == ' ';
        let mut end = index;
        let mut token_width = 0;
        while end < cells.len() && (cells[end].0 == ' ') == is_space {
            token_width += char_width(cells[end].0);
            end += 1;
        }
        let token = &cells[index..end];
        index = end;
        if row_width + token_width <= width {
            row.extend_from_slice(token);
            row_width += token_width;
            continue;
        }
        if is_space {
            // A break point: the spaces themselves are dropped at the row end.
            out.push(to_line(&row));
            row = vec![(' ', Style::default()); indent];
            row_width = indent;
            continue;
        }
        if token_width <= width - indent && row_width > indent {
            out.push(to_line(&row));
            row = vec![(' ', Style::default()); indent];
            row_width = indent;
            row.extend_from_slice(token);
            row_width += token_width;
            continue;
        }
        // A word wider than the row: break it after a `/` where a piece
        // fits (paths, model names), else wherever the row fills up.
        for piece in token.split_inclusive(|(c, _)| *c == '/') {
            let piece_width: usize = piece.iter().map(|(c, _)| char_width(*c)).sum();
            if row_width + piece_width > width
                && row_width > indent
                && piece_width <= width - indent
            {
                out.push(to_line(&row));
                row = vec![(' ', Style::default()); indent];
                row_width = indent;
            }
            for &(c, style) in piece {
                let w = char_width(c);
                if row_width + w > width && row_width > indent {
                    out.push(to_line(&row));
                    row = vec![(' ', Style::default()); indent];
                    row_width = indent;
                }
                row.push((c, style));
                row_width += w;
            }
        }
    }
    out.push(to_line(&row));
}

/// Display width of a string in cells.
pub fn str_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    if c == '\t' { 4 } else { c.width().unwrap_or(0) }
}

/// A finished row; spaces left at a break are dropped.
fn to_line(row: &[(char, Style)]) -> Line<'static> {
    let end = row
        .iter()
        .rposition(|(c, _)| *c != ' ')
        .map_or(0, |i| i + 1);
    let row = &row[..end];
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut current = String::new();
    let mut current_style = row.first().map(|(_, s)| *s).unwrap_or_default();
    for &(c, style) in row {
        if style != current_style && !current.is_empty() {
            spans.push(Span::styled(std::mem::take(&mut current), current_style));
        }
        current_style = style;
        if c == '\t' {
            current.push_str("    ");
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        spans.push(Span::styled(current, current_style));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn breaks_between_words_and_drops_the_break_space() {
        let mut out = Vec::new();
        wrap_into(&Line::from("alpha beta gamma"), 11, 0, &mut out);
        assert_eq!(texts(&out), ["alpha beta", "gamma"]);
    }

    #[test]
    fn cuts_words_longer_than_the_width_and_indents_continuations() {
        let mut out = Vec::new();
        wrap_into(&Line::from("- abcdefghijkl"), 8, 2, &mut out);
        assert_eq!(texts(&out), ["- abcdef", "  ghijkl"]);
    }

    #[test]
    fn a_path_wider_than_the_row_breaks_after_a_slash() {
        let mut out = Vec::new();
        wrap_into(
            &Line::from("◆ build · openrouter/anthropic/claude-sonnet-4-5"),
            30,
            2,
            &mut out,
        );
        assert_eq!(
            texts(&out),
            ["◆ build · openrouter/", "  anthropic/claude-sonnet-4-5"]
        );
    }

    #[test]
    fn wide_characters_count_two_cells() {
        let mut out = Vec::new();
        wrap_into(&Line::from("汉字汉字汉"), 4, 0, &mut out);
        assert_eq!(texts(&out), ["汉字", "汉字", "汉"]);
    }
}
