//! Source-annotated diagnostics (codespan-reporting) over the source database.

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::{Error, Files};
use codespan_reporting::term::{self, Config};

use crate::ir::Unknown;
use crate::source::{FileId, SourceDb, Span};

impl<'a> Files<'a> for SourceDb {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, Error> {
        Ok(self.name(id))
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, Error> {
        Ok(&self.file(id).text)
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, Error> {
        Ok(self.file(id).line_index(byte_index))
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<std::ops::Range<usize>, Error> {
        Ok(self.file(id).line_range(line_index))
    }
}

fn range(span: Span) -> std::ops::Range<usize> {
    span.start as usize..span.end.max(span.start) as usize
}

/// An unknown of a kernel, with the construct and the kernel-level call that
/// reaches it.
pub fn unknown(db: &SourceDb, kernel: &str, u: &Unknown) -> String {
    let mut labels = vec![Label::primary(u.span.file, range(u.span)).with_message("not modelled")];
    if u.site != u.span {
        labels.push(Label::secondary(u.site.file, range(u.site)).with_message(format!("reached from `{kernel}` here")));
    }
    let d = Diagnostic::warning()
        .with_message(format!("{}: {}", kernel, u.reason))
        .with_labels(labels)
        .with_notes(vec!["verdicts that depend on this are `unknown`".into()]);
    term::emit_into_string(&Config::default(), db, &d).unwrap_or_else(|_| format!("warning: {kernel}: {}\n", u.reason))
}
