//! [`Confinement`]: a [`Policy`] made ready for one child process. Built
//! in cairn before the fork (it reads directories, opens the Landlock rule
//! set and compiles the seccomp filter, all of which allocate); applied in
//! the child between fork and exec with system calls only, so a command
//! never runs a single instruction unconfined. A confinement that cannot
//! be applied fails the spawn: the command does not run.

use std::path::{Path, PathBuf};

use landlock::{RulesetCreated, RulesetStatus};
use seccompiler::BpfProgram;

use super::error::Error;
use super::mounts::MountPlan;
use super::policy::PINNED;
use super::policy::Policy;
use super::support::support;
use super::{network, rules};
use crate::config::SandboxMode;

/// A policy ready to apply in one child.
#[derive(Debug)]
pub struct Confinement {
    mounts: Option<MountPlan>,
    landlock: Option<RulesetCreated>,
    seccomp: BpfProgram,
    /// Protected paths that did not exist before the command: it must not
    /// create them ([`Confinement::undo_created`]).
    absent: Vec<PathBuf>,
}

impl Confinement {
    /// The confinement of `policy`, or `None` when commands run unconfined
    /// (mode `off`, or a kernel without Landlock: [`support`] says which).
    ///
    /// # Errors
    /// When the kernel offers the sandbox but the rules cannot be built:
    /// the caller must not run the command.
    pub fn prepare(policy: &Policy) -> Result<Option<Confinement>, Error> {
        let support = support();
        if policy.is_off() || !support.confines() {
            return Ok(None);
        }
        let (mounts, absent) =
            if policy.mode == SandboxMode::WorkspaceWrite && support.mount_namespace {
                protected_mounts(policy)?
            } else {
                (None, Vec::new())
            };
        Ok(Some(Confinement {
            mounts,
            landlock: Some(rules::ruleset(policy)?),
            seccomp: network::filter(policy.network)?,
            absent,
        }))
    }

    /// Confines the calling process. Call only in the child, between fork
    /// and exec (`Command::pre_exec`); each step is a system call.
    ///
    /// # Errors
    /// Any step that fails: the spawn fails with it.
    pub fn apply(&mut self) -> std::io::Result<()> {
        if let Some(mounts) = &self.mounts {
            mounts.apply()?;
        }
        // After the mounts (they need root's CAP_SYS_ADMIN), before exec.
        super::capabilities::drop_all()?;
        let ruleset = self
            .landlock
            .take()
            .ok_or_else(|| std::io::Error::other("the sandbox was already applied"))?;
        let status = ruleset.restrict_self().map_err(std::io::Error::other)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(std::io::Error::other(
                "Landlock did not enforce the sandbox",
            ));
        }
        seccompiler::apply_filter(&self.seccomp).map_err(std::io::Error::other)
    }

    /// The protected paths that do not exist before the command: pass them
    /// to [`remove_created`] after it.
    pub fn absent_protected(&self) -> Vec<PathBuf> {
        self.absent.clone()
    }
}

/// Removes those of `absent` (protected paths missing before a command)
/// that the command created (nothing of the user's is lost: they did not
/// exist) and returns them, each with whether it could be removed.
pub fn remove_created(absent: &[PathBuf]) -> Vec<(PathBuf, bool)> {
    let mut created = Vec::new();
    for path in absent {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        let removed = if meta.is_dir() {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        if let Err(error) = &removed {
            tracing::warn!(path = %path.display(), %error, "a command created a protected path that could not be removed");
        }
        created.push((path.clone(), removed.is_ok()));
    }
    created
}

/// The mounts that protect what exists, and the protected paths that do not.
fn protected_mounts(policy: &Policy) -> Result<(Option<MountPlan>, Vec<PathBuf>), Error> {
    let protected = policy.protected();
    let exists = |path: &Path| std::fs::symlink_metadata(path).is_ok();
    let present: Vec<&Path> = protected
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| exists(p))
        .collect();
    let absent: Vec<PathBuf> = protected.iter().filter(|p| !exists(p)).cloned().collect();
    let git = policy.root.join(PINNED);
    // A linked worktree's `.git` is a file naming its git directory: the
    // file itself decides which config and hooks git runs.
    let mut present = present;
    if std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_file()) {
        present.push(git.as_path());
    }
    let pins: Vec<&Path> = if git.is_dir() {
        vec![git.as_path()]
    } else {
        Vec::new()
    };
    // A symlinked protected path is mounted over its target: what cairn
    // and git would read through it is what stays unchanged.
    Ok((MountPlan::new(&pins, &present)?, absent))
}
