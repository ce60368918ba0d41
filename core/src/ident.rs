//! Rust and TypeScript identifiers derived from tool and property names.

/// Words of a name: split at `_`, `-`, other non-alphanumerics and lower→upper case changes.
fn words(name: &str) -> impl Iterator<Item = &str> {
    // Byte ranges of the words: runs of alphanumerics, also split where an uppercase letter
    // follows a lowercase letter or digit. Identifier conversion runs for every name and
    // property of every tool, so no word is copied.
    let mut chars = name.char_indices().peekable();
    let mut prev_lower = false;
    std::iter::from_fn(move || {
        let mut start = None;
        while let Some(&(i, c)) = chars.peek() {
            if !c.is_alphanumeric() {
                prev_lower = false;
                chars.next();
                if let Some(start) = start {
                    return Some(&name[start..i]);
                }
                continue;
            }
            if c.is_uppercase() && prev_lower {
                if let Some(start) = start {
                    prev_lower = false;
                    return Some(&name[start..i]);
                }
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            start.get_or_insert(i);
            chars.next();
        }
        start.map(|start| &name[start..])
    })
}

/// `search_docs` → `SearchDocs`; a leading digit gets an underscore.
pub fn pascal_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for word in words(name) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
        }
        let rest = chars.as_str();
        if rest.is_ascii() {
            out.extend(rest.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&rest.to_lowercase());
        }
    }
    if out.is_empty() {
        out.push_str("Unnamed");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// `searchDocs` / `search-docs` → `search_docs`.
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, word) in words(name).enumerate() {
        if i > 0 {
            out.push('_');
        }
        if word.is_ascii() {
            out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
    if out.is_empty() {
        out.push_str("unnamed");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// `SCREAMING_SNAKE` for constants.
pub fn screaming_snake_case(name: &str) -> String {
    snake_case(name).to_uppercase()
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Whether `ident` must be written `r#ident` (or cannot be used at all) in Rust.
pub fn is_rust_keyword(ident: &str) -> bool {
    RUST_KEYWORDS.contains(&ident)
}

/// A Rust field or method name for `name`: snake case, raw where it is a keyword, `_` suffixed
/// for the few keywords that cannot be raw.
pub fn rust_field(name: &str) -> String {
    let snake = snake_case(name);
    match snake.as_str() {
        "self" | "super" | "crate" | "Self" => format!("{snake}_"),
        s if is_rust_keyword(s) => format!("r#{snake}"),
        _ => snake,
    }
}

/// Whether `name` can be written as a bare TypeScript property name.
pub fn is_ts_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(pascal_case("search_docs"), "SearchDocs");
        assert_eq!(pascal_case("get-user"), "GetUser");
        assert_eq!(pascal_case("getUser"), "GetUser");
        assert_eq!(pascal_case("HTTPRequest"), "Httprequest");
        assert_eq!(snake_case("getUser"), "get_user");
        assert_eq!(snake_case("search-docs"), "search_docs");
        assert_eq!(rust_field("type"), "r#type");
        assert_eq!(rust_field("self"), "self_");
        assert_eq!(screaming_snake_case("search-docs"), "SEARCH_DOCS");
        assert_eq!(pascal_case("ΣΑΣ_2nd"), "Σας2nd");
        assert_eq!(snake_case("--"), "unnamed");
        assert_eq!(snake_case("1aB"), "_1a_b");
    }

    /// The conversions as first written, word by word with a `String` per word: the reference
    /// that the allocation-free versions above must agree with.
    mod reference {
        fn words(name: &str) -> Vec<String> {
            let mut words = Vec::new();
            let mut current = String::new();
            let mut prev_lower = false;
            for c in name.chars() {
                if !c.is_alphanumeric() {
                    if !current.is_empty() {
                        words.push(std::mem::take(&mut current));
                    }
                    prev_lower = false;
                    continue;
                }
                if c.is_uppercase() && prev_lower && !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                prev_lower = c.is_lowercase() || c.is_ascii_digit();
                current.push(c);
            }
            if !current.is_empty() {
                words.push(current);
            }
            words
        }

        fn fix(mut out: String, empty: &str) -> String {
            if out.is_empty() {
                out.push_str(empty);
            }
            if out.starts_with(|c: char| c.is_ascii_digit()) {
                out.insert(0, '_');
            }
            out
        }

        pub fn pascal_case(name: &str) -> String {
            let out = words(name)
                .iter()
                .map(|w| {
                    let mut chars = w.chars();
                    let first = chars
                        .next()
                        .map(|c| c.to_uppercase().collect::<String>())
                        .unwrap_or_default();
                    first + &chars.as_str().to_lowercase()
                })
                .collect();
            fix(out, "Unnamed")
        }

        pub fn snake_case(name: &str) -> String {
            let out = words(name)
                .iter()
                .map(|w| w.to_lowercase())
                .collect::<Vec<_>>()
                .join("_");
            fix(out, "unnamed")
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn conversions_agree_with_the_reference(
            name in "([a-zA-Z0-9_ .:-]|[ÀÉßσΣςİﬁ٣ǅ]){0,24}"
        ) {
            proptest::prop_assert_eq!(pascal_case(&name), reference::pascal_case(&name));
            proptest::prop_assert_eq!(snake_case(&name), reference::snake_case(&name));
        }
    }
}
