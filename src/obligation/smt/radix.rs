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

use super::normal::Normal;
use super::*;
use crate::ir::gcd;
use std::collections::BTreeMap;

/// How deep splits nest (`((a*n + b)*m + c)*h + d` needs three).
const MAX_DEPTH: usize = 3;
/// Candidate factors tried per split.
const MAX_FACTORS: usize = 4;
/// Lemmas per pair of offsets.
const MAX_LEMMAS: usize = 16;
/// Lemmas per guard (see [`Encoder::guard_lemmas`]).
const MAX_GUARD_LEMMAS: usize = 8;

/// One additive part of a sum: `coef * base`, where `base` is the value of
/// `term` when there is one (`scale` times the product of `factors`, given
/// the conversions in `fits` keep their values), else the product of
/// `factors` (1 when there are none).
#[derive(Clone)]
struct Monomial {
    coef: i128,
    term: Option<Term>,
    scale: i128,
    /// Non-constant factors, by id.
    factors: Vec<Term>,
    fits: Vec<Term>,
}

impl Monomial {
    fn constant(coef: i128) -> Monomial {
        Monomial {
            coef,
            term: None,
            scale: 1,
            factors: Vec::new(),
            fits: Vec::new(),
        }
    }

    /// A monomial of a normal form (see `normal`): `coef` times the
    /// product of `factors`, atoms.
    fn normal((factors, coef): (Vec<Term>, i128)) -> Monomial {
        match factors.as_slice() {
            [] => Monomial::constant(coef),
            _ => Monomial {
                coef,
                term: (factors.len() == 1).then(|| factors[0].clone()),
                scale: 1,
                factors,
                fits: Vec::new(),
            },
        }
    }

    /// `coef * t`, with `t`'s product at its top taken apart.
    fn of(t: &Term, coef: i128) -> Monomial {
        let (mut scale, mut factors, mut fits) = (1, Vec::new(), Vec::new());
        if product_factors(t, &mut scale, &mut factors, &mut fits).is_none() {
            (scale, factors, fits) = (1, vec![t.clone()], Vec::new());
        }
        factors.sort_by_key(|f| f.id);
        Monomial {
            coef,
            term: Some(t.clone()),
            scale,
            factors,
            fits,
        }
    }

    /// `self / Π factors` when each of `factors` is one of its own (a
    /// parameter the launch facts define as their product: see
    /// [`Extent`]).
    fn divided_by_all(&self, factors: &[Term]) -> Option<Monomial> {
        let mut own = self.factors.clone();
        for x in factors {
            let at = own.iter().position(|y| y.id == x.id)?;
            own.remove(at);
        }
        Some(Monomial {
            coef: self.coef.checked_mul(self.scale)?,
            term: (own.len() == 1).then(|| own[0].clone()),
            scale: 1,
            factors: own,
            fits: Vec::new(),
        })
    }

    /// `self / f` (see [`Self::divided_by`]), or by `f`'s factors when
    /// it is an extent the launch facts define.
    fn divided_by_extent(&self, f: &Term, extent: Option<&[Term]>) -> Option<Monomial> {
        match extent {
            Some(factors) => self.divided_by_all(factors),
            None => self.divided_by(f),
        }
    }

    /// `self / f` when `f` is one of its factors: the coefficient takes the
    /// scale, and one occurrence of `f` goes.
    fn divided_by(&self, f: &Term) -> Option<Monomial> {
        if self.factors.iter().any(|x| x.id == f.id) {
            return self.divided_by_all(std::slice::from_ref(f));
        }
        // A product (`d*h` in `s*(d*h)*n`): each of its factors goes.
        let (mut scale, mut own, mut fits) = (1, Vec::new(), Vec::new());
        product_factors(f, &mut scale, &mut own, &mut fits)?;
        if scale != 1 || own.len() < 2 {
            return None;
        }
        self.divided_by_all(&own)
    }
}

/// Takes `t` apart as `scale * Π factors` through signed products (by a
/// constant or not), shifts by a constant and integer conversions (which
/// go to `fits`).
fn product_factors(t: &Term, scale: &mut i128, factors: &mut Vec<Term>, fits: &mut Vec<Term>) -> Option<()> {
    let signed = |ty: &ScalarTy| matches!(ty, ScalarTy::Int { signed: true, .. });
    match &t.kind {
        TermKind::Int(v) => *scale = scale.checked_mul(*v)?,
        TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => {
            fits.push(t.clone());
            product_factors(a, scale, factors, fits)?;
        }
        TermKind::Binary(BinOp::Mul, opty, a, b) if signed(opty) && t.ty == *opty => {
            product_factors(a, scale, factors, fits)?;
            product_factors(b, scale, factors, fits)?;
        }
        TermKind::Binary(BinOp::Shl, opty, a, b) if signed(opty) && t.ty == *opty => {
            let c = b.as_int().filter(|c| (0..62).contains(c))?;
            *scale = scale.checked_mul(1 << c)?;
            product_factors(a, scale, factors, fits)?;
        }
        _ => factors.push(t.clone()),
    }
    Some(())
}

/// The signed products within the product `t` (its factors' own, and `t`).
fn products_in(t: &Term, out: &mut Vec<Term>) {
    let signed = |ty: &ScalarTy| matches!(ty, ScalarTy::Int { signed: true, .. });
    match &t.kind {
        TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => products_in(a, out),
        TermKind::Binary(BinOp::Mul, opty, a, b) if signed(opty) && t.ty == *opty => {
            if a.as_int().is_none() && b.as_int().is_none() && !out.iter().any(|p| p.id == t.id) {
                out.push(t.clone());
            }
            products_in(a, out);
            products_in(b, out);
        }
        TermKind::Binary(BinOp::Shl, opty, a, _) if signed(opty) && t.ty == *opty => products_in(a, out),
        _ => {}
    }
}

/// The unsigned products of non-constants in `t` that `exact` names
/// (they never wrap: see `Encoder::exact_terms`).
fn exact_products(t: &Term, exact: &HashSet<u32>, out: &mut Vec<Term>, seen: &mut HashSet<u32>) {
    if !seen.insert(t.id) {
        return;
    }
    if let TermKind::Binary(BinOp::Mul, ScalarTy::Int { signed: false, .. }, a, b) = &t.kind {
        if exact.contains(&t.id) && a.as_int().is_none() && b.as_int().is_none() {
            out.push(t.clone());
        }
    }
    for c in t.children() {
        exact_products(c, exact, out, seen);
    }
}

/// The signed products of non-constants anywhere in `t`.
fn products_within(t: &Term, out: &mut Vec<Term>, seen: &mut HashSet<u32>) {
    if !seen.insert(t.id) {
        return;
    }
    if let TermKind::Binary(BinOp::Mul, ScalarTy::Int { signed: true, .. }, a, b) = &t.kind {
        if a.as_int().is_none() && b.as_int().is_none() && !out.iter().any(|p| p.id == t.id) {
            out.push(t.clone());
        }
    }
    for c in t.children() {
        products_within(c, out, seen);
    }
}

/// A term as a sum of monomials, valid under `fits`: conversions passed
/// through whose operand must be within the target type for the value to
/// be kept.
#[derive(Clone, Default)]
struct Sum {
    monos: Vec<Monomial>,
    fits: Vec<Term>,
    /// Products the kernel computes that may divide the monomials, beyond
    /// those within the monomials' own terms (a normal form's monomials
    /// have none: they multiply out the kernel's products).
    products: Vec<Term>,
    /// Parameters the launch facts define as products of the forms'
    /// atoms (see [`Extent`]).
    extents: Vec<Extent>,
}

/// A parameter the launch facts define as a product (`ne012 == ne0*ne1*ne2`
/// through `ne01 == ne0*ne1`): a normal form reads it as its factors, and
/// it divides the monomials that hold them all. Its value is their
/// product where the definitions `premises` name have theirs.
#[derive(Clone)]
struct Extent {
    param: Term,
    factors: Vec<Term>,
    premises: Vec<(Term, Term)>,
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
            TermKind::Int(v) => self.monos.push(Monomial::constant(coef.checked_mul(*v)?)),
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
            _ => self.monos.push(Monomial::of(t, coef)),
        }
        Some(())
    }
}

/// `hi - lo` divided by each factor of all its monomials (none when it
/// is zero or has a constant part): `(f, Q)` with `hi - lo = f*Q`.
fn divided_differences(lo: &Normal, hi: &Normal) -> Vec<(Term, Normal)> {
    let mut difference: BTreeMap<Vec<u32>, (Vec<Term>, i128)> = BTreeMap::new();
    for (sign, form) in [(1, hi), (-1, lo)] {
        for (factors, c) in form {
            let key = factors.iter().map(|f| f.id).collect();
            let entry = difference.entry(key).or_insert_with(|| (factors.clone(), 0));
            let Some(sum) = c.checked_mul(sign).and_then(|c| entry.1.checked_add(c)) else {
                return Vec::new();
            };
            entry.1 = sum;
        }
    }
    difference.retain(|_, (_, c)| *c != 0);
    let Some((first, _)) = difference.values().next() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut tried = HashSet::default();
    for f in first {
        if !tried.insert(f.id) || !difference.keys().all(|k| k.contains(&f.id)) {
            continue;
        }
        let quotient = difference
            .values()
            .map(|(factors, coef)| {
                let mut factors = factors.clone();
                if let Some(at) = factors.iter().position(|x| x.id == f.id) {
                    factors.remove(at);
                }
                (factors, *coef)
            })
            .collect();
        out.push((f.clone(), quotient));
    }
    out
}

/// The signed comparisons within `t`, as `(strict, lower, higher, comparison)`.
fn comparisons_in(t: &Term, out: &mut Vec<(bool, Term, Term, Term)>, seen: &mut HashSet<u32>) {
    if !seen.insert(t.id) {
        return;
    }
    if let TermKind::Binary(
        op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
        ScalarTy::Int { signed: true, .. },
        a,
        b,
    ) = &t.kind
    {
        // Against a constant, the difference has a constant part: no factor.
        if a.as_int().is_none() && b.as_int().is_none() {
            let (lo, hi) = if matches!(op, BinOp::Lt | BinOp::Le) {
                (a, b)
            } else {
                (b, a)
            };
            out.push((matches!(op, BinOp::Lt | BinOp::Gt), lo.clone(), hi.clone(), t.clone()));
        }
    }
    for c in t.children() {
        comparisons_in(c, out, seen);
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

impl Encoder<'_> {
    /// A normalizer of this obligation's terms that makes the quotients it
    /// needs in the encoder's extension of the model's terms.
    fn normalizer(&mut self, terms: &[&Term]) -> super::normal::Normalizer<'_> {
        let definitions = super::normal::definitions(&self.model.assumptions);
        let exact = self.exact_terms(terms);
        super::normal::Normalizer::extending(&self.model.terms, &mut self.extension)
            .defining(definitions)
            .exact(exact)
    }

    /// The unsigned sums, differences and products within `terms` whose
    /// exact values always fit their type, and the integer conversions
    /// whose operands always fit the target (by the intervals of the
    /// launch's values): integer arithmetic, as signed arithmetic without
    /// overflow is. `blockIdx.x * blockDim.x + threadIdx.x` in `unsigned`
    /// stays below 2^31 (the grid's threads do), and so does its
    /// conversion to `int`.
    fn exact_terms(&mut self, terms: &[&Term]) -> HashSet<u32> {
        let mut out = HashSet::default();
        let mut seen = HashSet::default();
        for t in terms {
            self.collect_exact(t, &mut out, &mut seen);
        }
        out
    }

    fn collect_exact(&mut self, t: &Term, out: &mut HashSet<u32>, seen: &mut HashSet<u32>) {
        if !seen.insert(t.id) {
            return;
        }
        for c in t.children() {
            self.collect_exact(c, out, seen);
        }
        let exact = match &t.kind {
            TermKind::Binary(
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl,
                ScalarTy::Int { signed: false, .. },
                ..,
            ) => within(self.raw_interval(t), range_of(t.ty)),
            TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => within(self.interval(a), range_of(t.ty)),
            _ => false,
        };
        if exact {
            out.insert(t.id);
        }
    }

    /// That the dividends a normal form split (see
    /// `Normalizer::split_quotient`) have one sign with the part kept, in
    /// thread `inst`.
    fn split_signs(&mut self, same_sign: &[(Term, Term)], inst: usize, out: &mut Vec<Bool>) {
        let zero = int(0);
        for (y, x) in same_sign {
            let (y, x) = (self.enc_int(y, inst), self.enc_int(x, inst));
            out.push(Bool::or(&[
                Bool::and(&[y.ge(&zero), x.ge(&zero)]),
                Bool::and(&[y.le(&zero), x.le(&zero)]),
            ]));
        }
    }

    /// That the launch facts' definitions `used` by a normal form have
    /// their values in integers (see [`Self::defined`]).
    fn definitions_defined(&mut self, used: &[(Term, Term)], out: &mut Vec<Bool>) {
        let mut seen = HashSet::default();
        for (_, e) in used {
            self.defined(e, 0, &mut seen, out);
        }
    }

    /// Mixed-radix lemmas for records at offsets `a` (thread 0) and `b`
    /// (thread 1) given that `equal` says the offsets are equal.
    /// With the normal forms of offsets that unpack an index and rebuild
    /// it (see `normal`), stated first: `(normal-form identities, all
    /// lemmas)`.
    pub(super) fn radix_lemmas(&mut self, a: &Term, b: &Term, equal: Bool) -> (usize, Vec<Bool>) {
        let mut out = Vec::new();
        let mut identities = 0;
        let mut normalizer = self.normalizer(&[a, b]);
        let forms = normalizer.normal_forms(&[a, b]);
        let used = std::mem::take(&mut normalizer.used);
        let same_sign = std::mem::take(&mut normalizer.same_sign);
        if let Some(Ok::<[_; 2], _>(forms)) = forms.map(TryInto::try_into) {
            // Offsets that unpack an index and rebuild it: each equals its
            // normal form, and the forms split.
            let mut products = Vec::new();
            let mut seen = HashSet::default();
            // The launch facts' definitions the forms read are products
            // the host computed (`ne0*ne1` for a parameter the guard
            // bounds by): factors too.
            for t in [a, b].into_iter().chain(used.iter().map(|(_, e)| e)) {
                products_within(t, &mut products, &mut seen);
            }
            let exact = self.exact_terms(&[a, b]);
            let mut unsigned = Vec::new();
            exact_products(a, &exact, &mut unsigned, &mut HashSet::default());
            exact_products(b, &exact, &mut unsigned, &mut HashSet::default());
            let mut extents = Vec::new();
            for (param, _) in &used {
                let Some(forms) = self.normalizer(&[param]).polynomials(&[param]) else {
                    continue;
                };
                if let [(factors, 1)] = forms[0].as_slice() {
                    if factors.len() >= 2 {
                        extents.push(Extent {
                            param: param.clone(),
                            factors: factors.clone(),
                            premises: used.clone(),
                        });
                    }
                }
            }
            let sums = forms.map(|form| Sum {
                monos: form.into_iter().map(Monomial::normal).collect(),
                fits: Vec::new(),
                products: products.clone(),
                extents: extents.clone(),
            });
            let mut premises = vec![equal];
            for (inst, (t, sum)) in [a, b].into_iter().zip(&sums).enumerate() {
                let value = self.sum_value(&sum.monos, 1, inst);
                let offset = self.enc_int(t, inst);
                let mut own = Vec::new();
                let mut seen = HashSet::default();
                for u in std::iter::once(t).chain(sum.monos.iter().flat_map(|m| &m.factors)) {
                    self.defined(u, inst, &mut seen, &mut own);
                }
                self.definitions_defined(&used, &mut own);
                self.split_signs(&same_sign, inst, &mut own);
                let own = Bool::and(&own);
                out.push(own.implies(offset.eq(&value)));
                if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                    eprintln!("normal form {inst}: {}", out.last().unwrap());
                }
                premises.push(own);
                identities += 1;
            }
            self.product_ties(&sums, &unsigned, &mut out);
            let [x, y] = sums;
            self.split(Bool::and(&premises), [x, y], MAX_DEPTH, &mut out);
        } else if let (Some(x), Some(y)) = (Sum::of(a, 1), Sum::of(b, 1)) {
            self.split(equal, [x, y], MAX_DEPTH, &mut out);
        }
        (identities, out)
    }

    /// Lemmas dividing the comparisons of thread `inst`'s guard `pc` by a
    /// factor of every monomial of their sides' difference. A chunked
    /// loop `for (t = s*C + x; t < (s + n)*C + x; t += C)` keeps `k*C`
    /// below `n*C` (by distributivity, which the solver does not see
    /// through its uninterpreted products), and its offset `(s + k)*C + x`
    /// splits (see [`Self::split`]) only given `k < n`. For `A < B` with
    /// `B - A = f*Q` in normal form: `f > 0 ⇒ Q > 0` and `f < 0 ⇒ Q < 0`
    /// (`≥`, `≤` for `A ≤ B`), a theorem of integers where the sides have
    /// their values (the premises), so a lemma changes no verdict.
    pub(super) fn guard_lemmas(&mut self, pc: &Term, inst: usize, out: &mut Vec<Bool>) {
        let mut comparisons = Vec::new();
        comparisons_in(pc, &mut comparisons, &mut HashSet::default());
        let mut made = 0;
        for (strict, lo, hi, cmp) in comparisons {
            if made >= MAX_GUARD_LEMMAS {
                return;
            }
            let mut premise = vec![self.enc_bool(&cmp, inst)];
            // A narrowing conversion of a side is its operand where that
            // fits (`(int)(start + k*(int64_t)C) < end`).
            let mut sides = [lo, hi];
            for side in &mut sides {
                while let TermKind::Cast(a) = &side.kind {
                    if !(a.ty.is_int() && side.ty.is_int()) {
                        break;
                    }
                    premise.extend(self.fits_premises(std::slice::from_ref(side), inst));
                    *side = a.clone();
                }
            }
            let mut normalizer = self.normalizer(&[&sides[0], &sides[1]]);
            let forms = normalizer.polynomials(&[&sides[0], &sides[1]]);
            let used = std::mem::take(&mut normalizer.used);
            let same_sign = std::mem::take(&mut normalizer.same_sign);
            let Some(forms) = forms else {
                continue;
            };
            let divided = divided_differences(&forms[0], &forms[1]);
            if divided.is_empty() {
                continue;
            }
            let mut seen = HashSet::default();
            let mut own = Vec::new();
            for side in &sides {
                self.defined(side, inst, &mut seen, &mut own);
            }
            self.definitions_defined(&used, &mut own);
            self.split_signs(&same_sign, inst, &mut own);
            premise.extend(own);
            let premise = Bool::and(&premise);
            for (f, quotient) in divided {
                let quotient: Vec<Monomial> = quotient.into_iter().map(Monomial::normal).collect();
                let q = self.sum_value(&quotient, 1, inst);
                let fv = self.enc_int(&f, inst);
                let (positive, negative) = if strict {
                    (q.gt(int(0)), q.lt(int(0)))
                } else {
                    (q.ge(int(0)), q.le(int(0)))
                };
                out.push(premise.implies(Bool::and(&[
                    fv.gt(int(0)).implies(positive),
                    fv.lt(int(0)).implies(negative),
                ])));
                if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                    eprintln!("guard by #{}: {}", f.id, out.last().unwrap());
                }
                made += 1;
            }
        }
    }

    /// That `t` has its value in integers in thread `inst`: none of its
    /// signed operations (quotients included) wraps, and no divisor is
    /// zero. (Undefined behaviour otherwise, which the query assumes
    /// away; as premises, the normal forms are theorems.) Call after
    /// encoding `t`: the wraps are the encoding's.
    fn defined(&mut self, t: &Term, inst: usize, seen: &mut HashSet<(u32, usize)>, out: &mut Vec<Bool>) {
        let inst = if inst == 1 && self.shared_with_first(t) {
            0
        } else {
            inst
        };
        if !seen.insert((t.id, inst)) {
            return;
        }
        let signed = matches!(t.ty, ScalarTy::Int { signed: true, .. });
        if signed {
            if let Some(q) = self.wraps.get(&(t.id, inst)) {
                out.push(q.eq(int(0)));
            }
        }
        if let TermKind::Binary(BinOp::Div | BinOp::Rem, opty, _, d) = &t.kind {
            if opty.is_int() {
                match d.as_int() {
                    Some(0) => out.push(Bool::from_bool(false)),
                    Some(_) => {}
                    None => {
                        let d = self.enc_int(d, inst);
                        out.push(d.eq(int(0)).not());
                    }
                }
            }
        }
        for c in t.children() {
            self.defined(c, inst, seen, out);
        }
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
        // Factors alike in both threads (launch values and parameters)
        // dividing a part of both sums, most shared first.
        let per_thread = |k: &TermKind| {
            matches!(
                k,
                TermKind::Symbol(_) | TermKind::Builtin(Builtin::ThreadIdx(_) | Builtin::BlockIdx(_))
            )
        };
        // Products the kernel computes count as one factor (`d*h` of
        // `s*(d*h)*n + y*(d*h) + x`, where the guard bounds `x` by `d*h`).
        let mut products: Vec<Term> = sums.iter().flat_map(|s| s.products.clone()).collect();
        for t in sums.iter().flat_map(|s| &s.monos).filter_map(|m| m.term.as_ref()) {
            products_in(t, &mut products);
        }
        let mut candidates: Vec<(usize, usize, Term, Option<Extent>)> = Vec::new();
        let extents: Vec<Extent> = sums[0].extents.clone();
        let plain = sums
            .iter()
            .flat_map(|s| &s.monos)
            .flat_map(|m| &m.factors)
            .chain(&products)
            .map(|f| (f.clone(), None));
        let defined = extents.iter().map(|e| (e.param.clone(), Some(e.clone())));
        for (f, extent) in plain.chain(defined) {
            if candidates.iter().any(|(_, _, c, _)| c.id == f.id)
                || crate::ir::term::mentions(&f, &mut { per_thread }, &mut HashSet::default())
            {
                continue;
            }
            let by = extent.as_ref().map(|e| e.factors.as_slice());
            let divides = |s: &Sum| s.monos.iter().filter(|m| m.divided_by_extent(&f, by).is_some()).count();
            let (d0, d1) = (divides(&sums[0]), divides(&sums[1]));
            if d0 > 0 && d1 > 0 {
                // An extent is as wide as the product of its factors.
                let size = match &extent {
                    Some(e) => 2 * e.factors.len() - 1,
                    None => crate::ir::term::dag_size(&f),
                };
                candidates.push((d0 + d1, size, f.clone(), extent));
            }
        }
        // The most shared first; of those, the widest product.
        candidates.sort_by_key(|(n, size, f, _)| (std::cmp::Reverse(*n), std::cmp::Reverse(*size), f.id));
        for (_, _, f, extent) in candidates.into_iter().take(MAX_FACTORS) {
            if out.len() >= MAX_LEMMAS {
                return;
            }
            self.split_by(&equal, &sums, &f, extent.as_ref(), depth, out);
        }
    }

    /// One lemma: `sums[i] = c*f*high[i] + low[i]`; equal sums with both
    /// lows in `[0, |c*f|)` (and `f` alike in both threads) have equal
    /// highs and equal lows.
    fn split_by(
        &mut self,
        equal: &Bool,
        sums: &[Sum; 2],
        f: &Term,
        extent: Option<&Extent>,
        depth: usize,
        out: &mut Vec<Bool>,
    ) {
        let by = extent.map(|e| e.factors.as_slice());
        let mut parts: Vec<(Sum, Sum)> = Vec::new();
        for s in sums {
            let (mut high, mut low) = (Sum::default(), Sum::default());
            high.fits = s.fits.clone();
            high.products = s.products.clone();
            low.products = s.products.clone();
            high.extents = s.extents.clone();
            low.extents = s.extents.clone();
            for m in &s.monos {
                match m.divided_by_extent(f, by) {
                    Some(q) => {
                        high.fits.extend(m.fits.iter().cloned());
                        high.monos.push(q);
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
        // An extent is its factors' product where its definitions do not wrap.
        if let Some(e) = extent {
            self.definitions_defined(&e.premises, &mut premise);
        }
        let mut highs = Vec::new();
        let mut lows = Vec::new();
        let mut hs = Vec::new();
        for (inst, (high, low)) in parts.iter().enumerate() {
            // A product `f` as the kernel computes it may have wrapped in
            // this thread (one of the other's offset), but its factors are
            // launch values, alike in both threads, and a wrapped value is
            // smaller than the true one: rests below it are below the true
            // product too, so the lemma needs no premise on `f`.
            let h = self.enc_int(f, inst);
            premise.extend(self.fits_premises(&high.fits, inst));
            let hv = self.sum_value(&high.monos, c, inst);
            let lv = self.sum_value(&low.monos, 1, inst);
            premise.push(lv.ge(int(0)));
            // Below `|c*f|`: a negative extent (a parameter of any sign)
            // spaces the highs as far apart.
            let ch = Int::mul(&[int(c), h.clone()]);
            premise.push(Bool::or(&[lv.lt(&ch), lv.lt(ch.unary_minus())]));
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
        // The quotients, as sums of their own (a quotient that is a term
        // is taken apart again), and the rests split again.
        let requotient = |(high, _): &(Sum, Sum)| {
            let mut s = Sum {
                products: high.products.clone(),
                extents: high.extents.clone(),
                ..Sum::default()
            };
            for m in &high.monos {
                match &m.term {
                    Some(t) => s.add(t, m.coef / c)?,
                    None => s.monos.push(Monomial {
                        coef: m.coef / c,
                        ..m.clone()
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

    /// `Σ coef/c * base` in thread `inst`. A product of factors that no
    /// term holds is an uninterpreted function of them (one for both
    /// threads): the lemmas are theorems when it is the product.
    fn sum_value(&mut self, monos: &[Monomial], c: i128, inst: usize) -> Int {
        let mut parts = vec![int(0)];
        for m in monos {
            let v = match (&m.term, m.factors.as_slice()) {
                (Some(t), _) => self.enc_int(t, inst),
                (None, []) => int(1),
                (None, factors) => {
                    let (scale, acc) = self.product_value(factors, inst);
                    match acc {
                        None => {
                            parts.push(int(m.coef / c * scale));
                            continue;
                        }
                        Some(acc) if scale == 1 => acc,
                        Some(acc) => Int::mul(&[int(scale), acc]),
                    }
                }
            };
            parts.push(Int::mul(&[int(m.coef / c), v]));
        }
        Int::add(&parts)
    }

    /// The product of `factors` (sorted by id) in thread `inst`, as
    /// `(scale, rest)`: factors of one possible value (a block extent the
    /// launch fixes) are constants in `scale`, the others an uninterpreted
    /// `radix.mul` of them (`None` when there are none).
    fn product_value(&mut self, factors: &[Term], inst: usize) -> (i128, Option<Int>) {
        let mut scale = 1i128;
        let mut rest = Vec::new();
        for f in factors {
            match self.interval(f) {
                Some((lo, hi)) if lo == hi => scale = scale.saturating_mul(lo),
                _ => rest.push(f.clone()),
            }
        }
        let Some((first, rest)) = rest.split_first() else {
            return (scale, None);
        };
        let mut acc = self.enc_int(first, inst);
        for f in rest {
            let x = self.enc_int(f, inst);
            let args = [Dynamic::from_ast(&acc), Dynamic::from_ast(&x)];
            acc = Self::as_int(self.uf("radix.mul", &args, ScalarTy::I64));
        }
        (scale, Some(acc))
    }

    /// Lemmas tying the products the kernel computes to the monomials of
    /// normal forms `sums` that multiply the same factors: where such a
    /// product does not wrap (and its conversions keep their values), its
    /// value is the monomial's `radix.mul` of the factors. A normal form
    /// multiplies the kernel's products out (`blockIdx.y*(a*b*c)` is the
    /// monomial `a*b*c*blockIdx.y`), and the guards that bound its parts
    /// (`t < a*b*c`, with `t = threadIdx.x + blockIdx.x*blockDim.x`) speak
    /// of the kernel's products: without the tie, a split of the form
    /// cannot use them.
    fn product_ties(&mut self, sums: &[Sum; 2], unsigned: &[Term], out: &mut Vec<Bool>) {
        let products: Vec<Term> = sums.iter().flat_map(|s| s.products.clone()).collect();
        let mut tied = HashSet::default();
        for p in products.iter().chain(unsigned) {
            let m = match &p.kind {
                // A product that never wraps (see `exact_terms`).
                TermKind::Binary(BinOp::Mul, ScalarTy::Int { signed: false, .. }, x, y)
                    if x.as_int().is_none() && y.as_int().is_none() =>
                {
                    let mut factors = vec![x.clone(), y.clone()];
                    factors.sort_by_key(|f| f.id);
                    Monomial {
                        coef: 1,
                        term: Some(p.clone()),
                        scale: 1,
                        factors,
                        fits: Vec::new(),
                    }
                }
                _ => Monomial::of(p, 1),
            };
            if m.factors.len() < 2 || !tied.insert(p.id) {
                continue;
            }
            let ids: Vec<u32> = m.factors.iter().map(|f| f.id).collect();
            for (inst, sum) in sums.iter().enumerate() {
                let alike = sum.monos.iter().any(|n| {
                    n.term.is_none()
                        && n.factors.len() == ids.len()
                        && n.factors.iter().zip(&ids).all(|(f, id)| f.id == *id)
                });
                if !alike {
                    continue;
                }
                let (scale, Some(chain)) = self.product_value(&m.factors, inst) else {
                    continue;
                };
                let mut premise = Vec::new();
                self.defined(p, inst, &mut HashSet::default(), &mut premise);
                premise.extend(self.fits_premises(&m.fits, inst));
                let value = self.enc_int(p, inst);
                let scale = scale.saturating_mul(m.scale);
                out.push(Bool::and(&premise).implies(value.eq(Int::mul(&[int(scale), chain]))));
                if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                    eprintln!("product tie {inst}: {}", out.last().unwrap());
                }
            }
        }
    }

    /// The conversions in `fits` keep their operands' values in thread
    /// `inst` (those whose static interval already fits are left out).
    fn fits_premises(&mut self, fits: &[Term], inst: usize) -> Vec<Bool> {
        let mut out = Vec::new();
        let mut seen = HashSet::default();
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

    fn ids(ts: &[Term]) -> Vec<u32> {
        ts.iter().map(|t| t.id).collect()
    }

    #[test]
    fn a_row_major_index_splits_by_each_extent() {
        let mut t = Terms::new();
        let i32t = ScalarTy::I32;
        let (s, n, h, tok) = (t.param(0, i32t), t.param(1, i32t), t.param(2, i32t), t.param(3, i32t));
        let j = t.builtin(Builtin::BlockIdx(Dim::X));
        let j = t.cast(i32t, j);
        // ((s*n)*h + tok*h + j) * 4 bytes
        let sn = mul(&mut t, i32t, s.clone(), n.clone());
        let snh = mul(&mut t, i32t, sn, h.clone());
        let th = mul(&mut t, i32t, tok.clone(), h.clone());
        let four = t.int(4, i32t);
        let sum = add(&mut t, i32t, snh, th);
        let sum = add(&mut t, i32t, sum, j);
        let bytes = mul(&mut t, i32t, sum, four);
        let sum = Sum::of(&bytes, 1).expect("splits");
        let coefs: Vec<i128> = sum.monos.iter().map(|m| m.coef).collect();
        assert_eq!(coefs, vec![4, 4, 4]);
        let by_id = |v: Vec<Term>| {
            let mut v = ids(&v);
            v.sort();
            v
        };
        assert_eq!(ids(&sum.monos[0].factors), by_id(vec![s.clone(), n.clone(), h.clone()]));
        // By `h`: `s*n` (no term holds it) and `tok` (a term) remain.
        let q = sum.monos[0].divided_by(&h).expect("h divides s*n*h");
        assert!(q.term.is_none());
        assert_eq!(ids(&q.factors), by_id(vec![s.clone(), n.clone()]));
        let q = sum.monos[1].divided_by(&h).expect("h divides tok*h");
        assert_eq!(q.term.map(|x| x.id), Some(tok.id));
        assert!(sum.monos[2].divided_by(&h).is_none());
        // `n` divides the first part too: splits nest in any order.
        assert!(sum.monos[0].divided_by(&n).is_some());
    }

    #[test]
    fn a_chunk_bound_divides_by_the_row_width() {
        let mut t = Terms::new();
        let i32t = ScalarTy::I32;
        let (b, n, w, k) = (t.param(0, i32t), t.param(1, i32t), t.param(2, i32t), t.param(3, i32t));
        // b*n*w + k*w < (b + 1)*n*w: by `w`, `n - k`; `n` is no factor of `k*w`.
        let bn = mul(&mut t, i32t, b.clone(), n.clone());
        let bnw = mul(&mut t, i32t, bn, w.clone());
        let kw = mul(&mut t, i32t, k.clone(), w.clone());
        let lo = add(&mut t, i32t, bnw, kw);
        let one = t.int(1, i32t);
        let b1 = add(&mut t, i32t, b, one.clone());
        let b1n = mul(&mut t, i32t, b1, n.clone());
        let hi = mul(&mut t, i32t, b1n, w.clone());
        let forms = crate::obligation::smt::normal::Normalizer::default()
            .polynomials(&[&lo, &hi])
            .expect("forms");
        let divided = divided_differences(&forms[0], &forms[1]);
        assert_eq!(divided.len(), 1);
        let (f, mut q) = divided.into_iter().next().unwrap();
        assert_eq!(f.id, w.id);
        q.sort_by_key(|(_, c)| *c);
        let q: Vec<(Vec<u32>, i128)> = q.into_iter().map(|(fs, c)| (ids(&fs), c)).collect();
        assert_eq!(q, vec![(vec![k.id], -1), (vec![n.id], 1)]);
        // Sides that differ by a constant have no common factor.
        let lo2 = add(&mut t, i32t, hi.clone(), one);
        let forms = crate::obligation::smt::normal::Normalizer::default()
            .polynomials(&[&hi, &lo2])
            .expect("forms");
        assert!(divided_differences(&forms[0], &forms[1]).is_empty());
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
        assert!(s.monos[0].divided_by(&w).is_some());
        // Unsigned arithmetic wraps: its sum and its product are one factor.
        let (a, b) = (t.param(2, u32t), t.param(3, u32t));
        let ab = add(&mut t, u32t, a.clone(), b.clone());
        let s = Sum::of(&ab, 1).expect("one part");
        assert_eq!(s.monos.len(), 1);
        assert_eq!(ids(&s.monos[0].factors), vec![ab.id]);
        let p = mul(&mut t, u32t, a.clone(), b);
        assert!(Sum::of(&p, 1).expect("one part").monos[0].divided_by(&a).is_none());
    }
}
