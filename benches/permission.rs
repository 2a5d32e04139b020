//! Bash permission planning: parse + decide for a 1,000-character command
//! line (a pipeline with substitutions, redirections and flag clusters), the
//! work the bash tool does before every command it runs.
//!
//! Also a 64 KB here-document (a model writing a file through `cat <<'EOF'`),
//! the most text the deny reading of words as possible code walks (#28).
//!
//! Run: `cargo bench --bench permission`. Target: under 1 ms per 1,000-char
//! line, under 50 ms for the 64 KB here-document.

use std::hint::black_box;

use cairn::bus::Bus;
use cairn::permission::bash_rules::plan;
use cairn::permission::{Mode, PermissionConfig, Permissions, ruleset};
use criterion::{Criterion, criterion_group, criterion_main};

/// A realistic long line: many commands, quotes, substitutions and writes.
fn long_command() -> String {
    let piece = "git status -s && ls -la \"src/$(basename x)\" | grep -v 'a;b' > out.txt 2>&1; rm -fr build; ";
    let mut line = String::new();
    while line.len() < 1_000 {
        line.push_str(piece);
    }
    line.truncate(line.rfind("; ").expect("pieces end with `; `"));
    line
}

/// `cat > notes.md <<'EOF'` with 64 KB of this repository's README as the
/// body: prose, code spans, options, quotes and brackets.
fn long_heredoc() -> String {
    let readme = include_str!("../README.md");
    let mut body = String::new();
    while body.len() < 64 * 1024 {
        body.push_str(readme);
    }
    let mut end = 64 * 1024;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    body.truncate(end);
    body = body.replace("\nEOF\n", "\nEOF.\n");
    format!("cat > notes.md <<'EOF'\n{body}\nEOF")
}

fn bench(c: &mut Criterion) {
    let root = tempfile::tempdir().expect("project dir");
    let config: PermissionConfig = toml::from_str(
        "bash = { \"*\" = \"ask\", \"git status *\" = \"allow\", \"ls *\" = \"allow\", \"rm -rf *\" = \"deny\" }",
    )
    .expect("bench config parses");
    let permissions = Permissions::new(ruleset(&config, false), Bus::new(), Mode::Headless);
    let command = long_command();
    assert!(command.len() >= 990, "{}", command.len());
    c.bench_function("plan_and_check_1000_chars", |b| {
        b.iter(|| {
            let plan = plan(black_box(&command), root.path(), root.path());
            plan.asks
                .iter()
                .map(|ask| permissions.check_planned(ask).0)
                .collect::<Vec<_>>()
        });
    });
    let heredoc = long_heredoc();
    c.bench_function("plan_and_check_64k_heredoc", |b| {
        b.iter(|| {
            let plan = plan(black_box(&heredoc), root.path(), root.path());
            plan.asks
                .iter()
                .map(|ask| permissions.check_planned(ask).0)
                .collect::<Vec<_>>()
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
