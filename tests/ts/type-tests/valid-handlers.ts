// @manifest support
// Must compile: every client handler, typed arguments used correctly, sync and async results.
import { createToolDispatcher, type ClientToolHandlers, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;

const handlers: ClientToolHandlers = {
  highlight_element: (args) => {
    const color: "yellow" | "green" | "red" = args.color ?? "yellow";
    return { found: args.selector.length > 0 && color !== "red" };
  },
  scroll_to_section: async (args, call) => ({ scrolled: args.section_id !== call.callId }),
  fill_form_field: async (args) => ({ filled: args.field === "email" && args.value.includes("@") }),
  show_toast: (args) => {
    const level: string = args.level ?? "info";
    return `${level}: ${args.message}`;
  },
};

const dispatcher = createToolDispatcher(socket, handlers, { naming: "tool.call" });
const pending: number = dispatcher.pending;
void pending;
dispatcher.dispose();
