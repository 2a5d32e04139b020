//! Central truncation through the registry (head, exact texts, spill file)
//! and the registry's own contract.

use crate::tools_common;

use std::time::Duration;

use cairn::tool::truncate::{self, Direction};
use cairn::tool::{OutputLimits, Registry, ToolError};
use serde_json::json;
use tools_common::{Project, spill_files};

fn lines(count: usize) -> String {
    (1..=count).map(|n| format!("{n}\n")).collect()
}

#[tokio::test]
async fn exactly_2000_lines_pass_and_2001_are_cut_with_the_hint() {
    let project = Project::new();
    project.write("2000.txt", lines(2000));
    project.write("2001.txt", lines(2001));
    let ctx = project.context();
    let out = Registry::builtin()
        .run("bash", json!({ "command": "cat 2000.txt" }), &ctx)
        .await
        .expect("runs");
    assert_eq!(out.metadata["truncated"], false);
    assert_eq!(out.output, lines(2000));
    let cut = truncate::truncate(
        &lines(2001),
        &OutputLimits::default(),
        Direction::Head,
        &ctx.tool_output_dir,
    )
    .expect("spills");
    let path = cut.output_path.expect("spilled");
    assert_eq!(
        cut.text,
        format!(
            "{}\n\n...1 lines truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: {}\nUse Grep to search the full content or Read with offset/limit to view specific sections.",
            lines(2000).trim_end(),
            path.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&path).expect("spill"), lines(2001));
}

#[test]
fn the_byte_cap_is_exact_at_50_kib() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = OutputLimits::default();
    let fits = "a".repeat(50 * 1024);
    let cut = truncate::truncate(&fits, &limits, Direction::Head, dir.path()).expect("no spill");
    assert_eq!((cut.text.as_str(), cut.output_path), (fits.as_str(), None));
    // Two lines: the first fills the cap minus one byte, so the newline and second line do not fit.
    let over = format!("{}\nb", "a".repeat(50 * 1024 - 1));
    let cut = truncate::truncate(&over, &limits, Direction::Head, dir.path()).expect("spills");
    assert!(
        cut.text.starts_with(&format!(
            "{}\n\n...2 bytes truncated...",
            "a".repeat(50 * 1024 - 1)
        )),
        "{}",
        &cut.text[50 * 1024 - 10..]
    );
    let tail = truncate::truncate(&over, &limits, Direction::Tail, dir.path()).expect("spills");
    assert!(
        tail.text
            .starts_with("...51200 bytes truncated...\n\nThe tool call succeeded")
    );
    assert!(tail.text.ends_with("\n\nb"));
}

#[tokio::test]
async fn the_registry_truncates_tool_output_centrally() {
    let project = Project::new();
    // A read of a directory with many long names passes the 50 KiB cap: the registry cuts it.
    for n in 0..400 {
        project.write(&format!("dir/{}{n:04}", "n".repeat(200)), "");
    }
    let ctx = project.context();
    let out = Registry::builtin()
        .run("read", json!({ "path": "dir" }), &ctx)
        .await
        .expect("reads");
    assert_eq!(out.metadata["truncated"], true);
    let spilled = spill_files(&ctx.tool_output_dir);
    assert_eq!(spilled.len(), 1);
    assert_eq!(
        out.metadata["output_path"],
        spilled[0].display().to_string()
    );
    assert!(
        out.output
            .contains(&format!("Full output saved to: {}\n", spilled[0].display()))
    );
    let full = std::fs::read_to_string(&spilled[0]).expect("spill");
    assert!(full.ends_with("(400 entries)\n</entries>"));
}

#[test]
fn spill_files_are_private_and_swept_after_7_days() {
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().expect("tempdir");
    let dir = base.path().join("tool-output");
    let (old, _) = truncate::create_spill_file(&dir).expect("creates");
    let (new, _) = truncate::create_spill_file(&dir).expect("creates");
    assert_eq!(
        std::fs::metadata(&dir).expect("dir").permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&old).expect("file").permissions().mode() & 0o777,
        0o600
    );
    assert!(old.file_name() < new.file_name(), "names ascend");
    let eight_days = std::time::SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .expect("open")
        .set_modified(eight_days)
        .expect("age");
    assert_eq!(
        truncate::sweep(&dir, truncate::RETENTION).expect("sweeps"),
        1
    );
    assert!(!old.exists());
    assert!(new.exists());
    assert_eq!(
        truncate::sweep(&base.path().join("missing"), truncate::RETENTION).expect("nothing"),
        0
    );
}

#[tokio::test]
async fn unknown_tools_name_the_real_ones_and_specs_are_sorted() {
    let project = Project::new();
    let registry = Registry::builtin();
    let error = registry
        .run("shell", json!({}), &project.context())
        .await
        .expect_err("unknown");
    assert!(matches!(error, ToolError::UnknownTool { .. }));
    assert_eq!(
        error.to_string(),
        "Unknown tool `shell`. The available tools are: bash, edit, glob, grep, list, read, skill, todowrite, write."
    );
    let read_only: Vec<String> = registry
        .specs(|tool| tool.is_read_only())
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    assert_eq!(
        read_only,
        ["glob", "grep", "list", "read", "skill", "todowrite"]
    );
    for spec in registry.specs(|_| true) {
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert!(!spec.description.is_empty());
    }
}
