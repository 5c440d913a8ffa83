//! Source files and byte spans.
//!
//! A [`Span`] is a byte range in one source file, named by a [`FileId`] into a
//! [`SourceMap`]. Every AST node carries one; the Tile IR keeps them in side
//! tables so that backends can attach `loc(...)` information and the CPU
//! reference can report traps at the `.pk` source line.

use std::sync::Arc;

/// An index into a [`SourceMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A half-open byte range `[start, end)` in one file.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end.max(start) as u32,
        }
    }

    /// The smallest span covering both `self` and `other` (same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.end == self.start
    }
}

/// Spans print compactly (`12..30`) so that AST dumps stay readable.
impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        (s.start as usize, s.len()).into()
    }
}

/// One source file: its name as shown to users, and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: Arc<str>,
    line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceFile {
        let text: Arc<str> = text.into();
        let mut line_starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i as u32 + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let end = (offset as usize).min(self.text.len());
        let col = self
            .text
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(end - start);
        (line as u32 + 1, col as u32 + 1)
    }
}

impl SourceFile {
    /// The number of lines (a final line without a newline counts; an
    /// empty file has one empty line).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The byte range of 0-based line `line`, without its line break.
    pub fn line_bounds(&self, line: usize) -> (usize, usize) {
        let start = self.line_starts[line] as usize;
        let mut end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |&n| n as usize - 1);
        if end > start && self.text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
        (start, end)
    }
}

/// All source files of one compilation.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> FileId {
        self.files.push(SourceFile::new(name, text));
        FileId(self.files.len() as u32 - 1)
    }

    /// Replaces the text of file `id`, keeping its id and name (an edit).
    pub fn replace(&mut self, id: FileId, text: impl Into<Arc<str>>) {
        let f = &mut self.files[id.0 as usize];
        *f = SourceFile::new(std::mem::take(&mut f.name), text);
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    /// `file:line:col` of the start of a span, as backends print locations.
    pub fn location(&self, span: Span) -> (String, u32, u32) {
        let f = self.get(span.file);
        let (l, c) = f.line_col(span.start);
        (f.name.clone(), l, c)
    }
}
