//! Builds a compaction's working state and writes it on the summary: reads
//! the session's records from the store and the current text of the files
//! touched last from disk, and hands them to `context::compaction::
//! working_state`, which decides what fits.

use std::io::Read;
use std::path::Path;

use serde_json::json;

use crate::context::compaction::working_state::{
    self, Budget, FileText, RECORD_TOOLS, WorkingState,
};
use crate::message::{Carried, Part, PartKind, TextPart, WORKING_STATE_METADATA};
use crate::session::Error;
use crate::session::writer::Writer;
use crate::store::RecordQuery;

/// Bytes read of one file at most: a window's budget of text is far less,
/// and a huge file must not cost a huge read.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// What [`carry`] needs of the compaction.
pub struct Compacted<'a> {
    /// The summary message's id.
    pub summary_id: &'a str,
    /// Messages summarized.
    pub summarized: usize,
    /// The first message the model still sees verbatim (tail, replayed
    /// message or the compaction request itself).
    pub verbatim_from: &'a str,
    /// The state's budget, in our tokenizer's units.
    pub budget: Budget,
}

/// What [`carry`] needs of the session: where to read and write, and what
/// may be read. (Not the session's context itself: this module stays below
/// the loop's files.)
pub struct Sources<'a> {
    pub writer: &'a Writer,
    pub session_id: &'a str,
    pub root: std::path::PathBuf,
    pub permissions: std::sync::Arc<crate::permission::Permissions>,
    pub sandbox: std::sync::Arc<crate::sandbox::Policy>,
}

/// Builds the working state, writes it as a part of the summary message
/// and returns what it carried (all zero when there was nothing to carry).
pub async fn carry(sources: Sources<'_>, compacted: Compacted<'_>) -> Result<Carried, Error> {
    let query = RecordQuery {
        tools: RECORD_TOOLS.iter().map(|t| t.to_string()).collect(),
        outputs_of: vec!["skill".to_string()],
    };
    let store = &sources.writer.store;
    let records = store.read_records(sources.session_id, query).await?;
    let root = sources.root;
    let budget = compacted.budget;
    let summary = store.get_message(compacted.summary_id).await?;
    let summary_text: String = summary
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) if !t.is_working_state() => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let verbatim_from = compacted.verbatim_from.to_string();
    let gate = ReadGate {
        permissions: sources.permissions,
        sandbox: sources.sandbox,
    };
    // Reading files and laying out the state is blocking work.
    let state = tokio::task::spawn_blocking(move || {
        let files = read_files(&working_state::files_to_read(&records, &root), &root, &gate);
        let mut state = working_state::build(&records, &root, Some(&verbatim_from), &files, budget);
        state.carried.thin_summary = working_state::is_thin(&summary_text, &records, &root);
        state
    })
    .await
    .map_err(|e| Error::Internal(format!("building the working state: {e}")))?;
    let WorkingState { text, mut carried } = state;
    carried.summarized_messages = compacted.summarized as u32;
    if let Some(summary) = summary
        && !text.is_empty()
    {
        let part = TextPart {
            text,
            synthetic: true,
            metadata: Some(json!({ WORKING_STATE_METADATA: &carried })),
            ..TextPart::default()
        };
        sources
            .writer
            .part(&Part::new(&summary.message, PartKind::Text(part)))
            .await?;
    }
    Ok(carried)
}

/// What decides whether cairn itself may re-read a file for the state: the
/// text is sent to the model with nobody asked, so only a file the model
/// could read right now without a question qualifies, and only where it
/// really lies inside the project (a file swapped for a symlink to a key
/// since it was read must not be followed out).
struct ReadGate {
    permissions: std::sync::Arc<crate::permission::Permissions>,
    sandbox: std::sync::Arc<crate::sandbox::Policy>,
}

impl ReadGate {
    /// The file's real path when it may be re-read, else `None`.
    fn admit(&self, path: &str, root: &Path) -> Option<std::path::PathBuf> {
        let real_root = std::fs::canonicalize(root).ok()?;
        let real = std::fs::canonicalize(root.join(path)).ok()?;
        let inside = real.strip_prefix(&real_root).ok()?.to_str()?.to_string();
        let allowed = self.permissions.allows("read", path)
            && self.permissions.allows("read", &inside)
            && !self.sandbox.is_denied(&real);
        allowed.then_some(real)
    }
}

/// The current text of each file, bounded and with known secrets redacted;
/// directories, binary files and files the gate refuses are left out (the
/// state's file list still names them), a file that is gone says so.
fn read_files(paths: &[String], root: &Path, gate: &ReadGate) -> Vec<FileText> {
    paths
        .iter()
        .filter_map(|path| {
            if !root.join(path).exists() {
                return Some(FileText {
                    path: path.clone(),
                    text: None,
                    cut_at: None,
                });
            }
            let real = gate.admit(path, root)?;
            let meta = std::fs::metadata(&real).ok()?;
            if !meta.is_file() {
                return None;
            }
            let text = read_text(&real)?;
            Some(FileText {
                path: path.clone(),
                text: Some(crate::secret::redact(&text).into_owned()),
                cut_at: (meta.len() > MAX_FILE_BYTES).then_some(meta.len()),
            })
        })
        .collect()
}

fn read_text(path: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
