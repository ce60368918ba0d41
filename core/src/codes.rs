//! Every diagnostic code of the front end and the emitters, in one place: the codes are part of
//! the interface (CI filters on them, the README documents each), so they are spelt once.
//! `toolc diff`'s change codes are `toolc::diff::*`, beside the comparison.

/// `anyOf`/`oneOf`/`allOf` at the root of `parameters`, which Anthropic rejects.
pub const ANTHROPIC_UNSUPPORTED: &str = "toolc::anthropic-unsupported";
/// Error: `approval: required` on a tool with `wait_for_response: false` (nobody would wait
/// for the approved call)
pub const APPROVAL_ON_FIRE_AND_FORGET: &str = "toolc::approval-on-fire-and-forget";
/// Error: `wait_for_response` or `stream_arguments` on a server tool
pub const CLIENT_ONLY_FIELD: &str = "toolc::client-only-field";
/// Error: a key appears twice in one mapping (both places are shown)
pub const DUPLICATE_KEY: &str = "toolc::duplicate-key";
/// Error: two tools with one name, in one file or across files (both places are shown)
pub const DUPLICATE_NAME: &str = "toolc::duplicate-name";
/// Error: a blank description
pub const EMPTY_DESCRIPTION: &str = "toolc::empty-description";
/// A non-string `enum`/`const`, which Gemini does not take; the values moved into the
/// description.
pub const GEMINI_ENUM: &str = "toolc::gemini-non-string-enum";
/// A recursive `$ref`, which Gemini cannot express; unrolled a few levels, deeper ones left
/// out.
pub const GEMINI_RECURSIVE_REF: &str = "toolc::gemini-recursive-ref";
/// A keyword Gemini's `Schema` cannot express was dropped (its meaning moved into the
/// description).
pub const GEMINI_UNSUPPORTED: &str = "toolc::gemini-unsupported";
/// Error: two names that become the same Rust/TypeScript identifier
pub const IDENTIFIER_COLLISION: &str = "toolc::identifier-collision";
/// Error: a setting of the build itself (the CLI, the `Builder`) is invalid, such as a
/// `--runtime-path` that is not a Rust path.
pub const INVALID_CONFIG: &str = "toolc::invalid-config";
/// Warning: a `default` its own schema rejects (`default: "ten"` on an integer, `default: yes`
/// on a boolean: YAML 1.2 reads a string)
pub const INVALID_DEFAULT: &str = "toolc::invalid-default";
/// Warning: an entry of `examples` its own schema rejects
pub const INVALID_EXAMPLE: &str = "toolc::invalid-example";
/// Error: a field has the wrong type (e.g. `wait_for_response: "no"`)
pub const INVALID_FIELD: &str = "toolc::invalid-field";
/// Error: a tool name that some provider rejects; a fixed name is suggested
pub const INVALID_NAME: &str = "toolc::invalid-name";
/// Error: anything else the JSON Schema 2020-12 meta-schema or the validator compiler rejects
/// (`minLength: -1`, a bad `pattern`)
pub const INVALID_SCHEMA: &str = "toolc::invalid-schema";
/// Error: a `rate_limit` that is not calls per window (`10/min`, `100/day per principal`, `5/min
/// per conversation`), or allows 0 calls
pub const INVALID_RATE_LIMIT: &str = "toolc::invalid-rate-limit";
/// Error: a `retry` that is not a mapping of `attempts` (2 to 10), `backoff` (a duration) and `on`
/// (`timeout`, `tool_failed`)
pub const INVALID_RETRY: &str = "toolc::invalid-retry";
/// Error: a `scopes` entry that is not an OAuth scope token (empty, not a string, or holding a
/// space, `"`, `\` or anything but printable ASCII), or a scope named twice
pub const INVALID_SCOPE: &str = "toolc::invalid-scope";
/// Error: a `retry` on a tool whose `annotations` do not say it is safe to repeat (`idempotent:
/// true` or `read_only: true`): a retried run could do its work twice
pub const RETRY_NOT_IDEMPOTENT: &str = "toolc::retry-not-idempotent";
/// Error: a timeout without a unit or with an unknown unit
pub const INVALID_TIMEOUT: &str = "toolc::invalid-timeout";
/// A `returns` schema that is not an object schema; MCP's `outputSchema` is left out.
pub const MCP_OUTPUT_SCHEMA: &str = "toolc::mcp-output-schema";
/// Error: `version`, `tools`, or a tool's `name`, `description` or `location` is missing; also
/// an empty or comment-only file
pub const MISSING_FIELD: &str = "toolc::missing-field";
/// Error: the root of `parameters` is not `type: object`
pub const PARAMETERS_NOT_OBJECT: &str = "toolc::parameters-not-object";
/// A tool name a provider does not accept; the tool is left out of that provider's file.
pub const PROVIDER_NAME: &str = "toolc::provider-name";
/// Error: a schema that is, through `$ref`s and `anyOf`/`oneOf`/`allOf` members, only itself
/// (`A: {$ref: A}`): it has no type, and Rust and TypeScript reject the alias
pub const REF_CYCLE: &str = "toolc::ref-cycle";
/// Error: a schema whose `$ref`s, written out in full, make more than
/// [`crate::schema_util::MAX_WRITTEN_OUT`] schemas (definitions that each use the next in several
/// places): a validator may apply all of them to one value
pub const SCHEMA_TOO_LARGE: &str = "toolc::schema-too-large";
/// Warning: a definition that reaches itself by two paths into the same part of a value (two
/// alternatives that both recurse into `child`): validation may take time exponential in the
/// argument's depth
pub const AMBIGUOUS_RECURSION: &str = "toolc::ambiguous-recursion";
/// Error: `mode` or `scheduling` on a client tool
pub const SERVER_ONLY_FIELD: &str = "toolc::server-only-field";
/// Error: `scheduling` on a tool that is not `mode: async` (only a background result is
/// scheduled)
pub const SCHEDULING_WITHOUT_ASYNC: &str = "toolc::scheduling-without-async";
/// Warning: a tool asks for a behaviour that one of the manifest's `realtime` targets cannot
/// give (a filler or streamed arguments on Gemini Live, a result scheduling on OpenAI)
pub const TARGET_CANNOT_HONOUR: &str = "toolc::target-cannot-honour";
/// Error: a tool's `toolset` names a toolset its manifest does not declare under `toolsets`
pub const UNKNOWN_TOOLSET: &str = "toolc::unknown-toolset";
/// Error: two manifests declare one toolset name with different descriptions
pub const TOOLSET_CONFLICT: &str = "toolc::toolset-conflict";
/// Warning: a tool's `on_duplicate` contradicts its `annotations` (`reuse` on a destructive,
/// non-idempotent tool; `run` on one that says calling it twice does more)
pub const DUPLICATE_POLICY_CONTRADICTION: &str = "toolc::duplicate-policy-contradiction";
/// Warning: a `duplicate_window` on a tool whose calls all run (no duplicate is looked for)
pub const DUPLICATE_WINDOW_UNUSED: &str = "toolc::duplicate-window-unused";
/// OpenAI strict mode is not possible for a tool; it is declared with `strict: false`.
pub const STRICT_MODE_UNAVAILABLE: &str = "toolc::strict-mode-unavailable";
/// Error: a timeout of 0 or over 1h
pub const TIMEOUT_OUT_OF_RANGE: &str = "toolc::timeout-out-of-range";
/// Error: nesting deeper than 128 levels
pub const TOO_DEEP: &str = "toolc::too-deep";
/// Error: file over 64 MiB, or aliases expanding past 4,000,000 nodes
pub const TOO_LARGE: &str = "toolc::too-large";
/// Error: `required` names a property that `properties` does not declare (inside
/// `allOf`/`anyOf`/`oneOf`/`not`/`if`/`then`/`else` it names the properties declared beside
/// them, as in `anyOf: [{required: [email]}, {required: [phone]}]`, and is not checked; an
/// object without `properties` may require any keys)
pub const UNDECLARED_REQUIRED: &str = "toolc::undeclared-required";
/// Error: a field that format version 1 does not have, with "did you mean"
pub const UNKNOWN_FIELD: &str = "toolc::unknown-field";
/// Error or warning: a misspelt keyword (`proprties`) is an error; any other unknown keyword a
/// warning (name your own annotations `x-...`)
pub const UNKNOWN_KEYWORD: &str = "toolc::unknown-keyword";
/// Error: `location` is not `server` or `client`
pub const UNKNOWN_LOCATION: &str = "toolc::unknown-location";
/// Error: a `type` that JSON Schema does not have (`strng` → `string`, `int` → `integer`)
pub const UNKNOWN_TYPE: &str = "toolc::unknown-type";
/// Error: a `$ref` that does not resolve inside the schema (remote refs are not fetched)
pub const UNRESOLVED_REF: &str = "toolc::unresolved-ref";
/// Error: no value can satisfy the schema, or the model is offered one that is always refused:
/// an `enum` value or `const` the rest of its schema rejects (`type: boolean` with `enum:
/// ["True", "False"]`, `type: array` with an enum of strings), an empty `enum`, a `const`
/// outside the `enum`, `minimum` above `maximum` (and the exclusive forms),
/// `minLength`/`minItems`/`minProperties`/`minContains` above their maximum, a `required`
/// property that `additionalProperties: false` forbids
pub const UNSATISFIABLE_SCHEMA: &str = "toolc::unsatisfiable-schema";
/// Error: `version` is not `1`
pub const UNSUPPORTED_VERSION: &str = "toolc::unsupported-version";
/// Warning: a schema the generated Rust can only type as `serde_json::Value`.
pub const UNTYPED_RUST: &str = "toolc::untyped-rust";
/// Error: the file is not valid YAML (or holds a second document); each control character YAML
/// forbids (a tab used for indentation, an ESC or a bell in a value) is reported where it is,
/// and manifest text in a diagnostic never reaches your terminal as a control character
pub const YAML_SYNTAX: &str = "toolc::yaml-syntax";
