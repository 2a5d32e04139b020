//! The TUI's transcript is paged from the store (issue #18): a long session
//! opens with its newest page, and older pages are read as the user scrolls
//! back. Driven with the real App, view and store: PageUp frame by frame from
//! the bottom of a 5,000-message session to its top, serving each page the
//! App asks for from the store the way the runner does.

use std::collections::BTreeSet;
use std::sync::Arc;

use cairn::bus::Event;
use cairn::message::{FinishReason, MessageWithParts, Part, PartKind, Session};
use cairn::store::Store;
use cairn::tui::action::Action;
use cairn::tui::app::{App, AppInit, Effect};
use cairn::tui::update::update;
use cairn::tui::{HISTORY_PAGE, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::history;
use crate::store_support;

const MESSAGES: usize = 5_000;

/// Writes `MESSAGES` messages (question `n` / answer `n`) through the store's
/// own write path.
async fn long_session(store: &Store) -> Session {
    let session = store_support::session("/repo");
    store.create_session(&session).await.unwrap();
    let mut messages = Vec::with_capacity(MESSAGES);
    for n in 0..MESSAGES / 2 {
        let question = history::user(&session.id, &format!("question {n:05}"));
        let mut answer = history::assistant(&session.id, &question.message.id, FinishReason::Stop);
        history::push(&mut answer, history::text(format!("answer {n:05}")));
        messages.push(question);
        messages.push(answer);
    }
    for batch in messages.chunks(500) {
        store.upsert_messages(batch).await.unwrap();
    }
    session
}

fn open_app(session: Session, newest: Vec<MessageWithParts>) -> App {
    App::new(AppInit {
        session,
        has_older: newest.len() >= HISTORY_PAGE,
        history: newest,
        model_label: "scripted/test-model".into(),
        agent: "build".into(),
        gauge: None,
        first_run: None,
        models: vec![],
        sessions: vec![],
        now: 0,
    })
}

/// Draws a frame and returns the question and answer numbers on screen, top
/// to bottom, as `(n, is_answer)`.
fn frame(terminal: &mut Terminal<TestBackend>, app: &mut App) -> Vec<(usize, bool)> {
    terminal
        .draw(|frame| {
            view::prepare(app, frame.area());
            view::draw(app, frame);
        })
        .unwrap();
    app.viewport
        .rows
        .iter()
        .filter_map(|line| {
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            let (is_answer, at) = match (text.find("question "), text.find("answer ")) {
                (Some(at), _) => (false, at + "question ".len()),
                (None, Some(at)) => (true, at + "answer ".len()),
                (None, None) => return None,
            };
            let n = text.get(at..at + 5)?.parse().ok()?;
            Some((n, is_answer))
        })
        .collect()
}

/// Serves the page the App asks for after a frame, as the runner does.
async fn serve_older(store: &Store, app: &mut App) -> bool {
    let Some(Effect::LoadOlder(before)) = app.older_wanted() else {
        return false;
    };
    let page = store
        .messages_before(&app.session.id, Some(&before), HISTORY_PAGE)
        .await
        .unwrap();
    let has_older = page.len() >= HISTORY_PAGE;
    app.older_loaded(page, has_older);
    true
}

#[tokio::test]
async fn scrolling_to_the_top_shows_every_message_once_in_order() {
    let (_dir, store) = store_support::open_temp();
    let session = long_session(&store).await;
    let newest = store
        .messages_before(&session.id, None, HISTORY_PAGE)
        .await
        .unwrap();
    assert_eq!(newest.len(), HISTORY_PAGE, "opening reads one page");
    let mut app = open_app(session.clone(), newest);
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();

    let mut seen = BTreeSet::new();
    let mut previous_top = usize::MAX;
    let mut pages_read = 0;
    let mut appended = None;
    for step in 0..20_000 {
        let shown = frame(&mut terminal, &mut app);
        // On screen: each exchange at most once, question above its answer,
        // older above newer.
        let mut expected: Vec<(usize, bool)> = shown.clone();
        expected.sort();
        expected.dedup();
        assert_eq!(shown, expected, "frame {step} is out of order");
        if let Some(&(top, _)) = shown.first() {
            assert!(top <= previous_top, "frame {step} jumped down to {top}");
            previous_top = top;
        }
        seen.extend(shown.iter().copied());
        if serve_older(&store, &mut app).await {
            pages_read += 1;
        }
        if step == 40 {
            appended = Some(append_to_newest_answer(&store, &mut app).await);
        }
        if shown.first() == Some(&(0, false)) && app.timeline.older_than().is_none() {
            break;
        }
        update(&mut app, Action::PageUp);
    }
    let every: BTreeSet<(usize, bool)> = (0..MESSAGES / 2)
        .flat_map(|n| [(n, false), (n, true)])
        .collect();
    assert_eq!(seen, every, "every message was shown");
    assert!(
        pages_read >= MESSAGES / HISTORY_PAGE - 1,
        "{pages_read} pages"
    );

    // The part written while the user read older pages is in its place.
    update(&mut app, Action::ScrollBottom);
    frame(&mut terminal, &mut app);
    let rows: Vec<String> = app
        .viewport
        .rows
        .iter()
        .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    let appended = appended.expect("a part was appended");
    let at = rows
        .iter()
        .position(|row| row.contains(&appended))
        .unwrap_or_else(|| panic!("{appended} not at the bottom: {rows:#?}"));
    let answer = rows
        .iter()
        .position(|row| row.contains(&format!("answer {:05}", MESSAGES / 2 - 1)))
        .expect("the newest answer is at the bottom");
    assert!(answer < at, "the new part follows its message: {rows:#?}");
}

/// Writes a new part on the newest answer and applies its bus event, as the
/// loop would while the user is scrolled up.
async fn append_to_newest_answer(store: &Store, app: &mut App) -> String {
    let newest = store
        .messages_before(&app.session.id, None, 1)
        .await
        .unwrap()
        .remove(0);
    let text = "a late note on the newest answer".to_string();
    let part = Part::new(&newest.message, history::text(text.clone()));
    store.upsert_part(&part).await.unwrap();
    app.apply_event(&Event::PartUpdated {
        part: Arc::new(part),
    });
    assert!(matches!(
        app.timeline
            .messages()
            .last()
            .unwrap()
            .parts
            .last()
            .unwrap()
            .kind,
        PartKind::Text(_)
    ));
    text
}

#[tokio::test]
async fn updates_to_messages_not_loaded_are_left_to_the_store() {
    let (_dir, store) = store_support::open_temp();
    let session = long_session(&store).await;
    let newest = store
        .messages_before(&session.id, None, HISTORY_PAGE)
        .await
        .unwrap();
    let mut app = open_app(session.clone(), newest);
    let oldest = store
        .messages_before(&session.id, app.timeline.older_than(), 1)
        .await
        .unwrap()
        .remove(0);
    // Prune marking an old tool output compacted sends such an update.
    let part = Part::new(&oldest.message, history::text("pruned"));
    app.apply_event(&Event::PartUpdated {
        part: Arc::new(part),
    });
    assert_eq!(app.timeline.messages().len(), HISTORY_PAGE);
    assert!(
        app.timeline
            .messages()
            .iter()
            .all(|m| m.message.id != oldest.message.id)
    );
}
