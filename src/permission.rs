//! Permissions: may this tool do this, here? allow / ask / deny per tool and pattern.
//!
//! Owns the rules (defaults, config, answers given with "always"), the
//! evaluation of a request against them, and the waiting for a user's answer.
//! It never runs a tool and never draws anything: asks go out on the bus and
//! answers come back through `answer`.

use serde::Serialize;
use serde_json::Value;

/// A question for the user: may `permission` act on `patterns`?
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionRequest {
    pub id: String,
    pub session_id: String,
    /// The tool call that asked, so the UI can show it beside its card.
    pub call_id: Option<String>,
    /// `bash`, `edit`, `read`, `external_directory`, `doom_loop`, ...
    pub permission: String,
    /// What is being asked for: command prefixes, file paths.
    pub patterns: Vec<String>,
    /// Patterns an "always" answer would allow from now on.
    pub always: Vec<String>,
    /// One line for the dialog: `Run: cargo test`, `Edit src/main.rs`.
    pub title: String,
    pub metadata: Value,
}

/// The user's answer to a [`PermissionRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PermissionAnswer {
    Once,
    Always,
    /// Refuse; `message` goes back to the model as the tool's error.
    Reject {
        message: Option<String>,
    },
}

/// What a rule says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

/// One tool's rules as written in config: one action for everything, or a
/// table of patterns (`"git *" = "allow"`); later, more specific entries win.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum PermissionSetting {
    Action(Action),
    Patterns(std::collections::BTreeMap<String, Action>),
}

/// The `[permission]` config table: permission name (`bash`, `edit`, `read`,
/// `external_directory`, `doom_loop`, ...) to its setting.
pub type PermissionConfig = std::collections::BTreeMap<String, PermissionSetting>;
