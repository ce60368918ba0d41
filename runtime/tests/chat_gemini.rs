//! Gemini: `functionCall` parts in, ONE `user` content of `functionResponse` parts out, with
//! ids passed through when the API gave them.

mod common {
    pub mod chat;
}

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use common::chat::*;
use serde_json::{json, Value};
use toolc_runtime::chat::{Codec, Gemini, GeminiStream, TurnRunner};

fn runner() -> TurnRunner {
    TurnRunner::new(registry(Arc::default()))
        .with_client(scripted_client(Arc::new(AtomicUsize::new(0))))
}

fn response(with_ids: bool) -> Value {
    let mut parts = vec![
        json!({ "text": "Looking it up." }),
        json!({ "functionCall": { "name": "search", "args": { "query": "warranty" } },
                "thoughtSignature": "CiQBVKhc7vB+sig" }),
        json!({ "functionCall": { "name": "search", "args": { "query": "warranty" } } }),
        json!({ "functionCall": { "name": "ask", "args": { "mode": "answer" } } }),
        json!({ "functionCall": { "name": "fail" } }),
        json!({ "functionCall": { "name": "search", "args": { "query": 12 } } }),
    ];
    if with_ids {
        for (i, part) in parts.iter_mut().skip(1).enumerate() {
            part["functionCall"]["id"] = json!(format!("fc-{i}"));
        }
    }
    json!({
        "candidates": [{
            "content": { "role": "model", "parts": parts },
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": { "promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 160 },
        "modelVersion": "gemini-2.5-flash"
    })
}

fn check_follow_up(follow_up: &[Value], with_ids: bool) {
    assert_eq!(follow_up.len(), 1, "exactly one content");
    assert_eq!(follow_up[0]["role"], "user");
    let parts = follow_up[0]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 5);
    let names: Vec<&str> = parts
        .iter()
        .map(|p| p["functionResponse"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "search", "ask", "fail", "search"]);
    for (i, part) in parts.iter().enumerate() {
        let fr = &part["functionResponse"];
        assert!(fr["response"].is_object(), "response must be an object");
        if with_ids {
            assert_eq!(fr["id"], json!(format!("fc-{i}")));
        } else {
            assert!(fr.get("id").is_none(), "no made-up ids are sent: {fr}");
        }
    }
    let response = |i: usize| &parts[i]["functionResponse"]["response"];
    assert_eq!(
        response(0),
        &json!({ "output": { "received": { "query": "warranty" } } })
    );
    assert_eq!(
        response(1),
        response(0),
        "two identical calls both answered"
    );
    assert_eq!(
        response(2),
        &json!({ "output": { "answered": if with_ids { "fc-2" } else { "gemini-call-2" } } })
    );
    assert_eq!(response(3)["error"]["kind"], "tool_failed");
    assert_eq!(response(4)["error"]["kind"], "invalid_arguments");
    assert!(response(4).get("output").is_none());
}

#[tokio::test]
async fn function_responses_without_ids() {
    let body = response(false);
    let calls = Gemini.decode(&body).unwrap();
    assert!(calls.iter().all(|c| c.synthesized_id));
    assert_eq!(
        calls[3].arguments, "{}",
        "a call without args has empty arguments"
    );
    check_follow_up(&runner().follow_up(&Gemini, &body).await.unwrap(), false);
}

#[tokio::test]
async fn function_responses_with_ids() {
    let body = response(true);
    assert!(Gemini
        .decode(&body)
        .unwrap()
        .iter()
        .all(|c| !c.synthesized_id));
    check_follow_up(&runner().follow_up(&Gemini, &body).await.unwrap(), true);
}

#[test]
fn replay_keeps_thought_signatures() {
    let body = response(false);
    let replay = Gemini.assistant_turn(&body);
    assert_eq!(replay, vec![body["candidates"][0]["content"].clone()]);
    assert_eq!(replay[0]["parts"][1]["thoughtSignature"], "CiQBVKhc7vB+sig");
}

#[test]
fn blocked_or_empty_responses_have_no_calls_and_garbage_is_an_error() {
    assert!(Gemini
        .decode(&json!({ "promptFeedback": { "blockReason": "SAFETY" } }))
        .unwrap()
        .is_empty());
    assert!(Gemini
        .decode(&json!({ "candidates": [{ "finishReason": "SAFETY" }] }))
        .unwrap()
        .is_empty());
    let err = Gemini
        .decode(&json!({ "candidates": [{ "content": { "parts": [{ "functionCall": { "args": {} } }] } }] }))
        .unwrap_err();
    assert_eq!(
        err.pointer,
        "/candidates/0/content/parts/0/functionCall/name"
    );
}

#[tokio::test]
async fn streamed_chunks_collect_calls_in_order() {
    let body = response(false);
    let parts = body["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap();
    let mut stream = GeminiStream::new();
    for part in parts {
        let chunk = json!({ "candidates": [{ "content": { "role": "model", "parts": [part] }, "index": 0 }] });
        stream.push_str(&chunk.to_string()).unwrap();
    }
    stream
        .push(&json!({ "candidates": [{ "content": { "role": "model", "parts": [] }, "finishReason": "STOP" }],
                       "usageMetadata": { "totalTokenCount": 3 } }))
        .unwrap();
    assert_eq!(stream.calls(), Gemini.decode(&body).unwrap());
    assert_eq!(stream.model_content(), body["candidates"][0]["content"]);
    let outcome = runner().run(&stream.calls()).await;
    check_follow_up(&outcome.encode(&Gemini).unwrap(), false);
}
