//! The whole loop, over real sockets, for both APIs, streamed and not.

use std::sync::Arc;

use chat_loop::fake_provider::FakeProvider;
use chat_loop::{converse, load_tools, manifest_path, start_browser, Api};
use toolc_runtime::chat::TurnRunner;

async fn run(api: Api, stream: bool) {
    let tools = load_tools(&manifest_path()).unwrap();
    let provider = FakeProvider::start().await.unwrap();
    let (client, browser) = start_browser();
    let runner = TurnRunner::new(tools.registry.clone()).with_client(Arc::new(client));
    let conversation = converse(
        &provider.addr.to_string(),
        api,
        stream,
        &tools,
        &runner,
        "Return order 12345",
        4,
    )
    .await
    .unwrap();
    // The fake provider accepted the follow-up (it answers 400 otherwise) and summarized it.
    assert_eq!(conversation.requests, 2);
    assert_eq!(
        conversation.answer,
        "Done: search_help_articles ok; get_order_status failed (invalid_arguments); \
         highlight_element ok; show_toast ok."
    );
    // Strict-mode nulls were removed before the executor and the browser saw the arguments.
    let search = &conversation.results[0];
    let found: serde_json::Value = serde_json::from_str(&search.output).unwrap();
    let matching = support_desk::Data::bundled()
        .unwrap()
        .search("return my order", 10)
        .len();
    assert!(matching > 3, "{matching} articles match");
    assert_eq!(
        found["articles"].as_array().map(Vec::len),
        Some(3),
        "default limit 3 applied: {}",
        search.output
    );
    // Tokio's channel is drained by the browser task; give it a moment to log the toast.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let seen = browser.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (
                "highlight_element".to_owned(),
                r##"{"selector":"#returns"}"##.to_owned()
            ),
            (
                "show_toast".to_owned(),
                r#"{"message":"Looking into your return"}"#.to_owned()
            ),
        ]
    );
    assert_eq!(provider.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn openai_chat_loop() {
    run(Api::Chat, false).await;
}

#[tokio::test]
async fn openai_chat_streamed_loop() {
    run(Api::Chat, true).await;
}

#[tokio::test]
async fn anthropic_loop() {
    run(Api::Anthropic, false).await;
}

#[tokio::test]
async fn anthropic_streamed_loop() {
    run(Api::Anthropic, true).await;
}
