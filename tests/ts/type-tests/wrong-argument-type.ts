// @manifest support
// @expect TS2322 Types of parameters 'args' and 'args' are incompatible.
// @expect TS2322 Type 'string' is not assignable to type 'number'
// @expect TS2367 and '"phone"' have no overlap
import type { ClientToolHandlers } from "./tools.js";

// A handler that declares its own, wrong, argument type is rejected, not trusted.
const highlight = (args: { selector: number }) => ({ found: args.selector > 0 });

export const handlers: ClientToolHandlers = {
  highlight_element: highlight,
  scroll_to_section: () => ({ scrolled: true }),
  fill_form_field: (args) => ({ filled: args.field === "phone" }),
  show_toast: () => undefined,
};
