//! A tool's `scopes`: the OAuth scopes a caller's access token must carry to call it (RFC 6749
//! §3.3), which an MCP server acting as a resource server enforces. Checked here so that a scope
//! the authorization server could never grant (one with a space, a quote, a backslash or a
//! non-ASCII letter) fails the build rather than every call.

use super::*;

/// What a scope token may hold (for `toolc.schema.json`): RFC 6749's `scope-token`, one or more
/// of `%x21 / %x23-5B / %x5D-7E` (printable ASCII but space, `"` and `\`).
pub const SCOPE_PATTERN: &str = r#"^[\x21\x23-\x5B\x5D-\x7E]+$"#;

/// Whether `c` may appear in an RFC 6749 scope token.
fn scope_char(c: char) -> bool {
    matches!(c, '\x21' | '\x23'..='\x5B' | '\x5D'..='\x7E')
}

/// Reads `scopes`: a list of scope tokens, each named once. Every bad entry is reported; the
/// good ones are kept, in the manifest's order.
pub(super) fn parse(v: &Node, what: &str, diags: &mut Diagnostics) -> Vec<String> {
    let Some(items) = v.as_seq() else {
        diags.push(type_error(
            "scopes",
            "a list of OAuth scopes, e.g. `[tickets:write]`",
            v,
        ));
        return Vec::new();
    };
    let mut scopes: Vec<String> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    for item in items {
        let Some(scope) = item.as_str().filter(|s| !s.is_empty()) else {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_SCOPE,
                    format!(
                        "the scopes of {what} must be non-empty strings, found {}",
                        if item.as_str().is_some() {
                            "an empty string"
                        } else {
                            item.kind()
                        }
                    ),
                )
                .at(item.span, "not a scope")
                .help("write each scope as the authorization server names it, e.g. `scopes: [tickets:write]`"),
            );
            continue;
        };
        if let Some(bad) = scope.chars().find(|c| !scope_char(*c)) {
            let shown = match bad {
                ' ' => "a space".to_owned(),
                '"' => "a `\"`".to_owned(),
                '\\' => "a `\\`".to_owned(),
                c if c.is_control() => format!("a control character (U+{:04X})", c as u32),
                c => format!("`{c}`, which is not ASCII"),
            };
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_SCOPE,
                    format!("`{scope}` is not an OAuth scope: it holds {shown}"),
                )
                .at(item.span, "not a scope token")
                .help(if bad == ' ' {
                    "a scope is one word (printable ASCII without space, `\"` or `\\`); list several scopes as separate entries, e.g. `[tickets:read, tickets:write]`"
                } else {
                    "a scope is printable ASCII without space, `\"` or `\\` (RFC 6749 §3.3)"
                }),
            );
            continue;
        }
        if let Some(first) = scopes.iter().position(|s| s == scope) {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_SCOPE,
                    format!("{what} names the scope `{scope}` twice"),
                )
                .at(item.span, "named again here")
                .also(spans[first], "first named here")
                .help("remove one of them: a token either carries a scope or not"),
            );
            continue;
        }
        scopes.push(scope.to_owned());
        spans.push(item.span);
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_and_the_check_agree() {
        let schema = serde_json::json!({ "type": "string", "pattern": SCOPE_PATTERN });
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        for scope in [
            "tickets:write",
            "openid",
            "https://api.example.com/read",
            "a!#[]~",
            "x",
        ] {
            assert!(scope.chars().all(scope_char), "{scope}");
            assert!(validator.is_valid(&serde_json::json!(scope)), "{scope}");
        }
        for scope in [
            "two words",
            "say\"hi\"",
            "back\\slash",
            "café",
            "tab\there",
            "",
        ] {
            assert!(
                scope.is_empty() || !scope.chars().all(scope_char),
                "{scope}"
            );
            assert!(!validator.is_valid(&serde_json::json!(scope)), "{scope}");
        }
    }
}
