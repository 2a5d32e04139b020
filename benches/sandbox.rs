//! What the sandbox adds to a `bash` step (issue 27): the real `bash`
//! tool running `exit 0` unconfined, under `workspace-write` (Landlock rules
//! built around the secret paths, a seccomp filter, a private mount
//! namespace for the protected project files) and under the read-only
//! rules a classified command gets; and the confinement's preparation
//! alone. The difference between the first two is the cost per command.
//!
//! Run: `cargo bench --bench sandbox`. Target: under 2 ms added per step.

use std::sync::Arc;

use cairn::bus::Bus;
use cairn::config::{SandboxConfig, SandboxMode};
use cairn::permission::{Mode, Permissions, ruleset};
use cairn::sandbox::{Confinement, Policy};
use cairn::tool::{OutputLimits, Registry, ToolScope};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn scope(root: &std::path::Path, spill: &std::path::Path, policy: Policy) -> ToolScope {
    ToolScope {
        session_id: "ses_bench".into(),
        message_id: "msg_bench".into(),
        call_id: "call_bench".into(),
        cwd: root.to_path_buf(),
        root: root.to_path_buf(),
        tool_output_dir: spill.to_path_buf(),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(
            ruleset(&Default::default(), true),
            Bus::new(),
            Mode::Headless,
        )),
        progress: None,
        limits: OutputLimits::default(),
        can_delegate: false,
        sandbox: Arc::new(policy),
        editor: None,
    }
}

fn bench(c: &mut Criterion) {
    let root = tempfile::tempdir().expect("project dir");
    let spill = tempfile::tempdir().expect("spill dir");
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root.path())
        .status()
        .expect("git init");
    assert!(
        cairn::sandbox::support().confines(),
        "this kernel cannot confine commands: nothing to measure"
    );
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let bash = Registry::builtin().get("bash").expect("the bash tool");
    let workspace = Policy::new(&SandboxConfig::default(), root.path(), &[]);
    let cases = [
        ("bash_exit_unconfined", Policy::off(root.path()), "exit 0"),
        ("bash_exit_workspace_write", workspace.clone(), "exit 0"),
        // `ls` is classified read-only: it gets the read-only rules.
        ("bash_ls_read_only_rules", workspace.clone(), "ls"),
        ("bash_ls_unconfined", Policy::off(root.path()), "ls"),
    ];
    for (name, policy, command) in cases {
        let ctx = scope(root.path(), spill.path(), policy);
        c.bench_function(name, |b| {
            b.iter(|| {
                runtime
                    .block_on(bash.execute(json!({ "command": command }), &ctx))
                    .expect("the command runs")
            });
        });
    }
    c.bench_function("prepare_workspace_write", |b| {
        b.iter(|| Confinement::prepare(&workspace).expect("prepared"));
    });
    let read_only = Policy::new(
        &SandboxConfig {
            mode: SandboxMode::ReadOnly,
            ..SandboxConfig::default()
        },
        root.path(),
        &[],
    );
    c.bench_function("prepare_read_only", |b| {
        b.iter(|| Confinement::prepare(&read_only).expect("prepared"));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(60);
    targets = bench
}
criterion_main!(benches);
