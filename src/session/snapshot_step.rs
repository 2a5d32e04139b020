//! The snapshots around one step and the `patch` part they yield.
//!
//! The "before" snapshot starts with the step, on a blocking thread, while
//! the request goes out; the stream is never held for it. It is awaited only
//! before the first tool runs, which is the first moment files may change.
//! After the tools finish, an "after" snapshot is taken and the files that
//! differ become a `patch` part naming the tool that changed each one.

use std::path::Path;

use serde_json::Value;
use tokio::task::JoinHandle;

use crate::message::{Message, Part, PartKind, PatchFile, PatchPart};
use crate::session::Error;
use crate::session::ctx::SessionCtx;
use crate::snapshot::{self, ChangeKind, FileChange, Snapshots};

/// One step's snapshots, from its start to its patch.
pub struct StepSnapshots {
    store: Option<Snapshots>,
    before: Before,
    /// (tool, input) of every call the step made, for attribution.
    calls: Vec<(String, Value)>,
}

enum Before {
    None,
    Running(JoinHandle<Result<snapshot::Snapshot, snapshot::Error>>),
    Taken(String),
}

impl StepSnapshots {
    /// Starts the "before" snapshot when snapshots are on.
    pub fn start(ctx: &SessionCtx) -> Self {
        let store = ctx.snapshots.clone();
        let before = match &store {
            Some(store) => {
                let store = store.clone();
                Before::Running(tokio::task::spawn_blocking(move || store.track()))
            }
            None => Before::None,
        };
        Self {
            store,
            before,
            calls: Vec::new(),
        }
    }

    /// No snapshots: a summary step, which runs no tools.
    pub fn off() -> Self {
        Self {
            store: None,
            before: Before::None,
            calls: Vec::new(),
        }
    }

    /// Called before each tool call runs: the first one waits for the
    /// "before" snapshot so that it sees the tree untouched.
    pub async fn before_tool(&mut self, tool: &str, input: &Value) {
        self.calls.push((tool.to_owned(), input.clone()));
        if let Before::Running(handle) = &mut self.before {
            self.before = match handle.await {
                Ok(Ok(snapshot)) => Before::Taken(snapshot.hash),
                Ok(Err(error)) => {
                    tracing::warn!("snapshot before the step failed, no undo for it: {error}");
                    Before::None
                }
                Err(error) => {
                    tracing::warn!("snapshot task failed: {error}");
                    Before::None
                }
            };
        }
    }

    /// After the step's tools: records a `patch` part on `assistant` when
    /// files changed. A snapshot failure costs the patch, never the step.
    pub async fn finish(self, ctx: &SessionCtx, assistant: &Message) -> Result<(), Error> {
        let (Some(store), Before::Taken(before)) = (self.store, self.before) else {
            return Ok(());
        };
        let root = ctx.env.root.clone();
        let cwd = ctx.env.cwd.clone();
        let calls = self.calls;
        let named = named_paths(&calls, &root, &cwd);
        let measured = tokio::task::spawn_blocking(move || {
            let after = match &named {
                Some(paths) => store.track_paths(paths)?,
                None => store.track()?,
            };
            let changes = store.changes(&before, &after.hash)?;
            Ok::<_, snapshot::Error>((before, after.hash, changes))
        })
        .await;
        let (before, after, changes) = match measured {
            Ok(Ok(measured)) => measured,
            Ok(Err(error)) => {
                tracing::warn!("snapshot after the step failed, no undo for it: {error}");
                return Ok(());
            }
            Err(error) => {
                tracing::warn!("snapshot task failed: {error}");
                return Ok(());
            }
        };
        if changes.is_empty() {
            return Ok(());
        }
        let files = changes.iter().map(|c| c.path.clone()).collect();
        let changes = changes
            .into_iter()
            .map(|change| attribute(change, &calls, &root, &cwd))
            .collect();
        let part = Part::new(
            assistant,
            PartKind::Patch(PatchPart {
                hash: before,
                files,
                after: Some(after),
                changes,
            }),
        );
        ctx.writer.part(&part).await?;
        Ok(())
    }
}

/// Tools that change no file, or only the file their input names.
const NAMING_TOOLS: &[&str] = &[
    "edit",
    "write",
    "read",
    "glob",
    "grep",
    "list",
    "skill",
    "todowrite",
];

/// The files the step's `edit` and `write` calls named, relative to the
/// project, when every call was to a tool that writes nothing else: then
/// the "after" snapshot looks at those files only. `None` (scan the whole
/// tree) after any other tool (`bash`, a subtask, MCP) or for a path that
/// is not plainly inside the project.
fn named_paths(calls: &[(String, Value)], root: &Path, cwd: &Path) -> Option<Vec<String>> {
    let mut paths = Vec::new();
    for (tool, input) in calls {
        if !NAMING_TOOLS.contains(&tool.as_str()) {
            return None;
        }
        if matches!(tool.as_str(), "edit" | "write") {
            let full = cwd.join(input_path(input)?);
            let mut parts = Vec::new();
            for component in full.strip_prefix(root).ok()?.components() {
                match component {
                    std::path::Component::Normal(part) => parts.push(part.to_str()?),
                    _ => return None,
                }
            }
            if parts.is_empty() {
                return None;
            }
            paths.push(parts.join("/"));
        }
    }
    Some(paths)
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
            (vec![("mcp_fs_write", json!({"path": "a"}))], None),
            (vec![("edit", json!({"file_path": "../a.rs"}))], None),
            (vec![("edit", json!({"file_path": "x/../../a.rs"}))], None),
            (vec![("write", json!({"path": "/etc/passwd"}))], None),
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
