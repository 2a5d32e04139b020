//! A confined command running as root keeps no capability: root's
//! capabilities reach past Landlock (`CAP_SYS_PTRACE` reads any process's
//! `/proc` files, cairn's environment with the keys included;
//! `CAP_LINUX_IMMUTABLE` makes a planted file impossible to remove). The
//! bounding set is emptied before exec, so the exec'd root gets none.
//! A command not running as root has none to lose: `no_new_privs` (set
//! with Landlock) keeps setuid and file capabilities from giving any back.
//!
//! Runs between fork and exec: system calls only.

/// Capability numbers are below this (the kernel answers EINVAL past its last one).
const CAP_LIMIT: libc::c_ulong = 64;

/// Empties the ambient and bounding sets. Child side only.
///
/// # Errors
/// When running as root and the bounding set cannot be emptied.
pub(super) fn drop_all() -> std::io::Result<()> {
    // SAFETY: prctl and geteuid take and return integers only.
    unsafe {
        // Old kernels have no ambient set: nothing to clear there.
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::geteuid() != 0 {
            return Ok(());
        }
        for cap in 0..CAP_LIMIT {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                let error = std::io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(error);
            }
        }
    }
    Ok(())
}
