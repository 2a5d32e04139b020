//! OpenCode's MCP configuration as its users write it (issue #32): the
//! global `~/.config/opencode/opencode.jsonc` (comments, trailing commas)
//! is read as the user's own, `{env:VAR}` and `{file:path}` are expanded in
//! a server's entry, and a `command` written as one string (OpenCode wants
//! an array) is said in `/mcp`, not silently dropped. Shapes follow
//! OpenCode's documented `mcp` section (`type`, `command` array,
//! `environment`, `enabled`), as in sst/opencode's own `opencode.json`.

use crate::mcp_client::fixture;
use crate::project::{Project, describe, text_of};
use crate::scenario;
use crate::support::ScriptedServer;

/// `{env:…}` and `{file:…}` name where the fixture records its start: the
/// files appear only if both were expanded before the server ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_opencode_jsonc_env_and_file_references_and_a_string_command() {
    let server = ScriptedServer::start([scenario::text("Hi.", 300)]).await;
    let project = Project::new();
    let marks = project.path("marks");
    std::fs::create_dir_all(&marks).expect("marks dir");
    std::fs::write(
        project.path("where.txt"),
        format!("{}\n", marks.join("from-file").display()),
    )
    .expect("write where.txt");
    let global = project.home.path().join("config/opencode");
    std::fs::create_dir_all(&global).expect("global opencode dir");
    std::fs::write(
        global.join("opencode.jsonc"),
        format!(
            "{{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // my servers, everywhere\n  \"mcp\": {{\n    \"glob\": {{\n      \"type\": \"local\",\n      \"command\": [\"{fx}\", \"--starts-file\", \"{{env:CAIRN_TEST_MARKS}}/from-env\"],\n      \"enabled\": true,\n    }},\n  }},\n}}\n",
            fx = fixture()
        ),
    )
    .expect("write the global opencode.jsonc");
    std::fs::write(
        project.path("opencode.json"),
        serde_json::json!({
            "$schema": "https://opencode.ai/config.json",
            "mcp": {
                "filed": {"type": "local", "command": [fixture(), "--starts-file", "{file:where.txt}"]},
                "oneline": {"type": "local", "command": format!("{} --odd-names", fixture())}
            }
        })
        .to_string(),
    )
    .expect("write opencode.json");
    project.use_scripted_with(&server, "yolo = true\n", "");
    let output = project
        .command(&["run", "/mcp"])
        .env("CAIRN_TEST_MARKS", &marks)
        .output()
        .await
        .expect("run cairn");
    let listed = text_of(&output.stdout);
    assert!(listed.contains("glob: ready"), "{}", describe(&output));
    assert!(listed.contains("filed: ready"), "{}", describe(&output));
    assert!(
        listed.contains("oneline: failed") && listed.contains("array"),
        "{}",
        describe(&output)
    );
    assert!(marks.join("from-env").exists(), "{{env:…}} expanded");
    assert!(marks.join("from-file").exists(), "{{file:…}} expanded");
}
