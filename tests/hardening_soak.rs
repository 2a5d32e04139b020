//! The soak for CI (issue 7): a scripted session of dozens of turns (over a
//! hundred model steps) through the real App, with automatic prunes and
//! compactions along the way. Every request keeps the tool-call pairing, no
//! turn fails, and memory and step time do not grow with the session's age.
//! The long version with figures: `cargo bench --bench soak`.

mod soak;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_keeps_pairing_memory_and_speed() {
    let report = soak::run(28, 110_000, 10_000).await;
    let turns = report.turns.len();
    let tenth = (turns / 6).max(1);
    let early = report.step_time(1..1 + tenth);
    let late = report.step_time(turns - tenth..turns);
    eprintln!(
        "soak: {} requests in {turns} turns, {} summaries, {} requests with pruned results, largest request {} KB; step {early:?} early, {late:?} late; RSS {} -> {} KiB, peak {} KiB",
        report.requests,
        report.summaries,
        report.pruned_requests,
        report.largest_request / 1024,
        report.turns[tenth].rss_kib,
        report.turns[turns - 1].rss_kib,
        report.peak_rss_kib
    );
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(
        report.exit_codes.iter().all(|code| *code == 0),
        "{:?}",
        report.exit_codes
    );
    assert!(report.requests >= 110, "{} requests", report.requests);
    assert!(report.summaries >= 2, "{} compactions", report.summaries);
    assert!(report.pruned_requests >= 1, "never pruned");
    // The context is bounded by the window, so the requests are too.
    assert!(
        report.largest_request < 60_000 * 4 * 2,
        "{} bytes",
        report.largest_request
    );
    let grown = report.turns[turns - 1].rss_kib as i64 - report.turns[tenth].rss_kib as i64;
    assert!(
        grown < 40 * 1024,
        "memory grew by {grown} KiB over the session"
    );
    assert!(
        late < early * 4 + std::time::Duration::from_millis(50),
        "steps slowed down: {early:?} early, {late:?} late"
    );
}
