// @manifest behaviours
// @expect TS2339 Property 'total' does not exist
import type { ApprovalRequest } from "./tools.js";

// Arguments are typed per tool: a delete_account request has no total.
export function describe(request: ApprovalRequest): number {
  if (request.name === "delete_account") {
    return request.arguments.total;
  }
  return request.arguments.total;
}
