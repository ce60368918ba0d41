//! Approvals over MCP, against a real rmcp client: a tool with `approval: required` is listed,
//! and each call asks the user through the client's elicitation (the arguments shown, yes or
//! no) before it runs: an `elicitation/create` request up to protocol 2025-11-25, an
//! `input_required` result (MRTR) from 2026-07-28 on. A no, a dismissal, a client that cannot
//! be asked, a question nobody answers and a retry not bound to the call all end as the chat
//! runner's and the relay's refusals do, without running the tool.
#![cfg(feature = "mcp")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, InputRequest, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{json, Value};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{definitions_from_str, executor_fn_with_context, CallContext, Registry};

const MANIFEST: &str = r#"version: 1
tools:
  - name: refund_order
    title: Refund an order
    description: Refund part of an order.
    location: server
    approval: required
    parameters:
      type: object
      properties:
        order: { type: string }
        amount: { type: number }
      required: [order, amount]
      additionalProperties: false
  - name: lookup
    description: Look an order up.
    location: server
    parameters:
      type: object
      properties:
        order: { type: string }
"#;

/// What the executors saw: (tool, call id, arguments).
type Runs = Arc<Mutex<Vec<(String, String, Value)>>>;

fn registry(runs: &Runs) -> Arc<Registry> {
    let mut builder =
        Registry::builder().definitions(definitions_from_str("a.tools.yaml", MANIFEST).unwrap());
    for tool in ["refund_order", "lookup"] {
        let runs = runs.clone();
        builder = builder.executor(
            tool,
            executor_fn_with_context(move |ctx: CallContext, args: Value| {
                let runs = runs.clone();
                async move {
                    runs.lock().unwrap().push((
                        ctx.tool().to_owned(),
                        ctx.call_id().to_owned(),
                        args.clone(),
                    ));
                    Ok(json!({ "done": args }))
                }
            }),
        );
    }
    Arc::new(builder.build().unwrap())
}

/// How the scripted user answers an elicitation.
#[derive(Clone)]
enum Answer {
    /// An `ElicitResult` as JSON.
    With(Value),
    /// Never answers.
    Never,
}

/// An MCP host whose user answers every question as scripted; it keeps what it was asked.
#[derive(Clone)]
struct Host {
    version: ProtocolVersion,
    elicitation: bool,
    answer: Answer,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Host {
    fn new(version: ProtocolVersion, answer: Answer) -> Host {
        Host {
            version,
            elicitation: true,
            answer,
            asked: Arc::default(),
        }
    }
}

impl ClientHandler for Host {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked
            .lock()
            .unwrap()
            .push((message, serde_json::to_value(&requested_schema).unwrap()));
        match &self.answer {
            Answer::With(v) => Ok(serde_json::from_value(v.clone()).unwrap()),
            Answer::Never => std::future::pending().await,
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        }
        let mut config = ClientConfig::new(capabilities, Implementation::new("host", "1"));
        config.protocol_version = self.version.clone();
        config
    }
}

/// 2026-07-28 has no `initialize`: the client discovers (`server/discover`) and names its
/// version and capabilities in every request.
fn lifecycle(version: &ProtocolVersion) -> ClientLifecycleMode {
    if version.has_initialize() {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![version.clone()],
        }
    }
}

async fn connect(server: McpServer, host: Host) -> RunningService<RoleClient, Host> {
    let (a, b) = tokio::io::duplex(256 * 1024);
    tokio::spawn(server.serve_io(tokio::io::split(b)));
    let lifecycle = lifecycle(&host.version);
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        host.serve_with_lifecycle(tokio::io::split(a), lifecycle),
    )
    .await
    .expect("the handshake ends in time")
    .expect("the client connects");
    client
}

fn refund(order: &str, amount: f64) -> CallToolRequestParams {
    CallToolRequestParams::new("refund_order").with_arguments(
        json!({"order": order, "amount": amount})
            .as_object()
            .unwrap()
            .clone(),
    )
}

async fn call(
    client: &RunningService<RoleClient, Host>,
    params: CallToolRequestParams,
) -> CallToolResult {
    tokio::time::timeout(Duration::from_secs(10), client.call_tool(params))
        .await
        .expect("the call ends in time")
        .expect("the call is answered")
}

/// The `{"error": ...}` of an error result.
fn error_of(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    serde_json::from_str::<Value>(&text).unwrap()["error"].clone()
}

const VERSIONS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_tool_is_listed_and_a_yes_runs_the_call_once_with_the_arguments_shown() {
    for version in VERSIONS {
        let runs = Runs::default();
        let host = Host::new(
            version.clone(),
            Answer::With(json!({"action": "accept", "content": {"approve": true}})),
        );
        let asked = host.asked.clone();
        let client = connect(McpServer::new(registry(&runs)), host).await;
        let negotiated = client.peer_info().map(|i| i.protocol_version.clone());
        assert_eq!(negotiated, Some(version.clone()));
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["refund_order", "lookup"], "{version}");

        let result = call(&client, refund("AB-1", 20.5)).await;
        assert_ne!(result.is_error, Some(true), "{version}: {result:?}");
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.len(), 1, "{version}: it ran once");
        assert_eq!(runs[0].0, "refund_order");
        assert_eq!(runs[0].2, json!({"order": "AB-1", "amount": 20.5}));

        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{version}: one question per call");
        let (message, schema) = &asked[0];
        assert!(message.contains("`refund_order`"), "{message}");
        assert!(message.contains("Refund an order"), "the title: {message}");
        assert!(
            message.contains("\"AB-1\"") && message.contains("20.5"),
            "{message}"
        );
        assert_eq!(
            schema["properties"]["approve"]["type"], "boolean",
            "{schema}"
        );
        assert_eq!(schema["required"], json!(["approve"]), "{schema}");

        // A tool without approval asks nobody.
        let params = CallToolRequestParams::new("lookup")
            .with_arguments(json!({"order": "AB-1"}).as_object().unwrap().clone());
        let result = call(&client, params).await;
        assert_ne!(result.is_error, Some(true), "{result:?}");
        assert_eq!(client.service().asked.lock().unwrap().len(), 1);
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_is_the_declined_outcome_of_chat_and_relay_and_nothing_runs() {
    let cases = [
        (json!({"action": "decline"}), None),
        (json!({"action": "cancel"}), None),
        (
            json!({"action": "accept", "content": {"approve": false, "reason": "too much"}}),
            Some("too much"),
        ),
    ];
    for version in VERSIONS {
        for (answer, reason) in &cases {
            let runs = Runs::default();
            let host = Host::new(version.clone(), Answer::With(answer.clone()));
            let client = connect(McpServer::new(registry(&runs)), host).await;
            let result = call(&client, refund("AB-1", 5.0)).await;
            let error = error_of(&result);
            assert_eq!(error["kind"], "not_approved", "{version} {answer}: {error}");
            assert_eq!(
                error["code"], "approval_denied",
                "{version} {answer}: {error}"
            );
            // The same text the engine gives the chat runner's and the relay's declines.
            let expected = toolc_runtime::CallError::approval_denied("refund_order", *reason);
            let expected: Value = serde_json::from_str(&expected.model_text()).unwrap();
            assert_eq!(error, expected["error"], "{version} {answer}");
            assert!(
                runs.lock().unwrap().is_empty(),
                "{version} {answer}: it did not run"
            );
            client.cancel().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_does_not_follow_the_form_is_no_yes() {
    for version in VERSIONS {
        for answer in [
            json!({"action": "accept"}),
            json!({"action": "accept", "content": {"approve": "yes"}}),
            json!({"action": "accept", "content": {"reason": "ok"}}),
        ] {
            let runs = Runs::default();
            let host = Host::new(version.clone(), Answer::With(answer.clone()));
            let client = connect(McpServer::new(registry(&runs)), host).await;
            let result = call(&client, refund("AB-1", 5.0)).await;
            let error = error_of(&result);
            assert_eq!(error["kind"], "not_approved", "{version} {answer}: {error}");
            assert!(runs.lock().unwrap().is_empty(), "{version} {answer}");
            client.cancel().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_gets_a_clear_error_and_the_tool_does_not_run() {
    for version in VERSIONS {
        let runs = Runs::default();
        let mut host = Host::new(
            version.clone(),
            Answer::With(json!({"action": "accept", "content": {"approve": true}})),
        );
        host.elicitation = false;
        let asked = host.asked.clone();
        let client = connect(McpServer::new(registry(&runs)), host).await;
        let result = call(&client, refund("AB-1", 5.0)).await;
        let error = error_of(&result);
        assert_eq!(error["code"], "approval_unavailable", "{version}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("approval"), "{message}");
        // And why, for whoever reads the host's logs.
        let why = result.content[1]
            .as_text()
            .expect("a second block")
            .text
            .clone();
        assert!(why.contains("elicitation"), "{why}");
        assert!(runs.lock().unwrap().is_empty());
        assert!(asked.lock().unwrap().is_empty(), "nobody was asked");
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_ends_as_approval_timeout() {
    // Up to 2025-11-25 the server waits for the elicitation's answer that never comes.
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let runs = Runs::default();
        let host = Host::new(version.clone(), Answer::Never);
        let server =
            McpServer::new(registry(&runs)).with_approval_timeout(Duration::from_millis(300));
        let client = connect(server, host).await;
        let result = call(&client, refund("AB-1", 5.0)).await;
        let error = error_of(&result);
        assert_eq!(error["code"], "approval_timeout", "{version}: {error}");
        assert!(runs.lock().unwrap().is_empty());
        client.cancel().await.unwrap();
    }
    // From 2026-07-28 on, a retry that comes back after the timeout.
    let runs = Runs::default();
    let host = Host::new(ProtocolVersion::V_2026_07_28, Answer::Never);
    let server = McpServer::new(registry(&runs)).with_approval_timeout(Duration::from_millis(200));
    let client = connect(server, host).await;
    let CallToolResponse::InputRequired(asked) =
        client.call_tool_once(refund("AB-1", 5.0)).await.unwrap()
    else {
        panic!("an input_required result")
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut retry = refund("AB-1", 5.0);
    retry.request_state = asked.request_state.clone();
    retry.input_responses = Some(
        [(
            "toolc_approval".to_owned(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]
        .into(),
    );
    let result = call(&client, retry).await;
    assert_eq!(error_of(&result)["code"], "approval_timeout");
    assert!(runs.lock().unwrap().is_empty());
    client.cancel().await.unwrap();
}

/// Over MRTR the answer comes back in a retry: it counts only for the call it was asked for
/// (same tool, same arguments), once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mrtr_answer_is_bound_to_its_call_and_used_once() {
    let runs = Runs::default();
    let host = Host::new(ProtocolVersion::V_2026_07_28, Answer::Never);
    let client = connect(McpServer::new(registry(&runs)), host).await;
    let CallToolResponse::InputRequired(asked) =
        client.call_tool_once(refund("AB-1", 5.0)).await.unwrap()
    else {
        panic!("an input_required result")
    };
    let state = asked.request_state.clone().expect("a request state");
    let requests = asked.input_requests.expect("the question");
    assert_eq!(requests.len(), 1);
    let InputRequest::Elicitation(question) = &requests["toolc_approval"] else {
        panic!("an elicitation")
    };
    let ElicitRequestParams::FormElicitationParams { message, .. } = &question.params else {
        panic!("a form")
    };
    assert!(message.contains("\"AB-1\""), "{message}");
    let yes: rmcp::model::InputResponses = [(
        "toolc_approval".to_owned(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]
    .into();
    let retry = |order: &str, amount: f64, state: &str| {
        let mut r = refund(order, amount);
        r.request_state = Some(state.to_owned());
        r.input_responses = Some(yes.clone());
        r
    };
    // Other arguments, a forged state, another tool: refused, nothing runs.
    for params in [
        retry("AB-1", 500.0, &state),
        retry("AB-2", 5.0, &state),
        retry("AB-1", 5.0, "toolc-approval-0000"),
        retry("AB-1", 5.0, ""),
        retry("AB-1", 5.0, &"x".repeat(100_000)),
    ] {
        let error = error_of(&call(&client, params).await);
        assert_eq!(error["code"], "approval_required", "{error}");
    }
    let mut other_tool = CallToolRequestParams::new("lookup")
        .with_arguments(json!({"order": "AB-1"}).as_object().unwrap().clone());
    other_tool.request_state = Some(state.clone());
    other_tool.input_responses = Some(yes.clone());
    let error = error_of(&call(&client, other_tool).await);
    assert_eq!(error["code"], "approval_required", "{error}");
    assert!(
        runs.lock().unwrap().is_empty(),
        "no stray retry ran anything"
    );

    // The retry of the same call runs it, under the id of the call that asked.
    let result = call(&client, retry("AB-1", 5.0, &state)).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(runs.lock().unwrap().len(), 1);
    // And once only: a replay is refused.
    let error = error_of(&call(&client, retry("AB-1", 5.0, &state)).await);
    assert_eq!(error["code"], "approval_required", "{error}");
    assert_eq!(runs.lock().unwrap().len(), 1);
    client.cancel().await.unwrap();
}

/// The request's cancellation withdraws the question: the tool does not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_does_not_run_after_a_late_yes() {
    let runs = Runs::default();
    let host = Host::new(ProtocolVersion::V_2025_11_25, Answer::Never);
    let asked = host.asked.clone();
    let client = connect(McpServer::new(registry(&runs)), host).await;
    let pending = tokio::spawn({
        let peer = client.peer().clone();
        async move { peer.call_tool(refund("AB-1", 5.0)).await }
    });
    for _ in 0..100 {
        if !asked.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(asked.lock().unwrap().len(), 1, "the user was asked");
    pending.abort();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(runs.lock().unwrap().is_empty());
    client.cancel().await.unwrap();
}

/// Over streamable HTTP on loopback, with both ways of asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_over_streamable_http() {
    // Beside the catalog feature's ring, the workspace build enables a second rustls provider:
    // reqwest's client then needs the process default chosen.
    let _ = rustls::crypto::ring::default_provider().install_default();
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let runs = Runs::default();
        let server = McpServer::new(registry(&runs));
        let app = axum::Router::new().nest_service("/mcp", server.streamable_http());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let serving = tokio::spawn(async move { axum::serve(listener, app).await });
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
        let host = Host::new(
            version.clone(),
            Answer::With(json!({"action": "accept", "content": {"approve": true}})),
        );
        let lifecycle = lifecycle(&version);
        let client = tokio::time::timeout(
            Duration::from_secs(10),
            host.serve_with_lifecycle(transport, lifecycle),
        )
        .await
        .unwrap()
        .unwrap();
        let result = call(&client, refund("AB-9", 1.0)).await;
        assert_ne!(result.is_error, Some(true), "{version}: {result:?}");
        assert_eq!(runs.lock().unwrap().len(), 1, "{version}");
        client.cancel().await.unwrap();
        serving.abort();
    }
}
