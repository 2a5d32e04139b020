//! Retrying failed model calls: exponential backoff (2 s doubling, capped at
//! 30 s) unless the server said how long to wait, a bounded number of
//! attempts, and cancellation at any point.
//!
//! Each wait is announced through a caller-supplied callback so the session
//! can show a countdown; this module never publishes anything itself.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::error::Error;

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub initial_delay: Duration,
    /// Backoff cap when the server gave no wait.
    pub max_delay: Duration,
    /// A server asking for a longer wait than this is not waited for: the
    /// user is better served by an error they can act on than a frozen turn.
    pub max_server_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            initial_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(30),
            max_server_delay: Duration::from_secs(600),
        }
    }
}

/// One announced wait before retry number `attempt` (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    pub attempt: u32,
    /// Why: the failed attempt's message for users.
    pub message: String,
    /// Wall-clock time of the next attempt, in milliseconds since the epoch.
    pub next_at_millis: u64,
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based) after `error`, or
    /// `None` when the server asked for more than `max_server_delay`.
    pub fn delay(&self, attempt: u32, error: &Error) -> Option<Duration> {
        if let Some(wait) = error.retry_after() {
            return (wait <= self.max_server_delay).then_some(wait);
        }
        let doublings = attempt.saturating_sub(1).min(16);
        Some(
            self.initial_delay
                .saturating_mul(1 << doublings)
                .min(self.max_delay),
        )
    }

    /// Runs `operation` until it succeeds, fails for good, runs out of
    /// retries, or `cancel` fires.
    ///
    /// # Errors
    /// The last attempt's error, or `Cancelled`.
    pub async fn run<T, Fut>(
        &self,
        cancel: &CancellationToken,
        mut on_retry: impl FnMut(RetryNotice),
        mut operation: impl FnMut() -> Fut,
    ) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut attempt = 0;
        loop {
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::cancelled()),
                result = operation() => result,
            };
            let error = match result {
                Ok(value) => return Ok(value),
                Err(error) if !error.is_retryable() || attempt >= self.max_retries => {
                    return Err(error);
                }
                Err(error) => error,
            };
            attempt += 1;
            let Some(wait) = self.delay(attempt, &error) else {
                return Err(error);
            };
            on_retry(RetryNotice {
                attempt,
                message: error.to_string(),
                next_at_millis: epoch_millis(SystemTime::now() + wait),
            });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::cancelled()),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

fn epoch_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::error::ErrorKind;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn overloaded() -> Error {
        Error::new(ErrorKind::Overloaded, "overloaded")
    }

    #[test]
    fn backoff_doubles_from_two_seconds_and_caps_at_thirty() {
        let policy = RetryPolicy::default();
        let waits: Vec<u64> = (1..=6)
            .map(|attempt| policy.delay(attempt, &overloaded()).unwrap().as_secs())
            .collect();
        assert_eq!(waits, vec![2, 4, 8, 16, 30, 30]);
        let told = Error::new(
            ErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(45)),
            },
            "slow down",
        );
        assert_eq!(policy.delay(1, &told), Some(Duration::from_secs(45)));
        let too_long = Error::new(
            ErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(3600)),
            },
            "tomorrow",
        );
        assert_eq!(policy.delay(1, &too_long), None);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_until_success_and_reports_each_wait() {
        let calls = AtomicU32::new(0);
        let mut notices = Vec::new();
        let started = tokio::time::Instant::now();
        let result = RetryPolicy::default()
            .run(
                &CancellationToken::new(),
                |notice| notices.push(notice),
                || async {
                    match calls.fetch_add(1, Ordering::SeqCst) {
                        0 | 1 => Err(overloaded()),
                        _ => Ok("done"),
                    }
                },
            )
            .await;
        assert_eq!(result, Ok("done"));
        assert_eq!(
            notices
                .iter()
                .map(|notice| notice.attempt)
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(started.elapsed(), Duration::from_secs(2 + 4));
        assert_eq!(notices[0].message, "overloaded");
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_retries_and_never_retries_overflow() {
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy {
            max_retries: 2,
            ..RetryPolicy::default()
        };
        let result: Result<(), Error> = policy
            .run(
                &CancellationToken::new(),
                |_| {},
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(overloaded())
                },
            )
            .await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::Overloaded);
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        calls.store(0, Ordering::SeqCst);
        let result: Result<(), Error> = policy
            .run(
                &CancellationToken::new(),
                |_| {},
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(Error::new(ErrorKind::ContextOverflow, "too long"))
                },
            )
            .await;
        assert!(result.unwrap_err().is_context_overflow());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_during_a_wait_ends_with_cancelled() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let result: Result<(), Error> = RetryPolicy::default()
            .run(
                &cancel,
                move |_| trigger.cancel(),
                || async { Err(overloaded()) },
            )
            .await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::Cancelled);
    }
}
