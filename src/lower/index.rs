//! The declarations of a translation unit, by scope and name.
//!
//! Input: the unit's fragments (parsed). Output: an [`Index`] of namespaces,
//! classes, functions, aliases, enums and variables, and the unit's kernels.
//! Name lookup walks scopes outward and through `using namespace`. Lookup is
//! deliberately forgiving — declaration order is ignored and overloads are
//! chosen later by `lower::call` — because the code already compiles with nvcc.
//! Declarations inside `ERROR` nodes are still indexed: tree-sitter wraps
//! valid code near a construct it cannot parse.

use crate::hash::HashMap;

use tree_sitter::Node;

use crate::preprocess::{Fragment, Unit};
use crate::syntax::{self, named_children, text, NodeExt};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeclId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub u32);

pub const GLOBAL: ScopeId = ScopeId(0);

/// The name given to an anonymous struct or union member.
pub const ANONYMOUS_MEMBER: &str = "<anonymous member@";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclKind {
    Function,
    Class,
    /// `typedef`, `using X = T`, `using ns::x` (the node is what it names).
    Alias,
    /// `namespace a = b;`
    NamespaceAlias,
    Enum,
    /// An enumerator: `index` among its enum's enumerators.
    Enumerator {
        enum_decl: DeclId,
        index: u32,
    },
    /// A variable at namespace scope or a static data member.
    Var,
    /// A non-static data member.
    Field,
}

#[derive(Clone, Debug)]
pub struct Decl<'u> {
    pub kind: DeclKind,
    pub name: String,
    /// The declaration: `function_definition`, `declaration`, `field_declaration`,
    /// `struct_specifier`, `enum_specifier`, `enumerator`, `type_definition`…
    pub node: Node<'u>,
    /// For variables and fields: the declarator of this name (one declaration may
    /// declare several).
    pub declarator: Option<Node<'u>>,
    pub frag: &'u Fragment,
    /// The scope the declaration is in.
    pub scope: ScopeId,
    /// Its `template_parameter_list`, when it is a template.
    pub template: Option<Node<'u>>,
    /// The `template_argument_list` of a specialisation (`struct S<int, T>`).
    pub specialization: Option<Node<'u>>,
    /// The member scope of a class or scoped enum.
    pub members: Option<ScopeId>,
    /// A function with a body, or a class with a definition.
    pub defined: bool,
    /// Position among the class's data members (fields).
    pub order: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    Namespace,
    Class(DeclId),
    Enum(DeclId),
}

#[derive(Clone, Debug)]
pub struct Scope {
    pub name: String,
    pub parent: Option<ScopeId>,
    pub kind: ScopeKind,
    pub members: HashMap<String, Vec<DeclId>>,
    /// `using namespace` directives in this scope.
    pub usings: Vec<ScopeId>,
    /// Data members of a class, in declaration order.
    pub fields: Vec<DeclId>,
}

/// A kernel definition found in the unit.
#[derive(Clone, Copy, Debug)]
pub struct KernelDecl {
    pub decl: DeclId,
}

pub struct Index<'u> {
    pub decls: Vec<Decl<'u>>,
    pub scopes: Vec<Scope>,
    /// Base-class clauses per class scope (kept apart: `Scope` has no lifetime).
    pub bases: HashMap<ScopeId, Vec<(Node<'u>, &'u Fragment)>>,
    pub kernels: Vec<KernelDecl>,
    /// Explicit instantiations (`template void f<…>(…);`) and template-ids that
    /// name kernels, found anywhere in the unit.
    pub instantiations: Vec<(Node<'u>, &'u Fragment, ScopeId)>,
    /// Classes defined inside function bodies, by the id of their specifier node.
    pub local_classes: HashMap<usize, DeclId>,
    /// Distinct for every index built: memos keyed by syntax node ids (which
    /// are addresses, reused once a unit's trees are freed) key by it too.
    pub generation: u64,
}

/// The bounds of `x[N][M]` as declarator nodes, the type's first bound (the
/// innermost node, N) first, and the declarator inside them.
pub(super) fn array_bounds<'t>(outer: Node<'t>) -> (Vec<Node<'t>>, Option<Node<'t>>) {
    let mut chain = vec![outer];
    let mut inner = outer.field("declarator");
    while let Some(d) = inner.filter(|d| d.kind_name().ends_with("array_declarator")) {
        chain.push(d);
        inner = d.field("declarator");
    }
    chain.reverse();
    (chain, inner)
}

/// The name a declarator declares (through pointers, references, arrays,
/// initialisers, parentheses) and that name's node.
pub fn declarator_name<'t>(frag: &Fragment, mut node: Node<'t>) -> Option<(String, Node<'t>)> {
    for _ in 0..64 {
        match node.kind_name() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "operator_name"
            | "destructor_name"
            | "qualified_identifier"
            | "template_function"
            | "namespace_identifier" => {
                return Some((normalize(text(frag, node)), node));
            }
            _ => {}
        }
        node = match node.field("declarator") {
            Some(d) => d,
            None => {
                let children = named_children(node);
                *children.iter().find(|c| {
                    !matches!(
                        c.kind_name(),
                        "type_qualifier" | "ms_pointer_modifier" | "attribute_specifier" | "attribute_declaration"
                    )
                })?
            }
        };
    }
    None
}

/// Removes white space from a (qualified) name: `a :: b` → `a::b`.
pub fn normalize(name: &str) -> String {
    name.split_whitespace().collect()
}

/// Whether a function definition or declaration is marked `__global__`.
pub fn is_global(node: Node) -> bool {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).any(|c| {
        c.kind_name() == "__global__" || (c.kind_name() == "type_qualifier" && syntax::has_token(c, "__global__"))
    });
    found
}

impl<'u> Index<'u> {
    pub fn build(unit: &'u Unit) -> Index<'u> {
        static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut index = Index {
            generation: GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            decls: Vec::new(),
            scopes: vec![Scope {
                name: String::new(),
                parent: None,
                kind: ScopeKind::Namespace,
                members: HashMap::default(),
                usings: Vec::new(),
                fields: Vec::new(),
            }],
            bases: HashMap::default(),
            kernels: Vec::new(),
            instantiations: Vec::new(),
            local_classes: HashMap::default(),
        };
        for frag in &unit.fragments {
            let tree = syntax::tree(frag);
            let first = index.decls.len();
            index.walk(frag, tree.root_node(), GLOBAL, None, 0);
            for i in first..index.decls.len() {
                let d = &index.decls[i];
                if d.kind == DeclKind::Function
                    && d.defined
                    && header_mentions_global(frag, d.node)
                    && is_kernel(d.node)
                {
                    index.kernels.push(KernelDecl { decl: DeclId(i as u32) });
                }
            }
        }
        index
    }

    pub fn decl(&self, id: DeclId) -> &Decl<'u> {
        &self.decls[id.0 as usize]
    }

    pub fn scope(&self, id: ScopeId) -> &Scope {
        &self.scopes[id.0 as usize]
    }

    fn new_scope(&mut self, name: &str, parent: ScopeId, kind: ScopeKind) -> ScopeId {
        let id = ScopeId(self.scopes.len() as u32);
        self.scopes.push(Scope {
            name: name.to_string(),
            parent: Some(parent),
            kind,
            members: HashMap::default(),
            usings: Vec::new(),
            fields: Vec::new(),
        });
        id
    }

    fn add(&mut self, scope: ScopeId, decl: Decl<'u>) -> DeclId {
        let id = DeclId(self.decls.len() as u32);
        let name = decl.name.clone();
        if decl.kind == DeclKind::Field {
            self.scopes[scope.0 as usize].fields.push(id);
        }
        self.decls.push(decl);
        self.scopes[scope.0 as usize].members.entry(name).or_default().push(id);
        id
    }

    /// The namespace scope named `name` inside `parent`, created when new
    /// (a namespace may be reopened many times).
    fn namespace(&mut self, parent: ScopeId, name: &str) -> ScopeId {
        let existing = self
            .scopes
            .iter()
            .position(|s| s.parent == Some(parent) && s.kind == ScopeKind::Namespace && s.name == name);
        match existing {
            Some(i) => ScopeId(i as u32),
            None => self.new_scope(name, parent, ScopeKind::Namespace),
        }
    }

    /// A child scope (namespace, class or enum) of `parent` by name.
    pub fn child_scope(&self, parent: ScopeId, name: &str) -> Option<ScopeId> {
        if let Some(ids) = self.scope(parent).members.get(name) {
            // Prefer a defined class's members.
            for &id in ids.iter().rev() {
                let d = self.decl(id);
                if let Some(m) = d.members {
                    if d.defined && d.specialization.is_none() {
                        return Some(m);
                    }
                }
            }
            for &id in ids.iter().rev() {
                if let Some(m) = self.decl(id).members {
                    return Some(m);
                }
            }
        }
        self.scopes
            .iter()
            .enumerate()
            .find(|(_, s)| s.parent == Some(parent) && s.kind == ScopeKind::Namespace && s.name == name)
            .map(|(i, _)| ScopeId(i as u32))
    }

    /// Declarations named `name` visible from `scope`: the innermost scope that
    /// has any wins, as in C++ unqualified lookup; `using namespace` directives
    /// of each scope are searched with it.
    pub fn lookup(&self, scope: ScopeId, name: &str) -> Vec<DeclId> {
        let mut current = Some(scope);
        while let Some(s) = current {
            let found = self.lookup_in(s, name, 0);
            if !found.is_empty() {
                return found;
            }
            current = self.scope(s).parent;
        }
        Vec::new()
    }

    /// Declarations named `name` directly in `scope` or through its using-directives.
    pub fn lookup_in(&self, scope: ScopeId, name: &str, depth: u32) -> Vec<DeclId> {
        let sc = self.scope(scope);
        let mut found: Vec<DeclId> = sc.members.get(name).cloned().unwrap_or_default();
        if depth < 8 {
            for &u in &sc.usings {
                found.extend(self.lookup_in(u, name, depth + 1));
            }
        }
        found
    }

    /// A namespace (or class) scope by a possibly qualified name, looked up from `scope`.
    pub fn resolve_scope(&self, scope: ScopeId, path: &[&str]) -> Option<ScopeId> {
        let (first, rest) = path.split_first()?;
        let mut current = if first.is_empty() {
            GLOBAL
        } else {
            let mut s = Some(scope);
            let mut found = None;
            while let Some(sid) = s {
                if let Some(c) = self.child_scope_or_alias(sid, first) {
                    found = Some(c);
                    break;
                }
                s = self.scope(sid).parent;
            }
            found?
        };
        for part in rest {
            current = self.child_scope_or_alias(current, part)?;
        }
        Some(current)
    }

    fn child_scope_or_alias(&self, parent: ScopeId, name: &str) -> Option<ScopeId> {
        if let Some(s) = self.child_scope(parent, name) {
            return Some(s);
        }
        for u in &self.scope(parent).usings {
            if let Some(s) = self.child_scope(*u, name) {
                return Some(s);
            }
        }
        let ids = self.scope(parent).members.get(name)?;
        for &id in ids {
            let d = self.decl(id);
            if d.kind == DeclKind::NamespaceAlias {
                let target = d
                    .node
                    .field("value")
                    .or_else(|| named_children(d.node).last().copied())?;
                let path = normalize(text(d.frag, target));
                let parts: Vec<&str> = path.split("::").collect();
                return self.resolve_scope(d.scope, &parts);
            }
        }
        None
    }

    fn walk(&mut self, frag: &'u Fragment, node: Node<'u>, scope: ScopeId, template: Option<Node<'u>>, depth: u32) {
        if depth > 200 {
            return;
        }
        match node.kind_name() {
            "translation_unit" | "declaration_list" | "ERROR" | "field_declaration_list" => {
                for child in named_children(node) {
                    self.walk(frag, child, scope, None, depth + 1);
                }
            }
            "namespace_definition" => {
                let mut s = scope;
                if let Some(name) = node.field("name") {
                    for part in normalize(text(frag, name)).split("::") {
                        s = self.namespace(s, part);
                    }
                } else {
                    // An anonymous namespace: its names are visible outside.
                    s = scope;
                }
                if let Some(body) = node.field("body") {
                    self.walk(frag, body, s, None, depth + 1);
                }
            }
            "linkage_specification" => {
                if let Some(body) = node.field("body") {
                    self.walk(frag, body, scope, None, depth + 1);
                }
            }
            "template_declaration" => {
                let params = node.field("parameters");
                for child in named_children(node) {
                    if child.kind_name() != "template_parameter_list" && child.kind_name() != "requires_clause" {
                        self.walk(frag, child, scope, params, depth + 1);
                    }
                }
            }
            "template_instantiation" => self.instantiations.push((node, frag, scope)),
            "function_definition" => {
                self.function(frag, node, scope, template, true);
                self.local_classes_in(frag, node, scope, depth);
            }
            "declaration" | "field_declaration" => self.declaration(frag, node, scope, template, depth),
            "struct_specifier" | "class_specifier" | "union_specifier" => {
                self.class(frag, node, scope, template, None, depth);
            }
            "enum_specifier" => {
                self.enumeration(frag, node, scope, None);
            }
            "type_definition" => self.typedef(frag, node, scope, template, depth),
            "alias_declaration" => {
                if let Some(name) = node.field("name") {
                    let name = text(frag, name).to_string();
                    self.add(scope, self.decl_of(DeclKind::Alias, name, node, frag, scope, template));
                }
            }
            "using_declaration" => {
                let target = named_children(node).into_iter().last();
                if let Some(target) = target {
                    let path = normalize(text(frag, target));
                    if syntax::has_token(node, "namespace") {
                        let parts: Vec<&str> = path.split("::").collect();
                        if let Some(ns) = self.resolve_scope(scope, &parts) {
                            self.scopes[scope.0 as usize].usings.push(ns);
                        }
                    } else {
                        let name = path.rsplit("::").next().unwrap_or(&path).to_string();
                        self.add(
                            scope,
                            self.decl_of(DeclKind::Alias, name, target, frag, scope, template),
                        );
                    }
                }
            }
            "namespace_alias_definition" => {
                if let Some(name) = node.field("name") {
                    let name = text(frag, name).to_string();
                    self.add(
                        scope,
                        self.decl_of(DeclKind::NamespaceAlias, name, node, frag, scope, None),
                    );
                }
            }
            _ => {}
        }
    }

    /// Indexes classes defined in a function's body (each function gets its own
    /// scope for them, so names do not clash between functions).
    fn local_classes_in(&mut self, frag: &'u Fragment, function: Node<'u>, scope: ScopeId, depth: u32) {
        let Some(body) = function.field("body") else {
            return;
        };
        let text = syntax::text(frag, body);
        if !(text.contains("struct") || text.contains("union") || text.contains("class")) {
            return;
        }
        let mut local_scope = None;
        let mut stack = vec![body];
        let mut cursor = body.walk();
        while let Some(n) = stack.pop() {
            if matches!(
                n.kind_name(),
                "struct_specifier" | "union_specifier" | "class_specifier"
            ) && n.field("body").is_some()
            {
                let s = *local_scope.get_or_insert_with(|| self.new_scope("<local>", scope, ScopeKind::Namespace));
                if let Some(id) = self.class(frag, n, s, None, None, depth + 1) {
                    self.local_classes.insert(n.id(), id);
                }
                continue;
            }
            if n.kind_name() == "lambda_expression" || n.kind_name() == "function_definition" && n != function {
                continue;
            }
            stack.extend(n.named_children(&mut cursor));
        }
    }

    fn decl_of(
        &self,
        kind: DeclKind,
        name: String,
        node: Node<'u>,
        frag: &'u Fragment,
        scope: ScopeId,
        template: Option<Node<'u>>,
    ) -> Decl<'u> {
        Decl {
            kind,
            name,
            node,
            declarator: None,
            frag,
            scope,
            template,
            specialization: None,
            members: None,
            defined: false,
            order: 0,
        }
    }

    /// A function definition or prototype. Out-of-class member definitions
    /// (`S::f`) go to the class's scope.
    fn function(
        &mut self,
        frag: &'u Fragment,
        node: Node<'u>,
        scope: ScopeId,
        template: Option<Node<'u>>,
        defined: bool,
    ) {
        let Some(declarator) = node.field("declarator") else {
            return;
        };
        let Some((name, name_node)) = declarator_name(frag, declarator) else {
            return;
        };
        let (target_scope, simple, specialization) = match name_node.kind_name() {
            "qualified_identifier" => {
                let parts: Vec<&str> = name.split("::").collect();
                let (last, path) = parts.split_last().expect("split gives one part");
                let path: Vec<&str> = path.iter().map(|p| p.split('<').next().unwrap_or(p)).collect();
                let target = self.resolve_scope(scope, &path).unwrap_or(scope);
                (target, last.split('<').next().unwrap_or(last).to_string(), None)
            }
            "template_function" => {
                let base = name_node
                    .field("name")
                    .map(|n| text(frag, n).to_string())
                    .unwrap_or(name.clone());
                (scope, base, name_node.field("arguments"))
            }
            _ => (scope, name.clone(), None),
        };
        let mut decl = self.decl_of(DeclKind::Function, simple, node, frag, scope, template);
        decl.defined = defined && node.field("body").is_some();
        decl.specialization = specialization;
        // A member defined outside its class looks names up in the class.
        decl.scope = target_scope;
        self.add(target_scope, decl);
    }

    fn declaration(
        &mut self,
        frag: &'u Fragment,
        node: Node<'u>,
        scope: ScopeId,
        template: Option<Node<'u>>,
        depth: u32,
    ) {
        // A class or enum defined in the declaration (`struct S {…} s;`).
        if let Some(ty) = node.field("type") {
            match ty.kind_name() {
                "struct_specifier" | "class_specifier" | "union_specifier" if ty.field("body").is_some() => {
                    self.class(frag, ty, scope, template, None, depth);
                }
                "enum_specifier" if ty.field("body").is_some() => {
                    self.enumeration(frag, ty, scope, None);
                }
                _ => {}
            }
        }
        let is_field = node.kind_name() == "field_declaration";
        let is_static = named_children(node)
            .iter()
            .any(|c| c.kind_name() == "storage_class_specifier" && text(frag, *c) == "static");
        let mut cursor = node.walk();
        let declarators: Vec<Node> = node.children_by_field_name("declarator", &mut cursor).collect();
        // An anonymous struct or union member: its members are the class's own.
        if is_field && declarators.is_empty() {
            let anonymous = node.field("type").is_some_and(|t| {
                matches!(t.kind_name(), "struct_specifier" | "union_specifier")
                    && t.field("name").is_none()
                    && t.field("body").is_some()
            });
            if anonymous {
                let mut decl = self.decl_of(
                    DeclKind::Field,
                    format!("{ANONYMOUS_MEMBER}{}", node.start_byte()),
                    node,
                    frag,
                    scope,
                    None,
                );
                decl.order = self.scope(scope).fields.len() as u32;
                self.add(scope, decl);
            }
        }
        for d in declarators {
            if is_function_declarator(d) {
                self.function(frag, node, scope, template, false);
                continue;
            }
            let Some((name, _)) = declarator_name(frag, d) else {
                continue;
            };
            let kind = if is_field && !is_static {
                DeclKind::Field
            } else {
                DeclKind::Var
            };
            let mut decl = self.decl_of(kind, name, node, frag, scope, template);
            decl.declarator = Some(d);
            decl.order = self.scope(scope).fields.len() as u32;
            self.add(scope, decl);
        }
    }

    fn typedef(&mut self, frag: &'u Fragment, node: Node<'u>, scope: ScopeId, template: Option<Node<'u>>, depth: u32) {
        let ty = node.field("type");
        let mut cursor = node.walk();
        let declarators: Vec<Node> = node.children_by_field_name("declarator", &mut cursor).collect();
        let first_name = declarators
            .first()
            .and_then(|d| declarator_name(frag, *d))
            .map(|(n, _)| n);
        if let Some(ty) = ty {
            let anonymous = ty.field("name").is_none();
            if ty.field("body").is_some() {
                match ty.kind_name() {
                    "struct_specifier" | "class_specifier" | "union_specifier" => {
                        // `typedef struct {…} name;` names the struct `name`.
                        let alias = if anonymous { first_name.clone() } else { None };
                        self.class(frag, ty, scope, template, alias, depth);
                        if anonymous {
                            return;
                        }
                    }
                    "enum_specifier" => {
                        let alias = if anonymous { first_name.clone() } else { None };
                        self.enumeration(frag, ty, scope, alias);
                        if anonymous {
                            return;
                        }
                    }
                    _ => {}
                }
            }
        }
        for d in declarators {
            if let Some((name, _)) = declarator_name(frag, d) {
                let mut decl = self.decl_of(DeclKind::Alias, name, node, frag, scope, template);
                decl.declarator = Some(d);
                self.add(scope, decl);
            }
        }
    }

    fn class(
        &mut self,
        frag: &'u Fragment,
        node: Node<'u>,
        scope: ScopeId,
        template: Option<Node<'u>>,
        alias: Option<String>,
        depth: u32,
    ) -> Option<DeclId> {
        let name_node = node.field("name");
        let (name, specialization) = match name_node {
            Some(n) if n.kind_name() == "template_type" => (
                n.field("name").map(|x| text(frag, x).to_string()).unwrap_or_default(),
                n.field("arguments"),
            ),
            Some(n) => {
                let full = normalize(text(frag, n));
                (full.rsplit("::").next().unwrap_or(&full).to_string(), None)
            }
            None => (
                alias.unwrap_or_else(|| format!("<anonymous@{}>", node.start_byte())),
                None,
            ),
        };
        let body = node.field("body");
        let id = DeclId(self.decls.len() as u32);
        let members = self.new_scope(&name, scope, ScopeKind::Class(id));
        let mut decl = self.decl_of(DeclKind::Class, name, node, frag, scope, template);
        decl.specialization = specialization;
        decl.members = Some(members);
        decl.defined = body.is_some();
        self.add(scope, decl);
        if let Some(bases) = named_children(node)
            .into_iter()
            .find(|c| c.kind_name() == "base_class_clause")
        {
            self.bases.entry(members).or_default().push((bases, frag));
        }
        if let Some(body) = body {
            for child in named_children(body) {
                self.walk(frag, child, members, None, depth + 1);
            }
        }
        Some(id)
    }

    fn enumeration(&mut self, frag: &'u Fragment, node: Node<'u>, scope: ScopeId, alias: Option<String>) {
        let name = node
            .field("name")
            .map(|n| text(frag, n).to_string())
            .or(alias)
            .unwrap_or_else(|| format!("<enum@{}>", node.start_byte()));
        let scoped = syntax::has_token(node, "class") || syntax::has_token(node, "struct");
        let id = DeclId(self.decls.len() as u32);
        let members = self.new_scope(&name, scope, ScopeKind::Enum(id));
        let mut decl = self.decl_of(DeclKind::Enum, name, node, frag, scope, None);
        decl.members = Some(members);
        decl.defined = true;
        self.add(scope, decl);
        let Some(body) = node.field("body") else {
            return;
        };
        let enumerators: Vec<Node> = named_children(body)
            .into_iter()
            .filter(|c| c.kind_name() == "enumerator")
            .collect();
        for (i, e) in enumerators.into_iter().enumerate() {
            let Some(name) = e.field("name") else {
                continue;
            };
            let name = text(frag, name).to_string();
            let kind = DeclKind::Enumerator {
                enum_decl: id,
                index: i as u32,
            };
            let d = self.decl_of(kind, name.clone(), e, frag, scope, None);
            self.add(members, d.clone());
            if !scoped {
                self.add(scope, d);
            }
        }
    }
}

fn is_function_declarator(mut node: Node) -> bool {
    for _ in 0..16 {
        match node.kind_name() {
            "function_declarator" => return true,
            "pointer_declarator"
            | "reference_declarator"
            | "parenthesized_declarator"
            | "init_declarator"
            | "array_declarator" => {
                // `int (*f)(int)` is a variable; a pointer directly to a function
                // declarator is a function returning a pointer.
                if node.kind_name() == "parenthesized_declarator"
                    || node.kind_name() == "init_declarator"
                    || node.kind_name() == "array_declarator"
                {
                    return false;
                }
                node = match node.field("declarator") {
                    Some(d) => d,
                    None => match named_children(node).into_iter().last() {
                        Some(d) => d,
                        None => return false,
                    },
                };
            }
            _ => return false,
        }
    }
    false
}

/// A cheap filter before the query: `__global__` appears before the body.
fn header_mentions_global(frag: &Fragment, function: Node) -> bool {
    let end = function.field("body").map_or(function.end_byte(), |b| b.start_byte());
    frag.text
        .get(function.start_byte()..end)
        .is_some_and(|h| h.contains("__global__"))
}

/// Whether a function definition is a kernel: marked `__global__` among its
/// own specifiers ([`is_global`]: not inside its body), with a declarator.
/// (A tree-sitter query said the same, and cost tree-sitter 0.1 s to
/// compile in every process.)
fn is_kernel(function: Node) -> bool {
    function.field("declarator").is_some() && is_global(function)
}

/// Collapses runs of white space to one space (for showing code in reports).
pub fn normalize_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use crate::preprocess::{PpConfig, Session};
    use crate::source::SourceDb;
    use crate::syntax::{self, NodeExt};

    /// The function definitions of `src` that are kernels, by name.
    fn kernels_in(src: &str) -> Vec<String> {
        let mut db = SourceDb::new();
        let root = db.add_text("k.cu", src);
        let unit = Session::new(PpConfig::default()).preprocess(&mut db, root);
        let frag = &unit.fragments[0];
        let mut out = Vec::new();
        let mut stack = vec![syntax::tree(frag).root_node()];
        while let Some(n) = stack.pop() {
            if n.kind_name() == "function_definition" && super::is_kernel(n) {
                let declarator = n.field("declarator").expect("a declarator");
                out.push(
                    syntax::text(frag, declarator)
                        .split('(')
                        .next()
                        .unwrap_or("")
                        .to_string(),
                );
            }
            let mut cursor = n.walk();
            stack.extend(n.children(&mut cursor));
        }
        out.sort();
        out
    }

    #[test]
    fn kernels_are_the_definitions_marked_global_in_their_own_specifiers() {
        let src = "template <int N> __global__ void a(float *x) {}\n\
                   __launch_bounds__(64) static __global__ void b() {}\n\
                   __device__ void c() {}\n\
                   void host() { a<4><<<1, 32>>>(nullptr); b<<<dim3(1), 64, 0, 0>>>(); }\n\
                   __host__ __device__ void d() { const char *s = \"__global__\"; }\n";
        assert_eq!(kernels_in(src), ["a", "b"]);
    }
}
