//! `Store::read_view`: newest-first reading that stops at the last
//! completed compaction point (or its kept tail), proved not to touch older
//! rows by poisoning them: rows in pages beyond the stop point become blobs
//! that cannot even be fetched as text, older rows inside the stop point's
//! page become JSON garbage that cannot be decoded.

use crate::store_support;

use cairn::message::*;
use cairn::store::{CONTEXT_PAGE, Error, Store};
use store_support::*;

/// Builds `exchanges` user/assistant pairs (2 parts each) as one batch.
fn exchanges(session: &Session, exchanges: usize) -> Vec<MessageWithParts> {
    let mut history = Vec::new();
    for i in 0..exchanges {
        let question = user(session);
        let answer = reply(session, &question);
        let parts = vec![text(&question, &format!("q{i}")), text(&question, "more")];
        history.push(MessageWithParts {
            message: question,
            parts,
        });
        let parts = vec![text(&answer, "a"), step_finish(&answer, 0.5, 1)];
        history.push(MessageWithParts {
            message: answer,
            parts,
        });
    }
    history
}

/// A compaction request (with an optional kept tail) and its summary.
fn compaction_point(
    session: &Session,
    tail_start_id: Option<&str>,
    failed: bool,
) -> Vec<MessageWithParts> {
    let request = user(session);
    let summary = summary(session, &request, failed);
    let parts = vec![compaction(&request, tail_start_id)];
    let summary_parts = vec![text(&summary, "We fixed the parser; next: tests.")];
    vec![
        MessageWithParts {
            message: request,
            parts,
        },
        MessageWithParts {
            message: summary,
            parts: summary_parts,
        },
    ]
}

/// Makes every message older than `history[stop]` (and its parts) unreadable:
/// those in the same page as the stop point (counting pages from the newest
/// message, as `read_view` does) get invalid JSON, older pages get blobs.
async fn poison_older_than(store: &Store, history: &[MessageWithParts], stop: usize) {
    let stop_page = (history.len() - 1 - stop) / CONTEXT_PAGE;
    let mut garbage = Vec::new();
    for (index, entry) in history[..stop].iter().enumerate() {
        let page = (history.len() - 1 - index) / CONTEXT_PAGE;
        let mut ids = vec![entry.message.id.clone()];
        ids.extend(entry.parts.iter().map(|p| p.id.clone()));
        garbage.push((ids, page == stop_page));
    }
    store
        .call(move |connection| {
            let sqlite = |source| Error::Sqlite {
                operation: "poison rows",
                source,
            };
            for (ids, same_page) in &garbage {
                let value: &dyn rusqlite::ToSql = if *same_page {
                    &"{not json"
                } else {
                    &vec![0u8, 159, 146, 150]
                };
                connection
                    .execute(
                        "UPDATE message SET data = ?2 WHERE id = ?1",
                        (&ids[0], value),
                    )
                    .map_err(sqlite)?;
                for part in &ids[1..] {
                    connection
                        .execute("UPDATE part SET data = ?2 WHERE id = ?1", (part, value))
                        .map_err(sqlite)?;
                }
            }
            Ok(())
        })
        .await
        .unwrap();
}

async fn store_with(history: &[MessageWithParts], session: &Session) -> (tempfile::TempDir, Store) {
    let (dir, store) = open_temp();
    store.create_session(session).await.unwrap();
    store.upsert_messages(history).await.unwrap();
    (dir, store)
}

#[tokio::test]
async fn a_session_never_compacted_is_read_whole_oldest_first() {
    let session = session("/repo");
    let history = exchanges(&session, CONTEXT_PAGE + 7);
    let (_dir, store) = store_with(&history, &session).await;
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context, history);
    assert_eq!(store.read_all(&session.id).await.unwrap(), history);
    assert!(store.read_view("ses_empty").await.unwrap().is_empty());
}

#[tokio::test]
async fn reading_stops_at_the_completed_compaction_point_without_touching_older_rows() {
    // Newer exchanges after the point: the request lands last in a page,
    // first in the next page, or several pages back.
    for newer in [0, 1, 24, 25, 60] {
        let session = session("/repo");
        let mut history = exchanges(&session, 130);
        let stop = history.len();
        history.extend(compaction_point(&session, None, false));
        history.extend(exchanges(&session, newer));
        let (_dir, store) = store_with(&history, &session).await;
        poison_older_than(&store, &history, stop).await;

        let context = store.read_view(&session.id).await.unwrap();
        assert_eq!(context, history[stop..], "with {newer} newer exchanges");
        assert!(context[0].compaction().is_some());
        assert!(context[1].is_completed_summary());
        // The poison is real: reading everything fails on it.
        let error = store.read_all(&session.id).await.unwrap_err();
        assert!(
            matches!(error, Error::Decode { .. } | Error::Sqlite { .. }),
            "{error:?}"
        );
    }
}

#[tokio::test]
async fn a_kept_tail_is_read_back_to_its_first_message() {
    let session = session("/repo");
    let mut history = exchanges(&session, 90);
    let tail_start = history.len() - 6; // the last three exchanges are kept verbatim
    let tail_id = history[tail_start].message.id.clone();
    history.extend(compaction_point(&session, Some(&tail_id), false));
    history.extend(exchanges(&session, 3));
    let (_dir, store) = store_with(&history, &session).await;
    poison_older_than(&store, &history, tail_start).await;

    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context, history[tail_start..]);
    assert_eq!(context[0].message.id, tail_id);
}

#[tokio::test]
async fn a_failed_or_unanswered_compaction_is_not_a_stop_point() {
    let session = session("/repo");
    let mut history = exchanges(&session, 70);
    let completed = history.len();
    history.extend(compaction_point(&session, None, false));
    history.extend(exchanges(&session, 30));
    // The summary of this request ended in an error...
    history.extend(compaction_point(&session, None, true));
    history.extend(exchanges(&session, 2));
    // ...and this request has no summary yet.
    let pending = compaction_point(&session, None, false);
    history.push(pending[0].clone());
    let (_dir, store) = store_with(&history, &session).await;
    poison_older_than(&store, &history, completed).await;

    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context, history[completed..]);
}

#[tokio::test]
async fn the_newest_completed_point_wins_over_older_ones() {
    let session = session("/repo");
    let mut history = exchanges(&session, 10);
    history.extend(compaction_point(&session, None, false));
    history.extend(exchanges(&session, 10));
    let latest = history.len();
    history.extend(compaction_point(&session, None, false));
    history.extend(exchanges(&session, 1));
    let (_dir, store) = store_with(&history, &session).await;
    poison_older_than(&store, &history, latest).await;
    let context = store.read_view(&session.id).await.unwrap();
    assert_eq!(context, history[latest..]);
}

#[tokio::test]
async fn context_reads_see_writes_made_just_before() {
    let session = session("/repo");
    let history = exchanges(&session, 3);
    let (_dir, store) = store_with(&history, &session).await;
    let point = compaction_point(&session, None, false);
    for entry in &point {
        store.upsert_message(&entry.message).await.unwrap();
        store.upsert_parts(&entry.parts).await.unwrap();
    }
    assert_eq!(store.read_view(&session.id).await.unwrap(), point);
}
