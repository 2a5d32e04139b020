//! The `hooks` table in Claude Code's shape, as `.claude/settings.json`
//! writes it and cairn's own config repeats it (`[[hooks.PreToolUse]]`):
//! event name -> matcher groups -> commands. Read here so that `Config` can
//! hold it; what the hooks do is `crate::hook`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Event name (`PreToolUse`, `Stop`, ...) -> its matcher groups, in file order.
pub type HookTable = BTreeMap<String, Vec<MatcherGroup>>;

/// One `{"matcher": "Edit|Write", "hooks": [...]}` entry. Fields Claude Code
/// added later (`statusMessage`, `once`) are read and ignored, so a newer
/// file still loads.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MatcherGroup {
    /// Which tool names (or session-start sources, compaction triggers) the
    /// group applies to; absent, empty or `*`: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    #[serde(default)]
    pub hooks: Vec<HookCommand>,
}

/// One `{"type": "command", "command": "...", "timeout": 30}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookCommand {
    /// Only `command` runs; other kinds (`prompt`) are reported and skipped.
    #[serde(rename = "type", default = "command_kind")]
    pub kind: String,
    #[serde(default)]
    pub command: String,
    /// Seconds; 60 when absent, as in Claude Code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

fn command_kind() -> String {
    "command".to_string()
}

/// How a trust dialog shows one hook, and what the trust record keeps of
/// it: its matcher and its command, whole (a changed command asks again).
pub fn summary(matcher: Option<&str>, command: &HookCommand) -> String {
    let matcher = matcher.filter(|m| !m.is_empty()).unwrap_or("*");
    let kind = if command.kind == "command" {
        String::new()
    } else {
        format!("({}) ", command.kind)
    };
    format!("matcher {matcher:?}: {kind}{}", command.command)
}

/// Every hook of `table` as (event, summary), in table order.
pub fn summaries(table: &HookTable) -> Vec<(String, String)> {
    table
        .iter()
        .flat_map(|(event, groups)| {
            groups.iter().flat_map(move |group| {
                group
                    .hooks
                    .iter()
                    .map(move |hook| (event.clone(), summary(group.matcher.as_deref(), hook)))
            })
        })
        .collect()
}
