//! Mixed-radix lemmas for race queries.
//!
//! Offsets such as `(s*n + t)*h + j` (a row-major index with symbolic
//! extents) or `start + k*stride` (a grid-stride loop) multiply unknowns, and
//! Z3's nonlinear arithmetic rarely proves two of them distinct. The fact it
//! misses is a theorem of integers: if `X*H + l = Y*H + m` with `0 ≤ l, m <
//! H`, then `X = Y` and `l = m`. This module finds such splits in the two
//! threads' offsets syntactically (a factor `H` common to some of the
//! additive parts, the rest below it) and states the theorem for them as a
//! linear implication over the terms the encoder already has. The bound on
//! the rest stays in the premise, for the solver to establish from the
//! guards; so a lemma is true in every exact model and adding it changes no
//! verdict, only how fast one is reached. Splits nest: the equal quotients
//! and the equal rests are split again.

use super::*;

/// How deep splits nest (`((a*n + b)*m + c)*h + d` needs three).
const MAX_DEPTH: usize = 3;
/// Candidate factors tried per split.
const MAX_FACTORS: usize = 4;
/// Lemmas per pair of offsets.
const MAX_LEMMAS: usize = 16;

/// `coef * term` (`None`: the constant 1), one additive part of a sum.
#[derive(Clone)]
struct Monomial {
    coef: i128,
    term: Option<Term>,
}

/// A term as a sum of monomials, valid under `fits`: conversions passed
/// through whose operand must be within the target type for the value to
/// be kept.
#[derive(Clone, Default)]
struct Sum {
    monos: Vec<Monomial>,
    fits: Vec<Term>,
}

impl Sum {
    fn of(t: &Term, coef: i128) -> Option<Sum> {
        let mut s = Sum::default();
        s.add(t, coef)?;
        Some(s)
    }

    /// Adds `coef * t`, split at signed `+ - *const <<const` and integer
    /// conversions. Signed arithmetic does not wrap (its overflow is
    /// undefined; the query assumes it away), so the parts' values add up.
    fn add(&mut self, t: &Term, coef: i128) -> Option<()> {
        let signed = |ty: &ScalarTy| matches!(ty, ScalarTy::Int { signed: true, .. });
        match &t.kind {
            TermKind::Int(v) => self.monos.push(Monomial {
                coef: coef.checked_mul(*v)?,
                term: None,
            }),
            TermKind::Binary(op @ (BinOp::Add | BinOp::Sub), opty, a, b) if signed(opty) && t.ty == *opty => {
                self.add(a, coef)?;
                self.add(b, if *op == BinOp::Sub { coef.checked_neg()? } else { coef })?;
            }
            TermKind::Unary(UnOp::Neg, a) if signed(&t.ty) => self.add(a, coef.checked_neg()?)?,
            TermKind::Binary(BinOp::Mul, opty, a, b) if signed(opty) && t.ty == *opty && constant(a, b).is_some() => {
                let (c, v) = constant(a, b)?;
                self.add(v, coef.checked_mul(c)?)?;
            }
            TermKind::Binary(BinOp::Shl, opty, a, b) if signed(opty) && t.ty == *opty => {
                let c = b.as_int().filter(|c| (0..62).contains(c))?;
                self.add(a, coef.checked_mul(1 << c)?)?;
            }
            TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => {
                self.fits.push(t.clone());
                self.add(a, coef)?;
            }
            _ => self.monos.push(Monomial {
                coef,
                term: Some(t.clone()),
            }),
        }
        Some(())
    }
}

/// `(c, v)` when one of `a`, `b` is the constant `c` and `v` is the other.
fn constant<'t>(a: &'t Term, b: &'t Term) -> Option<(i128, &'t Term)> {
    match (a.as_int(), b.as_int()) {
        (_, Some(c)) => Some((c, a)),
        (Some(c), _) => Some((c, b)),
        _ => None,
    }
}

/// `t / f` as `(c, q)` with `t = c * q * f` (`q` `None`: 1), when `f` is a
/// factor of `t`'s product at its top; the conversions passed go to `fits`.
fn quotient(t: &Term, f: &Term, fits: &mut Vec<Term>) -> Option<(i128, Option<Term>)> {
    if t.id == f.id {
        return Some((1, None));
    }
    let signed = |ty: &ScalarTy| matches!(ty, ScalarTy::Int { signed: true, .. });
    match &t.kind {
        TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => {
            fits.push(t.clone());
            quotient(a, f, fits)
        }
        TermKind::Binary(BinOp::Mul, opty, a, b) if signed(opty) && t.ty == *opty => {
            if let Some((c, v)) = constant(a, b) {
                let (d, q) = quotient(v, f, fits)?;
                return Some((c.checked_mul(d)?, q));
            }
            for (x, y) in [(a, b), (b, a)] {
                let mut more = Vec::new();
                if let Some((c, None)) = quotient(y, f, &mut more) {
                    fits.append(&mut more);
                    return Some((c, Some(x.clone())));
                }
            }
            None
        }
        TermKind::Binary(BinOp::Shl, opty, a, b) if signed(opty) && t.ty == *opty => {
            let c = b.as_int().filter(|c| (0..62).contains(c))?;
            let (d, q) = quotient(a, f, fits)?;
            Some((d.checked_mul(1 << c)?, q))
        }
        _ => None,
    }
}

/// The non-constant factors of `t`'s product at its top, with the terms
/// under their conversions and constant multiples (a factor `(long)(n * 4)`
/// offers `n * 4` and `n` too).
fn factors(t: &Term, out: &mut Vec<Term>) {
    let push = |x: &Term, out: &mut Vec<Term>| {
        if !out.iter().any(|o| o.id == x.id) {
            out.push(x.clone());
        }
    };
    match &t.kind {
        TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => {
            push(a, out);
            factors(a, out);
        }
        TermKind::Binary(BinOp::Mul | BinOp::Shl, opty, a, b) if opty.is_int() && t.ty == *opty => {
            if let Some((_, v)) = constant(a, b) {
                push(v, out);
                factors(v, out);
                return;
            }
            for x in [a, b] {
                push(x, out);
                factors(x, out);
            }
        }
        _ => {}
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Encoder<'_> {
    /// Mixed-radix lemmas for records at offsets `a` (thread 0) and `b`
    /// (thread 1) given that `equal` says the offsets are equal.
    pub(super) fn radix_lemmas(&mut self, a: &Term, b: &Term, equal: Bool) -> Vec<Bool> {
        let mut out = Vec::new();
        if let (Some(x), Some(y)) = (Sum::of(a, 1), Sum::of(b, 1)) {
            self.split(equal, [x, y], MAX_DEPTH, &mut out);
        }
        out
    }

    /// `overlap → a = b` when both offsets are multiples of a number at
    /// least as wide as either access (`widths`, constant): the greatest
    /// common divisor of every coefficient of both, constant parts
    /// included (valid where the conversions passed keep their values).
    pub(super) fn overlap_is_equality(
        &mut self,
        a: &Term,
        b: &Term,
        widths: [&Term; 2],
        overlap: &Bool,
    ) -> Option<Bool> {
        let (x, y) = (Sum::of(a, 1)?, Sum::of(b, 1)?);
        let g = x.monos.iter().chain(&y.monos).fold(0, |g, m| gcd(g, m.coef));
        if !widths.iter().all(|w| w.as_int().is_some_and(|w| w <= g)) {
            return None;
        }
        let mut premise = vec![overlap.clone()];
        premise.extend(self.fits_premises(&x.fits, 0));
        premise.extend(self.fits_premises(&y.fits, 1));
        let (o0, o1) = (self.enc_int(a, 0), self.enc_int(b, 1));
        Some(Bool::and(&premise).implies(o0.eq(&o1)))
    }

    /// Lemmas splitting `sums` (thread 0's and thread 1's), whose values
    /// `equal` says are equal.
    fn split(&mut self, equal: Bool, sums: [Sum; 2], depth: usize, out: &mut Vec<Bool>) {
        if depth == 0 || out.len() >= MAX_LEMMAS {
            return;
        }
        // Factors dividing a part of both sums, most shared first.
        let mut candidates: Vec<(usize, Term)> = Vec::new();
        let mut seen = Vec::new();
        for m in sums.iter().flat_map(|s| &s.monos) {
            if let Some(t) = &m.term {
                factors(t, &mut seen);
            }
        }
        for f in seen {
            // A factor alike in both threads: launch values and parameters.
            let per_thread = |k: &TermKind| {
                matches!(
                    k,
                    TermKind::Symbol(_) | TermKind::Builtin(Builtin::ThreadIdx(_) | Builtin::BlockIdx(_))
                )
            };
            if f.as_int().is_some() || crate::ir::term::mentions(&f, &mut { per_thread }, &mut HashSet::new()) {
                continue;
            }
            let divides = |s: &Sum| {
                s.monos
                    .iter()
                    .filter(|m| {
                        m.term
                            .as_ref()
                            .is_some_and(|t| quotient(t, &f, &mut Vec::new()).is_some())
                    })
                    .count()
            };
            let (d0, d1) = (divides(&sums[0]), divides(&sums[1]));
            if d0 > 0 && d1 > 0 {
                candidates.push((d0 + d1, f));
            }
        }
        candidates.sort_by_key(|(n, f)| (std::cmp::Reverse(*n), f.id));
        for (_, f) in candidates.into_iter().take(MAX_FACTORS) {
            if out.len() >= MAX_LEMMAS {
                return;
            }
            self.split_by(&equal, &sums, &f, depth, out);
        }
    }

    /// One lemma: `sums[i] = c*f*high[i] + low[i]`; equal sums with both
    /// lows in `[0, c*f)` (and `f` alike in both threads) have equal highs
    /// and equal lows.
    fn split_by(&mut self, equal: &Bool, sums: &[Sum; 2], f: &Term, depth: usize, out: &mut Vec<Bool>) {
        let mut parts: Vec<(Sum, Sum)> = Vec::new();
        for s in sums {
            let (mut high, mut low) = (Sum::default(), Sum::default());
            high.fits = s.fits.clone();
            for m in &s.monos {
                let mut fits = Vec::new();
                match m.term.as_ref().and_then(|t| quotient(t, f, &mut fits)) {
                    Some((c, q)) => {
                        let Some(coef) = m.coef.checked_mul(c) else { return };
                        high.fits.append(&mut fits);
                        high.monos.push(Monomial { coef, term: q });
                    }
                    None => low.monos.push(m.clone()),
                }
            }
            parts.push((high, low));
        }
        let c = parts.iter().flat_map(|(h, _)| &h.monos).fold(0, |g, m| gcd(g, m.coef));
        if c == 0 {
            return;
        }
        let mut premise = vec![equal.clone()];
        let mut highs = Vec::new();
        let mut lows = Vec::new();
        let mut hs = Vec::new();
        for (inst, (high, low)) in parts.iter().enumerate() {
            let h = self.enc_int(f, inst);
            premise.extend(self.fits_premises(&high.fits, inst));
            let hv = self.sum_value(&high.monos, c, inst);
            let lv = self.sum_value(&low.monos, 1, inst);
            premise.push(lv.ge(int(0)));
            premise.push(lv.lt(Int::mul(&[int(c), h.clone()])));
            highs.push(hv);
            lows.push(lv);
            hs.push(h);
        }
        premise.push(hs[0].eq(&hs[1]));
        let (high_eq, low_eq) = (highs[0].eq(&highs[1]), lows[0].eq(&lows[1]));
        out.push(Bool::and(&premise).implies(Bool::and(&[high_eq.clone(), low_eq.clone()])));
        if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
            eprintln!("radix depth {depth} by #{}: {}", f.id, out.last().unwrap());
        }
        // The quotients, as sums of their own, and the rests split again.
        let requotient = |(high, _): &(Sum, Sum)| {
            let mut s = Sum::default();
            for m in &high.monos {
                match &m.term {
                    Some(t) => s.add(t, m.coef / c)?,
                    None => s.monos.push(Monomial {
                        coef: m.coef / c,
                        term: None,
                    }),
                }
            }
            Some(s)
        };
        if let (Some(h0), Some(h1)) = (requotient(&parts[0]), requotient(&parts[1])) {
            self.split(high_eq, [h0, h1], depth - 1, out);
        }
        let [(_, l0), (_, l1)] = [parts[0].clone(), parts[1].clone()];
        if !l0.monos.is_empty() && !l1.monos.is_empty() {
            self.split(low_eq, [l0, l1], depth - 1, out);
        }
    }

    /// `Σ coef/c * term` in thread `inst`.
    fn sum_value(&mut self, monos: &[Monomial], c: i128, inst: usize) -> Int {
        let mut parts = vec![int(0)];
        for m in monos {
            let v = match &m.term {
                Some(t) => self.enc_int(t, inst),
                None => int(1),
            };
            parts.push(Int::mul(&[int(m.coef / c), v]));
        }
        Int::add(&parts)
    }

    /// The conversions in `fits` keep their operands' values in thread
    /// `inst` (those whose static interval already fits are left out).
    fn fits_premises(&mut self, fits: &[Term], inst: usize) -> Vec<Bool> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for t in fits {
            let TermKind::Cast(a) = &t.kind else { continue };
            if !seen.insert(t.id) || within(self.interval(a), range_of(t.ty)) {
                continue;
            }
            let Some((lo, hi)) = range_of(t.ty) else { continue };
            let v = self.enc_int(a, inst);
            out.push(v.ge(int(lo)));
            out.push(v.le(int(hi)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::term::Terms;

    fn mul(t: &mut Terms, ty: ScalarTy, a: Term, b: Term) -> Term {
        t.binary(BinOp::Mul, ty, a, b)
    }

    fn add(t: &mut Terms, ty: ScalarTy, a: Term, b: Term) -> Term {
        t.binary(BinOp::Add, ty, a, b)
    }

    #[test]
    fn a_row_major_index_splits_by_its_inner_extent() {
        let mut t = Terms::new();
        let i32t = ScalarTy::I32;
        let (s, n, h, tok) = (t.param(0, i32t), t.param(1, i32t), t.param(2, i32t), t.param(3, i32t));
        let j = t.builtin(Builtin::BlockIdx(Dim::X));
        let j = t.cast(i32t, j);
        // (s*n)*h + tok*h + j, times 4 bytes
        let sn = mul(&mut t, i32t, s.clone(), n.clone());
        let snh = mul(&mut t, i32t, sn.clone(), h.clone());
        let th = mul(&mut t, i32t, tok.clone(), h.clone());
        let four = t.int(4, i32t);
        let sum = add(&mut t, i32t, snh.clone(), th.clone());
        let sum = add(&mut t, i32t, sum, j.clone());
        let bytes = mul(&mut t, i32t, sum, four);
        let s = Sum::of(&bytes, 1).expect("splits");
        let coefs: Vec<i128> = s.monos.iter().map(|m| m.coef).collect();
        assert_eq!(coefs, vec![4, 4, 4]);
        // Both products have `h` as a factor at their top; `j` does not.
        let mut fits = Vec::new();
        assert_eq!(
            quotient(&snh, &h, &mut fits).map(|(c, q)| (c, q.map(|q| q.id))),
            Some((1, Some(sn.id)))
        );
        assert_eq!(
            quotient(&th, &h, &mut fits).map(|(c, q)| (c, q.map(|q| q.id))),
            Some((1, Some(tok.id)))
        );
        assert!(quotient(&j, &h, &mut fits).is_none());
        // `n` is inside `s*n`, not a factor of `s*n*h`'s top product alone.
        assert!(quotient(&snh, &n, &mut fits).is_none());
        let mut found = Vec::new();
        factors(&snh, &mut found);
        assert!(found.iter().any(|f| f.id == h.id) && found.iter().any(|f| f.id == n.id));
    }

    #[test]
    fn conversions_passed_are_recorded_and_unsigned_sums_stay_whole() {
        let mut t = Terms::new();
        let (i32t, i64t, u32t) = (ScalarTy::I32, ScalarTy::I64, ScalarTy::U32);
        let (r, w) = (t.param(0, i32t), t.param(1, i32t));
        let rw = mul(&mut t, i32t, r, w.clone());
        let wide = t.cast(i64t, rw);
        let s = Sum::of(&wide, 1).expect("splits");
        assert_eq!(s.fits.len(), 1, "the widening is a conversion the identity needs");
        let mut fits = Vec::new();
        assert!(quotient(&wide, &w, &mut fits).is_some());
        assert_eq!(fits.len(), 1);
        // Unsigned arithmetic wraps: its sum is one part.
        let (a, b) = (t.param(2, u32t), t.param(3, u32t));
        let ab = add(&mut t, u32t, a, b);
        let s = Sum::of(&ab, 1).expect("one part");
        assert_eq!(s.monos.len(), 1);
        assert_eq!(s.monos[0].term.as_ref().map(|x| x.id), Some(ab.id));
    }
}
