//! Source files and byte spans into them, shared by every diagnostic.

use std::sync::Arc;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset just past the last byte; never before `start`.
    pub end: usize,
}

impl Span {
    /// The span from `start` to `end` in `file`; an `end` before `start` gives an empty span.
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start,
            end: end.max(start),
        }
    }
}

/// One loaded source file (a manifest or a Rust file for `#[tool]`).
#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user gave it; shown in diagnostics.
    pub name: String,
    /// The file's whole content.
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// A file with its name (as diagnostics show it) and its content.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        // Sized first: a large manifest has hundreds of thousands of lines.
        let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        let mut line_starts = Vec::with_capacity(lines + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// The text of a 1-based line, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self
            .line_starts
            .get(line - 1)
            .copied()
            .unwrap_or(self.text.len());
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

/// Every file a compilation read, so that diagnostics can quote them.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<Arc<SourceFile>>,
}

impl SourceMap {
    /// Adds a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push(Arc::new(SourceFile::new(name, text)));
        FileId(self.files.len() as u32 - 1)
    }

    /// The file with id `id`; panics on an id this map did not give out.
    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// Every file with its id, in the order added.
    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), &**f))
    }
}
