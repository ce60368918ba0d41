//! Properties of the marker scanner over random texts, markers and splits.

use proptest::prelude::*;
use serde_json::Value;
use toolc_runtime::markers::{MarkerCall, MarkerEvent, MarkerScanner, MarkerTag, ScanEvent};

const TAG: &str = "APIPILOT_CALL";

fn scanner() -> MarkerScanner {
    MarkerScanner::new(MarkerTag::new(TAG).unwrap())
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Call { name: String, arguments: String },
}

/// Text made of fragments chosen to stress the scanner: partial openings, closings, braces,
/// quotes, multi-byte characters, and ordinary words.
fn text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("<".to_owned()),
        Just("<<".to_owned()),
        Just("<<<".to_owned()),
        Just("<<<<".to_owned()),
        Just("<<<APIP".to_owned()),
        Just("<<<APIPILOT_CALL".to_owned()),
        Just("<<<APIPILOT_CALL:NAM".to_owned()),
        Just("<<<OTHER:NAME=x,ARGUMENTS={}>>>".to_owned()),
        Just(">>>".to_owned()),
        Just(">".to_owned()),
        Just("{\"".to_owned()),
        Just("}".to_owned()),
        Just("\\".to_owned()),
        Just("\u{e9}".to_owned()),
        Just("\u{1F600}".to_owned()),
        Just("\u{4E2D}\u{6587}".to_owned()),
        "[a-zA-Z ,.!?\n]{1,12}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(fragment, 0..8).prop_map(|v| v.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let string = prop_oneof![
        Just(">>>".to_owned()),
        Just("}>>>{".to_owned()),
        Just("\"quoted\" \\ back".to_owned()),
        Just("<<<APIPILOT_CALL:NAME=x,ARGUMENTS={}>>>".to_owned()),
        ".{0,10}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        string.prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            object_of(inner),
        ]
    })
}

fn object_of(inner: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop::collection::vec(("[a-z>{}\" ]{0,6}", inner), 0..4)
        .prop_map(|fields| Value::Object(fields.into_iter().collect()))
}

fn call() -> impl Strategy<Value = Piece> {
    (
        "[A-Za-z_][A-Za-z0-9_-]{0,20}",
        object_of(json_value()),
        any::<bool>(),
    )
        .prop_map(|(name, args, pretty)| {
            let arguments = if pretty {
                serde_json::to_string_pretty(&args)
            } else {
                serde_json::to_string(&args)
            }
            .unwrap();
            Piece::Call { name, arguments }
        })
}

/// Pieces whose text runs never contain a whole opening: such text would be a marker.
fn pieces() -> impl Strategy<Value = Vec<Piece>> {
    let opening = format!("<<<{TAG}:NAME=");
    prop::collection::vec(
        prop_oneof![3 => text().prop_map(Piece::Text), 1 => call()],
        0..12,
    )
    .prop_filter("text runs must not contain an opening", move |pieces| {
        let mut run = String::new();
        for p in pieces {
            match p {
                Piece::Text(t) => run.push_str(t),
                Piece::Call { .. } => {
                    if run.contains(&opening) {
                        return false;
                    }
                    run.clear();
                }
            }
        }
        !run.contains(&opening)
    })
}

fn render(pieces: &[Piece], tag: &MarkerTag) -> (String, String, Vec<MarkerCall>) {
    let mut input = String::new();
    let mut visible = String::new();
    let mut calls = Vec::new();
    for p in pieces {
        match p {
            Piece::Text(t) => {
                input.push_str(t);
                visible.push_str(t);
            }
            Piece::Call { name, arguments } => {
                input.push_str(&tag.render_call(name, arguments));
                calls.push(MarkerCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
            }
        }
    }
    (input, visible, calls)
}

/// Cuts `len` bytes at the given fractions, sorted; cuts may fall inside characters.
fn cut_points(len: usize, fractions: &[f64]) -> Vec<usize> {
    let mut cuts: Vec<usize> = fractions
        .iter()
        .map(|f| ((len as f64) * f) as usize)
        .collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts
}

struct Output {
    visible: String,
    calls: Vec<MarkerCall>,
    errors: Vec<String>,
    /// Text between two non-text events, to check that no opening is ever shown.
    runs: Vec<String>,
}

fn collect(events: impl IntoIterator<Item = ScanEvent>) -> Output {
    let mut out = Output {
        visible: String::new(),
        calls: Vec::new(),
        errors: Vec::new(),
        runs: vec![String::new()],
    };
    for e in events {
        match e {
            ScanEvent::Text(t) => {
                out.visible.push_str(&t);
                if let Some(run) = out.runs.last_mut() {
                    run.push_str(&t);
                }
            }
            ScanEvent::Call(c) => {
                out.calls.push(c);
                out.runs.push(String::new());
            }
            ScanEvent::Error(e) => {
                out.errors.push(e.to_string());
                out.runs.push(String::new());
            }
        }
    }
    out
}

fn scan_bytes(s: &mut MarkerScanner, input: &[u8], cuts: &[usize]) -> Output {
    let mut events = Vec::new();
    for w in cuts.windows(2) {
        events.extend(s.push(&input[w[0]..w[1]]));
    }
    events.extend(s.finish_events());
    collect(events)
}

fn scan_str(s: &mut MarkerScanner, input: &str, cuts: &[usize]) -> Output {
    let mut events = Vec::new();
    let mut from = 0;
    for &cut in cuts {
        let mut at = cut.max(from);
        while !input.is_char_boundary(at) {
            at += 1;
        }
        events.extend(s.push_str(&input[from..at]));
        from = at;
    }
    events.extend(s.push_str(&input[from..]));
    events.extend(s.finish_events());
    collect(events)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn visible_text_is_the_text_without_markers_and_calls_are_the_markers(
        pieces in pieces(),
        fractions in prop::collection::vec(0.0f64..1.0, 0..16),
    ) {
        let tag = MarkerTag::new(TAG).unwrap();
        let (input, visible, calls) = render(&pieces, &tag);
        let cuts = cut_points(input.len(), &fractions);
        let mut s = scanner();

        let out = scan_bytes(&mut s, input.as_bytes(), &cuts);
        prop_assert_eq!(&out.errors, &Vec::<String>::new());
        prop_assert_eq!(&out.visible, &visible);
        prop_assert_eq!(&out.calls, &calls);

        let out = scan_str(&mut s, &input, &cuts);
        prop_assert_eq!(&out.errors, &Vec::<String>::new());
        prop_assert_eq!(&out.visible, &visible);
        prop_assert_eq!(&out.calls, &calls);

        for call in &out.calls {
            prop_assert!(call.parse_arguments().unwrap().is_object());
        }
    }

    #[test]
    fn one_byte_at_a_time_gives_the_same_result(pieces in pieces()) {
        let tag = MarkerTag::new(TAG).unwrap();
        let (input, visible, calls) = render(&pieces, &tag);
        let cuts: Vec<usize> = (0..=input.len()).collect();
        let out = scan_bytes(&mut scanner(), input.as_bytes(), &cuts);
        prop_assert!(out.errors.is_empty());
        prop_assert_eq!(out.visible, visible);
        prop_assert_eq!(out.calls, calls);
    }

    /// Arbitrary bytes, biased towards marker syntax: never a panic, the same result however
    /// the input is split, and no opening ever shown between two events.
    #[test]
    fn random_bytes_never_panic_and_splits_do_not_matter(
        parts in prop::collection::vec(prop_oneof![
            Just(b"<<<APIPILOT_CALL:NAME=".to_vec()),
            Just(b"t,ARGUMENTS=".to_vec()),
            Just(b">>>".to_vec()),
            Just(b"{".to_vec()),
            Just(b"}".to_vec()),
            Just(b"\"".to_vec()),
            Just(b"\\".to_vec()),
            Just(b"<".to_vec()),
            Just("\u{1F600}".as_bytes().to_vec()),
            prop::collection::vec(any::<u8>(), 0..8),
        ], 0..40),
        fractions in prop::collection::vec(0.0f64..1.0, 0..16),
        limit in 0usize..200,
    ) {
        let input = parts.concat();
        let mut s = scanner().with_max_marker_len(limit);
        let whole = scan_bytes(&mut s, &input, &[0, input.len()]);
        let split = scan_bytes(&mut s, &input, &cut_points(input.len(), &fractions));
        prop_assert_eq!(&split.visible, &whole.visible);
        prop_assert_eq!(&split.calls, &whole.calls);
        prop_assert_eq!(&split.errors, &whole.errors);
        let opening = format!("<<<{TAG}:NAME=");
        for run in &whole.runs {
            prop_assert!(!run.contains(&opening), "an opening was shown: {:?}", run);
        }
        for call in &whole.calls {
            prop_assert!(call.parse_arguments().is_ok());
        }
    }
}

proptest! {
    /// Without `<` there is nothing to hold: the output is the lossy decoding of the input,
    /// whatever the splits.
    #[test]
    fn text_without_angle_brackets_is_decoded_like_from_utf8_lossy(
        parts in prop::collection::vec(prop_oneof![
            Just("\u{1F600}".as_bytes().to_vec()),
            Just("\u{e9}".as_bytes().to_vec()),
            prop::collection::vec(any::<u8>(), 0..8),
        ], 0..40),
        fractions in prop::collection::vec(0.0f64..1.0, 0..16),
    ) {
        let input: Vec<u8> = parts.concat().into_iter().filter(|&b| b != b'<').collect();
        let out = scan_bytes(&mut scanner(), &input, &cut_points(input.len(), &fractions));
        prop_assert_eq!(out.visible, String::from_utf8_lossy(&input).into_owned());
        prop_assert!(out.calls.is_empty() && out.errors.is_empty());
    }
}

#[test]
fn the_borrowed_and_collecting_apis_agree() {
    let input = "a<<<APIPILOT_CALL:NAME=t,ARGUMENTS={\"k\":\">>>\"}>>>b<<";
    let mut borrowed = Vec::new();
    let mut s = scanner();
    let mut sink = |e: MarkerEvent<'_>| borrowed.push(e.into_owned());
    s.feed(input.as_bytes(), &mut sink);
    s.finish(&mut sink);
    let out = collect(borrowed);
    assert_eq!(out.visible, "ab<<");
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].arguments, "{\"k\":\">>>\"}");
}
