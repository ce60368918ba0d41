//! The scripted conversation the bundled model plays when no API key is set: the customer's
//! question, then three responses, in OpenAI Realtime GA events ([`script()`]), in Gemini Live
//! messages ([`live_script()`]) or in GPT-Live events ([`gpt_live_script()`]).
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

/// How many `session.input_audio.append` chunks the page's clip is (100 ms each): the GPT-Live
/// script "hears" the question once they have all arrived. The page (`web/src/main.ts`,
/// `CLIP_CHUNKS`) sends exactly this many.
pub const GPT_LIVE_CLIP_CHUNKS: usize = 5;

/// The sample rate of the page's clip and of the session's audio (`session.audio.format`):
/// PCM16, mono, 24 kHz.
pub const GPT_LIVE_AUDIO_RATE: u32 = 24_000;

/// The same conversation as GPT-Live plays it. GPT-Live takes the customer's voice only (it has
/// no typed user turn), so the page "speaks": it sends a short clip as
/// `session.input_audio.append` chunks, and this model, which does not listen, transcribes them
/// as [`QUESTION`] (`session.input_transcript.delta`). The live model delegates the task to the
/// Responses backend (`session.delegation.created`), whose stream reaches the relay as
/// `response.event`s: each turn is one backend response with the same calls as the other
/// providers' scripts, while the live model says the turn's text
/// (`session.output_transcript.delta`). Only the relay asks the backend to go on: the script
/// waits for one `response.create` per earlier response (the page may not send one). Every
/// event is in the shape of OpenAI's SDK (`openai.types.live`; `tests/demo.rs` checks them with
/// it).
pub fn gpt_live_script(pace: Duration) -> Script {
    const DELEGATION: &str = "dlg_demo_1";
    let mut steps = vec![
        Step::WaitFor {
            kind: "session.start".into(),
            count: 1,
        },
        Step::Send(script::gpt_live::session_started("sess_demo")),
        Step::WaitFor {
            kind: "session.input_audio.append".into(),
            count: GPT_LIVE_CLIP_CHUNKS,
        },
    ];
    // The session's timeline, in milliseconds: the clip, then what the live model says.
    let mut clock = 0u64;
    let clip_ms = 100 * GPT_LIVE_CLIP_CHUNKS as u64;
    let words = pieces(QUESTION);
    for (i, piece) in words.iter().enumerate() {
        let start = clip_ms * i as u64 / words.len() as u64;
        let end = clip_ms * (i as u64 + 1) / words.len() as u64;
        steps.push(Step::Send(transcript_delta(
            "session.input_transcript.delta",
            &format!("evt_demo_in_{i}"),
            piece,
            start,
            end,
        )));
        clock = end;
    }
    steps.push(Step::Send(json!({
        "type": "session.delegation.created",
        "event_id": "evt_demo_delegation",
        "offset_ms": clock,
        "delegation": { "id": DELEGATION, "target": "responses", "type": "delegation" },
    })));
    for (n, turn) in TURNS.iter().enumerate() {
        if n > 0 {
            steps.push(Step::WaitFor {
                kind: "response.create".into(),
                count: n,
            });
        }
        let mut backend = BackendStream::new(DELEGATION, n);
        steps.push(Step::Send(backend.event(script::gpt_live::lifecycle(
            "response.created",
            turn.response_id,
            "in_progress",
            0,
        ))));
        // What the live model says while the backend works (the page shows this).
        for (i, piece) in pieces(turn.text).into_iter().enumerate() {
            if !pace.is_zero() {
                steps.push(Step::Sleep(pace));
            }
            let end = clock + 80;
            steps.push(Step::Send(transcript_delta(
                "session.output_transcript.delta",
                &format!("evt_demo_out_{n}_{i}"),
                &piece,
                clock,
                end,
            )));
            clock = end;
        }
        steps.extend(backend.response(turn).into_iter().map(Step::Send));
    }
    let mut script = Script::new();
    script.steps = steps;
    script.wait_limit = Duration::from_secs(3600);
    script
}

/// `session.input_transcript.delta` or `session.output_transcript.delta`.
fn transcript_delta(kind: &str, event_id: &str, delta: &str, start_ms: u64, end_ms: u64) -> Value {
    json!({
        "type": kind,
        "event_id": event_id,
        "delta": delta,
        "start_ms": start_ms,
        "end_ms": end_ms,
    })
}

/// The `response.event`s of one backend response, numbered as the Responses API numbers its
/// stream (`sequence_number`) and as GPT-Live numbers its events.
struct BackendStream {
    delegation: &'static str,
    turn: usize,
    sent: u64,
}

impl BackendStream {
    fn new(delegation: &'static str, turn: usize) -> BackendStream {
        BackendStream {
            delegation,
            turn,
            sent: 0,
        }
    }

    /// `inner` in its `response.event`, with the next sequence number.
    fn event(&mut self, mut inner: Value) -> Value {
        inner["sequence_number"] = json!(self.sent);
        let event = json!({
            "type": "response.event",
            "event_id": format!("evt_demo_r{}_{}", self.turn + 1, self.sent),
            "delegation_id": self.delegation,
            "event": inner,
        });
        self.sent += 1;
        event
    }

    /// After `response.created`: the backend's message (the turn's text), its calls, and
    /// `response.completed`.
    fn response(&mut self, turn: &Turn) -> Vec<Value> {
        let rid = turn.response_id;
        let message_id = format!("msg_{rid}");
        let message = |status: &str, text: Option<&str>| {
            let content = match text {
                Some(t) => json!([{ "type": "output_text", "text": t, "annotations": [] }]),
                None => json!([]),
            };
            json!({
                "id": message_id, "type": "message", "role": "assistant", "status": status,
                "content": content,
            })
        };
        let part = |text: &str| json!({ "type": "output_text", "text": text, "annotations": [] });
        let text_event = |kind: &str, extra: Value| {
            let mut event = json!({
                "type": kind, "item_id": message_id, "output_index": 0, "content_index": 0,
            });
            if let (Some(event), Value::Object(extra)) = (event.as_object_mut(), extra) {
                event.extend(extra);
            }
            event
        };
        let mut inner = vec![
            json!({ "type": "response.output_item.added", "output_index": 0, "item": message("in_progress", None) }),
            text_event("response.content_part.added", json!({ "part": part("") })),
        ];
        for piece in pieces(turn.text) {
            inner.push(text_event(
                "response.output_text.delta",
                json!({ "delta": piece, "logprobs": [] }),
            ));
        }
        inner.push(text_event(
            "response.output_text.done",
            json!({ "text": turn.text, "logprobs": [] }),
        ));
        inner.push(text_event(
            "response.content_part.done",
            json!({ "part": part(turn.text) }),
        ));
        inner.push(json!({
            "type": "response.output_item.done", "output_index": 0,
            "item": message("completed", Some(turn.text)),
        }));
        for (i, call) in turn.calls.iter().enumerate() {
            let item_id = format!("item_{}", call.call_id);
            for mut event in script::gpt_live::function_call(
                &item_id,
                call.call_id,
                call.name,
                call.arguments,
                0,
            ) {
                event["output_index"] = json!(i + 1);
                inner.push(event);
            }
        }
        inner.push(script::gpt_live::lifecycle(
            "response.completed",
            rid,
            "completed",
            0,
        ));
        inner.into_iter().map(|e| self.event(e)).collect()
    }
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
    fn the_gpt_live_script_hears_the_clip_then_waits_for_one_continuation_per_response() {
        let steps = gpt_live_script(Duration::ZERO).steps;
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
                ("session.start".to_owned(), 1),
                (
                    "session.input_audio.append".to_owned(),
                    GPT_LIVE_CLIP_CHUNKS
                ),
                ("response.create".to_owned(), 1),
                ("response.create".to_owned(), 2),
            ]
        );
        let sent: Vec<&Value> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Send(v) => Some(v),
                _ => None,
            })
            .collect();
        let said = |kind: &str| -> String {
            sent.iter()
                .filter(|e| e["type"] == kind)
                .filter_map(|e| e["delta"].as_str())
                .collect()
        };
        assert_eq!(said("session.input_transcript.delta"), QUESTION);
        assert_eq!(
            said("session.output_transcript.delta"),
            TURNS.iter().map(|t| t.text).collect::<String>()
        );
        // One backend response per turn, each with that turn's calls, numbered in order.
        let nested: Vec<&Value> = sent
            .iter()
            .filter(|e| e["type"] == "response.event")
            .map(|e| &e["event"])
            .collect();
        let mut batches: Vec<Vec<&str>> = Vec::new();
        let mut numbers = Vec::new();
        for event in &nested {
            match event["type"].as_str().unwrap() {
                "response.created" => {
                    batches.push(Vec::new());
                    numbers.clear();
                }
                "response.output_item.done" if event["item"]["type"] == "function_call" => {
                    batches
                        .last_mut()
                        .unwrap()
                        .push(event["item"]["call_id"].as_str().unwrap());
                }
                _ => {}
            }
            numbers.push(event["sequence_number"].as_u64().unwrap());
            assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());
        }
        let expected: Vec<Vec<&str>> = TURNS
            .iter()
            .map(|t| t.calls.iter().map(|c| c.call_id).collect())
            .collect();
        assert_eq!(batches, expected);
        assert_eq!(
            nested.last().unwrap()["type"],
            "response.completed",
            "the closing response ends"
        );
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
