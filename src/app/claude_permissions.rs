//! The `permissions` of Claude Code's settings files (see
//! `config::claude_settings`) as the session's rules: the user's
//! `~/.claude/settings.json` always applies; a project's `.claude/settings.json`
//! and `.claude/settings.local.json` apply their `deny` and `ask` at once, as
//! restrictions (they only make an answer stricter), and their `allow` only
//! once the project is trusted (each rule is a `crate::trust::Risk`).
//!
//! Within one file Claude Code's precedence is deny > ask > allow whatever
//! the order; cairn's last matching rule wins, so each file's rules are laid
//! down allow, then ask, then deny. Every deny is a restriction: no allow of
//! any file (cairn's config included) reopens it.

use std::path::Path;

use crate::config::claude_settings::{self, Found, PROJECT_FILES, USER_FILE};
use crate::permission::claude_rules;
use crate::permission::{Action, Rule};

/// The rules found, in the session's terms.
#[derive(Debug, Default)]
pub struct Imported {
    /// Between the defaults and cairn's config (see `permission::ruleset_with_imported`).
    pub rules: Vec<Rule>,
    /// Applied after everything, stricter only.
    pub restrictions: Vec<Rule>,
    /// A file that could not be read, a rule cairn cannot map: each names
    /// the file and the rule.
    pub warnings: Vec<String>,
    /// The project's allow rules, applied only when trusted.
    pub risks: Vec<crate::trust::Risk>,
}

/// The settings files' rules for a project at `root`; `trusted` decides
/// whether the project's allows (listed in [`Imported::risks`]) apply.
pub fn gather(
    root: &Path,
    home: Option<&Path>,
    trusted: impl Fn(&[crate::trust::Risk]) -> bool,
) -> Imported {
    let mut imported = Imported::default();
    if let Some(home) = home {
        let file = home.join(USER_FILE);
        // The user's file is theirs: all of it applies (a project whose
        // root is the home directory is not read twice).
        if let Some(found) = read(&file, &mut imported.warnings) {
            add(&found, Scope::User, &mut imported);
        }
    }
    let project: Vec<Found> = PROJECT_FILES
        .iter()
        .map(|name| root.join(name))
        .filter(|file| home.is_none_or(|home| *file != home.join(USER_FILE)))
        .filter_map(|file| read(&file, &mut imported.warnings))
        .collect();
    let canonical = crate::trust::canonical(root);
    for found in &project {
        for rule in &found.settings.permissions.allow {
            imported.risks.push(crate::trust::Risk {
                root: canonical.clone(),
                file: found.file.clone(),
                line: claude_settings::line_of(&found.text, rule),
                key: "permissions.allow".to_string(),
                value: format!("{rule:?}"),
            });
        }
    }
    let scope = if trusted(&imported.risks) {
        Scope::TrustedProject
    } else {
        Scope::Project
    };
    for found in &project {
        add(found, scope, &mut imported);
    }
    imported
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scope {
    User,
    TrustedProject,
    /// Untrusted: its allows are left out.
    Project,
}

fn read(file: &Path, warnings: &mut Vec<String>) -> Option<Found> {
    claude_settings::read(file).unwrap_or_else(|problem| {
        warnings.push(problem);
        None
    })
}

fn add(found: &Found, scope: Scope, into: &mut Imported) {
    let permissions = &found.settings.permissions;
    let lists = [
        (Action::Allow, &permissions.allow),
        (Action::Ask, &permissions.ask),
        (Action::Deny, &permissions.deny),
    ];
    for (action, list) in lists {
        for text in list {
            let rule = match claude_rules::parse(text, action) {
                Ok(rule) => rule,
                Err(unmapped) => {
                    into.warnings.push(format!(
                        "{}: permissions.{}: {unmapped}",
                        found.file.display(),
                        action_name(action)
                    ));
                    continue;
                }
            };
            match (action, scope) {
                (Action::Allow, Scope::Project) => {}
                (Action::Deny, _) | (Action::Ask, Scope::Project | Scope::TrustedProject) => {
                    into.restrictions.push(rule)
                }
                _ => into.rules.push(rule),
            }
        }
    }
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Allow => "allow",
        Action::Ask => "ask",
        Action::Deny => "deny",
    }
}
