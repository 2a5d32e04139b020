//! What a permission question and its answer are: pure data shared by the
//! rules (`permission`, which re-exports them), the bus that carries asks to
//! front ends, and the dialogs. In the bottom layer, apart from the asking
//! (which publishes on the bus), so the bus can carry a request without
//! importing a layer above it (issue #26).

use serde::Serialize;
use serde_json::Value;

pub use crate::config::permission::{Action, PermissionConfig, PermissionSetting};

/// A question for the user: may `permission` act on `patterns`?
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PermissionRequest {
    pub id: String,
    pub session_id: String,
    /// The tool call that asked, so the UI can show it beside its card.
    pub call_id: Option<String>,
    /// `bash`, `edit`, `read`, `external_directory`, `doom_loop`, ...
    pub permission: String,
    /// What is being asked for: command prefixes, file paths.
    pub patterns: Vec<String>,
    /// Patterns an "always" answer would allow from now on: the narrow
    /// offer (the exact command, or the exact path).
    pub always: Vec<String>,
    /// A broader "always" offer the user may pick instead of `always`
    /// (`git status *` for `git status -s`); empty when no broader pattern
    /// is safe to offer (destructive or file-reading commands).
    pub always_broad: Vec<String>,
    /// Why this needs an answer, one phrase per part of the request that
    /// did not pass on its own ("the `$(curl x)` substitution", "`>` writes
    /// to /etc/passwd, outside the project"). Empty for a plain ask.
    pub reasons: Vec<String>,
    /// One line for the dialog: `Run: cargo test`, `Edit src/main.rs`.
    pub title: String,
    pub metadata: Value,
    /// What answering yes will do, shown in the dialog before the answer.
    pub preview: Option<Preview>,
}

/// What an asked action would do, for the user to read before answering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preview {
    /// `edit`, or `write` over an existing file: the unified diff that will
    /// be applied (the same text the tool card shows afterwards).
    Diff { path: String, diff: String },
    /// `write` of a file that does not exist yet: its whole content.
    Content { path: String, content: String },
    /// `bash`: the command and the model's own description of it.
    Command {
        command: String,
        description: Option<String>,
    },
    /// `external_directory`: the path as it resolves (`~`, `..`, symlinks).
    Path { resolved: String },
    /// `mcp`: the arguments the model gives the server's tool, as JSON, so
    /// the user reads the call as the bash ask shows the command.
    Call { arguments: String },
}

/// The user's answer to a [`PermissionRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PermissionAnswer {
    Once,
    /// Allow the request's `always` patterns (the exact command or path).
    Always,
    /// Allow the request's `always_broad` patterns (`git status *`);
    /// the same as `Always` when none was offered.
    AlwaysBroad,
    /// Refuse; `message` goes back to the model as the tool's error.
    Reject {
        message: Option<String>,
    },
}
