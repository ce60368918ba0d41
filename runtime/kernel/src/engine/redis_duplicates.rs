//! The duplicate-call memory in Redis (feature `redis`): the first calls of the conversations
//! that an application named, shared by every process that uses the same Redis and prefix, so
//! a repeat that reaches another relay or chat server is answered as the tool's `on_duplicate`
//! says.
//!
//! One hash per first call, under the prefix and the SHA-256 of the call's key (principal,
//! conversation id, tool, canonical arguments; see [`DuplicateKey::unambiguous_bytes`]): the
//! first call's id, a token of the claim that made it the first, its state (`running`, `ok`,
//! `ack`, `unkept` when the result was too long to keep) and its result. Two Lua scripts,
//! each atomic in Redis: the claim (answer the fresh first call, or become it, with the tool's
//! window as the key's expiry) and the end (only the claim's holder writes it, and the expiry
//! stays the window from the first call; a failed first call is deleted, so it is no first).
//!
//! A Redis that is down or slow never hangs a call nor panics: each operation is bounded by
//! the store's timeout, and then [`OnUnavailable`] decides. Unlike rate limits, the default is
//! to fail open: the call runs as a first call that other processes do not know of, which is
//! what every call did before the fleet shared its memory (a repeat in the same conversation
//! and process is still caught in memory); failing closed would refuse every call of every
//! tool that remembers its calls for as long as Redis is away.

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionManager;
use sha2::{Digest, Sha256};
use toolc_core::definition::OnDuplicate;

use super::duplicate_store::{DuplicateKey, DuplicateStore, Ended, KeptResult, Prior, StoreFuture};
use super::redis_limiter::{connection, OnUnavailable, RedisLimiterError, DEFAULT_REDIS_TIMEOUT};

/// The default prefix of the store's keys ([`RedisDuplicates::with_prefix`]).
pub const DEFAULT_REDIS_DUPLICATES_PREFIX: &str = "toolc:dup:";

/// A [`DuplicateStore`] in Redis. Give it to each conversation
/// ([`super::Conversation::with_duplicate_store`]; a relay's `SessionConfig::duplicates`, a
/// chat runner's `with_duplicate_store`), with the conversation's application id. Cheap to
/// clone; clones share one connection. Needs a Tokio runtime where its operations run; it
/// connects on first use and reconnects by itself after Redis comes back.
#[derive(Clone)]
pub struct RedisDuplicates {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    on_unavailable: OnUnavailable,
    manager: OnceLock<ConnectionManager>,
}

impl std::fmt::Debug for RedisDuplicates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDuplicates")
            .field("prefix", &self.inner.prefix)
            .field("timeout", &self.inner.timeout)
            .field("on_unavailable", &self.inner.on_unavailable)
            .field("connected", &self.inner.manager.get().is_some())
            .finish()
    }
}

/// The claim. KEYS[1]: the call's key; ARGV: the call's id, its claim token, the window in
/// milliseconds, and `1` when a first call whose result was not kept is replaced (`reuse`:
/// there is nothing to reuse). Returns `{'claimed'}`, or the fresh first call's
/// `{state, first, output}`.
const CLAIM: &str = r"
local held = redis.call('HMGET', KEYS[1], 'state', 'first', 'output')
local state = held[1]
if state and not (state == 'unkept' and ARGV[4] == '1') then
  return {state, held[2], held[3]}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'running', 'first', ARGV[1], 'token', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {'claimed'}
";

/// The end. KEYS[1]: the key; ARGV: the claim token, the state (`ok`, `ack`, `unkept` or
/// `failed`) and the result. Only the claim that holds the key writes; HSET keeps the expiry.
const END: &str = r"
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
if ARGV[2] == 'failed' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'output', ARGV[3])
return 1
";

static CLAIM_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(CLAIM));
static END_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(END));

impl RedisDuplicates {
    /// A store on the Redis at `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`, or
    /// `redis+unix:///PATH`); no connection is made yet. Fails only on a URL it cannot read.
    pub fn open(url: &str) -> Result<RedisDuplicates, RedisLimiterError> {
        let client = redis::Client::open(url)
            .map_err(|e| RedisLimiterError::new(format!("cannot use the Redis URL: {e}")))?;
        Ok(RedisDuplicates::with(
            client,
            DEFAULT_REDIS_DUPLICATES_PREFIX.to_owned(),
            DEFAULT_REDIS_TIMEOUT,
            OnUnavailable::FailOpen,
        ))
    }

    fn with(
        client: redis::Client,
        prefix: String,
        timeout: Duration,
        on_unavailable: OnUnavailable,
    ) -> RedisDuplicates {
        RedisDuplicates {
            inner: Arc::new(Inner {
                client,
                prefix,
                timeout,
                on_unavailable,
                manager: OnceLock::new(),
            }),
        }
    }

    /// How long one operation may take (connecting included) before Redis counts as
    /// unavailable; default [`DEFAULT_REDIS_TIMEOUT`].
    pub fn with_timeout(self, timeout: Duration) -> RedisDuplicates {
        let inner = &self.inner;
        let client = inner.client.clone();
        RedisDuplicates::with(client, inner.prefix.clone(), timeout, inner.on_unavailable)
    }

    /// What a call gets when the store cannot be asked; default [`OnUnavailable::FailOpen`]
    /// (it runs, as a first call other processes do not know of). `FailClosed` refuses it
    /// with a `duplicate_check_unavailable` result the model can act on: for fleets whose
    /// tools must never run twice, at the price of every such call while Redis is away.
    pub fn on_unavailable(self, choice: OnUnavailable) -> RedisDuplicates {
        let inner = &self.inner;
        let client = inner.client.clone();
        RedisDuplicates::with(client, inner.prefix.clone(), inner.timeout, choice)
    }

    /// The prefix of every key the store writes (default [`DEFAULT_REDIS_DUPLICATES_PREFIX`]):
    /// processes share first calls when they share it.
    pub fn with_prefix(self, prefix: impl Into<String>) -> RedisDuplicates {
        let inner = &self.inner;
        let client = inner.client.clone();
        RedisDuplicates::with(client, prefix.into(), inner.timeout, inner.on_unavailable)
    }

    /// The timeout of an operation.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The Redis key of `key`: the prefix and the hex SHA-256 of the key's fields.
    pub fn redis_key(&self, key: &DuplicateKey) -> String {
        let digest = Sha256::digest(key.unambiguous_bytes());
        let mut name = String::with_capacity(self.inner.prefix.len() + 64);
        name.push_str(&self.inner.prefix);
        for byte in digest {
            name.push_str(&format!("{byte:02x}"));
        }
        name
    }
}

impl Inner {
    /// Runs `script` on `key` with `args`, bounded by the timeout: `Err` says why not.
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &redis::Script,
        key: &str,
        args: &[&[u8]],
    ) -> Result<T, String> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err("no Tokio runtime to reach Redis on".to_owned());
        }
        let asked = async {
            let mut manager = connection(&self.client, self.timeout, &self.manager)?;
            let mut invocation = script.key(key);
            for arg in args {
                invocation.arg(*arg);
            }
            invocation.invoke_async::<T>(&mut manager).await
        };
        match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("Redis failed: {e}")),
            Err(_) => Err(format!("Redis did not answer within {:?}", self.timeout)),
        }
    }
}

/// What the claim script answered.
fn prior(answer: Vec<Option<String>>) -> Result<Prior, String> {
    let mut fields = answer.into_iter();
    let state = fields.next().flatten();
    let first = fields.next().flatten().unwrap_or_default();
    let output = fields.next().flatten();
    let kept = |acknowledged| {
        output.map(|output| KeptResult {
            output,
            acknowledged,
        })
    };
    Ok(match state.as_deref() {
        Some("claimed") => Prior::Claimed,
        Some("running") => Prior::Running { first },
        Some("ok") => Prior::Succeeded {
            first,
            result: kept(false),
        },
        Some("ack") => Prior::Succeeded {
            first,
            result: kept(true),
        },
        Some("unkept") => Prior::Succeeded {
            first,
            result: None,
        },
        // Another program's value under our prefix: not a first call we can read.
        other => return Err(format!("unexpected state {other:?} in the store")),
    })
}

impl DuplicateStore for RedisDuplicates {
    fn claim(
        &self,
        key: &DuplicateKey,
        call_id: &str,
        claim: &str,
        window: Duration,
        policy: OnDuplicate,
    ) -> StoreFuture<Prior> {
        let inner = self.inner.clone();
        let key = self.redis_key(key);
        let window_ms = window.as_millis().clamp(1, u64::MAX as u128).to_string();
        let replace = if policy == OnDuplicate::Reuse {
            "1"
        } else {
            "0"
        };
        let (call_id, claim) = (call_id.to_owned(), claim.to_owned());
        Box::pin(async move {
            let args: [&[u8]; 4] = [
                call_id.as_bytes(),
                claim.as_bytes(),
                window_ms.as_bytes(),
                replace.as_bytes(),
            ];
            let why = match inner.run(&CLAIM_SCRIPT, &key, &args).await.and_then(prior) {
                Ok(prior) => return prior,
                Err(why) => why,
            };
            match inner.on_unavailable {
                OnUnavailable::FailClosed => Prior::Unavailable(why),
                OnUnavailable::FailOpen => {
                    tracing::warn!(why = %why, "repeats not checked across processes: the call runs as a first call (fail open)");
                    Prior::Unchecked
                }
            }
        })
    }

    fn ended(&self, key: &DuplicateKey, claim: &str, ended: Ended) -> StoreFuture<()> {
        let inner = self.inner.clone();
        let key = self.redis_key(key);
        let claim = claim.to_owned();
        let (state, output) = match ended {
            Ended::Failed => ("failed", String::new()),
            Ended::Succeeded(None) => ("unkept", String::new()),
            Ended::Succeeded(Some(kept)) if kept.acknowledged => ("ack", kept.output),
            Ended::Succeeded(Some(kept)) => ("ok", kept.output),
        };
        Box::pin(async move {
            let args: [&[u8]; 3] = [claim.as_bytes(), state.as_bytes(), output.as_bytes()];
            if let Err(why) = inner.run::<i64>(&END_SCRIPT, &key, &args).await {
                // The entry stays `running` until its window ends: repeats meanwhile wait or
                // are refused, never run twice.
                tracing::warn!(why = %why, "the end of a first call was not shared");
            }
        })
    }
}
