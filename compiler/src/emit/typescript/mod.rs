//! `tools.ts`: typed arguments and results for every tool, the `TOOLS` table, the
//! `ClientToolHandlers` type that enforces the location rule in the browser, and
//! `createToolDispatcher`, which answers client tool calls over a WebSocket-like object.
//!
//! The output is one ES module without imports, so it works with any bundler or none, and it is
//! written for `tsc --strict` (also `--noUncheckedIndexedAccess --exactOptionalPropertyTypes`).

mod types;

use std::collections::BTreeMap;

use foldhash::HashSet;
use std::fmt::Write as _;

use serde_json::Value;

use crate::definition::{Location, ToolDefinition};
use crate::ident::pascal_case;
use crate::ir::Ir;

use types::{doc_comment, property_name, push_indent};
pub use types::{Mapper, TsType};

/// The code that is the same in every `tools.ts`: the dispatcher and its helpers.
const DISPATCHER: &str = include_str!("dispatcher.ts");

/// Names `tools.ts` declares itself, and globals it uses: no generated type may take them.
const RESERVED: &[&str] = &[
    "TOOLS",
    "CLIENT_TOOL_LIST",
    "ToolName",
    "ServerToolName",
    "ClientToolName",
    "ToolArguments",
    "ToolResults",
    "ToolLocation",
    "ToolDefinition",
    "JsonValue",
    "JsonSchema",
    "ClientToolHandlers",
    "ClientToolHandler",
    "ToolCallInfo",
    "ApprovalToolName",
    "StreamingToolName",
    "ApprovalRequest",
    "ApprovalDecision",
    "ApprovalHandler",
    "ApprovalOptions",
    "DeepPartial",
    "PartialArgumentHandlers",
    "AbortController",
    "AbortSignal",
    "Map",
    "ToolMessageNaming",
    "ToolMessageEvent",
    "ToolSocket",
    "ToolDispatcherOptions",
    "ToolDispatcher",
    "ParsedArguments",
    "AnyHandler",
    "createToolDispatcher",
    "RelaySession",
    "RelayStatus",
    "RelayConnectOptions",
    "RelayConnection",
    "RelaySocketLike",
    "connectRelay",
    "resumeRefused",
    "isJsonObject",
    "hasOwn",
    "messageOf",
    "errorOutput",
    "resultOutput",
    "parseArguments",
    "Array",
    "Boolean",
    "Error",
    "JSON",
    "Number",
    "Object",
    "Promise",
    "Record",
    "String",
    "Symbol",
];

/// The import path stubs use when the caller does not say: `tools.ts` beside the stubs.
pub const DEFAULT_STUB_IMPORT: &str = "./tools.js";

/// The exported TypeScript names of one tool.
#[derive(Debug, Clone)]
struct ToolNames {
    args: String,
    result: String,
    /// `$defs/<name>` → type name, for `parameters` and for `returns`.
    parameter_defs: BTreeMap<String, String>,
    return_defs: BTreeMap<String, String>,
}

/// The complete `tools.ts` for `ir`.
pub fn generate(ir: &Ir) -> String {
    let names = allocate_names(ir);
    let mut out = String::with_capacity(4096 + ir.tools.len() * 2048);
    header(ir, &mut out);

    out.push_str("// ---------------------------------------------------------------------------------------------\n");
    out.push_str("// Arguments and results\n");
    out.push_str("// ---------------------------------------------------------------------------------------------\n");
    for (tool, names) in ir.tools.iter().zip(&names) {
        tool_types(&tool.def, names, &mut out);
    }

    definitions_table(ir, &names, &mut out);
    handlers(ir, &names, &mut out);
    out.push('\n');
    // With tools that need approval the options carry the required `approve`, so they cannot
    // be left out.
    let options = if ir.tools.iter().any(|t| t.def.requires_approval()) {
        "options: ToolDispatcherOptions"
    } else {
        "options: ToolDispatcherOptions = {}"
    };
    out.push_str(&DISPATCHER.replace("options: ToolDispatcherOptions = {}", options));
    out
}

/// One handler skeleton per client tool, `<tool>.ts`, importing from `./tools.js` (the CLI's
/// `--ts-stubs` computes the path from the stubs' folder to `--out` instead).
pub fn stubs(ir: &Ir) -> Vec<(String, String)> {
    stubs_importing(ir, DEFAULT_STUB_IMPORT)
}

/// One handler skeleton per client tool, `<tool>.ts`, importing the generated types from
/// `import_path` (as written in an `import` statement, e.g. `../generated/tools.js`).
pub fn stubs_importing(ir: &Ir, import_path: &str) -> Vec<(String, String)> {
    let names = allocate_names(ir);
    ir.tools
        .iter()
        .zip(&names)
        .filter(|(tool, _)| tool.def.location == Location::Client)
        .map(|(tool, names)| {
            (
                format!("{}.ts", tool.def.name),
                stub(&tool.def, names, import_path),
            )
        })
        .collect()
}

/// The names `tools.ts` and the stubs give each tool (its argument, result and `$defs` types;
/// a client tool's handler function), in tool order: what code that imports them depends on.
pub(crate) fn public_names(ir: &Ir) -> Vec<Vec<String>> {
    allocate_names(ir)
        .into_iter()
        .zip(&ir.tools)
        .map(|(names, tool)| {
            let mut out = vec![format!("type `{}`", names.args)];
            out.push(format!("type `{}`", names.result));
            for name in names
                .parameter_defs
                .values()
                .chain(names.return_defs.values())
            {
                out.push(format!("type `{name}`"));
            }
            if tool.def.location == Location::Client {
                out.push(format!(
                    "stub function `{}`",
                    handler_function_name(&tool.def.name)
                ));
            }
            out
        })
        .collect()
}

/// The exported name of a tool's handler function in its stub.
pub fn handler_function_name(tool: &str) -> String {
    format!("handle{}", pascal_case(tool))
}

fn header(ir: &Ir, out: &mut String) {
    out.push_str("// @generated by toolc\n");
    let mut files: Vec<&str> = Vec::new();
    for tool in &ir.tools {
        if let Some(file) = tool.origin.file.as_deref() {
            // Only the file name: the same manifests give the same output on every machine.
            let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
            if !files.contains(&base) {
                files.push(base);
            }
        }
    }
    if !files.is_empty() {
        let _ = writeln!(out, "// Source: {}", files.join(", "));
    }
    out.push_str(
        "// Do not edit: change the manifest and run `toolc build` again.\n\
         /* eslint-disable */\n\n",
    );
}

fn allocate_names(ir: &Ir) -> Vec<ToolNames> {
    let mut used: HashSet<String> = RESERVED.iter().map(|s| (*s).to_owned()).collect();
    let mut all: Vec<ToolNames> = ir
        .tools
        .iter()
        .map(|tool| {
            let pascal = pascal_case(&tool.def.name);
            let names = ToolNames {
                args: format!("{pascal}Args"),
                result: format!("{pascal}Result"),
                parameter_defs: BTreeMap::new(),
                return_defs: BTreeMap::new(),
            };
            // The checks guarantee distinct PascalCase names, so these never clash with each other.
            used.insert(names.args.clone());
            used.insert(names.result.clone());
            names
        })
        .collect();
    for (tool, names) in ir.tools.iter().zip(all.iter_mut()) {
        let pascal = pascal_case(&tool.def.name);
        names.parameter_defs = def_names(&tool.def.parameters, &pascal, "Args", &mut used);
        if let Some(returns) = &tool.def.returns {
            names.return_defs = def_names(returns, &pascal, "Result", &mut used);
        }
    }
    all
}

/// Names for the `$defs` (and legacy `definitions`) of one root schema, in declaration order:
/// `<Tool><Def>`, or when that is taken `<Tool><Args|Result><Def>`, or a numbered name.
fn def_names(
    schema: &Value,
    pascal: &str,
    side: &str,
    used: &mut HashSet<String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for container in ["$defs", "definitions"] {
        let Some(defs) = schema.get(container).and_then(Value::as_object) else {
            continue;
        };
        for name in defs.keys() {
            let def = pascal_case(name);
            let mut candidates = vec![format!("{pascal}{def}"), format!("{pascal}{side}{def}")];
            let chosen = candidates
                .drain(..)
                .find(|c| !used.contains(c))
                .unwrap_or_else(|| {
                    (2..)
                        .map(|n| format!("{pascal}{side}{def}{n}"))
                        .find(|c| !used.contains(c))
                        .unwrap_or_default()
                });
            used.insert(chosen.clone());
            out.insert(format!("{container}/{name}"), chosen);
        }
    }
    out
}

fn tool_types(def: &ToolDefinition, names: &ToolNames, out: &mut String) {
    out.push('\n');
    type_alias(
        &format!(
            "Arguments of the {} tool `{}`: {}",
            def.location, def.name, def.description
        ),
        &names.args,
        &def.parameters,
        &names.args,
        &names.parameter_defs,
        out,
    );
    match &def.returns {
        Some(returns) => type_alias(
            &format!("Result of `{}`.", def.name),
            &names.result,
            returns,
            &names.result,
            &names.return_defs,
            out,
        ),
        None => {
            let _ = writeln!(
                out,
                "/** Result of `{}`: the manifest declares no `returns` schema, so any JSON value. */",
                def.name
            );
            let _ = writeln!(out, "export type {} = unknown;", names.result);
        }
    }
    defs(&def.parameters, &names.args, &names.parameter_defs, out);
    if let Some(returns) = &def.returns {
        defs(returns, &names.result, &names.return_defs, out);
    }
}

fn type_alias(
    doc: &str,
    name: &str,
    schema: &Value,
    root_name: &str,
    defs: &BTreeMap<String, String>,
    out: &mut String,
) {
    let mapper = Mapper {
        root: schema,
        root_name,
        defs,
    };
    doc_comment(doc, 0, out);
    let _ = write!(out, "export type {name} = ");
    mapper.map(schema).render(0, out);
    out.push_str(";\n");
}

/// The named types of a root's `$defs`, in declaration order.
fn defs(root: &Value, root_name: &str, names: &BTreeMap<String, String>, out: &mut String) {
    for container in ["$defs", "definitions"] {
        let Some(defs) = root.get(container).and_then(Value::as_object) else {
            continue;
        };
        for (key, schema) in defs {
            let Some(name) = names.get(&format!("{container}/{key}")) else {
                continue;
            };
            let mapper = Mapper {
                root,
                root_name,
                defs: names,
            };
            if let Some(doc) = types::schema_doc(schema) {
                doc_comment(&doc, 0, out);
            }
            let _ = write!(out, "export type {name} = ");
            mapper.map(schema).render(0, out);
            out.push_str(";\n");
        }
    }
}

/// A union of string literals, or `never` for none.
fn literal_union<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let parts: Vec<String> = names
        .map(|n| types::json_text(&Value::String(n.to_owned())))
        .collect();
    if parts.is_empty() {
        "never".to_owned()
    } else {
        parts.join(" | ")
    }
}

fn definitions_table(ir: &Ir, names: &[ToolNames], out: &mut String) {
    out.push_str(
        "\n// ---------------------------------------------------------------------------------------------\n\
         // Definitions\n\
         // ---------------------------------------------------------------------------------------------\n\n",
    );
    let tool_names = ir.tools.iter().map(|t| t.def.name.as_str());
    let _ = writeln!(
        out,
        "/** Every tool of the manifests. */\nexport type ToolName = {};",
        literal_union(tool_names)
    );
    let by_location = |location: Location| {
        literal_union(
            ir.tools
                .iter()
                .filter(move |t| t.def.location == location)
                .map(|t| t.def.name.as_str()),
        )
    };
    let _ = writeln!(
        out,
        "/** Tools that run on the server: the page never handles them. */\nexport type ServerToolName = {};",
        by_location(Location::Server)
    );
    let _ = writeln!(
        out,
        "/** Tools that run in the page, through `ClientToolHandlers`. */\nexport type ClientToolName = {};",
        by_location(Location::Client)
    );
    let _ = writeln!(
        out,
        "/** Tools whose calls wait for the user's approval (`approval: required`). */\nexport type ApprovalToolName = {};",
        literal_union(
            ir.tools
                .iter()
                .filter(|t| t.def.requires_approval())
                .map(|t| t.def.name.as_str())
        )
    );
    let _ = writeln!(
        out,
        "/** Client tools whose arguments the page gets while the model writes them (`stream_arguments: true`). */\nexport type StreamingToolName = {};\n",
        literal_union(
            ir.tools
                .iter()
                .filter(|t| t.def.streams_arguments())
                .map(|t| t.def.name.as_str())
        )
    );

    out.push_str("/** The arguments of each tool, by name. */\nexport interface ToolArguments {\n");
    for (tool, names) in ir.tools.iter().zip(names) {
        push_indent(2, out);
        property_name(&tool.def.name, out);
        let _ = writeln!(out, ": {};", names.args);
    }
    out.push_str("}\n\n/** The result of each tool, by name. */\nexport interface ToolResults {\n");
    for (tool, names) in ir.tools.iter().zip(names) {
        push_indent(2, out);
        property_name(&tool.def.name, out);
        let _ = writeln!(out, ": {};", names.result);
    }
    out.push_str("}\n\n");

    out.push_str(
        "export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };\n\
         /** A JSON Schema 2020-12 document. */\n\
         export type JsonSchema = boolean | { readonly [keyword: string]: JsonValue };\n\
         export type ToolLocation = \"server\" | \"client\";\n\n\
         /** One tool as the manifest defines it (the same fields as the Rust runtime's definitions). */\n\
         export interface ToolDefinition<N extends string = string> {\n\
         \x20 readonly name: N;\n\
         \x20 /** A human-readable name, for pages that show tools to people; `null` when the manifest gives none. */\n\
         \x20 readonly title: string | null;\n\
         \x20 readonly description: string;\n\
         \x20 readonly location: ToolLocation;\n\
         \x20 readonly parameters: JsonSchema;\n\
         \x20 readonly returns: JsonSchema | null;\n\
         \x20 /** The deadline that applies to a call, in milliseconds (client tools default to 10 s); `null` for none. */\n\
         \x20 readonly timeout_ms: number | null;\n\
         \x20 /** Client tools: `false` means fire-and-forget, the model does not wait for a result. */\n\
         \x20 readonly wait_for_response: boolean;\n\
         \x20 /** Phrases a voice agent may say while it waits for the call. */\n\
         \x20 readonly filler: readonly string[];\n\
         \x20 /** `\"required\"`: each call waits for the user's approval before it runs. */\n\
         \x20 readonly approval: \"required\" | \"none\";\n\
         \x20 /** Server tools: `\"async\"` answers the model at once and adds the result when it arrives. */\n\
         \x20 readonly mode: \"sync\" | \"async\";\n\
         \x20 /** Whether the user interrupting the response cancels a call still running (its `signal` aborts). */\n\
         \x20 readonly cancel_on_interruption: boolean;\n\
         \x20 /** Client tools: the page gets partial arguments while the model writes them. */\n\
         \x20 readonly stream_arguments: boolean;\n\
         }\n\n\
         export const TOOLS: { readonly [N in ToolName]: ToolDefinition<N> } = {\n",
    );
    for tool in &ir.tools {
        let def = &tool.def;
        push_indent(2, out);
        property_name(&def.name, out);
        out.push_str(": {\n");
        let json = |v: &Value| object_literal(&types::json_text(v));
        let _ = writeln!(out, "    name: {},", json(&Value::String(def.name.clone())));
        let title = def
            .title
            .as_ref()
            .map_or_else(|| "null".to_owned(), |t| json(&Value::String(t.clone())));
        let _ = writeln!(out, "    title: {title},");
        let _ = writeln!(
            out,
            "    description: {},",
            json(&Value::String(def.description.clone()))
        );
        let _ = writeln!(out, "    location: \"{}\",", def.location);
        let _ = writeln!(out, "    parameters: {},", json(&def.parameters));
        let _ = writeln!(
            out,
            "    returns: {},",
            def.returns.as_ref().map_or_else(|| "null".to_owned(), json)
        );
        let _ = writeln!(
            out,
            "    timeout_ms: {},",
            def.effective_timeout()
                .map_or_else(|| "null".to_owned(), |t| t.as_millis().to_string())
        );
        let _ = writeln!(out, "    wait_for_response: {},", def.wait_for_response);
        let filler: Vec<Value> = def.filler.iter().cloned().map(Value::String).collect();
        let _ = writeln!(out, "    filler: {},", json(&Value::Array(filler)));
        let approval = if def.requires_approval() {
            "required"
        } else {
            "none"
        };
        let _ = writeln!(out, "    approval: \"{approval}\",");
        let mode = if def.runs_in_background() {
            "async"
        } else {
            "sync"
        };
        let _ = writeln!(out, "    mode: \"{mode}\",");
        let _ = writeln!(
            out,
            "    cancel_on_interruption: {},",
            def.cancels_on_interruption()
        );
        let _ = writeln!(out, "    stream_arguments: {},", def.streams_arguments());
        out.push_str("  },\n");
    }
    out.push_str("};\n");
}

/// JSON text as a JavaScript object literal. The two differ in one place: a `"__proto__":` key in
/// a literal sets the prototype instead of adding a property, so it is written as a computed key.
/// Inside JSON strings every `"` is escaped, so an unescaped `{"__proto__":` or `,"__proto__":`
/// can only be a key.
fn object_literal(json: &str) -> String {
    if !json.contains("\"__proto__\":") {
        return json.to_owned();
    }
    json.replace("{\"__proto__\":", "{[\"__proto__\"]:")
        .replace(",\"__proto__\":", ",[\"__proto__\"]:")
}

fn handlers(ir: &Ir, names: &[ToolNames], out: &mut String) {
    out.push_str(
        "\n// ---------------------------------------------------------------------------------------------\n\
         // Client handlers\n\
         // ---------------------------------------------------------------------------------------------\n\n\
         /** Which call a handler is answering. */\n\
         export interface ToolCallInfo {\n\
         \x20 /** The id the server gave the call. */\n\
         \x20 readonly callId: string;\n\
         \x20 readonly name: ClientToolName;\n\
         \x20 /** Aborts when the server cancels the call (the user interrupted) or the dispatcher is disposed. */\n\
         \x20 readonly signal: AbortSignal;\n\
         \x20 /** The W3C trace context of the call, when the relay exports to OpenTelemetry: start the handler's span as its child. */\n\
         \x20 readonly traceparent?: string;\n\
         }\n\n\
         /** A call the user must approve before it runs: the tool, where it runs, and its arguments. */\n\
         export type ApprovalRequest = {\n\
         \x20 readonly [N in ApprovalToolName]: {\n\
         \x20   /** The id the answer is bound to: it approves this call with these arguments, nothing else. */\n\
         \x20   readonly approvalId: string;\n\
         \x20   readonly name: N;\n\
         \x20   readonly location: ToolLocation;\n\
         \x20   readonly arguments: ToolArguments[N];\n\
         \x20   /** Aborts when the question no longer stands (the user interrupted, the call was cancelled). */\n\
         \x20   readonly signal: AbortSignal;\n\
         \x20 };\n\
         }[ApprovalToolName];\n\n\
         /** The user's answer: `true` runs the call; `false`, or a reason, tells the model it was declined. */\n\
         export type ApprovalDecision = boolean | { readonly approved: boolean; readonly reason?: string };\n\n\
         /** Asks the user; what it returns (or resolves to) is sent back bound to the request. */\n\
         export type ApprovalHandler = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;\n\n\
         /** A value still being written: any property may be missing yet. */\n\
         export type DeepPartial<T> = T extends readonly (infer E)[]\n\
         \x20 ? readonly DeepPartial<E>[]\n\
         \x20 : T extends object\n\
         \x20   ? { readonly [K in keyof T]?: DeepPartial<T[K]> }\n\
         \x20   : T;\n\n\
         /** Callbacks for the partial arguments of streaming client tools, by name. */\n\
         export type PartialArgumentHandlers = {\n\
         \x20 readonly [N in StreamingToolName]?: (partial: DeepPartial<ToolArguments[N]>, call: ToolCallInfo) => void;\n\
         };\n\n",
    );
    out.push_str(if ir.tools.iter().any(|t| t.def.requires_approval()) {
        "/** Some tools need approval, so the dispatcher must be able to ask. */\n\
         export interface ApprovalOptions {\n\
         \x20 readonly approve: ApprovalHandler;\n\
         }\n\n"
    } else {
        "/** No tool needs approval. */\n\
         export interface ApprovalOptions {\n\
         \x20 readonly approve?: ApprovalHandler;\n\
         }\n\n"
    });
    let client: Vec<String> = ir
        .tools
        .iter()
        .filter(|t| t.def.location == Location::Client)
        .map(|t| format!("`{}`", t.def.name))
        .collect();
    let list = if client.is_empty() {
        "no client tools".to_owned()
    } else {
        client.join(", ")
    };
    let _ = writeln!(out, "const CLIENT_TOOL_LIST = {};\n", Value::String(list));
    out.push_str(
        "/**\n\
         \x20* One handler for every client tool, and none for server tools: a missing handler, a\n\
         \x20* handler for a server tool or a handler that misuses its arguments does not compile.\n\
         \x20*/\n\
         export interface ClientToolHandlers {\n",
    );
    for (tool, names) in ir.tools.iter().zip(names) {
        let def = &tool.def;
        match def.location {
            Location::Client => {
                let mut doc = def.description.clone();
                if !def.wait_for_response {
                    doc.push_str(
                        "\n\nFire-and-forget: the model does not wait, and the result is not sent.",
                    );
                }
                if def.requires_approval() {
                    doc.push_str("\n\nRuns only after the user approved the call (`approve`).");
                }
                doc_comment(&doc, 2, out);
                push_indent(2, out);
                property_name(&def.name, out);
                let _ = writeln!(
                    out,
                    ": (args: {args}, call: ToolCallInfo) => {result} | Promise<{result}>;",
                    args = names.args,
                    result = names.result
                );
            }
            Location::Server => {
                // `?: never` also rejects a server handler that arrives through a variable,
                // where excess-property checks do not apply.
                doc_comment(
                    &format!(
                        "`{}` is a server tool: the page must not handle it.",
                        def.name
                    ),
                    2,
                    out,
                );
                push_indent(2, out);
                property_name(&def.name, out);
                out.push_str("?: never;\n");
            }
        }
    }
    out.push_str(
        "}\n\n\
         /** The handler type of one client tool. */\n\
         export type ClientToolHandler<N extends ClientToolName> = ClientToolHandlers[N];\n",
    );
}

fn stub(def: &ToolDefinition, names: &ToolNames, import_path: &str) -> String {
    let mut out = String::new();
    let function = handler_function_name(&def.name);
    let _ = writeln!(
        out,
        "// Handler for the client tool `{}`, written once by `toolc build --ts-stubs`.",
        def.name
    );
    out.push_str("// toolc never overwrites this file: it is yours to edit. Wire it up with\n");
    let mut key = String::new();
    property_name(&def.name, &mut key);
    let _ = writeln!(
        out,
        "//   createToolDispatcher(socket, {{ {key}: {function}, ... }})"
    );
    let _ = writeln!(
        out,
        "import type {{ {}, {}, ToolCallInfo }} from {};\n",
        names.args,
        names.result,
        Value::String(import_path.to_owned())
    );
    let mut doc = def.description.clone();
    if !def.wait_for_response {
        doc.push_str("\n\nFire-and-forget: the model does not wait for this result.");
    }
    doc_comment(&doc, 0, &mut out);
    // Where a thrown error goes depends on whether anyone waits for the result.
    let thrown = if def.wait_for_response {
        "A thrown error reaches the model as {\"error\": \"...\"}, so it can tell the user."
    } else {
        "Nobody waits for this result: a thrown error goes to the dispatcher's `onError`."
    };
    let _ = writeln!(
        out,
        "export async function {function}(\n  args: {args},\n  call: ToolCallInfo,\n): Promise<{result}> {{\n  \
         // {thrown}\n  \
         throw new Error(\n    `{name} is not implemented yet (call ${{call.callId}}, arguments ${{JSON.stringify(args)}})`,\n  );\n}}",
        args = names.args,
        result = names.result,
        name = def.name,
    );
    out
}
