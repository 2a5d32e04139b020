//! Which local server a base URL is, asked once and remembered: llama-server
//! answers `GET /props` with its own fields, vLLM lists its models
//! `owned_by: "vllm"`; anything else is `Other`.
//!
//! Only an identified server is asked to count a prompt (`tokenize`): the
//! whole conversation posted to paths another server never answers cost every
//! run 3 s (issue #31). The question runs in the background and a caller
//! waits for it at most what it allows; answers are kept in memory and, once
//! [`use_cache_dir`] named one, in `local-servers.json` there, so the next run
//! does not ask again. Key types: [`ServerKind`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::clock::now_millis;
use crate::shared::lock;

/// What a local server is, as far as counting a prompt goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// `/apply-template` and `/tokenize`.
    LlamaServer,
    /// `/tokenize` taking the chat itself.
    Vllm,
    /// Counts nothing: never asked to.
    Other,
}

/// A server that takes longer than this to say what it is is not asked
/// again this process (it is not a llama-server answering from memory).
const IDENTIFY_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a remembered answer holds: a port may be given to another
/// server, and a day is a fair bound on asking once more.
const REMEMBER_FOR_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// The file of remembered answers, in the cache dir.
const CACHE_FILE: &str = "local-servers.json";

/// One remembered answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Known {
    kind: ServerKind,
    /// Milliseconds since the epoch.
    checked_at: i64,
}

/// The process's answers, and the questions in flight.
#[derive(Default)]
struct State {
    cache_dir: Option<PathBuf>,
    /// Read from disk on first use after the cache dir is named.
    loaded: bool,
    known: HashMap<String, Known>,
    asking: HashMap<String, watch::Receiver<Option<ServerKind>>>,
}

fn shared() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(Mutex::default)
}

/// Where answers are kept between runs (the binary names `data/cache`);
/// without it they last for the process only.
pub fn use_cache_dir(dir: PathBuf) {
    let mut state = lock(shared());
    state.cache_dir = Some(dir);
    state.loaded = false;
}

/// The server at `root` (its URL without `/v1`), if it is known within
/// `wait`; asks it in the background when it is not, and `None` then means
/// "not yet": the answer is there for a later caller.
pub async fn kind_within(root: &str, wait: Duration) -> Option<ServerKind> {
    let mut answer = {
        let mut state = lock(shared());
        if let Some(kind) = remembered(&mut state, root) {
            return Some(kind);
        }
        start_asking(&mut state, root)
    };
    let answered = tokio::time::timeout(wait, answer.wait_for(Option::is_some)).await;
    match answered {
        Ok(Ok(kind)) => *kind,
        _ => None,
    }
}

/// Starts asking `root` what it is, unless it is known or being asked.
pub fn identify_soon(root: &str) {
    let mut state = lock(shared());
    if remembered(&mut state, root).is_none() {
        start_asking(&mut state, root);
    }
}

/// Remembers `kind` for `root` (a server known as llama-server that answers
/// 404 to `/apply-template` is one no longer).
pub fn record(root: &str, kind: ServerKind) {
    let mut state = lock(shared());
    remember(&mut state, root, kind, true);
}

fn remembered(state: &mut State, root: &str) -> Option<ServerKind> {
    if !state.loaded {
        state.loaded = true;
        for (root, known) in read_cache(state.cache_dir.as_ref()) {
            state.known.entry(root).or_insert(known);
        }
    }
    let known = state.known.get(root)?;
    (now_millis().saturating_sub(known.checked_at) < REMEMBER_FOR_MILLIS).then_some(known.kind)
}

fn start_asking(state: &mut State, root: &str) -> watch::Receiver<Option<ServerKind>> {
    if let Some(asking) = state.asking.get(root) {
        return asking.clone();
    }
    let (answer, asking) = watch::channel(None);
    state.asking.insert(root.to_owned(), asking.clone());
    let root = root.to_owned();
    tokio::spawn(async move {
        let (kind, definite) = ask(&root).await;
        {
            let mut state = lock(shared());
            state.asking.remove(&root);
            remember(&mut state, &root, kind, definite);
        }
        answer.send_replace(Some(kind));
    });
    asking
}

/// Keeps the answer in memory, and on disk when the server gave it (not a
/// refused connection or a timeout, which say nothing of what runs there
/// next time).
fn remember(state: &mut State, root: &str, kind: ServerKind, definite: bool) {
    let known = Known {
        kind,
        checked_at: now_millis(),
    };
    state.known.insert(root.to_owned(), known);
    if definite && let Some(dir) = &state.cache_dir {
        let mut on_disk = read_cache(Some(dir));
        on_disk.insert(root.to_owned(), known);
        write_cache(dir, &on_disk);
    }
}

/// What `root` is, and whether the server itself said so.
async fn ask(root: &str) -> (ServerKind, bool) {
    let Ok(http) = reqwest::Client::builder().timeout(IDENTIFY_TIMEOUT).build() else {
        return (ServerKind::Other, false);
    };
    let props = get_json(&http, &format!("{root}/props")).await;
    if let Ok(Some(props)) = &props
        && is_llama_server(props)
    {
        return (ServerKind::LlamaServer, true);
    }
    let models = get_json(&http, &format!("{root}/v1/models")).await;
    if let Ok(Some(models)) = &models
        && is_vllm(models)
    {
        return (ServerKind::Vllm, true);
    }
    (ServerKind::Other, props.is_ok() && models.is_ok())
}

/// `Ok(None)`: the server answered, not with JSON or not 200; `Err`: no answer.
async fn get_json(http: &reqwest::Client, url: &str) -> Result<Option<Value>, ()> {
    let response = http.get(url).send().await.map_err(|_| ())?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let bytes = response.bytes().await.map_err(|_| ())?;
    Ok(serde_json::from_slice(&bytes).ok())
}

/// llama-server's `/props`: its generation settings and slot count.
fn is_llama_server(props: &Value) -> bool {
    props["default_generation_settings"].is_object() && props.get("total_slots").is_some()
}

/// vLLM's `/v1/models`: each model `owned_by: "vllm"`.
fn is_vllm(models: &Value) -> bool {
    models["data"]
        .as_array()
        .is_some_and(|data| data.iter().any(|model| model["owned_by"] == "vllm"))
}

fn read_cache(dir: Option<&PathBuf>) -> HashMap<String, Known> {
    dir.and_then(|dir| std::fs::read(dir.join(CACHE_FILE)).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Written whole to a temporary file and renamed: two runs at once leave
/// one complete file, never a torn one.
fn write_cache(dir: &PathBuf, known: &HashMap<String, Known>) {
    let written = (|| -> std::io::Result<()> {
        crate::paths::private_dir_builder().create(dir)?;
        let temporary = dir.join(format!("{CACHE_FILE}.{}", std::process::id()));
        let text = serde_json::to_vec_pretty(known).map_err(std::io::Error::other)?;
        std::io::Write::write_all(
            &mut crate::paths::private_file_options()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&temporary)?,
            &text,
        )?;
        std::fs::rename(&temporary, dir.join(CACHE_FILE))
    })();
    if let Err(error) = written {
        tracing::debug!(%error, dir = %dir.display(), "cannot remember what the local server is");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_server_props_are_told_from_other_servers() {
        let props = serde_json::json!({
            "default_generation_settings": {"n_ctx": 2048},
            "total_slots": 1,
            "chat_template": "{{ messages }}",
        });
        assert!(is_llama_server(&props));
        assert!(!is_llama_server(&serde_json::json!({"error": "not found"})));
        let vllm = serde_json::json!({"data": [{"id": "m", "owned_by": "vllm"}]});
        assert!(is_vllm(&vllm));
        let openai = serde_json::json!({"data": [{"id": "m", "owned_by": "organization-owner"}]});
        assert!(!is_vllm(&openai));
    }
}
