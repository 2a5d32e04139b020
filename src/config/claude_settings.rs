//! Claude Code's settings files: `.claude/settings.json` and
//! `.claude/settings.local.json` in a project, `~/.claude/settings.json` for
//! the user. Only `permissions` (`allow`, `ask`, `deny`, in Claude Code's rule
//! syntax) is read here; every other key is ignored, so a file written for
//! a newer Claude Code still loads. The rules are mapped by
//! `permission::claude_rules` and applied in `app`: this module only reads.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The project's settings files, relative to its root, in the order
/// Claude Code applies them (the local file last).
pub const PROJECT_FILES: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];
/// The user's file, relative to the home directory.
pub const USER_FILE: &str = ".claude/settings.json";

/// One settings file as read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ClaudeSettings {
    pub permissions: Permissions,
}

/// `permissions`: rule strings per action (`defaultMode` and the others are
/// not read).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Permissions {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

/// A settings file found, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub file: PathBuf,
    pub text: String,
    pub settings: ClaudeSettings,
}

/// Reads `file`: `Ok(None)` when it does not exist.
///
/// # Errors
/// A message naming the file when it cannot be read or is not settings
/// JSON (comments and trailing commas are accepted, as hand-edited files
/// have them).
pub fn read(file: &Path) -> Result<Option<Found>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot read {}: {error}", file.display())),
    };
    let value = jsonc_parser::parse_to_serde_value::<Option<serde_json::Value>>(
        &text,
        &jsonc_parser::ParseOptions::default(),
    )
    .map_err(|error| {
        format!(
            "{} is not JSON: {error}; its permissions are not used",
            file.display()
        )
    })?
    .unwrap_or(serde_json::Value::Null);
    if value.is_null() {
        return Ok(None);
    }
    let settings = serde_json::from_value(value)
        .map_err(|error| format!("{}: {error}; its permissions are not used", file.display()))?;
    Ok(Some(Found {
        file: file.to_path_buf(),
        text,
        settings,
    }))
}

/// The 1-based line of `rule` in `text`, for the trust dialog.
pub fn line_of(text: &str, rule: &str) -> Option<usize> {
    let quoted = serde_json::to_string(rule).ok()?;
    let offset = text.find(&quoted)?;
    Some(text[..offset].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Claude Code's documented example, with keys this module
    /// does not read (`hooks`, `env`, `defaultMode`) left alone.
    #[test]
    fn permissions_are_read_and_other_keys_ignored() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(npm run lint)", "Bash(npm run test:*)"],
    "deny": ["Read(./.env)", "Read(./secrets/**)"],
    "defaultMode": "acceptEdits",
  },
  "env": { "CLAUDE_CODE_ENABLE_TELEMETRY": "1" },
  "hooks": { "PreToolUse": [] }
}"#,
        )
        .expect("write");
        let found = read(&file).expect("reads").expect("exists");
        assert_eq!(
            found.settings.permissions.allow,
            ["Bash(npm run lint)", "Bash(npm run test:*)"]
        );
        assert_eq!(found.settings.permissions.deny.len(), 2);
        assert!(found.settings.permissions.ask.is_empty());
        assert_eq!(line_of(&found.text, "Read(./secrets/**)"), Some(5));
        assert_eq!(read(&dir.path().join("none.json")), Ok(None));
        std::fs::write(&file, "{ not json").expect("write");
        assert!(
            read(&file)
                .unwrap_err()
                .contains("settings.json is not JSON")
        );
    }
}
