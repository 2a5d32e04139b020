//! glob, grep and list over real directory trees: .gitignore, hidden files,
//! newest-first order and the 100-result cap.

use crate::tools_common;

use std::time::{Duration, SystemTime};

use cairn::tool::Registry;
use serde_json::json;
use tools_common::Project;

fn set_age(path: &std::path::Path, seconds_ago: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .expect("set mtime");
}

fn ignored_project() -> Project {
    let project = Project::new();
    project.write(".gitignore", "target/\n*.log\n");
    project.write("src/main.rs", "fn main() { println!(\"needle\"); }\n");
    project.write("src/lib.rs", "// needle in lib\n");
    project.write("target/debug/out.rs", "needle in build output\n");
    project.write("debug.log", "needle in a log\n");
    project.write(".hidden/secret.rs", "needle hidden\n");
    set_age(&project.dir.path().join("src/main.rs"), 100);
    set_age(&project.dir.path().join("src/lib.rs"), 10);
    project
}

#[tokio::test]
async fn glob_respects_gitignore_and_sorts_newest_first() {
    let project = ignored_project();
    let ctx = project.context();
    let out = Registry::builtin()
        .run("glob", json!({ "pattern": "*.rs" }), &ctx)
        .await
        .expect("globs");
    let root = project.root();
    assert_eq!(
        out.output,
        format!(
            "{}\n{}",
            root.join("src/lib.rs").display(),
            root.join("src/main.rs").display()
        )
    );
    let out = Registry::builtin()
        .run("glob", json!({ "pattern": "src/m*.rs" }), &ctx)
        .await
        .expect("globs");
    assert_eq!(out.output, root.join("src/main.rs").display().to_string());
    let out = Registry::builtin()
        .run("glob", json!({ "pattern": "*.py" }), &ctx)
        .await
        .expect("globs");
    assert_eq!(out.output, "No files found");
}

#[tokio::test]
async fn grep_respects_gitignore_and_reports_path_line_text() {
    let project = ignored_project();
    project.write("src/blob.bin", b"needle\0binary");
    let out = Registry::builtin()
        .run("grep", json!({ "pattern": "need+le" }), &project.context())
        .await
        .expect("greps");
    let root = project.root();
    assert_eq!(
        out.output,
        format!(
            "Found 2 matches\n{}:1: // needle in lib\n{}:1: fn main() {{ println!(\"needle\"); }}",
            root.join("src/lib.rs").display(),
            root.join("src/main.rs").display()
        )
    );
    let out = Registry::builtin()
        .run(
            "grep",
            json!({ "pattern": "needle", "include": "main.*" }),
            &project.context(),
        )
        .await
        .expect("greps");
    assert_eq!(out.metadata["matches"], 1);
    let error = Registry::builtin()
        .run("grep", json!({ "pattern": "(" }), &project.context())
        .await
        .expect_err("bad regex");
    assert!(
        error.to_string().starts_with(
            "The grep tool was called with invalid arguments: bad regular expression `(`"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn glob_and_grep_cap_at_100_results() {
    let project = Project::new();
    for n in 0..150 {
        project.write(&format!("files/f{n:03}.txt"), "match me\n");
    }
    let ctx = project.context();
    let out = Registry::builtin()
        .run("glob", json!({ "pattern": "*.txt" }), &ctx)
        .await
        .expect("globs");
    let (list, note) = out.output.split_once("\n\n").expect("a truncation note");
    assert_eq!(list.lines().count(), 100);
    assert_eq!(
        note,
        "(Results are truncated: showing first 100 results. Consider using a more specific path or pattern.)"
    );
    assert_eq!(out.metadata["count"], 150);
    let out = Registry::builtin()
        .run("grep", json!({ "pattern": "match" }), &ctx)
        .await
        .expect("greps");
    let (list, note) = out.output.split_once("\n\n").expect("a truncation note");
    assert_eq!(list.lines().count(), 101, "header + 100 matches");
    assert!(list.starts_with("Found 150 matches\n"));
    assert_eq!(
        note,
        "(Results are truncated: showing first 100 matches. Consider using a more specific path or pattern.)"
    );
}

#[tokio::test]
async fn list_draws_an_ignore_aware_tree() {
    let project = ignored_project();
    let out = Registry::builtin()
        .run("list", json!({}), &project.context())
        .await
        .expect("lists");
    assert_eq!(
        out.output,
        format!(
            "{}/\n  src/\n    lib.rs\n    main.rs",
            project.root().display()
        )
    );
}

#[tokio::test]
async fn list_caps_at_100_files() {
    let project = Project::new();
    for n in 0..120 {
        project.write(&format!("f{n:03}"), "");
    }
    let out = Registry::builtin()
        .run("list", json!({}), &project.context())
        .await
        .expect("lists");
    assert!(
        out.output
            .ends_with("(Showing 100 of 120 files. List a subdirectory or use glob to see more.)"),
        "{}",
        out.output
    );
    assert_eq!(
        out.output
            .lines()
            .filter(|line| line.starts_with("  f"))
            .count(),
        100
    );
}

#[tokio::test]
async fn todowrite_keeps_the_list_in_metadata() {
    let project = Project::new();
    let todos = json!([
        { "content": "write tests", "status": "completed", "priority": "high" },
        { "content": "fix bug", "status": "in_progress", "priority": "medium" }
    ]);
    let out = Registry::builtin()
        .run("todowrite", json!({ "todos": todos }), &project.context())
        .await
        .expect("writes todos");
    assert_eq!(out.title, "1 todos");
    assert_eq!(out.metadata["todos"], todos);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out.output).expect("json output"),
        todos
    );
    let error = Registry::builtin()
        .run(
            "todowrite",
            json!({ "todos": [{ "content": "x", "status": "done", "priority": "low" }] }),
            &project.context(),
        )
        .await
        .expect_err("bad status");
    assert!(
        error.to_string().contains("unknown variant `done`"),
        "{error}"
    );
}
