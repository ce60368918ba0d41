//! The scripted conversation the bundled model plays when no API key is set: the customer's
//! question, then three responses, in OpenAI Realtime GA events ([`script()`]) or in Gemini Live
//! messages ([`live_script()`]).
//!
//! 1. A sentence, then one server call (`search_help_articles`) and two waiting client calls
//!    (`highlight_element`, `scroll_to_section`) in the same response.
//! 2. After the single continuation: a sentence, a waiting client call (`fill_form_field`), a
//!    fire-and-forget one (`show_toast`) and a server call that needs the customer's approval
//!    (`submit_refund_request`): the page asks them, and the continuation waits for the answer.
//! 3. After the next continuation: a closing sentence, no calls.
//!
//! The model waits for each `response.create` before it answers, exactly like the real one: the
//! first comes from the page (the customer pressed Send), the next two must come from the relay,
//! once per response, after the last result of that response.

use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{Script, Step};

/// What the page offers the customer to ask; the scripted answers are written for it.
pub const QUESTION: &str = "I'd like a refund for order AB-123456. Where do I start?";

/// One scripted function call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub call_id: &'static str,
    pub name: &'static str,
    pub arguments: &'static str,
}

/// One scripted model response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    pub response_id: &'static str,
    pub text: &'static str,
    pub calls: &'static [Call],
}

pub const TURNS: &[Turn] = &[
    Turn {
        response_id: "resp_demo_1",
        text: "Let me look that up, and show you where refunds are handled on this page.",
        calls: &[
            Call {
                call_id: "call_demo_search",
                name: "search_help_articles",
                arguments: r#"{"query":"refund for a delivered order","limit":2}"#,
            },
            Call {
                call_id: "call_demo_highlight",
                name: "highlight_element",
                arguments: r##"{"selector":"#refund-button","color":"yellow"}"##,
            },
            Call {
                call_id: "call_demo_scroll",
                name: "scroll_to_section",
                arguments: r#"{"section_id":"refunds"}"#,
            },
        ],
    },
    Turn {
        response_id: "resp_demo_2",
        text: "Good news: a refund is possible for thirty days after delivery. \
               I have put your order number into the refund form for you.",
        calls: &[
            Call {
                call_id: "call_demo_fill",
                name: "fill_form_field",
                arguments: r#"{"field":"order_number","value":"AB-123456"}"#,
            },
            Call {
                call_id: "call_demo_toast",
                name: "show_toast",
                arguments: r#"{"message":"Order AB-123456 added to the refund form","level":"success"}"#,
            },
            Call {
                call_id: "call_demo_submit",
                name: "submit_refund_request",
                arguments: r#"{"order_number":"AB-123456","reason":"The customer asked for a refund."}"#,
            },
        ],
    },
    Turn {
        response_id: "resp_demo_3",
        text: "Thanks for confirming. The refund request is on its way, and a prepaid \
               return label will follow by e-mail. Anything else I can do?",
        calls: &[],
    },
];

/// The script of every connection to the scripted model. `pace` is the pause between streamed
/// pieces, so that a person can watch the text arrive (0 plays it as fast as possible).
pub fn script(pace: Duration) -> Script {
    let mut steps = vec![Step::WaitFor {
        kind: "session.update".into(),
        count: 1,
    }];
    for (n, turn) in TURNS.iter().enumerate() {
        // The customer's response.create first, then one continuation per earlier response.
        steps.push(Step::WaitFor {
            kind: "response.create".into(),
            count: n + 1,
        });
        steps.extend(response_steps(turn, pace));
    }
    let mut script = Script::new();
    script.steps = steps;
    // A person may take a while before pressing Send.
    script.wait_limit = Duration::from_secs(3600);
    script
}

/// The same conversation as a Gemini Live model plays it. Live has no `response.create`: the
/// model answers the customer's `clientContent`, and goes on after each batch of calls when the
/// relay sends that batch's one `toolResponse`. So the script waits for `setup` (answered with
/// `setupComplete`), for the question, then for one `toolResponse` per earlier batch. Each
/// response is its text, then its calls in one `toolCall`; the last ends the turn.
pub fn live_script(pace: Duration) -> Script {
    let mut steps = vec![
        Step::WaitFor {
            kind: "setup".into(),
            count: 1,
        },
        Step::Send(script::live::setup_complete()),
        Step::WaitFor {
            kind: "clientContent".into(),
            count: 1,
        },
    ];
    for (n, turn) in TURNS.iter().enumerate() {
        if n > 0 {
            steps.push(Step::WaitFor {
                kind: "toolResponse".into(),
                count: n,
            });
        }
        for piece in pieces(turn.text) {
            if !pace.is_zero() {
                steps.push(Step::Sleep(pace));
            }
            steps.push(Step::Send(script::live::text(&piece)));
        }
        if turn.calls.is_empty() {
            steps.push(Step::Send(script::live::turn_complete(false)));
            continue;
        }
        let calls: Vec<(&str, &str, Value)> = turn
            .calls
            .iter()
            .map(|call| {
                let args = serde_json::from_str(call.arguments).unwrap_or_default();
                (call.call_id, call.name, args)
            })
            .collect();
        steps.push(Step::Send(script::live::tool_call(&calls)));
    }
    let mut script = Script::live();
    script.steps = steps;
    script.wait_limit = Duration::from_secs(3600);
    script
}

/// The events of one response, with pauses between the pieces.
pub fn response_steps(turn: &Turn, pace: Duration) -> Vec<Step> {
    let mut steps = Vec::new();
    let pause = |steps: &mut Vec<Step>| {
        if !pace.is_zero() {
            steps.push(Step::Sleep(pace));
        }
    };
    let rid = turn.response_id;
    let message_id = format!("msg_{rid}");
    steps.push(Step::Send(script::response_created(rid)));
    steps.push(Step::Send(message_item_event(
        "response.output_item.added",
        rid,
        &message_id,
        None,
    )));
    steps.push(Step::Send(content_part_event(
        "response.content_part.added",
        rid,
        &message_id,
        "",
    )));
    for (i, piece) in pieces(turn.text).into_iter().enumerate() {
        pause(&mut steps);
        steps.push(Step::Send(json!({
            "type": "response.output_text.delta",
            "event_id": format!("ev_{message_id}_delta{i}"),
            "response_id": rid,
            "item_id": message_id,
            "output_index": 0,
            "content_index": 0,
            "delta": piece,
        })));
    }
    steps.push(Step::Send(json!({
        "type": "response.output_text.done",
        "event_id": format!("ev_{message_id}_text_done"),
        "response_id": rid,
        "item_id": message_id,
        "output_index": 0,
        "content_index": 0,
        "text": turn.text,
    })));
    steps.push(Step::Send(content_part_event(
        "response.content_part.done",
        rid,
        &message_id,
        turn.text,
    )));
    steps.push(Step::Send(message_item_event(
        "response.output_item.done",
        rid,
        &message_id,
        Some(turn.text),
    )));
    let mut output = vec![message_item(&message_id, Some(turn.text))];
    for (i, call) in turn.calls.iter().enumerate() {
        pause(&mut steps);
        let item_id = format!("item_{}", call.call_id);
        steps.extend(
            script::function_call(
                rid,
                i as u32 + 1,
                &item_id,
                call.call_id,
                call.name,
                call.arguments,
            )
            .into_iter()
            .map(Step::Send),
        );
        output.push(script::function_call_item(
            &item_id,
            call.call_id,
            call.name,
            call.arguments,
        ));
    }
    steps.push(Step::Send(script::response_done(rid, output)));
    steps
}

/// The text in streaming-sized pieces: one word each, with its following space.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn message_item(item_id: &str, text: Option<&str>) -> Value {
    let content = match text {
        Some(t) => json!([{ "type": "output_text", "text": t }]),
        None => json!([]),
    };
    json!({
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "status": if text.is_some() { "completed" } else { "in_progress" },
        "role": "assistant",
        "content": content,
    })
}

fn message_item_event(kind: &str, response_id: &str, item_id: &str, text: Option<&str>) -> Value {
    json!({
        "type": kind,
        "event_id": format!("ev_{item_id}_{}", kind.rsplit('.').next().unwrap_or(kind)),
        "response_id": response_id,
        "output_index": 0,
        "item": message_item(item_id, text),
    })
}

fn content_part_event(kind: &str, response_id: &str, item_id: &str, text: &str) -> Value {
    json!({
        "type": kind,
        "event_id": format!("ev_{item_id}_part_{}", kind.rsplit('.').next().unwrap_or(kind)),
        "response_id": response_id,
        "item_id": item_id,
        "output_index": 0,
        "content_index": 0,
        "part": { "type": "text", "text": text },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_has_the_calls_the_demo_promises() {
        let first: Vec<&str> = TURNS[0].calls.iter().map(|c| c.name).collect();
        assert_eq!(
            first,
            [
                "search_help_articles",
                "highlight_element",
                "scroll_to_section"
            ]
        );
        let second: Vec<&str> = TURNS[1].calls.iter().map(|c| c.name).collect();
        assert_eq!(
            second,
            ["fill_form_field", "show_toast", "submit_refund_request"]
        );
        assert!(TURNS[2].calls.is_empty());
        for turn in TURNS {
            for call in turn.calls {
                let args: Value = serde_json::from_str(call.arguments).unwrap();
                assert!(args.is_object(), "{}", call.arguments);
            }
        }
    }

    #[test]
    fn the_live_script_waits_for_the_question_then_one_tool_response_per_batch() {
        let steps = live_script(Duration::ZERO).steps;
        let waits: Vec<(String, usize)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::WaitFor { kind, count } => Some((kind.clone(), *count)),
                _ => None,
            })
            .collect();
        assert_eq!(
            waits,
            [
                ("setup".to_owned(), 1),
                ("clientContent".to_owned(), 1),
                ("toolResponse".to_owned(), 1),
                ("toolResponse".to_owned(), 2),
            ]
        );
        let sent: Vec<&Value> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Send(v) => Some(v),
                _ => None,
            })
            .collect();
        let batches: Vec<Vec<&str>> = sent
            .iter()
            .filter_map(|m| m["toolCall"]["functionCalls"].as_array())
            .map(|calls| calls.iter().map(|c| c["id"].as_str().unwrap()).collect())
            .collect();
        let expected: Vec<Vec<&str>> = TURNS[..2]
            .iter()
            .map(|t| t.calls.iter().map(|c| c.call_id).collect())
            .collect();
        assert_eq!(batches, expected);
        assert_eq!(
            sent.last().unwrap()["serverContent"]["turnComplete"],
            true,
            "the closing response ends the turn"
        );
        let text: String = sent
            .iter()
            .filter_map(|m| m["serverContent"]["modelTurn"]["parts"][0]["text"].as_str())
            .collect();
        assert_eq!(text, TURNS.iter().map(|t| t.text).collect::<String>());
    }

    #[test]
    fn pieces_rebuild_the_text() {
        for turn in TURNS {
            assert_eq!(pieces(turn.text).concat(), turn.text);
        }
        assert_eq!(pieces("a b"), ["a ", "b"]);
        assert!(pieces("").is_empty());
    }

    #[test]
    fn the_script_waits_for_one_response_create_per_response() {
        let waits: Vec<(String, usize)> = script(Duration::ZERO)
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::WaitFor { kind, count } => Some((kind.clone(), *count)),
                _ => None,
            })
            .collect();
        assert_eq!(
            waits,
            [
                ("session.update".to_owned(), 1),
                ("response.create".to_owned(), 1),
                ("response.create".to_owned(), 2),
                ("response.create".to_owned(), 3),
            ]
        );
        let paced = script(Duration::from_millis(5));
        assert!(paced.steps.iter().any(|s| matches!(s, Step::Sleep(_))));
        assert!(!script(Duration::ZERO)
            .steps
            .iter()
            .any(|s| matches!(s, Step::Sleep(_))));
    }
}
