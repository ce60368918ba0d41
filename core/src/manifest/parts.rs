//! The loader's fast path for large manifests: the `tools:` list cut into runs of whole tools,
//! each parsed and checked on its own thread. Only the parsing is its own: the root goes through
//! the loader's one `check_root` and the tools through its one `load_tools`. Its contract: the
//! same tools, diagnostics and spans as parsing the file whole (`super::load_file_whole`), or
//! `None` so that the caller does exactly that; the loader's tests compare the two.

use super::*;

/// Files from this size on are parsed in parts, on all cores ([`load_file_in_parts`]).
pub(super) const PARALLEL_PARSE_BYTES: usize = 64 << 10;

/// The fast path of [`load_file`] for large manifests of the usual shape (`version`, then a
/// `tools:` list to the end of the file): the list is cut into runs of whole tools at item lines,
/// and each thread parses its run and checks its tools at once, so that YAML parsing is no longer
/// one long serial step. Returns `None`, having reported nothing, whenever the result could differ
/// from parsing the file whole (a part or the root has any problem, the limits are near): the
/// caller then does exactly that. Otherwise the tools, diagnostics and spans are the same.
pub(super) fn load_file_in_parts(
    sources: &SourceMap,
    file: FileId,
    limits: Limits,
    min_bytes: usize,
    diags: &mut Diagnostics,
) -> Option<Vec<IrTool>> {
    let source = sources.get(file);
    let text = source.text.as_str();
    let threads = crate::parallel::cores().clamp(2, 8);
    if text.len() < min_bytes || text.len() > limits.max_file_bytes {
        return None;
    }
    let items = yaml::split_sequence(text, "tools")?;
    let first = *items.first()?;
    // The root: everything before the first tool, where `tools:` has no value yet. It goes
    // through the same checks as a whole file's root; any finding, or anything after `tools:`,
    // sends the file to be parsed whole, which reports it.
    let mut root_errors = Vec::new();
    let root = yaml::parse(file, &text[..first], limits, &mut root_errors)?;
    let mut root_diags = Diagnostics::default();
    let settings = check_root(&root, file, &mut root_diags)?;
    let last_key = root
        .as_map()?
        .last()
        .and_then(|(k, v)| Some((k.as_str()?, &v.value)));
    if !root_errors.is_empty()
        || !root_diags.is_empty()
        || last_key != Some(("tools", &Value::Null))
    {
        return None;
    }
    // Runs of whole tools of about equal size in bytes, a few per thread for balance.
    let runs = (threads * 4).min(items.len());
    let per_run = text.len().div_ceil(runs);
    let mut bounds: Vec<(usize, usize)> = Vec::with_capacity(runs);
    let mut start = first;
    for &at in &items[1..] {
        if at - start >= per_run {
            bounds.push((start, at));
            start = at;
        }
    }
    bounds.push((start, text.len()));
    // A part's root is the list itself, one level up from where it is in the file.
    let part_limits = Limits {
        max_depth: limits.max_depth.checked_sub(1)?,
        ..limits
    };
    let file_name = source.name.clone();
    let parts = crate::parallel::each_index(
        bounds.len(),
        threads,
        || (),
        |_, i, queue| {
            let range = bounds[i];
            // The item lines start with the list's indentation; the next part's first token is
            // its `-`.
            let following = bounds
                .get(i + 1)
                .map(|&(s, _)| s + text[s..].len() - text[s..].trim_start_matches(' ').len());
            let part =
                yaml::parse_part(file, text, range, following, part_limits).and_then(|node| {
                    let count = node.count();
                    let Value::Seq(nodes) = node.value else {
                        return None;
                    };
                    let mut part_diags = Diagnostics::default();
                    let tools = load_tools(sources, &file_name, nodes, &settings, &mut part_diags);
                    Some((tools, part_diags, count))
                });
            if part.is_none() {
                // The whole file will be parsed again: stop everyone early.
                queue.stop();
            }
            part
        },
    );
    if parts.len() != bounds.len() {
        return None;
    }
    let mut nodes = root.count();
    let mut tools = Vec::with_capacity(items.len());
    let mut tool_diags = Diagnostics::default();
    for (_, part) in parts {
        let (part_tools, part_diags, count) = part?;
        nodes += count;
        tools.extend(part_tools);
        tool_diags.extend(part_diags);
    }
    // Counted a little differently from the whole file (one list per part): stay clear of the
    // limit rather than decide on its edge.
    if nodes + 2 * bounds.len() >= limits.max_nodes {
        return None;
    }
    diags.extend(tool_diags);
    Some(tools)
}

/// Below this many tools a manifest is checked on one thread: spawning costs more than it saves.
pub(super) const PARALLEL_THRESHOLD: usize = 64;
