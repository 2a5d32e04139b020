//! The reader's decoded-row cache: a handle that has read a session once
//! answers later reads with every change made since, whoever made it (this
//! handle, another handle on the file, raw SQL), and still answers from
//! decoded rows when nothing changed. Each check compares against a freshly
//! opened `Store`, whose cache is empty.

use crate::store_support;

use std::path::Path;

use cairn::message::*;
use cairn::store::{Error, LiveView, Store};
use store_support::*;

/// What a handle with an empty cache reads.
async fn uncached(path: &Path, session_id: &str) -> (Vec<MessageWithParts>, Vec<MessageWithParts>) {
    let fresh = Store::open(path).unwrap();
    let context = fresh.read_view(session_id).await.unwrap();
    let all = fresh.read_all(session_id).await.unwrap();
    (context, all)
}

/// `store`'s reads (through its warm cache) equal an uncached handle's.
async fn assert_reads_current(store: &Store, session_id: &str) {
    let (context, all) = uncached(store.path(), session_id).await;
    assert_eq!(store.read_view(session_id).await.unwrap(), context);
    assert_eq!(store.read_all(session_id).await.unwrap(), all);
    let newest_first: Vec<_> = all.iter().rev().take(3).cloned().collect();
    assert_eq!(
        store.messages_before(session_id, None, 3).await.unwrap(),
        newest_first
    );
}

/// Writes a completed compaction point: the request and its summary (with
/// a text part when `with_text`).
async fn compact(store: &Store, session: &Session, with_text: bool) -> (Message, Message) {
    let request = user(session);
    let done = summary(session, &request, false);
    store.upsert_message(&request).await.unwrap();
    store
        .upsert_part(&compaction(&request, None))
        .await
        .unwrap();
    store.upsert_message(&done).await.unwrap();
    if with_text {
        store.upsert_part(&text(&done, "summary")).await.unwrap();
    }
    (request, done)
}

fn sql(source: rusqlite::Error) -> Error {
    Error::Sqlite {
        operation: "test sql",
        source,
    }
}

#[tokio::test]
async fn warm_reads_see_upserted_parts_and_messages() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let (question, answer) = exchange(&store, &session, "first").await;
    let before = store.read_view(&session.id).await.unwrap();
    assert_eq!(before.len(), 2);

    // The loop's case: one new part on the newest message between reads.
    let appended = text(&answer, "appended");
    store.upsert_part(&appended).await.unwrap();
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context[1].parts.last(), Some(&appended));
    assert_reads_current(&store, &session.id).await;

    // An update in place of a part already cached.
    let mut edited = appended.clone();
    edited.kind = PartKind::Text(TextPart {
        text: "edited".into(),
        ..TextPart::default()
    });
    store.upsert_part(&edited).await.unwrap();
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context[1].parts.last(), Some(&edited));
    assert_reads_current(&store, &session.id).await;

    // A message row changed, its parts untouched.
    let mut finished = answer.clone();
    if let Role::Assistant(assistant) = &mut finished.role {
        assistant.cost = 1.25;
        assistant.finish = Some(FinishReason::Length);
    }
    store.upsert_message(&finished).await.unwrap();
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context[1].message, finished);
    assert_eq!(context[0].message, question);
    assert_reads_current(&store, &session.id).await;
}

#[tokio::test]
async fn warm_reads_drop_deleted_messages_and_sessions() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let (_, first_answer) = exchange(&store, &session, "one").await;
    let (second_question, _) = exchange(&store, &session, "two").await;
    assert_eq!(store.read_view(&session.id).await.unwrap().len(), 4);
    assert_eq!(store.read_all(&session.id).await.unwrap().len(), 4);

    assert!(store.delete_message(&second_question.id).await.unwrap());
    assert!(store.delete_message(&first_answer.id).await.unwrap());
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context.len(), 2);
    assert!(!ids(&context).contains(&second_question.id));
    assert_reads_current(&store, &session.id).await;

    assert!(store.delete_session(&session.id).await.unwrap());
    assert!(store.read_view(&session.id).await.unwrap().is_empty());
    assert!(store.read_all(&session.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn writes_of_another_handle_on_the_same_file_are_seen() {
    let (dir, reader) = open_temp();
    let writer = Store::open(&dir.path().join("data/cairn.db")).unwrap();
    let session = session("/repo");
    reader.create_session(&session).await.unwrap();
    let (question, answer) = exchange(&reader, &session, "mine").await;
    assert_eq!(reader.read_view(&session.id).await.unwrap().len(), 2);
    assert_eq!(reader.read_all(&session.id).await.unwrap().len(), 2);

    let other = text(&answer, "written by the other handle");
    writer.upsert_part(&other).await.unwrap();
    let mut reworded = reader.read_all(&session.id).await.unwrap()[0].parts[0].clone();
    reworded.kind = PartKind::Text(TextPart {
        text: "reworded elsewhere".into(),
        ..TextPart::default()
    });
    writer.upsert_part(&reworded).await.unwrap();
    let context = reader.read_view(&session.id).await.unwrap();
    assert_eq!(context[0].parts, vec![reworded]);
    assert_eq!(context[1].parts.last(), Some(&other));
    assert_reads_current(&reader, &session.id).await;

    assert!(writer.delete_message(&question.id).await.unwrap());
    assert_eq!(
        ids(&reader.read_view(&session.id).await.unwrap()),
        vec![answer.id.clone()]
    );
    assert_reads_current(&reader, &session.id).await;
}

#[tokio::test]
async fn raw_sql_writes_through_call_are_seen() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let (_, answer) = exchange(&store, &session, "raw").await;
    let part = store.read_all(&session.id).await.unwrap()[1].parts[0].clone();
    let mut changed = part.clone();
    changed.kind = PartKind::Text(TextPart {
        text: "changed by raw SQL".into(),
        ..TextPart::default()
    });
    let data = serde_json::to_string(&store_json(&changed)).unwrap();
    // Copy a stored part row under a new id with plain INSERT (no rev), and
    // rewrite the existing row's data with plain UPDATE.
    let (old_id, new_id) = (part.id.clone(), format!("{}z", part.id));
    store
        .call(move |c| {
            c.execute(
                "INSERT INTO part (id, message_id, session_id, type, data)
                 SELECT ?2, message_id, session_id, type, data FROM part WHERE id = ?1",
                (&old_id, &new_id),
            )
            .map_err(sql)?;
            c.execute("UPDATE part SET data = ?2 WHERE id = ?1", (&old_id, &data))
                .map_err(sql)?;
            Ok(())
        })
        .await
        .unwrap();
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context[1].message.id, answer.id);
    assert_eq!(context[1].parts.len(), 2);
    assert_eq!(context[1].parts[0], changed);
    assert_reads_current(&store, &session.id).await;
}

/// The stored JSON of a text part, as `part_json` writes it.
fn store_json(part: &Part) -> serde_json::Value {
    let PartKind::Text(text) = &part.kind else {
        panic!("text parts only");
    };
    serde_json::json!({
        "id": part.id,
        "message_id": part.message_id,
        "session_id": part.session_id,
        "type": "text",
        "kind": text,
    })
}

#[tokio::test]
async fn unchanged_rows_are_not_decoded_again() {
    let (dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    exchange(&store, &session, "cached").await;
    let before = store.read_view(&session.id).await.unwrap();
    let kept = store
        .refresh_view(LiveView::new(&session.id))
        .await
        .unwrap();
    // Garbage in every row with revisions left as they were (triggers off):
    // only a reader that decodes again can notice.
    store
        .call(|c| {
            c.execute_batch(
                "DROP TRIGGER message_rev_on_update; DROP TRIGGER part_rev_on_update;
                 UPDATE message SET data = '{garbage'; UPDATE part SET data = '{garbage';",
            )
            .map_err(sql)
        })
        .await
        .unwrap();
    assert_eq!(store.read_view(&session.id).await.unwrap(), before);
    let kept = store.refresh_view(kept).await.unwrap();
    assert_eq!(
        kept.messages(),
        before,
        "a kept read is not decoded again either"
    );
    let fresh = Store::open(&dir.path().join("data/cairn.db")).unwrap();
    let error = fresh.read_view(&session.id).await.unwrap_err();
    assert!(matches!(error, Error::Decode { .. }), "{error}");
}

#[tokio::test]
async fn interleaved_edits_and_reads_always_match_an_uncached_read() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    let mut answers: Vec<Message> = Vec::new();
    // A read kept across all the edits, as the agent loop keeps one.
    let mut kept = LiveView::new(&session.id);
    for step in 0..60 {
        match rng.u8(0..6) {
            0 | 1 => answers.push(exchange(&store, &session, &format!("step {step}")).await.1),
            2 if !answers.is_empty() => {
                let answer = &answers[rng.usize(0..answers.len())];
                store.upsert_part(&text(answer, "more")).await.unwrap();
            }
            3 if !answers.is_empty() => {
                let all = store.read_all(&session.id).await.unwrap();
                let entry = &all[rng.usize(0..all.len())];
                let mut part = entry.parts[rng.usize(0..entry.parts.len())].clone();
                part.kind = PartKind::Text(TextPart {
                    text: format!("rewritten at {step}"),
                    ..TextPart::default()
                });
                store.upsert_part(&part).await.unwrap();
            }
            4 if answers.len() > 1 => {
                let answer = answers.remove(rng.usize(0..answers.len()));
                store.delete_message(&answer.id).await.unwrap();
            }
            _ => {
                // A completed compaction point moves where the context starts.
                compact(&store, &session, true).await;
            }
        }
        assert_reads_current(&store, &session.id).await;
        kept = store.refresh_view(kept).await.unwrap();
        let (context, _) = uncached(store.path(), &session.id).await;
        assert_eq!(kept.messages(), context, "kept read after step {step}");
    }
}

/// Schema 1 as released, before row revisions.
const SCHEMA_1: &str = "
    CREATE TABLE session (
        id TEXT PRIMARY KEY NOT NULL, parent_id TEXT, directory TEXT NOT NULL,
        title TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
        cost REAL NOT NULL DEFAULT 0, tokens_input INTEGER NOT NULL DEFAULT 0,
        tokens_output INTEGER NOT NULL DEFAULT 0, tokens_reasoning INTEGER NOT NULL DEFAULT 0,
        tokens_cache_read INTEGER NOT NULL DEFAULT 0, tokens_cache_write INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX session_by_time_updated ON session (time_updated DESC, id DESC);
    CREATE INDEX session_by_directory ON session (directory, time_updated DESC, id DESC);
    CREATE INDEX session_by_parent ON session (parent_id);
    CREATE TABLE message (
        id TEXT PRIMARY KEY NOT NULL,
        session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
        role TEXT NOT NULL, time_created INTEGER NOT NULL, data TEXT NOT NULL
    );
    CREATE INDEX message_by_session ON message (session_id, id);
    CREATE TABLE part (
        id TEXT PRIMARY KEY NOT NULL,
        message_id TEXT NOT NULL REFERENCES message (id) ON DELETE CASCADE,
        session_id TEXT NOT NULL REFERENCES session (id) ON DELETE CASCADE,
        type TEXT NOT NULL, data TEXT NOT NULL
    );
    CREATE INDEX part_by_message ON part (message_id, id);
    CREATE INDEX part_by_session ON part (session_id, message_id, id);
    PRAGMA application_id = 1667328370;
    PRAGMA user_version = 1;";

const SESSION_COLUMNS: &str = "id, parent_id, directory, title, time_created, time_updated, \
     cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, data";

#[tokio::test]
async fn a_schema_1_database_migrates_keeping_its_data() {
    // Rows as this build stores them, copied into a file built by schema 1.
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.db");
    let old = dir.path().join("old.db");
    let session = session("/repo");
    let expected = {
        let store = Store::open(&source).unwrap();
        store.create_session(&session).await.unwrap();
        exchange(&store, &session, "before the upgrade").await;
        let (_, answer) = exchange(&store, &session, "second").await;
        store
            .upsert_part(&step_finish(&answer, 0.5, 2))
            .await
            .unwrap();
        store.read_all(&session.id).await.unwrap()
    };
    let expected_session = {
        let store = Store::open(&source).unwrap();
        store.get_session(&session.id).await.unwrap()
    };
    {
        let connection = rusqlite::Connection::open(&old).unwrap();
        connection.execute_batch(SCHEMA_1).unwrap();
        connection
            .execute("ATTACH DATABASE ?1 AS source", [source.to_str().unwrap()])
            .unwrap();
        connection
            .execute_batch(&format!(
                "INSERT INTO session ({SESSION_COLUMNS}) SELECT {SESSION_COLUMNS} FROM source.session;
                 INSERT INTO message (id, session_id, role, time_created, data)
                     SELECT id, session_id, role, time_created, data FROM source.message;
                 INSERT INTO part (id, message_id, session_id, type, data)
                     SELECT id, message_id, session_id, type, data FROM source.part;
                 DETACH DATABASE source;"
            ))
            .unwrap();
    }

    let store = Store::open(&old).unwrap();
    assert_eq!(store.read_all(&session.id).await.unwrap(), expected);
    assert_eq!(store.read_view(&session.id).await.unwrap(), expected);
    assert_eq!(
        store.get_session(&session.id).await.unwrap(),
        expected_session
    );
    let (version, columns): (i64, i64) = store
        .read(|c| {
            c.query_row(
                "SELECT (SELECT user_version FROM pragma_user_version),
                        (SELECT count(*) FROM pragma_table_info('part') WHERE name = 'rev')",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(sql)
        })
        .await
        .unwrap();
    assert_eq!((version, columns), (cairn::store::SCHEMA_VERSION, 1));

    // Rows migrated with revision 0 change like any other.
    let mut reworded = expected[0].parts[0].clone();
    reworded.kind = PartKind::Text(TextPart {
        text: "after the upgrade".into(),
        ..TextPart::default()
    });
    store.upsert_part(&reworded).await.unwrap();
    assert_eq!(
        store.read_all(&session.id).await.unwrap()[0].parts,
        vec![reworded]
    );
    assert_reads_current(&store, &session.id).await;
}

/// A kept read is patched by what changed; whatever moves where the context
/// starts (a new compaction point, a summary that stops counting, a deleted
/// summary, a deleted part) still gives what an uncached read gives.
#[tokio::test]
async fn a_kept_read_follows_moves_of_the_compaction_point_and_deletions() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    for step in 0..3 {
        exchange(&store, &session, &format!("before {step}")).await;
    }
    let (request, done) = compact(&store, &session, true).await;
    let (_, answer) = exchange(&store, &session, "after").await;

    let mut kept = store
        .refresh_view(LiveView::new(&session.id))
        .await
        .unwrap();
    let check = |kept: &LiveView, what: &str| {
        let kept = kept.messages().to_vec();
        let path = store.path().to_path_buf();
        let session_id = session.id.clone();
        let what = what.to_string();
        async move {
            let (context, _) = uncached(&path, &session_id).await;
            assert_eq!(ids(&kept), ids(&context), "{what}");
            assert_eq!(kept, context, "{what}");
        }
    };
    check(&kept, "first read").await;
    assert_eq!(kept.messages().len(), 4, "starts at the compaction point");

    // Nothing written: the same read comes back.
    kept = store.refresh_view(kept).await.unwrap();
    check(&kept, "nothing changed").await;

    // The summary turns out failed: the context reaches back to the start.
    let mut failed = summary(&session, &request, true);
    failed.id = done.id.clone();
    store.upsert_message(&failed).await.unwrap();
    kept = store.refresh_view(kept).await.unwrap();
    check(&kept, "failed summary").await;

    // A part deleted behind the store's back (raw SQL leaves no stamp).
    let answer_parts = store.get_message(&answer.id).await.unwrap().unwrap().parts;
    let gone = answer_parts[0].id.clone();
    store
        .call(move |c| {
            c.execute("DELETE FROM part WHERE id = ?1", [&gone])
                .map_err(sql)
        })
        .await
        .unwrap();
    kept = store.refresh_view(kept).await.unwrap();
    check(&kept, "deleted part").await;

    // A new compaction point: older messages leave the kept read.
    let (_, done) = compact(&store, &session, false).await;
    kept = store.refresh_view(kept).await.unwrap();
    check(&kept, "new compaction point").await;
    assert_eq!(kept.messages().len(), 2);

    // That summary deleted: back to the whole session.
    store.delete_message(&done.id).await.unwrap();
    kept = store.refresh_view(kept).await.unwrap();
    check(&kept, "deleted summary").await;
}
