//! Attack table for bash permission decisions (issue #11): every command a
//! line would run must pass its own rule, redirections are writes, deny rules
//! hold however the command is spelled, with and without `--yolo`.
//!
//! Each row is driven through the same decision the bash tool makes:
//! `bash_rules::plan` then `Permissions::check_planned` per ask.

use std::collections::BTreeMap;

use cairn::bus::Bus;
use cairn::permission::bash_rules::plan;
use cairn::permission::{Action, Mode, PermissionConfig, PermissionSetting, Permissions, ruleset};

use Action::{Allow, Ask, Deny};

fn permissions(bash: &[(&str, Action)], yolo: bool) -> Permissions {
    let table: BTreeMap<String, Action> = bash.iter().map(|(p, a)| (p.to_string(), *a)).collect();
    let mut config = PermissionConfig::new();
    config.insert("bash".into(), PermissionSetting::Patterns(table));
    Permissions::new(ruleset(&config, yolo), Bus::new(), Mode::Headless)
}

/// The tool's verdict for `command` run at the project root: deny if any
/// ask is denied, ask if any asks, else allow.
fn verdict(command: &str, permissions: &Permissions, root: &std::path::Path) -> Action {
    let mut verdict = Allow;
    for ask in plan(command, root, root).asks {
        match permissions.check_planned(&ask).0 {
            Deny => return Deny,
            Ask => verdict = Ask,
            Allow => {}
        }
    }
    verdict
}

fn project() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("project dir");
    std::fs::create_dir(root.path().join("dir")).expect("create dir");
    root
}

/// Allowed: `git status *`, `ls *`, `cargo test *`; everything else asks.
const ALLOW_SET: &[(&str, Action)] = &[
    ("*", Ask),
    ("git status *", Allow),
    ("ls *", Allow),
    ("cargo test *", Allow),
];

const ALLOW_TABLE: &[(&str, Action)] = &[
    // plain allowed commands and lists of them
    ("git status", Allow),
    ("git status -s", Allow),
    ("git  status   -s", Allow),
    ("ls -la", Allow),
    ("cargo test --lib", Allow),
    ("cargo test -- --nocapture", Allow),
    ("git status && ls", Allow),
    ("git status | ls", Allow),
    ("git status; ls", Allow),
    ("ls && ls || ls", Allow),
    ("ls\nls", Allow),
    ("(ls)", Allow),
    ("{ ls; git status; }", Allow),
    ("git status &", Allow),
    // not writes: fd duplication and /dev/null
    ("ls 2>&1", Allow),
    ("ls 1>&2", Allow),
    ("ls > /dev/null", Allow),
    ("git status > /dev/null 2>&1", Allow),
    ("ls 2>/dev/null | ls", Allow),
    // quoting: single quotes keep `$(..)` and `;` literal
    ("ls '$(touch x)'", Allow),
    ("ls '`touch x`'", Allow),
    ("ls \"a;b\"", Allow),
    ("ls 'a && touch x'", Allow),
    ("ls \\$\\(touch x\\)", Allow),
    ("\"git\" status", Allow),
    ("g\\it status", Allow),
    // continuations, comments, unicode
    ("git status \\\n  -s", Allow),
    ("git status # ; touch x", Allow),
    ("ls ünïcödé 日本", Allow),
    ("ls ｜ touch ｘ", Allow),
    ("ls *.rs", Allow),
    // everything else a line runs must pass on its own
    ("git status & touch x", Ask),
    ("git status `touch x`", Ask),
    ("git status $(touch x)", Ask),
    ("git status > x", Ask),
    ("git status >> x", Ask),
    ("git status &> x", Ask),
    ("git status >| x", Ask),
    ("git status 2> x", Ask),
    ("git status > dir/x", Ask),
    ("ls > ../x", Ask),
    ("ls > ~/x", Ask),
    ("git status; touch x", Ask),
    ("git status;touch x", Ask),
    ("git status|touch x", Ask),
    ("git status&&touch x", Ask),
    ("git status | tee x", Ask),
    ("git status && touch x", Ask),
    ("git status || touch x", Ask),
    ("git status\ntouch x", Ask),
    ("git status # ok\ntouch x", Ask),
    ("touch x", Ask),
    ("rm -rf x", Ask),
    ("ls \"$(touch x)\"", Ask),
    ("ls \"a $(touch x) b\"", Ask),
    ("ls <(touch x)", Ask),
    ("ls >(touch x)", Ask),
    ("git status <(touch x)", Ask),
    ("ls $(ls $(touch x))", Ask),
    ("ls \"$(ls \"$(touch x)\")\"", Ask),
    ("ls ${X:-$(touch x)}", Ask),
    ("X=$(touch x) ls", Ask),
    ("LD_PRELOAD=./evil.so ls", Ask),
    ("ls > \"$(touch x)\"", Ask),
    ("ls > $OUT", Ask),
    ("export A=$(touch x)", Ask),
    ("f() { touch x; }; f", Ask),
    ("(touch x)", Ask),
    ("{ touch x; }", Ask),
    ("ls & touch x &", Ask),
    ("if true; then touch x; fi", Ask),
    ("for i in 1; do touch x; done", Ask),
    ("while false; do touch x; done", Ask),
    ("case a in a) touch x;; esac", Ask),
    ("[[ -n $(touch x) ]]", Ask),
    ("echo $((1 + $(touch x)))", Ask),
    ("ls <<EOF\n$(touch x)\nEOF", Ask),
    ("ls; git status; touch x", Ask),
    ("cargo test; cargo publish", Ask),
    ("cd .. && ls", Ask),
    ("nohup touch x", Ask),
    ("exec touch x", Ask),
    // uninspectable: ask whatever the rules say
    ("eval ls", Ask),
    ("eval \"git status\"", Ask),
    ("source x.sh", Ask),
    (". x.sh", Ask),
    ("bash -c 'git status'", Ask),
    ("sh -c ls", Ask),
    ("zsh -c ls", Ask),
    ("python3 -c 'print(1)'", Ask),
    ("node -e 1", Ask),
    ("bash <<EOF\nls\nEOF", Ask),
    ("ls | bash", Ask),
    ("xargs ls", Ask),
    ("ls | xargs touch", Ask),
    ("env ls", Ask),
    ("sudo ls", Ask),
    ("doas ls", Ask),
    ("find . -exec touch {} \\;", Ask),
    ("find . -delete", Ask),
    ("git -c core.pager=touch status", Ask),
    ("$CMD status", Ask),
    ("$(echo git) status", Ask),
    ("`echo ls`", Ask),
    ("alias ls='touch x'", Ask),
    // empty lines and comments run nothing, but nothing is assumed either
    ("", Ask),
    ("   ", Ask),
    ("# only a comment", Ask),
    // text the parser rejects asks
    ("ls $(", Ask),
    ("ls \"unterminated", Ask),
    ("ls )", Ask),
    ("if then fi", Ask),
    ("ls |", Ask),
    ("ls && && ls", Ask),
];

#[test]
fn only_lines_whose_every_command_is_allowed_run_unasked() {
    let root = project();
    let permissions = permissions(ALLOW_SET, false);
    let wrong: Vec<String> = ALLOW_TABLE
        .iter()
        .filter_map(|(command, expected)| {
            let got = verdict(command, &permissions, root.path());
            (got != *expected).then(|| format!("{command:?}: expected {expected:?}, got {got:?}"))
        })
        .collect();
    assert!(ALLOW_TABLE.len() >= 80, "the table keeps at least 80 rows");
    assert!(
        wrong.is_empty(),
        "{} wrong verdicts:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn very_long_lines_are_decided_whole() {
    let root = project();
    let permissions = permissions(ALLOW_SET, false);
    let long = format!("ls {}", "a".repeat(100 * 1024));
    assert_eq!(verdict(&long, &permissions, root.path()), Allow);
    let hidden = format!("{long}; touch x");
    assert_eq!(verdict(&hidden, &permissions, root.path()), Ask);
}

/// `rm -rf *` is denied; everything else asks (or runs, under `--yolo`).
const DENY_SET: &[(&str, Action)] = &[("*", Ask), ("rm -rf *", Deny)];

const DENY_SPELLINGS: &[&str] = &[
    "rm -rf x",
    "rm -fr x",
    "rm -r -f x",
    "rm -f -r x",
    "rm -rfv x",
    "rm -v -f -r x",
    "rm x -rf",
    "rm -rf -- x",
    "rm -rf",
    "/bin/rm -rf x",
    "/usr/bin/rm -rf x",
    "r\\m -rf x",
    "\"rm\" -rf x",
    "'rm' -fr x",
    "X=1 rm -rf x",
    "env rm -rf x",
    "env -i PATH=/bin rm -rf x",
    "command rm -rf x",
    "nice rm -rf x",
    "nice -n 5 rm -rf x",
    "timeout 5 rm -rf x",
    "nohup rm -rf x",
    "time rm -rf x",
    "exec rm -rf x",
    "stdbuf -oL rm -rf x",
    "sudo rm -rf x",
    "ls | xargs rm -rf",
    "true & rm -rf x",
    "rm -rf x &",
    "ls; rm -rf x",
    "ls && rm -fr x",
    "echo $(rm -rf x)",
    "echo `rm -rf x`",
    "echo \"$(rm -r -f x)\"",
    "(rm -rf x)",
    "{ rm -rf x; }",
    "f() { rm -rf x; }",
    "cat <(rm -rf x)",
    "bash -c 'rm -rf x'",
    "sh -c \"ls; rm -fr x\"",
    "eval 'rm -rf x'",
    // Long options and `-R` mean the same as the short flags.
    "rm --recursive --force x",
    "rm -r --force x",
    "rm --force -R x",
    "rm -R -f x",
];

const NOT_DENIED: &[&str] = &[
    "rm x",
    "rm -r x",
    "echo rm -rf x",
    // Not `ls 'rm -rf x'`: every literal word is read as possible code for
    // deny rules (issue #28, review 2), so that one is denied on purpose.
    "rmdir x",
    "rm --recursive x",
    // Text that names a shell or a runner inside quotes is not code from
    // standard input, so no deny rule refuses it (review 3's broader reading).
    "git commit -m 'run bash -l to get a login shell'",
    "echo \"watch -n1 ls, then sh -s\"",
    "grep -n 'tmux new-session' notes.md",
    "awk '{print $1, $2}' a.txt",
    "ssh host 'ls -la /var/log/*.log'",
    "sed 's/$/ done/' a.txt",
];

#[test]
fn deny_holds_however_the_command_is_spelled() {
    let root = project();
    for yolo in [false, true] {
        let permissions = permissions(DENY_SET, yolo);
        let missed: Vec<String> = DENY_SPELLINGS
            .iter()
            .filter(|command| verdict(command, &permissions, root.path()) != Deny)
            .map(|command| format!("{command:?}"))
            .collect();
        assert!(
            missed.is_empty(),
            "yolo={yolo}: not denied:\n{}",
            missed.join("\n")
        );
        let expected = if yolo { Allow } else { Ask };
        for command in NOT_DENIED {
            assert_eq!(
                verdict(command, &permissions, root.path()),
                expected,
                "{command:?} yolo={yolo}"
            );
        }
    }
}

#[test]
fn uninspectable_commands_ask_even_when_allowed() {
    let root = project();
    let permissions = permissions(&[("*", Allow)], false);
    for command in [
        "eval ls",
        "bash -c ls",
        "xargs ls",
        "sudo ls",
        "$CMD",
        "ls $(",
    ] {
        assert_eq!(
            verdict(command, &permissions, root.path()),
            Ask,
            "{command:?}"
        );
    }
    let yolo = permissions_yolo();
    assert_eq!(verdict("eval ls", &yolo, root.path()), Allow);
}

fn permissions_yolo() -> Permissions {
    permissions(&[], true)
}

#[test]
fn paths_outside_the_project_ask_external_directory() {
    let root = project();
    let permissions = permissions(&[("*", Allow)], false);
    for command in [
        "rm /etc/x",
        "touch ../x",
        "cp x ~/y",
        "mkdir -p /tmp/cairn-elsewhere",
        "cd /",
        "tar -C / -xf a.tar",
        "git -C / status",
    ] {
        let plan = plan(command, root.path(), root.path());
        assert!(
            plan.asks
                .iter()
                .any(|a| a.permission == "external_directory"),
            "{command:?}: {plan:?}"
        );
        assert_eq!(
            verdict(command, &permissions, root.path()),
            Ask,
            "{command:?}"
        );
    }
    assert_eq!(verdict("touch dir/x", &permissions, root.path()), Allow);
}

#[test]
fn tee_targets_are_writes_even_when_tee_is_allowed() {
    let root = project();
    let permissions = permissions(&[("*", Ask), ("tee *", Allow), ("ls *", Allow)], false);
    assert_eq!(verdict("ls | tee x", &permissions, root.path()), Ask);
    assert_eq!(
        verdict("ls | tee /dev/null", &permissions, root.path()),
        Allow
    );
    let asks = plan("ls | tee -a x", root.path(), root.path()).asks;
    assert!(
        asks.iter()
            .any(|a| a.permission == "edit" && a.patterns == ["x"]),
        "{asks:?}"
    );
}

#[test]
fn always_offers_are_narrow_and_broad_only_for_read_only_verbs() {
    let root = project();
    let asks = plan("git status -s", root.path(), root.path()).asks;
    assert_eq!(asks[0].always, ["git status -s"]);
    assert_eq!(asks[0].always_broad, ["git status *"]);
    for command in [
        "rm -rf build",
        "cat secrets",
        "git push",
        "git status; rm x",
    ] {
        let asks = plan(command, root.path(), root.path()).asks;
        assert!(asks[0].always_broad.is_empty(), "{command:?}: {asks:?}");
        assert!(
            !asks[0].always.iter().any(|a| a.ends_with('*')),
            "{command:?}"
        );
    }
}

/// An "always" answer is stored as a pattern, and `*` / `?` in a pattern
/// match anything, spaces and slashes included. A command that holds them
/// must not become a pattern: "always `rm *.tmp`" would allow
/// `rm -rf ~ x.tmp`. Each row: the command answered "always", then a later
/// command that must still ask.
#[test]
fn an_always_answer_never_stores_a_command_that_holds_a_wildcard() {
    let root = project();
    let cases: &[(&str, &str)] = &[
        ("rm *.tmp", "rm -rf ~ x.tmp"),
        ("ls ?", "ls -la /etc; rm -rf x"),
        ("cat src/*.rs", "cat src/../../etc/passwd; x.rs"),
        ("echo a > *.log", "echo a > ../outside/x.log"),
        ("chmod 644 *", "chmod 777 /etc/passwd"),
    ];
    for (answered, later) in cases {
        let rules = permissions(ALLOW_SET, false);
        for ask in plan(answered, root.path(), root.path()).asks {
            assert!(
                ask.always.iter().all(|p| !p.contains(['*', '?'])),
                "{answered:?}: {:?}",
                ask.always
            );
            for pattern in &ask.always {
                rules.approve(&ask.permission, pattern);
            }
        }
        assert_eq!(
            verdict(later, &rules, root.path()),
            Ask,
            "after always {answered:?}, {later:?}"
        );
    }
    // A command without wildcards is still offered "always", exactly.
    let asks = plan("rm build.tmp", root.path(), root.path()).asks;
    assert_eq!(asks[0].always, ["rm build.tmp"]);
}

#[test]
fn reasons_name_the_part_that_needs_an_answer() {
    let root = project();
    let asks = plan("git status $(curl x) > out", root.path(), root.path()).asks;
    let reasons: Vec<&str> = asks
        .iter()
        .flat_map(|a| a.reasons.iter().map(|(_, r)| r.as_str()))
        .collect();
    assert!(
        reasons.contains(&"the `$(curl x)` substitution"),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"`>` writes to out"), "{reasons:?}");
    let asks = plan("eval x", root.path(), root.path()).asks;
    assert_eq!(
        asks[0].reasons[0].1,
        "`eval` runs text cairn cannot inspect"
    );
}

/// A read-only verb offered as a broad "always" (`git diff *`, `git log *`)
/// or a command allowed by the user must not write files through an option
/// that names one: the write asks as `>` does.
#[test]
fn output_options_are_writes() {
    let root = project();
    let rules = permissions(
        &[
            ("git diff *", Allow),
            ("git log *", Allow),
            ("sort *", Allow),
            ("curl *", Allow),
            ("wget *", Allow),
        ],
        false,
    );
    let table: &[(&str, Action)] = &[
        ("git diff --output=x", Ask),
        ("git diff --output x", Ask),
        ("git log --output=notes.txt -p", Ask),
        ("git diff --stat", Allow),
        ("git log --oneline -5", Allow),
        ("sort -o sorted.txt input.txt", Ask),
        ("sort -osorted.txt input.txt", Ask),
        ("sort --output=sorted.txt input.txt", Ask),
        ("sort input.txt", Allow),
        ("curl -o page.html https://example.com", Ask),
        ("curl --output page.html https://example.com", Ask),
        ("wget -O page.html https://example.com", Ask),
        ("git diff --output=/dev/null", Allow),
    ];
    for (command, expected) in table {
        assert_eq!(
            verdict(command, &rules, root.path()),
            *expected,
            "{command}"
        );
    }
}

/// The allow rules of issue #28's count: read-only verbs a user allows.
const READ_RULES: &[(&str, Action)] = &[
    ("*", Ask),
    ("git status*", Allow),
    ("git diff*", Allow),
    ("git log*", Allow),
    ("git show*", Allow),
    ("ls*", Allow),
    ("cat *", Allow),
    ("echo *", Allow),
    ("test *", Allow),
    ("printf *", Allow),
    ("cargo test*", Allow),
    ("cargo build*", Allow),
    ("grep *", Allow),
    ("head*", Allow),
    ("cd *", Allow),
];

/// Issue #28: lines that wrote a file or opened a connection under
/// [`READ_RULES`] without asking, one block per class. Every row must ask.
const HIDDEN_CODE: &[&str] = &[
    // expansions that evaluate text as code
    "x='a[$(touch p)]'; echo $((x))",
    "x='a[$(touch p)]'; echo $(( x + 1 ))",
    "declare -i x; x='a[$(touch p)]'",
    "x='a[$(touch p)]'; [[ $x -eq 0 ]]",
    "[[ -v 'a[$(touch p)]' ]]",
    "test -v 'a[$(touch p)]'",
    "printf -v 'a[$(touch p)]' x",
    "let 'a[$(touch p)]'",
    "x='$(touch p)'; echo ${x@P}",
    "x='a[$(touch p)]'; echo ${!x}",
    "declare -n r='a[$(touch p)]'; echo $r",
    "echo $((1))",
    // environment that makes an allowed program run code
    "export GIT_EXTERNAL_DIFF=./x; git diff",
    "declare -x GIT_PAGER='touch p'; git log",
    "readonly PAGER='touch p'; git log -p",
    "f() { local -x GIT_PAGER='touch p'; git log; }; f",
    "typeset -x LESSOPEN='|touch p %s'; git log",
    "GIT_PAGER='touch p' git log -p",
    "GIT_EXTERNAL_DIFF=./x git diff",
    "GIT_CONFIG_PARAMETERS=\"'core.pager=touch p'\" git log",
    "GIT_CONFIG_GLOBAL=./cfg git diff",
    "GIT_SSH_COMMAND='touch p' git status",
    "GIT_TRACE=p git status",
    "GIT_DIR=evil.git git log",
    "LD_PRELOAD=./e.so ls",
    "PATH=./bin ls",
    "PATH=./bin; ls",
    "BASH_ENV=./x ls",
    "PAGER='touch p' git log",
    "LESSOPEN='|touch p %s' git log",
    // words that are not plain literals reaching a checked option
    "git diff $'--output=p'",
    "git diff $x",
    "git diff \"$x\"",
    "git diff {--output=p,}",
    "git diff --output={p,q}",
    "git diff ${x:---output=p}",
    "git diff $(echo --output=p)",
    "echo $HOME",
    // substitutions the walk missed
    "ls ${PWD#$(touch p)}",
    "ls \"${x:-`touch p`}\"",
    "cat <<EOF\n$(touch p)\nEOF",
    "cat <<-EOF\n\t$(touch p)\n\tEOF",
    "cat <<EOF\n${x@P}\nEOF",
    "cat <<EOF\n`touch p`\nEOF",
    // connections
    "cat < /dev/tcp/example.com/80",
    "cat </dev/udp/10.0.0.1/53",
    "cat 3<>/dev/tcp/example.com/80",
    "echo x > /dev/tcp/example.com/80",
    // the target's value after quote removal, not its text (#28, review 2)
    "cat < /dev/\"tcp\"/127.0.0.1/29999",
    "cat < /dev/tc\\p/127.0.0.1/29999",
    "cat 0</dev/t'c'p/127.0.0.1/29999",
    "cat < \"$F\"",
    // git that runs the configured tool
    "git difftool",
    "git difftool -y HEAD",
    // git that verifies signatures runs gpg, which writes ~/.gnupg (review 3)
    "git log --show-signature -1",
    "git show --show-signature HEAD",
    "git log --format=%G? -1",
    "git log --pretty='%h %GS' -1",
    "git log --format=format:%GK",
    // a backslash-newline inside a word, which bash deletes (review 6)
    "git diff -\\\n-output=p",
    "git diff --out\\\nput=p",
    "git log --out\\\nput=p -1",
    "git log --show-sig\\\nnature",
    "cat < /dev/t\\\ncp/127.0.0.1/47123",
    "git diff\\\ntool -y -x ./ev.sh",
];

/// What an agent types all day: these stay allowed by their rules.
const ORDINARY: &[&str] = &[
    "cargo test",
    "cargo test \\\n  --lib permission",
    "git log --format='%h %s' -3",
    "cargo test --lib permission",
    "git status",
    "git status -s",
    "git diff --stat",
    "git log --oneline -5",
    "git show HEAD",
    "ls -la src",
    "ls *.rs",
    "grep -rn foo src | head",
    "grep -rn 'a b' src | head -20",
    "cd sub && cargo build",
    "LANG=C ls",
    "RUST_BACKTRACE=1 cargo test",
    "LC_ALL=C grep -rn x src",
    "cat <<'EOF'\n$(touch p) ${x@P}\nEOF",
    "cat README.md",
    "echo hello",
    "echo 'a $b'",
];

#[test]
fn hidden_code_behind_read_only_rules_asks_and_ordinary_commands_do_not() {
    let root = project();
    let permissions = permissions(READ_RULES, false);
    let unasked: Vec<String> = HIDDEN_CODE
        .iter()
        .filter(|command| verdict(command, &permissions, root.path()) != Ask)
        .map(|command| format!("{command:?}"))
        .collect();
    let asked: Vec<String> = ORDINARY
        .iter()
        .filter(|command| verdict(command, &permissions, root.path()) != Allow)
        .map(|command| format!("{command:?}"))
        .collect();
    assert!(
        unasked.is_empty() && asked.is_empty(),
        "{} of {} ran unasked:\n{}\n{} of {} ordinary commands asked:\n{}",
        unasked.len(),
        HIDDEN_CODE.len(),
        unasked.join("\n"),
        asked.len(),
        ORDINARY.len(),
        asked.join("\n")
    );
}

/// "Always" on a command holding a variable or expansion would store a
/// pattern that later allows a different command: nothing is offered.
#[test]
fn always_is_offered_only_for_commands_whose_every_word_is_literal() {
    let root = project();
    for (answered, later) in [
        ("git diff $x", "git diff --output=p"),
        ("git diff \"$x\"", "git diff --output=p"),
        ("ls ${x:-a}", "ls; touch p"),
        ("GIT_PAGER=less git log", "git log --output=p"),
    ] {
        let rules = permissions(&[("*", Ask)], false);
        for ask in plan(answered, root.path(), root.path()).asks {
            for pattern in ask.always.iter().chain(&ask.always_broad) {
                rules.approve(&ask.permission, pattern);
            }
        }
        assert_eq!(
            verdict(later, &rules, root.path()),
            Ask,
            "after always {answered:?}, {later:?}"
        );
        assert_eq!(
            verdict(answered, &rules, root.path()),
            Ask,
            "{answered:?} itself"
        );
    }
    let asks = plan("git diff --stat", root.path(), root.path()).asks;
    assert_eq!(asks[0].always, ["git diff --stat"]);
    assert_eq!(asks[0].always_broad, ["git diff *"]);
}

/// Issue #28: the forms the README says a deny rule covers, under
/// `rm -rf *` alone (the harder of the issue's two rules), with and
/// without `--yolo`.
const DENY_EVASIONS: &[&str] = &[
    "rm --rec --forc x",
    "rm --re --fo x",
    "rm --recursive --f x",
    "rm -{r,f} x",
    "rm -{rf,} x",
    "rm $'-rf' x",
    "rm -f $'-r' x",
    "rm \"$F\" x",
    "/bin/r? -rf x",
    "/bin/[r]m -rf x",
    "r* -rf x",
    "rm{,} -rf x",
    "$RM -rf x",
    "env -S 'rm -rf x'",
    "env -S'rm -rf x'",
    "env --split-string='rm -rf x'",
    "env -C . rm -rf x",
    "exec -a foo rm -rf x",
    "trap 'rm -rf x' EXIT",
    "coproc rm -rf x",
    "sh -c \"$0 -rf x\" rm",
    "bash -c '\"$@\"' _ rm -rf x",
    "eval \"$(echo rm -rf x)\"",
    "eval $CMD",
    "x='a[$(rm -rf x)]'; echo $((x))",
    "setsid rm -rf x",
    "setsid -f rm -rf x",
    "ionice -c 3 rm -rf x",
    "taskset 0x1 rm -rf x",
    "taskset -c 0 rm -rf x",
    "flock /tmp/l rm -rf x",
    "flock /tmp/l -c 'rm -rf x'",
    "chrt -o 0 rm -rf x",
    "unshare rm -rf x",
    "unshare -r rm -rf x",
    "script -qc 'rm -rf x' /dev/null",
    "strace -o /dev/null rm -rf x",
    "awk 'BEGIN { system(\"rm -rf x\") }'",
    "make -f - <<< 'all: ; rm -rf x'",
    "watch -n1 'rm -rf x'",
    // review 2: programs that run a shell command from an option or input
    "vim -es -c '!rm -rf v' -c q",
    "vim --cmd '!rm -rf v'",
    "vim -es '+!rm -rf v' +q",
    "vi -c '!rm -rf v'",
    "ex -c '!rm -rf v'",
    "ed -s a.txt <<< '!rm -rf v'",
    "echo 'exec rm -rf v' | tclsh",
    "sqlite3 :memory: '.shell rm -rf v'",
    "tar -cf a.tar a --checkpoint=1 --checkpoint-action=exec='rm -rf v'",
    "tar -I 'rm -rf v #' -cf a.tar a",
    "ssh -o ProxyCommand='rm -rf v' x",
    "zip a.zip a -T -TT 'rm -rf v #'",
    "git -c alias.x='!rm -rf v' x",
    "ed -s a.txt <<'EOF'\n!rm -rf v\nEOF",
    // review 2: shells fed code on stdin, a pipe or a process substitution
    "echo 'rm -rf v' | bash",
    "bash <<< 'rm -rf v'",
    "bash < <(echo rm -rf v)",
    "printf 'rm -rf v' | sh",
    ". <(echo rm -rf v)",
    "source /dev/stdin <<< 'rm -rf v'",
    // review 2: names that later words resolve through
    "hash -p /usr/bin/rm del; del -rf v",
    "mapfile -C 'rm -rf v #' -c 1 <<< x",
    "shopt -s expand_aliases; alias d='rm -rf v'; eval d",
    // review 2: the command `find` runs
    "find . -maxdepth 1 -name v -exec rm -rf {} +",
    "find . -name v -execdir rm -rf {} \\;",
    // review 3: code after a program's own prefix, or inside its quotes
    "sed -n '1e rm -rf v' a.txt",
    "sed 's/.*/rm -rf v/e' a.txt",
    "perl -e 'system(\"rm -rf v\")'",
    "gdb -batch -ex 'shell rm -rf v'",
    "vim -es -c 'call system(\"rm -rf v\")' -c q",
    "vim -es -c 'silent !rm -rf v' -c q",
    "sqlite3 :memory: '.sh rm -rf v'",
    // review 3: a value glued to its option
    "tar -I'rm -rf v #' -cf a.tar a",
    "git rebase -x'rm -rf v' HEAD~1",
    "git grep -O'rm -rf v' x",
    "script -qc'rm -rf v' /dev/null",
    "ssh -o 'ProxyCommand rm -rf v' x",
    // review 3: more programs that run their arguments
    "setpriv --reuid=0 rm -rf v",
    "setarch x86_64 rm -rf v",
    "linux32 rm -rf v",
    "linux64 rm -rf v",
    "x86_64 rm -rf v",
    "i386 rm -rf v",
    "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf v",
    "tmux new-session -d rm -rf v",
    "dbus-run-session -- rm -rf v",
    // review 6: a backslash-newline inside a word, which bash deletes
    "r\\\nm -rf v",
    "/bin/r\\\nm -rf v",
    "sh -c 'r\\\nm -rf v'",
    "echo $(r\\\nm -rf v)",
    "ls; r\\\nm -r\\\nf v",
    "env r\\\nm -rf v",
    // review 6: quotes and blanks spelled another way inside code text
    "sed '1e \"rm\" -rf v' a.txt",
    "sed \"1e r'm' -rf v\" a.txt",
    "sed '1e r\"\"m -rf v' a.txt",
    "gdb -batch -ex 'shell \"rm\" -rf v'",
    "ssh -o 'ProxyCommand r\"\"m -rf v' x",
    "tar -cf x.tar -I'\"rm\" -rf v #' a.txt",
    "script -qc'\"rm\" -rf v' /dev/null",
    "perl -e 'system(\"\\\"rm\\\" -rf v\")'",
    "sed '1e rm${IFS}-rf v' a.txt",
    "sed 's/.*/rm${IFS}-rf${IFS}v/e' a.txt",
    "sqlite3 :memory: '.shell rm${IFS}-rf v'",
    "sed 's/hi/rm\\ -rf\\ v/e' a.txt",
    "sed 's/.*/rm\\x20-rf v/e' a.txt",
    "perl -e 'system(\"rm\\x20-rf v\")'",
    "gdb -batch -ex 'shell r\\m -rf v'",
    // review 7: words of code text known only when it runs
    "sed '1e rm${IFS%?}-rf${IFS%?}v' a.txt",
    "sed '1e rm\\t-rf v' a.txt",
    "sed '1e rm\\x09-rf v' a.txt",
    "sed '1e rm$@ -rf v' a.txt",
    "sed '1e r$*m -rf v' a.txt",
    "sed '1e r$()m -rf v' a.txt",
    "sed '1e r``m -rf v' a.txt",
    "sed '1e rm$(echo) -rf v' a.txt",
    "sed '1e r${x}m -rf v' a.txt",
    "sed '1e ${x:-rm} -rf v' a.txt",
    "sed '1e $(echo rm) -rf v' a.txt",
    "sed '1e `echo rm` -rf v' a.txt",
    "sed '1e /usr/bin/r[m] -rf v' a.txt",
    "perl -e 'system(\"r\\$()m -rf v\")'",
    "git rebase -x 'r$()m -rf v' HEAD~1",
    "vim -es -c '!r$()m -rf v' -c q a.txt",
];

#[test]
fn deny_holds_for_the_forms_the_readme_lists() {
    let root = project();
    for yolo in [false, true] {
        let permissions = permissions(DENY_SET, yolo);
        let missed: Vec<String> = DENY_EVASIONS
            .iter()
            .filter(|command| verdict(command, &permissions, root.path()) != Deny)
            .map(|command| format!("{command:?}"))
            .collect();
        assert!(
            missed.is_empty(),
            "yolo={yolo}: {} of {} not denied:\n{}",
            missed.len(),
            DENY_EVASIONS.len(),
            missed.join("\n")
        );
    }
    // The reviewer's other rule set: everything allowed but `rm *`.
    for yolo in [false, true] {
        let permissions = permissions(&[("*", Allow), ("rm *", Deny)], yolo);
        let missed: Vec<&str> = DENY_EVASIONS
            .iter()
            .filter(|command| verdict(command, &permissions, root.path()) != Deny)
            .copied()
            .collect();
        assert!(missed.is_empty(), "rm * yolo={yolo}: {missed:?}");
        for command in ORDINARY {
            assert_eq!(
                verdict(command, &permissions, root.path()),
                Allow,
                "{command:?} under rm *"
            );
        }
    }
    // A deny rule on one program does not deny the ordinary others, even
    // under --yolo where nothing else stops them.
    let permissions = permissions(DENY_SET, true);
    for command in ORDINARY {
        assert_eq!(
            verdict(command, &permissions, root.path()),
            Allow,
            "{command:?}"
        );
    }
}
