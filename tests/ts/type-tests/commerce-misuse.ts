// @manifest commerce
// @expect TS2322 Property 'cart_size' is missing in type '{ items: number; }' but required in type 'AddToCartResult'
// @expect TS2322 Type '"blue"' is not assignable to type
import type { ClientToolHandlers, SearchProductsArgs } from "./tools.js";

export const handlers: ClientToolHandlers = {
  add_to_cart: async (args) => {
    const wrap: boolean = args.gift_wrap ?? false;
    return { items: wrap ? 1 : 0 };
  },
  get_cart: () => ({ items: [] }),
};

export const search: SearchProductsArgs = { query: "boots", filters: { category: "blue" } };
