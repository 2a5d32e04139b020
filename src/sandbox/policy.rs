//! [`Policy`]: what one session's commands may reach: the mode, the
//! network, the directories they may write under, the paths they may not
//! read and the project files they may not change. Pure but for resolving
//! the paths it is given (symlinks, `~`).

use std::path::{Path, PathBuf};

use crate::config::{SandboxConfig, SandboxMode};

/// Paths under the user's home that hold credentials: never readable by a
/// confined command, whatever the config says (`deny_read` adds to them).
pub const SECRET_PATHS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".netrc",
    ".docker/config.json",
    ".git-credentials",
    ".config/gh",
    ".kube",
    ".azure",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pypirc",
];

/// Paths in the project that decide what runs later (git's hooks and the
/// programs its config names; cairn's and the peers' agent config, which
/// name MCP servers, permissions and hooks). A command cannot change them:
/// a change goes through a tool's ask. Relative to the project root.
pub const PROTECTED: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".git/info",
    // Where git finds its config and hooks instead (a linked worktree's
    // pointer to the common directory, per-worktree config).
    ".git/commondir",
    ".git/config.worktree",
    // Linked worktrees' and submodules' own git directories (each with its
    // config, hooks and commondir).
    ".git/worktrees",
    ".git/modules",
    "cairn.toml",
    ".cairn",
    ".mcp.json",
    "opencode.json",
    "opencode.jsonc",
    ".opencode",
    ".claude",
    ".agents",
];

/// The project's `.git`: made a mount point in the command's namespace so
/// that it cannot be renamed away and replaced by one with a hostile config.
pub const PINNED: &str = ".git";

/// What one session's commands may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Commands may open sockets (loopback included).
    pub network: bool,
    /// The project root, resolved.
    pub root: PathBuf,
    /// The system temp directory, resolved: writable in every mode.
    pub temp: PathBuf,
    /// Directories writable besides the temp directory: the project root
    /// and `writable_roots` in `workspace-write`, none in `read-only`.
    pub writable: Vec<PathBuf>,
    /// Paths never readable (nor writable), resolved; only existing ones.
    pub deny_read: Vec<PathBuf>,
    /// The user's home, resolved, for messages (`~/.bashrc`).
    pub home: Option<PathBuf>,
}

impl Policy {
    /// The policy `config` describes for the project at `root`. `own` are
    /// cairn's own config and data directories: the sessions database holds
    /// every conversation, so commands never read them.
    pub fn new(config: &SandboxConfig, root: &Path, own: &[PathBuf]) -> Policy {
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(|home| resolve(Path::new(&home)));
        let root = resolve(root);
        let expand = |entry: &String| crate::paths::expand_home(entry, home.as_deref());
        let mut writable = Vec::new();
        if config.mode == SandboxMode::WorkspaceWrite {
            writable.push(root.clone());
            writable.extend(
                config
                    .writable_roots
                    .iter()
                    .map(expand)
                    .map(|p| resolve(&p)),
            );
        }
        let mut deny_read: Vec<PathBuf> = Vec::new();
        if let Some(home) = &home {
            deny_read.extend(SECRET_PATHS.iter().map(|rel| home.join(rel)));
            deny_read.extend(other_homes(home));
        }
        deny_read.extend(own.iter().cloned());
        deny_read.extend(config.deny_read.iter().map(expand));
        let mut deny_read: Vec<PathBuf> = deny_read
            .iter()
            .filter(|path| path.exists())
            .map(|path| resolve(path))
            .collect();
        deny_read.sort();
        deny_read.dedup();
        Policy {
            mode: config.mode,
            network: config.network,
            root,
            temp: resolve(&std::env::temp_dir()),
            writable,
            deny_read,
            home,
        }
    }

    /// No confinement: for tests of other things and `--sandbox off`.
    pub fn off(root: &Path) -> Policy {
        let config = SandboxConfig {
            mode: SandboxMode::Off,
            ..SandboxConfig::default()
        };
        Policy::new(&config, root, &[])
    }

    /// This policy for a command the read-only classifier cleared: it may
    /// write nowhere but the temp directory, so a wrong classification
    /// fails the write instead of escaping the snapshot and `/undo`.
    pub fn for_read_only_command(&self) -> Policy {
        let mut policy = self.clone();
        if policy.mode == SandboxMode::WorkspaceWrite {
            policy.mode = SandboxMode::ReadOnly;
            policy.writable.clear();
        }
        policy
    }

    pub fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off
    }

    /// The protected paths of the project ([`PROTECTED`]).
    pub fn protected(&self) -> Vec<PathBuf> {
        PROTECTED.iter().map(|rel| self.root.join(rel)).collect()
    }

    /// `path` for a message: `~/x` under the home, relative inside the project.
    pub fn display(&self, path: &Path) -> String {
        if let Ok(rel) = path.strip_prefix(&self.root) {
            return rel.display().to_string();
        }
        match &self.home {
            Some(home) if path.starts_with(home) => {
                format!("~/{}", path.strip_prefix(home).unwrap_or(path).display())
            }
            _ => path.display().to_string(),
        }
    }

    /// Whether a confined command may write `path` (already resolved).
    pub fn may_write(&self, path: &Path) -> bool {
        !self.is_off()
            && (path.starts_with(&self.temp)
                || self.writable.iter().any(|dir| path.starts_with(dir)))
            && !self.deny_read.iter().any(|denied| path.starts_with(denied))
            && !self.is_protected(path)
    }

    /// Whether `path` (resolved) is one of the project's protected paths or under one.
    pub fn is_protected(&self, path: &Path) -> bool {
        self.mode == SandboxMode::WorkspaceWrite
            && self.protected().iter().any(|p| path.starts_with(p))
    }

    /// Whether `path` (resolved) is under a `deny_read` entry.
    pub fn is_denied(&self, path: &Path) -> bool {
        !self.is_off() && self.deny_read.iter().any(|denied| path.starts_with(denied))
    }

    /// The warning to show at start-up, in `cairn run`'s stderr and in
    /// `/permissions` when commands are less confined than the default
    /// promises: the user turned the sandbox off, or the kernel cannot.
    pub fn warning(&self) -> Option<String> {
        let support = super::support::support();
        if self.is_off() {
            return Some("sandbox off: commands run unconfined and can write anywhere you can (--sandbox off or [sandbox] mode)".into());
        }
        if !support.confines() {
            return Some(format!(
                "this system offers no {}: commands run UNCONFINED (cairn cannot keep them in the project or off the network)",
                support.missing().join(", ")
            ));
        }
        if self.mode == SandboxMode::WorkspaceWrite && !support.mount_namespace {
            return Some("no mount namespaces here: commands are confined, but .git/hooks, .git/config and the project's agent config are not write-protected".into());
        }
        None
    }

    /// What the model is told in its system prompt; `None` when commands
    /// run unconfined (nothing to tell).
    pub fn for_model(&self) -> Option<String> {
        if self.is_off() || !super::support::support().confines() {
            return None;
        }
        let writes = if self.writable.is_empty() {
            "only the temp directory"
        } else {
            "only inside the workspace root and the temp directory (not .git/hooks, .git/config or agent config files)"
        };
        let network = if self.network { "" } else { "; no network" };
        Some(format!(
            "Shell commands run in a sandbox: they may write {writes}{network}. A command the sandbox blocks \
             says so in its result; tell the user what it needed, and they may allow one run outside the sandbox."
        ))
    }

    /// One line for the status line, `cairn run`'s stderr and `/permissions`.
    pub fn describe(&self) -> String {
        if !self.is_off() && !super::support::support().confines() {
            return "sandbox unavailable: commands run unconfined".to_string();
        }
        let network = if self.network {
            "network on"
        } else {
            "no network"
        };
        match self.mode {
            SandboxMode::Off => "sandbox off: commands run unconfined".to_string(),
            SandboxMode::ReadOnly => {
                format!("sandbox read-only: writes only to the temp directory, {network}")
            }
            SandboxMode::WorkspaceWrite => {
                format!(
                    "sandbox workspace-write: writes only in the project and the temp directory, {network}"
                )
            }
        }
    }
}

/// `path` with symlinks and `..` resolved where it exists (the kernel
/// checks the real file), else as given.
fn resolve(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The other users' homes under `/home` (this user's own excluded).
fn other_homes(home: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/home") else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| !home.starts_with(resolve(path)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: SandboxMode) -> Policy {
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            mode,
            ..SandboxConfig::default()
        };
        let mut policy = Policy::new(&config, dir.path(), &[]);
        // The project is in the temp directory here; the rules under test
        // are about a project elsewhere.
        policy.temp = PathBuf::from("/elsewhere/tmp");
        policy
    }

    #[test]
    fn workspace_write_writes_the_project_but_not_its_protected_files() {
        let policy = policy(SandboxMode::WorkspaceWrite);
        assert!(policy.may_write(&policy.root.join("src/main.rs")));
        assert!(!policy.may_write(&policy.root.join(".git/hooks/pre-commit")));
        assert!(!policy.may_write(&policy.root.join(".claude/settings.json")));
        assert!(!policy.may_write(Path::new("/etc/passwd")));
    }

    #[test]
    fn read_only_commands_lose_the_project() {
        let policy = policy(SandboxMode::WorkspaceWrite).for_read_only_command();
        assert!(!policy.may_write(&policy.root.join("src/main.rs")));
        assert!(policy.may_write(Path::new("/elsewhere/tmp/x")));
    }

    #[test]
    fn off_confines_nothing() {
        let policy = policy(SandboxMode::Off);
        assert!(policy.writable.is_empty());
        assert!(!policy.is_denied(Path::new("/")));
    }
}
