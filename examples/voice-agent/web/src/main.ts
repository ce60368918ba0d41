// The page side of the voice-agent demo. The relay (same origin, ws://HOST/) forwards only the
// model's *client* tool calls here; `createToolDispatcher` from the generated tools.ts runs the
// matching handler below and sends the result back. Everything else the relay forwards — the
// model's text and audio, errors, and the relay's own `toolc.trace` events — is handled by this
// page's own listener and shown in the side panel.
import {
  createToolDispatcher,
  TOOLS,
  type ApprovalDecision,
  type ApprovalRequest,
  type ClientToolHandler,
  type ClientToolHandlers,
  type ToolCallInfo,
} from "./generated/tools.js";

function element<T extends HTMLElement>(id: string, type: new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) {
    throw new Error(`the page has no ${type.name} #${id}`);
  }
  return found;
}

const conversation = element("conversation", HTMLOListElement);
const calls = element("calls", HTMLOListElement);
const refundForm = element("refund-form", HTMLFormElement);
const toasts = element("toasts", HTMLDivElement);
const status = element("status", HTMLSpanElement);
const modeLine = element("mode", HTMLParagraphElement);
const askForm = element("ask", HTMLFormElement);
const question = element("question", HTMLInputElement);
const sendButton = element("send", HTMLButtonElement);
const note = element("note", HTMLParagraphElement);
const approvals = element("approvals", HTMLDivElement);

element("build-hint", HTMLParagraphElement).hidden = true;

// ---- the call log ------------------------------------------------------------------------------

function json(value: unknown): string {
  return JSON.stringify(value) ?? "undefined";
}

function row(label: string, text: string, className = ""): HTMLDivElement {
  const div = document.createElement("div");
  div.className = `call-row ${className}`.trim();
  const l = document.createElement("span");
  l.className = "call-label";
  l.textContent = label;
  const value = document.createElement("code");
  value.textContent = text;
  div.append(l, value);
  return div;
}

/**
 * Keeps a panel list scrolled to its newest entry. It sets the list's own scroll position:
 * `scrollIntoView` could also move the page and cut short a scroll that a tool just started.
 */
function stickToBottom(list: HTMLElement): void {
  list.scrollTop = list.scrollHeight;
}

interface CallEntry {
  readonly li: HTMLLIElement;
  done(state: "ok" | "error" | "sent", result: HTMLDivElement, ms: number): void;
}

function logCall(name: string, location: "browser" | "server", callId: string | undefined): CallEntry {
  const li = document.createElement("li");
  li.className = "call";
  li.dataset["name"] = name;
  li.dataset["location"] = location;
  li.dataset["state"] = "running";
  if (callId !== undefined) {
    li.dataset["callId"] = callId;
  }
  const head = document.createElement("div");
  head.className = "call-head";
  const title = document.createElement("span");
  title.className = "call-name";
  title.textContent = name;
  const badge = document.createElement("span");
  badge.className = `badge badge-${location}`;
  badge.textContent = location;
  const time = document.createElement("span");
  time.className = "call-time";
  time.textContent = "running…";
  head.append(title, badge, time);
  li.append(head);
  calls.append(li);
  stickToBottom(calls);
  return {
    li,
    done(state, result, ms) {
      li.dataset["state"] = state;
      time.textContent = `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
      li.append(result);
      stickToBottom(calls);
    },
  };
}

const entries = new Map<string, CallEntry>();

/**
 * Wraps a handler so that the log shows the call as it happens: name, arguments, where it ran,
 * result (or error) and how long it took. The handler's own types are kept, so the handler
 * table below is still checked against the manifest.
 */
function traced<A, R>(
  handler: (args: A, call: ToolCallInfo) => R | Promise<R>,
  fireAndForget = false,
): (args: A, call: ToolCallInfo) => Promise<R> {
  return async (args, call) => {
    const entry = logCall(call.name, "browser", call.callId);
    entry.li.append(row("args", json(args)));
    entries.set(call.callId, entry);
    const started = performance.now();
    try {
      const result = await handler(args, call);
      const elapsed = performance.now() - started;
      if (fireAndForget) {
        entry.done("sent", row("result", "fire-and-forget: the model does not wait for a reply"), elapsed);
      } else {
        entry.done("ok", row("result", json(result)), elapsed);
      }
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      entry.done("error", row("error", message, "call-error"), performance.now() - started);
      throw error;
    }
  };
}

interface Trace {
  readonly call_id?: string;
  readonly name: string;
  readonly location: "server" | "client";
  readonly duration_ms: number;
  readonly status: "ok" | "acknowledged" | "error";
  readonly error?: string;
}

function isTrace(message: Record<string, unknown>): message is Record<string, unknown> & Trace {
  return (
    typeof message["name"] === "string" &&
    (message["location"] === "server" || message["location"] === "client") &&
    typeof message["duration_ms"] === "number" &&
    typeof message["status"] === "string"
  );
}

/** The relay's `toolc.trace`: the only thing this page learns about a server call. */
function onTrace(trace: Trace): void {
  if (trace.location === "server") {
    const entry = logCall(trace.name, "server", undefined);
    entry.li.append(row("args", "kept on the server", "call-hidden"));
    const result =
      trace.status === "ok"
        ? row("result", "ok · kept on the server", "call-hidden")
        : row("error", trace.error ?? "failed", "call-error");
    entry.done(trace.status === "ok" ? "ok" : "error", result, trace.duration_ms);
    return;
  }
  // A client call: the relay confirms what reached the model, and when.
  const entry = trace.call_id === undefined ? undefined : entries.get(trace.call_id);
  if (entry === undefined) {
    return;
  }
  entry.li.dataset["relay"] = trace.status;
  const tag = document.createElement("span");
  tag.className = `relay-tag relay-${trace.status}`;
  if (trace.status === "error") {
    tag.textContent = `✗ ${trace.error ?? "failed"}`;
    tag.title = `The relay sent the model an error after ${Math.round(trace.duration_ms)} ms.`;
  } else if (trace.status === "acknowledged") {
    tag.textContent = "✓ acked";
    tag.title = "Fire-and-forget: the relay acknowledged it to the model at once.";
  } else {
    tag.textContent = "✓ model";
    tag.title = `The relay sent the result to the model ${Math.round(trace.duration_ms)} ms after the call.`;
  }
  entry.li.querySelector(".call-time")?.after(tag);
}

// ---- the client tools --------------------------------------------------------------------------

const highlightElement: ClientToolHandler<"highlight_element"> = ({ selector, color = "yellow" }) => {
  let target: Element | null;
  try {
    target = document.querySelector(selector);
  } catch {
    // Thrown errors reach the model as {"error": "..."}, so it can correct itself.
    throw new Error(`\`${selector}\` is not a valid CSS selector`);
  }
  if (target === null) {
    return { found: false };
  }
  for (const old of document.querySelectorAll("[data-highlight]")) {
    old.removeAttribute("data-highlight");
  }
  // It stays until the next highlight, so the customer can take their time to find it.
  target.setAttribute("data-highlight", color);
  return { found: true };
};

function waitForScrollEnd(limitMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      window.removeEventListener("scrollend", done);
      resolve();
    };
    const timer = setTimeout(done, limitMs);
    window.addEventListener("scrollend", done);
  });
}

function inView(el: Element): boolean {
  const rect = el.getBoundingClientRect();
  return rect.top < window.innerHeight && rect.bottom > 0;
}

const scrollToSection: ClientToolHandler<"scroll_to_section"> = async ({ section_id }) => {
  const section = document.getElementById(section_id);
  if (section === null || section.tagName !== "SECTION") {
    return { scrolled: false };
  }
  section.scrollIntoView({ behavior: "smooth", block: "start" });
  // Answer once the scroll has finished, so the agent talks about what is on screen. A section
  // that is already in place produces no scroll at all, hence the short limit.
  if (Math.abs(section.getBoundingClientRect().top) > 1) {
    await waitForScrollEnd(1500);
  }
  return { scrolled: inView(section) };
};

const fillFormField: ClientToolHandler<"fill_form_field"> = ({ field, value }) => {
  const input = refundForm.elements.namedItem(field);
  if (!(input instanceof HTMLInputElement || input instanceof HTMLTextAreaElement)) {
    return { filled: false };
  }
  input.value = value;
  input.dispatchEvent(new Event("input", { bubbles: true }));
  input.dataset["filledBy"] = "agent";
  return { filled: true };
};

// Fire-and-forget (`wait_for_response: false`): the dispatcher sends no reply.
const showToast: ClientToolHandler<"show_toast"> = ({ message, level = "info" }) => {
  const toast = document.createElement("div");
  toast.className = `toast toast-${level}`;
  toast.textContent = message;
  toasts.append(toast);
  setTimeout(() => toast.remove(), 8000);
};

// Checked by tsc against the manifest: leaving out a client tool, adding a server tool
// (`search_help_articles`, `get_order_status`) or misreading an argument is a compile error.
const handlers: ClientToolHandlers = {
  highlight_element: traced(highlightElement),
  scroll_to_section: traced(scrollToSection),
  fill_form_field: traced(fillFormField),
  show_toast: traced(showToast, true),
};

// ---- approvals ---------------------------------------------------------------------------------

/**
 * `submit_refund_request` has `approval: required`: before it runs, the relay asks this page.
 * The customer sees what the agent wants to do, with the arguments it would run with, and
 * answers; the answer is bound to this one request. The question goes away if the relay
 * withdraws it (the customer interrupted, or it timed out).
 */
function approve(request: ApprovalRequest): Promise<ApprovalDecision> {
  const card = document.createElement("div");
  card.className = "approval";
  card.dataset["name"] = request.name;
  const title = document.createElement("div");
  title.className = "approval-title";
  title.textContent = `${TOOLS[request.name].title ?? request.name}?`;
  const args = document.createElement("div");
  args.className = "approval-args";
  args.textContent = `order ${request.arguments.order_number}${request.arguments.reason === undefined ? "" : ` · ${request.arguments.reason}`}`;
  const buttons = document.createElement("div");
  buttons.className = "approval-buttons";
  const yes = document.createElement("button");
  yes.className = "primary approve";
  yes.type = "button";
  yes.textContent = "Approve";
  const no = document.createElement("button");
  no.className = "decline";
  no.type = "button";
  no.textContent = "Decline";
  buttons.append(yes, no);
  card.append(title, args, buttons);
  approvals.append(card);
  return new Promise((resolve) => {
    const finish = (decision: ApprovalDecision, label: string): void => {
      card.remove();
      const entry = logCall(request.name, "server", undefined);
      entry.li.dataset["approval"] = label;
      entry.done(label === "approved" ? "ok" : "error", row("approval", label), 0);
      resolve(decision);
    };
    yes.addEventListener("click", () => finish(true, "approved"), { once: true });
    no.addEventListener("click", () => finish({ approved: false, reason: "The customer declined in the page." }, "declined"), {
      once: true,
    });
    request.signal.addEventListener("abort", () => card.remove(), { once: true });
  });
}

// ---- the conversation --------------------------------------------------------------------------

const bubbles = new Map<string, HTMLLIElement>();

function say(role: "user" | "agent" | "error", text: string): HTMLLIElement {
  const li = document.createElement("li");
  li.className = `bubble bubble-${role}`;
  li.textContent = text;
  conversation.append(li);
  stickToBottom(conversation);
  return li;
}

function agentText(responseId: string, delta: string): void {
  let bubble = bubbles.get(responseId);
  if (bubble === undefined) {
    bubble = say("agent", "");
    bubble.dataset["responseId"] = responseId;
    bubble.dataset["streaming"] = "true";
    bubbles.set(responseId, bubble);
  }
  bubble.textContent += delta;
  stickToBottom(conversation);
}

/** Plays the model's PCM16 audio (24 kHz mono, the GA default) as it streams in. */
class AudioOut {
  private context: AudioContext | undefined;
  private next = 0;

  /** Must run inside a user gesture (the Send click), or the browser keeps the audio muted. */
  unlock(): void {
    this.context ??= new AudioContext({ sampleRate: 24000 });
    void this.context.resume();
  }

  play(base64: string): void {
    if (this.context === undefined) {
      return;
    }
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const samples = new Int16Array(bytes.buffer, 0, Math.floor(bytes.length / 2));
    if (samples.length === 0) {
      return;
    }
    const buffer = this.context.createBuffer(1, samples.length, 24000);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) {
      channel[i] = (samples[i] ?? 0) / 32768;
    }
    const source = this.context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.context.destination);
    this.next = Math.max(this.next, this.context.currentTime);
    source.start(this.next);
    this.next += buffer.duration;
  }
}

const audio = new AudioOut();
let responsesDone = 0;

function responseDone(responseId: string): void {
  bubbles.get(responseId)?.removeAttribute("data-streaming");
  responsesDone += 1;
  document.body.dataset["responsesDone"] = String(responsesDone);
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * GPT-Live: the live model's words (`session.output_transcript.delta`) go into one bubble per
 * delegated backend response, closed when that response ends (`response.completed`, `failed` or
 * `incomplete` in a `response.event`); the customer's (`session.input_transcript.delta`) into
 * the bubble their speech opened.
 */
let gptLiveResponse = 0;
let customerBubble: HTMLLIElement | undefined;

function onGptLiveEvent(message: Record<string, unknown>): boolean {
  const delta = typeof message["delta"] === "string" ? message["delta"] : undefined;
  switch (message["type"]) {
    case "session.input_transcript.delta":
      if (delta !== undefined) {
        customerBubble ??= say("user", "");
        if (customerBubble.dataset["listening"] === "true") {
          customerBubble.textContent = "";
          delete customerBubble.dataset["listening"];
        }
        customerBubble.textContent += delta;
      }
      return true;
    case "session.output_transcript.delta":
      if (delta !== undefined) {
        // The agent answers: the customer's next words start a new bubble.
        customerBubble = undefined;
        agentText(`gpt-live-${gptLiveResponse}`, delta);
      }
      return true;
    case "session.output_audio.delta":
      if (delta !== undefined) {
        audio.play(delta);
      }
      return true;
    case "response.event": {
      const kind = record(message["event"])?.["type"];
      if (kind === "response.completed" || kind === "response.failed" || kind === "response.incomplete") {
        responseDone(`gpt-live-${gptLiveResponse}`);
        gptLiveResponse += 1;
      }
      return true;
    }
  }
  return false;
}

/** Gemini Live: the response being streamed now (Live messages carry no response id). */
let liveResponse = 0;
let liveResponseOpen = false;

/**
 * A Gemini Live server message. Live has no response events: a response is what the model says
 * until it calls tools (`toolCall`) or its turn ends (`turnComplete`, or `interrupted` when the
 * customer barged in).
 */
function onLiveMessage(message: Record<string, unknown>): void {
  const content = record(message["serverContent"]);
  const id = `live-${liveResponse}`;
  const parts = record(content?.["modelTurn"])?.["parts"];
  for (const part of Array.isArray(parts) ? parts : []) {
    const text = record(part)?.["text"];
    const data = record(record(part)?.["inlineData"])?.["data"];
    if (typeof text === "string") {
      agentText(id, text);
      liveResponseOpen = true;
    } else if (typeof data === "string") {
      audio.play(data);
      liveResponseOpen = true;
    }
  }
  const transcript = record(content?.["outputTranscription"])?.["text"];
  if (typeof transcript === "string") {
    agentText(id, transcript);
    liveResponseOpen = true;
  }
  const ends = message["toolCall"] !== undefined || content?.["turnComplete"] === true || content?.["interrupted"] === true;
  if (ends && liveResponseOpen) {
    responseDone(id);
    liveResponse += 1;
    liveResponseOpen = false;
  }
}

function onMessage(message: Record<string, unknown>): void {
  if (!("type" in message)) {
    onLiveMessage(message);
    return;
  }
  if (onGptLiveEvent(message)) {
    return;
  }
  const responseId = typeof message["response_id"] === "string" ? message["response_id"] : "";
  switch (message["type"]) {
    case "response.output_text.delta":
    case "response.output_audio_transcript.delta":
      if (typeof message["delta"] === "string") {
        agentText(responseId, message["delta"]);
      }
      break;
    case "response.output_audio.delta":
      if (typeof message["delta"] === "string") {
        audio.play(message["delta"]);
      }
      break;
    case "response.done": {
      const id = record(message["response"])?.["id"];
      responseDone(typeof id === "string" ? id : "");
      break;
    }
    case "toolc.trace":
      if (isTrace(message)) {
        onTrace(message);
      }
      break;
    case "error": {
      const error = message["error"];
      const text =
        typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
          ? error.message
          : JSON.stringify(error);
      say("error", text);
      break;
    }
  }
}

// ---- the connection ----------------------------------------------------------------------------

interface Config {
  readonly mode: "scripted" | "remote";
  readonly provider: "openai" | "gemini-live" | "gpt-live";
  readonly question: string;
}

// ---- speaking (GPT-Live) -----------------------------------------------------------------------

/** GPT-Live's audio in: PCM16, mono, 24 kHz (the relay asks for it in `session.audio.format`). */
const RATE = 24000;
/**
 * The scripted model "hears" the question after this many 100 ms chunks
 * (`conversation::GPT_LIVE_CLIP_CHUNKS` on the server).
 */
const CLIP_CHUNKS = 5;

/** Float samples as base64 PCM16 little-endian, the way `session.input_audio.append` takes them. */
function pcm16Base64(samples: Float32Array): string {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i] ?? 0));
    view.setInt16(i * 2, Math.round(s * 32767), true);
  }
  let binary = "";
  for (const b of bytes) {
    binary += String.fromCharCode(b);
  }
  return btoa(binary);
}

/**
 * The scripted conversation's "speech": a quiet 440 Hz tone, faded in and out, in 100 ms chunks.
 * It is not speech, and the scripted model does not listen to it: it answers as if the customer
 * had said the question shown in the page.
 */
function clip(): string[] {
  const per = RATE / 10;
  const total = per * CLIP_CHUNKS;
  const chunks: string[] = [];
  for (let c = 0; c < CLIP_CHUNKS; c++) {
    const samples = new Float32Array(per);
    for (let i = 0; i < per; i++) {
      const n = c * per + i;
      const fade = Math.min(1, n / 1200, (total - n) / 1200);
      samples[i] = 0.1 * fade * Math.sin((2 * Math.PI * 440 * n) / RATE);
    }
    chunks.push(pcm16Base64(samples));
  }
  return chunks;
}

/** The microphone, for a real GPT-Live model: its audio, resampled to 24 kHz, as it comes. */
class Microphone {
  private stream: MediaStream | undefined;
  private context: AudioContext | undefined;

  get on(): boolean {
    return this.stream !== undefined;
  }

  async start(send: (base64: string) => void): Promise<void> {
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } });
    this.context = new AudioContext({ sampleRate: RATE });
    const source = this.context.createMediaStreamSource(this.stream);
    // A ScriptProcessor is enough for a demo (an AudioWorklet would need a second module).
    const node = this.context.createScriptProcessor(2048, 1, 1);
    node.onaudioprocess = (event) => send(pcm16Base64(event.inputBuffer.getChannelData(0)));
    source.connect(node);
    node.connect(this.context.destination);
  }

  stop(): void {
    for (const track of this.stream?.getTracks() ?? []) {
      track.stop();
    }
    void this.context?.close();
    this.stream = undefined;
    this.context = undefined;
  }
}

/** The customer's typed question on the model's wire: it stands in for the microphone. */
function questionMessages(provider: Config["provider"], text: string): unknown[] {
  if (provider === "gemini-live") {
    // Live answers a user turn that is complete; there is no separate request for a response.
    return [{ clientContent: { turns: [{ role: "user", parts: [{ text }] }], turnComplete: true } }];
  }
  return [
    { type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text }] } },
    { type: "response.create" },
  ];
}

function setStatus(state: "connecting" | "connected" | "closed", text: string): void {
  status.dataset["state"] = state;
  status.textContent = text;
}

async function start(): Promise<void> {
  const config = (await (await fetch("config.json")).json()) as Config;
  const wire = { openai: "OpenAI Realtime", "gemini-live": "Gemini Live", "gpt-live": "GPT-Live" }[config.provider];
  modeLine.textContent =
    config.mode === "scripted" ? `Scripted model: a bundled conversation in ${wire} messages` : `${wire} model`;
  question.value = config.mode === "scripted" ? config.question : "";
  if (config.mode === "remote") {
    question.placeholder = config.question;
  }
  // GPT-Live has no typed turn: the customer speaks. Said in the page, so that nobody thinks
  // the text box is what the model reads.
  const speaks = config.provider === "gpt-live";
  if (speaks) {
    document.body.dataset["speaks"] = "true";
    question.readOnly = true;
    sendButton.textContent = "Speak";
    note.textContent =
      config.mode === "scripted"
        ? "GPT-Live takes voice, not text. Speak sends a 0.5 s tone as audio (session.input_audio.append); the scripted model does not listen to it, and answers as if you had said the question above."
        : "GPT-Live takes voice, not text: Speak turns the microphone on (and off again); the model hears what you say.";
    if (config.mode === "remote") {
      question.value = "";
      question.placeholder = "Press Speak and ask";
    }
  }
  const microphone = new Microphone();

  const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`);
  const dispatcher = createToolDispatcher(socket, handlers, {
    approve,
    onError: (error, call) => say("error", `${call?.name ?? "a call"}: ${error instanceof Error ? error.message : String(error)}`),
  });
  socket.addEventListener("open", () => {
    setStatus("connected", "connected");
    question.disabled = false;
    sendButton.disabled = false;
  });
  socket.addEventListener("close", () => {
    setStatus("closed", "disconnected");
    question.disabled = true;
    sendButton.disabled = true;
    microphone.stop();
    dispatcher.dispose();
  });
  // The dispatcher has its own listener and answers tool calls; this one sees every message.
  socket.addEventListener("message", (event: MessageEvent) => {
    if (typeof event.data !== "string") {
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (typeof message === "object" && message !== null && !Array.isArray(message)) {
      onMessage(message as Record<string, unknown>);
    }
  });

  askForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (speaks) {
      speak();
      return;
    }
    const text = question.value.trim();
    if (text === "" || socket.readyState !== WebSocket.OPEN) {
      return;
    }
    audio.unlock();
    say("user", text);
    for (const message of questionMessages(config.provider, text)) {
      socket.send(JSON.stringify(message));
    }
    question.value = "";
    if (config.mode === "scripted") {
      // The scripted model plays one conversation per connection.
      question.disabled = true;
      sendButton.disabled = true;
      note.textContent = "The scripted model plays this one conversation; reload the page to watch it again.";
    }
  });

  /** GPT-Live: the scripted model gets the clip; a real one the microphone, until pressed again. */
  function speak(): void {
    if (socket.readyState !== WebSocket.OPEN) {
      return;
    }
    audio.unlock();
    const send = (base64: string): void => {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ type: "session.input_audio.append", audio: base64 }));
      }
    };
    customerBubble = say("user", "🎤 …");
    customerBubble.dataset["listening"] = "true";
    if (config.mode === "scripted") {
      for (const chunk of clip()) {
        send(chunk);
      }
      sendButton.disabled = true;
      note.textContent =
        "The clip is sent: what the scripted model 'heard' shows as your words. Reload the page to watch it again.";
      return;
    }
    if (microphone.on) {
      microphone.stop();
      sendButton.textContent = "Speak";
      return;
    }
    microphone.start(send).then(
      () => {
        sendButton.textContent = "Stop";
      },
      (error: unknown) => say("error", `no microphone: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
}

start().catch((error: unknown) => {
  setStatus("closed", "error");
  say("error", `the page could not start: ${error instanceof Error ? error.message : String(error)}`);
});
