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
pub fn executor_fn<F, Fut>(f: F) -> FnExecutor<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    FnExecutor(f)
}

/// The executor that [`executor_fn`] returns.
pub struct FnExecutor<F>(F);

impl<F> fmt::Debug for FnExecutor<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnExecutor")
    }
}

impl<F, Fut> Executor for FnExecutor<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn start(&self, _ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error> {
        Ok(Box::pin((self.0)(arguments)))
    }
}

/// [`executor_fn`] for a function that reads its [`CallContext`]:
/// `executor_fn_with_context(|ctx, args| async move { ... ctx.principal() ... })`.
pub fn executor_fn_with_context<F, Fut>(f: F) -> ContextFnExecutor<F>
where
    F: Fn(CallContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    ContextFnExecutor(f)
}

/// The executor that [`executor_fn_with_context`] returns.
pub struct ContextFnExecutor<F>(F);

impl<F> fmt::Debug for ContextFnExecutor<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContextFnExecutor")
    }
}

impl<F, Fut> Executor for ContextFnExecutor<F>
where
    F: Fn(CallContext, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn start(&self, ctx: CallContext, arguments: Value) -> Result<ToolFuture, serde_json::Error> {
        Ok(Box::pin((self.0)(ctx, arguments)))
    }
}

/// An executor over typed arguments and results:
/// `typed_executor(|args: SearchArgs| async move { Ok::<_, ToolError>(SearchOutput { .. }) })`.
pub fn typed_executor<A, O, F, Fut>(f: F) -> TypedExecutor<A, O, F>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    TypedExecutor {
        f,
        _types: PhantomData,
    }
}

/// The executor that [`typed_executor`] returns.
pub struct TypedExecutor<A, O, F> {
    f: F,
    // `fn(A) -> O` keeps the executor Send + Sync whatever A and O are.
    _types: PhantomData<fn(A) -> O>,
}

impl<A, O, F> fmt::Debug for TypedExecutor<A, O, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedExecutor")
            .field("args", &std::any::type_name::<A>())
            .field("output", &std::any::type_name::<O>())
            .finish()
    }
}

impl<A, O, F, Fut> Executor for TypedExecutor<A, O, F>
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

/// [`typed_executor`] for a function that reads its [`CallContext`]; what the generated
/// registries use: `typed_executor_with_context(|ctx, args: SearchArgs| async move { .. })`.
pub fn typed_executor_with_context<A, O, F, Fut>(f: F) -> ContextTypedExecutor<A, O, F>
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    ContextTypedExecutor {
        f,
        _types: PhantomData,
    }
}

/// The executor that [`typed_executor_with_context`] returns.
pub struct ContextTypedExecutor<A, O, F> {
    f: F,
    _types: PhantomData<fn(A) -> O>,
}

impl<A, O, F> fmt::Debug for ContextTypedExecutor<A, O, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextTypedExecutor")
            .field("args", &std::any::type_name::<A>())
            .field("output", &std::any::type_name::<O>())
            .finish()
    }
}

impl<A, O, F, Fut> Executor for ContextTypedExecutor<A, O, F>
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
fn serialized<O, Fut>(fut: Fut) -> ToolFuture
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

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}
