// ---------------------------------------------------------------------------------------------
// The dispatcher: the browser side of toolc's client-tool protocol.
// ---------------------------------------------------------------------------------------------

/** Names the messages of the browser protocol. */
export type ToolMessageNaming =
  /** `{"type":"function_call","call_id",...}` → `{"type":"function_call.result","call_id","output"}` */
  | "function_call"
  /** `{"type":"tool.call","callId",...}` → `{"type":"tool.result","callId","output"}` */
  | "tool.call";

/** What a socket's message event must carry. */
export interface ToolMessageEvent {
  readonly data: unknown;
}

/**
 * Anything WebSocket-like: the browser's `WebSocket`, the `ws` package's client, or your own
 * object with `send` and message listeners.
 */
export interface ToolSocket {
  send(data: string): void;
  addEventListener(type: "message", listener: (event: ToolMessageEvent) => void): void;
  removeEventListener(type: "message", listener: (event: ToolMessageEvent) => void): void;
}

export interface ToolDispatcherOptions extends ApprovalOptions {
  /** The message names to speak; `"function_call"` unless given. */
  readonly naming?: ToolMessageNaming;
  /**
   * Partial arguments of streaming client tools while the model writes them, for early
   * rendering. Never validated: the handler still gets the complete, checked arguments.
   */
  readonly partialArguments?: PartialArgumentHandlers;
  /**
   * Told about failures that no reply can carry: a fire-and-forget handler that threw, a call
   * message without an id, a reply the socket refused to send.
   */
  readonly onError?: (error: unknown, call: ToolCallInfo | undefined) => void;
}

export interface ToolDispatcher {
  /** Calls whose handler has not finished yet. */
  readonly pending: number;
  /** Stops listening. Replies of calls still running are dropped. */
  dispose(): void;
}

type ParsedArguments =
  | { readonly ok: true; readonly value: { readonly [key: string]: unknown } }
  | { readonly ok: false; readonly error: string };

type AnyHandler = (args: unknown, call: ToolCallInfo) => unknown;

type AnyApprovalHandler = (request: unknown) => unknown;

type AnyPartialHandler = (partial: unknown, call: ToolCallInfo) => unknown;

/** `true`, `false` or `{approved, reason}` as the wire's `approved` and `reason`. */
function decisionOf(decision: unknown): { approved: boolean; reason?: string } {
  if (decision === true || decision === false) {
    return { approved: decision };
  }
  if (isJsonObject(decision) && typeof decision["approved"] === "boolean") {
    const reason = decision["reason"];
    return typeof reason === "string"
      ? { approved: decision["approved"], reason }
      : { approved: decision["approved"] };
  }
  return { approved: false, reason: "the page's approval handler gave no yes or no" };
}

function isJsonObject(value: unknown): value is { readonly [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasOwn(object: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key);
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    return error.message === "" ? error.name : error.message;
  }
  if (typeof error === "string") {
    return error;
  }
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return "the handler failed with a value that cannot be shown";
  }
}

/** The output the model reads when a call fails. */
function errorOutput(message: string): string {
  return JSON.stringify({ error: message });
}

function resultOutput(name: string, result: unknown): string {
  try {
    // `undefined` (a handler that returns nothing) has no JSON form; the model sees `null`.
    return JSON.stringify(result) ?? "null";
  } catch (error) {
    return errorOutput(`the result of \`${name}\` cannot be sent as JSON: ${messageOf(error)}`);
  }
}

function parseArguments(raw: unknown): ParsedArguments {
  // Models stream no argument text at all for some tools without parameters.
  if (raw === undefined || (typeof raw === "string" && raw.trim() === "")) {
    return { ok: true, value: {} };
  }
  if (typeof raw !== "string") {
    return { ok: false, error: "`arguments` must be a string of JSON" };
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { ok: false, error: `the arguments are not valid JSON: ${messageOf(error)}` };
  }
  if (!isJsonObject(value)) {
    const found = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
    return { ok: false, error: `the arguments must be a JSON object, found ${found}` };
  }
  return { ok: true, value };
}

/**
 * Answers client tool calls that arrive on `socket` with `handlers`, and leaves every other
 * message to the application's own listeners.
 *
 * A call's arguments are parsed before its handler runs; malformed arguments, an unknown or
 * server tool, and a handler that throws or rejects all become `{"error": "..."}` outputs that
 * the model can read. A fire-and-forget tool (`wait_for_response: false`) gets no reply.
 *
 * A call or approval request that arrives again (the relay delivers every open one again to a
 * page that resumed after its connection dropped, see `connectRelay`) never runs its handler
 * twice: while the handler runs, its reply will go on the connection of the moment; once it
 * has answered, the same reply is sent again (the relay takes one per call).
 */
export function createToolDispatcher(
  socket: ToolSocket,
  handlers: ClientToolHandlers,
  options: ToolDispatcherOptions = {},
): ToolDispatcher {
  const alternative = options.naming === "tool.call";
  const callType = alternative ? "tool.call" : "function_call";
  const resultType = alternative ? "tool.result" : "function_call.result";
  const idKey = alternative ? "callId" : "call_id";
  // The handler table is typed for callers; here names come from the wire and are checked.
  const table: object = handlers;
  let disposed = false;
  let pending = 0;
  // One controller per call (created by its first partial arguments or by the call) and per
  // approval request: the server's cancel messages abort them.
  const calls = new Map<string, AbortController>();
  const approvals = new Map<string, AbortController>();
  // Calls whose handler runs now, and the replies of calls answered already (`null`: a
  // fire-and-forget call), so that a call delivered again is answered once.
  const running = new Set<string>();
  const answered = new Map<string, string | null>();
  const approvalAnswers = new Map<string, { approved: boolean; reason?: string }>();
  const remember = <V>(map: Map<string, V>, key: string, value: V): void => {
    map.set(key, value);
    if (map.size > 1024) {
      const oldest = map.keys().next();
      if (oldest.done !== true) {
        map.delete(oldest.value);
      }
    }
  };
  const controllerOf = (callId: string): AbortController => {
    let controller = calls.get(callId);
    if (controller === undefined) {
      controller = new AbortController();
      calls.set(callId, controller);
    }
    return controller;
  };
  const send = (message: { readonly [key: string]: unknown }, call: ToolCallInfo | undefined): void => {
    if (disposed) {
      return;
    }
    try {
      socket.send(JSON.stringify(message));
    } catch (error) {
      report(error, call);
    }
  };

  const report = (error: unknown, call: ToolCallInfo | undefined): void => {
    if (options.onError === undefined) {
      return;
    }
    try {
      options.onError(error, call);
    } catch {
      // A failing error hook must not take the dispatcher down with it.
    }
  };

  const reply = (callId: string, output: string, call: ToolCallInfo | undefined): void => {
    send({ type: resultType, [idKey]: callId, output }, call);
  };

  const onApprovalRequest = (message: { readonly [key: string]: unknown }): void => {
    const approvalId = message["approval_id"];
    if (typeof approvalId !== "string" || approvalId === "" || approvals.has(approvalId)) {
      return;
    }
    const before = approvalAnswers.get(approvalId);
    if (before !== undefined) {
      // Asked again after a reconnect: the user already answered.
      send({ type: "toolc.approval.response", approval_id: approvalId, ...before }, undefined);
      return;
    }
    const controller = new AbortController();
    approvals.set(approvalId, controller);
    // An answer to a withdrawn question is not sent: the server already moved on.
    const answer = (decision: { approved: boolean; reason?: string }): void => {
      approvals.delete(approvalId);
      if (!controller.signal.aborted) {
        remember(approvalAnswers, approvalId, decision);
        send({ type: "toolc.approval.response", approval_id: approvalId, ...decision }, undefined);
      }
    };
    const name = message["name"];
    if (typeof name !== "string" || !hasOwn(TOOLS, name) || TOOLS[name as ToolName].approval !== "required") {
      answer({ approved: false, reason: "this page does not know that tool as one that needs approval" });
      return;
    }
    const approve: unknown = options.approve;
    if (typeof approve !== "function") {
      answer({ approved: false, reason: "this page cannot ask the user for approval" });
      return;
    }
    const args = message["arguments"];
    const request = {
      approvalId,
      name,
      location: TOOLS[name as ToolName].location,
      arguments: isJsonObject(args) ? args : {},
      signal: controller.signal,
    };
    let decided: Promise<unknown>;
    try {
      decided = Promise.resolve((approve as AnyApprovalHandler)(request));
    } catch (error) {
      decided = Promise.reject(error);
    }
    decided.then(
      (decision) => answer(decisionOf(decision)),
      (error: unknown) => answer({ approved: false, reason: `the approval failed: ${messageOf(error)}` }),
    );
  };

  const onPartialArguments = (message: { readonly [key: string]: unknown }): void => {
    const callId = message["call_id"];
    const name = message["name"];
    const handlers: unknown = options.partialArguments;
    if (typeof callId !== "string" || typeof name !== "string" || !isJsonObject(handlers) || !hasOwn(handlers, name)) {
      return;
    }
    const handler = handlers[name];
    const partial = message["partial"];
    if (typeof handler !== "function" || !isJsonObject(partial)) {
      return;
    }
    const call = { callId, name, signal: controllerOf(callId).signal } as ToolCallInfo;
    try {
      (handler as AnyPartialHandler)(partial, call);
    } catch (error) {
      report(error, call);
    }
  };

  const onCancel = (message: { readonly [key: string]: unknown }): void => {
    const reason = typeof message["reason"] === "string" ? message["reason"] : "cancelled";
    const callId = message["call_id"];
    if (typeof callId === "string") {
      calls.get(callId)?.abort(reason);
      calls.delete(callId);
    }
    const approvalId = message["approval_id"];
    if (typeof approvalId === "string") {
      approvals.get(approvalId)?.abort(reason);
      approvals.delete(approvalId);
    }
  };

  const onMessage = (event: ToolMessageEvent): void => {
    if (disposed || typeof event.data !== "string") {
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(event.data);
    } catch {
      return; // not JSON, so not ours
    }
    if (!isJsonObject(message)) {
      return;
    }
    switch (message["type"]) {
      case callType:
        break;
      case "toolc.approval.request":
        onApprovalRequest(message);
        return;
      case "toolc.arguments.delta":
        onPartialArguments(message);
        return;
      case "toolc.cancel":
        onCancel(message);
        return;
      default:
        return;
    }
    const callId = message[idKey];
    if (typeof callId !== "string" || callId === "") {
      report(new Error(`a \`${callType}\` message without a \`${idKey}\` cannot be answered`), undefined);
      return;
    }
    if (running.has(callId)) {
      return; // delivered again while its handler runs: the reply goes when it is done
    }
    const before = answered.get(callId);
    if (before !== undefined) {
      if (before !== null) {
        reply(callId, before, undefined);
      }
      return;
    }
    const name = message["name"];
    if (typeof name !== "string") {
      reply(callId, errorOutput("the call names no tool"), undefined);
      return;
    }
    if (!hasOwn(TOOLS, name)) {
      reply(callId, errorOutput(`unknown tool \`${name}\`; this page runs ${CLIENT_TOOL_LIST}`), undefined);
      return;
    }
    const tool: ToolDefinition = TOOLS[name as ToolName];
    if (tool.location !== "client") {
      reply(callId, errorOutput(`\`${name}\` is a server tool; the page does not run it`), undefined);
      return;
    }
    const controller = controllerOf(callId);
    const traceparent = message["traceparent"];
    const call = {
      callId,
      name,
      signal: controller.signal,
      ...(typeof traceparent === "string" ? { traceparent } : {}),
    } as ToolCallInfo;
    const wait = tool.wait_for_response;
    const fail = (error: string): void => {
      calls.delete(callId);
      if (wait) {
        reply(callId, errorOutput(error), call);
      } else {
        report(new Error(error), call);
      }
    };
    const parsed = parseArguments(message["arguments"]);
    if (!parsed.ok) {
      fail(`\`${name}\` was not run: ${parsed.error}`);
      return;
    }
    const handler: unknown = hasOwn(table, name) ? (table as { [key: string]: unknown })[name] : undefined;
    if (typeof handler !== "function") {
      fail(`\`${name}\` has no handler on this page`);
      return;
    }
    pending += 1;
    running.add(callId);
    let outcome: Promise<unknown>;
    try {
      outcome = Promise.resolve((handler as AnyHandler)(parsed.value, call));
    } catch (error) {
      outcome = Promise.reject(error);
    }
    // A cancelled call already has its result on the server: a late reply is not sent.
    const finished = (): boolean => {
      pending -= 1;
      calls.delete(callId);
      running.delete(callId);
      return !controller.signal.aborted;
    };
    const answer = (output: string | null): void => {
      remember(answered, callId, output);
      if (output !== null) {
        reply(callId, output, call);
      }
    };
    outcome.then(
      (result) => {
        if (finished()) {
          answer(wait ? resultOutput(name, result) : null);
        }
      },
      (error: unknown) => {
        if (!finished()) {
          return;
        }
        if (wait) {
          answer(errorOutput(messageOf(error)));
        } else {
          answer(null);
          report(error, call);
        }
      },
    );
  };

  socket.addEventListener("message", onMessage);
  return {
    get pending(): number {
      return pending;
    },
    dispose(): void {
      if (!disposed) {
        disposed = true;
        socket.removeEventListener("message", onMessage);
        for (const controller of [...calls.values(), ...approvals.values()]) {
          controller.abort("disposed");
        }
        calls.clear();
        approvals.clear();
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The connection to the relay: resumes after a drop, a new conversation after a deploy.
// ---------------------------------------------------------------------------------------------

/**
 * The relay's first event on every connection:
 * `{"type":"toolc.session","resume_token","relay","grace_ms","resumed"}`.
 */
export interface RelaySession {
  /** Resumes this conversation once, within `graceMs` of a drop (`?resume=TOKEN`). */
  readonly resumeToken: string;
  /** The relay that holds the conversation. */
  readonly relay: string;
  /** How long the relay holds the conversation after the connection drops. */
  readonly graceMs: number;
  /** Whether this connection resumed the conversation. */
  readonly resumed: boolean;
}

/** What `connectRelay`'s connection is doing. */
export type RelayStatus =
  /** Connected to a new conversation. */
  | "open"
  /** Connected again to the same conversation. */
  | "resumed"
  /** The old conversation is gone (the relay restarted, or refused the resume): a new one. */
  | "new-conversation"
  /** The connection dropped; trying again after a pause. */
  | "reconnecting"
  /** Closed for good (`close()`, or the relay ended the conversation). */
  | "closed";

export interface RelayConnectOptions {
  /** Resume the conversation after a dropped connection; `true` unless given. */
  readonly resume?: boolean;
  /**
   * Opens one websocket to `url`: the browser's `new WebSocket(url)` unless given (in Node, the
   * `ws` package's: `(url) => new WebSocket(url, { headers })`).
   */
  readonly open?: (url: string) => unknown;
  /** The first pause before connecting again (doubled each time, with jitter); 250 ms. */
  readonly minBackoffMs?: number;
  /** The longest pause; 5000 ms. */
  readonly maxBackoffMs?: number;
  /** Told what the connection is doing, with the relay's reason when it has one. */
  readonly onStatus?: (status: RelayStatus, detail?: string) => void;
}

/** A connection to the relay that outlives its websockets: give it to `createToolDispatcher`. */
export interface RelayConnection extends ToolSocket {
  /** The latest `toolc.session` the relay sent. */
  readonly session: RelaySession | undefined;
  /** Closes for good (code 1000): the relay ends the conversation at once. */
  close(): void;
}

interface RelaySocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: { readonly data?: unknown; readonly code?: number; readonly reason?: string }) => void): void;
}

/** Close codes of a refused resume (4403 another user's, 4404 not held here, 4408 expired, 4409 used, 4410 ended). */
function resumeRefused(code: number): boolean {
  return code === 4403 || code === 4404 || code === 4408 || code === 4409 || code === 4410;
}

/**
 * Connects to the relay at `url` and stays connected: when the connection drops, it connects
 * again with backoff and resumes the conversation with the relay's token (calls waiting for
 * the page, and approval questions, arrive again: `createToolDispatcher` runs no handler twice);
 * when the relay drains for a deploy (`toolc.drain`, then close 1012) or refuses the resume, it
 * starts a new conversation. Results and approval answers written while it is not connected are
 * sent once it is; other messages (audio) are dropped meanwhile.
 */
export function connectRelay(url: string, options: RelayConnectOptions = {}): RelayConnection {
  const resume = options.resume !== false;
  const minBackoff = options.minBackoffMs ?? 250;
  const maxBackoff = options.maxBackoffMs ?? 5000;
  const open =
    options.open ??
    ((target: string): unknown => {
      const Socket = (globalThis as { WebSocket?: new (url: string) => unknown }).WebSocket;
      if (Socket === undefined) {
        throw new Error("no WebSocket here: give connectRelay an `open` function");
      }
      return new Socket(target);
    });
  const listeners = new Set<(event: ToolMessageEvent) => void>();
  const outbox: string[] = [];
  let socket: RelaySocketLike | undefined;
  let session: RelaySession | undefined;
  let token: string | undefined;
  let tokenUntil = 0;
  // A `toolc.session` came on the current connection: when it drops, the grace window starts.
  let held = false;
  let attempt = 0;
  let closed = false;
  let draining = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const status = (value: RelayStatus, detail?: string): void => {
    try {
      options.onStatus?.(value, detail);
    } catch {
      // A failing status hook must not take the connection down with it.
    }
  };
  const later = (then: () => void): void => {
    const pause = Math.min(maxBackoff, minBackoff * 2 ** attempt) * (0.5 + Math.random() / 2);
    attempt += 1;
    timer = setTimeout(then, pause);
  };
  const connect = (): void => {
    timer = undefined;
    if (closed) {
      return;
    }
    if (token !== undefined && Date.now() > tokenUntil) {
      token = undefined; // the relay stopped waiting: no use asking
    }
    const resuming = token;
    const target =
      resuming === undefined ? url : `${url}${url.includes("?") ? "&" : "?"}resume=${encodeURIComponent(resuming)}`;
    let ws: RelaySocketLike;
    try {
      ws = open(target) as RelaySocketLike;
    } catch (error) {
      status("reconnecting", messageOf(error));
      later(connect);
      return;
    }
    socket = ws;
    ws.addEventListener("open", () => {
      if (socket !== ws) {
        return;
      }
      attempt = 0;
      for (const data of outbox.splice(0)) {
        ws.send(data);
      }
    });
    ws.addEventListener("message", (event) => {
      if (socket !== ws) {
        return;
      }
      if (typeof event.data === "string") {
        let message: unknown;
        try {
          message = JSON.parse(event.data);
        } catch {
          message = undefined;
        }
        if (isJsonObject(message) && message["type"] === "toolc.session" && typeof message["resume_token"] === "string") {
          const resumed = message["resumed"] === true;
          const graceMs = typeof message["grace_ms"] === "number" ? message["grace_ms"] : 0;
          session = {
            resumeToken: message["resume_token"],
            relay: typeof message["relay"] === "string" ? message["relay"] : "",
            graceMs,
            resumed,
          };
          token = resume ? message["resume_token"] : undefined;
          held = true;
          status(resumed ? "resumed" : resuming !== undefined ? "new-conversation" : "open");
        } else if (isJsonObject(message) && message["type"] === "toolc.drain") {
          draining = true;
        }
      }
      for (const listener of [...listeners]) {
        listener({ data: event.data });
      }
    });
    ws.addEventListener("close", (event) => {
      if (socket !== ws) {
        return;
      }
      socket = undefined;
      if (closed) {
        status("closed");
        return;
      }
      const code = event.code ?? 1006;
      const reason = event.reason ?? "";
      if (code === 1012 || draining || resumeRefused(code)) {
        // The conversation is over here: a new one (on another relay, after a deploy).
        draining = false;
        token = undefined;
        status("new-conversation", reason);
        later(connect);
        return;
      }
      if (code === 1006 || code === 1001 || code === 1005) {
        // Dropped: the relay holds the conversation for its grace window.
        if (held && session !== undefined) {
          tokenUntil = Date.now() + session.graceMs;
        }
        held = false;
        status("reconnecting", reason);
        later(connect);
        return;
      }
      closed = true;
      status("closed", reason);
    });
  };
  connect();
  return {
    get session(): RelaySession | undefined {
      return session;
    },
    send(data: string): void {
      const ws = socket;
      if (ws !== undefined && ws.readyState === 1) {
        ws.send(data);
        return;
      }
      // Answers wait for the next connection; the rest (audio) is stale by then.
      if (/"type":"(function_call\.result|tool\.result|toolc\.approval\.response)"/.test(data) && outbox.length < 1024) {
        outbox.push(data);
      }
    },
    addEventListener(_type: "message", listener: (event: ToolMessageEvent) => void): void {
      listeners.add(listener);
    },
    removeEventListener(_type: "message", listener: (event: ToolMessageEvent) => void): void {
      listeners.delete(listener);
    },
    close(): void {
      closed = true;
      if (timer !== undefined) {
        clearTimeout(timer);
      }
      const ws = socket;
      socket = undefined;
      try {
        ws?.close(1000, "closed by the page");
      } catch {
        // Not connected yet (some clients throw then): nothing to close.
      }
    },
  };
}
