//! Every message a Gemini Live session sends upstream validates as a `LiveClientMessage` of
//! Google's own Gen AI SDK (`google-genai`, whose pydantic models refuse unknown members), and
//! every server message of the scripted fake model, as the model sent it and as the browser
//! gets it after the session rewrote it, validates as a `LiveServerMessage`. Each is checked
//! twice: by the SDK itself (`tests/gemini-live/validate.py`, in the virtualenv `scripts/setup`
//! makes) and against the JSON Schemas generated from it (`specs/gemini-live/`), which a test
//! keeps equal to the SDK's.
#![cfg(feature = "testing")]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::realtime::{
    script, Output, RealtimeProvider, RealtimeSession, Scheduling, SessionConfig, Verdict,
};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup_order
    description: Find an order.
    location: server
    parameters:
      type: object
      properties:
        order_number: { type: string, pattern: "^[A-Z]{2}-[0-9]{6}$" }
        fields:
          type: array
          items: { type: string, enum: [status, total, items] }
          uniqueItems: true
        since: { type: string, format: date }
      required: [order_number]
      additionalProperties: false
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 5s
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
  - name: show_toast
    description: Show a short message.
    location: client
    wait_for_response: false
    parameters:
      type: object
      properties: { text: { type: string, maxLength: 80 } }
  - name: build_report
    description: Build a long report.
    location: server
    mode: async
    parameters:
      type: object
      properties: { topic: { type: string } }
  - name: ping
    description: No parameters at all.
    location: server
"#;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("live.tools.yaml", MANIFEST).expect("manifest");
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "lookup_order",
                executor_fn(|args: Value| async move {
                    Ok(json!({ "order": args["order_number"], "status": "shipped" }))
                }),
            )
            .executor(
                "build_report",
                executor_fn(|_| async {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    Ok(json!({ "pages": 3 }))
                }),
            )
            .executor("ping", executor_fn(|_| async { Ok(json!("pong")) }))
            .build()
            .expect("registry"),
    )
}

/// One line for the validator: the side, then the message.
fn line(side: &str, message: &str) -> String {
    let value: Value = serde_json::from_str(message).expect("messages are JSON");
    format!("{side} {value}\n")
}

/// Runs the SDK's validator over `lines`; its output and whether it accepted all.
fn validate(lines: &str) -> (String, bool) {
    let python = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs Google's Gen AI SDK there)",
        python.display()
    );
    let dir = std::env::temp_dir().join(format!("toolc-live-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("messages-{}.jsonl", lines.len()));
    std::fs::write(&file, lines).unwrap();
    let out = std::process::Command::new(python)
        .arg(repo().join("tests/gemini-live/validate.py"))
        .arg(&file)
        .output()
        .expect("the validator runs");
    let _ = std::fs::remove_file(&file);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (text, out.status.success())
}

/// The schema of one side's messages, from `specs/gemini-live/`.
fn schema(side: &str) -> jsonschema::Validator {
    let path = repo().join(format!("specs/gemini-live/{side}-message.schema.json"));
    let text = std::fs::read_to_string(&path).expect("the Live schema files are in the repo");
    let schema: Value = serde_json::from_str(&text).expect("schema JSON");
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

/// The schema errors of every line, as `line: error`.
fn schema_errors(lines: &str) -> Vec<String> {
    let (client, server) = (schema("client"), schema("server"));
    let mut errors = Vec::new();
    for (n, l) in lines.lines().enumerate() {
        let (side, text) = l.split_once(' ').unwrap();
        let message: Value = serde_json::from_str(text).unwrap();
        let validator = if side == "client" { &client } else { &server };
        errors.extend(
            validator
                .iter_errors(&message)
                .map(|e| format!("{}: {e} at {}", n + 1, e.instance_path().as_str())),
        );
    }
    errors
}

struct Run {
    session: RealtimeSession,
    events: toolc_runtime::realtime::SessionEvents,
    lines: String,
    client_messages: usize,
    server_messages: usize,
}

impl Run {
    fn model(&mut self, message: &Value) {
        let text = message.to_string();
        self.lines += &line("server", &text);
        self.server_messages += 1;
        match self.session.on_model_event(&text) {
            Verdict::Forward => {}
            // What the page gets must still be a message its Live client reads.
            Verdict::Replace(rewritten) => {
                self.lines += &line("server", &rewritten);
                self.server_messages += 1;
            }
            Verdict::Drop => {}
        }
        self.drain();
    }

    fn browser(&mut self, message: &Value) {
        let text = message.to_string();
        if self.session.on_browser_event(&text) == Verdict::Forward && message.get("type").is_none()
        {
            self.lines += &line("client", &text);
            self.client_messages += 1;
        }
        self.drain();
    }

    fn drain(&mut self) {
        let outputs: Vec<Output> = self.session.drain_outputs().collect();
        for output in outputs {
            if let Output::ToModel(text) = output {
                self.lines += &line("client", &text);
                self.client_messages += 1;
            }
        }
    }

    async fn run_for(&mut self, d: Duration) {
        let until = tokio::time::Instant::now() + d;
        while let Ok(Some(event)) = tokio::time::timeout_at(until, self.events.recv()).await {
            self.session.on_event(event);
            self.drain();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn every_live_message_validates_with_googles_gen_ai_sdk() {
    let registry = registry();
    let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GeminiLive);
    config.async_scheduling = Scheduling::Interrupt;
    let (session, events) = RealtimeSession::new(registry, Arc::new(config));
    let setup = session.session_update();
    let mut run = Run {
        session,
        events,
        lines: line("client", &setup),
        client_messages: 1,
        server_messages: 0,
    };
    run.model(&script::live::setup_complete());
    run.browser(
        &json!({"realtimeInput": {"audio": {"data": "AAAA", "mimeType": "audio/pcm;rate=16000"}}}),
    );
    run.browser(&json!({"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Where is AB-123456?"}]}], "turnComplete": true}}));
    // A call in the model turn, then the batch that repeats it with more: server, client,
    // fire-and-forget, background, unknown and invalid calls.
    let lookup = json!({"order_number": "AB-123456", "fields": ["status"]});
    run.model(&script::live::model_turn_call(
        "c1",
        "lookup_order",
        lookup.clone(),
    ));
    run.model(&script::live::tool_call(&[
        ("c1", "lookup_order", lookup),
        ("c2", "highlight", json!({"selector": "#order"})),
        ("c3", "show_toast", json!({"text": "Found it"})),
        ("c4", "build_report", json!({"topic": "shipping"})),
        ("c5", "no_such_tool", json!({})),
        ("c6", "lookup_order", json!({"order_number": 7})),
        ("c7", "ping", json!({})),
    ]));
    run.model(&script::live::audio("UklGRg=="));
    run.browser(&json!({"type": "function_call.result", "call_id": "c2", "output": "{\"highlighted\":true}"}));
    run.run_for(Duration::from_millis(50)).await;
    // The next batch is cancelled before the page answers it.
    run.model(&script::live::tool_call(&[(
        "c8",
        "highlight",
        json!({"selector": "#help"}),
    )]));
    run.model(&script::live::cancellation(&["c8"]));
    run.model(&script::live::turn_complete(true));
    run.run_for(Duration::from_secs(3)).await;
    run.model(&script::live::turn_complete(false));

    let responses: Vec<&str> = run
        .lines
        .lines()
        .filter(|l| l.starts_with("client ") && l.contains("toolResponse"))
        .collect();
    assert_eq!(
        responses.len(),
        3,
        "the batch, the report's start, its result: {responses:#?}"
    );
    assert!(responses
        .iter()
        .any(|r| r.contains(r#""scheduling":"INTERRUPT""#)));
    assert!(run.lines.contains("parametersJsonSchema"));
    assert!(run.client_messages >= 6 && run.server_messages >= 8);
    let errors = schema_errors(&run.lines);
    assert!(errors.is_empty(), "{}\n{}", errors.join("\n"), run.lines);
    let (report, accepted) = validate(&run.lines);
    assert!(accepted, "the SDK refused messages:\n{report}");
    assert!(
        report.contains(&format!(
            "{} accepted, 0 refused",
            run.client_messages + run.server_messages
        )),
        "{report}"
    );
}

#[test]
fn the_validator_refuses_what_the_sdk_does_not_know() {
    let good = line(
        "client",
        r#"{"toolResponse":{"functionResponses":[{"id":"c1","name":"a","response":{"output":{}}}]}}"#,
    );
    let (report, accepted) = validate(&good);
    assert!(accepted, "{report}");
    for bad in [
        // A member a declaration does not have.
        r#"client {"setup":{"model":"models/m","tools":[{"functionDeclarations":[{"name":"a","inputSchema":{}}]}]}}"#,
        // An enum value the SDK does not know.
        r#"client {"toolResponse":{"functionResponses":[{"id":"c1","name":"a","response":{},"scheduling":"LATER"}]}}"#,
        // A client message where a server one belongs.
        r#"server {"toolResponse":{"functionResponses":[]}}"#,
    ] {
        let (report, accepted) = validate(&format!("{bad}\n"));
        assert!(!accepted, "accepted {bad}: {report}");
        assert!(report.contains("refused"), "{report}");
        assert!(!schema_errors(bad).is_empty(), "the schema accepted {bad}");
    }
    assert!(schema_errors(good.trim_end()).is_empty());
}

#[test]
fn the_schema_files_are_the_sdks() {
    let python = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs Google's Gen AI SDK there)",
        python.display()
    );
    let out = std::process::Command::new(python)
        .arg(repo().join("tests/gemini-live/schema.py"))
        .arg("--check")
        .output()
        .expect("schema.py runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Gemini Live declares each tool exactly as `toolc build --gemini-schema json-schema` does
/// (`parametersJsonSchema`, `responseJsonSchema`, none for a tool without arguments): one
/// lowering, `toolc_core::schema_util::gemini_parameters_json_schema`. Live adds `behavior`.
#[test]
fn live_declarations_are_the_compilers_json_schema_declarations() {
    use toolc::emit::providers::{file_text_with, GeminiSchema, Provider};
    let manifests = [
        repo().join("manifests/support.tools.yaml"),
        repo().join("manifests/commerce.tools.yaml"),
        repo().join("runtime/tests/fixtures/edge.tools.yaml"),
    ];
    let extra = "version: 1\ntools:\n  - name: open_ended\n    description: Takes anything.\n    location: server\n    parameters: { type: object }\n  - name: nothing\n    description: Takes nothing.\n    location: server\n";
    let mut session = toolc::Session::new();
    for path in &manifests {
        session.add_path(path).unwrap();
    }
    session.add_manifest("extra.tools.yaml", extra.as_bytes());
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{}", session.render(false)));
    let file: Value = serde_json::from_str(&file_text_with(
        &ir,
        Provider::Gemini,
        GeminiSchema::JsonSchema,
        &mut session.diagnostics,
    ))
    .unwrap();
    let compiled = file["functionDeclarations"].as_array().unwrap();
    let definitions = ir.definitions();
    let live = toolc_runtime::realtime::gemini_live::declarations(definitions.iter());
    assert_eq!(live.len(), compiled.len());
    for (mut live, compiled) in live.into_iter().zip(compiled) {
        live.as_object_mut().unwrap().remove("behavior");
        assert_eq!(&live, compiled);
    }
    let by_name = |name: &str| compiled.iter().find(|d| d["name"] == name).unwrap();
    assert_eq!(
        by_name("open_ended")["parametersJsonSchema"],
        json!({ "type": "object" })
    );
    assert!(by_name("nothing").get("parametersJsonSchema").is_none());
}

/// Real Live traffic, captured by Google's SDK tests and by integrators
/// (`runtime/tests/fixtures/gemini-live-captures/`, each message with its source), read by a
/// session as it arrives in binary frames and as text: nothing is unreadable, content is
/// forwarded as it came, calls run (the captured tools are not this registry's, so each gets
/// an "unknown tool" result) and are kept from the page, the session's own messages are
/// consumed, and everything the session sends upstream validates with Google's SDK.
#[tokio::test(start_paused = true)]
async fn captured_live_traffic_is_read_from_either_frame_type() {
    let path = repo().join("runtime/tests/fixtures/gemini-live-captures/captures.jsonl");
    let captures: Vec<Value> = std::fs::read_to_string(&path)
        .expect("the captures are in the repo")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one capture per line"))
        .collect();
    assert!(captures.len() >= 40, "{} captures", captures.len());
    for binary in [true, false] {
        let registry = registry();
        let config = SessionConfig::for_provider(&registry, RealtimeProvider::GeminiLive);
        let counters = config.counters.clone();
        let (mut session, _events) = RealtimeSession::new(registry, Arc::new(config));
        let mut upstream = line("client", &session.session_update());
        let mut calls = 0;
        for capture in &captures {
            let (kind, message) = (capture["kind"].as_str().unwrap(), &capture["message"]);
            let text = message.to_string();
            let verdict = if binary {
                session.on_model_binary(text.as_bytes())
            } else {
                session.on_model_event(&text)
            };
            let expected = match kind {
                "sessionResumptionUpdate" | "goAway" => Verdict::Drop,
                // Unknown tools are not the page's to see either.
                "toolCall" => Verdict::Drop,
                _ => Verdict::Forward,
            };
            assert_eq!(verdict, expected, "{kind} from {}", capture["source"]);
            for output in session.drain_outputs() {
                if let Output::ToModel(text) = output {
                    calls += text.matches(r#""id""#).count();
                    upstream += &line("client", &text);
                }
            }
        }
        assert_eq!(counters.snapshot().unreadable_model_events, 0);
        assert_eq!(calls, 7, "one result per captured call: {upstream}");
        // The captured sessionResumptionUpdates gave a handle: the `setup` of a resumed
        // connection carries it, and the SDK reads that too.
        let resumed = session
            .resume_setup()
            .expect("a captured handle to resume from");
        assert!(
            resumed.contains(r#""handle":"e1ddd004-e1ed-4c01-bb7b-3c307827af0f""#),
            "{resumed}"
        );
        upstream += &line("client", &resumed);
        let errors = schema_errors(&upstream);
        assert!(errors.is_empty(), "{}\n{upstream}", errors.join("\n"));
        let (report, accepted) = validate(&upstream);
        assert!(accepted, "the SDK refused what the session sent:\n{report}");
    }
}
