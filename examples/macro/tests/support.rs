//! Calls through the registry bound to `manifests/support.tools.yaml`.

use serde_json::Value;
use toolc_runtime::CallErrorKind;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn the_registry_declares_every_manifest_tool() {
    let registry = macro_example::support::registry().unwrap();
    let expected = toolc_runtime::load_definitions([concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/support.tools.yaml"
    )])
    .unwrap();
    let actual: Vec<_> = registry.definitions().cloned().collect();
    assert_eq!(actual, expected);
}

#[test]
fn search_applies_the_manifest_default() {
    let registry = macro_example::support::registry().unwrap();
    block_on(async {
        let out = registry
            .call(
                "search_help_articles",
                r#"{"query":"refund return delivery your"}"#,
            )
            .await
            .unwrap();
        let out: Value = serde_json::from_str(&out).unwrap();
        let ids: Vec<&str> = out["articles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        // Three articles: the manifest's default `limit`.
        assert_eq!(ids.len(), 3, "{out}");
        let out = registry
            .call("search_help_articles", r#"{"query":"refund","limit":1}"#)
            .await
            .unwrap();
        assert!(out.contains(r#""id":"request-refund""#), "{out}");
        // Out of the manifest's bounds: refused before the fn runs.
        let err = registry
            .call("search_help_articles", r#"{"query":"refund","limit":11}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
    });
}

#[test]
fn order_status_results_and_errors() {
    let registry = macro_example::support::registry().unwrap();
    block_on(async {
        let out = registry
            .call("get_order_status", r#"{"order_number":"AB-123456"}"#)
            .await
            .unwrap();
        assert_eq!(out, r#"{"status":"delivered","eta":null}"#);
        let err = registry
            .call("get_order_status", r#"{"order_number":"ZZ-000001"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::ToolFailed);
        assert_eq!(err.code(), Some("not_found"));
        let err = registry
            .call("get_order_status", r#"{"order_number":"AB123"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
        let err = registry
            .call("highlight_element", r#"{"selector":"h1"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CallErrorKind::ClientTool);
    });
}
