//! The C preprocessor, for the device compilation pass of one target.
//!
//! Input: a translation unit's root file, the target (`cuda`/`hip`, arch) and
//! `-D`/`-U`/`-I`. Output: a [`Unit`], an ordered list of [`Fragment`]s of
//! expanded text, each with a [`SourceMap`] back to the original files.
//!
//! A unit is split into fragments at every `#include` that appears between
//! top-level declarations, and the expansion of an included file is cached by
//! the macro state at its entry. ggml's 200 translation units share a dozen big
//! headers, so each header is expanded (and later parsed) once per distinct
//! state rather than once per unit; the cache replays the state changes
//! (`#define`, `#undef`, `#pragma once`) that the cached inclusion made.
//!
//! Non-goals: system headers are not read (CUDA's builtins are modelled in
//! `lower::builtins`), `#line` is ignored, and trigraphs do not exist.

pub mod cond;
mod expand;
pub mod lex;
pub mod map;

use crate::hash::{HashMap, HashSet};
use std::collections::hash_map::DefaultHasher;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use crate::source::{FileId, SourceDb, SourceFile, Span};
use expand::HideSet;
use lex::TokKind;
pub use map::{Origin, Segment, SourceMap};

/// The language dialect whose device pass is preprocessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Cuda,
    Hip,
}

/// What the preprocessor is told from the command line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PpConfig {
    pub target: Target,
    /// `sm_80`, `compute_90`, `gfx942`, or a bare number (`800`).
    pub arch: String,
    /// `-D NAME[=VALUE]`, in order.
    pub defines: Vec<String>,
    /// `-U NAME`, applied after the defines.
    pub undefines: Vec<String>,
    pub include_dirs: Vec<PathBuf>,
}

impl Default for PpConfig {
    fn default() -> Self {
        PpConfig {
            target: Target::Cuda,
            arch: "sm_80".into(),
            defines: Vec::new(),
            undefines: Vec::new(),
            include_dirs: Vec::new(),
        }
    }
}

impl PpConfig {
    /// The numeric `__CUDA_ARCH__` for a CUDA arch name, if it is one.
    /// `sm_XY` and `compute_XY` (`sm_80`, `sm_120a`) are major X, minor Y:
    /// `__CUDA_ARCH__` is their digits times ten; a bare number is taken as
    /// the `__CUDA_ARCH__` value itself.
    pub fn cuda_arch(&self) -> Option<u32> {
        let named = self
            .arch
            .strip_prefix("sm_")
            .or_else(|| self.arch.strip_prefix("compute_"));
        let digits: String = named
            .unwrap_or(&self.arch)
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let n: u32 = digits.parse().ok()?;
        Some(if named.is_some() { n * 10 } else { n })
    }

    /// The warp (wavefront) size the target architecture executes with.
    pub fn physical_warp_size(&self) -> u32 {
        match self.target {
            Target::Cuda => 32,
            Target::Hip => {
                if self.arch.starts_with("gfx9") || self.arch.starts_with("gfx8") {
                    64
                } else {
                    32
                }
            }
        }
    }

    /// Built-in macros of the device pass, then `-D` and `-U`.
    fn builtin_text(&self) -> String {
        let mut s = String::from(BUILTIN_COMMON);
        match self.target {
            Target::Cuda => {
                let arch = self.cuda_arch().unwrap_or(800);
                let _ = writeln!(s, "#define __CUDA_ARCH__ {arch}\n#define __CUDA_ARCH_LIST__ {arch}");
                s.push_str(BUILTIN_CUDA);
            }
            Target::Hip => {
                let arch = self.arch.to_ascii_lowercase();
                let _ = writeln!(s, "#define __{arch}__ 1");
                if let Some(family) = arch
                    .strip_prefix("gfx")
                    .and_then(|a| a.get(..a.len().saturating_sub(2)))
                {
                    if !family.is_empty() {
                        let _ = writeln!(s, "#define __GFX{}__ 1", family.to_ascii_uppercase());
                    }
                }
                let _ = writeln!(s, "#define __AMDGCN_WAVEFRONT_SIZE {}", self.physical_warp_size());
                let _ = writeln!(s, "#define __AMDGCN_WAVEFRONT_SIZE__ {}", self.physical_warp_size());
                s.push_str(BUILTIN_HIP);
            }
        }
        for d in &self.defines {
            match d.split_once('=') {
                Some((name, value)) => {
                    let _ = writeln!(s, "#define {name} {value}");
                }
                None => {
                    let _ = writeln!(s, "#define {d} 1");
                }
            }
        }
        for u in &self.undefines {
            let _ = writeln!(s, "#undef {u}");
        }
        s
    }
}

/// Macros every device pass sees: language level and the limits and constants
/// that system headers (which are not read) would define.
const BUILTIN_COMMON: &str = "\
#define __cplusplus 201703L
#define __STDC_HOSTED__ 1
#define __CHAR_BIT__ 8
#define __SIZEOF_INT__ 4
#define __SIZEOF_LONG__ 8
#define __SIZEOF_POINTER__ 8
#define __LP64__ 1
#define __x86_64__ 1
#define __linux__ 1
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647-1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295u
#define LONG_MAX 9223372036854775807L
#define LONG_MIN (-9223372036854775807L-1)
#define ULONG_MAX 18446744073709551615ul
#define LLONG_MAX 9223372036854775807LL
#define LLONG_MIN (-9223372036854775807LL-1)
#define ULLONG_MAX 18446744073709551615ull
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647-1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MIN (-9223372036854775807LL-1)
#define INT64_MAX 9223372036854775807LL
#define UINT64_MAX 18446744073709551615ull
#define SIZE_MAX 18446744073709551615ul
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define INFINITY __builtin_huge_valf()
#define HUGE_VALF __builtin_huge_valf()
#define NAN __builtin_nanf(\"\")
#define M_PI 3.14159265358979323846
#define NULL nullptr
#define __align__(n) __attribute__((aligned(n)))
";

const BUILTIN_CUDA: &str = "\
#define __CUDACC__ 1
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 8
#define __CUDACC_VER_BUILD__ 0
#define CUDART_VERSION 12080
#define __CUDART_API_VERSION 12080
#define CUDA_VERSION 12080
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf(\"\")
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
";

const BUILTIN_HIP: &str = "\
#define __HIP__ 1
#define __HIPCC__ 1
#define __HIP_PLATFORM_AMD__ 1
#define __HIP_PLATFORM_HCC__ 1
#define __HIP_DEVICE_COMPILE__ 1
#define __AMDGCN__ 1
#define __clang__ 1
#define HIP_VERSION 60200000
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 2
";

/// An interned token spelling; valid within one [`Session`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(u32);

/// A token on its way through the preprocessor.
#[derive(Clone, Debug)]
pub(crate) struct Tok {
    kind: TokKind,
    sym: Sym,
    file: FileId,
    /// Offset of the token in `file`, or of the invocation for macro output.
    offset: u32,
    /// Index among the raw tokens of `file`; `u32::MAX` for tokens made by expansion.
    raw: u32,
    from_macro: bool,
    space: bool,
    bol: bool,
    hide: HideSet,
}

impl Tok {
    fn loc(&self) -> Span {
        Span::point(self.file, self.offset)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct MacroDef {
    /// `None` for object-like macros.
    params: Option<Vec<Sym>>,
    variadic: bool,
    body: Vec<Tok>,
    /// Hash of the definition; the unit's macro state hash is the xor of these.
    fingerprint: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// A problem the preprocessor met; it always carries on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diag {
    pub severity: Severity,
    pub span: Span,
    pub message: String,
}

impl Diag {
    fn warning(span: Span, message: String) -> Diag {
        Diag {
            severity: Severity::Warning,
            span,
            message,
        }
    }

    fn error(span: Span, message: String) -> Diag {
        Diag {
            severity: Severity::Error,
            span,
            message,
        }
    }
}

/// A contiguous piece of expanded text: one stretch of one file between
/// `#include`s, with everything macros made of it.
#[derive(Debug)]
pub struct Fragment {
    /// The file the fragment's text comes from (macro output maps there too,
    /// except for code of headers inlined inside braces).
    pub file: FileId,
    pub text: String,
    pub map: SourceMap,
    /// The syntax tree, parsed on first use by `syntax::tree`.
    pub tree: OnceLock<crate::syntax::SyntaxTree>,
    /// Parsing took longer than its budget: the tree is empty.
    pub parse_timed_out: std::sync::atomic::AtomicBool,
}

impl Fragment {
    pub fn origin(&self, offset: u32) -> Option<Origin> {
        self.map.origin(offset)
    }
}

/// A preprocessed translation unit.
#[derive(Debug)]
pub struct Unit {
    pub root: FileId,
    pub fragments: Vec<Arc<Fragment>>,
    pub diagnostics: Vec<Diag>,
    /// Every file the unit read, the root first.
    pub files: Vec<FileId>,
}

impl Unit {
    /// The expanded text of the whole unit, fragment by fragment, each preceded by
    /// a comment naming where it starts (for `explain --stage preprocess`).
    pub fn display(&self, db: &SourceDb) -> String {
        let mut s = String::new();
        for frag in &self.fragments {
            let (line, _) = frag
                .map
                .segments()
                .first()
                .map(|seg| db.file(seg.file).line_col(seg.orig))
                .unwrap_or((1, 1));
            let _ = writeln!(s, "// fragment {}:{}", db.name(frag.file), line);
            s.push_str(&frag.text);
            if !frag.text.ends_with('\n') {
                s.push('\n');
            }
        }
        s
    }
}

/// A change to the unit state, recorded so a cached inclusion can be replayed.
#[derive(Clone, Debug)]
enum StateOp {
    Define(Sym, Rc<MacroDef>),
    Undef(Sym),
    Once(FileId),
}

/// The result of including a file in a given state.
struct Inclusion {
    fragments: Vec<Arc<Fragment>>,
    ops: Vec<StateOp>,
    diags: Vec<Diag>,
}

#[derive(Clone, Copy)]
struct Cond {
    active: bool,
    /// Some branch of this conditional was (or, when the parent is inactive, must
    /// be treated as) taken already.
    taken: bool,
    seen_else: bool,
}

/// Per-unit state: the macro table and what is included.
pub(crate) struct UnitState {
    macros: HashMap<Sym, Rc<MacroDef>>,
    macro_hash: u64,
    once: HashSet<FileId>,
    once_hash: u64,
    include_stack: Vec<FileId>,
    recording: Vec<Vec<StateOp>>,
    fragments: Vec<Arc<Fragment>>,
    diags: Vec<Diag>,
    files: HashMap<FileId, Arc<SourceFile>>,
    file_order: Vec<FileId>,
    counter: u64,
}

impl UnitState {
    fn diag(&mut self, d: Diag) {
        self.diags.push(d);
    }

    fn line_col(&self, file: FileId, offset: u32) -> (u32, u32) {
        self.files.get(&file).map_or((0, 0), |f| f.line_col(offset))
    }

    fn file_name(&self, file: FileId) -> String {
        self.files.get(&file).map_or_else(String::new, |f| f.name.clone())
    }

    fn state_hash(&self) -> u64 {
        self.macro_hash ^ self.once_hash.rotate_left(17)
    }

    fn record(&mut self, op: StateOp) {
        if let Some(rec) = self.recording.last_mut() {
            rec.push(op);
        }
    }
}

/// How many folders above an including file a quoted include is looked for.
const MAX_ANCESTOR_SEARCH: usize = 3;

/// Deepest `#include` nesting followed.
const MAX_INCLUDE_DEPTH: usize = 200;

/// A preprocessing session: one configuration, many units, one cache.
pub struct Session {
    config: PpConfig,
    strings: Vec<Box<str>>,
    syms: HashMap<Box<str>, Sym>,
    file_toks: HashMap<FileId, Rc<Vec<Tok>>>,
    inclusions: HashMap<(FileId, u64), Rc<Inclusion>>,
    resolved: HashMap<(PathBuf, String, bool), Option<PathBuf>>,
    builtin: Option<FileId>,
    pool: FragmentPool,
}

impl Session {
    pub fn new(config: PpConfig) -> Session {
        Session {
            config,
            strings: Vec::new(),
            syms: HashMap::default(),
            file_toks: HashMap::default(),
            inclusions: HashMap::default(),
            resolved: HashMap::default(),
            builtin: None,
            pool: FragmentPool::default(),
        }
    }

    pub fn config(&self) -> &PpConfig {
        &self.config
    }

    fn intern(&mut self, s: &str) -> Sym {
        if let Some(&sym) = self.syms.get(s) {
            return sym;
        }
        let sym = Sym(self.strings.len() as u32);
        self.strings.push(s.into());
        self.syms.insert(s.into(), sym);
        sym
    }

    fn text(&self, sym: Sym) -> &str {
        &self.strings[sym.0 as usize]
    }

    fn is(&self, tok: &Tok, punct: &str) -> bool {
        tok.kind == TokKind::Punct && self.text(tok.sym) == punct
    }

    /// Preprocesses one translation unit.
    pub fn preprocess(&mut self, db: &mut SourceDb, root: FileId) -> Unit {
        let mut st = UnitState {
            macros: HashMap::default(),
            macro_hash: 0,
            once: HashSet::default(),
            once_hash: 0,
            include_stack: Vec::new(),
            recording: Vec::new(),
            fragments: Vec::new(),
            diags: Vec::new(),
            files: HashMap::default(),
            file_order: Vec::new(),
            counter: 0,
        };
        let builtin = match self.builtin {
            Some(id) => id,
            None => {
                let text = self.config.builtin_text();
                let id = db.add_text("<built-in>", &text);
                self.builtin = Some(id);
                id
            }
        };
        let mut sink = Emitter::new(builtin);
        self.process_file(db, &mut st, builtin, &mut sink);
        let mut em = Emitter::new(root);
        self.process_file(db, &mut st, root, &mut em);
        em.flush(&mut st, &mut self.pool);
        st.file_order.retain(|&f| f != builtin);
        let mut seen = HashSet::default();
        st.diags.retain(|d| seen.insert(d.clone()));
        Unit {
            root,
            fragments: st.fragments,
            diagnostics: st.diags,
            files: st.file_order,
        }
    }

    fn file_tokens(&mut self, db: &SourceDb, file: FileId) -> Rc<Vec<Tok>> {
        if let Some(t) = self.file_toks.get(&file) {
            return t.clone();
        }
        let src = db.file(file).clone();
        let raw = lex::lex(&src.text);
        let toks: Vec<Tok> = raw
            .iter()
            .enumerate()
            .map(|(i, r)| Tok {
                kind: r.kind,
                sym: self.intern(&src.text[r.start as usize..r.end as usize]),
                file,
                offset: r.start,
                raw: i as u32,
                from_macro: false,
                space: r.space,
                bol: r.bol,
                hide: None,
            })
            .collect();
        let toks = Rc::new(toks);
        self.file_toks.insert(file, toks.clone());
        toks
    }

    fn process_file(&mut self, db: &mut SourceDb, st: &mut UnitState, file: FileId, em: &mut Emitter) {
        let toks = self.file_tokens(db, file);
        if let std::collections::hash_map::Entry::Vacant(e) = st.files.entry(file) {
            e.insert(db.file(file).clone());
            st.file_order.push(file);
        }
        st.include_stack.push(file);
        let mut conds: Vec<Cond> = Vec::new();
        let mut i = 0;
        let n = toks.len();
        let line_end = |from: usize| {
            let mut j = from + 1;
            while j < n && !toks[j].bol {
                j += 1;
            }
            j
        };
        while i < n {
            let end = line_end(i);
            if toks[i].bol && self.is(&toks[i], "#") {
                self.directive(db, st, &toks[i..end], &mut conds, em);
                i = end;
                continue;
            }
            if !conds.last().is_none_or(|c| c.active) {
                i = end;
                continue;
            }
            // A run of text lines up to the next directive.
            let mut k = end;
            while k < n && !(toks[k].bol && self.is(&toks[k], "#")) {
                k = line_end(k);
            }
            let run = toks[i..k].to_vec();
            let expanded = self.expand(st, run, 0);
            for tok in &expanded {
                em.emit(&st.files, tok, &self.strings[tok.sym.0 as usize]);
            }
            i = k;
        }
        if !conds.is_empty() {
            st.diag(Diag::error(
                Span::point(file, db.file(file).text.len() as u32),
                "unterminated conditional directive".into(),
            ));
        }
        st.include_stack.pop();
    }

    /// Handles one directive line; `line[0]` is the `#`.
    fn directive(
        &mut self,
        db: &mut SourceDb,
        st: &mut UnitState,
        line: &[Tok],
        conds: &mut Vec<Cond>,
        em: &mut Emitter,
    ) {
        let Some(name_tok) = line.get(1) else {
            return; // null directive
        };
        let name = self.text(name_tok.sym).to_string();
        let args = &line[2..];
        let active = conds.last().is_none_or(|c| c.active);
        let loc = name_tok.loc();
        match name.as_str() {
            "if" | "ifdef" | "ifndef" => {
                if !active {
                    conds.push(Cond {
                        active: false,
                        taken: true,
                        seen_else: false,
                    });
                    return;
                }
                let value = match name.as_str() {
                    "if" => self.eval_condition(st, args, loc),
                    _ => {
                        let defined = args.first().is_some_and(|t| st.macros.contains_key(&t.sym));
                        if args.is_empty() {
                            st.diag(Diag::error(loc, format!("#{name} without a macro name")));
                        }
                        defined == (name == "ifdef")
                    }
                };
                conds.push(Cond {
                    active: value,
                    taken: value,
                    seen_else: false,
                });
            }
            "elif" | "elifdef" | "elifndef" => {
                let Some(top) = conds.last().copied() else {
                    st.diag(Diag::error(loc, format!("#{name} without #if")));
                    return;
                };
                if top.seen_else {
                    st.diag(Diag::error(loc, format!("#{name} after #else")));
                }
                if top.taken {
                    conds.last_mut().expect("checked").active = false;
                    return;
                }
                let value = match name.as_str() {
                    "elif" => self.eval_condition(st, args, loc),
                    _ => {
                        let defined = args.first().is_some_and(|t| st.macros.contains_key(&t.sym));
                        defined == (name == "elifdef")
                    }
                };
                let c = conds.last_mut().expect("checked");
                c.active = value;
                c.taken = value;
            }
            "else" => {
                let Some(c) = conds.last_mut() else {
                    st.diag(Diag::error(loc, "#else without #if".into()));
                    return;
                };
                if c.seen_else {
                    let c = *c;
                    st.diag(Diag::error(loc, "second #else".into()));
                    conds.last_mut().expect("checked").active = !c.taken;
                    return;
                }
                c.seen_else = true;
                c.active = !c.taken;
                c.taken = true;
            }
            "endif" => {
                if conds.pop().is_none() {
                    st.diag(Diag::error(loc, "#endif without #if".into()));
                }
            }
            _ if !active => {}
            "define" => self.define(st, args, loc),
            "undef" => {
                if let Some(t) = args.first() {
                    self.undef(st, t.sym);
                }
            }
            "include" | "include_next" | "import" => self.include(db, st, args, loc, em),
            "pragma" => {
                if args.first().is_some_and(|t| self.text(t.sym) == "once") {
                    let file = *st.include_stack.last().expect("inside a file");
                    self.mark_once(st, file);
                }
            }
            "error" => {
                let message: Vec<&str> = args.iter().map(|t| self.text(t.sym)).collect();
                st.diag(Diag::error(loc, format!("#error {}", message.join(" "))));
            }
            "warning" | "line" | "ident" | "sccs" | "assert" | "unassert" => {}
            other => {
                if name_tok.kind != TokKind::Number {
                    st.diag(Diag::warning(loc, format!("unknown directive #{other}")));
                }
            }
        }
    }

    fn define(&mut self, st: &mut UnitState, args: &[Tok], loc: Span) {
        let Some(name) = args.first() else {
            st.diag(Diag::error(loc, "#define without a macro name".into()));
            return;
        };
        if name.kind != TokKind::Ident {
            st.diag(Diag::error(name.loc(), "macro name must be an identifier".into()));
            return;
        }
        let mut rest = &args[1..];
        let mut params = None;
        let mut variadic = false;
        // Function-like only when `(` follows the name without white space.
        if rest.first().is_some_and(|t| self.is(t, "(") && !t.space) {
            let mut names = Vec::new();
            let mut j = 1;
            let mut closed = false;
            while j < rest.len() {
                let t = &rest[j];
                match self.text(t.sym) {
                    ")" => {
                        closed = true;
                        j += 1;
                        break;
                    }
                    "," => {}
                    "..." => {
                        variadic = true;
                        if names.is_empty() || rest[j - 1].kind != TokKind::Ident {
                            names.push(self.intern("__VA_ARGS__"));
                        }
                    }
                    _ if t.kind == TokKind::Ident => names.push(t.sym),
                    other => {
                        let message = format!("unexpected `{other}` in macro parameters");
                        st.diag(Diag::error(t.loc(), message));
                    }
                }
                j += 1;
            }
            if !closed {
                st.diag(Diag::error(name.loc(), "unterminated macro parameter list".into()));
                return;
            }
            // `#define F(args...)` names the variadic parameter `args`: nothing to add.
            params = Some(names);
            rest = &rest[j..];
        }
        let body: Vec<Tok> = rest
            .iter()
            .map(|t| Tok {
                hide: None,
                ..t.clone()
            })
            .collect();
        let mut h = DefaultHasher::new();
        name.sym.hash(&mut h);
        params.hash(&mut h);
        variadic.hash(&mut h);
        for t in &body {
            (t.sym, t.space).hash(&mut h);
        }
        let def = Rc::new(MacroDef {
            params,
            variadic,
            body,
            fingerprint: h.finish(),
        });
        self.set_macro(st, name.sym, def);
    }

    fn set_macro(&mut self, st: &mut UnitState, name: Sym, def: Rc<MacroDef>) {
        if let Some(old) = st.macros.get(&name) {
            st.macro_hash ^= old.fingerprint;
        }
        st.macro_hash ^= def.fingerprint;
        st.record(StateOp::Define(name, def.clone()));
        st.macros.insert(name, def);
    }

    fn undef(&mut self, st: &mut UnitState, name: Sym) {
        if let Some(old) = st.macros.remove(&name) {
            st.macro_hash ^= old.fingerprint;
        }
        st.record(StateOp::Undef(name));
    }

    fn mark_once(&mut self, st: &mut UnitState, file: FileId) {
        if st.once.insert(file) {
            let mut h = DefaultHasher::new();
            file.hash(&mut h);
            st.once_hash ^= h.finish();
        }
        st.record(StateOp::Once(file));
    }

    /// Evaluates the tokens of `#if`/`#elif`; problems are reported and count as false.
    fn eval_condition(&mut self, st: &mut UnitState, args: &[Tok], loc: Span) -> bool {
        let mut toks: Vec<Tok> = Vec::with_capacity(args.len());
        let mut i = 0;
        // `defined` and `__has_*` are evaluated before macro expansion.
        while i < args.len() {
            let t = &args[i];
            let text = self.text(t.sym);
            let is_query = matches!(
                text,
                "defined"
                    | "__has_include"
                    | "__has_include_next"
                    | "__has_builtin"
                    | "__has_attribute"
                    | "__has_cpp_attribute"
                    | "__has_feature"
                    | "__has_extension"
            );
            if t.kind == TokKind::Ident && is_query {
                let query = text.to_string();
                let (operand, next) = self.query_operand(args, i + 1);
                let value = match query.as_str() {
                    "defined" => operand.first().is_some_and(|o| st.macros.contains_key(&o.sym)),
                    "__has_include" | "__has_include_next" => {
                        let spelled: String = operand.iter().map(|o| self.text(o.sym)).collect();
                        let current = *st.include_stack.last().expect("inside a file");
                        self.has_include(st, current, &spelled)
                    }
                    _ => false,
                };
                toks.push(Tok {
                    kind: TokKind::Number,
                    sym: self.intern(if value { "1" } else { "0" }),
                    ..t.clone()
                });
                i = next;
                continue;
            }
            toks.push(t.clone());
            i += 1;
        }
        let expanded = self.expand(st, toks, 0);
        let items: Vec<(TokKind, &str)> = expanded.iter().map(|t| (t.kind, self.text(t.sym))).collect();
        match cond::eval(&items) {
            Ok(v) => v.truthy(),
            Err(message) => {
                st.diag(Diag::error(loc, message));
                false
            }
        }
    }

    /// The operand of `defined X`, `defined(X)` or `__has_include(<a/b.h>)`, and the index after it.
    fn query_operand<'t>(&self, args: &'t [Tok], start: usize) -> (&'t [Tok], usize) {
        if args.get(start).is_some_and(|t| self.is(t, "(")) {
            let mut depth = 0;
            for j in start..args.len() {
                if self.is(&args[j], "(") {
                    depth += 1;
                } else if self.is(&args[j], ")") {
                    depth -= 1;
                    if depth == 0 {
                        return (&args[start + 1..j], j + 1);
                    }
                }
            }
            return (&args[start + 1..], args.len());
        }
        let end = (start + 1).min(args.len());
        (&args[start..end], end)
    }

    fn has_include(&mut self, st: &UnitState, current: FileId, spelled: &str) -> bool {
        let (name, angled) = if let Some(n) = spelled.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
            (n.to_string(), true)
        } else {
            (spelled.trim_matches('"').to_string(), false)
        };
        let dir = st
            .files
            .get(&current)
            .and_then(|f| f.path.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        if self.resolve(&dir, &name, angled).is_some() {
            return true;
        }
        // The modelled system headers count as present.
        angled || is_system_header(&name)
    }

    fn resolve(&mut self, dir: &Path, name: &str, angled: bool) -> Option<PathBuf> {
        let key = (dir.to_path_buf(), name.to_string(), angled);
        if let Some(r) = self.resolved.get(&key) {
            return r.clone();
        }
        let mut candidates = Vec::new();
        if !angled {
            candidates.push(dir.join(name));
        }
        for inc in &self.config.include_dirs {
            candidates.push(inc.join(name));
        }
        if !angled {
            // Without the project's build flags, look where projects conventionally put
            // their headers: folders above the includer and their `include/` folders.
            for ancestor in dir.ancestors().skip(1).take(MAX_ANCESTOR_SEARCH) {
                candidates.push(ancestor.join(name));
                candidates.push(ancestor.join("include").join(name));
            }
        }
        let found = candidates.into_iter().find(|p| p.is_file());
        self.resolved.insert(key, found.clone());
        found
    }

    fn include(&mut self, db: &mut SourceDb, st: &mut UnitState, args: &[Tok], loc: Span, em: &mut Emitter) {
        let mut spelled: String = args.iter().map(|t| self.text(t.sym)).collect();
        if !(spelled.starts_with('"') || spelled.starts_with('<')) {
            let expanded = self.expand(st, args.to_vec(), 0);
            spelled = expanded.iter().map(|t| self.text(t.sym)).collect();
        }
        let (name, angled) = if let Some(n) = spelled.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
            (n.to_string(), true)
        } else if spelled.len() >= 2 && spelled.starts_with('"') && spelled.ends_with('"') {
            (spelled[1..spelled.len() - 1].to_string(), false)
        } else {
            st.diag(Diag::error(loc, format!("malformed #include {spelled}")));
            return;
        };
        let current = *st.include_stack.last().expect("inside a file");
        let dir = st
            .files
            .get(&current)
            .and_then(|f| f.path.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        let Some(path) = self.resolve(&dir, &name, angled) else {
            if !angled && !is_system_header(&name) {
                st.diag(Diag::warning(
                    loc,
                    format!("cannot find include file \"{name}\"; what it declares is unknown"),
                ));
            }
            return;
        };
        let id = match db.load(&path) {
            Ok(id) => id,
            Err(e) => {
                st.diag(Diag::error(loc, e.to_string()));
                return;
            }
        };
        if st.once.contains(&id) {
            return;
        }
        if st.include_stack.len() >= MAX_INCLUDE_DEPTH {
            st.diag(Diag::error(
                loc,
                format!("#include nested deeper than {MAX_INCLUDE_DEPTH}"),
            ));
            return;
        }
        if em.depth != 0 {
            // Inside braces or parentheses: the header's text becomes part of this fragment.
            self.process_file(db, st, id, em);
            return;
        }
        em.flush(st, &mut self.pool);
        let key = (id, st.state_hash());
        if let Some(inc) = self.inclusions.get(&key).cloned() {
            st.fragments.extend(inc.fragments.iter().cloned());
            st.diags.extend(inc.diags.iter().cloned());
            for op in &inc.ops {
                match op {
                    StateOp::Define(name, def) => self.set_macro(st, *name, def.clone()),
                    StateOp::Undef(name) => self.undef(st, *name),
                    StateOp::Once(file) => self.mark_once(st, *file),
                }
            }
            for f in collect_files(&inc.fragments) {
                if let std::collections::hash_map::Entry::Vacant(e) = st.files.entry(f) {
                    e.insert(db.file(f).clone());
                    st.file_order.push(f);
                }
            }
            return;
        }
        let first_fragment = st.fragments.len();
        let first_diag = st.diags.len();
        st.recording.push(Vec::new());
        let mut sub = Emitter::new(id);
        self.process_file(db, st, id, &mut sub);
        sub.flush(st, &mut self.pool);
        let ops = st.recording.pop().expect("pushed above");
        if let Some(parent) = st.recording.last_mut() {
            parent.extend(ops.iter().cloned());
        }
        let inc = Inclusion {
            fragments: st.fragments[first_fragment..].to_vec(),
            ops,
            diags: st.diags[first_diag..].to_vec(),
        };
        self.inclusions.insert(key, Rc::new(inc));
    }
}

fn collect_files(fragments: &[Arc<Fragment>]) -> Vec<FileId> {
    let mut files = Vec::new();
    for f in fragments {
        for seg in f.map.segments() {
            if !files.contains(&seg.file) {
                files.push(seg.file);
            }
        }
    }
    files
}

/// Headers of CUDA, HIP, the C++ library and CUB, which are not read: what
/// kernels use of them is modelled in `lower::builtins`.
fn is_system_header(name: &str) -> bool {
    const PREFIXES: [&str; 12] = [
        "cuda",
        "cub/",
        "hip/",
        "rocprim",
        "thrust/",
        "mma.h",
        "cooperative_groups",
        "musa",
        "mublas",
        "cublas",
        "nccl",
        "rccl",
    ];
    const EXACT: [&str; 14] = [
        "vector_types.h",
        "device_launch_parameters.h",
        "math_constants.h",
        "sm_",
        "crt/",
        "curand",
        "stdint.h",
        "stdio.h",
        "stdlib.h",
        "assert.h",
        "math.h",
        "float.h",
        "limits.h",
        "string.h",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || EXACT.iter().any(|p| name.starts_with(p))
}

/// Fragments by content, so that units that expand a header identically share
/// one fragment (and one parse).
#[derive(Default)]
struct FragmentPool {
    by_hash: HashMap<u64, Vec<Arc<Fragment>>>,
}

impl FragmentPool {
    fn share(&mut self, fragment: Fragment) -> Arc<Fragment> {
        let mut h = DefaultHasher::new();
        fragment.file.hash(&mut h);
        fragment.text.hash(&mut h);
        let bucket = self.by_hash.entry(h.finish()).or_default();
        if let Some(same) = bucket
            .iter()
            .find(|f| f.file == fragment.file && f.text == fragment.text && f.map.segments() == fragment.map.segments())
        {
            return same.clone();
        }
        let shared = Arc::new(fragment);
        bucket.push(shared.clone());
        shared
    }
}

/// Writes expanded tokens as text and records the source map.
struct Emitter {
    file: FileId,
    text: String,
    map: SourceMap,
    /// Nesting of `{`/`(` in the text written so far.
    depth: i32,
    /// The last token written that was not made by a macro: file, end offset,
    /// raw index, line.
    last_direct: Option<(FileId, u32, u32, u32)>,
    /// The shapes of the last four tokens written, newest last (see
    /// [`Emitter::spelling`]).
    recent: [Shape; 4],
}

/// What the emitter remembers of a token to tell `(x) && y` from a cast.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Open,
    Close,
    Ident,
    /// `return`, `case`, `co_return`: an expression follows.
    ExprKeyword,
    Punct,
    Other,
}

/// Most blank lines written to keep a later token on its original line.
const MAX_BLANK_LINES: u32 = 400;

impl Emitter {
    fn new(file: FileId) -> Emitter {
        Emitter {
            file,
            text: String::new(),
            map: SourceMap::default(),
            depth: 0,
            last_direct: None,
            recent: [Shape::Other; 4],
        }
    }

    /// The spelling to write for a token. `a == (B) && c` is read by the
    /// parser as a cast of `&&c` (the address of a label, a GNU extension)
    /// to the type `B`, which also breaks the precedence of the whole
    /// condition (`type == (type_) && J == (J_)` in a macro's table). In C++
    /// `and` is the same token as `&&` everywhere; written as `and` after a
    /// parenthesised name that an operator precedes, the parser reads it as
    /// the logical and it is. (A name before the `(`, as in `decltype(x) &&`
    /// or a ref-qualifier `f(T) &&`, keeps `&&`.)
    fn spelling<'s>(&mut self, tok: &Tok, spelling: &'s str) -> &'s str {
        let shape = match (tok.kind, spelling) {
            (TokKind::Punct, "(") => Shape::Open,
            (TokKind::Punct, ")") => Shape::Close,
            (TokKind::Punct, _) => Shape::Punct,
            (TokKind::Ident, "return" | "case" | "co_return") => Shape::ExprKeyword,
            (TokKind::Ident, _) => Shape::Ident,
            _ => Shape::Other,
        };
        let recent = self.recent;
        self.recent = [recent[1], recent[2], recent[3], shape];
        let operand_in_parens = matches!(
            recent,
            [
                Shape::Punct | Shape::Open | Shape::ExprKeyword,
                Shape::Open,
                Shape::Ident,
                Shape::Close
            ]
        );
        if spelling == "&&" && operand_in_parens {
            "and"
        } else {
            spelling
        }
    }

    fn emit(&mut self, files: &HashMap<FileId, Arc<SourceFile>>, tok: &Tok, spelling: &str) {
        let source_len = spelling.len() as u32;
        let spelling = self.spelling(tok, spelling);
        if tok.kind == TokKind::Punct {
            match spelling {
                "{" | "(" => self.depth += 1,
                "}" | ")" => self.depth -= 1,
                _ => {}
            }
        }
        if tok.from_macro {
            if !self.text.is_empty() && !self.text.ends_with(char::is_whitespace) {
                self.text.push(' ');
            }
            self.map.push(Segment {
                out: self.text.len() as u32,
                len: spelling.len() as u32,
                file: tok.file,
                orig: tok.offset,
                from_macro: true,
            });
            self.text.push_str(spelling);
            return;
        }
        let Some(src) = files.get(&tok.file) else {
            return;
        };
        let mut line = None;
        match self.last_direct {
            Some((file, end, raw, last_line)) if file == tok.file && raw + 1 == tok.raw && end <= tok.offset => {
                let gap = &src.text[end as usize..tok.offset as usize];
                self.map.push(Segment {
                    out: self.text.len() as u32,
                    len: gap.len() as u32,
                    file: tok.file,
                    orig: end,
                    from_macro: false,
                });
                self.text.push_str(gap);
                line = Some(last_line + gap.bytes().filter(|&b| b == b'\n').count() as u32);
            }
            Some((file, _, _, last_line)) if file == tok.file => {
                let (tok_line, col) = src.line_col(tok.offset);
                if tok_line > last_line {
                    for _ in 0..(tok_line - last_line).min(MAX_BLANK_LINES) {
                        self.text.push('\n');
                    }
                    for _ in 1..col.min(200) {
                        self.text.push(' ');
                    }
                } else if !self.text.ends_with(char::is_whitespace) {
                    self.text.push(' ');
                }
                line = Some(tok_line);
            }
            _ => {
                if !self.text.is_empty() {
                    self.text.push('\n');
                }
            }
        }
        let line = line.unwrap_or_else(|| src.line_col(tok.offset).0);
        self.map.push(Segment {
            out: self.text.len() as u32,
            len: spelling.len() as u32,
            file: tok.file,
            orig: tok.offset,
            from_macro: false,
        });
        self.text.push_str(spelling);
        self.last_direct = Some((tok.file, tok.offset + source_len, tok.raw, line));
    }

    /// Ends the current fragment (if it has text) and starts an empty one.
    /// Fragments with the same text and map are shared, so each is parsed once.
    fn flush(&mut self, st: &mut UnitState, pool: &mut FragmentPool) {
        if !self.text.trim().is_empty() {
            if !self.text.ends_with('\n') {
                self.text.push('\n');
            }
            let fragment = Fragment {
                file: self.file,
                text: std::mem::take(&mut self.text),
                map: std::mem::take(&mut self.map),
                tree: OnceLock::new(),
                parse_timed_out: Default::default(),
            };
            st.fragments.push(pool.share(fragment));
        }
        self.text.clear();
        self.map = SourceMap::default();
        self.depth = 0;
        self.last_direct = None;
        self.recent = [Shape::Other; 4];
    }
}

#[cfg(test)]
mod tests;
