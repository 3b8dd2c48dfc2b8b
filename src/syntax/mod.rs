//! The parser: tree-sitter-cuda over preprocessed fragments.
//!
//! Input: a [`Fragment`]. Output: its syntax tree, parsed once and kept in the
//! fragment, and the navigation the lowering does over it (fields, named
//! children), memoised per thread. tree-sitter never fails on
//! bad input: syntax errors become `ERROR`/`MISSING` nodes, which lowering turns
//! into unknowns.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tree_sitter::{ffi::TSNode, Language, Node, ParseOptions, ParseState, Parser, Tree};

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

/// A tree of this module's parses. Dropping one empties every thread's
/// navigation memo (see [`Nav`]): its nodes' addresses may be reused by
/// the next tree.
#[derive(Debug)]
pub struct SyntaxTree(Tree);

/// Trees dropped so far, in the whole process (the memos' epoch).
static TREES_DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for SyntaxTree {
    fn drop(&mut self) {
        TREES_DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

impl std::ops::Deref for SyntaxTree {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.0
    }
}

/// `text` parsed by this thread's parser (with no time budget: for short
/// texts).
pub fn parse(text: &str) -> Option<SyntaxTree> {
    PARSER.with(|p| p.borrow_mut().parse(text, None)).map(SyntaxTree)
}

/// The syntax tree of a fragment (parsed on first use). A fragment that
/// takes longer than its budget gets an empty tree and is marked, so the
/// driver reports it instead of silently missing its kernels.
pub fn tree(fragment: &Fragment) -> &Tree {
    fragment.tree.get_or_init(|| {
        SyntaxTree(PARSER.with(|p| {
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
        }))
    })
}

/// This thread's memo of tree navigation: lowering inlines a device
/// function at every call and re-reads the same nodes many times, and
/// tree-sitter finds a field's child or steps to a sibling by walking
/// the children (through hidden nodes): on ggml's quantize.cu, 7.5 M
/// field lookups at 370 instructions each were a fifth of the front
/// end. Keyed by a node's subtree and tree addresses; emptied when any
/// tree is dropped (the only way an address can come to mean another
/// node), so every node it hands out belongs to a live tree. That needs
/// every tree whose nodes reach [`NodeExt::field`] or [`named_children`]
/// to be a [`SyntaxTree`] (made by [`tree`] or [`parse`]): a tree made and
/// dropped elsewhere would not empty the memo.
#[derive(Default)]
struct Nav {
    epoch: u64,
    /// By node and field name (its address and length).
    fields: crate::hash::HashMap<(NodeKey, usize), Option<TSNode>>,
    named: crate::hash::HashMap<NodeKey, std::rc::Rc<[TSNode]>>,
}

/// A node's subtree and tree addresses: what tells it from every other
/// node of a live tree.
type NodeKey = (usize, usize);

fn node_key(node: Node) -> NodeKey {
    let raw = node.into_raw();
    (raw.id as usize, raw.tree as usize)
}

thread_local! {
    static NAV: RefCell<Nav> = RefCell::new(Nav::default());
}

/// `f` on this thread's memo, emptied first if a tree was dropped since.
fn with_nav<R>(f: impl FnOnce(&mut Nav) -> R) -> R {
    let epoch = TREES_DROPPED.load(Ordering::SeqCst);
    NAV.with(|nav| {
        let mut nav = nav.borrow_mut();
        if nav.epoch != epoch {
            *nav = Nav {
                epoch,
                ..Nav::default()
            };
        }
        f(&mut nav)
    })
}

/// A node from the memo, with the lifetime of the node it was found from.
///
/// # Safety
/// `raw` must belong to a live tree of lifetime `'t` (see [`Nav`]).
unsafe fn node_of<'t>(raw: TSNode) -> Node<'t> {
    // SAFETY: the memo only holds nodes of trees not yet dropped, and
    // `raw` was found from a node of the same tree, alive for `'t`.
    unsafe { Node::from_raw(raw) }
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
    let raw = with_nav(|nav| {
        nav.named
            .entry(node_key(node))
            .or_insert_with(|| {
                let mut cursor = node.walk();
                node.named_children(&mut cursor)
                    .filter(|c| c.kind_name() != "comment")
                    .map(Node::into_raw)
                    .collect()
            })
            .clone()
    });
    // SAFETY: children of `node`, whose tree lives for `'t`.
    raw.iter().map(|&c| unsafe { node_of(c) }).collect()
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
        // By the name's address: the names are literals.
        let at = (node_key(*self), name.as_ptr() as usize ^ (name.len() << 48));
        let raw = with_nav(|nav| {
            *nav.fields
                .entry(at)
                .or_insert_with(|| field_id(name).and_then(|id| self.child_by_field_id(id).map(Node::into_raw)))
        });
        // SAFETY: a child of `self`, whose tree lives for `'t`.
        raw.map(|c| unsafe { node_of(c) })
    }
}

/// The grammar's id of a field, looked up once per name: tree-sitter
/// compares the name against every field's.
fn field_id(name: &'static str) -> Option<u16> {
    thread_local! {
        static IDS: RefCell<crate::hash::HashMap<&'static str, Option<std::num::NonZeroU16>>> =
            RefCell::new(crate::hash::HashMap::default());
    }
    IDS.with(|ids| {
        *ids.borrow_mut()
            .entry(name)
            .or_insert_with(|| language().field_id_for_name(name))
    })
    .map(|id| id.get())
}

#[cfg(test)]
mod tests {
    use super::{named_children, parse, NodeExt};
    use tree_sitter::Node;

    /// Every node under `node`, by a walk of tree-sitter's own.
    fn all(node: Node) -> Vec<Node> {
        let mut out = vec![node];
        let mut at = 0;
        while at < out.len() {
            let n = out[at];
            out.extend((0..n.child_count()).filter_map(|i| n.child(i)));
            at += 1;
        }
        out
    }

    #[test]
    fn the_navigation_memo_answers_as_tree_sitter_does_across_dropped_trees() {
        // Trees parsed one after another, each dropped before the next:
        // the allocator hands the next tree the same addresses, and a memo
        // keyed by them must not answer with the dropped tree's nodes.
        let texts = [
            "__global__ void k(int *p) { if (threadIdx.x < 4) p[threadIdx.x] = 1; else return; }",
            "__global__ void k(int *p) { for (int i = 0; i < 4; ++i) { p[i] = i; } }",
            "int f(int a, int b) { while (a) { a = a - b; } return a; }",
        ];
        for round in 0..3 {
            for text in texts {
                let tree = parse(text).expect("parsed");
                for n in all(tree.root_node()) {
                    for field in [
                        "body",
                        "condition",
                        "consequence",
                        "alternative",
                        "declarator",
                        "left",
                        "right",
                    ] {
                        let memo = n.field(field);
                        let direct = n.child_by_field_name(field);
                        assert_eq!(memo, direct, "round {round}: {field} of {} in {text}", n.kind());
                        // Asked again, from the memo.
                        assert_eq!(n.field(field), direct);
                    }
                    let mut cursor = n.walk();
                    let direct: Vec<Node> = n
                        .named_children(&mut cursor)
                        .filter(|c| c.kind() != "comment")
                        .collect();
                    assert_eq!(named_children(n), direct, "round {round}: {} in {text}", n.kind());
                    assert_eq!(named_children(n), direct);
                }
            }
        }
    }
}
