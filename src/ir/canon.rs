//! The canonical text of an access model with the parts of its kernel that
//! the obligations read. Template instantiations often differ only where
//! memory is not concerned (`op_exp` against `op_log` applied to a loaded
//! value): their models are then the same up to the numbering of term
//! nodes, and one check decides them all. The text is exact (no digest), so
//! equal texts mean equal inputs to the checker, never a collision. Over
//! element types (`T = float`, `half`) they are the same once measured in
//! elements (`passes::units`), their floating-point kinds renamed one to
//! one, and the types no check reads (a loaded value that only flows into
//! stored data) left out.

use std::fmt::Write;

use super::access::{AccessModel, Origin, Symbol};
use super::term::{Term, TermKind};
use super::{Kernel, ObjectKind};
use crate::hash::HashMap;

/// `model` and what the obligations read of `kernel` (its name and span,
/// parameters, objects, kernel symbols, unmodelled parts, and the opaque
/// operations its terms apply), written out with term nodes numbered in
/// order of first use. Symbols keep their indices, and every one is
/// written; the type only of those the checks can reach
/// ([`referenced_symbols`]).
pub fn canonical(model: &AccessModel, kernel: &Kernel) -> String {
    let mut c = Canon {
        kernel,
        model,
        out: String::new(),
        numbers: HashMap::default(),
    };
    c.write();
    float_kinds_renamed(&c.out)
}

/// Which symbols the checks can read: those the model's terms mention
/// (records, collectives, loops, facts), with the symbols their own
/// origins and loop counters mention, and every collective result kept
/// with its operand (`AccessModel::lane_reductions` reads them all). The
/// checks reach a symbol only through these, so the type of any other (a
/// loaded value that only flows into stored data: `float` in one
/// instantiation, `half` in another) reads as nothing.
fn referenced_symbols(m: &AccessModel) -> Vec<bool> {
    let mut referenced = vec![false; m.symbols.len()];
    let mut seen = crate::hash::HashSet::default();
    let mut found: Vec<super::term::SymbolId> = Vec::new();
    let mut roots: Vec<&Term> = Vec::new();
    for r in &m.records {
        roots.extend([&r.offset, &r.width, &r.pc, &r.phase.block, &r.phase.warp, &r.phase.grid]);
    }
    for s in &m.syncs {
        roots.push(&s.reach);
        roots.extend(s.guards.iter().map(|(_, g)| g));
        roots.extend(&s.mask);
    }
    for l in &m.loops {
        roots.extend([&l.entry, &l.leave, &l.escape]);
        found.push(l.counter);
    }
    roots.extend(&m.assumptions);
    roots.extend(&m.evaluated);
    for t in roots {
        super::term::symbols_of(t, &mut found, &mut seen);
    }
    for r in &m.records {
        found.extend(&r.loops);
    }
    for s in &m.syncs {
        found.extend(&s.loops);
    }
    for (i, s) in m.symbols.iter().enumerate() {
        if matches!(s.origin, Origin::Collective { operand: Some(_), .. }) {
            found.push(super::term::SymbolId(i as u32));
        }
    }
    while let Some(id) = found.pop() {
        let Some(slot) = referenced.get_mut(id.index()) else {
            continue;
        };
        if *slot {
            continue;
        }
        *slot = true;
        let s = m.symbol(id);
        found.extend(&s.deps);
        match &s.origin {
            Origin::Load { offset, width, .. } => {
                super::term::symbols_of(offset, &mut found, &mut seen);
                super::term::symbols_of(width, &mut found, &mut seen);
            }
            Origin::Collective { operand: Some(t), .. } => super::term::symbols_of(t, &mut found, &mut seen),
            Origin::Progress { advance, exit_of, .. } => {
                if let Some(t) = advance {
                    super::term::symbols_of(t, &mut found, &mut seen);
                }
                found.extend(exit_of);
            }
            _ => {}
        }
    }
    referenced
}

/// `text` with each floating-point kind named by its order of first
/// appearance. The checks treat floating-point values as uninterpreted,
/// their operations as functions named by kind, so models that differ by a
/// one-to-one renaming of kinds (`float` ↔ `half` throughout) are the same
/// problem; numbering by first appearance makes equal texts mean such a
/// renaming exists (two kinds never merge into one).
fn float_kinds_renamed(text: &str) -> String {
    const KINDS: [&str; 4] = ["Float(Half)", "Float(BFloat16)", "Float(F32)", "Float(F64)"];
    let mut order: Vec<usize> = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Float(") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        match KINDS.iter().position(|k| tail.starts_with(k)) {
            Some(kind) => {
                let n = order.iter().position(|&k| k == kind).unwrap_or_else(|| {
                    order.push(kind);
                    order.len() - 1
                });
                let _ = write!(out, "Float(#{n})");
                rest = &tail[KINDS[kind].len()..];
            }
            None => {
                out.push_str("Float(");
                rest = &tail["Float(".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

struct Canon<'a> {
    kernel: &'a Kernel,
    model: &'a AccessModel,
    out: String,
    /// A term node's id to its number in `out`.
    numbers: HashMap<u32, usize>,
}

impl Canon<'_> {
    fn write(&mut self) {
        let (k, m) = (self.kernel, self.model);
        // Objects without their element types and sizes, which only
        // reports read: a model measured in units (`passes::units`) is
        // then one text for every element type.
        let objects: Vec<_> = k
            .objects
            .iter()
            .map(|o| {
                let kind = match &o.kind {
                    ObjectKind::StaticShared { .. } => "static shared".to_string(),
                    ObjectKind::Local { .. } => "local".to_string(),
                    other => format!("{other:?}"),
                };
                (&o.name, o.space, kind, o.restrict, o.span)
            })
            .collect();
        let _ = writeln!(
            self.out,
            "kernel {} {:?} warp {}\nparams {:?}\nobjects {objects:?}\nsyms {:?}\nunknowns {:?}",
            k.name, k.span, m.warp_size, k.params, k.syms, k.unknowns
        );
        let _ = writeln!(
            self.out,
            "model unknowns {:?}\nassumed {:?}\nread-only {:?}",
            m.unknowns, m.assumed, m.read_only
        );
        let referenced = referenced_symbols(m);
        for (i, s) in m.symbols.iter().enumerate() {
            let line = self.symbol(s, referenced[i]);
            let _ = writeln!(self.out, "symbol {line}");
        }
        for r in &m.records {
            let t = [&r.offset, &r.width, &r.pc, &r.phase.block, &r.phase.warp, &r.phase.grid].map(|t| self.term(t));
            let _ = writeln!(
                self.out,
                "record {:?} {:?} {t:?} {} {} {:?} {:?} {:?}",
                r.object, r.kind, r.collective, r.exchange, r.loops, r.span, r.site
            );
        }
        for s in &m.syncs {
            let reach = self.term(&s.reach);
            let guards: Vec<_> = s.guards.iter().map(|(at, g)| (*at, self.term(g))).collect();
            let mask = s.mask.as_ref().map(|t| self.term(t));
            let _ = writeln!(
                self.out,
                "sync {} {:?} {reach} {guards:?} {mask:?} {:?} {:?} {:?}",
                s.name, s.group, s.loops, s.span, s.site
            );
        }
        for l in &m.loops {
            let t = [&l.entry, &l.leave, &l.escape].map(|t| self.term(t));
            let _ = writeln!(
                self.out,
                "loop {:?} {:?} {t:?} {:?} {} {:?}",
                l.counter, l.loops, l.syncs, l.exits_at_top, l.span
            );
        }
        let facts: Vec<usize> = m.assumptions.iter().map(|t| self.term(t)).collect();
        let _ = writeln!(self.out, "assumptions {facts:?}");
        let evaluated: Vec<usize> = m.evaluated.iter().map(|t| self.term(t)).collect();
        let _ = writeln!(self.out, "evaluated {evaluated:?}");
    }

    /// A symbol's line; without its type where no term refers to it (see
    /// [`referenced_symbols`]).
    fn symbol(&mut self, s: &Symbol, referenced: bool) -> String {
        let origin = match &s.origin {
            Origin::Load { object, offset, width } => {
                format!("load {object:?} {} {}", self.term(offset), self.term(width))
            }
            Origin::Collective { name, operand } => {
                format!("collective {name} {:?}", operand.as_ref().map(|t| self.term(t)))
            }
            Origin::Progress { var, advance, exit_of } => {
                format!(
                    "progress {var} {:?} {exit_of:?}",
                    advance.as_ref().map(|t| self.term(t))
                )
            }
            other => format!("{other:?}"),
        };
        let ty = if referenced { format!("{:?}", s.ty) } else { "-".into() };
        format!("{} {ty} {:?} {origin} {:?} {:?}", s.name, s.scope, s.deps, s.span)
    }

    /// The term's number, writing it (after its operands) when first met.
    fn term(&mut self, t: &Term) -> usize {
        if let Some(&n) = self.numbers.get(&t.id) {
            return n;
        }
        let node = match &t.kind {
            TermKind::Int(v) => format!("int {v}"),
            TermKind::Bool(b) => format!("bool {b}"),
            TermKind::Float(bits) => format!("float {bits}"),
            TermKind::Builtin(b) => format!("{b:?}"),
            TermKind::Param(i) => format!("param {i}"),
            TermKind::Sym(s) => format!("sym {s:?}"),
            TermKind::Symbol(s) => format!("symbol {}", s.0),
            TermKind::Unary(op, a) => format!("{op:?} {}", self.term(a)),
            TermKind::Binary(op, ty, a, b) => format!("{op:?} {ty:?} {} {}", self.term(a), self.term(b)),
            TermKind::Select(c, a, b) => format!("select {} {} {}", self.term(c), self.term(a), self.term(b)),
            TermKind::Cast(a) => format!("cast {}", self.term(a)),
            TermKind::Opaque(op, args) => {
                let args: Vec<usize> = args.iter().map(|a| self.term(a)).collect();
                let info = self.kernel.ops.get(op.0 as usize);
                format!("opaque {op:?} {info:?} {args:?}")
            }
        };
        let n = self.numbers.len();
        self.numbers.insert(t.id, n);
        let wraps = if self.model.no_wrap.contains(&t.id) {
            " no-wrap"
        } else {
            ""
        };
        let _ = writeln!(self.out, "t{n} {:?} {node}{wraps}", t.ty);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical text of every instantiation of the first kernel in
    /// `src`, with the kernel's printed IR.
    fn texts(src: &str) -> Vec<(String, String)> {
        crate::lower::tests::kernels(src)
            .iter()
            .map(|k| {
                let model = crate::passes::model(k, 32, &[], true);
                (canonical(&model, k), k.to_string())
            })
            .collect()
    }

    /// The canonical texts of the instantiations of the first kernel in
    /// `src` that the launches determine (not the symbolic cover).
    fn concrete_texts(src: &str) -> Vec<String> {
        texts(src)
            .into_iter()
            .filter(|(_, ir)| !ir.contains("<symbolic"))
            .map(|(text, _)| text)
            .collect()
    }

    #[test]
    fn instantiations_that_differ_only_in_values_share_a_text() {
        let found = texts(
            "struct twice { static __device__ float apply(float x) { return 2.0f * x; } };
             struct square { static __device__ float apply(float x) { return x * x; } };
             template <typename Op> __global__ void map(float *out, const float *in) {
                 int i = blockIdx.x * blockDim.x + threadIdx.x;
                 float v = in[i];
                 out[i] = Op::apply(v);
             }
             void run(float *o, const float *i) {
                 map<twice><<<4, 64>>>(o, i);
                 map<square><<<4, 64>>>(o, i);
             }",
        );
        let concrete: Vec<_> = found.iter().filter(|(_, ir)| !ir.contains("<symbolic")).collect();
        assert_eq!(concrete.len(), 2, "{found:#?}");
        assert_ne!(concrete[0].1, concrete[1].1, "the IRs differ in the value stored");
        assert_eq!(concrete[0].0, concrete[1].0);
    }

    #[test]
    fn element_types_share_a_text_and_kinds_never_merge() {
        let concrete = concrete_texts(
            "template <typename T> __global__ void shift(T *out, const T *in, int n) {
                 int i = blockIdx.x * blockDim.x + threadIdx.x;
                 if (i + 1 < n) out[i] = in[i + 1];
             }
             void run(float *a, const float *b, double *c, const double *d, int n) {
                 shift<float><<<4, 64>>>(a, b, n);
                 shift<double><<<4, 64>>>(c, d, n);
             }",
        );
        assert_eq!(concrete.len(), 2, "{concrete:#?}");
        assert_eq!(concrete[0], concrete[1], "in element units the two are one check");
        let one = float_kinds_renamed("a Float(F32) b Float(Half) c Float(F32)");
        assert_eq!(one, "a Float(#0) b Float(#1) c Float(#0)");
        assert_ne!(one, float_kinds_renamed("a Float(F32) b Float(F32) c Float(F32)"));
    }

    #[test]
    fn loaded_values_that_only_reach_stored_data_have_no_type() {
        // The loaded element is `float` in one instantiation and `double`
        // beside a `float` parameter in the other: the kinds' numbering
        // differs, but no term refers to the load, so nothing reads its type.
        let concrete = concrete_texts(
            "template <typename T> __global__ void scale(T *out, const T *in, float s, int n) {
                 int i = blockIdx.x * blockDim.x + threadIdx.x;
                 if (i < n) out[i] = (T) ((float) in[i] * s);
             }
             void run(float *a, const float *b, double *c, const double *d, int n) {
                 scale<float><<<4, 64>>>(a, b, 2.0f, n);
                 scale<double><<<4, 64>>>(c, d, 2.0f, n);
             }",
        );
        assert_eq!(concrete.len(), 2, "{concrete:#?}");
        assert_eq!(concrete[0], concrete[1]);
    }

    #[test]
    fn instantiations_that_index_differently_do_not() {
        let concrete = concrete_texts(
            "template <int S> __global__ void put(float *out) {
                 out[threadIdx.x * S] = 1.0f;
             }
             void run(float *o) {
                 put<1><<<1, 64>>>(o);
                 put<2><<<1, 64>>>(o);
             }",
        );
        assert_eq!(concrete.len(), 2, "{concrete:#?}");
        assert_ne!(concrete[0], concrete[1]);
    }
}
