//! Source files and spans in them.
//!
//! Input: paths on disk (or text given by tests). Output: a [`SourceDb`] that owns
//! every file's text and answers line/column questions for [`Span`]s.
//! Invariant: a [`Span`] always points into an *original* file, never into
//! preprocessed text; the preprocessor's [`crate::preprocess::SourceMap`] is what
//! turns positions in expanded text into spans.

use crate::hash::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Index of a file in a [`SourceDb`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A byte range in an original source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: u32, end: u32) -> Span {
        Span {
            file,
            start,
            end: end.max(start),
        }
    }

    pub fn point(file: FileId, offset: u32) -> Span {
        Span::new(file, offset, offset)
    }
}

/// One source file: its path as given, its text and where its lines start.
#[derive(Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    /// The path as the user gave it (or as an include resolved it); used in reports.
    pub name: String,
    pub text: String,
    line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn new(path: PathBuf, name: String, text: String) -> SourceFile {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i as u32 + 1),
        );
        SourceFile {
            path,
            name,
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in bytes) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        (line as u32 + 1, offset - self.line_starts[line] + 1)
    }

    /// Byte offset of the start of a 1-based line.
    pub fn line_start(&self, line: u32) -> u32 {
        let index = (line.max(1) - 1) as usize;
        self.line_starts.get(index).copied().unwrap_or(self.text.len() as u32)
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// 0-based index of the line holding a byte offset.
    pub fn line_index(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&(offset.min(self.text.len()) as u32)) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// Byte range of a 0-based line (without its newline), clamped to the file.
    pub fn line_range(&self, line_index: usize) -> std::ops::Range<usize> {
        let start = self
            .line_starts
            .get(line_index)
            .map_or(self.text.len(), |&s| s as usize);
        let end = self
            .line_starts
            .get(line_index + 1)
            .map_or(self.text.len(), |&s| (s as usize).saturating_sub(1));
        start..end.max(start)
    }
}

/// Reading a file failed.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for LoadError {}

/// Every file the run has read. Files are never removed, so a [`FileId`] stays valid.
#[derive(Default, Debug)]
pub struct SourceDb {
    files: Vec<Arc<SourceFile>>,
    by_path: HashMap<PathBuf, FileId>,
}

impl SourceDb {
    pub fn new() -> SourceDb {
        SourceDb::default()
    }

    /// Loads a file from disk once; later calls with the same path return the same id.
    /// Text that is not UTF-8 is read lossily: the analyzer must accept any bytes.
    pub fn load(&mut self, path: &Path) -> Result<FileId, LoadError> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(&id) = self.by_path.get(&key) {
            return Ok(id);
        }
        let bytes = std::fs::read(path).map_err(|e| LoadError {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let name = path.to_string_lossy().into_owned();
        Ok(self.insert(key, name, text))
    }

    /// Adds text that does not come from disk (tests, stdin). The path only names it.
    pub fn add_text(&mut self, name: &str, text: &str) -> FileId {
        let path = PathBuf::from(name);
        if let Some(&id) = self.by_path.get(&path) {
            return id;
        }
        self.insert(path, name.to_string(), text.to_string())
    }

    fn insert(&mut self, key: PathBuf, name: String, text: String) -> FileId {
        let id = FileId(self.files.len() as u32);
        self.files.push(Arc::new(SourceFile::new(key.clone(), name, text)));
        self.by_path.insert(key, id);
        id
    }

    /// Looks a path up among loaded files without reading the disk.
    pub fn lookup(&self, path: &Path) -> Option<FileId> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.by_path.get(&key).copied()
    }

    pub fn file(&self, id: FileId) -> &Arc<SourceFile> {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &Arc<SourceFile>)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    pub fn name(&self, id: FileId) -> &str {
        &self.file(id).name
    }

    /// 1-based line and column of the start of a span.
    pub fn line_col(&self, span: Span) -> (u32, u32) {
        self.file(span.file).line_col(span.start)
    }

    /// The text a span covers (empty when out of range).
    pub fn snippet(&self, span: Span) -> &str {
        let text = &self.file(span.file).text;
        text.get(span.start as usize..span.end as usize).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let mut db = SourceDb::new();
        let id = db.add_text("a.cu", "ab\ncd\n\nef");
        let file = db.file(id);
        assert_eq!(file.line_col(0), (1, 1));
        assert_eq!(file.line_col(1), (1, 2));
        assert_eq!(file.line_col(3), (2, 1));
        assert_eq!(file.line_col(6), (3, 1));
        assert_eq!(file.line_col(7), (4, 1));
        assert_eq!(file.line_col(100), (4, 3));
        assert_eq!(file.line_start(2), 3);
    }
}
