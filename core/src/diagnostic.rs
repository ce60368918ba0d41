//! Diagnostics: accumulated in one [`Diagnostics`] context and reported together, each with a
//! stable code, the exact span it is about, a label and help text.
//!
//! Rendering is our own (rustc-style) rather than miette's: a diagnostic here routinely carries
//! labels in two different files (a duplicate name), and build.rs, proc macros and the CLI each
//! need the same text with and without colour, or as JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::source::{SourceMap, Span};

/// How serious a diagnostic is: an error fails the compilation, a warning does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth fixing, but the compilation goes on.
    Warning,
    /// The compilation fails.
    Error,
}

/// A place in the source with a short explanation.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    /// The source text the label points at.
    pub span: Span,
    /// The short explanation printed beside the underline.
    pub message: String,
}

/// One problem found in the input, with its code, where it is and how to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Whether it fails the compilation.
    pub severity: Severity,
    /// Stable identifier, e.g. `toolc::duplicate-name`; listed in the README.
    pub code: &'static str,
    /// What is wrong, in one sentence; the heading of the rendered diagnostic.
    pub message: String,
    /// The primary place; absent only for problems that are about no file (I/O, empty input).
    pub primary: Option<Label>,
    /// Other places that explain the problem (the first definition of a duplicate name).
    pub secondary: Vec<Label>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with `code` and `message` and no place yet; give it one with `at`.
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            help: None,
        }
    }

    /// A warning with `code` and `message` and no place yet.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Sets the primary place and its label, replacing any earlier one.
    pub fn at(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.primary = Some(Label {
            span,
            message: label.into(),
        });
        self
    }

    /// Adds a secondary place with its label.
    pub fn also(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: label.into(),
        });
        self
    }

    /// Sets the help text: how to fix the problem.
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Whether it is an error, so that it fails the compilation.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The context every check pushes into, so the user sees every problem at once.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Adds one diagnostic.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    /// Adds every diagnostic of `other`, in its order.
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// Whether any diagnostic is an error, so that the compilation fails.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// How many diagnostics are errors.
    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.is_error()).count()
    }

    /// How many diagnostics are warnings.
    pub fn warning_count(&self) -> usize {
        self.items.len() - self.error_count()
    }

    /// Whether nothing was reported, not even a warning.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Every diagnostic, in the order it was pushed (see `sorted` for output order).
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Sorted by file and position, so output does not depend on the order checks ran in.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut items: Vec<&Diagnostic> = self.items.iter().collect();
        items.sort_by_key(|d| {
            d.primary
                .as_ref()
                .map(|l| (l.span.file, l.span.start, l.span.end))
                .unwrap_or_default()
        });
        items
    }

    /// Every diagnostic, in the order it was pushed.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }
}

/// Where a label points, resolved to a file name, line and column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Position {
    /// The file's name as the user gave it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

/// Where `span` starts, as a file name and a 1-based line and column.
pub fn position(sources: &SourceMap, span: Span) -> Position {
    let file = sources.get(span.file);
    let (line, column) = file.line_col(span.start);
    Position {
        file: file.name.clone(),
        line,
        column,
    }
}

/// Renders diagnostics as text, rustc-style.
#[derive(Debug, Clone, Copy, Default)]
pub struct HumanRenderer {
    /// Whether to add ANSI colours, for a terminal.
    pub colour: bool,
}

impl HumanRenderer {
    /// Every diagnostic, sorted by position, and a summary line when there are any.
    pub fn render(&self, sources: &SourceMap, diagnostics: &Diagnostics) -> String {
        let mut out = String::new();
        for d in diagnostics.sorted() {
            self.render_one(&mut out, sources, d);
            out.push('\n');
        }
        let (errors, warnings) = (diagnostics.error_count(), diagnostics.warning_count());
        if errors + warnings > 0 {
            let _ = writeln!(out, "{}", summary_line(errors, warnings));
        }
        out
    }

    /// Appends one diagnostic to `out`, headed by its severity.
    pub fn render_one(&self, out: &mut String, sources: &SourceMap, d: &Diagnostic) {
        let (word, colour) = match d.severity {
            Severity::Error => ("error", "\x1b[1;31m"),
            Severity::Warning => ("warning", "\x1b[1;33m"),
        };
        self.render_headed(out, sources, d, word, colour, &[]);
    }

    /// Renders `d` under another heading than its severity (`toolc diff` prints `breaking`,
    /// `compatible` and `info`), with `notes` as `= note:` lines before the help.
    pub fn render_headed(
        &self,
        out: &mut String,
        sources: &SourceMap,
        d: &Diagnostic,
        word: &str,
        colour: &str,
        notes: &[String],
    ) {
        let (c, bold, blue, reset) = if self.colour {
            (colour, "\x1b[1m", "\x1b[1;34m", "\x1b[0m")
        } else {
            ("", "", "", "")
        };
        let _ = writeln!(
            out,
            "{c}{word}[{}]{reset}{bold}: {}{reset}",
            d.code,
            shown(&d.message)
        );
        // One gutter width for all labels, so that the `|` columns line up.
        let gutter = d
            .primary
            .iter()
            .chain(&d.secondary)
            .map(|l| {
                sources
                    .get(l.span.file)
                    .line_col(l.span.start)
                    .0
                    .to_string()
                    .len()
            })
            .max()
            .unwrap_or(1);
        if let Some(primary) = &d.primary {
            self.render_label(out, sources, primary, gutter, '^', c, blue, reset);
        }
        for label in &d.secondary {
            self.render_label(out, sources, label, gutter, '-', blue, blue, reset);
        }
        for note in notes {
            let pad = " ".repeat(gutter);
            let _ = writeln!(
                out,
                "{pad} {blue}={reset} {bold}note{reset}: {}",
                shown(note)
            );
        }
        if let Some(help) = &d.help {
            let pad = " ".repeat(gutter);
            let _ = writeln!(
                out,
                "{pad} {blue}={reset} {bold}help{reset}: {}",
                shown(help)
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn render_label(
        &self,
        out: &mut String,
        sources: &SourceMap,
        label: &Label,
        gutter: usize,
        marker: char,
        colour: &str,
        blue: &str,
        reset: &str,
    ) {
        let file = sources.get(label.span.file);
        let (line, col) = file.line_col(label.span.start);
        let pad = " ".repeat(gutter);
        let _ = writeln!(out, "{pad}{blue}-->{reset} {}:{line}:{col}", file.name);
        let (text, col) = window(file.line_text(line), col);
        let text = shown(&text);
        let _ = writeln!(out, "{pad} {blue}|{reset}");
        let _ = writeln!(out, "{blue}{line:>gutter$}{reset} {blue}|{reset} {text}");
        // Underline to the end of the span, or of the line when the span covers several lines.
        let line_chars = text.chars().count();
        let span_chars = file
            .text
            .get(label.span.start..label.span.end)
            .map_or(1, |s| s.lines().next().unwrap_or("").chars().count());
        let width = span_chars.clamp(1, (line_chars + 1).saturating_sub(col - 1).max(1));
        let indent: String = text
            .chars()
            .take(col - 1)
            .map(|ch| if ch == '\t' { '\t' } else { ' ' })
            .collect();
        let underline: String = std::iter::repeat_n(marker, width).collect();
        let _ = writeln!(
            out,
            "{pad} {blue}|{reset} {indent}{colour}{underline} {}{reset}",
            shown(&label.message)
        );
    }
}

/// Text from a manifest as it may be printed to a terminal: a control character (an escape
/// sequence's ESC, a bell) becomes U+FFFD, one column wide like the character it replaces.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !matches!(c, '\t' | '\n');
    if text.contains(unsafe_char) {
        std::borrow::Cow::Owned(
            text.chars()
                .map(|c| if unsafe_char(c) { '\u{fffd}' } else { c })
                .collect(),
        )
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// `1 tool`, `2 tools`: a count with its noun (which takes an `s` in the plural).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The closing line of a report, such as `2 errors, 1 warning`; a zero count is left
/// out (unless both are zero).
pub fn summary_line(errors: usize, warnings: usize) -> String {
    let plural = count;
    match (errors, warnings) {
        (0, w) => plural(w, "warning"),
        (e, 0) => plural(e, "error"),
        (e, w) => format!("{}, {}", plural(e, "error"), plural(w, "warning")),
    }
}

/// A label as JSON: where it starts and ends, and its message.
#[derive(Debug, Serialize)]
pub struct JsonLabel {
    #[serde(flatten)]
    position: Position,
    end_line: usize,
    end_column: usize,
    message: String,
}

impl JsonLabel {
    /// The JSON form of `label`, its start and end resolved through `sources`.
    pub fn new(sources: &SourceMap, label: &Label) -> JsonLabel {
        let (end_line, end_column) = sources.get(label.span.file).line_col(label.span.end);
        JsonLabel {
            position: position(sources, label.span),
            end_line,
            end_column,
            message: label.message.clone(),
        }
    }
}

/// Diagnostics as JSON, one object per diagnostic, for editors and CI.
pub fn render_json(sources: &SourceMap, diagnostics: &Diagnostics) -> String {
    #[derive(Serialize)]
    struct JsonDiagnostic<'a> {
        severity: Severity,
        code: &'a str,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        primary: Option<JsonLabel>,
        secondary: Vec<JsonLabel>,
        #[serde(skip_serializing_if = "Option::is_none")]
        help: Option<&'a str>,
    }
    let label = |l: &Label| JsonLabel::new(sources, l);
    let mut out = String::new();
    for d in diagnostics.sorted() {
        let json = JsonDiagnostic {
            severity: d.severity,
            code: d.code,
            message: &d.message,
            primary: d.primary.as_ref().map(label),
            secondary: d.secondary.iter().map(label).collect(),
            help: d.help.as_deref(),
        };
        out.push_str(&serde_json::to_string(&json).expect("diagnostics serialise"));
        out.push('\n');
    }
    out
}

/// Long lines (minified JSON, absurd nesting) are cut to a window around the column, so that a
/// diagnostic stays readable; returns the text and the column within it.
fn window(text: &str, col: usize) -> (String, usize) {
    const WIDTH: usize = 120;
    let chars = text.chars().count();
    if chars <= WIDTH + 40 {
        return (text.to_owned(), col);
    }
    let start = col
        .saturating_sub(WIDTH / 2)
        .min(chars.saturating_sub(WIDTH));
    let shown: String = text.chars().skip(start).take(WIDTH).collect();
    let prefix = if start > 0 { "…" } else { "" };
    let suffix = if start + WIDTH < chars { "…" } else { "" };
    (
        format!("{prefix}{shown}{suffix}"),
        col - start + prefix.chars().count(),
    )
}
