//! Permissions: rule evaluation, path resolution for external_directory, and
//! the ask/answer flows with a real bus (answers driven while asks wait).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use cairn::bus::{Bus, Event};
use cairn::permission::{
    Action, Mode, PermissionAnswer, PermissionConfig, PermissionError, PermissionRequest,
    PermissionSetting, Permissions, Rule, default_rules, evaluate, is_external, resolve_path,
    ruleset, wildcard_match,
};
use tokio_util::sync::CancellationToken;

fn request(id: &str, permission: &str, pattern: &str, always: &str) -> PermissionRequest {
    PermissionRequest {
        id: id.into(),
        session_id: "ses_a".into(),
        call_id: None,
        permission: permission.into(),
        patterns: vec![pattern.into()],
        always: vec![always.into()],
        title: format!("{permission} {pattern}"),
        metadata: serde_json::Value::Null,
        ..Default::default()
    }
}

fn action(permission: &str, pattern: &str, rules: &[Rule]) -> Action {
    evaluate(permission, pattern, rules).0
}

#[test]
fn wildcards_match_runs_single_chars_and_optional_tails() {
    assert!(wildcard_match("src/a/b.rs", "src/*.rs"));
    assert!(wildcard_match("a.rs", "?.rs"));
    assert!(!wildcard_match("ab.rs", "?.rs"));
    assert!(wildcard_match("cargo test", "cargo test *"));
    assert!(wildcard_match("cargo test --lib", "cargo test *"));
    assert!(!wildcard_match("cargo testing", "cargo test *"));
    assert!(wildcard_match("*.rs", "*"));
}

#[test]
fn the_last_matching_rule_wins() {
    let rules = vec![
        Rule::new("bash", "*", Action::Ask),
        Rule::new("bash", "git *", Action::Allow),
        Rule::new("bash", "git push *", Action::Deny),
    ];
    assert_eq!(action("bash", "git status", &rules), Action::Allow);
    assert_eq!(action("bash", "git push origin", &rules), Action::Deny);
    assert_eq!(action("bash", "rm -rf /", &rules), Action::Ask);
    assert_eq!(action("webfetch", "x", &rules), Action::Ask, "no rule: ask");
}

#[test]
fn defaults_ask_for_env_files_but_not_their_examples() {
    let rules = default_rules();
    assert_eq!(action("read", "src/main.rs", &rules), Action::Allow);
    assert_eq!(action("read", ".env", &rules), Action::Ask);
    assert_eq!(action("read", "config/prod.env", &rules), Action::Ask);
    assert_eq!(action("read", ".env.local", &rules), Action::Ask);
    assert_eq!(action("read", ".env.example", &rules), Action::Allow);
    assert_eq!(action("bash", "ls", &rules), Action::Ask);
    assert_eq!(action("edit", "a.rs", &rules), Action::Ask);
    assert_eq!(action("grep", "x", &rules), Action::Allow);
}

#[test]
fn config_overrides_defaults_and_yolo_keeps_explicit_denies() {
    let mut bash = BTreeMap::new();
    bash.insert("*".to_string(), Action::Ask);
    bash.insert("rm *".to_string(), Action::Deny);
    bash.insert("cargo test *".to_string(), Action::Allow);
    let config: PermissionConfig = [
        ("bash".to_string(), PermissionSetting::Patterns(bash)),
        ("edit".to_string(), PermissionSetting::Action(Action::Allow)),
    ]
    .into_iter()
    .collect();
    let rules = ruleset(&config, false);
    assert_eq!(action("bash", "cargo test --lib", &rules), Action::Allow);
    assert_eq!(action("bash", "rm -rf x", &rules), Action::Deny);
    assert_eq!(action("bash", "ls", &rules), Action::Ask);
    assert_eq!(action("edit", "a.rs", &rules), Action::Allow);
    let yolo = ruleset(&config, true);
    assert_eq!(action("bash", "ls", &yolo), Action::Allow);
    assert_eq!(action("read", ".env", &yolo), Action::Allow);
    assert_eq!(action("bash", "rm -rf x", &yolo), Action::Deny);
}

#[test]
fn symlinks_and_dot_dot_out_of_the_project_are_external() {
    let outside = tempfile::tempdir().expect("outside");
    let project = tempfile::tempdir().expect("project");
    let root = std::fs::canonicalize(project.path()).expect("root");
    std::fs::create_dir(root.join("src")).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).expect("symlink");
    std::os::unix::fs::symlink(outside.path().join("not-yet"), root.join("dangling"))
        .expect("symlink");
    let inside = resolve_path(&root, "src/new/file.rs".as_ref());
    assert_eq!(inside, root.join("src/new/file.rs"));
    assert!(!is_external(&root, &inside));
    for sneaky in [
        "escape/secret",
        "escape/new/dir/file",
        "../x",
        "src/../../x",
        "src/missing/../../../x",
        "dangling",
    ] {
        let resolved = resolve_path(&root, sneaky.as_ref());
        assert!(
            is_external(&root, &resolved),
            "{sneaky} resolved to {} inside the project",
            resolved.display()
        );
    }
    assert_eq!(
        resolve_path(&root, "escape/new/file".as_ref()),
        std::fs::canonicalize(outside.path())
            .expect("outside")
            .join("new/file")
    );
}

#[tokio::test]
async fn headless_fails_closed_with_a_way_out() {
    let permissions = Permissions::new(default_rules(), Bus::new(), Mode::Headless);
    let error = permissions
        .ask(request("per_1", "bash", "cargo test", "cargo test *"))
        .await
        .expect_err("cannot ask");
    let PermissionError::Denied { message, .. } = error else {
        panic!("expected Denied, got {error:?}")
    };
    assert!(
        message.contains("[permission.bash]\n\"cargo test *\" = \"allow\""),
        "{message}"
    );
    assert!(message.contains("--yolo"), "{message}");
    assert_eq!(
        permissions.ask(request("per_2", "grep", "x", "*")).await,
        Ok(())
    );
}

#[tokio::test]
async fn deny_rules_fail_without_asking() {
    let mut rules = default_rules();
    rules.push(Rule::new("bash", "rm *", Action::Deny));
    let permissions = Permissions::new(rules, Bus::new(), Mode::Interactive);
    let error = permissions
        .ask(request("per_1", "bash", "rm -rf /", "rm *"))
        .await
        .expect_err("denied");
    assert!(matches!(
        error,
        PermissionError::Denied {
            rule: Some(Rule {
                action: Action::Deny,
                ..
            }),
            ..
        }
    ));
}

/// Starts an ask in the background and waits until it is on the bus.
async fn asked(
    permissions: &Arc<Permissions>,
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    request: PermissionRequest,
) -> tokio::task::JoinHandle<Result<(), PermissionError>> {
    let id = request.id.clone();
    let waiting = Arc::clone(permissions);
    let handle = tokio::spawn(async move { waiting.ask(request).await });
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("ask published")
            .expect("bus open")
        {
            Event::PermissionAsked { request, .. } if request.id == id => return handle,
            _ => {}
        }
    }
}

#[tokio::test]
async fn once_lets_one_call_through_and_asks_again_next_time() {
    let bus = Bus::new();
    let mut events = bus.subscribe();
    let permissions = Arc::new(Permissions::new(default_rules(), bus, Mode::Interactive));
    let first = asked(
        &permissions,
        &mut events,
        request("per_1", "bash", "ls", "ls *"),
    )
    .await;
    assert!(!first.is_finished(), "the ask waits for an answer");
    assert!(permissions.answer("per_1", PermissionAnswer::Once));
    assert_eq!(first.await.expect("joined"), Ok(()));
    assert!(
        !permissions.answer("per_1", PermissionAnswer::Once),
        "already answered"
    );
    let second = asked(
        &permissions,
        &mut events,
        request("per_2", "bash", "ls -la", "ls *"),
    )
    .await;
    assert_eq!(permissions.pending().len(), 1);
    permissions.answer("per_2", PermissionAnswer::Once);
    assert_eq!(second.await.expect("joined"), Ok(()));
}

/// The blind review of #33: an "always" (or the broad one) sent to a
/// question that offered none (running outside the sandbox offers only
/// "once") was a yes. Whoever sends it, it is a reject now.
#[tokio::test]
async fn an_always_the_question_did_not_offer_is_a_reject() {
    let bus = Bus::new();
    let mut events = bus.subscribe();
    let permissions = Arc::new(Permissions::new(default_rules(), bus, Mode::Interactive));
    let mut once_only = request("per_1", "bash", "cat ~/.ssh/id_rsa", "x");
    once_only.always.clear();
    let waiting = asked(&permissions, &mut events, once_only).await;
    assert!(permissions.answer("per_1", PermissionAnswer::Always));
    assert!(waiting.await.expect("joined").is_err(), "refused");
    let narrow = request("per_2", "bash", "npm run build", "npm run build");
    let waiting = asked(&permissions, &mut events, narrow).await;
    assert!(permissions.answer("per_2", PermissionAnswer::AlwaysBroad));
    assert!(waiting.await.expect("joined").is_err(), "refused");
    assert!(permissions.approved().is_empty(), "nothing remembered");
}

#[tokio::test]
async fn always_allows_the_prefix_and_releases_other_pending_asks() {
    let bus = Bus::new();
    let mut events = bus.subscribe();
    let permissions = Arc::new(Permissions::new(default_rules(), bus, Mode::Interactive));
    let first = asked(
        &permissions,
        &mut events,
        request("per_1", "bash", "cargo test", "cargo test *"),
    )
    .await;
    let covered = asked(
        &permissions,
        &mut events,
        request("per_2", "bash", "cargo test --lib", "cargo test *"),
    )
    .await;
    let other = asked(
        &permissions,
        &mut events,
        request("per_3", "bash", "rm x", "rm *"),
    )
    .await;
    permissions.answer("per_1", PermissionAnswer::Always);
    assert_eq!(first.await.expect("joined"), Ok(()));
    assert_eq!(
        covered.await.expect("joined"),
        Ok(()),
        "now passes, released"
    );
    assert!(!other.is_finished(), "not covered by the new rule");
    assert_eq!(
        permissions
            .pending()
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        ["per_3"]
    );
    assert_eq!(
        permissions
            .ask(request("per_4", "bash", "cargo test -q", "cargo test *"))
            .await,
        Ok(())
    );
    permissions.answer("per_3", PermissionAnswer::Once);
    other.await.expect("joined").expect("allowed once");
}

#[tokio::test]
async fn reject_carries_feedback_and_rejects_the_sessions_other_asks() {
    let bus = Bus::new();
    let mut events = bus.subscribe();
    let permissions = Arc::new(Permissions::new(default_rules(), bus, Mode::Interactive));
    let first = asked(
        &permissions,
        &mut events,
        request("per_1", "edit", "a.rs", "a.rs"),
    )
    .await;
    let second = asked(
        &permissions,
        &mut events,
        request("per_2", "edit", "b.rs", "b.rs"),
    )
    .await;
    let mut elsewhere = request("per_3", "edit", "c.rs", "c.rs");
    elsewhere.session_id = "ses_b".into();
    let other_session = asked(&permissions, &mut events, elsewhere).await;
    permissions.answer(
        "per_1",
        PermissionAnswer::Reject {
            message: Some("use the helper instead".into()),
        },
    );
    assert_eq!(
        first.await.expect("joined"),
        Err(PermissionError::Rejected {
            message: Some("use the helper instead".into())
        })
    );
    assert_eq!(
        second.await.expect("joined"),
        Err(PermissionError::Rejected { message: None })
    );
    assert!(
        !other_session.is_finished(),
        "another session's ask is untouched"
    );
    permissions.answer("per_3", PermissionAnswer::Once);
    other_session.await.expect("joined").expect("allowed");
}

#[tokio::test]
async fn cancel_ends_a_waiting_ask() {
    let bus = Bus::new();
    let permissions = Permissions::new(default_rules(), bus, Mode::Interactive);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let result = permissions
        .ask_cancellable(request("per_1", "bash", "ls", "ls *"), &cancel)
        .await;
    assert_eq!(result, Err(PermissionError::Cancelled));
    assert!(permissions.pending().is_empty());
}

/// The dialog offers the exact command and, when safe, a broader pattern:
/// each answer allows only what it named.
#[tokio::test]
async fn always_broad_allows_the_broad_pattern_and_always_only_the_exact_one() {
    let bus = Bus::new();
    let mut events = bus.subscribe();
    let permissions = Arc::new(Permissions::new(default_rules(), bus, Mode::Interactive));
    let mut exact = request("per_1", "bash", "git status -s", "git status -s");
    exact.always_broad = vec!["git status *".into()];
    let mut broad = request("per_2", "bash", "git status --short", "git status --short");
    broad.always_broad = vec!["git status *".into()];
    let waiting = asked(&permissions, &mut events, exact).await;
    assert!(permissions.answer("per_1", PermissionAnswer::Always));
    waiting.await.expect("joined").expect("allowed");
    assert!(permissions.allows("bash", "git status -s"));
    assert!(!permissions.allows("bash", "git status --porcelain"));

    let waiting = asked(&permissions, &mut events, broad).await;
    assert!(permissions.answer("per_2", PermissionAnswer::AlwaysBroad));
    waiting.await.expect("joined").expect("allowed");
    assert!(permissions.allows("bash", "git status --porcelain"));
    assert!(!permissions.allows("bash", "git stash"));
}
