//! The canonical text of an access model with the parts of its kernel that
//! the obligations read. Template instantiations often differ only where
//! memory is not concerned (`op_exp` against `op_log` applied to a loaded
//! value): their models are then the same up to the numbering of term
//! nodes, and one check decides them all. The text is exact (no digest), so
//! equal texts mean equal inputs to the checker, never a collision.

use std::fmt::Write;

use super::access::{AccessModel, Origin, Symbol};
use super::term::{Term, TermKind};
use super::Kernel;
use crate::hash::HashMap;

/// `model` and what the obligations read of `kernel` (its name and span,
/// parameters, objects, kernel symbols, unmodelled parts, and the opaque
/// operations its terms apply), written out with term nodes numbered in
/// order of first use. Symbols keep their indices: the checker reads all of
/// them, referenced or not.
pub fn canonical(model: &AccessModel, kernel: &Kernel) -> String {
    let mut c = Canon {
        kernel,
        model,
        out: String::new(),
        numbers: HashMap::default(),
    };
    c.write();
    c.out
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
        let _ = writeln!(
            self.out,
            "kernel {} {:?} warp {}\nparams {:?}\nobjects {:?}\nsyms {:?}\nunknowns {:?}",
            k.name, k.span, m.warp_size, k.params, k.objects, k.syms, k.unknowns
        );
        let _ = writeln!(
            self.out,
            "model unknowns {:?}\nassumed {:?}\nread-only {:?}",
            m.unknowns, m.assumed, m.read_only
        );
        for s in &m.symbols {
            let line = self.symbol(s);
            let _ = writeln!(self.out, "symbol {line}");
        }
        for r in &m.records {
            let t = [&r.offset, &r.width, &r.pc, &r.phase.block, &r.phase.warp, &r.phase.grid].map(|t| self.term(t));
            let _ = writeln!(
                self.out,
                "record {:?} {:?} {t:?} {} {:?} {:?} {:?}",
                r.object, r.kind, r.collective, r.loops, r.span, r.site
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

    fn symbol(&mut self, s: &Symbol) -> String {
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
        format!("{} {:?} {:?} {origin} {:?} {:?}", s.name, s.ty, s.scope, s.deps, s.span)
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
                let model = crate::passes::accesses::build(k, 32, &[], true);
                (canonical(&model, k), k.to_string())
            })
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
    fn instantiations_that_index_differently_do_not() {
        let found = texts(
            "template <int S> __global__ void put(float *out) {
                 out[threadIdx.x * S] = 1.0f;
             }
             void run(float *o) {
                 put<1><<<1, 64>>>(o);
                 put<2><<<1, 64>>>(o);
             }",
        );
        let concrete: Vec<&String> = found
            .iter()
            .filter(|(_, ir)| !ir.contains("<symbolic"))
            .map(|(text, _)| text)
            .collect();
        assert_eq!(concrete.len(), 2, "{found:#?}");
        assert_ne!(concrete[0], concrete[1]);
    }
}
