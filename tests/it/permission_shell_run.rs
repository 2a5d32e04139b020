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
        // tree-sitter-bash accepts these, bash does not (issue #28).
        ("git status ;;", "`bash -n`"),
        ("git status; fi", "`bash -n`"),
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
        // A substitution's output is a word known only at run time, so
        // no rule can allow that line (issue #28): no config line is offered.
        let forced =
            command.contains("touch x`") || command.contains("$(") || reason.contains("bash -n");
        assert!(
            forced || result.contains("[permission."),
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

/// Review 2 of issue #28 through the binary, under `--yolo` with the
/// reviewer's rules (`*` allowed, `rm *` denied): each line deleted `v`
/// before. Nothing may delete it, and each result names the deny rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_holds_for_code_in_words_stdin_shells_rebound_names_and_find_exec() {
    let attacks = [
        "echo 'rm -rf v' | bash",
        "bash < <(echo rm -rf v)",
        ". <(echo rm -rf v)",
        "hash -p /bin/rm del; del -rf v",
        "mapfile -C 'rm -rf v #' -c 1 <<< x",
        "find . -maxdepth 1 -name v -exec rm -rf {} +",
        "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='rm -rf v' keep",
        "ed -s keep.txt <<< '!rm -rf v'",
        "sqlite3 :memory: '.shell rm -rf v'",
    ];
    let script = crate::scenario::bash_calls(attacks.iter().copied());
    let server = ScriptedServer::start(script).await;
    let project = Project::new();
    project.use_scripted_with(
        &server,
        "",
        "[permission.bash]\n\"*\" = \"allow\"\n\"rm *\" = \"deny\"\n",
    );
    let dir = project.path("v");
    std::fs::create_dir(&dir).expect("create v");
    std::fs::write(dir.join("keep.txt"), "keep").expect("write keep.txt");

    let output = project
        .cairn(&["run", "--yolo", "--sandbox", "off", "clean up"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let ran: Vec<String> = attacks
        .iter()
        .enumerate()
        .map(|(i, command)| (command, tool_result(&server, &format!("call_{i}"))))
        .filter(|(_, result)| !result.contains("\"rm *\" = \"deny\""))
        .map(|(command, result)| format!("{command}: {result}"))
        .collect();
    assert!(
        ran.is_empty() && dir.join("keep.txt").exists(),
        "{} of {} not denied (v deleted: {}):\n{}",
        ran.len(),
        attacks.len(),
        !dir.join("keep.txt").exists(),
        ran.join("\n")
    );
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

const GIT_READ_RULES: &str = "[permission.bash]\n\"*\" = \"ask\"\n\"git status*\" = \"allow\"\n\
                              \"git diff*\" = \"allow\"\n\"git log*\" = \"allow\"\n\
                              \"git show*\" = \"allow\"\n\"git difftool*\" = \"allow\"\n\
                              \"git --git-dir=*\" = \"allow\"\n";

/// A project repository whose `a.txt` was committed twice and changed
/// again, so `git diff`, `git log -p` and `git show` all diff it.
fn repository_with_history(project: &Project) {
    let commit = |message: &str| {
        project.git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qam",
            message,
        ]);
    };
    std::fs::write(project.path("a.txt"), "one\n").expect("write a.txt");
    project.git(&["add", "a.txt"]);
    commit("one");
    std::fs::write(project.path("a.txt"), "two\n").expect("write a.txt");
    commit("two");
    std::fs::write(project.path("a.txt"), "three\n").expect("write a.txt");
}

/// Issue #28: an allowed git read must never run a program the repository
/// names. The project's own config sets a textconv (run by `git diff`,
/// `git log -p`, `git show`) that writes a marker; a bare repository shipped
/// in the project does the same through `--git-dir`; `git difftool` runs
/// the configured tool. All are refused headless and no marker is written,
/// while `git status` in a repository that names nothing still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_reads_never_run_a_program_the_repository_names() {
    let attacks = [
        "git diff",
        "git log -p",
        "git show HEAD",
        "git --git-dir=shipped.git log -p",
        "git difftool -y --tool=evil",
    ];
    let script = crate::scenario::bash_calls(attacks.iter().copied());
    let server = ScriptedServer::start(script).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", GIT_READ_RULES);
    repository_with_history(&project);
    let marker = project.path("marker");
    let program = format!("touch {}; cat", marker.display());
    std::fs::write(project.path(".git/info/attributes"), "*.txt diff=evil\n")
        .expect("write attributes");
    project.git(&["config", "diff.evil.textconv", &program]);
    project.git(&["config", "difftool.evil.cmd", &program]);
    project.git(&["clone", "-q", "--bare", ".", "shipped.git"]);
    project.git(&[
        "--git-dir=shipped.git",
        "config",
        "diff.evil.textconv",
        &program,
    ]);
    std::fs::write(
        project.path("shipped.git/info/attributes"),
        "*.txt diff=evil\n",
    )
    .expect("write shipped attributes");
    // The test's own check that the trap is armed: git runs the textconv.
    project.git(&["diff"]);
    assert!(marker.exists(), "the textconv did not run in the setup");
    std::fs::remove_file(&marker).expect("remove marker");

    // The sandbox off: it would fail the marker's write, and this issue is
    // about the decision, which must hold without it.
    let output = project
        .cairn(&["run", "--sandbox", "off", "look at the history"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let ran: Vec<&str> = attacks
        .iter()
        .enumerate()
        .filter(|(i, _)| !tool_result(&server, &format!("call_{i}")).contains("refused"))
        .map(|(_, command)| *command)
        .collect();
    assert!(
        ran.is_empty() && !marker.exists(),
        "{} of {} ran unasked (marker written: {}): {ran:?}\n{}",
        ran.len(),
        attacks.len(),
        marker.exists(),
        describe(&output)
    );
    assert!(
        tool_result(&server, "call_0").contains("diff.evil.textconv"),
        "{}",
        tool_result(&server, "call_0")
    );
}

/// The probe does not make every git command ask: in a repository that
/// names no program, allowed reads run unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_reads_in_a_plain_repository_run_unasked() {
    let commands = ["git status", "git diff", "git log -p", "git show HEAD"];
    let server = ScriptedServer::start(crate::scenario::bash_calls(commands.iter().copied())).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", GIT_READ_RULES);
    repository_with_history(&project);
    let output = project.cairn(&["run", "look at the history"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    for (i, command) in commands.iter().enumerate() {
        let result = tool_result(&server, &format!("call_{i}"));
        assert!(!result.contains("refused"), "{command}: {result}");
    }
    assert!(tool_result(&server, "call_1").contains("three"));
}

/// Makes `path` an executable shell script running `body`.
fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Review 2 of issue #28: an allowed git read ran a program the repository
/// names without naming it in a key the probe read: a hook run on the index
/// refresh of `git status`, a non-`!` alias for the subcommand, and a
/// submodule's own `core.fsmonitor`. Each setup arms its trap (checked by
/// running git itself), then cairn must refuse the read headless and no
/// marker may be written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_reads_never_run_hooks_aliases_or_submodule_programs() {
    type Setup = fn(&Project, &str) -> (&'static str, &'static str);
    let setups: [(&str, Setup); 3] = [
        ("hook", |project, marker| {
            write_script(
                &project.path(".git/hooks/post-index-change"),
                &format!("touch {marker}"),
            );
            ("git status", "hooks")
        }),
        ("alias", |project, marker| {
            project.git(&[
                "config",
                "alias.statusx",
                &format!("diff --output={marker}"),
            ]);
            ("git statusx", "alias.statusx")
        }),
        ("submodule", |project, marker| {
            let sub = project.path("sub");
            std::fs::create_dir(&sub).expect("sub dir");
            let git_sub = |args: &[&str]| {
                let out = std::process::Command::new("git")
                    .args(args)
                    .current_dir(&sub)
                    .output()
                    .expect("run git");
                assert!(out.status.success(), "{out:?}");
            };
            git_sub(&["init", "-q"]);
            std::fs::write(sub.join("a"), "a\n").expect("write");
            git_sub(&["add", "a"]);
            git_sub(&[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "a",
            ]);
            project.git(&["add", "sub"]);
            write_script(&project.path("evil.sh"), &format!("touch {marker}"));
            let evil = project.path("evil.sh").display().to_string();
            git_sub(&["config", "core.fsmonitor", &evil]);
            std::fs::write(sub.join("a"), "dirty\n").expect("write");
            ("git status", "submodules")
        }),
    ];
    let mut ran = Vec::new();
    for (name, setup) in setups {
        let project = Project::new();
        repository_with_history(&project);
        let marker = project.path("marker").display().to_string();
        let (command, reason) = setup(&project, &marker);
        // The test's own check that the trap is armed.
        let armed = std::process::Command::new("sh")
            .args(["-c", command])
            .current_dir(project.path(""))
            .output()
            .expect("run git");
        assert!(
            std::path::Path::new(&marker).exists(),
            "{name}: the trap did not fire in the setup: {armed:?}"
        );
        std::fs::remove_file(&marker).expect("remove marker");
        let server = ScriptedServer::start(vec![
            tool_call("call_0", "bash", json!({ "command": command }), 1_000),
            text("Done.", 1_000),
        ])
        .await;
        project.use_scripted_with(&server, "", GIT_READ_RULES);
        let output = project
            .cairn(&["run", "--sandbox", "off", "look at the status"])
            .await;
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let result = tool_result(&server, "call_0");
        let written = std::path::Path::new(&marker).exists();
        if written || !result.contains("refused") || !result.contains(reason) {
            ran.push(format!(
                "{name}: `{command}` (marker written: {written}): {result}"
            ));
        }
    }
    assert!(
        ran.is_empty(),
        "{} of 3 ran unasked:\n{}",
        ran.len(),
        ran.join("\n")
    );
}

/// Issue #28 through the binary: one line per class that wrote a file
/// under read-only allow rules. None may write `p`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_hidden_in_expansions_and_environment_does_not_run() {
    let attacks = [
        "x='a[$(touch p)]'; echo $((x))",
        "x='a[$(touch p)]'; [[ $x -eq 0 ]]",
        "x='$(touch p)'; echo ${x@P}",
        "GIT_EXTERNAL_DIFF='sh -c \"touch p\"' git diff",
        "export GIT_PAGER='touch p'; git log",
        "git diff $'--output=p'",
        "git diff {--output=p,}",
        "git diff ${x:---output=p}",
        "echo ${PWD#$(touch p)}",
        "echo \"${x:-`touch p`}\"",
        "cat <<-EOF\n\t$(touch p)\n\tEOF",
    ];
    let script = crate::scenario::bash_calls(attacks.iter().copied());
    let server = ScriptedServer::start(script).await;
    let project = Project::new();
    project.use_scripted_with(
        &server,
        "",
        "[permission.bash]\n\"*\" = \"ask\"\n\"git diff*\" = \"allow\"\n\"git log*\" = \"allow\"\n\
         \"echo *\" = \"allow\"\n\"cat *\" = \"allow\"\n",
    );
    repository_with_history(&project);
    let output = project.cairn(&["run", "look"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let ran: Vec<&str> = attacks
        .iter()
        .enumerate()
        .filter(|(i, _)| !tool_result(&server, &format!("call_{i}")).contains("refused"))
        .map(|(_, command)| *command)
        .collect();
    assert!(
        ran.is_empty() && !project.path("p").exists(),
        "{} of {} ran unasked (p written: {}): {ran:?}",
        ran.len(),
        attacks.len(),
        project.path("p").exists()
    );
}

/// Issue #28's deny forms through the binary under `--yolo`, where no ask
/// stops them: the victim directory survives every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_evasions_do_not_delete_under_yolo() {
    let attacks = [
        "rm --rec --forc dir",
        "rm $'-rf' dir",
        "/bin/r? -rf dir",
        "rm{,} -rf dir",
        "env -S 'rm -rf dir'",
        "exec -a x rm -rf dir",
        "sh -c \"$0 -rf dir\" rm",
        "eval \"$(echo rm -rf dir)\"",
        "setsid rm -rf dir",
        "taskset -c 0 rm -rf dir",
        "awk 'BEGIN { system(\"rm -rf dir\") }'",
    ];
    let script = crate::scenario::bash_calls(attacks.iter().copied());
    let server = ScriptedServer::start(script).await;
    let project = Project::new();
    project.use_scripted_with(&server, "", "[permission.bash]\n\"rm -rf *\" = \"deny\"\n");
    let dir = project.path("dir");
    std::fs::create_dir(&dir).expect("create dir");
    std::fs::write(dir.join("keep.txt"), "keep").expect("write keep.txt");
    let output = project.cairn(&["run", "--yolo", "clean up"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let ran: Vec<&str> = attacks
        .iter()
        .enumerate()
        .filter(|(i, _)| !tool_result(&server, &format!("call_{i}")).contains("deny"))
        .map(|(_, command)| *command)
        .collect();
    assert!(
        ran.is_empty() && dir.join("keep.txt").exists(),
        "{} of {} not denied (dir survived: {}): {ran:?}",
        ran.len(),
        attacks.len(),
        dir.join("keep.txt").exists()
    );
}
