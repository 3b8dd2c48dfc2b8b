//! Source map from preprocessed text back to original files.
//!
//! Input: the segments the emitter records while writing a fragment. Output:
//! [`SourceMap::origin`], which turns a byte offset of expanded text into a
//! [`Span`] of an original file. Invariant: tokens written from a macro body map
//! to the invocation (the macro's name where it is used), never into the macro's
//! definition, so every report points at code the user wrote at that place.

use crate::source::{FileId, Span};

/// A run of output bytes and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Start of the run in the fragment's text.
    pub out: u32,
    /// Length of the run in the fragment's text.
    pub len: u32,
    pub file: FileId,
    /// For verbatim text: the start of the run in `file`. For macro output: the
    /// offset of the invocation.
    pub orig: u32,
    /// The run was produced by a macro expansion (all of it maps to `orig`).
    pub from_macro: bool,
}

/// Where a position of preprocessed text comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    pub span: Span,
    /// The position is inside a macro expansion invoked at `span`.
    pub from_macro: bool,
}

#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    segments: Vec<Segment>,
}

impl SourceMap {
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Records that output `[out, out+len)` comes from `file` at `orig`. Verbatim
    /// runs that continue the previous one are merged, so a file copied unchanged
    /// costs one segment.
    pub fn push(&mut self, seg: Segment) {
        if let Some(last) = self.segments.last_mut() {
            let contiguous_out = last.out + last.len == seg.out;
            if contiguous_out && last.file == seg.file && last.from_macro == seg.from_macro {
                if !seg.from_macro && last.orig + last.len == seg.orig {
                    last.len += seg.len;
                    return;
                }
                if seg.from_macro && last.orig == seg.orig {
                    last.len += seg.len;
                    return;
                }
            }
        }
        self.segments.push(seg);
    }

    /// Appends another map whose text was appended at `shift`.
    pub fn extend_shifted(&mut self, other: &SourceMap, shift: u32) {
        for seg in &other.segments {
            self.push(Segment {
                out: seg.out + shift,
                ..*seg
            });
        }
    }

    /// The original position of an offset of expanded text. Offsets between
    /// segments (inserted white space) map to the end of the segment before them.
    pub fn origin(&self, offset: u32) -> Option<Origin> {
        let index = match self.segments.binary_search_by(|s| s.out.cmp(&offset)) {
            Ok(i) => i,
            Err(0) => return self.segments.first().map(|s| point(s, s.orig)),
            Err(i) => i - 1,
        };
        let seg = &self.segments[index];
        if seg.from_macro {
            return Some(point(seg, seg.orig));
        }
        let within = (offset - seg.out).min(seg.len);
        Some(point(seg, seg.orig + within))
    }

    /// The original span of an expanded range: exact when both ends come from the
    /// same file and the end is not before the start, else the start's position.
    pub fn span(&self, start: u32, end: u32) -> Option<Origin> {
        let first = self.origin(start)?;
        if end <= start {
            return Some(first);
        }
        let last = self.origin(end - 1)?;
        if last.span.file == first.span.file && last.span.start >= first.span.start {
            let end = if last.from_macro {
                last.span.start
            } else {
                last.span.start + 1
            };
            return Some(Origin {
                span: Span::new(first.span.file, first.span.start, end),
                from_macro: first.from_macro || last.from_macro,
            });
        }
        Some(first)
    }
}

fn point(seg: &Segment, orig: u32) -> Origin {
    Origin {
        span: Span::point(seg.file, orig),
        from_macro: seg.from_macro,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(out: u32, len: u32, orig: u32, from_macro: bool) -> Segment {
        Segment {
            out,
            len,
            file: FileId(0),
            orig,
            from_macro,
        }
    }

    #[test]
    fn verbatim_runs_merge_and_map_linearly() {
        let mut map = SourceMap::default();
        map.push(seg(0, 3, 10, false));
        map.push(seg(3, 4, 13, false));
        assert_eq!(map.segments().len(), 1);
        assert_eq!(map.origin(5).unwrap().span.start, 15);
    }

    #[test]
    fn macro_output_maps_to_the_invocation() {
        let mut map = SourceMap::default();
        map.push(seg(0, 2, 0, false));
        map.push(seg(3, 5, 40, true));
        map.push(seg(9, 2, 50, false));
        let o = map.origin(6).unwrap();
        assert!(o.from_macro);
        assert_eq!(o.span.start, 40);
        assert_eq!(map.origin(10).unwrap().span.start, 51);
        // A range from verbatim text into macro output keeps the verbatim start.
        let s = map.span(1, 5).unwrap();
        assert_eq!((s.span.start, s.span.end), (1, 40));
    }
}
