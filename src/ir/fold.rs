//! Smart constructors for [`Expr`]: constant folding and algebraic identities.
//!
//! Every producer of expressions builds them through these functions, so
//! constants never hide behind `0 + x` or `c ? a : a`. Folding follows C++:
//! unsigned arithmetic wraps, signed division truncates toward zero, and a
//! division by a constant zero is left unfolded (undefined behaviour is not
//! evaluated).

use super::{BinOp, Expr, ScalarTy, UnOp};

pub fn unary(op: UnOp, ty: ScalarTy, a: Expr) -> Expr {
    match (op, &a) {
        (UnOp::Not, Expr::Bool(b)) => Expr::Bool(!b),
        (UnOp::Not, Expr::Unary(UnOp::Not, _, inner)) => (**inner).clone(),
        (UnOp::Neg, Expr::Int(v, _)) if ty.is_int() => Expr::int(-v, ty),
        (UnOp::Neg, Expr::Float(f)) => Expr::Float(-f),
        (UnOp::BitNot, Expr::Int(v, _)) if ty.is_int() => Expr::int(!v, ty),
        _ => Expr::Unary(op, ty, Box::new(a)),
    }
}

pub fn not(a: Expr) -> Expr {
    if let Expr::Binary(op, ty, l, r) = &a {
        let flipped = op.negated();
        // Floats: `!(a < b)` is not `a >= b` when NaN is involved.
        if let (Some(f), true) = (flipped, ty.is_int()) {
            return Expr::Binary(f, *ty, l.clone(), r.clone());
        }
    }
    unary(UnOp::Not, ScalarTy::Bool, a)
}

pub fn cast(ty: ScalarTy, a: Expr) -> Expr {
    match &a {
        Expr::Int(v, _) if ty.is_int() => Expr::int(*v, ty),
        Expr::Int(v, _) if ty == ScalarTy::Bool => Expr::Bool(*v != 0),
        Expr::Bool(b) if ty.is_int() => Expr::int(*b as i128, ty),
        Expr::Bool(_) if ty == ScalarTy::Bool => a,
        Expr::Int(v, _) if matches!(ty, ScalarTy::Float(_)) => Expr::Float(*v as f64),
        Expr::Float(f) if ty.is_int() && f.is_finite() => Expr::int(f.trunc() as i128, ty),
        Expr::Float(_) if matches!(ty, ScalarTy::Float(_)) => a,
        _ if type_of(&a) == Some(ty) => a,
        _ => Expr::Cast(ty, Box::new(a)),
    }
}

/// The type of an expression when it shows in the expression itself
/// (variables, parameters and symbols need the kernel's tables).
pub fn type_of(e: &Expr) -> Option<ScalarTy> {
    use super::Builtin;
    match e {
        Expr::Int(_, t) | Expr::Cast(t, _) | Expr::Unary(_, t, _) | Expr::Opaque(_, t, _) => Some(*t),
        Expr::Bool(_) => Some(ScalarTy::Bool),
        Expr::Binary(op, t, _, _) => Some(if op.is_comparison() || op.is_logical() {
            ScalarTy::Bool
        } else {
            *t
        }),
        Expr::Select(_, a, b) => type_of(a).or_else(|| type_of(b)),
        Expr::Builtin(Builtin::WarpSize) => Some(ScalarTy::I32),
        Expr::Builtin(_) => Some(ScalarTy::U32),
        _ => None,
    }
}

pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
    if let Some(v) = c.as_bool() {
        return if v { a } else { b };
    }
    if a == b {
        return a;
    }
    match (&a, &b) {
        (Expr::Bool(true), Expr::Bool(false)) => c,
        (Expr::Bool(false), Expr::Bool(true)) => not(c),
        _ => Expr::Select(Box::new(c), Box::new(a), Box::new(b)),
    }
}

pub fn binary(op: BinOp, ty: ScalarTy, a: Expr, b: Expr) -> Expr {
    if let (Some(x), Some(y)) = (int_of(&a), int_of(&b)) {
        if ty.is_int() || ty == ScalarTy::Bool {
            if let Some(v) = fold_int(op, ty, x, y) {
                return v;
            }
        }
    }
    if let (Expr::Float(x), Expr::Float(y)) = (&a, &b) {
        if let Some(v) = fold_float(op, *x, *y) {
            return v;
        }
    }
    // `(x + c1) + c2` → `x + (c1 + c2)`: addresses come out canonical.
    if op == BinOp::Add && ty.is_int() {
        if let (Expr::Binary(BinOp::Add, t, x, c1), Some(c2)) = (&a, int_of(&b)) {
            if *t == ty {
                if let Some(c1) = int_of(c1) {
                    return binary(BinOp::Add, ty, (**x).clone(), Expr::int(c1.wrapping_add(c2), ty));
                }
            }
        }
    }
    let zero = |e: &Expr| int_of(e) == Some(0);
    let one = |e: &Expr| int_of(e) == Some(1);
    if ty.is_int() {
        match op {
            BinOp::Add if zero(&a) => return b,
            BinOp::Add | BinOp::Sub | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr if zero(&b) => return a,
            BinOp::Mul if one(&a) => return b,
            BinOp::Mul | BinOp::Div if one(&b) => return a,
            BinOp::Mul | BinOp::BitAnd if zero(&a) || zero(&b) => return Expr::int(0, ty),
            BinOp::BitOr if zero(&a) => return b,
            BinOp::Rem if one(&b) => return Expr::int(0, ty),
            BinOp::Sub if a == b => return Expr::int(0, ty),
            _ => {}
        }
    }
    match op {
        BinOp::And => {
            match (a.as_bool(), b.as_bool()) {
                (Some(false), _) | (_, Some(false)) => return Expr::Bool(false),
                (Some(true), _) => return b,
                (_, Some(true)) => return a,
                _ => {}
            }
            if a == b {
                return a;
            }
        }
        BinOp::Or => {
            match (a.as_bool(), b.as_bool()) {
                (Some(true), _) | (_, Some(true)) => return Expr::Bool(true),
                (Some(false), _) => return b,
                (_, Some(false)) => return a,
                _ => {}
            }
            if a == b {
                return a;
            }
        }
        BinOp::Eq | BinOp::Le | BinOp::Ge if a == b && ty.is_int() => return Expr::Bool(true),
        BinOp::Ne | BinOp::Lt | BinOp::Gt if a == b && ty.is_int() => return Expr::Bool(false),
        BinOp::Min | BinOp::Max if a == b => return a,
        _ => {}
    }
    Expr::Binary(op, ty, Box::new(a), Box::new(b))
}

fn int_of(e: &Expr) -> Option<i128> {
    match e {
        Expr::Int(v, _) => Some(*v),
        Expr::Bool(b) => Some(*b as i128),
        _ => None,
    }
}

pub(crate) fn fold_int(op: BinOp, ty: ScalarTy, x: i128, y: i128) -> Option<Expr> {
    let signed = matches!(ty, ScalarTy::Int { signed: true, .. });
    let bits = match ty {
        ScalarTy::Int { bits, .. } => bits as i128,
        _ => 1,
    };
    let int = |v: i128| Expr::int(v, ty);
    Some(match op {
        BinOp::Add => int(x.wrapping_add(y)),
        BinOp::Sub => int(x.wrapping_sub(y)),
        BinOp::Mul => int(x.wrapping_mul(y)),
        BinOp::Div => {
            if y == 0 {
                return None;
            }
            int(x / y)
        }
        BinOp::Rem => {
            if y == 0 {
                return None;
            }
            int(x % y)
        }
        BinOp::Shl => {
            if y < 0 || y >= bits {
                return None;
            }
            int(x << y)
        }
        BinOp::Shr => {
            if y < 0 || y >= bits {
                return None;
            }
            if signed {
                int(x >> y)
            } else {
                int(ty.wrap(x) >> y)
            }
        }
        BinOp::BitAnd => int(x & y),
        BinOp::BitOr => int(x | y),
        BinOp::BitXor => int(x ^ y),
        BinOp::Eq => Expr::Bool(x == y),
        BinOp::Ne => Expr::Bool(x != y),
        BinOp::Lt => Expr::Bool(x < y),
        BinOp::Le => Expr::Bool(x <= y),
        BinOp::Gt => Expr::Bool(x > y),
        BinOp::Ge => Expr::Bool(x >= y),
        BinOp::And => Expr::Bool(x != 0 && y != 0),
        BinOp::Or => Expr::Bool(x != 0 || y != 0),
        BinOp::Min => int(x.min(y)),
        BinOp::Max => int(x.max(y)),
    })
}

fn fold_float(op: BinOp, x: f64, y: f64) -> Option<Expr> {
    Some(match op {
        BinOp::Add => Expr::Float(x + y),
        BinOp::Sub => Expr::Float(x - y),
        BinOp::Mul => Expr::Float(x * y),
        BinOp::Div => Expr::Float(x / y),
        BinOp::Eq => Expr::Bool(x == y),
        BinOp::Ne => Expr::Bool(x != y),
        BinOp::Lt => Expr::Bool(x < y),
        BinOp::Le => Expr::Bool(x <= y),
        BinOp::Gt => Expr::Bool(x > y),
        BinOp::Ge => Expr::Bool(x >= y),
        BinOp::Min => Expr::Float(x.min(y)),
        BinOp::Max => Expr::Float(x.max(y)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builtin, Dim};

    const I: ScalarTy = ScalarTy::I32;
    const U: ScalarTy = ScalarTy::U32;

    fn tid() -> Expr {
        Expr::Builtin(Builtin::ThreadIdx(Dim::X))
    }

    #[test]
    fn folds_constants_with_c_semantics() {
        assert_eq!(
            binary(BinOp::Div, I, Expr::int(-7, I), Expr::int(2, I)),
            Expr::int(-3, I)
        );
        assert_eq!(
            binary(BinOp::Rem, I, Expr::int(-7, I), Expr::int(2, I)),
            Expr::int(-1, I)
        );
        assert_eq!(
            binary(BinOp::Sub, U, Expr::int(0, U), Expr::int(1, U)),
            Expr::int(4294967295, U)
        );
        assert_eq!(
            binary(BinOp::Shr, U, Expr::int(0x80000000, U), Expr::int(31, U)),
            Expr::int(1, U)
        );
        assert_eq!(
            binary(BinOp::Shr, I, Expr::int(-8, I), Expr::int(1, I)),
            Expr::int(-4, I)
        );
        assert!(matches!(
            binary(BinOp::Div, I, Expr::int(1, I), Expr::int(0, I)),
            Expr::Binary(..)
        ));
        assert!(matches!(
            binary(BinOp::Shl, I, Expr::int(1, I), Expr::int(40, I)),
            Expr::Binary(..)
        ));
    }

    #[test]
    fn identities_and_selects() {
        assert_eq!(binary(BinOp::Add, U, Expr::int(0, U), tid()), tid());
        assert_eq!(binary(BinOp::Mul, U, tid(), Expr::int(0, U)), Expr::int(0, U));
        assert_eq!(select(Expr::Bool(true), tid(), Expr::int(3, U)), tid());
        assert_eq!(select(Expr::Var(crate::ir::VarId(1)), tid(), tid()), tid());
        assert_eq!(
            binary(
                BinOp::And,
                ScalarTy::Bool,
                Expr::Bool(false),
                Expr::Var(crate::ir::VarId(0))
            ),
            Expr::Bool(false)
        );
    }

    #[test]
    fn negation_flips_integer_comparisons_only() {
        let lt = binary(BinOp::Lt, U, tid(), Expr::int(32, U));
        assert!(matches!(not(lt), Expr::Binary(BinOp::Ge, ..)));
        let flt = Expr::Binary(
            BinOp::Lt,
            ScalarTy::Float(crate::ir::FloatKind::F32),
            Box::new(Expr::Float(1.0)),
            Box::new(Expr::Var(crate::ir::VarId(0))),
        );
        assert!(matches!(not(flt), Expr::Unary(UnOp::Not, ..)));
    }
}
