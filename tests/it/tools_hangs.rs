//! Tool calls that used to hang for good: a read or write of a FIFO (opening
//! it blocks until a writer comes) and a write over a large file (the line
//! diff was quadratic). Each must end promptly with a clear result.

use crate::tools_common;

use std::time::Duration;

use cairn::tool::{Registry, ToolError, ToolOutput};
use serde_json::json;
use tools_common::Project;

/// Far above what each call needs now; the old code never finished.
const PROMPT: Duration = Duration::from_secs(20);

fn mkfifo(project: &Project, name: &str) -> std::path::PathBuf {
    let path = project.root().join(name);
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
    path
}

/// Runs one tool call on its own thread and runtime, so a call that blocks
/// its thread (the old FIFO open, the old quadratic diff) fails the test
/// after [`PROMPT`] instead of hanging it.
fn run_tool(
    project: &Project,
    tool: &'static str,
    input: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    let ctx = project.context();
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let out = runtime.block_on(Registry::builtin().run(tool, input, &ctx));
        let _ = done.send(out);
    });
    result
        .recv_timeout(PROMPT)
        .unwrap_or_else(|_| panic!("{tool} still running after {PROMPT:?}"))
}

fn failure(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a clear failure, got {other:?}"),
    }
}

#[test]
fn reading_a_fifo_is_refused_instead_of_blocking() {
    let project = Project::new();
    mkfifo(&project, "pipe");
    let error = failure(run_tool(&project, "read", json!({ "path": "pipe" })));
    assert!(error.contains("named pipe (FIFO)"), "{error}");
}

#[test]
fn writing_over_a_fifo_is_refused_instead_of_blocking() {
    let project = Project::new();
    mkfifo(&project, "pipe");
    let error = failure(run_tool(
        &project,
        "write",
        json!({ "path": "pipe", "content": "hello\n" }),
    ));
    assert!(error.contains("named pipe (FIFO)"), "{error}");
}

fn distinct_lines(prefix: &str, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut n = 0;
    while text.len() < bytes {
        text.push_str(&format!("{prefix} {n}\n"));
        n += 1;
    }
    text
}

#[test]
fn writing_over_a_large_file_shows_a_summary_instead_of_diffing() {
    let project = Project::new();
    let path = project.write("big.txt", distinct_lines("old", 8 * 1024 * 1024));
    let content = distinct_lines("new", 8 * 1024 * 1024);
    let out = run_tool(
        &project,
        "write",
        json!({ "path": "big.txt", "content": content.clone() }),
    )
    .expect("writes");
    let diff = out.metadata["diff"].as_str().expect("a diff string");
    assert!(diff.contains("diff not shown"), "{diff}");
    assert!(
        out.output.starts_with("Overwrote big.txt"),
        "{}",
        out.output
    );
    assert_eq!(std::fs::read_to_string(path).expect("read back"), content);
}

#[test]
fn a_full_rewrite_under_the_size_cap_is_diffed_within_a_deadline() {
    let project = Project::new();
    project.write("mid.txt", distinct_lines("old", 1024 * 1024));
    let content = distinct_lines("new", 1024 * 1024);
    let out = run_tool(
        &project,
        "write",
        json!({ "path": "mid.txt", "content": content }),
    )
    .expect("writes");
    let diff = out.metadata["diff"].as_str().expect("a diff string");
    assert!(diff.contains("+new 0\n"), "the diff is a real one");
}
