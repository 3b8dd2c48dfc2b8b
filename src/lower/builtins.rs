//! The model of CUDA's (and HIP's) built-ins: barriers, warp primitives,
//! atomics, memory intrinsics, math, cooperative groups, wmma, CUB block
//! scans, the `std` traits device code uses, and inline PTX.
//!
//! Functions not listed are pure when no argument is a pointer (their result
//! is an uninterpreted function of the arguments) and unknown otherwise: a
//! call that may write checked memory is never assumed harmless.

use std::rc::Rc;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::call::Operand;
use super::types::{common_type, named_scalar, CVal, LibTy, TArg, Type};
use super::value::{Place, Ptr, Value};
use super::Lowerer;
use crate::ir::fold;
use crate::ir::{
    Access, AccessKind, AtomicOp, Barrier, BarrierScope, BinOp, Builtin, Dim, Expr, FloatKind, PrimKind, Primitive,
    RangeVar, ReduceOp, ScalarTy, ShuffleKind, StmtKind, VarId,
};
use crate::syntax::{self, named_children};

const U32: ScalarTy = ScalarTy::U32;
const I64: ScalarTy = ScalarTy::I64;

fn f32t() -> Type {
    Type::Float(FloatKind::F32)
}

/// Library type names modelled by name even without a namespace.
pub fn is_library_type(name: &str) -> bool {
    let last = name.rsplit("::").next().unwrap_or(name);
    matches!(
        last,
        "thread_block"
            | "grid_group"
            | "thread_block_tile"
            | "coalesced_group"
            | "thread_group"
            | "fragment"
            | "BlockScan"
            | "BlockReduce"
            | "BlockLoad"
            | "BlockStore"
            | "WarpReduce"
            | "WarpScan"
            | "TempStorage"
            | "plus"
            | "greater"
            | "less"
            | "bit_and"
            | "bit_or"
            | "bit_xor"
            | "numeric_limits"
            | "conditional"
            | "conditional_t"
            | "remove_cv_t"
            | "remove_const_t"
            | "remove_reference_t"
            | "decay_t"
            | "remove_pointer_t"
            | "make_unsigned_t"
            | "make_signed_t"
            | "enable_if_t"
            | "type_identity_t"
    )
}

/// Layout of library types (register objects: no layout we rely on).
pub fn library_layout(_lib: &LibTy) -> Option<(u64, u64)> {
    None
}

/// `std::` type traits that produce types.
pub fn std_type<'u>(l: &mut Lowerer<'u>, name: &str, args: &[TArg]) -> Option<Type> {
    let last = name.rsplit("::").next().unwrap_or(name);
    let ty_arg = |i: usize| match args.get(i) {
        Some(TArg::Type(t)) => Some(t.clone()),
        _ => None,
    };
    let _ = l;
    Some(match last {
        "conditional_t" | "conditional" => {
            let c = match args.first() {
                Some(TArg::Value(CVal::Int(v, _))) => *v != 0,
                _ => return None,
            };
            if c {
                ty_arg(1)?
            } else {
                ty_arg(2)?
            }
        }
        "remove_cv_t" | "remove_const_t" | "remove_volatile_t" | "type_identity_t" | "remove_cvref_t" => ty_arg(0)?,
        "remove_reference_t" | "decay_t" => ty_arg(0)?.strip_ref().clone(),
        "remove_pointer_t" => match ty_arg(0)? {
            Type::Ptr(p) => (*p).clone(),
            t => t,
        },
        "make_unsigned_t" => match ty_arg(0)? {
            Type::Int { bits, .. } => Type::int(bits, false),
            t => t,
        },
        "make_signed_t" => match ty_arg(0)? {
            Type::Int { bits, .. } => Type::int(bits, true),
            t => t,
        },
        "enable_if_t" => ty_arg(1).unwrap_or(Type::Void),
        _ => return None,
    })
}

/// Values of `std::` traits used as variable templates (`std::is_same_v<A, B>`).
pub fn std_value<'u>(l: &mut Lowerer<'u>, name: &str, args: &[TArg]) -> Option<Value> {
    let last = name.rsplit("::").next().unwrap_or(name);
    let ty_arg = |i: usize| match args.get(i) {
        Some(TArg::Type(t)) => Some(t.clone()),
        _ => None,
    };
    let b = |v: bool| Some(Value::Scalar(Expr::Bool(v), Type::Bool));
    let _ = l;
    match last {
        "is_same_v" | "is_same" => {
            let (a, c) = (ty_arg(0)?, ty_arg(1)?);
            if matches!(a, Type::Opaque(_)) || matches!(c, Type::Opaque(_)) {
                return None;
            }
            b(a == c)
        }
        "is_floating_point_v" => b(matches!(ty_arg(0)?, Type::Float(_))),
        "is_integral_v" => b(matches!(ty_arg(0)?, Type::Int { .. } | Type::Bool)),
        "is_signed_v" => b(matches!(ty_arg(0)?, Type::Int { signed: true, .. } | Type::Float(_))),
        "is_unsigned_v" => b(matches!(ty_arg(0)?, Type::Int { signed: false, .. } | Type::Bool)),
        "is_pointer_v" => b(matches!(ty_arg(0)?, Type::Ptr(_))),
        "is_arithmetic_v" => b(ty_arg(0)?.is_arith()),
        "is_void_v" => b(matches!(ty_arg(0)?, Type::Void)),
        _ => None,
    }
}

/// Static members of library types (`std::numeric_limits<T>::max()` is a call;
/// `std::is_same<A, B>::value` is a value).
pub fn library_static<'u>(l: &mut Lowerer<'u>, lib: &str, args: &[TArg], member: &str) -> Option<Value> {
    let last = lib.rsplit("::").next().unwrap_or(lib);
    match (last, member) {
        (trait_name, "value") => std_value(l, &format!("{trait_name}_v"), args),
        _ => None,
    }
}

impl<'u> Lowerer<'u> {
    /// The linear thread index in the block, `x + y*Dx + z*Dx*Dy`.
    pub(super) fn linear_tid(&self) -> Expr {
        let b = |x| Expr::Builtin(x);
        let x = b(Builtin::ThreadIdx(Dim::X));
        let y = b(Builtin::ThreadIdx(Dim::Y));
        let z = b(Builtin::ThreadIdx(Dim::Z));
        let dx = b(Builtin::BlockDim(Dim::X));
        let dy = b(Builtin::BlockDim(Dim::Y));
        let yz = fold::binary(BinOp::Add, U32, y, fold::binary(BinOp::Mul, U32, z, dy));
        fold::binary(BinOp::Add, U32, x, fold::binary(BinOp::Mul, U32, yz, dx))
    }

    /// The lane of the thread in its warp.
    pub(super) fn lane(&self) -> Expr {
        fold::binary(
            BinOp::Rem,
            U32,
            self.linear_tid(),
            self.cast(U32, Expr::Builtin(Builtin::WarpSize)),
        )
    }

    /// Variables receiving a value of `ty` (one per scalar field) and the value they form.
    fn result_of(&mut self, ty: &Type, name: &str, node: Node<'u>) -> (Vec<VarId>, Value) {
        let span = self.span(node);
        match ty {
            Type::Vector(_) | Type::Class(_) if !self.has_array(ty) => {
                let fields = self.fields_of(ty).unwrap_or_default();
                let mut vars = Vec::new();
                let mut vals = Vec::new();
                for (f, fty) in fields {
                    let (v, val) = self.result_of(&fty, &format!("{name}.{f}"), node);
                    vars.extend(v);
                    vals.push(val);
                }
                (vars, Value::Agg(ty.clone(), vals))
            }
            Type::Ptr(p) => {
                let v = self.new_var(name, I64, span);
                let obj = self.untraced(crate::ir::Space::Global);
                (
                    vec![v],
                    Value::Ptr(Ptr {
                        object: Some(obj),
                        offset: Expr::Var(v),
                        pointee: (**p).clone(),
                    }),
                )
            }
            t => {
                let st = t.scalar();
                let v = self.new_var(name, st, span);
                (vec![v], Value::Scalar(Expr::Var(v), t.clone()))
            }
        }
    }

    /// The scalar expressions a value carries (struct fields flattened).
    fn flatten(v: &Value, out: &mut Vec<Expr>) {
        match v {
            Value::Scalar(e, _) => out.push(e.clone()),
            Value::Ptr(p) => out.push(p.offset.clone()),
            Value::Agg(_, fields) => fields.iter().for_each(|f| Self::flatten(f, out)),
            _ => {}
        }
    }

    /// Emits a warp primitive; returns its result value.
    #[allow(clippy::too_many_arguments)]
    fn primitive(
        &mut self,
        kind: PrimKind,
        mask: Option<Expr>,
        args: &[Value],
        width: Option<Expr>,
        result: Option<Type>,
        block_scope: bool,
        node: Node<'u>,
    ) -> Value {
        let mut flat = Vec::new();
        for a in args {
            Self::flatten(a, &mut flat);
        }
        let (results, value) = match &result {
            Some(t) => self.result_of(t, kind.name().trim_start_matches('_'), node),
            None => (Vec::new(), Value::Void),
        };
        self.emit_at(
            StmtKind::Primitive(Primitive {
                kind,
                mask,
                args: flat,
                width,
                results,
                block_scope,
            }),
            node,
        );
        value
    }

    fn scalar_arg(&mut self, v: &Value, ty: ScalarTy) -> Expr {
        match v {
            Value::Scalar(e, _) => self.cast(ty, e.clone()),
            Value::Ptr(p) => p.offset.clone(),
            _ => {
                let op = self.op("unknown argument");
                Expr::Opaque(op, ty, vec![])
            }
        }
    }

    /// A built-in function call, when `name` is one; else the arguments'
    /// values, for an opaque call.
    pub(super) fn builtin_call(
        &mut self,
        name: &str,
        explicit: &[TArg],
        ops: Vec<Operand>,
        node: Node<'u>,
    ) -> Result<Operand, super::call::Unresolved> {
        let name = name.trim_start_matches("::");
        let last = name.rsplit("::").next().unwrap_or(name);
        // Cooperative groups and wmma free functions.
        if let Some(v) = self.library_call(name, last, explicit, &ops, node) {
            return Ok(v);
        }
        // Each argument is read once, here, and moved: an opaque call gets
        // these values (read again, a load was recorded twice; copied, a
        // nest of calls to undeclared functions took time quadratic in its
        // depth: `F(F(…F(0)…))` 10,000 deep, 8 s).
        let copies = matches!(last, "memcpy" | "__builtin_memcpy" | "memset" | "__builtin_memset");
        let mut touches_memory = false;
        let mut lists = Vec::with_capacity(ops.len());
        // Arguments of a copy that are members of types not known (see
        // `builtin_result`): kept as memory, not read.
        let mut buffers = Vec::new();
        let mut vals = Vec::with_capacity(ops.len());
        for (i, op) in ops.into_iter().enumerate() {
            touches_memory |= super::call::reaches_memory(&op);
            lists.push(matches!(op, Operand::List(_)));
            vals.push(match op {
                Operand::Place(Place::Mem(p, Type::Opaque(t))) if copies => {
                    buffers.push(i);
                    Value::Mem(p, Type::Opaque(t))
                }
                other => self.operand_value(other, node),
            });
        }
        match self.builtin_result(last, &vals, &buffers, node) {
            Some(r) => Ok(r),
            None => Err(super::call::Unresolved {
                values: vals
                    .into_iter()
                    .zip(lists)
                    .map(|(v, list)| if list { Value::Void } else { v })
                    .collect(),
                touches_memory,
            }),
        }
    }

    /// A builtin function's result on argument values `vals` (`buffers`:
    /// which of a copy's are members of types not known); `None` when
    /// `last` names none.
    fn builtin_result(&mut self, last: &str, vals: &[Value], buffers: &[usize], node: Node<'u>) -> Option<Operand> {
        let v = |i: usize| vals.get(i).cloned().unwrap_or(Value::Void);
        // Masks have a bit per lane: 64-bit for 64-lane warps (HIP).
        let mask_ty = if self.config.warp_size > 32 { ScalarTy::U64 } else { U32 };
        let full_mask = Expr::int((1i128 << self.config.warp_size.min(64)) - 1, mask_ty);
        let value = match last {
            // ----- barriers
            "__syncthreads" | "__barrier_sync" | "__syncthreads_fence" => {
                self.emit_at(
                    StmtKind::Barrier(Barrier {
                        scope: BarrierScope::Block,
                        predicate: None,
                        name: "__syncthreads".into(),
                    }),
                    node,
                );
                Value::Void
            }
            "__syncthreads_count" | "__syncthreads_and" | "__syncthreads_or" => {
                let pred = self.truth(v(0), node);
                let span = self.span(node);
                let r = self.new_var(last, ScalarTy::I32, span);
                self.emit_at(
                    StmtKind::Barrier(Barrier {
                        scope: BarrierScope::Block,
                        predicate: Some((pred, r)),
                        name: last.into(),
                    }),
                    node,
                );
                Value::Scalar(Expr::Var(r), Type::int(32, true))
            }
            // ----- warp primitives
            "__syncwarp" => {
                let mask = if vals.is_empty() {
                    full_mask
                } else {
                    self.scalar_arg(&v(0), U32)
                };
                self.primitive(PrimKind::SyncWarp, Some(mask), &[], None, None, false, node)
            }
            "__shfl_sync" | "__shfl_up_sync" | "__shfl_down_sync" | "__shfl_xor_sync" => {
                let kind = match last {
                    "__shfl_sync" => ShuffleKind::Idx,
                    "__shfl_up_sync" => ShuffleKind::Up,
                    "__shfl_down_sync" => ShuffleKind::Down,
                    _ => ShuffleKind::Xor,
                };
                let mask = self.scalar_arg(&v(0), mask_ty);
                let value = v(1);
                let lane = self.scalar_arg(&v(2), ScalarTy::I32);
                let width = vals.get(3).map(|w| self.scalar_arg(w, ScalarTy::I32));
                let ty = value.ty().strip_ref().clone();
                self.primitive(
                    PrimKind::Shuffle(kind),
                    Some(mask),
                    &[value, Value::Scalar(lane, Type::int(32, true))],
                    width,
                    Some(ty),
                    false,
                    node,
                )
            }
            "__shfl" | "__shfl_up" | "__shfl_down" | "__shfl_xor" => {
                // HIP and pre-Volta CUDA: mask-less, the whole warp (wavefront).
                let kind = match last {
                    "__shfl" => ShuffleKind::Idx,
                    "__shfl_up" => ShuffleKind::Up,
                    "__shfl_down" => ShuffleKind::Down,
                    _ => ShuffleKind::Xor,
                };
                let value = v(0);
                let lane = self.scalar_arg(&v(1), ScalarTy::I32);
                let width = vals.get(2).map(|w| self.scalar_arg(w, ScalarTy::I32));
                let ty = value.ty().strip_ref().clone();
                self.primitive(
                    PrimKind::Shuffle(kind),
                    None,
                    &[value, Value::Scalar(lane, Type::int(32, true))],
                    width,
                    Some(ty),
                    false,
                    node,
                )
            }
            "__ballot_sync" | "__any_sync" | "__all_sync" | "__uni_sync" => {
                let kind = match last {
                    "__ballot_sync" => PrimKind::Ballot,
                    "__any_sync" => PrimKind::Any,
                    "__all_sync" => PrimKind::All,
                    _ => PrimKind::Uni,
                };
                let mask = self.scalar_arg(&v(0), mask_ty);
                let pred = self.truth(v(1), node);
                let rt = if last == "__ballot_sync" {
                    Type::int(32, false)
                } else {
                    Type::int(32, true)
                };
                self.primitive(
                    kind,
                    Some(mask),
                    &[Value::Scalar(pred, Type::Bool)],
                    None,
                    Some(rt),
                    false,
                    node,
                )
            }
            "__ballot" | "__any" | "__all" => {
                let kind = match last {
                    "__ballot" => PrimKind::Ballot,
                    "__any" => PrimKind::Any,
                    _ => PrimKind::All,
                };
                let pred = self.truth(v(0), node);
                let rt = if last == "__ballot" {
                    Type::int(64, false)
                } else {
                    Type::int(32, true)
                };
                self.primitive(
                    kind,
                    None,
                    &[Value::Scalar(pred, Type::Bool)],
                    None,
                    Some(rt),
                    false,
                    node,
                )
            }
            "__activemask" => self.primitive(
                PrimKind::ActiveMask,
                None,
                &[],
                None,
                Some(Type::int(32, false)),
                false,
                node,
            ),
            "__reduce_add_sync" | "__reduce_min_sync" | "__reduce_max_sync" | "__reduce_and_sync"
            | "__reduce_or_sync" | "__reduce_xor_sync" => {
                let op = match last {
                    "__reduce_add_sync" => ReduceOp::Add,
                    "__reduce_min_sync" => ReduceOp::Min,
                    "__reduce_max_sync" => ReduceOp::Max,
                    "__reduce_and_sync" => ReduceOp::And,
                    "__reduce_or_sync" => ReduceOp::Or,
                    _ => ReduceOp::Xor,
                };
                let mask = self.scalar_arg(&v(0), mask_ty);
                let value = v(1);
                let ty = value.ty().strip_ref().clone();
                self.primitive(PrimKind::Reduce(op), Some(mask), &[value], None, Some(ty), false, node)
            }
            "__match_any_sync" | "__match_all_sync" => {
                let mask = self.scalar_arg(&v(0), mask_ty);
                let kind = if last == "__match_any_sync" {
                    PrimKind::MatchAny
                } else {
                    PrimKind::MatchAll
                };
                let r = self.primitive(kind, Some(mask), &[v(1)], None, Some(Type::int(32, false)), false, node);
                if last == "__match_all_sync" {
                    if let Some(Value::Ptr(p)) = vals.get(2) {
                        let span = self.span(node);
                        let pred = self.new_var("match_pred", ScalarTy::I32, span);
                        self.emit(
                            StmtKind::Havoc {
                                var: pred,
                                reason: "__match_all_sync predicate".into(),
                            },
                            span,
                        );
                        let place = Place::Mem(p.clone(), p.pointee.clone());
                        self.write(&place, Value::Scalar(Expr::Var(pred), Type::int(32, true)), node);
                    }
                }
                r
            }
            "__lanemask_lt" | "__lanemask_le" | "__lanemask_gt" | "__lanemask_ge" | "__lanemask_eq" => {
                let lane = self.lane();
                let one = Expr::int(1, U32);
                let bit = fold::binary(BinOp::Shl, U32, one.clone(), lane);
                let lt = fold::binary(BinOp::Sub, U32, bit.clone(), one);
                let e = match last {
                    "__lanemask_lt" => lt,
                    "__lanemask_le" => fold::binary(BinOp::BitOr, U32, lt, bit),
                    "__lanemask_eq" => bit,
                    "__lanemask_ge" => fold::unary(crate::ir::UnOp::BitNot, U32, lt),
                    _ => fold::unary(crate::ir::UnOp::BitNot, U32, fold::binary(BinOp::BitOr, U32, lt, bit)),
                };
                Value::Scalar(e, Type::int(32, false))
            }
            "__laneid" => Value::Scalar(self.lane(), Type::int(32, false)),
            // ----- memory
            a if a.starts_with("atomic") => return Some(Operand::Value(self.atomic(a, vals, node))),
            "__ldg" | "__ldca" | "__ldcg" | "__ldcs" | "__ldlu" | "__ldcv" => match v(0) {
                Value::Ptr(p) => {
                    let place = Place::Mem(p.clone(), p.pointee.clone());
                    self.read(&place, node)
                }
                _ => self.unknown_value(node, format!("`{last}` of a non-pointer")),
            },
            "__stcg" | "__stcs" | "__stwb" | "__stwt" => match v(0) {
                Value::Ptr(p) => {
                    let place = Place::Mem(p.clone(), p.pointee.clone());
                    self.write(&place, v(1), node);
                    Value::Void
                }
                _ => self.unknown_value(node, format!("`{last}` of a non-pointer")),
            },
            "memcpy" | "__builtin_memcpy" | "memset" | "__builtin_memset" => {
                // Members of types not known decay like arrays here (they are
                // the buffers being copied).
                let mut vals = vals.to_vec();
                for &i in buffers.iter().filter(|&&i| i < 2) {
                    if let Value::Mem(p, Type::Opaque(tn)) = &vals[i] {
                        self.assume(
                            node,
                            format!("`{tn}` is a buffer copied in place (its type is not known)"),
                        );
                        vals[i] = Value::Ptr(p.clone());
                    }
                }
                self.memcpy(last.contains("memcpy"), &vals, node);
                Value::Void
            }
            "__cvta_generic_to_shared" | "__cvta_shared_to_generic" | "__cvta_generic_to_global" => v(0),
            // `cuda_pipeline.h`'s primitives: `cp.async` and its waits.
            "__pipeline_memcpy_async" => {
                let size = match v(2) {
                    Value::Scalar(e, _) => e.as_int(),
                    _ => None,
                };
                // With a zero-filled tail the read is shorter: reading
                // the whole size over-approximates it.
                let traced = match size {
                    Some(size) => self.async_copy(vals.first(), vals.get(1), size, node),
                    None => false,
                };
                if !traced {
                    self.unknown(node, "`__pipeline_memcpy_async` of addresses or a size not traced");
                }
                Value::Void
            }
            "__pipeline_commit" => {
                self.emit_at(StmtKind::AsyncCommit, node);
                Value::Void
            }
            "__pipeline_wait_prior" => {
                let left = match v(0) {
                    Value::Scalar(e, _) => e.as_int().and_then(|c| u32::try_from(c).ok()),
                    _ => None,
                };
                if let Some(groups_left) = left {
                    self.emit_at(StmtKind::AsyncWait { groups_left }, node);
                }
                Value::Void
            }
            // ----- control and facts
            "printf"
            | "__threadfence"
            | "__threadfence_block"
            | "__threadfence_system"
            | "__nanosleep"
            | "__prof_trigger"
            | "cudaGridDependencySynchronize"
            | "cudaTriggerProgrammaticLaunchCompletion"
            | "__builtin_prefetch"
            | "GGML_UNUSED"
            | "GGML_UNUSED_VARS" => Value::Void,
            "assert" => {
                let c = self.truth(v(0), node);
                self.emit_at(StmtKind::Assume(c), node);
                Value::Void
            }
            "__builtin_assume" | "__assume" | "GGML_CUDA_ASSUME" => {
                let c = self.truth(v(0), node);
                self.emit_at(StmtKind::Promise(c), node);
                Value::Void
            }
            "__trap" | "__builtin_trap" | "abort" | "__builtin_unreachable" => {
                self.emit_at(StmtKind::Assume(Expr::Bool(false)), node);
                self.dead = true;
                Value::Void
            }
            "__builtin_expect" => v(0),
            "clock" | "clock64" | "__globaltimer" | "__clock" => {
                let span = self.span(node);
                let r = self.new_var(last, I64, span);
                self.emit(
                    StmtKind::Havoc {
                        var: r,
                        reason: last.into(),
                    },
                    span,
                );
                Value::Scalar(Expr::Var(r), Type::int(64, true))
            }
            "__builtin_huge_valf" | "__builtin_inff" => Value::Scalar(Expr::Float(f64::INFINITY), f32t()),
            "__builtin_nanf" | "nanf" => Value::Scalar(Expr::Float(f64::NAN), f32t()),
            // ----- integer helpers with exact semantics
            "min" | "max" | "std::min" | "std::max" | "umin" | "umax" | "llmin" | "llmax" | "ullmin" | "ullmax"
                if vals.len() == 2
                    && vals
                        .iter()
                        .all(|x| matches!(x.ty(), Type::Int { .. } | Type::Bool | Type::Enum { .. })) =>
            {
                let (Value::Scalar(a, ta), Value::Scalar(b, tb)) = (v(0), v(1)) else {
                    return None;
                };
                let ct = common_type(&ta, &tb);
                let st = ct.scalar();
                let op = if last.contains("min") { BinOp::Min } else { BinOp::Max };
                Value::Scalar(fold::binary(op, st, self.cast(st, a), self.cast(st, b)), ct)
            }
            "abs" | "llabs" | "labs" if vals.len() == 1 && matches!(v(0).ty(), Type::Int { .. }) => {
                let Value::Scalar(a, t) = v(0) else {
                    return None;
                };
                let st = t.scalar();
                let neg = fold::binary(BinOp::Lt, st, a.clone(), Expr::int(0, st));
                Value::Scalar(
                    fold::select(neg, fold::unary(crate::ir::UnOp::Neg, st, a.clone()), a),
                    t,
                )
            }
            n if n.starts_with("make_") => {
                let tname = &n["make_".len()..];
                let ty = named_scalar(tname)?;
                let items: Vec<Operand> = vals.iter().cloned().map(Operand::Value).collect();
                self.construct(&ty, items, node)
            }
            _ => {
                let rt = math_result(last, vals)?;
                // A pure function: no pointer may reach memory through it.
                if vals.iter().any(|x| matches!(x, Value::Ptr(_) | Value::Mem(..))) {
                    return Some(Operand::Value(
                        self.unknown_value(node, format!("`{last}` with a pointer argument")),
                    ));
                }
                let mut args = Vec::new();
                for x in vals {
                    Self::flatten(x, &mut args);
                }
                let op = self.op(last);
                match &rt {
                    Type::Vector(_) | Type::Class(_) => {
                        let fields = self.fields_of(&rt).unwrap_or_default();
                        let vals: Vec<Value> = fields
                            .iter()
                            .enumerate()
                            .map(|(i, (_, fty))| {
                                let mut a = args.clone();
                                a.push(Expr::int(i as i128, ScalarTy::I32));
                                Value::Scalar(Expr::Opaque(op, fty.scalar(), a), fty.clone())
                            })
                            .collect();
                        Value::Agg(rt, vals)
                    }
                    t => {
                        let folded = fold_math(last, &args);
                        Value::Scalar(folded.unwrap_or(Expr::Opaque(op, t.scalar(), args)), t.clone())
                    }
                }
            }
        };
        Some(Operand::Value(value))
    }

    fn atomic(&mut self, name: &str, vals: &[Value], node: Node<'u>) -> Value {
        let base = name
            .trim_end_matches("_block")
            .trim_end_matches("_system")
            .trim_end_matches("_sys");
        let op = match base {
            "atomicAdd" => AtomicOp::Add,
            "atomicSub" => AtomicOp::Sub,
            "atomicExch" => AtomicOp::Exch,
            "atomicMin" => AtomicOp::Min,
            "atomicMax" => AtomicOp::Max,
            "atomicInc" => AtomicOp::Inc,
            "atomicDec" => AtomicOp::Dec,
            "atomicCAS" => AtomicOp::Cas,
            "atomicAnd" => AtomicOp::And,
            "atomicOr" => AtomicOp::Or,
            "atomicXor" => AtomicOp::Xor,
            _ => return self.unknown_value(node, format!("atomic `{name}`")),
        };
        let Some(Value::Ptr(p)) = vals.first().cloned() else {
            return self.unknown_value(node, format!("`{name}` on a non-pointer"));
        };
        let Some(object) = p.object else {
            return self.unknown_value(node, format!("`{name}` through a null pointer"));
        };
        let ty = p.pointee.clone();
        let width = self.size_expr(&ty);
        let value = vals
            .get(if op == AtomicOp::Cas { 2 } else { 1 })
            .and_then(|v| v.expr().cloned());
        let span = self.span(node);
        let st = if ty.scalar() == ScalarTy::Opaque {
            ScalarTy::Opaque
        } else {
            ty.scalar()
        };
        let result = self.new_var("atomic", st, span);
        self.emit(
            StmtKind::Access(Access {
                object,
                kind: AccessKind::Atomic(op),
                offset: p.offset,
                width,
                value,
                result: Some(result),
                ranges: Vec::new(),
                collective: false,
                asynchronous: false,
                lingering: false,
                exchange: false,
            }),
            span,
        );
        Value::Scalar(Expr::Var(result), ty)
    }

    /// `memcpy(dst, src, n)` / `memset(dst, v, n)`: byte ranges.
    fn memcpy(&mut self, copy: bool, vals: &[Value], node: Node<'u>) {
        let n = match vals.get(2) {
            Some(Value::Scalar(e, _)) => self.cast(ScalarTy::U64, e.clone()),
            _ => {
                self.unknown(node, "memcpy of an unknown size");
                return;
            }
        };
        let span = self.span(node);
        if copy {
            if let Some(Value::Ptr(src)) = vals.get(1) {
                match src.object {
                    Some(object) => {
                        let r = self.new_var("memcpy", ScalarTy::Opaque, span);
                        self.emit(
                            StmtKind::Access(Access {
                                object,
                                kind: AccessKind::Read,
                                offset: src.offset.clone(),
                                width: n.clone(),
                                value: None,
                                result: Some(r),
                                ranges: Vec::new(),
                                collective: false,
                                asynchronous: false,
                                lingering: false,
                                exchange: false,
                            }),
                            span,
                        );
                    }
                    None => self.unknown(node, "memcpy from an unknown pointer"),
                }
            }
        }
        match vals.first() {
            Some(Value::Ptr(dst)) if dst.object.is_some() => {
                self.emit(
                    StmtKind::Access(Access {
                        object: dst.object.expect("checked"),
                        kind: AccessKind::Write,
                        offset: dst.offset.clone(),
                        width: n,
                        value: None,
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
            _ => self.unknown(node, "memcpy to an unknown pointer"),
        }
    }

    // ----- cooperative groups, wmma, CUB ------------------------------------------------

    fn lib_value(name: &str, args: Vec<TArg>, fields: Vec<Value>) -> Value {
        Value::Agg(
            Type::Lib(Rc::new(LibTy {
                name: name.into(),
                args,
            })),
            fields,
        )
    }

    /// Free functions of cooperative groups and wmma.
    fn library_call(
        &mut self,
        name: &str,
        last: &str,
        explicit: &[TArg],
        ops: &[Operand],
        node: Node<'u>,
    ) -> Option<Operand> {
        let in_cg = name.contains("cooperative_groups") || name.starts_with("cg::") || !name.contains("::");
        let in_wmma = name.contains("wmma") || !name.contains("::");
        let value = match last {
            "this_thread_block" if in_cg => Self::lib_value("cooperative_groups::thread_block", vec![], vec![]),
            "this_grid" if in_cg => Self::lib_value("cooperative_groups::grid_group", vec![], vec![]),
            "this_thread" if in_cg => Self::lib_value(
                "cooperative_groups::thread_block_tile",
                vec![TArg::Value(CVal::Int(1, U32))],
                vec![],
            ),
            "tiled_partition" if in_cg => {
                let size = match explicit.first() {
                    Some(TArg::Value(CVal::Int(n, _))) => *n,
                    _ => match ops.get(1).cloned().map(|o| self.operand_value(o, node)) {
                        Some(Value::Scalar(Expr::Int(n, _), _)) => n,
                        _ => {
                            return Some(Operand::Value(
                                self.unknown_value(node, "tiled_partition of a size not known"),
                            ))
                        }
                    },
                };
                Self::lib_value(
                    "cooperative_groups::thread_block_tile",
                    vec![TArg::Value(CVal::Int(size, U32))],
                    vec![],
                )
            }
            "coalesced_threads" if in_cg => {
                let m = self.primitive(
                    PrimKind::ActiveMask,
                    None,
                    &[],
                    None,
                    Some(Type::int(32, false)),
                    false,
                    node,
                );
                Self::lib_value("cooperative_groups::coalesced_group", vec![], vec![m])
            }
            "sync" if in_cg && name.contains("::") => {
                let group = ops.first().cloned().map(|o| self.operand_value(o, node));
                return Some(Operand::Value(match group {
                    Some(g) => self.group_method(&g, "sync", &[], node),
                    None => Value::Void,
                }));
            }
            "reduce" if in_cg && name.contains("::") => {
                let group = ops
                    .first()
                    .cloned()
                    .map(|o| self.operand_value(o, node))
                    .unwrap_or(Value::Void);
                let value = ops
                    .get(1)
                    .cloned()
                    .map(|o| self.operand_value(o, node))
                    .unwrap_or(Value::Void);
                let op_ty = ops.get(2).map(|o| o.ty()).unwrap_or(Type::Void);
                let op = match op_ty.display().rsplit("::").next().unwrap_or("") {
                    s if s.starts_with("greater") => ReduceOp::Max,
                    s if s.starts_with("less") => ReduceOp::Min,
                    s if s.starts_with("bit_and") => ReduceOp::And,
                    s if s.starts_with("bit_or") => ReduceOp::Or,
                    s if s.starts_with("bit_xor") => ReduceOp::Xor,
                    _ => ReduceOp::Add,
                };
                let (mask, width) = self.group_shape(&group);
                let ty = value.ty();
                return Some(Operand::Value(self.primitive(
                    PrimKind::Reduce(op),
                    mask,
                    &[value],
                    width,
                    Some(ty),
                    false,
                    node,
                )));
            }
            "fill_fragment" if in_wmma => Value::Void,
            "load_matrix_sync" | "store_matrix_sync" if in_wmma => {
                return Some(Operand::Value(self.wmma_memory(last == "store_matrix_sync", ops, node)));
            }
            "mma_sync" if in_wmma && name.contains("wmma") => {
                let vals: Vec<Value> = ops
                    .iter()
                    .skip(1)
                    .cloned()
                    .map(|o| self.operand_value(o, node))
                    .collect();
                self.primitive(
                    PrimKind::Matrix("wmma::mma_sync".into()),
                    None,
                    &vals,
                    None,
                    None,
                    false,
                    node,
                )
            }
            _ => return None,
        };
        Some(Operand::Value(value))
    }

    /// The member mask and width of a group's collectives.
    fn group_shape(&mut self, group: &Value) -> (Option<Expr>, Option<Expr>) {
        match group.ty() {
            Type::Lib(lib) if lib.name.ends_with("thread_block_tile") => {
                let size = match lib.args.first() {
                    Some(TArg::Value(CVal::Int(n, _))) => *n,
                    _ => 32,
                };
                if size >= self.config.warp_size as i128 {
                    (Some(Expr::int(0xffff_ffff, U32)), None)
                } else {
                    (None, Some(Expr::int(size, ScalarTy::I32)))
                }
            }
            Type::Lib(lib) if lib.name.ends_with("coalesced_group") => match group {
                Value::Agg(_, fields) => (fields.first().and_then(|f| f.expr().cloned()), None),
                _ => (None, None),
            },
            _ => (None, None),
        }
    }

    /// A member function of a library object (`block.sync()`, `tile.shfl_xor(v, 1)`,
    /// `BlockScan(temp).InclusiveSum(x, y)`).
    pub(super) fn library_method(
        &mut self,
        object: &Place,
        method: &str,
        ops: Vec<Operand>,
        node: Node<'u>,
    ) -> Operand {
        let obj = self.read(object, node);
        let vals: Vec<Value> = ops.iter().cloned().map(|o| self.operand_value(o, node)).collect();
        let lib_name = match obj.ty() {
            Type::Lib(l) => l.name.clone(),
            _ => String::new(),
        };
        if lib_name.contains("BlockScan") || lib_name.contains("BlockReduce") {
            return Operand::Value(self.cub_block_collective(&obj, &lib_name, method, &ops, node));
        }
        if lib_name.contains("BlockLoad") || lib_name.contains("BlockStore") {
            return Operand::Value(self.cub_load_store(&obj, method, &vals, node));
        }
        Operand::Value(self.group_method(&obj, method, &vals, node))
    }

    fn group_method(&mut self, group: &Value, method: &str, vals: &[Value], node: Node<'u>) -> Value {
        let lib = match group.ty() {
            Type::Lib(l) => l,
            _ => return self.unknown_value(node, format!("method `{method}` of an unknown object")),
        };
        let kind = lib.name.rsplit("::").next().unwrap_or("").to_string();
        let u32t = Type::int(32, false);
        match (kind.as_str(), method) {
            ("thread_block", "sync") => {
                self.emit_at(
                    StmtKind::Barrier(Barrier {
                        scope: BarrierScope::Block,
                        predicate: None,
                        name: "cooperative_groups::thread_block::sync".into(),
                    }),
                    node,
                );
                Value::Void
            }
            ("grid_group", "sync") => {
                self.emit_at(
                    StmtKind::Barrier(Barrier {
                        scope: BarrierScope::Grid,
                        predicate: None,
                        name: "cooperative_groups::grid_group::sync".into(),
                    }),
                    node,
                );
                Value::Void
            }
            ("thread_block", "thread_rank") => Value::Scalar(self.linear_tid(), u32t),
            ("thread_block", "size" | "num_threads") => {
                let b = |d| Expr::Builtin(Builtin::BlockDim(d));
                let e = fold::binary(
                    BinOp::Mul,
                    U32,
                    fold::binary(BinOp::Mul, U32, b(Dim::X), b(Dim::Y)),
                    b(Dim::Z),
                );
                Value::Scalar(e, u32t)
            }
            ("thread_block", "group_index") => self.builtin_dim3(Builtin::BlockIdx),
            ("thread_block", "thread_index") => self.builtin_dim3(Builtin::ThreadIdx),
            ("thread_block", "dim_threads" | "group_dim") => self.builtin_dim3(Builtin::BlockDim),
            ("grid_group", "thread_rank") => {
                let b = |x| Expr::Builtin(x);
                let block_linear = fold::binary(
                    BinOp::Add,
                    ScalarTy::U64,
                    self.cast(ScalarTy::U64, b(Builtin::BlockIdx(Dim::X))),
                    fold::binary(
                        BinOp::Mul,
                        ScalarTy::U64,
                        self.cast(ScalarTy::U64, b(Builtin::BlockIdx(Dim::Y))),
                        self.cast(ScalarTy::U64, b(Builtin::GridDim(Dim::X))),
                    ),
                );
                let per_block = fold::binary(
                    BinOp::Mul,
                    ScalarTy::U64,
                    self.cast(ScalarTy::U64, b(Builtin::BlockDim(Dim::X))),
                    self.cast(ScalarTy::U64, b(Builtin::BlockDim(Dim::Y))),
                );
                let e = fold::binary(
                    BinOp::Add,
                    ScalarTy::U64,
                    fold::binary(BinOp::Mul, ScalarTy::U64, block_linear, per_block),
                    self.cast(ScalarTy::U64, self.linear_tid()),
                );
                Value::Scalar(e, Type::int(64, false))
            }
            ("grid_group", "is_valid") => {
                let op = self.op("cooperative launch");
                Value::Scalar(Expr::Opaque(op, ScalarTy::Bool, vec![]), Type::Bool)
            }
            ("thread_block_tile" | "coalesced_group", m) => {
                let size = match lib.args.first() {
                    Some(TArg::Value(CVal::Int(n, _))) => Expr::int(*n, U32),
                    _ => Expr::Builtin(Builtin::WarpSize),
                };
                let (mask, width) = self.group_shape(group);
                let v = |i: usize| vals.get(i).cloned().unwrap_or(Value::Void);
                match m {
                    "sync" => self.primitive(PrimKind::SyncWarp, mask, &[], width, None, false, node),
                    "thread_rank" => Value::Scalar(fold::binary(BinOp::Rem, U32, self.linear_tid(), size), u32t),
                    "meta_group_rank" => Value::Scalar(fold::binary(BinOp::Div, U32, self.linear_tid(), size), u32t),
                    "size" | "num_threads" => Value::Scalar(size, u32t),
                    "shfl" | "shfl_up" | "shfl_down" | "shfl_xor" => {
                        let kind = match m {
                            "shfl" => ShuffleKind::Idx,
                            "shfl_up" => ShuffleKind::Up,
                            "shfl_down" => ShuffleKind::Down,
                            _ => ShuffleKind::Xor,
                        };
                        let value = v(0);
                        let lane = self.scalar_arg(&v(1), ScalarTy::I32);
                        let ty = value.ty();
                        self.primitive(
                            PrimKind::Shuffle(kind),
                            mask,
                            &[value, Value::Scalar(lane, Type::int(32, true))],
                            width,
                            Some(ty),
                            false,
                            node,
                        )
                    }
                    "any" | "all" | "ballot" => {
                        let kind = match m {
                            "any" => PrimKind::Any,
                            "all" => PrimKind::All,
                            _ => PrimKind::Ballot,
                        };
                        let pred = self.truth(v(0), node);
                        self.primitive(
                            kind,
                            mask,
                            &[Value::Scalar(pred, Type::Bool)],
                            width,
                            Some(Type::int(32, false)),
                            false,
                            node,
                        )
                    }
                    "match_any" | "match_all" => {
                        let kind = if m == "match_any" {
                            PrimKind::MatchAny
                        } else {
                            PrimKind::MatchAll
                        };
                        self.primitive(kind, mask, &[v(0)], width, Some(Type::int(32, false)), false, node)
                    }
                    _ => self.unknown_value(node, format!("cooperative-groups method `{m}`")),
                }
            }
            _ => self.unknown_value(node, format!("method `{method}` of `{}`", lib.name)),
        }
    }

    fn builtin_dim3(&self, f: fn(Dim) -> Builtin) -> Value {
        Value::Agg(
            named_scalar("dim3").expect("dim3 is a vector type"),
            Dim::ALL
                .iter()
                .map(|&d| Value::Scalar(Expr::Builtin(f(d)), Type::int(32, false)))
                .collect(),
        )
    }

    /// A CUB block collective on its temp storage: every thread writes the
    /// storage, the block synchronises (CUB's internal barrier), every thread
    /// reads it. Reusing the storage without a barrier therefore races.
    fn cub_block_collective(&mut self, obj: &Value, lib: &str, method: &str, ops: &[Operand], node: Node<'u>) -> Value {
        let temp = match obj {
            Value::Agg(_, fields) => fields.first().cloned(),
            _ => None,
        };
        let Some(Value::Ptr(temp)) = temp.map(|t| match t {
            Value::Mem(p, _) => Value::Ptr(p),
            other => other,
        }) else {
            return self.unknown_value(node, format!("`{lib}` without its temp storage"));
        };
        let known = matches!(
            method,
            "InclusiveSum" | "ExclusiveSum" | "InclusiveScan" | "ExclusiveScan" | "Sum" | "Reduce"
        );
        if !known {
            return self.unknown_value(node, format!("`{lib}::{method}` is not modelled"));
        }
        let Some(object) = temp.object else {
            return self.unknown_value(node, "CUB temp storage of unknown location");
        };
        let width = self.size_expr(&temp.pointee);
        let span = self.span(node);
        let in_val = ops
            .first()
            .cloned()
            .map(|o| self.operand_value(o, node))
            .unwrap_or(Value::Void);
        let mut args = Vec::new();
        Self::flatten(&in_val, &mut args);
        self.emit(
            StmtKind::Access(Access {
                object,
                kind: AccessKind::Atomic(AtomicOp::Collective),
                offset: temp.offset.clone(),
                width: width.clone(),
                value: None,
                result: None,
                ranges: Vec::new(),
                collective: true,
                asynchronous: false,
                lingering: false,
                exchange: false,
            }),
            span,
        );
        let name = format!("cub::{}::{method}", lib.rsplit("::").next().unwrap_or(lib));
        self.emit(
            StmtKind::Barrier(Barrier {
                scope: BarrierScope::Block,
                predicate: None,
                name: name.clone(),
            }),
            span,
        );
        let r = self.new_var("cub", ScalarTy::Opaque, span);
        self.emit(
            StmtKind::Access(Access {
                object,
                kind: AccessKind::Read,
                offset: temp.offset,
                width,
                value: None,
                result: Some(r),
                ranges: Vec::new(),
                collective: true,
                asynchronous: false,
                lingering: false,
                exchange: false,
            }),
            span,
        );
        // Outputs: the reference arguments after the input get per-thread results.
        let ty = in_val.ty();
        for op in ops.iter().skip(1) {
            if let Operand::Place(p) = op {
                if matches!(p.ty().strip_ref(), Type::Closure(_) | Type::Lib(_)) {
                    continue;
                }
                let opid = self.op(&name);
                let pty = p.ty();
                let v = Value::Scalar(Expr::Opaque(opid, pty.scalar(), vec![Expr::Var(r)]), pty);
                self.write(p, v, node);
            }
        }
        if method == "Sum" || method == "Reduce" {
            let opid = self.op(&name);
            return Value::Scalar(Expr::Opaque(opid, ty.scalar(), vec![Expr::Var(r)]), ty);
        }
        Value::Void
    }

    /// `cub::BlockLoad<T, THREADS, ITEMS, ALGO>(temp).Load(src, items)` and
    /// `BlockStore(…).Store(dst, items)`: every thread calls it; each thread's
    /// footprint in global memory is taken as the whole `THREADS × ITEMS`
    /// tile (a sound over-approximation of its share); the transposing
    /// algorithms exchange through the temp storage, synchronised within
    /// warps (`*_WARP_TRANSPOSE`) or the block (`*_TRANSPOSE`).
    fn cub_load_store(&mut self, obj: &Value, method: &str, vals: &[Value], node: Node<'u>) -> Value {
        let (lib, fields) = match obj {
            Value::Agg(Type::Lib(l), f) => (l.clone(), f.clone()),
            _ => return self.unknown_value(node, "CUB load/store object not modelled"),
        };
        let loading = match method {
            "Load" => true,
            "Store" => false,
            other => return self.unknown_value(node, format!("`{}::{other}` is not modelled", lib.name)),
        };
        let int = |i: usize| match lib.args.get(i) {
            Some(TArg::Value(CVal::Int(n, _))) => Some(*n),
            _ => None,
        };
        let elem = match lib.args.first() {
            Some(TArg::Type(t)) => t.clone(),
            _ => return self.unknown_value(node, format!("`{}` of an unknown element type", lib.name)),
        };
        let (Some(threads), Some(items)) = (int(1), int(2)) else {
            return self.unknown_value(node, format!("`{}` of an unknown tile size", lib.name));
        };
        let algorithm = lib.args.get(3).map(TArg::display).unwrap_or_default();
        let Some(Value::Ptr(buffer)) = vals.first().cloned() else {
            return self.unknown_value(node, format!("`{}::{method}` on a non-pointer", lib.name));
        };
        let Some(object) = buffer.object else {
            return self.unknown_value(node, format!("`{}::{method}` through an unknown pointer", lib.name));
        };
        let span = self.span(node);
        let name = format!("cub::{}::{method}", lib.name.rsplit("::").next().unwrap_or(&lib.name));
        self.primitive(PrimKind::Library(name.clone()), None, &[], None, None, true, node);
        let esize = self.size_expr(&elem);
        let tile = |l: &mut Self, kind: AccessKind| {
            let r = l.new_var("item", ScalarTy::I64, span);
            let offset = fold::binary(
                BinOp::Add,
                I64,
                buffer.offset.clone(),
                fold::binary(BinOp::Mul, I64, Expr::Var(r), l.cast(I64, esize.clone())),
            );
            let result = if kind == AccessKind::Read {
                Some(l.new_var("cub_item", ScalarTy::Opaque, span))
            } else {
                None
            };
            l.emit(
                StmtKind::Access(Access {
                    object,
                    kind,
                    offset,
                    width: esize.clone(),
                    value: None,
                    result,
                    ranges: vec![RangeVar {
                        var: r,
                        lo: Expr::int(0, I64),
                        hi: Expr::int(threads * items, I64),
                    }],
                    collective: false,
                    asynchronous: false,
                    lingering: false,
                    exchange: false,
                }),
                span,
            );
        };
        if loading {
            tile(self, AccessKind::Read);
        }
        if algorithm.contains("TRANSPOSE") {
            let temp = match fields.first() {
                Some(Value::Mem(p, _)) | Some(Value::Ptr(p)) => Some(p.clone()),
                _ => None,
            };
            let Some(temp) = temp.filter(|t| t.object.is_some()) else {
                return self.unknown_value(node, format!("`{name}` without its temp storage"));
            };
            let width = self.size_expr(&temp.pointee);
            let temp_object = temp.object.expect("checked");
            // Each warp exchanges through its own share of the storage.
            let warp_exchange = algorithm.contains("WARP_TRANSPOSE");
            self.emit(
                StmtKind::Access(Access {
                    object: temp_object,
                    kind: AccessKind::Write,
                    offset: temp.offset.clone(),
                    width: width.clone(),
                    value: None,
                    result: None,
                    ranges: Vec::new(),
                    collective: true,
                    asynchronous: false,
                    lingering: false,
                    exchange: warp_exchange,
                }),
                span,
            );
            if warp_exchange {
                self.primitive(
                    PrimKind::SyncWarp,
                    Some(Expr::int(0xffff_ffff, U32)),
                    &[],
                    None,
                    None,
                    false,
                    node,
                );
            } else {
                self.emit(
                    StmtKind::Barrier(Barrier {
                        scope: BarrierScope::Block,
                        predicate: None,
                        name: name.clone(),
                    }),
                    span,
                );
            }
            let r = self.new_var("cub_exchange", ScalarTy::Opaque, span);
            self.emit(
                StmtKind::Access(Access {
                    object: temp_object,
                    kind: AccessKind::Read,
                    offset: temp.offset,
                    width,
                    value: None,
                    result: Some(r),
                    ranges: Vec::new(),
                    collective: true,
                    asynchronous: false,
                    lingering: false,
                    exchange: warp_exchange,
                }),
                span,
            );
        }
        if !loading {
            tile(self, AccessKind::Write);
        }
        Value::Void
    }

    /// `wmma::load_matrix_sync(frag, ptr, ldm)` / `store_matrix_sync(ptr, frag, ldm, layout)`:
    /// the warp reads or writes the whole tile.
    fn wmma_memory(&mut self, store: bool, ops: &[Operand], node: Node<'u>) -> Value {
        let (frag_op, ptr_op) = if store {
            (ops.get(1), ops.first())
        } else {
            (ops.first(), ops.get(1))
        };
        let frag_ty = frag_op.map(|o| o.ty()).unwrap_or(Type::Void);
        let ptr = ptr_op.cloned().map(|o| self.operand_value(o, node));
        let ldm = ops.get(2).cloned().map(|o| self.operand_value(o, node));
        let Some(Value::Ptr(ptr)) = ptr else {
            return self.unknown_value(node, "wmma access through a non-pointer");
        };
        let Some(object) = ptr.object else {
            return self.unknown_value(node, "wmma access through an unknown pointer");
        };
        // fragment<use, M, N, K, T[, layout]>: rows × cols of the tile.
        let (rows, cols) = match frag_ty.strip_ref() {
            Type::Lib(lib) => {
                let int = |i: usize| match lib.args.get(i) {
                    Some(TArg::Value(CVal::Int(n, _))) => Some(*n),
                    _ => None,
                };
                let role = lib.args.first().map(|a| a.display()).unwrap_or_default();
                match (int(1), int(2), int(3)) {
                    (Some(m), Some(n), Some(k)) => {
                        if role.contains("matrix_a") {
                            (m, k)
                        } else if role.contains("matrix_b") {
                            (k, n)
                        } else {
                            (m, n)
                        }
                    }
                    _ => return self.unknown_value(node, "wmma fragment of unknown shape"),
                }
            }
            _ => return self.unknown_value(node, "wmma fragment of unknown type"),
        };
        let Some(Value::Scalar(ldm, _)) = ldm else {
            return self.unknown_value(node, "wmma leading dimension not known");
        };
        let span = self.span(node);
        let r = self.new_var("row", ScalarTy::I64, span);
        let c = self.new_var("col", ScalarTy::I64, span);
        let elem = ptr.pointee.clone();
        let esize = self.size_expr(&elem);
        // The layout is row- or column-major; cover both so the footprint is sound.
        let idx = fold::binary(
            BinOp::Add,
            I64,
            fold::binary(BinOp::Mul, I64, Expr::Var(r), self.cast(I64, ldm)),
            Expr::Var(c),
        );
        let offset = fold::binary(
            BinOp::Add,
            I64,
            ptr.offset,
            fold::binary(BinOp::Mul, I64, idx, self.cast(I64, esize.clone())),
        );
        let extent = rows.max(cols);
        let ranges = vec![
            RangeVar {
                var: r,
                lo: Expr::int(0, I64),
                hi: Expr::int(extent, I64),
            },
            RangeVar {
                var: c,
                lo: Expr::int(0, I64),
                hi: Expr::int(extent, I64),
            },
        ];
        let name = if store {
            "wmma::store_matrix_sync"
        } else {
            "wmma::load_matrix_sync"
        };
        self.primitive(PrimKind::Matrix(name.into()), None, &[], None, None, false, node);
        let result = if store {
            None
        } else {
            Some(self.new_var("frag", ScalarTy::Opaque, span))
        };
        self.emit(
            StmtKind::Access(Access {
                object,
                kind: if store { AccessKind::Write } else { AccessKind::Read },
                offset,
                width: esize,
                value: None,
                result,
                ranges,
                collective: true,
                asynchronous: false,
                lingering: false,
                exchange: false,
            }),
            span,
        );
        Value::Void
    }

    // ----- inline assembly ------------------------------------------------------------

    /// Inline PTX: `mma`, `ldmatrix`, `movmatrix` are warp collectives
    /// (`ldmatrix` reads 16 bytes at each lane's address); `cp.async` copies
    /// global to shared memory; register-only instructions compute opaque
    /// values. Anything else that may touch memory is unknown.
    pub(super) fn inline_asm(&mut self, node: Node<'u>) {
        let code: String = node
            .field("assembly_code")
            .map(|c| asm_text(self.text(c)))
            .unwrap_or_default();
        let outputs: Vec<Node> = node
            .field("output_operands")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.kind_name() == "gnu_asm_output_operand")
            .collect();
        let inputs: Vec<Node> = node
            .field("input_operands")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.kind_name() == "gnu_asm_input_operand")
            .collect();
        let clobbers_memory = node
            .field("clobbers")
            .is_some_and(|c| syntax::text(self.frag(), c).contains("memory"));
        let input_vals: Vec<Value> = inputs
            .iter()
            .map(|i| match i.field("value") {
                Some(v) => self.expr(v),
                None => Value::Void,
            })
            .collect();
        let instr = code.trim().to_string();
        let first_word = instr.split_whitespace().next().unwrap_or("").to_string();
        let mut args = Vec::new();
        for v in &input_vals {
            Self::flatten(v, &mut args);
        }
        let n_outputs = outputs.len();
        // Operand numbering: outputs first, then inputs.
        let input_at = |k: usize| -> Option<&Value> { k.checked_sub(n_outputs).and_then(|i| input_vals.get(i)) };
        let memory_operands = memory_operand_indices(&instr);
        // `bar.sync 0;` (or `barrier.sync[.aligned] 0`) without a thread
        // count: barrier 0 for the whole block, what `__syncthreads()`
        // compiles to. Other named barriers and counts stay unknown.
        let words: Vec<&str> = instr.trim_end_matches(';').split_whitespace().collect();
        if let ["bar.sync" | "barrier.sync" | "bar.sync.aligned" | "barrier.sync.aligned", "0"] = words.as_slice() {
            self.emit_at(
                StmtKind::Barrier(Barrier {
                    scope: BarrierScope::Block,
                    predicate: None,
                    name: instr.trim_end_matches(';').to_string(),
                }),
                node,
            );
            return;
        }
        if first_word.starts_with("mma.sync") || first_word.starts_with("movmatrix") || first_word.starts_with("wgmma")
        {
            let span = self.span(node);
            let results: Vec<VarId> = (0..n_outputs)
                .map(|i| self.new_var(&format!("mma{i}"), ScalarTy::Opaque, span))
                .collect();
            self.emit(
                StmtKind::Primitive(Primitive {
                    kind: PrimKind::Matrix(first_word.clone()),
                    mask: None,
                    args: args.clone(),
                    width: None,
                    results: results.clone(),
                    block_scope: false,
                }),
                span,
            );
            self.asm_outputs(&outputs, &results, node);
            return;
        }
        if first_word.starts_with("ldmatrix") {
            let span = self.span(node);
            let results: Vec<VarId> = (0..n_outputs)
                .map(|i| self.new_var(&format!("ldm{i}"), ScalarTy::Opaque, span))
                .collect();
            self.emit(
                StmtKind::Primitive(Primitive {
                    kind: PrimKind::Matrix(first_word.clone()),
                    mask: None,
                    args: args.clone(),
                    width: None,
                    results: results.clone(),
                    block_scope: false,
                }),
                span,
            );
            match memory_operands.first().and_then(|&k| input_at(k)) {
                Some(Value::Ptr(p)) if p.object.is_some() => {
                    let r = self.new_var("ldmatrix", ScalarTy::Opaque, span);
                    self.emit(
                        StmtKind::Access(Access {
                            object: p.object.expect("checked"),
                            kind: AccessKind::Read,
                            offset: p.offset.clone(),
                            width: Expr::int(16, ScalarTy::U64),
                            value: None,
                            result: Some(r),
                            ranges: Vec::new(),
                            collective: true,
                            asynchronous: false,
                            lingering: false,
                            exchange: false,
                        }),
                        span,
                    );
                }
                _ => self.unknown(node, "ldmatrix address not traced"),
            }
            self.asm_outputs(&outputs, &results, node);
            return;
        }
        if first_word.starts_with("cp.async.wait") || first_word.starts_with("cp.async.commit") {
            // Completion of a thread's own copies (no ordering between
            // threads), by commit groups. A group count given as an
            // operand (`"n"(N)`) is its constant; one not known completes
            // nothing (the copies stay in flight: sound).
            let operand = instr.split_whitespace().nth(1).map(|n| n.trim_end_matches(';').trim());
            let groups_left = operand.and_then(|n| match n.strip_prefix('%') {
                Some(k) => match k.parse::<usize>().ok().and_then(input_at) {
                    Some(Value::Scalar(e, _)) => e.as_int().and_then(|c| u32::try_from(c).ok()),
                    _ => None,
                },
                None => n.parse::<u32>().ok(),
            });
            if first_word.starts_with("cp.async.commit") {
                self.emit_at(StmtKind::AsyncCommit, node);
            } else if first_word.starts_with("cp.async.wait_all") {
                self.emit_at(StmtKind::AsyncCommit, node);
                self.emit_at(StmtKind::AsyncWait { groups_left: 0 }, node);
            } else if let (true, Some(groups_left)) = (first_word.starts_with("cp.async.wait_group"), groups_left) {
                self.emit_at(StmtKind::AsyncWait { groups_left }, node);
            }
            return;
        }
        if first_word.starts_with("cp.async") {
            let size = instr
                .rsplit(',')
                .next()
                .and_then(|s| s.trim().trim_end_matches(';').trim().parse::<i128>().ok());
            let (Some(size), [dst_k, src_k, ..]) = (size, memory_operands.as_slice()) else {
                self.unknown(node, format!("`{first_word}` not understood"));
                return;
            };
            let (dst, src) = (input_at(*dst_k).cloned(), input_at(*src_k).cloned());
            if !self.async_copy(dst.as_ref(), src.as_ref(), size, node) {
                self.unknown(node, "cp.async addresses not traced");
            }
            return;
        }
        if !memory_operands.is_empty()
            || clobbers_memory
            || instr.contains("bar.")
            || instr.contains("shfl")
            || instr.contains("vote")
        {
            let short: String = instr.chars().take(48).collect();
            self.unknown(
                node,
                format!("inline assembly that may touch memory or synchronise: `{short}`"),
            );
            return;
        }
        // Register-only: outputs are opaque functions of the inputs.
        let span = self.span(node);
        let op = self.op(&format!("asm {first_word}"));
        let results: Vec<VarId> = (0..n_outputs)
            .map(|i| {
                let v = self.new_var(&format!("asm{i}"), ScalarTy::Opaque, span);
                let mut a = args.clone();
                a.push(Expr::int(i as i128, ScalarTy::I32));
                self.emit(
                    StmtKind::Assign {
                        var: v,
                        value: Expr::Opaque(op, ScalarTy::Opaque, a),
                    },
                    span,
                );
                v
            })
            .collect();
        self.asm_outputs(&outputs, &results, node);
    }

    /// An asynchronous copy of `size` bytes (`cp.async`,
    /// `__pipeline_memcpy_async`): its read and write, marked as in flight
    /// until the thread's next wait (see `async_copy`). `false` when either
    /// address is not traced to a buffer.
    fn async_copy(&mut self, dst: Option<&Value>, src: Option<&Value>, size: i128, node: Node<'u>) -> bool {
        let (Some(Value::Ptr(d)), Some(Value::Ptr(s))) = (dst, src) else {
            return false;
        };
        let (Some(d_object), Some(s_object)) = (d.object, s.object) else {
            return false;
        };
        let span = self.span(node);
        let r = self.new_var("cp_async", ScalarTy::Opaque, span);
        self.emit(
            StmtKind::Access(Access {
                object: s_object,
                kind: AccessKind::Read,
                offset: s.offset.clone(),
                width: Expr::int(size, ScalarTy::U64),
                value: None,
                result: Some(r),
                ranges: Vec::new(),
                collective: false,
                asynchronous: true,
                lingering: false,
                exchange: false,
            }),
            span,
        );
        self.emit(
            StmtKind::Access(Access {
                object: d_object,
                kind: AccessKind::Write,
                offset: d.offset.clone(),
                width: Expr::int(size, ScalarTy::U64),
                value: Some(Expr::Var(r)),
                result: None,
                ranges: Vec::new(),
                collective: false,
                asynchronous: true,
                lingering: false,
                exchange: false,
            }),
            span,
        );
        true
    }

    /// Writes asm results to the output operands' places.
    fn asm_outputs(&mut self, outputs: &[Node<'u>], results: &[VarId], node: Node<'u>) {
        for (o, r) in outputs.iter().zip(results) {
            let Some(v) = o.field("value") else { continue };
            let place = self.place(v);
            let ty = place.ty();
            let value = Value::Scalar(Expr::Var(*r), ty.clone());
            let value = self.convert(value, &ty, node);
            self.write(&place, value, node);
        }
    }
}

/// The text of an asm template (string literals joined, escapes undone).
fn asm_text(code: &str) -> String {
    let mut out = String::new();
    let mut in_str = false;
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => in_str = !in_str,
            '\\' if in_str => {
                if let Some(n) = chars.next() {
                    out.push(match n {
                        'n' | 't' => ' ',
                        other => other,
                    });
                }
            }
            c if in_str => out.push(c),
            _ => {}
        }
    }
    out
}

/// Operand numbers used as addresses (`[%2]`) in an asm template.
fn memory_operand_indices(code: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'[' {
            let end = code[i..].find(']').map(|e| i + e).unwrap_or(bytes.len());
            let inner = &code[i + 1..end];
            if let Some(num) = inner.trim().strip_prefix('%') {
                let digits: String = num.chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(n) = digits.parse() {
                    out.push(n);
                }
            }
            i = end;
        }
        i += 1;
    }
    out
}

/// Result types of pure intrinsics and math functions; `None` when `name` is
/// not a function we know.
fn math_result(name: &str, args: &[Value]) -> Option<Type> {
    let first = args.first().map(|a| a.ty().strip_ref().clone());
    let f32 = f32t();
    let half = Type::Float(FloatKind::Half);
    let bf16 = Type::Float(FloatKind::BFloat16);
    let vec = |n: &str| named_scalar(n);
    Some(match name {
        "expf"
        | "exp2f"
        | "exp10f"
        | "logf"
        | "log2f"
        | "log10f"
        | "log1pf"
        | "expm1f"
        | "sqrtf"
        | "rsqrtf"
        | "cbrtf"
        | "fabsf"
        | "fmaxf"
        | "fminf"
        | "powf"
        | "tanhf"
        | "sinhf"
        | "coshf"
        | "erff"
        | "erfcf"
        | "sinf"
        | "cosf"
        | "tanf"
        | "asinf"
        | "acosf"
        | "atanf"
        | "atan2f"
        | "floorf"
        | "ceilf"
        | "roundf"
        | "truncf"
        | "rintf"
        | "nearbyintf"
        | "fmaf"
        | "fmodf"
        | "remainderf"
        | "copysignf"
        | "hypotf"
        | "ldexpf"
        | "scalbnf"
        | "__expf"
        | "__exp10f"
        | "__logf"
        | "__log2f"
        | "__log10f"
        | "__powf"
        | "__sinf"
        | "__cosf"
        | "__tanf"
        | "__fdividef"
        | "__frcp_rn"
        | "__fsqrt_rn"
        | "__fmaf_rn"
        | "__fadd_rn"
        | "__fmul_rn"
        | "__fsub_rn"
        | "__fdiv_rn"
        | "__saturatef"
        | "__int2float_rn"
        | "__uint2float_rn"
        | "__ll2float_rn"
        | "__int_as_float"
        | "__uint_as_float"
        | "__half2float"
        | "__low2float"
        | "__high2float"
        | "__bfloat162float"
        | "__internal_float_as_int"
        | "normf"
        | "rnormf"
        | "__fmul_rz"
        | "__frsqrt_rn"
        | "lgammaf"
        | "tgammaf"
        | "fdimf"
        | "__fmaf_rz"
        | "__float_simpl_sinf" => f32,
        "exp" | "log" | "sqrt" | "pow" | "tanh" | "fabs" | "floor" | "ceil" | "fmax" | "fmin" | "erf" | "sin"
        | "cos" | "round" | "trunc" | "exp2" | "log2" | "rsqrt" | "fma" => match first {
            Some(t @ Type::Float(_)) => t,
            _ => Type::Float(FloatKind::F64),
        },
        "max" | "min" | "abs" | "std::abs" => match (args.first(), args.get(1)) {
            (Some(a), Some(b)) => common_type(&a.ty(), &b.ty()),
            (Some(a), None) => a.ty(),
            _ => f32,
        },
        "isnan" | "isinf" | "isfinite" | "signbit" | "__isnanf" | "__isinff" | "__hisnan" | "__hisinf" | "__hgt"
        | "__hlt" | "__heq" | "__hge" | "__hle" | "__hne" | "__hbgt2" | "__hbeq2" | "__hblt2" | "__hbge2"
        | "__hble2" | "__hbne2" => Type::Bool,
        "__float2half" | "__float2half_rn" | "__float2half_rz" | "__hadd" | "__hsub" | "__hmul" | "__hdiv"
        | "__hneg" | "__habs" | "__hmax" | "__hmin" | "__hfma" | "__low2half" | "__high2half" | "__ushort_as_half"
        | "__short_as_half" | "__int2half_rn" | "__uint2half_rn" | "hexp" | "hlog" | "hsqrt" | "hrsqrt"
        | "__hmax_nan" | "__double2half" => half,
        "__float2bfloat16"
        | "__float2bfloat16_rn"
        | "__low2bfloat16"
        | "__high2bfloat16"
        | "__ushort_as_bfloat16"
        | "__double2bfloat16" => bf16,
        "__hadd2" | "__hsub2" | "__hmul2" | "__h2div" | "__hneg2" | "__habs2" | "__hfma2" | "__hmax2" | "__hmin2"
        | "__floats2half2_rn" | "__float22half2_rn" | "__float2half2_rn" | "__halves2half2" | "__lows2half2"
        | "__highs2half2" | "__lowhigh2highlow" | "h2exp" | "h2log" | "h2sqrt" | "h2rsqrt" | "__hgt2" | "__hlt2"
        | "__heq2" | "__hge2" | "__hle2" | "__hne2" | "__half2half2" | "__low2half2" | "__high2half2"
        | "__hmax2_nan" => vec("half2")?,
        "__floats2bfloat162_rn"
        | "__float22bfloat162_rn"
        | "__halves2bfloat162"
        | "__bfloat162bfloat162"
        | "__lows2bfloat162"
        | "__highs2bfloat162" => vec("nv_bfloat162")?,
        "__half22float2" | "__bfloat1622float2" => vec("float2")?,
        "__float_as_int" | "__float2int_rn" | "__float2int_rz" | "__float2int_rd" | "__float2int_ru" | "__popc"
        | "__popcll" | "__clz" | "__clzll" | "__ffs" | "__ffsll" | "__dp4a" | "__dp2a_lo" | "__dp2a_hi" | "__mul24"
        | "__mulhi" | "__half2int_rn" | "__half2int_rz" | "__hisinf_int" | "__double2int_rn" | "__iAtomicAdd"
        | "__sad" | "__rhadd" | "__hadd_int" | "__float2int" => Type::int(32, true),
        "__float_as_uint" | "__float2uint_rn" | "__float2uint_rz" | "__brev" | "__byte_perm" | "__funnelshift_l"
        | "__funnelshift_r" | "__funnelshift_lc" | "__funnelshift_rc" | "__umul24" | "__umulhi" | "__usad"
        | "__vabsdiffu4" | "__vabsdiffs4" | "__vsub4" | "__vadd4" | "__vsubss4" | "__vaddss4" | "__vsubus4"
        | "__vaddus4" | "__vcmpeq4" | "__vcmpne4" | "__vcmpgtu4" | "__vcmpltu4" | "__vcmpges4" | "__vmaxu4"
        | "__vminu4" | "__vmaxs4" | "__vmins4" | "__vabs4" | "__vneg4" | "__vsub2" | "__vadd2" | "__hgt2_mask"
        | "__hlt2_mask" | "__heq2_mask" | "__hne2_mask" | "__vsetgtu4" | "__vsetltu4" | "__vseteq4" | "__vcmpgts4"
        | "__vhaddu4" | "__vavgu4" => Type::int(32, false),
        "__half_as_short" | "__bfloat16_as_short" => Type::int(16, true),
        "__half_as_ushort" | "__bfloat16_as_ushort" => Type::int(16, false),
        "__double_as_longlong" | "__float2ll_rn" | "__brevll" => Type::int(64, true),
        "__longlong_as_double" | "__ll2double_rn" => Type::Float(FloatKind::F64),
        n if n.starts_with("__builtin_amdgcn") => Type::int(32, true),
        n if n.starts_with("__h")
            || n.starts_with("__float")
            || n.starts_with("__half")
            || n.starts_with("__int")
            || n.starts_with("__uint")
            || n.starts_with("__bfloat")
            || n.starts_with("__v") =>
        {
            first.unwrap_or(f32)
        }
        _ => return None,
    })
}

/// Constant folding of the few integer intrinsics index code relies on.
fn fold_math(name: &str, args: &[Expr]) -> Option<Expr> {
    let ints: Option<Vec<i128>> = args.iter().map(Expr::as_int).collect();
    let ints = ints?;
    let i32t = ScalarTy::I32;
    Some(match (name, ints.as_slice()) {
        ("__popc", [x]) => Expr::int((*x as u32).count_ones() as i128, i32t),
        ("__popcll", [x]) => Expr::int((*x as u64).count_ones() as i128, i32t),
        ("__clz", [x]) => Expr::int((*x as u32).leading_zeros() as i128, i32t),
        ("__ffs", [x]) => Expr::int(
            if *x as u32 == 0 {
                0
            } else {
                (*x as u32).trailing_zeros() as i128 + 1
            },
            i32t,
        ),
        _ => return None,
    })
}
