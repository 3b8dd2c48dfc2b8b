//! Normal forms of index arithmetic that splits a flat index and puts it
//! back together.
//!
//! Kernels unpack a flat thread index into coordinates with `/` and `%`
//! (`x = i % W`, `y = (i / W) % H`, `n = i / (W*H)`) and compute an offset
//! from them (`n*(H*W) + y*W + x`), often with the radices in another order
//! or grouped differently (`(i / C) % W` beside `i / (C*W)`). The offset is
//! `i` again, but only by C's division identity (`a % d = a - (a/d)*d`) and
//! the nesting of quotients (`(a/b)/c = a/(b*c)`), which Z3's nonlinear
//! arithmetic does not find. Here the offset becomes a polynomial over
//! atoms: terms taken whole and the kernel's own quotients, a quotient
//! named by its dividend's and divisor's normal forms, so `(i / C) / W`
//! and `i / (C*W)` are one atom. Remainders expand into their quotient
//! (when the kernel computes that quotient: an atom must be a term the
//! encoder has), and like monomials cancel.
//!
//! The identities hold in integers for non-zero divisors and signed
//! arithmetic that does not overflow (undefined behaviour, which the
//! query assumes away): the encoder states them as the form's premises
//! (see `Encoder::radix_lemmas` and `Encoder::defined`). Conversions are passed only where
//! their types keep every value (a narrowing one is an atom). Truncating
//! division obeys the nesting for every sign: `trunc(trunc(a/b)/c) =
//! trunc(a/(b*c))`.

use crate::hash::{HashMap, HashSet};
use std::collections::BTreeMap;

use crate::ir::term::{Term, TermKind, Terms};
use crate::ir::{BinOp, ScalarTy, UnOp};

/// A polynomial: sorted factor ids (repeated for powers) to coefficients.
type Poly = BTreeMap<Vec<u32>, i128>;

/// Monomials per polynomial before the form gives up (products of sums
/// multiply out).
const MAX_MONOMIALS: usize = 32;
/// Factors per monomial.
const MAX_DEGREE: usize = 8;

/// A quotient's identity: its dividend's and divisor's normal forms and
/// the type it divides in.
type QuotKey = (Vec<(Vec<u32>, i128)>, Vec<(Vec<u32>, i128)>, ScalarTy);

/// The normal form of a term: `(factors, coefficient)` pairs, whose
/// products summed are the term's value.
pub(super) type Normal = Vec<(Vec<Term>, i128)>;

/// Normal forms of the terms of one obligation (quotients found in one
/// are atoms of all).
#[derive(Default)]
pub(super) struct Normalizer<'t> {
    /// Where quotients the kernel does not compute are made: the model's
    /// terms, and their extension (cloned from them on first need, so that
    /// a made term that exists is the model's node). None: none are made.
    terms: Option<(&'t Terms, &'t mut Option<Terms>)>,
    /// The quotients made, by id.
    made: Vec<u32>,
    atoms: HashMap<u32, Term>,
    quotients: HashMap<QuotKey, Term>,
    key_of: HashMap<u32, QuotKey>,
    memo: HashMap<u32, Option<Poly>>,
    /// Whether a remainder was expanded or a quotient met under another
    /// name, and whether monomials cancelled: only both together make the
    /// form news to the solver (an expansion that cancels nothing is the
    /// same offset, longer, and slows the search for witnesses).
    rewritten: bool,
    cancelled: bool,
    /// Parameters the launch facts define (`ne01_ne02 == ne01*ne02`, by
    /// the parameter's id): each stands for its definition's form, so
    /// that a quotient by the host's product is the kernel's quotient by
    /// one factor and then the other. See [`definitions`].
    definitions: HashMap<u32, Term>,
    /// The definitions the forms used, with the parameter each defines:
    /// they hold as integers only where they do not wrap (the caller's
    /// premises).
    pub used: Vec<(Term, Term)>,
    /// Dividends split by a part their divisor divides, with the rest
    /// each kept (`(y - m) / d` read as `y / d - m / d`), as `(y, x)`:
    /// the identity holds where `y` and `x` have one sign (the caller's
    /// premises; see [`Normalizer::split_quotient`]).
    pub same_sign: Vec<(Term, Term)>,
    /// Unsigned operations and conversions whose exact values always fit
    /// their types (by the launch's bounds: `blockIdx.x * blockDim.x +
    /// threadIdx.x` in `unsigned`, and its conversion to `int`), by id:
    /// integer arithmetic as signed arithmetic is.
    exact: HashSet<u32>,
}

/// The parameters that launch facts `facts` define: `p == e` (either
/// way round) over a signed type that keeps `p`'s values, where `e`
/// does not mention `p`, through the definitions before it or itself.
/// Where `e` does not wrap, `p` is `e` in integers.
pub(super) fn definitions(facts: &[Term]) -> HashMap<u32, Term> {
    let mut out: HashMap<u32, Term> = HashMap::default();
    for f in facts {
        let mut f = f;
        while let TermKind::Cast(a) = &f.kind {
            if a.ty != ScalarTy::Bool {
                break;
            }
            f = a;
        }
        let TermKind::Binary(BinOp::Eq, ty, lhs, rhs) = &f.kind else {
            continue;
        };
        if !signed(*ty) {
            continue;
        }
        let param = |t: &Term| -> Option<Term> {
            let inner = match &t.kind {
                TermKind::Cast(a) if keeps_values(a.ty, t.ty) => a,
                _ => t,
            };
            (matches!(inner.kind, TermKind::Param(_)) && signed(inner.ty)).then(|| inner.clone())
        };
        let (p, e) = match (param(lhs), param(rhs)) {
            (Some(p), _) => (p, rhs),
            (None, Some(p)) => (p, lhs),
            _ => continue,
        };
        if out.contains_key(&p.id) || reaches(e, p.id, &out, &mut HashSet::default()) {
            continue;
        }
        out.insert(p.id, e.clone());
    }
    out
}

/// Whether `t` mentions the term `id`, directly or through `definitions`.
fn reaches(t: &Term, id: u32, definitions: &HashMap<u32, Term>, seen: &mut HashSet<u32>) -> bool {
    if t.id == id {
        return true;
    }
    if !seen.insert(t.id) {
        return false;
    }
    if let Some(e) = definitions.get(&t.id) {
        if reaches(e, id, definitions, seen) {
            return true;
        }
    }
    t.children().into_iter().any(|c| reaches(c, id, definitions, seen))
}

fn signed(ty: ScalarTy) -> bool {
    matches!(ty, ScalarTy::Int { signed: true, .. })
}

/// Whether every value of `from` is one of `to` (a widening conversion).
fn keeps_values(from: ScalarTy, to: ScalarTy) -> bool {
    match (from, to) {
        (ScalarTy::Int { bits: b1, signed: s1 }, ScalarTy::Int { bits: b2, signed: s2 }) => {
            (s1 == s2 && b1 <= b2) || (!s1 && s2 && b1 < b2)
        }
        _ => false,
    }
}

/// `p += scale * q`; notes in `cancelled` whether monomials cancelled.
fn add(p: &mut Poly, q: &Poly, scale: i128, cancelled: &mut bool) -> Option<()> {
    for (m, c) in q {
        let e = p.entry(m.clone()).or_insert(0);
        *e = e.checked_add(c.checked_mul(scale)?)?;
        if *e == 0 {
            p.remove(m);
            *cancelled = true;
        }
    }
    (p.len() <= MAX_MONOMIALS).then_some(())
}

fn mul(p: &Poly, q: &Poly, cancelled: &mut bool) -> Option<Poly> {
    let mut out = Poly::new();
    for (m1, c1) in p {
        for (m2, c2) in q {
            let mut m: Vec<u32> = m1.iter().chain(m2).copied().collect();
            if m.len() > MAX_DEGREE {
                return None;
            }
            m.sort_unstable();
            add(&mut out, &BTreeMap::from([(m, c1.checked_mul(*c2)?)]), 1, cancelled)?;
        }
    }
    Some(out)
}

/// Whether `m` is `(y / e) * e` (either way round): what C's division
/// leaves of `y` when `m` is taken from it is `y % e`.
fn is_rest_of(m: &Term, y: &Term) -> bool {
    let TermKind::Binary(BinOp::Mul, mty, a, b) = &m.kind else {
        return false;
    };
    if *mty != m.ty {
        return false;
    }
    [(a, b), (b, a)].into_iter().any(|(q, e)| {
        matches!(&q.kind, TermKind::Binary(BinOp::Div, qty, n, d)
            if n.id == y.id && d.id == e.id && *qty == m.ty && q.ty == m.ty)
    })
}

/// `p / (c * Π factors)` when every monomial of `p` holds `factors` and
/// a multiple of `c`.
fn divide(p: &Poly, factors: &[u32], c: i128) -> Option<Poly> {
    let mut out = Poly::new();
    for (m, coef) in p {
        if coef % c != 0 {
            return None;
        }
        let mut rest = m.clone();
        for f in factors {
            let at = rest.iter().position(|x| x == f)?;
            rest.remove(at);
        }
        out.insert(rest, coef / c);
    }
    Some(out)
}

fn constant(v: i128) -> Poly {
    if v == 0 {
        Poly::new()
    } else {
        BTreeMap::from([(Vec::new(), v)])
    }
}

impl<'t> Normalizer<'t> {
    /// A normalizer that may make quotients of quotients (see the module's
    /// doc) in `extension`, a clone of `model` made on first need.
    pub fn extending(model: &'t Terms, extension: &'t mut Option<Terms>) -> Normalizer<'t> {
        Normalizer {
            terms: Some((model, extension)),
            ..Normalizer::default()
        }
    }

    /// This normalizer, reading the parameters `definitions` define as
    /// their definitions (see [`definitions`]).
    pub fn defining(self, definitions: HashMap<u32, Term>) -> Normalizer<'t> {
        Normalizer { definitions, ..self }
    }

    /// This normalizer, reading the operations and conversions `exact`
    /// names (which never wrap) as integer arithmetic.
    pub fn exact(self, exact: HashSet<u32>) -> Normalizer<'t> {
        Normalizer { exact, ..self }
    }

    /// Registers the quotients computed in `terms` (so that a remainder
    /// met before its quotient finds it), then gives each term's normal
    /// form; `None` unless a remainder or quotient was rewritten and
    /// monomials cancelled (the form would tell the solver nothing new).
    pub fn normal_forms(&mut self, terms: &[&Term]) -> Option<Vec<Normal>> {
        let out = self.polynomials(terms)?;
        (self.rewritten && self.cancelled).then_some(out)
    }

    /// The normal forms of `terms`, news to the solver or not (for
    /// comparisons, whose sides' difference is the news).
    pub fn polynomials(&mut self, terms: &[&Term]) -> Option<Vec<Normal>> {
        // Twice: a quotient of a remainder (`(i % n) / m`) has its key only
        // once the remainder's own quotient is known. Forms computed while
        // registering may miss later quotients: forgotten after each round.
        for _ in 0..2 {
            let mut seen = HashSet::default();
            for t in terms {
                self.register(t, &mut seen);
            }
            self.memo.clear();
        }
        self.rewritten = false;
        self.cancelled = false;
        let mut out = Vec::new();
        for t in terms {
            let poly = self.poly(t)?;
            let poly = self.fold_made(poly);
            out.push(
                poly.into_iter()
                    .map(|(m, c)| (m.iter().map(|id| self.atoms[id].clone()).collect(), c))
                    .collect(),
            );
        }
        Some(out)
    }

    fn register(&mut self, t: &Term, seen: &mut HashSet<u32>) {
        if !seen.insert(t.id) {
            return;
        }
        for c in t.children() {
            self.register(c, seen);
        }
        if let TermKind::Binary(BinOp::Div, ty, x, d) = &t.kind {
            if signed(*ty) && t.ty == *ty {
                if let Some(key) = self.quotient_key(x, d, *ty) {
                    self.quotients.entry(key.clone()).or_insert_with(|| t.clone());
                    self.key_of.insert(t.id, key);
                }
            }
        }
    }

    /// The identity of `x / d` in `ty`: a quotient of a quotient (in the
    /// same type) divides the inner dividend by the product of divisors.
    fn quotient_key(&mut self, x: &Term, d: &Term, ty: ScalarTy) -> Option<QuotKey> {
        let px = self.poly(x)?;
        let pd = self.poly(d)?;
        if let Some(inner) = self.single_quotient(&px, ty) {
            let (num, den, _) = inner;
            let den: Poly = den.into_iter().collect();
            let merged = mul(&den, &pd, &mut self.cancelled)?;
            return Some((num, merged.into_iter().collect(), ty));
        }
        Some((px.into_iter().collect(), pd.into_iter().collect(), ty))
    }

    /// The key of `p` when `p` is one quotient of `ty` (coefficient 1).
    fn single_quotient(&self, p: &Poly, ty: ScalarTy) -> Option<QuotKey> {
        let (m, c) = p.iter().next().filter(|_| p.len() == 1)?;
        let [id] = m.as_slice() else { return None };
        let key = self.key_of.get(id).filter(|k| *c == 1 && k.2 == ty)?;
        Some(key.clone())
    }

    /// The extension where quotients are made.
    fn extension(&mut self) -> Option<&mut Terms> {
        let (model, extension) = self.terms.as_mut()?;
        Some(extension.get_or_insert_with(|| (*model).clone()))
    }

    /// `x / d` in `ty` when `x` is a quotient `y / e` the kernel computes
    /// and `x / d` is not: the term `y / (e*d)`, made.
    fn made_quotient(&mut self, x: &Term, d: &Term, ty: ScalarTy) -> Option<Poly> {
        let px = self.poly(x)?;
        let (m, c) = px.iter().next().filter(|_| px.len() == 1)?;
        let ([id], 1) = (m.as_slice(), *c) else { return None };
        let inner = self.atoms.get(id)?.clone();
        let TermKind::Binary(BinOp::Div, ity, y, e) = &inner.kind else {
            return None;
        };
        if *ity != ty || inner.ty != ty {
            return None;
        }
        let terms = self.extension()?;
        let product = terms.binary(BinOp::Mul, ty, e.clone(), d.clone());
        let q = terms.binary(BinOp::Div, ty, y.clone(), product.clone());
        if !matches!(q.kind, TermKind::Binary(BinOp::Div, ..)) {
            return self.poly(&q);
        }
        let key = self.quotient_key(y, &product, ty)?;
        self.quotients.entry(key.clone()).or_insert_with(|| q.clone());
        self.key_of.insert(q.id, key);
        self.made.push(q.id);
        Some(self.atom(&q))
    }

    /// `p` with each made quotient `q = y / e` that appears only as
    /// `c*y - c*e*q` folded into `c*(y % e)` (the same value by C's
    /// division identity, and a remainder whose bounds the encoder knows).
    fn fold_made(&mut self, mut p: Poly) -> Poly {
        for id in self.made.clone() {
            let Some(q) = self.atoms.get(&id).cloned() else {
                continue;
            };
            let TermKind::Binary(BinOp::Div, ty, y, e) = &q.kind else {
                continue;
            };
            let (Some(py), Some(pe)) = (self.poly(y), self.poly(e)) else {
                continue;
            };
            let mut ignored = false;
            let Some(eq) = mul(&pe, &BTreeMap::from([(vec![id], 1)]), &mut ignored) else {
                continue;
            };
            // `p` holds `-c*e*q`: `c` from its first monomial.
            let Some((m0, c0)) = eq.iter().next() else { continue };
            let Some(pc) = p.get(m0) else { continue };
            if pc % c0 != 0 {
                continue;
            }
            let c = -pc / c0;
            let mut out = p.clone();
            let unfolded = (|| {
                add(&mut out, &py, -c, &mut ignored)?;
                add(&mut out, &eq, c, &mut ignored)?;
                (!out.keys().any(|m| m.contains(&id))).then_some(())
            })();
            if unfolded.is_none() {
                continue;
            }
            // Made only for a fold that takes place.
            let Some(r) = self
                .extension()
                .map(|t| t.binary(BinOp::Rem, *ty, y.clone(), e.clone()))
            else {
                continue;
            };
            if add(&mut out, &BTreeMap::from([(vec![r.id], c)]), 1, &mut ignored).is_some() {
                self.atoms.insert(r.id, r);
                p = out;
            }
        }
        p
    }

    fn atom(&mut self, t: &Term) -> Poly {
        self.atoms.insert(t.id, t.clone());
        BTreeMap::from([(vec![t.id], 1)])
    }

    /// `x / d` in `ty` where `x` is `y ± m` (or `m + y`) and `d`'s form,
    /// one monomial, divides every monomial of `m`'s: `y / d ± m / d`,
    /// with `y / d` split again, the kernel's quotient of that identity,
    /// or one made. Kernels peel coordinates off a flat index by
    /// subtracting what the outer ones account for (`(i - z*hw) / w`, with
    /// `z = i / hw`), where the quotient of the whole index is what the
    /// rebuilt offset cancels against. Truncating division keeps the
    /// identity where `y` and `x` have one sign (both at least 0, or both
    /// at most 0): each split is noted in `same_sign` for the caller's
    /// premises.
    fn split_quotient(&mut self, x: &Term, d: &Term, ty: ScalarTy) -> Option<Poly> {
        let TermKind::Binary(op @ (BinOp::Add | BinOp::Sub), xty, a, b) = &x.kind else {
            return None;
        };
        if *xty != ty || x.ty != ty {
            return None;
        }
        let pd = self.poly(d)?;
        // A constant divisor's quotients the encoder takes as they are.
        let (divisor, &dc) = pd.iter().next().filter(|(m, _)| pd.len() == 1 && !m.is_empty())?;
        if dc == 0 {
            return None;
        }
        let mut tries = vec![(a, b, if *op == BinOp::Sub { -1 } else { 1 })];
        if *op == BinOp::Add {
            tries.push((b, a, 1));
        }
        for (y, m, sign) in tries {
            let Some(pm) = self.poly(m) else { continue };
            let Some(quotient) = divide(&pm, divisor, dc) else {
                continue;
            };
            let Some(mut out) = self.quotient_of(y, d, ty) else {
                continue;
            };
            add(&mut out, &quotient, sign, &mut self.cancelled)?;
            // `y - (y / e) * e` is C's `y % e`: of `y`'s sign, or 0.
            let rest = sign == -1 && is_rest_of(m, y);
            let noted = self.same_sign.iter().any(|(u, v)| u.id == y.id && v.id == x.id);
            if !rest && !noted {
                self.same_sign.push((y.clone(), x.clone()));
            }
            self.rewritten = true;
            return Some(out);
        }
        None
    }

    /// The form of `y / d` in `ty`: split (see [`Self::split_quotient`]),
    /// the kernel's quotient of that identity, or the quotient made.
    fn quotient_of(&mut self, y: &Term, d: &Term, ty: ScalarTy) -> Option<Poly> {
        if y.ty != ty {
            return None;
        }
        if let Some(p) = self.split_quotient(y, d, ty) {
            return Some(p);
        }
        if let Some(p) = self.quotient(y, d, ty) {
            return Some(p);
        }
        let key = self.quotient_key(y, d, ty)?;
        let terms = self.extension()?;
        let q = terms.binary(BinOp::Div, ty, y.clone(), d.clone());
        if !matches!(q.kind, TermKind::Binary(BinOp::Div, ..)) {
            return self.poly(&q);
        }
        self.quotients.entry(key.clone()).or_insert_with(|| q.clone());
        self.key_of.insert(q.id, key);
        self.made.push(q.id);
        Some(self.atom(&q))
    }

    /// The quotient atom `x / d` in `ty`: the term the kernel computes
    /// under that identity.
    fn quotient(&mut self, x: &Term, d: &Term, ty: ScalarTy) -> Option<Poly> {
        let key = self.quotient_key(x, d, ty)?;
        let q = self.quotients.get(&key)?.clone();
        if let TermKind::Binary(BinOp::Div, _, qx, qd) = &q.kind {
            if qx.id != x.id || qd.id != d.id {
                self.rewritten = true;
            }
        }
        Some(self.atom(&q))
    }

    fn poly(&mut self, t: &Term) -> Option<Poly> {
        if let Some(p) = self.memo.get(&t.id) {
            return p.clone();
        }
        let p = self.compute(t);
        self.memo.insert(t.id, p.clone());
        p
    }

    fn compute(&mut self, t: &Term) -> Option<Poly> {
        let exact = self.exact.contains(&t.id);
        let same = |opty: &ScalarTy| (signed(*opty) || (exact && opty.is_int())) && t.ty == *opty;
        let whole = |this: &mut Self| Some(this.atom(t));
        match &t.kind {
            TermKind::Int(v) => Some(constant(*v)),
            TermKind::Binary(op @ (BinOp::Add | BinOp::Sub), opty, a, b) if same(opty) => {
                let (pa, pb) = (self.poly(a), self.poly(b));
                let (Some(mut pa), Some(pb)) = (pa, pb) else {
                    return whole(self);
                };
                let scale = if *op == BinOp::Sub { -1 } else { 1 };
                add(&mut pa, &pb, scale, &mut self.cancelled)
                    .map(|_| pa)
                    .or_else(|| whole(self))
            }
            TermKind::Unary(UnOp::Neg, a) if signed(t.ty) => {
                let Some(pa) = self.poly(a) else { return whole(self) };
                let mut out = Poly::new();
                add(&mut out, &pa, -1, &mut self.cancelled)
                    .map(|_| out)
                    .or_else(|| whole(self))
            }
            TermKind::Binary(BinOp::Mul, opty, a, b) if same(opty) => {
                let (pa, pb) = (self.poly(a), self.poly(b));
                let (Some(pa), Some(pb)) = (pa, pb) else {
                    return whole(self);
                };
                mul(&pa, &pb, &mut self.cancelled).or_else(|| whole(self))
            }
            TermKind::Binary(BinOp::Shl, opty, a, b) if same(opty) => {
                let Some(c) = b.as_int().filter(|c| (0..62).contains(c)) else {
                    return whole(self);
                };
                let Some(pa) = self.poly(a) else { return whole(self) };
                mul(&pa, &constant(1 << c), &mut self.cancelled).or_else(|| whole(self))
            }
            TermKind::Cast(a) if keeps_values(a.ty, t.ty) || exact => self.poly(a).or_else(|| whole(self)),
            TermKind::Param(_) if self.definitions.contains_key(&t.id) => {
                let e = self.definitions[&t.id].clone();
                match self.poly(&e) {
                    Some(p) => {
                        if !self.used.iter().any(|(u, _)| u.id == t.id) {
                            self.used.push((t.clone(), e));
                        }
                        self.rewritten = true;
                        Some(p)
                    }
                    None => whole(self),
                }
            }
            TermKind::Binary(BinOp::Div, opty, x, d) if same(opty) => self
                .split_quotient(x, d, *opty)
                .or_else(|| self.quotient(x, d, *opty))
                .or_else(|| whole(self)),
            // `x % d = x - (x / d) * d`.
            TermKind::Binary(BinOp::Rem, opty, x, d) if same(opty) => {
                let expanded = (|| {
                    let q = match self.quotient(x, d, *opty) {
                        Some(q) => q,
                        None => match self.made_quotient(x, d, *opty) {
                            Some(q) => q,
                            None => self.quotient_of(x, d, *opty)?,
                        },
                    };
                    let (mut px, pd) = (self.poly(x)?, self.poly(d)?);
                    let product = mul(&q, &pd, &mut self.cancelled)?;
                    add(&mut px, &product, -1, &mut self.cancelled)?;
                    Some(px)
                })();
                match expanded {
                    Some(p) => {
                        self.rewritten = true;
                        Some(p)
                    }
                    None => whole(self),
                }
            }
            _ => whole(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::term::Terms;
    use crate::ir::{Builtin, Dim};

    fn op(t: &mut Terms, op: BinOp, a: &Term, b: &Term) -> Term {
        t.binary(op, ScalarTy::I32, a.clone(), b.clone())
    }

    /// `i` from the block and thread index (unsigned, converted: one atom).
    fn flat_index(t: &mut Terms) -> Term {
        let (b, n, x) = (
            t.builtin(Builtin::BlockIdx(Dim::X)),
            t.builtin(Builtin::BlockDim(Dim::X)),
            t.builtin(Builtin::ThreadIdx(Dim::X)),
        );
        let bn = t.binary(BinOp::Mul, ScalarTy::U32, b, n);
        let i = t.binary(BinOp::Add, ScalarTy::U32, bn, x);
        t.cast(ScalarTy::I32, i)
    }

    fn only(forms: Option<Vec<Normal>>) -> Vec<(Vec<u32>, i128)> {
        let mut forms = forms.expect("a normal form");
        assert_eq!(forms.len(), 1);
        forms
            .remove(0)
            .into_iter()
            .map(|(f, c)| (f.iter().map(|x| x.id).collect(), c))
            .collect()
    }

    #[test]
    fn an_index_unpacked_channel_first_and_rebuilt_is_the_index() {
        let mut t = Terms::new();
        let (ch, w) = (t.param(0, ScalarTy::I32), t.param(1, ScalarTy::I32));
        let i = flat_index(&mut t);
        // c = i % ch; x = (i / ch) % w; y = i / (ch * w)
        let c = op(&mut t, BinOp::Rem, &i, &ch);
        let i_ch = op(&mut t, BinOp::Div, &i, &ch);
        let x = op(&mut t, BinOp::Rem, &i_ch, &w);
        let chw = op(&mut t, BinOp::Mul, &ch, &w);
        let y = op(&mut t, BinOp::Div, &i, &chw);
        // y * (w * ch) + x * ch + c: the product written the other way round.
        let wch = op(&mut t, BinOp::Mul, &w, &ch);
        let ys = op(&mut t, BinOp::Mul, &y, &wch);
        let xs = op(&mut t, BinOp::Mul, &x, &ch);
        let sum = op(&mut t, BinOp::Add, &ys, &xs);
        let offset = op(&mut t, BinOp::Add, &sum, &c);
        let form = only(Normalizer::default().normal_forms(&[&offset]));
        // The conversion to `int` may change the value: it is the atom.
        assert_eq!(form, vec![(vec![i.id], 1)]);
    }

    #[test]
    fn a_quotient_of_a_quotient_is_the_quotient_by_the_product() {
        let mut t = Terms::new();
        let (a, b, n) = (
            t.param(0, ScalarTy::I32),
            t.param(1, ScalarTy::I32),
            t.param(2, ScalarTy::I32),
        );
        // (n / a) % b * a + n % a == n - n / (a*b) * (a*b): the remainder's
        // quotient (n / a) / b is the kernel's n / (a*b).
        let na = op(&mut t, BinOp::Div, &n, &a);
        let r = op(&mut t, BinOp::Rem, &na, &b);
        let ra = op(&mut t, BinOp::Mul, &r, &a);
        let low = op(&mut t, BinOp::Rem, &n, &a);
        let sum = op(&mut t, BinOp::Add, &ra, &low);
        let ab = op(&mut t, BinOp::Mul, &a, &b);
        let nab = op(&mut t, BinOp::Div, &n, &ab);
        let offset = op(&mut t, BinOp::Sub, &sum, &nab);
        let form = only(Normalizer::default().normal_forms(&[&offset]));
        let mut expected = vec![
            (vec![n.id], 1),
            (vec![nab.id], -1),
            (
                {
                    let mut m = vec![a.id, b.id, nab.id];
                    m.sort_unstable();
                    m
                },
                -1,
            ),
        ];
        expected.sort();
        let mut form = form;
        form.sort();
        assert_eq!(form, expected);
    }

    #[test]
    fn a_remainder_of_a_quotient_expands_into_a_made_quotient_and_folds_back() {
        let mut t = Terms::new();
        let (i, a, b) = (
            t.param(0, ScalarTy::I32),
            t.param(1, ScalarTy::I32),
            t.param(2, ScalarTy::I32),
        );
        // (i / a) % b * a + i % a: the kernel never computes i / (a*b).
        let ia = op(&mut t, BinOp::Div, &i, &a);
        let y = op(&mut t, BinOp::Rem, &ia, &b);
        let ya = op(&mut t, BinOp::Mul, &y, &a);
        let x = op(&mut t, BinOp::Rem, &i, &a);
        let offset = op(&mut t, BinOp::Add, &ya, &x);
        // Without an extension to make it in, the remainder stays whole.
        assert!(Normalizer::default().normal_forms(&[&offset]).is_none());
        let mut extension = None;
        let form = only(Normalizer::extending(&t, &mut extension).normal_forms(&[&offset]));
        // i - (a*b) * (i / (a*b)), folded: i % (a*b), made past the model's terms.
        let mut made = extension.expect("the extension, made on need");
        let ab = op(&mut made, BinOp::Mul, &a, &b);
        let rem = op(&mut made, BinOp::Rem, &i, &ab);
        assert!(rem.id as usize >= t.len());
        assert_eq!(form, vec![(vec![rem.id], 1)]);
    }

    #[test]
    fn launch_facts_define_parameters_without_cycles_or_wrap_around() {
        let mut t = Terms::new();
        let (h, w, hw) = (
            t.param(0, ScalarTy::I64),
            t.param(1, ScalarTy::I64),
            t.param(2, ScalarTy::I64),
        );
        let product = t.binary(BinOp::Mul, ScalarTy::I64, h.clone(), w.clone());
        let defines = t.binary(BinOp::Eq, ScalarTy::I64, hw.clone(), product.clone());
        // `h == hw / w` would define `h` by itself through `hw`.
        let back = t.binary(BinOp::Div, ScalarTy::I64, hw.clone(), w.clone());
        let cycle = t.binary(BinOp::Eq, ScalarTy::I64, back, h.clone());
        // Unsigned equality: the parameter may be negative, its image not.
        let (u, v) = (t.param(3, ScalarTy::I64), t.param(4, ScalarTy::I64));
        let unsigned = t.binary(BinOp::Eq, ScalarTy::U64, u.clone(), v);
        let defs = definitions(&[defines, cycle, unsigned]);
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[&hw.id].id, product.id);
        // A quotient by `hw` is the quotient by `w`, then by `h`.
        let i = t.param(5, ScalarTy::I64);
        let by_hw = t.binary(BinOp::Div, ScalarTy::I64, i.clone(), hw.clone());
        let by_w = t.binary(BinOp::Div, ScalarTy::I64, i.clone(), w.clone());
        let by_w_h = t.binary(BinOp::Div, ScalarTy::I64, by_w, h.clone());
        let difference = t.binary(BinOp::Sub, ScalarTy::I64, by_hw, by_w_h);
        let mut n = Normalizer::default().defining(defs);
        let forms = n.polynomials(&[&difference]).expect("a form");
        assert!(forms[0].is_empty(), "the quotients are one atom");
        assert_eq!(n.used.len(), 1);
    }

    #[test]
    fn a_coordinate_peeled_by_subtraction_is_the_index_again() {
        let mut t = Terms::new();
        let i64t = ScalarTy::I64;
        let (i, h, w, hw) = (t.param(0, i64t), t.param(1, i64t), t.param(2, i64t), t.param(3, i64t));
        let product = t.binary(BinOp::Mul, i64t, h.clone(), w.clone());
        let defines = t.binary(BinOp::Eq, i64t, hw.clone(), product);
        // z = i / hw; y = (i - z*hw) / w; x = i % w; offset x + y*w + z*hw.
        let z = t.binary(BinOp::Div, i64t, i.clone(), hw.clone());
        let zhw = t.binary(BinOp::Mul, i64t, z.clone(), hw.clone());
        let rest = t.binary(BinOp::Sub, i64t, i.clone(), zhw.clone());
        let y = t.binary(BinOp::Div, i64t, rest.clone(), w.clone());
        let x = t.binary(BinOp::Rem, i64t, i.clone(), w.clone());
        let yw = t.binary(BinOp::Mul, i64t, y, w.clone());
        let sum = t.binary(BinOp::Add, i64t, x, yw);
        let offset = t.binary(BinOp::Add, i64t, sum, zhw);
        let mut extension = None;
        let mut n = Normalizer::extending(&t, &mut extension).defining(definitions(&[defines]));
        let form = only(n.normal_forms(&[&offset]));
        assert_eq!(form, vec![(vec![i.id], 1)]);
        // `i - z*hw` is `i % hw`: of `i`'s sign, so no premise on it.
        assert!(n.same_sign.is_empty());
        // A subtraction of a multiple that is no remainder needs one.
        let shifted = t.binary(BinOp::Sub, i64t, i.clone(), w.clone());
        let q = t.binary(BinOp::Div, i64t, shifted.clone(), w.clone());
        let mut extension2 = None;
        let mut n2 = Normalizer::extending(&t, &mut extension2);
        n2.polynomials(&[&q]).expect("a form");
        assert_eq!(n2.same_sign.len(), 1);
        assert_eq!((n2.same_sign[0].0.id, n2.same_sign[0].1.id), (i.id, shifted.id));
    }

    #[test]
    fn an_expansion_that_cancels_nothing_is_no_form() {
        let mut t = Terms::new();
        let (h, c) = (t.param(0, ScalarTy::I32), t.param(1, ScalarTy::I32));
        let b = t.builtin(Builtin::BlockIdx(Dim::X));
        let b = t.cast(ScalarTy::I32, b);
        // (b / h) * c + (b % h) * 64: the remainder expands, nothing cancels.
        let q = op(&mut t, BinOp::Div, &b, &h);
        let r = op(&mut t, BinOp::Rem, &b, &h);
        let qc = op(&mut t, BinOp::Mul, &q, &c);
        let k = t.int(64, ScalarTy::I32);
        let rk = op(&mut t, BinOp::Mul, &r, &k);
        let offset = op(&mut t, BinOp::Add, &qc, &rk);
        assert!(Normalizer::default().normal_forms(&[&offset]).is_none());
        // Unsigned arithmetic wraps: its remainder stays whole.
        let (x, d) = (t.param(2, ScalarTy::U32), t.param(3, ScalarTy::U32));
        let q = t.binary(BinOp::Div, ScalarTy::U32, x.clone(), d.clone());
        let r = t.binary(BinOp::Rem, ScalarTy::U32, x, d.clone());
        let qd = t.binary(BinOp::Mul, ScalarTy::U32, q, d);
        let sum = t.binary(BinOp::Add, ScalarTy::U32, qd, r);
        assert!(Normalizer::default().normal_forms(&[&sum]).is_none());
    }
}
