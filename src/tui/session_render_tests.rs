//! Snapshot tests of the session screens of issue #17 (welcome, notices,
//! /sessions, /context's difference row) at 120, 60 and 40 columns. Each
//! snapshot was reviewed by eye: it must show what its name claims.

use insta::assert_snapshot;

use super::fixtures::*;

/// The three widths issue #17 asks each screen at.
const WIDTHS: [u16; 3] = [120, 60, 40];

fn at_widths(name: &str, height: u16, mut make: impl FnMut() -> super::app::App) {
    for width in WIDTHS {
        let mut app = make();
        // The welcome names the version: snapshots outlive a release.
        let version = env!("CARGO_PKG_VERSION");
        let screen = render(&mut app, width, height).replace(version, &"V".repeat(version.len()));
        assert_snapshot!(format!("{name}_{width}"), screen);
    }
}

#[test]
fn a_new_session_opens_with_the_welcome_and_the_new_notice() {
    at_widths("welcome", 18, || {
        let mut app = app(Vec::new());
        app.flash = Some("new session started".into());
        app
    });
}

#[test]
fn the_welcome_gives_way_to_the_transcript_once_something_is_sent() {
    let mut app = app(Vec::new());
    assert!(render(&mut app, 60, 16).contains("directory"));
    let mut app = super::fixtures::app(exchange(1));
    let screen = render(&mut app, 60, 16);
    assert!(!screen.contains("directory"), "{screen}");
    assert!(screen.contains("question number 1"), "{screen}");
}

/// The provider counted 12k more than cairn: a row of its own, and the
/// categories keep cairn's counts (tool definitions stay 9k, not 55k).
#[test]
fn context_shows_the_provider_difference_as_its_own_row() {
    at_widths("context_difference", 24, || {
        let mut app = app(exchange(1));
        app.overlay = Some(super::app::Overlay::Context(Some(
            crate::context::ContextBreakdown {
                categories: vec![
                    ("system prompt".into(), 3_000),
                    ("instruction files".into(), 1_000),
                    ("tool definitions".into(), 9_000),
                    ("summary".into(), 0),
                    ("messages".into(), 17_000),
                    ("tool outputs".into(), 20_000),
                ],
                difference: 12_000,
                prunable: 0,
                gauge: gauge(62_000),
                last_compaction: None,
                last_cache: None,
                notes: Vec::new(),
            },
        )));
        app
    });
}
