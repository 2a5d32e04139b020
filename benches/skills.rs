//! Skills: what listing them costs every request (system-prompt tokens per
//! skill, o200k_base) and how long discovery of 50 skill folders takes (it is
//! redone for every request, like instruction files).
//!
//! Run: `cargo bench --bench skills`. Prints the token figures, then
//! criterion's time for `discover_50_skills` (target: well under 1 ms).

use std::hint::black_box;

use cairn::skill::{SkillRoots, discover, prompt_block};
use criterion::{Criterion, criterion_group, criterion_main};

/// A typical description: Claude Code's documentation example length.
const DESCRIPTION: &str = "Extract text and tables from PDF files, fill forms, merge documents. \
Use when working with PDF files or when the user mentions PDFs, forms, or document extraction.";

/// 50 skills over the three project layouts and the home one, each with a
/// body and two resource files (discovery must not read them).
fn install(root: &std::path::Path) {
    let places = [
        ".cairn/skills",
        ".claude/skills",
        ".agents/skills",
        "home/.claude/skills",
    ];
    for n in 0..50 {
        let dir = root
            .join(places[n % places.len()])
            .join(format!("skill-{n:02}"));
        std::fs::create_dir_all(dir.join("scripts")).expect("create skill dir");
        let text = format!(
            "---\nname: skill-{n:02}\ndescription: {DESCRIPTION}\nallowed-tools: Read, Grep\n---\n\n# Skill {n}\n\n{}",
            "Step by step instructions.\n".repeat(200)
        );
        std::fs::write(dir.join("SKILL.md"), text).expect("write SKILL.md");
        std::fs::write(dir.join("REFERENCE.md"), "reference\n").expect("write resource");
        std::fs::write(dir.join("scripts/run.py"), "print(1)\n").expect("write script");
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    install(dir.path());
    let roots = SkillRoots {
        cwd: dir.path().to_path_buf(),
        root: dir.path().to_path_buf(),
        home: Some(dir.path().join("home")),
        config_dir: None,
    };
    let found = discover(&roots);
    assert_eq!(found.skills.len(), 50, "{:?}", found.problems);
    let one = cairn::token::count(&prompt_block(&found.skills[..1]).expect("a block"));
    let fifty = cairn::token::count(&prompt_block(&found.skills).expect("a block"));
    let header = one - (fifty - one) / 49;
    println!(
        "skills list: 1 skill = {one} tokens, 50 skills = {fifty} tokens, \
         {} tokens per skill (description of {} chars), {header} tokens of header",
        (fifty - one) / 49,
        DESCRIPTION.len()
    );
    c.bench_function("discover_50_skills", |b| {
        b.iter(|| discover(black_box(&roots)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
