//! What a bash command line needs permission for: one [`Ask`] per distinct
//! permission (`bash` for the commands it runs, `edit` for the files its
//! redirections write, `external_directory` for paths outside the project).
//!
//! A line whose effect is not in its text (syntax outside `shell`'s
//! whitelist, a word known only at run time, an unsafe variable) is
//! *forced*: it asks whatever the rules say (issue #28).
//!
//! Pure apart from path resolution; the tool turns a [`BashPlan`] into
//! permission requests (and reads git's configuration for its
//! [`GitCall`]s). Parsing lives in `shell`, deny spellings in
//! `deny_spellings`. Key fn: [`plan`].

use std::path::Path;

pub use super::deny_spellings::{HOLE, could_match, spellings, text_spellings};
use super::deny_spellings::{WRAPPERS, base_name, is_runner, joined, unwrap};
use super::shell::{self, Command, Part, Word};
use super::{is_external, resolve_path};

/// Everything a command line needs an answer for, in a stable order:
/// `bash` first, then `edit`, then `external_directory`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BashPlan {
    pub asks: Vec<Ask>,
    /// The `git` commands of the line that are not already forced: the tool
    /// reads each one's repository configuration (see `tool::bash_git`) and
    /// forces the ask when it names a program.
    pub git_calls: Vec<GitCall>,
}

/// One `git` command, with what git needs to find the same configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitCall {
    /// The `bash` pattern to force when the repository names a program.
    pub pattern: String,
    /// The global options that choose the repository (`-C`, `--git-dir`,
    /// `--work-tree`, `--bare`), as written.
    pub options: Vec<String>,
    /// The subcommand (`status`), empty when there is none.
    pub subcommand: String,
    /// Where the line's last `cd` before it goes (relative to the cwd), if
    /// one does: git then runs there.
    pub cd: Option<String>,
    /// The command passes `--ignore-submodules` (`=all`), so git does not
    /// look into submodules, whose own configuration cairn does not read.
    pub ignores_submodules: bool,
}

impl BashPlan {
    /// Makes `pattern` of the `bash` ask ask whatever the rules say.
    pub fn force_bash(&mut self, pattern: &str, reason: String) {
        if !self.asks.iter().any(|a| a.permission == "bash") {
            self.asks.insert(0, Ask::new("bash"));
        }
        if let Some(ask) = self.asks.iter_mut().find(|a| a.permission == "bash") {
            ask.force(pattern, reason);
            ask.always_broad.clear();
        }
    }
}

/// One permission request to make.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    pub permission: String,
    /// The normalized text of each command (or each path) this covers.
    pub patterns: Vec<String>,
    /// Every other spelling of the same commands (flag clusters reordered,
    /// the path to the executable dropped, wrappers removed); a `deny` rule
    /// matching any of them denies. Never used to allow.
    pub spellings: Vec<String>,
    pub always: Vec<String>,
    pub always_broad: Vec<String>,
    /// `(pattern, phrase)`: why that pattern needs an answer.
    pub reasons: Vec<(String, String)>,
    /// Patterns to ask about even when a rule allows them (only `deny` and
    /// `--yolo` decide): their effect cannot be known from the text.
    pub forced: Vec<String>,
    /// Spellings holding [`HOLE`]s, for words known only at run time: a
    /// `deny` rule that some value of the holes would match denies (see
    /// [`could_match`]), `--yolo` or not.
    pub templates: Vec<String>,
}

/// Environment variables a `NAME=value` prefix, a standalone assignment or
/// an `export` may set without an ask: they choose a language, a colour or
/// a log level, and no program runs code or finds files by them. Anything
/// else can (`PATH`, `LD_PRELOAD`, `BASH_ENV`, `GIT_*`, `PAGER`,
/// `LESSOPEN`, `RUSTFLAGS`), so it forces an ask (issue #28).
const SAFE_VARIABLES: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "COLUMNS",
    "LINES",
    "TERM",
    "CI",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_LOG",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_INCREMENTAL",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
];

fn is_safe_variable(name: &str) -> bool {
    SAFE_VARIABLES.contains(&name)
        || name.starts_with("LC_") && name[3..].chars().all(|c| c.is_ascii_uppercase())
}

/// The commands an "always" answer may extend to `verb *`: read-only verbs
/// of well-known tools. Anything not here gets only the exact-command offer,
/// so "always" on `rm -rf build` can never become `rm *`.
const BROAD_VERBS: &[&str] = &[
    "git status",
    "git diff",
    "git log",
    "git show",
    "git branch",
    "cargo test",
    "cargo check",
    "cargo build",
    "cargo clippy",
    "cargo fmt --check",
    "ls",
    "pwd",
    "wc",
    "date",
    "which",
];

/// Builtins that assign to, test or load by a name given in their
/// arguments: `let 'a[$(touch p)]'` and `read 'a[$(touch p)]'` run the
/// substitution in the subscript; `enable -f` loads a library, `hash -p`
/// and `complete -C` name programs, `shopt`/`set` change how later words
/// expand.
const EVALUATING_BUILTINS: &[&str] = &[
    "let",
    "read",
    "mapfile",
    "readarray",
    "getopts",
    "enable",
    "hash",
    "complete",
    "compgen",
    "bind",
    "shopt",
    "set",
    "unset",
    "wait",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
];

/// Run text or stdin as code.
const INTERPRETERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "python", "python3", "python2",
    "perl", "ruby", "node", "deno", "php", "lua",
];

/// Commands whose path arguments are files they touch.
const FILE_COMMANDS: &[&str] = &[
    "rm", "mv", "cp", "mkdir", "touch", "chmod", "chown", "chgrp", "ln", "cd", "rmdir", "truncate",
    "install", "rsync", "dd", "shred", "unlink",
];

/// The plan for `command` run in `cwd` inside project `root`.
pub fn plan(command: &str, cwd: &Path, root: &Path) -> BashPlan {
    let mut planned = plan_line(command, cwd, root);
    if !command.contains("\\\n") {
        return planned;
    }
    // bash deletes a backslash-newline before it splits words, and the
    // parser reads it as a space: `git diff\⏎tool` runs `git difftool`,
    // `r\⏎m -rf x` runs `rm` (the sixth blind review of #28). Such a line
    // asks, and what the joined text runs is spelled for deny rules.
    let joined = command.replace("\\\n", "");
    if glued_continuation(command) {
        planned.force_bash(
            command.trim(),
            "a backslash at a line end joins the words around it, which changes what runs"
                .to_string(),
        );
    }
    let joined_asks = plan_line(&joined, cwd, root).asks;
    if let Some(bash) = planned.asks.iter_mut().find(|a| a.permission == "bash") {
        for ask in joined_asks.into_iter().filter(|a| a.permission == "bash") {
            add_spellings(
                ask.patterns.into_iter().chain(ask.spellings).collect(),
                bash,
            );
            for template in ask.templates {
                push_unique(&mut bash.templates, template);
            }
        }
    }
    planned
}

/// Whether a backslash-newline sits between two non-blank characters,
/// where deleting it joins two words into one.
fn glued_continuation(command: &str) -> bool {
    command.match_indices("\\\n").any(|(at, _)| {
        let before = command[..at].chars().next_back();
        let after = command[at + 2..].chars().next();
        before.is_some_and(|c| !c.is_whitespace()) && after.is_some_and(|c| !c.is_whitespace())
    })
}

/// [`plan`] for the line as the parser reads it.
fn plan_line(command: &str, cwd: &Path, root: &Path) -> BashPlan {
    let parts = match shell::parse(command) {
        Ok(parts) => parts,
        Err(error) => return opaque_plan(command, &format!("{error}, so it cannot be checked")),
    };
    let mut bash = Ask::new("bash");
    let mut edit = Ask::new("edit");
    let mut external = Ask::new("external_directory");
    let mut git_calls = Vec::new();
    let mut cd = None;
    let line = command.trim();
    for part in &parts {
        match part {
            Part::Run(cmd) => {
                add_command(cmd, cwd, root, &mut bash, &mut external);
                add_argument_writes(cmd, cwd, root, &mut edit, &mut external);
                let words = unwrap(&cmd.words);
                if words.first().and_then(base_name) == Some("cd") {
                    cd = words.get(1).map(|w| w.text().to_string());
                }
                if let Some(call) = git_call(cmd, &bash, cd.clone()) {
                    git_calls.push(call);
                }
            }
            Part::Write { operator, target } => {
                add_write(operator, target, cwd, root, &mut edit, &mut external);
            }
            Part::Assign(name) if !is_safe_variable(name) => bash.force(
                line,
                format!("it sets `{name}`, which can change what the commands after it run"),
            ),
            Part::Assign(_) => {}
            // `ed <<< '!rm -rf x'`, `bash <<'EOF'`: for deny rules only.
            Part::Text(text) => add_spellings(text_spellings(text), &mut bash),
            Part::Opaque { reason } => {
                bash.force(line, reason.clone());
                // What the construct runs is unknown, so any deny rule may
                // apply to it.
                push_unique(&mut bash.templates, HOLE.to_string());
            }
        }
    }
    if bash.patterns.is_empty() && edit.patterns.is_empty() && external.patterns.is_empty() {
        // An empty line or only comments: nothing runs, still nothing is
        // assumed; the exact text is what is asked about.
        bash.push(command.trim(), None);
    }
    if bash.forced.is_empty() {
        bash.always_broad = broad_offer(&parts);
    }
    BashPlan {
        asks: [bash, edit, external]
            .into_iter()
            .filter(|ask| !ask.patterns.is_empty())
            .collect(),
        git_calls,
    }
}

fn opaque_plan(command: &str, reason: &str) -> BashPlan {
    let mut bash = Ask::new("bash");
    bash.force(command, reason.to_string());
    bash.templates.push(HOLE.to_string());
    BashPlan {
        asks: vec![bash],
        git_calls: Vec::new(),
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// git global options that choose the repository, and whether they take
/// the next word as their value.
const GIT_REPOSITORY_OPTIONS: &[(&str, bool)] = &[
    ("-C", true),
    ("--git-dir", true),
    ("--work-tree", true),
    ("--bare", false),
];

/// The [`GitCall`] for `cmd` when it runs git and is not forced already.
fn git_call(cmd: &Command, bash: &Ask, cd: Option<String>) -> Option<GitCall> {
    let words = unwrap(&cmd.words);
    if words.first().and_then(base_name) != Some("git") {
        return None;
    }
    let pattern = command_text(cmd);
    if bash.forced.contains(&pattern) {
        return None;
    }
    let mut options = Vec::new();
    let mut rest = words[1..].iter().map(Word::text);
    let mut subcommand = String::new();
    while let Some(word) = rest.next() {
        if !word.starts_with('-') {
            subcommand = word.to_string();
            break;
        }
        let name = word.split('=').next().unwrap_or(word);
        if let Some((_, takes_value)) = GIT_REPOSITORY_OPTIONS.iter().find(|(o, _)| *o == name) {
            options.push(word.to_string());
            if *takes_value && !word.contains('=') {
                options.extend(rest.next().map(str::to_string));
            }
        }
    }
    let ignores_submodules = words
        .iter()
        .any(|w| matches!(w.text(), "--ignore-submodules" | "--ignore-submodules=all"));
    Some(GitCall {
        pattern,
        options,
        subcommand,
        cd,
        ignores_submodules,
    })
}

/// The command as rules see it: its words, after its assignments except
/// the safe ones (`LANG=C ls` is `ls` to an `ls *` rule; `PATH=x ls` is
/// not, and asks anyway).
fn command_text(cmd: &Command) -> String {
    let text = joined(&cmd.words);
    let unsafe_assignments: Vec<&str> = cmd
        .assignments
        .iter()
        .filter(|a| !is_safe_variable(assigned_name(a)) || a.contains(['$', '`']))
        .map(String::as_str)
        .collect();
    if unsafe_assignments.is_empty() {
        text
    } else {
        format!("{} {text}", unsafe_assignments.join(" "))
    }
}

/// `NAME` of `NAME=value`, `NAME+=value` or `NAME[i]=value`.
fn assigned_name(assignment: &str) -> &str {
    assignment
        .split(['=', '+', '['])
        .next()
        .unwrap_or(assignment)
}

/// `text` as a Markdown code span, padded when it holds backticks itself.
fn code(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

impl Ask {
    fn new(permission: &str) -> Self {
        Self {
            permission: permission.to_string(),
            ..Self::default()
        }
    }

    fn push(&mut self, pattern: &str, reason: Option<String>) {
        if !self.patterns.iter().any(|p| p == pattern) {
            self.patterns.push(pattern.to_string());
            // A command or path holding `*` or `?` would, stored, allow
            // more than itself (`rm *.tmp` would match `rm -rf ~ x.tmp`).
            self.always.extend(super::exact_always(pattern));
        }
        if let Some(reason) = reason
            && !self.reasons.iter().any(|(_, r)| *r == reason)
        {
            self.reasons.push((pattern.to_string(), reason));
        }
    }

    fn force(&mut self, pattern: &str, reason: String) {
        if !self.forced.iter().any(|p| p == pattern) {
            self.forced.push(pattern.to_string());
        }
        // The forced reason replaces the plain one for this pattern.
        self.reasons.retain(|(p, _)| p != pattern);
        self.push(pattern, Some(reason));
        // An "always" answer cannot make an uninspectable command safe.
        self.always.retain(|p| p != pattern);
    }
}

fn add_command(cmd: &Command, cwd: &Path, root: &Path, bash: &mut Ask, external: &mut Ask) {
    let text = command_text(cmd);
    let reason = cmd
        .context
        .clone()
        .unwrap_or_else(|| format!("`{}`", short(&text)));
    bash.push(&text, Some(reason));
    add_spellings(spellings(&cmd.words), bash);
    if let Some(why) = opaque_reason(cmd) {
        bash.force(&text, why);
    }
    if let Some(name) = cmd
        .assignments
        .iter()
        .map(|a| assigned_name(a))
        .find(|name| !is_safe_variable(name))
    {
        bash.force(
            &text,
            format!("it sets `{name}`, which can change what the program runs"),
        );
    }
    if let Some(word) = cmd.words.iter().find(|w| w.literal.is_none()) {
        // A word known only at run time may be any option (`git diff $x`
        // may be `--output=p`), so no rule can allow the command.
        bash.force(
            &text,
            format!("{} is known only when it runs", code(&short(&word.raw))),
        );
    }
    for path in touched_paths(unwrap(&cmd.words)) {
        add_external(&path, cwd, root, external);
    }
}

/// Adds deny-only spellings to the `bash` ask: templates (with [`HOLE`]s)
/// apart, and none that is already one of its patterns.
fn add_spellings(found: Vec<String>, bash: &mut Ask) {
    for spelling in found {
        if spelling.contains(HOLE) {
            push_unique(&mut bash.templates, spelling);
        } else if !bash.patterns.contains(&spelling) && !bash.spellings.contains(&spelling) {
            bash.spellings.push(spelling);
        }
    }
}

/// Options that name a file the command writes, per command: a read-only
/// verb (`git diff *` is offered as a broad "always") must not write a file
/// through `--output=FILE` unasked.
const OUTPUT_OPTIONS: &[(&str, &[&str])] = &[
    ("git", &["--output", "--output-directory"]),
    ("sort", &["-o", "--output"]),
    ("curl", &["-o", "--output"]),
    ("wget", &["-O", "--output-document"]),
];

/// Files a command writes through its arguments, like `>` does: `tee FILE...`
/// and the [`OUTPUT_OPTIONS`]. They need `edit` whatever the rule for the
/// command itself says.
fn add_argument_writes(cmd: &Command, cwd: &Path, root: &Path, edit: &mut Ask, external: &mut Ask) {
    let words = unwrap(&cmd.words);
    let Some(name) = words.first().and_then(base_name) else {
        return;
    };
    if name == "tee" {
        for target in words[1..].iter().filter(|w| !w.text().starts_with('-')) {
            add_write("tee", target, cwd, root, edit, external);
        }
        return;
    }
    let Some((_, options)) = OUTPUT_OPTIONS.iter().find(|(command, _)| *command == name) else {
        return;
    };
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        let text = word.text();
        for option in *options {
            if text == *option {
                if let Some(target) = rest.clone().next() {
                    add_write(option, target, cwd, root, edit, external);
                }
            } else if let Some(value) = text
                .strip_prefix(option)
                .and_then(|v| {
                    if option.starts_with("--") {
                        v.strip_prefix('=')
                    } else {
                        Some(v)
                    }
                })
                .filter(|v| !v.is_empty())
            {
                let target = Word {
                    raw: value.to_string(),
                    literal: word.literal.as_ref().map(|_| value.to_string()),
                };
                add_write(option, &target, cwd, root, edit, external);
            }
        }
    }
}

fn add_write(
    operator: &str,
    target: &Word,
    cwd: &Path,
    root: &Path,
    edit: &mut Ask,
    external: &mut Ask,
) {
    let Some(path) = &target.literal else {
        edit.force(
            &target.raw,
            format!(
                "`{operator}` writes to `{}`, known only when it runs",
                target.raw
            ),
        );
        return;
    };
    if path == "/dev/null" {
        return;
    }
    let resolved = resolve_path(cwd, Path::new(&expand_tilde(path)));
    let root_resolved = resolve_path(Path::new("/"), root);
    let shown = resolved.strip_prefix(&root_resolved).map_or_else(
        |_| resolved.display().to_string(),
        |rel| rel.display().to_string(),
    );
    edit.push(&shown, Some(format!("`{operator}` writes to {path}")));
    add_external(path, cwd, root, external);
}

fn add_external(path: &str, cwd: &Path, root: &Path, external: &mut Ask) {
    if path == "/dev/null" {
        return;
    }
    let resolved = resolve_path(cwd, Path::new(&expand_tilde(path)));
    if !is_external(root, &resolved) {
        return;
    }
    let dir = if resolved.is_dir() {
        resolved.as_path()
    } else {
        resolved.parent().unwrap_or(&resolved)
    };
    external.push(
        &format!("{}/*", dir.display()),
        Some(format!("{path} is outside the project")),
    );
}

fn expand_tilde(path: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    if path == "~" {
        home
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{home}/{rest}")
    } else {
        path.to_string()
    }
}

pub(super) fn short(text: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

/// Why `cmd` must always ask, if it must: its effect is not in its text.
fn opaque_reason(cmd: &Command) -> Option<String> {
    let first = cmd.words.first()?;
    let Some(name) = base_name(first) else {
        return Some(format!(
            "`{}` in the command position is known only when it runs",
            short(&first.raw)
        ));
    };
    let args: Vec<&str> = cmd.words[1..].iter().map(Word::text).collect();
    let has = |flag: &str| args.contains(&flag);
    let reason = |what: &str| Some(format!("`{name}` {what}"));
    match name {
        "eval" | "source" | "." | "alias" => reason("runs text cairn cannot inspect"),
        "xargs" => reason("runs commands built from its input"),
        "sudo" | "doas" | "su" => reason("runs a command with other privileges"),
        "env" if args.iter().any(|a| !a.starts_with('-') && !a.contains('=')) => {
            reason("runs a command cairn checks only loosely")
        }
        "find"
            if args
                .iter()
                .any(|a| matches!(*a, "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete")) =>
        {
            reason("with -exec/-delete runs or deletes what it finds")
        }
        "git"
            if has("-c")
                || args
                    .iter()
                    .any(|a| a.starts_with("--config-env") || a.starts_with("--exec-path")) =>
        {
            reason("with -c, --config-env or --exec-path can run configured commands")
        }
        "git" if args.iter().any(|a| matches!(*a, "difftool" | "mergetool")) => {
            reason("difftool and mergetool run the configured tool")
        }
        "git" if verifies_signatures(&args) => {
            reason("verifies signatures, which runs gpg (it writes ~/.gnupg)")
        }
        "trap" => reason("runs its text as code later"),
        _ if EVALUATING_BUILTINS.contains(&name) => {
            reason("evaluates a variable name or subscript as code")
        }
        "printf" if has("-v") => reason("with -v evaluates a variable name or subscript as code"),
        "test" | "[" if has("-v") || has("-R") => {
            reason("with -v evaluates a variable name or subscript as code")
        }
        "awk" | "gawk" | "mawk" | "nawk" | "busybox" => {
            reason("runs a program that can start commands (`system()`)")
        }
        "make" | "gmake"
            if args
                .iter()
                .any(|a| matches!(*a, "-" | "-f-" | "--file=-" | "--makefile=-")) =>
        {
            reason("reads its recipes, which run commands, from standard input")
        }
        _ if is_runner(name) => reason("runs a command cairn checks only loosely"),
        _ if INTERPRETERS.contains(&name) => {
            let code_flag = args.iter().any(|a| {
                a.starts_with('-') && !a.starts_with("--") && (a.contains('c') || a.contains('e'))
            });
            let reads_stdin = args.iter().all(|a| a.starts_with('-')) || cmd.stdin_is_heredoc;
            (code_flag || reads_stdin).then(|| format!("`{name}` runs code cairn cannot inspect"))
        }
        _ if WRAPPERS.contains(&name) => {
            let inner = unwrap(&cmd.words);
            (inner.len() < cmd.words.len() && !inner.is_empty())
                .then(|| Command {
                    words: inner.to_vec(),
                    context: None,
                    stdin_is_heredoc: cmd.stdin_is_heredoc,
                    assignments: Vec::new(),
                })
                .and_then(|inner| opaque_reason(&inner))
        }
        _ => None,
    }
}

/// Whether git's arguments make it check signatures: `--show-signature`,
/// `--verify-signatures`, a `%G` format placeholder, `verify-commit`,
/// `verify-tag`, `tag -v`. gpg then runs and creates its home.
fn verifies_signatures(args: &[&str]) -> bool {
    let subcommand = args.iter().find(|a| !a.starts_with('-'));
    args.iter().any(|a| {
        matches!(
            *a,
            "--show-signature" | "--verify-signatures" | "verify-commit" | "verify-tag"
        ) || a.contains("%G")
    }) || (subcommand == Some(&"tag") && args.iter().any(|a| matches!(*a, "-v" | "--verify")))
}

/// Path arguments of a file-touching command (after unwrapping).
fn touched_paths(words: &[Word]) -> Vec<String> {
    let Some(name) = words.first().and_then(base_name) else {
        return Vec::new();
    };
    let args = &words[1..];
    let mut paths = Vec::new();
    if FILE_COMMANDS.contains(&name) {
        let mut options_done = false;
        for word in args {
            let text = word.text();
            if text == "--" {
                options_done = true;
            } else if options_done || !text.starts_with('-') {
                paths.push(text.to_string());
            }
        }
        if name == "cd" && args.is_empty() {
            paths.push("~".to_string());
        }
    }
    // `tar -C dir`, `git -C dir`, `make -C dir`: work in another directory.
    for pair in args.windows(2) {
        if pair[0].text() == "-C" || pair[0].text() == "--directory" {
            paths.push(pair[1].text().to_string());
        }
    }
    paths
}

/// `verb *` for each command when every command of the line is a read-only
/// verb of [`BROAD_VERBS`] with no redirection; otherwise nothing.
fn broad_offer(parts: &[Part]) -> Vec<String> {
    let mut broad = Vec::new();
    for part in parts {
        let cmd = match part {
            Part::Run(cmd) => cmd,
            Part::Text(_) => continue,
            _ => return Vec::new(),
        };
        if cmd.words.iter().any(|w| w.literal.is_none()) || !cmd.assignments.is_empty() {
            return Vec::new();
        }
        let text = joined(&cmd.words);
        let Some(verb) = BROAD_VERBS
            .iter()
            .filter(|verb| text == **verb || text.starts_with(&format!("{verb} ")))
            .max_by_key(|verb| verb.len())
        else {
            return Vec::new();
        };
        let pattern = if *verb == "pwd" {
            (*verb).to_string()
        } else {
            format!("{verb} *")
        };
        if !broad.contains(&pattern) {
            broad.push(pattern);
        }
    }
    broad
}
