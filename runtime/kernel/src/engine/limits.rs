//! Rate limits (the manifest's `rate_limit`): how many calls of a tool a principal or a
//! conversation may make per window. The counters live behind [`RateLimiter`], so that every
//! conversation of a process (or, with another implementation, of a fleet) shares them; the
//! default is [`InMemoryLimiter::shared`], one per process.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::RateLimit;

/// Counts calls against limits. `key` names whose calls count together (a tool and a principal,
/// or a tool and a conversation); implementations must be shareable across conversations.
pub trait RateLimiter: Send + Sync {
    /// Counts one call of `key` at `now` if `limit` allows it (`Ok`), else says how long until
    /// it would (`Err(retry_after)`); a refused call is not counted.
    fn acquire(&self, key: &str, limit: &RateLimit, now: Instant) -> Result<(), Duration>;
}

/// The in-process limiter: a sliding window of the times of the calls counted, per key.
#[derive(Debug, Default)]
pub struct InMemoryLimiter {
    /// Per key: its window, and the times of the calls counted in it.
    calls: Mutex<HashMap<String, (Duration, VecDeque<Instant>)>>,
}

/// Past this many keys, keys whose calls have all left their window are dropped (conversations
/// that ended leave theirs behind).
const SWEEP_ABOVE: usize = 4096;

impl InMemoryLimiter {
    /// A limiter of its own (tests, or an application that wants separate counts).
    pub fn new() -> InMemoryLimiter {
        InMemoryLimiter::default()
    }

    /// The process's limiter, which every [`super::Conversation`] uses unless given another.
    pub fn shared() -> Arc<InMemoryLimiter> {
        static SHARED: OnceLock<Arc<InMemoryLimiter>> = OnceLock::new();
        SHARED.get_or_init(Default::default).clone()
    }
}

impl RateLimiter for InMemoryLimiter {
    fn acquire(&self, key: &str, limit: &RateLimit, now: Instant) -> Result<(), Duration> {
        let window = limit.window();
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        if calls.len() >= SWEEP_ABOVE && !calls.contains_key(key) {
            calls.retain(|_, (window, times)| {
                times
                    .back()
                    .is_some_and(|t| now.saturating_duration_since(*t) < *window)
            });
        }
        let (kept_window, times) = calls
            .entry(key.to_owned())
            .or_insert_with(|| (window, VecDeque::new()));
        *kept_window = window;
        while times
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= window)
        {
            times.pop_front();
        }
        if times.len() >= limit.calls as usize {
            let oldest = *times.front().expect("a full window has calls");
            return Err(window.saturating_sub(now.saturating_duration_since(oldest)));
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RateScope;

    #[tokio::test(start_paused = true)]
    async fn keys_whose_calls_left_their_window_are_swept() {
        let limiter = InMemoryLimiter::new();
        let limit = RateLimit {
            calls: 1,
            window_ms: 1_000,
            per: RateScope::Conversation,
        };
        for i in 0..SWEEP_ABOVE {
            limiter
                .acquire(&format!("k{i}"), &limit, Instant::now())
                .unwrap();
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        limiter.acquire("fresh", &limit, Instant::now()).unwrap();
        assert_eq!(limiter.calls.lock().unwrap().len(), 1);
        assert!(limiter.acquire("fresh", &limit, Instant::now()).is_err());
    }
}
