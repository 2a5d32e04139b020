//! Instruction files given as URLs in config `instructions` (seed 001:
//! "files or URLs"): fetched once per session, with a timeout and a size cap,
//! and kept for every later request. A failure is shown to the user once and
//! the session goes on without that file.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::OnceCell;

use crate::session::prompt::{Instruction, is_url};

/// How long one instruction URL may take: the first request waits for it.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest instruction file taken from a URL: it is sent with every request.
const MAX_BYTES: usize = 256 * 1024;

/// The session's fetched URL instructions.
#[derive(Debug, Default)]
pub struct RemoteInstructions {
    fetched: OnceCell<Vec<Instruction>>,
}

impl RemoteInstructions {
    /// Fetches the configured URLs the first time it is called; later calls
    /// return at once. Failures are reported to the user.
    pub async fn load(&self, entries: &[String], report: impl Fn(&str)) {
        self.fetched
            .get_or_init(|| fetch_all(entries, &report))
            .await;
    }

    /// What [`Self::load`] fetched (nothing before it ran).
    pub fn loaded(&self) -> Vec<Instruction> {
        self.fetched.get().cloned().unwrap_or_default()
    }
}

async fn fetch_all(entries: &[String], report: &impl Fn(&str)) -> Vec<Instruction> {
    let urls: Vec<&String> = entries.iter().filter(|entry| is_url(entry)).collect();
    if urls.is_empty() {
        return Vec::new();
    }
    let client = match reqwest::Client::builder().timeout(FETCH_TIMEOUT).build() {
        Ok(client) => client,
        Err(error) => {
            report(&format!("cannot fetch instruction URLs: {error}"));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for url in urls {
        match fetch(&client, url).await {
            Ok(content) if content.trim().is_empty() => {}
            Ok(content) => out.push(Instruction {
                path: PathBuf::from(url),
                content,
            }),
            Err(reason) => report(&format!(
                "cannot fetch instructions from {url} (config `instructions`): {reason}; going on without them"
            )),
        }
    }
    out
}

/// One URL's body as text, refused past [`MAX_BYTES`].
async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let mut response = client.get(url).send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the server answered {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BYTES {
            return Err(format!("larger than {} KB", MAX_BYTES / 1024));
        }
    }
    String::from_utf8(body).map_err(|_| "not UTF-8 text".to_string())
}
