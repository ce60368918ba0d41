//! Server events as an OpenAI Realtime GA model emits them, for scripted fake models, tests and
//! demos. Each builder returns one event as a JSON value with the fields the GA schema requires.

use serde_json::{json, Value};

/// `response.created` for a response that has just started.
pub fn response_created(response_id: &str) -> Value {
    json!({
        "type": "response.created",
        "event_id": format!("ev_{response_id}_created"),
        "response": {
            "id": response_id,
            "object": "realtime.response",
            "status": "in_progress",
            "output": [],
        },
    })
}

/// A completed `function_call` item.
pub fn function_call_item(item_id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    })
}

/// The events of one function call, in the order the GA API sends them:
/// `response.output_item.added`, `response.function_call_arguments.delta` (the arguments in
/// two pieces), `response.function_call_arguments.done`, `response.output_item.done`.
pub fn function_call(
    response_id: &str,
    output_index: u32,
    item_id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
) -> Vec<Value> {
    let split = arguments
        .char_indices()
        .map(|(i, _)| i)
        .nth(arguments.chars().count() / 2)
        .unwrap_or(arguments.len());
    let (first, second) = arguments.split_at(split);
    let ev = |suffix: &str| format!("ev_{item_id}_{suffix}");
    vec![
        json!({
            "type": "response.output_item.added",
            "event_id": ev("added"),
            "response_id": response_id,
            "output_index": output_index,
            "item": {
                "id": item_id, "object": "realtime.item", "type": "function_call",
                "status": "in_progress", "call_id": call_id, "name": name, "arguments": "",
            },
        }),
        json!({
            "type": "response.function_call_arguments.delta",
            "event_id": ev("delta1"),
            "response_id": response_id, "item_id": item_id, "output_index": output_index,
            "call_id": call_id, "delta": first,
        }),
        json!({
            "type": "response.function_call_arguments.delta",
            "event_id": ev("delta2"),
            "response_id": response_id, "item_id": item_id, "output_index": output_index,
            "call_id": call_id, "delta": second,
        }),
        json!({
            "type": "response.function_call_arguments.done",
            "event_id": ev("args_done"),
            "response_id": response_id, "item_id": item_id, "output_index": output_index,
            "call_id": call_id, "name": name, "arguments": arguments,
        }),
        json!({
            "type": "response.output_item.done",
            "event_id": ev("item_done"),
            "response_id": response_id,
            "output_index": output_index,
            "item": function_call_item(item_id, call_id, name, arguments),
        }),
    ]
}

/// `response.done` with the given output items.
pub fn response_done(response_id: &str, output: Vec<Value>) -> Value {
    json!({
        "type": "response.done",
        "event_id": format!("ev_{response_id}_done"),
        "response": {
            "id": response_id,
            "object": "realtime.response",
            "status": "completed",
            "output": output,
        },
    })
}

/// `response.done` for a response the user interrupted (`turn_detected`: they started
/// speaking), with the output items it had so far.
pub fn response_interrupted(response_id: &str, output: Vec<Value>) -> Value {
    let mut done = response_done(response_id, output);
    done["response"]["status"] = json!("cancelled");
    done["response"]["status_details"] = json!({ "type": "cancelled", "reason": "turn_detected" });
    done
}

/// `conversation.item.added` for an item, as the server echoes items it stored.
pub fn conversation_item_added(item: Value) -> Value {
    json!({ "type": "conversation.item.added", "event_id": "ev_item_added", "item": item })
}

/// An event that is not about tools: an output-text delta with a sequence number, for checking
/// that events pass through unchanged and in order.
pub fn text_delta(response_id: &str, seq: u64) -> Value {
    json!({
        "type": "response.output_text.delta",
        "event_id": format!("ev_text_{seq}"),
        "response_id": response_id,
        "item_id": "item_text",
        "output_index": 0,
        "content_index": 0,
        "delta": format!("word {seq} "),
    })
}

/// A complete scripted response that calls the given tools, as `(call_id, name, arguments)`:
/// `response.created`, every call's events, `response.done` listing the calls.
pub fn response_with_calls(response_id: &str, calls: &[(&str, &str, &str)]) -> Vec<Value> {
    let mut events = vec![response_created(response_id)];
    let mut items = Vec::new();
    for (i, (call_id, name, arguments)) in calls.iter().enumerate() {
        let item_id = format!("item_{call_id}");
        events.extend(function_call(
            response_id,
            i as u32,
            &item_id,
            call_id,
            name,
            arguments,
        ));
        items.push(function_call_item(&item_id, call_id, name, arguments));
    }
    events.push(response_done(response_id, items));
    events
}

/// Gemini Live server messages, for scripted fake models and tests. Each builder returns one
/// message as a JSON value in the shapes of Google's Live API reference.
pub mod live {
    use serde_json::{json, Value};

    /// `setupComplete`, the answer to `setup`.
    pub fn setup_complete() -> Value {
        json!({ "setupComplete": {} })
    }

    /// `toolCall` with the calls `(id, name, args)`.
    pub fn tool_call(calls: &[(&str, &str, Value)]) -> Value {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({ "id": id, "name": name, "args": args }))
            .collect();
        json!({ "toolCall": { "functionCalls": calls } })
    }

    /// A `serverContent` model turn that carries one call as a `functionCall` part, as some
    /// models send before (or beside) the `toolCall`.
    pub fn model_turn_call(id: &str, name: &str, args: Value) -> Value {
        json!({
            "serverContent": {
                "modelTurn": { "parts": [{ "functionCall": { "id": id, "name": name, "args": args } }] }
            }
        })
    }

    /// `toolCallCancellation` of the given call ids (the user interrupted).
    pub fn cancellation(ids: &[&str]) -> Value {
        json!({ "toolCallCancellation": { "ids": ids } })
    }

    /// A chunk of the model's audio.
    pub fn audio(data: &str) -> Value {
        json!({
            "serverContent": {
                "modelTurn": {
                    "parts": [{ "inlineData": { "mimeType": "audio/pcm;rate=24000", "data": data } }]
                }
            }
        })
    }

    /// A piece of the model's text (a `TEXT` response modality).
    pub fn text(text: &str) -> Value {
        json!({ "serverContent": { "modelTurn": { "parts": [{ "text": text }] } } })
    }

    /// The end of the model's turn; `interrupted` when the user barged in.
    pub fn turn_complete(interrupted: bool) -> Value {
        if interrupted {
            json!({ "serverContent": { "interrupted": true } })
        } else {
            json!({ "serverContent": { "turnComplete": true } })
        }
    }
}

/// GPT-Live server events, for scripted fake models and tests, in the shapes of OpenAI's SDK
/// (`openai.types.live`). A delegated Responses backend's stream arrives as `response.event`s,
/// each carrying one Responses streaming event and the delegation's id.
pub mod gpt_live {
    use serde_json::{json, Value};

    /// `session.started`, the answer to `session.start`.
    pub fn session_started(session_id: &str) -> Value {
        json!({
            "type": "session.started",
            "event_id": format!("evt_{session_id}_started"),
            "session": {
                "id": session_id,
                "expires_at": 1_796_000_000,
                "model": "gpt-live-1",
                "status": "active",
            },
        })
    }

    /// `session.delegation.created`: the live model delegated work to `target` (`responses`
    /// or `client`).
    pub fn delegation_created(delegation_id: &str, target: &str) -> Value {
        json!({
            "type": "session.delegation.created",
            "event_id": format!("evt_{delegation_id}_created"),
            "offset_ms": 1200,
            "delegation": { "id": delegation_id, "target": target, "type": "delegation" },
        })
    }

    /// `response.event` carrying `event`, one Responses streaming event of `delegation_id`.
    pub fn response_event(delegation_id: &str, seq: u64, event: Value) -> Value {
        json!({
            "type": "response.event",
            "event_id": format!("evt_{delegation_id}_{seq}"),
            "delegation_id": delegation_id,
            "event": event,
        })
    }

    /// A Responses lifecycle snapshot (`response.created`, `response.completed`, ...), as
    /// GPT-Live sends them: no input, and instructions, tools and output cleared (the members
    /// the SDK's `Response` requires are there, empty).
    pub fn lifecycle(kind: &str, response_id: &str, status: &str, seq: u64) -> Value {
        json!({
            "type": kind,
            "sequence_number": seq,
            "response": {
                "id": response_id, "object": "response", "status": status,
                "created_at": 1_796_000_000, "model": "gpt-5.5", "output": [],
                "instructions": null, "tools": [], "tool_choice": "auto",
                "parallel_tool_calls": true,
            },
        })
    }

    /// The Responses events of one function call: `response.output_item.added`, one
    /// `response.function_call_arguments.delta`, `.done`, and `response.output_item.done`.
    pub fn function_call(
        item_id: &str,
        call_id: &str,
        name: &str,
        arguments: &str,
        seq: u64,
    ) -> Vec<Value> {
        let item = |status: &str, arguments: &str| {
            json!({
                "type": "function_call", "id": item_id, "call_id": call_id, "name": name,
                "arguments": arguments, "status": status,
            })
        };
        vec![
            json!({ "type": "response.output_item.added", "sequence_number": seq, "output_index": 0, "item": item("in_progress", "") }),
            json!({ "type": "response.function_call_arguments.delta", "sequence_number": seq + 1, "output_index": 0, "item_id": item_id, "delta": arguments }),
            // The SDK's `ResponseFunctionCallArgumentsDoneEvent` has no `name` (OpenAI's
            // OpenAPI document lists one; the session reads either).
            json!({ "type": "response.function_call_arguments.done", "sequence_number": seq + 2, "output_index": 0, "item_id": item_id, "arguments": arguments }),
            json!({ "type": "response.output_item.done", "sequence_number": seq + 3, "output_index": 0, "item": item("completed", arguments) }),
        ]
    }

    /// One backend response of `delegation_id` that makes `calls` (`(call_id, name,
    /// arguments)`), from `response.created` to `response.completed`, each Responses event in
    /// its `response.event`.
    pub fn response_with_calls(
        delegation_id: &str,
        response_id: &str,
        calls: &[(&str, &str, &str)],
    ) -> Vec<Value> {
        let mut seq = 0;
        let mut inner = vec![lifecycle(
            "response.created",
            response_id,
            "in_progress",
            seq,
        )];
        for (call_id, name, arguments) in calls {
            seq += 1;
            inner.extend(function_call(
                &format!("fc_{call_id}"),
                call_id,
                name,
                arguments,
                seq,
            ));
            seq += 3;
        }
        inner.push(lifecycle(
            "response.completed",
            response_id,
            "completed",
            seq + 1,
        ));
        inner
            .into_iter()
            .enumerate()
            .map(|(n, event)| response_event(delegation_id, n as u64, event))
            .collect()
    }

    /// The live model's audio (`session.output_audio.delta`).
    pub fn audio(data: &str) -> Value {
        json!({ "type": "session.output_audio.delta", "delta": data })
    }

    /// An `error` about the client event `client_event_id`.
    pub fn error(client_event_id: &str, code: &str) -> Value {
        json!({
            "type": "error",
            "event_id": format!("evt_error_{client_event_id}"),
            "client_event_id": client_event_id,
            "error": {
                "type": "invalid_request_error", "code": code, "message": "refused",
                "client_event_id": client_event_id,
            },
        })
    }
}

/// The GA server events of one assistant text reply streamed as `deltas`, for scripted fake
/// models, tests and demos: `response.created`, `response.output_item.added`,
/// `response.content_part.added`, one `response.output_text.delta` per delta,
/// `response.output_text.done`, `response.content_part.done`, `response.output_item.done` and
/// `response.done`. Every `.done` event carries the joined text, as the API sends it.
pub fn text_response(response_id: &str, item_id: &str, deltas: &[&str]) -> Vec<Value> {
    let full: String = deltas.concat();
    let ev = |suffix: &str| format!("ev_{item_id}_{suffix}");
    let item = |status: &str, text: Option<&str>| {
        let content = match text {
            Some(t) => json!([{ "type": "output_text", "text": t }]),
            None => json!([]),
        };
        json!({
            "id": item_id, "object": "realtime.item", "type": "message", "status": status,
            "role": "assistant", "content": content,
        })
    };
    let mut events = vec![
        response_created(response_id),
        json!({
            "type": "response.output_item.added", "event_id": ev("added"),
            "response_id": response_id, "output_index": 0, "item": item("in_progress", None),
        }),
        json!({
            "type": "response.content_part.added", "event_id": ev("part_added"),
            "response_id": response_id, "item_id": item_id, "output_index": 0,
            "content_index": 0, "part": { "type": "text", "text": "" },
        }),
    ];
    for (i, delta) in deltas.iter().enumerate() {
        events.push(json!({
            "type": "response.output_text.delta", "event_id": ev(&format!("delta{i}")),
            "response_id": response_id, "item_id": item_id, "output_index": 0,
            "content_index": 0, "delta": delta,
        }));
    }
    events.extend([
        json!({
            "type": "response.output_text.done", "event_id": ev("text_done"),
            "response_id": response_id, "item_id": item_id, "output_index": 0,
            "content_index": 0, "text": full,
        }),
        json!({
            "type": "response.content_part.done", "event_id": ev("part_done"),
            "response_id": response_id, "item_id": item_id, "output_index": 0,
            "content_index": 0, "part": { "type": "text", "text": full },
        }),
        json!({
            "type": "response.output_item.done", "event_id": ev("item_done"),
            "response_id": response_id, "output_index": 0,
            "item": item("completed", Some(&full)),
        }),
        response_done(response_id, vec![item("completed", Some(&full))]),
    ]);
    events
}
