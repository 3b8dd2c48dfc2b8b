//! The parser: tree-sitter-cuda over preprocessed fragments.
//!
//! Input: a [`Fragment`]. Output: its syntax tree, parsed once and kept in the
//! fragment, and the compiled queries of `grammar/`. tree-sitter never fails on
//! bad input: syntax errors become `ERROR`/`MISSING` nodes, which lowering turns
//! into unknowns.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tree_sitter::{Language, Node, ParseOptions, ParseState, Parser, Tree};

use crate::preprocess::Fragment;
use crate::source::Span;

pub fn language() -> Language {
    tree_sitter_cuda::LANGUAGE.into()
}

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut p = Parser::new();
        p.set_language(&language()).expect("tree-sitter-cuda matches the tree-sitter version");
        p
    });
}

/// The time a fragment may take to parse: generous for real code (5 MB/s is
/// typical), bounded for inputs that make the GLR parser explode.
fn parse_budget(bytes: usize) -> Duration {
    Duration::from_secs(2) + Duration::from_micros(bytes as u64 * 20)
}

/// The syntax tree of a fragment (parsed on first use). A fragment that
/// takes longer than its budget gets an empty tree and is marked, so the
/// driver reports it instead of silently missing its kernels.
pub fn tree(fragment: &Fragment) -> &Tree {
    fragment.tree.get_or_init(|| {
        PARSER.with(|p| {
            let mut parser = p.borrow_mut();
            let start = Instant::now();
            let budget = parse_budget(fragment.text.len());
            let bytes = fragment.text.as_bytes();
            let mut timed_out = false;
            let mut progress = |_: &ParseState| {
                if start.elapsed() > budget {
                    timed_out = true;
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            };
            let options = ParseOptions::new().progress_callback(&mut progress);
            let tree =
                parser.parse_with_options(&mut |offset, _| bytes.get(offset..).unwrap_or(&[]), None, Some(options));
            match tree {
                Some(t) => t,
                None => {
                    parser.reset();
                    fragment.parse_timed_out.store(true, Ordering::Relaxed);
                    let _ = timed_out;
                    parser
                        .parse("", None)
                        .expect("a parser with a language parses the empty text")
                }
            }
        })
    })
}

/// The text of a node.
pub fn text<'f>(fragment: &'f Fragment, node: Node) -> &'f str {
    fragment.text.get(node.byte_range()).unwrap_or("")
}

/// The original span of a node (its first token when macro output is involved).
pub fn span(fragment: &Fragment, node: Node) -> Span {
    let range = node.byte_range();
    match fragment.map.span(range.start as u32, range.end as u32) {
        Some(origin) => origin.span,
        None => Span::point(fragment.file, 0),
    }
}

/// Named children of a node, in order, comments left out: a comment may
/// stand anywhere (`k<<<g, b>>>(x, /*stride=*/ 0, n)`), and counted among
/// a call's arguments it would shift every argument after it.
pub fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|c| c.kind_name() != "comment")
        .collect()
}

/// All children (named or not), in order.
pub fn children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// Whether an unnamed child token with this spelling exists (`__global__`, `constexpr`…).
/// (By index, without a cursor: it is asked of nodes with few children, the
/// keywords of an `if` or a declaration, millions of times, and a cursor
/// is an allocation.)
pub fn has_token(node: Node, kind: &str) -> bool {
    (0..node.child_count()).any(|i| node.child(i).is_some_and(|c| c.kind_name() == kind))
}

/// Field access by name with the field id looked up once per name: tree-sitter's
/// own `child_by_field_name` compares the name against every field each call.
pub trait NodeExt<'t> {
    fn field(&self, name: &'static str) -> Option<Node<'t>>;
    /// The node's grammar kind, as `Node::kind` gives it, from a table by
    /// kind id: `kind` measures and validates the C string on every call
    /// (a twentieth of the front end's time).
    fn kind_name(&self) -> &'t str;
}

impl<'t> NodeExt<'t> for Node<'t> {
    fn kind_name(&self) -> &'t str {
        // The grammar's names, copied once for the process.
        static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| {
            let lang = language();
            (0..lang.node_kind_count())
                .map(|id| lang.node_kind_for_id(id as u16).unwrap_or("").to_string())
                .collect()
        });
        match names.get(self.kind_id() as usize) {
            Some(name) => name,
            None => self.kind(),
        }
    }

    fn field(&self, name: &'static str) -> Option<Node<'t>> {
        thread_local! {
            static IDS: RefCell<crate::hash::HashMap<usize, Option<std::num::NonZeroU16>>> =
                RefCell::new(crate::hash::HashMap::default());
        }
        let key = name.as_ptr() as usize ^ (name.len() << 48);
        let id = IDS.with(|ids| {
            *ids.borrow_mut()
                .entry(key)
                .or_insert_with(|| language().field_id_for_name(name))
        })?;
        self.child_by_field_id(id.get())
    }
}
