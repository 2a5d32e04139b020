//! Identifiers that sort by creation time.
//!
//! `{prefix}_{16 hex digits}{6 random base62}`: the hex digits are a
//! process-wide monotonic counter seeded from the clock (milliseconds << 16), so
//! two ids made in the same millisecond still sort in creation order, and string
//! comparison is time comparison. The random tail keeps ids from two processes
//! writing the same session apart.

use std::sync::atomic::{AtomicU64, Ordering};

static LAST: AtomicU64 = AtomicU64::new(0);

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn ascending(prefix: &str) -> String {
    let now = (crate::clock::now_millis().max(0) as u64) << 16;
    let mut previous = LAST.load(Ordering::Relaxed);
    let value = loop {
        let next = now.max(previous + 1);
        match LAST.compare_exchange_weak(previous, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(actual) => previous = actual,
        }
    };
    let mut id = format!("{prefix}_{value:016x}");
    for _ in 0..6 {
        id.push(BASE62[fastrand::usize(..BASE62.len())] as char);
    }
    id
}

pub fn session_id() -> String {
    ascending("ses")
}

pub fn message_id() -> String {
    ascending("msg")
}

pub fn part_id() -> String {
    ascending("prt")
}

/// A kept copy of a file's content (`snapshot::preimage`).
pub fn preimage_id() -> String {
    ascending("pre")
}

/// Id for a tool call cairn makes itself (user `!cmd`), in the provider style.
pub fn call_id() -> String {
    ascending("call")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_in_creation_order() {
        let ids: Vec<String> = (0..10_000).map(|_| message_id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
    }
}
