//! Opening the database file: owner-only permissions, connection pragmas, and
//! the versioned schema (`PRAGMA user_version` + an ordered list of
//! migrations, each applied in one transaction).
//!
//! A damaged file, another program's database, or a database from a newer
//! cairn is reported as an error naming the file; opening never panics and
//! never rewrites a file it does not recognise.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::error::{Error, is_damaged};

/// Written into the file header ("cair") so that a database of another
/// program is recognised instead of being migrated into.
const APPLICATION_ID: i32 = 0x6361_6972;

/// Schema migrations, oldest first. Entry `n` takes the schema from version
/// `n` to `n + 1`. Append only: a released entry is never edited.
const MIGRATIONS: &[&str] = &[
    // 1: sessions, messages, parts. The JSON columns hold the serde form of
    // `message.rs` types; the other columns exist for queries and totals.
    "CREATE TABLE session (
        id TEXT PRIMARY KEY NOT NULL,
        parent_id TEXT,
        directory TEXT NOT NULL,
        title TEXT NOT NULL,
        time_created INTEGER NOT NULL,
        time_updated INTEGER NOT NULL,
        cost REAL NOT NULL DEFAULT 0,
        tokens_input INTEGER NOT NULL DEFAULT 0,
        tokens_output INTEGER NOT NULL DEFAULT 0,
        tokens_reasoning INTEGER NOT NULL DEFAULT 0,
        tokens_cache_read INTEGER NOT NULL DEFAULT 0,
        tokens_cache_write INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX session_by_time_updated ON session (time_updated DESC, id DESC);
    CREATE INDEX session_by_directory ON session (directory, time_updated DESC, id DESC);
    CREATE INDEX session_by_parent ON session (parent_id);

    CREATE TABLE message (
        id TEXT PRIMARY KEY NOT NULL,
        session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        time_created INTEGER NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX message_by_session ON message (session_id, id);

    CREATE TABLE part (
        id TEXT PRIMARY KEY NOT NULL,
        message_id TEXT NOT NULL REFERENCES message (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
        type TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX part_by_message ON part (message_id, id);
    -- Parts of a contiguous range of a session's messages in one range scan.
    CREATE INDEX part_by_session ON part (session_id, message_id, id);",
    // 2: row revisions, so that readers can keep decoded rows and re-decode
    // only what changed. `revision` holds the last value handed out; every
    // write transaction of the store takes the next one and stamps the rows it
    // writes with it. The triggers stamp rows written without a revision (raw
    // SQL through `Store::call`, a cairn of schema 1 still running): rev 0 on
    // insert, or an update that left rev alone. The session indexes carry rev
    // so that listing a page's ids and revisions never reads row data.
    "CREATE TABLE revision (value INTEGER NOT NULL);
    INSERT INTO revision (value) VALUES (0);
    ALTER TABLE message ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE part ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
    DROP INDEX message_by_session;
    CREATE INDEX message_by_session ON message (session_id, id, rev);
    DROP INDEX part_by_session;
    CREATE INDEX part_by_session ON part (session_id, message_id, id, rev);
    CREATE TRIGGER message_rev_on_insert AFTER INSERT ON message WHEN NEW.rev = 0
    BEGIN
        UPDATE revision SET value = value + 1;
        UPDATE message SET rev = (SELECT value FROM revision) WHERE id = NEW.id;
    END;
    CREATE TRIGGER message_rev_on_update AFTER UPDATE ON message WHEN NEW.rev = OLD.rev
    BEGIN
        UPDATE revision SET value = value + 1;
        UPDATE message SET rev = (SELECT value FROM revision) WHERE id = NEW.id;
    END;
    CREATE TRIGGER part_rev_on_insert AFTER INSERT ON part WHEN NEW.rev = 0
    BEGIN
        UPDATE revision SET value = value + 1;
        UPDATE part SET rev = (SELECT value FROM revision) WHERE id = NEW.id;
    END;
    CREATE TRIGGER part_rev_on_update AFTER UPDATE ON part WHEN NEW.rev = OLD.rev
    BEGIN
        UPDATE revision SET value = value + 1;
        UPDATE part SET rev = (SELECT value FROM revision) WHERE id = NEW.id;
    END;",
    // 3: permission answers given with "always", per project (its root
    // directory), so that they outlive the session and the process. One row
    // per (project, permission, pattern); `id` is what `/permissions revoke`
    // names.
    "CREATE TABLE permission_rule (
        id INTEGER PRIMARY KEY,
        project TEXT NOT NULL,
        permission TEXT NOT NULL,
        pattern TEXT NOT NULL,
        time_created INTEGER NOT NULL,
        UNIQUE (project, permission, pattern)
    );",
    // 4: the prompts typed in each project (its root directory), newest
    // last, for the composer's Up/Down and Ctrl+R across sessions and
    // restarts (issue #34).
    "CREATE TABLE prompt_history (
        id INTEGER PRIMARY KEY,
        project TEXT NOT NULL,
        text TEXT NOT NULL,
        time_created INTEGER NOT NULL
    );
    CREATE INDEX prompt_history_by_project ON prompt_history (project, id);",
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Prepared statements kept per connection; the store uses about twenty.
const STATEMENT_CACHE: usize = 64;

/// Opens (creating if needed) the database at `path` for writing, brings its
/// schema up to date, and returns the connection.
pub(crate) fn open_writer(path: &Path) -> Result<Connection, Error> {
    create_private_file(path)?;
    let mut connection = Connection::open(path).map_err(|source| open_error(path, source))?;
    configure(path, &connection)?;
    check_identity(path, &connection)?;
    let journal: String = connection
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(|source| open_error(path, source))?;
    connection
        .execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
        .map_err(|source| open_error(path, source))?;
    migrate(path, &mut connection)?;
    if journal.eq_ignore_ascii_case("wal") {
        restrict_side_files(path);
    }
    Ok(connection)
}

/// Opens a second connection to an already opened database, for reads only:
/// in WAL mode it reads beside the writer without waiting for it.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let connection =
        Connection::open_with_flags(path, flags).map_err(|source| open_error(path, source))?;
    configure(path, &connection)?;
    connection
        .execute_batch("PRAGMA query_only = ON;")
        .map_err(|source| open_error(path, source))?;
    Ok(connection)
}

fn configure(path: &Path, connection: &Connection) -> Result<(), Error> {
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    connection
        .busy_timeout(BUSY_TIMEOUT)
        .map_err(|source| open_error(path, source))
}

/// Creates the parent directories (owner only) and the file (mode 0600) if
/// they do not exist. Sessions hold code and prompts: other users of the
/// machine have no business reading them. SQLite gives the `-wal` and `-shm`
/// files the mode of the database file.
fn create_private_file(path: &Path) -> Result<(), Error> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::paths::private_dir_builder()
            .create(parent)
            .map_err(|source| Error::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
    }
    crate::paths::private_file_options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
        .map_err(|source| Error::CreateFile {
            path: path.to_path_buf(),
            source,
        })
}

/// Belt and braces for SQLite's own rule: the side files of a database we
/// created owner-only are owner-only too. Failure is harmless (the files may
/// belong to a checkpoint in progress), so it is ignored.
fn restrict_side_files(path: &Path) {
    let Ok(database) = std::fs::metadata(path) else {
        return;
    };
    if database.permissions().mode() & 0o077 != 0 {
        return; // the user chose wider permissions for the database itself
    }
    for suffix in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        if let Ok(meta) = std::fs::metadata(&side)
            && meta.permissions().mode() & 0o077 != 0
        {
            let _ = std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// Refuses files that are not databases, databases of other programs, and
/// databases from a newer cairn, before anything is written to them.
fn check_identity(path: &Path, connection: &Connection) -> Result<(), Error> {
    let (version, application_id, objects): (i64, i32, i64) = connection
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version),
                    (SELECT application_id FROM pragma_application_id),
                    (SELECT count(*) FROM sqlite_schema)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .map_err(|source| open_error(path, source))?;
    let is_ours = application_id == APPLICATION_ID;
    let is_empty = application_id == 0 && version == 0 && objects == 0;
    if !is_ours && !is_empty {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            detail: format!(
                "it is an SQLite database of another program \
                 (application id {application_id:#x}, user version {version})"
            ),
        });
    }
    check_version(path, version)
}

fn check_version(path: &Path, found: i64) -> Result<(), Error> {
    if found > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Applies the missing migrations in one immediate transaction. The version
/// is read again inside the transaction: another process may have migrated
/// the file while this one waited for the write lock.
fn migrate(path: &Path, connection: &mut Connection) -> Result<(), Error> {
    let migrate_error = |version: i64| {
        move |source: rusqlite::Error| {
            if is_damaged(&source) {
                open_error(path, source)
            } else {
                Error::Migrate {
                    path: path.to_path_buf(),
                    version,
                    source,
                }
            }
        }
    };
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(migrate_error(SCHEMA_VERSION))?;
    let found: i64 = transaction
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(migrate_error(SCHEMA_VERSION))?;
    check_version(path, found)?;
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        let version = index as i64 + 1;
        transaction
            .execute_batch(sql)
            .map_err(migrate_error(version))?;
        transaction
            .pragma_update(None, "user_version", version)
            .map_err(migrate_error(version))?;
    }
    if found < SCHEMA_VERSION {
        transaction
            .pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(migrate_error(SCHEMA_VERSION))?;
    }
    transaction.commit().map_err(migrate_error(SCHEMA_VERSION))
}

/// An open-time SQLite error; damage becomes [`Error::Corrupt`].
fn open_error(path: &Path, source: rusqlite::Error) -> Error {
    if is_damaged(&source) {
        Error::Corrupt {
            path: path.to_path_buf(),
            detail: source.to_string(),
        }
    } else {
        Error::Open {
            path: path.to_path_buf(),
            source,
        }
    }
}
