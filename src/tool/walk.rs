//! Shared by the file-finding tools: the ignore-aware directory walker,
//! modification times for newest-first sorting, and binary sniffing.
//! Never decides what a tool reports.

use std::io::Read as _;
use std::path::Path;
use std::time::SystemTime;

/// How many results glob and grep return at most (spec 8).
pub const RESULT_LIMIT: usize = 100;

/// How many bytes to look at when deciding whether a file is binary.
const SNIFF_BYTES: usize = 8 * 1024;

/// A walker over `root` that respects .gitignore (even outside a git
/// repository), .ignore and global excludes, and skips hidden files.
pub fn walker(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build()
}

/// Last modification time; files whose time cannot be read sort last.
pub fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Whether `bytes` (the start of a file) look binary: a NUL byte, or more
/// than 30% of bytes that are neither text nor UTF-8.
pub fn looks_binary(bytes: &[u8]) -> bool {
    if bytes.contains(&0) {
        return true;
    }
    if bytes.is_empty() {
        return false;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(_) => return false,
        // A multi-byte character cut at the end of the sample is still text.
        Err(error) if error.error_len().is_none() => return false,
        Err(_) => bytes,
    };
    let odd = text
        .iter()
        .filter(|b| **b < 0x09 || (**b > 0x0d && **b < 0x20))
        .count();
    let high = text.iter().filter(|b| **b >= 0x80).count();
    (odd + high) * 10 > text.len() * 3
}

/// Whether the file at `path` looks binary (unreadable files count as binary).
pub fn file_looks_binary(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    let mut sample = Vec::with_capacity(SNIFF_BYTES);
    if file
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sample)
        .is_err()
    {
        return true;
    }
    looks_binary(&sample)
}
