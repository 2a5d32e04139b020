//! Whether a `git` command of a bash line would run a program its
//! repository names (issue #28): a textconv or external diff, a filter, an
//! fsmonitor hook, a pager, an ssh command, an alias for the subcommand,
//! a partial clone's lazy fetch, hooks (for every command), and submodules,
//! whose own configuration it does not read. Reads the configuration
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
/// A partial clone (`extensions.partialClone`, a promisor remote) fetches
/// missing objects on a read, through the remote's url, which may name a
/// program (`ext::`); `protocol.*.allow` only matters to such a transport.
const PROGRAM_KEYS: &str = "^(diff\\..*\\.(textconv|command)|diff\\.external|diff\\.tool|difftool\\..*\\.cmd|merge\\..*\\.driver|mergetool\\..*\\.cmd|filter\\..*\\.(clean|smudge|process)|core\\.fsmonitor|core\\.pager|pager\\..*|core\\.sshcommand|core\\.gitproxy|core\\.askpass|core\\.editor|core\\.hookspath|sequence\\.editor|interactive\\.difffilter|credential\\..*helper|gpg\\..*program|gpg\\.program|log\\.showsignature|alias\\..*|uploadpack\\.packobjectshook|remote\\..*\\.(uploadpack|receivepack|vcs|promisor|partialclonefilter|url|pushurl)|extensions\\.partialclone|protocol\\.(.*\\.)?allow|url\\..*\\.insteadof|ssh\\.variant|web\\.browser|browser\\..*\\.cmd|man\\..*\\.cmd)$";

/// Why `call`, run in `cwd`, would run a program its repository names, or
/// `None` when it would not (or there is no repository, so git fails).
/// Only local and worktree configuration counts: the user's own global and
/// system files are theirs. Every command counts hooks: read verbs run some
/// too (`post-index-change` on the index refresh of `git status`).
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
    let own_alias = format!("alias.{}", call.subcommand.to_lowercase());
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
            // Verifying signatures runs gpg, which creates its home.
            // A bare `showSignature` (no value) is true, as git reads it.
            "log.showsignature" => !matches!(
                value.to_ascii_lowercase().as_str(),
                "false" | "0" | "no" | "off"
            ),
            // Any alias for the subcommand used: `statusx = diff
            // --output=M` writes, `-c core.fsmonitor=... status` runs.
            _ if key.starts_with("alias.") => value.starts_with('!') || key == own_alias,
            // An ordinary remote url is not a program; a remote helper
            // (`ext::cmd`, `fd::`) is.
            _ if key.starts_with("remote.")
                && (key.ends_with(".url") || key.ends_with(".pushurl")) =>
            {
                value.contains("::")
            }
            _ if key.starts_with("url.") => key.contains("::") || value.contains("::"),
            _ => true,
        };
        if names_program {
            return Some(format!(
                "the repository's configuration names a program git runs (`{key}`)"
            ));
        }
    }
    if has_hooks(&dir, &call.options).await {
        return Some("the repository has hooks git may run for this command".to_string());
    }
    if !call.ignores_submodules && has_submodules(&dir, &call.options).await {
        // Their own configuration (`core.fsmonitor`, filters) runs when git
        // looks into them, and cairn reads only the parent's.
        return Some(
            "the repository has submodules, whose own configuration git may run \
             (`--ignore-submodules` avoids it)"
                .to_string(),
        );
    }
    None
}

/// Whether the repository's index holds a submodule (a gitlink, mode
/// 160000) or its git directory holds submodule repositories (`modules`).
async fn has_submodules(dir: &Path, options: &[String]) -> bool {
    if let Ok(output) = git(dir, options)
        .args(["rev-parse", "--git-path", "modules"])
        .output()
        .await
    {
        let modules = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if output.status.success() && !modules.is_empty() && dir.join(modules).is_dir() {
            return true;
        }
    }
    let Ok(output) = git(dir, options)
        .args(["ls-files", "--stage"])
        .output()
        .await
    else {
        return false;
    };
    output.status.success()
        && String::from_utf8_lossy(&output.stdout)
            .lines()
            .any(|line| line.starts_with("160000 "))
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
    // A `core.hooksPath` of the user's own (global or system) names the
    // user's hooks, not the repository's; a local one was a reason already.
    if let Ok(output) = git(dir, options)
        .args(["config", "--show-scope", "--get", "core.hooksPath"])
        .output()
        .await
        && output.status.success()
        && !String::from_utf8_lossy(&output.stdout).starts_with("local")
        && !String::from_utf8_lossy(&output.stdout).starts_with("worktree")
    {
        return false;
    }
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

    /// Review 3 of #28: `log.showSignature` makes every `git log` run gpg,
    /// which creates `~/.gnupg`.
    #[tokio::test]
    async fn a_repository_that_shows_signatures_runs_gpg() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        git_in(repo.path(), &["config", "log.showSignature", "false"]);
        assert_eq!(named_program(repo.path(), &call("log")).await, None);
        git_in(repo.path(), &["config", "log.showSignature", "True"]);
        found(
            named_program(repo.path(), &call("log")).await,
            "log.showsignature",
        );
    }

    fn found(reason: Option<String>, what: &str) {
        assert!(
            reason.as_deref().is_some_and(|r| r.contains(what)),
            "{what}: {reason:?}"
        );
    }

    fn make_executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, "#!/bin/sh\n").expect("write hook");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// Review 2 of issue #28: a hook git runs on an index refresh
    /// (`post-index-change`) fires on `git status` and `git diff`, from the
    /// hooks directory or a `core.hooksPath` in the worktree.
    #[tokio::test]
    async fn hooks_count_for_every_command() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        make_executable(&repo.path().join(".git/hooks/post-index-change"));
        found(named_program(repo.path(), &call("status")).await, "hooks");
        found(named_program(repo.path(), &call("diff")).await, "hooks");
        found(named_program(repo.path(), &call("commit")).await, "hooks");
        let other = tempfile::tempdir().expect("temp dir");
        git_in(other.path(), &["init", "-q"]);
        std::fs::create_dir(other.path().join("hk")).expect("hooks dir");
        make_executable(&other.path().join("hk/post-index-change"));
        git_in(other.path(), &["config", "core.hooksPath", "hk"]);
        found(named_program(other.path(), &call("status")).await, "hook");
    }

    /// Any alias the repository defines for the subcommand used asks, not
    /// only `!` aliases: `statusx = diff --output=M` writes a file, and an
    /// alias may be `-c core.fsmonitor=... status`. An included file from
    /// the worktree counts as the repository's own.
    #[tokio::test]
    async fn the_repositorys_aliases_for_the_subcommand_ask() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        git_in(repo.path(), &["config", "alias.statusx", "diff --output=M"]);
        found(
            named_program(repo.path(), &call("statusx")).await,
            "alias.statusx",
        );
        assert_eq!(named_program(repo.path(), &call("status")).await, None);
        std::fs::write(
            repo.path().join("inc.cfg"),
            "[alias]\n\tlogq = -c core.fsmonitor=/abs/evil.sh status\n",
        )
        .expect("write include");
        git_in(repo.path(), &["config", "include.path", "../inc.cfg"]);
        found(
            named_program(repo.path(), &call("logq")).await,
            "alias.logq",
        );
    }

    /// A partial clone fetches missing objects on `git show`: from a
    /// promisor remote's url, which may be `ext::` (a program).
    #[tokio::test]
    async fn partial_clone_and_transport_configuration_asks() {
        for settings in [
            &[
                ("extensions.partialClone", "origin"),
                ("remote.origin.promisor", "true"),
                ("remote.origin.url", "http://127.0.0.1:29999/x.git"),
            ][..],
            &[("remote.origin.promisor", "true")][..],
            &[
                ("protocol.ext.allow", "always"),
                ("remote.origin.url", "ext::/abs/evil.sh"),
            ][..],
            &[("remote.origin.url", "ext::/abs/evil.sh")][..],
        ] {
            let repo = tempfile::tempdir().expect("temp dir");
            git_in(repo.path(), &["init", "-q"]);
            for (key, value) in settings {
                git_in(repo.path(), &["config", key, value]);
            }
            assert!(
                named_program(repo.path(), &call("show")).await.is_some(),
                "{settings:?}"
            );
        }
        // An ordinary remote is not a reason.
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        git_in(
            repo.path(),
            &["config", "remote.origin.url", "https://example.com/x.git"],
        );
        assert_eq!(named_program(repo.path(), &call("show")).await, None);
    }

    /// A submodule's own configuration (`core.fsmonitor`) runs when the
    /// parent's `git status` or `git diff` looks into it: a repository with
    /// submodules asks unless the command passes `--ignore-submodules`.
    #[tokio::test]
    async fn submodules_ask_unless_ignored() {
        let repo = tempfile::tempdir().expect("temp dir");
        git_in(repo.path(), &["init", "-q"]);
        let sub = repo.path().join("sub");
        std::fs::create_dir(&sub).expect("sub dir");
        git_in(&sub, &["init", "-q"]);
        std::fs::write(sub.join("a"), "a").expect("write");
        git_in(&sub, &["add", "a"]);
        git_in(
            &sub,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "a",
            ],
        );
        git_in(repo.path(), &["add", "sub"]);
        git_in(&sub, &["config", "core.fsmonitor", "/abs/evil.sh"]);
        found(
            named_program(repo.path(), &call("status")).await,
            "submodule",
        );
        found(named_program(repo.path(), &call("diff")).await, "submodule");
        let mut ignoring = call("status");
        ignoring.ignores_submodules = true;
        assert_eq!(named_program(repo.path(), &ignoring).await, None);
    }
}
