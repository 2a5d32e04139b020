//! A bash command line parsed into the things it would do: every simple
//! command it runs (wherever it hides: lists, pipelines, background jobs,
//! subshells, substitutions, function bodies) and every output redirection.
//!
//! Parsing only; what is allowed is decided in `bash_rules`. Uses the
//! tree-sitter bash grammar (see notes/perm-parse.md for why). Key types:
//! [`Part`], [`Command`], [`Word`].

use tree_sitter::{Node, Parser};

/// One word of a command as the shell would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The source text, quotes included.
    pub raw: String,
    /// The value after quote removal; `None` when it depends on an
    /// expansion or substitution known only at run time.
    pub literal: Option<String>,
}

impl Word {
    /// The literal value, or the raw text when it is dynamic.
    pub fn text(&self) -> &str {
        self.literal.as_deref().unwrap_or(&self.raw)
    }
}

/// One simple command: its words (name first), where it was found and
/// whether its standard input is a here-document or here-string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
    /// Where it hides, for the reason shown to the user ("the `$(touch x)`
    /// substitution"); `None` at the top level.
    pub context: Option<String>,
    pub stdin_is_heredoc: bool,
    /// `NAME=value` prefixes (`LD_PRELOAD=x ls` is not plain `ls`).
    pub assignments: Vec<String>,
}

/// Something the command line would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Run(Command),
    /// An output redirection writing `target` (`operator` is `>`, `>>`, ...).
    Write {
        operator: String,
        target: Word,
    },
    /// `NAME=value` on its own: it changes what later commands of the line
    /// run (`PATH=. ; ls`), so its name is checked like a prefix's.
    Assign(String),
    /// Syntax whose meaning the parse cannot pin down (arithmetic, `[[ ]]`,
    /// `${...}` operators, declarations, an input from `/dev/tcp`): `reason`
    /// says which. The line is code cairn cannot check.
    Opaque {
        reason: String,
    },
    /// Literal text a command reads on its input: a here-string's value or
    /// a here-document's body. Read for deny rules as possible code (`ed`
    /// and `bash` run lines of it), never to allow.
    Text(String),
}

/// Why a command line could not be parsed into parts.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    #[error("the bash grammar could not be loaded: {0}")]
    Grammar(String),
    #[error("bash cannot parse this command line (near `{0}`)")]
    Syntax(String),
}

/// Node kinds whose meaning is certain: plain words and quotes, lists,
/// pipelines, groups, simple redirects, substitutions (walked) and `$NAME`
/// (a dynamic word, which forces an ask by itself). Any other named node
/// makes the line [`Part::Opaque`]: tree-sitter-bash is not bash, so an
/// allow rule applies only to text built from these (issue #28).
const CERTAIN_KINDS: &[&str] = &[
    "program",
    "comment",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "negated_command",
    "redirected_statement",
    "command",
    "command_name",
    "word",
    "number",
    "string",
    "string_content",
    "raw_string",
    "concatenation",
    "simple_expansion",
    "variable_name",
    "special_variable_name",
    "variable_assignment",
    "variable_assignments",
    "command_substitution",
    "process_substitution",
    "file_redirect",
    "file_descriptor",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "herestring_redirect",
];

/// What a construct outside [`CERTAIN_KINDS`] does, for the reason shown.
fn opaque_reason(kind: &str) -> String {
    let what = match kind {
        "arithmetic_expansion" | "arithmetic_expression" | "c_style_for_statement" => {
            "arithmetic, which evaluates variables as code"
        }
        "test_command" => "a test (`[[ ]]`), whose comparisons evaluate text as code",
        "expansion" => "a `${...}` expansion, which can evaluate or hide code",
        "declaration_command" | "unset_command" => {
            "a declaration (`export`, `declare`, `readonly`, `local`), which can change what runs"
        }
        "function_definition" => "a function definition",
        "ansi_c_string" | "translated_string" => "a `$'...'` string",
        "brace_expression" => "a brace expansion",
        _ => "syntax cairn does not check",
    };
    format!("the line holds {what} (`{kind}`), so it is code cairn cannot check")
}

/// Longest excerpt of a substitution quoted in a reason.
const CONTEXT_CHARS: usize = 60;

/// Parses `command` into the parts it would do, in source order.
///
/// # Errors
/// [`ParseError::Syntax`] when the grammar reports an error or a missing
/// token anywhere: text cairn cannot read is never taken as harmless.
pub fn parse(command: &str) -> Result<Vec<Part>, ParseError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .map_err(|e| ParseError::Grammar(e.to_string()))?;
    let tree = parser
        .parse(command, None)
        .ok_or_else(|| ParseError::Syntax(excerpt(command)))?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(ParseError::Syntax(excerpt(&first_error_text(
            root, command,
        ))));
    }
    let mut walker = Walker {
        source: command.as_bytes(),
        parts: Vec::new(),
    };
    walker.visit(root, None, false);
    Ok(walker.parts)
}

fn first_error_text(node: Node<'_>, source: &str) -> String {
    if node.is_error() || node.is_missing() {
        return source[node.byte_range()].to_string();
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.has_error() {
            return first_error_text(child, source);
        }
    }
    source[node.byte_range()].to_string()
}

/// `text` as a Markdown code span, padded when it holds backticks itself.
fn code_span(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

fn excerpt(text: &str) -> String {
    let mut short: String = text.chars().take(CONTEXT_CHARS).collect();
    if text.chars().count() > CONTEXT_CHARS {
        short.push('…');
    }
    short
}

struct Walker<'s> {
    source: &'s [u8],
    parts: Vec<Part>,
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> String {
        String::from_utf8_lossy(&self.source[node.byte_range()]).into_owned()
    }

    /// Visits `node` and everything under it; `context` names the nearest
    /// enclosing substitution, `heredoc` says the statement's stdin is a
    /// here-document.
    fn visit(&mut self, node: Node<'_>, context: Option<&str>, heredoc: bool) {
        if !CERTAIN_KINDS.contains(&node.kind()) {
            self.opaque(opaque_reason(node.kind()));
        }
        match node.kind() {
            "variable_assignment" => {
                if let Some(name) = node.child_by_field_name("name") {
                    let name = self.text(name);
                    self.parts.push(Part::Assign(name));
                }
                self.children(node, context, heredoc);
            }
            "heredoc_body" if self.expands(node) => {
                self.opaque("the line holds an unquoted here-document that expands text, so it is code cairn cannot check".to_string());
                self.children(node, context, heredoc);
            }
            "heredoc_body" => {
                self.parts.push(Part::Text(self.text(node)));
                self.children(node, context, heredoc);
            }
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let value = node
                    .named_children(&mut cursor)
                    .find_map(|child| self.literal(child));
                if let Some(value) = value {
                    self.parts.push(Part::Text(value));
                }
                self.children(node, context, heredoc);
            }
            "command" => self.command(node, context, heredoc),
            "redirected_statement" => self.redirected(node, context),
            "file_redirect" => self.redirect(node, context),
            "command_substitution" | "process_substitution" => {
                let label = format!("the {} substitution", code_span(&excerpt(&self.text(node))));
                self.children(node, Some(&label), false);
            }
            _ => self.children(node, context, heredoc),
        }
    }

    fn opaque(&mut self, reason: String) {
        if !self
            .parts
            .iter()
            .any(|p| matches!(p, Part::Opaque { reason: r } if *r == reason))
        {
            self.parts.push(Part::Opaque { reason });
        }
    }

    /// Whether a here-document body is expanded by bash: its delimiter is
    /// unquoted and it holds `$`, a backtick or a backslash.
    fn expands(&self, body: Node<'_>) -> bool {
        let quoted = body
            .parent()
            .and_then(|r| {
                let mut cursor = r.walk();
                r.named_children(&mut cursor)
                    .find(|c| c.kind() == "heredoc_start")
            })
            .is_some_and(|start| self.text(start).contains(['\'', '"', '\\']));
        !quoted && self.text(body).contains(['$', '`', '\\'])
    }

    fn children(&mut self, node: Node<'_>, context: Option<&str>, heredoc: bool) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            self.visit(child, context, heredoc);
        }
    }

    fn redirected(&mut self, node: Node<'_>, context: Option<&str>) {
        let mut cursor = node.walk();
        let heredoc = node
            .children_by_field_name("redirect", &mut cursor)
            .any(|r| matches!(r.kind(), "heredoc_redirect" | "herestring_redirect"));
        self.children(node, context, heredoc);
    }

    fn command(&mut self, node: Node<'_>, context: Option<&str>, heredoc: bool) {
        let start = self.parts.len();
        let mut words = Vec::new();
        let mut assignments = Vec::new();
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                // `X=1 cmd`: the value may hide a substitution; the
                // assignment itself runs nothing.
                "variable_assignment" => {
                    assignments.push(self.text(child));
                    // Its value may hide a substitution; the name is
                    // checked with the command (`assignments`).
                    self.children(child, context, heredoc);
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    self.visit(child, context, heredoc);
                }
                "command_name" => {
                    let word = child.named_child(0).unwrap_or(child);
                    let mut name = self.word(word);
                    // `/bin/r?`, `/bin/[r]m`: bash finds the program by
                    // matching files, so its name is not this text.
                    if self.has_glob(word) {
                        name.literal = None;
                    }
                    words.push(name);
                    self.visit(word, context, heredoc);
                }
                _ => {
                    words.push(self.word(child));
                    self.visit(child, context, heredoc);
                }
            }
        }
        if !words.is_empty() {
            // The command itself comes before what its words run, so the
            // reasons read in source order.
            self.parts.insert(
                start,
                Part::Run(Command {
                    words,
                    context: context.map(str::to_string),
                    stdin_is_heredoc: heredoc,
                    assignments,
                }),
            );
        }
    }

    fn redirect(&mut self, node: Node<'_>, context: Option<&str>) {
        let mut cursor = node.walk();
        let operator = node
            .children(&mut cursor)
            .find(|c| !c.is_named())
            .map(|c| self.text(c))
            .unwrap_or_default();
        if let Some(target) = node.child_by_field_name("destination") {
            self.visit(target, context, false);
            let text = self.text(target);
            let is_output = operator.contains('>');
            let is_fd_dup = operator.ends_with('&') && target.kind() == "number"
                || matches!(text.as_str(), "-");
            // Bash opens the target's value after quote removal, so
            // `/dev/"tcp"/h/p` and `/dev/tc\p/h/p` connect too (#28).
            match self.literal(target) {
                Some(value)
                    if ["/dev/tcp/", "/dev/udp/"]
                        .iter()
                        .any(|dev| value.starts_with(dev)) =>
                {
                    self.opaque(format!(
                        "the line redirects `{operator}` to `{}`, which opens a network connection",
                        excerpt(&text)
                    ));
                }
                Some(_) => {}
                // An output's unknown target is asked about as a write; an
                // input's may be a connection.
                None if !is_output && !is_fd_dup => self.opaque(format!(
                    "the line redirects `{operator}` from `{}`, known only when it runs",
                    excerpt(&text)
                )),
                None => {}
            }
            if is_output && !is_fd_dup {
                self.parts.push(Part::Write {
                    operator,
                    target: self.word(target),
                });
            }
        }
    }

    /// The word's value after quote removal, when it has no expansion.
    fn word(&self, node: Node<'_>) -> Word {
        Word {
            raw: self.text(node),
            literal: self.literal(node),
        }
    }

    fn literal(&self, node: Node<'_>) -> Option<String> {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" if has_brace_expansion(&text) => None,
            "word" | "number" => Some(unescape(&text)),
            "raw_string" => Some(text.trim_matches('\'').to_string()),
            "string" => {
                let mut cursor = node.walk();
                let mut value = String::new();
                for child in node.named_children(&mut cursor) {
                    if child.kind() != "string_content" {
                        return None;
                    }
                    value.push_str(&self.text(child));
                }
                Some(value)
            }
            "concatenation" if has_brace_expansion(&text) => None,
            "concatenation" => {
                let mut cursor = node.walk();
                let mut value = String::new();
                for child in node.named_children(&mut cursor) {
                    value.push_str(&self.literal(child)?);
                }
                // Unnamed pieces (a bare `$`) make it dynamic-looking text.
                (node.named_child_count() > 0).then_some(value)
            }
            _ => None,
        }
    }
}

impl Walker<'_> {
    /// Whether an unquoted part of the word holds a pathname pattern.
    fn has_glob(&self, node: Node<'_>) -> bool {
        match node.kind() {
            "word" => has_unescaped(&self.text(node), &['*', '?', '[']),
            "concatenation" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                children.into_iter().any(|c| self.has_glob(c))
            }
            _ => false,
        }
    }
}

/// `{a,b}` or `{1..3}` outside quotes: bash makes several words of it.
/// Quoted text is not told apart, so a quoted brace list also counts as
/// dynamic (it only costs an ask).
fn has_brace_expansion(text: &str) -> bool {
    let Some(open) = text.find('{') else {
        return false;
    };
    let Some(close) = text[open..].find('}') else {
        return false;
    };
    let inside = &text[open + 1..open + close];
    inside.contains(',') || inside.contains("..")
}

fn has_unescaped(text: &str, special: &[char]) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else if special.contains(&c) {
            return true;
        }
    }
    false
}

/// Removes backslash escapes as bash does outside quotes (`r\m` is `rm`).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(line: &str) -> Vec<String> {
        parse(line)
            .expect("parses")
            .into_iter()
            .filter_map(|p| match p {
                Part::Run(c) => Some(
                    c.words
                        .iter()
                        .map(|w| w.text().to_string())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn finds_commands_in_substitutions_and_background_jobs() {
        assert_eq!(commands("git status & touch x"), ["git status", "touch x"]);
        assert_eq!(
            commands("git status $(touch x)"),
            ["git status $(touch x)", "touch x"]
        );
        assert_eq!(commands("echo '$(x)'"), ["echo $(x)"]);
    }

    #[test]
    fn quotes_and_escapes_are_removed_from_literals() {
        assert_eq!(commands("r\\m -rf 'a b' \"c\""), ["rm -rf a b c"]);
    }

    #[test]
    fn redirects_are_writes_but_fd_duplication_is_not() {
        let parts = parse("ls > out 2>&1").expect("parses");
        let writes: Vec<&Part> = parts
            .iter()
            .filter(|p| matches!(p, Part::Write { .. }))
            .collect();
        assert_eq!(writes.len(), 1);
    }

    fn opaque(line: &str) -> bool {
        parse(line)
            .expect("parses")
            .iter()
            .any(|p| matches!(p, Part::Opaque { .. }))
    }

    #[test]
    fn syntax_outside_the_whitelist_is_opaque() {
        for line in [
            "echo $((x))",
            "[[ -v x ]]",
            "echo ${x@P}",
            "echo ${PWD#$(touch p)}",
            "export A=1",
            "f() { ls; }",
            "git diff $'--output=p'",
            "cat <<-EOF\n\t$(touch p)\n\tEOF",
            "cat < /dev/tcp/example.com/80",
        ] {
            assert!(opaque(line), "{line:?}");
        }
        for line in [
            "ls -la src",
            "grep -rn 'a b' src | head",
            "cat <<'EOF'\n$(x)\nEOF",
        ] {
            assert!(!opaque(line), "{line:?}");
        }
    }

    #[test]
    fn brace_lists_and_globbed_command_names_are_not_literals() {
        let words = |line: &str| match parse(line).expect("parses").remove(0) {
            Part::Run(c) => c.words,
            other => panic!("{other:?}"),
        };
        assert_eq!(words("git diff {--output=p,}")[2].literal, None);
        assert_eq!(words("rm{,} x")[0].literal, None);
        assert_eq!(words("/bin/r? x")[0].literal, None);
        assert_eq!(words("ls *.rs")[1].literal.as_deref(), Some("*.rs"));
    }

    #[test]
    fn here_strings_and_here_documents_are_text_parts() {
        let texts = |line: &str| -> Vec<String> {
            parse(line)
                .expect("parses")
                .into_iter()
                .filter_map(|p| match p {
                    Part::Text(text) => Some(text),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(texts("ed -s a <<< '!rm x'"), ["!rm x"]);
        assert_eq!(texts("ed -s a <<'EOF'\n!rm x\nEOF"), ["!rm x\n"]);
        assert!(texts("ls").is_empty());
    }

    #[test]
    fn standalone_assignments_are_parts() {
        let parts = parse("PATH=./bin; ls").expect("parses");
        assert_eq!(parts[0], Part::Assign("PATH".to_string()));
    }

    #[test]
    fn syntax_errors_are_errors() {
        assert!(matches!(parse("echo $(("), Err(ParseError::Syntax(_))));
    }
}
