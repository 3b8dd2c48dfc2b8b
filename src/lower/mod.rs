//! Lowering: from the syntax of one translation unit to kernel IR.
//!
//! Input: a preprocessed [`Unit`], its [`Index`], a kernel and a template
//! argument tuple. Output: an [`ir::Kernel`] with every device function,
//! member function and lambda inlined, templates instantiated, `constexpr`
//! evaluated where constant, and `if constexpr` resolved.
//!
//! The lowering is a symbolic evaluator of C++: expressions evaluate to
//! [`Value`]s (IR expressions with C++ types), effects become IR statements in
//! program order. Compile-time constants fold as they are built, so dead
//! branches of constant conditions disappear, which is what makes a
//! `width == warp_size` test inside a helper decide which code the kernel has.
//!
//! Invariant: nothing is dropped silently. A construct the lowering does not
//! model becomes an `Unknown` statement and an entry of `Kernel::unknowns`
//! (reason and span), and its value is `Value::Unknown`.

mod async_copy;
mod builtins;
mod call;
pub mod device_fields;
mod expr;
pub mod index;
pub mod instantiate;
mod layout;
mod stmt;
pub mod types;
mod value;

#[cfg(test)]
pub(crate) mod tests;

use crate::hash::HashMap;
use std::rc::Rc;

use petgraph::graphmap::DiGraphMap;
use tree_sitter::Node;

use crate::syntax::NodeExt;

use crate::ir::{
    self, Expr, Kernel, LabelId, MemObject, ObjectId, ObjectKind, OpId, ScalarTy, Space, Stmt, StmtKind, SymId,
    SymKind, VarId,
};
use crate::preprocess::{Fragment, Unit};
use crate::source::Span;
use crate::syntax;

pub use index::{DeclId, Index, ScopeId};
use layout::Layout;
pub use types::{CVal, ClassInst, TArg, Type};
pub use value::{Binding, Place, Ptr, PtrSlot, TemplateEnv, Value};

/// What lowering needs to know about the target.
#[derive(Clone, Debug)]
pub struct LowerConfig {
    /// The warp size the kernel is analysed for (`--warp-size`).
    pub warp_size: u32,
    /// Deepest chain of inlined calls.
    pub max_inline_depth: usize,
    /// Deepest nesting of expressions and statements followed.
    pub max_nesting: usize,
    /// Host struct fields that hold the device's warp size
    /// ([`device_fields`]): host code reads them as `warp_size`.
    pub warp_size_fields: Vec<String>,
    /// Host struct fields that hold the device's compute capability
    /// ([`device_fields`]): host code reads them as `compute_capability`.
    pub compute_capability_fields: Vec<String>,
    /// The compute capability of the target (`__CUDA_ARCH__`; none for HIP).
    pub compute_capability: Option<u32>,
}

impl Default for LowerConfig {
    fn default() -> Self {
        LowerConfig {
            warp_size: 32,
            max_inline_depth: 48,
            max_nesting: 600,
            warp_size_fields: Vec::new(),
            compute_capability_fields: Vec::new(),
            compute_capability: None,
        }
    }
}

/// Where names are looked up and types resolved: a fragment, a scope of the
/// index, template arguments in force and the enclosing class.
#[derive(Clone)]
pub(crate) struct Ctx<'u> {
    pub frag: &'u Fragment,
    pub scope: ScopeId,
    pub tenv: Rc<TemplateEnv>,
    pub class: Option<Rc<ClassInst>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TargetKind {
    Loop,
    Switch,
    /// An iteration of an unrolled range-for: `break` and `continue` leave
    /// labelled blocks.
    Unrolled {
        brk: LabelId,
        cont: LabelId,
    },
}

/// A `break`/`continue` target.
#[derive(Clone, Copy, Debug)]
struct Target {
    label: LabelId,
    kind: TargetKind,
}

/// How an inlined function returns.
struct Ret {
    label: LabelId,
    ty: Type,
    /// Returns a reference: the result is a place.
    by_ref: bool,
    slot: Option<Place>,
    /// The value of a `return` reached unconditionally.
    definite: Option<Value>,
    definite_place: Option<Place>,
    /// Some `return` happened under a condition (an `Exit` was emitted).
    conditional: bool,
}

/// One function being lowered (the kernel or an inlined callee).
struct Frame<'u> {
    ctx: Ctx<'u>,
    locals: Vec<HashMap<String, Binding>>,
    this: Option<Place>,
    ret: Option<Ret>,
    targets: Vec<Target>,
    usings: Vec<ScopeId>,
    /// The function and arguments, to detect recursion.
    key: Option<(DeclId, String)>,
    /// Nesting of conditionals and loops inside this function: a `return` at
    /// depth 0 is reached whenever the function is.
    cond_depth: u32,
}

/// A lambda: its node and what it captured.
struct Closure<'u> {
    node: Node<'u>,
    ctx: Ctx<'u>,
    captured: Vec<HashMap<String, Binding>>,
    this: Option<Place>,
}

pub struct Lowerer<'u> {
    unit: &'u Unit,
    index: &'u Index<'u>,
    config: &'u LowerConfig,
    k: Kernel,
    frames: Vec<Frame<'u>>,
    blocks: Vec<Vec<Stmt>>,
    /// The current point is unreachable (after an unconditional exit).
    dead: bool,
    /// Spans of the calls (in the kernel's own body) being inlined.
    sites: Vec<Span>,
    ptr_slots: Vec<PtrSlot>,
    /// Choice objects of pointer variables: their selector and candidates.
    choices: HashMap<ObjectId, (VarId, Vec<Option<ObjectId>>)>,
    next_label: u32,
    /// Static `__shared__` arrays by declaration and instantiation.
    shared: HashMap<(usize, String), ObjectId>,
    /// `constexpr` locals not computed, by declaration and template environment.
    constexprs: HashMap<(usize, String), crate::ir::SymId>,
    dynamic_shared: Option<ObjectId>,
    untraced: HashMap<Space, ObjectId>,
    layouts: HashMap<Rc<ClassInst>, Rc<Layout>>,
    /// Each class instantiation's definition and template environment
    /// (`class_definition`: matching specialisations was 9% of the listing).
    class_defs: HashMap<ClassInst, (DeclId, TemplateEnv)>,
    globals: HashMap<(DeclId, String), Binding>,
    unresolved_objects: HashMap<String, ObjectId>,
    enum_values: HashMap<DeclId, i128>,
    closures: Vec<Closure<'u>>,
    ops: HashMap<String, OpId>,
    syms: HashMap<String, SymId>,
    depth: usize,
    /// Inside a branch of an `if constexpr` whose condition is symbolic.
    speculative: u32,
    /// Inside a branch (not `if constexpr`) whose condition is the same in
    /// every thread: a function pointer chosen there is one choice per launch.
    uniform_branches: u32,
    /// Where a `static_assert` failed: no program holds this instantiation.
    ill_formed: Option<crate::source::Span>,
    /// Variables that hold a known constant at the current point, and those
    /// that hold a grid-uniform value (mapped to themselves: a read is the
    /// variable, but a condition on it is the same in every thread).
    /// Shared until written: each branch of a symbolic condition starts
    /// from a copy (cloning it took 14% of the listing of ggml with 256
    /// instantiations per kernel).
    known: std::rc::Rc<HashMap<VarId, Expr>>,
    /// Evaluating an expression C++ requires to be constant (template
    /// argument, `static_assert`, array bound, `constexpr` initializer).
    constant_context: u32,
    /// Where the outermost constant context began: the frame it began in,
    /// that frame's conditions then, and the speculative and uniform
    /// branches then. A constant is one value however the code around
    /// its evaluation branches: only the branches inside it count.
    constant_base: Option<(usize, u32, u32, u32)>,
    /// Reading host code for template arguments: only what is constant is
    /// evaluated; other calls give values of their return types.
    host_mode: bool,
    /// Results of calls with constant arguments that emitted no statement.
    pure_calls: HashMap<(DeclId, String), Value>,
    /// Which function inlined which (the kernel is `kernel_decl`).
    call_graph: DiGraphMap<u32, ()>,
    kernel_decl: DeclId,
}

/// A kernel definition: what `warpdrf kernels` lists.
#[derive(Clone, Debug)]
pub struct KernelDef {
    pub decl: DeclId,
    pub name: String,
    /// The kernel's name in its definition.
    pub span: Span,
    /// The whole definition, `template <…>` included.
    pub definition: Span,
    /// Template parameters as written (`int N`, `typename T = float`).
    pub template_params: Vec<String>,
}

/// The kernels of a unit, in order.
pub fn kernel_defs(index: &Index) -> Vec<KernelDef> {
    index
        .kernels
        .iter()
        .map(|k| {
            let d = index.decl(k.decl);
            let name_node = d
                .node
                .field("declarator")
                .and_then(|decl| index::declarator_name(d.frag, decl))
                .map(|(_, n)| n)
                .unwrap_or(d.node);
            let template_params = d
                .template
                .map(|t| {
                    syntax::named_children(t)
                        .into_iter()
                        .map(|p| index::normalize_spaces(syntax::text(d.frag, p)))
                        .collect()
                })
                .unwrap_or_default();
            KernelDef {
                decl: k.decl,
                name: d.name.clone(),
                span: syntax::span(d.frag, name_node),
                definition: syntax::span(d.frag, d.template.and_then(|t| t.parent()).unwrap_or(d.node)),
                template_params,
            }
        })
        .collect()
}

/// The kernels a unit declares (`__global__ void k(float *);`) but does
/// not define, by name: another unit defines them, and this one may launch
/// them.
pub fn declared_kernels(index: &Index) -> Vec<(String, DeclId)> {
    let defined: Vec<&str> = index.kernels.iter().map(|k| index.decl(k.decl).name.as_str()).collect();
    let mut out: Vec<(String, DeclId)> = Vec::new();
    for (i, d) in index.decls.iter().enumerate() {
        if d.kind == index::DeclKind::Function
            && !d.defined
            && index::is_global(d.node)
            && !defined.contains(&d.name.as_str())
            && !out.iter().any(|(n, _)| *n == d.name)
        {
            out.push((d.name.clone(), DeclId(i as u32)));
        }
    }
    out
}

/// Lowers one kernel instantiation. `args` binds its template parameters in
/// order; missing ones take their defaults or stay symbolic.
pub fn lower_kernel(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId, args: &[Option<TArg>]) -> Kernel {
    let mut l = Lowerer::new(unit, index, config, kernel);
    l.kernel(kernel, args);
    l.finish()
}

impl<'u> Lowerer<'u> {
    fn new(unit: &'u Unit, index: &'u Index<'u>, config: &'u LowerConfig, kernel: DeclId) -> Lowerer<'u> {
        let d = index.decl(kernel);
        let span = syntax::span(d.frag, d.node);
        Lowerer {
            unit,
            index,
            config,
            k: Kernel {
                name: d.name.clone(),
                span,
                template_args: Vec::new(),
                params: Vec::new(),
                vars: Vec::new(),
                objects: Vec::new(),
                syms: Vec::new(),
                ops: Vec::new(),
                launch_bounds: None,
                exit_label: LabelId(0),
                body: ir::Block::default(),
                unknowns: Vec::new(),
                memory_unknowns: Vec::new(),
                assumptions: Vec::new(),
                helpers: Vec::new(),
                call_depth: 0,
            },
            frames: Vec::new(),
            blocks: Vec::new(),
            dead: false,
            sites: Vec::new(),
            ptr_slots: Vec::new(),
            choices: HashMap::default(),
            next_label: 1,
            shared: HashMap::default(),
            constexprs: HashMap::default(),
            dynamic_shared: None,
            untraced: HashMap::default(),
            layouts: HashMap::default(),
            class_defs: HashMap::default(),
            globals: HashMap::default(),
            unresolved_objects: HashMap::default(),
            enum_values: HashMap::default(),
            closures: Vec::new(),
            ops: HashMap::default(),
            syms: HashMap::default(),
            depth: 0,
            speculative: 0,
            uniform_branches: 0,
            ill_formed: None,
            known: Default::default(),
            constant_context: 0,
            constant_base: None,
            host_mode: false,
            pure_calls: HashMap::default(),
            call_graph: DiGraphMap::new(),
            kernel_decl: kernel,
        }
    }

    fn finish(mut self) -> Kernel {
        if let Some(span) = self.ill_formed {
            // Nothing of it runs: it only traps (see `Kernel::always_traps`).
            self.k.body.0 = vec![ir::Stmt {
                kind: ir::StmtKind::Assume(ir::Expr::Bool(false)),
                span,
                site: span,
            }];
            self.k.unknowns.clear();
        }
        let root = self.kernel_decl.0;
        let mut helpers: Vec<String> = self
            .call_graph
            .nodes()
            .filter(|&n| n != root)
            .map(|n| self.index.decl(DeclId(n)).name.clone())
            .collect();
        helpers.sort();
        helpers.dedup();
        self.k.helpers = helpers;
        self.k.call_depth = longest_chain(&self.call_graph, root);
        // Selectors of pointer variables that only ever had one buffer say nothing.
        let unused: crate::hash::HashSet<VarId> = self
            .ptr_slots
            .iter()
            .filter(|s| s.objects.iter().flatten().count() <= 1)
            .filter_map(|s| s.selector)
            .collect();
        if !unused.is_empty() {
            remove_assignments(&mut self.k.body.0, &unused);
        }
        self.k.unknowns.sort();
        self.k.unknowns.dedup();
        self.k.assumptions.sort();
        self.k.assumptions.dedup();
        self.k
    }

    // ----- contexts and frames -------------------------------------------------

    fn frame(&self) -> &Frame<'u> {
        self.frames.last().expect("lowering always runs inside a frame")
    }

    fn frame_mut(&mut self) -> &mut Frame<'u> {
        self.frames.last_mut().expect("lowering always runs inside a frame")
    }

    fn ctx(&self) -> &Ctx<'u> {
        &self.frame().ctx
    }

    fn frag(&self) -> &'u Fragment {
        self.frame().ctx.frag
    }

    fn text(&self, node: Node) -> &'u str {
        syntax::text(self.frag(), node)
    }

    fn span(&self, node: Node) -> Span {
        syntax::span(self.frag(), node)
    }

    fn push_frame(&mut self, ctx: Ctx<'u>) {
        self.frames.push(Frame {
            ctx,
            locals: vec![HashMap::default()],
            this: None,
            ret: None,
            targets: Vec::new(),
            usings: Vec::new(),
            key: None,
            cond_depth: 0,
        });
    }

    /// Runs `f` with `ctx` as the lookup context (no locals, no `this`):
    /// evaluating a class's static member or a default argument.
    fn in_ctx<T>(&mut self, ctx: Ctx<'u>, f: impl FnOnce(&mut Self) -> T) -> T {
        self.push_frame(ctx);
        let result = f(self);
        self.frames.pop();
        result
    }

    fn bind(&mut self, name: &str, b: Binding) {
        self.frame_mut()
            .locals
            .last_mut()
            .expect("a frame has a scope")
            .insert(name.to_string(), b);
    }

    fn lookup_local(&self, name: &str) -> Option<Binding> {
        let frame = self.frame();
        for scope in frame.locals.iter().rev() {
            if let Some(b) = scope.get(name) {
                return Some(b.clone());
            }
        }
        frame.ctx.tenv.get(name).map(|a| match a {
            TArg::Type(t) => Binding::Type(t.clone()),
            TArg::Value(v) => Binding::Value(self.cval_value(*v)),
            TArg::Func(f) => Binding::Value(Value::Func(f.clone())),
            TArg::Choice(fs) => Binding::Value(Value::Choice(fs.clone())),
            TArg::Pack(items) => {
                if items.iter().all(|i| matches!(i, TArg::Type(_))) && !items.is_empty() {
                    Binding::TypePack(
                        items
                            .iter()
                            .filter_map(|i| match i {
                                TArg::Type(t) => Some(t.clone()),
                                _ => None,
                            })
                            .collect(),
                    )
                } else {
                    Binding::Pack(
                        items
                            .iter()
                            .map(|i| match i {
                                TArg::Type(t) => Binding::Type(t.clone()),
                                TArg::Value(v) => Binding::Value(self.cval_value(*v)),
                                TArg::Pack(_) => Binding::Value(Value::Void),
                                TArg::Func(f) => Binding::Value(Value::Func(f.clone())),
                                TArg::Choice(fs) => Binding::Value(Value::Choice(fs.clone())),
                            })
                            .collect(),
                    )
                }
            }
        })
    }

    fn cval_value(&self, v: CVal) -> Value {
        match v {
            CVal::Int(i, ty) => Value::Scalar(
                if ty == ScalarTy::Bool {
                    Expr::Bool(i != 0)
                } else {
                    Expr::int(i, ty)
                },
                scalar_type(ty),
            ),
            CVal::Sym(s, ty) => Value::Scalar(Expr::Sym(s), scalar_type(ty)),
        }
    }

    /// The IR type of an expression (variables, parameters and symbols included).
    pub(crate) fn scalar_of(&self, e: &Expr) -> Option<ScalarTy> {
        match e {
            Expr::Var(v) => self.k.vars.get(v.index()).map(|v| v.ty),
            Expr::Param(p) => self.k.params.get(*p as usize).map(|p| p.ty),
            Expr::Sym(s) => self.k.syms.get(s.index()).map(|s| s.ty),
            other => ir::fold::type_of(other),
        }
    }

    /// A conversion, left out when the expression already has the type.
    pub(crate) fn cast(&self, ty: ScalarTy, e: Expr) -> Expr {
        if self.scalar_of(&e) == Some(ty) {
            return e;
        }
        ir::fold::cast(ty, e)
    }

    // ----- output --------------------------------------------------------------

    fn site(&self, span: Span) -> Span {
        self.sites.first().copied().unwrap_or(span)
    }

    fn emit(&mut self, kind: StmtKind, span: Span) {
        if self.dead {
            return;
        }
        // An access through a pointer that may point into several buffers is
        // one access per buffer, chosen by the pointer's selector.
        let kind = match kind {
            StmtKind::Access(a) if self.choices.contains_key(&a.object) => {
                let (selector, objects) = self.choices[&a.object].clone();
                let site = self.site(span);
                let mut chain = ir::Block::default();
                for (k, obj) in objects.iter().enumerate().rev() {
                    let Some(obj) = obj else { continue };
                    let access = Stmt {
                        kind: StmtKind::Access(ir::Access {
                            object: *obj,
                            ..a.clone()
                        }),
                        span,
                        site,
                    };
                    let cond = ir::fold::binary(
                        ir::BinOp::Eq,
                        ScalarTy::I32,
                        Expr::Var(selector),
                        Expr::int(k as i128, ScalarTy::I32),
                    );
                    chain = ir::Block(vec![Stmt {
                        kind: StmtKind::If {
                            cond,
                            then_block: ir::Block(vec![access]),
                            else_block: chain,
                        },
                        span,
                        site,
                    }]);
                }
                match chain.0.pop() {
                    Some(s) => s.kind,
                    None => return,
                }
            }
            other => other,
        };
        self.track_constants(&kind);
        let site = self.site(span);
        self.blocks
            .last_mut()
            .expect("statements are emitted into a block")
            .push(Stmt { kind, span, site });
    }

    /// Keeps `known` (variables holding a known constant) up to date with a
    /// statement about to be emitted. Compound statements forget every variable
    /// assigned inside them: which path ran is not known after them.
    fn track_constants(&mut self, kind: &StmtKind) {
        match kind {
            StmtKind::Assign { var, value } => {
                if value.is_const() {
                    std::rc::Rc::make_mut(&mut self.known).insert(*var, value.clone());
                } else if self.grid_uniform(value) {
                    std::rc::Rc::make_mut(&mut self.known).insert(*var, Expr::Var(*var));
                } else {
                    std::rc::Rc::make_mut(&mut self.known).remove(var);
                }
            }
            StmtKind::Havoc { var, .. } | StmtKind::Choose { var } => {
                std::rc::Rc::make_mut(&mut self.known).remove(var);
            }
            StmtKind::If { .. } | StmtKind::Loop(_) | StmtKind::Labeled { .. } => {
                if self.known.is_empty() {
                    return;
                }
                let mut assigned = Vec::new();
                let block = ir::Block(vec![Stmt {
                    kind: kind.clone(),
                    span: self.k.span,
                    site: self.k.span,
                }]);
                block.walk(&mut |s| match &s.kind {
                    StmtKind::Assign { var, .. } | StmtKind::Havoc { var, .. } | StmtKind::Choose { var } => {
                        assigned.push(*var)
                    }
                    _ => {}
                });
                for v in assigned {
                    std::rc::Rc::make_mut(&mut self.known).remove(&v);
                }
            }
            _ => {}
        }
    }

    fn emit_at(&mut self, kind: StmtKind, node: Node) {
        let span = self.span(node);
        self.emit(kind, span);
    }

    /// Lowers `f` into a fresh block and returns it.
    fn sub_block(&mut self, f: impl FnOnce(&mut Self)) -> ir::Block {
        self.blocks.push(Vec::new());
        f(self);
        ir::Block(self.blocks.pop().expect("pushed above"))
    }

    /// Records an unmodelled construct: an `Unknown` statement and a kernel unknown.
    fn unknown(&mut self, node: Node, reason: impl Into<String>) {
        let span = self.span(node);
        self.unknown_at(span, reason.into());
    }

    fn unknown_at(&mut self, span: Span, reason: String) {
        let site = self.site(span);
        self.k.unknowns.push(ir::Unknown {
            reason: reason.clone(),
            span,
            site,
        });
        if let Some(block) = self.blocks.last_mut() {
            if !self.dead {
                block.push(Stmt {
                    kind: StmtKind::Unknown { reason },
                    span,
                    site,
                });
            }
        }
    }

    /// Records a modelling assumption (not an unknown: the verdict stands, the
    /// report names what it relies on).
    fn assume(&mut self, node: Node, reason: String) {
        let span = self.span(node);
        let site = self.site(span);
        self.k.assumptions.push(ir::Unknown { reason, span, site });
    }

    fn unknown_value(&mut self, node: Node, reason: impl Into<String>) -> Value {
        self.unknown(node, reason);
        Value::Unknown(Type::Opaque("unknown".into()))
    }

    fn new_label(&mut self) -> LabelId {
        let l = LabelId(self.next_label);
        self.next_label += 1;
        l
    }

    fn new_var(&mut self, name: &str, ty: ScalarTy, span: Span) -> VarId {
        self.k.new_var(name, ty, span)
    }

    fn new_object(&mut self, name: &str, space: Space, kind: ObjectKind, elem: &Type, span: Span) -> ObjectId {
        let id = ObjectId(self.k.objects.len() as u32);
        self.k.objects.push(MemObject {
            name: name.to_string(),
            space,
            kind,
            elem: elem.display(),
            restrict: false,
            span,
        });
        id
    }

    /// The object standing for untraceable memory of a space.
    fn untraced(&mut self, space: Space) -> ObjectId {
        if let Some(&o) = self.untraced.get(&space) {
            return o;
        }
        let name = format!("<untraced {}>", format!("{space:?}").to_lowercase());
        let span = self.k.span;
        let o = self.new_object(&name, space, ObjectKind::Untraced, &Type::Opaque("?".into()), span);
        self.untraced.insert(space, o);
        o
    }

    fn op(&mut self, name: &str) -> OpId {
        if let Some(&o) = self.ops.get(name) {
            return o;
        }
        let id = OpId(self.k.ops.len() as u32);
        self.k.ops.push(ir::OpInfo { name: name.to_string() });
        self.ops.insert(name.to_string(), id);
        id
    }

    /// The template environment in effect, as a key (of `__shared__`
    /// arrays, `constexpr` unknowns and constant calls on symbolic
    /// arguments, which may differ between a helper's instantiations).
    fn tenv_key(&self) -> String {
        let mut env: Vec<String> = self
            .ctx()
            .tenv
            .iter()
            .map(|(k, v)| format!("{k}={}", v.display()))
            .collect();
        env.sort();
        env.join(",")
    }

    /// A value every thread of a launch computes alike: it reads only
    /// constants, template arguments, the kernel's scalar parameters and
    /// variables holding such values (straight-line: `known`).
    fn grid_uniform(&self, e: &Expr) -> bool {
        let mut uniform = true;
        e.visit(&mut |x| match x {
            Expr::Var(v) if !self.known.contains_key(v) => uniform = false,
            Expr::Builtin(_) => uniform = false,
            _ => {}
        });
        uniform
    }

    /// A symbolic grid-uniform constant, one per name.
    fn sym(&mut self, name: &str, ty: ScalarTy, kind: SymKind) -> SymId {
        if let Some(&s) = self.syms.get(name) {
            return s;
        }
        let id = SymId(self.k.syms.len() as u32);
        self.k.syms.push(ir::SymInfo {
            name: name.to_string(),
            ty,
            kind,
        });
        self.syms.insert(name.to_string(), id);
        id
    }

    /// Guards recursion over deeply nested syntax.
    fn enter(&mut self, node: Node) -> bool {
        self.depth += 1;
        if self.depth > self.config.max_nesting {
            self.depth -= 1;
            self.unknown(node, "nesting too deep to follow");
            return false;
        }
        true
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ----- the kernel ----------------------------------------------------------

    fn kernel(&mut self, kernel: DeclId, args: &[Option<TArg>]) {
        let d = self.index.decl(kernel).clone();
        let span = self.k.span;
        let ctx = Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: Rc::new(TemplateEnv::default()),
            class: None,
        };
        self.push_frame(ctx);
        // Template parameters: explicit arguments, then defaults, then symbols.
        if let Some(params) = d.template {
            let ctx = self.ctx().clone();
            // Arguments by parameter name; a variadic parameter takes the rest.
            let mut given = TemplateEnv::default();
            for (i, p) in syntax::named_children(params).into_iter().enumerate() {
                let Some(name) = call::template_param_name(d.frag, p) else {
                    continue;
                };
                if p.kind_name().starts_with("variadic") {
                    let rest: Option<Vec<TArg>> = args
                        .get(i..)
                        .map(|r| r.iter().cloned().collect())
                        .unwrap_or(Some(Vec::new()));
                    if let Some(rest) = rest {
                        given.insert(name, TArg::Pack(rest));
                    }
                    break;
                }
                if let Some(Some(a)) = args.get(i) {
                    given.insert(name, a.clone());
                }
            }
            let env = self.bind_template_params(ctx, params, &[], &given, true);
            self.frame_mut().ctx.tenv = Rc::new(env.clone());
            let mut shown = Vec::new();
            for p in syntax::named_children(params) {
                if let Some(name) = call::template_param_name(d.frag, p) {
                    if let Some(a) = env.get(&name) {
                        shown.push(ir::TemplateArg {
                            name: name.clone(),
                            value: self.targ_display(a),
                        });
                    }
                }
            }
            self.k.template_args = shown;
        }
        let exit = self.new_label();
        self.k.exit_label = exit;
        self.blocks.push(Vec::new());
        self.launch_bounds(d.node);
        if let Some(decl) = d.node.field("declarator") {
            self.kernel_params(decl);
        }
        if let Some(body) = d.node.field("body") {
            self.compound(body);
        } else {
            self.unknown_at(span, "kernel without a body".into());
        }
        let body = self.blocks.pop().expect("pushed above");
        self.k.body = ir::Block(body);
        async_copy::lower_in_flight(&mut self.k);
        self.frames.pop();
    }

    fn targ_display(&self, a: &TArg) -> String {
        match a {
            TArg::Value(CVal::Sym(s, _)) => format!("<symbolic {}>", self.k.syms[s.index()].name),
            TArg::Func(f) => f
                .ids
                .first()
                .map(|&d| self.index.decl(d).name.clone())
                .unwrap_or_default(),
            TArg::Choice(fs) => {
                let names: Vec<String> = fs
                    .iter()
                    .filter_map(|f| f.ids.first().map(|&d| self.index.decl(d).name.clone()))
                    .collect();
                format!("<one of {}>", names.join(", "))
            }
            other => other.display(),
        }
    }

    fn launch_bounds(&mut self, node: Node<'u>) {
        let lb = syntax::named_children(node)
            .into_iter()
            .find(|c| c.kind_name() == "launch_bounds")
            .or_else(|| {
                // `__global__ void __launch_bounds__(…) name(…)` puts it in the declarator.
                node.field("declarator").and_then(|d| {
                    syntax::named_children(d)
                        .into_iter()
                        .find(|c| c.kind_name() == "launch_bounds")
                })
            });
        if let Some(lb) = lb {
            if let Some(first) = syntax::named_children(lb).first().copied() {
                let v = self.scratch_expr(first);
                if let Value::Scalar(e, _) = v {
                    self.k.launch_bounds = Some(e);
                }
            }
        }
    }

    /// Evaluates an expression whose statements are not wanted (constant contexts).
    /// Calls in it whose arguments are not all constants give symbols instead
    /// of being inlined (see `call::call_named`).
    fn scratch_expr(&mut self, node: Node<'u>) -> Value {
        let dead = self.dead;
        self.dead = false;
        self.blocks.push(Vec::new());
        self.enter_constant();
        let v = self.expr(node);
        self.leave_constant();
        self.blocks.pop();
        self.dead = dead;
        v
    }

    /// Enters a constant context (see [`Lowerer::constant_base`]).
    fn enter_constant(&mut self) {
        if self.constant_context == 0 {
            let depth = self.frame().cond_depth;
            self.constant_base = Some((self.frames.len(), depth, self.speculative, self.uniform_branches));
        }
        self.constant_context += 1;
    }

    fn leave_constant(&mut self) {
        self.constant_context -= 1;
        if self.constant_context == 0 {
            self.constant_base = None;
        }
    }

    /// Whether every branch around the current point is one every thread
    /// takes alike at compile time (`if constexpr`, a branch on a
    /// grid-uniform value): inside a constant context, only the branches
    /// since it began count.
    fn branches_compile_time(&self) -> bool {
        let (first, depth, speculative, uniform) = self.constant_base.unwrap_or((0, 0, 0, 0));
        let conditions: u32 = self
            .frames
            .iter()
            .enumerate()
            .skip(first.saturating_sub(1))
            .map(|(i, f)| {
                if i + 1 == first {
                    f.cond_depth.saturating_sub(depth)
                } else {
                    f.cond_depth
                }
            })
            .sum();
        conditions == (self.speculative - speculative) + (self.uniform_branches - uniform)
    }

    fn kernel_params(&mut self, declarator: Node<'u>) {
        let mut d = declarator;
        while d.kind_name() != "function_declarator" {
            match d.field("declarator") {
                Some(inner) => d = inner,
                None => return,
            }
        }
        let Some(params) = d.field("parameters") else {
            return;
        };
        let body = declarator.parent().and_then(|f| f.field("body"));
        let assigned = body.map(|b| assigned_names(self.frag(), b, false)).unwrap_or_default();
        for (index, p) in syntax::named_children(params).into_iter().enumerate() {
            if p.kind_name() == "variadic_parameter_declaration" {
                self.kernel_param_pack(p, index as u32);
                continue;
            }
            if !matches!(
                p.kind_name(),
                "parameter_declaration" | "optional_parameter_declaration"
            ) {
                continue;
            }
            let (ty, name) = self.declared_type(p);
            let name = name.unwrap_or_else(|| format!("param{index}"));
            let restrict = self.text(p).contains("__restrict__") || self.text(p).contains("restrict");
            let span = self.span(p);
            let place = self.param_place(&name, &ty, index as u32, "", restrict, span);
            // A parameter the kernel never assigns is its entry value everywhere.
            let place = if assigned.contains(&name) {
                place
            } else {
                self.fixed_param(place)
            };
            self.bind(&name, Binding::Place(place));
        }
    }

    /// The value a never-assigned parameter keeps: its pointer at offset 0 or
    /// its entry value, as a place that cannot change.
    fn fixed_param(&mut self, place: Place) -> Place {
        // The entry assignment of the variable is no longer needed.
        let drop_entry = |l: &mut Self, var: VarId| {
            if let Some(root) = l.blocks.first_mut() {
                root.retain(|s| !matches!(&s.kind, StmtKind::Assign { var: v, .. } if *v == var));
            }
        };
        match place {
            Place::PtrVar { slot, pointee, offset } => {
                drop_entry(self, offset);
                let object = self.ptr_slots[slot].objects.first().copied().flatten();
                Place::Temp(Value::Ptr(Ptr {
                    object,
                    offset: Expr::int(0, ScalarTy::I64),
                    pointee,
                }))
            }
            Place::Var(v, ty) => {
                // The variable's only assignment is `v = param:i` at entry.
                let value = self.blocks.first().and_then(|b| {
                    b.iter().rev().find_map(|s| match &s.kind {
                        StmtKind::Assign { var, value } if *var == v => Some(value.clone()),
                        _ => None,
                    })
                });
                match value {
                    Some(value) => {
                        drop_entry(self, v);
                        Place::Temp(Value::Scalar(value, ty))
                    }
                    None => Place::Var(v, ty),
                }
            }
            Place::Fields(ty, places) => Place::Fields(ty, places.into_iter().map(|p| self.fixed_param(p)).collect()),
            other => other,
        }
    }

    /// `Ts... args`: one parameter per type of the pack.
    fn kernel_param_pack(&mut self, p: Node<'u>, index: u32) {
        let pack_name = p
            .field("type")
            .map(|t| self.text(t).trim().to_string())
            .unwrap_or_default();
        let name = p
            .field("declarator")
            .and_then(|d| index::declarator_name(self.frag(), d))
            .map(|(n, _)| n.trim_start_matches("...").to_string())
            .unwrap_or_else(|| format!("pack{index}"));
        let types = match self.lookup_local(&pack_name) {
            Some(Binding::TypePack(ts)) => ts,
            Some(Binding::Pack(items)) if items.is_empty() => Vec::new(),
            _ => {
                self.unknown(p, format!("kernel parameter pack `{name}` of an unknown length"));
                return;
            }
        };
        // `const Ts... args`: the declarator's pointer/reference shape applies to each type.
        let span = self.span(p);
        let mut places = Vec::new();
        for (i, t) in types.iter().enumerate() {
            let place = self.param_place(&format!("{name}{i}"), t, index + i as u32, "", false, span);
            places.push(Binding::Place(place));
        }
        self.bind(&name, Binding::Pack(places));
    }

    /// The place of a kernel parameter (or a member of a by-value struct parameter):
    /// pointers get their own global object, scalars an IR parameter.
    fn param_place(&mut self, name: &str, ty: &Type, index: u32, path: &str, restrict: bool, span: Span) -> Place {
        let ty = ty.strip_ref().clone();
        let full = if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        };
        match &ty {
            Type::Ptr(pointee) => {
                let space = Space::Global;
                let obj = self.new_object(
                    &full,
                    space,
                    ObjectKind::Param {
                        index,
                        path: path.to_string(),
                    },
                    pointee,
                    span,
                );
                self.k.objects[obj.index()].restrict = restrict;
                let off = self.new_var(&full, ScalarTy::I64, span);
                let slot = self.ptr_slots.len();
                self.ptr_slots.push(PtrSlot {
                    objects: vec![Some(obj)],
                    offset_var: Some(off),
                    ..PtrSlot::default()
                });
                self.emit(
                    StmtKind::Assign {
                        var: off,
                        value: Expr::int(0, ScalarTy::I64),
                    },
                    span,
                );
                Place::PtrVar {
                    offset: off,
                    slot,
                    pointee: (**pointee).clone(),
                }
            }
            t if t.is_arith() => {
                let sty = t.scalar();
                let pi = self.k.params.len() as u32;
                self.k.params.push(ir::Param {
                    name: full.clone(),
                    ty_text: t.display(),
                    ty: sty,
                });
                let var = self.new_var(&full, sty, span);
                self.emit(
                    StmtKind::Assign {
                        var,
                        value: Expr::Param(pi),
                    },
                    span,
                );
                Place::Var(var, t.clone())
            }
            Type::Class(_) | Type::Vector(_) => {
                let fields = self.fields_of(&ty);
                match fields {
                    Some(fields) if !self.has_array(&ty) => {
                        let places = fields
                            .iter()
                            .map(|(fname, fty)| self.param_place(fname, fty, index, &full, restrict, span))
                            .collect();
                        Place::Fields(ty.clone(), places)
                    }
                    _ => {
                        // A struct holding arrays: its contents are per-launch constants we do not track.
                        let obj = self.new_object(&full, Space::Local, ObjectKind::Local { bytes: None }, &ty, span);
                        Place::Mem(
                            Ptr {
                                object: Some(obj),
                                offset: Expr::int(0, ScalarTy::I64),
                                pointee: ty.clone(),
                            },
                            ty.clone(),
                        )
                    }
                }
            }
            _ => {
                let pi = self.k.params.len() as u32;
                self.k.params.push(ir::Param {
                    name: full.clone(),
                    ty_text: ty.display(),
                    ty: ScalarTy::Opaque,
                });
                Place::Temp(Value::Scalar(Expr::Param(pi), ty.clone()))
            }
        }
    }
}

/// The longest chain of calls from `root` that visits no function twice.
fn longest_chain(graph: &DiGraphMap<u32, ()>, root: u32) -> u32 {
    fn walk(graph: &DiGraphMap<u32, ()>, node: u32, on_path: &mut Vec<u32>, budget: &mut u32) -> u32 {
        if *budget == 0 {
            return 0;
        }
        *budget -= 1;
        on_path.push(node);
        let mut best = 0;
        for next in graph.neighbors(node) {
            if !on_path.contains(&next) {
                best = best.max(1 + walk(graph, next, on_path, budget));
            }
        }
        on_path.pop();
        best
    }
    if !graph.contains_node(root) {
        return 0;
    }
    // Call graphs of kernels are small; the budget bounds pathological ones.
    let mut budget = 100_000;
    walk(graph, root, &mut Vec::new(), &mut budget)
}

/// Names assigned somewhere under `node` (left of `=`/`op=`, `++`/`--`, or
/// with their address taken): the variables that may change. Through `.`
/// members and parentheses an lvalue belongs to its variable; with
/// `into_elements`, through `[]` and `->` too (a host array or a struct
/// reached by pointer counts as changed), else those lead into memory and
/// `p[i] = v` changes no variable.
pub(super) fn assigned_names(frag: &Fragment, node: Node, into_elements: bool) -> crate::hash::HashSet<String> {
    let mut out = crate::hash::HashSet::default();
    let mut stack = vec![node];
    let mut cursor = node.walk();
    let root_name = |mut n: Node| -> Option<String> {
        loop {
            match n.kind_name() {
                "identifier" => return Some(syntax::text(frag, n).to_string()),
                "field_expression"
                    if into_elements || n.field("operator").is_some_and(|o| syntax::text(frag, o) == ".") =>
                {
                    n = n.field("argument")?;
                }
                "subscript_expression" if into_elements => n = n.field("argument")?,
                "parenthesized_expression" => n = syntax::named_children(n).first().copied()?,
                _ => return None,
            }
        }
    };
    while let Some(n) = stack.pop() {
        let target = match n.kind_name() {
            "assignment_expression" => n.field("left"),
            "update_expression" => n.field("argument"),
            "pointer_expression" if n.field("operator").is_some_and(|o| syntax::text(frag, o) == "&") => {
                n.field("argument")
            }
            _ => None,
        };
        if let Some(t) = target {
            // `p[i] = v` writes memory, not `p`; `p = …`, `p += …`, `s.f = …` change the variable.
            let direct = into_elements
                || matches!(
                    t.kind_name(),
                    "identifier" | "field_expression" | "parenthesized_expression"
                ) && !(t.kind_name() == "field_expression"
                    && t.field("operator").is_some_and(|o| syntax::text(frag, o) == "->"));
            if direct || n.kind_name() == "pointer_expression" {
                if let Some(name) = root_name(t) {
                    out.insert(name);
                }
            }
        }
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

/// Removes assignments to `vars` from statements and nested blocks.
fn remove_assignments(stmts: &mut Vec<Stmt>, vars: &crate::hash::HashSet<VarId>) {
    stmts.retain(|s| !matches!(&s.kind, StmtKind::Assign { var, .. } if vars.contains(var)));
    for s in stmts.iter_mut() {
        match &mut s.kind {
            StmtKind::If {
                then_block, else_block, ..
            } => {
                remove_assignments(&mut then_block.0, vars);
                remove_assignments(&mut else_block.0, vars);
            }
            StmtKind::Loop(l) => {
                remove_assignments(&mut l.cond_pre.0, vars);
                remove_assignments(&mut l.body.0, vars);
                remove_assignments(&mut l.step.0, vars);
            }
            StmtKind::Labeled { body, .. } => remove_assignments(&mut body.0, vars),
            _ => {}
        }
    }
}

/// The C++ type of an IR scalar type.
pub fn scalar_type(ty: ScalarTy) -> Type {
    match ty {
        ScalarTy::Bool => Type::Bool,
        ScalarTy::Int { bits, signed } => Type::int(bits, signed),
        ScalarTy::Float(k) => Type::Float(k),
        ScalarTy::Opaque => Type::Opaque("opaque".into()),
    }
}
