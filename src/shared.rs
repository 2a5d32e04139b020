//! Small helpers used by several layers that belong to none of them: digit
//! grouping and short token counts for the figures messages show, a lock that survives a panic, and
//! the password part of a URL (config and secret redaction both need it).

use std::sync::{Mutex, MutexGuard};

/// `12345` -> `12,345`, for messages to the user.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Locks a mutex whose data stays usable after a panic elsewhere (plain
/// maps, counters, lists): a poisoned lock is taken as is.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The password of a URL like `https://user:password@host/v1`, if any.
pub fn url_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    Some(password).filter(|p| !p.is_empty())
}

/// `124000` -> `124k`, `3100` -> `3.1k`.
pub fn short(tokens: u64) -> String {
    match tokens {
        0..=999 => tokens.to_string(),
        1_000..=9_999 => format!("{:.1}k", tokens as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", tokens / 1000),
        _ => format!("{:.1}M", tokens as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(12_345), "12,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
