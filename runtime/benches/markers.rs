//! Marker scanner throughput against a plain `memchr::memmem` search for `<<<` over the same
//! bytes, in the same run.
//!
//! `cargo bench -p toolc-runtime --bench markers -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use toolc_runtime::markers::{MarkerEvent, MarkerScanner, MarkerTag};

const SIZE: usize = 1 << 20;
const MARKER_EVERY: usize = 4096;

/// Prose-like text without `<`.
fn prose(len: usize) -> String {
    // Mostly ASCII, as assistant replies are, with a few multi-byte characters.
    let words = [
        "the",
        "order",
        "shipped",
        "yesterday",
        "and",
        "should",
        "arrive",
        "on",
        "Friday.",
        "Please",
        "check",
        "your",
        "email",
        "for",
        "the",
        "tracking",
        "details,",
        "or",
        "ask",
        "me",
        "to",
        "look",
        "it",
        "up.",
        "The",
        "size",
        "is",
        "42",
        "and",
        "the",
        "colour",
        "blue;",
        "price",
        "(incl.",
        "VAT)",
        "is",
        "19.99",
        "café",
        "€",
        "🙂",
        "\n",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut i = 0u64;
    while out.len() < len {
        // A fixed LCG keeps the text identical between runs without a rand dependency.
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(words[(i >> 33) as usize % words.len()]);
        out.push(' ');
    }
    out
}

fn with_markers(tag: &MarkerTag, len: usize) -> String {
    let marker = tag.render_call(
        "search_products",
        r#"{"query":"running shoes >>> trail","filters":{"category":"shoes","price":{"min":0,"max":120}},"page_size":10}"#,
    );
    let mut out = String::with_capacity(len + marker.len());
    let text = prose(MARKER_EVERY);
    while out.len() < len {
        let room = MARKER_EVERY - marker.len();
        let mut cut = room.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push_str(&text[..cut]);
        out.push_str(&marker);
    }
    out
}

/// Feeds `input` in `chunk`-byte pieces (split anywhere, as a model's deltas are) and counts
/// what comes out, so that the work cannot be optimised away.
fn scan_bytes(scanner: &mut MarkerScanner, input: &[u8], chunk: usize) -> (usize, usize) {
    let mut text = 0;
    let mut calls = 0;
    let mut sink = |e: MarkerEvent<'_>| match e {
        MarkerEvent::Text(t) => text += t.len(),
        MarkerEvent::Call { .. } => calls += 1,
        MarkerEvent::Error(_) => calls += 1_000_000,
    };
    for piece in input.chunks(chunk) {
        scanner.feed(piece, &mut sink);
    }
    scanner.finish(&mut sink);
    (text, calls)
}

fn scan_str(scanner: &mut MarkerScanner, pieces: &[&str]) -> (usize, usize) {
    let mut text = 0;
    let mut calls = 0;
    let mut sink = |e: MarkerEvent<'_>| match e {
        MarkerEvent::Text(t) => text += t.len(),
        MarkerEvent::Call { .. } => calls += 1,
        MarkerEvent::Error(_) => calls += 1_000_000,
    };
    for piece in pieces {
        scanner.feed_str(piece, &mut sink);
    }
    scanner.finish(&mut sink);
    (text, calls)
}

/// `input` cut into pieces of about `size` bytes at character boundaries, as text deltas
/// decoded from a provider's JSON events are.
fn str_pieces(input: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

fn bench(c: &mut Criterion) {
    let tag = MarkerTag::new("APIPILOT_CALL").unwrap();
    let inputs = [
        ("marker_free", prose(SIZE)),
        ("marker_every_4KiB", with_markers(&tag, SIZE)),
    ];
    let finder = memchr::memmem::Finder::new(b"<<<");
    for (label, input) in &inputs {
        let mut scanner = MarkerScanner::new(tag.clone());
        let whole = [input.as_str()];
        let deltas = str_pieces(input, 64);
        // Sanity: the scanner finds exactly the markers that were put in, however fed.
        let expected = finder.find_iter(input.as_bytes()).count();
        assert_eq!(scan_str(&mut scanner, &whole).1, expected);
        assert_eq!(scan_str(&mut scanner, &deltas).1, expected);
        assert_eq!(scan_bytes(&mut scanner, input.as_bytes(), 64).1, expected);

        let mut group = c.benchmark_group(format!("markers/{label}"));
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function("memmem_baseline", |b| {
            b.iter(|| finder.find_iter(black_box(input.as_bytes())).count())
        });
        // The floor of the bytes path, which must validate UTF-8 to hand out `&str`.
        group.bench_function("std_from_utf8_baseline", |b| {
            b.iter(|| std::str::from_utf8(black_box(input.as_bytes())).is_ok())
        });
        group.bench_function("scanner_str_whole", |b| {
            b.iter(|| scan_str(&mut scanner, black_box(&whole)))
        });
        group.bench_function("scanner_str_64B_deltas", |b| {
            b.iter(|| scan_str(&mut scanner, black_box(&deltas)))
        });
        group.bench_function("scanner_bytes_whole", |b| {
            b.iter(|| scan_bytes(&mut scanner, black_box(input.as_bytes()), input.len()))
        });
        group.bench_function("scanner_bytes_64B_deltas", |b| {
            b.iter(|| scan_bytes(&mut scanner, black_box(input.as_bytes()), 64))
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
