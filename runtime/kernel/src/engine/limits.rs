//! Rate limits (the manifest's `rate_limit`): how many calls of a tool a principal or a
//! conversation may make per window. The counters live behind [`RateLimiter`], so that every
//! conversation of a process (or, with a shared store such as
//! `RedisLimiter` (feature `redis`), of a fleet) shares them; the default is
//! [`InMemoryLimiter::shared`], one per process.
//!
//! A limiter answers at once ([`Acquire::Now`]: the in-memory one, which costs no allocation
//! and no await) or later ([`Acquire::Later`]: a store over the network). The engine stays
//! free of I/O either way: an answer that comes later travels in the call's [`super::Admission`]
//! and is awaited by the async shells that run it ([`super::Admission::check_limit`]) before
//! approval is asked and before anything runs.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::RateLimit;

/// Counts calls against limits. `key` names whose calls count together (a tool and a principal,
/// or a tool and a conversation); implementations must be shareable across conversations.
pub trait RateLimiter: Send + Sync {
    /// Counts one call of `key` at `now` if `limit` allows it, else says how long until it
    /// would; a refused call is not counted. A limiter that needs I/O to know answers
    /// [`Acquire::Later`] with a future that must not panic and must end in bounded time.
    fn acquire(&self, key: &str, limit: &RateLimit, now: Instant) -> Acquire;
}

/// A limiter's answer for one call.
pub enum Acquire {
    /// Known now: counted (`Ok`) or refused.
    Now(Result<(), LimitRefusal>),
    /// Known once this future ends (a shared store was asked); counted when it ends `Ok`.
    Later(LimitFuture),
}

impl std::fmt::Debug for Acquire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Acquire::Now(result) => f.debug_tuple("Now").field(result).finish(),
            Acquire::Later(_) => f.write_str("Later(..)"),
        }
    }
}

/// The future of an [`Acquire::Later`].
pub type LimitFuture = Pin<Box<dyn Future<Output = Result<(), LimitRefusal>> + Send>>;

/// Why a limiter refused a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitRefusal {
    /// The limit allows no more calls now; one may be made after this long.
    Over(Duration),
    /// The calls could not be counted (the shared store is down or too slow) and the limiter
    /// fails closed: the call does not run. The text is for the operator's logs, not the model.
    Unavailable(String),
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
    fn acquire(&self, key: &str, limit: &RateLimit, now: Instant) -> Acquire {
        Acquire::Now(self.count(key, limit, now).map_err(LimitRefusal::Over))
    }
}

impl InMemoryLimiter {
    /// [`RateLimiter::acquire`], answered now: `Err` says how long until a call would fit.
    pub fn count(&self, key: &str, limit: &RateLimit, now: Instant) -> Result<(), Duration> {
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
                .count(&format!("k{i}"), &limit, Instant::now())
                .unwrap();
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        limiter.count("fresh", &limit, Instant::now()).unwrap();
        assert_eq!(limiter.calls.lock().unwrap().len(), 1);
        assert!(matches!(
            limiter.acquire("fresh", &limit, Instant::now()),
            Acquire::Now(Err(LimitRefusal::Over(_)))
        ));
    }
}
