//! What this kernel offers the sandbox, probed once per process: the
//! Landlock version, seccomp, and whether a mount namespace (for the
//! protected project files) can be had. cairn never claims a protection
//! this says it lacks.

use std::sync::OnceLock;

/// The kernel's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Landlock ABI version; 0 when the kernel has none (or blocks it).
    pub landlock_abi: i64,
    /// seccomp filters can be installed.
    pub seccomp: bool,
    /// A mount namespace can be made (root, or unprivileged user namespaces).
    pub mount_namespace: bool,
}

impl Support {
    /// Whether commands can be confined at all: without Landlock nothing
    /// keeps their writes in the project, so cairn runs them unconfined and
    /// says so, rather than pretend.
    pub fn confines(&self) -> bool {
        self.landlock_abi >= 1 && self.seccomp
    }

    /// What is missing, for the warning; empty when nothing is.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.landlock_abi < 1 {
            missing.push("Landlock (file-system confinement)");
        }
        if !self.seccomp {
            missing.push("seccomp (network confinement)");
        }
        if !self.mount_namespace {
            missing.push("mount namespaces (read-only .git/hooks and agent config)");
        }
        missing
    }
}

/// The probe's result, made on first use.
pub fn support() -> Support {
    static PROBED: OnceLock<Support> = OnceLock::new();
    *PROBED.get_or_init(probe)
}

/// `CAIRN_SANDBOX_PRETEND_UNSUPPORTED=1` makes the probe report no support:
/// for testing the warning on kernels that have everything.
const PRETEND_UNSUPPORTED: &str = "CAIRN_SANDBOX_PRETEND_UNSUPPORTED";

fn probe() -> Support {
    if std::env::var_os(PRETEND_UNSUPPORTED).is_some_and(|v| v == "1") {
        return Support {
            landlock_abi: 0,
            seccomp: false,
            mount_namespace: false,
        };
    }
    Support {
        landlock_abi: landlock_abi(),
        seccomp: seccomp_available(),
        mount_namespace: mount_namespace_available(),
    }
}

fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this call only reports the ABI version.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi.max(0)
}

fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP reads the caller's mode; it changes nothing.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

fn mount_namespace_available() -> bool {
    // SAFETY: geteuid only returns the caller's id.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let read = |path: &str| std::fs::read_to_string(path).map(|text| text.trim().to_string());
    let max = read("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    let unprivileged =
        read("/proc/sys/kernel/unprivileged_userns_clone").unwrap_or_else(|_| "1".into());
    let apparmor = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
        .unwrap_or_else(|_| "0".into());
    max != "0" && !max.is_empty() && unprivileged == "1" && apparmor == "0"
}
