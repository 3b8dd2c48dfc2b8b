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

use std::collections::HashMap;
use std::rc::Rc;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::index::{declarator_name, DeclId, DeclKind};
use super::types::TArg;
use super::value::TemplateEnv;
use super::{Ctx, Index, LowerConfig, Lowerer};
use crate::preprocess::{Fragment, Unit};
use crate::syntax::{self, named_children};

/// Most tuples kept per kernel.
pub const MAX_TUPLES: usize = 64;
/// How many enclosing function templates are followed outward.
const MAX_DEPTH: u32 = 3;

/// A template argument tuple; `None` where the argument could not be
/// determined (that parameter stays symbolic).
pub type Tuple = Vec<Option<TArg>>;

/// The distinct template argument tuples of a kernel in this unit, the most
/// determined first.
pub fn kernel_instantiations(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId) -> Vec<Tuple> {
    kernel_uses(unit, index, config, kernel).0
}

/// A launch `k<…><<<grid, block, …>>>(…)` of a kernel: its template
/// arguments and its block shape when the launch site determines it.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSite {
    pub tuple: Tuple,
    pub block: Option<[u32; 3]>,
}

/// The launches of a kernel in this unit (template or not).
pub fn kernel_launches(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId) -> Vec<LaunchSite> {
    kernel_uses(unit, index, config, kernel).1
}

/// Template argument tuples and launch sites of a kernel.
pub fn kernel_uses(unit: &Unit, index: &Index, config: &LowerConfig, kernel: DeclId) -> (Vec<Tuple>, Vec<LaunchSite>) {
    let mut l = Lowerer::new(unit, index, config, kernel);
    l.host_mode = true;
    let mut finder = Finder {
        envs: HashMap::new(),
        function_nodes: HashMap::new(),
        kernel,
        launches: Vec::new(),
    };
    for (i, d) in index.decls.iter().enumerate() {
        if d.kind == DeclKind::Function && d.defined {
            finder.function_nodes.insert(d.node.id(), DeclId(i as u32));
        }
    }
    let mut tuples: Vec<Tuple> = Vec::new();
    // Symbols of this search do not exist in later lowerings: they become `None`.
    for t in finder.tuples_of(&mut l, kernel, 0) {
        let t: Tuple = t.into_iter().map(|a| Some(a).filter(is_concrete)).collect();
        if t.iter().any(Option::is_some) && !tuples.contains(&t) && tuples.len() < MAX_TUPLES {
            tuples.push(t);
        }
    }
    tuples.sort_by_key(|t| std::cmp::Reverse(t.iter().filter(|a| a.is_some()).count()));
    let mut launches: Vec<LaunchSite> = Vec::new();
    for (t, block) in finder.launches {
        let tuple: Tuple = t.into_iter().map(|a| Some(a).filter(is_concrete)).collect();
        let site = LaunchSite { tuple, block };
        if !launches.contains(&site) {
            launches.push(site);
        }
    }
    (tuples, launches)
}

/// A block shape from a launch's block operand: an integer or a `dim3`.
fn block_shape(v: &super::Value) -> Option<[u32; 3]> {
    use super::{Expr, Value};
    let dim = |v: &Value| match v {
        Value::Scalar(Expr::Int(i, _), _) => u32::try_from(*i).ok().filter(|d| (1..=1024).contains(d)),
        _ => None,
    };
    match v {
        Value::Agg(_, parts) if parts.len() == 3 => Some([dim(&parts[0])?, dim(&parts[1])?, dim(&parts[2])?]),
        Value::Scalar(..) => Some([dim(v)?, 1, 1]),
        _ => None,
    }
}

/// A template argument with no symbol or unresolved type in it.
fn is_concrete(a: &TArg) -> bool {
    match a {
        TArg::Value(super::CVal::Int(..)) => true,
        TArg::Value(super::CVal::Sym(..)) => false,
        TArg::Func(_) => true,
        TArg::Type(t) => !matches!(t, super::Type::Opaque(_)),
        TArg::Pack(items) => items.iter().all(is_concrete),
    }
}

struct Finder {
    /// Instantiation environments of host function templates, by declaration.
    envs: HashMap<DeclId, Vec<TemplateEnv>>,
    function_nodes: HashMap<usize, DeclId>,
    /// The kernel whose launches are collected, and what they were.
    kernel: DeclId,
    launches: Vec<(Vec<TArg>, Option<[u32; 3]>)>,
}

impl Finder {
    /// Argument tuples of the uses of `target`: template-ids (`f<…>`), calls
    /// whose remaining arguments are deduced from the call's operands, and
    /// explicit instantiations.
    fn tuples_of<'u>(&mut self, l: &mut Lowerer<'u>, target: DeclId, depth: u32) -> Vec<Vec<TArg>> {
        let d = l.index.decl(target).clone();
        let name = d.name.clone();
        let mut out = Vec::new();
        for frag in l.unit.fragments.iter() {
            if !frag.text.contains(name.as_str()) {
                continue;
            }
            let frag: &'u Fragment = frag;
            let root = syntax::tree(frag).root_node();
            for site in uses(frag, root, &name) {
                let (enclosing, scope) = self.enclosing(l, site.node);
                let mut envs = match enclosing {
                    Some(f) if l.index.decl(f).template.is_some() => {
                        if depth >= MAX_DEPTH || f == target {
                            continue;
                        }
                        self.envs_of(l, f, depth + 1)
                    }
                    _ => vec![TemplateEnv::new()],
                };
                if envs.is_empty() {
                    // The enclosing template's own instantiations are unknown: its
                    // parameters stay unresolved and give undetermined arguments.
                    envs.push(TemplateEnv::new());
                }
                // `k<<<grid, block, …>>>(…)`: the block operand.
                let block_operand = site
                    .call
                    .and_then(|c| named_children(c).into_iter().find(|n| n.kind() == "kernel_call_syntax"))
                    .and_then(|cfg| named_children(cfg).get(1).copied())
                    .filter(|_| target == self.kernel);
                for env in envs {
                    let ctx = Ctx {
                        frag,
                        scope,
                        tenv: Rc::new(env),
                        class: None,
                    };
                    let mut block = None;
                    let tuple = l.in_ctx(ctx, |l2| {
                        l2.blocks.push(Vec::new());
                        if let Some(f) = enclosing {
                            l2.bind_host_params(f);
                        }
                        l2.bind_preceding_constants(site.call.unwrap_or(site.node));
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
                        if let Some(b) = block_operand {
                            block = block_shape(&l2.scratch_expr(b));
                        }
                        l2.blocks.pop();
                        tuple
                    });
                    if block_operand.is_some() {
                        self.launches.push((tuple.clone(), block));
                    }
                    if !out.contains(&tuple) {
                        out.push(tuple);
                    }
                    if out.len() >= MAX_TUPLES {
                        return out;
                    }
                }
            }
        }
        // `template void f<…>(…);`
        for &(node, frag, scope) in &l.index.instantiations.clone() {
            let Some(decl) = node.field("declarator") else {
                continue;
            };
            let Some((_, name_node)) = declarator_name(frag, decl) else {
                continue;
            };
            if name_node.kind() != "template_function" {
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
                tenv: Rc::new(TemplateEnv::new()),
                class: None,
            };
            let tuple = l.in_ctx(ctx, |l2| l2.template_args(args));
            if !out.contains(&tuple) {
                out.push(tuple);
            }
        }
        out
    }

    /// The template environments a host function template is instantiated with.
    fn envs_of<'u>(&mut self, l: &mut Lowerer<'u>, f: DeclId, depth: u32) -> Vec<TemplateEnv> {
        if let Some(e) = self.envs.get(&f) {
            return e.clone();
        }
        self.envs.insert(f, Vec::new());
        let d = l.index.decl(f).clone();
        let Some(params) = d.template else {
            return vec![TemplateEnv::new()];
        };
        let tuples = self.tuples_of(l, f, depth);
        let ctx = Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: Rc::new(TemplateEnv::new()),
            class: None,
        };
        let envs: Vec<TemplateEnv> = tuples
            .iter()
            .map(|t| l.bind_template_params(ctx.clone(), params, t, &TemplateEnv::new(), true))
            .collect();
        self.envs.insert(f, envs.clone());
        envs
    }

    /// The function definition around a node, and the scope to look names up in.
    fn enclosing<'u>(&self, l: &Lowerer<'u>, node: Node<'u>) -> (Option<DeclId>, super::ScopeId) {
        let mut n = node.parent();
        while let Some(p) = n {
            if p.kind() == "function_definition" {
                if let Some(&id) = self.function_nodes.get(&p.id()) {
                    return (Some(id), l.index.decl(id).scope);
                }
            }
            n = p.parent();
        }
        (None, super::index::GLOBAL)
    }
}

/// A use of a template: a template-id and/or a call.
struct Use<'t> {
    node: Node<'t>,
    /// The `template_argument_list`, when explicit arguments are given.
    args: Option<Node<'t>>,
    /// The call (or launch) whose operands can deduce the other arguments.
    call: Option<Node<'t>>,
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
        match n.kind() {
            "template_function" | "template_type" if n.field("name").is_some_and(names_it) => {
                let call = n
                    .parent()
                    .filter(|p| p.kind() == "call_expression" && p.field("function") == Some(n));
                out.push(Use {
                    node: n,
                    args: n.field("arguments"),
                    call,
                });
            }
            "call_expression" => {
                let callee = n.field("function");
                let plain = callee.is_some_and(|f| match f.kind() {
                    "identifier" => names_it(f),
                    "qualified_identifier" => f.field("name").is_some_and(|x| x.kind() == "identifier" && names_it(x)),
                    _ => false,
                });
                if plain {
                    out.push(Use {
                        node: n,
                        args: None,
                        call: Some(n),
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
    /// Binds the parameters of a host function to unknown values of their
    /// types, so expressions over them have types (for deduction).
    fn bind_host_params(&mut self, f: DeclId) {
        let d = self.index.decl(f).clone();
        let Some(mut decl) = d.node.field("declarator") else {
            return;
        };
        while decl.kind() != "function_declarator" {
            match decl.field("declarator") {
                Some(inner) => decl = inner,
                None => return,
            }
        }
        let Some(params) = decl.field("parameters") else {
            return;
        };
        for p in named_children(params) {
            if !matches!(p.kind(), "parameter_declaration" | "optional_parameter_declaration") {
                continue;
            }
            let (ty, name) = self.declared_type(p);
            if let Some(name) = name {
                let ty = ty.strip_ref().clone();
                self.bind(
                    &name,
                    super::Binding::Place(super::Place::Temp(super::Value::Unknown(ty))),
                );
            }
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
                Some(TArg::Pack(items)) if p.kind().starts_with("variadic") => tuple.extend(items.iter().cloned()),
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
    fn bind_preceding_constants(&mut self, node: Node<'u>) {
        let mut decls: Vec<(Node<'u>, Vec<String>)> = Vec::new();
        let mut n = node;
        while let Some(p) = n.parent() {
            if p.kind() == "compound_statement" {
                for stmt in named_children(p) {
                    if stmt.start_byte() >= n.start_byte() {
                        break;
                    }
                    if stmt.kind() == "declaration" {
                        let text = syntax::text(self.frag(), stmt);
                        if text.contains("constexpr") || text.split_whitespace().any(|w| w == "const") {
                            let mut cursor = stmt.walk();
                            let names: Vec<String> = stmt
                                .children_by_field_name("declarator", &mut cursor)
                                .filter_map(|d| declarator_name(self.frag(), d).map(|(n, _)| n))
                                .collect();
                            decls.push((stmt, names));
                        }
                    }
                }
            }
            if p.kind() == "function_definition" {
                break;
            }
            n = p;
        }
        // Walk back from the use: keep declarations whose names are needed.
        let mut needed = identifiers(self.frag(), node);
        let mut chosen = Vec::new();
        for (stmt, names) in decls.iter().rev() {
            if names.iter().any(|n| needed.contains(n)) {
                needed.extend(identifiers(self.frag(), *stmt));
                chosen.push(*stmt);
            }
        }
        for stmt in chosen.into_iter().rev() {
            self.local_declaration(stmt);
        }
    }
}

/// The identifiers under a node.
fn identifiers(frag: &Fragment, node: Node) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if matches!(n.kind(), "identifier" | "type_identifier") {
            out.insert(syntax::text(frag, n).to_string());
        }
        stack.extend(n.named_children(&mut cursor));
    }
    out
}
