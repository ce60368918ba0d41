//! The call engine: what happens to a tool call, decided in one place for every adapter.
//!
//! A realtime session, the chat runner and the MCP server each read calls off their own wire,
//! but the rules a call goes through are one sequence, and they are written here only:
//!
//! 1. **toolsets**: a registry tool the conversation does not offer is as unknown as any;
//! 2. **validation**: the arguments against the tool's schema ([`plan`]), before anything runs;
//! 3. **duplicates**: a repeat of an earlier call of the conversation is answered as the tool's
//!    `on_duplicate` says, with the first call's result (now, or once it ends) or a refusal (a
//!    conversation the application named also matches the calls other processes saw, through
//!    a [`DuplicateStore`], answered later like a shared limit);
//!    then a tool's `rate_limit`: over it, the model gets a `rate_limited` result and nothing runs
//!    (counted by a [`RateLimiter`] shared across conversations, per principal or per
//!    conversation; a limiter over a shared store answers later, and the call's run awaits
//!    that answer first, see [`Admission::check_limit`]);
//! 4. **approval**: a tool with `approval: required` waits for the user;
//! 5. **background**: a `mode: async` server tool answers "started" and its work goes on.
//!
//! [`Conversation::admit`] takes a call and decides all of that without I/O, returning an
//! [`Admission`]: answer now, wait for a first call, or run (after approval, in the background or
//! not). The decisions that may need I/O, whether a call repeats one another process saw (a
//! [`DuplicateStore`], `RedisDuplicates` with feature `redis`) and a rate limit counted in a store
//! shared by a fleet (`RedisLimiter`), are not made here: the admission carries them, still
//! pending, as one check (`pending.rs`), and the async shells below await it before approval is
//! asked and before anything runs. Running is the adapter's to schedule (a realtime session spawns
//! a task per call, the chat runner polls a turn's calls together, MCP answers one request), but
//! what a run does is again one place, [`Admission::run`] and its kin in `run.rs`: the approval
//! question, the executor, the client under its deadline, the fire-and-forget delivery, each in its
//! `toolc.call` span. When a call ends, [`Conversation::finished`] records its outcome for later
//! repeats and returns the answers of the repeats that waited for it.

use std::collections::HashMap;
use std::sync::Arc;
#[cfg(test)]
use std::time::Duration;

use serde_json::Value;

use toolc_core::definition::OnDuplicate;

use crate::dispatch::{CallOutcome, Route, ToolCall};
use crate::error::{CallError, CallErrorKind};
use crate::live::LiveTools;
use crate::{Location, Registry, ToolSelection};

mod duplicate_store;
mod duplicates;
mod limits;
mod pending;
#[cfg(feature = "redis")]
mod redis_duplicates;
#[cfg(feature = "redis")]
mod redis_limiter;
mod run;

use duplicate_store::{Claim, SharedCheck};
pub use duplicate_store::{DuplicateKey, DuplicateStore, Ended, KeptResult, Prior, StoreFuture};
use duplicates::{canonical_value, Repeat, Seen, MAX_KEPT_RESULT};
pub use limits::{Acquire, InMemoryLimiter, LimitFuture, LimitRefusal, RateLimiter};
use pending::PendingCheck;
#[cfg(feature = "redis")]
pub use redis_duplicates::{RedisDuplicates, DEFAULT_REDIS_DUPLICATES_PREFIX};
#[cfg(feature = "redis")]
pub use redis_limiter::{
    OnUnavailable, RedisLimiter, RedisLimiterError, DEFAULT_REDIS_PREFIX, DEFAULT_REDIS_TIMEOUT,
};
pub use run::plan;

/// More repeats waiting than this (for first calls that may never end, e.g. approvals never
/// answered) and further ones are refused: a model cannot grow the table without bound.
const MAX_WAITING: usize = 1024;

/// More calls whose claim in a shared duplicate store is open than this (calls that never
/// ended, e.g. of a response the model abandoned) and the oldest claim is dropped (its entry
/// in the store expires with its window).
const MAX_CLAIMS: usize = 1024;

/// One conversation's calls (a realtime session, a chat runner's scope, an MCP session): the
/// tools it offers and the calls later ones may repeat. A repeat is only ever matched against
/// calls of the same conversation.
pub struct Conversation {
    registry: Arc<Registry>,
    selection: Option<ToolSelection>,
    live: Option<Arc<dyn LiveTools>>,
    seen: Seen,
    /// Repeats waiting for a first call that is still running, by the first call's id.
    waiting: HashMap<String, Vec<String>>,
    /// Counts calls against the tools' `rate_limit`s; shared with other conversations.
    limiter: Arc<dyn RateLimiter>,
    /// Whose calls a `per principal` limit counts together; `None`: this conversation's.
    principal: Option<String>,
    /// This conversation's key for `per conversation` limits, unique in the process.
    id: u64,
    /// Where first calls are shared with other processes, and under which application id of
    /// this conversation; both or neither, else repeats stay in `seen` alone.
    shared: Option<Arc<dyn DuplicateStore>>,
    conversation_id: Option<String>,
    /// The open claims in the shared store, by call id.
    claims: HashMap<String, Claim>,
    next_claim: u64,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("selection", &self.selection)
            .field("live_tools", &self.live.is_some())
            .field("waiting", &self.waiting.len())
            .finish()
    }
}

/// What a call becomes: where it goes and what happens next.
#[derive(Clone)]
pub struct Admission {
    call: ToolCall,
    route: Route,
    next: Next,
    /// The live tools a [`Route::Live`] call goes to.
    live: Option<Arc<dyn LiveTools>>,
    /// Checks a shared store is still answering (a repeat of another process's call, a rate
    /// limit), shared by the clones.
    limit: Option<Arc<PendingCheck>>,
}

/// Two admissions are equal when they are of the same call, route and next step, and both or
/// neither still wait for a rate limit check.
impl PartialEq for Admission {
    fn eq(&self, other: &Admission) -> bool {
        self.call == other.call
            && self.route == other.route
            && self.next == other.next
            && self.limit.is_some() == other.limit.is_some()
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("call", &self.call)
            .field("route", &self.route)
            .field("next", &self.next)
            .field("limit_pending", &self.limit_pending())
            .finish()
    }
}

/// What happens to an admitted call.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Answered without running: the call cannot run ([`Route::Reject`]), or it repeats an
    /// earlier call whose result it reuses or whose repeat the tool refuses.
    Answer(CallOutcome),
    /// A repeat of a call still running: [`Conversation::finished`] of `first` answers it.
    Wait {
        /// The id of the first call.
        first: String,
    },
    /// It runs.
    Run {
        /// The user must approve it first (`approval: required`).
        approval: bool,
        /// A `mode: async` server call: "started" now, its work in the background.
        background: bool,
    },
}

impl Conversation {
    /// A conversation over `registry` that offers every tool and has seen no call yet.
    pub fn new(registry: Arc<Registry>) -> Conversation {
        Conversation {
            registry,
            selection: None,
            live: None,
            seen: Seen::default(),
            waiting: HashMap::new(),
            limiter: InMemoryLimiter::shared(),
            principal: None,
            shared: None,
            conversation_id: None,
            claims: HashMap::new(),
            next_claim: 0,
            id: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    /// Counts calls against `rate_limit`s with `limiter` instead of the process's
    /// [`InMemoryLimiter::shared`].
    pub fn with_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Conversation {
        self.limiter = limiter;
        self
    }

    /// The principal (its [`crate::Principal`] id) whose calls `per principal` limits count
    /// together, across every conversation that shares the limiter. Without one, a `per
    /// principal` limit counts this conversation's calls.
    pub fn with_principal(mut self, principal: Option<String>) -> Conversation {
        self.principal = principal;
        self
    }

    /// Sets whose calls `per principal` limits count ([`Conversation::with_principal`]), once
    /// the conversation's user is known (a relay session's principal is set after it starts).
    pub fn set_principal(&mut self, principal: Option<String>) {
        self.principal = principal;
    }

    /// Shares first calls with other processes through `store` (`RedisDuplicates`, feature
    /// `redis`), for a conversation with an application-chosen id
    /// ([`Conversation::set_conversation_id`]); without one, repeats stay in this process.
    pub fn with_duplicate_store(mut self, store: Option<Arc<dyn DuplicateStore>>) -> Conversation {
        self.shared = store;
        self
    }

    /// The application's id of this conversation ([`crate::SessionScope::conversation_id`]):
    /// with a [`DuplicateStore`], a call repeats the calls of this id and principal that any
    /// process of the fleet saw. `None`: only this conversation's own calls.
    pub fn set_conversation_id(&mut self, id: Option<String>) {
        self.conversation_id = id;
    }

    /// Offers only the tools of `selection` (`None`: every tool).
    pub fn with_selection(mut self, selection: Option<ToolSelection>) -> Conversation {
        self.selection = selection;
        self
    }

    /// Tools beyond the registry's: a call of a name the registry does not know goes to them.
    pub fn with_live_tools(mut self, live: Option<Arc<dyn LiveTools>>) -> Conversation {
        self.live = live;
        self
    }

    /// Changes the tools offered from the next call on.
    pub fn set_selection(&mut self, selection: Option<ToolSelection>) {
        self.selection = selection;
    }

    /// The tools offered, when toolsets were chosen.
    pub fn selection(&self) -> Option<&ToolSelection> {
        self.selection.as_ref()
    }

    /// The registry the calls run against.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Decides what happens to `call`: every rule but running it.
    pub fn admit(&mut self, call: ToolCall) -> Admission {
        // 1. A registry tool the conversation does not offer is as unknown to the model as any.
        let refused = self
            .selection
            .as_ref()
            .and_then(|s| s.refusal(&self.registry, &call.name));
        // 2. Validation, and where the call goes.
        let route = match refused {
            Some(error) => Route::Reject(error),
            None => plan(&self.registry, &call),
        };
        let route = match route {
            // A name the registry does not know may be one of the live tools now; they check
            // the arguments against their own schema.
            Route::Reject(e)
                if e.kind() == CallErrorKind::UnknownTool
                    && self.live.is_some()
                    && self.registry.definition(&call.name).is_none() =>
            {
                match serde_json::from_str::<Value>(&call.arguments) {
                    Ok(arguments) => Route::Live { arguments },
                    Err(e) => Route::Reject(CallError::invalid_json(&call.name, &e)),
                }
            }
            route => route,
        };
        let (next, limit) = self.next(&call, &route);
        let live = match route {
            Route::Live { .. } => self.live.clone(),
            _ => None,
        };
        Admission {
            call,
            route,
            next,
            live,
            limit,
        }
    }

    /// The next step, and a rate limit check still under way when the limiter answers later.
    fn next(&mut self, call: &ToolCall, route: &Route) -> (Next, Option<Arc<PendingCheck>>) {
        let arguments = match route {
            Route::Reject(error) => {
                let outcome = CallOutcome::failed(&call.call_id, error.clone());
                return (Next::Answer(outcome), None);
            }
            Route::Live { .. } => {
                let next = Next::Run {
                    approval: false,
                    background: false,
                };
                return (next, None);
            }
            Route::Server { arguments }
            | Route::Client { arguments, .. }
            | Route::Notify { arguments } => arguments,
        };
        // Its own handle: the definition is read while this conversation changes.
        let registry = self.registry.clone();
        let Some(def) = registry.definition(&call.name) else {
            // `plan` routes only registry tools; stay total anyway.
            let next = Next::Run {
                approval: false,
                background: false,
            };
            return (next, None);
        };
        // 3. A repeat of an earlier call is answered without running (nor asking anyone).
        let policy = def.duplicate_policy();
        let canonical = (policy != OnDuplicate::Run).then(|| canonical_value(arguments));
        let repeat = match &canonical {
            Some(canonical) => self.seen.check(def, &call.call_id, canonical),
            None => Repeat::First,
        };
        match repeat {
            Repeat::First => {}
            Repeat::Reuse(outcome) => return (Next::Answer(outcome), None),
            Repeat::WaitFor(first)
                if self.waiting.values().map(Vec::len).sum::<usize>() >= MAX_WAITING =>
            {
                let error = CallError::duplicate(&def.name, &first, true);
                return (
                    Next::Answer(CallOutcome::failed(&call.call_id, error)),
                    None,
                );
            }
            Repeat::WaitFor(first) => {
                self.waiting
                    .entry(first.clone())
                    .or_default()
                    .push(call.call_id.clone());
                return (Next::Wait { first }, None);
            }
            Repeat::Refuse { first, running } => {
                let error = CallError::duplicate(&def.name, &first, running);
                return (
                    Next::Answer(CallOutcome::failed(&call.call_id, error)),
                    None,
                );
            }
        }
        // 3a. New to this process: a shared store may know it from another one. Its answer
        // comes later, and the rate limit is asked after it (a repeat is not counted).
        let shared = canonical.and_then(|canonical| self.shared_check(def, call, canonical));
        if let Some(shared) = shared {
            let limited = def.policy.rate_limit.map(|limit| {
                (
                    self.limiter.clone(),
                    self.limit_key(&def.name, &limit),
                    limit,
                )
            });
            let (tool, call_id) = (def.name.clone(), call.call_id.clone());
            let pending = PendingCheck::new(async move {
                shared.decide().await?;
                let Some((limiter, key, limit)) = limited else {
                    return Ok(());
                };
                let counted = match limiter.acquire(&key, &limit, tokio::time::Instant::now()) {
                    Acquire::Now(answer) => answer,
                    Acquire::Later(answer) => answer.await,
                };
                counted.map_err(|refusal| {
                    CallOutcome::failed(&call_id, refusal_error(&tool, &limit, refusal))
                })
            });
            return (Self::run_next(def, route), Some(pending));
        }
        // 3b. Over the tool's rate limit it does not run (and is no first call for repeats).
        let mut pending = None;
        if let Some(limit) = &def.policy.rate_limit {
            let key = self.limit_key(&def.name, limit);
            let now = tokio::time::Instant::now();
            match self.limiter.acquire(&key, limit, now) {
                Acquire::Now(Ok(())) => {}
                Acquire::Now(Err(refusal)) => {
                    let error = refusal_error(&def.name, limit, refusal);
                    let outcome = CallOutcome::failed(&call.call_id, error);
                    self.seen.finished(&call.call_id, &outcome);
                    return (Next::Answer(outcome), None);
                }
                // The store answers later: the call's run awaits it before anything else; a
                // refusal then is its outcome (which `finished` records, as for any call).
                Acquire::Later(answer) => {
                    let (tool, limit) = (def.name.clone(), *limit);
                    let call_id = call.call_id.clone();
                    pending = Some(PendingCheck::new(async move {
                        answer.await.map_err(|refusal| {
                            CallOutcome::failed(&call_id, refusal_error(&tool, &limit, refusal))
                        })
                    }));
                }
            }
        }
        (Self::run_next(def, route), pending)
    }

    /// 4. and 5.: a call that runs, after approval or not, in the background or not.
    fn run_next(def: &crate::ToolDefinition, route: &Route) -> Next {
        Next::Run {
            approval: def.requires_approval(),
            background: matches!(route, Route::Server { .. }) && def.runs_in_background(),
        }
    }

    /// Whose calls a `limit` of tool `tool` counts together.
    fn limit_key(&self, tool: &str, limit: &crate::RateLimit) -> String {
        match (limit.per, &self.principal) {
            (crate::RateScope::Principal, Some(p)) => format!("{tool}\u{0}p\u{0}{p}"),
            // Unique across processes too: a shared store sees every relay's conversations.
            _ => format!("{tool}\u{0}c\u{0}{:016x}.{}", process_tag(), self.id),
        }
    }

    /// The check of a call new to this conversation in the shared store, when there is one and
    /// the conversation has an application id; the claim is kept until the call ends.
    fn shared_check(
        &mut self,
        def: &crate::ToolDefinition,
        call: &ToolCall,
        canonical: String,
    ) -> Option<SharedCheck> {
        let (Some(store), Some(conversation)) = (&self.shared, &self.conversation_id) else {
            return None;
        };
        if self.claims.len() >= MAX_CLAIMS {
            let oldest = self
                .claims
                .iter()
                .min_by_key(|(_, claim)| claim.seq)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                self.claims.remove(&oldest);
            }
        }
        let key = DuplicateKey::new(
            self.principal.clone(),
            conversation.clone(),
            def.name.clone(),
            canonical,
        );
        self.next_claim += 1;
        let token = format!("{:016x}.{}.{}", process_tag(), self.id, self.next_claim);
        let claim = Claim::new(key, token, self.next_claim);
        // A `reuse` repeat may wait for a first call running elsewhere as long as it would
        // wait for its own run.
        let wait = def
            .effective_timeout()
            .unwrap_or(crate::DEFAULT_CLIENT_TIMEOUT);
        let check = SharedCheck::new(
            store.clone(),
            &claim,
            call.call_id.clone(),
            def.duplicate_window(),
            def.duplicate_policy(),
            wait,
        );
        self.claims.insert(call.call_id.clone(), claim);
        Some(check)
    }

    /// `call_id` ended with `outcome` (or will never run: a declined approval is an outcome
    /// too). Later repeats get this result (a failed call is no first: the next one runs), and
    /// the repeats that waited for it get it now, under their own ids, in the order they came.
    pub fn finished(&mut self, call_id: &str, outcome: &CallOutcome) -> Vec<CallOutcome> {
        self.seen.finished(call_id, outcome);
        self.share_end(call_id, outcome);
        self.waiting
            .remove(call_id)
            .unwrap_or_default()
            .into_iter()
            .map(|repeat| CallOutcome {
                call_id: repeat,
                ..outcome.clone()
            })
            .collect()
    }

    /// Sends the end of a first call claimed in the shared store to it, on a task of its own
    /// (bounded by the store's timeout): the engine does no I/O, and the adapter that reports
    /// the end does not wait for the store.
    fn share_end(&mut self, call_id: &str, outcome: &CallOutcome) {
        let (Some(store), Some(claim)) = (&self.shared, self.claims.remove(call_id)) else {
            return;
        };
        if !claim.may_hold() {
            return;
        }
        let ended = Ended::of(outcome, MAX_KEPT_RESULT);
        let recorded = store.ended(&claim.key, &claim.token, ended);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(recorded);
            }
            // Its entry expires with its window: repeats meanwhile are refused or wait.
            Err(_) => tracing::warn!(
                call_id,
                "the end of a first call could not be shared: no Tokio runtime"
            ),
        }
    }

    /// Whether `call_id` is a first call whose result later repeats may get: an adapter that
    /// can skip writing a result's text keeps it for these.
    pub fn remembers(&self, call_id: &str) -> bool {
        self.seen.remembers(call_id)
    }
}

impl Admission {
    /// A call planned on its own, with no conversation around it: no toolsets, no repeats.
    /// A background tool runs in the foreground here (nothing would take its later result).
    pub fn alone(registry: &Registry, call: ToolCall) -> Admission {
        let route = plan(registry, &call);
        let next = match &route {
            Route::Reject(error) => Next::Answer(CallOutcome::failed(&call.call_id, error.clone())),
            _ => Next::Run {
                approval: registry
                    .definition(&call.name)
                    .is_some_and(|d| d.requires_approval()),
                background: false,
            },
        };
        Admission {
            call,
            route,
            next,
            live: None,
            limit: None,
        }
    }

    /// The call as it was admitted.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// Where it goes.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// What happens next.
    pub fn next(&self) -> &Next {
        &self.next
    }

    /// The validated arguments (`None` when the call cannot run).
    pub fn arguments(&self) -> Option<&Value> {
        self.route.arguments()
    }

    /// Where the tool runs, to show the user who approves it.
    pub fn location(&self) -> Location {
        match self.route {
            Route::Client { .. } | Route::Notify { .. } => Location::Client,
            _ => Location::Server,
        }
    }

    /// Whether a check of this call in a shared store is still under way: its rate limit (the
    /// limiter asked a shared store), or whether it repeats a call another process saw (a
    /// [`DuplicateStore`]). [`Admission::check_limit`] awaits them. The runs
    /// ([`Admission::run`], [`Admission::ask`], [`Admission::run_in_background`],
    /// [`Admission::run_value`]) await them first; an adapter that shows the call to anyone
    /// before running it (sends a client call to the browser, asks for approval out of band)
    /// awaits them before that.
    pub fn limit_pending(&self) -> bool {
        self.limit.as_ref().is_some_and(|check| !check.is_known())
    }

    /// Awaits the call's checks in shared stores, if any is under way: `Err` is the outcome the
    /// model gets instead of running the call: a refusal (`rate_limited`, `duplicate_call`, or
    /// `rate_limit_unavailable` / `duplicate_check_unavailable` when the store could not be
    /// asked and fails closed), or the result of the first call another process ran, which
    /// this call repeats (`on_duplicate: reuse`; a success). Nothing runs then, and the adapter
    /// records it with [`Conversation::finished`] as any outcome. Every clone of an admission
    /// shares one check (the call is counted and claimed once). Immediate when there is none.
    pub async fn check_limit(&self) -> Result<(), CallOutcome> {
        let Some(check) = &self.limit else {
            return Ok(());
        };
        check.answer().await
    }

    /// Whether it runs only once the user approved it.
    pub fn needs_approval(&self) -> bool {
        matches!(self.next, Next::Run { approval: true, .. })
    }

    /// Whether it is a background (`mode: async`) call.
    pub fn runs_in_background(&self) -> bool {
        matches!(
            self.next,
            Next::Run {
                background: true,
                ..
            }
        )
    }

    /// The user approved it out of band (the chat runner's application asked): it runs
    /// without asking again.
    pub fn approved(mut self) -> Admission {
        if let Next::Run { approval, .. } = &mut self.next {
            *approval = false;
        }
        self
    }

    /// The user declined: the outcome the model reads.
    pub fn declined(&self, reason: Option<&str>) -> CallOutcome {
        let error = CallError::approval_denied(&self.call.name, reason);
        CallOutcome::failed(&self.call.call_id, error)
    }

    /// The first result of a background call: the work started.
    pub fn started(&self) -> CallOutcome {
        CallOutcome::started(&self.call.call_id, &self.call.name)
    }
}

/// The error the model reads for a call `limit` refused.
fn refusal_error(tool: &str, limit: &crate::RateLimit, refusal: LimitRefusal) -> CallError {
    match refusal {
        LimitRefusal::Over(after) => CallError::rate_limited(tool, limit, after),
        LimitRefusal::Unavailable(why) => {
            tracing::warn!(tool = %tool, why = %why, "rate limit not checked: the call is refused (fail closed)");
            CallError::rate_limit_unavailable(tool, limit, &why)
        }
    }
}

/// A tag of this process, random per start: a conversation's key in a store that several
/// processes share must not be another process's conversation of the same number.
fn process_tag() -> u64 {
    static TAG: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        use std::hash::BuildHasher;
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        std::collections::hash_map::RandomState::new().hash_one((std::process::id(), started))
    })
}

#[cfg(test)]
mod tests;
