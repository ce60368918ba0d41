use super::*;

fn calls(text: &str) -> CallMessage {
    match read(text) {
        Read::Calls(m) => m,
        other => panic!("expected calls in {text}, got {other:?}"),
    }
}

fn unreadable(text: &str) -> Unreadable {
    match read(text) {
        Read::Unreadable(why) => why,
        other => panic!("expected {text} to be unreadable, got {other:?}"),
    }
}

#[test]
fn audio_is_not_parsed_and_calls_are() {
    let audio = r#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"AAAA"}}]}}}"#;
    assert!(matches!(read(audio), Read::Plain(p) if p == Plain::default()));
    let m =
        calls(r#"{"toolCall":{"functionCalls":[{"id":"c1","name":"search","args":{"q":"x"}}]}}"#);
    assert_eq!(m.calls.len(), 1);
    assert_eq!(m.calls[0].arguments, r#"{"q":"x"}"#);
    assert!(m.ends_batch);
}

#[test]
fn both_spellings_of_every_call_field_are_read() {
    let snake = calls(
        r#"{"tool_call":{"function_calls":[{"id":"c1","name":"search","args":{"the_query":"x"}}]}}"#,
    );
    assert_eq!(snake.calls[0].id.as_deref(), Some("c1"));
    // The arguments are the model's own keys: never respelt.
    assert_eq!(snake.calls[0].arguments, r#"{"the_query":"x"}"#);
    let part = calls(
        r#"{"server_content":{"model_turn":{"parts":[{"function_call":{"id":"p1","name":"search"}}]},"turn_complete":true}}"#,
    );
    assert_eq!(part.calls[0].id.as_deref(), Some("p1"));
    assert!(part.ends_batch);
    let cancelled = calls(r#"{"tool_call_cancellation":{"ids":["c1","c2"]}}"#);
    assert_eq!(cancelled.cancelled, ["c1", "c2"]);
    // An end of turn in snake_case alone is read too.
    assert!(matches!(
        read(r#"{"server_content":{"turn_complete":true}}"#),
        Read::Plain(Plain {
            ends_turn: true,
            ..
        })
    ));
}

#[test]
fn escaped_member_names_are_read_as_the_names_they_spell() {
    let m = calls(r#"{"\u0074oolCall":{"functionCalls":[{"id":"c1","name":"search"}]}}"#);
    assert_eq!(m.calls[0].id.as_deref(), Some("c1"));
    assert_eq!(m.calls[0].arguments, "{}");
    let m =
        calls(r#"{"serverContent":{"modelTurn":{"parts":[{"functionC\u0061ll":{"id":"p"}}]}}}"#);
    assert_eq!(m.calls[0].id.as_deref(), Some("p"));
}

#[test]
fn what_google_would_read_differently_or_not_at_all_fails_closed() {
    for (text, why) in [
        (r#"{"toolCall":{"functionCalls":[{"id":"c1""#, "not json"),
        (
            r#"{"toolCall":{"functionCalls":[{"id":"\ud800"}]}}"#,
            "not json",
        ),
        (r#"{"toolCall":{},"toolCall":{}}"#, "not json"),
        (
            r#"{"toolCall":{"functionCalls":[{"id":"a","id":"b"}]}}"#,
            "not json",
        ),
        (r#"{"serverContent":{"x":1e999}}"#, "not json"),
        (r#"[{"toolCall":{}}]"#, "not an object"),
        (r#""toolCall""#, "not an object"),
        (r#"{"toolCall":{},"tool_call":{}}"#, "two spellings"),
        (
            r#"{"toolCall":{"functionCalls":[],"function_calls":[{"id":"c"}]}}"#,
            "two spellings",
        ),
        (r#"{"goAway":{},"serverContent":{}}"#, "several kinds"),
        (
            r#"{"sessionResumptionUpdate":{},"toolCall":{}}"#,
            "several kinds",
        ),
        (r#"{"toolCalls":{"functionCalls":[]}}"#, "unknown member"),
        (r#"{"toolCall":{"functionCalls":{"id":"c1"}}}"#, "shape"),
        (r#"{"toolCall":{"functionCalls":["c1"]}}"#, "shape"),
        (r#"{"toolCall":[]}"#, "shape"),
        (r#"{"toolCallCancellation":{"ids":"c1"}}"#, "shape"),
        (r#"{"toolCallCancellation":{"ids":[1]}}"#, "shape"),
        (
            r#"{"serverContent":{"modelTurn":{"parts":{"functionCall":{"id":"c1"}}}}}"#,
            "shape",
        ),
        (
            r#"{"serverContent":{"modelTurn":{"parts":["functionCall"]}}}"#,
            "shape",
        ),
        (
            r#"{"serverContent":{"model_turn":"functionCall"}}"#,
            "shape",
        ),
    ] {
        let got = unreadable(text);
        let kind = match got {
            Unreadable::NotJson(_) => "not json",
            Unreadable::NotAnObject => "not an object",
            Unreadable::UnknownMember(_) => "unknown member",
            Unreadable::SeveralKinds => "several kinds",
            Unreadable::TwoSpellings(_) => "two spellings",
            Unreadable::Shape(_) => "shape",
        };
        assert_eq!(kind, why, "{text}: {got}");
    }
}

#[test]
fn kinds_the_servers_send_together_are_all_read() {
    // Captured: `serverContent` beside `voiceActivity`; a call beside content is read in both.
    assert!(matches!(
        read(r#"{"serverContent":{},"voiceActivity":{"type":"ACTIVITY_START"}}"#),
        Read::Plain(_)
    ));
    let m = calls(
        r#"{"serverContent":{"modelTurn":{"parts":[{"functionCall":{"id":"p"}}]}},"toolCall":{"functionCalls":[{"id":"t"}]}}"#,
    );
    let ids: Vec<_> = m.calls.iter().map(|c| c.id.as_deref().unwrap()).collect();
    assert_eq!(ids, ["p", "t"]);
    assert!(m.ends_batch);
}

#[test]
fn control_messages_are_read_in_either_spelling() {
    assert!(matches!(
        read(r#"{"setupComplete":{}}"#),
        Read::Plain(Plain {
            setup_complete: true,
            ..
        })
    ));
    assert!(matches!(
        read(r#"{"setup_complete":{}}"#),
        Read::Plain(Plain {
            setup_complete: true,
            ..
        })
    ));
    assert!(matches!(
        read(r#"{"goAway":{"timeLeft":"50s"}}"#),
        Read::GoAway { time_left: Some(d) } if d == Duration::from_secs(50)
    ));
    assert!(matches!(
        read(r#"{"go_away":{"time_left":"0.25s"}}"#),
        Read::GoAway { time_left: Some(d) } if d == Duration::from_millis(250)
    ));
    assert!(matches!(
        read(r#"{"goAway":{}}"#),
        Read::GoAway { time_left: None }
    ));
    let Read::Resumption(update) =
        read(r#"{"sessionResumptionUpdate":{"newHandle":"h1","resumable":true}}"#)
    else {
        panic!()
    };
    assert_eq!(update.new_handle.as_deref(), Some("h1"));
    assert!(update.resumable);
    let Read::Resumption(update) = read(r#"{"session_resumption_update":{"resumable":false}}"#)
    else {
        panic!()
    };
    assert_eq!(update, ResumptionUpdate::default());
    for usage in [
        r#"{"usageMetadata":{"promptTokenCount":10,"totalTokenCount":12}}"#,
        r#"{"serverContent":{"generationComplete":true},"usageMetadata":{"totalTokenCount":1}}"#,
        r#"{"voiceActivity":{"voiceActivityType":"ACTIVITY_START"}}"#,
    ] {
        assert!(matches!(read(usage), Read::Plain(_)), "{usage}");
    }
}

#[test]
fn durations_are_protobuf_json_durations() {
    assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
    assert_eq!(parse_duration("1.000000001s"), Some(Duration::new(1, 1)));
    for bad in ["10", "-1s", "NaNs", "infs", "1e400s", "", "s"] {
        assert_eq!(parse_duration(bad), None, "{bad}");
    }
}

#[test]
fn scrubbing_keeps_only_visible_calls_in_either_spelling() {
    let m = calls(
        r#"{"toolCall":{"functionCalls":[{"id":"s","name":"lookup"},{"id":"c","name":"highlight"}]}}"#,
    );
    let out = scrub(m.message, |id| id == "c").unwrap();
    assert!(
        out.contains(r#""id":"c""#) && !out.contains(r#""id":"s""#),
        "{out}"
    );
    let m = calls(r#"{"tool_call":{"function_calls":[{"id":"s","name":"lookup"}]}}"#);
    assert_eq!(scrub(m.message, |id| id == "c"), None);
    let m = calls(
        r#"{"server_content":{"model_turn":{"parts":[{"text":"hi"},{"function_call":{"id":"s"}}]}}}"#,
    );
    let out = scrub(m.message, |_| false).unwrap();
    assert!(
        out.contains("hi") && !out.contains("function_call"),
        "{out}"
    );
    let m = calls(r#"{"toolCallCancellation":{"ids":["s"]}}"#);
    assert_eq!(scrub(m.message, |id| id == "c"), None);
}
