//! `#[tool]` fns through the runtime registry: definitions derived from Rust, definitions taken
//! from a manifest, defaults applied, typed arguments, and the location rule at run time.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolc_runtime::{tool, tools, CallErrorKind, Location, ToolError};

/// Search the docs and return the best passages.
///
/// # Arguments
///
/// * `query` - What to look for.
/// * `limit` - How many passages, at most.
#[tool]
async fn search_docs(
    query: String,
    limit: Option<u8>,
    tags: Vec<String>,
) -> Result<Vec<String>, ToolError> {
    let n = limit.unwrap_or(2) as usize;
    Ok(std::iter::repeat_n(format!("{query}:{}", tags.join("+")), n).collect())
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Range {
    /// Inclusive lower bound.
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Stats {
    pub count: u32,
    pub mean: f64,
}

/// Summarise numbers within a range.
#[tool(name = "range-stats", timeout = "2s")]
fn range_stats(
    #[arg(description = "The numbers.")] values: &[f64],
    range: Range,
    #[arg(name = "round-to")] round_to: Option<i32>,
) -> Stats {
    let inside: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| *v >= range.min && *v <= range.max)
        .collect();
    let mean = inside.iter().sum::<f64>() / inside.len().max(1) as f64;
    let scale = 10f64.powi(round_to.unwrap_or(0));
    Stats {
        count: inside.len() as u32,
        mean: (mean * scale).round() / scale,
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text to echo.
    pub text: String,
    pub times: Option<u8>,
}

/// Echo text back.
#[tool]
async fn echo(#[args] args: EchoArgs) -> Result<String, std::fmt::Error> {
    Ok(args.text.repeat(args.times.unwrap_or(1) as usize))
}

/// Highlight an element on the page.
#[tool(client, wait_for_response = false)]
fn highlight(selector: &str, color: Option<String>);

// Bound to the shared manifest: the definitions come from it, the signatures are checked
// against it.
#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_articles(query: String, limit: u32) -> Result<Value, ToolError> {
    Ok(json!({ "articles": (0..limit).map(|i| json!({
        "id": i.to_string(), "title": query.clone(), "summary": "", "section": "s"
    })).collect::<Vec<_>>() }))
}

#[tool(manifest = "../manifests/support.tools.yaml")]
fn get_order_status(order_number: &str) -> Result<Value, ToolError> {
    if order_number.starts_with("XX") {
        return Err(ToolError::new("no such order").with_code("not_found"));
    }
    Ok(json!({ "status": "shipped", "eta": null }))
}

#[tool(client, manifest = "../manifests/support.tools.yaml")]
fn highlight_element(selector: String, color: Option<String>);

// Bound to a manifest that declares scopes: they reach the definition through the JSON the
// macro embeds.
#[tool(manifest = "tests/manifests/scoped.tools.yaml")]
fn close_ticket(id: String) -> Result<Value, ToolError> {
    Ok(json!({ "closed": id }))
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn definitions_from_rust() {
    let registry = tools![search_docs, range_stats, echo, highlight]
        .build()
        .unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["search_docs", "range-stats", "echo", "highlight"]);

    let search = registry.definition("search_docs").unwrap();
    assert_eq!(
        search.description,
        "Search the docs and return the best passages."
    );
    assert_eq!(search.location, Location::Server);
    assert_eq!(
        search.parameters,
        json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": "What to look for." },
                "limit": { "type": "integer", "minimum": 0, "maximum": 255, "description": "How many passages, at most." },
                "tags": { "type": "array", "items": { "type": "string" } }
            },
            "required": ["query", "tags"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        search.returns,
        Some(json!({ "type": "array", "items": { "type": "string" } }))
    );

    let stats = registry.definition("range-stats").unwrap();
    assert_eq!(stats.timeout, Some(std::time::Duration::from_secs(2)));
    let params = &stats.parameters;
    assert_eq!(
        params["properties"]["values"]["description"],
        "The numbers."
    );
    assert_eq!(params["properties"]["range"]["$ref"], "#/$defs/Range");
    assert_eq!(
        params["$defs"]["Range"]["properties"]["min"]["description"],
        "Inclusive lower bound."
    );
    assert!(params["properties"]["round-to"].is_object());
    assert_eq!(params["required"], json!(["values", "range"]));
    // A returned struct is inlined at the root: an object schema, as MCP's `outputSchema` needs.
    let returns = stats.returns.as_ref().unwrap();
    assert_eq!(returns["type"], "object");
    assert_eq!(returns["required"], json!(["count", "mean"]));

    let echo = registry.definition("echo").unwrap();
    assert_eq!(echo.parameters["type"], "object");
    assert_eq!(echo.parameters["required"], json!(["text"]));

    let highlight = registry.definition("highlight").unwrap();
    assert_eq!(highlight.location, Location::Client);
    assert!(!highlight.wait_for_response);
    assert_eq!(highlight.parameters["required"], json!(["selector"]));
}

#[test]
fn calls_reach_typed_fns() {
    let registry = tools![search_docs, range_stats, echo, highlight]
        .build()
        .unwrap();
    block_on(async {
        let out = registry
            .call("search_docs", r#"{"query":"q","tags":["a","b"]}"#)
            .await
            .unwrap();
        assert_eq!(out, r#"["q:a+b","q:a+b"]"#);
        let out = registry
            .call(
                "range-stats",
                r#"{"values":[1,2,3,10],"range":{"min":1,"max":3},"round-to":1}"#,
            )
            .await
            .unwrap();
        assert_eq!(out, r#"{"count":3,"mean":2.0}"#);
        let out = registry
            .call("echo", r#"{"text":"ab","times":2}"#)
            .await
            .unwrap();
        assert_eq!(out, r#""abab""#);
        // The schema derived from `u8` refuses what the fn could not receive.
        let err = registry
            .call("search_docs", r#"{"query":"q","tags":[],"limit":300}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
        let err = registry
            .call("highlight", r#"{"selector":".a"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::ClientTool);
    });
}

#[test]
fn bound_tools_use_the_manifest() {
    let manifest = toolc_runtime::load_definitions(["../manifests/support.tools.yaml"]).unwrap();
    let registry = tools!(manifest = "../manifests/support.tools.yaml";
        search_help_articles, get_order_status, highlight_element)
    .build()
    .unwrap();
    let defs: Vec<_> = registry.definitions().cloned().collect();
    assert_eq!(
        defs, manifest,
        "a bound registry declares exactly the manifest's tools"
    );
    block_on(async {
        // `limit` is absent: the manifest's default (3) is applied before deserializing.
        let out = registry
            .call("search_help_articles", r#"{"query":"refund"}"#)
            .await
            .unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(out["articles"].as_array().unwrap().len(), 3);
        let out = registry
            .call("get_order_status", r#"{"order_number":"AB-123456"}"#)
            .await
            .unwrap();
        assert_eq!(out, r#"{"status":"shipped","eta":null}"#);
        let err = registry
            .call("get_order_status", r#"{"order_number":"XX-123456"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::ToolFailed);
        assert_eq!(err.code(), Some("not_found"));
        // The manifest's pattern is enforced before the fn runs.
        let err = registry
            .call("get_order_status", r#"{"order_number":"nope"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
    });
}

/// `builder = ...` adds the fns to a builder that already holds tools (a generated module's
/// `registry_builder`, an MCP server's tools): one registry, one location rule over all of them.
#[test]
fn tools_join_a_given_builder() {
    let given = toolc_runtime::Registry::builder()
        .definitions(toolc_runtime::load_definitions(["../manifests/support.tools.yaml"]).unwrap());
    let registry = tools!(builder = given, manifest = "../manifests/support.tools.yaml";
        search_help_articles, get_order_status, highlight_element)
    .build();
    // With `manifest`, the manifest's definitions join the given builder's: these were in it
    // already, so each is there twice, and the one build reports it.
    let err = registry.unwrap_err().to_string();
    assert!(err.contains("search_help_articles"), "{err}");

    let base = toolc_runtime::Registry::builder().definition(
        toolc_runtime::load_definitions(["../manifests/support.tools.yaml"])
            .unwrap()
            .into_iter()
            .find(|d| d.name == "show_toast")
            .unwrap(),
    );
    let registry = tools!(builder = base; search_docs, highlight)
        .build()
        .unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["show_toast", "search_docs", "highlight"]);
    block_on(async {
        let out = registry
            .call("search_docs", r#"{"query":"a","tags":[]}"#)
            .await
            .unwrap();
        assert!(out.starts_with('['), "{out}");
    });
    // A builder missing an executor still fails as one registry.
    let base = toolc_runtime::Registry::builder()
        .definitions(toolc_runtime::load_definitions(["../manifests/support.tools.yaml"]).unwrap());
    let err = tools!(builder = base; search_docs).build().unwrap_err();
    assert!(err.to_string().contains("get_order_status"), "{err}");
}

#[test]
fn companion_types_expose_names_and_bindings() {
    use toolc_runtime::__private::fns::ToolFn;
    assert_eq!(<range_stats as ToolFn>::NAME, "range-stats");
    assert_eq!(<search_docs as ToolFn>::MANIFEST, "");
    assert!(<get_order_status as ToolFn>::MANIFEST.ends_with("support.tools.yaml"));
    assert!(<highlight_element as ToolFn>::executor().is_none());
    // The fn itself stays callable.
    assert_eq!(get_order_status("AB-1").unwrap()["status"], "shipped");
}

/// The greeting for the signed-in user.
#[tool]
async fn greet(
    greeting: String,
    ctx: &toolc_runtime::CallContext,
    #[arg(name = "punctuation")] mark: Option<String>,
) -> Result<String, ToolError> {
    let who = ctx.principal().map_or("guest", |p| p.id());
    let shop = ctx.state::<ShopName>().map_or("?", |s| s.0);
    Ok(format!(
        "{greeting} {who} from {shop} ({}){}",
        ctx.call_id(),
        mark.unwrap_or_default()
    ))
}

/// Owned context first, argument struct after.
#[tool]
async fn whoami(ctx: toolc_runtime::CallContext, #[args] args: EchoArgs) -> String {
    format!("{}:{}", ctx.session_id(), args.text)
}

struct ShopName(&'static str);

#[tokio::test]
async fn a_context_parameter_is_not_in_the_schema_and_receives_the_principal_and_state() {
    let registry = tools![greet, whoami]
        .state(ShopName("Bolt"))
        .build()
        .unwrap();
    let def = registry.definition("greet").unwrap();
    let properties: Vec<&String> = def.parameters["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(properties, ["greeting", "punctuation"]);
    let scope = toolc_runtime::SessionScope::with_id("sess-9")
        .with_principal(Some(toolc_runtime::Principal::new("ann")));
    let out = registry
        .call_with_context(
            scope.call("greet", "call_7"),
            r#"{"greeting":"hi","punctuation":"!"}"#,
        )
        .await
        .unwrap();
    assert_eq!(out, r#""hi ann from Bolt (call_7)!""#);
    // Outside a session there is no principal.
    let out = registry
        .call("greet", r#"{"greeting":"hi"}"#)
        .await
        .unwrap();
    assert_eq!(out, r#""hi guest from Bolt ()""#);
    let out = registry
        .call_with_context(scope.call("whoami", "c"), r#"{"text":"x"}"#)
        .await
        .unwrap();
    assert_eq!(out, r#""sess-9:x""#);
}

#[test]
fn a_manifests_scopes_reach_the_definition() {
    let registry = tools![close_ticket, search_help_articles].build().unwrap();
    let scoped = registry.definition("close_ticket").unwrap();
    assert_eq!(scoped.scopes, ["tickets:write", "tickets:read"]);
    assert!(registry
        .definition("search_help_articles")
        .unwrap()
        .scopes
        .is_empty());
}
