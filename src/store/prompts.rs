//! The prompts typed in each project (its root directory), kept so the
//! composer's history (Up/Down, Ctrl+R) outlives the session and the
//! process, as a shell's does. Rows only; the composer decides how to browse.

use rusqlite::params;

use super::Store;
use super::error::{During, Error};

/// A prompt longer than this (a huge paste) is not kept: recalling it would
/// fill the composer, and the session itself still holds it.
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;

/// How many prompts a project keeps; older ones are dropped as new ones come.
pub const KEPT_PER_PROJECT: i64 = 1_000;

impl Store {
    /// Records `text` as typed in `project`; an empty prompt, one too long,
    /// or the same as the project's last one is not recorded again.
    pub async fn record_prompt(
        &self,
        project: &str,
        text: &str,
        time_created: i64,
    ) -> Result<(), Error> {
        if text.trim().is_empty() || text.len() > MAX_PROMPT_BYTES {
            return Ok(());
        }
        let (project, text) = (project.to_string(), text.to_string());
        self.write("record a prompt", move |connection| {
            let last: Option<String> = connection
                .query_row(
                    "SELECT text FROM prompt_history WHERE project = ?1 ORDER BY id DESC LIMIT 1",
                    params![project],
                    |row| row.get(0),
                )
                .ok();
            if last.as_deref() == Some(text.as_str()) {
                return Ok(());
            }
            connection
                .execute(
                    "INSERT INTO prompt_history (project, text, time_created) VALUES (?1, ?2, ?3)",
                    params![project, text, time_created],
                )
                .during("record a prompt")?;
            connection
                .execute(
                    "DELETE FROM prompt_history WHERE project = ?1 AND id <= (
                         SELECT id FROM prompt_history WHERE project = ?1
                         ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                    params![project, KEPT_PER_PROJECT],
                )
                .during("trim the prompt history")
                .map(drop)
        })
        .await
    }

    /// The prompts typed in `project`, oldest first, at most the last `limit`.
    pub async fn prompt_history(&self, project: &str, limit: i64) -> Result<Vec<String>, Error> {
        let project = project.to_string();
        self.snapshot("read the prompt history", move |connection| {
            let mut statement = connection
                .prepare(
                    "SELECT text FROM prompt_history WHERE project = ?1 ORDER BY id DESC LIMIT ?2",
                )
                .during("read the prompt history")?;
            let mut texts = statement
                .query_map(params![project, limit], |row| row.get::<_, String>(0))
                .during("read the prompt history")?
                .collect::<Result<Vec<_>, _>>()
                .during("read the prompt history")?;
            texts.reverse();
            Ok(texts)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn prompts_are_kept_per_project_oldest_first_without_repeats() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(&dir.path().join("s.db")).expect("store");
        for (project, text) in [
            ("/a", "fix it"),
            ("/b", "other"),
            ("/a", "run tests"),
            ("/a", "run tests"),
            ("/a", "  "),
        ] {
            store.record_prompt(project, text, 1).await.expect("record");
        }
        assert_eq!(
            store.prompt_history("/a", 10).await.expect("a"),
            ["fix it", "run tests"]
        );
        assert_eq!(
            store.prompt_history("/a", 1).await.expect("a"),
            ["run tests"]
        );
        assert_eq!(store.prompt_history("/b", 10).await.expect("b"), ["other"]);
        assert!(store.prompt_history("/c", 10).await.expect("c").is_empty());
    }

    #[tokio::test]
    async fn a_project_keeps_only_its_newest_prompts() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(&dir.path().join("s.db")).expect("store");
        for n in 0..KEPT_PER_PROJECT + 5 {
            store
                .record_prompt("/a", &format!("p{n}"), n)
                .await
                .expect("record");
        }
        let kept = store.prompt_history("/a", 5_000).await.expect("a");
        assert_eq!(kept.len() as i64, KEPT_PER_PROJECT);
        assert_eq!(kept.first().map(String::as_str), Some("p5"));
    }
}
