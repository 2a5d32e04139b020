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
    at_widths("welcome", 16, || {
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
