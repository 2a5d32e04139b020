//! A small keyword highlighter for fenced code blocks.
//!
//! Colours keywords, strings, numbers and comments of common languages, one
//! line at a time (no state across lines, so a multi-line string is not
//! tracked). Deliberately tiny: no grammar files, no syntect.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

const RUST: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "Self", "static", "struct", "trait", "true", "type", "use", "where", "while",
];
const PYTHON: &[&str] = &[
    "and", "as", "async", "await", "break", "class", "continue", "def", "elif", "else", "except",
    "False", "finally", "for", "from", "if", "import", "in", "is", "lambda", "None", "not", "or",
    "pass", "raise", "return", "self", "True", "try", "while", "with", "yield",
];
const JS: &[&str] = &[
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "else",
    "export",
    "extends",
    "false",
    "for",
    "from",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "of",
    "return",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "while",
];
const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "false",
    "for",
    "func",
    "go",
    "if",
    "import",
    "interface",
    "map",
    "nil",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "true",
    "type",
    "var",
];
const SHELL: &[&str] = &[
    "case", "do", "done", "echo", "elif", "else", "esac", "exit", "export", "fi", "for",
    "function", "if", "in", "local", "then", "while",
];
const C_LIKE: &[&str] = &[
    "break",
    "case",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "if",
    "int",
    "long",
    "new",
    "null",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "struct",
    "switch",
    "this",
    "true",
    "void",
    "while",
];

/// What a language looks like to the highlighter.
struct Grammar {
    keywords: &'static [&'static str],
    line_comment: &'static str,
}

fn grammar(lang: &str) -> Option<Grammar> {
    let (keywords, line_comment) = match lang.to_ascii_lowercase().as_str() {
        "rust" | "rs" => (RUST, "//"),
        "python" | "py" => (PYTHON, "#"),
        "js" | "javascript" | "ts" | "typescript" | "tsx" | "jsx" => (JS, "//"),
        "go" => (GO, "//"),
        "sh" | "bash" | "shell" | "zsh" | "console" => (SHELL, "#"),
        "c" | "cpp" | "c++" | "h" | "java" | "cs" | "kotlin" => (C_LIKE, "//"),
        "toml" | "yaml" | "yml" => (&[][..], "#"),
        "json" => (&[][..], "\u{0}"),
        _ => return None,
    };
    Some(Grammar {
        keywords,
        line_comment,
    })
}

/// The base style of code; highlighted tokens patch it.
pub fn code_style() -> Style {
    Style::default().fg(Color::Gray)
}

/// Highlights one line of code in `lang`; unknown languages come back plain.
pub fn highlight_line(lang: &str, text: &str) -> Line<'static> {
    let Some(grammar) = grammar(lang) else {
        return Line::from(Span::styled(text.to_string(), code_style()));
    };
    let mut spans = Vec::new();
    let mut plain = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>| {
        if !plain.is_empty() {
            spans.push(Span::styled(std::mem::take(plain), code_style()));
        }
    };
    while i < chars.len() {
        let rest: String = chars[i..].iter().collect();
        if rest.starts_with(grammar.line_comment) {
            flush(&mut plain, &mut spans);
            spans.push(Span::styled(rest, Style::default().fg(Color::DarkGray)));
            break;
        }
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            flush(&mut plain, &mut spans);
            let mut end = i + 1;
            while end < chars.len() && chars[end] != c {
                end += if chars[end] == '\\' { 2 } else { 1 };
            }
            let end = (end + 1).min(chars.len());
            spans.push(Span::styled(
                chars[i..end].iter().collect::<String>(),
                Style::default().fg(Color::Green),
            ));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let mut end = i;
            while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            let word: String = chars[i..end].iter().collect();
            let style = if c.is_ascii_digit() {
                Some(Style::default().fg(Color::LightMagenta))
            } else if grammar.keywords.contains(&word.as_str()) {
                Some(
                    Style::default()
                        .fg(Color::Magenta)
                        .add_modifier(Modifier::BOLD),
                )
            } else {
                None
            };
            match style {
                Some(style) => {
                    flush(&mut plain, &mut spans);
                    spans.push(Span::styled(word, style));
                }
                None => plain.push_str(&word),
            }
            i = end;
            continue;
        }
        plain.push(c);
        i += 1;
    }
    flush(&mut plain, &mut spans);
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_strings_and_comments_get_their_own_spans() {
        let line = highlight_line("rust", r#"let x = "fn"; // done"#);
        let parts: Vec<(&str, Option<Color>)> = line
            .spans
            .iter()
            .map(|s| (s.content.as_ref(), s.style.fg))
            .collect();
        assert_eq!(parts[0], ("let", Some(Color::Magenta)));
        assert!(parts.contains(&("\"fn\"", Some(Color::Green))));
        assert_eq!(parts.last().map(|p| p.0), Some("// done"));
    }

    #[test]
    fn unknown_language_is_one_plain_span() {
        let line = highlight_line("brainfuck", "let x");
        assert_eq!(line.spans.len(), 1);
    }
}
