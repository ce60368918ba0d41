// @manifest support
// @expect TS2551 Property 'selecter' does not exist on type 'HighlightElementArgs'. Did you mean 'selector'?
// @expect TS2322 Type '{ filed: boolean; }' is not assignable to type 'FillFormFieldResult | Promise<FillFormFieldResult>'
import type { ClientToolHandlers } from "./tools.js";

export const handlers: ClientToolHandlers = {
  highlight_element: (args) => ({ found: args.selecter !== "" }),
  scroll_to_section: () => ({ scrolled: true }),
  fill_form_field: () => ({ filed: true }),
  show_toast: () => undefined,
};
