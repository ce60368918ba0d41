//! The duplicate-call memory shared by processes: a store (`RedisDuplicates`, feature
//! `redis`) in which a fleet of relays, chat servers or MCP servers keep the first calls of a
//! conversation, so that a repeat is caught when it reaches another process (a page that
//! reconnected to another relay, a chat server that rebuilds its runner per request).
//!
//! Each conversation still has its in-memory [`super::duplicates::Seen`], which answers the
//! repeats of its own calls at once; a call that is new to it, in a conversation with an
//! application-chosen id ([`crate::SessionScope::with_conversation_id`]), is then claimed in
//! the store. That needs I/O, so it is not done by the engine: it travels in the call's
//! admission as a pending check ([`super::pending`]), the same future that a rate limit over
//! a shared store is, awaited by the adapters before anything is asked or runs. The end of a
//! first call goes to the store when [`super::Conversation::finished`] records it.
//!
//! Only conversations the application named share: a session's own id (`s1`, `s2`) is
//! numbered per process, so two processes' `s1` are different users; those stay in memory.
//! The key is the principal, the conversation id, the tool and the canonical arguments, so a
//! page that chooses its conversation id can only ever meet its own principal's calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolc_core::definition::OnDuplicate;

use crate::dispatch::{CallOutcome, Status};
use crate::error::CallError;

/// A store of first calls shared by processes. Implementations must bound every operation in
/// time (a store that is down answers [`Prior::Unchecked`] or [`Prior::Unavailable`], as it
/// is set to fail open or closed), never panic, and be shareable across conversations.
pub trait DuplicateStore: Send + Sync {
    /// Makes call `call_id` the first call of `key` for `window` (measured from now), unless
    /// the store holds another call of it that is still fresh: then what that call is. A
    /// first call that failed is no first call (the store forgot it, see
    /// [`DuplicateStore::ended`]); one that succeeded with a result too long to keep is
    /// replaced when `policy` is [`OnDuplicate::Reuse`] (there is nothing to reuse) and
    /// answered when it is `refuse`. `claim` is this attempt's own token, unique in the fleet:
    /// only the holder of the claim may record the call's end.
    fn claim(
        &self,
        key: &DuplicateKey,
        call_id: &str,
        claim: &str,
        window: Duration,
        policy: OnDuplicate,
    ) -> StoreFuture<Prior>;

    /// The first call that claimed `key` with `claim` ended: later repeats get `ended`, for
    /// what is left of its window; a failed one is forgotten. Nothing happens when the
    /// claim is no longer the holder (it expired, or was never made).
    fn ended(&self, key: &DuplicateKey, claim: &str, ended: Ended) -> StoreFuture<()>;
}

/// The future of a [`DuplicateStore`] operation.
pub type StoreFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a call is matched on: whose conversation and which call. Made by the engine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DuplicateKey {
    principal: Option<String>,
    conversation: String,
    tool: String,
    arguments: String,
}

impl DuplicateKey {
    pub(super) fn new(
        principal: Option<String>,
        conversation: String,
        tool: String,
        arguments: String,
    ) -> DuplicateKey {
        DuplicateKey {
            principal,
            conversation,
            tool,
            arguments,
        }
    }

    /// The principal whose conversation it is; `None` for an unauthenticated one.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The application's conversation id.
    pub fn conversation(&self) -> &str {
        &self.conversation
    }

    /// The tool called.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The validated arguments in one spelling (object keys sorted at every depth, numbers as
    /// one number whatever their spelling): equal for equal calls in every process.
    pub fn canonical_arguments(&self) -> &str {
        &self.arguments
    }

    /// The key's fields, each preceded by its length, so that no two keys share one byte
    /// string (a conversation id cannot be made to end in another key's tool). A store hashes
    /// this (a cryptographic hash: a hostile model cannot aim two calls at one digest).
    pub fn unambiguous_bytes(&self) -> Vec<u8> {
        let principal = self.principal.as_deref();
        let fields: [&[u8]; 5] = [
            if principal.is_some() { b"p" } else { b"-" },
            principal.unwrap_or_default().as_bytes(),
            self.conversation.as_bytes(),
            self.tool.as_bytes(),
            self.arguments.as_bytes(),
        ];
        let mut bytes = Vec::with_capacity(fields.iter().map(|f| f.len() + 8).sum());
        for field in fields {
            bytes.extend_from_slice(&(field.len() as u64).to_be_bytes());
            bytes.extend_from_slice(field);
        }
        bytes
    }
}

/// What a store holds for a call's key, or why it cannot say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prior {
    /// Nothing fresh: the call is now the first call, and its end is recorded.
    Claimed,
    /// The first call `first` is still running (in this or another process).
    Running {
        /// The first call's id.
        first: String,
    },
    /// The first call `first` succeeded; its result, unless it was too long to keep.
    Succeeded {
        /// The first call's id.
        first: String,
        /// What it answered.
        result: Option<KeptResult>,
    },
    /// The store could not be asked and fails open: the call runs as a first call nobody else
    /// knows of. The store has logged why.
    Unchecked,
    /// The store could not be asked and fails closed: the call does not run. The text is for
    /// the operator's logs.
    Unavailable(String),
}

/// A first call's successful result, as repeats get it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptResult {
    /// The result's JSON text.
    pub output: String,
    /// Whether it was an acknowledgement (a fire-and-forget delivery, a background start)
    /// rather than the tool's result.
    pub acknowledged: bool,
}

/// How a first call ended, for [`DuplicateStore::ended`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It succeeded; the result, unless it is longer than repeats may be given from a store
    /// (256 KiB: a hostile tool result must not fill the store).
    Succeeded(Option<KeptResult>),
    /// It failed or was cancelled: not a first call for anything.
    Failed,
}

impl Ended {
    /// How `outcome` ended, its result kept when at most `max_kept` bytes long.
    pub(super) fn of(outcome: &CallOutcome, max_kept: usize) -> Ended {
        let acknowledged = match &outcome.status {
            Status::Failed(_) => return Ended::Failed,
            Status::Ok => false,
            Status::Acknowledged => true,
        };
        Ended::Succeeded((outcome.output.len() <= max_kept).then(|| KeptResult {
            output: outcome.output.clone(),
            acknowledged,
        }))
    }
}

/// Where a claim stands, for [`Claim::state`].
const CLAIM_ASKED: u8 = 0;
const CLAIM_HELD: u8 = 1;
const CLAIM_NOT_HELD: u8 = 2;

/// One call's attempt to be the first call of its key in the store, kept by the conversation
/// until the call ends.
pub(super) struct Claim {
    pub(super) key: Arc<DuplicateKey>,
    /// Unique in the fleet: this process's tag and a sequence number.
    pub(super) token: String,
    /// Whether the store made this call the first call (shared with the check's future).
    state: Arc<AtomicU8>,
    /// When it was made, to forget the oldest first when a conversation holds too many.
    pub(super) seq: u64,
}

impl Claim {
    pub(super) fn new(key: DuplicateKey, token: String, seq: u64) -> Claim {
        Claim {
            key: Arc::new(key),
            token,
            state: Arc::new(AtomicU8::new(CLAIM_ASKED)),
            seq,
        }
    }

    /// Whether the call's end must go to the store: it holds the claim, or its check has not
    /// said yet (the check was abandoned, e.g. cancelled, after the store may have made it
    /// the first call; the store ignores an end whose claim is not the holder).
    pub(super) fn may_hold(&self) -> bool {
        self.state.load(Ordering::Acquire) != CLAIM_NOT_HELD
    }
}

/// What the check of one call in the store needs, moved into its future.
pub(super) struct SharedCheck {
    pub(super) store: Arc<dyn DuplicateStore>,
    pub(super) key: Arc<DuplicateKey>,
    pub(super) call_id: String,
    pub(super) token: String,
    pub(super) window: Duration,
    pub(super) policy: OnDuplicate,
    /// How long a `reuse` repeat waits for a first call running elsewhere.
    pub(super) wait: Duration,
    state: Arc<AtomicU8>,
}

/// How long after a first call that ran elsewhere was waited for in vain its repeat may ask
/// again.
const RUNNING_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The pauses between two looks at a first call running elsewhere: short at first (most
/// calls end within a second), then at most this.
const MAX_POLL_PAUSE: Duration = Duration::from_secs(1);
const FIRST_POLL_PAUSE: Duration = Duration::from_millis(25);

impl SharedCheck {
    pub(super) fn new(
        store: Arc<dyn DuplicateStore>,
        claim: &Claim,
        call_id: String,
        window: Duration,
        policy: OnDuplicate,
        wait: Duration,
    ) -> SharedCheck {
        SharedCheck {
            store,
            key: claim.key.clone(),
            call_id,
            token: claim.token.clone(),
            window,
            policy,
            wait,
            state: claim.state.clone(),
        }
    }

    /// Asks the store: `Ok` when the call runs (as the first call, or unchecked), else the
    /// outcome it gets instead: the first call's result (`reuse`), or a refusal. A `reuse`
    /// repeat of a first call still running elsewhere looks again, with growing pauses, for
    /// at most the call's wait, then is refused with a time to ask again.
    pub(super) async fn decide(self) -> Result<(), CallOutcome> {
        let tool = self.key.tool().to_owned();
        let failed = |error: CallError| Err(CallOutcome::failed(&self.call_id, error));
        let started = tokio::time::Instant::now();
        let mut pause = FIRST_POLL_PAUSE;
        loop {
            let prior = self
                .store
                .claim(
                    &self.key,
                    &self.call_id,
                    &self.token,
                    self.window,
                    self.policy,
                )
                .await;
            let held = matches!(prior, Prior::Claimed);
            self.state.store(
                if held { CLAIM_HELD } else { CLAIM_NOT_HELD },
                Ordering::Release,
            );
            match prior {
                Prior::Claimed | Prior::Unchecked => return Ok(()),
                Prior::Unavailable(why) => {
                    tracing::warn!(tool = %tool, why = %why, "repeats not checked: the call is refused (fail closed)");
                    return failed(CallError::duplicate_check_unavailable(&tool, &why));
                }
                Prior::Succeeded { first, result } => {
                    return match (self.policy, result) {
                        (OnDuplicate::Reuse, Some(kept)) => Err(CallOutcome {
                            call_id: self.call_id.clone(),
                            output: kept.output,
                            status: if kept.acknowledged {
                                Status::Acknowledged
                            } else {
                                Status::Ok
                            },
                        }),
                        // Nothing to reuse (a store that did not replace it): it runs, unclaimed.
                        (OnDuplicate::Reuse, None) => Ok(()),
                        _ => failed(CallError::duplicate(&tool, &first, false)),
                    };
                }
                Prior::Running { first } => {
                    let may_wait = self.policy == OnDuplicate::Reuse
                        && tokio::runtime::Handle::try_current().is_ok()
                        && started.elapsed() + pause <= self.wait;
                    if !may_wait {
                        return failed(match self.policy {
                            OnDuplicate::Reuse => CallError::duplicate_still_running(
                                &tool,
                                &first,
                                RUNNING_RETRY_AFTER,
                            ),
                            _ => CallError::duplicate(&tool, &first, true),
                        });
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_POLL_PAUSE);
                }
            }
        }
    }
}
