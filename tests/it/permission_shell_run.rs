//! Bash permissions through the real binary (issue #11): `cairn run` with no
//! terminal, the model a scripted server asking for commands that hide a
//! write or a second command behind an allowed one. Nothing may be written,
//! and the model must read why in the tool result of its next request.

use crate::project::{Project, describe};
use crate::scenario;
use crate::support;

use scenario::{text, tool_call};
use serde_json::json;
use support::ScriptedServer;

/// The tool result the model received for `call_id`, from the last request.
pub(crate) fn tool_result(server: &ScriptedServer, call_id: &str) -> String {
    let requests = server.requests();
    let last = requests.last().expect("at least one request").json();
    let messages = last["messages"].as_array().expect("messages array");
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .or_else(|| {
            messages
                .iter()
                .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
                .map(|m| m["content"].to_string())
        })
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {last}"))
}

const ALLOW_RULES: &str = "[permission.bash]\n\"*\" = \"ask\"\n\"git status *\" = \"allow\"\n\
                           \"ls *\" = \"allow\"\n\"cargo test *\" = \"allow\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_writes_behind_an_allowed_command_are_refused_and_explained() {
    let attacks = [
        ("git status & touch x", "`touch x`"),
        ("git status `touch x`", "the `` `touch x` `` substitution"),
        ("git status $(touch x)", "the `$(touch x)` substitution"),
        ("git status > x", "`>` writes to x"),
        ("git status; touch x", "`touch x`"),
        ("git status | tee x", "`tee x`"),
    ];
    let mut script: Vec<_> = attacks
        .iter()
        .enumerate()
        .map(|(i, (command, _))| {
            tool_call(
                &format!("call_{i}"),
                "bash",
                json!({ "command": command }),
                1_000,
            )
        })
        .collect();
    script.push(tool_call(
        "call_ok",
        "bash",
        json!({ "command": "git status -s" }),
        1_000,
    ));
    script.push(text("Done.", 1_000));
    let server = ScriptedServer::start(script).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", ALLOW_RULES);

    let output = project.cairn(&["run", "check the tree"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        !project.root.path().join("x").exists(),
        "a hidden write ran: {}",
        describe(&output)
    );
    for (i, (command, reason)) in attacks.iter().enumerate() {
        let result = tool_result(&server, &format!("call_{i}"));
        assert!(result.contains("refused"), "{command}: {result}");
        assert!(
            result.contains(reason),
            "{command}: expected {reason:?} in {result}"
        );
        assert!(
            result.contains("[permission."),
            "{command}: no config line in {result}"
        );
    }
    // The allowed command itself still runs.
    let allowed = tool_result(&server, "call_ok");
    assert!(!allowed.contains("refused"), "{allowed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_holds_under_yolo_whatever_the_flag_order() {
    let server = ScriptedServer::start([
        tool_call("call_1", "bash", json!({ "command": "rm -fr dir" }), 1_000),
        tool_call(
            "call_2",
            "bash",
            json!({ "command": "true & /bin/rm -r -f dir" }),
            1_000,
        ),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "", "[permission.bash]\n\"rm -rf *\" = \"deny\"\n");
    let dir = project.root.path().join("dir");
    std::fs::create_dir(&dir).expect("create dir");
    std::fs::write(dir.join("keep.txt"), "keep").expect("write keep.txt");

    let output = project.cairn(&["run", "--yolo", "clean up"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        dir.join("keep.txt").exists(),
        "the denied rm ran: {}",
        describe(&output)
    );
    for call in ["call_1", "call_2"] {
        let result = tool_result(&server, call);
        assert!(
            result.contains("[permission.bash] \"rm -rf *\" = \"deny\""),
            "{call}: {result}"
        );
    }
}

/// Headless stays fail-closed, and the refusal names the exact config lines
/// that would allow the call, whole, on stderr and in the model's result
/// (stderr showed only the first line, cut before the config).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_ask_prints_the_whole_config_line_that_would_allow_it() {
    let server = ScriptedServer::start([
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "touch made-here" }),
            1_000,
        ),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted_with(&server, "", "");
    let output = project.cairn(&["run", "make a file"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(!project.root.path().join("made-here").exists());
    let config_lines = "[permission.bash]\n\"touch made-here\" = \"allow\"";
    let stderr = String::from_utf8_lossy(&output.stderr);
    let unindented: String = stderr.lines().map(str::trim).collect::<Vec<_>>().join("\n");
    assert!(
        unindented.contains(config_lines),
        "stderr lacks the config lines: {}",
        describe(&output)
    );
    let result = tool_result(&server, "call_1");
    let result: String =
        serde_json::from_str(&format!("\"{}\"", result.trim_matches('"'))).unwrap_or(result);
    assert!(result.contains(config_lines), "tool result: {result}");
}

/// The output a tool saved in one project's session is outside any other
/// project: reading it from there asks (refused without a terminal), while
/// the session that saved it reads it unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_projects_saved_output_is_outside_the_project() {
    let server = ScriptedServer::start([
        tool_call(
            "call_big",
            "bash",
            json!({ "command": "seq 1 100000" }),
            1_000,
        ),
        text("Counted.", 1_000),
    ])
    .await;
    let first = Project::new();
    first.use_scripted_with(&server, "", "[permission.bash]\n\"seq *\" = \"allow\"\n");
    let output = first.cairn(&["run", "count"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let result = tool_result(&server, "call_big");
    let saved = result
        .split("saved to: ")
        .nth(1)
        .and_then(|rest| rest.split("\\n").next())
        .unwrap_or_else(|| panic!("no saved path in {result}"))
        .to_string();
    assert!(saved.contains("tool-output"), "{saved}");

    // Its own session reads it unasked.
    server.push(tool_call(
        "call_own",
        "read",
        json!({ "path": saved }),
        1_000,
    ));
    server.push(text("Read it.", 1_000));
    let output = first.cairn(&["run", "--continue", "read it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let own = tool_result(&server, "call_own");
    assert!(own.contains("99999"), "{own}");

    // Another project, same data directory: asked, and refused headless.
    server.push(tool_call(
        "call_other",
        "read",
        json!({ "path": saved }),
        1_000,
    ));
    server.push(text("Could not.", 1_000));
    let second = Project::new();
    second.use_scripted_with(&server, "", "");
    // Same data directory as the first project.
    let mut command = second.command(&["run", "read the other project's output"]);
    command.env("CAIRN_DATA_DIR", first.data_dir());
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("cairn finishes")
        .expect("run cairn");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let other = tool_result(&server, "call_other");
    assert!(other.contains("external_directory"), "{other}");
    assert!(
        !other.contains("99999"),
        "read another project's output: {other}"
    );
}

/// An agent file's `permission:` holds when the agent is the one the user
/// talks to, not only as a subagent: a primary agent that denies `bash` is
/// not talked out of it by the model, even under `--yolo`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_agents_own_deny_holds() {
    let touch = || tool_call("call_1", "bash", json!({ "command": "touch made" }), 1_000);
    let server = ScriptedServer::start([touch(), text("Done.", 1_000)]).await;
    let project = Project::new();
    project.use_scripted(&server);
    let agents = project.path(".cairn/agents");
    std::fs::create_dir_all(&agents).expect("create agents");
    std::fs::write(
        agents.join("careful.md"),
        "---\ndescription: reads, never runs\nmode: primary\npermission:\n  bash: deny\n---\nBe careful.\n",
    )
    .expect("write agent file");

    let output = project
        .cairn(&["run", "--yolo", "--agent", "careful", "make it"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        !project.path("made").exists(),
        "the agent's deny did not hold: {}",
        describe(&output)
    );
    assert!(
        tool_result(&server, "call_1").contains("deny"),
        "{}",
        tool_result(&server, "call_1")
    );

    // The same call from the default agent runs: the deny is the agent's.
    server.push(touch());
    server.push(text("Done.", 1_000));
    let output = project.cairn(&["run", "--yolo", "make it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(project.path("made").exists(), "{}", describe(&output));
}
