//! The schema → Rust mapping on the shapes at its edges (the same fixture is compiled under
//! `#![deny(warnings)]` in `runtime/tests/generated.rs`), and the typed-subset boundaries.

use toolc::emit::rust::{generate, server_trait_for, RustOptions};
use toolc::Session;

fn rust_with(yaml: &str, options: &RustOptions) -> String {
    let mut session = Session::new();
    session.add_manifest("t.tools.yaml", yaml.as_bytes());
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{}", session.render(false)));
    generate(&ir, options)
}

fn rust(yaml: &str) -> String {
    rust_with(yaml, &RustOptions::default())
}

fn edge() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../runtime/tests/fixtures/edge.tools.yaml"
    );
    // As the Builder names it for `edge.tools.yaml`.
    let options = RustOptions {
        server_trait: server_trait_for("edge"),
        ..RustOptions::default()
    };
    rust_with(&std::fs::read_to_string(path).unwrap(), &options)
}

/// The generated text with prettyplease's line breaks inside attributes and types collapsed.
fn flat(code: &str) -> String {
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn property_names_that_are_not_identifiers_keep_their_wire_names() {
    let code = flat(&edge());
    assert!(
        code.contains("pub r#type: ::std::string::String,"),
        "keyword → raw identifier"
    );
    assert!(code.contains(r#"#[serde( rename = "self","#), "{code}");
    assert!(code.contains("pub self_: ::std::option::Option<i64>"));
    assert!(code.contains("pub foo_bar: ::std::option::Option<bool>"));
    assert!(code.contains(r#"#[serde( rename = "foo-bar","#));
    assert!(code.contains("pub foo_bar_2: ::std::option::Option<bool>"));
    assert!(code.contains(r#"#[serde( rename = "fooBar","#));
    assert!(code.contains("pub foo_bar_3: ::std::option::Option<bool>"));
    assert!(code.contains(r#"rename = "2fa""#) && code.contains("pub f_2fa:"));
}

#[test]
fn type_names_never_collide() {
    let code = flat(&edge());
    // The trait takes `EdgeServer`; the tool `edge_server`'s marker moves aside.
    assert!(code.contains("pub trait EdgeServer:"));
    assert!(code.contains("pub struct EdgeServer2;"));
    // `edge_server_args` would be `EdgeServerArgs`, the first tool's args type.
    assert!(code.contains("pub struct EdgeServerArgs2;"));
    assert!(code.contains("pub struct EdgeServerArgsArgs {}"));
    // Two `$defs` named `Node` (parameters and returns) become two types.
    assert!(
        code.contains("pub struct EdgeServerNode {")
            && code.contains("pub struct EdgeServerNode2 {")
    );
    for name in [
        "EdgeServer",
        "EdgeServerArgs",
        "EdgeServerNode",
        "EdgeServerArgsMode",
    ] {
        let defs = [
            format!("pub struct {name} "),
            format!("pub struct {name};"),
            format!("pub enum {name} "),
            format!("pub type {name} "),
            format!("pub trait {name}:"),
        ];
        let count: usize = defs.iter().map(|d| code.matches(d.as_str()).count()).sum();
        assert_eq!(count, 1, "{name} defined {count} times");
    }
}

#[test]
fn enums_defaults_and_nullable_forms() {
    let code = flat(&edge());
    assert!(code.contains(r#"#[serde(rename = "a-b")] AB,"#), "{code}");
    assert!(code.contains(r#"#[serde(rename = "a_b")] AB2,"#));
    assert!(code.contains(r#"#[serde(rename = "Self")] Self_,"#));
    assert!(code.contains(r#"#[serde(rename = "1")] V1,"#));
    assert!(code.contains(r#"#[serde(rename = "")] Unnamed,"#));
    assert!(
        code.contains("EdgeServerArgsMode::AB2"),
        "the default names the variant"
    );
    assert!(code.contains("0.5f64") && code.contains(r#"::std::string::String::from("none")"#));
    assert!(
        code.contains("pub maybe: ::std::option::Option<::std::string::String>"),
        "anyOf with null"
    );
    assert!(
        code.contains("pub maybe_enum: ::std::option::Option<EdgeServerArgsMaybeEnum>"),
        "no Option<Option<_>>"
    );
}

#[test]
fn recursion_is_boxed_only_where_it_is_held_directly() {
    let code = flat(&edge());
    assert!(code.contains("pub tree: ::std::option::Option<::std::boxed::Box<EdgeServerNode>>"));
    assert!(code.contains("pub next: ::std::option::Option<::std::boxed::Box<EdgeServerNode>>"));
    assert!(code.contains("pub children: ::std::option::Option<::std::vec::Vec<EdgeServerNode>>"));
}

#[test]
fn what_is_outside_the_typed_subset_is_a_documented_value() {
    let code = flat(&edge());
    for field in ["mixed", "free", "either"] {
        assert!(
            code.contains(&format!(
                "pub {field}: ::std::option::Option<::toolc_runtime::__private::serde_json::Value>"
            )),
            "{field}"
        );
    }
    assert!(
        code.contains("Untyped (`serde_json::Value`): outside the typed subset (`anyOf`/`oneOf`)")
    );
    // Values of one typed schema under any key: a typed map, as TypeScript's index signature.
    assert!(code.contains(
        "pub bag: ::std::option::Option< ::std::collections::BTreeMap<::std::string::String, i64>, >"
    ), "{code}");
    assert!(code.contains("pub grid: ::std::option::Option<::std::vec::Vec<::std::vec::Vec<i64>>>"));
}

#[test]
fn client_tools_are_not_in_the_server_trait() {
    let code = rust(
        r#"
version: 1
tools:
  - name: lookup
    description: Look up.
    location: server
  - name: highlight
    description: Highlight.
    location: client
"#,
    );
    let trait_body = &code[code.find("pub trait ToolServer").unwrap()..];
    let trait_body = &trait_body[..trait_body.find("\n}\n").unwrap()];
    assert!(trait_body.contains("fn lookup("));
    assert!(!trait_body.contains("fn highlight("));
    assert!(
        code.contains("pub struct HighlightArgs {}"),
        "client tools still get types"
    );
    assert!(code.contains(".executor(\n            \"lookup\","));
    assert!(
        !code.contains("\"highlight\",\n            ::toolc_runtime::__private::typed_executor")
    );
    assert!(code.contains("#[diagnostic::on_unimplemented("));
}

#[test]
fn a_manifest_without_server_tools_still_has_a_registry_function() {
    let code = rust(
        r#"
version: 1
tools:
  - name: highlight
    description: Highlight.
    location: client
"#,
    );
    assert!(code
        .contains("pub trait ToolServer: ::std::marker::Send + ::std::marker::Sync + 'static {}"));
    assert!(code.contains("let _ = server;"), "no unused Arc");
}

/// `additionalProperties` with one schema is a typed map, like TypeScript's index signature.
#[test]
fn an_object_of_any_keys_with_typed_values_is_a_btreemap() {
    let code = flat(&rust(
        r#"version: 1
tools:
  - name: tag
    description: Tag.
    location: server
    parameters:
      type: object
      properties:
        labels: { type: object, additionalProperties: { type: string } }
        counts: { type: object, additionalProperties: { type: integer, minimum: 0 } }
        owners:
          type: object
          additionalProperties:
            type: object
            properties: { name: { type: string } }
            required: [name]
        loose: { type: object }
      required: [labels]
"#,
    ));
    // Line breaks and spaces are prettyplease's; the types are what count.
    let bare: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    for field in [
        "publabels:::std::collections::BTreeMap<::std::string::String,::std::string::String,>",
        "pubcounts:::std::option::Option<::std::collections::BTreeMap<::std::string::String,i64>,>",
        "pubowners:::std::option::Option<::std::collections::BTreeMap<::std::string::String,TagArgsOwnersValue>,>",
        "pubstructTagArgsOwnersValue{pubname:::std::string::String,}",
        // No schema for the values: still the JSON map.
        "publoose:::std::option::Option<::toolc_runtime::__private::serde_json::Map<",
    ] {
        assert!(bare.contains(field), "{field} in {code}");
    }
}

/// An `anyOf` that only says which declared properties must be present keeps the object typed.
#[test]
fn an_any_of_of_required_lists_keeps_the_object_typed() {
    let code = flat(&rust(
        r#"version: 1
tools:
  - name: contact
    description: Contact by email or phone.
    location: server
    parameters:
      type: object
      properties:
        email: { type: string }
        phone: { type: string }
        text: { type: string }
      required: [text]
      anyOf:
        - required: [email]
        - required: [phone]
      additionalProperties: false
"#,
    ));
    assert!(code.contains("pub struct ContactArgs"), "{code}");
    assert!(code.contains("pub text: ::std::string::String"), "{code}");
    assert!(
        code.contains("pub email: ::std::option::Option<::std::string::String>"),
        "{code}"
    );
    // A branch that constrains more than presence stays untyped.
    let code = flat(&rust(
        r#"version: 1
tools:
  - name: contact
    description: Contact.
    location: server
    parameters:
      type: object
      properties:
        email: { type: string }
      anyOf:
        - required: [email]
        - properties: { email: { maxLength: 3 } }
"#,
    ));
    assert!(!code.contains("pub struct ContactArgs"), "{code}");
    assert!(
        code.contains("pub type ContactArgs = ::toolc_runtime::__private::serde_json::Value"),
        "{code}"
    );
}
