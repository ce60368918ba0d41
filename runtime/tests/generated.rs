//! Compile-pass tests of the generated Rust: the code for every manifest in `manifests/` and for
//! `tests/fixtures/edge.tools.yaml`, checked in under `tests/generated/` (kept current by
//! `tests/generated_up_to_date.rs`), compiled here under `#![deny(warnings)]` and exercised
//! through its registry.
#![deny(warnings)]

use serde_json::json;
use toolc_runtime::{CallErrorKind, Location, Tool, ToolError};

mod support {
    include!("generated/support.rs");
}
mod commerce {
    include!("generated/commerce.rs");
}
mod edge {
    include!("generated/edge.rs");
}

struct Support;

impl support::SupportServer for Support {
    async fn search_help_articles(
        &self,
        _ctx: &toolc_runtime::CallContext,
        args: support::SearchHelpArticlesArgs,
    ) -> Result<support::SearchHelpArticlesOutput, ToolError> {
        Ok(support::SearchHelpArticlesOutput {
            articles: (0..args.limit)
                .map(|i| support::SearchHelpArticlesOutputArticlesItem {
                    id: format!("{i}"),
                    title: args.query.clone(),
                    summary: String::new(),
                    section: "s".into(),
                })
                .collect(),
        })
    }

    async fn get_order_status(
        &self,
        _ctx: &toolc_runtime::CallContext,
        _: support::GetOrderStatusArgs,
    ) -> Result<support::GetOrderStatusOutput, ToolError> {
        Ok(support::GetOrderStatusOutput {
            status: support::GetOrderStatusOutputStatus::Packed,
            eta: None,
        })
    }
}

#[tokio::test]
async fn support_defaults_apply_and_outputs_serialize() {
    let r = support::registry(Support).unwrap();
    let out = r
        .call("search_help_articles", r#"{"query":"q"}"#)
        .await
        .unwrap();
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        out["articles"].as_array().unwrap().len(),
        3,
        "limit defaults to 3"
    );
    let out = r
        .call("get_order_status", r#"{"order_number":"AB-123456"}"#)
        .await
        .unwrap();
    assert_eq!(out, r#"{"status":"packed","eta":null}"#);
    assert_eq!(support::definitions().len(), 6);
    assert_eq!(support::ShowToast::LOCATION, Location::Client);
    assert!(!support::ShowToast::definition().wait_for_response);
}

struct Shop;

impl commerce::CommerceServer for Shop {
    async fn search_products(
        &self,
        _ctx: &toolc_runtime::CallContext,
        args: commerce::SearchProductsArgs,
    ) -> Result<commerce::SearchProductsOutput, ToolError> {
        let filters = args.filters.unwrap_or(commerce::SearchProductsArgsFilters {
            category: None,
            price: None,
            in_stock_only: true,
        });
        let max = filters.price.and_then(|p| p.max).unwrap_or(f64::INFINITY);
        let products: Vec<commerce::SearchProductsProduct> = [("S1", 40.0), ("S2", 90.0)]
            .into_iter()
            .filter(|(_, price)| *price <= max)
            .map(|(sku, price)| commerce::SearchProductsProduct {
                sku: sku.into(),
                name: format!(
                    "{} ({:?}, in stock only: {})",
                    args.query, args.sort, filters.in_stock_only
                ),
                price,
                tags: None,
            })
            .take(usize::try_from(args.page_size).unwrap_or(0))
            .collect();
        Ok(commerce::SearchProductsOutput {
            total: products.len() as i64,
            products,
        })
    }

    async fn create_return(
        &self,
        _ctx: &toolc_runtime::CallContext,
        args: commerce::CreateReturnArgs,
    ) -> Result<commerce::CreateReturnOutput, ToolError> {
        let reasons: Vec<String> = args
            .items
            .iter()
            .map(|i| format!("{:?}", i.reason))
            .collect();
        // `refund_to` is `anyOf` in the schema: untyped, but validated before it gets here.
        let refund = match &args.refund_to {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other["gift_card_email"].as_str().unwrap_or("?").to_owned(),
            None => "original_payment".into(),
        };
        Ok(commerce::CreateReturnOutput {
            return_id: format!("R-{}-{}-{refund}", args.order_number, reasons.join("+")),
            label_url: "https://labels.example/1".into(),
        })
    }
}

#[tokio::test]
async fn commerce_nested_types_defs_and_untyped_fallbacks() {
    let r = commerce::registry(Shop).unwrap();
    let out = r
        .call(
            "search_products",
            r#"{"query":"boots","filters":{"price":{"max":50}}}"#,
        )
        .await
        .unwrap();
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["total"], 1);
    // `sort` defaulted to `relevance`, and the nested `in_stock_only` to true.
    assert_eq!(
        out["products"][0]["name"],
        "boots (Relevance, in stock only: true)"
    );
    assert!(
        out["products"][0].get("tags").is_none(),
        "absent optionals are not written"
    );

    let out = r
        .call(
            "create_return",
            r#"{"order_number":"A1","items":[{"sku":"S","quantity":1,"reason":"too_small"}],
                "refund_to":{"gift_card_email":"a@b.example"}}"#,
        )
        .await
        .unwrap();
    assert!(out.contains("R-A1-TooSmall-a@b.example"), "{out}");
    let err = r
        .call(
            "create_return",
            r#"{"order_number":"A1","items":[{"sku":"S","quantity":1,"reason":"meh"}],"refund_to":7}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
    let pointers: Vec<&str> = err
        .violations()
        .iter()
        .map(|v| v.pointer.as_str())
        .collect();
    assert!(
        pointers.contains(&"/items/0/reason") && pointers.contains(&"/refund_to"),
        "{pointers:?}"
    );
}

struct Edge;

impl edge::EdgeServer for Edge {
    async fn edge_server(
        &self,
        _ctx: &toolc_runtime::CallContext,
        args: edge::EdgeServerArgs,
    ) -> Result<edge::EdgeServerOutput, ToolError> {
        let depth = {
            let mut n = 0;
            let mut node = args.tree.as_deref();
            while let Some(t) = node {
                n += 1;
                node = t.next.as_deref();
            }
            n
        };
        Ok(edge::EdgeServerOutput {
            tree: Some(edge::EdgeServerNode2 {
                leaf: Some(
                    depth > 1 && args.mode == edge::EdgeServerArgsMode::AB2 && args.r#type == "t",
                ),
            }),
        })
    }

    async fn no_params(
        &self,
        _ctx: &toolc_runtime::CallContext,
        _: edge::NoParamsArgs,
    ) -> Result<edge::NoParamsOutput, ToolError> {
        Ok(json!("anything"))
    }

    async fn contact(
        &self,
        _ctx: &toolc_runtime::CallContext,
        args: edge::ContactArgs,
    ) -> Result<edge::ContactOutput, ToolError> {
        // `anyOf` of `required` lists: the object stays typed, its alternatives optional.
        let to: Option<&String> = args.email.as_ref().or(args.phone.as_ref());
        // `additionalProperties: {type: string}`: a typed map.
        let headers: std::collections::BTreeMap<String, String> = args.headers.unwrap_or_default();
        Ok(json!({ "to": to, "text": args.text, "headers": headers.len() }))
    }

    async fn snapshot(
        &self,
        _ctx: &toolc_runtime::CallContext,
        _: edge::SnapshotArgs,
    ) -> Result<edge::SnapshotOutput, ToolError> {
        Ok(toolc_runtime::ToolContent::new()
            .text("A red pixel:")
            .image("iVBORw0KGgo=", "image/png")
            .resource_text("test://note", "text/plain", "kept"))
    }
}

#[tokio::test]
async fn a_presence_only_any_of_and_a_string_map_are_typed_and_still_validated() {
    let r = edge::registry(Edge).unwrap();
    let out = r
        .call(
            "contact",
            r#"{"phone":"+4930","text":"hi","headers":{"x-a":"1","x-b":"2"}}"#,
        )
        .await
        .unwrap();
    assert_eq!(out, r#"{"to":"+4930","text":"hi","headers":2}"#);
    // Neither email nor phone: the schema's `anyOf` refuses it before the executor runs.
    let refused = r.call("contact", r#"{"text":"hi"}"#).await.unwrap_err();
    assert_eq!(refused.kind().as_str(), "invalid_arguments", "{refused:?}");
    // A header that is not a string: refused by the schema too.
    let refused = r
        .call(
            "contact",
            r#"{"email":"a@b","text":"hi","headers":{"x":1}}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.kind().as_str(), "invalid_arguments", "{refused:?}");
}

#[tokio::test]
async fn edge_names_recursion_and_defaults() {
    let r = edge::registry(Edge).unwrap();
    let args = json!({
        "type": "t", "self": 1, "foo-bar": true, "foo_bar": false, "fooBar": true, "2fa": "x",
        "tree": { "value": 1, "next": { "value": 2, "children": [{ "value": 3 }] } },
        "maybe": null, "maybe_enum": "y", "grid": [[1, 2], []], "bag": { "a": 1 },
        "mixed": 1, "free": [true], "either": 3, "pairs": [{ "key": "k" }]
    });
    let out = r.call("edge_server", &args.to_string()).await.unwrap();
    assert_eq!(out, r#"{"tree":{"leaf":true}}"#, "mode defaulted to `a_b`");
    let typed: edge::EdgeServerArgs = serde_json::from_value(args.clone()).unwrap();
    assert_eq!(typed.ratio, 0.5);
    assert_eq!(typed.label, "none");
    assert_eq!(typed.foo_bar, Some(false), "`foo_bar` keeps its own name");
    assert_eq!(typed.foo_bar_2, Some(true), "`foo-bar` takes the next one");
    assert_eq!(typed.foo_bar_3, Some(true));
    assert_eq!(typed.self_, Some(1));
    assert_eq!(typed.f_2fa.as_deref(), Some("x"));
    assert_eq!(typed.maybe_enum, Some(edge::EdgeServerArgsMaybeEnum::Y));
    // Round trip keeps every wire name.
    let back = serde_json::to_value(&typed).unwrap();
    for key in [
        "type", "self", "foo-bar", "foo_bar", "fooBar", "2fa", "mode",
    ] {
        assert!(back.get(key).is_some(), "{key} missing in {back}");
    }
    let modes: Vec<edge::EdgeServerArgsMode> =
        serde_json::from_value(json!(["a-b", "a_b", "Self", "1", ""])).unwrap();
    assert_eq!(
        modes,
        [
            edge::EdgeServerArgsMode::AB,
            edge::EdgeServerArgsMode::AB2,
            edge::EdgeServerArgsMode::Self_,
            edge::EdgeServerArgsMode::V1,
            edge::EdgeServerArgsMode::Unnamed,
        ]
    );
    let _: edge::EdgeServerAlias = String::from("aliases stay aliases");
    assert_eq!(r.call("no_params", "").await.unwrap(), r#""anything""#);
    assert_eq!(edge::EdgeServerArgs2::NAME, "edge_server_args");
}

/// A tool's `rate_limit` and `retry` reach its generated definition.
#[test]
fn the_generated_registry_carries_rate_limits_and_retries() {
    let def = edge::NoParams::definition();
    assert_eq!(
        def.policy.rate_limit,
        Some(toolc_runtime::RateLimit {
            calls: 5,
            window_ms: 60_000,
            per: toolc_runtime::RateScope::Conversation,
        })
    );
    assert_eq!(
        def.policy.retry,
        Some(toolc_runtime::RetryPolicy {
            attempts: 3,
            backoff_ms: 250,
            on_timeout: true,
            on_tool_failed: false,
        })
    );
    assert_eq!(edge::Contact::definition().policy.rate_limit, None);
}

/// A tool's `scopes` reach its generated definition, in the manifest's order; a tool without
/// them has none.
#[test]
fn the_generated_registry_carries_scopes() {
    assert_eq!(
        edge::NoParams::definition().scopes,
        ["notes:read", "https://api.example.com/notes"]
    );
    assert!(edge::Contact::definition().scopes.is_empty());
}

/// The manifest's root settings reach the registry: its toolsets (what sessions choose to
/// declare) and the MCP list's time to live.
#[test]
fn the_generated_registry_carries_toolsets_and_the_mcp_list_ttl() {
    let r = edge::registry(Edge).unwrap();
    assert_eq!(r.mcp_list_ttl(), Some(std::time::Duration::from_secs(90)));
    assert_eq!(r.toolsets().len(), 1);
    assert_eq!(r.toolsets()[0].name, "outreach");
    assert_eq!(r.toolsets()[0].tools, ["contact"]);
    let without: toolc_runtime::ToolSelection = r.selection::<&str>(&[]).unwrap();
    assert!(without.offers("no_params") && !without.offers("contact"));
    assert!(r.selection(&["outreach"]).unwrap().offers("contact"));
    assert!(r.selection(&["nope"]).is_err());
}

/// `returns: content`: the generated output is the runtime's `ToolContent`, which serializes to
/// what the content schema accepts; the registry checks it like any result.
#[tokio::test]
async fn a_content_tool_answers_with_blocks_the_registry_accepts() {
    let r = edge::registry(Edge).unwrap();
    assert!(r.definition("snapshot").unwrap().returns_content());
    let out = r.call_value("snapshot", json!({})).await.unwrap();
    assert_eq!(
        out,
        json!({ "content": [
            { "type": "text", "text": "A red pixel:" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "resource", "resource": { "uri": "test://note", "mimeType": "text/plain", "text": "kept" } }
        ] })
    );
}

/// `echo`, a tool defined in Rust, to join a generated module's tools.
#[toolc_runtime::tool]
async fn echo(text: String) -> Result<String, ToolError> {
    Ok(text)
}

/// `registry_builder` holds the manifest's tools with their typed executors and its root
/// settings; other tools join it before `build()`, and `registry()` is the same builder built.
#[tokio::test]
async fn the_registry_builder_takes_other_tools_and_keeps_the_manifests_settings() {
    let r = toolc_runtime::tools!(builder = edge::registry_builder(Edge); echo)
        .build()
        .unwrap();
    let alone = edge::registry(Edge).unwrap();
    let names: Vec<&str> = r.names().collect();
    let mut expected: Vec<&str> = alone.names().collect();
    expected.push("echo");
    assert_eq!(names, expected);
    assert_eq!(r.mcp_list_ttl(), alone.mcp_list_ttl());
    assert_eq!(r.toolsets(), alone.toolsets());
    // Both kinds of executor run in the one registry.
    assert_eq!(r.call("echo", r#"{"text":"hi"}"#).await.unwrap(), r#""hi""#);
    assert_eq!(r.call("no_params", "").await.unwrap(), r#""anything""#);
    // A tool of another source with a name the manifest has is refused at build time.
    let clash = edge::registry_builder(Edge)
        .definitions(edge::definitions().into_iter().take(1))
        .build()
        .unwrap_err();
    assert!(
        clash.to_string().contains(&edge::definitions()[0].name),
        "{clash}"
    );
}

/// `declarations(provider)` is byte for byte what the providers' emitter writes for the
/// manifest (the file of `toolc build`), for every provider, in every generated module.
#[test]
fn declarations_are_the_provider_files() {
    use toolc_runtime::Provider;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    type Declarations = fn(Provider) -> &'static str;
    let modules: [(&str, Declarations); 3] = [
        ("../manifests/support.tools.yaml", support::declarations),
        ("../manifests/commerce.tools.yaml", commerce::declarations),
        ("tests/fixtures/edge.tools.yaml", edge::declarations),
    ];
    for (manifest, declarations) in modules {
        let mut session = toolc::Session::new();
        session.add_path(&root.join(manifest)).unwrap();
        let ir = session.check().unwrap();
        let files = toolc::emit::providers::files(
            &ir,
            toolc::emit::providers::GeminiSchema::default(),
            &mut session.diagnostics,
        );
        assert_eq!(files.len(), Provider::ALL.len());
        for (provider, text) in files {
            assert!(
                declarations(provider) == text,
                "{manifest}: {}",
                provider.name()
            );
            // What a chat request's `tools` is: JSON.
            let _: serde_json::Value = serde_json::from_str(declarations(provider)).unwrap();
        }
    }
}
