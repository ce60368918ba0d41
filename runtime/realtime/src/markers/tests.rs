use super::*;

fn scanner() -> MarkerScanner {
    MarkerScanner::new(MarkerTag::new("APIPILOT_CALL").unwrap())
}

/// Feeds `chunks` as bytes and collects everything, joined text included.
fn scan_chunks(s: &mut MarkerScanner, chunks: &[&[u8]]) -> Vec<ScanEvent> {
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(s.push(chunk));
    }
    out.extend(s.finish_events());
    join_text(out)
}

fn join_text(events: Vec<ScanEvent>) -> Vec<ScanEvent> {
    let mut out: Vec<ScanEvent> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(ScanEvent::Text(prev)), ScanEvent::Text(t)) => prev.push_str(&t),
            (_, e) => out.push(e),
        }
    }
    out
}

/// Scans `input` whole, one byte at a time, and split at every position, as bytes and as str
/// where possible; asserts all agree and returns the result.
fn scan_all_ways(s: &mut MarkerScanner, input: &str) -> Vec<ScanEvent> {
    let whole = scan_chunks(s, &[input.as_bytes()]);
    let bytewise: Vec<&[u8]> = input.as_bytes().chunks(1).collect();
    assert_eq!(
        scan_chunks(s, &bytewise),
        whole,
        "byte-at-a-time differs for {input:?}"
    );
    for cut in 0..=input.len() {
        let (a, b) = input.as_bytes().split_at(cut);
        assert_eq!(
            scan_chunks(s, &[a, b]),
            whole,
            "split at {cut} differs for {input:?}"
        );
        if let (Some(a), Some(b)) = (input.get(..cut), input.get(cut..)) {
            let mut out = s.push_str(a);
            out.extend(s.push_str(b));
            out.extend(s.finish_events());
            assert_eq!(
                join_text(out),
                whole,
                "str split at {cut} differs for {input:?}"
            );
        }
    }
    whole
}

fn text(t: &str) -> ScanEvent {
    ScanEvent::Text(t.to_owned())
}

fn call(name: &str, args: &str) -> ScanEvent {
    ScanEvent::Call(MarkerCall {
        name: name.to_owned(),
        arguments: args.to_owned(),
    })
}

#[test]
fn plain_text_passes_through() {
    let mut s = scanner();
    assert_eq!(
        scan_all_ways(&mut s, "hello, world"),
        vec![text("hello, world")]
    );
    assert_eq!(scan_all_ways(&mut s, ""), vec![]);
}

#[test]
fn a_marker_in_the_middle_is_removed_and_reported() {
    let mut s = scanner();
    let input =
        r#"Let me look. <<<APIPILOT_CALL:NAME=search,ARGUMENTS={"q":"shoes","n":2}>>> Done."#;
    assert_eq!(
        scan_all_ways(&mut s, input),
        vec![
            text("Let me look. "),
            call("search", r#"{"q":"shoes","n":2}"#),
            text(" Done."),
        ]
    );
}

#[test]
fn markers_at_start_end_and_back_to_back() {
    let mut s = scanner();
    let input = concat!(
        r#"<<<APIPILOT_CALL:NAME=a,ARGUMENTS={}>>>"#,
        r#"<<<APIPILOT_CALL:NAME=b_2,ARGUMENTS={"x":[1,{"y":null}]}>>>"#,
        "mid",
        r#"<<<APIPILOT_CALL:NAME=c-3,ARGUMENTS={"z":true}>>>"#,
    );
    assert_eq!(
        scan_all_ways(&mut s, input),
        vec![
            call("a", "{}"),
            call("b_2", r#"{"x":[1,{"y":null}]}"#),
            text("mid"),
            call("c-3", r#"{"z":true}"#),
        ]
    );
}

#[test]
fn closing_brackets_inside_json_strings_do_not_end_the_marker() {
    let mut s = scanner();
    let args = r#"{"code":"a >>> b","nested":{"s":"}>>>{","e":"quote \" >>> and \\"},"t":">"}"#;
    let input = format!("x<<<APIPILOT_CALL:NAME=run,ARGUMENTS={args}>>>y");
    assert_eq!(
        scan_all_ways(&mut s, &input),
        vec![text("x"), call("run", args), text("y")]
    );
    // A `}` in a string would close the object if strings were not skipped.
    let args = r#"{"a":"}>>>","b":"\"}>>>"}"#;
    let input = format!("<<<APIPILOT_CALL:NAME=run,ARGUMENTS={args}>>>");
    assert_eq!(scan_all_ways(&mut s, &input), vec![call("run", args)]);
}

#[test]
fn nested_braces_are_tracked() {
    let mut s = scanner();
    let args = r#"{"a":{"b":{"c":{"d":[{"e":{}}]}}}}"#;
    let input = format!("<<<APIPILOT_CALL:NAME=deep,ARGUMENTS={args}>>>!");
    assert_eq!(
        scan_all_ways(&mut s, &input),
        vec![call("deep", args), text("!")]
    );
}

#[test]
fn whitespace_around_the_json_object_is_accepted() {
    let mut s = scanner();
    let input = "<<<APIPILOT_CALL:NAME=t,ARGUMENTS= {\n  \"a\": 1\n} >>>ok";
    assert_eq!(
        scan_all_ways(&mut s, input),
        vec![call("t", "{\n  \"a\": 1\n}"), text("ok")]
    );
}

#[test]
fn look_alikes_are_released_as_text() {
    let mut s = scanner();
    for input in [
        "<",
        "a < b",
        "<<",
        "<<<",
        "<<<<",
        "<<<<<<<<",
        "x << y <<< z",
        "<<<APIP",
        "<<<APIPILOT",
        "<<<APIPILOT_CALL",
        "<<<APIPILOT_CALL:",
        "<<<APIPILOT_CALL:NAME",
        "<<<OTHER:NAME=x,ARGUMENTS={}>>>",
        "<<<APIPILOT_CALX:NAME=x",
        "<<<apipilot_call:NAME=x,ARGUMENTS={}>>>",
        "<<< APIPILOT_CALL:NAME=x",
        "<<<APIPILOT_CALL:TOOL=x,ARGUMENTS={}>>>",
        "<\u{e9}<\u{1F600}<<",
    ] {
        assert_eq!(scan_all_ways(&mut s, input), vec![text(input)], "{input:?}");
    }
}

#[test]
fn extra_angle_brackets_before_a_marker_stay_visible() {
    let mut s = scanner();
    let input = "<<<<<APIPILOT_CALL:NAME=a,ARGUMENTS={}>>>>";
    assert_eq!(
        scan_all_ways(&mut s, input),
        vec![text("<<"), call("a", "{}"), text(">")]
    );
}

#[test]
fn look_alike_text_is_released_as_soon_as_it_cannot_be_a_marker() {
    let mut s = scanner();
    // Held while it may still be a marker...
    assert_eq!(s.push(b"see <<<APIP"), vec![text("see ")]);
    assert!(s.is_holding());
    // ...and released by the first byte that rules it out, before the stream ends.
    assert_eq!(s.push(b"X more"), vec![text("<<<APIPX more")]);
    assert!(!s.is_holding());
    assert_eq!(s.push(b"<<<OTHER"), vec![text("<<<OTHER")]);
    assert_eq!(s.finish_events(), vec![]);
}

#[test]
fn split_multibyte_characters_are_never_cut() {
    let mut s = scanner();
    let input = "caf\u{e9} \u{1F600} \u{4E2D}\u{6587}<<<APIPILOT_CALL:NAME=t,ARGUMENTS={\"s\":\"\u{1F600}>>>\"}>>>\u{e9}";
    assert_eq!(
        scan_all_ways(&mut s, input),
        vec![
            text("caf\u{e9} \u{1F600} \u{4E2D}\u{6587}"),
            call("t", "{\"s\":\"\u{1F600}>>>\"}"),
            text("\u{e9}"),
        ]
    );
    // Each text event is complete UTF-8 on its own: feed the emoji one byte at a time.
    let emoji = "\u{1F600}".as_bytes();
    let mut events = Vec::new();
    for b in emoji {
        events.extend(s.push(std::slice::from_ref(b)));
    }
    assert_eq!(events, vec![text("\u{1F600}")]);
    assert_eq!(s.finish_events(), vec![]);
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let mut s = scanner();
    let out = scan_chunks(&mut s, &[b"a\xffb", b"\xe2\x82", b"<x", b"\xf0\x9f", b""]);
    assert_eq!(
        out,
        vec![text("a\u{FFFD}b\u{FFFD}<x\u{FFFD}")],
        "a truncated character before `<` or at the end is replaced, not dropped"
    );
    // A bad sequence that starts in one chunk and ends in the next is one replacement, as in
    // `String::from_utf8_lossy` over the joined bytes.
    let input = b"\0\xe1\x80\0\xf0\x9f\x98";
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(
            scan_chunks(&mut s, &[a, b]),
            vec![text(&String::from_utf8_lossy(input))],
            "cut at {cut}"
        );
    }
}

#[test]
fn oversize_marker_is_reported_and_skipped_then_text_continues() {
    let mut s = scanner().with_max_marker_len(100);
    let big = "z".repeat(500);
    let input = format!(
        "before<<<APIPILOT_CALL:NAME=big,ARGUMENTS={{\"data\":\"{big}>>>\"}}>>>after<<<APIPILOT_CALL:NAME=ok,ARGUMENTS={{}}>>>"
    );
    let out = scan_chunks(&mut s, &[input.as_bytes()]);
    assert_eq!(
        out,
        vec![
            text("before"),
            ScanEvent::Error(MarkerError::TooLong {
                name: Some("big".to_owned()),
                limit: 100
            }),
            text("after"),
            call("ok", "{}"),
        ]
    );
    let bytewise: Vec<&[u8]> = input.as_bytes().chunks(1).collect();
    assert_eq!(scan_chunks(&mut s, &bytewise), out);
}

#[test]
fn memory_stays_bounded_by_the_limit() {
    let mut s = scanner().with_max_marker_len(1024);
    s.push(b"<<<APIPILOT_CALL:NAME=t,ARGUMENTS={\"a\":\"");
    let filler = vec![b'q'; 4096];
    let mut errors = 0;
    for _ in 0..256 {
        for e in s.push(&filler) {
            assert!(matches!(e, ScanEvent::Error(MarkerError::TooLong { .. })));
            errors += 1;
        }
        assert!(s.json.capacity() <= 2 * 1024, "{}", s.json.capacity());
    }
    assert_eq!(errors, 1, "one error per marker");
    // Still inside the string of the skipped marker: `>>>` here does not end it.
    assert_eq!(s.push(b">>>"), vec![]);
    assert_eq!(s.push(b"\"}>>>visible"), vec![text("visible")]);
}

#[test]
fn unterminated_marker_at_end_of_stream() {
    let mut s = scanner();
    assert_eq!(
        scan_all_ways(&mut s, r#"text <<<APIPILOT_CALL:NAME=t,ARGUMENTS={"a":1"#),
        vec![
            text("text "),
            ScanEvent::Error(MarkerError::Unterminated {
                name: Some("t".to_owned())
            })
        ]
    );
    assert_eq!(
        scan_all_ways(&mut s, "<<<APIPILOT_CALL:NAME=t"),
        vec![ScanEvent::Error(MarkerError::Unterminated { name: None })]
    );
    assert_eq!(
        scan_all_ways(&mut s, r#"<<<APIPILOT_CALL:NAME=t,ARGUMENTS={}>>"#),
        vec![ScanEvent::Error(MarkerError::Unterminated {
            name: Some("t".to_owned())
        })]
    );
}

#[test]
fn invalid_json_is_an_error_and_hidden() {
    let mut s = scanner();
    let out = scan_all_ways(
        &mut s,
        r#"a<<<APIPILOT_CALL:NAME=t,ARGUMENTS={"x":}>>>b<<<APIPILOT_CALL:NAME=u,ARGUMENTS={a}>>>c"#,
    );
    assert_eq!(out.len(), 5, "{out:?}");
    assert_eq!(out[0], text("a"));
    assert!(
        matches!(&out[1], ScanEvent::Error(MarkerError::InvalidJson { name, .. }) if name == "t")
    );
    assert_eq!(out[2], text("b"));
    assert!(
        matches!(&out[3], ScanEvent::Error(MarkerError::InvalidJson { name, .. }) if name == "u")
    );
    assert_eq!(out[4], text("c"));
}

#[test]
fn malformed_markers_are_skipped_whole() {
    let mut s = scanner();
    let cases: &[(&str, Option<&str>)] = &[
        (
            r#"<<<APIPILOT_CALL:NAME=bad name,ARGUMENTS={"q":">>>"}>>>"#,
            None,
        ),
        (r#"<<<APIPILOT_CALL:NAME=,ARGUMENTS={}>>>"#, None),
        (r#"<<<APIPILOT_CALL:NAME=9lives,ARGUMENTS={}>>>"#, None),
        (r#"<<<APIPILOT_CALL:NAME="quoted>>>"#, None),
        (r#"<<<APIPILOT_CALL:NAME=t>>>"#, None),
        (r#"<<<APIPILOT_CALL:NAME=t,ARGS={"x":"}"}>>>"#, Some("t")),
        (r#"<<<APIPILOT_CALL:NAME=t,ARGUMENTS=[1,2]>>>"#, Some("t")),
        (r#"<<<APIPILOT_CALL:NAME=t,ARGUMENTS={}}>>>"#, Some("t")),
        (r#"<<<APIPILOT_CALL:NAME=t,ARGUMENTS={} x>>>"#, Some("t")),
    ];
    for (marker, name) in cases {
        let input = format!("[{marker}]");
        let out = scan_all_ways(&mut s, &input);
        assert_eq!(out.len(), 3, "{input}: {out:?}");
        assert_eq!(out[0], text("["), "{input}");
        match &out[1] {
            ScanEvent::Error(MarkerError::Malformed { name: got, .. }) => {
                assert_eq!(got.as_deref(), *name, "{input}")
            }
            other => panic!("{input}: expected a malformed marker, got {other:?}"),
        }
        assert_eq!(out[2], text("]"), "{input}");
    }
    let long = "n".repeat(65);
    let out = scan_all_ways(
        &mut s,
        &format!("<<<APIPILOT_CALL:NAME={long},ARGUMENTS={{}}>>>"),
    );
    assert!(matches!(
        out.as_slice(),
        [ScanEvent::Error(MarkerError::Malformed { name: None, .. })]
    ));
}

#[test]
fn unknown_tools_from_a_set_or_a_filter() {
    let mut s = scanner().with_known_tools(["search", "open"]);
    let input = "<<<APIPILOT_CALL:NAME=search,ARGUMENTS={}>>><<<APIPILOT_CALL:NAME=delete_all,ARGUMENTS={}>>>";
    assert_eq!(
        scan_all_ways(&mut s, input),
        vec![
            call("search", "{}"),
            ScanEvent::Error(MarkerError::UnknownTool {
                name: "delete_all".to_owned()
            }),
        ]
    );
    let mut s = scanner().with_tool_filter(|name| name.starts_with("get_"));
    assert_eq!(
        scan_all_ways(
            &mut s,
            "<<<APIPILOT_CALL:NAME=get_x,ARGUMENTS={}>>><<<APIPILOT_CALL:NAME=set_x,ARGUMENTS={}>>>"
        ),
        vec![
            call("get_x", "{}"),
            ScanEvent::Error(MarkerError::UnknownTool {
                name: "set_x".to_owned()
            }),
        ]
    );
}

#[test]
fn errors_never_repeat_marker_text() {
    let mut s = scanner().with_max_marker_len(64);
    let secret = "SECRET_PAYLOAD";
    for input in [
        format!("<<<APIPILOT_CALL:NAME=t,ARGUMENTS={{\"{secret}\":}}>>>"),
        format!(
            "<<<APIPILOT_CALL:NAME=t,ARGUMENTS={{\"{secret}\":\"{}\"}}>>>",
            "x".repeat(80)
        ),
        format!("<<<APIPILOT_CALL:NAME=t {secret}>>>"),
        format!("<<<APIPILOT_CALL:NAME=t,ARGUMENTS={{\"{secret}\""),
    ] {
        for event in scan_all_ways(&mut s, &input) {
            match event {
                ScanEvent::Error(e) => {
                    let shown = e.to_string();
                    assert!(!shown.contains(secret), "{shown}");
                    assert!(!shown.contains("<<<"), "{shown}");
                }
                other => panic!("{input}: only an error expected, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_configurable_tag() {
    let tag = MarkerTag::new("X").unwrap();
    assert_eq!(tag.opening(), "<<<X:NAME=");
    let mut s = MarkerScanner::new(tag.clone());
    let marker = tag.render_call("go", r#"{"to":"home"}"#);
    assert_eq!(
        scan_all_ways(
            &mut s,
            &format!("a{marker}b<<<APIPILOT_CALL:NAME=go,ARGUMENTS={{}}>>>")
        ),
        vec![
            text("a"),
            call("go", r#"{"to":"home"}"#),
            text("b<<<APIPILOT_CALL:NAME=go,ARGUMENTS={}>>>"),
        ]
    );
    for bad in ["", "A:B", "A<", "A B", "\u{e9}", &"T".repeat(65)] {
        assert!(MarkerTag::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_scanner_is_reusable_after_finish() {
    let mut s = scanner();
    assert_eq!(
        scan_chunks(&mut s, &[b"<<<APIPILOT_CALL:NAME=t,ARG"]),
        vec![ScanEvent::Error(MarkerError::Unterminated {
            name: Some("t".to_owned())
        })]
    );
    assert!(!s.is_holding());
    assert_eq!(
        scan_chunks(&mut s, &[b"<<<APIPILOT_CALL:NAME=u,ARGUMENTS={}>>>"]),
        vec![call("u", "{}")]
    );
}

#[test]
fn the_borrowed_api_passes_text_through_without_copies() {
    let mut s = scanner();
    let input = "no markers here";
    let mut seen = Vec::new();
    s.feed_str(input, &mut |e| {
        if let MarkerEvent::Text(t) = e {
            seen.push(t.as_ptr());
        }
    });
    assert_eq!(seen, vec![input.as_ptr()]);
}

#[test]
fn parse_arguments_gives_the_value() {
    let c = MarkerCall {
        name: "t".to_owned(),
        arguments: r#"{"a":[1,2]}"#.to_owned(),
    };
    assert_eq!(
        c.parse_arguments().unwrap(),
        serde_json::json!({"a": [1, 2]})
    );
}

#[test]
fn the_limit_counts_the_whole_marker_exactly() {
    let tag = MarkerTag::new("APIPILOT_CALL").unwrap();
    for pad in 10..40 {
        let args = format!("{{\"a\":\"{}\"}}", "x".repeat(pad));
        let marker = tag.render_call("t", &args);
        let mut s = scanner().with_max_marker_len(marker.len());
        assert_eq!(s.max_marker_len(), marker.len());
        assert_eq!(scan_all_ways(&mut s, &marker), vec![call("t", &args)]);
        let mut s = scanner().with_max_marker_len(marker.len() - 1);
        assert_eq!(
            scan_all_ways(&mut s, &format!("{marker}.")),
            vec![
                ScanEvent::Error(MarkerError::TooLong {
                    name: Some("t".to_owned()),
                    limit: marker.len() - 1
                }),
                text("."),
            ]
        );
    }
}

#[test]
fn deep_nesting_is_handled_the_same_however_split() {
    // Syntax is checked without building a value, so nesting has no recursion limit here; the
    // dispatcher's parse into a value applies serde_json's limit later.
    let mut s = scanner();
    let deep = format!("{}1{}", "{\"a\":".repeat(200), "}".repeat(200));
    let out = scan_all_ways(
        &mut s,
        &format!("<<<APIPILOT_CALL:NAME=t,ARGUMENTS={deep}>>>after"),
    );
    assert_eq!(out, vec![call("t", &deep), text("after")]);
}
