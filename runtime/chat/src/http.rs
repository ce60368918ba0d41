//! Chat models reached over HTTP, their tool calls run by a [`TurnRunner`] until the model
//! answers without one (feature `http`: reqwest with rustls): OpenAI's Responses API
//! ([`ResponsesModel`]), OpenAI Chat Completions ([`ChatCompletionsModel`]) and Anthropic
//! Messages ([`AnthropicModel`]), all behind [`ChatModel`]. The codecs stay I/O-free for
//! applications that keep their own client; this is for those that want a ready one (a
//! GPT-Live client delegation is its first user). One function sends every request
//! (`send_json`: bounded body, error mapping); one loop runs the message-based APIs.
//!
//! Shapes (OpenAI's OpenAPI document and the SDK's `openai.types.responses`): the request is
//! `{model, input, tools, instructions?, previous_response_id?}` with the function tools in the
//! Responses format; the answer a `Response` whose `output[]` holds `function_call` items (run,
//! and sent back as `function_call_output` input items of the next request, which continues
//! with `previous_response_id`) or `message` items whose `output_text` parts are the answer.
//! A failed request is an HTTP error status with `{"error": {"message", "type", "code"}}`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use std::future::Future;
use std::pin::Pin;

use toolc_core::definition::ToolDefinition;

use crate::anthropic::Anthropic;
use crate::openai_chat::ChatCompletions;
use crate::openai_responses::Responses;
use crate::{Codec, DecodeError, TurnRunner};

/// OpenAI's API, where [`ResponsesModel::openai`] sends its requests.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The most a response body may hold: a model's answer is far smaller; more is refused rather
/// than buffered.
const MAX_BODY: usize = 8 * 1024 * 1024;

/// OpenAI's Responses API as a tool-using model: [`ResponsesModel::run`] sends the input, runs
/// the calls of each response with the runner, and sends their results back, until the model
/// answers in text.
///
/// ```no_run
/// # async fn demo(registry: std::sync::Arc<toolc_kernel::Registry>) -> Result<(), toolc_chat::http::ModelError> {
/// use toolc_chat::http::{user_message, ResponsesModel};
/// use toolc_chat::TurnRunner;
/// let model = ResponsesModel::openai(std::env::var("OPENAI_API_KEY").unwrap(), "gpt-5.5")?
///     .tools(registry.definitions().map(toolc_core::declare::openai_function).collect());
/// let answer = model
///     .run(&TurnRunner::new(registry), vec![user_message("Where is order AB-1?")])
///     .await?;
/// println!("{}", answer.text);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ResponsesModel {
    endpoint: Endpoint,
    model: String,
    instructions: Option<String>,
    tools: Vec<Value>,
    max_turns: usize,
}

impl fmt::Debug for ResponsesModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponsesModel")
            .field("endpoint", &self.endpoint.url)
            .field("model", &self.model)
            .field("tools", &self.tools.len())
            .field("max_turns", &self.max_turns)
            .finish_non_exhaustive()
    }
}

/// The model's answer to one run.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelAnswer {
    /// The text of the last response (Responses `output_text` parts, Chat's message `content`,
    /// Anthropic's `text` blocks, joined).
    pub text: String,
    /// The last response's id.
    pub response_id: String,
    /// How many requests it took.
    pub requests: usize,
    /// How many tool calls ran (one result each).
    pub calls: usize,
}

/// Why a run gave no answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelError {
    /// The base URL is not `http://` or `https://`, or the HTTP client could not be set up.
    Setup(String),
    /// The request did not get an answer (connection, timeout).
    Transport(String),
    /// The API answered with an error status (and, when it sent one, its error object's
    /// message and code).
    Api {
        /// The HTTP status.
        status: u16,
        /// `error.message`, or the start of the body.
        message: String,
        /// `error.code`, when the API sent one.
        code: Option<String>,
    },
    /// The answer is not a response this client can read.
    Unreadable(String),
    /// The response's tool calls cannot be read.
    Decode(DecodeError),
    /// The response did not finish (Responses `status` other than `completed`; Chat
    /// `finish_reason` `length` or `content_filter`; Anthropic `stop_reason` `max_tokens` or
    /// `refusal`).
    NotCompleted(String),
    /// The model still called tools after this many requests.
    TooManyTurns(usize),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Setup(why) => write!(f, "cannot set up the chat API client: {why}"),
            ModelError::Transport(why) => write!(f, "the chat API did not answer: {why}"),
            ModelError::Api {
                status,
                message,
                code,
            } => match code {
                Some(code) => write!(f, "the chat API refused ({status}, {code}): {message}"),
                None => write!(f, "the chat API refused ({status}): {message}"),
            },
            ModelError::Unreadable(why) => write!(f, "unreadable chat API answer: {why}"),
            ModelError::Decode(e) => e.fmt(f),
            ModelError::NotCompleted(status) => write!(f, "the response ended {status}"),
            ModelError::TooManyTurns(n) => {
                write!(f, "the model still called tools after {n} requests")
            }
        }
    }
}

impl std::error::Error for ModelError {}

/// A user message input item (`{"type":"message","role":"user","content":[input_text]}`).
pub fn user_message(text: &str) -> Value {
    json!({
        "type": "message",
        "role": "user",
        "content": [{ "type": "input_text", "text": text }],
    })
}

impl ResponsesModel {
    /// A model at `base_url` (`https://api.openai.com/v1`, or a compatible server; `http://` for
    /// one on loopback), sending `api_key` as a bearer token.
    pub fn new(
        base_url: &str,
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<ResponsesModel, ModelError> {
        Ok(ResponsesModel {
            endpoint: Endpoint::new(base_url, "/responses", api_key.into())?,
            model: model.into(),
            instructions: None,
            tools: Vec::new(),
            max_turns: 8,
        })
    }

    /// OpenAI's API ([`OPENAI_BASE_URL`]).
    pub fn openai(
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<ResponsesModel, ModelError> {
        ResponsesModel::new(OPENAI_BASE_URL, api_key, model)
    }

    /// The `instructions` of every request.
    pub fn instructions(mut self, instructions: impl Into<String>) -> ResponsesModel {
        self.instructions = Some(instructions.into());
        self
    }

    /// The tools declared to the model (Responses `function` tools, e.g.
    /// [`toolc_core::declare::openai_function`] of each definition, or the compiled
    /// `openai-responses.json`).
    pub fn tools(mut self, tools: Vec<Value>) -> ResponsesModel {
        self.tools = tools;
        self
    }

    /// The tools declared.
    pub fn declared_tools(&self) -> &[Value] {
        &self.tools
    }

    /// The most requests one run sends (8 unless set; at least 1): a model that still calls
    /// tools after them is stopped ([`ModelError::TooManyTurns`]).
    pub fn max_turns(mut self, requests: usize) -> ResponsesModel {
        self.max_turns = requests.max(1);
        self
    }

    /// How long one request may take (120 s unless set).
    pub fn timeout(mut self, timeout: Duration) -> Result<ResponsesModel, ModelError> {
        self.endpoint.set_timeout(timeout)?;
        Ok(self)
    }

    /// Sends `input`, runs the tool calls of each response with `runner` and sends their
    /// results back (continuing with `previous_response_id`), until a response has no tool
    /// calls: its text is the answer. Calls that need approval are refused (the model reads
    /// that approval could not be asked for), as [`TurnRunner::follow_up`] does.
    pub async fn run(
        &self,
        runner: &TurnRunner,
        input: Vec<Value>,
    ) -> Result<ModelAnswer, ModelError> {
        let mut input = input;
        let mut previous: Option<String> = None;
        let mut calls = 0;
        for request in 1..=self.max_turns {
            let response = self.create(&input, previous.as_deref()).await?;
            let id = response
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| ModelError::Unreadable("a Response without an `id`".into()))?
                .to_owned();
            match response.get("status").and_then(Value::as_str) {
                None | Some("completed") => {}
                Some(other) => return Err(ModelError::NotCompleted(other.to_owned())),
            }
            let made = Responses.decode(&response).map_err(ModelError::Decode)?;
            if made.is_empty() {
                return Ok(ModelAnswer {
                    text: output_text(&response),
                    response_id: id,
                    requests: request,
                    calls,
                });
            }
            calls += made.len();
            input = runner
                .follow_up(&Responses, &response)
                .await
                .map_err(ModelError::Decode)?;
            previous = Some(id);
        }
        Err(ModelError::TooManyTurns(self.max_turns))
    }

    /// One `POST /responses`.
    async fn create(&self, input: &[Value], previous: Option<&str>) -> Result<Value, ModelError> {
        let mut body = json!({
            "model": self.model,
            "input": input,
            "tools": self.tools,
        });
        if let Some(instructions) = &self.instructions {
            body["instructions"] = json!(instructions);
        }
        if let Some(previous) = previous {
            body["previous_response_id"] = json!(previous);
        }
        let request = self
            .endpoint
            .client
            .post(&self.endpoint.url)
            .bearer_auth(&*self.endpoint.api_key);
        send_json(request, &body).await
    }
}

/// A future of a [`ChatModel`]'s answer (boxed so that the trait can be used as `dyn`).
pub type AnswerFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelAnswer, ModelError>> + Send + 'a>>;

/// A chat API toolc can run a tool-using task on: "run this prompt with these tools through
/// this runner until the model answers in text". The GPT-Live chat delegate takes any of them
/// (`toolc_runtime::delegate::chat_delegate`).
pub trait ChatModel: Send + Sync + 'static {
    /// `def` declared in this API's tool format.
    fn declare(&self, def: &ToolDefinition) -> Value;

    /// The tools declared to the model.
    fn declared_tools(&self) -> &[Value];

    /// Replaces the tools declared to the model (in this API's format).
    fn set_tools(&mut self, tools: Vec<Value>);

    /// Sends `prompt` as one user message (in this API's shape), runs the tool calls of each
    /// response with `runner` and sends their results back, until the model answers in text.
    fn answer<'a>(&'a self, runner: &'a TurnRunner, prompt: &'a str) -> AnswerFuture<'a>;
}

impl ChatModel for ResponsesModel {
    fn declare(&self, def: &ToolDefinition) -> Value {
        toolc_core::declare::openai_function(def)
    }
    fn declared_tools(&self) -> &[Value] {
        &self.tools
    }
    fn set_tools(&mut self, tools: Vec<Value>) {
        self.tools = tools;
    }
    fn answer<'a>(&'a self, runner: &'a TurnRunner, prompt: &'a str) -> AnswerFuture<'a> {
        Box::pin(self.run(runner, vec![user_message(prompt)]))
    }
}

/// Where a model's requests go: the client (its timeout), the URL and the key.
#[derive(Clone)]
struct Endpoint {
    client: reqwest::Client,
    url: String,
    /// Sent as the API's auth header; never printed.
    api_key: Arc<str>,
}

impl Endpoint {
    fn new(base_url: &str, path: &str, api_key: String) -> Result<Endpoint, ModelError> {
        let base = base_url.trim_end_matches('/');
        let https = base.starts_with("https://");
        if !https && !base.starts_with("http://") {
            return Err(ModelError::Setup(format!(
                "{base_url}: the base URL must start with https:// or http://"
            )));
        }
        Ok(Endpoint {
            client: http_client(https, Duration::from_secs(120))?,
            url: format!("{base}{path}"),
            api_key: Arc::from(api_key),
        })
    }

    fn set_timeout(&mut self, timeout: Duration) -> Result<(), ModelError> {
        self.client = http_client(self.url.starts_with("https://"), timeout)?;
        Ok(())
    }
}

/// Sends `body` with `request` (the URL and auth headers set) and reads the answer: a JSON
/// object within [`MAX_BODY`], or the API's error. Every API here answers a failure with an
/// error status and `{"error": {"message", ...}}`; the code is OpenAI's `error.code` or, in
/// Anthropic's `{"type": "error", "error": {"type", "message"}}`, the error's `type`.
async fn send_json(request: reqwest::RequestBuilder, body: &Value) -> Result<Value, ModelError> {
    let mut response = request
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| ModelError::Transport(error_chain(&e)))?;
    let status = response.status().as_u16();
    if response
        .content_length()
        .is_some_and(|n| n > MAX_BODY as u64)
    {
        return Err(ModelError::Unreadable(format!(
            "a body over {MAX_BODY} bytes"
        )));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ModelError::Transport(error_chain(&e)))?
    {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(ModelError::Unreadable(format!(
                "a body over {MAX_BODY} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    let parsed = serde_json::from_slice::<Value>(&bytes);
    if !(200..300).contains(&status) {
        let body = parsed.as_ref().ok();
        let error = body.and_then(|v| v.get("error"));
        let text = |key| error.and_then(|e| e.get(key)).and_then(Value::as_str);
        let message = text("message").map(str::to_owned).unwrap_or_else(|| {
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned()
        });
        let anthropic = body.and_then(|v| v.get("type")).and_then(Value::as_str) == Some("error");
        let code = text("code").or_else(|| anthropic.then(|| text("type")).flatten());
        return Err(ModelError::Api {
            status,
            message,
            code: code.map(str::to_owned),
        });
    }
    let value = parsed.map_err(|e| ModelError::Unreadable(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(ModelError::Unreadable("not a JSON object".into()));
    }
    Ok(value)
}

/// How a message-based API (Chat Completions, Anthropic) is read: whether a response
/// finished, and its text.
struct MessagesApi {
    codec: &'static dyn Codec,
    /// `Err` when the response was cut short (its calls or text are not whole).
    finished: fn(&Value) -> Result<(), ModelError>,
    text: fn(&Value) -> String,
}

/// The loop of the APIs that resend the whole conversation: send `messages`; a response with
/// tool calls is appended (the model's turn, then the results) and sent again; one without is
/// the answer. `request` builds each request from the conversation so far.
async fn converse(
    api: &MessagesApi,
    runner: &TurnRunner,
    max_turns: usize,
    mut messages: Vec<Value>,
    request: impl Fn(&[Value]) -> (reqwest::RequestBuilder, Value),
) -> Result<ModelAnswer, ModelError> {
    let mut calls = 0;
    for sent in 1..=max_turns {
        let (builder, body) = request(&messages);
        let response = send_json(builder, &body).await?;
        let id = response
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| ModelError::Unreadable("a response without an `id`".into()))?
            .to_owned();
        (api.finished)(&response)?;
        let made = api.codec.decode(&response).map_err(ModelError::Decode)?;
        if made.is_empty() {
            return Ok(ModelAnswer {
                text: (api.text)(&response),
                response_id: id,
                requests: sent,
                calls,
            });
        }
        calls += made.len();
        messages.extend(api.codec.assistant_turn(&response));
        messages.extend(
            runner
                .follow_up(api.codec, &response)
                .await
                .map_err(ModelError::Decode)?,
        );
    }
    Err(ModelError::TooManyTurns(max_turns))
}

/// OpenAI's Chat Completions API (`POST {base}/chat/completions`, bearer auth) as a
/// tool-using model. Tools are Chat `function` tools
/// ([`toolc_core::declare::openai_chat_function`], or the compiled `openai-chat.json`).
#[derive(Clone)]
pub struct ChatCompletionsModel {
    endpoint: Endpoint,
    model: String,
    instructions: Option<String>,
    tools: Vec<Value>,
    max_turns: usize,
}

impl fmt::Debug for ChatCompletionsModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCompletionsModel")
            .field("endpoint", &self.endpoint.url)
            .field("model", &self.model)
            .field("tools", &self.tools.len())
            .field("max_turns", &self.max_turns)
            .finish_non_exhaustive()
    }
}

const CHAT_API: MessagesApi = MessagesApi {
    codec: &ChatCompletions,
    finished: chat_finished,
    text: chat_text,
};

impl ChatCompletionsModel {
    /// A model at `base_url` (`https://api.openai.com/v1` or a compatible server).
    pub fn new(
        base_url: &str,
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<ChatCompletionsModel, ModelError> {
        Ok(ChatCompletionsModel {
            endpoint: Endpoint::new(base_url, "/chat/completions", api_key.into())?,
            model: model.into(),
            instructions: None,
            tools: Vec::new(),
            max_turns: 8,
        })
    }

    /// The system message of every request.
    pub fn instructions(mut self, instructions: impl Into<String>) -> ChatCompletionsModel {
        self.instructions = Some(instructions.into());
        self
    }

    /// The tools declared to the model (Chat `function` tools).
    pub fn tools(mut self, tools: Vec<Value>) -> ChatCompletionsModel {
        self.tools = tools;
        self
    }

    /// The most requests one run sends (8 unless set; at least 1).
    pub fn max_turns(mut self, requests: usize) -> ChatCompletionsModel {
        self.max_turns = requests.max(1);
        self
    }

    /// How long one request may take (120 s unless set).
    pub fn timeout(mut self, timeout: Duration) -> Result<ChatCompletionsModel, ModelError> {
        self.endpoint.set_timeout(timeout)?;
        Ok(self)
    }

    /// Sends `messages` (Chat messages, after the system message), runs the calls of each
    /// completion and sends their results back, until a completion has none.
    pub async fn run(
        &self,
        runner: &TurnRunner,
        messages: Vec<Value>,
    ) -> Result<ModelAnswer, ModelError> {
        let mut conversation = Vec::with_capacity(messages.len() + 1);
        if let Some(instructions) = &self.instructions {
            conversation.push(json!({"role": "system", "content": instructions}));
        }
        conversation.extend(messages);
        converse(
            &CHAT_API,
            runner,
            self.max_turns,
            conversation,
            |messages| {
                let body = self.body(messages);
                let request = self
                    .endpoint
                    .client
                    .post(&self.endpoint.url)
                    .bearer_auth(&*self.endpoint.api_key);
                (request, body)
            },
        )
        .await
    }

    fn body(&self, messages: &[Value]) -> Value {
        let mut body = json!({ "model": self.model, "messages": messages });
        // The API refuses an empty `tools` array ("[] is too short").
        if !self.tools.is_empty() {
            body["tools"] = json!(self.tools);
        }
        body
    }
}

impl ChatModel for ChatCompletionsModel {
    fn declare(&self, def: &ToolDefinition) -> Value {
        toolc_core::declare::openai_chat_function(def)
    }
    fn declared_tools(&self) -> &[Value] {
        &self.tools
    }
    fn set_tools(&mut self, tools: Vec<Value>) {
        self.tools = tools;
    }
    fn answer<'a>(&'a self, runner: &'a TurnRunner, prompt: &'a str) -> AnswerFuture<'a> {
        Box::pin(self.run(runner, vec![json!({"role": "user", "content": prompt})]))
    }
}

fn chat_finished(response: &Value) -> Result<(), ModelError> {
    match response
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
    {
        Some(reason @ ("length" | "content_filter")) => {
            Err(ModelError::NotCompleted(reason.to_owned()))
        }
        _ => Ok(()),
    }
}

fn chat_text(response: &Value) -> String {
    response
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Anthropic's API, where [`AnthropicModel::anthropic`] sends its requests.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent (the Messages API's current version).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic's Messages API (`POST {base}/v1/messages`, `x-api-key` and `anthropic-version`
/// headers) as a tool-using model. Tools are Anthropic tools
/// ([`toolc_core::declare::anthropic`], or the compiled `anthropic.json`).
#[derive(Clone)]
pub struct AnthropicModel {
    endpoint: Endpoint,
    model: String,
    instructions: Option<String>,
    tools: Vec<Value>,
    max_turns: usize,
    max_tokens: u32,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("endpoint", &self.endpoint.url)
            .field("model", &self.model)
            .field("tools", &self.tools.len())
            .field("max_turns", &self.max_turns)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

const ANTHROPIC_API: MessagesApi = MessagesApi {
    codec: &Anthropic,
    finished: anthropic_finished,
    text: anthropic_text,
};

impl AnthropicModel {
    /// A model at `base_url` (`https://api.anthropic.com`, without `/v1`).
    pub fn new(
        base_url: &str,
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<AnthropicModel, ModelError> {
        Ok(AnthropicModel {
            endpoint: Endpoint::new(base_url, "/v1/messages", api_key.into())?,
            model: model.into(),
            instructions: None,
            tools: Vec::new(),
            max_turns: 8,
            max_tokens: 1024,
        })
    }

    /// Anthropic's API ([`ANTHROPIC_BASE_URL`]).
    pub fn anthropic(
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<AnthropicModel, ModelError> {
        AnthropicModel::new(ANTHROPIC_BASE_URL, api_key, model)
    }

    /// The `system` prompt of every request.
    pub fn instructions(mut self, instructions: impl Into<String>) -> AnthropicModel {
        self.instructions = Some(instructions.into());
        self
    }

    /// The tools declared to the model (Anthropic tools).
    pub fn tools(mut self, tools: Vec<Value>) -> AnthropicModel {
        self.tools = tools;
        self
    }

    /// The most requests one run sends (8 unless set; at least 1).
    pub fn max_turns(mut self, requests: usize) -> AnthropicModel {
        self.max_turns = requests.max(1);
        self
    }

    /// `max_tokens` of each request (the API requires it; 1024 unless set, at least 1).
    pub fn max_tokens(mut self, tokens: u32) -> AnthropicModel {
        self.max_tokens = tokens.max(1);
        self
    }

    /// How long one request may take (120 s unless set).
    pub fn timeout(mut self, timeout: Duration) -> Result<AnthropicModel, ModelError> {
        self.endpoint.set_timeout(timeout)?;
        Ok(self)
    }

    /// Sends `messages` (Anthropic messages), runs the `tool_use` blocks of each answer and
    /// sends their results back, until an answer has none.
    pub async fn run(
        &self,
        runner: &TurnRunner,
        messages: Vec<Value>,
    ) -> Result<ModelAnswer, ModelError> {
        converse(
            &ANTHROPIC_API,
            runner,
            self.max_turns,
            messages,
            |messages| {
                let body = self.body(messages);
                let request = self
                    .endpoint
                    .client
                    .post(&self.endpoint.url)
                    .header("x-api-key", &*self.endpoint.api_key)
                    .header("anthropic-version", ANTHROPIC_VERSION);
                (request, body)
            },
        )
        .await
    }

    fn body(&self, messages: &[Value]) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
        });
        if let Some(instructions) = &self.instructions {
            body["system"] = json!(instructions);
        }
        if !self.tools.is_empty() {
            body["tools"] = json!(self.tools);
        }
        body
    }
}

impl ChatModel for AnthropicModel {
    fn declare(&self, def: &ToolDefinition) -> Value {
        toolc_core::declare::anthropic(def)
    }
    fn declared_tools(&self) -> &[Value] {
        &self.tools
    }
    fn set_tools(&mut self, tools: Vec<Value>) {
        self.tools = tools;
    }
    fn answer<'a>(&'a self, runner: &'a TurnRunner, prompt: &'a str) -> AnswerFuture<'a> {
        Box::pin(self.run(runner, vec![json!({"role": "user", "content": prompt})]))
    }
}

fn anthropic_finished(response: &Value) -> Result<(), ModelError> {
    match response.get("stop_reason").and_then(Value::as_str) {
        // A `tool_use` cut by `max_tokens` has partial input; a refusal has no answer.
        Some(reason @ ("max_tokens" | "refusal")) => {
            Err(ModelError::NotCompleted(reason.to_owned()))
        }
        _ => Ok(()),
    }
}

fn anthropic_text(response: &Value) -> String {
    let blocks = response.get("content").and_then(Value::as_array);
    blocks
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// The `output_text` of a Response's `message` items, joined.
fn output_text(response: &Value) -> String {
    let mut text = String::new();
    let items = response.get("output").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        let parts = item.get("content").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if part.get("type").and_then(Value::as_str) == Some("output_text") {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
        }
    }
    text
}

fn http_client(https: bool, timeout: Duration) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        // The API key goes to the host the application named, never to a redirect's.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .user_agent(concat!("toolc-chat/", env!("CARGO_PKG_VERSION")))
        .tls_backend_preconfigured(tls_config(https)?)
        .build()
        .map_err(|e| ModelError::Setup(e.to_string()))
}

fn error_chain(e: &reqwest::Error) -> String {
    // reqwest's own message is only "error sending request": the causes say why.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// rustls with the ring provider and, for `https://`, the system's roots (`SSL_CERT_FILE` /
/// `SSL_CERT_DIR` when set).
fn tls_config(with_roots: bool) -> Result<rustls::ClientConfig, ModelError> {
    let mut roots = rustls::RootCertStore::empty();
    if with_roots {
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            // A certificate the store cannot use is skipped, as a browser would.
            let _ = roots.add(cert);
        }
        if roots.is_empty() {
            return Err(ModelError::Setup(
                "no trusted root certificates found (set SSL_CERT_FILE to a PEM bundle)".into(),
            ));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ModelError::Setup(format!("cannot set up TLS: {e}")))
        .map(|config| config.with_root_certificates(roots).with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_messages_output_text() {
        let response = json!({"output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Order AB-1 ", "annotations": []},
                {"type": "refusal", "refusal": "no"},
                {"type": "output_text", "text": "has shipped.", "annotations": []},
            ]},
        ]});
        assert_eq!(output_text(&response), "Order AB-1 has shipped.");
        assert_eq!(output_text(&json!({"output": "x"})), "");
    }

    #[test]
    fn a_base_url_must_be_http() {
        let err = ResponsesModel::new("ftp://example.com", "k", "m").unwrap_err();
        assert!(matches!(err, ModelError::Setup(_)), "{err}");
        let model = ResponsesModel::new("http://127.0.0.1:9/v1/", "secret", "m").unwrap();
        assert_eq!(model.endpoint.url, "http://127.0.0.1:9/v1/responses");
        assert!(!format!("{model:?}").contains("secret"));
    }

    #[test]
    fn a_chat_completions_body_has_the_messages_and_no_empty_tools() {
        let model =
            ChatCompletionsModel::new("http://127.0.0.1:9/v1", "secret", "gpt-5.5").unwrap();
        assert_eq!(model.endpoint.url, "http://127.0.0.1:9/v1/chat/completions");
        let messages = [json!({"role": "user", "content": "hi"})];
        // The API refuses `tools: []`.
        assert_eq!(
            model.body(&messages),
            json!({"model": "gpt-5.5", "messages": messages})
        );
        let tool = json!({"type": "function", "function": {"name": "f", "parameters": {}}});
        let model = model.tools(vec![tool.clone()]);
        assert_eq!(model.body(&messages)["tools"], json!([tool]));
        assert!(!format!("{model:?}").contains("secret"));
    }

    #[test]
    fn an_anthropic_body_has_max_tokens_and_the_system_prompt() {
        let model = AnthropicModel::new("http://127.0.0.1:9/", "secret", "claude")
            .unwrap()
            .instructions("Be brief.")
            .max_tokens(0);
        assert_eq!(model.endpoint.url, "http://127.0.0.1:9/v1/messages");
        let messages = [json!({"role": "user", "content": "hi"})];
        assert_eq!(
            model.body(&messages),
            json!({"model": "claude", "max_tokens": 1, "system": "Be brief.", "messages": messages})
        );
        assert!(!format!("{model:?}").contains("secret"));
    }

    #[test]
    fn a_cut_short_answer_is_not_completed_and_the_text_is_read() {
        let cut = json!({"choices": [{"finish_reason": "length", "message": {"content": "Or"}}]});
        assert_eq!(
            chat_finished(&cut),
            Err(ModelError::NotCompleted("length".into()))
        );
        let done = json!({"choices": [{"finish_reason": "stop", "message": {"content": "Done."}}]});
        assert_eq!(chat_finished(&done), Ok(()));
        assert_eq!(chat_text(&done), "Done.");
        let refused = json!({"stop_reason": "refusal", "content": []});
        assert!(anthropic_finished(&refused).is_err());
        let answer = json!({"stop_reason": "end_turn", "content": [
            {"type": "text", "text": "Order AB-1 "},
            {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            {"type": "text", "text": "has shipped."},
        ]});
        assert_eq!(anthropic_finished(&answer), Ok(()));
        assert_eq!(anthropic_text(&answer), "Order AB-1 has shipped.");
    }
}
