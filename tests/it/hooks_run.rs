//! Hooks in Claude Code's format through the real binary (issue #32): a
//! repository's `.claude/settings.json`, the user's `~/.claude/settings.json`
//! and cairn's own `[hooks]`, with the scripted model asking for tools. The
//! files are in the shape of public Claude Code settings files: `matcher`
//! groups of `{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/x.sh"}`.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::permission_shell_run::tool_result;
use crate::project::{Project, describe, text_of};
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;

use serde_json::{Value, json};

/// Writes an executable hook script in the project's `.claude/hooks/`.
fn script(project: &Project, name: &str, body: &str) {
    let dir = project.path(".claude/hooks");
    std::fs::create_dir_all(&dir).expect("hooks dir");
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write hook");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The command that runs `name` from the project's hooks folder, as Claude
/// Code's own examples spell it.
fn run(name: &str) -> String {
    format!("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/{name}")
}

/// `.claude/settings.json` with `hooks`.
fn settings(project: &Project, hooks: Value) {
    std::fs::create_dir_all(project.path(".claude")).expect(".claude");
    let text = serde_json::to_string_pretty(&json!({ "hooks": hooks })).expect("json");
    std::fs::write(project.path(".claude/settings.json"), text).expect("write settings");
}

/// A hook that appends its stdin (one JSON object) as a line to `log`.
const LOG: &str =
    "cat >> \"$CLAUDE_PROJECT_DIR/hooks.log\"; echo >> \"$CLAUDE_PROJECT_DIR/hooks.log\"";

fn group(matcher: Option<&str>, command: &str) -> Value {
    let hook = json!({ "type": "command", "command": command });
    match matcher {
        Some(matcher) => json!({ "matcher": matcher, "hooks": [hook] }),
        None => json!({ "hooks": [hook] }),
    }
}

/// The JSON lines a logging hook wrote.
fn logged(project: &Project) -> Vec<Value> {
    project
        .read("hooks.log")
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn events(log: &[Value]) -> Vec<String> {
    log.iter()
        .map(|v| v["hook_event_name"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_fires_with_claude_codes_json_on_stdin() {
    let server = ScriptedServer::start(vec![
        tool_call("call_0", "bash", json!({ "command": "echo hi" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    script(&project, "log.sh", LOG);
    let log = run("log.sh");
    settings(
        &project,
        json!({
            "SessionStart": [group(None, &log)],
            "UserPromptSubmit": [group(None, &log)],
            "PreToolUse": [group(Some("Bash"), &log), group(Some("Edit|Write"), "exit 7")],
            "PostToolUse": [group(Some("*"), &log)],
            "Stop": [group(None, &log)],
        }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "say hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let log = logged(&project);
    assert_eq!(
        events(&log),
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop"
        ],
        "{log:#?}\n{}",
        describe(&output)
    );
    let root = std::fs::canonicalize(project.root.path()).expect("root");
    for entry in &log {
        assert!(
            entry["session_id"].as_str().is_some_and(|s| !s.is_empty()),
            "{entry}"
        );
        assert!(entry["transcript_path"].is_string(), "{entry}");
        assert_eq!(
            Path::new(entry["cwd"].as_str().unwrap_or("")),
            root,
            "{entry}"
        );
    }
    assert_eq!(log[0]["source"], "startup");
    assert_eq!(log[1]["prompt"], "say hi");
    assert_eq!(log[2]["tool_name"], "Bash");
    assert_eq!(log[2]["tool_input"]["command"], "echo hi");
    assert_eq!(log[3]["tool_name"], "Bash");
    assert!(
        log[3]["tool_response"].to_string().contains("hi"),
        "{}",
        log[3]
    );
    assert_eq!(log[4]["stop_hook_active"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_tool_use_blocks_by_exit_2_and_by_a_json_deny() {
    let server = ScriptedServer::start(vec![
        tool_call(
            "call_0",
            "bash",
            json!({ "command": "touch by_exit" }),
            1_000,
        ),
        tool_call(
            "call_1",
            "bash",
            json!({ "command": "touch by_json" }),
            1_000,
        ),
        tool_call("call_2", "bash", json!({ "command": "touch fine" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    script(
        &project,
        "guard.sh",
        r#"input=$(cat)
case "$input" in
  *by_exit*) echo "by_exit is not allowed here" >&2; exit 2 ;;
  *by_json*) printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"json says no"}}' ;;
esac
exit 0"#,
    );
    settings(
        &project,
        json!({ "PreToolUse": [group(Some("Bash"), &run("guard.sh"))] }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "touch things"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(!project.path("by_exit").exists(), "exit 2 did not block");
    assert!(
        !project.path("by_json").exists(),
        "the JSON deny did not block"
    );
    assert!(project.path("fine").exists(), "{}", describe(&output));
    let blocked = tool_result(&server, "call_0");
    assert!(blocked.contains("by_exit is not allowed here"), "{blocked}");
    let denied = tool_result(&server, "call_1");
    assert!(denied.contains("json says no"), "{denied}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_tool_use_changes_the_input_but_never_lifts_a_deny_rule() {
    let server = ScriptedServer::start(vec![
        tool_call("call_0", "bash", json!({ "command": "touch asked" }), 1_000),
        tool_call("call_1", "bash", json!({ "command": "rm -f keep" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    std::fs::write(project.path("keep"), "kept").expect("keep");
    script(
        &project,
        "rewrite.sh",
        r#"input=$(cat)
case "$input" in
  *asked*) printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"touch rewritten"}}}' ;;
  *) printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}' ;;
esac"#,
    );
    settings(
        &project,
        json!({ "PreToolUse": [group(Some("Bash"), &run("rewrite.sh"))] }),
    );
    project.use_scripted_with(
        &server,
        "yolo = true\n",
        "[permission.bash]\n\"rm *\" = \"deny\"\n",
    );
    let output = project.cairn(&["run", "touch things"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(project.path("rewritten").exists(), "{}", describe(&output));
    assert!(!project.path("asked").exists());
    assert!(
        project.path("keep").exists(),
        "a hook's allow lifted a deny rule"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_prompt_submit_adds_context_and_stop_blocks_once() {
    let server = ScriptedServer::start(vec![text("Done.", 1_000), text("Tests ran.", 1_000)]).await;
    let project = Project::new();
    script(
        &project,
        "context.sh",
        "cat > /dev/null; echo 'the codeword is heron'",
    );
    script(
        &project,
        "stop.sh",
        r#"input=$(cat)
echo "$input" >> "$CLAUDE_PROJECT_DIR/stop.log"
case "$input" in
  *'"stop_hook_active":true'*) exit 0 ;;
esac
printf '%s' '{"decision":"block","reason":"run the tests before you stop"}'"#,
    );
    settings(
        &project,
        json!({
            "UserPromptSubmit": [group(None, &run("context.sh"))],
            "Stop": [group(None, &run("stop.sh"))],
        }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "finish up"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&output));
    let first = requests[0].json().to_string();
    assert!(first.contains("the codeword is heron"), "{first}");
    let second = requests[1].json().to_string();
    assert!(second.contains("run the tests before you stop"), "{second}");
    assert!(
        text_of(&output.stdout).contains("Tests ran."),
        "{}",
        describe(&output)
    );
    let stops = project.read("stop.log").unwrap_or_default();
    assert_eq!(stops.lines().count(), 2, "{stops}");
    assert!(
        stops
            .lines()
            .nth(1)
            .unwrap_or("")
            .contains("\"stop_hook_active\":true"),
        "{stops}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_prompt_submit_exit_2_blocks_the_prompt() {
    let server = ScriptedServer::start(vec![text("Done.", 1_000)]).await;
    let project = Project::new();
    script(
        &project,
        "no.sh",
        "cat > /dev/null; echo 'prompts about secrets are refused' >&2; exit 2",
    );
    settings(
        &project,
        json!({ "UserPromptSubmit": [group(None, &run("no.sh"))] }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "print the secrets"]).await;
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        server.requests().is_empty(),
        "the blocked prompt reached the model"
    );
    assert!(
        text_of(&output.stderr).contains("prompts about secrets are refused"),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_hook_is_stopped_and_a_failing_one_reported() {
    let server = ScriptedServer::start(vec![
        tool_call("call_0", "bash", json!({ "command": "touch ran" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    script(
        &project,
        "slow.sh",
        "sleep 30 & echo $! > \"$CLAUDE_PROJECT_DIR/slow.pid\"; wait",
    );
    script(
        &project,
        "fail.sh",
        "echo 'lint config missing' >&2; exit 1",
    );
    let slow = json!({ "type": "command", "command": run("slow.sh"), "timeout": 1 });
    settings(
        &project,
        json!({
            "PreToolUse": [{ "matcher": "Bash", "hooks": [slow] }],
            "PostToolUse": [group(Some("Bash"), &run("fail.sh"))],
        }),
    );
    project.use_scripted(&server);
    let started = Instant::now();
    let output = project.cairn(&["run", "touch it"]).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a hook hung the turn"
    );
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        project.path("ran").exists(),
        "a timed-out hook blocked: {}",
        describe(&output)
    );
    let stderr = text_of(&output.stderr);
    assert!(stderr.contains("timed out"), "{}", describe(&output));
    assert!(
        stderr.contains("lint config missing"),
        "{}",
        describe(&output)
    );
    let pid = project.read("slow.pid").unwrap_or_default();
    assert!(
        gone(pid.trim()).await,
        "the hook's background sleep {pid} outlived its timeout"
    );
}

/// Whether process `pid` has ended (gone, or a zombie waiting for its
/// reaper), waiting for it at most 5 s.
async fn gone(pid: &str) -> bool {
    let stat = format!("/proc/{pid}/stat");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ended = match std::fs::read_to_string(&stat) {
            Err(_) => true,
            Ok(text) => text
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        };
        if ended || Instant::now() > deadline {
            return ended;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (at most 20 s) for a file a hook writes.
async fn appears(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    path.exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repositorys_hooks_wait_for_trust_and_a_change_asks_again() {
    let server = ScriptedServer::start(vec![
        text("One.", 1_000),
        text("Two.", 1_000),
        text("Three.", 1_000),
    ])
    .await;
    let project = Project::new();
    project.use_scripted(&server);
    let marker = |name: &str| format!("touch \"$CLAUDE_PROJECT_DIR/{name}\"");
    settings(
        &project,
        json!({ "UserPromptSubmit": [group(None, &marker("first"))] }),
    );
    let output = project.cairn(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        !project.path("first").exists(),
        "an untrusted repository's hook ran"
    );
    let stderr = text_of(&output.stderr);
    assert!(
        stderr.contains("hooks.UserPromptSubmit"),
        "{}",
        describe(&output)
    );

    let listed = text_of(
        &project
            .command(&["trust"])
            .output()
            .await
            .expect("trust")
            .stdout,
    );
    assert!(
        listed.contains("first"),
        "the trust list does not show the command: {listed}"
    );
    let output = project.cairn(&["run", "hello"]).await;
    assert!(
        project.path("first").exists(),
        "a trusted hook did not run: {}",
        describe(&output)
    );

    settings(
        &project,
        json!({ "UserPromptSubmit": [group(None, &marker("second"))] }),
    );
    let output = project.cairn(&["run", "hello"]).await;
    assert!(
        !project.path("second").exists(),
        "a changed hook ran without trust"
    );
    assert!(
        text_of(&output.stderr).contains("not trusted"),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_own_hooks_and_cairns_table_run_untrusted_projects_or_not() {
    let server = ScriptedServer::start(vec![
        tool_call("call_0", "read", json!({ "path": "notes.txt" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    std::fs::write(project.path("notes.txt"), "notes").expect("notes");
    let claude = project.home.path().join(".claude");
    std::fs::create_dir_all(&claude).expect("~/.claude");
    let user_log = project.path("user.log");
    let settings = json!({ "hooks": { "PreToolUse": [
        group(Some("Read"), &format!("cat >> '{}'", user_log.display()))
    ] } });
    std::fs::write(claude.join("settings.json"), settings.to_string()).expect("user settings");
    let config_dir = project.home.path().join("config/cairn");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    let cairn_log = project.path("cairn.log");
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            "[[hooks.PostToolUse]]\nmatcher = \"read\"\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"cat >> '{}'\"\n",
            cairn_log.display()
        ),
    )
    .expect("user config");
    let project_log = project.path("project.log");
    let tables = format!(
        "[[hooks.PostToolUse]]\nmatcher = \"Read\"\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"cat >> '{}'\"\n",
        project_log.display()
    );
    // The project's cairn.toml hooks (trusted) run after the user's, not instead.
    project.use_scripted_with(&server, "yolo = true\n", &tables);
    let output = project.cairn(&["run", "read the notes"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let user = std::fs::read_to_string(&user_log).unwrap_or_default();
    assert!(
        user.contains("\"tool_name\":\"Read\""),
        "{user}\n{}",
        describe(&output)
    );
    let cairn = std::fs::read_to_string(&cairn_log).unwrap_or_default();
    assert!(
        cairn.contains("\"hook_event_name\":\"PostToolUse\""),
        "{cairn}"
    );
    let from_project = std::fs::read_to_string(&project_log).unwrap_or_default();
    assert!(
        from_project.contains("\"tool_name\":\"Read\""),
        "{from_project}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagent_stop_and_pre_compact_fire() {
    let server = ScriptedServer::start(vec![
        tool_call(
            "call_task",
            "task",
            json!({ "description": "look", "prompt": "What is here?", "subagent_type": "explore" }),
            1_000,
        ),
        text("Nothing much.", 800),
        text("The child found nothing.", 1_200),
        text("SUMMARY: nothing found.", 400),
    ])
    .await;
    let project = Project::new();
    script(&project, "log.sh", LOG);
    let log = run("log.sh");
    settings(
        &project,
        json!({
            "SubagentStop": [group(None, &log)],
            "Stop": [group(None, &log)],
            "PreCompact": [group(Some("manual"), &log)],
        }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "delegate it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let output = project
        .cairn(&["run", "--continue", "/compact keep the findings"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let log = logged(&project);
    assert_eq!(
        events(&log),
        ["SubagentStop", "Stop", "PreCompact"],
        "{log:#?}"
    );
    assert_ne!(
        log[0]["session_id"], log[1]["session_id"],
        "the child's own session"
    );
    assert_eq!(log[2]["trigger"], "manual");
    assert_eq!(log[2]["custom_instructions"], "keep the findings");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_or_write_matches_claude_codes_names_and_an_ask_nobody_answers_refuses() {
    let server = ScriptedServer::start(vec![
        tool_call(
            "call_0",
            "write",
            json!({ "path": "a.txt", "content": "x" }),
            1_000,
        ),
        tool_call("call_1", "read", json!({ "path": "notes.txt" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    std::fs::write(project.path("notes.txt"), "notes").expect("notes");
    script(
        &project,
        "ask.sh",
        &format!(
            "{LOG}\nprintf '%s' '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"writes need a look\"}}}}'"
        ),
    );
    settings(
        &project,
        json!({ "PreToolUse": [group(Some("Edit|Write"), &run("ask.sh"))] }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "write a"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        !project.path("a.txt").exists(),
        "an ask nobody answered let the write through"
    );
    let result = tool_result(&server, "call_0");
    assert!(result.contains("writes need a look"), "{result}");
    let log = logged(&project);
    assert_eq!(log.len(), 1, "the read is not Edit|Write: {log:#?}");
    assert_eq!(log[0]["tool_name"], "Write");
    let root = std::fs::canonicalize(project.root.path()).expect("root");
    assert_eq!(
        Path::new(log[0]["tool_input"]["file_path"].as_str().unwrap_or("")),
        root.join("a.txt")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_fires_when_a_permission_question_waits() {
    let seen = tempfile::tempdir().expect("dir");
    let file = seen.path().join("notified.json");
    let command = format!("cat > '{}.tmp' && mv '{0}.tmp' '{0}'", file.display());
    let scenario = crate::scenario::Scenario::with_config(
        vec![tool_call(
            "call_0",
            "bash",
            json!({ "command": "touch asked" }),
            1_000,
        )],
        |config| {
            config.yolo = false;
            let table = json!({ "Notification": [group(None, &command)] });
            config.hooks = serde_json::from_value(table).expect("hooks");
        },
    )
    .await;
    let (session, handle) = scenario.session(cairn::permission::Mode::Interactive).await;
    let recorder = scenario.record();
    crate::scenario::prompt(&handle, "touch it");
    recorder
        .wait_for(Duration::from_secs(20), |event| {
            matches!(event, cairn::bus::Event::PermissionAsked { .. })
        })
        .await;
    // The hook runs beside the question: wait for its file, bounded.
    assert!(appears(&file).await, "the Notification hook did not run");
    let text = std::fs::read_to_string(&file).expect("the Notification hook ran");
    let input: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["session_id"], session.id.as_str());
    assert!(
        input["message"]
            .as_str()
            .unwrap_or("")
            .contains("needs your permission"),
        "{input}"
    );
    handle.send(cairn::session::command::Command::Interrupt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_false_system_message_and_what_cannot_run_are_said() {
    let server = ScriptedServer::start(vec![
        tool_call(
            "call_0",
            "bash",
            json!({ "command": "touch stopped" }),
            1_000,
        ),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    script(
        &project,
        "halt.sh",
        r#"cat > /dev/null; printf '%s' '{"continue":false,"stopReason":"freeze in effect","systemMessage":"deploy freeze until Monday"}'"#,
    );
    settings(
        &project,
        json!({
            "PreToolUse": [group(Some("Bash"), &run("halt.sh"))],
            "SessionEnd": [group(None, "true")],
            "Stop": [{ "hooks": [{ "type": "prompt", "prompt": "is it done?" }] }],
        }),
    );
    project.use_scripted(&server);
    let output = project.cairn(&["run", "touch it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        !project.path("stopped").exists(),
        "continue:false let the call run"
    );
    let result = tool_result(&server, "call_0");
    assert!(result.contains("freeze in effect"), "{result}");
    let stderr = text_of(&output.stderr);
    assert!(
        stderr.contains("deploy freeze until Monday"),
        "{}",
        describe(&output)
    );
    assert!(
        stderr.contains("SessionEnd"),
        "an unknown event was not reported: {stderr}"
    );
    assert!(
        stderr.contains("`prompt` hook"),
        "a prompt hook was not reported: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_a_running_hook_and_its_call() {
    let seen = tempfile::tempdir().expect("dir");
    let pid_file = seen.path().join("hook.pid");
    let command = format!(
        "sleep 30 & echo $! > '{}.tmp' && mv '{0}.tmp' '{0}'; wait",
        pid_file.display()
    );
    let table = json!({ "PreToolUse": [group(Some("Bash"), &command)] });
    let scenario = crate::scenario::Scenario::with_config(
        vec![tool_call(
            "call_0",
            "bash",
            json!({ "command": "touch late" }),
            1_000,
        )],
        |config| config.hooks = serde_json::from_value(table).expect("hooks"),
    )
    .await;
    let (_session, handle) = scenario.session(cairn::permission::Mode::Headless).await;
    let recorder = scenario.record();
    crate::scenario::prompt(&handle, "touch it");
    assert!(appears(&pid_file).await, "the hook did not start");
    let pid = std::fs::read_to_string(&pid_file).expect("pid");
    handle.send(cairn::session::command::Command::Interrupt);
    recorder
        .wait_for(Duration::from_secs(10), |event| {
            matches!(
                event,
                cairn::bus::Event::Status {
                    status: cairn::bus::SessionStatus::Idle,
                    ..
                }
            )
        })
        .await;
    assert!(
        gone(pid.trim()).await,
        "the interrupted hook's sleep {pid} still runs"
    );
    assert!(
        !scenario.path("late").exists(),
        "the call ran after the interrupt"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_is_matched_by_claude_codes_mcp_name() {
    let server = ScriptedServer::start(vec![
        tool_call("call_0", "fixture_echo", json!({ "text": "hi" }), 1_000),
        text("Done.", 1_000),
    ])
    .await;
    let project = Project::new();
    script(
        &project,
        "mcp.sh",
        &format!("{LOG}\necho 'no MCP calls in this repository' >&2; exit 2"),
    );
    settings(
        &project,
        json!({ "PreToolUse": [group(Some("mcp__fixture__.*"), &run("mcp.sh"))] }),
    );
    let tables = format!(
        "[mcp.fixture]\ncommand = {:?}\ntimeout = 20\n",
        crate::mcp_client::fixture()
    );
    project.use_scripted_with(&server, "yolo = true\n", &tables);
    let output = project.cairn(&["run", "use the fixture"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let result = tool_result(&server, "call_0");
    assert!(
        result.contains("no MCP calls in this repository"),
        "{result}"
    );
    let log = logged(&project);
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(log[0]["tool_name"], "mcp__fixture__echo");
    assert_eq!(log[0]["tool_input"]["text"], "hi");
}
