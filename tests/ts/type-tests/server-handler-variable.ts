// @manifest support
// @expect TS2345 Types of property 'search_help_articles' are incompatible
import { createToolDispatcher, type ToolSocket } from "./tools.js";

declare const socket: ToolSocket;

// Through a variable, TypeScript's excess-property check does not apply; `?: never` still does.
const handlers = {
  highlight_element: () => ({ found: true }),
  scroll_to_section: () => ({ scrolled: true }),
  fill_form_field: () => ({ filled: true }),
  show_toast: () => undefined,
  search_help_articles: () => ({ articles: [] }),
};
createToolDispatcher(socket, handlers);
