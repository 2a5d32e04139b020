//! The seccomp filter of a confined command: no sockets at all while the
//! network is off (so no TCP, UDP, DNS, `/dev/tcp`, netlink, nor a
//! loopback or Unix-socket service), and never the calls that would let a
//! command running as root reach past Landlock (loading kernel modules,
//! BPF, rebooting, the kernel keyring).
//!
//! Chosen over a network namespace: it needs no user namespaces (which
//! some containers and distributions switch off), costs no namespace
//! set-up per command, and shuts Unix sockets too, which a network
//! namespace leaves open. `socketpair` stays allowed: it connects nothing.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};

use super::error::Error;

/// Calls refused whatever the policy: each reaches the kernel past the
/// file-system rules when the caller is root.
const ALWAYS_REFUSED: &[libc::c_long] = &[
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_reboot,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_perf_event_open,
    libc::SYS_setns,
    libc::SYS_swapon,
    libc::SYS_swapoff,
];

/// Calls refused while the network is off: every way to get a socket
/// (io_uring can open one without `socket(2)`).
const NETWORK: &[libc::c_long] = &[
    libc::SYS_socket,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// x32 system calls are the x86_64 ones with this bit set, under the same
/// architecture tag: a filter by number must refuse both spellings.
#[cfg(target_arch = "x86_64")]
const X32_BIT: libc::c_long = 0x4000_0000;

/// The compiled filter for a command with or without the network.
pub(super) fn filter(network: bool) -> Result<BpfProgram, Error> {
    let mut refused: Vec<libc::c_long> = ALWAYS_REFUSED.to_vec();
    if !network {
        refused.extend_from_slice(NETWORK);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<libc::c_long> = refused.iter().map(|nr| nr | X32_BIT).collect();
        refused.extend(x32);
    }
    let rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused.into_iter().map(|nr| (nr, Vec::new())).collect();
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(Error::seccomp)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(Error::seccomp)?;
    BpfProgram::try_from(filter).map_err(Error::seccomp)
}
