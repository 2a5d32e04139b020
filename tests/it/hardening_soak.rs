//! The soak for CI (issue 7): a scripted session of dozens of turns (over a
//! hundred model steps) through the real App, with automatic prunes and
//! compactions along the way. Every request keeps the tool-call pairing, no
//! turn fails, and memory and step time do not grow with the session's age.
//! The long version with figures: `cargo bench --bench soak`.

use crate::soak;

/// RSS is per process and the suite's tests share this one: the soak runs
/// alone in a child process of this binary so that the memory it measures
/// is its own, not that of the tests running beside it.
#[test]
fn a_long_session_keeps_pairing_memory_and_speed() {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "hardening_soak::soak_in_its_own_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .status()
        .unwrap();
    assert!(status.success(), "the soak failed: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_long_session_keeps_pairing_memory_and_speed in a process of its own"]
async fn soak_in_its_own_process() {
    // Stops once it has seen two compactions and a few pruned requests.
    let enough = soak::Enough {
        summaries: 2,
        pruned_requests: 3,
    };
    let report = soak::run(40, 110_000, 10_000, Some(enough)).await;
    let turns = report.turns.len();
    let tenth = (turns / 6).max(1);
    let cycles = report.cycle_step_times();
    eprintln!(
        "soak: {} requests in {turns} turns, {} summaries, {} requests with pruned results, largest request {} KB; step time per compaction cycle {cycles:?}; RSS {} -> {} KiB, peak {} KiB",
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
    assert!(report.requests >= 60, "{} requests", report.requests);
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
    let (Some(first), Some(last)) = (cycles.first(), cycles.last()) else {
        panic!("no complete compaction cycle: {cycles:?}");
    };
    assert!(
        *last < *first * 2 + std::time::Duration::from_millis(50),
        "steps slowed down with the session's age: {cycles:?}"
    );
}
