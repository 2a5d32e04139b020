//! Permission answers given with "always", kept per project (the project's
//! root directory) in the `permission_rule` table, so that they hold in every
//! session of that project and after a restart, until revoked.
//!
//! The store only keeps the rows; `permission` decides what they allow.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::Store;
use super::error::{During, Error};

/// One remembered "always" answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RememberedRule {
    /// Stable number, what `/permissions revoke N` names.
    pub id: i64,
    pub permission: String,
    pub pattern: String,
    /// Unix milliseconds.
    pub time_created: i64,
}

const SELECT_RULE: &str = "SELECT id, permission, pattern, time_created FROM permission_rule";

fn decode(row: &Row<'_>) -> rusqlite::Result<RememberedRule> {
    Ok(RememberedRule {
        id: row.get(0)?,
        permission: row.get(1)?,
        pattern: row.get(2)?,
        time_created: row.get(3)?,
    })
}

impl Store {
    /// Remembers that `permission` on `pattern` is allowed in `project`; a
    /// rule already remembered keeps its number and date.
    pub async fn remember_rule(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
        time_created: i64,
    ) -> Result<(), Error> {
        let (project, permission, pattern) = (
            project.to_string(),
            permission.to_string(),
            pattern.to_string(),
        );
        self.write("remember a permission", move |connection| {
            connection
                .execute(
                    "INSERT OR IGNORE INTO permission_rule (project, permission, pattern, time_created)
                     VALUES (?1, ?2, ?3, ?4)",
                    params![project, permission, pattern, time_created],
                )
                .during("remember a permission")
                .map(drop)
        })
        .await
    }

    /// The rules remembered for `project`, oldest first.
    pub async fn remembered_rules(&self, project: &str) -> Result<Vec<RememberedRule>, Error> {
        let project = project.to_string();
        self.snapshot("read remembered permissions", move |connection| {
            list(connection, &project)
        })
        .await
    }

    /// Forgets rule `id` of `project`; returns it, or `None` when `project`
    /// has no such rule (another project's numbers are not reachable).
    pub async fn forget_rule(
        &self,
        project: &str,
        id: i64,
    ) -> Result<Option<RememberedRule>, Error> {
        let project = project.to_string();
        self.write("forget a permission", move |connection| {
            let operation = "forget a permission";
            let rule = connection
                .query_row(
                    &format!("{SELECT_RULE} WHERE project = ?1 AND id = ?2"),
                    params![project, id],
                    decode,
                )
                .optional()
                .during(operation)?;
            if rule.is_some() {
                connection
                    .execute("DELETE FROM permission_rule WHERE id = ?1", params![id])
                    .during(operation)?;
            }
            Ok(rule)
        })
        .await
    }
}

fn list(connection: &Connection, project: &str) -> Result<Vec<RememberedRule>, Error> {
    let operation = "read remembered permissions";
    let mut statement = connection
        .prepare_cached(&format!("{SELECT_RULE} WHERE project = ?1 ORDER BY id"))
        .during(operation)?;
    let rows = statement
        .query_map(params![project], decode)
        .during(operation)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().during(operation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rules_are_kept_per_project_and_survive_reopening() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cairn.db");
        let store = Store::open(&path).expect("open");
        store
            .remember_rule("/a", "bash", "ls -la", 1)
            .await
            .expect("remember");
        store
            .remember_rule("/a", "bash", "ls -la", 2)
            .await
            .expect("again");
        store
            .remember_rule("/b", "edit", "src/x.rs", 3)
            .await
            .expect("other project");
        drop(store);
        let store = Store::open(&path).expect("reopen");
        let rules = store.remembered_rules("/a").await.expect("list");
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert_eq!(
            (rules[0].pattern.as_str(), rules[0].time_created),
            ("ls -la", 1)
        );
        let other = store.remembered_rules("/b").await.expect("list b")[0].id;
        assert_eq!(
            store.forget_rule("/a", other).await.expect("forget"),
            None,
            "not /a's"
        );
        let forgotten = store.forget_rule("/a", rules[0].id).await.expect("forget");
        assert_eq!(forgotten.as_ref(), Some(&rules[0]));
        assert!(store.remembered_rules("/a").await.expect("list").is_empty());
        assert_eq!(store.remembered_rules("/b").await.expect("list b").len(), 1);
    }
}
