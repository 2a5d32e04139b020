//! The session store against real SQLite files in temp dirs: round trips of
//! every message and part shape, sessions, totals, paging, and the errors a
//! user sees for damaged, foreign or newer database files.

use crate::store_support;

use std::os::unix::fs::PermissionsExt;

use cairn::message::*;
use cairn::store::{Error, SCHEMA_VERSION, Store};
use store_support::*;

#[tokio::test]
async fn every_part_kind_and_both_roles_round_trip() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let question = user(&session);
    let answer = assistant(&session, &question);
    let parts = every_part_kind(&answer);
    assert_eq!(parts.len(), 12, "8 kinds + 4 tool states");

    store.upsert_message(&question).await.unwrap();
    store.upsert_message(&answer).await.unwrap();
    store.upsert_parts(&parts).await.unwrap();
    let user_text = text(&question, "run the tests");
    store.upsert_part(&user_text).await.unwrap();

    let read = store.get_message(&answer.id).await.unwrap().unwrap();
    assert_eq!(read.message, answer);
    assert_eq!(read.parts, parts);
    let read = store.get_message(&question.id).await.unwrap().unwrap();
    assert_eq!(read.message, question);
    assert_eq!(read.parts, vec![user_text]);
    assert_eq!(store.get_message("msg_missing").await.unwrap(), None);

    let all = store.read_all(&session.id).await.unwrap();
    assert_eq!(ids(&all), vec![question.id.clone(), answer.id.clone()]);
    assert_eq!(all[1].parts, parts);
}

#[tokio::test]
async fn parts_come_back_in_id_order_whatever_the_write_order() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let message = user(&session);
    store.upsert_message(&message).await.unwrap();
    let parts: Vec<Part> = (0..20).map(|i| text(&message, &format!("{i}"))).collect();
    for part in parts.iter().rev() {
        store.upsert_part(part).await.unwrap();
    }
    let read = store.get_message(&message.id).await.unwrap().unwrap();
    assert_eq!(read.parts, parts);
}

#[tokio::test]
async fn upserts_update_in_place_and_keep_the_parts() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let question = user(&session);
    let mut answer = assistant(&session, &question);
    store.upsert_message(&question).await.unwrap();
    store.upsert_message(&answer).await.unwrap();
    let mut part = text(&answer, "partial");
    store.upsert_part(&part).await.unwrap();

    let PartKind::Text(body) = &mut part.kind else {
        unreachable!()
    };
    body.text = "partial answer, now complete".into();
    store.upsert_part(&part).await.unwrap();
    answer.as_assistant_mut().unwrap().finish = Some(FinishReason::Stop);
    store.upsert_message(&answer).await.unwrap();

    let read = store.get_message(&answer.id).await.unwrap().unwrap();
    assert_eq!(read.message, answer);
    assert_eq!(
        read.parts,
        vec![part],
        "an upsert must not cascade-delete parts"
    );
}

#[tokio::test]
async fn sessions_are_listed_newest_updated_first_and_continue_skips_subagents() {
    let (_dir, store) = open_temp();
    let mut older = session("/repo");
    older.time_updated = 1_000;
    let mut other_dir = session("/elsewhere");
    other_dir.time_updated = 2_000;
    let mut newer = session("/repo");
    newer.time_updated = 3_000;
    let mut child = session("/repo");
    child.parent_id = Some(newer.id.clone());
    child.time_updated = 4_000;
    for s in [&older, &other_dir, &newer, &child] {
        store.create_session(s).await.unwrap();
    }
    let listed: Vec<String> = store
        .list_sessions(10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        listed,
        [&child.id, &newer.id, &other_dir.id, &older.id].map(String::clone)
    );
    assert_eq!(store.list_sessions(2).await.unwrap().len(), 2);
    let latest = store.latest_session("/repo").await.unwrap().unwrap();
    assert_eq!(latest, newer);
    assert_eq!(store.latest_session("/nowhere").await.unwrap(), None);

    // A new message makes the older session the latest one.
    exchange(&store, &older, "back to this").await;
    let latest = store.latest_session("/repo").await.unwrap().unwrap();
    assert_eq!(latest.id, older.id);
    assert!(latest.time_updated > 4_000);
    assert_eq!(store.list_sessions(1).await.unwrap()[0].id, older.id);
}

#[tokio::test]
async fn update_session_changes_the_title_but_not_the_totals() {
    let (_dir, store) = open_temp();
    let mut session = session("/repo");
    store.create_session(&session).await.unwrap();
    let question = user(&session);
    store.upsert_message(&question).await.unwrap();
    store
        .upsert_part(&step_finish(&question, 0.5, 1))
        .await
        .unwrap();

    session.title = "Fix the flaky login test".into();
    session.cost = 99.0; // ignored: totals belong to the store
    store.update_session(&session).await.unwrap();
    let read = store.get_session(&session.id).await.unwrap().unwrap();
    assert_eq!(read.title, "Fix the flaky login test");
    assert_eq!(read.cost, 0.5);

    let missing = Session {
        id: "ses_missing".into(),
        ..session.clone()
    };
    let error = store.update_session(&missing).await.unwrap_err();
    assert!(matches!(error, Error::SessionNotFound { ref id, .. } if id == "ses_missing"));
    assert_eq!(store.get_session("ses_missing").await.unwrap(), None);
}

#[tokio::test]
async fn session_totals_follow_step_finish_inserts_and_updates() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    let other = session_in_same_store(&store).await;
    store.create_session(&session).await.unwrap();
    let question = user(&session);
    let answer = reply(&session, &question);
    store.upsert_message(&question).await.unwrap();
    store.upsert_message(&answer).await.unwrap();

    let first = step_finish(&answer, 0.5, 1);
    let mut second = step_finish(&answer, 0.25, 2);
    store.upsert_part(&first).await.unwrap();
    store.upsert_parts(&[second.clone()]).await.unwrap();
    store
        .upsert_part(&text(&answer, "not a step"))
        .await
        .unwrap();
    let read = store.get_session(&session.id).await.unwrap().unwrap();
    assert_eq!(read.cost, 0.75);
    assert_eq!(read.tokens, tokens(3).saturating_add(&Tokens::default()));

    // Rewriting a step replaces its contribution instead of adding it again.
    let PartKind::StepFinish(step) = &mut second.kind else {
        unreachable!()
    };
    step.cost = 2.0;
    step.tokens = tokens(10);
    store.upsert_part(&second).await.unwrap();
    store.upsert_part(&second).await.unwrap();
    let read = store.get_session(&session.id).await.unwrap().unwrap();
    assert_eq!(read.cost, 2.5);
    assert_eq!(read.tokens.input, 110);
    assert_eq!(read.tokens.cache.read, 440);

    // A step-finish turned into another kind no longer counts.
    let replaced = Part {
        kind: text(&answer, "x").kind,
        ..first.clone()
    };
    store.upsert_part(&replaced).await.unwrap();
    let read = store.get_session(&session.id).await.unwrap().unwrap();
    assert_eq!(read.cost, 2.0);
    assert_eq!(read.tokens.output, 200);
    assert_eq!(read.tokens.reasoning, 30);
    assert_eq!(read.tokens.cache.write, 50);
    let listed = store.list_sessions(10).await.unwrap();
    let listed = listed.iter().find(|s| s.id == session.id).unwrap();
    assert_eq!(listed.cost, 2.0);
    let untouched = store.get_session(&other.id).await.unwrap().unwrap();
    assert_eq!((untouched.cost, untouched.tokens), (0.0, Tokens::default()));
}

async fn session_in_same_store(store: &Store) -> Session {
    let other = session("/other");
    store.create_session(&other).await.unwrap();
    other
}

#[tokio::test]
async fn messages_before_pages_back_newest_first() {
    let (_dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let mut written = Vec::new();
    for i in 0..7 {
        let (question, answer) = exchange(&store, &session, &format!("q{i}")).await;
        written.push(question.id);
        written.push(answer.id);
    }
    written.reverse();
    let first = store.messages_before(&session.id, None, 5).await.unwrap();
    assert_eq!(ids(&first), written[..5]);
    assert!(first.iter().all(|m| m.parts.len() == 1));
    let second = store
        .messages_before(&session.id, Some(&written[4]), 5)
        .await
        .unwrap();
    assert_eq!(ids(&second), written[5..10]);
    let rest = store
        .messages_before(&session.id, Some(&written[9]), 50)
        .await
        .unwrap();
    assert_eq!(ids(&rest), written[10..]);
}

#[tokio::test]
async fn deleting_a_session_removes_its_messages_parts_and_subagent_sessions() {
    let (_dir, store) = open_temp();
    let parent = session("/repo");
    let mut child = session("/repo");
    child.parent_id = Some(parent.id.clone());
    let kept = session("/repo");
    for s in [&parent, &child, &kept] {
        store.create_session(s).await.unwrap();
    }
    let (question, _) = exchange(&store, &parent, "hi").await;
    exchange(&store, &child, "sub").await;
    exchange(&store, &kept, "stay").await;

    assert!(store.delete_session(&parent.id).await.unwrap());
    assert!(!store.delete_session(&parent.id).await.unwrap());
    assert_eq!(store.get_session(&child.id).await.unwrap(), None);
    assert_eq!(store.get_message(&question.id).await.unwrap(), None);
    let counts: (i64, i64) = store
        .read(|connection| {
            connection
                .query_row(
                    "SELECT (SELECT count(*) FROM message), (SELECT count(*) FROM part)",
                    [],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .map_err(|source| Error::Sqlite {
                    operation: "count rows",
                    source,
                })
        })
        .await
        .unwrap();
    assert_eq!(counts, (2, 2), "only the kept session's exchange remains");
    assert_eq!(store.read_all(&kept.id).await.unwrap().len(), 2);
}

#[tokio::test]
async fn writing_into_a_missing_session_or_message_names_the_parent() {
    let (_dir, store) = open_temp();
    let ghost = session("/repo");
    let message = user(&ghost);
    let error = store.upsert_message(&message).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::MissingParent {
                what: "message",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains(&ghost.id), "{error}");

    store.create_session(&ghost).await.unwrap();
    let error = store.upsert_part(&text(&message, "x")).await.unwrap_err();
    assert!(error.to_string().contains(&message.id), "{error}");
    // The batch is all or nothing.
    store.upsert_message(&message).await.unwrap();
    let orphan = text(&user(&ghost), "orphan");
    let good = text(&message, "good");
    assert!(store.upsert_parts(&[good, orphan]).await.is_err());
    let read = store.get_message(&message.id).await.unwrap().unwrap();
    assert!(read.parts.is_empty());
}

#[tokio::test]
async fn the_database_files_are_private_to_the_owner() {
    let (dir, store) = open_temp();
    let session = session("/repo");
    store.create_session(&session).await.unwrap();
    let db = dir.path().join("data/cairn.db");
    for path in [
        db.clone(),
        db.with_extension("db-wal"),
        db.with_extension("db-shm"),
    ] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
    }
    let dir_mode = std::fs::metadata(dir.path().join("data"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o077, 0);
    let journal: String = store
        .read(|c| {
            c.query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(|source| Error::Sqlite {
                    operation: "journal mode",
                    source,
                })
        })
        .await
        .unwrap();
    assert_eq!(journal, "wal");
}

#[tokio::test]
async fn reopening_keeps_everything_and_does_not_migrate_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let session = session("/repo");
    {
        let store = Store::open(&path).unwrap();
        store.create_session(&session).await.unwrap();
        exchange(&store, &session, "persist me").await;
    }
    let store = Store::open(&path).unwrap();
    let all = store.read_all(&session.id).await.unwrap();
    assert_eq!(all.len(), 2);
    let version: i64 = store
        .read(|c| {
            c.query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(|source| Error::Sqlite {
                    operation: "user version",
                    source,
                })
        })
        .await
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

#[test]
fn random_bytes_are_reported_as_a_corrupt_file_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let garbage: Vec<u8> = (0..8192).map(|_| fastrand::u8(..)).collect();
    std::fs::write(&path, &garbage).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { path: p, .. } if p == &path),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("move it aside"), "{message}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        garbage,
        "the file is left alone"
    );
}

#[test]
fn a_database_of_another_program_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    let foreign = rusqlite::Connection::open(&path).unwrap();
    foreign
        .execute_batch("CREATE TABLE session (x); INSERT INTO session VALUES (1);")
        .unwrap();
    drop(foreign);
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { path: p, .. } if p == &path),
        "{error:?}"
    );
    assert!(error.to_string().contains("another program"), "{error}");
}

#[test]
fn a_database_from_a_newer_cairn_is_refused_with_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cairn.db");
    drop(Store::open(&path).unwrap());
    let newer = SCHEMA_VERSION + 3;
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .pragma_update(None, "user_version", newer)
        .unwrap();
    drop(connection);

    let error = Store::open(&path).unwrap_err();
    match &error {
        Error::NewerSchema {
            path: p,
            found,
            supported,
        } => {
            assert_eq!(p, &path);
            assert_eq!((*found, *supported), (newer, SCHEMA_VERSION));
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert!(error.to_string().contains(&path.display().to_string()));
}
