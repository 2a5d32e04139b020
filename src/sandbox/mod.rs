//! The sandbox under every `bash` command (Linux): the kernel, not a parse
//! of the command line, decides what a command may write, read and connect
//! to. Landlock confines the file system (and keeps commands from tracing
//! or signalling cairn), a seccomp filter takes the network away, and a
//! private mount namespace makes the files that decide what runs later
//! (`.git/hooks`, `.git/config`, the project's agent config) read-only.
//!
//! - [`Policy`]: what one session's commands may reach, from `[sandbox]`.
//! - [`Confinement`]: a policy prepared for one child: built in cairn
//!   before the fork, applied in the child between fork and exec.
//! - [`Support`]: what this kernel offers, probed once.
//! - [`refusals`]: what a confined command's output says was refused.
//!
//! It never decides whether a command runs (`permission` does) and never
//! spawns one (`tool::bash` does).

mod capabilities;
mod confine;
mod error;
mod mounts;
mod network;
mod policy;
mod refusal;
mod rules;
mod support;

/// How a command's result starts the line that says what the sandbox
/// refused: the bash tool writes it, `cairn run` shows it on stderr.
pub const BLOCKED: &str = "blocked by the sandbox: ";

/// The permission of running one command outside the sandbox: asked of
/// the person only, never settled by a rule or `--yolo`.
pub const UNCONFINED: &str = "unsandboxed";

pub use confine::{Confinement, remove_created};
pub use error::Error;
pub use policy::{PROTECTED, Policy, SECRET_PATHS};
pub use refusal::{Refusal, refusals};
pub use support::{Support, support};

/// Makes cairn's own process non-dumpable, so that no other process of
/// the user (a command included) can read `/proc/<cairn>/environ` (the
/// provider keys), its memory or its open files. Landlock already keeps
/// confined commands out; this closes the same door for unconfined ones
/// when cairn does not run as root. Best effort: a failure is logged.
pub fn protect_own_process() {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes integer arguments and touches no memory of ours.
    let status = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if status != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not make cairn non-dumpable: its environment stays readable by the user's processes"
        );
    }
}
