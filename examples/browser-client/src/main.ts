// The page side of a toolc voice/text agent: the relay (examples/realtime-relay) forwards the
// model's client tool calls here, `createToolDispatcher` runs the matching handler and sends the
// result back. Everything else the relay sends (the model's text, audio transcripts, errors) is
// the page's own business and is handled by the second listener below.
import { createToolDispatcher, type ClientToolHandlers, type ToolDispatcher } from "./tools.js";

function element<T extends HTMLElement>(id: string, type: new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) {
    throw new Error(`the page has no ${type.name} #${id}`);
  }
  return found;
}

const log = element("log", HTMLOListElement);
const reply = element("reply", HTMLParagraphElement);
const form = element("contact-form", HTMLFormElement);
const toasts = element("toasts", HTMLDivElement);

function logLine(text: string): void {
  const item = document.createElement("li");
  item.textContent = text;
  log.append(item);
  item.scrollIntoView({ block: "end" });
}

// The compiler checks this object against the manifest: leaving out a client tool, adding a
// server tool (`search_help_articles`, `get_order_status`) or misreading an argument is an error.
const handlers: ClientToolHandlers = {
  highlight_element: ({ selector, color = "yellow" }) => {
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
    const classes = ["highlight", `highlight-${color}`];
    target.classList.add(...classes);
    target.scrollIntoView({ behavior: "smooth", block: "center" });
    setTimeout(() => target.classList.remove(...classes), 4000);
    return { found: true };
  },

  scroll_to_section: async ({ section_id }) => {
    const section = document.getElementById(section_id);
    if (section === null) {
      return { scrolled: false };
    }
    section.scrollIntoView({ behavior: "smooth" });
    // Answer once the scroll has had time to finish, so the agent talks about what is visible.
    await new Promise((resolve) => setTimeout(resolve, 400));
    return { scrolled: true };
  },

  fill_form_field: ({ field, value }) => {
    const input = form.elements.namedItem(field);
    if (!(input instanceof HTMLInputElement || input instanceof HTMLTextAreaElement)) {
      return { filled: false };
    }
    input.value = value;
    input.focus();
    return { filled: true };
  },

  // Fire-and-forget (`wait_for_response: false`): the model does not wait and gets no reply.
  show_toast: ({ message, level = "info" }) => {
    const toast = document.createElement("div");
    toast.className = `toast toast-${level}`;
    toast.textContent = message;
    toasts.append(toast);
    setTimeout(() => toast.remove(), 5000);
  },
};

let socket: WebSocket | undefined;
let dispatcher: ToolDispatcher | undefined;

function connect(url: string): void {
  dispatcher?.dispose();
  socket?.close();
  const ws = new WebSocket(url);
  socket = ws;
  dispatcher = createToolDispatcher(ws, handlers, {
    onError: (error, call) => logLine(`! ${call?.name ?? "call"}: ${error instanceof Error ? error.message : String(error)}`),
  });

  // The page's own listener sees every message too; the dispatcher only answers tool calls.
  ws.addEventListener("message", (event: MessageEvent) => {
    if (typeof event.data !== "string") {
      return;
    }
    let message: { type?: unknown; name?: unknown; arguments?: unknown; delta?: unknown };
    try {
      message = JSON.parse(event.data) as typeof message;
    } catch {
      return;
    }
    switch (message.type) {
      case "function_call":
        logLine(`→ ${String(message.name)} ${String(message.arguments)}`);
        break;
      case "response.created":
        reply.textContent = "";
        break;
      case "response.output_text.delta":
      case "response.output_audio_transcript.delta":
        reply.textContent += typeof message.delta === "string" ? message.delta : "";
        break;
      case "error":
        logLine(`! ${event.data}`);
        break;
    }
  });

  const text = element("text", HTMLInputElement);
  const send = element("say", HTMLFormElement).querySelector("button");
  ws.addEventListener("open", () => {
    logLine(`connected to ${url}`);
    text.disabled = false;
    if (send !== null) send.disabled = false;
  });
  ws.addEventListener("close", () => {
    logLine("disconnected");
    text.disabled = true;
    if (send !== null) send.disabled = true;
    dispatcher?.dispose();
  });
}

element("connect", HTMLButtonElement).addEventListener("click", () => {
  connect(element("url", HTMLInputElement).value);
});

element("say", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  const input = element("text", HTMLInputElement);
  if (socket === undefined || socket.readyState !== WebSocket.OPEN || input.value.trim() === "") {
    return;
  }
  // Typed input instead of a microphone: a user message, then ask the model to respond.
  socket.send(
    JSON.stringify({
      type: "conversation.item.create",
      item: { type: "message", role: "user", content: [{ type: "input_text", text: input.value }] },
    }),
  );
  socket.send(JSON.stringify({ type: "response.create" }));
  logLine(`you: ${input.value}`);
  input.value = "";
});
