//! The private mount namespace of a confined command: the project's
//! protected paths that exist ([`super::PROTECTED`]) are bind-mounted
//! read-only onto themselves, and `.git` becomes a mount point (which
//! cannot be renamed or removed, so it cannot be swapped for another).
//!
//! Landlock alone cannot do this: its grants reach everything beneath a
//! directory, so a writable project makes `.git/hooks` writable. Landlock
//! does keep the command from undoing these mounts (a confined process may
//! not mount or unmount). A protected path that does not exist yet cannot
//! be mounted over; `Confinement` checks after the command that none was
//! created.
//!
//! [`MountPlan::apply`] runs between fork and exec, so it uses only raw
//! system calls on strings prepared before the fork.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::error::Error;

/// Everything the child needs, prepared in cairn.
#[derive(Debug)]
pub(super) struct MountPlan {
    /// Not root: a user namespace comes first, with this uid and gid map.
    user: Option<UserMap>,
    /// Bind-mounted onto themselves, writable.
    pins: Vec<CString>,
    /// Bind-mounted onto themselves, then remounted read-only with the
    /// flags the original mount must keep (a user namespace may not drop
    /// `nosuid`, `nodev`, ...).
    read_only: Vec<(CString, libc::c_ulong)>,
}

#[derive(Debug)]
struct UserMap {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

const ROOT: &[u8] = b"/\0";
const SETGROUPS: &[u8] = b"/proc/self/setgroups\0";
const UID_MAP: &[u8] = b"/proc/self/uid_map\0";
const GID_MAP: &[u8] = b"/proc/self/gid_map\0";

impl MountPlan {
    /// The plan for `pins` and `read_only` (paths that exist); `None` when
    /// there is nothing to mount.
    pub(super) fn new(pins: &[&Path], read_only: &[&Path]) -> Result<Option<MountPlan>, Error> {
        if pins.is_empty() && read_only.is_empty() {
            return Ok(None);
        }
        // SAFETY: geteuid/getuid/getgid only return the caller's ids.
        let (euid, uid, gid) = unsafe { (libc::geteuid(), libc::getuid(), libc::getgid()) };
        let user = (euid != 0).then(|| UserMap {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        });
        let read_only = read_only
            .iter()
            .map(|path| Ok((c_path(path)?, locked_flags(path))))
            .collect::<Result<Vec<_>, Error>>()?;
        let pins = pins
            .iter()
            .map(|path| c_path(path))
            .collect::<Result<_, _>>()?;
        Ok(Some(MountPlan {
            user,
            pins,
            read_only,
        }))
    }

    /// Enters a new mount namespace and makes the mounts. Child side only.
    pub(super) fn apply(&self) -> std::io::Result<()> {
        let mut flags = libc::CLONE_NEWNS;
        if self.user.is_some() {
            flags |= libc::CLONE_NEWUSER;
        }
        // SAFETY: unshare takes flags only; the child is single-threaded after fork.
        check(unsafe { libc::unshare(flags) })?;
        if let Some(user) = &self.user {
            write_file(SETGROUPS, b"deny")?;
            write_file(UID_MAP, &user.uid_map)?;
            write_file(GID_MAP, &user.gid_map)?;
        }
        // Our mounts must not propagate back to the user's namespace.
        mount(None, ROOT.as_ptr().cast(), libc::MS_REC | libc::MS_PRIVATE)?;
        for pin in &self.pins {
            mount(Some(pin.as_ptr()), pin.as_ptr(), libc::MS_BIND)?;
        }
        for (path, locked) in &self.read_only {
            mount(
                Some(path.as_ptr()),
                path.as_ptr(),
                libc::MS_BIND | libc::MS_REC,
            )?;
            let remount = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked;
            mount(None, path.as_ptr(), remount)?;
        }
        Ok(())
    }
}

fn c_path(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Path(path.to_path_buf()))
}

/// The flags of the mount holding `path` that a remount must repeat.
fn locked_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = c_path(path) else {
        return 0;
    };
    // SAFETY: statvfs writes into the zeroed struct we own; `c` is a valid C string.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &raw mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms)
}

fn mount(
    source: Option<*const libc::c_char>,
    target: *const libc::c_char,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let source = source.unwrap_or(std::ptr::null());
    // SAFETY: every pointer is a NUL-terminated string owned by the plan (or null).
    check(unsafe { libc::mount(source, target, std::ptr::null(), flags, std::ptr::null()) })
}

/// open/write/close with raw calls: no allocation after fork.
fn write_file(path: &[u8], content: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `content` is a live slice.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let written = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    unsafe { libc::close(fd) };
    if written < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn check(status: libc::c_int) -> std::io::Result<()> {
    if status < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}
