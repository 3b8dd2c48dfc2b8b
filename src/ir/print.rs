//! Text form of the IR (`warpdrf explain --stage ir`).
//!
//! The form reads like C: variables print as `name.N` (N their id), memory
//! accesses as `obj[+offset:width]`, collectives by their CUDA names.

use std::fmt::{self, Display, Write};

use super::*;

pub struct ExprDisplay<'a> {
    pub kernel: &'a Kernel,
    pub expr: &'a Expr,
}

impl Kernel {
    pub fn show<'a>(&'a self, expr: &'a Expr) -> ExprDisplay<'a> {
        ExprDisplay { kernel: self, expr }
    }

    pub fn var_name(&self, var: VarId) -> String {
        match self.vars.get(var.index()) {
            Some(v) => format!("{}.{}", v.name, var.0),
            None => format!("v{}", var.0),
        }
    }
}

fn ty_name(ty: ScalarTy) -> String {
    match ty {
        ScalarTy::Bool => "bool".into(),
        ScalarTy::Int { bits, signed } => format!("{}{}", if signed { "i" } else { "u" }, bits),
        ScalarTy::Float(FloatKind::Half) => "f16".into(),
        ScalarTy::Float(FloatKind::BFloat16) => "bf16".into(),
        ScalarTy::Float(FloatKind::F32) => "f32".into(),
        ScalarTy::Float(FloatKind::F64) => "f64".into(),
        ScalarTy::Opaque => "opaque".into(),
    }
}

fn write_expr(k: &Kernel, e: &Expr, out: &mut String) {
    match e {
        Expr::Int(v, ScalarTy::Int { signed: false, .. }) => {
            let _ = write!(out, "{v}u");
        }
        Expr::Int(v, _) => {
            let _ = write!(out, "{v}");
        }
        Expr::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Expr::Float(f) => {
            let _ = write!(out, "{f:?}");
        }
        Expr::Var(v) => out.push_str(&k.var_name(*v)),
        Expr::Builtin(b) => {
            let _ = match b {
                Builtin::ThreadIdx(d) => write!(out, "threadIdx.{}", d.name()),
                Builtin::BlockIdx(d) => write!(out, "blockIdx.{}", d.name()),
                Builtin::BlockDim(d) => write!(out, "blockDim.{}", d.name()),
                Builtin::GridDim(d) => write!(out, "gridDim.{}", d.name()),
                Builtin::WarpSize => write!(out, "warpSize"),
            };
        }
        Expr::Param(i) => {
            let name = k.params.get(*i as usize).map_or("?", |p| p.name.as_str());
            let _ = write!(out, "param:{name}");
        }
        Expr::Sym(s) => {
            let name = k.syms.get(s.index()).map_or("?", |s| s.name.as_str());
            let _ = write!(out, "sym:{name}");
        }
        Expr::Unary(op, _, a) => {
            out.push_str(match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
            });
            write_atom(k, a, out);
        }
        Expr::Binary(op @ (BinOp::Min | BinOp::Max), _, a, b) => {
            out.push_str(op.symbol());
            out.push('(');
            write_expr(k, a, out);
            out.push_str(", ");
            write_expr(k, b, out);
            out.push(')');
        }
        Expr::Binary(op, _, a, b) => {
            write_atom(k, a, out);
            let _ = write!(out, " {} ", op.symbol());
            write_atom(k, b, out);
        }
        Expr::Select(c, a, b) => {
            write_atom(k, c, out);
            out.push_str(" ? ");
            write_atom(k, a, out);
            out.push_str(" : ");
            write_atom(k, b, out);
        }
        Expr::Cast(ty, a) => {
            let _ = write!(out, "({})", ty_name(*ty));
            write_atom(k, a, out);
        }
        Expr::Opaque(op, _, args) => {
            out.push_str(k.ops.get(op.index()).map_or("op?", |o| o.name.as_str()));
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(k, a, out);
            }
            out.push(')');
        }
    }
}

fn write_atom(k: &Kernel, e: &Expr, out: &mut String) {
    let compound =
        matches!(e, Expr::Binary(op, ..) if !matches!(op, BinOp::Min | BinOp::Max)) || matches!(e, Expr::Select(..));
    if compound {
        out.push('(');
        write_expr(k, e, out);
        out.push(')');
    } else {
        write_expr(k, e, out);
    }
}

impl Display for ExprDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_expr(self.kernel, self.expr, &mut s);
        f.write_str(&s)
    }
}

struct Printer<'a> {
    k: &'a Kernel,
    out: String,
}

impl Printer<'_> {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn e(&self, e: &Expr) -> String {
        self.k.show(e).to_string()
    }

    fn block(&mut self, b: &Block, depth: usize) {
        for s in &b.0 {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        let k = self.k;
        match &s.kind {
            StmtKind::Assign { var, value } => {
                let text = format!("{} = {}", k.var_name(*var), self.e(value));
                self.line(depth, &text);
            }
            StmtKind::Havoc { var, reason } => {
                let text = format!("{} = havoc  // {reason}", k.var_name(*var));
                self.line(depth, &text);
            }
            StmtKind::Choose { var } => {
                let text = format!("{} = choose", k.var_name(*var));
                self.line(depth, &text);
            }
            StmtKind::Access(a) => {
                let obj = k.objects.get(a.object.index()).map_or("?", |o| o.name.as_str());
                let mut loc = format!("{obj}[+{}:{}]", self.e(&a.offset), self.e(&a.width));
                for r in &a.ranges {
                    loc.push_str(&format!(
                        " for {} in [{}, {})",
                        k.var_name(r.var),
                        self.e(&r.lo),
                        self.e(&r.hi)
                    ));
                }
                let coll = match (a.collective, a.lingering) {
                    (true, _) => " (warp collective)",
                    (false, true) => " (lands after the return)",
                    (false, false) => "",
                };
                let text = match (a.kind, &a.result, &a.value) {
                    (AccessKind::Read, Some(r), _) => {
                        format!("{} = load {loc}{coll}", k.var_name(*r))
                    }
                    (AccessKind::Read, None, _) => format!("load {loc}{coll}"),
                    (AccessKind::Write, _, v) => {
                        let v = v.as_ref().map_or("?".to_string(), |v| self.e(v));
                        format!("store {loc} = {v}{coll}")
                    }
                    (AccessKind::Atomic(op), r, v) => {
                        let v = v.as_ref().map_or("?".to_string(), |v| self.e(v));
                        let r = r.map_or(String::new(), |r| format!("{} = ", k.var_name(r)));
                        format!("{r}atomic_{op:?} {loc}, {v}").to_lowercase()
                    }
                };
                self.line(depth, &text);
            }
            StmtKind::Barrier(b) => {
                let text = match &b.predicate {
                    Some((p, r)) => format!("{} = {}({})", k.var_name(*r), b.name, self.e(p)),
                    None => format!("{}()  // {:?} barrier", b.name, b.scope)
                        .replace("Block", "block")
                        .replace("Grid", "grid"),
                };
                self.line(depth, &text);
            }
            StmtKind::Primitive(p) => {
                let mut args: Vec<String> = Vec::new();
                if let Some(m) = &p.mask {
                    args.push(format!("mask={}", self.e(m)));
                }
                args.extend(p.args.iter().map(|a| self.e(a)));
                if let Some(w) = &p.width {
                    args.push(format!("width={}", self.e(w)));
                }
                let results: Vec<String> = p.results.iter().map(|r| k.var_name(*r)).collect();
                let lhs = if results.is_empty() {
                    String::new()
                } else {
                    format!("{} = ", results.join(", "))
                };
                let scope = if p.block_scope { "  // block collective" } else { "" };
                let text = format!("{lhs}{}({}){scope}", p.kind.name(), args.join(", "));
                self.line(depth, &text);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let text = format!("if ({}) {{", self.e(cond));
                self.line(depth, &text);
                self.block(then_block, depth + 1);
                if !else_block.0.is_empty() {
                    self.line(depth, "} else {");
                    self.block(else_block, depth + 1);
                }
                self.line(depth, "}");
            }
            StmtKind::Loop(l) => {
                let kind = if l.test_first { "while" } else { "do-while" };
                self.line(depth, &format!("loop L{} ({kind}) {{", l.label.0));
                if !l.cond_pre.0.is_empty() {
                    self.line(depth + 1, "cond_pre:");
                    self.block(&l.cond_pre, depth + 2);
                }
                let text = format!("cond: {}", self.e(&l.cond));
                self.line(depth + 1, &text);
                self.line(depth + 1, "body:");
                self.block(&l.body, depth + 2);
                if !l.step.0.is_empty() {
                    self.line(depth + 1, "step:");
                    self.block(&l.step, depth + 2);
                }
                self.line(depth, "}");
            }
            StmtKind::Labeled { label, body } => {
                self.line(depth, &format!("block L{} {{", label.0));
                self.block(body, depth + 1);
                self.line(depth, "}");
            }
            StmtKind::Exit { label, kind } => {
                let word = match kind {
                    ExitKind::Break => "break",
                    ExitKind::Continue => "continue",
                    ExitKind::Return => "return",
                };
                self.line(depth, &format!("{word} L{}", label.0));
            }
            StmtKind::Assume(e) => {
                let text = format!("assume {}", self.e(e));
                self.line(depth, &text);
            }
            StmtKind::Promise(e) => {
                let text = format!("promise {}", self.e(e));
                self.line(depth, &text);
            }
            StmtKind::Unknown { reason } => self.line(depth, &format!("unknown  // {reason}")),
            StmtKind::AsyncCommit => self.line(depth, "async_commit"),
            StmtKind::AsyncWait { groups_left } => self.line(depth, &format!("async_wait {groups_left}")),
        }
    }
}

impl Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut p = Printer {
            k: self,
            out: String::new(),
        };
        let targs: Vec<String> = self
            .template_args
            .iter()
            .map(|a| format!("{}={}", a.name, a.value))
            .collect();
        let targs = if targs.is_empty() {
            String::new()
        } else {
            format!("<{}>", targs.join(", "))
        };
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{} {}", p.ty_text, p.name))
            .collect();
        p.line(0, &format!("kernel {}{}({})", self.name, targs, params.join(", ")));
        if !self.helpers.is_empty() {
            p.line(
                1,
                &format!("inlined (call depth {}): {}", self.call_depth, self.helpers.join(", ")),
            );
        }
        if let Some(lb) = &self.launch_bounds {
            let text = format!("launch_bounds {}", p.e(lb));
            p.line(1, &text);
        }
        for (i, o) in self.objects.iter().enumerate() {
            let restrict = if o.restrict { " restrict" } else { "" };
            p.line(
                1,
                &format!(
                    "object {} #{i}: {:?} {} ({:?}){restrict}",
                    o.name, o.space, o.elem, o.kind
                )
                .to_string(),
            );
        }
        for s in &self.syms {
            p.line(1, &format!("symbol {}: {} ({:?})", s.name, ty_name(s.ty), s.kind));
        }
        p.line(0, &format!("block L{} {{", self.exit_label.0));
        p.block(&self.body, 1);
        p.line(0, "}");
        for u in &self.unknowns {
            p.line(0, &format!("// unknown: {}", u.reason));
        }
        f.write_str(&p.out)
    }
}
