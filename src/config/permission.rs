//! The `[permission]` config table as written: per permission, one action or
//! a table of patterns. Parsed here with the rest of the config; the rules
//! that read it live in `permission`.

use serde::Serialize;

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
