//! Unit tests of the `#[tool]` signature reader: type classes, doc comments, attributes, errors.

use super::*;

fn ty(text: &str) -> RustType {
    RustType::classify(&syn::parse_str(text).unwrap())
}

#[test]
fn classifies_primitive_types() {
    assert_eq!(ty("String"), RustType::String);
    assert_eq!(ty("&'a str"), RustType::String);
    assert_eq!(ty("std::string::String"), RustType::String);
    assert_eq!(ty("bool"), RustType::Boolean);
    assert_eq!(ty("f32"), RustType::Number);
    assert!(matches!(
        ty("u8"),
        RustType::Integer {
            min: 0,
            max: 255,
            ..
        }
    ));
    assert_eq!(ty("Vec<i64>"), RustType::Array(Box::new(ty("i64"))));
    assert_eq!(ty("&[String]"), RustType::Array(Box::new(RustType::String)));
    assert_eq!(
        ty("Option<bool>"),
        RustType::Optional(Box::new(RustType::Boolean))
    );
    assert_eq!(ty("serde_json::Value"), RustType::Json);
    assert_eq!(ty("::serde_json::Value"), RustType::Json);
    assert_eq!(ty("Value"), RustType::Other);
    assert_eq!(ty("MyStruct"), RustType::Other);
    assert_eq!(
        ty("Vec<MyStruct>"),
        RustType::Array(Box::new(RustType::Other))
    );
    assert_eq!(ty("()"), RustType::Unit);
}

#[test]
fn static_schemas() {
    assert_eq!(
        ty("u8").schema().unwrap(),
        json!({"type": "integer", "minimum": 0, "maximum": 255})
    );
    assert_eq!(
        ty("u64").schema().unwrap(),
        json!({"type": "integer", "minimum": 0})
    );
    assert_eq!(ty("i64").schema().unwrap(), json!({"type": "integer"}));
    assert_eq!(
        ty("Vec<Option<String>>").schema().unwrap(),
        json!({"type": "array", "items": {"type": ["string", "null"]}})
    );
    assert_eq!(ty("Vec<Thing>").schema(), None);
    assert!(!ty("Option<Thing>").is_static());
}

#[test]
fn owned_types() {
    let owned =
        |t: &str| owned_type(&syn::parse_str(t).unwrap()).map(|t| quote::quote!(#t).to_string());
    assert_eq!(owned("&str").as_deref(), Some(":: std :: string :: String"));
    assert_eq!(
        owned("&[u8]").as_deref(),
        Some(":: std :: vec :: Vec < u8 >")
    );
    assert_eq!(owned("String"), None);
}

#[test]
fn success_types() {
    let t: syn::Type = syn::parse_str("Result<Out, ToolError>").unwrap();
    let (ok, is_result) = success_type(&t);
    assert!(is_result);
    assert_eq!(quote::quote!(#ok).to_string(), "Out");
    let t: syn::Type = syn::parse_str("Out").unwrap();
    assert!(!success_type(&t).1);
}

#[test]
fn doc_comments() {
    let lines: Vec<String> = [
        " Search the docs.",
        " Returns the best passages.",
        "",
        " Second paragraph.",
        "",
        " # Arguments",
        "",
        " * `query` - What to look for.",
        " * `limit` - How many,",
        "   at most.",
        " - r#type: The kind.",
        "",
        " # Errors",
        " When the index is down.",
    ]
    .map(String::from)
    .to_vec();
    let doc = parse_doc(&lines);
    assert_eq!(
        doc.description,
        "Search the docs. Returns the best passages.\n\nSecond paragraph."
    );
    assert_eq!(
        doc.arguments,
        vec![
            ("query".into(), "What to look for.".into()),
            ("limit".into(), "How many, at most.".into()),
            ("type".into(), "The kind.".into()),
        ]
    );
}

const MANIFEST: &str = r##"version: 1
tools:
  - name: search
    description: Search.
    location: server
    parameters:
      type: object
      properties:
        query: { type: string }
        limit: { type: integer, minimum: 1, maximum: 10, default: 3 }
        tags: { type: array, items: { type: string } }
        after: { type: [string, "null"] }
        kind: { $ref: "#/$defs/Kind" }
        score: { type: number }
      required: [query, after]
      additionalProperties: false
      $defs:
        Kind: { type: string, enum: [a, b] }
  - name: highlight
    description: Highlight.
    location: client
"##;

fn manifest() -> Manifest {
    Manifest::from_bytes("m.yaml", MANIFEST.as_bytes()).unwrap()
}

fn tool(location: Location, params: &[(&str, &str)]) -> FnTool {
    FnTool {
        name: "search".into(),
        location,
        params: params
            .iter()
            .map(|(n, t)| FnParam {
                name: (*n).into(),
                ty: ty(t),
                rust: (*t).into(),
            })
            .collect(),
        args_struct: false,
    }
}

const GOOD: &[(&str, &str)] = &[
    ("query", "String"),
    ("limit", "u8"),
    ("tags", "Option<Vec<String>>"),
    ("after", "Option<String>"),
    ("kind", "Option<String>"),
    ("score", "Option<f64>"),
];

#[test]
fn a_matching_signature_has_no_problems() {
    assert_eq!(
        check_binding(&tool(Location::Server, GOOD), &manifest()),
        vec![]
    );
}

fn with(replace: &str, by: (&str, &str)) -> Vec<(String, String)> {
    GOOD.iter()
        .map(|&(n, t)| if n == replace { by } else { (n, t) })
        .map(|(n, t)| (n.to_owned(), t.to_owned()))
        .collect()
}

fn check_in(m: &Manifest, replace: &str, by: (&str, &str)) -> Vec<Problem> {
    let params = with(replace, by);
    let params: Vec<(&str, &str)> = params
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    check_binding(&tool(Location::Server, &params), m)
}

fn check_with(replace: &str, by: (&str, &str)) -> Vec<Problem> {
    check_in(&manifest(), replace, by)
}

#[test]
fn wrong_type_points_at_the_type() {
    let p = check_with("query", ("query", "i64"));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].target, Target::ParamType(0));
    assert!(
        p[0].message.contains(
            "`query` of tool `search` has type `i64`, but m.yaml:9 says it is of type `string`"
        ),
        "{}",
        p[0].message
    );
    assert!(p[0].help.contains("use `String`"));
}

#[test]
fn integer_ranges_are_checked() {
    assert!(check_with("limit", ("limit", "u32")).is_empty());
    let p = check_with("limit", ("limit", "Option<i8>"));
    assert!(p.is_empty(), "{p:?}");
    let m = Manifest::from_bytes(
        "m",
        MANIFEST
            .replace("minimum: 1, maximum: 10", "maximum: 1000")
            .as_bytes(),
    )
    .unwrap();
    let p = check_in(&m, "limit", ("limit", "u8"));
    assert_eq!(p.len(), 1);
    assert!(p[0].message.contains("may be negative"), "{}", p[0].message);
    let p = check_in(&m, "limit", ("limit", "i8"));
    assert!(
        p[0].message.contains("above the largest `i8` (127)"),
        "{}",
        p[0].message
    );
}

#[test]
fn optional_versus_required() {
    let p = check_with("query", ("query", "Option<String>"));
    assert_eq!(p[0].target, Target::ParamType(0));
    assert!(p[0].message.contains("is required in m.yaml:9"));
    // `after` is required but nullable: it must be an Option.
    let p = check_with("after", ("after", "String"));
    assert!(p[0].message.contains("may be null"), "{}", p[0].message);
    // `score` is optional without a default.
    let p = check_with("score", ("score", "f64"));
    assert!(
        p[0].message.contains("is optional in m.yaml:14"),
        "{}",
        p[0].message
    );
    // `limit` is optional with a default: a plain type is fine.
    assert!(check_with("limit", ("limit", "u16")).is_empty());
}

#[test]
fn missing_and_extra_parameters() {
    let p = check_with("score", ("scor", "Option<f64>"));
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[0].target, Target::Param(5));
    assert!(
        p[0].help.starts_with("did you mean `score`?"),
        "{}",
        p[0].help
    );
    assert_eq!(p[1].target, Target::Params);
    assert!(
        p[1].message.contains("missing parameter `score`"),
        "{}",
        p[1].message
    );
    assert!(p[1].help.contains("`score: Option<f64>`"), "{}", p[1].help);
}

#[test]
fn a_renamed_parameter_suggests_the_untaken_property() {
    let p = check_with("query", ("text", "String"));
    assert_eq!(p[0].target, Target::Param(0));
    assert!(
        p[0].help.starts_with("did you mean `query`?"),
        "{}",
        p[0].help
    );
}

#[test]
fn refs_and_arrays_are_followed() {
    let p = check_with("kind", ("kind", "Option<i32>"));
    assert!(
        p[0].message.contains("it is of type `string`"),
        "{}",
        p[0].message
    );
    let p = check_with("tags", ("tags", "Option<Vec<bool>>"));
    assert!(
        p[0].message.contains("its items do not fit"),
        "{}",
        p[0].message
    );
    assert!(check_with("tags", ("tags", "Option<Vec<MyType>>")).is_empty());
}

#[test]
fn locations_and_names() {
    let m = manifest();
    let mut t = tool(Location::Server, &[]);
    t.name = "highlight".into();
    let p = check_binding(&t, &m);
    assert_eq!(p.len(), 1);
    assert!(
        p[0].message
            .contains("`highlight` is declared `location: client` in m.yaml:19"),
        "{}",
        p[0].message
    );
    t.location = Location::Client;
    assert!(check_binding(&t, &m).is_empty());
    let mut t = tool(Location::Client, GOOD);
    assert!(check_binding(&t, &m)[0]
        .message
        .contains("`location: server`"));
    t.name = "serch".into();
    let p = check_binding(&t, &m);
    assert!(p[0]
        .message
        .contains("not declared in the manifest `m.yaml`"));
    assert!(p[0].help.starts_with("did you mean `search`?"));
}

#[test]
fn defaults_and_server_tools() {
    let m = manifest();
    let tool = m.tool("search").unwrap();
    assert_eq!(m.defaults(tool), vec![("limit".to_owned(), "3".to_owned())]);
    assert_eq!(m.server_tools(), vec![("search", "m.yaml:3".to_owned())]);
}

#[test]
fn loads_are_cached_until_the_file_changes() {
    let dir = std::env::temp_dir().join(format!("toolc-fn-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cache.tools.yaml");
    std::fs::write(&path, MANIFEST).unwrap();
    let first = Manifest::load(&path, "cache.tools.yaml").unwrap();
    let again = Manifest::load(&path, "cache.tools.yaml").unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    std::fs::write(&path, MANIFEST.replace("Search.", "Search better.")).unwrap();
    let edited = Manifest::load(&path, "cache.tools.yaml").unwrap();
    assert!(!Arc::ptr_eq(&first, &edited));
    assert_eq!(
        edited.tool("search").unwrap().def.description,
        "Search better."
    );
    let missing = Manifest::load(&dir.join("nope.yaml"), "nope.yaml").unwrap_err();
    assert!(matches!(missing, ManifestError::Read(m) if m.contains("`nope.yaml`")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn invalid_manifests_report_every_diagnostic() {
    let err = Manifest::from_bytes("x.yaml", b"version: 2\ntools: 3\n").unwrap_err();
    let ManifestError::Invalid(text) = err else {
        panic!("expected an invalid manifest")
    };
    assert!(text.contains("x.yaml:1"), "{text}");
    assert!(text.contains("2 errors"), "{text}");
}
