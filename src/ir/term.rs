//! Symbolic terms: the values one generic thread computes, as the access
//! model (`ir::access`) records them.
//!
//! Terms are hash-consed DAGs: structurally equal terms are the same node, so
//! equality is an id comparison and memo tables are indexed by id. Merging the
//! two arms of a branch (`c ? a : b` over whole environments) shares every
//! subterm instead of copying it.
//!
//! Leaves are CUDA's builtins, kernel parameters, the kernel's symbolic
//! constants and *model symbols* ([`SymbolId`]): values the analysis names
//! (a loaded value, a loop's iteration count, a warp-uniform shuffle result).
//! Which leaves are per thread is decided by [`Scope`]; the obligations give
//! each of the two threads its own copy of every per-thread leaf.
//!
//! Smart constructors fold constants with C++ semantics (as `ir::fold` does
//! for expressions), so phases and offsets that are constant come out as
//! constants and cheap pruning can see them.

use crate::hash::HashMap;
use std::fmt;
use std::rc::Rc;

use super::{BinOp, Builtin, OpId, ScalarTy, SymId, UnOp};

/// A model symbol (index into `AccessModel::symbols`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolId(pub u32);

impl SymbolId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

pub type Term = Rc<TermNode>;

/// One node of a term DAG. `id` identifies it (hash-consing makes equal
/// structure equal id).
#[derive(Debug)]
pub struct TermNode {
    pub id: u32,
    pub ty: ScalarTy,
    pub kind: TermKind,
    /// One past the largest model symbol in the term (0: none): a
    /// substitution of later symbols only leaves it as it is.
    pub top: u32,
}

impl PartialEq for TermNode {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for TermNode {}

#[derive(Debug)]
pub enum TermKind {
    Int(i128),
    Bool(bool),
    /// A floating-point constant (bits of the f64), kept for printing and folding.
    Float(u64),
    Builtin(Builtin),
    Param(u32),
    Sym(SymId),
    Symbol(SymbolId),
    Unary(UnOp, Term),
    /// The operation computes in `operand` (the node's `ty` is `Bool` for comparisons).
    Binary(BinOp, ScalarTy, Term, Term),
    Select(Term, Term, Term),
    /// Conversion to the node's `ty`.
    Cast(Term),
    Opaque(OpId, Vec<Term>),
}

impl TermNode {
    pub fn as_int(&self) -> Option<i128> {
        match self.kind {
            TermKind::Int(v) => Some(v),
            TermKind::Bool(b) => Some(b as i128),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.kind {
            TermKind::Bool(b) => Some(b),
            TermKind::Int(v) => Some(v != 0),
            _ => None,
        }
    }

    pub fn is_true(&self) -> bool {
        self.as_bool() == Some(true)
    }

    pub fn is_false(&self) -> bool {
        self.as_bool() == Some(false)
    }

    pub fn children(&self) -> Vec<&Term> {
        match &self.kind {
            TermKind::Unary(_, a) | TermKind::Cast(a) => vec![a],
            TermKind::Binary(_, _, a, b) => vec![a, b],
            TermKind::Select(c, a, b) => vec![c, a, b],
            TermKind::Opaque(_, args) => args.iter().collect(),
            _ => Vec::new(),
        }
    }
}

/// The shallow identity of a node, for hash-consing.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Int(i128, ScalarTy),
    Bool(bool),
    Float(u64, ScalarTy),
    Builtin(Builtin),
    Param(u32, ScalarTy),
    Sym(SymId, ScalarTy),
    Symbol(SymbolId, ScalarTy),
    Unary(UnOp, ScalarTy, u32),
    Binary(BinOp, ScalarTy, u32, u32),
    Select(u32, u32, u32),
    Cast(ScalarTy, u32),
    Opaque(OpId, ScalarTy, Vec<u32>),
}

/// The term factory: every term of a model is built here. A clone
/// extends the model's terms: it hands out the model's nodes for their
/// structure and numbers new ones past them (see `smt::normal`).
#[derive(Clone, Default)]
pub struct Terms {
    table: HashMap<Key, Term>,
}

impl Terms {
    pub fn new() -> Terms {
        Terms::default()
    }

    /// Number of distinct nodes built.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    fn make(&mut self, key: Key, ty: ScalarTy, kind: impl FnOnce() -> TermKind) -> Term {
        let next = self.table.len() as u32;
        self.table
            .entry(key)
            .or_insert_with(|| {
                let kind = kind();
                let top = match &kind {
                    TermKind::Symbol(s) => s.0 + 1,
                    TermKind::Unary(_, a) | TermKind::Cast(a) => a.top,
                    TermKind::Binary(_, _, a, b) => a.top.max(b.top),
                    TermKind::Select(c, a, b) => c.top.max(a.top).max(b.top),
                    TermKind::Opaque(_, args) => args.iter().map(|a| a.top).max().unwrap_or(0),
                    _ => 0,
                };
                Rc::new(TermNode {
                    id: next,
                    ty,
                    kind,
                    top,
                })
            })
            .clone()
    }

    pub fn int(&mut self, value: i128, ty: ScalarTy) -> Term {
        if ty == ScalarTy::Bool {
            return self.bool(value != 0);
        }
        let v = ty.wrap(value);
        self.make(Key::Int(v, ty), ty, || TermKind::Int(v))
    }

    pub fn bool(&mut self, b: bool) -> Term {
        self.make(Key::Bool(b), ScalarTy::Bool, || TermKind::Bool(b))
    }

    pub fn float(&mut self, value: f64, ty: ScalarTy) -> Term {
        let bits = value.to_bits();
        self.make(Key::Float(bits, ty), ty, || TermKind::Float(bits))
    }

    pub fn builtin(&mut self, b: Builtin) -> Term {
        let ty = if b == Builtin::WarpSize {
            ScalarTy::I32
        } else {
            ScalarTy::U32
        };
        self.make(Key::Builtin(b), ty, || TermKind::Builtin(b))
    }

    pub fn param(&mut self, index: u32, ty: ScalarTy) -> Term {
        self.make(Key::Param(index, ty), ty, || TermKind::Param(index))
    }

    pub fn sym(&mut self, id: SymId, ty: ScalarTy) -> Term {
        self.make(Key::Sym(id, ty), ty, || TermKind::Sym(id))
    }

    pub fn symbol(&mut self, id: SymbolId, ty: ScalarTy) -> Term {
        self.make(Key::Symbol(id, ty), ty, || TermKind::Symbol(id))
    }

    pub fn opaque(&mut self, op: OpId, ty: ScalarTy, args: Vec<Term>) -> Term {
        let ids = args.iter().map(|a| a.id).collect();
        self.make(Key::Opaque(op, ty, ids), ty, || TermKind::Opaque(op, args))
    }

    /// Converts `a` to `ty` (C conversions: truncation, sign or zero extension,
    /// `!= 0` to bool).
    pub fn cast(&mut self, ty: ScalarTy, a: Term) -> Term {
        if a.ty == ty {
            return a;
        }
        match (&a.kind, ty) {
            (TermKind::Int(v), ScalarTy::Int { .. }) => return self.int(*v, ty),
            (TermKind::Int(v), ScalarTy::Bool) => return self.bool(*v != 0),
            (TermKind::Bool(b), ScalarTy::Int { .. }) => return self.int(*b as i128, ty),
            (TermKind::Int(v), ScalarTy::Float(_)) => return self.float(*v as f64, ty),
            (TermKind::Float(bits), ScalarTy::Int { .. }) => {
                let f = f64::from_bits(*bits);
                if f.is_finite() {
                    return self.int(f.trunc() as i128, ty);
                }
            }
            (TermKind::Float(bits), ScalarTy::Float(_)) => return self.float(f64::from_bits(*bits), ty),
            _ => {}
        }
        // `(T)(U)x` where U is at least as wide as both and T is no wider than x's
        // type: the middle conversion changes nothing that T keeps.
        if let (TermKind::Cast(inner), ScalarTy::Int { bits: to, .. }) = (&a.kind, ty) {
            if let (ScalarTy::Int { bits: mid, .. }, ScalarTy::Int { bits: from, .. }) = (a.ty, inner.ty) {
                if to <= from && mid >= to {
                    return self.cast(ty, inner.clone());
                }
            }
        }
        if ty == ScalarTy::Bool && a.ty.is_int() {
            let zero = self.int(0, a.ty);
            return self.binary(BinOp::Ne, a.ty, a, zero);
        }
        let id = a.id;
        self.make(Key::Cast(ty, id), ty, || TermKind::Cast(a))
    }

    pub fn not(&mut self, a: Term) -> Term {
        if let Some(b) = a.as_bool() {
            return self.bool(!b);
        }
        match &a.kind {
            TermKind::Unary(UnOp::Not, inner) => return inner.clone(),
            TermKind::Binary(op, ty, l, r) if ty.is_int() => {
                if let Some(f) = op.negated() {
                    return self.binary(f, *ty, l.clone(), r.clone());
                }
            }
            _ => {}
        }
        let id = a.id;
        self.make(Key::Unary(UnOp::Not, ScalarTy::Bool, id), ScalarTy::Bool, || {
            TermKind::Unary(UnOp::Not, a)
        })
    }

    pub fn unary(&mut self, op: UnOp, ty: ScalarTy, a: Term) -> Term {
        if op == UnOp::Not {
            let a = self.cast(ScalarTy::Bool, a);
            return self.not(a);
        }
        let a = self.cast(ty, a);
        match (&a.kind, op) {
            (TermKind::Int(v), UnOp::Neg) if ty.is_int() => return self.int(-v, ty),
            (TermKind::Int(v), UnOp::BitNot) if ty.is_int() => return self.int(!v, ty),
            (TermKind::Float(bits), UnOp::Neg) => return self.float(-f64::from_bits(*bits), ty),
            (TermKind::Unary(o, inner), _) if *o == op && a.ty == ty => return inner.clone(),
            _ => {}
        }
        let id = a.id;
        self.make(Key::Unary(op, ty, id), ty, || TermKind::Unary(op, a))
    }

    pub fn and(&mut self, a: Term, b: Term) -> Term {
        self.binary(BinOp::And, ScalarTy::Bool, a, b)
    }

    pub fn or(&mut self, a: Term, b: Term) -> Term {
        self.binary(BinOp::Or, ScalarTy::Bool, a, b)
    }

    pub fn and_all(&mut self, terms: impl IntoIterator<Item = Term>) -> Term {
        let mut acc = self.bool(true);
        for t in terms {
            acc = self.and(acc, t);
        }
        acc
    }

    pub fn or_all(&mut self, terms: impl IntoIterator<Item = Term>) -> Term {
        let mut acc = self.bool(false);
        for t in terms {
            acc = self.or(acc, t);
        }
        acc
    }

    pub fn select(&mut self, c: Term, a: Term, b: Term) -> Term {
        let c = self.cast(ScalarTy::Bool, c);
        if let Some(v) = c.as_bool() {
            return if v { a } else { b };
        }
        if a.id == b.id {
            return a;
        }
        let ty = a.ty;
        let b = if b.ty != ty { self.cast(ty, b) } else { b };
        if ty == ScalarTy::Bool {
            match (a.as_bool(), b.as_bool()) {
                (Some(true), Some(false)) => return c,
                (Some(false), Some(true)) => return self.not(c),
                (Some(true), None) => return self.or(c, b),
                (Some(false), None) => {
                    let nc = self.not(c);
                    return self.and(nc, b);
                }
                (None, Some(false)) => return self.and(c, a),
                (None, Some(true)) => {
                    let nc = self.not(c);
                    return self.or(nc, a);
                }
                _ => {}
            }
        }
        // `c ? (c ? x : y) : z` → `c ? x : z` and the mirror.
        if let TermKind::Select(c2, x, _) = &a.kind {
            if c2.id == c.id {
                let x = x.clone();
                return self.select(c, x, b);
            }
        }
        if let TermKind::Select(c2, _, y) = &b.kind {
            if c2.id == c.id {
                let y = y.clone();
                return self.select(c, a, y);
            }
        }
        let key = Key::Select(c.id, a.id, b.id);
        self.make(key, ty, || TermKind::Select(c, a, b))
    }

    /// `op` computing in `ty` (operands are converted to it first; shifts keep
    /// their right operand's value).
    pub fn binary(&mut self, op: BinOp, ty: ScalarTy, a: Term, b: Term) -> Term {
        let ty = if op.is_logical() { ScalarTy::Bool } else { ty };
        let a = self.cast(ty, a);
        let b = self.cast(ty, b);
        let result_ty = if op.is_comparison() || op.is_logical() {
            ScalarTy::Bool
        } else {
            ty
        };
        if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
            if ty.is_int() || ty == ScalarTy::Bool {
                if let Some(v) = self.fold_int(op, ty, x, y) {
                    return v;
                }
            }
        }
        if let (TermKind::Float(x), TermKind::Float(y)) = (&a.kind, &b.kind) {
            if let Some(v) = self.fold_float(op, ty, f64::from_bits(*x), f64::from_bits(*y)) {
                return v;
            }
        }
        let zero = |t: &Term| t.as_int() == Some(0) && t.ty.is_int();
        let one = |t: &Term| t.as_int() == Some(1) && t.ty.is_int();
        if ty.is_int() {
            // `(x + c1) + c2` → `x + (c1 + c2)`; `(x - c1)` is `x + (-c1)`.
            if op == BinOp::Add || op == BinOp::Sub {
                if let Some(c2) = b.as_int() {
                    let c2 = if op == BinOp::Sub { -c2 } else { c2 };
                    if let TermKind::Binary(BinOp::Add, t, x, c1) = &a.kind {
                        if *t == ty {
                            if let Some(c1) = c1.as_int() {
                                let x = x.clone();
                                let c = self.int(c1.wrapping_add(c2), ty);
                                return self.binary(BinOp::Add, ty, x, c);
                            }
                        }
                    }
                    if op == BinOp::Sub && c2 != 0 {
                        let c = self.int(c2, ty);
                        return self.binary(BinOp::Add, ty, a, c);
                    }
                }
                // Constants to the right: `c + x` → `x + c`.
                if op == BinOp::Add && a.as_int().is_some() && b.as_int().is_none() {
                    return self.binary(BinOp::Add, ty, b, a);
                }
            }
            if op == BinOp::Mul && a.as_int().is_some() && b.as_int().is_none() {
                return self.binary(BinOp::Mul, ty, b, a);
            }
            match op {
                BinOp::Add if zero(&a) => return b,
                BinOp::Add | BinOp::Sub | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr if zero(&b) => {
                    return a
                }
                BinOp::Mul | BinOp::Div if one(&b) => return a,
                BinOp::Mul | BinOp::BitAnd if zero(&a) || zero(&b) => return self.int(0, ty),
                BinOp::BitOr | BinOp::BitXor if zero(&a) => return b,
                BinOp::Rem if one(&b) => return self.int(0, ty),
                BinOp::Sub | BinOp::BitXor if a.id == b.id => return self.int(0, ty),
                BinOp::BitAnd | BinOp::BitOr | BinOp::Min | BinOp::Max if a.id == b.id => return a,
                BinOp::Eq | BinOp::Le | BinOp::Ge if a.id == b.id => return self.bool(true),
                BinOp::Ne | BinOp::Lt | BinOp::Gt if a.id == b.id => return self.bool(false),
                _ => {}
            }
        }
        match op {
            BinOp::And => match (a.as_bool(), b.as_bool()) {
                (Some(false), _) | (_, Some(false)) => return self.bool(false),
                (Some(true), _) => return b,
                (_, Some(true)) => return a,
                _ if a.id == b.id => return a,
                _ if complements(&a, &b) => return self.bool(false),
                _ => {}
            },
            BinOp::Or => match (a.as_bool(), b.as_bool()) {
                (Some(true), _) | (_, Some(true)) => return self.bool(true),
                (Some(false), _) => return b,
                (_, Some(false)) => return a,
                _ if a.id == b.id => return a,
                _ if complements(&a, &b) => return self.bool(true),
                // The join of an if/else: `(p && c) || (p && !c)` is `p`.
                _ => {
                    if let Some(p) = common_with_complements(&a, &b) {
                        return p;
                    }
                }
            },
            BinOp::Eq if ty == ScalarTy::Bool => match (a.as_bool(), b.as_bool()) {
                (Some(true), _) => return b,
                (_, Some(true)) => return a,
                (Some(false), _) => return self.not(b),
                (_, Some(false)) => return self.not(a),
                _ => {}
            },
            _ => {}
        }
        let key = Key::Binary(op, ty, a.id, b.id);
        self.make(key, result_ty, || TermKind::Binary(op, ty, a, b))
    }

    fn fold_int(&mut self, op: BinOp, ty: ScalarTy, x: i128, y: i128) -> Option<Term> {
        let signed = matches!(ty, ScalarTy::Int { signed: true, .. });
        let bits = match ty {
            ScalarTy::Int { bits, .. } => bits as i128,
            _ => 1,
        };
        Some(match op {
            BinOp::Add => self.int(x.wrapping_add(y), ty),
            BinOp::Sub => self.int(x.wrapping_sub(y), ty),
            BinOp::Mul => self.int(x.wrapping_mul(y), ty),
            BinOp::Div if y != 0 => self.int(x / y, ty),
            BinOp::Rem if y != 0 => self.int(x % y, ty),
            BinOp::Shl if (0..bits).contains(&y) => self.int(x << y, ty),
            BinOp::Shr if (0..bits).contains(&y) => {
                if signed {
                    self.int(x >> y, ty)
                } else {
                    self.int(ty.wrap(x) >> y, ty)
                }
            }
            BinOp::BitAnd => self.int(x & y, ty),
            BinOp::BitOr => self.int(x | y, ty),
            BinOp::BitXor => self.int(x ^ y, ty),
            BinOp::Eq => self.bool(x == y),
            BinOp::Ne => self.bool(x != y),
            BinOp::Lt => self.bool(x < y),
            BinOp::Le => self.bool(x <= y),
            BinOp::Gt => self.bool(x > y),
            BinOp::Ge => self.bool(x >= y),
            BinOp::And => self.bool(x != 0 && y != 0),
            BinOp::Or => self.bool(x != 0 || y != 0),
            BinOp::Min => self.int(x.min(y), ty),
            BinOp::Max => self.int(x.max(y), ty),
            _ => return None,
        })
    }

    fn fold_float(&mut self, op: BinOp, ty: ScalarTy, x: f64, y: f64) -> Option<Term> {
        Some(match op {
            BinOp::Add => self.float(x + y, ty),
            BinOp::Sub => self.float(x - y, ty),
            BinOp::Mul => self.float(x * y, ty),
            BinOp::Div => self.float(x / y, ty),
            BinOp::Eq => self.bool(x == y),
            BinOp::Ne => self.bool(x != y),
            BinOp::Lt => self.bool(x < y),
            BinOp::Le => self.bool(x <= y),
            BinOp::Gt => self.bool(x > y),
            BinOp::Ge => self.bool(x >= y),
            _ => return None,
        })
    }

    /// Rebuilds `t` with the leaves `map` names replaced (memoized per node id).
    pub fn substitute(&mut self, t: &Term, map: &HashMap<SymbolId, Term>, memo: &mut HashMap<u32, Term>) -> Term {
        let Some(lowest) = map.keys().min() else {
            return t.clone();
        };
        self.substitute_from(t, lowest.0, map, memo)
    }

    /// [`Self::substitute`] of every term `terms` yields, in place: the
    /// map's lowest key found once (a state holds a term per variable of
    /// the kernel, thousands in a heavily inlined one).
    pub fn substitute_each<'t>(
        &mut self,
        terms: impl IntoIterator<Item = &'t mut Term>,
        map: &HashMap<SymbolId, Term>,
        memo: &mut HashMap<u32, Term>,
    ) {
        let Some(lowest) = map.keys().min().map(|s| s.0) else {
            return;
        };
        for t in terms {
            *t = self.substitute_from(t, lowest, map, memo);
        }
    }

    /// [`Self::substitute`], where no key of `map` is below `lowest`.
    fn substitute_from(
        &mut self,
        t: &Term,
        lowest: u32,
        map: &HashMap<SymbolId, Term>,
        memo: &mut HashMap<u32, Term>,
    ) -> Term {
        if t.top <= lowest {
            return t.clone();
        }
        if let Some(done) = memo.get(&t.id) {
            return done.clone();
        }
        let out = match &t.kind {
            TermKind::Symbol(s) => map.get(s).cloned().unwrap_or_else(|| t.clone()),
            TermKind::Int(_)
            | TermKind::Bool(_)
            | TermKind::Float(_)
            | TermKind::Builtin(_)
            | TermKind::Param(_)
            | TermKind::Sym(_) => t.clone(),
            TermKind::Unary(op, a) => {
                let a = self.substitute_from(a, lowest, map, memo);
                self.unary(*op, t.ty, a)
            }
            TermKind::Cast(a) => {
                let a = self.substitute_from(a, lowest, map, memo);
                self.cast(t.ty, a)
            }
            TermKind::Binary(op, ty, a, b) => {
                let a = self.substitute_from(a, lowest, map, memo);
                let b = self.substitute_from(b, lowest, map, memo);
                self.binary(*op, *ty, a, b)
            }
            TermKind::Select(c, a, b) => {
                let c = self.substitute_from(c, lowest, map, memo);
                let a = self.substitute_from(a, lowest, map, memo);
                let b = self.substitute_from(b, lowest, map, memo);
                self.select(c, a, b)
            }
            TermKind::Opaque(op, args) => {
                let args = args
                    .iter()
                    .map(|a| self.substitute_from(a, lowest, map, memo))
                    .collect();
                self.opaque(*op, t.ty, args)
            }
        };
        memo.insert(t.id, out.clone());
        out
    }
}

/// Every model symbol in `t`, each once, in order of first appearance.
/// `a` is `!b` or `b` is `!a`.
pub fn complements(a: &Term, b: &Term) -> bool {
    let negates = |x: &Term, y: &Term| matches!(&x.kind, TermKind::Unary(UnOp::Not, inner) if inner.id == y.id);
    // `not` turns `!(x < y)` into `x >= y` for integers.
    let flipped = match (&a.kind, &b.kind) {
        (TermKind::Binary(p, t, l, r), TermKind::Binary(q, u, m, n)) if t == u && t.is_int() => {
            l.id == m.id && r.id == n.id && p.negated() == Some(*q)
        }
        _ => false,
    };
    flipped || negates(a, b) || negates(b, a)
}

/// The conjuncts of `t` (its `&&` operands, flattened).
pub fn conjuncts(t: &Term) -> Vec<Term> {
    fn go(t: &Term, out: &mut Vec<Term>) {
        match &t.kind {
            TermKind::Binary(BinOp::And, _, a, b) => {
                go(a, out);
                go(b, out);
            }
            _ => out.push(t.clone()),
        }
    }
    let mut out = Vec::new();
    go(t, &mut out);
    out
}

/// Whether `a` and `b` cannot both hold for one thread: one has a conjunct
/// that another of the other negates, and that conjunct reads no model
/// symbol (a function of the launch, the thread and the parameters has
/// one value wherever the thread evaluates it; a symbol may stand for a
/// different iteration's value).
pub fn exclusive(a: &Term, b: &Term) -> bool {
    let plain = |t: &Term| {
        let mut syms = Vec::new();
        symbols_of(t, &mut syms, &mut crate::hash::HashSet::default());
        syms.is_empty()
    };
    let (ca, cb) = (conjuncts(a), conjuncts(b));
    ca.iter()
        .filter(|c| plain(c))
        .any(|c| cb.iter().any(|d| complements(c, d)))
}

/// For `a = p && c` and `b = p && !c` (either operand order), `p`.
fn common_with_complements(a: &Term, b: &Term) -> Option<Term> {
    let (TermKind::Binary(BinOp::And, _, a1, a2), TermKind::Binary(BinOp::And, _, b1, b2)) = (&a.kind, &b.kind) else {
        return None;
    };
    for (p, c) in [(a1, a2), (a2, a1)] {
        for (q, d) in [(b1, b2), (b2, b1)] {
            if p.id == q.id && complements(c, d) {
                return Some(p.clone());
            }
        }
    }
    None
}

pub fn symbols_of(t: &Term, out: &mut Vec<SymbolId>, seen: &mut crate::hash::HashSet<u32>) {
    collect(
        t,
        &|k| match k {
            TermKind::Symbol(s) => Some(*s),
            _ => None,
        },
        out,
        seen,
    );
}

/// The distinct values `pick` finds in the nodes of `t`, in first-seen order;
/// `seen` holds the nodes already visited.
pub fn collect<T: PartialEq>(
    t: &Term,
    pick: &impl Fn(&TermKind) -> Option<T>,
    out: &mut Vec<T>,
    seen: &mut crate::hash::HashSet<u32>,
) {
    if !seen.insert(t.id) {
        return;
    }
    if let Some(v) = pick(&t.kind) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    for c in t.children() {
        collect(c, pick, out, seen);
    }
}

/// Whether `t` mentions a leaf `pred` accepts.
pub fn mentions(t: &Term, pred: &mut impl FnMut(&TermKind) -> bool, seen: &mut crate::hash::HashSet<u32>) -> bool {
    if !seen.insert(t.id) {
        return false;
    }
    if pred(&t.kind) {
        return true;
    }
    t.children().into_iter().any(|c| mentions(c, pred, seen))
}

/// Number of distinct nodes of `t`.
pub fn dag_size(t: &Term) -> usize {
    fn go(t: &Term, seen: &mut crate::hash::HashSet<u32>) {
        if seen.insert(t.id) {
            for c in t.children() {
                go(c, seen);
            }
        }
    }
    let mut seen = Default::default();
    go(t, &mut seen);
    seen.len()
}

/// Prints a term, eliding beyond a node budget (a DAG printed as a tree can
/// be exponentially large).
pub struct Show<'a> {
    pub term: &'a Term,
    pub names: &'a dyn Fn(SymbolId) -> String,
}

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut budget = 200usize;
        write_term(f, self.term, self.names, &mut budget)
    }
}

fn write_term(
    f: &mut fmt::Formatter<'_>,
    t: &Term,
    names: &dyn Fn(SymbolId) -> String,
    budget: &mut usize,
) -> fmt::Result {
    if *budget == 0 {
        return write!(f, "…");
    }
    *budget -= 1;
    match &t.kind {
        TermKind::Int(v) => write!(f, "{v}"),
        TermKind::Bool(b) => write!(f, "{b}"),
        TermKind::Float(bits) => write!(f, "{:?}", f64::from_bits(*bits)),
        TermKind::Builtin(b) => match b {
            Builtin::ThreadIdx(d) => write!(f, "threadIdx.{}", d.name()),
            Builtin::BlockIdx(d) => write!(f, "blockIdx.{}", d.name()),
            Builtin::BlockDim(d) => write!(f, "blockDim.{}", d.name()),
            Builtin::GridDim(d) => write!(f, "gridDim.{}", d.name()),
            Builtin::WarpSize => write!(f, "warpSize"),
        },
        TermKind::Param(i) => write!(f, "param{i}"),
        TermKind::Sym(s) => write!(f, "sym{}", s.0),
        TermKind::Symbol(s) => write!(f, "{}", names(*s)),
        TermKind::Unary(op, a) => {
            let s = match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
            };
            write!(f, "{s}(")?;
            write_term(f, a, names, budget)?;
            write!(f, ")")
        }
        TermKind::Binary(op, _, a, b) => {
            if matches!(op, BinOp::Min | BinOp::Max) {
                write!(f, "{}(", op.symbol())?;
                write_term(f, a, names, budget)?;
                write!(f, ", ")?;
                write_term(f, b, names, budget)?;
                return write!(f, ")");
            }
            write!(f, "(")?;
            write_term(f, a, names, budget)?;
            write!(f, " {} ", op.symbol())?;
            write_term(f, b, names, budget)?;
            write!(f, ")")
        }
        TermKind::Select(c, a, b) => {
            write!(f, "(")?;
            write_term(f, c, names, budget)?;
            write!(f, " ? ")?;
            write_term(f, a, names, budget)?;
            write!(f, " : ")?;
            write_term(f, b, names, budget)?;
            write!(f, ")")
        }
        TermKind::Cast(a) => {
            write!(f, "({})", ty_name(t.ty))?;
            write_term(f, a, names, budget)
        }
        TermKind::Opaque(op, args) => {
            write!(f, "op{}(", op.0)?;
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write_term(f, a, names, budget)?;
            }
            write!(f, ")")
        }
    }
}

pub fn ty_name(ty: ScalarTy) -> String {
    match ty {
        ScalarTy::Bool => "bool".into(),
        ScalarTy::Int { bits, signed } => format!("{}{bits}", if signed { "i" } else { "u" }),
        ScalarTy::Float(k) => format!("{k:?}").to_lowercase(),
        ScalarTy::Opaque => "opaque".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dim;

    #[test]
    fn hash_consing_makes_equal_terms_identical() {
        let mut t = Terms::new();
        let tid = t.builtin(Builtin::ThreadIdx(Dim::X));
        let one = t.int(1, ScalarTy::U32);
        let a = t.binary(BinOp::Add, ScalarTy::U32, tid.clone(), one.clone());
        let b = t.binary(BinOp::Add, ScalarTy::U32, tid.clone(), one);
        assert!(Rc::ptr_eq(&a, &b));
        let c = t.int(3, ScalarTy::U32);
        let d = t.binary(BinOp::Add, ScalarTy::U32, a.clone(), c);
        // (tid + 1) + 3 → tid + 4
        let four = t.int(4, ScalarTy::U32);
        assert_eq!(d, t.binary(BinOp::Add, ScalarTy::U32, tid, four));
    }

    #[test]
    fn exclusive_needs_a_negated_conjunct_without_symbols() {
        let mut t = Terms::new();
        let p = t.param(0, ScalarTy::I32);
        let zero = t.int(0, ScalarTy::I32);
        let staged = t.binary(BinOp::Ne, ScalarTy::I32, p.clone(), zero.clone());
        let direct = t.not(staged.clone());
        let tid = t.builtin(Builtin::ThreadIdx(Dim::X));
        let k = t.int(64, ScalarTy::U32);
        let low = t.binary(BinOp::Lt, ScalarTy::U32, tid, k);
        // `!staged && tid < 64` against `staged`: one thread cannot be on both.
        let entry = t.and(direct.clone(), low.clone());
        assert!(exclusive(&entry, &staged));
        assert!(exclusive(&staged, &entry));
        // No conjunct negated: not exclusive.
        assert!(!exclusive(&entry, &low));
        // A model symbol may stand for another iteration's value.
        let s = t.symbol(SymbolId(0), ScalarTy::I32);
        let at_s = t.binary(BinOp::Lt, ScalarTy::I32, s, zero);
        let not_at_s = t.not(at_s.clone());
        assert!(!exclusive(&at_s, &not_at_s));
    }

    #[test]
    fn selects_and_logic_fold() {
        let mut t = Terms::new();
        let tid = t.builtin(Builtin::ThreadIdx(Dim::X));
        let k = t.int(32, ScalarTy::U32);
        let c = t.binary(BinOp::Lt, ScalarTy::U32, tid.clone(), k);
        let yes = t.bool(true);
        let no = t.bool(false);
        assert_eq!(t.select(c.clone(), yes.clone(), no), c);
        let nc = t.not(c.clone());
        assert!(matches!(nc.kind, TermKind::Binary(BinOp::Ge, ..)));
        assert_eq!(t.and(c.clone(), yes), c);
        let x = t.select(c.clone(), tid.clone(), tid.clone());
        assert_eq!(x, tid);
    }

    #[test]
    fn branches_of_one_condition_join() {
        let mut t = Terms::new();
        let tid = t.builtin(Builtin::ThreadIdx(Dim::X));
        let n = t.param(0, ScalarTy::I32);
        let p = t.binary(BinOp::Lt, ScalarTy::I32, tid.clone(), n);
        let five = t.int(5, ScalarTy::I32);
        let c = t.binary(BinOp::Lt, ScalarTy::I32, tid, five);
        let not_c = t.not(c.clone());
        let then = t.and(p.clone(), c.clone());
        let other = t.and(not_c.clone(), p.clone());
        assert_eq!(t.or(then, other).id, p.id);
        assert_eq!(t.or(c.clone(), not_c.clone()).as_bool(), Some(true));
        assert_eq!(t.and(c, not_c).as_bool(), Some(false));
        let f = t.opaque(OpId(0), ScalarTy::Bool, vec![]);
        let not_f = t.not(f.clone());
        assert_eq!(t.or(f, not_f).as_bool(), Some(true));
    }

    #[test]
    fn substitution_rebuilds_and_folds() {
        let mut t = Terms::new();
        let s = t.symbol(SymbolId(0), ScalarTy::I32);
        let two = t.int(2, ScalarTy::I32);
        let e = t.binary(BinOp::Mul, ScalarTy::I32, s, two);
        let mut map = HashMap::default();
        map.insert(SymbolId(0), t.int(5, ScalarTy::I32));
        let out = t.substitute(&e, &map, &mut HashMap::default());
        assert_eq!(out.as_int(), Some(10));
    }
}
