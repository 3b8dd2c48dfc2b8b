//! Calls: overload resolution, template argument deduction and inlining.
//!
//! Every device function, member function, constructor and lambda a kernel
//! calls is inlined. A `return` at the end of the callee's straight-line code
//! gives the call's value directly (so a `constexpr` helper folds to its
//! constant); a `return` under a condition becomes an `Exit` from a labelled
//! block wrapping the inlined body and an assignment to a result slot.
//! Recursion (the same function with the same template arguments on the call
//! stack) and inlining deeper than the limit become unknowns.

use std::rc::Rc;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::index::{declarator_name, DeclId, DeclKind, ScopeKind};
use super::types::{common_type, CVal, ClassInst, TArg, Type};
use super::value::{Binding, Place, Ptr, TemplateEnv, Value};
use super::{Closure, Ctx, Lowerer, Ret};
use crate::ir::{ExitKind, ScalarTy, StmtKind, SymKind};
use crate::preprocess::Fragment;
use crate::syntax::{self, named_children};

/// An evaluated call argument: a place when the argument is an lvalue (so a
/// reference parameter can bind to it), else a value.
#[derive(Clone, Debug)]
pub(super) enum Operand {
    Place(Place),
    Value(Value),
    /// A pack expansion that expanded to several operands is flattened before
    /// resolution; this marks a braced list passed as an argument.
    List(Vec<Operand>),
}

impl Operand {
    pub fn ty(&self) -> Type {
        match self {
            Operand::Place(p) => p.ty(),
            Operand::Value(v) => v.ty(),
            Operand::List(_) => Type::Opaque("initializer_list".into()),
        }
    }
}

/// The name a template parameter declares.
pub(super) fn template_param_name(frag: &Fragment, p: Node) -> Option<String> {
    match p.kind_name() {
        "type_parameter_declaration" | "variadic_type_parameter_declaration" => named_children(p)
            .into_iter()
            .find(|c| c.kind_name() == "type_identifier")
            .map(|n| syntax::text(frag, n).to_string()),
        "optional_type_parameter_declaration" => p.field("name").map(|n| syntax::text(frag, n).to_string()),
        "parameter_declaration" | "optional_parameter_declaration" | "variadic_parameter_declaration" => p
            .field("declarator")
            .and_then(|d| declarator_name(frag, d))
            .map(|(n, _)| n),
        "template_template_parameter_declaration" => named_children(p)
            .into_iter()
            .rev()
            .find(|c| c.kind_name() == "type_identifier")
            .map(|n| syntax::text(frag, n).to_string()),
        _ => None,
    }
}

/// The name of the template a parameter list belongs to (for symbol names).
fn owner_name(frag: &Fragment, params: Node) -> String {
    let Some(decl) = params.parent() else {
        return String::new();
    };
    for child in named_children(decl) {
        if let Some(d) = child.field("declarator") {
            if let Some((n, _)) = declarator_name(frag, d) {
                return n;
            }
        }
        if let Some(n) = child.field("name") {
            return syntax::text(frag, n).to_string();
        }
    }
    String::new()
}

fn is_variadic_param(p: Node) -> bool {
    matches!(
        p.kind_name(),
        "variadic_type_parameter_declaration" | "variadic_parameter_declaration"
    )
}

/// A function's parameter declarations.
fn function_params<'u>(function: Node<'u>) -> Option<Vec<Node<'u>>> {
    let mut d = function.field("declarator")?;
    for _ in 0..16 {
        if d.kind_name() == "function_declarator" {
            let params = d.field("parameters")?;
            return Some(
                named_children(params)
                    .into_iter()
                    .filter(|p| {
                        matches!(
                            p.kind_name(),
                            "parameter_declaration"
                                | "optional_parameter_declaration"
                                | "variadic_parameter_declaration"
                        ) && !(p.kind_name() == "parameter_declaration"
                            && p.field("declarator").is_none()
                            && is_void(*p))
                    })
                    .collect(),
            );
        }
        d = d.field("declarator")?;
    }
    None
}

/// Whether a function with parameter declarations `params` takes `n`
/// operands: at least those without a default, at most all of them (any
/// number past a parameter pack).
fn takes_operands(params: &[Node], n: usize) -> bool {
    let variadic = params.iter().any(|p| p.kind_name() == "variadic_parameter_declaration");
    let required = params
        .iter()
        .filter(|p| p.kind_name() == "parameter_declaration")
        .count();
    n >= required && (variadic || n <= params.len())
}

/// Whether `function` (a definition or declaration) may be called with
/// `n` operands (see [`takes_operands`]); `true` where its parameters are
/// not found.
pub(super) fn may_take_operands(function: Node, n: usize) -> bool {
    function_params(function).is_none_or(|params| takes_operands(&params, n))
}

/// `f(void)`.
fn is_void(p: Node) -> bool {
    p.field("type")
        .is_some_and(|t| t.kind_name() == "primitive_type" && t.end_byte() - t.start_byte() == 4)
        && p.child_count() == 1
}

impl<'u> Lowerer<'u> {
    /// Binds a template parameter list: explicit arguments, then deduced ones,
    /// then defaults (evaluated with the earlier parameters in scope), then —
    /// when `symbolic` — symbols. Returns only these parameters' bindings.
    pub(super) fn bind_template_params(
        &mut self,
        ctx: Ctx<'u>,
        params: Node<'u>,
        explicit: &[TArg],
        deduced: &TemplateEnv,
        symbolic: bool,
    ) -> TemplateEnv {
        let mut env = TemplateEnv::default();
        let mut next = 0;
        let owner = owner_name(ctx.frag, params);
        for p in named_children(params) {
            let Some(name) = template_param_name(ctx.frag, p) else {
                continue;
            };
            let is_type =
                p.kind_name().contains("type_parameter") || p.kind_name() == "template_template_parameter_declaration";
            if is_variadic_param(p) {
                let rest: Vec<TArg> = explicit.get(next..).map(|r| r.to_vec()).unwrap_or_default();
                next = explicit.len();
                let arg = match deduced.get(&name) {
                    Some(d) if rest.is_empty() => d.clone(),
                    _ => TArg::Pack(rest),
                };
                env.insert(name, arg);
                continue;
            }
            let arg = if let Some(a) = explicit.get(next) {
                next += 1;
                Some(a.clone())
            } else if let Some(d) = deduced.get(&name) {
                Some(d.clone())
            } else {
                self.template_default(&ctx, p, &env)
            };
            let arg = match arg {
                Some(a) if !is_type => Some(self.convert_targ(&ctx, p, a, &env)),
                Some(a) => Some(a),
                None if symbolic => Some(if is_type {
                    TArg::Type(Type::Opaque(name.clone().into()))
                } else {
                    let ty = self.template_param_type(&ctx, p, &env);
                    let s = self.sym(&format!("{owner}::{name}"), ty, SymKind::TemplateParam);
                    TArg::Value(CVal::Sym(s, ty))
                }),
                None => None,
            };
            if let Some(a) = arg {
                env.insert(name, a);
            }
        }
        env
    }

    fn template_default(&mut self, ctx: &Ctx<'u>, p: Node<'u>, env: &TemplateEnv) -> Option<TArg> {
        let mut scoped = ctx.clone();
        let mut merged = (*ctx.tenv).clone();
        merged.extend(env.clone());
        scoped.tenv = Rc::new(merged);
        match p.kind_name() {
            "optional_type_parameter_declaration" => {
                let t = p.field("default_type")?;
                Some(TArg::Type(self.in_ctx(scoped, |l| l.type_node(t))))
            }
            "optional_parameter_declaration" => {
                let v = p.field("default_value")?;
                let value = self.in_ctx(scoped, |l| l.scratch_expr(v));
                self.value_targ(&value)
            }
            _ => None,
        }
    }

    fn template_param_type(&mut self, ctx: &Ctx<'u>, p: Node<'u>, env: &TemplateEnv) -> ScalarTy {
        let mut scoped = ctx.clone();
        let mut merged = (*ctx.tenv).clone();
        merged.extend(env.clone());
        scoped.tenv = Rc::new(merged);
        let ty = self.in_ctx(scoped, |l| match p.field("type") {
            Some(t) => l.type_node(t),
            None => Type::int(32, true),
        });
        match ty.scalar() {
            ScalarTy::Opaque => ScalarTy::I32,
            s => s,
        }
    }

    /// A non-type argument converted to its parameter's type.
    fn convert_targ(&mut self, ctx: &Ctx<'u>, p: Node<'u>, a: TArg, env: &TemplateEnv) -> TArg {
        let ty = self.template_param_type(ctx, p, env);
        match a {
            TArg::Value(CVal::Int(v, _)) if ty == ScalarTy::Bool => TArg::Value(CVal::Int((v != 0) as i128, ty)),
            TArg::Value(CVal::Int(v, _)) if ty.is_int() => TArg::Value(CVal::Int(ty.wrap(v), ty)),
            TArg::Value(CVal::Sym(s, _)) => TArg::Value(CVal::Sym(s, ty)),
            // A name parsed as a type where a value is expected: one nothing declares.
            TArg::Type(Type::Opaque(name)) => {
                let s = self.sym(&name, ty, SymKind::Unresolved);
                TArg::Value(CVal::Sym(s, ty))
            }
            other => other,
        }
    }

    /// The candidate function declarations with a body for a set of declarations
    /// (a prototype is replaced by the definition of the same function).
    fn definitions(&self, ids: &[DeclId]) -> Vec<DeclId> {
        let mut out: Vec<DeclId> = Vec::new();
        for &id in ids {
            let d = self.index.decl(id);
            if d.kind != DeclKind::Function {
                continue;
            }
            if d.defined {
                out.push(id);
            }
        }
        if out.is_empty() {
            // Only prototypes: keep them (they become unknown calls).
            out = ids
                .iter()
                .copied()
                .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
                .collect();
        }
        out
    }

    /// Resolves and inlines a call to one of `ids` (functions of one name).
    pub(super) fn call_named(
        &mut self,
        ids: &[DeclId],
        explicit: &[TArg],
        operands: Vec<Operand>,
        this: Option<Place>,
        class: Option<Rc<ClassInst>>,
        node: Node<'u>,
    ) -> Operand {
        let candidates = self.definitions(ids);
        let Some((decl, env)) = self.resolve_overload(&candidates, explicit, &operands, class.as_ref()) else {
            let name = ids
                .first()
                .map(|&id| self.index.decl(id).name.clone())
                .unwrap_or_default();
            return Operand::Value(self.opaque_call(&name, &operands, node));
        };
        if !self.index.decl(decl).defined {
            let name = self.index.decl(decl).name.clone();
            return Operand::Value(self.opaque_call(&name, &operands, node));
        }
        let constant_args: Option<Vec<String>> = operands.iter().map(|op| self.constant_key(op)).collect();
        let this_free = this.is_none() || matches!(this, Some(Place::Temp(_)));
        // A call with constant arguments that emits nothing is a function of its
        // arguments: evaluate it once.
        let memo_key = match (&constant_args, this_free) {
            (Some(keys), true) => {
                let mut env_keys: Vec<String> = env.iter().map(|(k, a)| format!("{k}={}", a.display())).collect();
                env_keys.sort();
                let class_key = class
                    .as_ref()
                    .map(|c| Type::Class(c.clone()).display())
                    .unwrap_or_default();
                Some((decl, format!("{class_key}|{}|{}", env_keys.join(","), keys.join(","))))
            }
            _ => None,
        };
        if let Some(key) = &memo_key {
            if let Some(v) = self.pure_calls.get(key) {
                return Operand::Value(v.clone());
            }
        }
        // Where C++ needs a constant, a call on non-constant (symbolic) arguments
        // is a symbolic constant: the same function of the same uniform inputs.
        // In host code, a function returning an aggregate (a launch's
        // `dim3`s, a `std::pair` of them) is inlined: its fields are what
        // the launch shapes are read from.
        let symbolic = (self.constant_context > 0 || self.host_mode) && constant_args.is_none();
        let ret = symbolic.then(|| self.declared_return_type(decl, class.as_ref(), &env));
        let host_aggregate = self.host_mode
            && self.constant_context == 0
            && matches!(ret.as_ref().map(Type::strip_ref), Some(Type::Vector(_) | Type::Lib(_)));
        // A function pointer chosen by symbolic arguments (a `constexpr`
        // table from a template argument to a function) is inlined: its
        // returns make a choice among the functions named.
        let chooses_function = ret.as_ref().is_some_and(Type::is_function_pointer);
        if let (Some(ret), false) = (ret, host_aggregate || chooses_function) {
            let mut text = crate::lower::index::normalize_spaces(self.text(node));
            // The same words in a helper inlined under other template
            // arguments may be another value: the environment is part of
            // the name (in kernels; host code is evaluated per launcher).
            let env = self.tenv_key();
            if !self.host_mode && !env.is_empty() {
                text = format!("{text} [{env}]");
            }
            return Operand::Value(match ret.scalar() {
                ScalarTy::Opaque => Value::Unknown(ret),
                st => {
                    let s = self.sym(&text, st, SymKind::Unresolved);
                    Value::Scalar(crate::ir::Expr::Sym(s), ret)
                }
            });
        }
        let before = self.blocks.last().map_or(0, Vec::len);
        let result = self.inline(decl, env, operands, this, class, node);
        if let (Some(key), Operand::Value(v)) = (memo_key, &result) {
            let emitted = self.blocks.last().map_or(0, Vec::len) > before;
            if !emitted && is_constant_value(v) {
                self.pure_calls.insert(key, v.clone());
            }
        }
        result
    }

    /// A function's declared return type in its context.
    fn declared_return_type(&mut self, id: DeclId, class: Option<&Rc<ClassInst>>, env: &TemplateEnv) -> Type {
        let d = self.index.decl(id).clone();
        let ctx = self.callee_ctx(id, class, env);
        self.in_ctx(ctx, |l| {
            let base = match d.node.field("type") {
                Some(t) => l.type_node(t),
                None => Type::Void,
            };
            match d.node.field("declarator") {
                Some(decl) => return_type(l, base, decl),
                None => base,
            }
        })
        .strip_ref()
        .clone()
    }

    /// Picks the best viable candidate; returns it with its template arguments.
    pub(super) fn resolve_overload(
        &mut self,
        candidates: &[DeclId],
        explicit: &[TArg],
        operands: &[Operand],
        class: Option<&Rc<ClassInst>>,
    ) -> Option<(DeclId, TemplateEnv)> {
        let mut best: Option<(DeclId, TemplateEnv, u32)> = None;
        for &id in candidates {
            let Some((env, cost)) = self.viable(id, explicit, operands, class) else {
                continue;
            };
            // Prefer non-templates on ties, then the earlier declaration.
            let cost = cost * 2 + self.index.decl(id).template.is_some() as u32;
            if best.as_ref().is_none_or(|b| cost < b.2) {
                best = Some((id, env, cost));
            }
        }
        best.map(|(id, env, _)| (id, env))
    }

    /// The callee's context (its fragment, scope, class and template arguments).
    fn callee_ctx(&mut self, id: DeclId, class: Option<&Rc<ClassInst>>, env: &TemplateEnv) -> Ctx<'u> {
        let d = self.index.decl(id).clone();
        let mut tenv = TemplateEnv::default();
        let mut class_inst = None;
        if let ScopeKind::Class(_) = self.index.scope(d.scope).kind {
            if let Some(c) = class {
                let cctx = self.class_ctx(c);
                tenv.extend((*cctx.tenv).clone());
                class_inst = cctx.class.clone();
            }
        }
        tenv.extend(env.clone());
        Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: Rc::new(tenv),
            class: class_inst,
        }
    }

    /// `viable` for the instantiation search.
    pub(super) fn viable_for(
        &mut self,
        id: DeclId,
        explicit: &[TArg],
        operands: &[Operand],
    ) -> Option<(TemplateEnv, u32)> {
        self.viable(id, explicit, operands, None)
    }

    /// Whether a candidate can take the operands: its template arguments and cost.
    fn viable(
        &mut self,
        id: DeclId,
        explicit: &[TArg],
        operands: &[Operand],
        class: Option<&Rc<ClassInst>>,
    ) -> Option<(TemplateEnv, u32)> {
        let d = self.index.decl(id).clone();
        let params = function_params(d.node)?;
        if !takes_operands(&params, operands.len()) {
            return None;
        }
        let base_ctx = self.callee_ctx(id, class, &TemplateEnv::default());
        let mut env = TemplateEnv::default();
        if let Some(tparams) = d.template {
            let names: Vec<String> = named_children(tparams)
                .into_iter()
                .filter_map(|p| template_param_name(d.frag, p))
                .collect();
            // Explicit arguments first, so deduction sees them.
            let mut explicit_env = TemplateEnv::default();
            let plain: Vec<Node> = named_children(tparams);
            for (i, p) in plain.iter().enumerate() {
                if is_variadic_param(*p) {
                    break;
                }
                if let (Some(a), Some(n)) = (explicit.get(i), template_param_name(d.frag, *p)) {
                    explicit_env.insert(n, a.clone());
                }
            }
            // Parameters given explicitly are not deduced: their function
            // parameters take operands by implicit conversion (a `half` for
            // a `const T &` with `T = float`).
            let deducible: Vec<String> = names
                .iter()
                .filter(|n| !explicit_env.contains_key(*n))
                .cloned()
                .collect();
            let mut deduced = explicit_env.clone();
            let mut dctx = base_ctx.clone();
            let mut merged = (*base_ctx.tenv).clone();
            merged.extend(explicit_env.clone());
            dctx.tenv = Rc::new(merged);
            for (i, p) in params.iter().enumerate() {
                if p.kind_name() == "variadic_parameter_declaration" {
                    // `Args... args`: the pack takes the remaining operand types.
                    if let Some(t) = p.field("type") {
                        let tname = syntax::text(d.frag, t).trim().to_string();
                        if names.contains(&tname) {
                            let rest: Vec<TArg> = operands[i.min(operands.len())..]
                                .iter()
                                .map(|o| TArg::Type(decay(&o.ty())))
                                .collect();
                            deduced.insert(tname, TArg::Pack(rest));
                        }
                    }
                    break;
                }
                let Some(op) = operands.get(i) else { break };
                let actual = op.ty();
                let pattern = ParamPattern::of(*p);
                let is_ref = pattern.is_ref;
                let actual = if is_ref {
                    actual.strip_ref().clone()
                } else {
                    decay(&actual)
                };
                let ok = self.in_ctx(dctx.clone(), |l| l.deduce_param(*p, &actual, &deducible, &mut deduced));
                if !ok {
                    return None;
                }
            }
            env = self.bind_template_params(base_ctx.clone(), tparams, explicit, &deduced, false);
            if names.iter().any(|n| !env.contains_key(n)) {
                return None;
            }
        } else if !explicit.is_empty() {
            return None;
        }
        // Cost of converting each operand to its parameter.
        let ctx = self.callee_ctx(id, class, &env);
        let mut cost = 0u32;
        for (i, p) in params.iter().enumerate() {
            if p.kind_name() == "variadic_parameter_declaration" {
                break;
            }
            let Some(op) = operands.get(i) else { break };
            let (pty, _) = self.in_ctx(ctx.clone(), |l| l.declared_type(*p));
            cost += conversion_cost(&pty, &op.ty())?;
        }
        Some((env, cost))
    }

    /// Deduces template parameters from one function parameter.
    fn deduce_param(&mut self, p: Node<'u>, actual: &Type, names: &[String], env: &mut TemplateEnv) -> bool {
        let Some(type_node) = p.field("type") else {
            return true;
        };
        let text = super::index::normalize(self.text(type_node));
        // Peel the declarator: `T *x`, `T (&x)[N]`, `const T &x`.
        let mut actual = actual.clone();
        let mut node = p.field("declarator");
        while let Some(n) = node {
            match n.kind_name() {
                "pointer_declarator" | "abstract_pointer_declarator" => match actual.clone() {
                    Type::Ptr(inner) | Type::Array(inner, _) => actual = (*inner).clone(),
                    Type::Nullptr => return true,
                    _ => return !mentions(&text, names),
                },
                "array_declarator" | "abstract_array_declarator" => {
                    let (bounds, m) = super::index::array_bounds(n);
                    for a in &bounds {
                        match actual.clone() {
                            Type::Array(inner, count) => {
                                if let (Some(size), Some(count)) = (a.field("size"), count) {
                                    let sname = super::index::normalize(self.text(size));
                                    if names.contains(&sname) && !env.contains_key(&sname) {
                                        env.insert(sname, TArg::Value(CVal::Int(count as i128, ScalarTy::I32)));
                                    }
                                }
                                actual = (*inner).clone();
                            }
                            Type::Ptr(inner) => actual = (*inner).clone(),
                            _ => return !mentions(&text, names),
                        }
                    }
                    node = m;
                    continue;
                }
                _ => {}
            }
            node = n.field("declarator").or_else(|| {
                named_children(n)
                    .into_iter()
                    .find(|c| c.kind_name().ends_with("declarator"))
            });
        }
        if !mentions(&text, names) {
            return true;
        }
        if names.contains(&text) {
            if let Some(prev) = env.get(&text) {
                return match (prev, &actual) {
                    (TArg::Type(a), b) => a == b || matches!(a, Type::Opaque(_)) || matches!(b, Type::Opaque(_)),
                    _ => true,
                };
            }
            env.insert(text, TArg::Type(actual));
            return true;
        }
        self.deduce_type_pattern(type_node, &actual, names, env)
    }

    /// Inlines a function: binds parameters, lowers the body, returns the result.
    pub(super) fn inline(
        &mut self,
        id: DeclId,
        env: TemplateEnv,
        operands: Vec<Operand>,
        this: Option<Place>,
        class: Option<Rc<ClassInst>>,
        node: Node<'u>,
    ) -> Operand {
        let d = self.index.decl(id).clone();
        // Recursion is the same function with the same template and constant
        // arguments: recursion on constants terminates as C++ evaluates it.
        let key_args: Vec<String> = {
            let mut v: Vec<(&String, &TArg)> = env.iter().collect();
            v.sort_by(|a, b| a.0.cmp(b.0));
            let mut keys: Vec<String> = v.iter().map(|(k, a)| format!("{k}={}", a.display())).collect();
            for op in &operands {
                keys.push(match op {
                    Operand::Value(Value::Scalar(e, _)) | Operand::Place(Place::Temp(Value::Scalar(e, _)))
                        if e.is_const() =>
                    {
                        format!("{e:?}")
                    }
                    _ => "?".into(),
                });
            }
            keys
        };
        let class_key = class
            .as_ref()
            .map(|c| Type::Class(c.clone()).display())
            .unwrap_or_default();
        let key = (id, format!("{class_key}|{}", key_args.join(",")));
        if self.frames.iter().any(|f| f.key.as_ref() == Some(&key)) {
            return Operand::Value(self.unknown_value(node, format!("recursive call to `{}`", d.name)));
        }
        if self.frames.len() > self.config.max_inline_depth {
            let reason = format!(
                "calls nested deeper than {} at `{}`",
                self.config.max_inline_depth, d.name
            );
            return Operand::Value(self.unknown_value(node, reason));
        }
        let caller = self
            .frames
            .iter()
            .rev()
            .find_map(|f| f.key.as_ref().map(|k| k.0))
            .unwrap_or(self.kernel_decl);
        self.call_graph.add_edge(caller.0, id.0, ());
        let ctx = self.callee_ctx(id, class.as_ref(), &env);
        let params = function_params(d.node).unwrap_or_default();
        // Parameter types and default arguments are in the callee's context.
        let call_span = self.span(node);
        let at_kernel = self.frames.len() == 1;
        self.push_frame(ctx.clone());
        self.frame_mut().key = Some(key);
        self.frame_mut().this = this;
        let mut ops = operands.into_iter();
        for (i, p) in params.iter().enumerate() {
            if p.kind_name() == "variadic_parameter_declaration" {
                let rest: Vec<Operand> = ops.by_ref().collect();
                let name = p
                    .field("declarator")
                    .and_then(|dn| declarator_name(d.frag, dn))
                    .map(|(n, _)| n.trim_start_matches("...").to_string());
                let mut bindings = Vec::new();
                for op in rest {
                    let b = match op {
                        Operand::Place(pl) => Binding::Place(pl),
                        Operand::Value(v) => Binding::Value(v),
                        Operand::List(_) => Binding::Value(Value::Unknown(Type::Opaque("list".into()))),
                    };
                    bindings.push(b);
                }
                if let Some(name) = name {
                    self.bind(&name, Binding::Pack(bindings));
                }
                break;
            }
            let (pty, name) = self.declared_type(*p);
            let op = match ops.next() {
                Some(op) => op,
                None => match p.field("default_value") {
                    Some(v) => Operand::Value(self.expr(v)),
                    None => {
                        self.unknown(node, format!("missing argument {i} in call to `{}`", d.name));
                        Operand::Value(Value::Unknown(pty.clone()))
                    }
                },
            };
            let Some(name) = name else { continue };
            let binding = self.bind_param(&name, &pty, op, *p);
            self.bind(&name, binding);
        }
        // The return type (`auto` is deduced from the returns).
        let ret_ty = {
            let base = match d.node.field("type") {
                Some(t) => self.type_node(t),
                None => Type::Void,
            };
            match d.node.field("declarator") {
                Some(decl) => return_type(self, base, decl),
                None => base,
            }
        };
        let label = self.new_label();
        let by_ref = matches!(ret_ty, Type::Ref(_));
        self.frame_mut().ret = Some(Ret {
            label,
            ty: ret_ty.strip_ref().clone(),
            by_ref,
            slot: None,
            definite: None,
            definite_place: None,
            conditional: false,
        });
        if at_kernel {
            self.sites.push(call_span);
        }
        // Member initialisers of a constructor.
        if let Some(inits) = named_children(d.node)
            .into_iter()
            .find(|c| c.kind_name() == "field_initializer_list")
        {
            self.member_initializers(inits);
        }
        let dead_before = self.dead;
        let body = self.sub_block(|l| {
            if let Some(b) = d.node.field("body") {
                if b.kind_name() == "compound_statement" {
                    l.compound(b);
                } else {
                    l.unknown(b, "function-try-block");
                }
            }
        });
        if at_kernel {
            self.sites.pop();
        }
        let frame = self.frames.pop().expect("pushed above");
        let ret = frame.ret.expect("set above");
        self.dead = dead_before;
        if ret.conditional {
            self.emit(StmtKind::Labeled { label, body }, call_span);
        } else {
            for s in body.0 {
                if let Some(b) = self.blocks.last_mut() {
                    if !self.dead {
                        b.push(s);
                    }
                }
            }
        }
        if ret.by_ref {
            if let Some(p) = ret.definite_place.filter(|_| !ret.conditional) {
                return Operand::Place(p);
            }
        }
        Operand::Value(match (ret.slot, ret.definite) {
            (Some(slot), _) => self.read(&slot, node),
            (None, Some(v)) => v,
            (None, None) => Value::Void,
        })
    }

    /// Binds a parameter: references alias the argument's place, values are copied.
    fn bind_param(&mut self, name: &str, pty: &Type, op: Operand, p: Node<'u>) -> Binding {
        match pty {
            Type::Ref(inner) => match op {
                Operand::Place(place) => Binding::Place(place),
                // A temporary lambda or function bound to `F &&f`: the
                // callable itself (it has no storage to refer to).
                Operand::Value(v @ (Value::Closure(_) | Value::Func(_))) => Binding::Value(v),
                Operand::Value(v) => {
                    let place = self.local_place(name, inner, p);
                    self.write(&place, v, p);
                    Binding::Place(place)
                }
                Operand::List(items) => {
                    let v = self.list_value(inner, items, p);
                    let place = self.local_place(name, inner, p);
                    self.write(&place, v, p);
                    Binding::Place(place)
                }
            },
            _ => {
                let v = match op {
                    Operand::Place(place) => {
                        if let Type::Closure(_) = place.ty() {
                            return Binding::Place(place);
                        }
                        self.read(&place, p)
                    }
                    Operand::Value(v) => v,
                    Operand::List(items) => self.list_value(pty, items, p),
                };
                if let Value::Closure(_) = v {
                    return Binding::Value(v);
                }
                // A `const` scalar parameter given a constant is that
                // constant (nothing can write it): calls on it inside a
                // constexpr helper stay calls on constants, and fold.
                if is_const_scalar_param(self.frag(), p) && pty.is_arith() && is_constant_value(&v) {
                    let c = self.convert(v.clone(), pty, p);
                    if is_constant_value(&c) {
                        return Binding::Value(c);
                    }
                }
                let ty = match (pty, &v) {
                    (Type::Opaque(n), _) if &**n == "auto" => v.ty(),
                    // An address passed as an integer keeps pointing into its buffer.
                    (Type::Int { .. }, Value::Ptr(p)) if p.object.is_some() => Type::ptr(Type::int(8, false)),
                    _ => pty.clone(),
                };
                let place = self.local_place(name, &ty, p);
                self.write(&place, v, p);
                Binding::Place(place)
            }
        }
    }

    /// Lowers `: field(init), …` of a constructor being inlined.
    fn member_initializers(&mut self, inits: Node<'u>) {
        for init in named_children(inits) {
            let children = named_children(init);
            let Some(name_node) = children.first() else {
                continue;
            };
            let name = self.text(*name_node).to_string();
            let Some(this) = self.frame().this.clone() else {
                continue;
            };
            let Some(place) = self.member_place(&this, &name, init) else {
                self.unknown(init, format!("initializer of unknown member `{name}`"));
                continue;
            };
            let args: Vec<Node> = children.get(1).map(|a| named_children(*a)).unwrap_or_default();
            let ty = place.ty();
            let v = if args.len() == 1 {
                self.expr(args[0])
            } else {
                let ops: Vec<Operand> = args.iter().map(|a| self.operand(*a)).collect();
                self.construct(&ty, ops, init)
            };
            self.write(&place, v, init);
        }
    }

    /// A call nothing models: pure when no argument reaches memory, else unknown.
    pub(super) fn opaque_call(&mut self, name: &str, operands: &[Operand], node: Node<'u>) -> Value {
        let touches_memory = operands.iter().any(reaches_memory);
        let values = operands
            .iter()
            .map(|op| match op {
                Operand::Place(p) => self.read(p, node),
                Operand::Value(v) => v.clone(),
                Operand::List(_) => Value::Void,
            })
            .collect();
        self.opaque_of(name, Unresolved { values, touches_memory }, node)
    }

    /// [`Self::opaque_call`] on arguments already read.
    pub(super) fn opaque_of(&mut self, name: &str, call: Unresolved, node: Node<'u>) -> Value {
        let Unresolved { values, touches_memory } = call;
        let args: Vec<crate::ir::Expr> = values
            .into_iter()
            .filter_map(|v| match v {
                Value::Scalar(e, _) => Some(e),
                _ => None,
            })
            .collect();
        if touches_memory {
            return self.unknown_value(
                node,
                format!("call to `{name}`, which is not defined here, with a pointer argument"),
            );
        }
        let op = self.op(&format!("call {name}"));
        Value::Scalar(
            crate::ir::Expr::Opaque(op, ScalarTy::Opaque, args),
            Type::Opaque(name.into()),
        )
    }

    /// Calls a lambda.
    pub(super) fn call_closure(&mut self, id: u32, operands: Vec<Operand>, node: Node<'u>) -> Operand {
        let Some(closure) = self.closures.get(id as usize) else {
            return Operand::Value(self.unknown_value(node, "call of an unknown closure"));
        };
        let Closure {
            node: lambda,
            ctx,
            captured,
            this,
        } = Closure {
            node: closure.node,
            ctx: closure.ctx.clone(),
            captured: closure.captured.clone(),
            this: closure.this.clone(),
        };
        if self.frames.len() > self.config.max_inline_depth {
            return Operand::Value(self.unknown_value(node, "lambda calls nested too deeply"));
        }
        let call_span = self.span(node);
        let at_kernel = self.frames.len() == 1;
        self.push_frame(ctx);
        self.frame_mut().locals = captured;
        self.frame_mut().locals.push(Default::default());
        self.frame_mut().this = this;
        let params: Vec<Node> = lambda
            .field("declarator")
            .and_then(|d| d.field("parameters"))
            .map(named_children)
            .unwrap_or_default();
        let mut ops = operands.into_iter();
        for p in params {
            if !matches!(
                p.kind_name(),
                "parameter_declaration" | "optional_parameter_declaration"
            ) {
                continue;
            }
            let (pty, name) = self.declared_type(p);
            let op = match ops.next() {
                Some(op) => op,
                None => match p.field("default_value") {
                    Some(v) => Operand::Value(self.expr(v)),
                    None => Operand::Value(Value::Unknown(pty.clone())),
                },
            };
            if let Some(name) = name {
                let b = self.bind_param(&name, &pty, op, p);
                self.bind(&name, b);
            }
        }
        let label = self.new_label();
        self.frame_mut().ret = Some(Ret {
            label,
            ty: Type::Opaque("auto".into()),
            by_ref: false,
            slot: None,
            definite: None,
            definite_place: None,
            conditional: false,
        });
        if at_kernel {
            self.sites.push(call_span);
        }
        let dead_before = self.dead;
        let body = self.sub_block(|l| {
            if let Some(b) = lambda.field("body") {
                l.compound(b);
            }
        });
        if at_kernel {
            self.sites.pop();
        }
        let frame = self.frames.pop().expect("pushed above");
        let ret = frame.ret.expect("set above");
        self.dead = dead_before;
        if ret.conditional {
            self.emit(StmtKind::Labeled { label, body }, call_span);
        } else {
            for s in body.0 {
                if let Some(b) = self.blocks.last_mut() {
                    if !self.dead {
                        b.push(s);
                    }
                }
            }
        }
        Operand::Value(match (ret.slot, ret.definite) {
            (Some(slot), _) => self.read(&slot, node),
            (None, Some(v)) => v,
            (None, None) => Value::Void,
        })
    }

    /// Creates a closure value for a lambda expression (captures see the
    /// variables themselves: by-copy captures of variables not changed after
    /// the lambda is created behave the same).
    pub(super) fn lambda(&mut self, node: Node<'u>) -> Value {
        let frame = self.frame();
        let mut flat = crate::hash::HashMap::default();
        for scope in &frame.locals {
            for (k, v) in scope {
                flat.insert(k.clone(), v.clone());
            }
        }
        let closure = Closure {
            node,
            ctx: frame.ctx.clone(),
            captured: vec![flat],
            this: frame.this.clone(),
        };
        self.closures.push(closure);
        Value::Closure(self.closures.len() as u32 - 1)
    }

    /// `return e;` in the current function.
    pub(super) fn return_stmt(&mut self, node: Node<'u>) {
        let value_node = named_children(node).first().copied();
        let in_function = self.frame().ret.is_some();
        if !in_function {
            // A kernel-level return: leave the kernel.
            if let Some(v) = value_node {
                self.expr(v);
            }
            let label = self.k.exit_label;
            self.emit_at(
                StmtKind::Exit {
                    label,
                    kind: ExitKind::Return,
                },
                node,
            );
            self.dead = true;
            return;
        }
        let (by_ref, ret_ty) = {
            let r = self.frame().ret.as_ref().expect("checked");
            (r.by_ref, r.ty.clone())
        };
        let definite = self.frame().cond_depth == 0;
        if by_ref {
            let place = value_node.map(|v| self.place(v));
            if definite {
                if let Some(r) = self.frame_mut().ret.as_mut() {
                    r.definite_place = place;
                }
                self.dead = true;
            } else {
                self.unknown(node, "conditional return of a reference");
                let label = self.frame().ret.as_ref().map(|r| r.label).expect("checked");
                self.emit_at(
                    StmtKind::Exit {
                        label,
                        kind: ExitKind::Return,
                    },
                    node,
                );
                self.dead = true;
            }
            return;
        }
        let value = match value_node {
            Some(v) if v.kind_name() == "initializer_list" => {
                let items: Vec<Operand> = named_children(v).into_iter().map(|i| self.operand(i)).collect();
                self.list_value(&ret_ty, items, v)
            }
            Some(v) => {
                let val = self.expr(v);
                if matches!(ret_ty, Type::Opaque(ref n) if &**n == "auto") || ret_ty == Type::Void {
                    val
                } else {
                    self.convert(val, &ret_ty, v)
                }
            }
            None => Value::Void,
        };
        let has_slot = self.frame().ret.as_ref().is_some_and(|r| r.slot.is_some());
        if definite && !has_slot {
            if let Some(r) = self.frame_mut().ret.as_mut() {
                r.definite = Some(value);
            }
            self.dead = true;
            return;
        }
        // A conditional return: write the slot and leave the inlined body.
        let slot = match self.frame().ret.as_ref().and_then(|r| r.slot.clone()) {
            Some(s) => Some(s),
            None if !matches!(value, Value::Void) => {
                let ty = match &ret_ty {
                    Type::Opaque(n) if &**n == "auto" => value.ty(),
                    t => t.clone(),
                };
                let s = self.local_place("ret", &ty, node);
                // The slot must exist before the labelled block that holds this return.
                if let Some(r) = self.frame_mut().ret.as_mut() {
                    r.slot = Some(s.clone());
                }
                Some(s)
            }
            None => None,
        };
        if let Some(s) = &slot {
            self.write(s, value, node);
        }
        let label = self.frame().ret.as_ref().map(|r| r.label).expect("checked");
        if !definite {
            if let Some(r) = self.frame_mut().ret.as_mut() {
                r.conditional = true;
            }
            self.emit_at(
                StmtKind::Exit {
                    label,
                    kind: ExitKind::Return,
                },
                node,
            );
        }
        self.dead = true;
    }

    /// A value of class/vector type built from a braced list.
    pub(super) fn list_value(&mut self, ty: &Type, items: Vec<Operand>, node: Node<'u>) -> Value {
        self.construct(ty, items, node)
    }

    /// `T(args)` / `T{args}`: constructors, aggregate and vector initialisation, casts.
    pub(super) fn construct(&mut self, ty: &Type, operands: Vec<Operand>, node: Node<'u>) -> Value {
        let ty = ty.strip_ref().clone();
        match &ty {
            t if t.is_arith() || matches!(t, Type::Ptr(_)) => match operands.into_iter().next() {
                Some(op) => {
                    let v = self.operand_value(op, node);
                    self.convert(v, t, node)
                }
                None => self.zero(t),
            },
            Type::Vector(vt) => {
                let n = vt.n as usize;
                let elem = (*vt.elem).clone();
                let vals: Vec<Value> = operands.into_iter().map(|op| self.operand_value(op, node)).collect();
                if vals.len() == 1 && vals[0].ty() == ty {
                    return vals.into_iter().next().expect("one value");
                }
                let mut fields = Vec::new();
                for i in 0..n {
                    let v = match vals.get(i) {
                        Some(v) => self.convert(v.clone(), &elem, node),
                        // `dim3` defaults to 1; other vectors to 0.
                        None if vt.name == "dim3" => {
                            Value::Scalar(crate::ir::Expr::int(1, ScalarTy::U32), elem.clone())
                        }
                        None => self.zero(&elem),
                    };
                    fields.push(v);
                }
                Value::Agg(ty.clone(), fields)
            }
            Type::Class(inst) => {
                let inst = inst.clone();
                // A copy.
                if operands.len() == 1 && operands[0].ty().strip_ref() == &ty {
                    return self.operand_value(operands.into_iter().next().expect("one operand"), node);
                }
                let place = self.local_place("tmp", &ty, node);
                self.construct_into(&place, &inst, operands, node);
                self.read(&place, node)
            }
            Type::Lib(lib) => {
                let vals: Vec<Value> = operands.into_iter().map(|op| self.operand_value(op, node)).collect();
                Value::Agg(Type::Lib(lib.clone()), vals)
            }
            Type::Array(..) => {
                let place = self.local_place("tmp", &ty, node);
                self.init_array(&place, operands, node);
                self.read(&place, node)
            }
            _ => {
                let vals: Vec<Value> = operands.into_iter().map(|op| self.operand_value(op, node)).collect();
                match vals.into_iter().next() {
                    Some(v) => v,
                    None => Value::Unknown(ty.clone()),
                }
            }
        }
    }

    /// Runs a class's constructor (or aggregate initialisation) on a new object.
    pub(super) fn construct_into(
        &mut self,
        place: &Place,
        inst: &Rc<ClassInst>,
        operands: Vec<Operand>,
        node: Node<'u>,
    ) {
        let ty = Type::Class(inst.clone());
        let ctx = self.class_ctx(inst);
        let ctors: Vec<DeclId> = self
            .index
            .lookup_in(ctx.scope, &inst.name, 0)
            .into_iter()
            .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
            .collect();
        if !ctors.is_empty() {
            let candidates = self.definitions(&ctors);
            if let Some((ctor, env)) = self.resolve_overload(&candidates, &[], &operands, Some(inst)) {
                self.default_members(place, inst, node);
                self.inline(ctor, env, operands, Some(place.clone()), Some(inst.clone()), node);
                return;
            }
            if !operands.is_empty() {
                self.unknown(node, format!("no constructor of `{}` takes these arguments", inst.name));
                return;
            }
        }
        // Aggregate initialisation: members in order, the rest defaulted.
        self.default_members(place, inst, node);
        let fields = self.fields_of(&ty).unwrap_or_default();
        for ((fname, _), op) in fields.iter().zip(operands) {
            if let Some(fp) = self.member_place(place, fname, node) {
                let v = match op {
                    Operand::List(items) => {
                        let fty = fp.ty();
                        self.list_value(&fty, items, node)
                    }
                    other => self.operand_value(other, node),
                };
                self.write(&fp, v, node);
            }
        }
    }

    /// Writes default member initialisers (`int x = 0;` in the class) into a new object.
    fn default_members(&mut self, place: &Place, inst: &Rc<ClassInst>, node: Node<'u>) {
        let ctx = self.class_ctx(inst);
        let fields = self.index.scope(ctx.scope).fields.clone();
        for id in fields {
            let d = self.index.decl(id).clone();
            let Some(decl) = d.declarator else { continue };
            let init = decl.field("value").or_else(|| d.node.field("default_value"));
            let Some(init) = init else { continue };
            let Some(fp) = self.member_place(place, &d.name, node) else {
                continue;
            };
            let v = self.in_ctx(ctx.clone(), |l| l.expr(init));
            self.write(&fp, v, node);
        }
    }

    /// The key of an argument fixed at compile time: a constant, or a
    /// variable (a parameter of an inlined `constexpr` helper) whose value
    /// is known to be one.
    fn constant_key(&self, op: &Operand) -> Option<String> {
        match op {
            Operand::Value(v) | Operand::Place(Place::Temp(v)) if is_constant_value(v) => Some(format!("{v:?}")),
            Operand::Place(Place::Var(v, t)) => match self.known.get(v) {
                Some(e) if e.is_const() => Some(format!("{:?}", Value::Scalar(e.clone(), t.clone()))),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value of an operand (reading places).
    pub(super) fn operand_value(&mut self, op: Operand, node: Node<'u>) -> Value {
        match op {
            Operand::Place(p) => self.read(&p, node),
            Operand::Value(v) => v,
            Operand::List(items) => {
                let vals: Vec<Value> = items.into_iter().map(|i| self.operand_value(i, node)).collect();
                vals.into_iter().next().unwrap_or(Value::Void)
            }
        }
    }

    /// The zero value of a type (value-initialisation).
    pub(super) fn zero(&mut self, ty: &Type) -> Value {
        match ty {
            Type::Bool => Value::Scalar(crate::ir::Expr::Bool(false), Type::Bool),
            Type::Float(_) => Value::Scalar(crate::ir::Expr::Float(0.0), ty.clone()),
            t if t.is_arith() => Value::Scalar(crate::ir::Expr::int(0, t.scalar()), t.clone()),
            Type::Ptr(p) => Value::Ptr(super::Ptr {
                object: None,
                offset: crate::ir::Expr::int(0, ScalarTy::I64),
                pointee: (**p).clone(),
            }),
            Type::Vector(_) | Type::Class(_) => match self.fields_of(ty) {
                Some(fields) if !self.has_array(ty) => {
                    let vals = fields.iter().map(|(_, t)| self.zero(t)).collect();
                    Value::Agg(ty.clone(), vals)
                }
                _ => Value::Unknown(ty.clone()),
            },
            _ => Value::Unknown(ty.clone()),
        }
    }
}

/// The return type of a function from its base type and declarator.
fn return_type<'u>(l: &mut Lowerer<'u>, base: Type, declarator: Node<'u>) -> Type {
    // Walk to the function declarator, applying pointers/references around it.
    let mut ty = base;
    let mut node = declarator;
    for _ in 0..16 {
        match node.kind_name() {
            "function_declarator" => {
                if let Some(tr) = named_children(node)
                    .into_iter()
                    .find(|c| c.kind_name() == "trailing_return_type")
                {
                    if let Some(t) = named_children(tr).first() {
                        return l.type_descriptor(*t);
                    }
                }
                return ty;
            }
            "pointer_declarator" => ty = Type::ptr(ty),
            "reference_declarator" => ty = Type::Ref(Rc::new(ty)),
            _ => {}
        }
        node = match node
            .field("declarator")
            .or_else(|| named_children(node).into_iter().last())
        {
            Some(n) => n,
            None => return ty,
        };
    }
    ty
}

/// A by-value parameter declared `const` (`const int n`; not `const int * p`,
/// whose pointer can change).
fn is_const_scalar_param(frag: &Fragment, p: Node) -> bool {
    p.field("declarator").is_some_and(|d| d.kind_name() == "identifier")
        && named_children(p)
            .into_iter()
            .any(|c| c.kind_name() == "type_qualifier" && matches!(syntax::text(frag, c), "const" | "constexpr"))
}

/// A value fixed at compile time.
fn is_constant_value(v: &Value) -> bool {
    match v {
        Value::Scalar(e, _) => e.is_const(),
        Value::Func(_) | Value::Type(_) | Value::Void => true,
        Value::Agg(_, fields) => fields.iter().all(is_constant_value),
        _ => false,
    }
}

/// Whether a type spelling mentions any of the template parameters.
pub(super) fn mentions(text: &str, names: &[String]) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| names.iter().any(|n| n == w))
}

/// Array-to-pointer decay and reference stripping for by-value deduction.
pub(super) fn decay(t: &Type) -> Type {
    match t.strip_ref() {
        Type::Array(elem, _) => Type::Ptr(elem.clone()),
        other => other.clone(),
    }
}

/// What shape a parameter declarator has.
struct ParamPattern {
    is_ref: bool,
}

impl ParamPattern {
    fn of(p: Node) -> ParamPattern {
        let mut is_ref = false;
        let mut node = p.field("declarator");
        while let Some(n) = node {
            if n.kind_name().contains("reference_declarator") {
                is_ref = true;
            }
            node = n.field("declarator");
        }
        ParamPattern { is_ref }
    }
}

/// The cost of converting an argument of type `from` to a parameter of type
/// `to`; `None` when no implicit conversion exists.
pub(super) fn conversion_cost(to: &Type, from: &Type) -> Option<u32> {
    let to = to.strip_ref();
    let from = from.strip_ref();
    if to == from {
        return Some(0);
    }
    if matches!(to, Type::Opaque(_)) || matches!(from, Type::Opaque(_)) {
        return Some(6);
    }
    match (to, from) {
        (Type::Int { .. } | Type::Bool | Type::Enum { .. }, Type::Int { .. } | Type::Bool | Type::Enum { .. }) => {
            Some(if common_type(to, from) == *to { 1 } else { 2 })
        }
        (Type::Float(_), Type::Float(_)) => Some(1),
        (Type::Float(_), t) | (t, Type::Float(_)) if t.is_arith() => Some(3),
        (Type::Ptr(a), Type::Ptr(b)) | (Type::Ptr(a), Type::Array(b, _)) => {
            if a == b {
                Some(0)
            } else if matches!(**a, Type::Void) {
                Some(3)
            } else if matches!(**a, Type::Opaque(_)) || matches!(**b, Type::Opaque(_)) {
                Some(5)
            } else {
                None
            }
        }
        (Type::Ptr(_), Type::Nullptr) => Some(1),
        (Type::Bool, Type::Ptr(_)) => Some(4),
        // An address carried as an integer (shared-memory addresses for asm).
        (Type::Int { bits, .. }, Type::Ptr(_)) if *bits >= 32 => Some(7),
        (Type::Closure(_), _) | (_, Type::Closure(_)) => None,
        (Type::Class(a), Type::Class(b)) => {
            if a.decl == b.decl && a.args == b.args {
                Some(0)
            } else {
                Some(8)
            }
        }
        (Type::Class(_), _) => Some(10),
        (Type::Lib(a), Type::Lib(b)) if a.name == b.name => Some(1),
        (Type::Lib(_), _) | (_, Type::Lib(_)) => Some(9),
        (Type::Vector(_), Type::Vector(_)) => None,
        _ => None,
    }
}

impl<'u> Lowerer<'u> {
    /// A call expression: resolves the callee by the shape of its syntax.
    pub(super) fn call(&mut self, node: Node<'u>) -> Operand {
        let Some(func) = node.field("function") else {
            return Operand::Value(self.unknown_value(node, "call without a callee"));
        };
        if named_children(node)
            .iter()
            .any(|c| c.kind_name() == "kernel_call_syntax")
        {
            return Operand::Value(self.unknown_value(node, "kernel launch from device code"));
        }
        let args = node.field("arguments");
        match func.kind_name() {
            "identifier" => {
                let name = self.text(func).to_string();
                // `dim3(x, y)`, `make`-less vector construction.
                if let Some(ty @ Type::Vector(_)) = super::types::named_scalar(&name) {
                    let ops = self.operands(args);
                    return Operand::Value(self.construct(&ty, ops, node));
                }
                self.call_by_name(&name, &[], args, node)
            }
            "template_function" => {
                let name = func.field("name").map(|n| self.text(n).to_string()).unwrap_or_default();
                if matches!(
                    name.as_str(),
                    "static_cast" | "reinterpret_cast" | "const_cast" | "dynamic_cast" | "bit_cast"
                ) {
                    return self.cast_call(func, args, node);
                }
                let explicit = match func.field("arguments") {
                    Some(a) => self.template_args(a),
                    None => Vec::new(),
                };
                self.call_by_name(&name, &explicit, args, node)
            }
            "qualified_identifier" => self.call_qualified(func, args, node),
            "field_expression" => self.method_call(func, args, node),
            "primitive_type" | "sized_type_specifier" | "template_type" | "type_identifier" => {
                let ty = self.type_node(func);
                let ops = self.operands(args);
                Operand::Value(self.construct(&ty, ops, node))
            }
            _ => {
                let callee = self.expr(func);
                let ops = self.operands(args);
                match callee.clone() {
                    Value::Closure(id) => self.call_closure(id, ops, node),
                    Value::Func(f) => self.call_named(&f.ids, &f.args, ops, None, None, node),
                    Value::Choice(fs) => self.call_choice(&fs, ops, node),
                    Value::Type(t) => Operand::Value(self.construct(&t, ops, node)),
                    Value::Agg(Type::Class(inst), _) | Value::Mem(_, Type::Class(inst)) => {
                        // A function object: `S{}(args)`.
                        let this = match &callee {
                            Value::Mem(p, t) => Place::Mem(p.clone(), t.clone()),
                            other => Place::Temp(other.clone()),
                        };
                        match self.member_functions(&inst, "operator()", 0) {
                            Some((ids, owner)) => self.call_named(&ids, &[], ops, Some(this), Some(owner), node),
                            None => Operand::Value(
                                self.unknown_value(node, format!("call of a `{}`, which has no operator()", inst.name)),
                            ),
                        }
                    }
                    _ => Operand::Value(self.unknown_value(node, "call through a function pointer")),
                }
            }
        }
    }

    /// `static_cast<T>(v)` and friends.
    fn cast_call(&mut self, func: Node<'u>, args: Option<Node<'u>>, node: Node<'u>) -> Operand {
        let ty = func
            .field("arguments")
            .and_then(|a| named_children(a).into_iter().next())
            .map(|t| self.type_descriptor(t))
            .unwrap_or(Type::Opaque("?".into()));
        let arg = args.and_then(|a| named_children(a).first().copied());
        let Some(arg) = arg else {
            return Operand::Value(self.unknown_value(node, "cast without an operand"));
        };
        if let Type::Ref(inner) = &ty {
            let place = self.place(arg);
            let inner = (**inner).clone();
            let p = match place {
                Place::Mem(ptr, _) => Place::Mem(
                    Ptr {
                        pointee: inner.clone(),
                        ..ptr
                    },
                    inner,
                ),
                Place::Var(v, _) if inner.is_arith() => Place::Var(v, inner),
                other if other.ty().strip_ref() == &inner => other,
                other => {
                    // A register value viewed as another type: its bits are opaque.
                    let v = self.read(&other, node);
                    let v = self.convert(v, &inner, node);
                    Place::Temp(v)
                }
            };
            return Operand::Place(p);
        }
        let v = self.expr(arg);
        Operand::Value(self.convert(v, &ty, node))
    }

    /// Member functions named `name` of a class or its bases, with the class that declares them.
    fn member_functions(
        &mut self,
        inst: &Rc<ClassInst>,
        name: &str,
        depth: u32,
    ) -> Option<(Vec<DeclId>, Rc<ClassInst>)> {
        let ctx = self.class_ctx(inst);
        let ids: Vec<DeclId> = self
            .index
            .lookup_in(ctx.scope, name, 0)
            .into_iter()
            .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
            .collect();
        if !ids.is_empty() {
            return Some((ids, inst.clone()));
        }
        if depth > 8 {
            return None;
        }
        for b in self.base_classes(inst) {
            if let Some(found) = self.member_functions(&b, name, depth + 1) {
                return Some(found);
            }
        }
        None
    }

    /// A call through a function pointer that holds one of `funcs`: each
    /// candidate under `choice == i`, a fresh grid-uniform symbol (the
    /// pointer is fixed by the instantiation), so every candidate is
    /// checked. The result is a variable the branches assign.
    fn call_choice(&mut self, funcs: &[Rc<super::types::FuncRef>], ops: Vec<Operand>, node: Node<'u>) -> Operand {
        let key = format!("choice of a function pointer #{}", self.syms.len());
        let choice = self.sym(&key, ScalarTy::I32, SymKind::Unresolved);
        self.frame_mut().cond_depth += 1;
        let before = self.known.clone();
        let mut result: Option<Place> = None;
        let mut blocks = Vec::new();
        let mut all_dead = true;
        for f in funcs {
            let block = self.sub_block(|l| {
                let v = match l.call_named(&f.ids, &f.args, ops.clone(), None, None, node) {
                    Operand::Value(v) => v,
                    Operand::Place(p) => l.read(&p, node),
                    Operand::List(_) => Value::Void,
                };
                if !matches!(v, Value::Void) {
                    let place = match &result {
                        Some(p) => p.clone(),
                        None => {
                            let p = l.local_place("result", &v.ty(), node);
                            result = Some(p.clone());
                            p
                        }
                    };
                    l.write(&place, v, node);
                }
            });
            all_dead &= std::mem::replace(&mut self.dead, false);
            self.known = before.clone();
            blocks.push(block);
        }
        self.frame_mut().cond_depth -= 1;
        // if (choice == 0) … else if (choice == 1) … else (the last).
        let mut chain = blocks.pop().unwrap_or_default();
        for (i, then_block) in blocks.into_iter().enumerate().rev() {
            let cond = crate::ir::Expr::Binary(
                crate::ir::BinOp::Eq,
                ScalarTy::I32,
                Box::new(crate::ir::Expr::Sym(choice)),
                Box::new(crate::ir::Expr::int(i as i128, ScalarTy::I32)),
            );
            chain = self.sub_block(|l| {
                l.emit_at(
                    StmtKind::If {
                        cond,
                        then_block,
                        else_block: chain,
                    },
                    node,
                )
            });
        }
        if let Some(b) = self.blocks.last_mut() {
            b.extend(chain.0);
        }
        self.dead = all_dead;
        match result {
            Some(p) => Operand::Value(self.read(&p, node)),
            None => Operand::Value(Value::Void),
        }
    }

    /// `f(args)` / `f<T>(args)` by unqualified name.
    fn call_by_name(&mut self, name: &str, explicit: &[TArg], args: Option<Node<'u>>, node: Node<'u>) -> Operand {
        match self.lookup_local(name) {
            Some(Binding::Value(Value::Closure(id))) => {
                let ops = self.operands(args);
                return self.call_closure(id, ops, node);
            }
            Some(Binding::Value(Value::Func(f))) | Some(Binding::Place(Place::Temp(Value::Func(f)))) => {
                let ops = self.operands(args);
                let mut targs = f.args.clone();
                targs.extend(explicit.iter().cloned());
                return self.call_named(&f.ids, &targs, ops, None, None, node);
            }
            Some(Binding::Value(Value::Choice(fs))) if explicit.is_empty() => {
                let ops = self.operands(args);
                return self.call_choice(&fs, ops, node);
            }
            Some(Binding::Place(p)) => {
                let ty = p.ty();
                if let Place::Cell(..) = &p {
                    let ops = self.operands(args);
                    return match self.read(&p, node) {
                        Value::Func(f) => self.call_named(&f.ids, &f.args, ops, None, None, node),
                        Value::Choice(fs) => self.call_choice(&fs, ops, node),
                        _ => Operand::Value(self.unknown_value(
                            node,
                            format!("call through `{name}`, a function pointer not known here"),
                        )),
                    };
                }
                match ty.strip_ref() {
                    Type::Closure(id) => {
                        let id = *id;
                        let ops = self.operands(args);
                        return self.call_closure(id, ops, node);
                    }
                    Type::Class(inst) => {
                        let inst = inst.clone();
                        let ops = self.operands(args);
                        if let Some((ids, owner)) = self.member_functions(&inst, "operator()", 0) {
                            return self.call_named(&ids, explicit, ops, Some(p), Some(owner), node);
                        }
                        return Operand::Value(
                            self.unknown_value(node, format!("call of `{name}`, which has no operator()")),
                        );
                    }
                    _ => {
                        if let Place::Temp(Value::Closure(id)) = p {
                            let ops = self.operands(args);
                            return self.call_closure(id, ops, node);
                        }
                    }
                }
            }
            Some(Binding::Type(t)) => {
                let ops = self.operands(args);
                return Operand::Value(self.construct(&t, ops, node));
            }
            _ => {}
        }
        let ops = self.operands(args);
        // Members of the enclosing class (implicit `this`).
        if let Some(class) = self.ctx().class.clone() {
            if let Some((ids, owner)) = self.member_functions(&class, name, 0) {
                let this = self.frame().this.clone();
                return self.call_named(&ids, explicit, ops, this, Some(owner), node);
            }
        }
        let scope = self.ctx().scope;
        let mut ids = self.index.lookup(scope, name);
        for u in self.frame().usings.clone() {
            ids.extend(self.index.lookup_in(u, name, 0));
        }
        self.call_decls(&ids, name, explicit, ops, node)
    }

    /// Calls whatever `ids` name: functions, or a type (a constructor call);
    /// else a built-in; else an unknown function.
    fn call_decls(
        &mut self,
        ids: &[DeclId],
        name: &str,
        explicit: &[TArg],
        ops: Vec<Operand>,
        node: Node<'u>,
    ) -> Operand {
        let functions: Vec<DeclId> = ids
            .iter()
            .copied()
            .filter(|&id| self.index.decl(id).kind == DeclKind::Function)
            .collect();
        if !functions.is_empty() {
            return self.call_named(&functions, explicit, ops, None, None, node);
        }
        if ids
            .iter()
            .any(|&id| matches!(self.index.decl(id).kind, DeclKind::Class | DeclKind::Alias))
        {
            let last = name.rsplit("::").next().unwrap_or(name).to_string();
            let ty = self.named_type(&last, node);
            let ty = match (&ty, explicit.is_empty()) {
                (Type::Class(inst), false) => {
                    let inst = inst.clone();
                    self.instantiate_class(&[inst.decl], explicit.to_vec(), node)
                }
                _ => ty,
            };
            return Operand::Value(self.construct(&ty, ops, node));
        }
        match self.builtin_call(name, explicit, ops, node) {
            Ok(r) => r,
            Err(call) => Operand::Value(self.opaque_of(name, call, node)),
        }
    }

    /// `ns::f(args)`, `Class::f(args)`, `T::f(args)`, `std::max(a, b)`.
    fn call_qualified(&mut self, func: Node<'u>, args: Option<Node<'u>>, node: Node<'u>) -> Operand {
        let full = super::index::normalize(self.text(func));
        let (Some(scope_node), Some(name_node)) = (func.field("scope"), func.field("name")) else {
            let ops = self.operands(args);
            return Operand::Value(self.opaque_call(&full, &ops, node));
        };
        if name_node.kind_name() == "qualified_identifier" {
            // `a::b::f`: resolve `a` and continue inside it.
            let first = super::index::normalize(self.text(scope_node));
            let parts: Vec<&str> = first.split("::").collect();
            if let Some(s) = self.resolve_scope_path(&parts) {
                let ctx = Ctx {
                    scope: s,
                    ..self.ctx().clone()
                };
                let usings = self.frame().usings.clone();
                let locals = self.frame().locals.clone();
                let this = self.frame().this.clone();
                let fake_call = node;
                // Evaluate the arguments in the caller's context first.
                let ops = self.operands(args);
                return self.in_ctx(ctx, |l| {
                    l.frame_mut().usings = usings;
                    l.frame_mut().locals = locals;
                    l.frame_mut().this = this;
                    l.qualified_with_ops(name_node, ops, fake_call, &full)
                });
            }
            let ops = self.operands(args);
            return self.library_or_opaque(&full, &[], ops, node);
        }
        let ops = self.operands(args);
        self.qualified_with_ops(func, ops, node, &full)
    }

    /// A qualified callee whose arguments are evaluated.
    fn qualified_with_ops(&mut self, func: Node<'u>, ops: Vec<Operand>, node: Node<'u>, full: &str) -> Operand {
        let (Some(scope_node), Some(name_node)) = (func.field("scope"), func.field("name")) else {
            return self.library_or_opaque(full, &[], ops, node);
        };
        if name_node.kind_name() == "qualified_identifier" {
            let first = super::index::normalize(self.text(scope_node));
            let parts: Vec<&str> = first.split("::").collect();
            if let Some(s) = self.resolve_scope_path(&parts) {
                let ctx = Ctx {
                    scope: s,
                    ..self.ctx().clone()
                };
                return self.in_ctx(ctx, |l| l.qualified_with_ops(name_node, ops, node, full));
            }
            return self.library_or_opaque(full, &[], ops, node);
        }
        let (name, explicit) = match name_node.kind_name() {
            "template_function" => {
                let n = name_node
                    .field("name")
                    .map(|n| self.text(n).to_string())
                    .unwrap_or_default();
                let a = match name_node.field("arguments") {
                    Some(a) => self.template_args(a),
                    None => Vec::new(),
                };
                (n, a)
            }
            _ => (super::index::normalize(self.text(name_node)), Vec::new()),
        };
        // A class scope: a static member function (or a base-class call with `this`).
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
            if let Some((ids, owner)) = self.member_functions(inst, &name, 0) {
                // `Base::f()` inside a member function calls it on `this`; elsewhere `this` is absent.
                let this = self.frame().this.clone();
                return self.call_named(&ids, &explicit, ops, this, Some(owner), node);
            }
            if name == inst.name {
                let ty = Type::Class(inst.clone());
                return Operand::Value(self.construct(&ty, ops, node));
            }
            return Operand::Value(self.unknown_value(node, format!("no member function `{name}` in `{}`", inst.name)));
        }
        let path = super::index::normalize(self.text(scope_node));
        let parts: Vec<&str> = path.split("::").map(|p| p.split('<').next().unwrap_or(p)).collect();
        if let Some(s) = self.resolve_scope_path(&parts) {
            let ids = self.index.lookup_in(s, &name, 0);
            if !ids.is_empty() {
                return self.call_decls(&ids, &name, &explicit, ops, node);
            }
        }
        self.library_or_opaque(full, &explicit, ops, node)
    }

    fn library_or_opaque(&mut self, full: &str, explicit: &[TArg], ops: Vec<Operand>, node: Node<'u>) -> Operand {
        let full_no_args: String = {
            let mut depth = 0;
            full.chars()
                .filter(|&c| {
                    match c {
                        '<' => depth += 1,
                        '>' => depth -= 1,
                        _ => return depth == 0,
                    }
                    false
                })
                .collect()
        };
        let call = match self.builtin_call(&full_no_args, explicit, ops, node) {
            Ok(r) => return r,
            Err(call) => call,
        };
        // `std::numeric_limits<T>::max()` and similar.
        if full.contains("numeric_limits") {
            return Operand::Value(self.numeric_limit(full, node));
        }
        Operand::Value(self.opaque_of(&full_no_args, call, node))
    }

    fn numeric_limit(&mut self, full: &str, node: Node<'u>) -> Value {
        let inner = full
            .split('<')
            .nth(1)
            .and_then(|s| s.split('>').next())
            .unwrap_or("")
            .trim()
            .to_string();
        let member = full.rsplit("::").next().unwrap_or("");
        let ty = super::types::named_scalar(&inner)
            .or_else(|| match self.lookup_local(&inner) {
                Some(Binding::Type(t)) => Some(t),
                _ => None,
            })
            .unwrap_or(Type::Opaque(inner.clone().into()));
        match (&ty, member) {
            (Type::Int { bits, signed }, "max") => {
                let v = if *signed {
                    (1i128 << (bits - 1)) - 1
                } else {
                    (1i128 << bits) - 1
                };
                Value::Scalar(crate::ir::Expr::int(v, ty.scalar()), ty.clone())
            }
            (Type::Int { bits, signed }, "min" | "lowest") => {
                let v = if *signed { -(1i128 << (bits - 1)) } else { 0 };
                Value::Scalar(crate::ir::Expr::int(v, ty.scalar()), ty.clone())
            }
            (Type::Float(_), "max") => Value::Scalar(crate::ir::Expr::Float(f32::MAX as f64), ty.clone()),
            (Type::Float(_), "lowest") => Value::Scalar(crate::ir::Expr::Float(f32::MIN as f64), ty.clone()),
            (Type::Float(_), "infinity") => Value::Scalar(crate::ir::Expr::Float(f64::INFINITY), ty.clone()),
            (Type::Float(_), "min") => Value::Scalar(crate::ir::Expr::Float(f32::MIN_POSITIVE as f64), ty.clone()),
            _ => self.unknown_value(node, format!("`{full}`")),
        }
    }

    /// `obj.f(args)` / `ptr->f(args)`.
    fn method_call(&mut self, func: Node<'u>, args: Option<Node<'u>>, node: Node<'u>) -> Operand {
        let (Some(arg), Some(field)) = (func.field("argument"), func.field("field")) else {
            return Operand::Value(self.unknown_value(node, "method call without an object"));
        };
        let arrow = func.field("operator").is_some_and(|o| self.text(o) == "->");
        let (name, explicit) = match field.kind_name() {
            "template_method" => {
                let n = field
                    .field("name")
                    .map(|n| self.text(n).to_string())
                    .unwrap_or_default();
                let a = match field.field("arguments") {
                    Some(a) => self.template_args(a),
                    None => Vec::new(),
                };
                (n, a)
            }
            _ => (super::index::normalize(self.text(field)), Vec::new()),
        };
        let object = if arg.kind_name() == "this" {
            match self.frame().this.clone() {
                Some(p) => p,
                None => return Operand::Value(self.unknown_value(node, "`this` outside a member function")),
            }
        } else if arrow {
            let v = self.expr(arg);
            self.deref(v, node)
        } else {
            self.place(arg)
        };
        let ops = self.operands(args);
        let ty = object.ty();
        match ty.strip_ref() {
            Type::Class(inst) => {
                let inst = inst.clone();
                match self.member_functions(&inst, &name, 0) {
                    Some((ids, owner)) => self.call_named(&ids, &explicit, ops, Some(object), Some(owner), node),
                    None => Operand::Value(
                        self.unknown_value(node, format!("no member function `{name}` in `{}`", inst.name)),
                    ),
                }
            }
            Type::Lib(_) => self.library_method(&object, &name, ops, node),
            Type::Closure(id) if name == "operator()" => {
                let id = *id;
                self.call_closure(id, ops, node)
            }
            other => {
                let t = other.display();
                Operand::Value(self.unknown_value(node, format!("method `{name}` of `{t}`")))
            }
        }
    }
}

/// A call that no builtin models, with its arguments' values (read once)
/// and whether one of them reaches memory (see [`reaches_memory`]).
pub(super) struct Unresolved {
    pub(super) values: Vec<Value>,
    pub(super) touches_memory: bool,
}

/// Whether an argument may let a function not defined here reach memory:
/// a pointer, a reference to memory, a pointer variable.
pub(super) fn reaches_memory(op: &Operand) -> bool {
    let ty = op.ty();
    ty.is_pointer_like()
        || matches!(op, Operand::Place(Place::Mem(..))) && matches!(ty, Type::Ref(_))
        || matches!(op, Operand::Value(Value::Ptr(_)) | Operand::Place(Place::PtrVar { .. }))
}
