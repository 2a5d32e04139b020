//! Whether a bash command line surely writes no file: then the step that ran
//! it needs no "after" snapshot (see `session::snapshot_step`).
//!
//! The command line is model output, and a wrong "cannot write" is a change
//! `/undo` cannot take back, so the answer is yes only for a small allow-list
//! of programs whose arguments cannot make them write, plus a few checked
//! ones (`find` without its writing actions, `git` read verbs, `sed -n Np`).
//! Anything else says "may write": a redirection to a file, a substitution,
//! an expansion, an assignment, a function, a loop, an unknown program, a
//! program given by path. Parsing is `shell`'s (tree-sitter bash).

use tree_sitter::{Node, Parser};

use super::shell::{self, Command, Part, Word};

/// Programs no argument makes write a file (`printf -v` sets a variable,
/// `cd` moves only the commands after it, which are checked themselves).
const ANY_ARGUMENTS: &[&str] = &[
    "basename",
    "cat",
    "cd",
    "cksum",
    "cmp",
    "column",
    "comm",
    "cut",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "expand",
    "false",
    "fgrep",
    "fold",
    "grep",
    "head",
    "hexdump",
    "id",
    "join",
    "jq",
    "ls",
    "md5sum",
    "nl",
    "od",
    "paste",
    "printenv",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "rev",
    "seq",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "stat",
    "tac",
    "tail",
    "test",
    "tr",
    "true",
    "type",
    "uname",
    "wc",
    "which",
    "whoami",
    "[",
];

/// `find` actions that delete, run or write.
const FIND_WRITES: &[&str] = &[
    "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// `git` verbs that only read the working tree.
const GIT_READS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "shortlog",
    "ls-files",
    "rev-parse",
];

/// `git` options that write a file or run a program named in the config.
const GIT_WRITES: &[&str] = &["--output", "--ext-diff", "--textconv", "-o"];

/// Syntax that only quotes, lists, pipes or redirects; any other node
/// (expansion, substitution, assignment, function, loop, test, declaration)
/// makes the line "may write".
const PLAIN_SYNTAX: &[&str] = &[
    "program",
    "comment",
    "list",
    "pipeline",
    "subshell",
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
    "file_redirect",
    "file_descriptor",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
];

/// True only when `command`, run by a `bash` that finds programs through
/// `search_path` (the `PATH` it inherits), surely changes no file of the
/// project at `root`. A search path with a relative entry or one inside the
/// project could find an `ls` the model wrote itself: then nothing is read-only.
pub fn cannot_write(command: &str, search_path: &std::ffi::OsStr, root: &std::path::Path) -> bool {
    let real = |path: &std::path::Path| path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let root = real(root);
    std::env::split_paths(search_path)
        .all(|dir| dir.is_absolute() && !dir.starts_with(&root) && !real(&dir).starts_with(&root))
        && line_cannot_write(command)
}

/// True only when the command line surely changes no file.
fn line_cannot_write(command: &str) -> bool {
    if !plain_syntax(command) {
        return false;
    }
    let Ok(parts) = shell::parse(command) else {
        return false;
    };
    !parts.is_empty()
        && parts.iter().all(|part| match part {
            Part::Run(cmd) => runs_read_only(cmd),
            Part::Write { target, .. } => target.literal.as_deref() == Some("/dev/null"),
            Part::Text(_) => true,
            Part::Assign(_) | Part::Opaque { .. } => false,
        })
}

fn plain_syntax(command: &str) -> bool {
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        return false;
    }
    let Some(tree) = parser.parse(command, None) else {
        return false;
    };
    let root = tree.root_node();
    !root.has_error() && all_plain(root)
}

fn all_plain(node: Node<'_>) -> bool {
    if node.is_named() && !PLAIN_SYNTAX.contains(&node.kind()) {
        return false;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().all(all_plain)
}

fn runs_read_only(cmd: &Command) -> bool {
    if !cmd.assignments.is_empty() || cmd.words.iter().any(|w| w.literal.is_none()) {
        return false;
    }
    let Some((name, args)) = cmd.words.split_first() else {
        return false;
    };
    let name = name.text();
    if name.contains('/') {
        return false;
    }
    if ANY_ARGUMENTS.contains(&name) {
        return true;
    }
    // A glob could expand to a writing flag (a file named `-delete`).
    if args.iter().any(|w| has_glob(&w.raw)) {
        return false;
    }
    let args: Vec<&str> = args.iter().map(Word::text).collect();
    match name {
        "find" => !args.iter().any(|a| FIND_WRITES.contains(a)),
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        "git" => git_reads(&args),
        "sed" => sed_prints(&args),
        _ => false,
    }
}

fn git_reads(args: &[&str]) -> bool {
    let Some((verb, rest)) = args.split_first() else {
        return false;
    };
    GIT_READS.contains(verb)
        && !rest.iter().any(|arg| {
            GIT_WRITES
                .iter()
                .any(|flag| *arg == *flag || arg.starts_with(&format!("{flag}=")))
                || (arg.starts_with("-o") && !arg.starts_with("--"))
        })
}

/// `sed` printing lines: `-n`, then `N,Mp`-style scripts, then files.
fn sed_prints(args: &[&str]) -> bool {
    let mut script_seen = false;
    let mut expect_script = false;
    for arg in args {
        if expect_script {
            if !is_print_script(arg) {
                return false;
            }
            (script_seen, expect_script) = (true, false);
        } else if matches!(*arg, "-n" | "--quiet" | "--silent" | "-E" | "-r") {
        } else if *arg == "-e" {
            expect_script = true;
        } else if arg.starts_with('-') {
            return false;
        } else if !script_seen {
            if !is_print_script(arg) {
                return false;
            }
            script_seen = true;
        }
    }
    script_seen && !expect_script
}

/// `12p`, `3,40p`, `$p`, `5,$p`.
fn is_print_script(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let address = |a: &str| a == "$" || (!a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()));
    match range.split_once(',') {
        Some((from, to)) => address(from) && address(to),
        None => address(range),
    }
}

/// A `*`, `?` or `[` outside quotes, or a brace expansion.
fn has_glob(raw: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in raw.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '*' | '?' | '[' | '{' if !single && !double => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::line_cannot_write as cannot_write;
    use std::ffi::OsStr;
    use std::path::Path;

    /// A `PATH` that could find a program the model wrote makes every line
    /// "may write", even `ls`.
    #[test]
    fn a_search_path_into_the_project_or_relative_trusts_no_line() {
        let root = Path::new("/p");
        let check = |path: &str| super::cannot_write("ls", OsStr::new(path), root);
        assert!(check("/usr/local/bin:/usr/bin:/bin"));
        assert!(!check("/usr/bin:."));
        assert!(!check("bin:/usr/bin"));
        assert!(
            !check("/usr/bin::/bin"),
            "an empty entry is the current directory"
        );
        assert!(!check("/p/node_modules/.bin:/usr/bin"));
        assert!(!check("/p:/usr/bin"));
    }

    /// Lines that write through the shell itself: redirections,
    /// substitutions, a writer listed after a reader.
    const SHELL_WRITES: &[&str] = &[
        "cat x > y",
        "cat x >> y",
        "ls &> out",
        "echo hi >| f",
        "echo $(rm -rf a)",
        "echo `rm -rf a`",
        "echo \"$(rm -rf a)\"",
        "cat <(rm a)",
        "ls; touch b",
        "ls\ntouch b",
        "ls && rm -rf a",
        "ls || rm a",
        "ls & rm a",
    ];

    /// Writing programs, readers given writing flags, and what hides the
    /// program that runs (paths, wrappers, interpreters, assignments,
    /// functions, control flow, expansions, globs) or cannot be read.
    const PROGRAM_WRITES: &[&str] = &[
        "find . -delete",
        "find . -name x -exec rm {} ;",
        "find . -execdir rm {} +",
        "find . -fprint out",
        "find . -ok rm {} ;",
        "find . *",
        "find . -name x -fls list",
        "git checkout .",
        "git restore a",
        "git stash",
        "git -c alias.status='!rm a' status",
        "git -C sub checkout .",
        "git st",
        "git diff --output=patch",
        "git log --output patch",
        "git diff -opatch",
        "git diff --ext-diff",
        "git show *",
        "git",
        "sed -i s/a/b/ f",
        "sed --in-place s/a/b/ f",
        "sed -n 'w out' f",
        "sed -n '1,5p;w out' f",
        "sed s/a/b/w f",
        "sed -n 1e f",
        "sed -e",
        "xargs rm",
        "ls | xargs rm",
        "awk '{print > \"f\"}' x",
        "awk 'BEGIN{system(\"rm a\")}'",
        "grep x f | tee out",
        "cd d && make",
        "command rm a",
        "\\rm a",
        "r\\m a",
        "'rm' a",
        "\"rm\" a",
        "builtin rm a",
        "exec rm a",
        "env rm a",
        "alias ls=rm",
        "alias ls=rm; ls a",
        "python -c 'open(\"f\",\"w\")'",
        "python3 script.py",
        "sh -c 'rm a'",
        "bash -c 'echo x > new.txt'",
        "eval 'rm a'",
        "source ./x.sh",
        ". ./x.sh",
        "./ls",
        "/tmp/ls",
        "bin/cat x",
        "X=1 ls",
        "PATH=. ls",
        "PATH=.:$PATH; ls",
        "export PATH=.",
        "declare -x PATH=.",
        "unset PATH",
        "f() { rm a; }; f",
        "ls() { rm a; }; ls",
        "for f in a; do rm $f; done",
        "if true; then rm a; fi",
        "while false; do :; done",
        "[[ -f a ]] && rm a",
        "ls $DIR",
        "ls ${DIR:=x}",
        "echo $((x=1))",
        "cat <<EOF\n$(rm a)\nEOF",
        "cat <<EOF > out\nhi\nEOF",
        "rg --pre rm x",
        "rg --pre=./evil x",
        "rg x *",
        "sort -o out in",
        "uniq in out",
        "tree -o out",
        "file -C",
        "tee out",
        "touch a",
        "mkdir d",
        "cp a b",
        "mv a b",
        "make",
        "cargo build",
        "npm install",
        "date -s 2020-01-01",
        "hostname evil",
        "",
        "   ",
        "# only a comment",
        "echo $(",
        "ls 'unterminated",
        "time rm a",
        "nohup rm a",
        "(cd d; rm a)",
        "{ rm a; }",
        "! rm a",
        "ls > /dev/null; rm a",
        "echo x > /dev/null/../../tmp/f",
        "echo x >&2 > f",
        "cat < in > out",
    ];

    /// Model output decides whether a step's changes are recorded: every
    /// line that could change a file must be taken as writing.
    #[test]
    fn every_line_that_could_write_is_taken_as_writing() {
        for line in SHELL_WRITES.iter().chain(PROGRAM_WRITES) {
            assert!(!cannot_write(line), "taken as read-only: {line:?}");
        }
    }

    #[test]
    fn plain_reads_take_no_snapshot() {
        let reading = [
            "ls",
            "ls -la src",
            "cat README.md",
            "cat src/*.rs",
            "head -n 20 a.rs && tail -5 b.rs",
            "wc -l a b",
            "grep -rn 'fn main' src",
            "grep -c x f | wc -l",
            "rg -n 'snapshot' src",
            "rg --files",
            "git status",
            "git status --short",
            "git log --oneline -5",
            "git diff HEAD~1 -- src",
            "git show HEAD:README.md",
            "pwd",
            "echo hello",
            "echo 'a > b'",
            "find . -name '*.rs'",
            "find src -type f -newer Cargo.toml",
            "sed -n '10,20p' src/main.rs",
            "sed -n 5p a",
            "ls 2>/dev/null",
            "grep x f 2>&1 | head",
            "cd src && ls",
            "(cd src; ls)",
            "cat <<'EOF'\n$(rm a)\nEOF",
        ];
        for line in reading {
            assert!(cannot_write(line), "taken as writing: {line:?}");
        }
    }
}
