//! Small helpers used by several layers that belong to none of them: digit
//! grouping and short token counts for the figures messages show, a lock that survives a panic,
//! the password part of a URL (config and secret redaction both need it), and where a URL's host
//! is ([`reach`]: project trust, the provider client and the model list all decide it alike).

use std::sync::{Mutex, MutexGuard};

/// `12345` -> `12,345`, for messages to the user.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
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

/// Where a URL's requests go, as the HTTP client will connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// `localhost`, 127.0.0.0/8, `::1` (also as `::ffff:127.x.x.x`).
    ThisMachine,
    /// A private or link-local address (RFC 1918, fc00::/7, fe80::/10).
    LocalNetwork,
    /// Anywhere else, and anything that does not parse as a URL with a host.
    Elsewhere,
}

/// Where requests to `url` go. Parsed with the `url` crate, the parser
/// reqwest uses, so that a spelling read one way here and another way by the
/// client cannot exist (issue #28: `http://192.0.2.2:1\@localhost/v1` is
/// host 192.0.2.2 for a WHATWG parser, not `localhost`); decimal, octal and
/// hex IPv4 forms are read as the addresses they are. Only the exact name
/// `localhost` counts as this machine: `localhost.` and `x.localhost` go to
/// the resolver, which may ask DNS.
pub fn reach(url: &str) -> Reach {
    let Ok(parsed) = url::Url::parse(url) else {
        return Reach::Elsewhere;
    };
    match parsed.host() {
        Some(url::Host::Domain("localhost")) => Reach::ThisMachine,
        Some(url::Host::Ipv4(ip)) => reach_v4(ip),
        Some(url::Host::Ipv6(ip)) => match ip.to_ipv4_mapped() {
            Some(ip) => reach_v4(ip),
            None if ip.is_loopback() => Reach::ThisMachine,
            // fc00::/7 unique-local, fe80::/10 link-local.
            None if (ip.segments()[0] & 0xfe00) == 0xfc00
                || (ip.segments()[0] & 0xffc0) == 0xfe80 =>
            {
                Reach::LocalNetwork
            }
            None => Reach::Elsewhere,
        },
        Some(url::Host::Domain(_)) | None => Reach::Elsewhere,
    }
}

fn reach_v4(ip: std::net::Ipv4Addr) -> Reach {
    if ip.is_loopback() {
        Reach::ThisMachine
    } else if ip.is_private() || ip.is_link_local() {
        Reach::LocalNetwork
    } else {
        Reach::Elsewhere
    }
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

/// Where `path` really is when a link takes it outside `root` (a project's
/// `AGENTS.md -> ~/.ssh/id_rsa`, an agent file or skill folder linked to the
/// home): `None` when it stays inside, or does not exist. A repository's
/// files are read only where they are, never through a link out of it.
pub fn linked_outside(
    path: &std::path::Path,
    root: &std::path::Path,
) -> Option<std::path::PathBuf> {
    let real = path.canonicalize().ok()?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    (!real.starts_with(&root)).then_some(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client must connect where `reach` says (issue #28).
    #[test]
    fn reach_decides_on_the_host_the_client_connects_to() {
        let cases = [
            ("http://localhost:8080/v1", Reach::ThisMachine),
            ("http://127.0.0.1:1\\@evil.example/v1", Reach::ThisMachine),
            ("http://192.0.2.2:1\\@localhost/v1", Reach::Elsewhere),
            ("http://10.1.2.3/v1", Reach::LocalNetwork),
            ("http://[fd00::2]/v1", Reach::LocalNetwork),
            ("http://[fe80::1]/v1", Reach::LocalNetwork),
            ("http://[::ffff:10.0.0.1]/v1", Reach::LocalNetwork),
            ("http://[::ffff:127.0.0.1]/v1", Reach::ThisMachine),
            ("http://2130706433/", Reach::ThisMachine),
            ("http://0x7f.1/", Reach::ThisMachine),
            ("http://localhost./", Reach::Elsewhere),
            ("http://a.localhost/", Reach::Elsewhere),
            ("file:///etc/passwd", Reach::Elsewhere),
            ("", Reach::Elsewhere),
        ];
        for (url, want) in cases {
            assert_eq!(reach(url), want, "{url}");
            if let Ok(parsed) = reqwest::Url::parse(url) {
                // The same parser: the host reqwest sees is the one decided on.
                let ours = url::Url::parse(url).expect("parses alike");
                assert_eq!(parsed.host_str(), ours.host_str(), "{url}");
            }
        }
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(12_345), "12,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
