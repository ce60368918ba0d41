// @manifest support
// @expect TS2322 Type '() => { status: string; eta: null; }' is not assignable to type 'never'
import { createToolDispatcher, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;

createToolDispatcher(socket, {
  highlight_element: () => ({ found: true }),
  scroll_to_section: () => ({ scrolled: true }),
  fill_form_field: () => ({ filled: true }),
  show_toast: () => undefined,
  // A server tool: the page must not run it.
  get_order_status: () => ({ status: "placed", eta: null }),
});
