//! `/undo` and `/redo`: take the last user turn back, files and messages.
//!
//! Undo puts every file the turn's `patch` parts name back as the snapshot
//! before it had them (and each file kept as a pre-image, one the snapshot
//! cannot see, from its copy), and moves the turn's messages out of the session
//! into its undo stash, a child session titled [`STASH_TITLE`]: the model's
//! view of history is read from the session, so the turn leaves it without
//! any reader having to know. Nothing is deleted. Redo moves the turn back
//! and rewrites its files as they were at the undo, as long as nothing new
//! was sent since. An undo of a turn that is a compaction removes the
//! compaction point: the model sees the full history again.
//!
//! The TUI and `cairn run` both call [`undo`] and [`redo`].

use rusqlite::{OptionalExtension, params};

use crate::clock::now_millis;
use std::path::Path;

use crate::message::{Fingerprint, KeptFile, MessageWithParts, Part, PartKind, PatchPart, Session};
use crate::snapshot::{self, Captured, Snapshots};
use crate::store::{self, Store};

/// Title of the child session that holds undone turns.
pub const STASH_TITLE: &str = "cairn: undone turns";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("nothing to undo: the session has no turn")]
    NothingToUndo,
    #[error("nothing to redo: no turn of this session was undone")]
    NothingToRedo,
    #[error(
        "cannot redo: a new message was sent after the undo, so the undone turn \
         no longer follows the conversation"
    )]
    RedoAfterNewMessage,
    #[error(
        "not undone: {} changed since the turn (edited by hand?); undoing would \
         overwrite {}. Run `/undo --force` to overwrite them, or save the changes first",
        .0.join(", "),
        if .0.len() == 1 { "it" } else { "them" }
    )]
    Conflicts(Vec<String>),
    #[error(
        "not redone: {} changed since the undo (edited by hand?); redoing would \
         overwrite {}. Run `/redo --force` to overwrite them, or save the changes first",
        .0.join(", "),
        if .0.len() == 1 { "it" } else { "them" }
    )]
    RedoConflicts(Vec<String>),
    #[error(
        "the turn changed files ({0}) but snapshots are off (`snapshot.enabled = false`), \
         so they cannot be put back; run `/undo --force` to undo the messages only"
    )]
    NoSnapshots(String),
    #[error(
        "the agent is busy: wait for the turn to finish or press Esc to interrupt it, \
         then try again"
    )]
    Busy,
    #[error(
        "not undone: the copy of {0} kept before the turn is gone (collected after \
         `snapshot.max_age_days`, or removed by hand), so it cannot be put back; nothing \
         was changed"
    )]
    PreImageGone(String),
    #[error(
        "not {what}: {}; it would write or delete through it, which the turn did not. \
         Put the file back, or run `/undo --force` to replace it with a regular file \
         (a link's target is never touched)",
        .hazards.join(", ")
    )]
    Unsafe {
        what: &'static str,
        hazards: Vec<String>,
    },
    #[error("no diff: snapshots are off (`snapshot.enabled = false`)")]
    DiffWithoutSnapshots,
    #[error(transparent)]
    Snapshot(#[from] snapshot::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("snapshot task failed: {0}")]
    Task(String),
}

/// What an undo or redo did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The turn's prompt: back into the composer after an undo.
    pub prompt: String,
    /// Files written or removed.
    pub files: Vec<String>,
    /// Set when the turn was a compaction: the size of the last request
    /// before it, which the model's view returns to (tokens).
    pub compaction_removed: Option<u64>,
    /// Messages moved.
    pub messages: usize,
    /// What the turn changed that could not be taken back, said plainly
    /// ("build/ is ignored"); empty for a redo.
    pub not_restored: Vec<String>,
}

/// Takes the last user turn of `session_id` back. `force` overwrites files
/// changed since the turn (and undoes messages when snapshots are off).
pub async fn undo(
    store: &Store,
    snapshots: Option<&Snapshots>,
    session_id: &str,
    force: bool,
) -> Result<Outcome, Error> {
    let history = store.read_all(session_id).await?;
    let start = history
        .iter()
        .rposition(|m| m.message.is_user())
        .ok_or(Error::NothingToUndo)?;
    let turn = &history[start..];
    let plan = plan(turn);
    let root = snapshots
        .map(|s| s.work_tree().to_owned())
        .unwrap_or_default();
    let redo = match (snapshots, plan.is_empty()) {
        (_, true) => None,
        (None, false) if force => None,
        (None, false) => return Err(Error::NoSnapshots(plan.paths(&root).join(", "))),
        (Some(snapshots), false) => Some(revert_files(snapshots, &plan, force).await?),
    };
    let compaction_removed = turn[0]
        .compaction()
        .map(|_| last_request_size(&history[..start]));
    let mut not_restored = plan.unrestorable.clone();
    if let Some(redo) = &redo {
        not_restored.extend(redo.skipped.iter().cloned());
    }
    let outcome = Outcome {
        prompt: prompt_of(&turn[0]),
        files: plan.paths(&root),
        compaction_removed,
        messages: turn.len(),
        not_restored,
    };
    abandon_older_undos(store, session_id, &turn[0].message.id).await?;
    let stash = stash_id(store, session_id).await?;
    let ids: Vec<String> = turn.iter().map(|m| m.message.id.clone()).collect();
    move_messages(store, &ids, &stash).await?;
    if let Some(redo) = redo {
        // Redo's target, kept on the stashed prompt itself.
        let mut marker = Part::new(
            &turn[0].message,
            PartKind::Patch(PatchPart {
                hash: redo.hash,
                files: plan.snapshot_paths(),
                kept: redo.kept,
                after: redo.after,
                ..PatchPart::default()
            }),
        );
        marker.session_id = stash.clone();
        store.upsert_part(&marker).await?;
    }
    Ok(outcome)
}

/// Brings back the turn undone last, files and messages.
pub async fn redo(
    store: &Store,
    snapshots: Option<&Snapshots>,
    session_id: &str,
    force: bool,
) -> Result<Outcome, Error> {
    let Some(stash) = find_stash(store, session_id).await? else {
        return Err(Error::NothingToRedo);
    };
    let stashed = store.read_all(&stash).await?;
    // Undo walks back, so the turn undone last is the oldest one stashed.
    let start = stashed
        .iter()
        .position(|m| m.message.is_user())
        .ok_or(Error::NothingToRedo)?;
    let end = stashed[start + 1..]
        .iter()
        .position(|m| m.message.is_user())
        .map_or(stashed.len(), |next| start + 1 + next);
    let turn = &stashed[start..end];
    let current = store.read_all(session_id).await?;
    if current
        .last()
        .is_some_and(|last| last.message.id > turn[0].message.id)
    {
        return Err(Error::RedoAfterNewMessage);
    }
    let marker = turn[0].parts.iter().find_map(|part| match &part.kind {
        PartKind::Patch(patch) => Some((part.id.clone(), patch.clone())),
        _ => None,
    });
    let mut files = Vec::new();
    if let (Some(snapshots), Some((_, patch))) = (snapshots, &marker) {
        let root = snapshots.work_tree().to_owned();
        files = patch.files.clone();
        files.extend(patch.kept.iter().map(|k| shown(&k.path, &root)));
        let snapshots = snapshots.clone();
        let patch = patch.clone();
        blocking(move || {
            let mut paths = patch.files.clone();
            paths.extend(patch.kept.iter().map(|k| k.path.clone()));
            let hazards = hazards(&snapshots, &paths);
            if !hazards.is_empty() {
                return Err(Error::Unsafe {
                    what: "redone",
                    hazards: described(&snapshots, &hazards),
                });
            }
            let conflicts = redo_conflicts(&snapshots, &patch)?;
            if !conflicts.is_empty() && !force {
                return Err(Error::RedoConflicts(conflicts));
            }
            snapshots.restore(&patch.hash, &patch.files)?;
            let preimages = snapshots.preimages();
            for kept in &patch.kept {
                preimages.restore(kept.before.as_deref(), Path::new(&kept.path))?;
            }
            Ok::<_, Error>(())
        })
        .await?;
    }
    if let Some((part_id, _)) = &marker {
        let part_id = part_id.clone();
        store
            .call(move |connection| {
                connection
                    .execute("DELETE FROM part WHERE id = ?1", [part_id])
                    .map_err(|source| store::Error::Sqlite {
                        operation: "drop the redo marker",
                        source,
                    })
            })
            .await?;
    }
    let ids: Vec<String> = turn.iter().map(|m| m.message.id.clone()).collect();
    move_messages(store, &ids, session_id).await?;
    Ok(Outcome {
        prompt: prompt_of(&turn[0]),
        files,
        compaction_removed: None,
        messages: turn.len(),
        not_restored: Vec::new(),
    })
}

/// `/diff`: the session's changes so far, as a unified diff. Each file the
/// session's steps changed is compared from the snapshot before the first
/// step that changed it to the snapshot after the last (the tree now when a
/// step recorded no after). Undone turns are out of the session, so they are
/// out of the diff. Empty when no step changed a file.
pub async fn session_diff(
    store: &Store,
    snapshots: Option<&Snapshots>,
    session_id: &str,
) -> Result<String, Error> {
    let history = store.read_all(session_id).await?;
    let plan = plan(&history);
    if plan.is_empty() {
        return Ok(String::new());
    }
    let Some(snapshots) = snapshots.cloned() else {
        return Err(Error::DiffWithoutSnapshots);
    };
    blocking(move || {
        let mut now = None;
        // Files that share a before and an after are one git diff.
        let mut groups: Vec<(String, String, Vec<String>)> = Vec::new();
        for (path, before, after) in plan.files {
            let after = match after {
                Some(after) => after,
                None => now.get_or_insert(snapshots.track()?.hash).clone(),
            };
            match groups
                .iter_mut()
                .find(|(b, a, _)| *b == before && *a == after)
            {
                Some(group) => group.2.push(path),
                None => groups.push((before, after, vec![path])),
            }
        }
        let mut diff = String::new();
        for (before, after, paths) in groups {
            diff.push_str(&snapshots.diff_paths(&before, &after, &paths)?);
        }
        diff.push_str(&kept_diff(&snapshots, &plan.kept)?);
        Ok::<_, snapshot::Error>(diff)
    })
    .await
}

/// One step's changes (a patch card expanded): its files from the snapshot
/// before the step to the one after it (the tree now when it has none).
pub async fn patch_diff(snapshots: Option<&Snapshots>, patch: PatchPart) -> Result<String, Error> {
    let Some(snapshots) = snapshots.cloned() else {
        return Err(Error::DiffWithoutSnapshots);
    };
    blocking(move || {
        let mut diff = String::new();
        if !patch.files.is_empty() {
            let after = match &patch.after {
                Some(after) => after.clone(),
                None => snapshots.track()?.hash,
            };
            diff = snapshots.diff_paths(&patch.hash, &after, &patch.files)?;
        }
        diff.push_str(&kept_diff(&snapshots, &patch.kept)?);
        Ok::<_, snapshot::Error>(diff)
    })
    .await
}

/// A file the turn's snapshots cannot see but whose pre-image was kept:
/// its copy from before the turn and its state after the turn's last step.
type KeptPlan = KeptFile;

/// What undoing a turn restores and what it cannot.
struct Plan {
    /// For each file the snapshots saw change: the snapshot to restore it
    /// from and the snapshot it should still match (the last step's after).
    files: Vec<(String, String, Option<String>)>,
    /// Files restored from their pre-images.
    kept: Vec<KeptPlan>,
    /// What no step could keep, said plainly (deduplicated).
    unrestorable: Vec<String>,
}

impl Plan {
    fn is_empty(&self) -> bool {
        self.files.is_empty() && self.kept.is_empty()
    }

    /// Every file restored, as the user sees it.
    fn paths(&self, root: &Path) -> Vec<String> {
        let mut paths = self.snapshot_paths();
        paths.extend(self.kept.iter().map(|k| shown(&k.path, root)));
        paths
    }

    /// The files restored from snapshots.
    fn snapshot_paths(&self) -> Vec<String> {
        self.files.iter().map(|(path, _, _)| path.clone()).collect()
    }
}

/// `path` relative to the project when inside it, else as it is.
fn shown(path: &str, root: &Path) -> String {
    match Path::new(path).strip_prefix(root) {
        Ok(relative) if !root.as_os_str().is_empty() => relative.display().to_string(),
        _ => path.to_owned(),
    }
}

/// The turn's patches read in order: a file's "before" is the first patch
/// naming it, its "after" the last.
fn plan(turn: &[MessageWithParts]) -> Plan {
    let mut plan = Plan {
        files: Vec::new(),
        kept: Vec::new(),
        unrestorable: Vec::new(),
    };
    let patches = turn
        .iter()
        .filter(|m| !m.message.is_user())
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match &part.kind {
            PartKind::Patch(patch) => Some(patch),
            _ => None,
        });
    for patch in patches {
        for path in &patch.files {
            match plan.files.iter_mut().find(|(p, _, _)| p == path) {
                Some(entry) => entry.2 = patch.after.clone(),
                None => plan
                    .files
                    .push((path.clone(), patch.hash.clone(), patch.after.clone())),
            }
        }
        for kept in &patch.kept {
            match plan.kept.iter_mut().find(|k| k.path == kept.path) {
                Some(entry) => entry.after = kept.after.clone(),
                None => plan.kept.push(kept.clone()),
            }
        }
        for refreshed in &patch.refreshed {
            if let Some(entry) = plan.kept.iter_mut().find(|k| k.path == refreshed.path) {
                entry.after = refreshed.after.clone();
            }
        }
        for note in &patch.unrestorable {
            if !plan.unrestorable.contains(note) {
                plan.unrestorable.push(note.clone());
            }
        }
    }
    plan
}

/// What redo needs after an undo: the tree just before it, and a copy of
/// each kept file as the turn left it.
struct Redo {
    hash: String,
    /// The tree as the undo left it: `/redo` tells a hand edit since.
    after: Option<String>,
    kept: Vec<KeptFile>,
    /// Files a forced undo left as they are (a folder now stands there).
    skipped: Vec<String>,
}

/// The hazards on the way to each of `paths` (project-relative snapshot
/// paths or the recorded real paths of kept files).
fn hazards(snapshots: &Snapshots, paths: &[String]) -> Vec<snapshot::nofollow::Hazard> {
    let root = snapshots.work_tree();
    let mut found: Vec<snapshot::nofollow::Hazard> = Vec::new();
    for path in paths {
        if let Some(hazard) = snapshot::nofollow::hazard(root, &root.join(path))
            && !found.contains(&hazard)
        {
            found.push(hazard);
        }
    }
    found
}

/// Each hazard said as the user sees its path.
fn described(snapshots: &Snapshots, hazards: &[snapshot::nofollow::Hazard]) -> Vec<String> {
    let root = snapshots.work_tree();
    hazards
        .iter()
        .map(|h| h.describe(&shown(&h.path().display().to_string(), root)))
        .collect()
}

/// Forced: removes each link or special file in the way (never a link's
/// target) and returns the hazards it left, folders, whose files are
/// skipped.
fn clear_hazards(
    hazards: Vec<snapshot::nofollow::Hazard>,
) -> Result<Vec<snapshot::nofollow::Hazard>, snapshot::Error> {
    let mut left = Vec::new();
    for hazard in hazards {
        let cleared = hazard.clear().map_err(|source| snapshot::Error::File {
            path: hazard.path().to_owned(),
            source,
        })?;
        if !cleared {
            left.push(hazard);
        }
    }
    Ok(left)
}

/// Checks for hand edits, then restores the files; returns what redo needs.
/// Nothing is written before every check passed and every copy for redo
/// was kept: a failure (a full disk) leaves the files as they were.
async fn revert_files(snapshots: &Snapshots, plan: &Plan, force: bool) -> Result<Redo, Error> {
    let snapshots = snapshots.clone();
    let mut entries = plan.files.clone();
    let mut kept = plan.kept.clone();
    blocking(move || {
        // Before anything is read or written: a link, FIFO or folder
        // swapped in after the turn is refused (or, forced, replaced).
        let skipped = guard_paths(&snapshots, &mut entries, &mut kept, force)?;
        // With no file from a snapshot (only kept files: the step's own
        // snapshot failed) none is taken, as it may fail the same way.
        let now = if entries.is_empty() {
            String::new()
        } else {
            snapshots.track()?.hash
        };
        let mut conflicts = Vec::new();
        let mut afters: Vec<&String> = entries.iter().filter_map(|e| e.2.as_ref()).collect();
        afters.dedup();
        for after in afters {
            let changed = snapshots.changes(after, &now)?;
            conflicts.extend(
                entries
                    .iter()
                    .filter(|(_, _, a)| a.as_ref() == Some(after))
                    .filter(|(path, _, _)| changed.iter().any(|c| &c.path == path))
                    .map(|(path, _, _)| path.clone()),
            );
        }
        for file in &kept {
            if !matches_after(Path::new(&file.path), file.after.as_ref())? {
                conflicts.push(shown(&file.path, snapshots.work_tree()));
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(Error::Conflicts(conflicts));
        }
        let preimages = snapshots.preimages();
        if let Some(gone) = kept
            .iter()
            .find(|file| file.before.as_deref().is_some_and(|id| !preimages.has(id)))
        {
            return Err(Error::PreImageGone(shown(
                &gone.path,
                snapshots.work_tree(),
            )));
        }
        let mut redo = Vec::new();
        for file in &kept {
            let before = match preimages.keep_current(Path::new(&file.path))? {
                Captured::Absent => None,
                Captured::Kept(id) => Some(id),
                Captured::NotKept { .. } => {
                    tracing::warn!("{} is too big to keep for /redo", file.path);
                    continue;
                }
            };
            redo.push(KeptFile {
                path: file.path.clone(),
                before,
                after: None,
            });
        }
        let mut befores: Vec<&String> = entries.iter().map(|e| &e.1).collect();
        befores.sort();
        befores.dedup();
        for before in befores {
            let paths: Vec<String> = entries
                .iter()
                .filter(|(_, b, _)| b == before)
                .map(|(path, _, _)| path.clone())
                .collect();
            snapshots.restore(before, &paths)?;
        }
        for file in &kept {
            preimages.restore(file.before.as_deref(), Path::new(&file.path))?;
        }
        for file in &mut redo {
            file.after = snapshot::preimage::fingerprint(Path::new(&file.path))?;
        }
        let after = if entries.is_empty() {
            None
        } else {
            Some(snapshots.track()?.hash)
        };
        Ok(Redo {
            after,
            hash: now,
            kept: redo,
            skipped,
        })
    })
    .await
}

/// The files the turn changed, looked at before an undo touches any: a
/// hazard refuses the undo; forced, links and special files are removed
/// (never their targets) and files a folder now stands on are dropped from
/// `entries` and `kept`, returned as said to the user.
fn guard_paths(
    snapshots: &Snapshots,
    entries: &mut Vec<(String, String, Option<String>)>,
    kept: &mut Vec<KeptFile>,
    force: bool,
) -> Result<Vec<String>, Error> {
    let mut paths: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
    paths.extend(kept.iter().map(|k| k.path.clone()));
    let found = hazards(snapshots, &paths);
    if !found.is_empty() && !force {
        return Err(Error::Unsafe {
            what: "undone",
            hazards: described(snapshots, &found),
        });
    }
    let left = clear_hazards(found)?;
    let root = snapshots.work_tree().to_owned();
    let blocked = |path: &Path| left.iter().any(|h| path.starts_with(h.path()));
    entries.retain(|e| !blocked(&root.join(&e.0)));
    kept.retain(|k| !blocked(&root.join(&k.path)));
    Ok(left
        .iter()
        .map(|h| h.describe(&shown(&h.path().display().to_string(), &root)) + ": skipped")
        .collect())
}

/// The files changed since the undo whose marker `patch` is: the snapshot
/// files against the tree the undo left, the kept files against their
/// fingerprints then.
fn redo_conflicts(snapshots: &Snapshots, patch: &PatchPart) -> Result<Vec<String>, Error> {
    let mut conflicts = Vec::new();
    if let (Some(after), false) = (&patch.after, patch.files.is_empty()) {
        let now = snapshots.track()?;
        let changed = snapshots.changes(after, &now.hash)?;
        conflicts.extend(
            patch
                .files
                .iter()
                .filter(|path| changed.iter().any(|c| &c.path == *path))
                .cloned(),
        );
    }
    for file in &patch.kept {
        if !matches_after(Path::new(&file.path), file.after.as_ref())? {
            conflicts.push(shown(&file.path, snapshots.work_tree()));
        }
    }
    Ok(conflicts)
}

/// True when the file at `path` is still as the turn left it.
fn matches_after(path: &Path, after: Option<&Fingerprint>) -> Result<bool, snapshot::Error> {
    Ok(snapshot::preimage::fingerprint(path)?.as_ref() == after)
}

/// The diffs of kept files, from their copies to the files now.
fn kept_diff(snapshots: &Snapshots, kept: &[KeptFile]) -> Result<String, snapshot::Error> {
    let preimages = snapshots.preimages();
    let mut diff = String::new();
    for file in kept {
        let shown = shown(&file.path, snapshots.work_tree());
        diff.push_str(&preimages.diff(file.before.as_deref(), Path::new(&file.path), &shown)?);
    }
    Ok(diff)
}

async fn blocking<R, E>(f: impl FnOnce() -> Result<R, E> + Send + 'static) -> Result<R, Error>
where
    R: Send + 'static,
    E: Into<Error> + Send + 'static,
{
    tokio::task::spawn_blocking(move || f().map_err(Into::into))
        .await
        .map_err(|e| Error::Task(e.to_string()))?
}

fn prompt_of(user: &MessageWithParts) -> String {
    user.parts
        .iter()
        .filter_map(|part| match &part.kind {
            PartKind::Text(text) if !text.synthetic => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The size of the last request made before the compaction (tokens).
fn last_request_size(history: &[MessageWithParts]) -> u64 {
    history
        .iter()
        .rev()
        .filter_map(|m| m.message.as_assistant())
        .map(|a| a.tokens.context_count())
        .find(|count| *count > 0)
        .unwrap_or(0)
}

async fn find_stash(store: &Store, session_id: &str) -> Result<Option<String>, Error> {
    let session_id = session_id.to_owned();
    Ok(store
        .read(move |connection| {
            connection
                .query_row(
                    "SELECT id FROM session WHERE parent_id = ?1 AND title = ?2",
                    params![session_id, STASH_TITLE],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|source| store::Error::Sqlite {
                    operation: "find the undo stash",
                    source,
                })
        })
        .await?)
}

/// Title a stash gets once a new turn followed its turns: they can no
/// longer be redone, but nothing is deleted.
const ABANDONED_TITLE: &str = "cairn: abandoned undone turns";

/// Before `turn_id` is stashed: turns in the stash older than it were
/// undone and then left for a new turn (this one), so `/redo` must never
/// bring them back; their stash is renamed out of `/redo`'s sight.
async fn abandon_older_undos(store: &Store, session_id: &str, turn_id: &str) -> Result<(), Error> {
    let Some(stash) = find_stash(store, session_id).await? else {
        return Ok(());
    };
    let stashed = store.read_all(&stash).await?;
    if !stashed.iter().any(|m| m.message.id.as_str() < turn_id) {
        return Ok(());
    }
    store
        .call(move |connection| {
            connection
                .execute(
                    "UPDATE session SET title = ?2 WHERE id = ?1",
                    params![stash, ABANDONED_TITLE],
                )
                .map_err(|source| store::Error::Sqlite {
                    operation: "abandon the undo stash",
                    source,
                })
        })
        .await?;
    Ok(())
}

/// The session's undo stash, created on its first undo.
async fn stash_id(store: &Store, session_id: &str) -> Result<String, Error> {
    if let Some(id) = find_stash(store, session_id).await? {
        return Ok(id);
    }
    let parent = store.get_session(session_id).await?;
    let now = now_millis();
    let stash = Session {
        id: crate::id::session_id(),
        title: STASH_TITLE.to_owned(),
        directory: parent.map(|p| p.directory).unwrap_or_default(),
        parent_id: Some(session_id.to_owned()),
        time_created: now,
        time_updated: now,
        cost: 0.0,
        tokens: Default::default(),
    };
    store.create_session(&stash).await?;
    Ok(stash.id)
}

/// Moves messages (and their parts) to another session in one transaction.
async fn move_messages(store: &Store, ids: &[String], to: &str) -> Result<(), Error> {
    let ids = ids.to_vec();
    let to = to.to_owned();
    store
        .call(move |connection| {
            let sqlite = |source| store::Error::Sqlite {
                operation: "move messages for undo/redo",
                source,
            };
            let tx = connection.transaction().map_err(sqlite)?;
            for id in &ids {
                tx.execute(
                    "UPDATE message SET session_id = ?2 WHERE id = ?1",
                    params![id, to],
                )
                .map_err(sqlite)?;
                tx.execute(
                    "UPDATE part SET session_id = ?2 WHERE message_id = ?1",
                    params![id, to],
                )
                .map_err(sqlite)?;
            }
            tx.commit().map_err(sqlite)
        })
        .await?;
    Ok(())
}
