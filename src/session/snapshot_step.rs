//! The snapshots around one step and the `patch` part they yield.
//!
//! The "before" snapshot of a step is the "after" snapshot of the session's
//! last writing step when nothing ran since (kept in [`Chain`]); otherwise it
//! starts with the step, on a blocking thread, while the request goes out.
//! Either way it is awaited only before the first tool that may change files.
//! After the tools finish, the "after" snapshot is started and left running
//! while the next request streams: its `patch` part (the files that differ,
//! each with the tool that changed it) is written when it completes, and the
//! loop waits for it before the turn ends, before a compaction, `/undo` and
//! `/diff`. A step whose tools cannot write (reads, read-only `bash`) takes
//! no "after" snapshot at all.
//!
//! Before an `edit` or `write` runs, the file it names is copied aside (a
//! pre-image): when the "after" snapshot does not see the file change
//! (ignored, nested repository, over the cap, outside the project), the copy
//! is recorded on the patch part so that `/undo` still restores it; when it
//! does, the copy is dropped. After a step that ran a writing shell command,
//! what it wrote where the snapshot cannot see is named on the patch part.
//!
//! The first snapshot of a project hashes every file (9 s on 50,000 files),
//! so a session starts one when it opens ([`Chain::warm_up`]); a step's
//! "before" snapshot then waits for it and takes only what changed since
//! (the user may have edited files while typing), so the first writing
//! step waits only for what is left, and never races a write.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use serde_json::Value;

use crate::message::{KeptFile, Message, Part, PartKind, PatchFile, PatchPart};
use crate::permission::read_only;
use crate::session::Error;
use crate::session::ctx::SessionCtx;
use crate::snapshot::{Captured, ChangeKind, FileChange, PreImages, Snapshots};

/// A snapshot being taken: its tree id, or why it failed (also logged):
/// the step's card and `/undo` say it, never silently.
type Pending = Shared<BoxFuture<'static, Result<String, String>>>;

/// The newest snapshot of a session's tree as its steps left it: the
/// "after" of the last writing step (its patch written when it completes),
/// or the "before" of a step that wrote nothing. The next step starts from
/// it instead of taking its own.
#[derive(Default)]
pub struct Chain {
    latest: Mutex<Option<Pending>>,
    /// The snapshot started when the session opened: it fills the store
    /// (every file hashed) so that a step's own snapshot is an update.
    warming: Mutex<Option<Pending>>,
    /// The files the turn's steps kept so far (absolute paths): a later
    /// shell step of the same turn fingerprints them again.
    turn_kept: Arc<Mutex<Vec<String>>>,
}

impl Chain {
    /// Starts the session's first snapshot in the background, once.
    pub fn warm_up(&self, store: &Snapshots) {
        let mut warming = crate::shared::lock(&self.warming);
        if warming.is_none() {
            *warming = Some(track_now(store.clone(), None));
        }
    }

    /// Waits until the latest snapshot is taken and its patch part written.
    pub async fn settle(&self) {
        let latest = crate::shared::lock(&self.latest).clone();
        if let Some(latest) = latest {
            // A failure is on the step's patch part (and logged): this
            // only waits for it.
            let _ = latest.await;
        }
    }

    /// [`Self::settle`], then forgets it: at the end of a turn, since the
    /// user may edit files before the next one, whose first step must see
    /// them as they are then.
    pub async fn settle_and_forget(&self) {
        self.settle().await;
        crate::shared::lock(&self.latest).take();
        crate::shared::lock(&self.turn_kept).clear();
    }

    /// The latest snapshot unless it is known to have failed.
    fn usable(&self) -> Option<Pending> {
        crate::shared::lock(&self.latest)
            .clone()
            .filter(|latest| !matches!(latest.peek(), Some(Err(_))))
    }

    fn set(&self, pending: Pending) {
        *crate::shared::lock(&self.latest) = Some(pending);
    }

    fn forget(&self) {
        crate::shared::lock(&self.latest).take();
    }
}

/// One step's snapshots, from its start to its patch.
pub struct StepSnapshots {
    store: Option<Snapshots>,
    before: Before,
    /// (tool, input) of every call the step made, for attribution.
    calls: Vec<(String, Value)>,
    /// Where the step's tools resolve relative paths.
    cwd: PathBuf,
    /// The files the step's `edit` and `write` calls named, as they were
    /// before the first of them ran.
    captures: Vec<Capture>,
    /// When the first tool that may write started: what a shell command
    /// wrote where the snapshot cannot see is looked for from then.
    since: Option<SystemTime>,
    /// The ignored entries before the first tool other than `edit`/`write`
    /// that may write: one that is gone after the step (`rm .env`, `mv`)
    /// is named, as no time of change is left to see.
    ignored_before: Option<Vec<String>>,
}

/// A file an `edit` or `write` of the step named, as it was before.
struct Capture {
    path: PathBuf,
    captured: Captured,
    /// The last tool that named it.
    by: String,
}

enum Before {
    None,
    Running(Pending),
    Taken(String),
    /// The snapshot failed (a tracked folder swapped for a symlink, say):
    /// the step still keeps its pre-images, so cairn's own edits undo.
    Failed(String),
}

impl StepSnapshots {
    /// The step's "before" snapshot when snapshots are on: the chain's
    /// latest, or a new one started now.
    pub fn start(ctx: &SessionCtx) -> Self {
        let store = ctx.snapshots.clone();
        let before = match &store {
            Some(store) => Before::Running(match ctx.snapshot_chain.usable() {
                Some(latest) => latest,
                None => {
                    let warming = crate::shared::lock(&ctx.snapshot_chain.warming).clone();
                    let fresh = track_now(store.clone(), warming);
                    ctx.snapshot_chain.set(fresh.clone());
                    fresh
                }
            }),
            None => Before::None,
        };
        Self {
            store,
            before,
            calls: Vec::new(),
            cwd: ctx.env.cwd.clone(),
            captures: Vec::new(),
            since: None,
            ignored_before: None,
        }
    }

    /// No snapshots: a summary step, which runs no tools.
    pub fn off() -> Self {
        Self {
            store: None,
            before: Before::None,
            calls: Vec::new(),
            cwd: PathBuf::new(),
            captures: Vec::new(),
            since: None,
            ignored_before: None,
        }
    }

    /// Called before each tool call runs: the first one that may change
    /// files waits for the "before" snapshot so that it sees the tree
    /// untouched, and an `edit` or `write` gets its file copied aside.
    ///
    /// # Errors
    /// Why the call must not run: its file's pre-image could not be kept
    /// (a full disk), and running it would make a change `/undo` cannot
    /// take back while saying it can.
    pub async fn before_tool(&mut self, tool: &str, input: &Value) -> Result<(), String> {
        self.calls.push((tool.to_owned(), input.clone()));
        let root = self.store.as_ref().map(Snapshots::work_tree);
        if root.is_none_or(|root| writes_nothing(tool, input, root)) {
            return Ok(());
        }
        self.await_before().await;
        self.since.get_or_insert_with(SystemTime::now);
        if !matches!(tool, "edit" | "write") && self.ignored_before.is_none() {
            self.list_ignored().await;
        }
        if matches!(tool, "edit" | "write")
            && matches!(self.before, Before::Taken(_) | Before::Failed(_))
        {
            self.keep_preimage(tool, input).await?;
        }
        Ok(())
    }

    /// Copies the file an `edit` or `write` names before it runs; once per
    /// file and step (the first copy is the step's "before").
    async fn keep_preimage(&mut self, tool: &str, input: &Value) -> Result<(), String> {
        let (Some(store), Some(named)) = (&self.store, input_path(input)) else {
            return Ok(());
        };
        let path = crate::permission::resolve_path(&self.cwd, Path::new(named));
        if let Some(capture) = self.captures.iter_mut().find(|c| c.path == path) {
            capture.by = tool.to_owned();
            return Ok(());
        }
        let preimages = store.preimages();
        let target = path.clone();
        let captured = tokio::task::spawn_blocking(move || preimages.capture(&target))
            .await
            .map_err(|error| format!("keeping a copy of {named} for /undo failed: {error}"))?
            .map_err(|error| {
                format!(
                    "Not done: cairn could not keep a copy of {} for /undo ({error}), so the \
                     {tool} was not made and the file is unchanged. Tell the user: free disk \
                     space in cairn's data dir, then retry.",
                    path.display()
                )
            })?;
        self.captures.push(Capture {
            path,
            captured,
            by: tool.to_owned(),
        });
        Ok(())
    }

    /// Lists the ignored entries before a shell-like tool runs; a failure
    /// only costs the "gone" notes (logged).
    async fn list_ignored(&mut self) {
        let Some(store) = self.store.clone() else {
            return;
        };
        match tokio::task::spawn_blocking(move || store.ignored_entries()).await {
            Ok(Ok(entries)) => self.ignored_before = Some(entries),
            Ok(Err(error)) => tracing::warn!("listing ignored files failed: {error}"),
            Err(error) => tracing::warn!("listing ignored files failed: {error}"),
        }
    }

    async fn await_before(&mut self) {
        if let Before::Running(pending) = &self.before {
            self.before = match pending.clone().await {
                Ok(hash) => Before::Taken(hash),
                Err(reason) => Before::Failed(reason),
            };
        }
    }

    /// After the step's tools: when one may have changed files, starts the
    /// "after" snapshot, whose `patch` part is recorded on `assistant` when
    /// it completes; [`Chain::settle`] waits for it. A snapshot failure
    /// costs the patch, never the step.
    pub async fn finish(mut self, ctx: &SessionCtx, assistant: &Message) -> Result<(), Error> {
        let Some(store) = self.store.take() else {
            return Ok(());
        };
        let root = ctx.env.root.clone();
        let cwd = ctx.env.cwd.clone();
        let named = named_paths(&self.calls, &root, &cwd);
        if named.as_ref().is_some_and(Vec::is_empty) && self.captures.is_empty() {
            // Nothing may have changed: the chain's latest stays true.
            return Ok(());
        }
        self.await_before().await;
        let captures = std::mem::take(&mut self.captures);
        let since = self.since;
        let ignored_before = self.ignored_before.take().unwrap_or_default();
        let recorded = Recorded {
            writer: ctx.writer.clone(),
            assistant: assistant.clone(),
            calls: self.calls,
            root: root.clone(),
            cwd,
        };
        let before = match self.before {
            Before::Taken(before) => before,
            Before::Failed(reason) => {
                ctx.snapshot_chain.forget();
                recorded.unsnapshotted(&store, captures, &reason).await;
                return Ok(());
            }
            Before::None | Before::Running(_) => {
                ctx.snapshot_chain.forget();
                return Ok(());
            }
        };
        let turn_kept = ctx.snapshot_chain.turn_kept.clone();
        let task = tokio::spawn(async move {
            let measured = tokio::task::spawn_blocking(move || {
                let after = match &named {
                    Some(paths) => store.track_paths(paths)?,
                    None => store.track()?,
                };
                let changes = store.changes(&before, &after.hash)?;
                let mut unseen = settle(&store.preimages(), captures, &changes, &root);
                if named.is_none() {
                    unseen.refreshed = refresh(&turn_kept, &unseen.kept);
                }
                crate::shared::lock(&turn_kept).extend(unseen.kept.iter().map(|k| k.path.clone()));
                if let (None, Some(since)) = (&named, since) {
                    let kept: Vec<String> = unseen
                        .kept
                        .iter()
                        .filter_map(|k| project_relative(Path::new(&k.path), &root))
                        .collect();
                    match store.unseen_writes(since, &after.skipped, &kept, &ignored_before) {
                        Ok(notes) => unseen.unrestorable.extend(notes),
                        Err(error) => tracing::warn!("looking for unseen writes failed: {error}"),
                    }
                }
                Ok::<_, crate::snapshot::Error>((before, after.hash, changes, unseen))
            })
            .await;
            match measured {
                Ok(Ok((before, after, changes, unseen))) => {
                    recorded.patch(before, after.clone(), changes, unseen).await;
                    Ok(after)
                }
                Ok(Err(error)) => {
                    tracing::warn!("snapshot after the step failed, no undo for it: {error}");
                    Err(error.to_string())
                }
                Err(error) => {
                    tracing::warn!("snapshot task failed: {error}");
                    Err(error.to_string())
                }
            }
        });
        let pending = async move {
            task.await
                .unwrap_or_else(|error| Err(format!("snapshot task failed: {error}")))
        }
        .boxed()
        .shared();
        ctx.snapshot_chain.set(pending);
        Ok(())
    }
}

/// Starts a full snapshot on a blocking thread, once `after` (the warm-up)
/// is done: the tree as it is then, with only what changed since hashed.
fn track_now(store: Snapshots, after: Option<Pending>) -> Pending {
    let task = tokio::spawn(async move {
        if let Some(after) = after {
            // The warm-up's failure is its own: this snapshot is taken anyway.
            let _ = after.await;
        }
        tokio::task::spawn_blocking(move || store.track()).await
    });
    async move {
        match task
            .await
            .map_err(|e| e.to_string())
            .and_then(|t| t.map_err(|e| e.to_string()))
        {
            Ok(Ok(snapshot)) => Ok(snapshot.hash),
            Ok(Err(error)) => {
                tracing::warn!("snapshot before the step failed, no undo for it: {error}");
                Err(error.to_string())
            }
            Err(error) => {
                tracing::warn!("snapshot task failed: {error}");
                Err(format!("snapshot task failed: {error}"))
            }
        }
    }
    .boxed()
    .shared()
}

/// What the deferred "after" snapshot needs to write the step's patch.
struct Recorded {
    writer: crate::session::writer::Writer,
    assistant: Message,
    calls: Vec<(String, Value)>,
    root: std::path::PathBuf,
    cwd: std::path::PathBuf,
}

impl Recorded {
    async fn patch(self, before: String, after: String, changes: Vec<FileChange>, unseen: Unseen) {
        if changes.is_empty() && unseen.is_empty() {
            return;
        }
        let files = changes.iter().map(|c| c.path.clone()).collect();
        let mut changes: Vec<PatchFile> = changes
            .into_iter()
            .map(|change| attribute(change, &self.calls, &self.root, &self.cwd))
            .collect();
        changes.extend(unseen.changes);
        let part = Part::new(
            &self.assistant,
            PartKind::Patch(PatchPart {
                hash: before,
                files,
                after: Some(after),
                changes,
                kept: unseen.kept,
                unrestorable: unseen.unrestorable,
                refreshed: unseen.refreshed,
            }),
        );
        if let Err(error) = self.writer.part(&part).await {
            tracing::warn!("the step's patch part could not be saved, no undo for it: {error}");
        }
    }
}

impl Recorded {
    /// The patch of a step whose "before" snapshot failed: every file its
    /// `edit` and `write` changed is kept from its pre-image, and the
    /// failure is said on the card and in `/undo`'s answer, since what a
    /// shell command changed cannot be put back.
    async fn unsnapshotted(self, store: &Snapshots, captures: Vec<Capture>, reason: &str) {
        let preimages = store.preimages();
        let root = self.root.clone();
        let captured =
            tokio::task::spawn_blocking(move || settle(&preimages, captures, &[], &root)).await;
        let mut unseen = captured.unwrap_or_default();
        unseen
            .unrestorable
            .push(format!("no snapshot for this step: {reason}"));
        let part = Part::new(
            &self.assistant,
            PartKind::Patch(PatchPart {
                changes: unseen.changes,
                kept: unseen.kept,
                unrestorable: unseen.unrestorable,
                ..PatchPart::default()
            }),
        );
        if let Err(error) = self.writer.part(&part).await {
            tracing::warn!("the step's patch part could not be saved, no undo for it: {error}");
        }
    }
}

/// What the step changed that its snapshots cannot see.
#[derive(Default)]
struct Unseen {
    /// Files with a kept pre-image, for `/undo`.
    kept: Vec<KeptFile>,
    /// Their lines on the card (and files changed with no copy kept).
    changes: Vec<PatchFile>,
    /// What `/undo` cannot restore, said plainly.
    unrestorable: Vec<String>,
    /// Files earlier steps of the turn kept, as this step left them.
    refreshed: Vec<KeptFile>,
}

/// The files the turn kept before this (shell) step, minus the ones this
/// step kept itself, fingerprinted as the step left them: a shell command
/// of the turn that rewrote `.env` is the turn's change, not a hand edit.
fn refresh(turn_kept: &Mutex<Vec<String>>, kept_now: &[KeptFile]) -> Vec<KeptFile> {
    let earlier = crate::shared::lock(turn_kept).clone();
    earlier
        .into_iter()
        .filter(|path| !kept_now.iter().any(|k| &k.path == path))
        .filter_map(|path| {
            let after = crate::snapshot::preimage::fingerprint(Path::new(&path)).ok()?;
            Some(KeptFile {
                path,
                before: None,
                after,
            })
        })
        .collect()
}

impl Unseen {
    fn is_empty(&self) -> bool {
        self.kept.is_empty()
            && self.changes.is_empty()
            && self.unrestorable.is_empty()
            && self.refreshed.is_empty()
    }
}

/// Sorts the step's pre-images once the "after" snapshot is taken: a file
/// the snapshot saw change is restored from it, a file left as it was needs
/// nothing, so their copies go; the rest are kept for `/undo`, and a file
/// changed with no copy (over [`crate::snapshot::MAX_PREIMAGE_BYTES`]) is
/// named as not restorable.
fn settle(
    preimages: &PreImages,
    captures: Vec<Capture>,
    changes: &[FileChange],
    root: &Path,
) -> Unseen {
    let mut unseen = Unseen::default();
    for Capture { path, captured, by } in captures {
        let relative = project_relative(&path, root);
        let seen = relative
            .as_ref()
            .is_some_and(|rel| changes.iter().any(|c| c.path == *rel));
        if seen || preimages.unchanged(&captured, &path) {
            if let Captured::Kept(id) = &captured {
                preimages.discard(id);
            }
            continue;
        }
        let shown = relative.unwrap_or_else(|| path.display().to_string());
        let before = match captured {
            Captured::Absent => None,
            Captured::Kept(id) => Some(id),
            Captured::NotKept { len, .. } => {
                unseen.unrestorable.push(format!(
                    "{shown} ({} MiB) is over the {} MiB kept-copy cap",
                    len / (1024 * 1024),
                    preimages.max_bytes() / (1024 * 1024)
                ));
                continue;
            }
        };
        let after = match crate::snapshot::preimage::fingerprint(&path) {
            Ok(after) => after,
            Err(error) => {
                unseen
                    .unrestorable
                    .push(format!("{shown} (unreadable: {error})"));
                continue;
            }
        };
        let kind = match (&before, &after) {
            (None, _) => "added",
            (_, None) => "deleted",
            _ => "modified",
        };
        let (added, removed) = preimages.line_counts(before.as_deref(), &path);
        unseen.changes.push(PatchFile {
            path: shown,
            kind: kind.to_owned(),
            added,
            removed,
            by,
        });
        unseen.kept.push(KeptFile {
            path: path.display().to_string(),
            before,
            after,
        });
    }
    unseen
}

/// Tools that change no file whatever their input.
const READING_TOOLS: &[&str] = &["read", "glob", "grep", "list", "skill", "todowrite"];

/// True when the call surely changes no file in the project at `root`: a
/// reading tool, or a `bash` line [`read_only::cannot_write`] clears.
fn writes_nothing(tool: &str, input: &Value, root: &Path) -> bool {
    READING_TOOLS.contains(&tool)
        || (tool == "bash"
            && input
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|command| {
                    let search_path = std::env::var_os("PATH").unwrap_or_default();
                    read_only::cannot_write(command, &search_path, root)
                }))
}

/// The files the step's `edit` and `write` calls named, relative to the
/// project, when every other call wrote nothing ([`writes_nothing`]): then
/// the "after" snapshot looks at those files only, and none at all when
/// there are none. A file outside the project is left out: no snapshot sees
/// it, its pre-image covers it. `None` (scan the whole tree) after any other
/// tool (a writing `bash` line, a subtask, MCP) or for a path inside the
/// project that is not plain (`..`, the root itself).
fn named_paths(calls: &[(String, Value)], root: &Path, cwd: &Path) -> Option<Vec<String>> {
    let mut paths = Vec::new();
    for (tool, input) in calls {
        if writes_nothing(tool, input, root) {
            continue;
        }
        if !matches!(tool.as_str(), "edit" | "write") {
            return None;
        }
        let named = cwd.join(input_path(input)?);
        match project_relative(&named, root) {
            Some(path) => paths.push(path),
            // As the tool resolves it: `..` and symlinks followed.
            None if crate::permission::is_external(
                root,
                &crate::permission::resolve_path(cwd, &named),
            ) => {}
            None => return None,
        }
    }
    Some(paths)
}

/// `path` as `a/b/c` under `root`, when it lies plainly inside it (no `..`,
/// no `.`, not the root itself).
fn project_relative(path: &Path, root: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for component in path.strip_prefix(root).ok()?.components() {
        match component {
            std::path::Component::Normal(part) => parts.push(part.to_str()?),
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Which tool changed `change`: the edit or write that named its path, else
/// `bash` when a shell command ran (the tool-by-tool view cannot see those).
fn attribute(change: FileChange, calls: &[(String, Value)], root: &Path, cwd: &Path) -> PatchFile {
    let named = calls.iter().rev().find(|(tool, input)| {
        matches!(tool.as_str(), "edit" | "write")
            && input_path(input)
                .map(|path| cwd.join(path))
                .is_some_and(|path| {
                    path.strip_prefix(root)
                        .is_ok_and(|p| p == Path::new(&change.path))
                })
    });
    let by = match named {
        Some((tool, _)) => tool.clone(),
        None if calls.iter().any(|(tool, _)| tool == "bash") => "bash".to_owned(),
        None => calls
            .last()
            .map(|(tool, _)| tool.clone())
            .unwrap_or_default(),
    };
    let kind = match change.kind {
        ChangeKind::Added => "added",
        ChangeKind::Modified => "modified",
        ChangeKind::Deleted => "deleted",
    };
    PatchFile {
        path: change.path,
        kind: kind.to_owned(),
        added: change.added,
        removed: change.removed,
        by,
    }
}

fn input_path(input: &Value) -> Option<&str> {
    ["path", "filePath", "file_path"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls(list: &[(&str, Value)]) -> Vec<(String, Value)> {
        list.iter()
            .map(|(t, i)| (t.to_string(), i.clone()))
            .collect()
    }

    /// Issue #35: of the step's pre-images, a file the snapshot saw or the
    /// tool left alone needs none (its copy goes); a changed or created
    /// file keeps its copy for `/undo`; a file over the cap is named.
    #[test]
    fn settle_keeps_the_copies_undo_needs_and_names_what_it_cannot() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().join("p");
        std::fs::create_dir_all(&root).expect("root");
        let preimages = PreImages::new(dir.path().join("pre"), 16);
        let write = |name: &str, text: &str| std::fs::write(root.join(name), text).expect("write");
        for name in ["changed", "left", "seen"] {
            write(name, "old\n");
        }
        write("big", "more than sixteen bytes\n");
        let mut captures = Vec::new();
        for name in ["changed", "left", "seen", "big", "created"] {
            let path = root.join(name);
            let captured = preimages.capture(&path).expect("capture");
            let by = "edit".to_owned();
            captures.push(Capture { path, captured, by });
        }
        for name in ["changed", "seen", "created"] {
            write(name, "new\n");
        }
        write("big", "more than sixteen bytes, edited\n");
        let seen = FileChange {
            path: "seen".into(),
            kind: ChangeKind::Modified,
            added: 1,
            removed: 1,
        };

        let unseen = settle(&preimages, captures, &[seen], &root);
        let kept: Vec<(&str, bool)> = unseen
            .kept
            .iter()
            .map(|k| (k.path.rsplit('/').next().unwrap_or(""), k.before.is_some()))
            .collect();
        assert_eq!(kept, [("changed", true), ("created", false)]);
        let lines: Vec<(&str, &str, u32, u32)> = unseen
            .changes
            .iter()
            .map(|c| (c.path.as_str(), c.kind.as_str(), c.added, c.removed))
            .collect();
        assert_eq!(
            lines,
            [("changed", "modified", 1, 1), ("created", "added", 1, 0)]
        );
        assert_eq!(unseen.unrestorable.len(), 1, "{:?}", unseen.unrestorable);
        assert!(
            unseen.unrestorable[0].starts_with("big "),
            "{:?}",
            unseen.unrestorable
        );
        let copies = std::fs::read_dir(dir.path().join("pre"))
            .expect("copies")
            .count();
        assert_eq!(copies, 1, "only the changed file's copy stays");
    }

    /// Model output decides what the "after" snapshot looks at: anything
    /// but a plain path inside the project written by edit/write means a
    /// full scan, never a missed change.
    #[test]
    fn only_plain_paths_of_naming_tools_narrow_the_after_snapshot() {
        let (root, cwd) = (Path::new("/p"), Path::new("/p/sub"));
        type Case<'a> = (Vec<(&'a str, Value)>, Option<Vec<&'a str>>);
        let cases: Vec<Case> = vec![
            (
                vec![("edit", json!({"file_path": "a.rs"}))],
                Some(vec!["sub/a.rs"]),
            ),
            (
                vec![
                    ("write", json!({"path": "/p/b.rs"})),
                    ("read", json!({"path": "x"})),
                ],
                Some(vec!["b.rs"]),
            ),
            (
                vec![("edit", json!({"file_path": "./c/./d.rs"}))],
                Some(vec!["sub/c/d.rs"]),
            ),
            (
                vec![("read", json!({"path": "a"})), ("grep", json!({}))],
                Some(vec![]),
            ),
            (
                vec![
                    ("edit", json!({"file_path": "a.rs"})),
                    ("bash", json!({"command": "rm b"})),
                ],
                None,
            ),
            (vec![("task", json!({}))], None),
            (
                vec![
                    ("edit", json!({"file_path": "a.rs"})),
                    ("bash", json!({"command": "git status && ls"})),
                ],
                Some(vec!["sub/a.rs"]),
            ),
            (
                vec![("bash", json!({"command": "grep -rn x ."}))],
                Some(vec![]),
            ),
            (vec![("bash", json!({"command": "ls > listing"}))], None),
            (vec![("bash", json!({"command": "ls; rm a"}))], None),
            (vec![("bash", json!({}))], None),
            (vec![("mcp_fs_write", json!({"path": "a"}))], None),
            (vec![("edit", json!({"file_path": "../a.rs"}))], None),
            (vec![("edit", json!({"file_path": "x/../../a.rs"}))], None),
            (
                vec![("write", json!({"path": "/etc/passwd"}))],
                Some(vec![]),
            ),
            (
                vec![
                    ("edit", json!({"file_path": "a.rs"})),
                    ("write", json!({"path": "/p/../outside.txt"})),
                ],
                Some(vec!["sub/a.rs"]),
            ),
            (vec![("write", json!({"path": "/p"}))], None),
            (vec![("edit", json!({"old_string": "no path"}))], None),
        ];
        for (list, expected) in cases {
            let got = named_paths(&calls(&list), root, cwd);
            let expected = expected.map(|v| v.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(got, expected, "{list:?}");
        }
    }
}
