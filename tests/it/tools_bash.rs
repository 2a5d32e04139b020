//! The bash tool against real processes: output, exit codes, timeouts and
//! cancellation that kill the whole process group, bounded memory on huge output.

use crate::tools_common;

use std::time::{Duration, Instant};

use cairn::tool::{Registry, ToolError, ToolProgress};
use serde_json::json;
use tools_common::{Project, spill_files, with_progress};

/// Running (not a zombie waiting for a reaper that may never come in a container).
/// Waits until `pid` has exited (killed processes take a moment to go);
/// false when it is still alive after `limit`.
async fn exits_within(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while process_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

fn process_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Peak resident memory of this test process.
fn peak_rss_kib() -> i64 {
    // SAFETY: getrusage fills the zeroed struct we pass; no other memory is touched.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage.ru_maxrss
    }
}

#[tokio::test]
async fn runs_in_the_project_and_reports_exit_code() {
    let project = Project::new();
    project.write("hello.txt", "hi there\n");
    let out = Registry::builtin()
        .run(
            "bash",
            json!({ "command": "cat hello.txt; echo oops >&2; exit 3" }),
            &project.context(),
        )
        .await
        .expect("bash runs");
    assert_eq!(out.output, "hi there\noops\n\n\nExit code: 3");
    assert_eq!(out.metadata["exit"], 3);
    assert_eq!(out.metadata["truncated"], false);
}

#[tokio::test]
async fn empty_output_says_so_and_workdir_is_honoured() {
    let project = Project::new();
    std::fs::create_dir(project.dir.path().join("sub")).expect("mkdir");
    let ctx = project.context();
    let out = Registry::builtin()
        .run("bash", json!({ "command": "true" }), &ctx)
        .await
        .expect("runs");
    assert_eq!(out.output, "(no output)");
    let out = Registry::builtin()
        .run("bash", json!({ "command": "pwd", "workdir": "sub" }), &ctx)
        .await
        .expect("runs");
    assert_eq!(
        out.output.trim(),
        project.root().join("sub").display().to_string()
    );
}

#[tokio::test]
async fn output_streams_live_as_progress() {
    let project = Project::new();
    let mut ctx = project.context();
    let mut progress = with_progress(&mut ctx);
    Registry::builtin()
        .run("bash", json!({ "command": "echo one; echo two" }), &ctx)
        .await
        .expect("runs");
    drop(ctx);
    let mut streamed = String::new();
    while let Some(update) = progress.recv().await {
        if let ToolProgress::Output(text) = update {
            streamed.push_str(&text);
        }
    }
    assert_eq!(streamed, "one\ntwo\n");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let project = Project::new();
    let ctx = project.context();
    let pids = project.dir.path().join("pids");
    let command = format!(
        "sleep 100 & echo $! > {0}; sleep 100 & echo $! >> {0}; echo started; wait",
        pids.display()
    );
    let started = Instant::now();
    let out = Registry::builtin()
        .run("bash", json!({ "command": command, "timeout": 500 }), &ctx)
        .await
        .expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.output.starts_with("started\n"), "{}", out.output);
    assert!(
        out.output
            .contains("shell tool terminated command after exceeding timeout 500 ms."),
        "{}",
        out.output
    );
    assert_eq!(out.metadata["timed_out"], true);
    let children: Vec<i32> = std::fs::read_to_string(&pids)
        .expect("pids written")
        .lines()
        .map(|line| line.parse().expect("pid"))
        .collect();
    assert_eq!(children.len(), 2);
    for pid in children {
        assert!(
            exits_within(pid, Duration::from_secs(2)).await,
            "child {pid} survived the timeout"
        );
    }
}

#[tokio::test]
async fn cancel_stops_within_a_second_with_partial_output() {
    let project = Project::new();
    let mut ctx = project.context();
    let mut progress = with_progress(&mut ctx);
    let cancel = ctx.cancel.clone();
    // Cancel once the partial output has been shown, as a user would.
    tokio::spawn(async move {
        while let Some(update) = progress.recv().await {
            if matches!(&update, ToolProgress::Output(text) if text.contains("partial")) {
                cancel.cancel();
            }
        }
    });
    let started = Instant::now();
    let result = Registry::builtin()
        .run(
            "bash",
            json!({ "command": "echo partial; sleep 100" }),
            &ctx,
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    match result {
        Err(ToolError::Interrupted { output }) => {
            assert_eq!(
                output,
                "partial\n\n\n<shell_metadata>\nUser aborted the command\n</shell_metadata>"
            );
        }
        other => panic!("expected Interrupted, got {other:?}"),
    }
}

#[tokio::test]
async fn huge_output_keeps_the_tail_and_spills_everything() {
    let project = Project::new();
    let ctx = project.context();
    // ~20 MB: 200,000 numbered lines of 100 bytes.
    let command = "seq -f '%099g' 1 200000";
    let peak_before = peak_rss_kib();
    let out = Registry::builtin()
        .run("bash", json!({ "command": command }), &ctx)
        .await
        .expect("runs");
    let growth = peak_rss_kib() - peak_before;
    assert!(
        growth < 8 * 1024,
        "peak memory grew by {growth} KiB for 20 MB of output"
    );
    let spilled = spill_files(&ctx.tool_output_dir);
    assert_eq!(spilled.len(), 1);
    let full = std::fs::read_to_string(&spilled[0]).expect("spill file");
    assert_eq!(full.len(), 200_000 * 100);
    assert!(full.starts_with(&format!("{:099}\n", 1)));
    let header = format!(
        "...output truncated...\n\nFull output saved to: {}\n\n",
        spilled[0].display()
    );
    assert!(out.output.starts_with(&header), "{}", &out.output[..200]);
    assert!(out.output.ends_with(&format!("\n{:099}", 200_000)));
    assert!(out.output.len() <= header.len() + 50 * 1024);
    assert_eq!(out.metadata["truncated"], true);
    assert_eq!(
        out.metadata["output_path"],
        spilled[0].display().to_string()
    );
}

#[tokio::test]
async fn invalid_arguments_name_the_tool_and_the_problem() {
    let project = Project::new();
    let error = Registry::builtin()
        .run("bash", json!({ "cmd": "ls" }), &project.context())
        .await
        .expect_err("bad args");
    assert_eq!(
        error.to_string(),
        "The bash tool was called with invalid arguments: missing field `command`.\nPlease rewrite the input so it satisfies the expected schema."
    );
}

#[tokio::test]
async fn a_background_child_holding_the_pipe_does_not_hang_the_call() {
    let project = Project::new();
    let started = Instant::now();
    let out = Registry::builtin()
        .run(
            "bash",
            json!({ "command": "sleep 3 & echo done" }),
            &project.context(),
        )
        .await
        .expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.output, "done\n");
    assert_eq!(out.metadata["exit"], 0);
}

#[tokio::test]
async fn one_giant_line_keeps_its_end() {
    let project = Project::new();
    let ctx = project.context();
    let command = "head -c 3000000 /dev/zero | tr '\\0' a; echo END";
    let out = Registry::builtin()
        .run("bash", json!({ "command": command }), &ctx)
        .await
        .expect("runs");
    let (_, tail) = out.output.rsplit_once("\n\n").expect("header then tail");
    assert_eq!(tail.len(), 50 * 1024);
    assert!(tail.ends_with("aaaEND"), "{}", &tail[tail.len() - 20..]);
    let full = std::fs::read(spill_files(&ctx.tool_output_dir).pop().expect("spilled"))
        .expect("read spill");
    assert_eq!(full.len(), 3_000_000 + 4);
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let project = Project::new();
    let ctx = project.context();
    let pid_file = project.dir.path().join("pid");
    let command = format!("sleep 100 & echo $! > {}; wait", pid_file.display());
    let call = tokio::spawn(async move {
        Registry::builtin()
            .run("bash", json!({ "command": command }), &ctx)
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    call.abort();
    let _ = call.await;
    assert!(
        exits_within(pid, Duration::from_secs(2)).await,
        "background child {pid} survived the dropped call"
    );
}

#[tokio::test]
async fn a_shell_that_closes_its_output_still_times_out() {
    let project = Project::new();
    let started = Instant::now();
    let out = Registry::builtin()
        .run(
            "bash",
            json!({ "command": "echo before; exec >&- 2>&-; sleep 100", "timeout": 300 }),
            &project.context(),
        )
        .await
        .expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        out.output
            .starts_with("before\n\n\n<shell_metadata>\nshell tool terminated"),
        "{}",
        out.output
    );
}
