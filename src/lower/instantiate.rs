//! Template argument tuples a kernel is instantiated with in a unit.
//!
//! Input: a kernel declaration. Output: the distinct argument tuples of its
//! template-ids (`k<4, float>` at launch sites, in function-pointer
//! assignments, in explicit instantiations). Arguments are evaluated where the
//! template-id appears: with the constants declared before it in the enclosing
//! function, and — when that function is itself a template — once per
//! instantiation of it (found the same way, a few levels deep). Arguments
//! deduced from call arguments are not inferred here; such parameters stay
//! symbolic when the kernel is lowered.

use crate::hash::{HashMap, HashSet};
use std::rc::Rc;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::index::{declarator_name, DeclId, DeclKind};
use super::types::TArg;
use super::value::TemplateEnv;
use super::{Ctx, Index, LowerConfig, Lowerer};
use crate::preprocess::{Fragment, Unit};
use crate::syntax::{self, named_children};

/// Most tuples kept per search before only those with a new argument
/// value are (see [`MAX_NOVEL`]).
pub const MAX_TUPLES: usize = 64;
/// Most tuples kept past [`MAX_TUPLES`], each with an argument value no
/// tuple kept before has (see `Finder::tuples_of`).
const MAX_NOVEL: usize = 16;
/// Most uses in functions evaluated (each under one instantiation of the
/// template around it) in one search for a function's tuples.
const MAX_EVALUATED: usize = 2 * MAX_TUPLES;
/// How many enclosing function templates are followed outward.
const MAX_DEPTH: u32 = 3;
/// Most distinct operand lists a launching function's callers are followed
/// with (each re-evaluates the launch).
const MAX_CALLER_OPERANDS: usize = 64;

/// A template argument tuple; `None` where the argument could not be
/// determined (that parameter stays symbolic).
pub type Tuple = Vec<Option<TArg>>;

/// The distinct template argument tuples of a kernel in this unit, the most
/// determined first.
pub fn kernel_instantiations(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId) -> Vec<Tuple> {
    kernel_uses(unit, index, config, kernel).tuples
}

/// A launch `k<…><<<grid, block, …>>>(…)` of a kernel: its template
/// arguments and its block shape when the launch site determines it.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSite {
    pub tuple: Tuple,
    /// The block shapes the site may launch with (several when an extent is
    /// a choice between constants, `n < 1024 ? 32 : 128`).
    pub blocks: Vec<LaunchShape>,
    /// The kernel's parameter names in declaration order (for the facts).
    pub params: Vec<String>,
}

/// A launch's block extents per dimension; `None` where the launch site
/// computes it from runtime values.
pub type BlockShape = [Option<u32>; 3];

/// A block shape as one launch site gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchShape {
    pub block: BlockShape,
    /// Per dimension, a number the extent is surely a multiple of
    /// (`(n + 31) / 32 * 32`: 32; 1 when nothing is known).
    pub multiple: [u32; 3],
    /// Facts of the launch over the kernel's dimensions and arguments:
    /// `blockDim.y == k` when the host passes one value as both. Arguments
    /// are `Param(i)` with `i` the parameter's position in the kernel's
    /// declaration (see `LaunchSite::params`).
    pub facts: Vec<crate::ir::LaunchFact>,
}

impl LaunchShape {
    /// Nothing known.
    pub fn symbolic() -> LaunchShape {
        LaunchShape {
            block: [None; 3],
            multiple: [1; 3],
            facts: Vec::new(),
        }
    }
}

/// Most shapes one launch site forks into.
const MAX_SITE_SHAPES: usize = 8;

/// The launches of a kernel in this unit (template or not).
pub fn kernel_launches(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId) -> Vec<LaunchSite> {
    kernel_uses(unit, index, config, kernel).launches
}

/// What a kernel's uses say about it.
pub struct KernelUses {
    /// Template argument tuples found (at most [`MAX_TUPLES`]).
    pub tuples: Vec<Tuple>,
    /// Launch sites, one per site and tuple.
    pub launches: Vec<LaunchSite>,
    /// The block shapes of every launch site, each evaluated with its
    /// enclosing template's parameters unknown (launch facts dropped): what
    /// any instantiation launches with, those the search for tuples never
    /// reached included. `None` when no site launches the kernel, or when
    /// the search is [`complete`](Self::complete).
    pub every_site: Option<Vec<LaunchShape>>,
    /// The search found every instantiation the unit names: it stopped
    /// short nowhere (see `Finder::truncated`).
    pub complete: bool,
}

/// Template argument tuples and launch sites of a kernel.
pub fn kernel_uses(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId) -> KernelUses {
    kernel_uses_beyond(unit, index, config, kernel, &HashSet::default())
}

/// A fragment's identity in the preprocessor's pool (see
/// [`kernel_uses_beyond`]).
pub fn fragment_key(frag: &Fragment) -> usize {
    frag as *const Fragment as usize
}

/// [`kernel_uses`] beyond the code an earlier unit's search already read:
/// `searched` holds those fragments ([`fragment_key`]; the preprocessor
/// shares a fragment between units only where it expands to the same
/// code). Every use starts at a root (a function that is no template, an
/// explicit instantiation, a global's initializer) and goes through host
/// templates to the kernel; where every function on the way and the root
/// are in searched fragments, the earlier search found that use, and the
/// root is passed over. What the kernel's header says is then read once,
/// and each further unit adds what its own code instantiates and launches.
pub fn kernel_uses_beyond(
    unit: &Unit,
    index: &Index,
    config: &LowerConfig,
    kernel: DeclId,
    searched: &HashSet<usize>,
) -> KernelUses {
    HostSearch::new(unit, index, config).kernel_uses_beyond(kernel, searched)
}

/// How many arguments of `tuple` take a value no tuple of `kept` has at
/// their position (an argument `known` says is undetermined is none).
fn novel<T: PartialEq>(kept: &[impl AsRef<[T]>], tuple: &[T], known: impl Fn(&T) -> bool) -> usize {
    tuple
        .iter()
        .enumerate()
        .filter(|&(at, a)| known(a) && kept.iter().all(|k| k.as_ref().get(at) != Some(a)))
        .count()
}

/// Orders tuples so each next one brings most argument values the tuples
/// before it lack, then differs most from the nearest of them: the first
/// few, which caps keep (a search's, the instantiations lowered), cover
/// the values (one value of an argument often selects a variant of its
/// own: on ggml, flash_attn_ext_f16's only race is in the instantiations
/// where DKQ differs from DV, 192 and 576) and the variants (a run of
/// tuples that differ in one argument often shares one compiled-out
/// variant). Ties: the earlier. Only arguments `known` says are determined
/// bring a value.
pub fn diverse_order<T: PartialEq + Clone>(tuples: &[Vec<T>], known: impl Fn(&T) -> bool) -> Vec<Vec<T>> {
    let mut left: Vec<&Vec<T>> = tuples.iter().collect();
    let mut out: Vec<Vec<T>> = Vec::new();
    while !left.is_empty() {
        let best = (0..left.len())
            .max_by_key(|&i| {
                let distance: usize = out
                    .iter()
                    .map(|o| o.iter().zip(left[i].iter()).filter(|(a, b)| a != b).count())
                    .min()
                    .unwrap_or(usize::MAX);
                (novel(&out, left[i], &known), distance, usize::MAX - i)
            })
            .expect("non-empty");
        out.push(left.remove(best).clone());
    }
    out
}

/// The search of one unit's host code for the uses of its kernels. What
/// it finds of host templates (their instantiations) and of the callers
/// of launching functions (their operands and shapes) does not depend on
/// the kernel: a kernel searched after others, with the same fragments
/// searched before (see [`kernel_uses_beyond`]), reads what they found
/// instead of evaluating the same host code again (ggml's attention
/// headers launch four kernels from one host template, instantiated in
/// each of 85 units). One host-mode lowerer serves them all, so that
/// what is kept holds its symbols.
pub struct HostSearch<'u> {
    unit: &'u Unit,
    index: &'u Index<'u>,
    config: &'u LowerConfig,
    lowerer: Option<Lowerer<'u>>,
    /// Function definitions by node.
    function_nodes: HashMap<usize, DeclId>,
    /// By the fragments searched before, sorted.
    found: HashMap<Vec<usize>, HostCaches>,
    /// What [`KernelUses::every_site`]'s evaluation of callers found: it
    /// reads no instantiation, so no fragment searched before changes it.
    symbolic: CallerCache,
}

/// What a search of host code found that holds for every kernel (see
/// [`HostSearch`]).
#[derive(Default)]
struct HostCaches {
    /// Instantiation environments of host function templates, by
    /// declaration and `Finder::fresh`.
    envs: HashMap<(DeclId, bool), EnvSearch>,
    callers: CallerCache,
}

impl<'u> HostSearch<'u> {
    pub fn new(unit: &'u Unit, index: &'u Index<'u>, config: &'u LowerConfig) -> HostSearch<'u> {
        let mut function_nodes = HashMap::default();
        for (i, d) in index.decls.iter().enumerate() {
            if d.kind == DeclKind::Function && d.defined {
                function_nodes.insert(d.node.id(), DeclId(i as u32));
            }
        }
        HostSearch {
            unit,
            index,
            config,
            lowerer: None,
            function_nodes,
            found: HashMap::default(),
            symbolic: CallerCache::default(),
        }
    }

    /// A finder for `kernel` over what this search found before with
    /// `searched`, and the lowerer to evaluate host code with.
    fn finder<'s>(&'s mut self, kernel: DeclId, searched: &'s HashSet<usize>) -> (Finder<'s>, &'s mut Lowerer<'u>) {
        let mut key: Vec<usize> = searched.iter().copied().collect();
        key.sort_unstable();
        let (unit, index, config) = (self.unit, self.index, self.config);
        let l = self.lowerer.get_or_insert_with(|| {
            let mut l = Lowerer::new(unit, index, config, kernel);
            l.host_mode = true;
            l
        });
        let finder = Finder {
            params: kernel_param_names(index, kernel),
            found: self.found.entry(key).or_default(),
            symbolic: &mut self.symbolic,
            symbolic_callers: false,
            function_nodes: &self.function_nodes,
            kernel,
            launches: Vec::new(),
            truncated: false,
            searched,
            fresh: false,
            passed_over: false,
        };
        (finder, l)
    }

    /// The unit searched.
    pub fn unit(&self) -> &'u Unit {
        self.unit
    }

    /// [`KernelUses::every_site`] alone: the block shapes of every launch
    /// site of the kernel in this unit, with their templates' parameters
    /// unknown (`None` when none launches it).
    pub fn every_launch_shape(&mut self, kernel: DeclId) -> Option<Vec<LaunchShape>> {
        let searched = HashSet::default();
        let (mut finder, l) = self.finder(kernel, &searched);
        let _s = crate::profile::stage("every-site");
        finder.shapes_at_every_site(l)
    }

    /// See [`kernel_uses_beyond`].
    pub fn kernel_uses_beyond(&mut self, kernel: DeclId, searched: &HashSet<usize>) -> KernelUses {
        let (mut finder, l) = self.finder(kernel, searched);
        finder.kernel_uses(l)
    }
}

/// The block shapes of a launch's block operand: an integer or a `dim3`,
/// each extent a constant, a choice between constants, or a runtime value
/// (of a known divisor, maybe).
fn block_shape(v: &super::Value) -> Option<Vec<LaunchShape>> {
    use super::Value;
    // An extent that is not a scalar value at all is unknown.
    let unknown = super::Expr::Opaque(crate::ir::OpId(u32::MAX), crate::ir::ScalarTy::U32, Vec::new());
    let parts: Vec<&super::Expr> = match v {
        Value::Agg(_, parts) if parts.len() == 3 => parts
            .iter()
            .map(|p| match p {
                Value::Scalar(e, _) => e,
                _ => &unknown,
            })
            .collect(),
        Value::Scalar(e, _) => vec![e, &ONE, &ONE],
        _ => return None,
    };
    let mut shapes: Vec<([Option<u32>; 3], [u32; 3])> = vec![([None; 3], [1; 3])];
    for (d, e) in parts.iter().enumerate() {
        let choices = constants(e).filter(|c| c.len() <= MAX_SITE_SHAPES);
        let multiple = divisor(e).clamp(1, 1024) as u32;
        let mut next = Vec::new();
        for (exact, mult) in &shapes {
            match &choices {
                Some(values) => {
                    for &v in values {
                        let (mut x, mut m) = (*exact, *mult);
                        x[d] = u32::try_from(v).ok().filter(|v| (1..=1024).contains(v));
                        m[d] = x[d].unwrap_or(multiple);
                        next.push((x, m));
                    }
                }
                None => {
                    let (x, mut m) = (*exact, *mult);
                    m[d] = multiple;
                    next.push((x, m));
                }
            }
        }
        next.dedup();
        next.truncate(MAX_SITE_SHAPES);
        shapes = next;
    }
    Some(
        shapes
            .into_iter()
            .map(|(block, multiple)| LaunchShape {
                block,
                multiple,
                facts: Vec::new(),
            })
            .collect(),
    )
}

/// Facts relating the launch's dimensions to the kernel's arguments: each
/// runtime extent written as a function of the arguments, where the host
/// computes it from values it also passes (`dim3(WARP_SIZE, k)` and an
/// argument `k`: `blockDim.y == k`), and each argument that the host
/// computes from values it also passes (`(n, 64*h, h)`: the second is
/// `64*h`; stated as `Param(i) == f`, which `driver::in_params` compares
/// in the parameter's type). Host functions are taken to be
/// deterministic (one call text, one value).
fn launch_facts(
    grid: Option<&super::Value>,
    block: Option<&super::Value>,
    args: &[super::Value],
    asserted: &[super::Value],
) -> Vec<super::Expr> {
    use super::{Expr, Value};
    use crate::ir::{BinOp, Builtin, Dim, ScalarTy};
    let scalars = |v: Option<&Value>| -> Vec<Option<(Expr, ScalarTy)>> {
        match v {
            Some(Value::Agg(_, parts)) if parts.len() == 3 => parts
                .iter()
                .map(|p| match p {
                    Value::Scalar(e, t) => Some((e.clone(), t.scalar())),
                    _ => None,
                })
                .collect(),
            Some(Value::Scalar(e, t)) => vec![Some((e.clone(), t.scalar())), None, None],
            _ => vec![None, None, None],
        }
    };
    let mut out = Vec::new();
    // A constant argument is that value (in the host's type, which the
    // parameter receives converted).
    for (i, a) in args.iter().enumerate() {
        if let Value::Scalar(e @ Expr::Int(..), t) = a {
            if t.scalar().is_int() {
                out.push(Expr::Binary(
                    BinOp::Eq,
                    t.scalar(),
                    Box::new(Expr::Param(i as u32)),
                    Box::new(e.clone()),
                ));
            }
        }
    }
    let args: Vec<Option<(&Expr, ScalarTy)>> = args
        .iter()
        .map(|a| match a {
            Value::Scalar(e, t) if !e.is_const() => Some((e, t.scalar())),
            _ => None,
        })
        .collect();
    for (i, arg) in args.iter().enumerate() {
        let Some((e, ty)) = arg else { continue };
        if !ty.is_int() {
            continue;
        }
        let mut others = args.clone();
        others[i] = None;
        if let Some(f) = in_arguments(e, &others) {
            out.push(Expr::Binary(
                BinOp::Eq,
                *ty,
                Box::new(Expr::Param(i as u32)),
                Box::new(f),
            ));
        }
    }
    for (extent, parts, is_grid) in [
        (Builtin::GridDim as fn(Dim) -> Builtin, scalars(grid), true),
        (Builtin::BlockDim as fn(Dim) -> Builtin, scalars(block), false),
    ] {
        for (d, part) in Dim::ALL.into_iter().zip(parts) {
            let Some((e, ty)) = part else { continue };
            if !ty.is_int() {
                continue;
            }
            // A constant block extent is the shape itself; a constant grid
            // extent is a fact (the grid is not part of the shape).
            let f = match e.as_int() {
                Some(_) if is_grid => Some(e.clone()),
                Some(_) => None,
                None => in_arguments(&e, &args),
            };
            let Some(f) = f else { continue };
            // An extent is a `dim3` component: the host's value converted
            // to `unsigned int` (a scalar grid converts as a whole).
            let wide = ScalarTy::I64;
            let extent_value = Expr::Cast(ScalarTy::U32, Box::new(Expr::Cast(ty, Box::new(f))));
            out.push(Expr::Binary(
                BinOp::Eq,
                wide,
                Box::new(Expr::Cast(wide, Box::new(Expr::Builtin(extent(d))))),
                Box::new(Expr::Cast(wide, Box::new(extent_value))),
            ));
        }
    }
    // Checks the host made before launching, about values it passes.
    // A constant check says nothing about the arguments; a constant false
    // one would make the launch dead, which host evaluation must not decide.
    // A conjunction is its conjuncts: one about values the host does not
    // pass leaves the others.
    fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Binary(BinOp::And, _, a, b) => {
                conjuncts(a, out);
                conjuncts(b, out);
            }
            // `c ? x : c` and `c ? x : false` are `c && x` (how a
            // short-circuit `&&` resolves; see `resolve_expr`).
            Expr::Select(c, x, y) if **y == **c || matches!(**y, Expr::Bool(false)) => {
                conjuncts(c, out);
                conjuncts(x, out);
            }
            e => out.push(e.clone()),
        }
    }
    for a in asserted {
        if let Value::Scalar(e, _) = a {
            let mut parts = Vec::new();
            conjuncts(e, &mut parts);
            for part in parts {
                if let Some(f) = in_arguments(&part, &args).filter(|f| !f.is_const()) {
                    out.push(f);
                }
            }
        }
    }
    let exact = exact_quotients(&out);
    out.extend(exact);
    out
}

/// `x == q*y` for facts `x / y == q` and `x % y == 0` (`C / H == 64` and
/// `C % H == 0`: `C == 64*H`): C's identity `x == (x/y)*y + x%y`, which
/// holds in wrapped arithmetic too. Linear where the quotient is a
/// constant, where the solver would have to find it through the division.
fn exact_quotients(facts: &[super::Expr]) -> Vec<super::Expr> {
    use super::Expr;
    use crate::ir::BinOp;
    let divides = |x: &Expr, y: &Expr, ty| {
        facts.iter().any(|f| match f {
            Expr::Binary(BinOp::Eq, t, r, zero) if *t == ty && zero.as_int() == Some(0) => {
                matches!(r.as_ref(), Expr::Binary(BinOp::Rem, t2, a, b) if *t2 == ty && **a == *x && **b == *y)
            }
            _ => false,
        })
    };
    facts
        .iter()
        .filter_map(|f| {
            let Expr::Binary(BinOp::Eq, ty, quotient, q) = f else {
                return None;
            };
            let Expr::Binary(BinOp::Div, t2, x, y) = quotient.as_ref() else {
                return None;
            };
            (ty == t2 && divides(x, y, *ty)).then(|| {
                Expr::Binary(
                    BinOp::Eq,
                    *ty,
                    x.clone(),
                    Box::new(Expr::Binary(BinOp::Mul, *ty, q.clone(), y.clone())),
                )
            })
        })
        .collect()
}

/// `e` with every part equal to an argument's value replaced by that
/// argument (`Param(position)`); `None` if host values remain. An
/// argument reads as its host type (`Cast(host type, Param)`): the
/// parameter converted back, which is the host's value where the
/// parameter is at least as wide (see `driver::congruent`).
fn in_arguments(e: &super::Expr, args: &[Option<(&super::Expr, crate::ir::ScalarTy)>]) -> Option<super::Expr> {
    use super::Expr;
    fn strip(e: &Expr) -> &Expr {
        match e {
            Expr::Cast(_, a) => strip(a),
            _ => e,
        }
    }
    /// `e`'s conversions applied to `core`'s replacement `value`.
    fn converted(e: &Expr, value: Expr) -> Expr {
        match e {
            Expr::Cast(ty, a) => Expr::Cast(*ty, Box::new(converted(a, value))),
            _ => value,
        }
    }
    // The argument itself, or the argument's value converted (`(int64_t)
    // n` of an argument `n`); not a value the argument converts (`n` of
    // an argument `(int) n`, which the conversion may have changed).
    let argument = |i: usize| args[i].map(|(_, host)| Expr::Cast(host, Box::new(Expr::Param(i as u32))));
    if let Some(i) = args.iter().position(|a| a.is_some_and(|(a, _)| a == e)) {
        return argument(i);
    }
    if let Some(i) = args
        .iter()
        .position(|a| a.is_some_and(|(a, _)| !matches!(a, Expr::Cast(..)) && a == strip(e)))
    {
        return Some(converted(e, argument(i)?));
    }
    let go = |x: &Expr| in_arguments(x, args).map(Box::new);
    Some(match e {
        Expr::Int(..) | Expr::Bool(_) => e.clone(),
        Expr::Unary(op, ty, a) => Expr::Unary(*op, *ty, go(a)?),
        Expr::Binary(op, ty, a, b) => Expr::Binary(*op, *ty, go(a)?, go(b)?),
        Expr::Select(c, a, b) => Expr::Select(go(c)?, go(a)?, go(b)?),
        Expr::Cast(ty, a) => Expr::Cast(*ty, go(a)?),
        _ => return None,
    })
}

/// `v` with the host variables it reads replaced by the values the
/// statements before assigned them (a `const` computed from runtime values).
fn resolve_value(v: &super::Value, stmts: &[crate::ir::Stmt]) -> super::Value {
    use super::Value;
    match v {
        // Deep enough for a short-circuit chain of ten conditions (each an
        // `if` and an assignment; ggml's `can_vec`): 2% more resolution
        // steps on ggml than 16.
        Value::Scalar(e, t) => Value::Scalar(resolve_expr(e, stmts, stmts.len(), 64), t.clone()),
        Value::Agg(t, parts) => Value::Agg(t.clone(), parts.iter().map(|p| resolve_value(p, stmts)).collect()),
        other => other.clone(),
    }
}

/// `e` as evaluated just before statement `at`: a variable is the value of
/// its last assignment before that point; after an `if` that assigns it,
/// the branch's value the condition selects (`t = a; if (t) t = b;`, how
/// `a && b` lowers, is `a ? b : a`). After any other statement that may
/// write it (a loop, an inlined call's block) it stays the variable,
/// whose value is unknown.
fn resolve_expr(e: &super::Expr, stmts: &[crate::ir::Stmt], at: usize, depth: u32) -> super::Expr {
    resolve_in(e, &[(stmts, at)], depth)
}

/// [`resolve_expr`] in nested blocks: `frames` from the outermost, each a
/// block and the point in it (a branch's block within the statements
/// before its `if`).
fn resolve_in(e: &super::Expr, frames: &[(&[crate::ir::Stmt], usize)], depth: u32) -> super::Expr {
    use super::Expr;
    use crate::ir::StmtKind;
    if depth == 0 {
        return e.clone();
    }
    let go = |x: &Expr| Box::new(resolve_in(x, frames, depth - 1));
    match e {
        Expr::Var(v) => {
            for (level, &(stmts, at)) in frames.iter().enumerate().rev() {
                let before = |i: usize| {
                    let mut outer = frames[..level].to_vec();
                    outer.push((stmts, i));
                    outer
                };
                for (i, s) in stmts[..at.min(stmts.len())].iter().enumerate().rev() {
                    match &s.kind {
                        StmtKind::Assign { var, value } if var == v => {
                            return resolve_in(value, &before(i), depth - 1);
                        }
                        StmtKind::If {
                            cond,
                            then_block,
                            else_block,
                        } if writes_var(s, *v) => {
                            let outer = before(i);
                            let after = |block: &crate::ir::Block| {
                                let mut inner = outer.clone();
                                inner.push((&block.0[..], block.0.len()));
                                resolve_in(e, &inner, depth - 1)
                            };
                            let (then_value, else_value) = (after(then_block), after(else_block));
                            // A branch that leaves the variable unknown
                            // leaves it unknown.
                            if [&then_value, &else_value]
                                .iter()
                                .any(|x| matches!(x, Expr::Var(w) if w == v))
                            {
                                return e.clone();
                            }
                            let cond = resolve_in(cond, &outer, depth - 1);
                            return Expr::Select(Box::new(cond), Box::new(then_value), Box::new(else_value));
                        }
                        _ if writes_var(s, *v) => return e.clone(),
                        _ => {}
                    }
                }
            }
            e.clone()
        }
        Expr::Unary(op, ty, a) => Expr::Unary(*op, *ty, go(a)),
        Expr::Binary(op, ty, a, b) => Expr::Binary(*op, *ty, go(a), go(b)),
        Expr::Select(c, a, b) => Expr::Select(go(c), go(a), go(b)),
        Expr::Cast(ty, a) => Expr::Cast(*ty, go(a)),
        other => other.clone(),
    }
}

/// Whether statement `s`, or one nested in it, writes variable `v`.
fn writes_var(s: &crate::ir::Stmt, v: crate::ir::VarId) -> bool {
    use crate::ir::StmtKind;
    let any = |b: &crate::ir::Block| b.0.iter().any(|s| writes_var(s, v));
    match &s.kind {
        StmtKind::Assign { var, .. } | StmtKind::Havoc { var, .. } | StmtKind::Choose { var } => *var == v,
        StmtKind::If {
            then_block, else_block, ..
        } => any(then_block) || any(else_block),
        StmtKind::Loop(l) => any(&l.cond_pre) || any(&l.body) || any(&l.step),
        StmtKind::Labeled { body, .. } => any(body),
        _ => false,
    }
}

/// Host values that facts equate with constants (`switch (k) { case 32: … }`).
fn known_values(facts: &[super::Value]) -> Vec<(super::Expr, super::Expr)> {
    use super::{Expr, Value};
    use crate::ir::BinOp;
    fn strip(e: &Expr) -> &Expr {
        match e {
            Expr::Cast(_, a) => strip(a),
            _ => e,
        }
    }
    let mut out = Vec::new();
    for f in facts {
        let Value::Scalar(Expr::Binary(BinOp::Eq, _, a, b), _) = f else {
            continue;
        };
        for (x, c) in [(a, b), (b, a)] {
            let (x, c) = (strip(x), strip(c));
            if matches!(x, Expr::Sym(_) | Expr::Var(_)) && c.is_const() {
                out.push((x.clone(), c.clone()));
            }
        }
    }
    out
}

/// `v` with the host values `known` replaced by their constants.
fn substitute_value(v: &super::Value, known: &[(super::Expr, super::Expr)]) -> super::Value {
    use super::{Expr, Value};
    fn go(e: &Expr, known: &[(Expr, Expr)]) -> Expr {
        use crate::ir::fold;
        if let Some((_, c)) = known.iter().find(|(x, _)| x == e) {
            // The constant in the value's own type (folding converts it).
            return match (fold::type_of(e), c) {
                (Some(ty), Expr::Int(v, _)) => Expr::int(*v, ty),
                _ => c.clone(),
            };
        }
        let g = |x: &Expr| go(x, known);
        match e {
            Expr::Unary(op, ty, a) => fold::unary(*op, *ty, g(a)),
            Expr::Binary(op, ty, a, b) => fold::binary(*op, *ty, g(a), g(b)),
            Expr::Select(c, a, b) => fold::select(g(c), g(a), g(b)),
            Expr::Cast(ty, a) => fold::cast(*ty, g(a)),
            other => other.clone(),
        }
    }
    match v {
        Value::Scalar(e, t) => Value::Scalar(go(e, known), t.clone()),
        Value::Agg(t, parts) => Value::Agg(t.clone(), parts.iter().map(|p| substitute_value(p, known)).collect()),
        other => other.clone(),
    }
}

const ONE: super::Expr = super::Expr::Int(1, crate::ir::ScalarTy::U32);

/// The constants an extent may be: every leaf of its choices (`c ? 32 : 128`).
fn constants(e: &super::Expr) -> Option<Vec<i128>> {
    use super::Expr;
    match e {
        Expr::Int(v, _) => Some(vec![*v]),
        Expr::Cast(_, a) => constants(a),
        Expr::Select(_, a, b) => {
            let mut out = constants(a)?;
            out.extend(constants(b)?);
            out.sort_unstable();
            out.dedup();
            Some(out)
        }
        _ => None,
    }
}

/// A number every value of `e` is a multiple of (0 for the constant 0).
fn divisor(e: &super::Expr) -> i128 {
    use super::Expr;
    use crate::ir::{gcd, BinOp};
    match e {
        Expr::Int(v, _) => v.abs(),
        // Wrapping modulo 2^bits keeps power-of-two divisors below 2^bits.
        Expr::Cast(crate::ir::ScalarTy::Int { bits, .. }, a) => {
            let d = divisor(a);
            if d > 0 && d.trailing_zeros() < *bits as u32 && (d & (d - 1)) == 0 {
                d
            } else {
                1
            }
        }
        Expr::Select(_, a, b) => gcd(divisor(a), divisor(b)),
        Expr::Binary(op, _, a, b) => match op {
            BinOp::Mul => divisor(a).saturating_mul(divisor(b)),
            BinOp::Add | BinOp::Sub | BinOp::Min | BinOp::Max => gcd(divisor(a), divisor(b)),
            BinOp::Shl => match b.as_int() {
                Some(k) if (0..16).contains(&k) => divisor(a).saturating_mul(1 << k),
                _ => 1,
            },
            _ => 1,
        },
        _ => 1,
    }
}

/// The block shape a launch wrapper is given after the kernel: a launch
/// configuration aggregate holding the grid and block `dim3`s (in that
/// order, as in `<<<grid, block>>>`), or the grid and block as the next two
/// operands (`cudaLaunchKernel(k, grid, block, …)`).
/// The grid, the block, and how many operands after the kernel hold them.
fn wrapper_config(operands: &[super::Value]) -> Option<(Option<&super::Value>, &super::Value, usize)> {
    use super::Value;
    // A `dim3` (a vector type of three extents), whatever its values.
    let dims = |v: &Value| matches!(v, Value::Agg(super::Type::Vector(_), p) if p.len() == 3);
    match operands {
        // `{grid, block, smem, stream}`, in the order of `<<<…>>>`.
        [Value::Agg(_, parts), ..] if !dims(&operands[0]) => Some((parts.first(), parts.get(1)?, 1)),
        [grid, block, ..] if dims(grid) && dims(block) => Some((Some(grid), block, 2)),
        _ => None,
    }
}

/// The operands of the initializer of the variable `name` names, declared in
/// a block around `name` before it: `T v = {a, b}`, `T v{a, b}`, `T v(a, b)`.
fn initializer_operands<'t>(frag: &Fragment, name: Node<'t>) -> Option<Vec<Node<'t>>> {
    if name.kind_name() != "identifier" {
        return None;
    }
    let wanted = syntax::text(frag, name);
    let mut n = name;
    while let Some(p) = n.parent() {
        if p.kind_name() == "compound_statement" {
            for stmt in named_children(p).into_iter().rev() {
                if stmt.start_byte() >= n.start_byte() || stmt.kind_name() != "declaration" {
                    continue;
                }
                let mut cursor = stmt.walk();
                for d in stmt.children_by_field_name("declarator", &mut cursor) {
                    if declarator_name(frag, d).is_none_or(|(n, _)| n != wanted) {
                        continue;
                    }
                    let init = match d.kind_name() {
                        "init_declarator" => d.field("value"),
                        _ => None,
                    }?;
                    let list = match init.kind_name() {
                        "initializer_list" | "argument_list" => init,
                        "compound_literal_expression" => init.field("value")?,
                        "call_expression" => init.field("arguments")?,
                        _ => return None,
                    };
                    return Some(named_children(list));
                }
            }
        }
        if p.kind_name() == "function_definition" {
            return None;
        }
        n = p;
    }
    None
}

/// The block shapes of a launch, with its facts: `grid`, `block`, the
/// kernel's arguments and the host facts as the host code lowers them,
/// evaluated with the statements before the launch (`stmts`), and host values
/// the facts equate with constants replaced by them.
fn launch_shapes(
    grid: Option<&super::Value>,
    block: &super::Value,
    args: &[super::Value],
    host_facts: &[super::Value],
    stmts: &[crate::ir::Stmt],
) -> Option<Vec<LaunchShape>> {
    let host_facts: Vec<super::Value> = host_facts.iter().map(|a| resolve_value(a, stmts)).collect();
    let known = known_values(&host_facts);
    let settle = |v: &super::Value| substitute_value(&resolve_value(v, stmts), &known);
    let grid = grid.map(settle);
    let block = settle(block);
    let args: Vec<super::Value> = args.iter().map(settle).collect();
    let facts = launch_facts(grid.as_ref(), Some(&block), &args, &host_facts);
    if std::env::var("WARPDRF_DEBUG_LAUNCH").is_ok() {
        eprintln!("launch: grid {grid:?} block {block:?} args {args:?}; host facts {host_facts:?} -> {facts:?}");
    }
    let shapes = block_shape(&block)?;
    Some(
        shapes
            .into_iter()
            .map(|s| LaunchShape {
                facts: facts.iter().cloned().map(crate::ir::LaunchFact::evaluated).collect(),
                ..s
            })
            .collect(),
    )
}

/// Whether `name` is the name a function definition declares
/// (`template <> void f<half>(…) {…}`, an explicit specialization): a
/// definition, not a use.
fn names_definition(name: Node) -> bool {
    let mut n = name;
    while let Some(p) = n.parent() {
        match p.kind_name() {
            "qualified_identifier" => {}
            "function_declarator" => {
                return p.field("declarator") == Some(n)
                    && p.parent().is_some_and(|d| d.kind_name() == "function_definition")
            }
            _ => return false,
        }
        n = p;
    }
    false
}

/// Whether `call` (a call's node; `None`: not a call) may call `function`,
/// by its number of operands (`call::may_take_operands`, as overload
/// resolution counts them).
fn may_call(call: Option<Node>, function: Node) -> bool {
    call.and_then(|c| c.field("arguments"))
        .is_none_or(|operands| super::call::may_take_operands(function, named_children(operands).len()))
}

/// The parameter list of a function definition or declaration.
fn parameter_list(function: Node) -> Option<Node> {
    let mut decl = function.field("declarator")?;
    while decl.kind_name() != "function_declarator" {
        decl = decl.field("declarator")?;
    }
    decl.field("parameters")
}

/// The names of a kernel's parameters in declaration order (empty names
/// for unnamed ones).
fn kernel_param_names(index: &Index, kernel: DeclId) -> Vec<String> {
    let d = index.decl(kernel);
    let Some(params) = parameter_list(d.node) else {
        return Vec::new();
    };
    let params = named_children(params);
    // After a parameter pack the positions of operands and parameters part.
    if params.iter().any(|p| p.kind_name() == "variadic_parameter_declaration") {
        return Vec::new();
    }
    params
        .into_iter()
        .filter(|p| {
            matches!(
                p.kind_name(),
                "parameter_declaration" | "optional_parameter_declaration"
            )
        })
        .map(|p| {
            p.field("declarator")
                .and_then(|x| declarator_name(d.frag, x))
                .map(|(n, _)| n)
                .unwrap_or_default()
        })
        .collect()
}

/// A call whose name says it launches (`…launch…`): it is a launch even
/// when its shape operands are not understood.
fn is_launcher(frag: &Fragment, call: Node) -> bool {
    call.field("function")
        .is_some_and(|f| syntax::text(frag, f).to_ascii_lowercase().contains("launch"))
}

/// A template argument with no symbol or unresolved type in it.
fn is_concrete(a: &TArg) -> bool {
    match a {
        TArg::Value(super::CVal::Int(..)) => true,
        TArg::Value(super::CVal::Sym(..)) => false,
        TArg::Func(_) => true,
        TArg::Choice(_) => false,
        TArg::Type(t) => !matches!(t, super::Type::Opaque(_)),
        TArg::Pack(items) => items.iter().all(is_concrete),
    }
}

/// A search for a host template's instantiations (see `Finder::envs`).
struct EnvSearch {
    /// The depth it was searched from.
    from: u32,
    /// It stopped short.
    short: bool,
    /// It passed over a root.
    passed_over: bool,
    envs: Vec<TemplateEnv>,
}

struct Finder<'s> {
    /// The kernel's parameter names, in declaration order.
    params: Vec<String>,
    /// What searches before found of host templates and callers, with
    /// the fragments `searched` searched before (see [`HostSearch`]).
    found: &'s mut HostCaches,
    /// What the callers of host functions pass them, evaluated with their
    /// template parameters unknown (see [`Self::symbolic_callers`]).
    symbolic: &'s mut CallerCache,
    /// Callers are evaluated with their template parameters unknown (for
    /// [`KernelUses::every_site`]), not under the instantiations found.
    symbolic_callers: bool,
    function_nodes: &'s HashMap<usize, DeclId>,
    /// The kernel whose launches are collected, and what they were.
    kernel: DeclId,
    /// Launches by `<<<…>>>` or through a wrapper that takes the kernel:
    /// the arguments and the block shape (`None`: not determined at all).
    launches: Vec<(Vec<TArg>, Option<Vec<LaunchShape>>)>,
    /// Some search stopped short (at [`MAX_TUPLES`], or [`MAX_DEPTH`]
    /// enclosing templates out), at the kernel or at a host template on
    /// the way: instantiations may exist that it did not find.
    truncated: bool,
    /// Fragments an earlier search read (see [`kernel_uses_beyond`]).
    searched: &'s HashSet<usize>,
    /// A function on the way from the kernel to the uses now searched is
    /// in a fragment not searched: every root is followed.
    fresh: bool,
    /// The search of the host template now searched passed over a root:
    /// one whose every use is such has instantiations, all found before
    /// (not unknown ones, as where it has no use at all). Its own: what
    /// `envs_of` reads of a caller's search does not set it.
    passed_over: bool,
}

impl<'s> Finder<'s> {
    /// The cache of what callers pass, in the current mode.
    fn callers(&mut self) -> &mut CallerCache {
        if self.symbolic_callers {
            self.symbolic
        } else {
            &mut self.found.callers
        }
    }

    /// What the uses of the kernel say about it.
    fn kernel_uses(&mut self, l: &mut Lowerer) -> KernelUses {
        let mut tuples: Vec<Tuple> = Vec::new();
        // Symbols of this search do not exist in later lowerings: they become `None`.
        for t in self.tuples_of(l, self.kernel, 0) {
            let t: Tuple = t.into_iter().map(|a| Some(a).filter(is_concrete)).collect();
            if t.iter().any(Option::is_some) && !tuples.contains(&t) && tuples.len() < MAX_TUPLES + MAX_NOVEL {
                tuples.push(t);
            }
        }
        tuples.sort_by_key(|t| std::cmp::Reverse(t.iter().filter(|a| a.is_some()).count()));
        let mut launches: Vec<LaunchSite> = Vec::new();
        for (t, block) in std::mem::take(&mut self.launches) {
            let tuple: Tuple = t.into_iter().map(|a| Some(a).filter(is_concrete)).collect();
            let site = LaunchSite {
                tuple,
                blocks: block.unwrap_or_else(|| vec![LaunchShape::symbolic()]),
                params: self.params.clone(),
            };
            if !launches.contains(&site) {
                launches.push(site);
            }
        }
        let complete = !self.truncated;
        // Only a search that stopped short needs them.
        let every_site = if !complete {
            let _s = crate::profile::stage("every-site");
            self.shapes_at_every_site(l)
        } else {
            None
        };
        KernelUses {
            tuples,
            launches,
            every_site,
            complete,
        }
    }

    /// Argument tuples of the uses of `target`: template-ids (`f<…>`), calls
    /// whose remaining arguments are deduced from the call's operands, and
    /// explicit instantiations.
    fn tuples_of<'u>(&mut self, l: &mut Lowerer<'u>, target: DeclId, depth: u32) -> Vec<Vec<TArg>> {
        let d = l.index.decl(target).clone();
        let name = d.name.clone();
        let mut out = Vec::new();
        let target_node = d.node;
        // Roots already searched give nothing new only through functions
        // already searched.
        let fresh = self.fresh || !self.searched.contains(&fragment_key(d.frag));
        let passed = |frag: &Fragment| !fresh && self.searched.contains(&fragment_key(frag));
        // Each use with the instantiations of the template around it.
        let mut uses = Vec::new();
        for (frag, site) in unit_uses(l, &name) {
            // A call of another overload of the same name (by its number
            // of operands) is no use of this one.
            if !may_call(site.call, target_node) || names_definition(site.node) {
                continue;
            }
            let (enclosing, scope) = self.enclosing(l, site.node);
            let mut envs = match enclosing {
                Some(f) if l.index.decl(f).template.is_some() => {
                    if depth >= MAX_DEPTH || f == target {
                        // Instantiations reached only through here are
                        // not followed.
                        if std::env::var("WARPDRF_DEBUG_TUPLES").is_ok() {
                            eprintln!(
                                "search for {} stops at {} (depth {depth})",
                                d.name,
                                l.index.decl(f).name
                            );
                        }
                        self.truncated = true;
                        continue;
                    }
                    let below = std::mem::replace(&mut self.fresh, fresh);
                    let (envs, passed_over) = self.envs_of(l, f, depth + 1);
                    self.fresh = below;
                    // Every instantiation of `f` comes from a root passed
                    // over: none is new, and neither is this use's.
                    if passed_over && envs.is_empty() {
                        self.passed_over = true;
                        continue;
                    }
                    envs
                }
                _ if passed(frag) => {
                    self.passed_over = true;
                    continue;
                }
                _ => vec![TemplateEnv::default()],
            };
            if envs.is_empty() {
                // The enclosing template's own instantiations are unknown: its
                // parameters stay unresolved and give undetermined arguments.
                envs.push(TemplateEnv::default());
            }
            uses.push((frag, site, enclosing, scope, envs));
        }
        // Breadth first: every use with its first instantiation around it,
        // then every use with its second, and so on, so that a cap reached
        // in one use's instantiations leaves no other use out (ggml's
        // flash_attn_ext_f16 is named in both arms of an `if`, with
        // `use_logit_softcap` false and true: one use at a time, the `true`
        // arm's instantiations filled the cap, and no `false` variant, the
        // one that runs, was found). Past the cap, a tuple
        // is still kept where one of its arguments takes a value no tuple
        // kept has ([`MAX_NOVEL`] of them): what the cap leaves out is then
        // a combination of values the tuples kept have, not a value.
        let rounds = uses.iter().map(|u| u.4.len()).max().unwrap_or(0);
        let mut evaluated = 0;
        for k in 0..rounds {
            // Whole rounds only: a tuple named where the kernel is not
            // launched (`cudaFuncSetAttribute(k<…>)`) keeps the shapes of
            // the launches of the same instantiation around it.
            if evaluated >= MAX_EVALUATED {
                if std::env::var("WARPDRF_DEBUG_TUPLES").is_ok() {
                    eprintln!("search for {} stops after {evaluated} uses (depth {depth})", d.name);
                }
                self.truncated = true;
                break;
            }
            for (frag, site, enclosing, scope, envs) in &uses {
                let Some(env) = envs.get(k) else {
                    continue;
                };
                // Declarations outside functions (`extern template …`)
                // launch nothing and cost little.
                evaluated += usize::from(enclosing.is_some());
                let Some((tuple, launched, block)) =
                    self.site_launch(l, frag, site, *enclosing, *scope, env.clone(), target, depth)
                else {
                    continue;
                };
                if launched {
                    self.launches.push((tuple.clone(), block));
                }
                // A bare name passed to a wrapper names no arguments.
                if site.args.is_none() && site.call.is_none() {
                    continue;
                }
                self.keep(&mut out, tuple, &d.name, depth);
            }
        }
        // `template void f<…>(…);`
        for &(node, frag, scope) in &l.index.instantiations.clone() {
            if passed(frag) {
                self.passed_over = true;
                continue;
            }
            let Some(decl) = node.field("declarator") else {
                continue;
            };
            let Some((_, name_node)) = declarator_name(frag, decl) else {
                continue;
            };
            if name_node.kind_name() != "template_function" {
                continue;
            }
            let base = name_node.field("name").map(|n| syntax::text(frag, n)).unwrap_or("");
            if base != name {
                continue;
            }
            let Some(args) = name_node.field("arguments") else {
                continue;
            };
            let ctx = Ctx {
                frag,
                scope,
                tenv: Rc::new(TemplateEnv::default()),
                class: None,
            };
            let tuple = l.in_ctx(ctx, |l2| l2.template_args(args));
            self.keep(&mut out, tuple, &name, depth);
        }
        // The caps of the searches that use these keep the most diverse.
        diverse_order(&out, is_concrete)
    }

    /// Adds `tuple` to the tuples found, `out`, if new: up to
    /// [`MAX_TUPLES`], and past it where it has an argument value none of
    /// them has (up to [`MAX_NOVEL`] more; see [`Self::tuples_of`]).
    fn keep(&mut self, out: &mut Vec<Vec<TArg>>, tuple: Vec<TArg>, name: &str, depth: u32) {
        if out.contains(&tuple) {
            return;
        }
        if out.len() < MAX_TUPLES {
            out.push(tuple);
            return;
        }
        if !self.truncated && std::env::var("WARPDRF_DEBUG_TUPLES").is_ok() {
            eprintln!("search for {name} stops at its cap (depth {depth})");
        }
        self.truncated = true;
        if out.len() < MAX_TUPLES + MAX_NOVEL && novel(out, &tuple, is_concrete) > 0 {
            out.push(tuple);
        }
    }

    /// See [`KernelUses::every_site`]. A shape the launching function
    /// receives as a parameter is followed to its callers, each evaluated
    /// with its own template parameters unknown: their instantiations may
    /// be past the search too.
    fn shapes_at_every_site<'u>(&mut self, l: &mut Lowerer<'u>) -> Option<Vec<LaunchShape>> {
        self.symbolic_callers = true;
        let out = self.shapes_at_every_site_symbolically(l);
        self.symbolic_callers = false;
        out
    }

    fn shapes_at_every_site_symbolically<'u>(&mut self, l: &mut Lowerer<'u>) -> Option<Vec<LaunchShape>> {
        let name = l.index.decl(self.kernel).name.clone();
        let mut out: Vec<LaunchShape> = Vec::new();
        for (frag, site) in unit_uses(l, &name) {
            let (enclosing, scope) = self.enclosing(l, site.node);
            let Some((_, true, block)) =
                self.site_launch(l, frag, &site, enclosing, scope, TemplateEnv::default(), self.kernel, 0)
            else {
                continue;
            };
            for shape in block.unwrap_or_else(|| vec![LaunchShape::symbolic()]) {
                let shape = LaunchShape {
                    facts: Vec::new(),
                    ..shape
                };
                if !out.contains(&shape) {
                    out.push(shape);
                }
            }
        }
        Some(out).filter(|o| !o.is_empty())
    }

    /// One use of `target` (`site`, in `frag`, inside `enclosing` at
    /// `scope`) evaluated under the enclosing template's environment `env`:
    /// the template arguments it names, whether it launches the kernel, and
    /// the block shapes it launches with (`None`: not determined at all).
    #[allow(clippy::too_many_arguments)]
    fn site_launch<'u>(
        &mut self,
        l: &mut Lowerer<'u>,
        frag: &'u Fragment,
        site: &Use<'u>,
        enclosing: Option<DeclId>,
        scope: super::ScopeId,
        env: TemplateEnv,
        target: DeclId,
        depth: u32,
    ) -> Option<(Vec<TArg>, bool, Option<Vec<LaunchShape>>)> {
        let own_env = env.clone();
        let ctx = Ctx {
            frag,
            scope,
            tenv: Rc::new(env),
            class: None,
        };
        // A use in a branch of an `if constexpr` that this instantiation
        // discards is none (`if constexpr (n <= 8) { k<8 / n>… }`, with n 16:
        // no k<0>).
        if l.in_ctx(ctx.clone(), |l2| l2.discarded(site.node)) {
            return None;
        }
        // `k<<<grid, block, …>>>(…)`: the block operand.
        let block_operand = site
            .call
            .and_then(|c| launch_config_operand(c, 1))
            .filter(|_| target == self.kernel);
        // `launch(k<…>, config, …)`: the operands after the kernel.
        let wrapper = site.wrapper.filter(|_| target == self.kernel);
        let mut block = None;
        let mut from_params = false;
        let mut launched = block_operand.is_some();
        // The syntax that gives the block shape.
        let mut block_node: Option<Node<'u>> = block_operand;
        let tuple = l.in_ctx(ctx, |l2| {
            l2.blocks.push(Vec::new());
            if let Some(f) = enclosing {
                l2.bind_host_params(f);
            }
            let asserted = l2.bind_preceding_constants(site.call.or(site.wrapper.map(|w| w.0)).unwrap_or(site.node));
            let asserted: Vec<super::Value> = asserted
                .iter()
                .filter_map(|f| {
                    let v = l2.host_fact(*f);
                    if std::env::var("WARPDRF_DEBUG_LAUNCH").is_ok() {
                        let text: Vec<&str> = f.nodes().iter().map(|n| syntax::text(frag, *n)).collect();
                        eprintln!("host fact {text:?} = {v:?}");
                    }
                    v
                })
                .collect();
            let explicit = match site.args {
                Some(a) => l2.template_args(a),
                None => Vec::new(),
            };
            let tuple = match site.call {
                Some(call) => {
                    let operands = l2.operands(call.field("arguments"));
                    l2.deduced_tuple(target, &explicit, &operands).unwrap_or(explicit)
                }
                None => explicit,
            };
            if block_operand.is_some() || wrapper.is_some() {
                let (shapes, node, value) = l2.launch_at(site.call, block_operand, wrapper, &asserted);
                block = shapes;
                block_node = node;
                // Whether the block is computed from the enclosing
                // function's parameters (its symbols, `f::name`).
                if let (Some(f), Some(v)) = (enclosing, value) {
                    let prefix = format!("{}::", l2.index.decl(f).name);
                    from_params = l2.mentions_sym(&v, |name| name.starts_with(&prefix));
                }
                if let Some((call, _)) = wrapper {
                    launched = block.is_some() || is_launcher(frag, call);
                }
            }
            // Not launched here: through a function pointer, by a
            // host function that launches its parameter.
            if block.is_none() && block_operand.is_none() && target == self.kernel {
                if let Some(shapes) = l2.pointer_launches(site.node, site.wrapper) {
                    launched = true;
                    block = shapes;
                }
            }
            l2.blocks.pop();
            tuple
        });
        // A shape the launching function receives as a parameter:
        // the shapes its callers pass.
        let undetermined = |block: &Option<Vec<LaunchShape>>| {
            block
                .as_ref()
                .is_none_or(|shapes| shapes.iter().any(|s| s.block.iter().any(Option::is_none)))
        };
        if let (true, true, Some(f), Some(node)) = (launched, undetermined(&block), enclosing, block_node) {
            let position = (node.kind_name() == "identifier")
                .then(|| {
                    let name = syntax::text(frag, node);
                    kernel_param_names(l.index, f).iter().position(|p| p == name)
                })
                .flatten();
            if let Some(at) = position {
                if let Some(shapes) = self.caller_blocks(l, f, at, depth) {
                    block = Some(shapes);
                }
            }
        }
        // A shape built from the launching function's scalar parameters
        // (`dim3 block(warp_size, n)`): the launch evaluated again at each
        // caller, with the parameters bound to its operands.
        if let (true, true, true, Some(f)) = (launched, undetermined(&block), from_params, enclosing) {
            let launch = SiteLaunch {
                frag,
                site,
                scope,
                env: own_env,
                block_operand,
                wrapper,
            };
            if let Some(shapes) = self.launch_at_callers(l, &launch, f, depth) {
                let determined = |s: &Option<Vec<LaunchShape>>| {
                    s.as_ref().map_or(0, |v| {
                        v.iter().flat_map(|x| x.block.iter()).filter(|e| e.is_some()).count()
                    })
                };
                let shapes = Some(shapes);
                // Only where it says more: the callers' operands may be
                // less known than the function's own parameters.
                if determined(&shapes) > determined(&block) || block.is_none() {
                    block = shapes;
                }
            }
        }
        Some((tuple, launched, block))
    }

    /// The shapes of the launch `launch` inside host function `f`, evaluated
    /// once per call of `f` (under each of its caller's instantiations,
    /// or with the caller's template parameters unknown for
    /// [`KernelUses::every_site`]) with `f`'s parameters bound to that
    /// call's operands. `None` when a use of `f` is not a call, or a
    /// caller's launch shape is not determined at all.
    fn launch_at_callers<'u>(
        &mut self,
        l: &mut Lowerer<'u>,
        launch: &SiteLaunch<'u, '_>,
        f: DeclId,
        depth: u32,
    ) -> Option<Vec<LaunchShape>> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let calls = self.caller_operands(l, f, depth)?;
        let mut out: Vec<LaunchShape> = Vec::new();
        for values in calls.iter() {
            let own = Ctx {
                frag: launch.frag,
                scope: launch.scope,
                tenv: Rc::new(launch.env.clone()),
                class: None,
            };
            let site = launch.site;
            let shapes = l.in_ctx(own, |l2| {
                l2.blocks.push(Vec::new());
                l2.bind_call_operands(f, values);
                let at = site.call.or(site.wrapper.map(|w| w.0)).unwrap_or(site.node);
                let asserted = l2.bind_preceding_constants(at);
                let asserted: Vec<super::Value> = asserted.iter().filter_map(|x| l2.host_fact(*x)).collect();
                let (shapes, _, _) = l2.launch_at(site.call, launch.block_operand, launch.wrapper, &asserted);
                l2.blocks.pop();
                shapes
            })?;
            for s in shapes {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        (!calls.is_empty()).then_some(out)
    }

    /// The environments a call inside host function `caller` is evaluated
    /// under: each of its instantiations, or its template parameters
    /// unknown (when they are not found, or for [`KernelUses::every_site`]).
    fn caller_envs<'u>(&mut self, l: &mut Lowerer<'u>, caller: Option<DeclId>, depth: u32) -> Vec<TemplateEnv> {
        let envs = match caller {
            Some(g) if l.index.decl(g).template.is_some() && !self.symbolic_callers => self.envs_of(l, g, depth + 1).0,
            _ => Vec::new(),
        };
        if envs.is_empty() {
            vec![TemplateEnv::default()]
        } else {
            envs
        }
    }

    /// The distinct operand lists host function `f` is called with, each
    /// evaluated where it is called (under each of the caller's
    /// instantiations, or with its template parameters unknown for
    /// [`KernelUses::every_site`]). `None` when a use of `f` is not a
    /// call, or there are more than [`MAX_CALLER_OPERANDS`] lists.
    fn caller_operands<'u>(&mut self, l: &mut Lowerer<'u>, f: DeclId, depth: u32) -> CallerOperands {
        self.cached(
            |c| &mut c.operands,
            f,
            depth,
            |this| this.caller_operands_uncached(l, f, depth).map(Rc::new),
        )
    }

    /// `search` through the cache `table` picks in the current mode's
    /// [`CallerCache`], at `key`: what an earlier evaluation from `depth`
    /// or nearer found (a short one stops this search short too), else
    /// made and kept (while it is made, a search of `key` within it finds
    /// `T::default()`).
    fn cached<K: std::hash::Hash + Eq + Copy, T: Clone + Default>(
        &mut self,
        table: fn(&mut CallerCache) -> &mut HashMap<K, CallerSearch<T>>,
        key: K,
        depth: u32,
        search: impl FnOnce(&mut Self) -> T,
    ) -> T {
        if let Some((known, short)) = table(self.callers()).get(&key).and_then(|c| c.reuse(depth)) {
            self.truncated |= short;
            return known;
        }
        table(self.callers()).insert(key, CallerSearch::pending(depth, T::default()));
        let (found, short) = self.noting_short(search);
        table(self.callers()).insert(
            key,
            CallerSearch {
                from: depth,
                short,
                found: found.clone(),
            },
        );
        found
    }

    /// What `search` gives, and whether it stopped short (`truncated`,
    /// which it also leaves set for the search around it).
    fn noting_short<T>(&mut self, search: impl FnOnce(&mut Self) -> T) -> (T, bool) {
        let outer = std::mem::take(&mut self.truncated);
        let found = search(self);
        let short = self.truncated;
        self.truncated |= outer;
        (found, short)
    }

    fn caller_operands_uncached<'u>(
        &mut self,
        l: &mut Lowerer<'u>,
        f: DeclId,
        depth: u32,
    ) -> Option<Vec<Vec<super::Value>>> {
        let name = l.index.decl(f).name.clone();
        let mut out: Vec<Vec<super::Value>> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        for (frag, use_of_f) in unit_uses(l, &name) {
            let call = use_of_f.call?;
            let (g, scope) = self.enclosing(l, call);
            if g == Some(f) {
                return None;
            }
            let envs = self.caller_envs(l, g, depth);
            let args: Vec<Node<'u>> = call.field("arguments").map(named_children).unwrap_or_default();
            for env in envs {
                let caller = Ctx {
                    frag,
                    scope,
                    tenv: Rc::new(env),
                    class: None,
                };
                let values: Vec<super::Value> = l.in_ctx(caller, |l2| {
                    l2.blocks.push(Vec::new());
                    if let Some(g) = g {
                        l2.bind_host_params(g);
                    }
                    l2.bind_preceding_constants(call);
                    let values = args.iter().map(|a| l2.scratch_expr(*a)).collect();
                    l2.blocks.pop();
                    values
                });
                // `Value` has no equality: its printed form tells lists apart.
                let key = format!("{values:?}");
                if !seen.contains(&key) {
                    if out.len() == MAX_CALLER_OPERANDS {
                        return None;
                    }
                    seen.push(key);
                    out.push(values);
                }
            }
        }
        Some(out)
    }

    /// The block shapes the callers of host function `f` pass as its
    /// parameter at `position` (a `dim3`), each evaluated where it is
    /// called; `None` when a caller's is not a shape or there is no caller.
    fn caller_blocks<'u>(
        &mut self,
        l: &mut Lowerer<'u>,
        f: DeclId,
        position: usize,
        depth: u32,
    ) -> Option<Vec<LaunchShape>> {
        if depth >= MAX_DEPTH {
            return None;
        }
        // The same for every launch in `f`: computed once.
        self.cached(
            |c| &mut c.shapes,
            (f, position),
            depth,
            |this| this.caller_blocks_uncached(l, f, position, depth),
        )
    }

    fn caller_blocks_uncached<'u>(
        &mut self,
        l: &mut Lowerer<'u>,
        f: DeclId,
        position: usize,
        depth: u32,
    ) -> Option<Vec<LaunchShape>> {
        let name = l.index.decl(f).name.clone();
        let mut out: Vec<LaunchShape> = Vec::new();
        for (frag, site) in unit_uses(l, &name) {
            let Some(call) = site.call else { continue };
            let arg = call
                .field("arguments")
                .and_then(|a| named_children(a).get(position).copied())?;
            let (enclosing, scope) = self.enclosing(l, call);
            let envs = self.caller_envs(l, enclosing.filter(|&g| g != f), depth);
            for env in envs {
                let ctx = Ctx {
                    frag,
                    scope,
                    tenv: Rc::new(env),
                    class: None,
                };
                let shapes = l.in_ctx(ctx, |l2| {
                    l2.blocks.push(Vec::new());
                    if let Some(g) = enclosing {
                        l2.bind_host_params(g);
                    }
                    let facts = l2.bind_preceding_constants(call);
                    let facts: Vec<super::Value> = facts.iter().filter_map(|x| l2.host_fact(*x)).collect();
                    let v = l2.scratch_expr(arg);
                    let stmts = l2.blocks.last().map_or(&[][..], |b| &b[..]);
                    // Only a `dim3` (or an integer) is a shape; no
                    // facts relate it to the kernel's arguments here.
                    let shapes = match &v {
                        super::Value::Agg(super::Type::Vector(_), _) | super::Value::Scalar(..) => {
                            launch_shapes(None, &v, &[], &facts, stmts)
                        }
                        _ => None,
                    };
                    l2.blocks.pop();
                    shapes
                })?;
                for s in shapes {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
        Some(out).filter(|o| !o.is_empty())
    }

    /// The template environments a host function template is instantiated
    /// with, and whether the search for them passed over a root.
    fn envs_of<'u>(&mut self, l: &mut Lowerer<'u>, f: DeclId, depth: u32) -> (Vec<TemplateEnv>, bool) {
        let key = (f, self.fresh);
        if let Some(known) = self.found.envs.get(&key) {
            if known.from <= depth || !known.short {
                self.truncated |= known.short;
                return (known.envs.clone(), known.passed_over);
            }
        }
        // (A search of `f` within its own search finds nothing.)
        self.found.envs.insert(
            key,
            EnvSearch {
                from: depth,
                short: false,
                passed_over: false,
                envs: Vec::new(),
            },
        );
        let d = l.index.decl(f).clone();
        let Some(params) = d.template else {
            return (vec![TemplateEnv::default()], false);
        };
        let outer_passed = std::mem::take(&mut self.passed_over);
        let (tuples, short) = self.noting_short(|this| this.tuples_of(l, f, depth));
        let passed_over = std::mem::replace(&mut self.passed_over, outer_passed);
        let ctx = Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: Rc::new(TemplateEnv::default()),
            class: None,
        };
        let envs: Vec<TemplateEnv> = tuples
            .iter()
            .map(|t| l.bind_template_params(ctx.clone(), params, t, &TemplateEnv::default(), true))
            .collect();
        self.found.envs.insert(
            key,
            EnvSearch {
                from: depth,
                short,
                passed_over,
                envs: envs.clone(),
            },
        );
        (envs, passed_over)
    }

    /// The function definition around a node, and the scope to look names up in.
    fn enclosing<'u>(&self, l: &Lowerer<'u>, node: Node<'u>) -> (Option<DeclId>, super::ScopeId) {
        let mut n = node.parent();
        while let Some(p) = n {
            if p.kind_name() == "function_definition" {
                if let Some(&id) = self.function_nodes.get(&p.id()) {
                    return (Some(id), l.index.decl(id).scope);
                }
            }
            n = p.parent();
        }
        (None, super::index::GLOBAL)
    }
}

/// The operand lists a host function's callers pass it (`None`: not all known).
type CallerOperands = Option<Rc<Vec<Vec<super::Value>>>>;

/// What the callers of host functions pass them, as [`Finder`] found it.
#[derive(Default)]
struct CallerCache {
    /// Block shapes passed as a parameter, by (function, parameter position).
    shapes: HashMap<(DeclId, usize), CallerSearch<Option<Vec<LaunchShape>>>>,
    /// Operand lists, by function.
    operands: HashMap<DeclId, CallerSearch<CallerOperands>>,
}

/// An evaluation of callers (see [`CallerCache`]), like [`EnvSearch`]:
/// the depth it was made from and whether it stopped short.
struct CallerSearch<T> {
    from: u32,
    short: bool,
    found: T,
}

impl<T> CallerSearch<T> {
    /// The entry while it is made.
    fn pending(from: u32, found: T) -> CallerSearch<T> {
        CallerSearch {
            from,
            short: false,
            found,
        }
    }

    /// What it found and whether it stopped short, where that stands for
    /// an evaluation from `depth`: one from farther out that stopped short
    /// is made again.
    fn reuse(&self, depth: u32) -> Option<(T, bool)>
    where
        T: Clone,
    {
        (self.from <= depth || !self.short).then(|| (self.found.clone(), self.short))
    }
}

/// A launch inside a host function, as [`Finder::site_launch`] found it.
struct SiteLaunch<'u, 's> {
    frag: &'u Fragment,
    site: &'s Use<'u>,
    scope: super::ScopeId,
    env: TemplateEnv,
    block_operand: Option<Node<'u>>,
    wrapper: Option<(Node<'u>, usize)>,
}

/// A use of a template: a template-id and/or a call.
struct Use<'t> {
    node: Node<'t>,
    /// The `template_argument_list`, when explicit arguments are given.
    args: Option<Node<'t>>,
    /// The call (or launch) whose operands can deduce the other arguments.
    call: Option<Node<'t>>,
    /// The call that takes the kernel as its operand at this index (a
    /// launch wrapper, when the operands after it hold a launch shape).
    wrapper: Option<(Node<'t>, usize)>,
}

/// The call a node is an operand of, and at which index.
fn operand_of<'t>(n: Node<'t>) -> Option<(Node<'t>, usize)> {
    // Through casts and parentheses: `launch((void *) k, …)`.
    let mut n = n;
    while let Some(p) = n
        .parent()
        .filter(|p| matches!(p.kind_name(), "cast_expression" | "parenthesized_expression"))
    {
        n = p;
    }
    let list = n.parent().filter(|p| p.kind_name() == "argument_list")?;
    let call = list.parent().filter(|p| p.kind_name() == "call_expression")?;
    let at = named_children(list).iter().position(|c| c.id() == n.id())?;
    Some((call, at))
}

/// The variable a kernel's template-id is stored in: `T v = k<…>;` or
/// `v = k<…>;` (through casts and parentheses).
fn stored_in(frag: &Fragment, kernel: Node) -> Option<String> {
    let mut n = kernel;
    while let Some(p) = n
        .parent()
        .filter(|p| matches!(p.kind_name(), "cast_expression" | "parenthesized_expression"))
    {
        n = p;
    }
    let p = n.parent()?;
    match p.kind_name() {
        "init_declarator" if p.field("value") == Some(n) => declarator_name(frag, p).map(|(name, _)| name),
        "assignment_expression" if p.field("right") == Some(n) => p
            .field("left")
            .filter(|l| l.kind_name() == "identifier")
            .map(|l| syntax::text(frag, l).to_string()),
        _ => None,
    }
}

/// The function definition around a node.
fn enclosing_function(node: Node) -> Option<Node> {
    let mut n = node.parent();
    while let Some(p) = n {
        if p.kind_name() == "function_definition" {
            return Some(p);
        }
        n = p.parent();
    }
    None
}

/// Operand `i` of a launch's `<<<grid, block, …>>>`.
fn launch_config_operand(call: Node, i: usize) -> Option<Node> {
    kernel_call_syntax(call).and_then(|cfg| named_children(cfg).get(i).copied())
}

/// The `<<<…>>>` of a call that launches a kernel.
fn kernel_call_syntax(call: Node) -> Option<Node> {
    named_children(call)
        .into_iter()
        .find(|n| n.kind_name() == "kernel_call_syntax")
}

/// `n` without the parentheses around it.
fn unparenthesized(mut n: Node) -> Node {
    while n.kind_name() == "parenthesized_expression" {
        let Some(&inner) = named_children(n).first() else { break };
        n = inner;
    }
    n
}

/// Whether a declaration (a parameter's) is `const` at its top level.
fn declared_const(frag: &Fragment, decl: Node) -> bool {
    named_children(decl)
        .iter()
        .any(|c| c.kind_name() == "type_qualifier" && syntax::text(frag, *c) == "const")
}

/// The uses of `name` in every fragment of the unit, with their fragment.
fn unit_uses<'u>(l: &Lowerer<'u>, name: &str) -> Vec<(&'u Fragment, Use<'u>)> {
    let mut out = Vec::new();
    for frag in l.unit.fragments.iter() {
        if !frag.text.contains(name) {
            continue;
        }
        let frag: &'u Fragment = frag;
        let root = syntax::tree(frag).root_node();
        out.extend(uses(frag, root, name).into_iter().map(|u| (frag, u)));
    }
    out
}

/// Uses of `name` under `root`: template-ids `name<…>` and plain calls `name(…)`.
fn uses<'t>(frag: &Fragment, root: Node<'t>, name: &str) -> Vec<Use<'t>> {
    let mut out = Vec::new();
    let mut cursor = root.walk();
    let mut stack = vec![root];
    let names_it = |n: Node| syntax::text(frag, n) == name;
    while let Some(n) = stack.pop() {
        // Skip subtrees whose text cannot contain the name.
        if !frag.text.get(n.byte_range()).is_some_and(|t| t.contains(name)) {
            continue;
        }
        match n.kind_name() {
            "template_function" | "template_type" if n.field("name").is_some_and(names_it) => {
                let call = n
                    .parent()
                    .filter(|p| p.kind_name() == "call_expression" && p.field("function") == Some(n));
                out.push(Use {
                    node: n,
                    args: n.field("arguments"),
                    call,
                    wrapper: operand_of(n),
                });
            }
            "identifier" if names_it(n) => {
                if let Some(wrapper) = operand_of(n) {
                    out.push(Use {
                        node: n,
                        args: None,
                        call: None,
                        wrapper: Some(wrapper),
                    });
                }
            }
            "call_expression" => {
                let callee = n.field("function");
                let plain = callee.is_some_and(|f| match f.kind_name() {
                    "identifier" => names_it(f),
                    "qualified_identifier" => f
                        .field("name")
                        .is_some_and(|x| x.kind_name() == "identifier" && names_it(x)),
                    _ => false,
                });
                if plain {
                    out.push(Use {
                        node: n,
                        args: None,
                        call: Some(n),
                        wrapper: None,
                    });
                }
            }
            _ => {}
        }
        stack.extend(n.named_children(&mut cursor));
    }
    out
}

impl<'u> Lowerer<'u> {
    /// Whether `node` is in a branch of an `if constexpr` (in its
    /// function) whose condition the current template environment decides
    /// the other way.
    fn discarded(&mut self, node: Node<'u>) -> bool {
        let mut n = node;
        while let Some(p) = n.parent() {
            match p.kind_name() {
                "function_definition" | "lambda_expression" => break,
                "if_statement" if syntax::has_token(p, "constexpr") => {
                    let taken = if p.field("consequence").is_some_and(|c| c.id() == n.id()) {
                        Some(true)
                    } else if p.field("alternative").is_some_and(|c| c.id() == n.id()) {
                        Some(false)
                    } else {
                        None
                    };
                    let value = p.field("condition").and_then(|c| c.field("value"));
                    if let (Some(taken), Some(value)) = (taken, value) {
                        let v = self.scratch_expr(value);
                        if self.truth(v, value).as_bool() == Some(!taken) {
                            return true;
                        }
                    }
                }
                _ => {}
            }
            n = p;
        }
        false
    }

    /// Whether a value reads a symbol whose name `named` accepts.
    fn mentions_sym(&self, v: &super::Value, named: impl Fn(&str) -> bool + Copy) -> bool {
        use super::Value;
        let expr = |e: &super::Expr| {
            let mut found = false;
            e.visit(&mut |x| {
                if let super::Expr::Sym(s) = x {
                    found |= named(&self.k.syms[s.0 as usize].name);
                }
            });
            found
        };
        match v {
            Value::Scalar(e, _) => expr(e),
            Value::Agg(_, parts) => parts.iter().any(|p| self.mentions_sym(p, named)),
            _ => false,
        }
    }

    /// Binds the parameters of a host function to unknown values of their
    /// types, so expressions over them have types (for deduction).
    fn bind_host_params(&mut self, f: DeclId) {
        let d = self.index.decl(f).clone();
        let Some(params) = parameter_list(d.node) else {
            return;
        };
        for p in named_children(params) {
            if !matches!(
                p.kind_name(),
                "parameter_declaration" | "optional_parameter_declaration"
            ) {
                continue;
            }
            let (ty, name) = self.declared_type(p);
            if let Some(name) = name {
                let ty = ty.strip_ref().clone();
                // A scalar is one unknown value (a symbol named after it), so
                // the launch's uses of it can be related; so is each integer
                // field of a struct of values (`args.n` of `const args_t &
                // args`); others are unknown.
                match self.host_value(&format!("{}::{name}", d.name), &ty, 3) {
                    Some(value) if declared_const(self.frag(), p) => self.bind(&name, super::Binding::Value(value)),
                    Some(value) => {
                        // A variable: the host may assign it before it launches.
                        let place = self.local_place(&name, &ty, p);
                        self.write(&place, value, p);
                        self.bind(&name, super::Binding::Place(place));
                    }
                    None => self.bind(
                        &name,
                        super::Binding::Place(super::Place::Temp(super::Value::Unknown(ty))),
                    ),
                }
            }
        }
    }

    /// A host parameter's unknown value of type `ty`, named after `path`:
    /// an integer is a symbol; a struct of fields (no arrays or unions,
    /// which live in memory), to `depth` levels of structs, an aggregate
    /// of its fields' values, those of other types unknown; `None` for
    /// any other type.
    fn host_value(&mut self, path: &str, ty: &super::Type, depth: u32) -> Option<super::Value> {
        if ty.is_arith() && ty.scalar().is_int() {
            let s = self.sym(path, ty.scalar(), crate::ir::SymKind::Unresolved);
            return Some(super::Value::Scalar(super::Expr::Sym(s), ty.clone()));
        }
        if depth == 0 || !matches!(ty, super::Type::Class(_)) || self.has_array(ty) {
            return None;
        }
        let fields = self.fields_of(ty)?;
        let parts = fields
            .into_iter()
            .map(|(field, fty)| {
                self.host_value(&format!("{path}.{field}"), &fty, depth - 1)
                    .unwrap_or(super::Value::Unknown(fty))
            })
            .collect();
        Some(super::Value::Agg(ty.clone(), parts))
    }

    /// The block shapes of a launch in the current context: `k<<<grid,
    /// block, …>>>(…)` (`call` and its `block` operand) or a wrapper
    /// `launch(k, config, …)` (the call and the kernel's position), and the
    /// node that gives the block (for the callers' shapes when it is a
    /// parameter), and the block's value.
    fn launch_at(
        &mut self,
        call: Option<Node<'u>>,
        block: Option<Node<'u>>,
        wrapper: Option<(Node<'u>, usize)>,
        asserted: &[super::Value],
    ) -> (Option<Vec<LaunchShape>>, Option<Node<'u>>, Option<super::Value>) {
        let frag = self.frag();
        if let (Some(b), Some(call)) = (block, call) {
            let grid = launch_config_operand(call, 0).map(|g| self.scratch_expr(g));
            let v = self.scratch_expr(b);
            let args: Vec<super::Value> = call
                .field("arguments")
                .map(named_children)
                .unwrap_or_default()
                .into_iter()
                .map(|a| self.scratch_expr(a))
                .collect();
            let stmts = self.blocks.last().map_or(&[][..], |b| &b[..]);
            let shapes = launch_shapes(grid.as_ref(), &v, &args, asserted, stmts);
            return (shapes, Some(b), Some(resolve_value(&v, stmts)));
        }
        let Some((call, at)) = wrapper else {
            return (None, None, None);
        };
        let operands: Vec<Node> = call
            .field("arguments")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .skip(at + 1)
            .collect();
        let args: Vec<Node> = operands.iter().take(2).copied().collect();
        let mut values: Vec<super::Value> = args.iter().map(|a| self.scratch_expr(*a)).collect();
        // A configuration object built in memory (a class
        // with a constructor): its initializer's operands.
        let mut block_node = args.get(1).copied();
        if let Some(parts) = args.first().and_then(|a| initializer_operands(frag, *a)) {
            block_node = parts.get(1).copied();
            let parts: Vec<super::Value> = parts.iter().map(|p| self.scratch_expr(*p)).collect();
            values = vec![super::Value::Agg(super::Type::Void, parts)];
        }
        let mut block_value = None;
        let shapes = wrapper_config(&values).and_then(|(grid, b, used)| {
            // The kernel's arguments follow a configuration
            // aggregate; after `(grid, block)` they come
            // packed (`void **args`), so none are related.
            let rest: Vec<super::Value> = if used == 1 {
                operands[used.min(operands.len())..]
                    .iter()
                    .map(|a| self.scratch_expr(*a))
                    .collect()
            } else {
                Vec::new()
            };
            let stmts = self.blocks.last().map_or(&[][..], |b| &b[..]);
            block_value = Some(resolve_value(b, stmts));
            launch_shapes(grid, b, &rest, asserted, stmts)
        });
        (shapes, block_node, block_value)
    }

    /// Launches through a function pointer. The kernel's template-id is
    /// passed to a host function (`launch_f(ctx, k<…>, …)`: `wrapper`), or
    /// stored in a variable (`kernel_t f = k<…>;`, `f = k<…>;`) that the
    /// enclosing function passes to one. That function launches its
    /// parameter (`p<<<…>>>(…)` or `wrapper(p, config, …)`); each launch's
    /// shape is evaluated there, with its parameters bound to the call's
    /// operands (or their defaults). `None` when no such launch is found;
    /// one pointer hop is followed.
    fn pointer_launches(
        &mut self,
        kernel: Node<'u>,
        wrapper: Option<(Node<'u>, usize)>,
    ) -> Option<Option<Vec<LaunchShape>>> {
        let frag = self.frag();
        let carriers: Vec<(Node<'u>, usize)> = match wrapper {
            Some(w) => vec![w],
            None => {
                let name = stored_in(frag, kernel)?;
                let body = enclosing_function(kernel)?.field("body")?;
                uses(frag, body, &name).into_iter().filter_map(|u| u.wrapper).collect()
            }
        };
        let mut found: Vec<Option<Vec<LaunchShape>>> = Vec::new();
        for (call, at) in carriers {
            found.extend(self.launches_of_parameter(call, at));
        }
        if found.is_empty() {
            return None;
        }
        // Every launch's shapes, or undetermined when one is.
        Some(found.into_iter().try_fold(Vec::new(), |mut all, s| {
            for x in s? {
                if !all.contains(&x) {
                    all.push(x);
                }
            }
            Some(all)
        }))
    }

    /// The launches of parameter `at` inside the host function `call`
    /// calls, with their shapes (see [`Self::pointer_launches`]).
    fn launches_of_parameter(&mut self, call: Node<'u>, at: usize) -> Vec<Option<Vec<LaunchShape>>> {
        let frag = self.frag();
        let Some(callee) = call.field("function") else {
            return Vec::new();
        };
        let (name_node, explicit) = match callee.kind_name() {
            "template_function" => (callee.field("name"), callee.field("arguments")),
            "identifier" => (Some(callee), None),
            _ => (None, None),
        };
        let Some(name_node) = name_node else {
            return Vec::new();
        };
        let name = syntax::text(frag, name_node).to_string();
        let scope = self.ctx().scope;
        let Some(f) = self.index.lookup(scope, &name).into_iter().find(|&id| {
            let d = self.index.decl(id);
            d.defined && d.kind == DeclKind::Function && parameter_list(d.node).is_some()
        }) else {
            return Vec::new();
        };
        let d = self.index.decl(f).clone();
        if super::index::is_global(d.node) {
            return Vec::new();
        }
        let Some(param) = kernel_param_names(self.index, f)
            .get(at)
            .cloned()
            .filter(|p| !p.is_empty())
        else {
            return Vec::new();
        };
        let Some(body) = d.node.field("body") else {
            return Vec::new();
        };
        // The operands as the caller computes them, under its guards.
        let caller_facts = self.bind_preceding_constants(call);
        let caller_facts: Vec<super::Value> = caller_facts.iter().filter_map(|x| self.host_fact(*x)).collect();
        let arg_nodes: Vec<Node<'u>> = call.field("arguments").map(named_children).unwrap_or_default();
        let values: Vec<super::Value> = arg_nodes.iter().map(|a| self.scratch_expr(*a)).collect();
        let env = match d.template {
            Some(params) => {
                let explicit = explicit.map(|a| self.template_args(a)).unwrap_or_default();
                let operands = self.operands(call.field("arguments"));
                let tuple = self.deduced_tuple(f, &explicit, &operands).unwrap_or(explicit);
                let ctx = Ctx {
                    frag: d.frag,
                    scope: d.scope,
                    tenv: Rc::new(TemplateEnv::default()),
                    class: None,
                };
                self.bind_template_params(ctx, params, &tuple, &TemplateEnv::default(), true)
            }
            None => TemplateEnv::default(),
        };
        let ctx = Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: Rc::new(env),
            class: None,
        };
        self.in_ctx(ctx, |l| {
            l.bind_call_operands(f, &values);
            let mut out = Vec::new();
            for u in uses(d.frag, body, &param) {
                let block = u.call.and_then(|c| launch_config_operand(c, 1));
                if block.is_none() && u.wrapper.is_none() {
                    continue;
                }
                let facts = l.bind_preceding_constants(u.call.or(u.wrapper.map(|w| w.0)).unwrap_or(u.node));
                let mut facts: Vec<super::Value> = facts.iter().filter_map(|x| l.host_fact(*x)).collect();
                facts.extend(caller_facts.iter().cloned());
                let (shapes, _, _) = l.launch_at(u.call, block, u.wrapper, &facts);
                let launcher = u.wrapper.is_some_and(|(c, _)| is_launcher(d.frag, c));
                if shapes.is_some() || block.is_some() || launcher {
                    out.push(shapes);
                }
            }
            out
        })
    }

    /// Binds the parameters of host function `f` to a call's operand
    /// values, or to their default arguments, or to unknown values.
    fn bind_call_operands(&mut self, f: DeclId, values: &[super::Value]) {
        let d = self.index.decl(f).clone();
        let Some(params) = parameter_list(d.node) else {
            return;
        };
        let params = named_children(params).into_iter().filter(|p| {
            matches!(
                p.kind_name(),
                "parameter_declaration" | "optional_parameter_declaration"
            )
        });
        for (i, p) in params.enumerate() {
            let (ty, name) = self.declared_type(p);
            let Some(name) = name else { continue };
            let value = match values.get(i) {
                Some(v) => v.clone(),
                None => match p.field("default_value") {
                    Some(dv) => self.scratch_expr(dv),
                    None => super::Value::Unknown(ty.strip_ref().clone()),
                },
            };
            self.bind(&name, super::Binding::Place(super::Place::Temp(value)));
        }
    }

    /// The full argument tuple of a call to template `target` with explicit
    /// arguments and operands, when overload resolution accepts it.
    fn deduced_tuple(
        &mut self,
        target: DeclId,
        explicit: &[TArg],
        operands: &[super::call::Operand],
    ) -> Option<Vec<TArg>> {
        let d = self.index.decl(target).clone();
        let params = d.template?;
        let (env, _) = self.viable_for(target, explicit, operands)?;
        let mut tuple = Vec::new();
        for p in named_children(params) {
            let Some(name) = super::call::template_param_name(d.frag, p) else {
                continue;
            };
            match env.get(&name) {
                Some(TArg::Pack(items)) if p.kind_name().starts_with("variadic") => tuple.extend(items.iter().cloned()),
                Some(a) => tuple.push(a.clone()),
                None => break,
            }
        }
        Some(tuple)
    }

    /// Binds the `const`/`constexpr` locals declared before `node` in the blocks
    /// that enclose it and that `node` needs (host code choosing template
    /// arguments): only declarations of names the arguments mention, and of
    /// names their initializers mention, are evaluated.
    /// A host fact as a boolean value.
    fn host_fact(&mut self, f: HostFact<'u>) -> Option<super::Value> {
        use super::{Expr, Type, Value};
        use crate::ir::{BinOp, ScalarTy, UnOp};
        let truth = |v: Value| -> Option<Expr> {
            match v {
                Value::Scalar(e, Type::Bool) => Some(e),
                Value::Scalar(e, t) if t.scalar().is_int() => {
                    let ty = t.scalar();
                    Some(Expr::Binary(BinOp::Ne, ty, Box::new(e), Box::new(Expr::int(0, ty))))
                }
                _ => None,
            }
        };
        let e = match f {
            HostFact::Holds(c) => truth(self.scratch_expr(c))?,
            HostFact::Fails(c) => Expr::Unary(UnOp::Not, ScalarTy::Bool, Box::new(truth(self.scratch_expr(c))?)),
            HostFact::Equals(a, b) => {
                let int = |v: Value| match v {
                    Value::Scalar(e, t) if t.scalar().is_int() => Some(Expr::Cast(ScalarTy::I64, Box::new(e))),
                    _ => None,
                };
                let (a, b) = (int(self.scratch_expr(a))?, int(self.scratch_expr(b))?);
                Expr::Binary(BinOp::Eq, ScalarTy::I64, Box::new(a), Box::new(b))
            }
        };
        Some(Value::Scalar(e, Type::Bool))
    }

    /// Variables a host statement may change without being an assignment's
    /// target: those a reference it declares binds (`int &r = n;`), and
    /// variables it passes bare to a function that may change them
    /// ([`Self::may_take_by_reference`]).
    fn hidden_writes(&self, stmt: Node<'u>) -> std::rc::Rc<crate::hash::HashSet<String>> {
        memo_of(
            self.index.generation,
            stmt,
            |m| &mut m.hidden,
            || self.hidden_writes_uncached(stmt),
        )
    }

    /// [`Self::hidden_writes`], computed.
    fn hidden_writes_uncached(&self, stmt: Node<'u>) -> crate::hash::HashSet<String> {
        let frag = self.frag();
        let mut out = crate::hash::HashSet::default();
        let mut stack = vec![stmt];
        while let Some(n) = stack.pop() {
            match n.kind_name() {
                "reference_declarator" => {
                    let bound = n
                        .parent()
                        .filter(|p| p.kind_name() == "init_declarator")
                        .and_then(|p| p.field("value"));
                    if let Some(v) = bound {
                        out.extend(identifiers(frag, v));
                    }
                }
                "call_expression" => {
                    for (at, a) in n
                        .field("arguments")
                        .map(named_children)
                        .unwrap_or_default()
                        .into_iter()
                        .enumerate()
                    {
                        let a = unparenthesized(a);
                        if a.kind_name() != "identifier" {
                            continue;
                        }
                        let name = syntax::text(frag, a);
                        if self.may_take_by_reference(n, at) {
                            if std::env::var("WARPDRF_DEBUG_LAUNCH").is_ok() {
                                eprintln!(
                                    "hidden write of {name} by {}",
                                    syntax::text(frag, n).chars().take(80).collect::<String>()
                                );
                            }
                            out.insert(name.to_string());
                        }
                    }
                }
                _ => {}
            }
            stack.extend(named_children(n));
        }
        out
    }

    /// Forgets what the host variable `name` held: from `at` on it holds
    /// a value of its own (a symbol for an integer, so a check after `at`
    /// still bounds what the launch passes; unknown otherwise).
    fn forget(&mut self, name: &str, at: Node<'u>) {
        let place = match self.lookup_local(name) {
            Some(super::Binding::Place(place)) => place,
            // A constant, a type, a function: nothing writes it.
            Some(_) => return,
            // Not declared here (its declaration was not needed): a
            // variable of its own, so nothing reads it through the index's
            // declaration, nor as one symbol before and after the write.
            None => {
                let place = self.local_place(name, &super::Type::int(64, true), at);
                self.bind(name, super::Binding::Place(place.clone()));
                place
            }
        };
        let ty = place.ty();
        if matches!(place, super::Place::Var(..)) && ty.is_arith() && ty.scalar().is_int() {
            let s = self.sym(
                &format!("{name}@{}", at.start_byte()),
                ty.scalar(),
                crate::ir::SymKind::Unresolved,
            );
            self.write(&place, super::Value::Scalar(super::Expr::Sym(s), ty), at);
        } else {
            self.bind(
                name,
                super::Binding::Place(super::Place::Temp(super::Value::Unknown(ty))),
            );
        }
    }

    /// Every variable `node` may write: [`writes_of`] and [`Self::hidden_writes`].
    fn all_writes(&self, node: Node<'u>) -> crate::hash::HashSet<String> {
        let mut out = (*writes_of(self.index.generation, self.frag(), node)).clone();
        out.extend(self.hidden_writes(node).iter().cloned());
        out
    }

    /// Whether the function `call` calls may change its argument `at`, a
    /// variable: a function of its name takes it by non-`const` reference
    /// and its body may write it (it has no body here, assigns the
    /// parameter, or passes it on other than to a kernel launch, which
    /// copies it), or it is one of the standard library's that swap. A
    /// function the index does not know and a method take their arguments
    /// by value (C's and CUDA's do; see `grammar/SUBSET.md`), and so does a
    /// kernel.
    fn may_take_by_reference(&self, call: Node<'u>, at: usize) -> bool {
        let frag = self.frag();
        if kernel_call_syntax(call).is_some() {
            return false;
        }
        let Some(mut f) = call.field("function") else {
            return false;
        };
        if f.kind_name() == "template_function" {
            let Some(name) = f.field("name") else { return false };
            f = name;
        }
        let name = match f.kind_name() {
            "identifier" | "qualified_identifier" => syntax::text(frag, f),
            // A method, a functional cast (`float(n)`): by value.
            _ => return false,
        };
        let name = name.rsplit("::").next().unwrap_or(name).trim();
        if matches!(name, "swap" | "exchange" | "iter_swap") {
            return true;
        }
        let functions: Vec<DeclId> = self
            .index
            .lookup(self.frame().ctx.scope, name)
            .into_iter()
            .filter(|&d| self.index.decl(d).kind == DeclKind::Function)
            .collect();
        functions.iter().any(|&d| {
            // The declaration's nodes are of its own file's text.
            let (node, frag) = (self.index.decl(d).node, self.index.decl(d).frag);
            let Some(params) = parameter_list(node) else {
                return true;
            };
            let params: Vec<Node> = named_children(params)
                .into_iter()
                .filter(|p| p.kind_name().ends_with("parameter_declaration"))
                .collect();
            let param = match params.get(at) {
                Some(p) => *p,
                // Past a pack, the pack.
                None => match params.last() {
                    Some(p) if p.kind_name() == "variadic_parameter_declaration" => *p,
                    _ => return false,
                },
            };
            let mut by_reference = false;
            let mut param_name = None;
            let mut stack = vec![param];
            while let Some(n) = stack.pop() {
                match n.kind_name() {
                    "reference_declarator" | "abstract_reference_declarator" => by_reference = true,
                    "identifier" if n.parent().is_some_and(|p| p.id() != param.id()) => {
                        param_name = Some(syntax::text(frag, n).to_string());
                    }
                    _ => {}
                }
                stack.extend(named_children(n));
            }
            if !by_reference || declared_const(frag, param) {
                return false;
            }
            let (Some(body), Some(param_name)) = (node.field("body"), param_name) else {
                return true;
            };
            body_may_write(frag, body, &param_name)
        })
    }

    /// Binds the host variables a launch reads to the values the statements
    /// before it give them: declarations (`const` or not) and plain
    /// assignments in the blocks around the use, in order. A variable that
    /// some other statement in between may write (inside an `if`, a loop,
    /// through `&v`) stays unknown. Host calls are assumed not to write their
    /// by-reference arguments.
    fn bind_preceding_constants(&mut self, node: Node<'u>) -> Vec<HostFact<'u>> {
        let frag = self.frag();
        if std::env::var("WARPDRF_DEBUG_LAUNCH").is_ok() {
            let text: String = syntax::text(frag, node).chars().take(60).collect();
            eprintln!("site: {text}");
        }
        let generation = self.index.generation;
        // Statements before the use, in program order (outer blocks first),
        // and the branches the use is in.
        let mut levels: Vec<Vec<Node<'u>>> = Vec::new();
        let mut guards: Vec<(HostFact<'u>, usize)> = Vec::new();
        // Code the use may run in again after it: loops around it (what
        // they write, in any iteration), and lambdas and labels it is in
        // (called or jumped to again, after anything in the function).
        // Each is where it starts and what it may write.
        let mut repeats: Vec<(Node<'u>, crate::hash::HashSet<String>)> = Vec::new();
        let mut whole_function = Vec::new();
        let mut n = node;
        while let Some(p) = n.parent() {
            if let Some(g) = guard_of(frag, p, n) {
                guards.push(g);
            }
            match p.kind_name() {
                // The cases before a case nothing falls into do not run
                // before it.
                "compound_statement" if n.kind_name() == "case_statement" && !fallen_into(n) => levels.push(Vec::new()),
                "compound_statement" => levels.push(
                    named_children(p)
                        .into_iter()
                        .filter(|s| s.start_byte() < n.start_byte())
                        .collect(),
                ),
                "for_statement" | "while_statement" | "do_statement" | "for_range_loop" => {
                    repeats.push((p, self.all_writes(p)));
                }
                "lambda_expression" | "labeled_statement" => whole_function.push(p),
                "function_definition" => {
                    if !whole_function.is_empty() {
                        let written = self.all_writes(p);
                        repeats.extend(whole_function.iter().map(|&at| (at, written.clone())));
                    }
                    break;
                }
                _ => {}
            }
            n = p;
        }
        repeats.sort_by_key(|r| r.0.start_byte());
        // Whether what the code from `at` reads, `names`, stays as it was
        // there up to the use: no loop, lambda or label the use is in and
        // `at` is outside writes it.
        let stays = |at: usize, names: &crate::hash::HashSet<String>| {
            repeats
                .iter()
                .all(|(start, written)| start.start_byte() <= at || written.is_disjoint(names))
        };
        let before: Vec<Node<'u>> = levels.into_iter().rev().flatten().collect();
        let mut needed = (*identifiers_of(generation, frag, node)).clone();
        for (g, _) in &guards {
            for c in g.nodes() {
                needed.extend(identifiers_of(generation, frag, c).iter().cloned());
            }
        }
        let mut write_log: Vec<(usize, Vec<String>)> = Vec::new();
        let mut chosen = Vec::new();
        // Names some statement between the current one and the use writes.
        let mut touched: crate::hash::HashSet<String> = Default::default();
        let mut asserted = Vec::new();
        // Variables some statement on the way writes other than by a plain
        // declaration or assignment: never bound.
        let mut poisoned: crate::hash::HashSet<String> = Default::default();
        for &stmt in before.iter().rev() {
            let kind = host_statement(generation, frag, stmt);
            // Writes other than the statement's own target (`int a = f(&b);`
            // writes `b`): such a variable is unknown from here back.
            let side: Vec<String> = {
                let own: Vec<String> = match &kind {
                    HostStmt::Declares(names) => names.clone(),
                    HostStmt::Assigns(name, _) | HostStmt::Scales(name, _) => vec![name.clone()],
                    _ => Vec::new(),
                };
                let mut all: Vec<String> = writes_of(generation, frag, stmt).iter().cloned().collect();
                all.extend(self.hidden_writes(stmt).iter().cloned());
                all.retain(|w| !own.contains(w) || matches!(kind, HostStmt::Other));
                all.sort();
                all.dedup();
                all
            };
            for w in &side {
                needed.remove(w);
                poisoned.insert(w.clone());
            }
            let mut writes: Vec<String> = match &kind {
                HostStmt::Declares(names) => names.clone(),
                HostStmt::Assigns(name, _) | HostStmt::Scales(name, _) => vec![name.clone()],
                HostStmt::Asserts(_) | HostStmt::Other => Vec::new(),
            };
            writes.extend(side.iter().cloned());
            let kind = match kind {
                // A check that writes is not a plain check.
                HostStmt::Asserts(_) if !side.is_empty() => HostStmt::Other,
                // Nothing earlier binds a variable written on the way.
                HostStmt::Declares(names) if names.iter().any(|n| poisoned.contains(n)) => HostStmt::Other,
                HostStmt::Assigns(name, _) | HostStmt::Scales(name, _) if poisoned.contains(&name) => HostStmt::Other,
                k => k,
            };
            match kind {
                HostStmt::Asserts(fact) => {
                    // A check that leaves the function holds after it, for
                    // values nothing writes before the use.
                    let names: crate::hash::HashSet<String> =
                        fact.nodes().into_iter().flat_map(|c| identifiers(frag, c)).collect();
                    if names.is_disjoint(&touched) && stays(stmt.start_byte(), &names) {
                        needed.extend(names);
                        asserted.push(fact);
                    }
                }
                HostStmt::Declares(names) => {
                    if names.iter().any(|n| needed.contains(n)) {
                        for n in &names {
                            needed.remove(n);
                        }
                        needed.extend(
                            identifiers_of(generation, frag, stmt)
                                .iter()
                                .filter(|i| !names.contains(i))
                                .cloned(),
                        );
                        chosen.push(stmt);
                    }
                }
                HostStmt::Assigns(name, value) => {
                    if needed.contains(&name) {
                        needed.remove(&name);
                        needed.extend(identifiers_of(generation, frag, value).iter().cloned());
                        chosen.push(stmt);
                    }
                }
                HostStmt::Scales(name, _) => {
                    // Its value before the loop stays needed.
                    if needed.contains(&name) {
                        chosen.push(stmt);
                    }
                }
                HostStmt::Other => {}
            }
            write_log.push((stmt.start_byte(), writes.clone()));
            touched.extend(writes);
        }
        // A branch condition holds at the use if nothing after it writes
        // what it reads.
        for (g, at) in guards {
            let reads: crate::hash::HashSet<String> = g
                .nodes()
                .iter()
                .flat_map(|c| identifiers_of(generation, frag, *c).iter().cloned().collect::<Vec<_>>())
                .collect();
            let written_after = write_log
                .iter()
                .filter(|(start, _)| *start > at)
                .any(|(_, w)| w.iter().any(|x| reads.contains(x)));
            if !written_after && stays(at, &reads) {
                asserted.push(g);
            }
        }
        // In program order: the chosen statements again; what any other
        // statement writes is unknown from there on (`n -= 1;`, `f(&n);`,
        // a loop), so no earlier value or check stands for it.
        let chosen: crate::hash::HashSet<usize> = chosen.iter().map(|s| s.id()).collect();
        let written_by: HashMap<usize, Vec<String>> = write_log.into_iter().collect();
        // Entering a loop (lambda, label) the use is in, what it writes
        // no longer holds the value from before it.
        let mut entered = 0;
        let mut enter = |this: &mut Self, upto: usize| {
            while let Some((start, written)) = repeats.get(entered).filter(|r| r.0.start_byte() < upto) {
                for name in written {
                    this.forget(name, *start);
                }
                entered += 1;
            }
        };
        for &stmt in &before {
            enter(self, stmt.start_byte());
            if !chosen.contains(&stmt.id()) {
                for name in written_by.get(&stmt.start_byte()).into_iter().flatten() {
                    self.forget(name, stmt);
                }
                continue;
            }
            if stmt.kind_name() == "declaration" {
                self.local_declaration(stmt);
            } else if let HostStmt::Scales(_, at) = host_statement(generation, frag, stmt) {
                // Some number of multiplications: an unknown positive factor.
                if let Some(l) = at.field("left") {
                    let place = self.place(l);
                    let old = self.read(&place, at);
                    let ty = place.ty();
                    let factor = super::Value::Scalar(
                        super::Expr::Opaque(crate::ir::OpId(u32::MAX), ty.scalar(), Vec::new()),
                        ty.clone(),
                    );
                    let new = self.binop("*", old, factor, at);
                    let new = self.convert(new, &ty, at);
                    self.write(&place, new, at);
                }
            } else if let Some(e) = named_children(stmt).into_iter().next() {
                self.expr(e);
            }
        }
        enter(self, usize::MAX);
        asserted
    }
}

/// A condition the host has established where it launches.
#[derive(Clone, Copy)]
pub(super) enum HostFact<'t> {
    /// The expression is true (an aborting check passed, a `then` branch).
    Holds(Node<'t>),
    /// The expression is false (an `else` branch).
    Fails(Node<'t>),
    /// The two expressions are equal (a `switch` case).
    Equals(Node<'t>, Node<'t>),
}

impl<'t> HostFact<'t> {
    fn nodes(&self) -> Vec<Node<'t>> {
        match *self {
            HostFact::Holds(c) | HostFact::Fails(c) => vec![c],
            HostFact::Equals(a, b) => vec![a, b],
        }
    }
}

/// The condition of the branch of `p` that holds its child `n` (an `if`'s
/// arm; a `switch` case that nothing falls into), and where it is evaluated.
fn guard_of<'t>(frag: &Fragment, p: Node<'t>, n: Node<'t>) -> Option<(HostFact<'t>, usize)> {
    let expr_of = |c: Node<'t>| -> Option<Node<'t>> {
        if c.kind_name() == "condition_clause" {
            c.field("value").or_else(|| named_children(c).into_iter().last())
        } else {
            Some(c)
        }
    };
    match p.kind_name() {
        "if_statement" => {
            let cond = expr_of(p.field("condition")?)?;
            let at = cond.end_byte();
            if p.field("consequence").is_some_and(|c| c.id() == n.id()) {
                Some((HostFact::Holds(cond), at))
            } else if p.field("alternative").is_some_and(|c| c.id() == n.id()) {
                Some((HostFact::Fails(cond), at))
            } else {
                None
            }
        }
        "case_statement" => {
            let value = p.field("value")?;
            if value.id() == n.id() {
                return None;
            }
            // Falling in from the case before would bring other values.
            if fallen_into(p) {
                return None;
            }
            let switch = p.parent()?.parent().filter(|s| s.kind_name() == "switch_statement")?;
            let cond = expr_of(switch.field("condition")?)?;
            let _ = frag;
            Some((HostFact::Equals(cond, value), cond.end_byte()))
        }
        _ => None,
    }
}

/// Whether control that enters `n` never comes out of it: a statement of
/// it returns, throws or calls what does not come back (`abort`, `exit`,
/// `__trap`), and nothing before that statement can jump past it (`break`,
/// `continue`, `goto`, anywhere inside).
fn leaves_function(frag: &Fragment, n: Node) -> bool {
    fn jumps(n: Node) -> bool {
        matches!(
            n.kind_name(),
            "break_statement" | "continue_statement" | "goto_statement"
        ) || named_children(n).into_iter().any(jumps)
    }
    let leaves = |s: Node| match s.kind_name() {
        "return_statement" | "throw_statement" => true,
        "expression_statement" => named_children(s)
            .into_iter()
            .next()
            .filter(|e| e.kind_name() == "call_expression")
            .and_then(|e| e.field("function"))
            .is_some_and(|f| no_return(syntax::text(frag, f))),
        "compound_statement" => leaves_function(frag, s),
        _ => false,
    };
    if n.kind_name() != "compound_statement" {
        return leaves(n);
    }
    for s in named_children(n) {
        if leaves(s) {
            return true;
        }
        if jumps(s) {
            return false;
        }
    }
    false
}

/// [`leaves_function`], memoised.
fn leaves_function_of(generation: u64, frag: &Fragment, n: Node) -> bool {
    let hit = with_node_memo(generation, |m| m.leaves.get(&n.id()).copied());
    hit.unwrap_or_else(|| {
        let v = leaves_function(frag, n);
        with_node_memo(generation, |m| m.leaves.insert(n.id(), v));
        v
    })
}

/// Whether a function of this name does not return: the C and C++
/// library's ends of a program, the device trap, and the aborts of
/// libraries (`ggml_abort`).
fn no_return(name: &str) -> bool {
    let last = name.rsplit("::").next().unwrap_or(name).trim();
    matches!(
        last,
        "exit" | "_exit" | "_Exit" | "quick_exit" | "terminate" | "__trap" | "__builtin_trap" | "__builtin_unreachable"
    ) || last.contains("abort")
}

/// Whether a function body may change its reference parameter `name`: it
/// assigns it, takes its address, or passes it to a call that is not a
/// kernel launch (through `std::forward` or `std::move` too; a launch is
/// `<<<…>>>` or the runtime's `cudaLaunch…`/`hipLaunch…`).
fn body_may_write(frag: &Fragment, body: Node, name: &str) -> bool {
    if super::assigned_names(frag, body, true).contains(name) {
        return true;
    }
    // The callee's name without its qualifier or template arguments.
    let callee = |call: Node| -> Option<&str> {
        let t = syntax::text(frag, call.field("function")?);
        let t = t.split('<').next().unwrap_or(t);
        Some(t.rsplit("::").next().unwrap_or(t).trim())
    };
    let transparent = |call: Node| matches!(callee(call), Some("forward" | "move"));
    // A kernel launch, by its syntax or through the runtime's API, copies
    // its arguments.
    let launches = |call: Node| {
        kernel_call_syntax(call).is_some()
            || callee(call).is_some_and(|t| t.starts_with("cudaLaunch") || t.starts_with("hipLaunch"))
    };
    let bare = |mut a: Node| -> bool {
        loop {
            match a.kind_name() {
                "identifier" => return syntax::text(frag, a) == name,
                "parenthesized_expression" => a = unparenthesized(a),
                "call_expression" => match a.field("arguments").map(named_children).unwrap_or_default().first() {
                    Some(&inner) if transparent(a) => a = inner,
                    _ => return false,
                },
                "parameter_pack_expansion" => match a.field("pattern") {
                    Some(p) => a = p,
                    None => return false,
                },
                _ => return false,
            }
        }
    };
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if n.kind_name() == "call_expression"
            && !transparent(n)
            && !launches(n)
            && n.field("arguments")
                .is_some_and(|args| named_children(args).into_iter().any(bare))
        {
            return true;
        }
        stack.extend(named_children(n));
    }
    false
}

/// Whether the case before `case` (a `case_statement`) falls into it.
fn fallen_into(case: Node) -> bool {
    let mut prev = case.prev_named_sibling();
    while let Some(q) = prev.filter(|q| q.kind_name() == "comment") {
        prev = q.prev_named_sibling();
    }
    prev.is_some_and(|q| q.kind_name() == "case_statement" && !jumps_away(q))
}

/// The code ends with a `break`, `return` or `continue` (in a block, too):
/// nothing falls through past it.
fn jumps_away(n: Node) -> bool {
    match named_children(n).last().copied() {
        Some(l)
            if matches!(
                l.kind_name(),
                "break_statement" | "return_statement" | "continue_statement"
            ) =>
        {
            true
        }
        Some(l) if l.kind_name() == "compound_statement" => jumps_away(l),
        _ => false,
    }
}

/// What a host statement before a launch does to the variables it reads.
enum HostStmt<'t> {
    /// Declares these names.
    Declares(Vec<String>),
    /// `name = value;` (or a compound assignment): a plain update.
    Assigns(String, Node<'t>),
    /// A branch that leaves the function (`if (!(c)) abort(…);`, as
    /// `GGML_ASSERT(c)` expands; `if (c) return;`): what holds after it.
    Asserts(HostFact<'t>),
    /// A loop whose only write multiplies one variable by constants
    /// (`while (n < m) n *= 2;`): the variable ends a multiple of its value
    /// before the loop. The node is the first such assignment.
    Scales(String, Node<'t>),
    Other,
}

fn host_statement<'t>(generation: u64, frag: &Fragment, stmt: Node<'t>) -> HostStmt<'t> {
    match stmt.kind_name() {
        "declaration" => {
            let mut cursor = stmt.walk();
            let names: Vec<String> = stmt
                .children_by_field_name("declarator", &mut cursor)
                .filter_map(|d| declarator_name(frag, d).map(|(n, _)| n))
                .collect();
            HostStmt::Declares(names)
        }
        "if_statement" if stmt.field("alternative").is_none() => {
            // `if (c) { …; return; }` (`GGML_ASSERT(x)` is `if (!(x))
            // abort(…)`): whatever the branch does, the code after it runs
            // only where `c` is false.
            let Some(clause) = stmt.field("condition") else {
                return HostStmt::Other;
            };
            let cond = clause
                .field("value")
                .filter(|c| clause.field("initializer").is_none() && c.kind_name() != "condition_declaration");
            match (cond, stmt.field("consequence")) {
                (Some(c), Some(then)) if leaves_function_of(generation, frag, then) => {
                    let negated = (c.kind_name() == "unary_expression"
                        && c.field("operator").is_some_and(|o| syntax::text(frag, o) == "!"))
                    .then(|| c.field("argument"))
                    .flatten();
                    HostStmt::Asserts(match negated {
                        Some(x) => HostFact::Holds(x),
                        None => HostFact::Fails(c),
                    })
                }
                _ => HostStmt::Other,
            }
        }
        "expression_statement" => {
            let Some(e) = named_children(stmt).into_iter().next() else {
                return HostStmt::Other;
            };
            match (e.kind_name(), e.field("left"), e.field("right")) {
                ("assignment_expression", Some(l), Some(_)) if l.kind_name() == "identifier" => {
                    HostStmt::Assigns(syntax::text(frag, l).to_string(), e)
                }
                _ => HostStmt::Other,
            }
        }
        "while_statement" | "do_statement" | "for_statement" => match scaling(generation, frag, stmt) {
            Some((name, at)) => HostStmt::Scales(name, at),
            None => HostStmt::Other,
        },
        _ => HostStmt::Other,
    }
}

/// The variable a loop only multiplies by positive constants (`n *= 2`,
/// `n <<= 1`, `n = n * 4`), and the first such assignment; `None` if the
/// loop writes anything else or in another way.
fn scaling<'t>(generation: u64, frag: &Fragment, stmt: Node<'t>) -> Option<(String, Node<'t>)> {
    let written = writes_of(generation, frag, stmt);
    let [name] = written.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let literal = |n: Node| syntax::text(frag, n).trim().parse::<i64>().ok();
    let is_name = |n: Node| n.kind_name() == "identifier" && syntax::text(frag, n) == name.as_str();
    let mut first = None;
    let mut stack = vec![stmt];
    while let Some(n) = stack.pop() {
        match n.kind_name() {
            "update_expression" => return None,
            "assignment_expression" => {
                let (l, r) = (n.field("left")?, n.field("right")?);
                let op = n.field("operator").map(|o| syntax::text(frag, o))?;
                let scales = is_name(l)
                    && match op {
                        "*=" => literal(r).is_some_and(|c| c >= 1),
                        "<<=" => literal(r).is_some_and(|c| (0..31).contains(&c)),
                        "=" => {
                            r.kind_name() == "binary_expression"
                                && r.field("operator").is_some_and(|o| syntax::text(frag, o) == "*")
                                && match (r.field("left"), r.field("right")) {
                                    (Some(a), Some(b)) => {
                                        is_name(a) && literal(b).is_some_and(|c| c >= 1)
                                            || is_name(b) && literal(a).is_some_and(|c| c >= 1)
                                    }
                                    _ => false,
                                }
                        }
                        _ => false,
                    };
                if !scales {
                    return None;
                }
                if first.is_none_or(|f: Node| n.start_byte() < f.start_byte()) {
                    first = Some(n);
                }
            }
            _ => {}
        }
        stack.extend(named_children(n));
    }
    Some((name.clone(), first?))
}

/// Per syntax node (of the index `generation`): the names a statement
/// writes (`assigned_names` into elements) and the identifiers under a node.
/// The host statements before a launch are scanned once per launch site and
/// kernel: a unit with many launches in one host function rescanned them
/// for each (a sixth of the front end's time on ggml).
#[derive(Default)]
struct NodeMemo {
    generation: u64,
    writes: HashMap<usize, std::rc::Rc<crate::hash::HashSet<String>>>,
    idents: HashMap<usize, std::rc::Rc<crate::hash::HashSet<String>>>,
    hidden: HashMap<usize, std::rc::Rc<crate::hash::HashSet<String>>>,
    /// [`leaves_function`] of a branch, by node: it walks the whole
    /// branch, for every launch site and instantiation after it.
    leaves: HashMap<usize, bool>,
}

thread_local! {
    static NODE_MEMO: std::cell::RefCell<NodeMemo> = std::cell::RefCell::new(NodeMemo::default());
}

/// `f`'s answer for `node` from `pick`'s table, computed once per index.
fn memo_of(
    generation: u64,
    node: Node,
    pick: fn(&mut NodeMemo) -> &mut HashMap<usize, std::rc::Rc<crate::hash::HashSet<String>>>,
    f: impl FnOnce() -> crate::hash::HashSet<String>,
) -> std::rc::Rc<crate::hash::HashSet<String>> {
    let hit = with_node_memo(generation, |m| pick(m).get(&node.id()).cloned());
    hit.unwrap_or_else(|| {
        let v = std::rc::Rc::new(f());
        with_node_memo(generation, |m| pick(m).insert(node.id(), v.clone()));
        v
    })
}

/// `f` on this thread's memo, emptied first if it is of another index.
fn with_node_memo<R>(generation: u64, f: impl FnOnce(&mut NodeMemo) -> R) -> R {
    NODE_MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.generation != generation {
            *m = NodeMemo {
                generation,
                ..Default::default()
            };
        }
        f(&mut m)
    })
}

/// The names `stmt` writes, into elements too ([`super::assigned_names`]), memoised.
fn writes_of(generation: u64, frag: &Fragment, stmt: Node) -> std::rc::Rc<crate::hash::HashSet<String>> {
    memo_of(
        generation,
        stmt,
        |m| &mut m.writes,
        || super::assigned_names(frag, stmt, true),
    )
}

/// [`identifiers`], memoised.
fn identifiers_of(generation: u64, frag: &Fragment, node: Node) -> std::rc::Rc<crate::hash::HashSet<String>> {
    memo_of(generation, node, |m| &mut m.idents, || identifiers(frag, node))
}

/// The identifiers under a node.
fn identifiers(frag: &Fragment, node: Node) -> crate::hash::HashSet<String> {
    let mut out = crate::hash::HashSet::default();
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if matches!(n.kind_name(), "identifier" | "type_identifier") {
            out.insert(syntax::text(frag, n).to_string());
        }
        stack.extend(n.named_children(&mut cursor));
    }
    out
}
