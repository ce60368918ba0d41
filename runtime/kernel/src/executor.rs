//! Executors: what runs a server tool. The registry holds them type-erased ([`Executor`]); the
//! adapters here turn typed async functions into executors, so that a handler receives its
//! generated argument type, never a raw JSON string.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::Poll;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::context::CallContext;
use crate::error::ToolError;

/// The future of one running call.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>;

/// A type-erased server executor. The registry calls it only with arguments that already
/// satisfy the tool's `parameters` schema.
pub trait Executor: Send + Sync + 'static {
    /// Starts a call. `Err` means the validated arguments still could not be turned into the
    /// executor's argument type (the typed mapping is stricter than the schema in a few places,
    /// e.g. integers beyond `i64`).
    ///
    /// `ctx` says who calls (session, principal), until when, and carries the cancellation
    /// signal and the registry's application state.
    fn start(&self, ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error>;
}

/// An executor over JSON values: `executor_fn(|args| async move { Ok(json!({...})) })`.
pub fn executor_fn<F, Fut>(f: F) -> FnExecutor<F, Json>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    FnExecutor::new(f)
}

/// [`executor_fn`] for a function that reads its [`CallContext`]:
/// `executor_fn_with_context(|ctx, args| async move { ... ctx.principal() ... })`.
pub fn executor_fn_with_context<F, Fut>(f: F) -> FnExecutor<F, WithContext<Json>>
where
    F: Fn(CallContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    FnExecutor::new(f)
}

/// An executor over typed arguments and results:
/// `typed_executor(|args: SearchArgs| async move { Ok::<_, ToolError>(SearchOutput { .. }) })`.
pub fn typed_executor<A, O, F, Fut>(f: F) -> FnExecutor<F, Typed<A, O>>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    FnExecutor::new(f)
}

/// [`typed_executor`] for a function that reads its [`CallContext`]; what the generated
/// registries use: `typed_executor_with_context(|ctx, args: SearchArgs| async move { .. })`.
pub fn typed_executor_with_context<A, O, F, Fut>(f: F) -> FnExecutor<F, WithContext<Typed<A, O>>>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    FnExecutor::new(f)
}

/// The one executor adapter: an async function, called as its shape `S` says. The four
/// constructors above choose the shape: [`Json`] or [`Typed`] arguments and result, each
/// optionally [`WithContext`].
pub struct FnExecutor<F, S> {
    pub(crate) f: F,
    // `fn() -> S` keeps the executor Send + Sync whatever the shape's types are.
    _shape: PhantomData<fn() -> S>,
}

impl<F, S> FnExecutor<F, S> {
    pub(crate) fn new(f: F) -> FnExecutor<F, S> {
        FnExecutor {
            f,
            _shape: PhantomData,
        }
    }
}

/// Shape of an executor function: takes and returns JSON values.
#[derive(Debug)]
pub enum Json {}

/// Shape of an executor function: takes `A` and returns `O`, both through serde.
#[derive(Debug)]
pub struct Typed<A, O>(PhantomData<fn(A) -> O>);

/// Shape of an executor function that also takes the [`CallContext`] first.
#[derive(Debug)]
pub struct WithContext<S>(PhantomData<fn() -> S>);

impl<F, S> fmt::Debug for FnExecutor<F, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnExecutor")
            .field("shape", &std::any::type_name::<S>())
            .finish()
    }
}

impl<F, Fut> Executor for FnExecutor<F, Json>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn start(&self, _ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error> {
        Ok(Box::pin((self.f)(arguments)))
    }
}

impl<F, Fut> Executor for FnExecutor<F, WithContext<Json>>
where
    F: Fn(CallContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn start(&self, ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error> {
        Ok(Box::pin((self.f)(ctx, arguments)))
    }
}

impl<A, O, F, Fut> Executor for FnExecutor<F, Typed<A, O>>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    fn start(&self, _ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error> {
        let args: A = serde_json::from_value(arguments)?;
        Ok(serialized((self.f)(args)))
    }
}

impl<A, O, F, Fut> Executor for FnExecutor<F, WithContext<Typed<A, O>>>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    fn start(&self, ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error> {
        let args: A = serde_json::from_value(arguments)?;
        Ok(serialized((self.f)(ctx, args)))
    }
}

/// The future of a typed call, with its output turned into JSON.
pub(crate) fn serialized<O, Fut>(fut: Fut) -> ToolFuture
where
    O: Serialize + Send + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    Box::pin(async move {
        let output = fut.await?;
        serde_json::to_value(output)
            .map_err(|e| ToolError::new(format!("its result could not be serialized: {e}")))
    })
}

/// Polls `fut`, turning a panic during any poll into `Err(message)`.
pub(crate) async fn catch_panics<T>(
    mut fut: Pin<Box<dyn Future<Output = T> + Send>>,
) -> Result<T, String> {
    std::future::poll_fn(
        move |cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        },
    )
    .await
}

/// The message of a caught panic's payload, for the error the model reads.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}
