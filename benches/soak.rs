//! The soak figures (issue 7): a scripted session of hundreds of model steps
//! through the real App, with automatic prunes and compactions, at full
//! speed. Prints step time early vs late, memory over the run, and checks
//! the tool-call pairing of every request. The CI version is
//! tests/hardening_soak.rs; both share tests/soak/mod.rs.
//!
//! Run: `cargo bench --bench soak [-- TURNS]` (default 150 turns, ~650 steps).

#[path = "../tests/common/soak/mod.rs"]
mod soak;
#[path = "../tests/common/support/mod.rs"]
#[allow(dead_code)] // the soak drives the scripted server one way of many
mod support;

const DEFAULT_TURNS: usize = 150;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --all-targets` runs bench targets without `--bench`: a
    // soak of minutes is not a test, so do nothing then.
    if !args.iter().any(|arg| arg == "--bench") {
        eprintln!("usage: cargo bench --bench soak [-- TURNS]");
        return Ok(());
    }
    let turns = match args.iter().find(|arg| !arg.starts_with("--")) {
        Some(count) => count.parse()?,
        None => DEFAULT_TURNS,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let started = std::time::Instant::now();
    let report = runtime.block_on(soak::run(turns, 110_000, 10_000, None));
    let wall = started.elapsed();
    let count = report.turns.len();
    let tenth = (count / 10).max(1);
    println!(
        "soak: {turns} turns, {} model requests ({} compaction summaries, {} requests with pruned tool results) in {:.1} s",
        report.requests,
        report.summaries,
        report.pruned_requests,
        wall.as_secs_f64()
    );
    println!(
        "step time: {:.1} ms in the first tenth of turns, {:.1} ms in the last tenth",
        report.step_time(1..1 + tenth).as_secs_f64() * 1000.0,
        report.step_time(count - tenth..count).as_secs_f64() * 1000.0
    );
    let cycles: Vec<String> = report
        .cycle_step_times()
        .iter()
        .map(|t| format!("{:.1}", t.as_secs_f64() * 1000.0))
        .collect();
    println!(
        "step time per compaction cycle (ms, first to last): {}",
        cycles.join(" ")
    );
    println!(
        "RSS: {} KiB after turn {tenth}, {} KiB at the end; peak {} KiB; largest request {} KB",
        report.turns[tenth].rss_kib,
        report.turns[count - 1].rss_kib,
        report.peak_rss_kib,
        report.largest_request / 1024
    );
    // RSS at the end of each compaction cycle: a steady rise would be memory
    // kept per step beyond the live context.
    let cycle_rss: Vec<u64> = report
        .turns
        .windows(2)
        .filter(|pair| pair[1].summaries_before > pair[0].summaries_before)
        .map(|pair| pair[0].rss_kib)
        .collect();
    let listed: Vec<String> = cycle_rss
        .iter()
        .map(|kib| (kib / 1024).to_string())
        .collect();
    println!(
        "RSS at the end of each compaction cycle (MiB): {}",
        listed.join(" ")
    );
    // The live context is bounded by the window, so after the first cycles
    // RSS should stay flat; a steady slope is memory kept per step.
    if let (Some(second), Some(last)) = (cycle_rss.get(1), cycle_rss.last())
        && cycle_rss.len() > 3
    {
        let per_cycle = (*last as f64 - *second as f64) / (cycle_rss.len() - 2) as f64;
        println!(
            "RSS growth after the first cycle: {per_cycle:.0} KiB per compaction cycle ({})",
            if per_cycle > 256.0 {
                "GROWS with the session's age"
            } else {
                "flat"
            }
        );
    }
    let failed = report.exit_codes.iter().filter(|code| **code != 0).count();
    println!(
        "pairing violations: {}; failed turns: {failed}",
        report.violations.len()
    );
    for violation in report.violations.iter().take(10) {
        println!("  {violation}");
    }
    anyhow::ensure!(
        report.violations.is_empty() && failed == 0,
        "the soak broke an invariant"
    );
    Ok(())
}
