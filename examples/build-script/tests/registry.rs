//! Calls through the registry generated from `manifests/support.tools.yaml`.

use build_script_example::support::{self, GetOrderStatus, GetOrderStatusArgs, SearchHelpArticles};
use build_script_example::SupportDesk;
use serde_json::{json, Value};
use toolc_runtime::{CallErrorKind, Location, Principal, Registry, SessionScope, Tool};

fn registry() -> Registry {
    support::registry(SupportDesk::new())
        .expect("the generated registry satisfies the location rule")
}

async fn call(registry: &Registry, name: &str, args: &str) -> Value {
    call_as(registry, "alice", name, args)
        .await
        .expect("call succeeds")
}

/// A call in a session whose browser was authenticated as `user`.
async fn call_as(
    registry: &Registry,
    user: &str,
    name: &str,
    args: &str,
) -> Result<Value, toolc_runtime::CallError> {
    let scope = SessionScope::new().with_principal(Some(Principal::new(user)));
    let text = registry
        .call_with_context(scope.call(name, "call_1"), args)
        .await?;
    Ok(serde_json::from_str(&text).expect("the result is JSON text"))
}

#[tokio::test]
async fn search_returns_ranked_articles_with_the_default_limit() {
    let r = registry();
    let out = call(
        &r,
        "search_help_articles",
        r#"{"query":"how do I return an order"}"#,
    )
    .await;
    let articles = out["articles"].as_array().unwrap();
    // `limit` defaults to 3 (from the manifest) when the model leaves it out.
    assert_eq!(articles.len(), 3);
    assert_eq!(articles[0]["id"], "track-order", "{out}");
    let out = call(
        &r,
        "search_help_articles",
        r#"{"query":"forgot my password","limit":1}"#,
    )
    .await;
    assert_eq!(
        out,
        json!({"articles": [{
            "id": "reset-password",
            "title": "Resetting your password",
            "summary": "Use Forgot password on the sign-in page; the reset link in the e-mail is valid for one hour.",
            "section": "account"
        }]})
    );
}

#[tokio::test]
async fn order_status_known_and_unknown() {
    let r = registry();
    let out = call(&r, "get_order_status", r#"{"order_number":"AB-654321"}"#).await;
    assert_eq!(out, json!({"status": "shipped", "eta": "2026-12-04"}));
    // A required nullable output is written as null, not left out.
    let out = call(&r, "get_order_status", r#"{"order_number":"AB-123456"}"#).await;
    assert_eq!(out, json!({"status": "delivered", "eta": null}));

    let err = call_as(
        &r,
        "alice",
        "get_order_status",
        r#"{"order_number":"ZZ-000000"}"#,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::ToolFailed);
    assert_eq!(err.code(), Some("order_not_found"));
    let model: Value = serde_json::from_str(&err.model_text()).unwrap();
    assert_eq!(model["error"]["kind"], "tool_failed");
    assert!(model["error"]["message"]
        .as_str()
        .unwrap()
        .contains("ZZ-000000"));
}

#[tokio::test]
async fn a_customer_finds_only_their_own_orders() {
    let r = registry();
    // Bob's order reads to Alice exactly like a number that does not exist.
    let args = r#"{"order_number":"CD-000001"}"#;
    let err = call_as(&r, "alice", "get_order_status", args)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("order_not_found"));
    let out = call_as(&r, "bob", "get_order_status", args).await.unwrap();
    assert_eq!(out, json!({"status": "packed", "eta": "2026-12-07"}));
    // Without an authenticated caller there are no own orders to find.
    let err = r.call("get_order_status", args).await.unwrap_err();
    assert_eq!(err.code(), Some("not_signed_in"));
}

#[tokio::test]
async fn invalid_arguments_never_reach_the_executor() {
    let r = registry();
    let err = r
        .call("get_order_status", r#"{"order_number":"123"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
    assert_eq!(err.violations()[0].pointer, "/order_number");
    let err = r
        .call(
            "search_help_articles",
            r#"{"query":"x","limit":11,"extra":true}"#,
        )
        .await
        .unwrap_err();
    let pointers: Vec<&str> = err
        .violations()
        .iter()
        .map(|v| v.pointer.as_str())
        .collect();
    assert!(pointers.contains(&"/limit"), "{pointers:?}");
    assert_eq!(err.violations().len(), 2, "{err}");
}

#[tokio::test]
async fn client_tools_are_declared_but_not_executable_on_the_server() {
    let r = registry();
    assert_eq!(r.len(), 6);
    assert_eq!(r.location("highlight_element"), Some(Location::Client));
    let err = r
        .call("highlight_element", r#"{"selector":".help-link"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::ClientTool);
    // A dispatcher validates client calls before forwarding them to the browser.
    let args = r
        .validate_arguments("highlight_element", r#"{"selector":".help-link"}"#)
        .unwrap();
    assert_eq!(args, json!({"selector": ".help-link"}));
    assert!(r
        .validate_arguments("highlight_element", r#"{"color":"red"}"#)
        .is_err());
    // And checks the browser's result against `returns`.
    assert!(r
        .check_output("highlight_element", &json!({"found": true}))
        .is_ok());
    assert!(r
        .check_output("highlight_element", &json!({"found": "yes"}))
        .is_err());
}

#[tokio::test]
async fn typed_calls_and_definitions() {
    let r = registry();
    let bob = SessionScope::new().with_principal(Some(Principal::new("bob")));
    let args = GetOrderStatusArgs {
        order_number: "CD-000001".into(),
    };
    let out = r
        .call_typed_with_context::<GetOrderStatus>(bob.call(GetOrderStatus::NAME, "c1"), &args)
        .await
        .unwrap();
    assert_eq!(out.eta.as_deref(), Some("2026-12-07"));
    assert_eq!(SearchHelpArticles::NAME, "search_help_articles");
    assert_eq!(SearchHelpArticles::LOCATION, Location::Server);
    // The generated definitions are exactly what the compiler reads from the manifest.
    let specs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/support.tools.yaml"
    );
    let loaded = toolc_runtime::load_definitions([specs]).unwrap();
    assert_eq!(support::definitions(), loaded);
    assert_eq!(
        r.timeout("get_order_status"),
        Some(std::time::Duration::from_secs(3))
    );
    // `fill_form_field` has no timeout of its own: client tools get the 10 s default.
    assert_eq!(
        r.timeout("fill_form_field"),
        Some(std::time::Duration::from_secs(10))
    );
}
