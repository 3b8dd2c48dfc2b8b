//! Access model in bytes → access model in each object's unit.
//!
//! A kernel instantiated over element types (`T = float`, `half`,
//! `nv_bfloat16`) has one access model per type that differs only in the
//! constant element width: `dst[i]` is `[i*4 : 4]` in one and `[i*2 : 2]`
//! in the other. Measured in elements, the two are one model, and one check
//! (`ir::canon`'s text, `driver::check_key`) decides both.
//!
//! An object is measured in units of `g` bytes when every access and load of
//! it has a constant width that `g` divides and an offset that is `g·x` by
//! construction (a signed product by a multiple of `g`, sums and selections
//! of such, widening conversions). Ranges of multiples of `g` overlap
//! exactly when their quotients do, so races are the same. The unit model is
//! weaker than the byte model, never stronger: the scaled operations' facts
//! (signed arithmetic does not overflow) are dropped with them, so what it
//! proves holds in bytes. A witness it finds is one in bytes too, unless a
//! byte offset would not fit 64 bits (past any memory; `smt::witness`
//! says so).

use crate::hash::HashMap;
use crate::ir::access::{AccessModel, Origin};
use crate::ir::term::{Term, TermKind, Terms};
use crate::ir::{gcd, BinOp, ScalarTy, UnOp};

/// `model` with each object measured in the largest unit its accesses allow
/// (`AccessModel::units` records it; 1 where bytes are the only unit).
pub fn measure(mut model: AccessModel) -> AccessModel {
    for object in 0..model.units.len() {
        let (offsets, widths) = addresses(&model, object);
        let Some(g0) = widths.iter().try_fold(0, |g, w| Some(gcd(g, positive(w)?))) else {
            continue;
        };
        // The largest divisor of the widths' gcd that divides every offset.
        let unit = (2..=g0).rev().filter(|g| g0 % g == 0).find_map(|g| {
            let mut memo = HashMap::default();
            let scaled: Option<Vec<Term>> = offsets
                .iter()
                .map(|o| divide(&mut model.terms, o, g, &mut memo))
                .collect();
            scaled.map(|s| (g, s))
        });
        let Some((g, scaled)) = unit else { continue };
        let mut by_id: HashMap<u32, Term> = offsets.iter().map(|o| o.id).zip(scaled).collect();
        let widths: HashMap<u32, Term> = widths
            .iter()
            .map(|w| {
                let v = w.as_int().expect("constant") / g;
                (w.id, model.terms.int(v, w.ty))
            })
            .collect();
        by_id.extend(widths);
        let swap = |t: &mut Term| {
            if let Some(n) = by_id.get(&t.id) {
                *t = n.clone();
            }
        };
        for r in model.records.iter_mut().filter(|r| r.object.index() == object) {
            swap(&mut r.offset);
            swap(&mut r.width);
        }
        for s in &mut model.symbols {
            if let Origin::Load {
                object: o,
                offset,
                width,
            } = &mut s.origin
            {
                if o.index() == object {
                    swap(offset);
                    swap(width);
                }
            }
        }
        model.units[object] = g as u64;
    }
    model
}

/// The offsets and widths of `object`'s accesses and loads.
fn addresses(model: &AccessModel, object: usize) -> (Vec<Term>, Vec<Term>) {
    let mut offsets = Vec::new();
    let mut widths = Vec::new();
    for r in model.records.iter().filter(|r| r.object.index() == object) {
        offsets.push(r.offset.clone());
        widths.push(r.width.clone());
    }
    for s in &model.symbols {
        if let Origin::Load {
            object: o,
            offset,
            width,
        } = &s.origin
        {
            if o.index() == object {
                offsets.push(offset.clone());
                widths.push(width.clone());
            }
        }
    }
    (offsets, widths)
}

/// A constant width of at least one byte.
fn positive(w: &Term) -> Option<i128> {
    w.as_int().filter(|v| (1..1 << 62).contains(v))
}

/// `t / g` as a term when `t` is `g·x` by construction, computed in exact
/// integers: constants, signed `+ - * −x` (their overflow is undefined, so
/// the value is exact), selections and value-keeping conversions. Unsigned
/// arithmetic wraps modulo 2^n, which `g` does not divide out.
fn divide(terms: &mut Terms, t: &Term, g: i128, memo: &mut HashMap<u32, Option<Term>>) -> Option<Term> {
    if let Some(done) = memo.get(&t.id) {
        return done.clone();
    }
    let signed = matches!(t.ty, ScalarTy::Int { signed: true, .. });
    let out = match &t.kind {
        TermKind::Int(v) if t.ty.is_int() && v % g == 0 => Some(terms.int(v / g, t.ty)),
        TermKind::Binary(op @ (BinOp::Add | BinOp::Sub), ty, a, b) if signed && *ty == t.ty => {
            let x = divide(terms, a, g, memo);
            let y = x.as_ref().and_then(|_| divide(terms, b, g, memo));
            x.zip(y).map(|(x, y)| terms.binary(*op, *ty, x, y))
        }
        TermKind::Binary(BinOp::Mul, ty, a, b) if signed && *ty == t.ty => {
            let factor = |c: Option<i128>| c.filter(|c| c % g == 0);
            if let Some(c) = factor(b.as_int()) {
                let c = terms.int(c / g, *ty);
                Some(terms.binary(BinOp::Mul, *ty, a.clone(), c))
            } else if let Some(c) = factor(a.as_int()) {
                let c = terms.int(c / g, *ty);
                Some(terms.binary(BinOp::Mul, *ty, b.clone(), c))
            } else if let Some(x) = divide(terms, a, g, memo) {
                Some(terms.binary(BinOp::Mul, *ty, x, b.clone()))
            } else {
                divide(terms, b, g, memo).map(|y| terms.binary(BinOp::Mul, *ty, a.clone(), y))
            }
        }
        TermKind::Unary(UnOp::Neg, a) if signed => divide(terms, a, g, memo).map(|x| terms.unary(UnOp::Neg, t.ty, x)),
        TermKind::Select(c, a, b) => {
            let x = divide(terms, a, g, memo);
            let y = x.as_ref().and_then(|_| divide(terms, b, g, memo));
            x.zip(y).map(|(x, y)| terms.select(c.clone(), x, y))
        }
        TermKind::Cast(a) if widens(a.ty, t.ty) => divide(terms, a, g, memo).map(|x| terms.cast(t.ty, x)),
        _ => None,
    };
    memo.insert(t.id, out.clone());
    out
}

/// Whether converting `from` to `to` keeps every value: both signed, or
/// unsigned into a wider type.
fn widens(from: ScalarTy, to: ScalarTy) -> bool {
    match (from, to) {
        (ScalarTy::Int { bits: f, signed: fs }, ScalarTy::Int { bits: t, signed: ts }) => {
            (fs == ts && f <= t) || (!fs && ts && f < t)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    /// The records of every concrete instantiation of the first kernel in
    /// `src`, measured: (offset, width, unit) printed.
    fn measured(src: &str) -> Vec<Vec<(String, String, u64)>> {
        crate::lower::tests::kernels(src)
            .iter()
            .filter(|k| !k.template_args.iter().any(crate::ir::TemplateArg::is_symbolic))
            .map(|k| {
                let model = crate::passes::model(k, 32, &[], true);
                model
                    .records
                    .iter()
                    .map(|r| {
                        (
                            model.show(&r.offset).to_string(),
                            model.show(&r.width).to_string(),
                            model.units[r.object.index()],
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn element_types_measure_alike() {
        let found = measured(
            "template <typename T> __global__ void copy(const T *in, T *out, int n) {
                 int i = blockIdx.x * blockDim.x + threadIdx.x;
                 if (i < n) out[i + 1] = in[i];
             }
             void run(const float *a, float *b, const double *c, double *d, int n) {
                 copy<float><<<4, 64>>>(a, b, n);
                 copy<double><<<4, 64>>>(c, d, n);
             }",
        );
        assert_eq!(found.len(), 2, "{found:#?}");
        let addresses = |i: usize| found[i].iter().map(|(o, w, _)| (o, w)).collect::<Vec<_>>();
        assert_eq!(
            addresses(0),
            addresses(1),
            "in units the two instantiations are one model"
        );
        assert!(found[0].iter().all(|(_, w, _)| w == "1"), "{found:#?}");
        let mut units: Vec<u64> = found.iter().map(|r| r[0].2).collect();
        units.sort();
        assert_eq!(units, [4, 8]);
    }

    #[test]
    fn mixed_widths_take_their_common_unit() {
        let found = measured(
            "__global__ void pack(float *buf) {
                 int i = threadIdx.x;
                 float4 v = reinterpret_cast<float4 *>(buf)[i];
                 buf[4 * i + 64 * 4] = v.x;
             }",
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        let widths: Vec<&str> = found[0].iter().map(|(_, w, _)| w.as_str()).collect();
        assert!(widths.contains(&"4") && widths.contains(&"1"), "{found:#?}");
        assert!(found[0].iter().all(|r| r.2 == 4), "{found:#?}");
    }

    #[test]
    fn unsigned_offsets_stay_in_bytes() {
        // `(size_t)i * 4` wraps modulo 2^64: its quotient by 4 is not `i`.
        let found = measured(
            "__global__ void put(char *out, unsigned long long i) {
                 *(float *)(out + i * 4ull) = 1.0f;
             }",
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].iter().all(|r| r.2 == 1), "{found:#?}");
    }
}
