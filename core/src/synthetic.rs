//! Synthetic manifests of N realistic tools, for benchmarks and scale tests.
//!
//! The tools cycle through shapes seen in real agents: a search with filters and a paged result,
//! a lookup by id with a pattern, a client action with an enum and a default, a fire-and-forget
//! notification, and an order with nested line items and `$defs`. Output is deterministic.

use std::fmt::Write as _;

/// A YAML manifest with `n` tools.
pub fn manifest(n: usize) -> String {
    let mut out = String::with_capacity(n * 900);
    out.push_str("version: 1\ntools:\n");
    for i in 0..n {
        let _ = match i % 5 {
            0 => write!(
                out,
                r##"  - name: search_records_{i}
    description: Search the records of collection {i} and return the best matches with their scores.
    location: server
    timeout: 5s
    parameters:
      type: object
      properties:
        query: {{ type: string, minLength: 1, description: Free-text query. }}
        limit: {{ type: integer, minimum: 1, maximum: 50, default: 10 }}
        filters:
          type: object
          properties:
            status: {{ type: string, enum: [open, closed, archived] }}
            tags: {{ type: array, items: {{ type: string }}, maxItems: 10 }}
            created_after: {{ type: string, format: date-time }}
          additionalProperties: false
      required: [query]
      additionalProperties: false
    returns:
      type: object
      properties:
        hits:
          type: array
          items:
            type: object
            properties:
              id: {{ type: string }}
              score: {{ type: number }}
              title: {{ type: string }}
            required: [id, score, title]
            additionalProperties: false
        total: {{ type: integer }}
      required: [hits, total]
      additionalProperties: false
"##
            ),
            1 => write!(
                out,
                r##"  - name: get_account_{i}
    description: Look up one account of region {i} by its id and return its current state.
    location: server
    timeout: 2s
    parameters:
      type: object
      properties:
        account_id: {{ type: string, pattern: "^AC-[0-9]{{6}}$", description: The account id. }}
        include_history: {{ type: boolean, default: false }}
      required: [account_id]
      additionalProperties: false
    returns:
      type: object
      properties:
        state: {{ type: string, enum: [active, suspended, closed] }}
        balance: {{ type: [number, "null"] }}
      required: [state, balance]
      additionalProperties: false
"##
            ),
            2 => write!(
                out,
                r##"  - name: highlight_widget_{i}
    description: Highlight widget {i} on the page so that the user sees where to look.
    location: client
    timeout: 4s
    filler: ["One moment.", "Let me show you."]
    parameters:
      type: object
      properties:
        selector: {{ type: string, description: CSS selector. }}
        color: {{ type: string, enum: [yellow, green, red], default: yellow }}
        pulse: {{ type: boolean }}
      required: [selector]
      additionalProperties: false
    returns:
      type: object
      properties:
        found: {{ type: boolean }}
      required: [found]
      additionalProperties: false
"##
            ),
            3 => write!(
                out,
                r##"  - name: notify_user_{i}
    description: Show notification {i} to the user; the agent does not wait for it.
    location: client
    wait_for_response: false
    parameters:
      type: object
      properties:
        message: {{ type: string, maxLength: 140 }}
        level: {{ type: string, enum: [info, success, warning], default: info }}
      required: [message]
      additionalProperties: false
"##
            ),
            _ => write!(
                out,
                r##"  - name: place_order_{i}
    description: Place an order in store {i} for the given line items and return its number.
    location: server
    timeout: 10s
    parameters:
      type: object
      properties:
        customer_id: {{ type: string }}
        items:
          type: array
          minItems: 1
          items: {{ $ref: "#/$defs/LineItem" }}
        shipping:
          type: string
          enum: [standard, express]
          default: standard
        note: {{ type: string, maxLength: 500 }}
      required: [customer_id, items]
      additionalProperties: false
      $defs:
        LineItem:
          type: object
          properties:
            sku: {{ type: string }}
            quantity: {{ type: integer, minimum: 1 }}
          required: [sku, quantity]
          additionalProperties: false
    returns:
      type: object
      properties:
        order_number: {{ type: string }}
      required: [order_number]
      additionalProperties: false
"##
            ),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn synthetic_manifests_are_valid() {
        let mut session = crate::Session::new();
        session.add_manifest("synthetic.tools.yaml", super::manifest(25).as_bytes());
        let ir = session.check();
        assert!(session.diagnostics.is_empty(), "{}", session.render(false));
        assert_eq!(ir.unwrap().tools.len(), 25);
    }
}
