// @manifest support
// @expect TS2741 Property 'scroll_to_section' is missing
import { createToolDispatcher, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;

createToolDispatcher(socket, {
  highlight_element: () => ({ found: true }),
  fill_form_field: () => ({ filled: true }),
  show_toast: () => undefined,
});
