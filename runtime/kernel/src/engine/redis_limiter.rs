//! Rate limits counted in Redis (feature `redis`), so that a fleet of relays, chat servers or
//! MCP servers holds one count per principal: a user who moves between processes (a new
//! session lands on another relay) is not granted a fresh limit by each.
//!
//! Each key is a sorted set of the calls counted in its window (score: the Redis server's clock
//! in milliseconds, so processes with different clocks agree), updated by one Lua script that
//! Redis runs atomically: drop the calls older than the window, refuse when the rest fill the
//! limit (answering when the oldest leaves it), else add this call and let the key expire one
//! window after it. The same sliding window as [`super::InMemoryLimiter`], shared.
//!
//! A Redis that is down or slow never hangs a call nor panics: every check is bounded by the
//! limiter's timeout, and then [`OnUnavailable`] decides: refuse the call with a
//! `rate_limit_unavailable` result the model can act on (the default), or let it run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::Instant;

use super::limits::{Acquire, LimitRefusal, RateLimiter};
use crate::RateLimit;

/// How long a check may take before Redis counts as unavailable, unless
/// [`RedisLimiter::with_timeout`] says otherwise.
pub const DEFAULT_REDIS_TIMEOUT: Duration = Duration::from_millis(250);

/// The default prefix of the limiter's keys ([`RedisLimiter::with_prefix`]).
pub const DEFAULT_REDIS_PREFIX: &str = "toolc:rl:";

/// What a call whose limit cannot be checked (Redis down, or slower than the timeout) gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnUnavailable {
    /// It does not run: the model reads a `rate_limit_unavailable` error (retryable, with a
    /// `retry_after_ms`), and the operator a warning. The default: a limit that protects
    /// something expensive or destructive keeps protecting it.
    #[default]
    FailClosed,
    /// It runs uncounted, with a warning in the logs: for limits that are a courtesy, where an
    /// outage of Redis must not take the tool down.
    FailOpen,
}

/// A Redis URL the limiter cannot use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLimiterError(String);

impl std::fmt::Display for RedisLimiterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedisLimiterError {}

impl RedisLimiterError {
    pub(super) fn new(message: String) -> RedisLimiterError {
        RedisLimiterError(message)
    }
}

/// A [`RateLimiter`] whose counts live in Redis, shared by every process that uses the same
/// Redis and prefix. Give it to each conversation
/// ([`super::Conversation::with_limiter`]; a relay's `SessionConfig::limiter`, a chat runner's
/// or MCP server's `with_limiter`). Cheap to clone; clones share one connection.
///
/// Needs a Tokio runtime where its checks run (every adapter runs calls on one). It connects
/// on the first check, not when made, and reconnects by itself after Redis comes back.
#[derive(Clone)]
pub struct RedisLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    on_unavailable: OnUnavailable,
    /// Made on the first check, inside the runtime (it spawns its reconnection task there).
    manager: OnceLock<ConnectionManager>,
    /// Each counted call's member in its key's set: this limiter's tag and a sequence number.
    tag: u64,
    next: AtomicU64,
}

impl std::fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("prefix", &self.inner.prefix)
            .field("timeout", &self.inner.timeout)
            .field("on_unavailable", &self.inner.on_unavailable)
            .field("connected", &self.inner.manager.get().is_some())
            .finish()
    }
}

/// The sliding window, atomically. KEYS[1]: the key; ARGV: the limit's calls, its window in
/// milliseconds, and this call's unique member. Returns 0 when the call was counted, else the
/// milliseconds until one would be (at least 1).
const SLIDING_WINDOW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, window - (now - tonumber(oldest[2])))
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return 0
";

static SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(SLIDING_WINDOW));

impl RedisLimiter {
    /// A limiter on the Redis at `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`, or
    /// `redis+unix:///PATH`); no connection is made yet. Fails only on a URL it cannot read.
    pub fn open(url: &str) -> Result<RedisLimiter, RedisLimiterError> {
        let client = redis::Client::open(url)
            .map_err(|e| RedisLimiterError(format!("cannot use the Redis URL: {e}")))?;
        Ok(RedisLimiter::with(
            client,
            DEFAULT_REDIS_PREFIX.to_owned(),
            DEFAULT_REDIS_TIMEOUT,
            OnUnavailable::default(),
        ))
    }

    fn with(
        client: redis::Client,
        prefix: String,
        timeout: Duration,
        on_unavailable: OnUnavailable,
    ) -> RedisLimiter {
        static TAGS: AtomicU64 = AtomicU64::new(0);
        let tag = super::process_tag() ^ TAGS.fetch_add(1, Ordering::Relaxed).rotate_left(48);
        RedisLimiter {
            inner: Arc::new(Inner {
                client,
                prefix,
                timeout,
                on_unavailable,
                manager: OnceLock::new(),
                tag,
                next: AtomicU64::new(0),
            }),
        }
    }

    /// A copy with another settings; made before use (the copy has a connection of its own).
    fn rebuilt(
        &self,
        prefix: String,
        timeout: Duration,
        on_unavailable: OnUnavailable,
    ) -> RedisLimiter {
        RedisLimiter::with(self.inner.client.clone(), prefix, timeout, on_unavailable)
    }

    /// How long one check may take (connecting included) before Redis counts as unavailable;
    /// default [`DEFAULT_REDIS_TIMEOUT`]. It is added to a call's latency only when Redis is
    /// slow or down.
    pub fn with_timeout(self, timeout: Duration) -> RedisLimiter {
        let inner = &self.inner;
        self.rebuilt(inner.prefix.clone(), timeout, inner.on_unavailable)
    }

    /// What a call gets when its limit cannot be checked; default
    /// [`OnUnavailable::FailClosed`].
    pub fn on_unavailable(self, choice: OnUnavailable) -> RedisLimiter {
        let inner = &self.inner;
        self.rebuilt(inner.prefix.clone(), inner.timeout, choice)
    }

    /// The prefix of every key the limiter writes (default [`DEFAULT_REDIS_PREFIX`]): processes
    /// share counts when they share it, and applications that share a Redis keep theirs apart.
    pub fn with_prefix(self, prefix: impl Into<String>) -> RedisLimiter {
        let inner = &self.inner;
        self.rebuilt(prefix.into(), inner.timeout, inner.on_unavailable)
    }

    /// The timeout of a check.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }
}

impl Inner {
    /// The connection, made on first use.
    fn manager(&self) -> redis::RedisResult<ConnectionManager> {
        connection(&self.client, self.timeout, &self.manager)
    }

    /// Runs the script: 0 when counted, else milliseconds until a call would be.
    async fn count(
        &self,
        key: &str,
        calls: u32,
        window_ms: u64,
        member: &str,
    ) -> redis::RedisResult<u64> {
        let mut manager = self.manager()?;
        SCRIPT
            .key(key)
            .arg(calls)
            .arg(window_ms)
            .arg(member)
            .invoke_async(&mut manager)
            .await
    }
}

/// The connection to `client` kept in `cell`, made on first use (inside the runtime: it spawns
/// its reconnection task there). Shared by the limiter and the duplicate store.
pub(super) fn connection(
    client: &redis::Client,
    timeout: Duration,
    cell: &OnceLock<ConnectionManager>,
) -> redis::RedisResult<ConnectionManager> {
    if let Some(manager) = cell.get() {
        return Ok(manager.clone());
    }
    // Short reconnection attempts: a check waits at most `timeout` anyway, and a Redis that
    // comes back should be found soon by the next check.
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(2)
        .set_min_delay(Duration::from_millis(20))
        .set_max_delay(timeout);
    let made = ConnectionManager::new_lazy_with_config(client.clone(), config)?;
    Ok(cell.get_or_init(|| made).clone())
}

impl RateLimiter for RedisLimiter {
    /// Always [`Acquire::Later`]: Redis is asked when the call's run awaits it. `now` is not
    /// used: the window is measured on the Redis server's clock, which every process shares.
    fn acquire(&self, key: &str, limit: &RateLimit, _now: Instant) -> Acquire {
        let inner = self.inner.clone();
        let key = format!("{}{key}", inner.prefix);
        let (calls, window_ms) = (limit.calls, limit.window().as_millis() as u64);
        let member = format!(
            "{:016x}.{}",
            inner.tag,
            inner.next.fetch_add(1, Ordering::Relaxed)
        );
        Acquire::Later(Box::pin(async move {
            let why = if tokio::runtime::Handle::try_current().is_err() {
                "no Tokio runtime to reach Redis on".to_owned()
            } else {
                let asked = inner.count(&key, calls, window_ms, &member);
                match tokio::time::timeout(inner.timeout, asked).await {
                    Ok(Ok(0)) => return Ok(()),
                    Ok(Ok(after_ms)) => {
                        return Err(LimitRefusal::Over(Duration::from_millis(after_ms)))
                    }
                    Ok(Err(e)) => format!("Redis failed: {e}"),
                    Err(_) => format!("Redis did not answer within {:?}", inner.timeout),
                }
            };
            match inner.on_unavailable {
                OnUnavailable::FailClosed => Err(LimitRefusal::Unavailable(why)),
                OnUnavailable::FailOpen => {
                    tracing::warn!(why = %why, "rate limit not checked: the call runs uncounted (fail open)");
                    Ok(())
                }
            }
        }))
    }
}
