//! The checks of a call that a store shared by processes answers: whether it repeats a call
//! another process saw ([`super::DuplicateStore`]), and whether its rate limit allows it
//! ([`super::RateLimiter`] answering [`super::Acquire::Later`]). The engine decides without
//! I/O, so these travel in the call's [`super::Admission`] as one future, awaited by the async
//! shells before approval is asked and before anything runs
//! ([`super::Admission::check_limit`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use crate::dispatch::CallOutcome;

/// The engine's side of the checks: `Err` is the outcome the call gets instead of running (a
/// refusal, or a reused result).
type CheckFuture = Pin<Box<dyn Future<Output = Result<(), CallOutcome>> + Send>>;

/// Checks still under way, shared by every clone of the call's admission: the future runs once
/// (the call is counted once, claimed once), and every clone reads its one answer.
/// Cancel-safe: a waiter that goes away leaves the future for the next one to go on polling.
pub(super) struct PendingCheck {
    future: tokio::sync::Mutex<Option<CheckFuture>>,
    answer: OnceLock<Result<(), CallOutcome>>,
}

impl PendingCheck {
    pub(super) fn new(
        future: impl Future<Output = Result<(), CallOutcome>> + Send + 'static,
    ) -> Arc<PendingCheck> {
        Arc::new(PendingCheck {
            future: tokio::sync::Mutex::new(Some(Box::pin(future))),
            answer: OnceLock::new(),
        })
    }

    /// The answer: `Err` is the outcome the model reads instead of a result.
    pub(super) async fn answer(&self) -> Result<(), CallOutcome> {
        if let Some(answer) = self.answer.get() {
            return answer.clone();
        }
        let mut future = self.future.lock().await;
        if let Some(answer) = self.answer.get() {
            return answer.clone();
        }
        let answer = match future.as_mut() {
            Some(running) => running.await,
            // Unreachable: the answer is set before the future is dropped.
            None => Ok(()),
        };
        *future = None;
        self.answer.get_or_init(|| answer).clone()
    }

    /// Whether the answer is known.
    pub(super) fn is_known(&self) -> bool {
        self.answer.get().is_some()
    }
}
