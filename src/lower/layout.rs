//! Type resolution (syntax → [`Type`]), class instantiation and byte layout.
//!
//! Names are resolved in the current [`Ctx`]: locals (local aliases, template
//! type parameters), the enclosing class, then the index's scopes. Class
//! templates are instantiated by choosing the most specialised matching
//! declaration. Layouts follow the Itanium C++ ABI for the cases kernels use:
//! fields in order, each aligned to its type, size rounded to the alignment.

use std::rc::Rc;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::index::{declarator_name, normalize, DeclId, DeclKind, ScopeKind};
use super::types::{named_scalar, CVal, ClassInst, LibTy, TArg, Type, VECTOR_FIELDS};
use super::value::{Binding, TemplateEnv, Value};
use super::{call, Ctx, Lowerer};
use crate::ir::{Expr, ScalarTy, SymKind};
use crate::syntax::{self, named_children};

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub offset: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Layout {
    pub size: Option<u64>,
    pub align: u64,
    pub fields: Vec<Field>,
    pub union: bool,
}

/// Namespaces whose types are modelled by name (see `builtins`).
const LIBRARY_NAMESPACES: [&str; 8] = [
    "cub",
    "cooperative_groups",
    "cg",
    "nvcuda",
    "wmma",
    "std",
    "rocprim",
    "hipcub",
];

impl<'u> Lowerer<'u> {
    /// The type and name a declaration (parameter, field, variable with one
    /// declarator) declares.
    pub(super) fn declared_type(&mut self, decl: Node<'u>) -> (Type, Option<String>) {
        let base = match decl.field("type") {
            Some(t) => self.type_node(t),
            None => Type::int(32, true),
        };
        match decl.field("declarator") {
            Some(d) => self.apply_declarator(base, d),
            None => (base, None),
        }
    }

    /// Applies pointer, reference and array declarators to a base type.
    pub(super) fn apply_declarator(&mut self, base: Type, declarator: Node<'u>) -> (Type, Option<String>) {
        let mut ty = base;
        let mut node = declarator;
        // `T a[2][3]` is an array of 2 arrays of 3; its outermost declarator
        // node carries the last bound, so bounds are met last-first and
        // applied in that order.
        let mut arrays: Vec<Option<u64>> = Vec::new();
        for _ in 0..64 {
            match node.kind_name() {
                "pointer_declarator" | "abstract_pointer_declarator" => {
                    for a in arrays.drain(..) {
                        ty = Type::Array(Rc::new(ty), a);
                    }
                    ty = Type::ptr(ty);
                }
                "reference_declarator" | "abstract_reference_declarator" => {
                    for a in arrays.drain(..) {
                        ty = Type::Array(Rc::new(ty), a);
                    }
                    ty = Type::Ref(Rc::new(ty));
                }
                "array_declarator" | "abstract_array_declarator" => {
                    let size = node.field("size").and_then(|s| {
                        let v = self.scratch_expr(s);
                        v.as_int().map(|n| n.max(0) as u64)
                    });
                    arrays.push(size);
                }
                "init_declarator"
                | "parenthesized_declarator"
                | "abstract_parenthesized_declarator"
                | "attributed_declarator"
                | "variadic_declarator" => {}
                "function_declarator" | "abstract_function_declarator" => {
                    // A function type: only function pointers reach here; model as opaque.
                    ty = Type::Opaque("function".into());
                }
                _ => {
                    for a in arrays.drain(..) {
                        ty = Type::Array(Rc::new(ty), a);
                    }
                    let name = declarator_name(self.frag(), node).map(|(n, _)| n);
                    return (ty, name);
                }
            }
            let next = node.field("declarator").or_else(|| {
                named_children(node)
                    .into_iter()
                    .find(|c| {
                        !matches!(
                            c.kind_name(),
                            "type_qualifier" | "attribute_declaration" | "attribute_specifier"
                        )
                    })
                    .filter(|c| !c.is_extra())
            });
            match next {
                Some(n) if n != node => node = n,
                _ => break,
            }
        }
        for a in arrays.drain(..) {
            ty = Type::Array(Rc::new(ty), a);
        }
        (ty, None)
    }

    /// A `type_descriptor` (type plus abstract declarator), as in casts and template arguments.
    pub(super) fn type_descriptor(&mut self, node: Node<'u>) -> Type {
        if node.kind_name() != "type_descriptor" {
            return self.type_node(node);
        }
        let base = match node.field("type") {
            Some(t) => self.type_node(t),
            None => Type::Opaque("?".into()),
        };
        match node.field("declarator") {
            Some(d) => self.apply_declarator(base, d).0,
            None => base,
        }
    }

    /// A type specifier.
    pub(super) fn type_node(&mut self, node: Node<'u>) -> Type {
        match node.kind_name() {
            "primitive_type" => named_scalar(self.text(node)).unwrap_or(Type::Opaque(self.text(node).into())),
            "sized_type_specifier" => {
                let text = normalize_spelling(self.text(node));
                named_scalar(&text).unwrap_or_else(|| {
                    // `unsigned` with a typedef'd base, etc.
                    if text.contains("unsigned") {
                        Type::int(32, false)
                    } else {
                        Type::int(32, true)
                    }
                })
            }
            "type_identifier" | "identifier" => {
                let name = self.text(node).to_string();
                self.named_type(&name, node)
            }
            "qualified_identifier" | "nested_namespace_specifier" => self.qualified_type(node),
            "template_type" => self.template_type(node),
            "type_descriptor" => self.type_descriptor(node),
            "struct_specifier" | "class_specifier" | "union_specifier" | "enum_specifier" => {
                match node.field("name") {
                    Some(name) => self.type_node(name),
                    None => {
                        // An anonymous type declared in place: find its index entry.
                        let id = self
                            .index
                            .decls
                            .iter()
                            .position(|d| d.node.id() == node.id())
                            .map(|i| DeclId(i as u32));
                        match id {
                            Some(id) if self.index.decl(id).kind == DeclKind::Class => self.class_type(id, Vec::new()),
                            _ => Type::Opaque("anonymous".into()),
                        }
                    }
                }
            }
            "placeholder_type_specifier" | "auto" => Type::Opaque("auto".into()),
            "decltype" => match named_children(node).first() {
                Some(e) if e.kind_name() == "qualified_identifier" => {
                    // `decltype(S::member)`: the member's declared type.
                    let member = e.field("name").map(|n| normalize(self.text(n))).unwrap_or_default();
                    match e.field("scope").and_then(|s| self.scope_as_type(s)) {
                        Some(t @ Type::Class(_)) => match self.field(&t, &member) {
                            Some((_, _, fty)) => fty,
                            None => self.decltype_of(*e),
                        },
                        _ => self.decltype_of(*e),
                    }
                }
                Some(e) if e.kind_name() != "auto" => self.decltype_of(*e),
                _ => Type::Opaque("auto".into()),
            },
            "dependent_type" => match named_children(node).first() {
                Some(t) => self.type_node(*t),
                None => Type::Opaque("?".into()),
            },
            _ => Type::Opaque(normalize(self.text(node)).into()),
        }
    }

    /// `decltype(e)`: the type of an unevaluated expression (a place's declared type).
    fn decltype_of(&mut self, e: Node<'u>) -> Type {
        let dead = self.dead;
        self.blocks.push(Vec::new());
        self.enter_constant();
        let place = self.place(e);
        self.leave_constant();
        self.blocks.pop();
        self.dead = dead;
        place.ty()
    }

    /// A type by unqualified name: locals, template parameters, the class, the scopes.
    pub(super) fn named_type(&mut self, name: &str, node: Node<'u>) -> Type {
        if let Some(b) = self.lookup_local(name) {
            match b {
                Binding::Type(t) => return t,
                Binding::Value(Value::Type(t)) => return t,
                _ => {}
            }
        }
        if let Some(class) = self.ctx().class.clone() {
            if let Some(t) = self.member_type(&class, name) {
                return t;
            }
        }
        let scope = self.ctx().scope;
        let mut ids = self.index.lookup(scope, name);
        if ids.is_empty() {
            for u in self.frame().usings.clone() {
                ids.extend(self.index.lookup_in(u, name, 0));
            }
        }
        if let Some(t) = self.type_from_decls(&ids, Vec::new(), node) {
            return t;
        }
        if let Some(t) = named_scalar(name) {
            return t;
        }
        if let Some(t) = self.library_type(name, Vec::new()) {
            return t;
        }
        Type::Opaque(name.into())
    }

    /// The type named by declarations (the first that is a type).
    fn type_from_decls(&mut self, ids: &[DeclId], args: Vec<TArg>, node: Node<'u>) -> Option<Type> {
        let classes: Vec<DeclId> = ids
            .iter()
            .copied()
            .filter(|&id| self.index.decl(id).kind == DeclKind::Class)
            .collect();
        if !classes.is_empty() {
            return Some(self.instantiate_class(&classes, args, node));
        }
        for &id in ids {
            let d = self.index.decl(id).clone();
            match d.kind {
                DeclKind::Enum => {
                    return Some(Type::Enum {
                        decl: id,
                        name: d.name.clone(),
                    })
                }
                DeclKind::Alias => return Some(self.alias_type(id, args)),
                _ => {}
            }
        }
        None
    }

    /// What a `typedef`/`using` names, in the alias's own context.
    fn alias_type(&mut self, id: DeclId, args: Vec<TArg>) -> Type {
        let d = self.index.decl(id).clone();
        let mut ctx = Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: self.decl_class_env(id),
            class: self.decl_class(id),
        };
        if let Some(params) = d.template {
            let env = self.bind_template_params(ctx.clone(), params, &args, &TemplateEnv::default(), true);
            let mut merged = (*ctx.tenv).clone();
            merged.extend(env);
            ctx.tenv = Rc::new(merged);
        }
        self.in_ctx(ctx, |l| match d.node.kind_name() {
            "alias_declaration" => match d.node.field("type") {
                Some(t) => l.type_descriptor(t),
                None => Type::Opaque(d.name.clone().into()),
            },
            "type_definition" => {
                let base = match d.node.field("type") {
                    Some(t) => l.type_node(t),
                    None => Type::Opaque(d.name.clone().into()),
                };
                match d.declarator {
                    Some(decl) => l.apply_declarator(base, decl).0,
                    None => base,
                }
            }
            // `using ns::T;`: the node is the qualified name.
            _ => l.type_node(d.node),
        })
    }

    /// The template arguments in force for members of the class holding `id`
    /// (when `id` is declared inside a class being lowered).
    fn decl_class_env(&self, id: DeclId) -> Rc<TemplateEnv> {
        match self.decl_class(id) {
            Some(c) if Some(&c) == self.ctx().class.as_ref() => self.ctx().tenv.clone(),
            _ => Rc::new(TemplateEnv::default()),
        }
    }

    fn decl_class(&self, id: DeclId) -> Option<Rc<ClassInst>> {
        let d = self.index.decl(id);
        match self.index.scope(d.scope).kind {
            ScopeKind::Class(_) => self
                .ctx()
                .class
                .clone()
                .filter(|c| self.index.decl(c.decl).members == Some(d.scope)),
            _ => None,
        }
    }

    /// `a::b::T`, `S<…>::type`, `T::value_type`.
    pub(super) fn qualified_type(&mut self, node: Node<'u>) -> Type {
        let (scope_node, name_node) = match (node.field("scope"), node.field("name")) {
            (Some(s), Some(n)) => (s, n),
            _ => return Type::Opaque(normalize(self.text(node)).into()),
        };
        // The scope is a type (class instantiation or template parameter)?
        if let Some(Type::Class(inst)) = self.scope_as_type(scope_node) {
            let name = self.text(name_node).to_string();
            if name_node.kind_name() == "template_type" {
                let base = name_node
                    .field("name")
                    .map(|n| self.text(n).to_string())
                    .unwrap_or_default();
                let args = match name_node.field("arguments") {
                    Some(a) => self.template_args(a),
                    None => Vec::new(),
                };
                if let Some(t) = self.member_type_with_args(&inst, &base, args) {
                    return t;
                }
            }
            if let Some(t) = self.member_type(&inst, &name) {
                return t;
            }
            return Type::Opaque(normalize(self.text(node)).into());
        }
        if let Some(Type::Lib(lib)) = self.scope_as_type(scope_node) {
            let name = self.text(name_node).to_string();
            return Type::Lib(Rc::new(LibTy {
                name: format!("{}::{}", lib.name, name),
                args: lib.args.clone(),
            }));
        }
        let path = normalize(self.text(scope_node));
        let parts: Vec<&str> = path.split("::").map(|p| p.split('<').next().unwrap_or(p)).collect();
        let scope = self.resolve_scope_path(&parts);
        match name_node.kind_name() {
            "qualified_identifier" => {
                // `a::b::c`: resolve step by step.
                match scope {
                    Some(s) => {
                        let ctx = Ctx {
                            scope: s,
                            ..self.ctx().clone()
                        };
                        self.in_ctx(ctx, |l| l.qualified_type(name_node))
                    }
                    None => self.library_qualified(&path, name_node),
                }
            }
            "template_type" => {
                let base = name_node
                    .field("name")
                    .map(|n| self.text(n).to_string())
                    .unwrap_or_default();
                let args = match name_node.field("arguments") {
                    Some(a) => self.template_args(a),
                    None => Vec::new(),
                };
                if let Some(s) = scope {
                    let ids = self.index.lookup_in(s, &base, 0);
                    if let Some(t) = self.type_from_decls(&ids, args.clone(), name_node) {
                        return t;
                    }
                }
                let full = format!("{path}::{base}");
                self.library_type(&full, args.clone())
                    .or_else(|| self.library_type(&base, args))
                    .unwrap_or(Type::Opaque(full.into()))
            }
            _ => {
                let name = self.text(name_node).to_string();
                if let Some(s) = scope {
                    let ids = self.index.lookup_in(s, &name, 0);
                    if let Some(t) = self.type_from_decls(&ids, Vec::new(), name_node) {
                        return t;
                    }
                }
                self.library_qualified(&path, name_node)
            }
        }
    }

    /// `scope::base<arg>` (`scope` absent: `base<arg>`) when it names a
    /// class template or a library type: the type, `arg` evaluated as a
    /// constant. `None` for a value, a function or an unknown name.
    pub(super) fn class_template_type(
        &mut self,
        scope: Option<Node<'u>>,
        base: &str,
        arg: Node<'u>,
        node: Node<'u>,
    ) -> Option<Type> {
        let (ids, full) = match scope {
            Some(s) => {
                let path = normalize(self.text(s));
                let parts: Vec<&str> = path.split("::").collect();
                let ids = match self.resolve_scope_path(&parts) {
                    Some(scope) => self.index.lookup_in(scope, base, 0),
                    None => Vec::new(),
                };
                (ids, format!("{path}::{base}"))
            }
            None => (self.index.lookup(self.ctx().scope, base), base.to_string()),
        };
        let is_class = |l: &Self, id: &DeclId| l.index.decl(*id).kind == DeclKind::Class;
        if !ids.is_empty() && !ids.iter().all(|id| is_class(self, id)) {
            return None;
        }
        if ids.is_empty() && !super::builtins::is_library_type(&full) {
            return None;
        }
        self.enter_constant();
        let v = self.expr(arg);
        self.leave_constant();
        let args: Vec<TArg> = self.value_targ(&v).into_iter().collect();
        if args.is_empty() {
            return None;
        }
        if !ids.is_empty() {
            return self.type_from_decls(&ids, args, node);
        }
        self.library_type(&full, args.clone())
            .or_else(|| self.library_type(base, args))
    }

    fn library_qualified(&mut self, path: &str, name_node: Node<'u>) -> Type {
        let name = normalize(self.text(name_node));
        let full = format!("{path}::{name}");
        self.library_type(&full, Vec::new())
            .or_else(|| named_scalar(&name))
            .unwrap_or(Type::Opaque(full.into()))
    }

    /// A scope node (`S<…>`, `T`, `ns`) read as a type, when it is one.
    fn scope_as_type(&mut self, scope_node: Node<'u>) -> Option<Type> {
        match scope_node.kind_name() {
            "template_type" => Some(self.template_type(scope_node)),
            "namespace_identifier" | "type_identifier" => {
                let name = self.text(scope_node).to_string();
                if let Some(Binding::Type(t)) = self.lookup_local(&name) {
                    return Some(t);
                }
                let ids = self.index.lookup(self.ctx().scope, &name);
                if ids
                    .iter()
                    .any(|&id| matches!(self.index.decl(id).kind, DeclKind::Class | DeclKind::Alias))
                {
                    return self.type_from_decls(&ids, Vec::new(), scope_node);
                }
                None
            }
            _ => None,
        }
    }

    /// A namespace or class scope by path, from the current context (and `using`s).
    pub(super) fn resolve_scope_path(&self, parts: &[&str]) -> Option<super::ScopeId> {
        if let Some(first) = parts.first() {
            if let Some(Binding::Namespace(s)) = self.lookup_local(first) {
                let mut current = s;
                for p in &parts[1..] {
                    current = self.index.child_scope(current, p)?;
                }
                return Some(current);
            }
        }
        self.index.resolve_scope(self.ctx().scope, parts).or_else(|| {
            self.frame()
                .usings
                .iter()
                .find_map(|&u| self.index.resolve_scope(u, parts))
        })
    }

    /// `name<args>`.
    pub(super) fn template_type(&mut self, node: Node<'u>) -> Type {
        let name = node.field("name").map(|n| self.text(n).to_string()).unwrap_or_default();
        let args = match node.field("arguments") {
            Some(a) => self.template_args(a),
            None => Vec::new(),
        };
        if let Some(class) = self.ctx().class.clone() {
            if class.name == name {
                // The injected class name with arguments.
                if let Some(t) = self.member_type_with_args(&class, &name, args.clone()) {
                    return t;
                }
            }
        }
        let scope = self.ctx().scope;
        let mut ids = self.index.lookup(scope, &name);
        if ids.is_empty() {
            for u in self.frame().usings.clone() {
                ids.extend(self.index.lookup_in(u, &name, 0));
            }
        }
        if let Some(t) = self.type_from_decls(&ids, args.clone(), node) {
            return t;
        }
        self.library_type(&name, args).unwrap_or(Type::Opaque(name.into()))
    }

    /// Evaluates a template argument list in the current context.
    pub(super) fn template_args(&mut self, list: Node<'u>) -> Vec<TArg> {
        let mut out = Vec::new();
        for a in named_children(list) {
            out.extend(self.template_arg(a));
        }
        out
    }

    /// One template argument; a pack expansion gives several.
    fn template_arg(&mut self, a: Node<'u>) -> Vec<TArg> {
        if a.kind_name() == "parameter_pack_expansion" {
            if let Some(p) = a.field("pattern") {
                let name = self.text(p).trim().to_string();
                match self.lookup_local(&name) {
                    Some(Binding::TypePack(ts)) => return ts.into_iter().map(TArg::Type).collect(),
                    Some(Binding::Pack(items)) => {
                        return items
                            .into_iter()
                            .filter_map(|b| match b {
                                Binding::Value(v) => self.value_targ(&v),
                                Binding::Type(t) => Some(TArg::Type(t)),
                                _ => None,
                            })
                            .collect()
                    }
                    _ => {}
                }
                if let Some(TArg::Pack(items)) = self.ctx().tenv.get(&name).cloned() {
                    return items;
                }
            }
            return Vec::new();
        }
        // `type_descriptor` holding a single name may denote a value (`N`, `WARP_SIZE` folded…).
        if a.kind_name() == "type_descriptor" && a.field("declarator").is_none() {
            if let Some(t) = a.field("type") {
                // `f<T>` naming a function template: a function value.
                if t.kind_name() == "template_type" {
                    let name = t.field("name").map(|n| self.text(n).to_string()).unwrap_or_default();
                    let names_function = self
                        .index
                        .lookup(self.ctx().scope, &name)
                        .iter()
                        .any(|&id| self.index.decl(id).kind == DeclKind::Function);
                    if names_function {
                        let v = self.template_value_of(t);
                        if let Some(arg) = self.value_targ(&v) {
                            return vec![arg];
                        }
                    }
                }
                if matches!(t.kind_name(), "type_identifier" | "qualified_identifier") && self.names_value(t) {
                    let v = self.scratch_expr_as_value_name(t);
                    if let Some(arg) = self.value_targ(&v) {
                        return vec![arg];
                    }
                }
            }
            return vec![TArg::Type(self.type_descriptor(a))];
        }
        if a.kind_name() == "type_descriptor" {
            return vec![TArg::Type(self.type_descriptor(a))];
        }
        let v = self.scratch_expr(a);
        if let Value::Type(t) = v {
            return vec![TArg::Type(t)];
        }
        match self.value_targ(&v) {
            Some(arg) => vec![arg],
            None => {
                // A value the evaluator cannot fold: keep it symbolic.
                let text = normalize(self.text(a));
                let ty = v.ty().scalar();
                let ty = if ty == ScalarTy::Opaque { ScalarTy::I32 } else { ty };
                let s = self.sym(&text, ty, SymKind::Unresolved);
                vec![TArg::Value(CVal::Sym(s, ty))]
            }
        }
    }

    /// Whether a name (in a template argument) denotes a value rather than a type.
    fn names_value(&mut self, node: Node<'u>) -> bool {
        // `T::member` with `T` a class (a template parameter bound to one):
        // a value when the member is a static data member or an enumerator.
        if let (true, Some(scope), Some(name)) = (
            node.kind_name() == "qualified_identifier",
            node.field("scope"),
            node.field("name"),
        ) {
            if matches!(name.kind_name(), "identifier" | "type_identifier") {
                if let Some(Type::Class(inst)) = self.scope_as_type(scope) {
                    let member = self.text(name).to_string();
                    if let Some(m) = self.index.decl(inst.decl).members {
                        return self.index.lookup_in(m, &member, 0).iter().any(|&id| {
                            matches!(self.index.decl(id).kind, DeclKind::Var | DeclKind::Enumerator { .. })
                        });
                    }
                }
            }
        }
        if node.kind_name() == "qualified_identifier" {
            let text = normalize(self.text(node));
            let parts: Vec<&str> = text.split("::").collect();
            if let Some((last, path)) = parts.split_last() {
                if let Some(s) = self.resolve_scope_path(path) {
                    return self
                        .index
                        .lookup_in(s, last, 0)
                        .iter()
                        .any(|&id| matches!(self.index.decl(id).kind, DeclKind::Var | DeclKind::Enumerator { .. }));
                }
            }
            return false;
        }
        let name = self.text(node).to_string();
        match self.lookup_local(&name) {
            Some(Binding::Value(Value::Type(_))) | Some(Binding::Type(_)) | Some(Binding::TypePack(_)) => false,
            Some(_) => true,
            None => {
                if let Some(class) = self.ctx().class.clone() {
                    if self.member_type(&class, &name).is_some() {
                        return false;
                    }
                    let members = self.index.decl(class.decl).members;
                    if let Some(m) = members {
                        if self
                            .index
                            .lookup_in(m, &name, 0)
                            .iter()
                            .any(|&id| matches!(self.index.decl(id).kind, DeclKind::Var | DeclKind::Enumerator { .. }))
                        {
                            return true;
                        }
                    }
                }
                let ids = self.index.lookup(self.ctx().scope, &name);
                ids.iter().any(|&id| {
                    matches!(
                        self.index.decl(id).kind,
                        DeclKind::Var | DeclKind::Enumerator { .. } | DeclKind::Function
                    )
                })
            }
        }
    }

    /// Evaluates a name node (parsed as a type) as an expression.
    fn scratch_expr_as_value_name(&mut self, node: Node<'u>) -> Value {
        self.scratch_expr(node)
    }

    /// A constant value as a template argument.
    pub(super) fn value_targ(&mut self, v: &Value) -> Option<TArg> {
        match v {
            Value::Scalar(Expr::Int(i, ty), _) => Some(TArg::Value(CVal::Int(*i, *ty))),
            Value::Scalar(Expr::Bool(b), _) => Some(TArg::Value(CVal::Int(*b as i128, ScalarTy::Bool))),
            Value::Scalar(Expr::Sym(s), t) => Some(TArg::Value(CVal::Sym(*s, t.scalar()))),
            Value::Type(t) => Some(TArg::Type(t.clone())),
            Value::Func(f) => Some(TArg::Func(f.clone())),
            _ => None,
        }
    }

    // ----- classes ---------------------------------------------------------------

    pub(super) fn class_type(&mut self, id: DeclId, args: Vec<TArg>) -> Type {
        let d = self.index.decl(id);
        Type::Class(Rc::new(ClassInst {
            decl: id,
            name: d.name.clone(),
            args,
        }))
    }

    /// Instantiates a class template (or names a plain class): picks the most
    /// specialised definition among `candidates` whose pattern matches `args`.
    pub(super) fn instantiate_class(&mut self, candidates: &[DeclId], args: Vec<TArg>, _node: Node<'u>) -> Type {
        let primary = candidates
            .iter()
            .copied()
            .find(|&id| {
                let d = self.index.decl(id);
                d.specialization.is_none() && d.template.is_some()
            })
            .or_else(|| {
                candidates
                    .iter()
                    .copied()
                    .find(|&id| self.index.decl(id).specialization.is_none() && self.index.decl(id).defined)
            })
            .or_else(|| candidates.first().copied());
        let Some(primary) = primary else {
            return Type::Opaque("class".into());
        };
        // Complete the arguments with the primary template's defaults.
        let mut args = args;
        if let Some(params) = self.index.decl(primary).template {
            let d = self.index.decl(primary).clone();
            let ctx = Ctx {
                frag: d.frag,
                scope: d.scope,
                tenv: Rc::new(TemplateEnv::default()),
                class: None,
            };
            let env = self.bind_template_params(ctx, params, &args, &TemplateEnv::default(), true);
            let names: Vec<String> = named_children(params)
                .into_iter()
                .filter_map(|p| call::template_param_name(d.frag, p))
                .collect();
            if names.len() > args.len() {
                for n in &names[args.len()..] {
                    if let Some(a) = env.get(n) {
                        args.push(a.clone());
                    }
                }
            }
        }
        self.class_type(primary, args)
    }

    /// The declaration that defines an instantiation (a specialisation or the
    /// primary) and the template parameters it binds.
    pub(super) fn class_definition(&mut self, inst: &ClassInst) -> (DeclId, TemplateEnv) {
        if let Some(found) = self.class_defs.get(inst) {
            return found.clone();
        }
        let found = self.find_class_definition(inst);
        self.class_defs.insert(inst.clone(), found.clone());
        found
    }

    /// [`Self::class_definition`], uncached: which definition (primary or
    /// specialisation) an instantiation takes, and its parameters' values.
    fn find_class_definition(&mut self, inst: &ClassInst) -> (DeclId, TemplateEnv) {
        let primary = self.index.decl(inst.decl).clone();
        let specs: Vec<DeclId> = self
            .index
            .scope(primary.scope)
            .members
            .get(&primary.name)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|&id| {
                let d = self.index.decl(id);
                d.kind == DeclKind::Class && d.specialization.is_some() && d.defined
            })
            .collect();
        let mut best: Option<(DeclId, TemplateEnv, usize)> = None;
        for id in specs {
            let d = self.index.decl(id).clone();
            let Some(spec_args) = d.specialization else {
                continue;
            };
            if let Some(env) = self.match_specialization(id, spec_args, &inst.args) {
                // More specialised = fewer template parameters left to deduce.
                let free = d.template.map_or(0, |t| named_children(t).len());
                if best.as_ref().is_none_or(|b| free < b.2) {
                    best = Some((id, env, free));
                }
            }
        }
        if let Some((id, env, _)) = best {
            return (id, env);
        }
        // The primary: bind its parameters to the arguments.
        let defined = if primary.defined {
            inst.decl
        } else {
            self.index
                .scope(primary.scope)
                .members
                .get(&primary.name)
                .and_then(|ids| {
                    ids.iter()
                        .copied()
                        .find(|&id| self.index.decl(id).defined && self.index.decl(id).specialization.is_none())
                })
                .unwrap_or(inst.decl)
        };
        let d = self.index.decl(defined).clone();
        let env = match d.template {
            Some(params) => {
                let ctx = Ctx {
                    frag: d.frag,
                    scope: d.scope,
                    tenv: Rc::new(TemplateEnv::default()),
                    class: None,
                };
                self.bind_template_params(ctx, params, &inst.args, &TemplateEnv::default(), true)
            }
            None => TemplateEnv::default(),
        };
        (defined, env)
    }

    /// Matches a specialisation's argument patterns against actual arguments.
    fn match_specialization(&mut self, id: DeclId, spec_args: Node<'u>, actual: &[TArg]) -> Option<TemplateEnv> {
        let d = self.index.decl(id).clone();
        let params: Vec<String> = d
            .template
            .map(|t| {
                named_children(t)
                    .into_iter()
                    .filter_map(|p| call::template_param_name(d.frag, p))
                    .collect()
            })
            .unwrap_or_default();
        let patterns: Vec<Node> = named_children(spec_args);
        if patterns.len() != actual.len() {
            return None;
        }
        let mut env = TemplateEnv::default();
        let ctx = Ctx {
            frag: d.frag,
            scope: d.scope,
            tenv: Rc::new(TemplateEnv::default()),
            class: None,
        };
        for (pat, arg) in patterns.iter().zip(actual) {
            let text = normalize(syntax::text(d.frag, *pat));
            if params.contains(&text) {
                if let Some(prev) = env.get(&text) {
                    if prev != arg {
                        return None;
                    }
                }
                env.insert(text, arg.clone());
                continue;
            }
            // A pattern using parameters inside (`tile<I, J, T>`): deduce structurally.
            if super::call::mentions(&text, &params) {
                if let TArg::Type(t) = arg {
                    let ok = self.in_ctx(ctx.clone(), |l| l.deduce_type_pattern(*pat, t, &params, &mut env));
                    if ok {
                        continue;
                    }
                }
                return None;
            }
            // A concrete argument: evaluate it in the specialisation's context.
            let concrete = self.in_ctx(ctx.clone(), |l| l.template_arg(*pat));
            if concrete.first() != Some(arg) && !targ_equivalent(concrete.first(), arg) {
                return None;
            }
        }
        if params.iter().all(|p| env.contains_key(p)) {
            Some(env)
        } else {
            None
        }
    }

    /// The context for evaluating inside a class instantiation.
    pub(super) fn class_ctx(&mut self, inst: &Rc<ClassInst>) -> Ctx<'u> {
        let (def, env) = self.class_definition(inst);
        let d = self.index.decl(def).clone();
        Ctx {
            frag: d.frag,
            scope: d.members.unwrap_or(d.scope),
            tenv: Rc::new(env),
            class: Some(Rc::new(ClassInst {
                decl: def,
                name: inst.name.clone(),
                args: inst.args.clone(),
            })),
        }
    }

    /// A nested type of a class (`typedef`, `using`, nested struct, or a base's).
    pub(super) fn member_type(&mut self, inst: &Rc<ClassInst>, name: &str) -> Option<Type> {
        self.member_type_with_args(inst, name, Vec::new())
    }

    fn member_type_with_args(&mut self, inst: &Rc<ClassInst>, name: &str, args: Vec<TArg>) -> Option<Type> {
        let ctx = self.class_ctx(inst);
        if name == inst.name && args.is_empty() {
            return Some(Type::Class(inst.clone()));
        }
        let ids = self.index.lookup_in(ctx.scope, name, 0);
        let types: Vec<DeclId> = ids
            .into_iter()
            .filter(|&id| {
                matches!(
                    self.index.decl(id).kind,
                    DeclKind::Class | DeclKind::Alias | DeclKind::Enum
                )
            })
            .collect();
        if !types.is_empty() {
            let node = self.index.decl(types[0]).node;
            return self.in_ctx(ctx, |l| l.type_from_decls(&types, args, node));
        }
        None
    }

    /// The fields of a struct or vector type, with their types.
    pub(super) fn fields_of(&mut self, ty: &Type) -> Option<Vec<(String, Type)>> {
        match ty.strip_ref() {
            Type::Lib(lib) => {
                let [a, b] = pair_members(lib)?;
                Some(vec![("first".into(), a), ("second".into(), b)])
            }
            Type::Vector(v) => Some(
                (0..v.n as usize)
                    .map(|i| (VECTOR_FIELDS[i].to_string(), (*v.elem).clone()))
                    .collect(),
            ),
            Type::Class(inst) => {
                let layout = self.layout(inst);
                if layout.union {
                    return None;
                }
                Some(layout.fields.iter().map(|f| (f.name.clone(), f.ty.clone())).collect())
            }
            _ => None,
        }
    }

    /// Whether a type holds an array (or a union) anywhere: such values live in memory.
    pub(super) fn has_array(&mut self, ty: &Type) -> bool {
        match ty.strip_ref() {
            Type::Array(..) => true,
            Type::Class(inst) => {
                let layout = self.layout(inst);
                if layout.union {
                    return true;
                }
                let fields: Vec<Type> = layout.fields.iter().map(|f| f.ty.clone()).collect();
                fields.iter().any(|f| self.has_array(f))
            }
            Type::Lib(lib) => match pair_members(lib) {
                Some([a, b]) => self.has_array(&a) || self.has_array(&b),
                None => true,
            },
            Type::Opaque(_) => true,
            _ => false,
        }
    }

    /// Layout of a class instantiation (cached).
    pub(super) fn layout(&mut self, inst: &Rc<ClassInst>) -> Rc<Layout> {
        if let Some(l) = self.layouts.get(inst) {
            return l.clone();
        }
        // A placeholder breaks cycles (a struct containing a pointer to itself is fine).
        self.layouts.insert(
            inst.clone(),
            Rc::new(Layout {
                size: None,
                align: 1,
                fields: Vec::new(),
                union: false,
            }),
        );
        let ctx = self.class_ctx(inst);
        let def = ctx.class.as_ref().map(|c| c.decl).unwrap_or(inst.decl);
        let union = self.index.decl(def).node.kind_name() == "union_specifier";
        let field_ids = self.index.scope(ctx.scope).fields.clone();
        let bases = self.index.bases.get(&ctx.scope).cloned().unwrap_or_default();
        let layout = self.in_ctx(ctx, |l| {
            let mut fields = Vec::new();
            let mut offset: Option<u64> = Some(0);
            let mut align = 1u64;
            let mut size_union: Option<u64> = Some(0);
            // Base classes come first.
            for (clause, _) in bases {
                for b in named_children(clause) {
                    if b.kind_name() == "access_specifier" {
                        continue;
                    }
                    let bt = l.type_node(b);
                    if let Type::Class(bi) = &bt {
                        let bl = l.layout(bi);
                        offset = offset.map(|o| round_up(o, bl.align));
                        for f in &bl.fields {
                            fields.push(Field {
                                name: f.name.clone(),
                                ty: f.ty.clone(),
                                offset: match (offset, f.offset) {
                                    (Some(o), Some(fo)) => Some(o + fo),
                                    _ => None,
                                },
                            });
                        }
                        align = align.max(bl.align);
                        offset = match (offset, bl.size) {
                            (Some(o), Some(s)) => Some(o + s),
                            _ => None,
                        };
                    }
                }
            }
            for id in field_ids {
                let d = l.index.decl(id).clone();
                let base = match d.node.field("type") {
                    Some(t) => l.type_node(t),
                    None => Type::Opaque("?".into()),
                };
                let (ty, _) = match d.declarator {
                    Some(decl) => l.apply_declarator(base, decl),
                    None => (base, None),
                };
                let (fsize, falign) = match l.size_align(&ty) {
                    Some(sa) => (Some(sa.0), sa.1),
                    None => (None, 1),
                };
                align = align.max(falign);
                if union {
                    size_union = match (size_union, fsize) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                    fields.push(Field {
                        name: d.name.clone(),
                        ty,
                        offset: Some(0),
                    });
                    continue;
                }
                offset = offset.map(|o| round_up(o, falign));
                fields.push(Field {
                    name: d.name.clone(),
                    ty,
                    offset,
                });
                offset = match (offset, fsize) {
                    (Some(o), Some(s)) => Some(o + s),
                    _ => None,
                };
            }
            let raw = if union { size_union } else { offset };
            // An empty class has size 1.
            let size = raw.map(|s| round_up(s.max(1), align));
            Layout {
                size,
                align,
                fields,
                union,
            }
        });
        let layout = Rc::new(layout);
        self.layouts.insert(inst.clone(), layout.clone());
        layout
    }

    /// Size and alignment of a type, when known.
    pub(super) fn size_align(&mut self, ty: &Type) -> Option<(u64, u64)> {
        if let Some(sa) = ty.builtin_layout() {
            return Some(sa);
        }
        match ty {
            Type::Array(elem, Some(n)) => {
                let (s, a) = self.size_align(elem)?;
                Some((s * n, a))
            }
            Type::Class(inst) => {
                let l = self.layout(inst);
                Some((l.size?, l.align))
            }
            Type::Ref(t) => self.size_align(t),
            // `std::pair<A, B>`: a struct of its two members (see `field`).
            Type::Lib(lib) if pair_members(lib).is_some() => {
                let (_, size, align) = self.pair_layout(lib)?;
                Some((size, align))
            }
            Type::Lib(lib) => super::builtins::library_layout(lib),
            _ => None,
        }
    }

    /// `sizeof(ty)` as an expression: a constant, or a symbol when unknown.
    pub(super) fn size_expr(&mut self, ty: &Type) -> Expr {
        match self.size_align(ty) {
            Some((s, _)) => Expr::int(s as i128, ScalarTy::U64),
            None => {
                let name = format!("sizeof({})", ty.display());
                let s = self.sym(&name, ScalarTy::U64, SymKind::Layout);
                Expr::Sym(s)
            }
        }
    }

    /// `std::pair<A, B>`'s member offsets, size and alignment: a struct
    /// of its two members, laid out as `layout` lays out a class's.
    fn pair_layout(&mut self, lib: &LibTy) -> Option<([u64; 2], u64, u64)> {
        let mut offsets = [0; 2];
        let mut at = 0;
        let mut align = 1;
        for (k, t) in pair_members(lib)?.iter().enumerate() {
            let (size, a) = self.size_align(t)?;
            offsets[k] = round_up(at, a);
            at = offsets[k] + size;
            align = align.max(a);
        }
        Some((offsets, round_up(at, align), align))
    }

    /// Field offset and type by name, in a struct type.
    pub(super) fn field(&mut self, ty: &Type, name: &str) -> Option<(usize, Expr, Type)> {
        match ty.strip_ref() {
            // `std::pair<A, B>`: `first`, then `second` at `B`'s alignment
            // (what the library's struct of two members lays out).
            Type::Lib(lib) if pair_members(lib).is_some() => {
                let i = ["first", "second"].iter().position(|f| *f == name)?;
                let fty = pair_members(lib)?[i].clone();
                let off = match self.pair_layout(lib) {
                    Some((offsets, _, _)) => Some(offsets[i]),
                    // `first` is at 0 whatever the members' layouts.
                    None => (i == 0).then_some(0),
                };
                let off = match off {
                    Some(o) => Expr::int(o as i128, ScalarTy::I64),
                    None => Expr::Sym(self.sym(
                        &format!("offsetof({}, {name})", ty.display()),
                        ScalarTy::I64,
                        SymKind::Layout,
                    )),
                };
                Some((i, off, fty))
            }
            Type::Vector(v) => {
                let i = VECTOR_FIELDS.iter().position(|f| *f == name)?;
                if i >= v.n as usize {
                    return None;
                }
                let (es, _) = v.elem.builtin_layout()?;
                Some((i, Expr::int((i as u64 * es) as i128, ScalarTy::I64), (*v.elem).clone()))
            }
            Type::Class(inst) => {
                let layout = self.layout(inst);
                let Some(i) = layout.fields.iter().position(|f| f.name == name) else {
                    // Members of anonymous structs and unions, at their offset.
                    for (i, f) in layout.fields.iter().enumerate() {
                        if !f.name.starts_with(super::index::ANONYMOUS_MEMBER) {
                            continue;
                        }
                        let (fo, fty) = (f.offset, f.ty.clone());
                        if let Some((_, inner, ity)) = self.field(&fty, name) {
                            let off = match (fo, inner.as_int()) {
                                (Some(a), Some(b)) => Expr::int(a as i128 + b, ScalarTy::I64),
                                _ => {
                                    let s = self.sym(
                                        &format!("offsetof({}, {name})", ty.display()),
                                        ScalarTy::I64,
                                        SymKind::Layout,
                                    );
                                    Expr::Sym(s)
                                }
                            };
                            return Some((i, off, ity));
                        }
                    }
                    return None;
                };
                let f = &layout.fields[i];
                let off = match f.offset {
                    Some(o) => Expr::int(o as i128, ScalarTy::I64),
                    None => {
                        let s = self.sym(
                            &format!("offsetof({}, {name})", ty.display()),
                            ScalarTy::I64,
                            SymKind::Layout,
                        );
                        Expr::Sym(s)
                    }
                };
                Some((i, off, f.ty.clone()))
            }
            _ => None,
        }
    }

    /// A library type by (possibly qualified) name.
    fn library_type(&mut self, name: &str, args: Vec<TArg>) -> Option<Type> {
        let first = name.split("::").next().unwrap_or(name);
        let known = super::builtins::is_library_type(name);
        if known || LIBRARY_NAMESPACES.contains(&first) && name.contains("::") {
            if let Some(t) = super::builtins::std_type(self, name, &args) {
                return Some(t);
            }
            return Some(Type::Lib(Rc::new(LibTy {
                name: name.to_string(),
                args,
            })));
        }
        None
    }

    /// Deduces template parameters from a type pattern node against a type.
    pub(super) fn deduce_type_pattern(
        &mut self,
        pattern: Node<'u>,
        actual: &Type,
        params: &[String],
        env: &mut TemplateEnv,
    ) -> bool {
        let (type_node, declarator) = match pattern.kind_name() {
            "type_descriptor" => (pattern.field("type"), pattern.field("declarator")),
            _ => (Some(pattern), None),
        };
        let Some(type_node) = type_node else {
            return false;
        };
        // Peel the declarator against the actual type.
        let mut actual = actual.clone();
        if let Some(d) = declarator {
            let mut node = Some(d);
            while let Some(n) = node {
                match n.kind_name() {
                    "abstract_pointer_declarator" | "pointer_declarator" => match actual.clone() {
                        Type::Ptr(inner) => actual = (*inner).clone(),
                        _ => return false,
                    },
                    "abstract_reference_declarator" | "reference_declarator" => {
                        actual = actual.strip_ref().clone();
                    }
                    "abstract_array_declarator" | "array_declarator" => {
                        let (bounds, m) = super::index::array_bounds(n);
                        for a in &bounds {
                            let Type::Array(inner, n_elems) = actual.clone() else {
                                return false;
                            };
                            if let (Some(size), Some(count)) = (a.field("size"), n_elems) {
                                let name = normalize(self.text(size));
                                if params.contains(&name) {
                                    env.insert(name, TArg::Value(CVal::Int(count as i128, ScalarTy::I32)));
                                }
                            }
                            actual = (*inner).clone();
                        }
                        node = m;
                        continue;
                    }
                    _ => {}
                }
                node = n.field("declarator");
            }
        }
        let text = normalize(self.text(type_node));
        if params.contains(&text) {
            if let Some(prev) = env.get(&text) {
                return prev == &TArg::Type(actual.clone());
            }
            env.insert(text, TArg::Type(actual));
            return true;
        }
        if type_node.kind_name() == "template_type" {
            let Type::Class(inst) = &actual else {
                return false;
            };
            let name = type_node
                .field("name")
                .map(|n| self.text(n).to_string())
                .unwrap_or_default();
            if name != inst.name {
                return false;
            }
            let Some(list) = type_node.field("arguments") else {
                return true;
            };
            let pats: Vec<Node> = named_children(list);
            for (pat, arg) in pats.iter().zip(inst.args.iter()) {
                let ptext = normalize(self.text(*pat));
                if params.contains(&ptext) {
                    if let Some(prev) = env.get(&ptext) {
                        if prev != arg && !targ_equivalent(Some(prev), arg) {
                            return false;
                        }
                    }
                    env.insert(ptext, arg.clone());
                } else if let TArg::Type(t) = arg {
                    if !self.deduce_type_pattern(*pat, t, params, env) {
                        // A concrete pattern: compare.
                        let v = self.template_arg(*pat);
                        if v.first() != Some(arg) {
                            return false;
                        }
                    }
                } else {
                    let v = self.template_arg(*pat);
                    if !targ_equivalent(v.first(), arg) {
                        return false;
                    }
                }
            }
            return true;
        }
        // A concrete type: it matches when it is the same.
        let t = self.type_node(type_node);
        t == actual || matches!(t, Type::Opaque(_))
    }

    /// The value of an enumerator (its initializer, or the previous one plus one).
    pub(super) fn enumerator_value(&mut self, id: DeclId) -> i128 {
        if let Some(&v) = self.enum_values.get(&id) {
            return v;
        }
        let d = self.index.decl(id).clone();
        let DeclKind::Enumerator { enum_decl, index } = d.kind else {
            return 0;
        };
        let value = match d.node.field("value") {
            Some(v) => {
                let ctx = Ctx {
                    frag: d.frag,
                    scope: d.scope,
                    tenv: Rc::new(TemplateEnv::default()),
                    class: None,
                };
                let v = self.in_ctx(ctx, |l| l.scratch_expr(v));
                v.as_int().unwrap_or(index as i128)
            }
            None if index == 0 => 0,
            None => {
                // The previous enumerator of the same enum, plus one.
                let e = self.index.decl(enum_decl).clone();
                let prev = e.members.and_then(|m| {
                    self.index.scope(m).members.values().flatten().copied().find(|&p| {
                        matches!(self.index.decl(p).kind, DeclKind::Enumerator { enum_decl: ed, index: pi } if ed == enum_decl && pi + 1 == index)
                    })
                });
                match prev {
                    Some(p) => self.enumerator_value(p) + 1,
                    None => index as i128,
                }
            }
        };
        self.enum_values.insert(id, value);
        value
    }
}

fn round_up(x: u64, align: u64) -> u64 {
    if align <= 1 {
        x
    } else {
        x.div_ceil(align) * align
    }
}

/// Template arguments that denote the same value (ignoring the integer type).
fn targ_equivalent(a: Option<&TArg>, b: &TArg) -> bool {
    match (a, b) {
        (Some(TArg::Value(CVal::Int(x, _))), TArg::Value(CVal::Int(y, _))) => x == y,
        (Some(x), y) => x == y,
        _ => false,
    }
}

/// `unsigned   long` → `unsigned long`; `long unsigned int` → `unsigned long int`.
fn normalize_spelling(text: &str) -> String {
    let mut words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| *w != "const" && *w != "volatile")
        .collect();
    if let Some(i) = words.iter().position(|w| *w == "unsigned" || *w == "signed") {
        let w = words.remove(i);
        words.insert(0, w);
    }
    words.join(" ")
}

/// The member types of `std::pair<A, B>` (modelled as a struct of `first`
/// and `second`: the standard headers are not read).
pub(super) fn pair_members(lib: &LibTy) -> Option<[Type; 2]> {
    if lib.name != "std::pair" {
        return None;
    }
    match lib.args.as_slice() {
        [TArg::Type(a), TArg::Type(b)] => Some([a.clone(), b.clone()]),
        _ => None,
    }
}
