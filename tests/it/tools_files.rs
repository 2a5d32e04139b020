//! read, write and edit against real files in a temp project.

use crate::tools_common;

use cairn::tool::{Registry, ToolError};
use serde_json::json;
use tools_common::Project;

fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
    lines.map(|n| format!("line {n}\n")).collect()
}

#[tokio::test]
async fn read_numbers_lines_and_says_the_file_ended() {
    let project = Project::new();
    let path = project.write("a.txt", "alpha\nbeta\n");
    let out = Registry::builtin()
        .run("read", json!({ "path": "a.txt" }), &project.context())
        .await
        .expect("reads");
    let expected = format!(
        "<path>{}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n\n(End of file - total 2 lines)\n</content>",
        std::fs::canonicalize(path).expect("exists").display()
    );
    assert_eq!(out.output, expected);
    assert_eq!(out.title, "a.txt");
}

#[tokio::test]
async fn read_pages_with_offset_and_limit() {
    let project = Project::new();
    project.write("long.txt", numbered(1..=10));
    let ctx = project.context();
    let out = Registry::builtin()
        .run(
            "read",
            json!({ "path": "long.txt", "offset": 4, "limit": 3 }),
            &ctx,
        )
        .await
        .expect("reads");
    assert!(out.output.contains("\n4: line 4\n5: line 5\n6: line 6\n\n(Showing lines 4-6 of 10. Use offset=7 to continue.)"), "{}", out.output);
    assert!(!out.output.contains("3: line 3"));
    let error = Registry::builtin()
        .run("read", json!({ "path": "long.txt", "offset": 50 }), &ctx)
        .await
        .expect_err("past the end");
    assert_eq!(
        error.to_string(),
        format!(
            "Offset 50 is past the end of {} (10 lines).",
            project.root().join("long.txt").display()
        )
    );
}

#[tokio::test]
async fn read_defaults_to_2000_lines_and_cuts_long_lines() {
    let project = Project::new();
    project.write("big.txt", numbered(1..=2500));
    project.write("wide.txt", format!("{}\n", "x".repeat(2100)));
    let ctx = project.context();
    let out = Registry::builtin()
        .run("read", json!({ "path": "big.txt" }), &ctx)
        .await
        .expect("reads");
    assert!(out.output.contains(
        "\n2000: line 2000\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)"
    ));
    let out = Registry::builtin()
        .run("read", json!({ "path": "wide.txt" }), &ctx)
        .await
        .expect("reads");
    assert!(out.output.contains(&format!(
        "1: {}... (line truncated to 2000 chars)\n",
        "x".repeat(2000)
    )));
}

#[tokio::test]
async fn read_caps_output_at_50_kb() {
    let project = Project::new();
    let line = "y".repeat(999);
    project.write("heavy.txt", format!("{line}\n").repeat(100));
    let out = Registry::builtin()
        .run("read", json!({ "path": "heavy.txt" }), &project.context())
        .await
        .expect("reads");
    // Entries take 1003 bytes (lines 1-9) or 1004: lines 1-51 take 51,195 of 51,200.
    assert!(
        out.output
            .contains("(Output capped at 50 KB. Showing lines 1-51. Use offset=52 to continue.)"),
        "{}",
        &out.output[out.output.len() - 200..]
    );
    assert_eq!(out.metadata["truncated"], true);
}

#[tokio::test]
async fn read_refuses_binary_and_returns_images_as_attachments() {
    let project = Project::new();
    project.write("blob.bin", [0u8, 1, 2, 3, 0, 255]);
    let png = [0x89u8, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0];
    project.write("pic.png", png);
    let ctx = project.context();
    let error = Registry::builtin()
        .run("read", json!({ "path": "blob.bin" }), &ctx)
        .await
        .expect_err("binary");
    assert!(
        error.to_string().starts_with("Cannot read binary file: "),
        "{error}"
    );
    let out = Registry::builtin()
        .run("read", json!({ "path": "pic.png" }), &ctx)
        .await
        .expect("image");
    assert_eq!(out.attachments.len(), 1);
    assert_eq!(out.attachments[0].mime, "image/png");
    assert_eq!(
        out.attachments[0].url,
        "data:image/png;base64,iVBORw0KGgoAAAAA"
    );
}

#[tokio::test]
async fn read_missing_file_suggests_similar_names_and_lists_directories() {
    let project = Project::new();
    project.write("src/config.rs", "");
    project.write("src/main.rs", "");
    let ctx = project.context();
    let error = Registry::builtin()
        .run("read", json!({ "path": "src/config.toml" }), &ctx)
        .await
        .expect_err("missing");
    let src = project.root().join("src");
    assert_eq!(
        error.to_string(),
        format!(
            "File not found: {0}/config.toml\n\nDid you mean one of these?\n{0}/config.rs",
            src.display()
        )
    );
    let out = Registry::builtin()
        .run("read", json!({ "path": "src" }), &ctx)
        .await
        .expect("dir");
    assert!(
        out.output
            .contains("<type>directory</type>\n<entries>\nconfig.rs\nmain.rs\n(2 entries)"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn write_creates_directories_and_reports() {
    let project = Project::new();
    let ctx = project.context();
    let out = Registry::builtin()
        .run(
            "write",
            json!({ "path": "deep/dir/new.txt", "content": "a\nb\n" }),
            &ctx,
        )
        .await
        .expect("writes");
    assert_eq!(
        std::fs::read_to_string(project.dir.path().join("deep/dir/new.txt")).expect("written"),
        "a\nb\n"
    );
    assert_eq!(out.output, "Created deep/dir/new.txt (4 bytes, 2 lines).");
    let out = Registry::builtin()
        .run(
            "write",
            json!({ "path": "deep/dir/new.txt", "content": "c\n" }),
            &ctx,
        )
        .await
        .expect("writes");
    assert!(out.output.starts_with("Overwrote"));
    assert!(
        out.metadata["diff"]
            .as_str()
            .expect("diff")
            .contains("-a\n-b\n+c\n")
    );
}

#[tokio::test]
async fn edit_replaces_exactly_and_returns_a_diff() {
    let project = Project::new();
    let path = project.write("lib.rs", "fn a() {}\nfn b() {}\n");
    let out = Registry::builtin()
        .run(
            "edit",
            json!({ "path": "lib.rs", "old_string": "fn b() {}", "new_string": "fn c() {}" }),
            &project.context(),
        )
        .await
        .expect("edits");
    assert_eq!(
        std::fs::read_to_string(path).expect("file"),
        "fn a() {}\nfn c() {}\n"
    );
    assert_eq!(out.output, "Edited lib.rs: 1 replacement(s), +1 -1 lines.");
    assert_eq!(
        out.metadata["diff"],
        "--- lib.rs\n+++ lib.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn c() {}\n"
    );
}

#[tokio::test]
async fn edit_refuses_missing_and_ambiguous_text() {
    let project = Project::new();
    let path = project.write("x.txt", "same\nsame\nsame\n");
    let ctx = project.context();
    let error = Registry::builtin()
        .run(
            "edit",
            json!({ "path": "x.txt", "old_string": "other", "new_string": "y" }),
            &ctx,
        )
        .await
        .expect_err("missing");
    assert!(
        error
            .to_string()
            .starts_with("Could not find old_string in x.txt."),
        "{error}"
    );
    let error = Registry::builtin()
        .run(
            "edit",
            json!({ "path": "x.txt", "old_string": "same", "new_string": "y" }),
            &ctx,
        )
        .await
        .expect_err("ambiguous");
    assert!(
        error
            .to_string()
            .starts_with("Found 3 matches of old_string in x.txt. Include more surrounding lines"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("file"),
        "same\nsame\nsame\n",
        "a refused edit changes nothing"
    );
    let out = Registry::builtin()
        .run("edit", json!({ "path": "x.txt", "old_string": "same", "new_string": "y", "replace_all": true }), &ctx)
        .await
        .expect("replace all");
    assert_eq!(out.metadata["replacements"], 3);
    assert_eq!(std::fs::read_to_string(&path).expect("file"), "y\ny\ny\n");
}

#[tokio::test]
async fn edit_falls_back_to_whitespace_trimmed_lines() {
    let project = Project::new();
    let path = project.write("f.py", "def f():\n    if x:\n        return 1\n");
    Registry::builtin()
        .run("edit", json!({ "path": "f.py", "old_string": "if x:\n  return 1", "new_string": "    return 2" }), &project.context())
        .await
        .expect("trimmed match");
    assert_eq!(
        std::fs::read_to_string(path).expect("file"),
        "def f():\n    return 2\n"
    );
}

#[tokio::test]
async fn edit_asks_the_edit_permission() {
    let project = Project::new();
    let path = project.write("keep.txt", "old\n");
    let ctx = project.context_with(
        cairn::permission::default_rules(),
        cairn::permission::Mode::Headless,
    );
    let error = Registry::builtin()
        .run(
            "edit",
            json!({ "path": "keep.txt", "old_string": "old", "new_string": "new" }),
            &ctx,
        )
        .await
        .expect_err("headless cannot ask");
    assert!(
        matches!(error, ToolError::PermissionDenied { .. }),
        "{error:?}"
    );
    assert_eq!(std::fs::read_to_string(path).expect("file"), "old\n");
}

#[tokio::test]
async fn reading_out_of_the_project_or_an_env_file_needs_permission() {
    let project = Project::new();
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "s3cret").expect("write");
    std::os::unix::fs::symlink(outside.path(), project.dir.path().join("link")).expect("symlink");
    project.write(".env", "KEY=1\n");
    project.write(".env.example", "KEY=\n");
    let ctx = project.context_with(
        cairn::permission::default_rules(),
        cairn::permission::Mode::Headless,
    );
    for path in ["link/secret.txt", "../outside.txt", ".env"] {
        let error = Registry::builtin()
            .run("read", json!({ "path": path }), &ctx)
            .await
            .expect_err(path);
        let ToolError::PermissionDenied { message } = &error else {
            panic!("{path}: {error:?}")
        };
        let wanted = if path == ".env" {
            "Permission `read`"
        } else {
            "Permission `external_directory`"
        };
        assert!(message.starts_with(wanted), "{path}: {message}");
    }
    Registry::builtin()
        .run("read", json!({ "path": ".env.example" }), &ctx)
        .await
        .expect("examples are allowed");
    // The spill directory is outside the project but always readable.
    let (spilled, _) =
        cairn::tool::truncate::create_spill_file(&ctx.tool_output_dir).expect("spill");
    Registry::builtin()
        .run(
            "read",
            json!({ "path": spilled.display().to_string() }),
            &ctx,
        )
        .await
        .expect("spill files are readable");
}

#[tokio::test]
async fn read_refuses_an_image_too_large_to_send_instead_of_loading_it() {
    let project = Project::new();
    let path = project.write("huge.png", b"\x89PNG\r\n\x1a\n");
    // A sparse 64 MB file: big on paper, nothing to write.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_len(64 * 1024 * 1024))
        .expect("grow huge.png");
    let error = Registry::builtin()
        .run("read", json!({ "path": "huge.png" }), &project.context())
        .await
        .expect_err("too large");
    let message = error.to_string();
    assert!(
        message.starts_with("Image too large to read: ") && message.contains("67108864 bytes"),
        "{message}"
    );
}

/// Runs `tool` with `input` in the background; returns the ask it raised
/// (None when it finished without asking) and the running call.
async fn ask_of(
    ctx: &cairn::tool::ToolScope,
    events: &mut tokio::sync::broadcast::Receiver<cairn::bus::Event>,
    tool: &'static str,
    input: serde_json::Value,
) -> (
    Option<std::sync::Arc<cairn::permission::PermissionRequest>>,
    tokio::task::JoinHandle<Result<cairn::tool::ToolOutput, ToolError>>,
) {
    let scope = ctx.clone();
    let mut call = tokio::spawn(async move { Registry::builtin().run(tool, input, &scope).await });
    let deadline = std::time::Duration::from_secs(10);
    loop {
        tokio::select! {
            event = events.recv() => {
                if let Ok(cairn::bus::Event::PermissionAsked { request, .. }) = event {
                    return (Some(request), call);
                }
            }
            _ = &mut call => {
                return (None, tokio::spawn(async { Err(ToolError::InvalidArguments {
                    tool: tool.into(),
                    detail: "finished without asking".into(),
                }) }));
            }
            () = tokio::time::sleep(deadline) => panic!("{tool} neither asked nor finished"),
        }
    }
}

/// The model names the file; a file whose name holds `*` or `?` must not
/// turn "always" into a pattern over other files (`edit src/*.rs` once, then
/// every `.rs` file edited without asking).
#[tokio::test]
async fn an_always_answer_for_a_wildcard_named_file_covers_no_other_file() {
    use cairn::permission::{Mode, PermissionAnswer, Permissions, default_rules};
    let outside = tempfile::tempdir().expect("outside");
    std::fs::create_dir_all(outside.path().join("o*")).expect("odd dir");
    std::fs::create_dir_all(outside.path().join("other")).expect("dir");
    std::fs::write(outside.path().join("o*/a.txt"), "a").expect("write");
    std::fs::write(outside.path().join("other/secret.txt"), "s").expect("write");
    let odd = outside.path().join("o*/a.txt").display().to_string();
    let secret = outside
        .path()
        .join("other/secret.txt")
        .display()
        .to_string();
    let cases: Vec<(&str, serde_json::Value, &str, serde_json::Value)> = vec![
        (
            "edit",
            json!({"path": "src/*.rs", "old_string": "a", "new_string": "b"}),
            "edit",
            json!({"path": "src/main.rs", "old_string": "a", "new_string": "b"}),
        ),
        (
            "write",
            json!({"path": "*", "content": "x"}),
            "write",
            json!({"path": "keep.txt", "content": "x"}),
        ),
        (
            "write",
            json!({"path": "?.txt", "content": "x"}),
            "edit",
            json!({"path": "k.txt", "old_string": "a", "new_string": "b"}),
        ),
        (
            "read",
            json!({"path": ".env.*"}),
            "read",
            json!({"path": ".env.production"}),
        ),
        (
            "read",
            json!({"path": odd}),
            "read",
            json!({"path": secret}),
        ),
    ];
    for (tool, input, later_tool, later) in cases {
        let project = Project::new();
        for name in ["src/*.rs", "src/main.rs", "k.txt", "keep.txt", ".env.*"] {
            project.write(name, "a\n");
        }
        project.write(".env.production", "KEY=1\n");
        let bus = cairn::bus::Bus::new();
        let mut events = bus.subscribe();
        let mut ctx = project.context();
        ctx.permissions =
            std::sync::Arc::new(Permissions::new(default_rules(), bus, Mode::Interactive));
        let (asked, call) = ask_of(&ctx, &mut events, tool, input.clone()).await;
        let asked = asked.unwrap_or_else(|| panic!("{tool} {input} did not ask"));
        assert!(
            asked.always.iter().all(|p| !p.contains(['*', '?'])),
            "{tool} {input}: offered {:?}",
            asked.always
        );
        ctx.permissions.answer(&asked.id, PermissionAnswer::Always);
        let _ = call.await.expect("joined");
        let (again, call) = ask_of(&ctx, &mut events, later_tool, later.clone()).await;
        assert!(
            again.is_some(),
            "after always for {tool} {input}, {later_tool} {later} ran without asking"
        );
        call.abort();
    }
}
