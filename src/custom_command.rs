//! Custom slash commands: prompt files a user or a repository keeps, in the
//! layouts Claude Code and OpenCode document. A Markdown file in
//! `.cairn/commands/`, `.claude/commands/`, `.opencode/command(s)/` (of every
//! directory from the working directory up to the project root), in the
//! user's `~/.config/cairn/commands/` and `~/.claude/commands/`, an entry
//! of `opencode.json`'s `command` table, or one that comes with cairn
//! (`/init`, below any file of its name). A subfolder is a namespace:
//! `.claude/commands/frontend/component.md` is `/frontend:component`.
//!
//! Data and discovery only: the session expands a command (see
//! [`CustomCommand::expand_arguments`], [`shell_spans`]) and runs its shell
//! lines through the permission rules. The built-in table
//! ([`crate::slash::COMMANDS`]) wins a clash, which is reported.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::frontmatter::FrontMatter;

/// Where command files live inside a project directory, in priority order.
pub const PROJECT_COMMAND_DIRS: [&str; 4] = [
    ".cairn/commands",
    ".claude/commands",
    ".opencode/command",
    ".opencode/commands",
];

/// OpenCode's project files that may hold a `command` table.
const OPENCODE_FILES: [&str; 2] = ["opencode.json", "opencode.jsonc"];

/// Folder depth read below a commands folder: deep enough for any
/// namespace people write, bounded against a linked loop.
const MAX_DEPTH: usize = 4;

/// One command as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomCommand {
    /// `/frontend:component`: what the user types.
    pub name: String,
    pub description: String,
    /// Front matter `argument-hint` (`[issue] [branch]`), shown as the usage.
    pub argument_hint: String,
    /// Front matter `allowed-tools`, in Claude Code's rule syntax
    /// (`Bash(git add:*)`): a permission grant for the command's shell lines.
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    pub agent: Option<String>,
    /// The prompt template.
    pub body: String,
    /// The file it came from.
    pub file: PathBuf,
    /// It comes with the project (a cloned repository): its grants wait for
    /// trust.
    pub from_project: bool,
}

/// Where to look: the facts discovery needs, nothing more.
#[derive(Debug, Clone)]
pub struct CommandRoots {
    pub cwd: PathBuf,
    pub root: PathBuf,
    pub home: Option<PathBuf>,
    /// cairn's config dir (`~/.config/cairn`).
    pub config_dir: Option<PathBuf>,
}

impl CommandRoots {
    /// The project's command folders, nearest first.
    fn project_dirs(&self) -> Vec<PathBuf> {
        self.cwd
            .ancestors()
            .take_while(|dir| dir.starts_with(&self.root))
            .flat_map(|dir| PROJECT_COMMAND_DIRS.iter().map(move |sub| dir.join(sub)))
            .collect()
    }

    /// The user's command folders.
    fn user_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .config_dir
            .iter()
            .map(|dir| dir.join("commands"))
            .collect();
        dirs.extend(self.home.iter().map(|home| home.join(".claude/commands")));
        dirs
    }
}

/// What discovery found, and what it could not use (with why), for the
/// user to see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovered {
    pub commands: Vec<CustomCommand>,
    pub problems: Vec<String>,
}

impl Discovered {
    pub fn find(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|command| command.name == name)
    }

    /// The command `message` runs and its arguments, or `None` when its
    /// first word is no custom command's whole name.
    pub fn parse<'a>(&self, message: &'a str) -> Option<(&CustomCommand, &'a str)> {
        let message = message.trim();
        let (word, args) = message
            .split_once(char::is_whitespace)
            .unwrap_or((message, ""));
        self.find(word).map(|command| (command, args.trim()))
    }

    fn add(&mut self, command: CustomCommand) {
        if crate::slash::find(&command.name).is_some() {
            self.problems.push(format!(
                "command {} in {} has the name of a built-in command: the built-in runs",
                command.name,
                command.file.display()
            ));
        } else if self.find(&command.name).is_none() {
            self.commands.push(command);
        }
    }
}

/// `/init`'s prompt: as Claude Code's and Codex's, the model explores the
/// repository and writes (or improves) `AGENTS.md` through the usual
/// `write`/`edit` asks.
const INIT_PROMPT: &str = "Explore this repository and write an AGENTS.md file at its root for \
future coding agents working here. If an AGENTS.md (or CLAUDE.md) already exists, read it first and \
improve it rather than starting over, keeping what is still true.

Include, briefly and only what is true of this repository:
1. How to build, lint and test it, including how to run a single test (read the build files, \
CI configuration and README rather than guessing).
2. The architecture a newcomer needs: the main folders and what each owns, and how data flows \
between them.
3. Conventions that are not obvious from one file: naming, error handling, code style rules, \
anything a README, CONTRIBUTING or style guide asks.

Do not list every file, do not invent commands, and keep it short: AGENTS.md is read at the start \
of every session. $ARGUMENTS";

/// What a bundled command names as its file.
const BUNDLED_FILE: &str = "(built into cairn)";

/// Commands that come with cairn, below every file of the same name (a
/// user's or a repository's `/init` replaces this one).
fn bundled() -> Vec<CustomCommand> {
    vec![CustomCommand {
        name: "/init".into(),
        description: "explore the repository and write or update AGENTS.md".into(),
        argument_hint: "[what to focus on]".into(),
        allowed_tools: Vec::new(),
        model: None,
        agent: None,
        body: INIT_PROMPT.into(),
        file: PathBuf::from(BUNDLED_FILE),
        from_project: false,
    }]
}

/// Every command under `roots`, sorted by name; the nearest of a name wins
/// (a project's over the user's, as for skills).
pub fn discover(roots: &CommandRoots) -> Discovered {
    let mut found = Discovered::default();
    for dir in roots.project_dirs() {
        read_dir_commands(&dir, &dir, true, roots, &mut found, 0);
    }
    for name in OPENCODE_FILES {
        read_opencode(&roots.root.join(name), &mut found);
    }
    for dir in roots.user_dirs() {
        read_dir_commands(&dir, &dir, false, roots, &mut found, 0);
    }
    for command in bundled() {
        found.add(command);
    }
    found.commands.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn read_dir_commands(
    base: &Path,
    dir: &Path,
    from_project: bool,
    roots: &CommandRoots,
    found: &mut Discovered,
    depth: usize,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        // A repository's command read through a link out of it would put
        // the user's files in the prompt (issue #28): never read.
        if from_project && let Some(real) = crate::shared::linked_outside(&path, &roots.root) {
            found.problems.push(format!(
                "command {} links outside the project (to {}): not read",
                path.display(),
                real.display()
            ));
            continue;
        }
        if path.is_dir() {
            if depth < MAX_DEPTH {
                read_dir_commands(base, &path, from_project, roots, found, depth + 1);
            }
            continue;
        }
        if path.extension().is_none_or(|ext| ext != "md") {
            continue;
        }
        let Some(name) = command_name(base, &path) else {
            continue;
        };
        match read_command(&path, name, from_project) {
            Ok(command) => found.add(command),
            Err(problem) => found.problems.push(problem),
        }
    }
}

/// `/frontend:component` for `base/frontend/component.md`.
fn command_name(base: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(base).ok()?.with_extension("");
    let words: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!words.is_empty()).then(|| format!("/{}", words.join(":")))
}

fn read_command(file: &Path, name: String, from_project: bool) -> Result<CustomCommand, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| format!("command {}: cannot read: {error}", file.display()))?;
    let front = FrontMatter::parse(&quote_argument_hint(&text))
        .map_err(|error| format!("command {}: {error}", file.display()))?;
    let body = front.body.clone();
    // Claude Code shows the body's first line when no description is given.
    let description = front
        .string("description")
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| first_line(&body));
    let body = if from_project {
        fence_outside_mentions(&body)
    } else {
        body
    };
    Ok(CustomCommand {
        name,
        description,
        argument_hint: front.string("argument-hint").unwrap_or_default(),
        allowed_tools: front.list("allowed-tools").unwrap_or_default(),
        model: front.string("model").filter(|model| !model.is_empty()),
        agent: front.string("agent").filter(|agent| !agent.is_empty()),
        body,
        file: file.to_path_buf(),
        from_project,
    })
}

/// A repository's command is text the repository wrote: its `@` mentions
/// of paths outside the project (`@~/.aws/credentials`, `@/etc/x`,
/// `@../x`) would attach the user's files to the prompt unasked (issue
/// #28), so they are put in backticks and stay text; the model can still
/// read such a path with the read tool, which asks.
/// A mention whose path holds a `$` placeholder (`@$1~/x`) is fenced too:
/// what it names is known only once the arguments are in.
fn fence_outside_mentions(body: &str) -> String {
    fence_mentions(body, |path| {
        path.starts_with(['/', '~'])
            || path.contains('$')
            || path.split('/').any(|part| part == "..")
    })
}

/// Every `@` mention of `text` in backticks, so none attaches: a command's
/// `` !`cmd` `` output is what a program printed, not what anyone wrote.
pub fn fence_all_mentions(text: &str) -> String {
    fence_mentions(text, |_| true)
}

fn fence_mentions(body: &str, fenced: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let outside = word.strip_prefix('@').is_some_and(&fenced);
        if outside {
            out.push('`');
            out.push_str(word);
            out.push('`');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in body.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `argument-hint: [issue] [priority]`, as Claude Code's documentation
/// writes it, is not YAML (a list followed by more text) and `[name]` alone
/// is a list: Claude Code reads the value as text, so it is quoted here
/// before the front matter is parsed.
fn quote_argument_hint(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_front = false;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end();
        if trimmed == "---" {
            in_front = index == 0;
        }
        match trimmed.strip_prefix("argument-hint:").map(str::trim) {
            Some(value) if in_front && !value.starts_with(['"', '\'']) && !value.is_empty() => {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                out.push_str(&format!("argument-hint: \"{escaped}\"\n"));
            }
            _ => out.push_str(line),
        }
    }
    out
}

fn first_line(body: &str) -> String {
    body.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .trim_start_matches('#')
        .trim()
        .to_string()
}

/// OpenCode's `command` table: `"name": { "template", "description",
/// "agent", "model" }`. The file may have comments and trailing commas.
fn read_opencode(file: &Path, found: &mut Discovered) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    let parsed = jsonc_parser::parse_to_serde_value::<Option<serde_json::Value>>(
        &text,
        &jsonc_parser::ParseOptions::default(),
    );
    let value = match parsed {
        Ok(Some(value)) => value,
        Ok(None) => return,
        Err(error) => {
            // The MCP loader reports the broken file too; say it here only
            // when it would hold commands.
            if text.contains("\"command\"") {
                found.problems.push(format!(
                    "{}: not read for its commands: {error}",
                    file.display()
                ));
            }
            return;
        }
    };
    let Some(table) = value.get("command").and_then(|c| c.as_object()) else {
        return;
    };
    for (name, entry) in table {
        let field = |key: &str| -> Option<String> {
            entry
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(String::from)
        };
        let Some(template) = field("template") else {
            found.problems.push(format!(
                "{}: command `{name}` has no `template`: not used",
                file.display()
            ));
            continue;
        };
        found.add(CustomCommand {
            name: format!("/{name}"),
            description: field("description").unwrap_or_else(|| first_line(&template)),
            argument_hint: String::new(),
            allowed_tools: Vec::new(),
            model: field("model"),
            agent: field("agent"),
            body: fence_outside_mentions(&template),
            file: file.to_path_buf(),
            from_project: true,
        });
    }
}

impl CustomCommand {
    /// `/frontend:component [name]`: as `/help` and completion show it.
    pub fn usage(&self) -> String {
        if self.argument_hint.is_empty() {
            self.name.clone()
        } else {
            format!("{} {}", self.name, self.argument_hint)
        }
    }

    /// The body with `$ARGUMENTS` replaced by `args` and `$1`..`$9` by its
    /// whitespace-separated words (a missing one is empty), as Claude Code
    /// and OpenCode do. A body that uses neither gets the arguments after
    /// it, so what the user typed is never lost.
    pub fn expand_arguments(&self, args: &str) -> String {
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                used = true;
                rest = tail;
            } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
                let index = digit as usize - '1' as usize;
                out.push_str(words.get(index).copied().unwrap_or(""));
                used = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        if !used && !args.is_empty() {
            out.truncate(out.trim_end().len());
            out.push_str(&format!("\n\nARGUMENTS: {args}"));
        }
        out
    }
}

/// The `` !`command` `` spans of `text` (Claude Code's and OpenCode's form
/// of a shell line in a command): each span's byte range and the command.
pub fn shell_spans(text: &str) -> Vec<(Range<usize>, String)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("!`") {
        let start = from + found;
        let command_start = start + 2;
        let Some(length) = text[command_start..].find('`') else {
            break;
        };
        let end = command_start + length + 1;
        let command = text[command_start..end - 1].trim();
        if !command.is_empty() {
            spans.push((start..end, command.to_string()));
        }
        from = end;
    }
    spans
}

/// `text` with each span replaced by its output, in order.
pub fn substitute(text: &str, spans: &[(Range<usize>, String)], outputs: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for ((range, _), output) in spans.iter().zip(outputs) {
        out.push_str(&text[at..range.start]);
        out.push_str(output.trim_end());
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

impl Discovered {
    /// `/help`'s rows for the commands (usage, description), then a
    /// `note:` line for each file that could not be used.
    pub fn help_text(&self) -> String {
        let width = self
            .commands
            .iter()
            .map(|command| command.usage().len())
            .max()
            .unwrap_or(0);
        let rows = self.commands.iter().map(|command| {
            let source = if command.from_project {
                "project"
            } else if command.file == Path::new(BUNDLED_FILE) {
                "built in"
            } else {
                "user"
            };
            format!(
                "{:<width$}  {} ({source})\n",
                command.usage(),
                command.description
            )
        });
        let notes = self
            .problems
            .iter()
            .map(|problem| format!("note: {problem}\n"));
        rows.chain(notes).collect()
    }
}

/// The project commands' `allowed-tools`: grants that apply only once the
/// project is trusted, recorded with their exact list so an edit asks again.
pub fn project_risks(discovered: &Discovered, root: &Path) -> Vec<crate::trust::Risk> {
    let root = crate::trust::canonical(root);
    discovered
        .commands
        .iter()
        .filter(|command| command.from_project && !command.allowed_tools.is_empty())
        .map(|command| crate::trust::Risk {
            root: root.clone(),
            file: command.file.clone(),
            line: line_of(&command.file, "allowed-tools"),
            key: format!("command {}: allowed-tools", command.name),
            value: command.allowed_tools.join(", "),
        })
        .collect()
}

fn line_of(file: &Path, key: &str) -> Option<usize> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .position(|line| line.trim_start().starts_with(key))
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(body: &str) -> CustomCommand {
        CustomCommand {
            name: "/x".into(),
            description: String::new(),
            argument_hint: String::new(),
            allowed_tools: Vec::new(),
            model: None,
            agent: None,
            body: body.into(),
            file: PathBuf::from("x.md"),
            from_project: true,
        }
    }

    #[test]
    fn arguments_and_positions_expand() {
        let c = command("Fix issue #$1 on $2 ($ARGUMENTS), cost $5 $x");
        assert_eq!(
            c.expand_arguments("42 main"),
            "Fix issue #42 on main (42 main), cost  $x"
        );
        assert_eq!(
            command("Review the code").expand_arguments("src/a.rs"),
            "Review the code\n\nARGUMENTS: src/a.rs"
        );
        assert_eq!(command("Review").expand_arguments(""), "Review");
    }

    #[test]
    fn shell_spans_are_bang_backtick_forms() {
        let text = "- Status: !`git status`\n- Branch: !`git branch --show-current` and `code` !x";
        let spans = shell_spans(text);
        let commands: Vec<&str> = spans.iter().map(|(_, c)| c.as_str()).collect();
        assert_eq!(commands, ["git status", "git branch --show-current"]);
        let out = substitute(text, &spans, &["M a.rs\n".into(), "main".into()]);
        assert_eq!(out, "- Status: M a.rs\n- Branch: main and `code` !x");
    }

    #[test]
    fn an_argument_hint_in_brackets_is_text() {
        let text = "---\nargument-hint: [pr-number] [priority]\n---\nargument-hint: [x]\n";
        let front = FrontMatter::parse(&quote_argument_hint(text)).expect("parses");
        assert_eq!(
            front.string("argument-hint").as_deref(),
            Some("[pr-number] [priority]")
        );
        assert_eq!(front.body, "argument-hint: [x]\n");
    }

    #[test]
    fn a_project_commands_mentions_outside_the_project_stay_text() {
        assert_eq!(
            fence_outside_mentions(
                "Read @src/a.rs and @~/.aws/credentials,\n@/etc/passwd @../x @a/../../y"
            ),
            "Read @src/a.rs and `@~/.aws/credentials,`\n`@/etc/passwd` `@../x` `@a/../../y`"
        );
    }

    #[test]
    fn names_are_namespaced_by_folder() {
        let base = Path::new("/p/.claude/commands");
        assert_eq!(
            command_name(base, &base.join("frontend/component.md")).as_deref(),
            Some("/frontend:component")
        );
        assert_eq!(
            command_name(base, &base.join("review.md")).as_deref(),
            Some("/review")
        );
    }
}
