//! The manifest's `mcp` settings: how long an MCP client may keep the tool list
//! (`mcp: { list_ttl: 5m }`, MCP 2026-07-28's `ttlMs` on `tools/list`).

use std::time::Duration;

use super::*;

/// The longest `list_ttl`: a client holding a list for more than a day misses every change
/// a deployment makes in between.
pub const MAX_LIST_TTL: Duration = Duration::from_secs(24 * 3600);

/// The fields of the root's `mcp` mapping.
pub const MCP_FIELDS: &[&str] = &["list_ttl"];

/// Reads the root's `mcp` mapping: the list's time to live and where it is written.
pub(super) fn parse_mcp(root: &Node, diags: &mut Diagnostics) -> Option<(Duration, Span)> {
    let (_, node) = root.get("mcp")?;
    let Some(entries) = node.as_map() else {
        diags.push(type_error(
            "mcp",
            "a mapping such as `{ list_ttl: 5m }`",
            node,
        ));
        return None;
    };
    check_fields(entries, MCP_FIELDS, "`mcp`", diags);
    let (_, ttl) = node.get("list_ttl")?;
    let parsed = ttl
        .as_str()
        .ok_or_else(|| format!("found {}", ttl.kind()))
        .and_then(parse_duration)
        .and_then(|d| {
            if d > MAX_LIST_TTL {
                Err("it is more than 24h".to_owned())
            } else {
                Ok(d)
            }
        });
    match parsed {
        Ok(d) => Some((d, ttl.span)),
        Err(why) => {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_TIMEOUT,
                    format!("`mcp.list_ttl` is not a duration from 0s to 24h: {why}"),
                )
                .at(ttl.span, "not a time to live")
                .help(format!(
                    "write {TIMEOUT_GRAMMAR}, e.g. `list_ttl: 10m`; `0s` makes clients list the tools every time"
                )),
            );
            None
        }
    }
}
