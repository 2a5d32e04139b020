//! "Always" answers kept per project: saving a new answer to the store,
//! loading a project's answers into a session's permissions at start, and
//! `/permissions` (list, revoke). The project is the root directory of the
//! session (`Environment::root`), so every session there shares them.
//!
//! What the rules allow stays `permission`'s business; the rows are `store`'s.

use std::fmt::Write as _;

use crate::clock::{format_time, now_millis};
use crate::permission::{Permissions, Rule};
use crate::session::Error;
use crate::session::ctx::SessionCtx;
use crate::store::{RememberedRule, Store};

/// The key of a project in the store.
fn project(ctx: &SessionCtx) -> String {
    ctx.env.root.display().to_string()
}

/// Allows in `permissions` every answer `project` remembers.
///
/// # Errors
/// When the store cannot be read.
pub async fn load(store: &Store, project: &str, permissions: &Permissions) -> Result<(), Error> {
    for rule in store.remembered_rules(project).await? {
        permissions.approve(&rule.permission, &rule.pattern);
    }
    Ok(())
}

/// Saves the rules "always" answers added since `before` was taken. A
/// failure is reported and leaves the answer in force for this session.
pub async fn save_new(ctx: &SessionCtx, before: &[Rule]) {
    let project = project(ctx);
    for rule in ctx.permissions.approved() {
        if before.contains(&rule) {
            continue;
        }
        let saved = ctx
            .writer
            .store
            .remember_rule(&project, &rule.permission, &rule.pattern, now_millis())
            .await;
        if let Err(error) = saved {
            ctx.writer.error(
                &ctx.session_id,
                format!(
                    "cannot remember `{} {}` for this project (it holds until cairn exits): {error}",
                    rule.permission, rule.pattern
                ),
            );
        }
    }
}

/// `/permissions [revoke N]`: the answer, as a notice.
///
/// # Errors
/// When the store cannot be read or written.
pub async fn command(ctx: &SessionCtx, revoke: Option<i64>) -> Result<(), Error> {
    let project = project(ctx);
    let store = &ctx.writer.store;
    let notice = match revoke {
        None => {
            let sandbox = &ctx.settings.sandbox;
            let mut text = listing(&project, &store.remembered_rules(&project).await?);
            let _ = write!(text, "\n{}", sandbox.describe());
            if let Some(warning) = sandbox.warning() {
                let _ = write!(text, "\nwarning: {warning}");
            }
            text
        }
        Some(id) => match store.forget_rule(&project, id).await? {
            Some(rule) => {
                ctx.permissions.revoke(&rule.permission, &rule.pattern);
                format!(
                    "revoked {id}: `{}` for {}; cairn will ask again",
                    rule.pattern, rule.permission
                )
            }
            None => {
                format!("no remembered permission {id} in this project; `/permissions` lists them")
            }
        },
    };
    ctx.writer.notice(&ctx.session_id, notice);
    Ok(())
}

fn listing(project: &str, rules: &[RememberedRule]) -> String {
    if rules.is_empty() {
        return format!(
            "no remembered permissions for {project}: answer \"always\" to a question to add one"
        );
    }
    let mut text = format!("remembered permissions for {project}:");
    for rule in rules {
        let _ = write!(
            text,
            "\n  {}  {}  {}  (added {})",
            rule.id,
            rule.permission,
            rule.pattern,
            date(rule.time_created)
        );
    }
    text.push_str("\n`/permissions revoke N` forgets one");
    text
}

/// `2026-11-22 18:43 UTC` from Unix milliseconds.
fn date(millis: i64) -> String {
    format!("{} UTC", format_time(millis))
}

/// The arguments of `/permissions` (lists) and `/permissions revoke N`
/// (forgets rule N), shared by the TUI and `cairn run`.
pub fn parse_args(args: &str) -> Result<Option<i64>, String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match words[..] {
        [] => Ok(None),
        ["revoke", number] => number
            .parse()
            .map(Some)
            .map_err(|_| format!("`{number}` is not a rule number: `/permissions` lists them")),
        _ => Err("usage: /permissions, or /permissions revoke N".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        // 2026-11-22 18:43:02 UTC
        assert_eq!(date(1_795_372_982_000), "2026-11-22 18:43 UTC");
        assert_eq!(date(951_782_400_000), "2000-02-29 00:00 UTC");
    }
}
