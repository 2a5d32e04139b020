//! What a confined command's output says the sandbox refused. The kernel
//! refuses with a plain `EACCES`, `EPERM` or `EROFS`, and the program
//! prints it in its own words; this reads the usual shapes ("X: Permission
//! denied", "cannot touch 'X': Read-only file system", a socket refused)
//! and keeps only the refusals the policy explains, so a file that is
//! simply read-only is not blamed on the sandbox.

use std::path::{Path, PathBuf};

use super::policy::Policy;

/// One thing the sandbox refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A write outside the writable directories.
    Write(PathBuf),
    /// A write to a protected project file.
    Protected(PathBuf),
    /// A protected project file the command created that could not be removed.
    Left(PathBuf),
    /// A read of a `deny_read` path.
    Read(PathBuf),
    /// A socket, while the network is off.
    Network,
}

impl Refusal {
    /// The line the model and the user read.
    pub fn explain(&self, policy: &Policy) -> String {
        match self {
            Refusal::Write(path) => format!(
                "write to {} is outside the {}",
                policy.display(path),
                if policy.writable.is_empty() {
                    "temp directory (read-only sandbox)"
                } else {
                    "project and the temp directory"
                }
            ),
            Refusal::Protected(path) => format!(
                "{} decides what runs later, so commands cannot change it (the edit and write tools can, after asking)",
                policy.display(path)
            ),
            Refusal::Left(path) => format!(
                "the command created {}, which decides what runs later, and it could NOT be removed: \
                 look at it before running cairn here again",
                policy.display(path)
            ),
            Refusal::Read(path) => format!(
                "{} holds secrets and is not readable by commands",
                policy.display(path)
            ),
            Refusal::Network => "commands have no network (sandbox.network = false)".to_string(),
        }
    }
}

/// Messages that mean a file-system refusal.
const DENIED: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
];

/// Messages that mean a socket could not be had.
const NETWORK: &[&str] = &[
    "socket: Operation not permitted",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Couldn't connect to server",
    "Network is unreachable",
    "[Errno 1] Operation not permitted",
    "Failed to connect",
    "unable to resolve host",
    "Could not resolve",
];

/// The refusals `output` shows for a command run in `cwd` under `policy`,
/// each once, in order.
pub fn refusals(output: &str, cwd: &Path, policy: &Policy) -> Vec<Refusal> {
    if policy.is_off() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for line in output.lines() {
        let refusal = if !policy.network && NETWORK.iter().any(|m| line.contains(m)) {
            Some(Refusal::Network)
        } else if DENIED.iter().any(|m| line.contains(m)) {
            named_path(line).and_then(|path| classify(&absolute(cwd, &path, policy), policy))
        } else {
            None
        };
        if let Some(refusal) = refusal
            && !found.contains(&refusal)
        {
            found.push(refusal);
        }
    }
    found
}

fn classify(path: &Path, policy: &Policy) -> Option<Refusal> {
    // Devices a command may use, and other processes' `/proc` files (whose
    // refusal is the kernel's own rule, not a write): nothing to explain.
    if path.starts_with("/dev") || path.starts_with("/proc") {
        return None;
    }
    if policy.is_denied(path) {
        Some(Refusal::Read(path.to_path_buf()))
    } else if policy.is_protected(path) {
        Some(Refusal::Protected(path.to_path_buf()))
    } else if !policy.may_write(path) {
        Some(Refusal::Write(path.to_path_buf()))
    } else {
        None
    }
}

/// The path a refusal line names: the quoted one (`cannot touch 'x'`), else
/// the `prog: path: message` field before the message.
fn named_path(line: &str) -> Option<String> {
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        if let Some(start) = line.find(open) {
            let rest = &line[start + open.len_utf8()..];
            if let Some(end) = rest.find(close)
                && end > 0
            {
                return Some(rest[..end].to_string());
            }
        }
    }
    let fields: Vec<&str> = line.split(": ").collect();
    let message = fields
        .iter()
        .position(|f| DENIED.iter().any(|m| f.contains(m)))?;
    let candidate = fields.get(message.checked_sub(1)?)?.trim();
    let candidate = candidate.rsplit(' ').next().unwrap_or(candidate);
    (!candidate.is_empty()
        && (candidate.contains('/') || candidate.contains('.') || !candidate.contains(' ')))
    .then(|| candidate.to_string())
}

/// `path` made absolute against `cwd`, `~/` expanded, and resolved as far
/// as it exists (the file refused may not exist; its folder does).
fn absolute(cwd: &Path, path: &str, policy: &Policy) -> PathBuf {
    resolve(&cwd.join(crate::paths::expand_home(path, policy.home.as_deref())))
}

/// `path` with symlinks resolved as far as it exists (the kernel refused
/// the real file), the missing rest appended, `..` folded.
fn resolve(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path.to_path_buf();
    while existing.canonicalize().is_err() {
        let Some(name) = existing.file_name().map(std::ffi::OsStr::to_os_string) else {
            break;
        };
        missing.push(name);
        if !existing.pop() {
            break;
        }
    }
    let mut resolved = existing.canonicalize().unwrap_or(existing);
    for name in missing.into_iter().rev() {
        if name == ".." {
            resolved.pop();
        } else if name != "." {
            resolved.push(name);
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SandboxConfig, SandboxMode};

    fn policy() -> (tempfile::TempDir, Policy) {
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            ..SandboxConfig::default()
        };
        let policy = Policy::new(&config, dir.path(), &[]);
        (dir, policy)
    }

    #[test]
    fn the_usual_shapes_name_the_path() {
        let (_dir, policy) = policy();
        let cwd = policy.root.clone();
        let cases = [
            (
                "bash: /etc/cairn-x: Permission denied",
                Some(Refusal::Write("/etc/cairn-x".into())),
            ),
            (
                "touch: cannot touch '/etc/y': Permission denied",
                Some(Refusal::Write("/etc/y".into())),
            ),
            (
                "bash: line 1: .git/hooks/post-checkout: Read-only file system",
                Some(Refusal::Protected(
                    policy.root.join(".git/hooks/post-checkout"),
                )),
            ),
            (
                "curl: (6) Could not resolve host: example.com",
                Some(Refusal::Network),
            ),
            ("bash: src/x: Permission denied", None),
        ];
        for (line, expected) in cases {
            assert_eq!(
                refusals(line, &cwd, &policy).first().cloned(),
                expected,
                "{line}"
            );
        }
    }
}
