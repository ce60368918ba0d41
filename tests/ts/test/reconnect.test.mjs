// connectRelay and the dispatcher across connections, against a real WebSocket server on
// loopback that plays the relay: a dropped connection resumes with the token, a call delivered
// again runs its handler once, an answer written while disconnected is sent after the resume,
// and a drain (close 1012) or a refused resume starts a new conversation.

import assert from "node:assert/strict";
import { once } from "node:events";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { WebSocket, WebSocketServer } from "ws";

import { generated } from "../prepare.mjs";

const support = await import(pathToFileURL(join(generated, "support", "js", "tools.js")).href);

/** A relay-like server: every connection is recorded with its URL and its messages. */
async function relay(t) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(server, "listening");
  const connections = [];
  const waiters = [];
  server.on("connection", (socket, request) => {
    const connection = { socket, url: request.url, messages: [], waiters: [] };
    socket.on("message", (data) => {
      const message = JSON.parse(data.toString());
      const waiter = connection.waiters.shift();
      if (waiter) waiter(message);
      else connection.messages.push(message);
    });
    connection.next = (timeoutMs = 3000) =>
      connection.messages.length > 0
        ? Promise.resolve(connection.messages.shift())
        : new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs} ms`)), timeoutMs);
            connection.waiters.push((m) => {
              clearTimeout(timer);
              resolve(m);
            });
          });
    connection.send = (message) => socket.send(JSON.stringify(message));
    connections.push(connection);
    const waiter = waiters.shift();
    if (waiter) waiter(connection);
  });
  let seen = 0;
  const nextConnection = (timeoutMs = 3000) =>
    seen < connections.length
      ? Promise.resolve(connections[seen++])
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
          waiters.push((c) => {
            clearTimeout(timer);
            seen += 1;
            resolve(c);
          });
        });
  t.after(async () => {
    for (const c of connections) c.socket.terminate();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `ws://127.0.0.1:${server.address().port}/`, nextConnection };
}

const session = (token, resumed = false) => ({
  type: "toolc.session",
  resume_token: token,
  relay: "relay-a",
  grace_ms: 30000,
  resumed,
});

const call = (call_id, name, args) => ({ type: "function_call", call_id, name, arguments: JSON.stringify(args) });

const fast = { open: (url) => new WebSocket(url), minBackoffMs: 10, maxBackoffMs: 50 };

test("a dropped connection resumes with its token, and a call delivered again runs once", async (t) => {
  const { url, nextConnection } = await relay(t);
  const statuses = [];
  const connection = support.connectRelay(url, { ...fast, onStatus: (s) => statuses.push(s) });
  t.after(() => connection.close());
  let runs = 0;
  let finish;
  const done = new Promise((resolve) => (finish = resolve));
  support.createToolDispatcher(connection, {
    highlight_element: async () => {
      runs += 1;
      await done;
      return { found: true };
    },
    scroll_to_section: () => ({}),
    fill_form_field: () => ({}),
    show_toast: () => {},
  });
  const first = await nextConnection();
  assert.equal(first.url, "/");
  first.send(session("relay-a.t1"));
  first.send(call("c1", "highlight_element", { selector: "#a" }));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(runs, 1);
  // The connection drops with the handler still running.
  first.socket.terminate();
  const second = await nextConnection();
  assert.equal(second.url, "/?resume=relay-a.t1");
  second.send(session("relay-a.t2", true));
  // The relay delivers the open call again: the handler does not run a second time.
  second.send(call("c1", "highlight_element", { selector: "#a" }));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(runs, 1);
  finish();
  assert.deepEqual(await second.next(), { type: "function_call.result", call_id: "c1", output: '{"found":true}' });
  // Delivered once more (say its answer was lost): the same answer, still one run.
  second.send(call("c1", "highlight_element", { selector: "#a" }));
  assert.deepEqual(await second.next(), { type: "function_call.result", call_id: "c1", output: '{"found":true}' });
  assert.equal(runs, 1);
  assert.deepEqual(statuses, ["open", "reconnecting", "resumed"]);
  assert.equal(connection.session.resumeToken, "relay-a.t2");
});

test("an answer written while disconnected is sent once the page is back", async (t) => {
  const { url, nextConnection } = await relay(t);
  const connection = support.connectRelay(url, { ...fast, minBackoffMs: 200, maxBackoffMs: 200 });
  t.after(() => connection.close());
  support.createToolDispatcher(connection, {
    highlight_element: async () => {
      await new Promise((resolve) => setTimeout(resolve, 60));
      return { found: false };
    },
    scroll_to_section: () => ({}),
    fill_form_field: () => ({}),
    show_toast: () => {},
  });
  const first = await nextConnection();
  first.send(session("relay-a.t1"));
  first.send(call("c1", "highlight_element", { selector: "#a" }));
  await new Promise((resolve) => setTimeout(resolve, 10));
  first.socket.terminate();
  const second = await nextConnection();
  assert.equal(second.url, "/?resume=relay-a.t1");
  assert.deepEqual(await second.next(), { type: "function_call.result", call_id: "c1", output: '{"found":false}' });
});

test("an approval asked again after a resume is answered without asking the user twice", async (t) => {
  const behaviours = await import(pathToFileURL(join(generated, "behaviours", "js", "tools.js")).href);
  const { url, nextConnection } = await relay(t);
  const connection = support.connectRelay(url, fast);
  t.after(() => connection.close());
  let asked = 0;
  const handlers = {};
  for (const [name, tool] of Object.entries(behaviours.TOOLS)) {
    if (tool.location === "client") handlers[name] = () => ({});
  }
  behaviours.createToolDispatcher(connection, handlers, {
    approve: () => {
      asked += 1;
      return true;
    },
  });
  const approvable = Object.entries(behaviours.TOOLS).find(([, tool]) => tool.approval === "required")[0];
  const first = await nextConnection();
  first.send(session("relay-a.t1"));
  const request = { type: "toolc.approval.request", approval_id: "approval_1", name: approvable, location: "server", arguments: {} };
  first.send(request);
  assert.deepEqual(await first.next(), { type: "toolc.approval.response", approval_id: "approval_1", approved: true });
  first.socket.terminate();
  const second = await nextConnection();
  second.send(session("relay-a.t2", true));
  second.send(request);
  assert.deepEqual(await second.next(), { type: "toolc.approval.response", approval_id: "approval_1", approved: true });
  assert.equal(asked, 1);
});

test("a drain (close 1012) or a refused resume starts a new conversation", async (t) => {
  const { url, nextConnection } = await relay(t);
  const statuses = [];
  const connection = support.connectRelay(url, { ...fast, onStatus: (s, d) => statuses.push([s, d]) });
  t.after(() => connection.close());
  const first = await nextConnection();
  first.send(session("relay-a.t1"));
  first.send({ type: "toolc.drain", deadline_ms: 1000 });
  await new Promise((resolve) => setTimeout(resolve, 20));
  first.socket.close(1012, "the relay is restarting: reconnect");
  // Elsewhere, without the token: the drained conversation is over.
  const second = await nextConnection();
  assert.equal(second.url, "/");
  second.send(session("relay-b.t1"));
  await new Promise((resolve) => setTimeout(resolve, 20));
  second.socket.terminate();
  const third = await nextConnection();
  assert.equal(third.url, "/?resume=relay-b.t1");
  third.socket.close(4408, "resume_expired: the grace window ended; start a new conversation");
  const fourth = await nextConnection();
  assert.equal(fourth.url, "/");
  fourth.send(session("relay-b.t2"));
  await new Promise((resolve) => setTimeout(resolve, 20));
  const kinds = statuses.map(([s]) => s);
  assert.deepEqual(kinds, ["open", "new-conversation", "open", "reconnecting", "new-conversation", "open"]);
  assert.match(statuses[4][1], /^resume_expired/);
});

test("close() ends it for good with code 1000", async (t) => {
  const { url, nextConnection } = await relay(t);
  const connection = support.connectRelay(url, fast);
  const first = await nextConnection();
  first.send(session("relay-a.t1"));
  await new Promise((resolve) => setTimeout(resolve, 30));
  const closed = once(first.socket, "close");
  connection.close();
  const [code] = await closed;
  assert.equal(code, 1000);
  await assert.rejects(nextConnection(300));
});
