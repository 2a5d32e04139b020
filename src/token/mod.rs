//! Token counting and context-window arithmetic; pure functions, no I/O.
//!
//! `count_exact`/`count` give tiktoken's `o200k_base` counts from a compact
//! counter (`o200k`, about 3 MB instead of tiktoken-rs's 50), built once and
//! lazily (never on the path to a first frame); `estimate` is the fallback that
//! does not undercount Chinese. `budget` turns model limits into the gauge and
//! the overflow decision, `calibration` scales our counts to other tokenizers,
//! `accounting` anchors the next request's size on provider-reported usage.

mod calibration;
mod estimate;
pub mod o200k;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use o200k::O200k;

pub use calibration::Calibration;
pub use estimate::estimate;

static ENCODER: OnceLock<O200k> = OnceLock::new();
static WARM_UP_STARTED: AtomicBool = AtomicBool::new(false);

fn encoder() -> &'static O200k {
    ENCODER.get_or_init(O200k::new)
}

/// Builds the encoder on a background thread (tens of ms, about 3 MB), once.
/// Call it after the first frame is drawn; later calls do nothing.
pub fn warm_up() {
    if ENCODER.get().is_some() || WARM_UP_STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    std::thread::Builder::new()
        .name("tokenizer-warm-up".into())
        .spawn(|| {
            encoder();
        })
        .map(drop)
        .unwrap_or_else(|error| {
            // Without a thread the first blocking `count` builds it instead.
            tracing::warn!("cannot start the tokenizer warm-up thread: {error}");
        });
}

/// Whether `count_exact` can answer now.
pub fn is_ready() -> bool {
    ENCODER.get().is_some()
}

/// The exact `o200k_base` count, or `None` while the encoder is not built yet
/// (callers then use [`estimate`] and mark the figure as estimated).
pub fn count_exact(text: &str) -> Option<usize> {
    ENCODER.get().map(|bpe| bpe.count(text))
}

/// The exact `o200k_base` count; builds the encoder first if needed, which
/// blocks for tens of ms. For tests, benches and background threads.
pub fn count(text: &str) -> usize {
    encoder().count(text)
}

/// The exact count when ready, else the estimate; the flag says which.
pub fn count_or_estimate(text: &str) -> (usize, bool) {
    match count_exact(text) {
        Some(exact) => (exact, false),
        None => (estimate(text), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_up_builds_the_encoder_in_the_background() {
        warm_up();
        warm_up();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !is_ready() {
            assert!(
                std::time::Instant::now() < deadline,
                "encoder not built in 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(count_exact("上下文"), Some(count("上下文")));
    }

    #[test]
    fn exact_count_matches_known_o200k_tokenizations() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert!(count_exact("hello world").is_some());
        let (n, estimated) = count_or_estimate("hello world");
        assert_eq!((n, estimated), (2, false));
    }
}
