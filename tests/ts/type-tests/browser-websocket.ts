// @manifest support
// @flags --lib es2022,dom
// Must compile: the browser's own WebSocket is a ToolSocket.
import { createToolDispatcher } from "./tools.js";

const socket = new WebSocket("ws://127.0.0.1:8787/");
const dispatcher = createToolDispatcher(socket, {
  highlight_element: ({ selector }) => ({ found: document.querySelector(selector) !== null }),
  scroll_to_section: ({ section_id }) => {
    const element = document.getElementById(section_id);
    element?.scrollIntoView();
    return { scrolled: element !== null };
  },
  fill_form_field: ({ field, value }) => {
    const input = document.querySelector<HTMLInputElement>(`[name="${field}"]`);
    if (input === null) {
      throw new Error(`no ${field} field on this page`);
    }
    input.value = value;
    return { filled: true };
  },
  show_toast: ({ message }) => console.log(message),
});
socket.addEventListener("close", () => dispatcher.dispose());
