// @manifest support
// @expect TS2322 Type 'string' is not assignable to type 'boolean'
// @expect TS2551 Property 'toFixed' does not exist on type 'string'
import type { ClientToolHandlers } from "./tools.js";

export const handlers: ClientToolHandlers = {
  highlight_element: (args) => ({ found: args.selector.toFixed(2) }),
  scroll_to_section: () => ({ scrolled: "yes" }),
  fill_form_field: () => ({ filled: true }),
  show_toast: () => undefined,
};
