//! Retrying failed model calls, the one place that decides: exponential
//! backoff (2 s doubling, capped at 30 s) unless the server said how long to
//! wait, a bounded number of attempts per step counted across everything that
//! retries it, one quick retry for a local address that refused the
//! connection, and cancellation at any point.
//!
//! Each wait is announced through a caller-supplied callback so the session
//! can show a countdown; this module never publishes anything itself.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;

use super::error::{Error, ErrorKind};

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

/// The wait before the one retry of a refused local connection: enough for
/// a server that is restarting, short enough that a stopped one fails fast.
const LOCAL_REFUSAL_DELAY: Duration = Duration::from_millis(500);

impl RetryPolicy {
    /// What to do after `error` when `retries` retries were already made:
    /// wait this long and retry, or stop with the error to show, which says
    /// how many attempts were made or when the server will take requests.
    ///
    /// # Errors
    /// The error to report when retrying is over.
    pub fn next_wait(&self, retries: u32, error: Error) -> Result<Duration, Error> {
        if !error.is_retryable() {
            return Err(error);
        }
        // A local server that refuses is not running; a server silent for a
        // whole stall timeout twice is not coming back soon: the user hears
        // it after two waits, not after six.
        let limit = if error.is_local_refusal() || error.kind() == ErrorKind::Stalled {
            self.max_retries.min(1)
        } else {
            self.max_retries
        };
        if retries >= limit {
            let attempts = retries + 1;
            return Err(if attempts > 1 {
                error.with_advice(format!("gave up after {attempts} attempts"))
            } else {
                error
            });
        }
        if error.is_local_refusal() {
            return Ok(LOCAL_REFUSAL_DELAY);
        }
        match self.delay(retries + 1, &error) {
            Some(wait) => Ok(wait),
            None => {
                let asked = error.retry_after().unwrap_or_default();
                let advice = format!(
                    "the server asks for a wait of {}, longer than cairn waits ({}); try again after {}",
                    spoken(asked),
                    spoken(self.max_server_delay),
                    utc_clock(SystemTime::now() + asked)
                );
                Err(error.with_advice(advice))
            }
        }
    }

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
    /// retries, or `cancel` fires. `retries` counts the retries already made
    /// for this step (by whoever made them) and is advanced here.
    ///
    /// # Errors
    /// The error `next_wait` reports, or `Cancelled`.
    pub async fn run<T, Fut>(
        &self,
        cancel: &CancellationToken,
        retries: &mut u32,
        mut on_retry: impl FnMut(RetryNotice),
        mut operation: impl FnMut() -> Fut,
    ) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>>,
    {
        loop {
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::cancelled()),
                result = operation() => result,
            };
            let error = match result {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            let message = error.to_string();
            let wait = self.next_wait(*retries, error)?;
            *retries += 1;
            on_retry(RetryNotice {
                attempt: *retries,
                message,
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

/// A wait as people say it: `45 s`, `12 min`, `2 h 5 min`.
fn spoken(wait: Duration) -> String {
    let secs = wait.as_secs();
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600).div_ceil(60)),
    }
}

/// `time` as a UTC wall clock, `HH:MM UTC`.
fn utc_clock(time: SystemTime) -> String {
    let secs = epoch_millis(time) / 1000;
    let of_day = secs % 86_400;
    format!("{:02}:{:02} UTC", of_day / 3600, of_day % 3600 / 60)
}

fn epoch_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
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
                &mut 0,
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
                &mut 0,
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
                &mut 0,
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
                &mut 0,
                move |_| trigger.cancel(),
                || async { Err(overloaded()) },
            )
            .await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::Cancelled);
    }

    async fn count_until_failure(first: Error) -> (u32, Duration, Error) {
        let calls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let result: Result<(), Error> = RetryPolicy::default()
            .run(
                &CancellationToken::new(),
                &mut 0,
                |_| {},
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(first.clone())
                },
            )
            .await;
        (
            calls.load(Ordering::SeqCst),
            started.elapsed(),
            result.expect_err("it never succeeds"),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_local_server_that_is_down_fails_after_one_quick_retry() {
        let refused = Error::refused_locally("http://127.0.0.1:9/v1", "connection refused");
        let (calls, waited, error) = count_until_failure(refused).await;
        assert_eq!(calls, 2);
        assert_eq!(waited, LOCAL_REFUSAL_DELAY);
        assert!(
            error.to_string().contains("gave up after 2 attempts"),
            "{error}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_beyond_the_cap_stops_at_once_and_says_when_to_try() {
        let tomorrow = Error::new(
            ErrorKind::RateLimited {
                retry_after: Some(Duration::from_secs(3600)),
            },
            "rate limited",
        );
        let (calls, waited, error) = count_until_failure(tomorrow).await;
        assert_eq!(calls, 1);
        assert_eq!(waited, Duration::ZERO);
        let message = error.to_string();
        assert!(message.contains("a wait of 60 min"), "{message}");
        assert!(message.contains("try again after"), "{message}");
    }

    #[tokio::test(start_paused = true)]
    async fn retries_made_elsewhere_count_against_the_same_budget() {
        let calls = AtomicU32::new(0);
        let mut retries = 4;
        let result: Result<(), Error> = RetryPolicy::default()
            .run(
                &CancellationToken::new(),
                &mut retries,
                |_| {},
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(overloaded())
                },
            )
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 2, "one retry was left");
        assert_eq!(retries, 5);
        let message = result.expect_err("gives up").to_string();
        assert!(message.contains("gave up after 6 attempts"), "{message}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_server_is_given_up_after_two_stall_timeouts() {
        let started = tokio::time::Instant::now();
        let stall = Duration::from_secs(120);
        let calls = AtomicU32::new(0);
        let result: Result<(), Error> = RetryPolicy::default()
            .run(
                &CancellationToken::new(),
                &mut 0,
                |_| {},
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(stall).await;
                    Err(Error::stalled("http://127.0.0.1:8080/v1", stall))
                },
            )
            .await;
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(started.elapsed(), stall * 2 + Duration::from_secs(2));
        let message = result.expect_err("gives up").to_string();
        assert!(message.contains("gave up after 2 attempts"), "{message}");
    }
}
