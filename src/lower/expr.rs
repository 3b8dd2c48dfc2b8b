//! Expressions: values, places, reads and writes.
//!
//! `expr` evaluates an rvalue, `place` an lvalue, `operand` whichever the
//! syntax gives (so references bind to places). Reading memory emits a load,
//! writing emits a store; both carry byte offsets and widths from the types.

use std::rc::Rc;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::call::Operand;
use super::index::{normalize, DeclId, DeclKind};
use super::types::{common_type, promote, ClassInst, Type};
use super::value::{Binding, Place, Ptr, PtrSlot, Value};
use super::{Ctx, Lowerer};
use crate::ir::fold;
use crate::ir::{
    Access, AccessKind, BinOp, Builtin, Dim, Expr, ObjectId, ObjectKind, ScalarTy, Space, StmtKind, SymKind, UnOp,
};
use crate::syntax::named_children;

const I64: ScalarTy = ScalarTy::I64;

/// Most elements of a local array initialised one by one.
const MAX_ARRAY_INIT: usize = 64;

fn i64c(v: i128) -> Expr {
    Expr::int(v, I64)
}

impl<'u> Lowerer<'u> {
    /// Evaluates an expression to a value.
    pub(super) fn expr(&mut self, node: Node<'u>) -> Value {
        if !self.enter(node) {
            return Value::Unknown(Type::Opaque("deep".into()));
        }
        let v = self.expr_inner(node);
        self.leave();
        v
    }

    fn expr_inner(&mut self, node: Node<'u>) -> Value {
        // On the host (launch shapes), a device property as a program
        // reads it is the run's (`Lowerer::device_property`).
        if node.kind_name() == "field_expression" {
            if let Some(v) = self.device_property(node) {
                return Value::Scalar(Expr::Int(v, ScalarTy::I32), Type::int(32, true));
            }
        }
        match node.kind_name() {
            "number_literal" => self.number(node),
            "char_literal" => {
                let v = crate::preprocess::cond::char_value(self.text(node));
                Value::Scalar(
                    Expr::int(v, ScalarTy::Int { bits: 8, signed: true }),
                    Type::int(8, true),
                )
            }
            "string_literal" | "concatenated_string" | "raw_string_literal" => Value::Ptr(Ptr {
                object: None,
                offset: i64c(0),
                pointee: Type::int(8, true),
            }),
            "true" => Value::Scalar(Expr::Bool(true), Type::Bool),
            "false" => Value::Scalar(Expr::Bool(false), Type::Bool),
            "null" | "nullptr" => Value::Ptr(Ptr {
                object: None,
                offset: i64c(0),
                pointee: Type::Void,
            }),
            "parenthesized_expression" => match named_children(node).first().copied() {
                Some(inner) => self.expr(inner),
                None => Value::Void,
            },
            "identifier"
            | "qualified_identifier"
            | "field_expression"
            | "subscript_expression"
            | "this"
            | "type_identifier" => {
                let place = self.place(node);
                self.read(&place, node)
            }
            "pointer_expression" => {
                let op = node.field("operator").map(|o| self.text(o)).unwrap_or("*");
                let arg = node.field("argument");
                match (op, arg) {
                    ("&", Some(a)) => self.address_of(a, node),
                    (_, Some(_)) => {
                        let place = self.place(node);
                        self.read(&place, node)
                    }
                    _ => Value::Void,
                }
            }
            "unary_expression" => self.unary(node),
            "binary_expression" => self.binary(node),
            "update_expression" => self.update(node),
            "assignment_expression" => self.assignment(node),
            "conditional_expression" => self.conditional(node),
            "comma_expression" => {
                if let Some(l) = node.field("left") {
                    self.expr(l);
                }
                match node.field("right") {
                    Some(r) => self.expr(r),
                    None => Value::Void,
                }
            }
            "cast_expression" => {
                let ty = match node.field("type") {
                    Some(t) => self.type_descriptor(t),
                    None => Type::Opaque("?".into()),
                };
                let Some(v) = node.field("value") else {
                    return Value::Unknown(ty);
                };
                if let Type::Ref(inner) = &ty {
                    let place = self.place(v);
                    let place = self.reinterpret_place(place, inner, node);
                    return self.read(&place, node);
                }
                let v = self.expr(v);
                self.convert(v, &ty, node)
            }
            "call_expression" => {
                let op = self.call(node);
                self.operand_value(op, node)
            }
            "sizeof_expression" => self.sizeof(node),
            "alignof_expression" => {
                let ty = node
                    .field("type")
                    .map(|t| self.type_descriptor(t))
                    .unwrap_or(Type::Void);
                match self.size_align(&ty) {
                    Some((_, a)) => Value::Scalar(Expr::int(a as i128, ScalarTy::U64), Type::int(64, false)),
                    None => {
                        let s = self.sym(&format!("alignof({})", ty.display()), ScalarTy::U64, SymKind::Layout);
                        Value::Scalar(Expr::Sym(s), Type::int(64, false))
                    }
                }
            }
            "offsetof_expression" => {
                let ty = node
                    .field("type")
                    .map(|t| self.type_descriptor(t))
                    .unwrap_or(Type::Void);
                let member = node
                    .field("member")
                    .map(|m| self.text(m).to_string())
                    .unwrap_or_default();
                match self.field(&ty, &member) {
                    Some((_, off, _)) => Value::Scalar(self.cast(ScalarTy::U64, off), Type::int(64, false)),
                    None => self.unknown_value(node, "offsetof of an unknown member"),
                }
            }
            "initializer_list" => {
                let items: Vec<Operand> = named_children(node).into_iter().map(|i| self.operand(i)).collect();
                match items.len() {
                    1 => {
                        let op = items.into_iter().next().expect("one item");
                        self.operand_value(op, node)
                    }
                    _ => self.unknown_value(node, "braced list without a type"),
                }
            }
            "compound_literal_expression" => {
                let ty = match node.field("type") {
                    Some(t) => self.type_descriptor(t),
                    None => Type::Opaque("?".into()),
                };
                let items: Vec<Operand> = node
                    .field("value")
                    .map(named_children)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|i| self.operand(i))
                    .collect();
                self.construct(&ty, items, node)
            }
            "lambda_expression" => self.lambda(node),
            "fold_expression" => self.fold_expression(node),
            "gnu_asm_expression" => {
                self.inline_asm(node);
                Value::Void
            }
            "template_function" => self.template_value(node),
            "primitive_type" | "template_type" | "sized_type_specifier" => Value::Type(self.type_node(node)),
            "type_descriptor" => Value::Type(self.type_descriptor(node)),
            "parameter_pack_expansion" => self.unknown_value(node, "pack expansion in this position"),
            "new_expression" | "delete_expression" => self.unknown_value(node, "dynamic allocation in device code"),
            "throw_expression" | "co_await_expression" | "co_yield_statement" => {
                self.unknown_value(node, format!("`{}` in device code", node.kind_name()))
            }
            "comment" => Value::Void,
            "ERROR" => {
                let text = super::index::normalize_spaces(self.text(node));
                let short: String = text.chars().take(60).collect();
                self.unknown_value(node, format!("code the parser could not read: `{short}`"))
            }
            other => self.unknown_value(node, format!("unsupported expression `{other}`")),
        }
    }

    /// An integer or floating literal with its C++ type.
    fn number(&mut self, node: Node<'u>) -> Value {
        let text = self.text(node).to_string();
        // The grammar folds a sign into some literals (`-1`).
        if let Some(rest) = text.strip_prefix('-') {
            let v = self.number_text(rest.trim(), node);
            let one_minus = self.binop(
                "*",
                v,
                Value::Scalar(Expr::int(-1, ScalarTy::I32), Type::int(32, true)),
                node,
            );
            return one_minus;
        }
        let text = text.trim_start_matches('+').to_string();
        self.number_text(&text, node)
    }

    fn number_text(&mut self, text: &str, node: Node<'u>) -> Value {
        let text = text.to_string();
        let lower = text.to_ascii_lowercase().replace('\'', "");
        let is_hex = lower.starts_with("0x");
        let is_float = (!is_hex && (lower.contains('.') || lower.contains('e')))
            || (is_hex && lower.contains('p'))
            || (!is_hex && lower.ends_with('f') && !lower.starts_with("0b"));
        if is_float {
            let single = lower.ends_with('f');
            let digits = lower.trim_end_matches(['f', 'l']);
            let v: f64 = digits.parse().unwrap_or(0.0);
            let ty = if single {
                Type::Float(crate::ir::FloatKind::F32)
            } else {
                Type::Float(crate::ir::FloatKind::F64)
            };
            return Value::Scalar(Expr::Float(v), ty);
        }
        match crate::preprocess::cond::parse_int(&lower) {
            Ok(pv) => {
                let suffix: String = lower
                    .chars()
                    .rev()
                    .take_while(|c| matches!(c, 'u' | 'l' | 'z'))
                    .collect();
                let unsigned = suffix.contains('u');
                let long = suffix.contains('l') || suffix.contains('z');
                let v = pv.value;
                // [lex.icon]: the first type that holds the value (hex may go unsigned).
                let ty = if !long && !unsigned && v <= i32::MAX as i128 {
                    Type::int(32, true)
                } else if !long && (unsigned || is_hex) && v <= u32::MAX as i128 {
                    Type::int(32, false)
                } else if !unsigned && v <= i64::MAX as i128 {
                    Type::int(64, true)
                } else {
                    Type::int(64, false)
                };
                Value::Scalar(Expr::int(v, ty.scalar()), ty)
            }
            Err(_) => self.unknown_value(node, format!("number `{text}`")),
        }
    }

    /// `&x`: the address of a place in memory.
    fn address_of(&mut self, arg: Node<'u>, node: Node<'u>) -> Value {
        let place = self.place(arg);
        match place {
            Place::Mem(ptr, ty) => Value::Ptr(Ptr { pointee: ty, ..ptr }),
            Place::Temp(Value::Mem(ptr, ty)) => Value::Ptr(Ptr { pointee: ty, ..ptr }),
            other => {
                // The address of a register variable: model it as a local object copy.
                let ty = other.ty();
                let obj = self.new_object(
                    "addr",
                    Space::Local,
                    ObjectKind::Local { bytes: None },
                    &ty,
                    self.span(node),
                );
                Value::Ptr(Ptr {
                    object: Some(obj),
                    offset: i64c(0),
                    pointee: ty,
                })
            }
        }
    }

    fn unary(&mut self, node: Node<'u>) -> Value {
        let op = node.field("operator").map(|o| self.text(o)).unwrap_or("");
        let Some(arg) = node.field("argument") else {
            return Value::Void;
        };
        let v = self.expr(arg);
        match op {
            "!" | "not" => {
                let c = self.truth(v, arg);
                Value::Scalar(fold::not(c), Type::Bool)
            }
            "-" | "~" | "compl" | "+" => {
                let Value::Scalar(e, t) = v else {
                    if let Value::Agg(t, fields) = v {
                        // `-float2` style operators on vectors act per component.
                        let fields = fields
                            .into_iter()
                            .map(|f| match f {
                                Value::Scalar(e, ft) => Value::Scalar(fold::unary(UnOp::Neg, ft.scalar(), e), ft),
                                other => other,
                            })
                            .collect();
                        return Value::Agg(t, fields);
                    }
                    return self.unknown_value(node, "unary operator on a non-scalar");
                };
                let pt = promote(&t);
                let e = self.cast(pt.scalar(), e);
                match op {
                    "+" => Value::Scalar(e, pt),
                    "-" => Value::Scalar(fold::unary(UnOp::Neg, pt.scalar(), e), pt),
                    _ => Value::Scalar(fold::unary(UnOp::BitNot, pt.scalar(), e), pt),
                }
            }
            _ => self.unknown_value(node, format!("unary operator `{op}`")),
        }
    }

    /// A value as a condition.
    pub(super) fn truth(&mut self, v: Value, node: Node<'u>) -> Expr {
        match v {
            Value::Scalar(e, Type::Bool) => e,
            Value::Scalar(e, t) => {
                if let Some(b) = e.as_bool() {
                    return Expr::Bool(b);
                }
                let st = t.scalar();
                match st {
                    ScalarTy::Float(_) => fold::binary(BinOp::Ne, st, e, Expr::Float(0.0)),
                    ScalarTy::Opaque => self.cast(ScalarTy::Bool, e),
                    _ => fold::binary(BinOp::Ne, st, e, Expr::int(0, st)),
                }
            }
            // On the host (launch facts) pointers are not tracked: whether
            // one is null is unknown.
            Value::Ptr(_) if self.host_mode => self.unknown_condition(node),
            Value::Ptr(p) => self.nonnull(&p),
            // A value not modelled is a per-thread unknown (an opaque
            // constant would make every thread agree on it).
            Value::Unknown(_) => self.unknown_condition(node),
            _ => {
                self.unknown(node, "condition of a non-scalar type");
                self.unknown_condition(node)
            }
        }
    }

    /// A condition nothing is known about: a fresh per-thread value.
    fn unknown_condition(&mut self, node: Node<'u>) -> Expr {
        let span = self.span(node);
        let var = self.new_var("condition", ScalarTy::Bool, span);
        self.emit(
            StmtKind::Havoc {
                var,
                reason: "a condition on a value not modelled".into(),
            },
            span,
        );
        Expr::Var(var)
    }

    /// Whether a pointer is not null: known for objects we made, opaque for parameters.
    fn nonnull(&mut self, p: &Ptr) -> Expr {
        match p.object {
            None => Expr::Bool(false),
            Some(o) => match &self.k.objects[o.index()].kind {
                ObjectKind::Param { .. } | ObjectKind::Untraced => {
                    let op = self.op(&format!("nonnull({})", self.k.objects[o.index()].name));
                    Expr::Opaque(op, ScalarTy::Bool, vec![p.offset.clone()])
                }
                _ => Expr::Bool(true),
            },
        }
    }

    fn binary(&mut self, node: Node<'u>) -> Value {
        let op = node.field("operator").map(|o| self.text(o)).unwrap_or("");
        let (Some(l), Some(r)) = (node.field("left"), node.field("right")) else {
            return Value::Void;
        };
        if matches!(op, "&&" | "||" | "and" | "or") {
            return self.logical(op == "&&" || op == "and", l, r, node);
        }
        let a = self.expr(l);
        let b = self.expr(r);
        self.binop(op, a, b, node)
    }

    /// `a && b`, `a || b`: `b` is evaluated only when needed (its effects are conditional).
    fn logical(&mut self, and: bool, l: Node<'u>, r: Node<'u>, node: Node<'u>) -> Value {
        let a = self.expr(l);
        let a = self.truth(a, l);
        if let Some(av) = a.as_bool() {
            if av != and {
                return Value::Scalar(Expr::Bool(av), Type::Bool);
            }
            let b = self.expr(r);
            return Value::Scalar(self.truth(b, r), Type::Bool);
        }
        // Evaluate `b` into a block; if it has no effects, it is a pure operand.
        let mut b_expr = Expr::Bool(false);
        let block = self.sub_block(|l2| {
            let b = l2.expr(r);
            b_expr = l2.truth(b, r);
        });
        let op = if and { BinOp::And } else { BinOp::Or };
        if block.0.is_empty() {
            return Value::Scalar(fold::binary(op, ScalarTy::Bool, a, b_expr), Type::Bool);
        }
        let span = self.span(node);
        let t = self.new_var("cond", ScalarTy::Bool, span);
        self.emit(
            StmtKind::Assign {
                var: t,
                value: a.clone(),
            },
            span,
        );
        let mut then_block = block;
        let site = self.site(span);
        then_block.0.push(crate::ir::Stmt {
            kind: StmtKind::Assign { var: t, value: b_expr },
            span,
            site,
        });
        let cond = if and { a } else { fold::not(a) };
        self.emit(
            StmtKind::If {
                cond,
                then_block,
                else_block: crate::ir::Block::default(),
            },
            span,
        );
        Value::Scalar(Expr::Var(t), Type::Bool)
    }

    /// A binary operator on two values (arithmetic, comparison, pointer arithmetic).
    pub(super) fn binop(&mut self, op: &str, a: Value, b: Value, node: Node<'u>) -> Value {
        let op = match op {
            "bitand" => "&",
            "bitor" => "|",
            "xor" => "^",
            "not_eq" => "!=",
            other => other,
        };
        // User-defined operators on classes.
        if matches!(a.ty().strip_ref(), Type::Class(_)) || matches!(b.ty().strip_ref(), Type::Class(_)) {
            if let Some(v) = self.user_operator(op, &a, &b, node) {
                return v;
            }
        }
        match (a, b) {
            (Value::Ptr(p), Value::Scalar(i, it)) if matches!(op, "+" | "-") && it.is_arith() => {
                Value::Ptr(self.ptr_add(p, i, &it, op == "-"))
            }
            (Value::Scalar(i, it), Value::Ptr(p)) if op == "+" && it.is_arith() => {
                Value::Ptr(self.ptr_add(p, i, &it, false))
            }
            (Value::Ptr(p), Value::Ptr(q)) => self.ptr_binop(op, p, q, node),
            (Value::Ptr(p), Value::Scalar(e, _)) | (Value::Scalar(e, _), Value::Ptr(p))
                if matches!(op, "==" | "!=") && e.as_int() == Some(0) =>
            {
                let nn = self.nonnull(&p);
                Value::Scalar(if op == "!=" { nn } else { fold::not(nn) }, Type::Bool)
            }
            (Value::Scalar(x, tx), Value::Scalar(y, ty)) => self.arith(op, x, &tx, y, &ty, node),
            (Value::Agg(t, xs), Value::Agg(_, ys)) if xs.len() == ys.len() && !matches!(op, "==" | "!=") => {
                // Vector operators act per component.
                let fields = xs
                    .into_iter()
                    .zip(ys)
                    .map(|(x, y)| self.binop(op, x, y, node))
                    .collect();
                Value::Agg(t, fields)
            }
            (Value::Agg(t, xs), Value::Scalar(y, ty)) if !matches!(op, "==" | "!=") => {
                let fields = xs
                    .into_iter()
                    .map(|x| self.binop(op, x, Value::Scalar(y.clone(), ty.clone()), node))
                    .collect();
                Value::Agg(t, fields)
            }
            (Value::Unknown(t), _) | (_, Value::Unknown(t)) => Value::Unknown(t),
            (a, b) => {
                let op_id = self.op(&format!("operator{op}"));
                let args: Vec<Expr> = [a, b].into_iter().filter_map(|v| v.expr().cloned()).collect();
                Value::Scalar(
                    Expr::Opaque(op_id, ScalarTy::Opaque, args),
                    Type::Opaque("operator".into()),
                )
            }
        }
    }

    fn arith(&mut self, op: &str, x: Expr, tx: &Type, y: Expr, ty: &Type, node: Node<'u>) -> Value {
        let bin = match op {
            "+" => BinOp::Add,
            "-" => BinOp::Sub,
            "*" => BinOp::Mul,
            "/" => BinOp::Div,
            "%" => BinOp::Rem,
            "<<" => BinOp::Shl,
            ">>" => BinOp::Shr,
            "&" => BinOp::BitAnd,
            "|" => BinOp::BitOr,
            "^" => BinOp::BitXor,
            "==" => BinOp::Eq,
            "!=" => BinOp::Ne,
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            _ => return self.unknown_value(node, format!("operator `{op}`")),
        };
        if matches!(bin, BinOp::Shl | BinOp::Shr) {
            let rt = promote(tx);
            let st = rt.scalar();
            let x = self.cast(st, x);
            let y = self.cast(st, y);
            return Value::Scalar(fold::binary(bin, st, x, y), rt);
        }
        let ct = if tx.is_arith() && ty.is_arith() {
            common_type(tx, ty)
        } else if tx.is_arith() {
            ty.clone()
        } else {
            tx.clone()
        };
        let st = ct.scalar();
        let x = self.cast(st, x);
        let y = self.cast(st, y);
        let e = fold::binary(bin, st, x, y);
        if bin.is_comparison() {
            Value::Scalar(e, Type::Bool)
        } else {
            Value::Scalar(e, ct)
        }
    }

    /// `p + i`, `p - i`: advances by `i` elements of the pointee.
    pub(super) fn ptr_add(&mut self, p: Ptr, i: Expr, it: &Type, negate: bool) -> Ptr {
        let size = self.size_expr(&p.pointee);
        let i = self.cast(I64, i);
        let _ = it;
        let scaled = fold::binary(BinOp::Mul, I64, i, self.cast(I64, size));
        let offset = if negate {
            fold::binary(BinOp::Sub, I64, p.offset, scaled)
        } else {
            fold::binary(BinOp::Add, I64, p.offset, scaled)
        };
        Ptr { offset, ..p }
    }

    fn ptr_binop(&mut self, op: &str, p: Ptr, q: Ptr, node: Node<'u>) -> Value {
        let same = p.object == q.object;
        match op {
            "-" if same => {
                let size = self.size_expr(&p.pointee);
                let diff = fold::binary(BinOp::Sub, I64, p.offset, q.offset);
                Value::Scalar(
                    fold::binary(BinOp::Div, I64, diff, self.cast(I64, size)),
                    Type::int(64, true),
                )
            }
            "==" | "!=" | "<" | "<=" | ">" | ">=" if same => {
                self.arith(op, p.offset, &Type::int(64, true), q.offset, &Type::int(64, true), node)
            }
            "==" | "!=" => {
                // Different objects: equal only when both are null.
                let both_null = p.object.is_none() && q.object.is_none();
                let eq = if both_null {
                    Expr::Bool(true)
                } else if p.object.is_none() || q.object.is_none() {
                    let other = if p.object.is_none() { &q } else { &p };
                    fold::not(self.nonnull(other))
                } else {
                    Expr::Bool(false)
                };
                Value::Scalar(if op == "==" { eq } else { fold::not(eq) }, Type::Bool)
            }
            _ => self.unknown_value(node, format!("pointer operator `{op}` on different buffers")),
        }
    }

    /// A user-defined `operator@` (member or free).
    fn user_operator(&mut self, op: &str, a: &Value, b: &Value, node: Node<'u>) -> Option<Value> {
        let name = format!("operator{op}");
        let operands = vec![Operand::Value(a.clone()), Operand::Value(b.clone())];
        if let Type::Class(inst) = a.ty().strip_ref() {
            let inst = inst.clone();
            let ctx = self.class_ctx(&inst);
            let ids: Vec<DeclId> = self
                .index
                .lookup_in(ctx.scope, &name, 0)
                .into_iter()
                .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
                .collect();
            if !ids.is_empty() {
                let this = Place::Temp(a.clone());
                let op = self.call_named(&ids, &[], vec![Operand::Value(b.clone())], Some(this), Some(inst), node);
                return Some(self.operand_value(op, node));
            }
        }
        let ids: Vec<DeclId> = self
            .index
            .lookup(self.ctx().scope, &name)
            .into_iter()
            .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
            .collect();
        if ids.is_empty() {
            return None;
        }
        let op = self.call_named(&ids, &[], operands, None, None, node);
        Some(self.operand_value(op, node))
    }

    fn update(&mut self, node: Node<'u>) -> Value {
        let op = node.field("operator").map(|o| self.text(o)).unwrap_or("++");
        let Some(arg) = node.field("argument") else {
            return Value::Void;
        };
        let prefix = node
            .child(0)
            .is_some_and(|c| c.kind_name() == "++" || c.kind_name() == "--");
        let place = self.place(arg);
        let old = self.read(&place, node);
        let one = Value::Scalar(Expr::int(1, ScalarTy::I32), Type::int(32, true));
        let new = self.binop(if op == "++" { "+" } else { "-" }, old.clone(), one, node);
        self.write(&place, new.clone(), node);
        if prefix {
            new
        } else {
            // The old value was read before the write; keep it in a temporary if it
            // names the variable being changed.
            match old {
                Value::Scalar(Expr::Var(v), t) => {
                    let span = self.span(node);
                    let tmp = self.new_var("old", t.scalar(), span);
                    self.emit_before_last(
                        StmtKind::Assign {
                            var: tmp,
                            value: Expr::Var(v),
                        },
                        span,
                    );
                    Value::Scalar(Expr::Var(tmp), t)
                }
                Value::Ptr(p) => match &p.offset {
                    Expr::Var(v) => {
                        let span = self.span(node);
                        let tmp = self.new_var("old", I64, span);
                        let v = *v;
                        self.emit_before_last(
                            StmtKind::Assign {
                                var: tmp,
                                value: Expr::Var(v),
                            },
                            span,
                        );
                        Value::Ptr(Ptr {
                            offset: Expr::Var(tmp),
                            ..p
                        })
                    }
                    _ => Value::Ptr(p),
                },
                other => other,
            }
        }
    }

    /// Inserts a statement before the last one emitted (used to save a value a
    /// write just overwrote).
    fn emit_before_last(&mut self, kind: StmtKind, span: crate::source::Span) {
        if self.dead {
            return;
        }
        let site = self.site(span);
        if let Some(b) = self.blocks.last_mut() {
            let at = b.len().saturating_sub(1);
            b.insert(at, crate::ir::Stmt { kind, span, site });
        }
    }

    fn assignment(&mut self, node: Node<'u>) -> Value {
        let op = node.field("operator").map(|o| self.text(o)).unwrap_or("=").to_string();
        let (Some(l), Some(r)) = (node.field("left"), node.field("right")) else {
            return Value::Void;
        };
        let place = self.place(l);
        let value = if r.kind_name() == "initializer_list" {
            let items: Vec<Operand> = named_children(r).into_iter().map(|i| self.operand(i)).collect();
            let ty = place.ty();
            self.list_value(&ty, items, r)
        } else {
            self.expr(r)
        };
        // A class with `operator=`: call it.
        if let Type::Class(inst) = place.ty().strip_ref() {
            let inst = inst.clone();
            let ctx = self.class_ctx(&inst);
            let ids: Vec<DeclId> = self
                .index
                .lookup_in(ctx.scope, &format!("operator{op}"), 0)
                .into_iter()
                .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
                .collect();
            if !ids.is_empty() {
                let op = self.call_named(&ids, &[], vec![Operand::Value(value)], Some(place), Some(inst), node);
                return self.operand_value(op, node);
            }
        }
        let new = if op == "=" {
            value
        } else {
            let old = self.read(&place, node);
            let bop = op.trim_end_matches('=');
            let bop = match bop {
                "and_" | "and" => "&",
                "or_" | "or" => "|",
                "xor_" | "xor" => "^",
                other => other,
            };
            self.binop(bop, old, value, node)
        };
        let ty = place.ty();
        let new = self.convert(new, &ty, node);
        self.write(&place, new.clone(), node);
        new
    }

    fn conditional(&mut self, node: Node<'u>) -> Value {
        let (Some(c), Some(a), Some(b)) = (
            node.field("condition"),
            node.field("consequence"),
            node.field("alternative"),
        ) else {
            return Value::Void;
        };
        let cv = self.expr(c);
        let cond = self.truth(cv, c);
        if let Some(taken) = cond.as_bool() {
            return self.expr(if taken { a } else { b });
        }
        let mut av = Value::Void;
        let mut bv = Value::Void;
        let before = self.known.clone();
        let then_block = self.sub_block(|l| av = l.expr(a));
        self.known = before.clone();
        let else_block = self.sub_block(|l| bv = l.expr(b));
        self.known = before;
        if then_block.0.is_empty() && else_block.0.is_empty() {
            if let Some(v) = self.select_values(cond.clone(), av.clone(), bv.clone(), node) {
                return v;
            }
        }
        // Effects in a branch: lower as an `if` that writes a temporary.
        let ty = match (&av, &bv) {
            (Value::Scalar(_, ta), Value::Scalar(_, tb)) if ta.is_arith() && tb.is_arith() => common_type(ta, tb),
            _ => av.ty(),
        };
        let span = self.span(node);
        let slot = self.local_place("sel", &ty, node);
        let then_block = {
            let mut blk = then_block;
            let stmts = self.sub_block(|l| l.write(&slot, av, node));
            blk.0.extend(stmts.0);
            blk
        };
        let else_block = {
            let mut blk = else_block;
            let stmts = self.sub_block(|l| l.write(&slot, bv, node));
            blk.0.extend(stmts.0);
            blk
        };
        self.emit(
            StmtKind::If {
                cond,
                then_block,
                else_block,
            },
            span,
        );
        self.read(&slot, node)
    }

    /// `c ? a : b` of two pure values.
    fn select_values(&mut self, c: Expr, a: Value, b: Value, node: Node<'u>) -> Option<Value> {
        match (a, b) {
            (Value::Scalar(x, tx), Value::Scalar(y, ty)) => {
                let t = if tx.is_arith() && ty.is_arith() {
                    common_type(&tx, &ty)
                } else {
                    tx.clone()
                };
                let st = t.scalar();
                Some(Value::Scalar(fold::select(c, self.cast(st, x), self.cast(st, y)), t))
            }
            (Value::Ptr(p), Value::Ptr(q)) if p.object == q.object || q.object.is_none() || p.object.is_none() => {
                let object = p.object.or(q.object);
                Some(Value::Ptr(Ptr {
                    object,
                    offset: fold::select(c, p.offset, q.offset),
                    pointee: p.pointee,
                }))
            }
            (Value::Ptr(p), Value::Ptr(q)) => {
                // `c ? a : b` into two buffers: a choice object with its selector.
                let (Some(a), Some(b)) = (p.object, q.object) else {
                    unreachable!("null handled above")
                };
                // An operand that is itself a choice contributes its
                // candidates, and its selector offset past the others'.
                let flat = |l: &Self, o: ObjectId| match l.choices.get(&o) {
                    Some((sel, list)) => (Some(Expr::Var(*sel)), list.clone()),
                    None => (None, vec![Some(o)]),
                };
                let (sel_a, list_a) = flat(self, a);
                let (sel_b, list_b) = flat(self, b);
                let span = self.span(node);
                let selector = self.new_var("buffer", ScalarTy::I32, span);
                let i32t = ScalarTy::I32;
                let pick_a = sel_a.unwrap_or(Expr::int(0, i32t));
                let base = Expr::int(list_a.len() as i128, i32t);
                let pick_b = match sel_b {
                    Some(sb) => fold::binary(BinOp::Add, i32t, base, sb),
                    None => base,
                };
                self.emit(
                    StmtKind::Assign {
                        var: selector,
                        value: fold::select(c.clone(), pick_a, pick_b),
                    },
                    span,
                );
                let objects: Vec<Option<ObjectId>> = list_a.into_iter().chain(list_b).collect();
                let choice = self.choice_object(selector, objects, span);
                Some(Value::Ptr(Ptr {
                    object: Some(choice),
                    offset: fold::select(c, p.offset, q.offset),
                    pointee: p.pointee,
                }))
            }
            (Value::Agg(t, xs), Value::Agg(_, ys)) if xs.len() == ys.len() => {
                let fields: Option<Vec<Value>> = xs
                    .into_iter()
                    .zip(ys)
                    .map(|(x, y)| self.select_values(c.clone(), x, y, node))
                    .collect();
                fields.map(|f| Value::Agg(t, f))
            }
            (Value::Unknown(t), _) | (_, Value::Unknown(t)) => Some(Value::Unknown(t)),
            (Value::Void, _) => Some(Value::Void),
            _ => None,
        }
    }

    fn sizeof(&mut self, node: Node<'u>) -> Value {
        let u64t = Type::int(64, false);
        // `sizeof...(pack)`
        if self.text(node).trim_start().starts_with("sizeof...") || self.text(node).contains("sizeof ...") {
            let name = named_children(node)
                .last()
                .map(|n| self.text(*n).trim_matches(|c| c == '(' || c == ')').trim().to_string())
                .unwrap_or_default();
            let n = match self.lookup_local(&name) {
                Some(Binding::Pack(items)) => items.len(),
                Some(Binding::TypePack(items)) => items.len(),
                _ => 0,
            };
            return Value::Scalar(Expr::int(n as i128, ScalarTy::U64), u64t);
        }
        let ty = if let Some(t) = node.field("type") {
            self.type_descriptor(t)
        } else if let Some(v) = node.field("value") {
            // The operand is not evaluated: its type only.
            let place = {
                let dead = self.dead;
                self.blocks.push(Vec::new());
                let p = self.place(v);
                self.blocks.pop();
                self.dead = dead;
                p
            };
            place.ty()
        } else {
            Type::Void
        };
        let e = self.size_expr(ty.strip_ref());
        Value::Scalar(e, u64t)
    }

    /// `(pack op ...)`, `(... op pack)`, `(init op ... op pack)`.
    fn fold_expression(&mut self, node: Node<'u>) -> Value {
        let op = node
            .field("operator")
            .map(|o| self.text(o).to_string())
            .unwrap_or_default();
        let (left, right) = (node.field("left"), node.field("right"));
        let pattern = [left, right]
            .into_iter()
            .flatten()
            .find(|n| n.kind_name() != "..." && self.pack_names(*n).len() == 1 || self.mentions_pack(*n));
        let Some(pattern) = pattern else {
            return self.unknown_value(node, "fold expression without a pack");
        };
        let values = self.expand_pack(pattern);
        let mut acc: Option<Value> = None;
        for v in values {
            acc = Some(match acc {
                None => v,
                Some(a) => match op.as_str() {
                    "&&" | "||" => {
                        let x = self.truth(a, node);
                        let y = self.truth(v, node);
                        let bop = if op == "&&" { BinOp::And } else { BinOp::Or };
                        Value::Scalar(fold::binary(bop, ScalarTy::Bool, x, y), Type::Bool)
                    }
                    "," => v,
                    other => self.binop(other, a, v, node),
                },
            });
        }
        match (acc, op.as_str()) {
            (Some(v), _) => v,
            (None, "&&") => Value::Scalar(Expr::Bool(true), Type::Bool),
            (None, "||") => Value::Scalar(Expr::Bool(false), Type::Bool),
            _ => Value::Void,
        }
    }

    fn mentions_pack(&self, node: Node<'u>) -> bool {
        !self.pack_names(node).is_empty()
    }

    /// Names of packs bound in scope that a pattern mentions.
    pub(super) fn pack_names(&self, node: Node<'u>) -> Vec<String> {
        let mut names = Vec::new();
        let mut stack = vec![node];
        let mut steps = 0;
        while let Some(n) = stack.pop() {
            steps += 1;
            if steps > 10_000 {
                break;
            }
            if matches!(n.kind_name(), "identifier" | "type_identifier") {
                let name = self.text(n).to_string();
                if matches!(
                    self.lookup_local(&name),
                    Some(Binding::Pack(_)) | Some(Binding::TypePack(_))
                ) && !names.contains(&name)
                {
                    names.push(name);
                }
            }
            let mut cursor = n.walk();
            stack.extend(n.named_children(&mut cursor));
        }
        names
    }

    /// Evaluates a pattern once per element of the packs it mentions.
    pub(super) fn expand_pack(&mut self, pattern: Node<'u>) -> Vec<Value> {
        let names = self.pack_names(pattern);
        let packs: Vec<(String, Binding)> = names
            .iter()
            .filter_map(|n| self.lookup_local(n).map(|b| (n.clone(), b)))
            .collect();
        let len = packs
            .iter()
            .map(|(_, b)| match b {
                Binding::Pack(items) => items.len(),
                Binding::TypePack(items) => items.len(),
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        let mut out = Vec::new();
        for i in 0..len {
            self.frame_mut().locals.push(Default::default());
            for (name, b) in &packs {
                let element = match b {
                    Binding::Pack(items) => items.get(i).cloned(),
                    Binding::TypePack(items) => items.get(i).cloned().map(Binding::Type),
                    _ => None,
                };
                if let Some(e) = element {
                    self.bind(name, e);
                }
            }
            out.push(self.expr(pattern));
            self.frame_mut().locals.pop();
        }
        out
    }

    /// Operands of an argument list, with pack expansions expanded.
    pub(super) fn operands(&mut self, args: Option<Node<'u>>) -> Vec<Operand> {
        let mut out = Vec::new();
        let Some(args) = args else { return out };
        for a in named_children(args) {
            if a.kind_name() == "parameter_pack_expansion" {
                let Some(pattern) = a.field("pattern") else {
                    continue;
                };
                let name = self.text(pattern).trim().to_string();
                if let Some(Binding::Pack(items)) = self.lookup_local(&name) {
                    for b in items {
                        out.push(match b {
                            Binding::Place(p) => Operand::Place(p),
                            Binding::Value(v) => Operand::Value(v),
                            _ => Operand::Value(Value::Void),
                        });
                    }
                    continue;
                }
                for v in self.expand_pack(pattern) {
                    out.push(Operand::Value(v));
                }
                continue;
            }
            out.push(self.operand(a));
        }
        out
    }

    /// An argument: a place when the syntax is an lvalue, else a value.
    pub(super) fn operand(&mut self, node: Node<'u>) -> Operand {
        match node.kind_name() {
            "identifier" | "field_expression" | "subscript_expression" | "qualified_identifier" => {
                Operand::Place(self.place(node))
            }
            "pointer_expression" if node.field("operator").is_some_and(|o| self.text(o) == "*") => {
                Operand::Place(self.place(node))
            }
            "parenthesized_expression" => match named_children(node).first().copied() {
                Some(inner) => self.operand(inner),
                None => Operand::Value(Value::Void),
            },
            "call_expression" => self.call(node),
            "initializer_list" => Operand::List(named_children(node).into_iter().map(|i| self.operand(i)).collect()),
            _ => Operand::Value(self.expr(node)),
        }
    }

    // ----- places ------------------------------------------------------------------

    /// Evaluates an lvalue.
    pub(super) fn place(&mut self, node: Node<'u>) -> Place {
        if !self.enter(node) {
            return Place::Temp(Value::Unknown(Type::Opaque("deep".into())));
        }
        let p = self.place_inner(node);
        self.leave();
        p
    }

    fn place_inner(&mut self, node: Node<'u>) -> Place {
        match node.kind_name() {
            "identifier" | "type_identifier" | "field_identifier" => {
                let name = self.text(node).to_string();
                self.name_place(&name, node)
            }
            "qualified_identifier" => self.qualified_place(node),
            "parenthesized_expression" => match named_children(node).first().copied() {
                Some(inner) => self.place(inner),
                None => Place::Temp(Value::Void),
            },
            "field_expression" => self.field_place(node),
            "subscript_expression" => self.subscript_place(node),
            "pointer_expression" => {
                let op = node.field("operator").map(|o| self.text(o)).unwrap_or("*");
                let Some(arg) = node.field("argument") else {
                    return Place::Temp(Value::Void);
                };
                if op == "&" {
                    return Place::Temp(self.address_of(arg, node));
                }
                let v = self.expr(arg);
                self.deref(v, node)
            }
            "call_expression" => match self.call(node) {
                Operand::Place(p) => p,
                Operand::Value(Value::Mem(ptr, ty)) => Place::Mem(ptr, ty),
                Operand::Value(v) => Place::Temp(v),
                Operand::List(_) => Place::Temp(Value::Void),
            },
            "cast_expression" => {
                let ty = match node.field("type") {
                    Some(t) => self.type_descriptor(t),
                    None => Type::Opaque("?".into()),
                };
                match (&ty, node.field("value")) {
                    (Type::Ref(inner), Some(v)) => {
                        let p = self.place(v);
                        self.reinterpret_place(p, inner, node)
                    }
                    _ => Place::Temp(self.expr(node)),
                }
            }
            "this" => match self.frame().this.clone() {
                Some(Place::Mem(ptr, ty)) => Place::Temp(Value::Ptr(Ptr { pointee: ty, ..ptr })),
                Some(_) => Place::Temp(Value::Unknown(Type::Opaque("this".into()))),
                None => Place::Temp(self.unknown_value(node, "`this` outside a member function")),
            },
            _ => Place::Temp(self.expr(node)),
        }
    }

    /// `*p` as a place.
    pub(super) fn deref(&mut self, v: Value, node: Node<'u>) -> Place {
        match v {
            Value::Ptr(p) => {
                let ty = p.pointee.clone();
                if p.object.is_none() {
                    self.unknown(node, "dereference of a null or unknown pointer");
                }
                Place::Mem(p, ty)
            }
            Value::Mem(ptr, Type::Array(elem, _)) => {
                let ty = (*elem).clone();
                Place::Mem(
                    Ptr {
                        pointee: ty.clone(),
                        ..ptr
                    },
                    ty,
                )
            }
            Value::Unknown(t) => Place::Temp(Value::Unknown(t)),
            other => {
                let ty = other.ty();
                if let Type::Class(inst) = ty.strip_ref() {
                    // `*it` on a class: `operator*`.
                    let inst = inst.clone();
                    let ctx = self.class_ctx(&inst);
                    let ids = self.index.lookup_in(ctx.scope, "operator*", 0);
                    if !ids.is_empty() {
                        let op = self.call_named(&ids, &[], vec![], Some(Place::Temp(other)), Some(inst), node);
                        return match op {
                            Operand::Place(p) => p,
                            Operand::Value(v) => Place::Temp(v),
                            Operand::List(_) => Place::Temp(Value::Void),
                        };
                    }
                }
                Place::Temp(self.unknown_value(node, "dereference of a non-pointer"))
            }
        }
    }

    /// A place viewed as another type (`reinterpret_cast<T&>(x)`, `*(T *) &x`).
    fn reinterpret_place(&mut self, p: Place, ty: &Type, node: Node<'u>) -> Place {
        match p {
            Place::Mem(ptr, _) => Place::Mem(
                Ptr {
                    pointee: ty.clone(),
                    ..ptr
                },
                ty.clone(),
            ),
            Place::Var(v, _) if ty.is_arith() => Place::Var(v, ty.clone()),
            other if other.ty().strip_ref() == ty => other,
            _ => Place::Temp(self.unknown_value(node, "reinterpretation of a register variable")),
        }
    }

    /// A name: local, member of `this`, global, enumerator, builtin, or an unresolved symbol.
    fn name_place(&mut self, name: &str, node: Node<'u>) -> Place {
        if let Some(b) = self.lookup_local(name) {
            return match b {
                Binding::Place(p) => p,
                Binding::Value(v) => Place::Temp(v),
                Binding::Type(t) => Place::Temp(Value::Type(t)),
                Binding::Pack(_) | Binding::TypePack(_) => {
                    Place::Temp(self.unknown_value(node, "pack used without expansion"))
                }
                Binding::Namespace(_) => Place::Temp(Value::Void),
            };
        }
        // Members of the enclosing class.
        if let Some(this) = self.frame().this.clone() {
            if let Some(p) = self.member_place(&this, name, node) {
                return p;
            }
        }
        if let Some(class) = self.ctx().class.clone() {
            if let Some(b) = self.static_member(&class, name, node) {
                return b;
            }
        }
        let scope = self.ctx().scope;
        let mut ids = self.index.lookup(scope, name);
        if ids.is_empty() {
            for u in self.frame().usings.clone() {
                ids.extend(self.index.lookup_in(u, name, 0));
            }
        }
        if let Some(p) = self.decls_place(&ids, name, node) {
            return p;
        }
        if let Some(v) = self.builtin_value(name) {
            return Place::Temp(v);
        }
        // A built-in scalar or vector type's name in an expression's
        // position: the operand of `sizeof(half2)` parses as a parenthesised
        // expression. (Not library names such as `less`: an undefined
        // function of that name must stay an unknown call.)
        if let Some(t) = super::types::named_scalar(name) {
            return Place::Temp(Value::Type(t));
        }
        Place::Unresolved(name.into())
    }

    /// The place a set of declarations names (variables, enumerators, types).
    fn decls_place(&mut self, ids: &[DeclId], name: &str, node: Node<'u>) -> Option<Place> {
        for &id in ids {
            let d = self.index.decl(id).clone();
            match d.kind {
                DeclKind::Var => return Some(self.global_place(id, None, node)),
                DeclKind::Enumerator { enum_decl, .. } => {
                    let v = self.enumerator_value(id);
                    let ty = Type::Enum {
                        decl: enum_decl,
                        name: self.index.decl(enum_decl).name.clone(),
                    };
                    return Some(Place::Temp(Value::Scalar(Expr::int(v, ScalarTy::I32), ty)));
                }
                DeclKind::Class | DeclKind::Alias | DeclKind::Enum => {
                    let t = self.named_type(name, node);
                    return Some(Place::Temp(Value::Type(t)));
                }
                DeclKind::Function => {
                    let functions: Vec<DeclId> = ids
                        .iter()
                        .copied()
                        .filter(|&f| self.index.decl(f).kind == DeclKind::Function)
                        .collect();
                    let _ = name;
                    return Some(Place::Temp(Value::Func(Rc::new(super::types::FuncRef {
                        ids: functions,
                        args: Vec::new(),
                    }))));
                }
                _ => {}
            }
        }
        None
    }

    /// `ns::x`, `S::member`, `E::value`, `T::value`.
    fn qualified_place(&mut self, node: Node<'u>) -> Place {
        let full = normalize(self.text(node));
        let (Some(scope_node), Some(name_node)) = (node.field("scope"), node.field("name")) else {
            return Place::Temp(self.unknown_value(node, format!("name `{full}`")));
        };
        let name = normalize(self.text(name_node));
        if name_node.kind_name() == "template_function" {
            // `ns::var<args>` / `std::is_same_v<A, B>`.
            let path = normalize(self.text(scope_node));
            let parts: Vec<&str> = path.split("::").collect();
            let scope = self.resolve_scope_path(&parts);
            let base = name_node
                .field("name")
                .map(|n| normalize(self.text(n)))
                .unwrap_or_default();
            return Place::Temp(self.template_value_in(name_node, scope, &format!("{path}::{base}")));
        }
        // A class (template) scope: a static member.
        let scope_ty = match scope_node.kind_name() {
            "template_type" => Some(self.template_type(scope_node)),
            "namespace_identifier" | "type_identifier" => {
                let sname = self.text(scope_node).to_string();
                match self.lookup_local(&sname) {
                    Some(Binding::Type(t)) => Some(t),
                    _ => {
                        let ids = self.index.lookup(self.ctx().scope, &sname);
                        if ids
                            .iter()
                            .any(|&id| matches!(self.index.decl(id).kind, DeclKind::Class | DeclKind::Alias))
                        {
                            Some(self.named_type(&sname, scope_node))
                        } else {
                            None
                        }
                    }
                }
            }
            _ => None,
        };
        if let Some(Type::Class(inst)) = &scope_ty {
            if let Some(p) = self.static_member(inst, &name, node) {
                return p;
            }
        }
        if let Some(Type::Enum { decl, .. }) = &scope_ty {
            let members = self.index.decl(*decl).members;
            if let Some(m) = members {
                let ids = self.index.lookup_in(m, &name, 0);
                if let Some(p) = self.decls_place(&ids, &name, node) {
                    return p;
                }
            }
        }
        if let Some(Type::Lib(lib)) = &scope_ty {
            if let Some(v) = super::builtins::library_static(self, &lib.name, &lib.args, &name) {
                return Place::Temp(v);
            }
        }
        if name_node.kind_name() == "qualified_identifier" {
            let path = normalize(self.text(scope_node));
            let parts: Vec<&str> = path.split("::").collect();
            if let Some(s) = self.resolve_scope_path(&parts) {
                let ctx = Ctx {
                    scope: s,
                    ..self.ctx().clone()
                };
                let frame_usings = self.frame().usings.clone();
                return self.in_ctx(ctx, |l| {
                    l.frame_mut().usings = frame_usings;
                    l.qualified_place(name_node)
                });
            }
        }
        let path = normalize(self.text(scope_node));
        let parts: Vec<&str> = path.split("::").map(|p| p.split('<').next().unwrap_or(p)).collect();
        if let Some(s) = self.resolve_scope_path(&parts) {
            let ids = self.index.lookup_in(s, &name, 0);
            if let Some(p) = self.decls_place(&ids, &name, node) {
                return p;
            }
        }
        Place::Unresolved(full.into())
    }

    /// A static data member (or enumerator, or nested type) of a class.
    fn static_member(&mut self, inst: &Rc<ClassInst>, name: &str, node: Node<'u>) -> Option<Place> {
        let ctx = self.class_ctx(inst);
        let ids = self.index.lookup_in(ctx.scope, name, 0);
        if ids.is_empty() {
            // Inherited static members.
            let bases = self.base_classes(inst);
            for b in bases {
                if let Some(p) = self.static_member(&b, name, node) {
                    return Some(p);
                }
            }
            return None;
        }
        for &id in &ids {
            let d = self.index.decl(id).clone();
            match d.kind {
                DeclKind::Var => return Some(self.global_place(id, Some(inst.clone()), node)),
                DeclKind::Enumerator { .. } => return self.decls_place(&[id], name, node),
                DeclKind::Class | DeclKind::Alias | DeclKind::Enum => {
                    let t = self.member_type(inst, name)?;
                    return Some(Place::Temp(Value::Type(t)));
                }
                _ => {}
            }
        }
        None
    }

    /// The base classes of a class instantiation.
    pub(super) fn base_classes(&mut self, inst: &Rc<ClassInst>) -> Vec<Rc<ClassInst>> {
        let ctx = self.class_ctx(inst);
        let clauses = self.index.bases.get(&ctx.scope).cloned().unwrap_or_default();
        let mut out = Vec::new();
        for (clause, _) in clauses {
            for b in named_children(clause) {
                if b.kind_name() == "access_specifier" {
                    continue;
                }
                let t = self.in_ctx(ctx.clone(), |l| l.type_node(b));
                if let Type::Class(bi) = t {
                    out.push(bi);
                }
            }
        }
        out
    }

    /// A variable at namespace scope or a static data member: constants evaluate
    /// to values, `__device__`/`__constant__`/`__shared__` variables are objects.
    fn global_place(&mut self, id: DeclId, class: Option<Rc<ClassInst>>, node: Node<'u>) -> Place {
        let key_class = class
            .as_ref()
            .map(|c| Type::Class(c.clone()).display())
            .unwrap_or_default();
        if let Some(b) = self.globals.get(&(id, key_class.clone())).cloned() {
            return match b {
                Binding::Place(p) => p,
                Binding::Value(v) => Place::Temp(v),
                _ => Place::Temp(Value::Void),
            };
        }
        let d = self.index.decl(id).clone();
        let ctx = match &class {
            Some(c) => self.class_ctx(c),
            None => Ctx {
                frag: d.frag,
                scope: d.scope,
                tenv: Rc::new(Default::default()),
                class: None,
            },
        };
        let text = self.index_text(d.node);
        let is_shared = text.contains("__shared__");
        let is_constant = text.contains("__constant__");
        let is_device = text.contains("__device__") || text.contains("__managed__");
        let is_const = text.contains("constexpr") || text.split_whitespace().any(|w| w == "const");
        let declarator = d.declarator.unwrap_or(d.node);
        let (ty, _) = self.in_ctx(ctx.clone(), |l| {
            let base = match d.node.field("type") {
                Some(t) => l.type_node(t),
                None => Type::int(32, true),
            };
            l.apply_declarator(base, declarator)
        });
        let init = init_of(declarator).or_else(|| d.node.field("default_value"));
        // Variable templates (`template <…> constexpr bool x = …;`) are evaluated per use;
        // without arguments their parameters stay symbolic.
        let constant_init = init.filter(|_| is_const && ty.is_arith());
        let binding = if let Some(init) = constant_init {
            let v = self.in_ctx(ctx.clone(), |l| {
                let v = l.scratch_expr(init);
                l.convert(v, &ty, init)
            });
            Binding::Value(v)
        } else {
            let space = if is_shared {
                Space::Shared
            } else if is_constant || (is_const && !is_device) {
                Space::Constant
            } else {
                Space::Global
            };
            let kind = if is_shared {
                ObjectKind::StaticShared { bytes: None }
            } else {
                ObjectKind::GlobalVariable
            };
            let span = self.span_in(d.frag, declarator);
            let obj = self.new_object(&d.name, space, kind, &ty, span);
            Binding::Place(Place::Mem(
                Ptr {
                    object: Some(obj),
                    offset: i64c(0),
                    pointee: ty.clone(),
                },
                ty,
            ))
        };
        self.globals.insert((id, key_class), binding.clone());
        let _ = node;
        match binding {
            Binding::Place(p) => p,
            Binding::Value(v) => Place::Temp(v),
            _ => Place::Temp(Value::Void),
        }
    }

    fn index_text(&self, node: Node<'u>) -> String {
        let frag = self
            .unit
            .fragments
            .iter()
            .find(|f| {
                node.end_byte() <= f.text.len()
                    && crate::syntax::tree(f)
                        .root_node()
                        .descendant_for_byte_range(node.start_byte(), node.end_byte())
                        == Some(node)
            })
            .map(|f| f.as_ref())
            .unwrap_or(self.frag());
        crate::syntax::text(frag, node).to_string()
    }

    /// The value of a device property that host code reads from a field:
    /// the warp size (`cudaDeviceProp::warpSize`, or a field that only ever
    /// receives it: `LowerConfig::warp_size_fields`) and the compute
    /// capability (a field that only ever receives it:
    /// `LowerConfig::compute_capability_fields`) of the target.
    fn device_property(&self, node: Node<'u>) -> Option<i128> {
        if !self.host_mode {
            return None;
        }
        let name = self.text(node.field("field")?);
        let config = &self.config;
        if name == "warpSize" || config.warp_size_fields.iter().any(|w| w == name) {
            return Some(config.warp_size as i128);
        }
        let cc = config.compute_capability?;
        config
            .compute_capability_fields
            .iter()
            .any(|w| w == name)
            .then_some(cc as i128)
    }

    fn span_in(&self, frag: &crate::preprocess::Fragment, node: Node) -> crate::source::Span {
        crate::syntax::span(frag, node)
    }

    /// `a.b` / `a->b`.
    fn field_place(&mut self, node: Node<'u>) -> Place {
        let (Some(arg), Some(field)) = (node.field("argument"), node.field("field")) else {
            return Place::Temp(Value::Void);
        };
        let arrow = node.field("operator").is_some_and(|o| self.text(o) == "->");
        let name = normalize(self.text(field));
        let base = if arg.kind_name() == "this" {
            match self.frame().this.clone() {
                Some(p) => p,
                None => return Place::Temp(self.unknown_value(node, "`this` outside a member function")),
            }
        } else if arrow {
            let v = self.expr(arg);
            self.deref(v, node)
        } else {
            self.place(arg)
        };
        match self.member_place(&base, &name, node) {
            Some(p) => p,
            None => {
                // A static member through an object, or a library member.
                let ty = base.ty();
                if let Type::Class(inst) = ty.strip_ref() {
                    let inst = inst.clone();
                    if let Some(p) = self.static_member(&inst, &name, node) {
                        return p;
                    }
                }
                if let Type::Lib(lib) = ty.strip_ref() {
                    let lib = lib.clone();
                    if let Some(v) = super::builtins::library_static(self, &lib.name, &lib.args, &name) {
                        return Place::Temp(v);
                    }
                }
                if let Type::Opaque(_) = ty.strip_ref() {
                    // A member of a type we could not resolve: opaque per-thread value.
                    let op = self.op(&format!("member {name}"));
                    let arg_e = match self.read(&base, node) {
                        Value::Scalar(e, _) => vec![e],
                        _ => vec![],
                    };
                    return Place::Temp(Value::Scalar(
                        Expr::Opaque(op, ScalarTy::Opaque, arg_e),
                        Type::Opaque(name.into()),
                    ));
                }
                Place::Temp(self.unknown_value(node, format!("member `{name}` of `{}`", ty.display())))
            }
        }
    }

    /// A data member of a place.
    pub(super) fn member_place(&mut self, base: &Place, name: &str, node: Node<'u>) -> Option<Place> {
        let ty = base.ty();
        let ty = ty.strip_ref().clone();
        match base {
            Place::Fields(_, places) => {
                let (i, _, _) = self.field(&ty, name)?;
                places.get(i).cloned()
            }
            Place::Mem(ptr, Type::Opaque(tn)) => {
                // A type whose definition was not found: the member is at a symbolic offset.
                let tn = tn.clone();
                self.assume(
                    node,
                    format!("the layout of `{tn}` is not known: its members are data at symbolic offsets"),
                );
                let s = self.sym(&format!("offsetof({tn}, {name})"), I64, SymKind::Layout);
                let fty = Type::Opaque(format!("{tn}::{name}").into());
                let p = Ptr {
                    object: ptr.object,
                    offset: fold::binary(BinOp::Add, I64, ptr.offset.clone(), Expr::Sym(s)),
                    pointee: fty.clone(),
                };
                Some(Place::Mem(p, fty))
            }
            Place::Mem(ptr, _) => {
                let (_, off, fty) = self.field(&ty, name)?;
                let p = Ptr {
                    object: ptr.object,
                    offset: fold::binary(BinOp::Add, I64, ptr.offset.clone(), self.cast(I64, off)),
                    pointee: fty.clone(),
                };
                Some(Place::Mem(p, fty))
            }
            Place::Temp(Value::Agg(t, fields)) => {
                let (i, _, _) = self.field(t, name)?;
                fields.get(i).cloned().map(Place::Temp)
            }
            Place::Temp(Value::Mem(ptr, t)) => {
                let (_, off, fty) = self.field(t, name)?;
                let p = Ptr {
                    object: ptr.object,
                    offset: fold::binary(BinOp::Add, I64, ptr.offset.clone(), self.cast(I64, off)),
                    pointee: fty.clone(),
                };
                Some(Place::Mem(p, fty))
            }
            Place::Temp(Value::Unknown(_)) => Some(Place::Temp(Value::Unknown(Type::Opaque(name.into())))),
            Place::Unresolved(base_name) => {
                let ptr = self.unresolved_memory(base_name, node);
                self.member_place(&Place::Mem(ptr, Type::Opaque(base_name.clone())), name, node)
            }
            _ => None,
        }
    }

    /// `a[i]`.
    fn subscript_place(&mut self, node: Node<'u>) -> Place {
        let Some(arg) = node.field("argument") else {
            return Place::Temp(Value::Void);
        };
        let index_node = node.field("indices").and_then(|i| named_children(i).first().copied());
        let Some(index_node) = index_node else {
            return Place::Temp(self.unknown_value(node, "subscript without an index"));
        };
        let base = self.place(arg);
        // `operator[]` of a class.
        if let Type::Class(inst) = base.ty().strip_ref() {
            let inst = inst.clone();
            let ctx = self.class_ctx(&inst);
            let ids = self.index.lookup_in(ctx.scope, "operator[]", 0);
            if !ids.is_empty() {
                let idx = self.operand(index_node);
                return match self.call_named(&ids, &[], vec![idx], Some(base), Some(inst), node) {
                    Operand::Place(p) => p,
                    Operand::Value(v) => Place::Temp(v),
                    Operand::List(_) => Place::Temp(Value::Void),
                };
            }
        }
        let index = self.expr(index_node);
        let (idx, it) = match index {
            Value::Scalar(e, t) => (e, t),
            _ => return Place::Temp(self.unknown_value(node, "non-integer subscript")),
        };
        // Arrays in memory index in place; pointers are read first.
        let ptr = match base {
            Place::Unresolved(name) => self.unresolved_memory(&name, node),
            Place::Mem(ptr, Type::Opaque(tn)) => {
                self.assume(node, format!("`{tn}` is indexed in place (its type is not known)"));
                Ptr {
                    pointee: Type::Opaque(format!("{tn}[]").into()),
                    ..ptr
                }
            }
            Place::Mem(ptr, Type::Array(elem, _)) => Ptr {
                pointee: (*elem).clone(),
                ..ptr
            },
            Place::Temp(Value::Mem(ptr, Type::Array(elem, _))) => Ptr {
                pointee: (*elem).clone(),
                ..ptr
            },
            other => match self.read(&other, node) {
                Value::Ptr(p) => p,
                Value::Unknown(t) => return Place::Temp(Value::Unknown(t)),
                v => return Place::Temp(self.unknown_value(node, format!("subscript of a `{}`", v.ty().display()))),
            },
        };
        let elem = ptr.pointee.clone();
        let p = self.ptr_add(ptr, idx, &it, false);
        Place::Mem(p, elem)
    }

    // ----- reading and writing -----------------------------------------------------

    /// Reads a place (a load for memory).
    pub(super) fn read(&mut self, place: &Place, node: Node<'u>) -> Value {
        match place {
            Place::Var(v, t) => Value::Scalar(self.known.get(v).cloned().unwrap_or(Expr::Var(*v)), t.clone()),
            Place::PtrVar { offset, slot, pointee } => {
                let object = self.ptr_slot_object(*slot, node);
                Value::Ptr(Ptr {
                    object,
                    offset: self.known.get(offset).cloned().unwrap_or(Expr::Var(*offset)),
                    pointee: pointee.clone(),
                })
            }
            Place::Fields(t, places) => {
                let vals = places.iter().map(|p| self.read(p, node)).collect();
                Value::Agg(t.clone(), vals)
            }
            Place::Temp(v) => v.clone(),
            Place::Mem(ptr, ty) => self.load(ptr, ty, node),
            Place::Unresolved(name) => {
                let s = self.sym(name, ScalarTy::I64, SymKind::Unresolved);
                Value::Scalar(Expr::Sym(s), Type::int(64, true))
            }
            Place::Cell(cell, ty) => match &*cell.borrow() {
                super::value::CellState::Holds(v) => v.clone(),
                _ => Value::Unknown(ty.clone()),
            },
        }
    }

    /// A new object standing for one of `objects` (`None`: null), picked by
    /// the value of `selector` (an index into `objects`); accesses through
    /// it become one access per candidate (see `Lowerer::emit`).
    fn choice_object(
        &mut self,
        selector: crate::ir::VarId,
        objects: Vec<Option<ObjectId>>,
        span: crate::source::Span,
    ) -> ObjectId {
        let names: Vec<String> = objects
            .iter()
            .flatten()
            .map(|o| format!("`{}`", self.k.objects[o.index()].name))
            .collect();
        let spaces: Vec<Space> = objects
            .iter()
            .flatten()
            .map(|o| self.k.objects[o.index()].space)
            .collect();
        let space = if spaces.iter().all(|s| *s == spaces[0]) {
            spaces[0]
        } else {
            Space::Global
        };
        let choice = self.new_object(
            &format!("one of {}", names.join(", ")),
            space,
            ObjectKind::Untraced,
            &Type::Opaque("?".into()),
            span,
        );
        self.choices.insert(choice, (selector, objects));
        choice
    }

    /// The buffer a pointer variable points into: its only one, or a choice
    /// object when it was assigned several.
    fn ptr_slot_object(&mut self, slot: usize, node: Node<'u>) -> Option<crate::ir::ObjectId> {
        self.ptr_slots[slot].used = true;
        let s = self.ptr_slots[slot].clone();
        let real: Vec<Option<crate::ir::ObjectId>> = s.objects.clone();
        if real.iter().filter(|o| o.is_some()).count() <= 1 {
            return real.into_iter().flatten().next();
        }
        if let Some(c) = s.choice {
            return Some(c);
        }
        let Some(selector) = s.selector else {
            return real.into_iter().flatten().next();
        };
        let span = self.span(node);
        let c = self.choice_object(selector, real, span);
        self.ptr_slots[slot].choice = Some(c);
        Some(c)
    }

    /// Records that a pointer variable now points into `object`.
    fn set_ptr_slot(&mut self, slot: usize, object: Option<crate::ir::ObjectId>, node: Node<'u>) {
        if object.is_none() {
            return;
        }
        if let Some((source_selector, inner)) = object.and_then(|o| self.choices.get(&o).cloned()) {
            // Copying a pointer that is itself one of several buffers: same
            // candidates, and the selector copied.
            let fresh = self.ptr_slots[slot].objects.iter().flatten().count() == 0 && !self.ptr_slots[slot].used;
            if fresh || self.ptr_slots[slot].objects == inner {
                self.ptr_slots[slot].objects = inner;
                let selector = self.slot_selector(slot, node);
                let span = self.span(node);
                self.emit(
                    StmtKind::Assign {
                        var: selector,
                        value: Expr::Var(source_selector),
                    },
                    span,
                );
            } else {
                self.unknown(node, "pointer variable changes to another buffer after it was used");
            }
            return;
        }
        let position = self.ptr_slots[slot].objects.iter().position(|o| *o == object);
        let index = match position {
            Some(i) => i,
            None => {
                let s = &self.ptr_slots[slot];
                if s.used && s.objects.iter().flatten().count() > 0 {
                    self.unknown(node, "pointer variable changes to another buffer after it was used");
                    return;
                }
                self.ptr_slots[slot].objects.push(object);
                self.ptr_slots[slot].objects.len() - 1
            }
        };
        {
            let selector = self.slot_selector(slot, node);
            let span = self.span(node);
            self.emit(
                StmtKind::Assign {
                    var: selector,
                    value: Expr::int(index as i128, ScalarTy::I32),
                },
                span,
            );
        }
    }

    /// The selector variable of a pointer variable. Every write of the
    /// variable sets it; `finish` drops those writes for variables that only
    /// ever pointed into one buffer.
    fn slot_selector(&mut self, slot: usize, node: Node<'u>) -> crate::ir::VarId {
        if let Some(v) = self.ptr_slots[slot].selector {
            return v;
        }
        let span = self.span(node);
        let v = self.new_var("buffer", ScalarTy::I32, span);
        self.ptr_slots[slot].selector = Some(v);
        v
    }

    /// The memory an unresolved name denotes when it is indexed or dereferenced:
    /// a global object of unknown type (a table from a header that was not found).
    fn unresolved_memory(&mut self, name: &str, node: Node<'u>) -> Ptr {
        let key = format!("<unresolved {name}>");
        let obj = match self.unresolved_objects.get(&key) {
            Some(&o) => o,
            None => {
                let span = self.span(node);
                let o = self.new_object(
                    name,
                    Space::Global,
                    ObjectKind::GlobalVariable,
                    &Type::Opaque(name.into()),
                    span,
                );
                self.unresolved_objects.insert(key, o);
                o
            }
        };
        Ptr {
            object: Some(obj),
            offset: i64c(0),
            pointee: Type::Opaque(format!("{name}[]").into()),
        }
    }

    fn load(&mut self, ptr: &Ptr, ty: &Type, node: Node<'u>) -> Value {
        match ty {
            Type::Array(elem, _) => Value::Ptr(Ptr {
                pointee: (**elem).clone(),
                ..ptr.clone()
            }),
            Type::Ref(inner) => self.load(ptr, inner, node),
            t if self.is_in_memory(t) => Value::Mem(ptr.clone(), t.clone()),
            t => {
                let Some(object) = ptr.object else {
                    return self.unknown_value(node, "load through a null or unknown pointer");
                };
                let width = self.size_expr(t);
                let span = self.span(node);
                let sty = if matches!(t, Type::Ptr(_)) { I64 } else { t.scalar() };
                let result = self.new_var("ld", sty, span);
                self.emit(
                    StmtKind::Access(Access {
                        object,
                        kind: AccessKind::Read,
                        offset: ptr.offset.clone(),
                        width,
                        value: None,
                        result: Some(result),
                        ranges: Vec::new(),
                        collective: false,
                        asynchronous: false,
                        lingering: false,
                        exchange: false,
                    }),
                    span,
                );
                self.loaded_value(result, t)
            }
        }
    }

    /// The value a load into `result` gives, by type.
    fn loaded_value(&mut self, result: crate::ir::VarId, t: &Type) -> Value {
        match t {
            Type::Ptr(p) => {
                // A pointer read from memory: its buffer is not traced.
                let space = Space::Global;
                let obj = self.untraced(space);
                Value::Ptr(Ptr {
                    object: Some(obj),
                    offset: Expr::Var(result),
                    pointee: (**p).clone(),
                })
            }
            Type::Vector(_) | Type::Class(_) => {
                let fields = self.fields_of(t).unwrap_or_default();
                let vals = fields
                    .iter()
                    .enumerate()
                    .map(|(i, (fname, fty))| {
                        let op = self.op(&format!("field {fname}"));
                        let e = Expr::Opaque(
                            op,
                            fty.scalar(),
                            vec![Expr::Var(result), Expr::int(i as i128, ScalarTy::I32)],
                        );
                        match fty {
                            Type::Ptr(p) => Value::Ptr(Ptr {
                                object: Some(self.untraced(Space::Global)),
                                offset: e,
                                pointee: (**p).clone(),
                            }),
                            other => Value::Scalar(e, other.clone()),
                        }
                    })
                    .collect();
                Value::Agg(t.clone(), vals)
            }
            other => Value::Scalar(Expr::Var(result), other.clone()),
        }
    }

    /// A value with its expressions saved in fresh variables (so later writes do
    /// not change it).
    fn snapshot(&mut self, v: Value, node: Node<'u>) -> Value {
        match v {
            Value::Scalar(e, t) if !e.is_const() => {
                let span = self.span(node);
                let st = self.scalar_of(&e).unwrap_or_else(|| t.scalar());
                let tmp = self.new_var("tmp", st, span);
                self.emit(StmtKind::Assign { var: tmp, value: e }, span);
                Value::Scalar(Expr::Var(tmp), t)
            }
            Value::Ptr(p) if !p.offset.is_const() => {
                let span = self.span(node);
                let tmp = self.new_var("tmp", I64, span);
                self.emit(
                    StmtKind::Assign {
                        var: tmp,
                        value: p.offset.clone(),
                    },
                    span,
                );
                Value::Ptr(Ptr {
                    offset: Expr::Var(tmp),
                    ..p
                })
            }
            Value::Agg(t, fields) => Value::Agg(t, fields.into_iter().map(|f| self.snapshot(f, node)).collect()),
            other => other,
        }
    }

    /// Whether values of a type are kept in memory rather than in variables.
    pub(super) fn is_in_memory(&mut self, t: &Type) -> bool {
        match t {
            Type::Class(_) => self.has_array(t),
            Type::Lib(_) => true,
            _ => false,
        }
    }

    /// Writes a value to a place (a store for memory).
    pub(super) fn write(&mut self, place: &Place, value: Value, node: Node<'u>) {
        match place {
            Place::Var(v, t) => {
                let value = self.convert(value, t, node);
                let span = self.span(node);
                match value {
                    Value::Scalar(e, _) => self.emit(StmtKind::Assign { var: *v, value: e }, span),
                    _ => self.emit(
                        StmtKind::Havoc {
                            var: *v,
                            reason: "value not modelled".into(),
                        },
                        span,
                    ),
                }
            }
            Place::PtrVar { offset, slot, pointee } => {
                let value = self.convert(value, &Type::ptr(pointee.clone()), node);
                let span = self.span(node);
                match value {
                    Value::Ptr(p) => {
                        self.set_ptr_slot(*slot, p.object, node);
                        self.emit(
                            StmtKind::Assign {
                                var: *offset,
                                value: p.offset,
                            },
                            span,
                        );
                    }
                    _ => self.emit(
                        StmtKind::Havoc {
                            var: *offset,
                            reason: "pointer not modelled".into(),
                        },
                        span,
                    ),
                }
            }
            Place::Fields(t, places) => match value {
                Value::Agg(_, vals) if vals.len() == places.len() => {
                    // A struct assigned from values that read its own fields
                    // (`v = make_float2(v.y, v.x)`): copy them first.
                    let mut targets = Vec::new();
                    place_vars(place, &mut targets);
                    let vals = if vals.iter().any(|v| value_mentions(v, &targets)) {
                        vals.into_iter().map(|v| self.snapshot(v, node)).collect()
                    } else {
                        vals
                    };
                    for (p, v) in places.iter().zip(vals) {
                        self.write(p, v, node);
                    }
                }
                Value::Mem(ptr, _) => {
                    let vals = self.load(&ptr, t, node);
                    if let Value::Agg(_, vals) = vals {
                        for (p, v) in places.iter().zip(vals) {
                            self.write(p, v, node);
                        }
                    }
                }
                other => {
                    // Unknown or mismatched: every field gets an unknown value.
                    let _ = other;
                    for p in places {
                        let ty = p.ty();
                        self.write(p, Value::Unknown(ty), node);
                    }
                }
            },
            Place::Mem(ptr, ty) => self.store(ptr, ty, value, node),
            Place::Temp(Value::Mem(ptr, ty)) => {
                let (ptr, ty) = (ptr.clone(), ty.clone());
                self.store(&ptr, &ty, value, node)
            }
            Place::Temp(Value::Unknown(_)) => {}
            Place::Temp(_) => self.unknown(node, "assignment to a value that is not a variable"),
            Place::Cell(cell, _) => {
                use super::value::CellState;
                // A call through a null pointer is undefined: a null
                // assignment adds no function a call may reach.
                let null = |v: &Value| matches!(v, Value::Ptr(p) if p.object.is_none() && p.offset.as_int() == Some(0));
                // Different functions make a choice only where every branch
                // around the write is an `if constexpr` on a template
                // argument or a condition every thread evaluates alike (a
                // switch on a symbolic template argument): the choice is then
                // the same for every thread. A per-thread branch may choose
                // per thread.
                let compile_time = self.branches_compile_time();
                let next = match (&*cell.borrow(), &value) {
                    (CellState::Empty, v) => CellState::Holds(v.clone()),
                    (CellState::Holds(old @ (Value::Func(_) | Value::Choice(_))), v) if null(v) => {
                        CellState::Holds(old.clone())
                    }
                    (CellState::Holds(v), new @ (Value::Func(_) | Value::Choice(_))) if null(v) => {
                        CellState::Holds(new.clone())
                    }
                    (CellState::Holds(Value::Func(a)), Value::Func(b)) if a == b => CellState::Holds(value.clone()),
                    // Different functions: a choice among them.
                    (
                        CellState::Holds(old @ (Value::Func(_) | Value::Choice(_))),
                        new @ (Value::Func(_) | Value::Choice(_)),
                    ) if compile_time => {
                        let funcs = |v: &Value| match v {
                            Value::Func(f) => vec![f.clone()],
                            Value::Choice(fs) => fs.to_vec(),
                            _ => Vec::new(),
                        };
                        let mut distinct = funcs(old);
                        for f in funcs(new) {
                            if !distinct.contains(&f) {
                                distinct.push(f);
                            }
                        }
                        CellState::Holds(Value::Choice(Rc::new(distinct)))
                    }
                    _ => CellState::Conflict,
                };
                if matches!(next, CellState::Conflict) {
                    if std::env::var("WARPDRF_DEBUG_CONFLICT").is_ok() {
                        eprintln!("conflict: old {:?} new {:?}", &*cell.borrow(), value);
                    }
                    self.unknown(node, "function pointer assigned different functions");
                }
                *cell.borrow_mut() = next;
            }
            Place::Unresolved(name) => {
                let name = name.clone();
                let ptr = self.unresolved_memory(&name, node);
                let ty = Type::Opaque(name);
                self.store(&ptr, &ty, value, node)
            }
        }
    }

    fn store(&mut self, ptr: &Ptr, ty: &Type, value: Value, node: Node<'u>) {
        let Some(object) = ptr.object else {
            self.unknown(node, "store through a null or unknown pointer");
            return;
        };
        let span = self.span(node);
        // An aggregate copied from memory: read the source too.
        if let Value::Mem(src, _) = &value {
            if let Some(src_obj) = src.object {
                let width = self.size_expr(ty);
                let tmp = self.new_var("copy", ScalarTy::Opaque, span);
                self.emit(
                    StmtKind::Access(Access {
                        object: src_obj,
                        kind: AccessKind::Read,
                        offset: src.offset.clone(),
                        width,
                        value: None,
                        result: Some(tmp),
                        ranges: Vec::new(),
                        collective: false,
                        asynchronous: false,
                        lingering: false,
                        exchange: false,
                    }),
                    span,
                );
            }
        }
        let stored = match (&value, ty) {
            (_, t) if t.is_arith() => match self.convert(value, t, node) {
                Value::Scalar(e, _) => Some(e),
                _ => None,
            },
            (Value::Ptr(p), _) => Some(p.offset.clone()),
            (Value::Scalar(e, _), _) => Some(e.clone()),
            (Value::Agg(_, fields), _) => {
                let op = self.op("pack");
                let args = fields.iter().filter_map(|f| f.expr().cloned()).collect();
                Some(Expr::Opaque(op, ScalarTy::Opaque, args))
            }
            _ => None,
        };
        let width = self.size_expr(ty);
        self.emit(
            StmtKind::Access(Access {
                object,
                kind: AccessKind::Write,
                offset: ptr.offset.clone(),
                width,
                value: stored,
                result: None,
                ranges: Vec::new(),
                collective: false,
                asynchronous: false,
                lingering: false,
                exchange: false,
            }),
            span,
        );
    }

    /// Converts a value to a type (implicit conversions and casts alike).
    pub(super) fn convert(&mut self, v: Value, ty: &Type, node: Node<'u>) -> Value {
        let ty = ty.strip_ref();
        match (v, ty) {
            (v, Type::Opaque(n)) if &**n == "auto" => v,
            (Value::Scalar(e, from), Type::Bool) => Value::Scalar(self.truth(Value::Scalar(e, from), node), Type::Bool),
            (Value::Scalar(e, _), t) if t.is_arith() => Value::Scalar(self.cast(t.scalar(), e), t.clone()),
            (Value::Ptr(p), Type::Bool) => Value::Scalar(self.nonnull(&p), Type::Bool),
            (Value::Ptr(p), Type::Ptr(to)) => Value::Ptr(Ptr {
                pointee: (**to).clone(),
                ..p
            }),
            (Value::Ptr(p), Type::Int { bits, .. }) if *bits >= 32 && p.object.is_some() => {
                // An address kept as an integer (`__cvta_generic_to_shared`, `uintptr_t`):
                // it still names its buffer, and adding to it adds bytes.
                Value::Ptr(Ptr {
                    pointee: Type::int(8, false),
                    ..p
                })
            }
            (Value::Ptr(p), t) if t.is_arith() => {
                let op = self.op("address");
                let base = p.object.map_or(-1, |o| o.0 as i128);
                Value::Scalar(
                    Expr::Opaque(op, t.scalar(), vec![Expr::int(base, I64), p.offset]),
                    t.clone(),
                )
            }
            (Value::Scalar(e, _), Type::Ptr(to)) => {
                if e.as_int() == Some(0) {
                    return Value::Ptr(Ptr {
                        object: None,
                        offset: i64c(0),
                        pointee: (**to).clone(),
                    });
                }
                let obj = self.untraced(Space::Global);
                Value::Ptr(Ptr {
                    object: Some(obj),
                    offset: self.cast(I64, e),
                    pointee: (**to).clone(),
                })
            }
            (Value::Mem(ptr, Type::Array(elem, _)), Type::Ptr(to)) => Value::Ptr(Ptr {
                pointee: if matches!(**to, Type::Void) {
                    (*elem).clone()
                } else {
                    (**to).clone()
                },
                ..ptr
            }),
            (Value::Scalar(e, _), Type::Vector(_) | Type::Class(_)) => {
                // A scalar (opaque intrinsic result) viewed as a struct: opaque fields.
                let fields = self.fields_of(ty).unwrap_or_default();
                if self.has_array(ty) {
                    return Value::Unknown(ty.clone());
                }
                let vals = fields
                    .iter()
                    .enumerate()
                    .map(|(i, (fname, fty))| {
                        let op = self.op(&format!("field {fname}"));
                        Value::Scalar(
                            Expr::Opaque(op, fty.scalar(), vec![e.clone(), Expr::int(i as i128, ScalarTy::I32)]),
                            fty.clone(),
                        )
                    })
                    .collect();
                Value::Agg(ty.clone(), vals)
            }
            (Value::Agg(_, fields), t) if t.is_arith() => {
                // A struct converted to a scalar (`operator int()` not modelled): opaque.
                let op = self.op("convert");
                let args = fields.iter().filter_map(|f| f.expr().cloned()).collect();
                Value::Scalar(Expr::Opaque(op, t.scalar(), args), t.clone())
            }
            (Value::Agg(from, fields), Type::Class(_) | Type::Vector(_)) if from != *ty => {
                let _ = node;
                let n = self.fields_of(ty).map(|f| f.len()).unwrap_or(0);
                if fields.len() == n {
                    Value::Agg(ty.clone(), fields)
                } else {
                    Value::Unknown(ty.clone())
                }
            }
            (Value::Unknown(_), t) => Value::Unknown(t.clone()),
            (v, _) => v,
        }
    }

    /// A place for a new local of a type: a variable, pointer variable, struct of
    /// places, or a local memory object.
    pub(super) fn local_place(&mut self, name: &str, ty: &Type, node: Node<'u>) -> Place {
        let span = self.span(node);
        let ty = ty.strip_ref().clone();
        match &ty {
            t if t.is_arith() => Place::Var(self.new_var(name, t.scalar(), span), t.clone()),
            t if t.is_function_pointer() => Place::Cell(
                Rc::new(std::cell::RefCell::new(super::value::CellState::Empty)),
                t.clone(),
            ),
            Type::Ptr(p) | Type::Array(p, None) if !matches!(ty, Type::Array(..)) => {
                let off = self.new_var(name, I64, span);
                let slot = self.ptr_slots.len();
                self.ptr_slots.push(PtrSlot {
                    offset_var: Some(off),
                    ..PtrSlot::default()
                });
                Place::PtrVar {
                    offset: off,
                    slot,
                    pointee: (**p).clone(),
                }
            }
            Type::Nullptr => Place::Temp(Value::Ptr(Ptr {
                object: None,
                offset: i64c(0),
                pointee: Type::Void,
            })),
            Type::Closure(id) => Place::Temp(Value::Closure(*id)),
            Type::Vector(_) | Type::Class(_) | Type::Lib(_) if !self.has_array(&ty) => {
                let fields = self.fields_of(&ty).unwrap_or_default();
                let places = fields
                    .iter()
                    .map(|(f, t)| self.local_place(&format!("{name}.{f}"), t, node))
                    .collect();
                Place::Fields(ty.clone(), places)
            }
            Type::Opaque(n) if &**n == "opaque" || n.starts_with("operator") || n.starts_with("call") => {
                Place::Var(self.new_var(name, ScalarTy::Opaque, span), ty.clone())
            }
            _ => {
                let bytes = self.size_align(&ty).map(|(s, _)| Expr::int(s as i128, ScalarTy::U64));
                let obj = self.new_object(name, Space::Local, ObjectKind::Local { bytes }, &ty, span);
                Place::Mem(
                    Ptr {
                        object: Some(obj),
                        offset: i64c(0),
                        pointee: ty.clone(),
                    },
                    ty.clone(),
                )
            }
        }
    }

    /// Initialises an array place element by element from a braced list.
    pub(super) fn init_array(&mut self, place: &Place, items: Vec<Operand>, node: Node<'u>) {
        let Place::Mem(ptr, Type::Array(elem, _)) = place else {
            return;
        };
        let elem = (**elem).clone();
        for (i, item) in items.into_iter().enumerate().take(MAX_ARRAY_INIT) {
            let p = self.ptr_add(
                Ptr {
                    pointee: elem.clone(),
                    ..ptr.clone()
                },
                Expr::int(i as i128, I64),
                &Type::int(64, true),
                false,
            );
            let v = match item {
                Operand::List(inner) => self.list_value(&elem, inner, node),
                other => self.operand_value(other, node),
            };
            self.write(&Place::Mem(p, elem.clone()), v, node);
        }
    }

    /// Values of CUDA's built-in variables.
    fn builtin_value(&mut self, name: &str) -> Option<Value> {
        let u32t = Type::int(32, false);
        let dim3 = |f: fn(Dim) -> Builtin| {
            Value::Agg(
                super::types::named_scalar("uint3").expect("uint3 is a vector type"),
                Dim::ALL
                    .iter()
                    .map(|&d| Value::Scalar(Expr::Builtin(f(d)), Type::int(32, false)))
                    .collect(),
            )
        };
        let _ = u32t;
        Some(match name {
            "threadIdx" => dim3(Builtin::ThreadIdx),
            "blockIdx" => dim3(Builtin::BlockIdx),
            "blockDim" => dim3(Builtin::BlockDim),
            "gridDim" => dim3(Builtin::GridDim),
            "warpSize" => Value::Scalar(Expr::Builtin(Builtin::WarpSize), Type::int(32, true)),
            "__func__" | "__FUNCTION__" | "__PRETTY_FUNCTION__" => Value::Ptr(Ptr {
                object: None,
                offset: i64c(0),
                pointee: Type::int(8, true),
            }),
            _ => return None,
        })
    }

    /// A `template_type` node that names a function template (parsed as a type
    /// in a template argument list).
    pub(super) fn template_value_of(&mut self, node: Node<'u>) -> Value {
        self.template_value(node)
    }

    /// `name<args>` used as a value: a variable template or a library trait.
    fn template_value(&mut self, node: Node<'u>) -> Value {
        let name = node.field("name").map(|n| normalize(self.text(n))).unwrap_or_default();
        self.template_value_in(node, None, &name)
    }

    /// A variable template `name<args>` looked up in `scope` (or from the context),
    /// else a library trait by its full name.
    fn template_value_in(&mut self, node: Node<'u>, scope: Option<super::ScopeId>, full: &str) -> Value {
        let name = node.field("name").map(|n| normalize(self.text(n))).unwrap_or_default();
        let args = match node.field("arguments") {
            Some(a) => self.template_args(a),
            None => Vec::new(),
        };
        let ids = match scope {
            Some(s) => self.index.lookup_in(s, &name, 0),
            None => self.index.lookup(self.ctx().scope, &name),
        };
        let functions: Vec<DeclId> = ids
            .iter()
            .copied()
            .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
            .collect();
        if !functions.is_empty() {
            return Value::Func(Rc::new(super::types::FuncRef { ids: functions, args }));
        }
        for id in ids {
            let d = self.index.decl(id).clone();
            if d.kind == DeclKind::Var {
                if let Some(params) = d.template {
                    let base_ctx = Ctx {
                        frag: d.frag,
                        scope: d.scope,
                        tenv: Rc::new(Default::default()),
                        class: None,
                    };
                    let env = self.bind_template_params(base_ctx.clone(), params, &args, &Default::default(), true);
                    let ctx = Ctx {
                        tenv: Rc::new(env),
                        ..base_ctx
                    };
                    let declarator = d.declarator.unwrap_or(d.node);
                    if let Some(init) = init_of(declarator) {
                        return self.in_ctx(ctx, |l| l.scratch_expr(init));
                    }
                }
            }
        }
        if let Some(v) = super::builtins::std_value(self, full, &args) {
            return v;
        }
        // A trait of a type left symbolic: a symbolic (grid-uniform) boolean.
        if full.contains("std::")
            && args
                .iter()
                .any(|a| matches!(a, super::types::TArg::Type(Type::Opaque(_))))
        {
            let shown: Vec<String> = args.iter().map(super::types::TArg::display).collect();
            let s = self.sym(
                &format!("{full}<{}>", shown.join(", ")),
                ScalarTy::Bool,
                SymKind::TemplateParam,
            );
            return Value::Scalar(Expr::Sym(s), Type::Bool);
        }
        self.unknown_value(node, format!("`{full}<…>` used as a value"))
    }
}

/// The scalar variables a place is made of.
fn place_vars(place: &Place, out: &mut Vec<crate::ir::VarId>) {
    match place {
        Place::Var(v, _) => out.push(*v),
        Place::PtrVar { offset, .. } => out.push(*offset),
        Place::Fields(_, places) => places.iter().for_each(|p| place_vars(p, out)),
        _ => {}
    }
}

/// Whether a value's expressions read any of `vars`.
fn value_mentions(v: &Value, vars: &[crate::ir::VarId]) -> bool {
    match v {
        Value::Scalar(e, _) => vars.iter().any(|&x| e.mentions_var(x)),
        Value::Ptr(p) => vars.iter().any(|&x| p.offset.mentions_var(x)),
        Value::Agg(_, fields) => fields.iter().any(|f| value_mentions(f, vars)),
        _ => false,
    }
}

/// The initializer of a declarator (`= v`, `(args)`, `{…}`).
pub(super) fn init_of(declarator: Node) -> Option<Node> {
    if declarator.kind_name() == "init_declarator" {
        return declarator.field("value");
    }
    None
}
