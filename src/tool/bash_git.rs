//! Whether a `git` command of a bash line would run a program its
//! repository names (issue #28): a textconv or external diff, a filter, an
//! fsmonitor hook, a pager, an ssh command, hooks. Reads the configuration
//! the way git will (`git config` in the same directory with the same
//! `-C`/`--git-dir`/`--work-tree`, which follows `.git` files and includes),
//! so a bare repository shipped inside the project is read too.
//!
//! I/O (runs `git config`), so it lives in the tool layer; the decision
//! from the text alone stays in `permission::bash_rules`. Key fn:
//! [`named_program`].

use std::path::Path;
use std::process::Stdio;

use crate::permission::bash_rules::GitCall;

/// Configuration keys whose value is a program git runs, as a regular
/// expression over the lower-cased key (git prints section and key lower
/// case). `core.fsmonitor` is checked apart: `true` is git's own daemon.
const PROGRAM_KEYS: &str = "^(diff\\..*\\.(textconv|command)|diff\\.external|diff\\.tool|difftool\\..*\\.cmd|merge\\..*\\.driver|mergetool\\..*\\.cmd|filter\\..*\\.(clean|smudge|process)|core\\.fsmonitor|core\\.pager|pager\\..*|core\\.sshcommand|core\\.gitproxy|core\\.askpass|core\\.editor|core\\.hookspath|sequence\\.editor|interactive\\.difffilter|credential\\..*helper|gpg\\..*program|gpg\\.program|alias\\..*|uploadpack\\.packobjectshook|remote\\..*\\.(uploadpack|receivepack|vcs)|ssh\\.variant|web\\.browser|browser\\..*\\.cmd|man\\..*\\.cmd)$";

/// Subcommands that run no hook, so `core.hooksPath` and the hooks
/// directory do not matter to them.
const HOOKLESS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "shortlog",
    "ls-files",
    "rev-parse",
    "branch",
    "grep",
    "describe",
    "tag",
    "remote",
    "config",
    "",
];

/// Why `call`, run in `cwd`, would run a program its repository names, or
/// `None` when it would not (or there is no repository, so git fails).
/// Only local and worktree configuration counts: the user's own global and
/// system files are theirs.
pub async fn named_program(cwd: &Path, call: &GitCall) -> Option<String> {
    let dir = call
        .cd
        .as_deref()
        .map_or_else(|| cwd.to_path_buf(), |cd| cwd.join(cd));
    let output = git(&dir, &call.options)
        .args(["config", "--show-scope", "--get-regexp", PROGRAM_KEYS])
        .output()
        .await
        .ok()?;
    let listing = String::from_utf8_lossy(&output.stdout);
    let hooks_count = !HOOKLESS.contains(&call.subcommand.as_str());
    for line in listing.lines() {
        let mut fields = line.splitn(2, '\t');
        let (Some(scope), Some(entry)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !matches!(scope, "local" | "worktree") {
            continue;
        }
        let (key, value) = entry.split_once(' ').unwrap_or((entry, ""));
        let names_program = match key {
            "core.fsmonitor" => !matches!(value, "true" | "false" | "1" | "0" | "yes" | "no" | ""),
            "core.hookspath" => hooks_count,
            _ if key.starts_with("alias.") => value.starts_with('!'),
            _ => true,
        };
        if names_program {
            return Some(format!(
                "the repository's configuration names a program git runs (`{key}`)"
            ));
        }
    }
    if hooks_count && has_hooks(&dir, &call.options).await {
        return Some("the repository has hooks git runs for this command".to_string());
    }
    None
}

fn git(dir: &Path, options: &[String]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("git");
    command
        .current_dir(dir)
        .args(options)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Whether the hooks directory git would use holds a hook (a file that is
/// not one of git's `.sample`s).
async fn has_hooks(dir: &Path, options: &[String]) -> bool {
    let Ok(output) = git(dir, options)
        .args(["rev-parse", "--git-path", "hooks"])
        .output()
        .await
    else {
        return false;
    };
    let hooks = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !output.status.success() || hooks.is_empty() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir.join(hooks)) else {
        return false;
    };
    entries
        .flatten()
        .any(|entry| !entry.file_name().to_string_lossy().ends_with(".sample"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_in(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run git")
            .status;
        assert!(status.success(), "git {args:?}");
    }

    fn call(subcommand: &str) -> GitCall {
        GitCall {
            pattern: format!("git {subcommand}"),
            subcommand: subcommand.to_string(),
            ..GitCall::default()
        }
    }

    #[tokio::test]
    async fn programs_the_repository_names_are_found_and_booleans_are_not() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        assert_eq!(named_program(repo.path(), &call("status")).await, None);
        git_in(repo.path(), &["config", "core.fsmonitor", "true"]);
        assert_eq!(named_program(repo.path(), &call("status")).await, None);
        git_in(repo.path(), &["config", "core.fsmonitor", "touch p"]);
        let found = named_program(repo.path(), &call("status")).await;
        assert!(
            found
                .as_deref()
                .is_some_and(|r| r.contains("core.fsmonitor")),
            "{found:?}"
        );
    }

    #[tokio::test]
    async fn hooks_count_only_for_commands_that_run_them() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        std::fs::write(repo.path().join(".git/hooks/pre-commit"), "#!/bin/sh\n")
            .expect("write hook");
        assert_eq!(named_program(repo.path(), &call("diff")).await, None);
        assert!(named_program(repo.path(), &call("commit")).await.is_some());
    }
}
