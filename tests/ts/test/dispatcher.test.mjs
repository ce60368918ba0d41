// createToolDispatcher, compiled from the generated tools.ts by tsc, against a real WebSocket
// server on loopback (package `ws`): the server plays the relay, the client is the page.

import assert from "node:assert/strict";
import { once } from "node:events";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, test } from "node:test";
import { WebSocket, WebSocketServer } from "ws";

import { generated } from "../prepare.mjs";

const support = await import(pathToFileURL(join(generated, "support", "js", "tools.js")).href);
const edge = await import(pathToFileURL(join(generated, "edge", "js", "tools.js")).href);
const behaviours = await import(pathToFileURL(join(generated, "behaviours", "js", "tools.js")).href);

// Every test below must leave no unhandled rejection behind; the last test checks.
const unhandled = [];
const onUnhandled = (reason) => unhandled.push(reason);
process.on("unhandledRejection", onUnhandled);
after(() => process.off("unhandledRejection", onUnhandled));

/** Messages one side of a socket received, in order, with a way to wait for the next one. */
class Inbox {
  constructor(socket) {
    this.items = [];
    this.waiters = [];
    socket.on("message", (data, isBinary) => {
      const item = isBinary ? { binary: data } : JSON.parse(data.toString());
      const waiter = this.waiters.shift();
      if (waiter) waiter(item);
      else this.items.push(item);
    });
  }

  next(timeoutMs = 2000) {
    if (this.items.length > 0) return Promise.resolve(this.items.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push((item) => {
        clearTimeout(timer);
        resolve(item);
      });
    });
  }
}

/** A relay-like server and a connected page-side client. */
async function connect(t) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(server, "listening");
  const accepted = once(server, "connection");
  const client = new WebSocket(`ws://127.0.0.1:${server.address().port}/`);
  const [[peer]] = await Promise.all([accepted, once(client, "open")]);
  const replies = new Inbox(peer);
  // The application's own listener: it must keep seeing every message the dispatcher is given.
  const seenByApp = [];
  client.addEventListener("message", (event) => seenByApp.push(event.data));
  t.after(async () => {
    client.terminate();
    await new Promise((resolve) => server.close(resolve));
  });
  const send = (message) => peer.send(typeof message === "string" ? message : JSON.stringify(message));
  return { client, peer, replies, seenByApp, send };
}

const call = (call_id, name, args) => ({
  type: "function_call",
  call_id,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args),
});

/** Handlers for the support manifest that record what they were given. */
function supportHandlers(overrides = {}) {
  const calls = [];
  const handlers = {
    highlight_element: (args, info) => {
      calls.push({ name: "highlight_element", args, info });
      return { found: args.selector === "#pricing" };
    },
    scroll_to_section: async (args, info) => {
      calls.push({ name: "scroll_to_section", args, info });
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { scrolled: true };
    },
    fill_form_field: (args, info) => {
      calls.push({ name: "fill_form_field", args, info });
      return { filled: true };
    },
    show_toast: (args, info) => {
      calls.push({ name: "show_toast", args, info });
    },
    ...overrides,
  };
  return { handlers, calls };
}

const errorOf = (reply) => JSON.parse(reply.output).error;

test("a normal call runs its handler with parsed arguments and answers with the same call_id", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers);

  send(call("call_1", "highlight_element", { selector: "#pricing", color: "green" }));
  const reply = await replies.next();
  assert.deepEqual(reply, { type: "function_call.result", call_id: "call_1", output: '{"found":true}' });
  assert.deepEqual(Object.keys(reply), ["type", "call_id", "output"]);
  const { signal, ...info } = calls[0].info;
  assert.deepEqual({ ...calls[0], info }, {
    name: "highlight_element",
    args: { selector: "#pricing", color: "green" },
    info: { callId: "call_1", name: "highlight_element" },
  });
  assert.ok(signal instanceof AbortSignal && !signal.aborted);
});

test("a call's trace context reaches its handler when the relay sends one", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers);
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  send({ ...call("call_t", "highlight_element", { selector: "#a" }), traceparent });
  await replies.next();
  send({ ...call("call_u", "highlight_element", { selector: "#b" }), traceparent: 7 });
  await replies.next();
  assert.equal(calls[0].info.traceparent, traceparent);
  assert.equal("traceparent" in calls[1].info, false, "only a string is handed on");
});

test("async handlers: each reply carries its own call_id, in the order the handlers finish", async (t) => {
  const { client, replies, send } = await connect(t);
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const { handlers } = supportHandlers({
    scroll_to_section: async (args) => {
      await gate;
      return { scrolled: args.section_id === "billing" };
    },
    fill_form_field: async (args) => ({ filled: args.value.length > 0 }),
  });
  const dispatcher = support.createToolDispatcher(client, handlers);

  send(call("slow", "scroll_to_section", { section_id: "billing" }));
  send(call("fast", "fill_form_field", { field: "email", value: "a@b.c" }));
  assert.deepEqual(await replies.next(), { type: "function_call.result", call_id: "fast", output: '{"filled":true}' });
  assert.equal(dispatcher.pending, 1);
  release();
  assert.deepEqual(await replies.next(), { type: "function_call.result", call_id: "slow", output: '{"scrolled":true}' });
  assert.equal(dispatcher.pending, 0);
});

test("a handler that throws gives an error result the model can read", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers } = supportHandlers({
    highlight_element: () => {
      throw new Error("no element matches #missing");
    },
  });
  support.createToolDispatcher(client, handlers);
  send(call("c", "highlight_element", { selector: "#missing" }));
  const reply = await replies.next();
  assert.equal(reply.call_id, "c");
  assert.deepEqual(JSON.parse(reply.output), { error: "no element matches #missing" });
});

test("a handler whose promise rejects gives an error result, whatever it rejects with", async (t) => {
  const { client, replies, send } = await connect(t);
  const reasons = [new TypeError("the form is gone"), "plain string", { code: 7 }, undefined];
  let i = 0;
  const { handlers } = supportHandlers({
    fill_form_field: async () => {
      throw reasons[i++];
    },
  });
  support.createToolDispatcher(client, handlers);
  const outputs = [];
  for (const id of ["r0", "r1", "r2", "r3"]) {
    send(call(id, "fill_form_field", { field: "name", value: "Ada" }));
    const reply = await replies.next();
    assert.equal(reply.call_id, id);
    outputs.push(errorOf(reply));
  }
  assert.equal(outputs[0], "the form is gone");
  assert.equal(outputs[1], "plain string");
  assert.equal(outputs[2], '{"code":7}');
  assert.equal(typeof outputs[3], "string");
});

test("malformed arguments give an error result and the handler does not run", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers);

  const cases = [
    ["bad_json", "{\"selector\": ", /not valid JSON/],
    ["array", "[1, 2]", /must be a JSON object, found an array/],
    ["number", "42", /must be a JSON object, found number/],
    ["null", "null", /must be a JSON object, found null/],
  ];
  for (const [id, args, pattern] of cases) {
    send(call(id, "highlight_element", args));
    const reply = await replies.next();
    assert.equal(reply.call_id, id);
    assert.match(errorOf(reply), pattern);
    assert.match(errorOf(reply), /`highlight_element` was not run/);
  }
  send({ type: "function_call", call_id: "object", name: "highlight_element", arguments: { selector: "#a" } });
  assert.match(errorOf(await replies.next()), /must be a string of JSON/);
  assert.equal(calls.length, 0);

  // No argument text at all is an empty object (what models send for tools without parameters).
  send(call("empty", "fill_form_field", ""));
  assert.equal((await replies.next()).call_id, "empty");
  assert.deepEqual(calls[0].args, {});
});

test("an unknown tool, a server tool or a call without a name gives an error result", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers);

  send(call("u1", "delete_everything", {}));
  const unknown = await replies.next();
  assert.equal(unknown.call_id, "u1");
  assert.match(errorOf(unknown), /unknown tool `delete_everything`/);
  assert.match(errorOf(unknown), /`highlight_element`, `scroll_to_section`, `fill_form_field`, `show_toast`/);

  send(call("u2", "get_order_status", { order_number: "AB-123456" }));
  assert.match(errorOf(await replies.next()), /`get_order_status` is a server tool/);

  // Names that exist on every JavaScript object are still unknown tools.
  send(call("u3", "__proto__", {}));
  assert.match(errorOf(await replies.next()), /unknown tool `__proto__`/);
  send(call("u4", "toString", {}));
  assert.match(errorOf(await replies.next()), /unknown tool `toString`/);

  send({ type: "function_call", call_id: "u5", arguments: "{}" });
  assert.match(errorOf(await replies.next()), /names no tool/);
  assert.equal(calls.length, 0);
});

test("a client tool without a handler at run time gives an error result", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers } = supportHandlers();
  delete handlers.fill_form_field; // what untyped JavaScript callers can do
  support.createToolDispatcher(client, handlers);
  send(call("h", "fill_form_field", { field: "name", value: "x" }));
  assert.match(errorOf(await replies.next()), /`fill_form_field` has no handler on this page/);
});

test("a fire-and-forget tool runs but gets no reply, even when it fails", async (t) => {
  const { client, replies, send } = await connect(t);
  const problems = [];
  let toasts = 0;
  const { handlers } = supportHandlers({
    show_toast: async (args) => {
      toasts += 1;
      if (args.message === "fail") throw new Error("toast container missing");
      return "shown";
    },
  });
  support.createToolDispatcher(client, handlers, { onError: (error, info) => problems.push({ error, info }) });

  send(call("t1", "show_toast", { message: "Saved", level: "success" }));
  send(call("t2", "show_toast", { message: "fail" }));
  send(call("t3", "show_toast", "{oops"));
  // A call that does answer: once its reply is here, the ones before it had every chance to.
  await new Promise((resolve) => setTimeout(resolve, 20));
  send(call("sentinel", "highlight_element", { selector: "#x" }));
  const reply = await replies.next();
  assert.equal(reply.call_id, "sentinel");
  assert.equal(replies.items.length, 0);
  assert.equal(toasts, 2);
  assert.equal(problems.length, 2);
  const failed = problems.find((p) => p.info.callId === "t2");
  assert.equal(failed.error.message, "toast container missing");
  assert.deepEqual({ ...failed.info, signal: undefined }, { callId: "t2", name: "show_toast", signal: undefined });
  assert.ok(failed.info.signal instanceof AbortSignal);
  assert.match(problems.find((p) => p.info.callId === "t3").error.message, /not valid JSON/);
});

test("messages of other types are left to the application and never answered", async (t) => {
  const { client, peer, replies, seenByApp, send } = await connect(t);
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers);

  const unrelated = [
    "not json at all",
    "[1, 2, 3]",
    "\"a string\"",
    "null",
    JSON.stringify({ type: "response.output_text.delta", delta: "Hello" }),
    JSON.stringify({ type: "function_call.result", call_id: "x", output: "{}" }),
    // The other naming is not spoken unless asked for.
    JSON.stringify({ type: "tool.call", callId: "x", name: "highlight_element", arguments: "{}" }),
    JSON.stringify({ name: "highlight_element", call_id: "x", arguments: "{}" }),
  ];
  for (const message of unrelated) send(message);
  peer.send(Buffer.from([1, 2, 3]), { binary: true });
  send(call("sentinel", "highlight_element", { selector: "#pricing" }));

  assert.equal((await replies.next()).call_id, "sentinel");
  assert.equal(replies.items.length, 0);
  assert.equal(calls.length, 1);
  // The application saw everything, the tool call included, in order.
  assert.equal(seenByApp.length, unrelated.length + 2);
  assert.deepEqual(seenByApp.slice(0, unrelated.length), unrelated);
  assert.equal(typeof seenByApp[unrelated.length], "object", "the binary frame reached the app");
});

test("the tool.call / tool.result naming with callId", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers, { naming: "tool.call" });

  send(call("ignored", "highlight_element", { selector: "#pricing" }));
  send({ type: "tool.call", callId: "tc_1", name: "highlight_element", arguments: '{"selector":"#pricing"}' });
  const reply = await replies.next();
  assert.deepEqual(reply, { type: "tool.result", callId: "tc_1", output: '{"found":true}' });
  assert.deepEqual(Object.keys(reply), ["type", "callId", "output"]);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].info.callId, "tc_1");

  send({ type: "tool.call", callId: "tc_2", name: "nope", arguments: "{}" });
  const error = await replies.next();
  assert.equal(error.type, "tool.result");
  assert.equal(error.callId, "tc_2");
  assert.match(errorOf(error), /unknown tool/);
  assert.equal(replies.items.length, 0);
});

test("tool names that are not identifiers, and results without a schema", async (t) => {
  const { client, replies, send } = await connect(t);
  const banners = [];
  edge.createToolDispatcher(
    client,
    {
      "show-banner": (args) => banners.push(args),
      edit_tree: async () => ({ ok: false, reason: null }),
      ping: () => undefined,
    },
    { naming: "tool.call" },
  );
  send({ type: "tool.call", callId: "b", name: "show-banner", arguments: '{"text with spaces":"hi"}' });
  send({ type: "tool.call", callId: "p", name: "ping" });
  // A handler that returns nothing answers `null`.
  assert.deepEqual(await replies.next(), { type: "tool.result", callId: "p", output: "null" });
  assert.deepEqual(banners, [{ "text with spaces": "hi" }]);
  send({ type: "tool.call", callId: "e", name: "edit_tree", arguments: '{"root":{"title":"a","children":[]}}' });
  assert.deepEqual(await replies.next(), { type: "tool.result", callId: "e", output: '{"ok":false,"reason":null}' });
});

test("TOOLS holds every definition, with schemas exactly as in the manifest", () => {
  assert.deepEqual(Object.keys(support.TOOLS), [
    "search_help_articles",
    "get_order_status",
    "highlight_element",
    "scroll_to_section",
    "fill_form_field",
    "show_toast",
  ]);
  const toast = support.TOOLS.show_toast;
  assert.equal(toast.location, "client");
  assert.equal(toast.wait_for_response, false);
  assert.equal(toast.timeout_ms, 10000, "client tools default to 10 s");
  assert.deepEqual(support.TOOLS.highlight_element.filler, ["One moment.", "Let me show you."]);
  assert.equal(support.TOOLS.search_help_articles.returns.properties.articles.type, "array");
  // A `__proto__` property must stay a property, not become the schema object's prototype.
  const properties = edge.TOOLS["show-banner"].parameters.properties;
  assert.ok(Object.prototype.hasOwnProperty.call(properties, "__proto__"));
  assert.equal(Object.getPrototypeOf(properties), Object.prototype);
  assert.equal(properties["__proto__"].type, "string");
});

test("a result that cannot be encoded as JSON becomes an error result", async (t) => {
  const { client, replies, send } = await connect(t);
  const { handlers } = supportHandlers({ highlight_element: () => ({ found: 10n }) });
  support.createToolDispatcher(client, handlers);
  send(call("big", "highlight_element", { selector: "#a" }));
  assert.match(errorOf(await replies.next()), /result of `highlight_element` cannot be sent as JSON/);
});

test("a call without an id is reported, not answered; a failing onError hook is contained", async (t) => {
  const { client, replies, send } = await connect(t);
  const problems = [];
  const { handlers, calls } = supportHandlers();
  support.createToolDispatcher(client, handlers, {
    onError: (error) => {
      problems.push(error);
      throw new Error("the hook itself is broken");
    },
  });
  send({ type: "function_call", name: "highlight_element", arguments: "{}" });
  send({ type: "function_call", call_id: "", name: "highlight_element", arguments: "{}" });
  send(call("sentinel", "fill_form_field", { field: "name", value: "x" }));
  assert.equal((await replies.next()).call_id, "sentinel");
  assert.equal(replies.items.length, 0);
  assert.equal(calls.length, 1);
  assert.equal(problems.length, 2);
  assert.match(problems[0].message, /without a `call_id`/);
});

test("dispose stops listening and drops replies of calls still running", async (t) => {
  const { client, replies, send } = await connect(t);
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  let started = 0;
  const { handlers } = supportHandlers({
    scroll_to_section: async () => {
      started += 1;
      await gate;
      return { scrolled: true };
    },
  });
  const dispatcher = support.createToolDispatcher(client, handlers);
  send(call("running", "scroll_to_section", { section_id: "a" }));
  while (started === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  dispatcher.dispose();
  dispatcher.dispose(); // twice is harmless
  send(call("after", "scroll_to_section", { section_id: "b" }));
  release();
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(started, 1);
  assert.equal(replies.items.length, 0);

  // A new dispatcher on the same socket works.
  support.createToolDispatcher(client, supportHandlers().handlers);
  send(call("again", "highlight_element", { selector: "#pricing" }));
  assert.equal((await replies.next()).call_id, "again");
});

test("a socket that refuses to send is reported, not thrown", async () => {
  const listeners = [];
  const problems = [];
  const socket = {
    send() {
      throw new Error("InvalidStateError: still connecting");
    },
    addEventListener: (_type, listener) => listeners.push(listener),
    removeEventListener: () => {},
  };
  support.createToolDispatcher(socket, supportHandlers().handlers, { onError: (error) => problems.push(error) });
  assert.equal(listeners.length, 1);
  listeners[0]({ data: JSON.stringify(call("c", "highlight_element", { selector: "#a" })) });
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(problems.length, 1);
  assert.match(problems[0].message, /still connecting/);
});

// ---- call behaviours: approvals, cancellation, streamed arguments ---------------------------

const behaviourHandlers = (overrides = {}) => ({
  checkout: (args) => ({ paid: args.total }),
  show_card: () => ({ shown: true }),
  play_video: () => undefined,
  ...overrides,
});

const approvalRequest = (approval_id, name, args, location = "server") => ({
  type: "toolc.approval.request",
  approval_id,
  name,
  location,
  arguments: args,
});

test("an approval request is answered with the handler's decision, bound to its id", async (t) => {
  const { client, send, replies } = await connect(t);
  const asked = [];
  behaviours.createToolDispatcher(client, behaviourHandlers(), {
    approve: async (request) => {
      asked.push(request);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return request.name === "delete_account" ? { approved: false, reason: "Not today." } : true;
    },
  });
  send(approvalRequest("approval_1", "delete_account", { user: "ann" }));
  send(approvalRequest("approval_2", "checkout", { total: 12 }, "client"));
  const answers = [await replies.next(), await replies.next()].sort((a, b) => a.approval_id.localeCompare(b.approval_id));
  assert.deepEqual(answers, [
    { type: "toolc.approval.response", approval_id: "approval_1", approved: false, reason: "Not today." },
    { type: "toolc.approval.response", approval_id: "approval_2", approved: true },
  ]);
  assert.deepEqual(
    asked.map((r) => [r.approvalId, r.name, r.location, r.arguments]),
    [
      ["approval_1", "delete_account", "server", { user: "ann" }],
      ["approval_2", "checkout", "client", { total: 12 }],
    ],
  );
  assert.ok(asked.every((r) => r.signal instanceof AbortSignal && !r.signal.aborted));
});

test("a withdrawn approval aborts the question and its late answer is not sent", async (t) => {
  const { client, send, replies } = await connect(t);
  let signal;
  let decide;
  behaviours.createToolDispatcher(client, behaviourHandlers(), {
    approve: (request) => {
      signal = request.signal;
      return new Promise((resolve) => (decide = resolve));
    },
  });
  send(approvalRequest("approval_1", "delete_account", { user: "ann" }));
  await new Promise((resolve) => setTimeout(resolve, 20));
  send({ type: "toolc.cancel", approval_id: "approval_1", reason: "interrupted" });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, "interrupted");
  decide(true);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(replies.items.length, 0, "no answer to a withdrawn question");
});

test("approval requests the page cannot stand behind are declined, not approved", async (t) => {
  const { client, send, replies } = await connect(t);
  const asked = [];
  behaviours.createToolDispatcher(client, behaviourHandlers(), {
    approve: (request) => {
      asked.push(request.name);
      if (request.name === "checkout") throw new Error("dialog crashed");
      return "yes";
    },
  });
  // A tool that needs no approval, an unknown tool, a throwing and a non-boolean handler.
  send(approvalRequest("a1", "show_card", {}, "client"));
  send(approvalRequest("a2", "no_such_tool", {}));
  send(approvalRequest("a3", "checkout", { total: 1 }, "client"));
  send(approvalRequest("a4", "delete_account", { user: "ann" }));
  const answers = [];
  for (let i = 0; i < 4; i += 1) answers.push(await replies.next());
  answers.sort((a, b) => a.approval_id.localeCompare(b.approval_id));
  assert.deepEqual(
    answers.map((a) => [a.approval_id, a.approved]),
    [["a1", false], ["a2", false], ["a3", false], ["a4", false]],
  );
  assert.match(answers[2].reason, /dialog crashed/);
  assert.deepEqual(asked.sort(), ["checkout", "delete_account"]);
});

test("a cancelled call's handler sees its signal abort and no reply is sent", async (t) => {
  const { client, send, replies } = await connect(t);
  let seen;
  behaviours.createToolDispatcher(client, behaviourHandlers({
    checkout: (_args, call) =>
      new Promise((resolve) => {
        seen = call.signal;
        call.signal.addEventListener("abort", () => resolve({ paid: false }));
      }),
  }), { approve: () => true });
  send(call("c1", "checkout", { total: 3 }));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(seen.aborted, false);
  send({ type: "toolc.cancel", call_id: "c1", reason: "interrupted" });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(seen.aborted, true);
  assert.equal(replies.items.length, 0, "no reply for the cancelled call");
  // Another call still gets its reply.
  send(call("c2", "show_card", { title: "x" }));
  assert.deepEqual(await replies.next(), { type: "function_call.result", call_id: "c2", output: '{"shown":true}' });
});

test("partial arguments reach the streaming tool's callback with the call's signal", async (t) => {
  const { client, send, replies } = await connect(t);
  const partials = [];
  let handlerSignal;
  behaviours.createToolDispatcher(client, behaviourHandlers({
    show_card: (args, info) => {
      handlerSignal = info.signal;
      return { shown: args.title };
    },
  }), {
    approve: () => true,
    partialArguments: {
      show_card: (partial, info) => partials.push({ partial, callId: info.callId, signal: info.signal }),
      // Not a streaming tool: never called.
      checkout: () => partials.push("wrong"),
    },
  });
  send({ type: "toolc.arguments.delta", call_id: "c1", name: "show_card", partial: { title: "Blue" } });
  send({ type: "toolc.arguments.delta", call_id: "c1", name: "show_card", partial: { title: "Blue kettle" } });
  send({ type: "toolc.arguments.delta", call_id: "c1", name: "show_card", partial: "not an object" });
  send(call("c1", "show_card", { title: "Blue kettle" }));
  assert.deepEqual(await replies.next(), { type: "function_call.result", call_id: "c1", output: '{"shown":"Blue kettle"}' });
  assert.deepEqual(partials.map((p) => [p.callId, p.partial]), [["c1", { title: "Blue" }], ["c1", { title: "Blue kettle" }]]);
  assert.equal(partials[0].signal, handlerSignal, "one signal per call, from the first delta to the result");
});

test("dispose aborts running calls and open approval questions", async (t) => {
  const { client, send } = await connect(t);
  const signals = [];
  const dispatcher = behaviours.createToolDispatcher(client, behaviourHandlers({
    checkout: (_args, info) => {
      signals.push(info.signal);
      return new Promise(() => {});
    },
  }), {
    approve: (request) => {
      signals.push(request.signal);
      return new Promise(() => {});
    },
  });
  send(call("c1", "checkout", { total: 1 }));
  send(approvalRequest("a1", "delete_account", { user: "ann" }));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(signals.length, 2);
  dispatcher.dispose();
  assert.ok(signals.every((s) => s.aborted));
});

test("no test left an unhandled rejection behind", async () => {
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(unhandled, []);
});
