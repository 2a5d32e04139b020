//! The session store: SQLite persistence of sessions, messages and parts, the
//! single source of truth the agent loop reads back every iteration.
//!
//! [`Store`] is a cheap-to-clone async handle. Two OS threads own the
//! connections (one writer, one reader beside it in WAL mode); SQLite work
//! never runs on the tokio runtime. The store knows nothing of providers,
//! tools or the TUI, and it never decides what the model sees on its own:
//! where history starts is `message::HistoryScan`'s rule.
//!
//! Files: `schema` (open, pragmas, migrations), `thread` (connection threads),
//! `sessions`, `writes`, `reads` (SQL), `cache` (the reader's decoded rows,
//! checked against row revisions), `live` and `refresh` (a caller's own kept
//! model view read and how it is brought up to date),
//! `part_json` (stored part JSON), `records` (what a compaction's working
//! state is built from), `remembered` (permission answers kept per
//! project), `error`.

mod cache;
mod error;
mod live;
mod part_json;
mod prompts;
mod reads;
mod records;
mod refresh;
mod remembered;
mod schema;
mod sessions;
mod thread;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, TransactionBehavior};

pub use error::Error;
pub use live::LiveView;
pub use reads::CONTEXT_PAGE;
pub use records::RecordQuery;
pub use remembered::RememberedRule;
pub use schema::SCHEMA_VERSION;

use crate::message::{Message, MessageWithParts, ModelRef, Part, Session};
use cache::DecodedCache;
use error::During;
use sessions::EncodedSession;
use thread::ConnectionThread;
use writes::{EncodedMessage, EncodedPart};

/// Handle to one session database. Clones share the same connections; the
/// threads end when the last clone is dropped. Several `Store`s (or
/// processes) may open the same file: writes wait for each other
/// (busy timeout), reads never wait.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: ConnectionThread,
    reader: ConnectionThread,
    /// Decoded rows of recently read sessions. Only reader jobs lock it, and
    /// they run one at a time, so the lock is never contended.
    cache: Arc<Mutex<DecodedCache>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Store {
    /// Opens the database at `path`, creating it (and its parent directories)
    /// owner-only if needed, and upgrading its schema.
    ///
    /// Blocks for the time SQLite needs to open and migrate the file; call it
    /// once at startup.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a file that is not a cairn database,
    /// [`Error::NewerSchema`] for one written by a newer cairn, and I/O or
    /// SQLite errors naming the file otherwise.
    pub fn open(path: &Path) -> Result<Store, Error> {
        let writer = schema::open_writer(path)?;
        let reader = schema::open_reader(path)?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: ConnectionThread::spawn("cairn-store-write", path, writer)?,
                reader: ConnectionThread::spawn("cairn-store-read", path, reader)?,
                cache: Arc::default(),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on the writer connection's thread: the escape hatch for work
    /// the methods below do not cover. Name failures with an operation, e.g.
    /// `Error::Sqlite { operation: "...", source }`.
    pub async fn call<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, Error> + Send + 'static,
    {
        self.on_writer("custom write", f).await
    }

    /// Runs `f` on the reader connection's thread (`query_only`), which sees
    /// the last committed state and never waits for writers.
    pub async fn read<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, Error> + Send + 'static,
    {
        self.on_reader("custom read", f).await
    }

    /// Inserts a new session. Its cost and tokens start at zero: they are
    /// kept by the store as the sums of the session's step-finish parts.
    pub async fn create_session(&self, session: &Session) -> Result<(), Error> {
        let encoded = EncodedSession::encode(session, "create session")?;
        self.write("create session", move |connection| {
            sessions::create(connection, &encoded)
        })
        .await
    }

    /// Updates title, directory, parent and times; the totals are left alone.
    /// [`Error::SessionNotFound`] if the session does not exist.
    pub async fn update_session(&self, session: &Session) -> Result<(), Error> {
        let encoded = EncodedSession::encode(session, "update session")?;
        self.write("update session", move |connection| {
            sessions::update(connection, &encoded)
        })
        .await
    }

    /// The model `/model` chose for the session's next prompt, if any.
    pub async fn chosen_model(&self, id: &str) -> Result<Option<ModelRef>, Error> {
        let id = id.to_string();
        let name = self
            .snapshot("read the chosen model", move |connection| {
                sessions::chosen_model(connection, &id)
            })
            .await?;
        // A value that no longer parses is no choice: the defaults apply.
        Ok(name.and_then(|name| ModelRef::parse(&name).ok()))
    }

    /// Chooses `model` for the session's next prompt; `None` clears it.
    pub async fn set_chosen_model(&self, id: &str, model: Option<&ModelRef>) -> Result<(), Error> {
        let id = id.to_string();
        let name = model.map(ToString::to_string);
        self.write("choose the model", move |connection| {
            sessions::set_chosen_model(connection, &id, name.as_deref())
        })
        .await
    }

    pub async fn get_session(&self, id: &str) -> Result<Option<Session>, Error> {
        let id = id.to_string();
        self.snapshot("get session", move |connection| {
            sessions::get(connection, &id)
        })
        .await
    }

    /// The ids of the sessions above `id` (a subagent's parent, its parent's
    /// parent...), nearest first; empty for a top-level session.
    pub async fn ancestors(&self, id: &str) -> Result<Vec<String>, Error> {
        let id = id.to_string();
        self.snapshot("read the parent sessions", move |connection| {
            sessions::ancestors(connection, &id)
        })
        .await
    }

    /// Up to `limit` sessions (subagent sessions included), most recently
    /// updated first, with their totals.
    pub async fn list_sessions(&self, limit: usize) -> Result<Vec<Session>, Error> {
        self.snapshot("list sessions", move |connection| {
            sessions::list(connection, limit)
        })
        .await
    }

    /// How many messages each session of `ids` holds (an index count each).
    pub async fn message_counts(
        &self,
        ids: Vec<String>,
    ) -> Result<std::collections::HashMap<String, u64>, Error> {
        self.snapshot("count messages", move |connection| {
            sessions::message_counts(connection, &ids)
        })
        .await
    }

    /// The most recently updated top-level session in `directory`, for
    /// `--continue`.
    pub async fn latest_session(&self, directory: &str) -> Result<Option<Session>, Error> {
        let directory = directory.to_string();
        self.snapshot("find the latest session", move |connection| {
            sessions::latest(connection, &directory)
        })
        .await
    }

    /// Deletes a session with its subagent sessions, messages and parts.
    /// Returns whether it existed.
    pub async fn delete_session(&self, id: &str) -> Result<bool, Error> {
        let id = id.to_string();
        self.write("delete session", move |connection| {
            sessions::delete(connection, &id)
        })
        .await
    }

    /// Deletes a message and its parts (an abandoned compaction request, a
    /// queued prompt moved after a summary). Returns whether it existed.
    pub async fn delete_message(&self, id: &str) -> Result<bool, Error> {
        let id = id.to_string();
        self.write("delete message", move |connection| {
            writes::delete_message(connection, &id)
        })
        .await
    }

    /// Inserts or updates a message (its parts are kept) and sets its
    /// session's `time_updated` to now.
    pub async fn upsert_message(&self, message: &Message) -> Result<(), Error> {
        let encoded = EncodedMessage::encode(message)?;
        self.write("upsert message", move |connection| {
            writes::upsert_message(connection, &encoded)
        })
        .await
    }

    /// Inserts or updates a part; step-finish parts also move the session
    /// totals, in the same transaction.
    pub async fn upsert_part(&self, part: &Part) -> Result<(), Error> {
        let encoded = EncodedPart::encode(part)?;
        self.write("upsert part", move |connection| {
            writes::upsert_part(connection, &encoded)
        })
        .await
    }

    /// Inserts or updates many parts in one transaction: all or none.
    pub async fn upsert_parts(&self, parts: &[Part]) -> Result<(), Error> {
        let encoded = parts
            .iter()
            .map(EncodedPart::encode)
            .collect::<Result<Vec<_>, _>>()?;
        self.write("upsert parts", move |connection| {
            encoded
                .iter()
                .try_for_each(|part| writes::upsert_part(connection, part))
        })
        .await
    }

    /// Inserts or updates messages and all their parts in one transaction
    /// (imports, benchmarks, tests that build a long history).
    pub async fn upsert_messages(&self, messages: &[MessageWithParts]) -> Result<(), Error> {
        let encoded = messages
            .iter()
            .map(|entry| {
                let parts = entry.parts.iter().map(EncodedPart::encode);
                Ok((
                    EncodedMessage::encode(&entry.message)?,
                    parts.collect::<Result<Vec<_>, _>>()?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        self.write("upsert messages", move |connection| {
            for (message, parts) in &encoded {
                writes::upsert_message(connection, message)?;
                for part in parts {
                    writes::upsert_part(connection, part)?;
                }
            }
            Ok(())
        })
        .await
    }

    /// A message with its parts (ordered by id).
    pub async fn get_message(&self, id: &str) -> Result<Option<MessageWithParts>, Error> {
        let id = id.to_string();
        self.snapshot("get message", move |connection| {
            reads::get_message(connection, &id)
        })
        .await
    }

    /// The history the model sees, oldest first: from the last completed
    /// compaction point (or its kept tail) to the newest message, or the
    /// whole session if it was never compacted. Reads newest first and stops
    /// there; older messages are not loaded.
    pub async fn read_view(&self, session_id: &str) -> Result<Vec<MessageWithParts>, Error> {
        let session_id = session_id.to_string();
        let cache = Arc::clone(&self.inner.cache);
        self.snapshot("read context", move |connection| {
            reads::read_view(connection, lock(&cache).session(&session_id), &session_id)
        })
        .await
    }

    /// [`Self::read_view`] into a read the caller keeps: brings
    /// `previous` up to date by the rows written since it was read, decoding
    /// only those and copying nothing (the agent loop's read of every step).
    pub async fn refresh_view(&self, previous: LiveView) -> Result<LiveView, Error> {
        self.snapshot("read context", move |connection| {
            refresh::refresh_view(connection, previous)
        })
        .await
    }

    /// The session's records for a compaction's working state, oldest
    /// first: the user's text, patches, and the calls `query` names.
    pub async fn read_records(
        &self,
        session_id: &str,
        query: RecordQuery,
    ) -> Result<Vec<MessageWithParts>, Error> {
        let session_id = session_id.to_string();
        self.snapshot("read the session's records", move |connection| {
            records::read_records(connection, &session_id, &query)
        })
        .await
    }

    /// Every message of the session, oldest first (TUI, export).
    pub async fn read_all(&self, session_id: &str) -> Result<Vec<MessageWithParts>, Error> {
        let session_id = session_id.to_string();
        let cache = Arc::clone(&self.inner.cache);
        self.snapshot("read session", move |connection| {
            reads::read_all(connection, lock(&cache).session(&session_id), &session_id)
        })
        .await
    }

    /// Up to `limit` messages older than `before_id` (newest ones when
    /// `None`), newest first: a pager for scrolling back.
    pub async fn messages_before(
        &self,
        session_id: &str,
        before_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MessageWithParts>, Error> {
        let session_id = session_id.to_string();
        let before_id = before_id.map(str::to_string);
        let cache = Arc::clone(&self.inner.cache);
        self.snapshot("read earlier messages", move |connection| {
            let mut cache = lock(&cache);
            let cache = cache.session(&session_id);
            reads::messages_before(connection, cache, &session_id, before_id.as_deref(), limit)
        })
        .await
    }

    /// Runs `f` in an immediate transaction on the writer: committed as a
    /// whole or not at all. Immediate, because a deferred transaction that
    /// turns into a writer can fail with "busy" without waiting.
    async fn write<R, F>(&self, operation: &'static str, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
    {
        self.on_writer(operation, move |connection| {
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .during(operation)?;
            writes::next_revision(&transaction)?;
            let result = f(&transaction)?;
            transaction.commit().during(operation)?;
            Ok(result)
        })
        .await
    }

    /// Runs `f` in one read transaction on the reader, so that several
    /// queries see the same committed state.
    async fn snapshot<R, F>(&self, operation: &'static str, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
    {
        self.on_reader(operation, move |connection| {
            let transaction = connection.transaction().during(operation)?;
            let result = f(&transaction)?;
            transaction.commit().during(operation)?;
            Ok(result)
        })
        .await
    }

    async fn on_writer<R, F>(&self, operation: &'static str, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, Error> + Send + 'static,
    {
        let result = self.inner.writer.run(operation, f).await;
        result.map_err(|error| error.in_file(&self.inner.path))
    }

    async fn on_reader<R, F>(&self, operation: &'static str, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, Error> + Send + 'static,
    {
        let result = self.inner.reader.run(operation, f).await;
        result.map_err(|error| error.in_file(&self.inner.path))
    }
}

/// Locks the decoded-row cache. A reader job that panicked while holding it
/// may have left a session half updated: start from an empty cache then.
fn lock(cache: &Mutex<DecodedCache>) -> MutexGuard<'_, DecodedCache> {
    cache.lock().unwrap_or_else(|poisoned| {
        cache.clear_poison();
        let mut cache = poisoned.into_inner();
        cache.clear();
        cache
    })
}
