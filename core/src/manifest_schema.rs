//! The JSON Schema of the manifest format itself (`toolc.schema.json`), so that YAML editors
//! complete and check manifests. It is generated from the same field lists the loader uses, and
//! a test keeps the checked-in file equal to this output.

use serde_json::{json, Map, Value};

use crate::manifest::{FORMAT_VERSION, ROOT_FIELDS, TOOL_FIELDS};

/// The schema and documentation of one tool field.
fn tool_field(name: &str) -> Value {
    match name {
        "name" => json!({
            "description": "Unique tool name, valid for every provider. Generated Rust and TypeScript identifiers derive from it.",
            "type": "string",
            "pattern": "^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
        }),
        "description" => json!({
            "description": "What the tool does and when the model should call it. The model reads this.",
            "type": "string",
            "minLength": 1
        }),
        "location" => json!({
            "description": "`server`: runs in-process through exactly one executor. `client`: forwarded to the browser or app; never has a server executor.",
            "enum": ["server", "client"]
        }),
        "parameters" => json!({
            "description": "JSON Schema 2020-12 of the arguments; the root is an object schema. Omit it for a tool without arguments.",
            "$ref": "https://json-schema.org/draft/2020-12/schema"
        }),
        "returns" => json!({
            "description": "JSON Schema 2020-12 of the result; results are checked against it. `content`: the tool answers with content blocks (text, image, audio, embedded resource), as MCP carries them.",
            "anyOf": [
                { "const": crate::content::KEYWORD },
                { "$ref": "https://json-schema.org/draft/2020-12/schema" }
            ]
        }),
        "timeout" => json!({
            "description": format!(
                "Deadline: for server tools the executor's, for client tools the browser's reply (default 10s). Written as {}: whole milliseconds, more than 0 and at most 1h.",
                crate::manifest::TIMEOUT_GRAMMAR
            ),
            "type": "string",
            "pattern": crate::manifest::TIMEOUT_PATTERN
        }),
        "title" => json!({
            "description": "A human-readable name for hosts that show tools to people (MCP's `title`).",
            "type": "string",
            "minLength": 1
        }),
        "annotations" => json!({
            "description": "Hints for hosts about what the tool does (MCP's tool annotations). Unset hints say nothing.",
            "type": "object",
            "properties": {
                "read_only": { "description": "It does not change its environment.", "type": "boolean" },
                "destructive": { "description": "It may destroy or overwrite (when not read-only).", "type": "boolean" },
                "idempotent": { "description": "Calling it again with the same arguments does nothing more.", "type": "boolean" },
                "open_world": { "description": "It reaches an open world (the web, other people).", "type": "boolean" }
            },
            "additionalProperties": false
        }),
        "wait_for_response" => json!({
            "description": "Client tools only. `false` makes the tool fire-and-forget: the model is answered at once.",
            "type": "boolean",
            "default": true
        }),
        "filler" => json!({
            "description": "Phrases a voice agent may say while it waits: for the browser (client tools) or the executor (server tools).",
            "type": "array",
            "items": { "type": "string", "minLength": 1 }
        }),
        "approval" => json!({
            "description": "`required`: each call waits for the user's approval before it runs (asked through the browser in a realtime session, or by the application in a chat turn); a denial or no answer in time reaches the model as the result. Not for fire-and-forget tools.",
            "enum": crate::manifest::APPROVAL_VALUES,
            "default": "none"
        }),
        "mode" => json!({
            "description": "Server tools only. `async`: the model is told at once that the work started and the conversation goes on; the result is added when it arrives and the model asked to respond when no response is in progress.",
            "enum": crate::manifest::MODE_VALUES,
            "default": "sync"
        }),
        "scheduling" => json!({
            "description": "Server tools with `mode: async` only: when the model takes up the result on Gemini Live. `when_idle` (default): once the model has finished what it is saying. `interrupt`: at once, stopping its speech (for results the user is waiting on). `silent`: into the context only; the model uses it when it next speaks. OpenAI Realtime has no such setting: a result goes in at the next point where no response is in progress.",
            "enum": crate::definition::Scheduling::NAMES
        }),
        "cancel_on_interruption" => json!({
            "description": "Whether a call still running when the user interrupts the response that made it is cancelled (the executor's cancellation signal fires; the browser handler's abort signal fires). Default: true for waiting client tools and sync server tools, false otherwise.",
            "type": "boolean"
        }),
        "stream_arguments" => json!({
            "description": "Client tools only. `true`: the browser gets the arguments while the model writes them (partial, for early rendering); the final call is validated as usual.",
            "type": "boolean",
            "default": false
        }),
        "on_duplicate" => json!({
            "description": "What a second call with the same arguments within `duplicate_window` does (a model re-issuing a call after an interruption, a provider or client sending one twice). `run`: runs again. `reuse`: does not run; gets the first call's result. `refuse`: does not run; the model is told the same call already ran. Default by `annotations.idempotent`: `reuse` when false (`refuse` when also `destructive: true`), else `run`.",
            "enum": crate::definition::OnDuplicate::NAMES
        }),
        "toolset" => json!({
            "description": "The toolset (declared under the root's `toolsets`) the tool belongs to. Responses declares a toolset as a namespace of its tools; other providers declare the tools as before.",
            "type": "string",
            "pattern": crate::manifest::TOOLSET_NAME_PATTERN
        }),
        "defer_loading" => json!({
            "description": "`true` for a tool the model rarely needs: Responses loads it only when the model looks for it with tool search (`defer_loading`), so a large catalog costs fewer tokens. Other providers declare it as usual.",
            "type": "boolean",
            "default": false
        }),
        "duplicate_window" => json!({
            "description": format!(
                "How long after a call a second one with the same arguments is its duplicate (default 60s). Written as {}.",
                crate::manifest::TIMEOUT_GRAMMAR
            ),
            "type": "string",
            "pattern": crate::manifest::TIMEOUT_PATTERN
        }),
        "rate_limit" => json!({
            "description": "At most so many calls per window: `10/min`, `100/day per principal`, `5/min per conversation`, `3/10s` (windows: s, min, h, day). Counted per principal (the user, across all their conversations) unless `per conversation`. A call over the limit does not run; the model gets a `rate_limited` result saying when to try again.",
            "type": "string",
            "pattern": crate::definition::RATE_LIMIT_PATTERN
        }),
        "retry" => json!({
            "description": "Server tools that are safe to repeat only (`annotations: { idempotent: true }` or `read_only: true`; anything else is a build error): a run that failed with a retryable failure runs again, after `backoff` and twice as long before each next retry.",
            "type": "object",
            "properties": {
                "attempts": { "description": "Runs in all, the first included.", "type": "integer", "minimum": 2, "maximum": crate::definition::RetryPolicy::MAX_ATTEMPTS },
                "backoff": {
                    "description": format!("The wait before the first retry (default 200ms), doubled for each next one. Written as {}.", crate::manifest::TIMEOUT_GRAMMAR),
                    "type": "string",
                    "pattern": crate::manifest::TIMEOUT_PATTERN
                },
                "on": {
                    "description": "The failures retried (default both): `timeout` (the run passed the tool's `timeout`), `tool_failed` (the executor returned an error). Invalid arguments, refusals and panics are never retried.",
                    "type": "array",
                    "items": { "enum": crate::definition::RetryPolicy::FAILURES },
                    "minItems": 1,
                    "uniqueItems": true
                }
            },
            "required": ["attempts"],
            "additionalProperties": false
        }),
        "scopes" => json!({
            "description": "The OAuth scopes a caller's access token must carry to call the tool (RFC 6749 scope tokens: printable ASCII without space, `\"` or `\\`). An MCP server acting as an OAuth resource server answers a token without them `403 insufficient_scope` and lists them in its protected resource metadata. Not part of any provider's declaration.",
            "type": "array",
            "items": { "type": "string", "pattern": crate::manifest::SCOPE_PATTERN },
            "uniqueItems": true
        }),
        other => unreachable!("TOOL_FIELDS lists `{other}` without documentation"),
    }
}

/// The JSON Schema of the manifest format, as checked in as `toolc.schema.json`.
pub fn manifest_json_schema() -> Value {
    let mut tool_properties = Map::new();
    for field in TOOL_FIELDS {
        tool_properties.insert((*field).into(), tool_field(field));
    }
    let mut root_properties = Map::new();
    for field in ROOT_FIELDS {
        let schema = match *field {
            "version" => {
                json!({ "description": "Manifest format version.", "const": FORMAT_VERSION })
            }
            "realtime" => json!({
                "description": "The realtime providers these tools are served on. A tool asking for a behaviour one of them cannot give (a filler or streamed arguments on `gemini-live`, `vertex-live` or `gpt-live`, a `scheduling` on `openai`, `vertex-live` or `gpt-live`) gets a warning at build time.",
                "type": "array",
                "items": { "enum": crate::manifest::REALTIME_TARGETS },
                "uniqueItems": true
            }),
            "toolsets" => json!({
                "description": "Named groups of tools, each with a description the model reads. A tool joins one with `toolset`.",
                "type": "object",
                "propertyNames": { "pattern": crate::manifest::TOOLSET_NAME_PATTERN },
                "additionalProperties": {
                    "type": "object",
                    "properties": { "description": { "type": "string", "minLength": 1 } },
                    "required": ["description"],
                    "additionalProperties": false
                }
            }),
            "mcp" => json!({
                "description": "How MCP serves these tools.",
                "type": "object",
                "properties": {
                    "list_ttl": {
                        "description": "How long an MCP client may keep the tool list (`tools/list`'s `ttlMs`), from `0s` (list every time) to `24h`. Across manifests the shortest wins. Unset: `McpServer` says 5 minutes.",
                        "type": "string",
                        "pattern": crate::manifest::TIMEOUT_PATTERN
                    }
                },
                "additionalProperties": false
            }),
            "tools" => json!({ "type": "array", "items": { "$ref": "#/$defs/Tool" } }),
            other => unreachable!("ROOT_FIELDS lists `{other}` without documentation"),
        };
        root_properties.insert((*field).into(), schema);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "toolc tool manifest",
        "description": "Tools written once for every provider. Fields starting with `x-` are free for your own use.",
        "type": "object",
        "properties": root_properties,
        "required": ["version", "tools"],
        "patternProperties": { "^x-": {} },
        "additionalProperties": false,
        "$defs": {
            "Tool": {
                "type": "object",
                "properties": tool_properties,
                "required": ["name", "description", "location"],
                "patternProperties": { "^x-": {} },
                "additionalProperties": false,
                "allOf": [
                    {
                        "if": { "properties": { "location": { "const": "server" } } },
                        "then": {
                            "not": {
                                "anyOf": [ { "required": ["wait_for_response"] }, { "required": ["stream_arguments"] } ]
                            }
                        }
                    },
                    {
                        "if": { "properties": { "location": { "const": "client" } } },
                        "then": { "not": { "anyOf": [ { "required": ["mode"] }, { "required": ["scheduling"] } ] } }
                    },
                    {
                        "if": { "required": ["scheduling"] },
                        "then": { "properties": { "mode": { "const": "async" } }, "required": ["mode"] }
                    },
                    {
                        "if": {
                            "properties": { "approval": { "const": "required" }, "wait_for_response": { "const": false } },
                            "required": ["approval", "wait_for_response"]
                        },
                        "then": false
                    }
                ]
            }
        }
    })
}

/// The text of `toolc.schema.json`.
pub fn manifest_json_schema_text() -> String {
    crate::to_json_text(&manifest_json_schema())
}
