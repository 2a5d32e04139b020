//! Writes a realistic session into a cairn data directory, for the TUI figures
//! with a large session open (issue 6). Not a measurement: a seeding tool that
//! lives here because benches may use the library's dev-dependencies.
//!
//! Run: `cargo bench --bench seed_session -- DATA_DIR PROJECT_DIR [MESSAGES]
//! [compacted]` (default 5,000 messages); prints the new session's id on
//! stdout. `compacted` ends the session with a completed compaction point
//! 100 messages before its end, as a day-long session that compacts as it
//! goes looks; without it the session was never compacted.

use std::path::PathBuf;

use anyhow::Context;
use cairn::clock::now_millis;
use cairn::message::{Session, Tokens};
use cairn::store::Store;

#[path = "../tests/common/history/mod.rs"]
mod history;

const DEFAULT_MESSAGES: usize = 5_000;

fn main() -> anyhow::Result<()> {
    // `cargo bench` appends `--bench`; every flag is ignored.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let [data_dir, project, rest @ ..] = args.as_slice() else {
        // `cargo test --all-targets` runs every bench target without arguments:
        // there is nothing to seed then, and that is not a failure.
        eprintln!("usage: cargo bench --bench seed_session -- DATA_DIR PROJECT_DIR [MESSAGES]");
        return Ok(());
    };
    let messages = match rest.first() {
        Some(count) => count
            .parse()
            .with_context(|| format!("MESSAGES must be a number, got {count:?}"))?,
        None => DEFAULT_MESSAGES,
    };
    // The binary names sessions by its current directory, canonical on Linux.
    let project = std::fs::canonicalize(project)
        .with_context(|| format!("cannot resolve project directory {project}"))?;
    let database = PathBuf::from(data_dir).join("cairn.db");
    let store =
        Store::open(&database).with_context(|| format!("cannot open {}", database.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let now = now_millis();
        let session = Session {
            id: cairn::id::session_id(),
            title: format!("seeded session of {messages} messages"),
            directory: project.display().to_string(),
            parent_id: None,
            time_created: now,
            time_updated: now,
            cost: 0.0,
            tokens: Tokens::default(),
        };
        store.create_session(&session).await?;
        let history = if rest.get(1).is_some_and(|arg| arg == "compacted") {
            compacted_history(&session.id, messages, 100)
        } else {
            history::HistoryBuilder::new(&session.id).build(messages)
        };
        for batch in history.chunks(200) {
            store.upsert_messages(batch).await?;
        }
        let parts: usize = history.iter().map(|m| m.parts.len()).sum();
        eprintln!(
            "seeded {messages} messages ({parts} parts) into {} for {}",
            database.display(),
            project.display()
        );
        println!("{}", session.id);
        anyhow::Ok(())
    })
}

/// `messages` messages whose last `kept` follow a completed compaction
/// point (request + summary), as the loop writes them: in id order.
fn compacted_history(
    session_id: &str,
    messages: usize,
    kept: usize,
) -> Vec<cairn::message::MessageWithParts> {
    let mut history =
        history::HistoryBuilder::new(session_id).build(messages.saturating_sub(kept + 2));
    let request = history::compaction_request(session_id, None);
    let summary = history::summary(
        session_id,
        &request.message.id,
        "## Goal\nFix the store's compaction query.\n## Progress\nFound the off-by-one.",
    );
    history.push(request);
    history.push(summary);
    history.extend(history::HistoryBuilder::new(session_id).build(kept));
    history
}
