//! The spellings a `deny` rule is matched against for one command: as
//! written, without the executable's directory, through wrappers and
//! runners (`env`, `sudo`, `setsid`, `taskset`, ...), inside code given as
//! text (`sh -c`, `eval`, `env -S`, `trap`, `find -exec`), inside any
//! literal word or input text that reads as code (`vim -c '!rm …'`), with
//! flag clusters reordered and long options (and their getopt
//! abbreviations) read as short ones; and templates, whose [`HOLE`]s stand
//! for words known only at run time.
//!
//! Deny only: nothing here ever allows. Pure. Key fns: [`spellings`],
//! [`could_match`].

use super::shell::{self, Part, Word};

/// Prefixes that only change how (not what) the next command runs; the
/// inner command is checked too.
pub(super) const WRAPPERS: &[&str] = &[
    "env", "command", "nice", "timeout", "nohup", "time", "builtin", "exec", "stdbuf",
];

pub(super) fn joined(words: &[Word]) -> String {
    words.iter().map(Word::text).collect::<Vec<_>>().join(" ")
}

/// The executable's name without its directory (`/bin/rm` is `rm`).
pub(super) fn base_name(word: &Word) -> Option<&str> {
    let name = word.literal.as_deref()?;
    Some(name.rsplit('/').next().unwrap_or(name))
}

/// `words` with leading wrappers (and their options) removed.
pub(super) fn unwrap(words: &[Word]) -> &[Word] {
    let mut rest = words;
    while let Some(name) = rest.first().and_then(base_name) {
        if !WRAPPERS.contains(&name) {
            break;
        }
        let mut i = 1;
        while let Some(word) = rest.get(i) {
            let text = word.text();
            let is_option = text.starts_with('-')
                || (name == "env" && text.contains('='))
                || (name == "timeout" && text.starts_with(|c: char| c.is_ascii_digit()));
            if !is_option {
                break;
            }
            // Options taking a separate value.
            let takes_value = matches!(
                (name, text),
                (
                    "env",
                    "-u" | "-C" | "-S" | "--chdir" | "--unset" | "--split-string"
                ) | ("nice", "-n")
                    | ("timeout", "-s" | "-k")
                    | ("exec", "-a")
            ) || (name == "stdbuf" && text.len() == 2);
            i += if takes_value { 2 } else { 1 };
        }
        rest = rest.get(i..).unwrap_or(&[]);
    }
    rest
}

/// Stands in a template for a word known only at run time: it may become
/// any text, spaces included (a hole in the command position could be `rm`,
/// one among the flags could be `-rf`).
pub const HOLE: char = '\u{1}';

/// Commands that run another command given in their arguments, with option
/// grammars too varied to unwrap: they always ask, and for deny rules every
/// later word is tried as the start of the command (`taskset 0x1 rm -rf x`)
/// and every argument holding a space is read as code (`script -c '...'`).
pub(super) const RUNNERS: &[&str] = &[
    "setsid",
    "ionice",
    "taskset",
    "flock",
    "chrt",
    "unshare",
    "script",
    "strace",
    "ltrace",
    "coproc",
    "watch",
    "chroot",
    "nsenter",
    "firejail",
    "systemd-run",
    "parallel",
    "su",
    "runuser",
    "caffeinate",
    "prlimit",
    "numactl",
    "cgexec",
    "faketime",
    "fakeroot",
    "proot",
    "eatmydata",
    "catchsegv",
    "valgrind",
    "gdb",
    "perf",
    "trap",
    "setpriv",
    "setarch",
    "linux32",
    "linux64",
    "x86_64",
    "i386",
    "i686",
    "dbus-run-session",
    "tmux",
    "screen",
    "dtach",
    "sg",
    "pkexec",
    "runcon",
    "chpst",
    "bwrap",
    "torsocks",
    "proxychains",
    "proxychains4",
    "unbuffer",
    "rlwrap",
    "dumb-init",
    "tini",
    "nocache",
    "cpulimit",
    "chronic",
    "ifne",
    "sem",
    "busybox",
    "toybox",
    "xvfb-run",
];

/// Whether `name` runs a command given in its arguments: a [`RUNNERS`] entry
/// or the dynamic loader (`/lib64/ld-linux-x86-64.so.2 /bin/rm ...`).
pub(super) fn is_runner(name: &str) -> bool {
    RUNNERS.contains(&name) || (name.starts_with("ld") && name.contains(".so"))
}

/// Most words of a runner tried as the start of its command, for deny
/// rules: bounds the spellings of a long or nested runner line.
const MAX_RUNNER_STARTS: usize = 8;

/// Like [`unwrap`], and also through commands that run their arguments as
/// a command (`sudo`, `doas`, `xargs`): for deny rules only, since these
/// still always ask.
fn unwrap_for_deny(words: &[Word]) -> &[Word] {
    let mut rest = unwrap(words);
    while let Some(name) = rest.first().and_then(base_name) {
        if !matches!(name, "sudo" | "doas" | "xargs") {
            break;
        }
        let skip = rest[1..]
            .iter()
            .take_while(|w| w.text().starts_with('-'))
            .count();
        rest = unwrap(&rest[1 + skip..]);
    }
    rest
}

/// Deepest nesting of code given as text (`bash -c "eval 'rm …'"`) whose
/// commands are read for deny rules.
const MAX_CODE_DEPTH: usize = 4;

/// The spellings of the commands inside code given as text: the argument of
/// `sh -c`/`bash -c` and the words of `eval`, so a denied command cannot
/// hide in a string.
fn code_spellings(words: &[Word], depth: usize) -> Vec<String> {
    let Some(name) = words.first().and_then(base_name) else {
        return Vec::new();
    };
    if depth >= MAX_CODE_DEPTH {
        return Vec::new();
    }
    let is_shell = matches!(name, "bash" | "sh" | "zsh" | "dash" | "ksh");
    if (name == "eval" || is_shell) && words[1..].iter().any(|w| w.literal.is_none()) {
        // `eval "$(...)"`, `sh -c "$x"`: the code is known only when it
        // runs, so any deny rule may apply.
        return vec![HOLE.to_string()];
    }
    let mut out = Vec::new();
    if (is_shell && shell_reads_stdin(words)) || rebinds_or_reads_code(name, &words[1..]) {
        // Code from stdin or a rebound name: it may be anything.
        out.push(HOLE.to_string());
    }
    if name == "find" {
        for command in find_commands(&words[1..]) {
            out.extend(spellings_at(command, depth + 1));
        }
    }
    for word in &words[1..] {
        // `vim -c '!rm -rf x'`, `ssh -o ProxyCommand='rm -rf x'`.
        if word.literal.is_some() {
            out.extend(text_spellings_at(word.text(), depth + 1, true));
        }
    }
    let runs_any = match name {
        "awk" | "gawk" | "mawk" | "nawk" => words[1..]
            .iter()
            .any(|w| w.text().contains("system") || w.text().contains('|')),
        "make" | "gmake" => words[1..]
            .iter()
            .any(|w| matches!(w.text(), "-" | "-f-" | "--file=-" | "--makefile=-")),
        _ => false,
    };
    if runs_any {
        // A program that starts commands cairn cannot see.
        out.push(HOLE.to_string());
    }
    if is_runner(name) || name == "env" {
        // `env -S 'rm -rf x'`, `script -c '...'`, `trap '...' EXIT`.
        for word in words[1..]
            .iter()
            .filter(|w| w.text().contains(char::is_whitespace))
        {
            let text = word.text();
            let code = match text.strip_prefix("--split-string=") {
                Some(code) => code,
                None if text.starts_with('-') && !text.starts_with("--") => &text[2..],
                None => text,
            };
            out.extend(parsed_spellings(code, depth));
        }
        for start in 1..words.len().min(MAX_RUNNER_STARTS + 1) {
            out.extend(spellings_at(&words[start..], depth + 2));
        }
        if name == "env" {
            return out;
        }
    }
    let code = match name {
        "eval" => Some(
            words[1..]
                .iter()
                .map(Word::text)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "bash" | "sh" | "zsh" | "dash" | "ksh" => words
            .iter()
            .position(|w| w.text().starts_with('-') && w.text().contains('c'))
            .and_then(|at| words.get(at + 1))
            .map(|w| w.text().to_string()),
        _ => None,
    };
    if let Some(code) = code {
        out.extend(parsed_spellings(&code, depth));
    }
    out
}

/// The spellings of every command in `code`; a hole when cairn cannot read
/// it, so that it stays denied under any deny rule.
fn parsed_spellings(code: &str, depth: usize) -> Vec<String> {
    let Ok(parts) = shell::parse(code) else {
        return vec![HOLE.to_string()];
    };
    let mut out = Vec::new();
    for part in parts {
        match part {
            Part::Run(cmd) => out.extend(spellings_at(&cmd.words, depth + 1)),
            Part::Opaque { .. } => out.push(HOLE.to_string()),
            Part::Text(text) => out.extend(text_spellings_at(&text, depth + 1, false)),
            Part::Write { .. } | Part::Assign(_) => {}
        }
    }
    out
}

/// Prefixes under which programs take a shell command in an option or on
/// their input: vim's `!cmd` and `+!cmd`, sqlite's `.shell`/`.system`,
/// tar's `exec=`, mutt's `:!`.
const CODE_PREFIXES: &[&str] = &["+!", ":!", "!", ".shell ", ".system ", "exec="];

/// Most `=` signs of one word whose right-hand sides are read as code.
const MAX_VALUE_SPLITS: usize = 3;

/// Most lines of one input text read as code.
const MAX_TEXT_LINES: usize = 200;

/// The spellings of the commands a literal text would be if a program ran
/// it as shell code: the text itself, what follows each of its first `=`
/// signs (`ProxyCommand=rm …`, `--checkpoint-action=exec=rm …`), each line,
/// and each of these without a [`CODE_PREFIXES`] prefix. Text that does not
/// parse, or parses into nothing checkable, adds nothing: this only widens
/// what a deny rule sees, never what runs unasked, so a false reading can
/// only deny more, and only when a deny rule matches it. Templates that
/// start with a [`HOLE`] (`echo '$x'`) are dropped: they would deny every
/// quoted variable under any deny rule.
pub fn text_spellings(text: &str) -> Vec<String> {
    text_spellings_at(text, 0, false)
}

/// `in_word`: the text is an argument (an option's code, `sed '1e …'`),
/// not an input text (a here-document a script is written from), so a
/// word of it known only when it runs counts as any command.
fn text_spellings_at(text: &str, depth: usize, in_word: bool) -> Vec<String> {
    if depth >= MAX_CODE_DEPTH {
        return Vec::new();
    }
    let mut candidates: Vec<&str> = vec![text];
    candidates.extend(text.lines().take(MAX_TEXT_LINES).filter(|l| *l != text));
    let mut with_values = Vec::new();
    for candidate in candidates {
        with_values.push(candidate);
        let splits = candidate.match_indices('=').take(MAX_VALUE_SPLITS);
        with_values.extend(splits.map(|(at, _)| &candidate[at + 1..]));
    }
    let mut codes: Vec<&str> = Vec::new();
    for candidate in with_values {
        let candidate = candidate.trim_start();
        codes.push(candidate);
        if let Some(rest) = CODE_PREFIXES.iter().find_map(|p| candidate.strip_prefix(p)) {
            codes.push(rest);
        }
    }
    codes.retain(|code| code.contains(char::is_whitespace));
    codes.dedup();
    let mut out = embedded_spellings(text, in_word);
    for code in codes {
        let Ok(parts) = shell::parse(code) else {
            continue;
        };
        for part in parts {
            match part {
                Part::Run(cmd) => out.extend(
                    spellings_at(&cmd.words, depth + 1)
                        .into_iter()
                        .filter(|s| !s.starts_with(HOLE)),
                ),
                Part::Text(text) => out.extend(text_spellings_at(&text, depth + 1, false)),
                Part::Write { .. } | Part::Assign(_) | Part::Opaque { .. } => {}
            }
        }
    }
    out
}

/// Characters that close a command written inside a text: a bracket of the
/// program's own syntax (`system("rm -rf x")` ends at `)`), a shell
/// operator, a line end. Quotes do not: they are dropped from the words.
const EMBED_ENDS: &[char] = &[
    '`', '(', ')', '[', ']', '{', '}', ';', '|', '&', '<', '>', '\n',
];

/// Spellings of a blank inside code text that the program or shell running
/// it turns into a word break (`rm${IFS}-rf`, `rm\x20-rf`, `rm\ -rf`).
const BLANK_SPELLINGS: &[&str] = &[
    "${IFS}", "$IFS", "\\x20", "\\o040", "\\040", "\\ ", "\\t", "\\x09", "\\011",
];

/// Most words of a command read from inside a text: enough for its name
/// and flags, which is what deny rules match.
const MAX_EMBED_WORDS: usize = 16;

/// The commands a text could hold away from its start, where a program's
/// own prefix or delimiter leads into shell code: `sed '1e rm …'`,
/// `s/.*/rm …/e`, `gdb -ex 'shell rm …'`, `vim -c 'call system("rm …")'`,
/// `sqlite3 '.sh rm …'`, and a value glued to its option (`tar -I'rm …'`,
/// `script -qc'rm …'`). Every word start is tried (after any character
/// that is not a letter, digit or `_`, and every position inside an
/// option's first letters), each read up to the next [`EMBED_ENDS`]
/// character: linear in the text, and it can only add deny spellings.
fn embedded_spellings(text: &str, holes: bool) -> Vec<String> {
    let blanked = blank_out(text);
    let text = blanked.as_str();
    let mut out = Vec::new();
    if holes && known_only_when_run(text.split_whitespace().next().unwrap_or("")) {
        out.push(HOLE.to_string());
    }
    let mut previous: Option<char> = None;
    let mut token_start = 0;
    for (at, c) in text.char_indices() {
        if previous.is_some_and(char::is_whitespace) {
            token_start = at;
        }
        let after_boundary = previous.is_some_and(|p| !(p.is_alphanumeric() || p == '_'));
        let glued = text[token_start..].starts_with('-') && at >= token_start + 2;
        previous = Some(c);
        if !(after_boundary || glued)
            || !(c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '$' | '`'))
        {
            continue;
        }
        let rest = &text[at..];
        if holes && known_only_when_run(rest.split_whitespace().next().unwrap_or("")) {
            // `r$()m -rf x`, `${x:-rm}`, `/bin/r[m]`: a command named only
            // when it runs may be any command, as at the top level.
            out.push(HOLE.to_string());
            continue;
        }
        if c == '$' || c == '`' {
            continue;
        }
        let end = rest.find(EMBED_ENDS).unwrap_or(rest.len());
        let words: Vec<Word> = rest[..end]
            .split_whitespace()
            .take(MAX_EMBED_WORDS)
            // Quotes and escapes inside the code (`"rm" -rf`, `r''m`,
            // `\"rm\"`, `r\m`) are removed by whatever runs it.
            .map(|w| w.replace(['"', '\'', '\\'], ""))
            .filter(|w| !w.is_empty())
            .map(|w| Word {
                raw: w.clone(),
                literal: Some(w),
            })
            .collect();
        if words.len() >= 2 {
            out.extend(plain_spellings(words));
        }
    }
    out
}

/// The spellings of literal `words` as one command: as written, without
/// the executable's directory, and with its flag clusters reordered. What a
/// wrapper or a shell string would add is not needed here: every later word
/// start of the text is read as a command of its own (`sudo rm …` gives
/// `rm …`, `sh -c 'rm …'` gives `rm …` after the quote), and reading them
/// all in full made a 64 KB here-document cost 175 ms.
fn plain_spellings(mut words: Vec<Word>) -> Vec<String> {
    if let Some(name) = words.first().and_then(base_name).map(str::to_string) {
        words[0] = Word {
            raw: name.clone(),
            literal: Some(name),
        };
    }
    let mut out = vec![joined(&words)];
    out.extend(flag_orders(&words));
    out
}

/// `text` with each [`BLANK_SPELLINGS`] entry, and each `${IFS...}` with
/// an operator (`${IFS%?}`), read as a blank.
fn blank_out(text: &str) -> String {
    let mut out = text.to_string();
    for blank in BLANK_SPELLINGS {
        if out.contains(blank) {
            out = out.replace(blank, " ");
        }
    }
    while let Some(start) = out.find("${IFS") {
        let end = out[start..]
            .find('}')
            .map_or(out.len(), |end| start + end + 1);
        out.replace_range(start..end, " ");
    }
    out
}

/// Whether a word of code text names something only a shell expansion
/// decides: a command substitution, a `${...}` expansion, `$@`/`$*`, or a
/// pattern in a path.
fn known_only_when_run(word: &str) -> bool {
    ["$(", "${", "$@", "$*", "`"]
        .iter()
        .any(|mark| word.contains(mark))
        // `[` and `?` only: `/var/log/*.log` is an ordinary argument.
        || (word.starts_with('/') && word.contains(['[', '?']))
}

/// Whether a shell invoked with `words` reads its code from standard input
/// (a pipe, a here-string, `< <(...)`): no `-c` and no script operand.
fn shell_reads_stdin(words: &[Word]) -> bool {
    let mut args = words[1..].iter().map(Word::text);
    while let Some(arg) = args.next() {
        match arg {
            "--" => return args.next().is_none(),
            "-s" => return true,
            "-o" | "-O" | "+o" | "+O" | "--rcfile" | "--init-file" => {
                args.next();
            }
            _ if arg.starts_with('-') && !arg.starts_with("--") && arg.contains('c') => {
                return false;
            }
            _ if arg.starts_with(['-', '+']) => {}
            _ => return false,
        }
    }
    true
}

/// Commands after which names the line runs are unknowable from its text:
/// `hash -p PATH NAME` and `alias NAME=...` rebind a name, `mapfile -C`
/// runs a callback; and `source`/`.` reading stdin, a pipe or a process
/// substitution runs code that is not in the line.
fn rebinds_or_reads_code(name: &str, args: &[Word]) -> bool {
    let short_flag = |letter: char| {
        args.iter().any(|w| {
            let t = w.text();
            t.starts_with('-') && !t.starts_with("--") && t.contains(letter)
        })
    };
    match name {
        "hash" => short_flag('p'),
        "mapfile" | "readarray" => short_flag('C'),
        "alias" => args
            .iter()
            .any(|w| w.text().contains('=') || w.literal.is_none()),
        "source" | "." => args.first().is_some_and(|file| {
            file.literal.is_none()
                || matches!(file.text(), "-" | "/dev/stdin")
                || file.text().starts_with("/dev/fd/")
                || file.text().starts_with("/proc/self/fd/")
        }),
        _ => false,
    }
}

/// The commands `find` runs with `-exec`/`-execdir`/`-ok`/`-okdir`, each up
/// to its `;` or `+`.
fn find_commands(args: &[Word]) -> Vec<&[Word]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(args[i].text(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let len = args[start..]
                .iter()
                .position(|w| matches!(w.text(), ";" | "+"))
                .unwrap_or(args.len() - start);
            out.push(&args[start..start + len]);
            i = start + len;
        }
        i += 1;
    }
    out
}

/// Every spelling a deny rule should see for the command: as written, with
/// the executable's directory dropped, with wrappers removed, and with its
/// short-flag clusters split, merged and reordered.
pub fn spellings(words: &[Word]) -> Vec<String> {
    spellings_at(words, 0)
}

fn spellings_at(words: &[Word], depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut variants = vec![words.to_vec()];
    let inner = unwrap_for_deny(words);
    if !inner.is_empty() && inner.len() < words.len() {
        variants.push(inner.to_vec());
    }
    out.extend(code_spellings(inner, depth));
    if inner.len() < words.len() {
        // `env -S 'rm -rf x'`: the code is an option of the wrapper.
        out.extend(code_spellings(words, depth));
    }
    for variant in variants {
        if variant.iter().any(|w| w.literal.is_none()) {
            out.push(template(&variant));
            continue;
        }
        let mut variant = variant;
        if let Some(name) = variant.first().and_then(base_name).map(str::to_string) {
            variant[0] = Word {
                raw: name.clone(),
                literal: Some(name),
            };
        }
        out.push(joined(&variant));
        out.extend(flag_orders(&variant));
    }
    out.dedup();
    out
}

/// The command with everything from its first option or dynamic word on
/// replaced by one [`HOLE`]: `rm -f $'-r' x` is `rm ◆`, since the dynamic
/// word may be any flags and they may come in any order.
fn template(words: &[Word]) -> String {
    let mut out: Vec<String> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        match &word.literal {
            Some(text) if !text.starts_with('-') => {
                let text = if i == 0 {
                    text.rsplit('/').next().unwrap_or(text)
                } else {
                    text
                };
                out.push(text.to_string());
            }
            _ => break,
        }
    }
    out.push(HOLE.to_string());
    out.join(" ")
}

/// Whether some value of the [`HOLE`]s of `template` makes a text that
/// `pattern` (a rule: `*` any text, `?` one character) matches: both are
/// patterns over the same text, and this asks whether they share one.
pub fn could_match(template: &str, pattern: &str) -> bool {
    let t: Vec<char> = template.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    // seen[i][j]: the suffixes t[i..] and p[j..] were already tried.
    let mut seen = vec![vec![false; p.len() + 1]; t.len() + 1];
    let mut stack = vec![(0, 0)];
    while let Some((i, j)) = stack.pop() {
        if seen[i][j] {
            continue;
        }
        seen[i][j] = true;
        if i == t.len() && j == p.len() {
            return true;
        }
        if i < t.len() && t[i] == HOLE {
            // The hole ends here, or takes the pattern's next character.
            stack.push((i + 1, j));
            if j < p.len() {
                stack.push((i, j + 1));
            }
        }
        if j < p.len() && p[j] == '*' {
            stack.push((i, j + 1));
            if i < t.len() {
                stack.push((i + 1, j));
            }
        }
        if i < t.len()
            && j < p.len()
            && t[i] != HOLE
            && p[j] != '*'
            && (p[j] == '?' || p[j] == t[i])
        {
            stack.push((i + 1, j + 1));
        }
    }
    false
}

/// Most letters of a flag cluster whose orderings are all generated; more
/// are matched only in sorted order (5 letters is already 120 orders).
const MAX_PERMUTED_FLAGS: usize = 4;

fn flag_orders(words: &[Word]) -> Vec<String> {
    let Some((name, args)) = words.split_first() else {
        return Vec::new();
    };
    let mut letters: Vec<char> = Vec::new();
    let mut operands: Vec<&str> = Vec::new();
    let mut options_done = false;
    for arg in args {
        let text = arg.text();
        let is_cluster = !options_done
            && text.len() > 1
            && text.starts_with('-')
            && text[1..].chars().all(|c| c.is_ascii_alphabetic());
        if text == "--" {
            options_done = true;
            operands.push(text);
        } else if is_cluster || (!options_done && short_flag(name.text(), text).is_some()) {
            let cluster: Vec<char> = match short_flag(name.text(), text) {
                Some(c) => vec![c],
                None => text[1..].chars().collect(),
            };
            for c in cluster {
                let c = short_flag(name.text(), &format!("-{c}")).unwrap_or(c);
                if !letters.contains(&c) {
                    letters.push(c);
                }
            }
        } else {
            operands.push(text);
        }
    }
    if letters.is_empty() {
        return Vec::new();
    }
    letters.sort_unstable();
    let orders = if letters.len() <= MAX_PERMUTED_FLAGS {
        permutations(&letters)
    } else {
        vec![letters]
    };
    let tail = operands.join(" ");
    let mut out = Vec::new();
    for order in orders {
        // Every split of the cluster: `-rfv`, `-rf -v`, `-r -f -v`, so a
        // rule naming some of the flags together still matches.
        for merged in 1..=order.len() {
            let mut flags = vec![format!("-{}", order[..merged].iter().collect::<String>())];
            flags.extend(order[merged..].iter().map(|c| format!("-{c}")));
            let line = [name.text(), flags.join(" ").as_str(), tail.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            out.push(line);
        }
    }
    out
}

/// Spellings of a flag that mean the same as one short letter, per command,
/// so that a deny rule written with short flags (`rm -rf *`) also denies
/// `rm --recursive --force x` and `rm -R -f x`.
const FLAG_SYNONYMS: &[(&str, &str, char)] = &[
    ("rm", "--recursive", 'r'),
    ("rm", "-R", 'r'),
    ("rm", "--force", 'f'),
    ("rm", "--verbose", 'v'),
    ("rm", "--dir", 'd'),
    ("cp", "--recursive", 'r'),
    ("cp", "-R", 'r'),
    ("cp", "--force", 'f'),
    ("mv", "--force", 'f'),
    ("chmod", "--recursive", 'R'),
    ("chown", "--recursive", 'R'),
];

/// Every long option of GNU `rm`, so that an abbreviation (`--rec`,
/// `--forc`) is read as getopt reads it: a prefix of exactly one of them.
const RM_LONG_OPTIONS: &[&str] = &[
    "--force",
    "--interactive",
    "--one-file-system",
    "--no-preserve-root",
    "--preserve-root",
    "--recursive",
    "--dir",
    "--verbose",
    "--help",
    "--version",
];

/// The short letter `flag` stands for in `command`, when it is a synonym
/// or an unambiguous abbreviation of one.
fn short_flag(command: &str, flag: &str) -> Option<char> {
    let exact = |flag: &str| {
        FLAG_SYNONYMS
            .iter()
            .find(|(name, spelling, _)| *name == command && *spelling == flag)
            .map(|(_, _, letter)| *letter)
    };
    if let Some(letter) = exact(flag) {
        return Some(letter);
    }
    if !flag.starts_with("--") || flag.len() < 3 || flag.contains('=') {
        return None;
    }
    let mut longs: Vec<&str> = FLAG_SYNONYMS
        .iter()
        .filter(|(name, spelling, _)| *name == command && spelling.starts_with("--"))
        .map(|(_, spelling, _)| *spelling)
        .collect();
    if command == "rm" {
        longs = RM_LONG_OPTIONS.to_vec();
    }
    let mut matching = longs.iter().filter(|long| long.starts_with(flag));
    match (matching.next(), matching.next()) {
        (Some(long), None) => exact(long),
        _ => None,
    }
}

fn permutations(items: &[char]) -> Vec<Vec<char>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            out.push(tail);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hole_may_become_whatever_the_rule_names() {
        let hole = HOLE.to_string();
        assert!(could_match(&format!("rm {hole}"), "rm -rf *"));
        assert!(could_match(&format!("{hole} -rf x"), "rm -rf *"));
        assert!(could_match(&hole, "git push *"));
        assert!(!could_match(&format!("git diff {hole}"), "git push *"));
        assert!(!could_match(&format!("echo {hole}"), "rm -rf *"));
        assert!(could_match("rm -rf x", "rm -rf *"));
        assert!(!could_match("rm -r x", "rm -rf *"));
    }

    fn denied_by(spellings: &[String], rule: &str) -> bool {
        spellings.iter().any(|s| could_match(s, rule))
    }

    #[test]
    fn literal_text_is_read_as_code_after_an_equals_sign_or_a_prefix() {
        for text in [
            "!rm -rf v",
            "+!rm -rf v",
            ".shell rm -rf v",
            "ProxyCommand=rm -rf v",
            "--checkpoint-action=exec=rm -rf v",
            "alias.x=!rm -rf v",
            "rm -rf v #",
            "1d\n!rm -rf v\nq",
        ] {
            assert!(
                denied_by(&text_spellings(text), "rm -rf *"),
                "{text:?}: {:?}",
                text_spellings(text)
            );
        }
    }

    #[test]
    fn ordinary_text_reads_as_nothing_a_deny_rule_matches() {
        for text in [
            "fix: a = b",
            "a $b",
            "$HOME is set",
            "it's (not) code",
            "echo rm",
            "x=1 y=2",
        ] {
            assert!(
                !denied_by(&text_spellings(text), "rm *"),
                "{text:?}: {:?}",
                text_spellings(text)
            );
        }
    }

    #[test]
    fn getopt_abbreviations_are_read_when_unambiguous() {
        assert_eq!(short_flag("rm", "--rec"), Some('r'));
        assert_eq!(short_flag("rm", "--f"), Some('f'));
        // `--v` is `--verbose` or `--version`: getopt refuses it.
        assert_eq!(short_flag("rm", "--v"), None);
        assert_eq!(short_flag("rm", "--"), None);
    }
}
