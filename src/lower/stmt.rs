//! Statements and local declarations.
//!
//! Conditions that fold to constants keep only the branch taken (`if
//! constexpr` must fold). Code after an unconditional `return`, `break` or
//! `continue` is unreachable and not lowered. `switch` becomes a labelled
//! block holding a chain of `if`s, one per entry point, each running the
//! cases from there until a `break` (fallthrough is copied, not shared).

use crate::hash::HashMap;

use tree_sitter::Node;

use crate::syntax::NodeExt;

use super::call::Operand;
use super::expr::init_of;
use super::index::normalize;
use super::types::Type;
use super::value::{Binding, Place, Ptr, Value};
use super::{Lowerer, Target, TargetKind};
use crate::ir::fold;
use crate::ir::{BinOp, Block, ExitKind, Expr, Loop, ObjectKind, ScalarTy, Space, StmtKind};
use crate::syntax::{self, named_children};

/// An operand of a variable's construction that the grammar read as a
/// parameter (see `Lowerer::constructed_not_declared`).
enum Constructor<'u> {
    /// A variable's name.
    Name(Node<'u>),
    /// The product of two variables, and the whole operand.
    Product(Node<'u>, Node<'u>, Node<'u>),
}

impl<'u> Lowerer<'u> {
    pub(super) fn compound(&mut self, node: Node<'u>) {
        self.frame_mut().locals.push(HashMap::default());
        for child in named_children(node) {
            if self.dead {
                break;
            }
            self.stmt(child);
        }
        self.frame_mut().locals.pop();
    }

    /// A statement in its own scope (the body of an `if` or loop).
    fn scoped_stmt(&mut self, node: Node<'u>) {
        self.frame_mut().locals.push(HashMap::default());
        self.stmt(node);
        self.frame_mut().locals.pop();
    }

    pub(super) fn stmt(&mut self, node: Node<'u>) {
        if !self.enter(node) {
            return;
        }
        match node.kind_name() {
            "compound_statement" => self.compound(node),
            "expression_statement" => {
                for child in named_children(node) {
                    if !self.misparsed_declaration(child) {
                        self.expr(child);
                    }
                }
            }
            "declaration" => self.local_declaration(node),
            "if_statement" => self.if_stmt(node),
            "for_statement" => self.for_stmt(node),
            "while_statement" => self.while_stmt(node),
            "do_statement" => self.do_stmt(node),
            "for_range_loop" => self.range_for(node),
            "switch_statement" => self.switch_stmt(node),
            "break_statement" => self.jump(node, ExitKind::Break),
            "continue_statement" => self.jump(node, ExitKind::Continue),
            "return_statement" => self.return_stmt(node),
            "labeled_statement" | "attributed_statement" => {
                for child in named_children(node) {
                    if !matches!(child.kind_name(), "statement_identifier" | "attribute_declaration") {
                        self.stmt(child);
                    }
                }
            }
            "static_assert_declaration" => self.static_assert(node),
            "type_definition" | "alias_declaration" => self.local_alias(node),
            "using_declaration" => self.local_using(node),
            "namespace_alias_definition" => {
                if let (Some(name), Some(value)) = (node.field("name"), named_children(node).last().copied()) {
                    let path = normalize(self.text(value));
                    let parts: Vec<&str> = path.split("::").collect();
                    if let Some(s) = self.resolve_scope_path(&parts) {
                        let name = self.text(name).to_string();
                        self.bind(&name, Binding::Namespace(s));
                    }
                }
            }
            "comment" | "empty_statement" | ";" => {}
            "goto_statement" => self.unknown(node, "goto"),
            "try_statement" | "throw_statement" | "seh_try_statement" => {
                self.unknown(node, format!("`{}`", node.kind_name()))
            }
            "ERROR" => {
                let text = super::index::normalize_spaces(self.text(node));
                let short: String = text.chars().take(60).collect();
                self.unknown(node, format!("code the parser could not read: `{short}`"));
            }
            "struct_specifier" | "class_specifier" | "union_specifier" => {
                self.local_class(node);
            }
            "enum_specifier" => self.unknown(node, "enum defined inside a function"),
            other => self.unknown(node, format!("unsupported statement `{other}`")),
        }
        self.leave();
    }

    fn jump(&mut self, node: Node<'u>, kind: ExitKind) {
        let target = self
            .frame()
            .targets
            .iter()
            .rev()
            .find(|t| kind == ExitKind::Break || t.kind != TargetKind::Switch)
            .copied();
        match target {
            Some(Target {
                kind: TargetKind::Unrolled { brk, cont },
                ..
            }) => {
                let label = if kind == ExitKind::Break { brk } else { cont };
                self.emit_at(StmtKind::Exit { label, kind }, node);
                self.dead = true;
            }
            Some(t) => {
                self.emit_at(StmtKind::Exit { label: t.label, kind }, node);
                self.dead = true;
            }
            None => self.unknown(node, format!("`{}` outside a loop", self.text(node).trim())),
        }
    }

    /// The condition of an `if`/`while`/`switch` (with its optional declaration).
    fn condition(&mut self, clause: Node<'u>) -> Value {
        if let Some(init) = clause.field("initializer") {
            for child in named_children(init) {
                match child.kind_name() {
                    "declaration" => self.local_declaration(child),
                    _ => {
                        self.expr(child);
                    }
                }
            }
        }
        let Some(value) = clause.field("value") else {
            return Value::Scalar(Expr::Bool(true), Type::Bool);
        };
        if value.kind_name() == "declaration" {
            self.local_declaration(value);
            let name = value
                .field("declarator")
                .and_then(|d| super::index::declarator_name(self.frag(), d))
                .map(|(n, _)| n);
            return match name.and_then(|n| self.lookup_local(&n)) {
                Some(Binding::Place(p)) => self.read(&p, value),
                Some(Binding::Value(v)) => v,
                _ => Value::Unknown(Type::Bool),
            };
        }
        self.expr(value)
    }

    fn if_stmt(&mut self, node: Node<'u>) {
        let constexpr = syntax::has_token(node, "constexpr");
        self.frame_mut().locals.push(HashMap::default());
        let cv = match node.field("condition") {
            Some(c) => self.condition(c),
            None => Value::Scalar(Expr::Bool(true), Type::Bool),
        };
        let cond = self.truth(cv, node);
        let consequence = node.field("consequence");
        let alternative = node
            .field("alternative")
            .and_then(|e| named_children(e).first().copied());
        match cond.as_bool() {
            Some(taken) => {
                let branch = if taken { consequence } else { alternative };
                if let Some(b) = branch {
                    self.scoped_stmt(b);
                }
            }
            None => {
                // An `if constexpr` on a symbolic template parameter: both branches
                // are lowered as under a grid-uniform condition, which covers the
                // one the real instantiation keeps; what cannot compile in the other
                // (a failing `static_assert`) makes that path infeasible.
                let uniform = !constexpr && self.grid_uniform(&cond);
                if constexpr {
                    self.speculative += 1;
                }
                self.uniform_branches += uniform as u32;
                self.frame_mut().cond_depth += 1;
                let before = self.known.clone();
                let then_block = self.sub_block(|l| {
                    if let Some(b) = consequence {
                        l.scoped_stmt(b);
                    }
                });
                let then_dead = std::mem::replace(&mut self.dead, false);
                self.known = before.clone();
                let else_block = self.sub_block(|l| {
                    if let Some(b) = alternative {
                        l.scoped_stmt(b);
                    }
                });
                let else_dead = std::mem::replace(&mut self.dead, false);
                self.known = before;
                self.frame_mut().cond_depth -= 1;
                self.uniform_branches -= uniform as u32;
                if constexpr {
                    self.speculative -= 1;
                }
                if !then_block.0.is_empty() || !else_block.0.is_empty() {
                    self.emit_at(
                        StmtKind::If {
                            cond,
                            then_block,
                            else_block,
                        },
                        node,
                    );
                }
                self.dead = then_dead && else_dead;
            }
        }
        self.frame_mut().locals.pop();
    }

    /// Lowers a loop; `cond_node` is evaluated before the body (or after it).
    fn lower_loop(
        &mut self,
        node: Node<'u>,
        test_first: bool,
        cond_node: Option<Node<'u>>,
        body: Option<Node<'u>>,
        update: Option<Node<'u>>,
    ) {
        let label = self.new_label();
        self.frame_mut().cond_depth += 1;
        self.frame_mut().targets.push(Target {
            label,
            kind: TargetKind::Loop,
        });
        // Any iteration may start here: no variable is known to be constant.
        self.known = Default::default();
        let mut cond = Expr::Bool(true);
        let cond_pre = self.sub_block(|l| {
            if let Some(c) = cond_node {
                let v = if c.kind_name() == "condition_clause" {
                    l.condition(c)
                } else {
                    l.expr(c)
                };
                cond = l.truth(v, c);
            }
        });
        self.dead = false;
        let body_block = self.sub_block(|l| {
            if let Some(b) = body {
                l.scoped_stmt(b);
            }
        });
        self.dead = false;
        // `continue` reaches the step from anywhere in the body.
        self.known = Default::default();
        let step = self.sub_block(|l| {
            if let Some(u) = update {
                l.expr(u);
            }
        });
        self.dead = false;
        self.frame_mut().targets.pop();
        self.frame_mut().cond_depth -= 1;
        // A loop whose condition is false at the top never runs its body.
        if test_first && cond.as_bool() == Some(false) && cond_pre.0.is_empty() {
            return;
        }
        self.emit_at(
            StmtKind::Loop(Loop {
                label,
                test_first,
                cond_pre,
                cond,
                body: body_block,
                step,
            }),
            node,
        );
        self.known = Default::default();
    }

    /// `for (T x : {a, b, c}) body`, `for (T x : array)` over an array of a
    /// known extent (at most [`MAX_RANGE_ELEMENTS`]): the body once per
    /// element (unrolled), each iteration a labelled block that `continue`
    /// leaves.
    fn range_for(&mut self, node: Node<'u>) {
        let Some(right) = node.field("right") else {
            return;
        };
        let items: Vec<RangeItem<'u>> = if right.kind_name() == "initializer_list" {
            named_children(right).into_iter().map(RangeItem::Expr).collect()
        } else {
            let place = self.place(right);
            match self.array_elements(&place) {
                Some(elements) => elements.into_iter().map(RangeItem::Element).collect(),
                None => {
                    self.unknown(node, "range-based for loop over a container");
                    return;
                }
            }
        };
        let base = match node.field("type") {
            Some(t) => self.type_node(t),
            None => Type::Opaque("auto".into()),
        };
        let Some(declarator) = node.field("declarator") else {
            return;
        };
        let (ty, name) = self.apply_declarator(base, declarator);
        let Some(name) = name else { return };
        let brk = self.new_label();
        self.frame_mut().cond_depth += 1;
        let body_node = node.field("body");
        let outer = self.sub_block(|l| {
            for item in &items {
                let cont = l.new_label();
                l.frame_mut().targets.push(Target {
                    label: cont,
                    kind: TargetKind::Unrolled { brk, cont },
                });
                let iteration = l.sub_block(|l2| {
                    l2.frame_mut().locals.push(HashMap::default());
                    match item {
                        RangeItem::Expr(e) => l2.declare(&name, ty.clone(), Some(*e), Constness::Mutable, *e),
                        RangeItem::Element(place) => l2.declare_element(&name, &ty, place, right),
                    }
                    if let Some(b) = body_node {
                        l2.scoped_stmt(b);
                    }
                    l2.frame_mut().locals.pop();
                });
                l.dead = false;
                l.frame_mut().targets.pop();
                let at = match item {
                    RangeItem::Expr(e) => *e,
                    RangeItem::Element(_) => right,
                };
                l.emit_at(
                    StmtKind::Labeled {
                        label: cont,
                        body: iteration,
                    },
                    at,
                );
            }
        });
        self.frame_mut().cond_depth -= 1;
        self.dead = false;
        self.emit_at(
            StmtKind::Labeled {
                label: brk,
                body: outer,
            },
            node,
        );
    }

    /// `auto [a, b] = e;` / `auto &[a, b] = e;`: each name bound to a member
    /// (a struct's data members in order, a vector's `x y z w`, an array's
    /// elements) of `e` itself (a reference) or of a copy of it. `false`
    /// when `d` is not a structured binding.
    fn structured_binding(&mut self, d: Node<'u>) -> bool {
        let Some(target) = d.field("declarator").filter(|_| d.kind_name() == "init_declarator") else {
            return false;
        };
        let (by_ref, binding) = match target.kind_name() {
            "structured_binding_declarator" => (false, target),
            "reference_declarator" => match named_children(target).first() {
                Some(&b) if b.kind_name() == "structured_binding_declarator" => (true, b),
                _ => return false,
            },
            _ => return false,
        };
        let names: Vec<String> = named_children(binding)
            .into_iter()
            .map(|n| self.text(n).to_string())
            .collect();
        let Some(init) = init_of(d) else {
            self.unknown(d, "structured binding without an initializer");
            return true;
        };
        let place = self.place(init);
        let ty = place.ty().strip_ref().clone();
        let place = if by_ref {
            place
        } else {
            let v = self.read(&place, init);
            let copy = self.local_place(&names.join("_"), &ty, d);
            self.write(&copy, v, d);
            copy
        };
        let members: Option<Vec<Place>> = match &ty {
            Type::Array(_, Some(n)) if *n as usize == names.len() => self.array_elements(&place),
            _ => {
                let fields: Vec<String> = match &ty {
                    Type::Vector(v) => ["x", "y", "z", "w"]
                        .iter()
                        .take(v.n as usize)
                        .map(|f| f.to_string())
                        .collect(),
                    Type::Class(inst) => self.layout(inst).fields.iter().map(|f| f.name.clone()).collect(),
                    _ => Vec::new(),
                };
                (fields.len() == names.len())
                    .then(|| {
                        fields
                            .iter()
                            .map(|f| self.member_place(&place, f, d))
                            .collect::<Option<Vec<Place>>>()
                    })
                    .flatten()
            }
        };
        match members {
            Some(members) => {
                for (name, member) in names.iter().zip(members) {
                    self.bind(name, Binding::Place(member));
                }
            }
            None => self.unknown(d, format!("structured binding of a `{}`", ty.display())),
        }
        true
    }

    /// The elements of an array in memory of a known extent (at most
    /// [`MAX_RANGE_ELEMENTS`]), as places.
    fn array_elements(&mut self, array: &Place) -> Option<Vec<Place>> {
        let (ptr, elem, n) = match array {
            Place::Mem(ptr, Type::Array(elem, Some(n))) | Place::Temp(Value::Mem(ptr, Type::Array(elem, Some(n)))) => {
                (ptr, elem, *n)
            }
            _ => return None,
        };
        if n > MAX_RANGE_ELEMENTS {
            return None;
        }
        let first = Ptr {
            pointee: (**elem).clone(),
            ..ptr.clone()
        };
        Some(
            (0..n)
                .map(|i| {
                    let at = self.ptr_add(
                        first.clone(),
                        Expr::int(i as i128, ScalarTy::I64),
                        &Type::int(64, true),
                        false,
                    );
                    Place::Mem(at, (**elem).clone())
                })
                .collect(),
        )
    }

    /// A range-for variable bound to one array element: the element itself
    /// for a reference, else a copy of its value.
    fn declare_element(&mut self, name: &str, ty: &Type, element: &Place, node: Node<'u>) {
        if let Type::Ref(_) = ty {
            self.bind(name, Binding::Place(element.clone()));
            return;
        }
        let ty = match ty {
            Type::Opaque(n) if &**n == "auto" => element.ty(),
            t => t.clone(),
        };
        let v = self.read(element, node);
        let v = self.convert(v, &ty, node);
        let place = self.local_place(name, &ty, node);
        self.write(&place, v, node);
        self.bind(name, Binding::Place(place));
    }

    fn for_stmt(&mut self, node: Node<'u>) {
        self.frame_mut().locals.push(HashMap::default());
        if let Some(init) = node.field("initializer") {
            match init.kind_name() {
                "declaration" => self.local_declaration(init),
                _ => {
                    self.expr(init);
                }
            }
        }
        self.lower_loop(
            node,
            true,
            node.field("condition"),
            node.field("body"),
            node.field("update"),
        );
        self.frame_mut().locals.pop();
    }

    fn while_stmt(&mut self, node: Node<'u>) {
        self.frame_mut().locals.push(HashMap::default());
        self.lower_loop(node, true, node.field("condition"), node.field("body"), None);
        self.frame_mut().locals.pop();
    }

    fn do_stmt(&mut self, node: Node<'u>) {
        self.lower_loop(node, false, node.field("condition"), node.field("body"), None);
    }

    fn switch_stmt(&mut self, node: Node<'u>) {
        self.frame_mut().locals.push(HashMap::default());
        let v = match node.field("condition") {
            Some(c) => self.condition(c),
            None => Value::Void,
        };
        let (scrutinee, sty) = match v {
            Value::Scalar(e, t) => (e, t),
            _ => {
                self.unknown(node, "switch on a non-integer value");
                self.frame_mut().locals.pop();
                return;
            }
        };
        let cases: Vec<Node> = node
            .field("body")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.kind_name() == "case_statement")
            .collect();
        let label = self.new_label();
        self.frame_mut().targets.push(Target {
            label,
            kind: TargetKind::Switch,
        });
        // Case values.
        let mut values: Vec<Option<Expr>> = Vec::new();
        for c in &cases {
            match c.field("value") {
                Some(v) => {
                    let val = self.scratch_expr(v);
                    let st = sty.scalar();
                    values.push(Some(match val {
                        Value::Scalar(e, _) => self.cast(st, e),
                        _ => Expr::Bool(false),
                    }));
                }
                None => values.push(None),
            }
        }
        let st = sty.scalar();
        let matches = |e: &Option<Expr>| -> Expr {
            match e {
                Some(e) => fold::binary(BinOp::Eq, st, scrutinee.clone(), e.clone()),
                None => Expr::Bool(false),
            }
        };
        let default = values.iter().position(|v| v.is_none());
        // A constant scrutinee selects one entry.
        let constant_entry = if scrutinee.is_const() {
            values
                .iter()
                .position(|v| matches(v).as_bool() == Some(true))
                .or(default)
                .map(Some)
        } else {
            None
        };
        let body = match constant_entry {
            // One entry, taken whenever the switch is: a `return` in it is unconditional.
            Some(entry) => self.sub_block(|l| {
                if let Some(e) = entry {
                    l.cases_from(&cases, e);
                }
            }),
            None => {
                let uniform = self.grid_uniform(&scrutinee);
                self.uniform_branches += uniform as u32;
                self.frame_mut().cond_depth += 1;
                let before = self.known.clone();
                let b = self.sub_block(|l| {
                    // if (v == c0) {cases 0..} else if (v == c1) {cases 1..} … else {default..}
                    let mut chain = match default {
                        Some(d) => l.sub_block(|l2| l2.cases_from(&cases, d)),
                        None => Block::default(),
                    };
                    l.dead = false;
                    for (i, val) in values.iter().enumerate().rev() {
                        if val.is_none() {
                            continue;
                        }
                        l.known = before.clone();
                        let then_block = l.sub_block(|l2| l2.cases_from(&cases, i));
                        l.dead = false;
                        let span = l.span(cases[i]);
                        let site = l.site(span);
                        chain = Block(vec![crate::ir::Stmt {
                            kind: StmtKind::If {
                                cond: matches(val),
                                then_block,
                                else_block: chain,
                            },
                            span,
                            site,
                        }]);
                    }
                    for s in chain.0 {
                        if let Some(b) = l.blocks.last_mut() {
                            b.push(s);
                        }
                    }
                });
                self.frame_mut().cond_depth -= 1;
                self.uniform_branches -= uniform as u32;
                self.dead = false;
                self.known = before;
                b
            }
        };
        self.frame_mut().targets.pop();
        // Control continues after the switch unless the taken entry ended in an
        // unconditional return (no `break` leaves the block then).
        let mut breaks = false;
        body.walk(&mut |s| breaks |= matches!(s.kind, StmtKind::Exit { label: l, .. } if l == label));
        let ended = self.dead && !breaks;
        self.dead = false;
        if !body.0.is_empty() {
            self.emit_at(StmtKind::Labeled { label, body }, node);
        }
        self.dead = ended;
        self.frame_mut().locals.pop();
    }

    /// The statements of case `start` and the ones after it (fallthrough) until
    /// control cannot continue.
    fn cases_from(&mut self, cases: &[Node<'u>], start: usize) {
        self.frame_mut().locals.push(HashMap::default());
        for c in &cases[start..] {
            let value = c.field("value");
            for s in named_children(*c) {
                if Some(s) == value {
                    continue;
                }
                if self.dead {
                    break;
                }
                self.stmt(s);
            }
            if self.dead {
                break;
            }
        }
        self.frame_mut().locals.pop();
    }

    /// A class defined in a function body: its name denotes the class from here on.
    fn local_class(&mut self, specifier: Node<'u>) {
        let Some(&id) = self.index.local_classes.get(&specifier.id()) else {
            self.unknown(specifier, "class defined inside a function");
            return;
        };
        let ty = self.class_type(id, Vec::new());
        if let Some(name) = specifier.field("name") {
            let name = self.text(name).to_string();
            self.bind(&name, Binding::Type(ty));
        }
    }

    fn static_assert(&mut self, node: Node<'u>) {
        let Some(c) = node.field("condition") else {
            return;
        };
        let v = self.scratch_expr(c);
        let cond = self.truth(v, c);
        match cond.as_bool() {
            Some(true) => {}
            Some(false) if self.speculative > 0 => {
                self.emit_at(StmtKind::Assume(Expr::Bool(false)), node);
                self.dead = true;
            }
            // The instantiation is ill-formed: a compiler rejects it, so the
            // program never runs it (the template arguments come from our
            // reading of the host code, which can name more than it uses).
            Some(false) => {
                self.emit_at(StmtKind::Assume(Expr::Bool(false)), node);
                self.dead = true;
                self.ill_formed = Some(self.span(node));
            }
            None => self.emit_at(StmtKind::Assume(cond), node),
        }
    }

    fn local_alias(&mut self, node: Node<'u>) {
        if node.kind_name() == "alias_declaration" {
            if let (Some(name), Some(t)) = (node.field("name"), node.field("type")) {
                let ty = self.type_descriptor(t);
                let name = self.text(name).to_string();
                self.bind(&name, Binding::Type(ty));
            }
            return;
        }
        let base = match node.field("type") {
            Some(t) => self.type_node(t),
            None => return,
        };
        let mut cursor = node.walk();
        let declarators: Vec<Node> = node.children_by_field_name("declarator", &mut cursor).collect();
        for d in declarators {
            let (ty, name) = self.apply_declarator(base.clone(), d);
            if let Some(name) = name {
                self.bind(&name, Binding::Type(ty));
            }
        }
    }

    fn local_using(&mut self, node: Node<'u>) {
        let Some(target) = named_children(node).into_iter().last() else {
            return;
        };
        let path = normalize(self.text(target));
        let parts: Vec<&str> = path.split("::").collect();
        if syntax::has_token(node, "namespace") {
            if let Some(s) = self.resolve_scope_path(&parts) {
                self.frame_mut().usings.push(s);
            }
        }
    }

    /// A declaration inside a function.
    pub(super) fn local_declaration(&mut self, node: Node<'u>) {
        let mut storage: Vec<&str> = Vec::new();
        for c in named_children(node) {
            if matches!(c.kind_name(), "storage_class_specifier" | "type_qualifier") {
                storage.push(self.text(c));
            }
        }
        let has = |w: &str| storage.iter().any(|s| s.split_whitespace().any(|x| x == w));
        let shared = has("__shared__");
        let is_extern = has("extern");
        let is_static = has("static");
        let constexpr = has("constexpr") || syntax::has_token(node, "constexpr");
        let constness = if constexpr {
            Constness::Constexpr
        } else if has("const") {
            Constness::Const
        } else {
            Constness::Mutable
        };
        let Some(type_node) = node.field("type") else {
            return;
        };
        if matches!(
            type_node.kind_name(),
            "struct_specifier" | "class_specifier" | "union_specifier"
        ) && type_node.field("body").is_some()
        {
            self.local_class(type_node);
        } else if type_node.kind_name() == "enum_specifier" && type_node.field("body").is_some() {
            self.unknown(node, "enum defined inside a function");
            return;
        }
        let base = self.type_node(type_node);
        let mut cursor = node.walk();
        let declarators: Vec<Node> = node.children_by_field_name("declarator", &mut cursor).collect();
        for d in declarators {
            // `dim3 grid(n, m);` with `n`, `m` variables: C++ reads a
            // variable constructed from them, the grammar a function
            // declaration (the "most vexing parse").
            let constructed = matches!(base, Type::Class(_) | Type::Vector(_));
            if let Some((name, args)) = self.constructed_not_declared(d).filter(|_| constructed) {
                let items: Vec<Operand> = args
                    .into_iter()
                    .map(|a| match a {
                        Constructor::Name(n) => Operand::Place(self.place(n)),
                        Constructor::Product(x, y, at) => {
                            let (x, y) = (self.place(x), self.place(y));
                            let (x, y) = (self.read(&x, at), self.read(&y, at));
                            Operand::Value(self.binop("*", x, y, at))
                        }
                    })
                    .collect();
                let place = self.local_place(&name, &base, d);
                if let Type::Class(inst) = &base {
                    let inst = inst.clone();
                    self.construct_into(&place, &inst, items, d);
                } else {
                    let value = self.construct(&base, items, d);
                    self.write(&place, value, d);
                }
                self.bind(&name, Binding::Place(place));
                continue;
            }
            if self.structured_binding(d) {
                continue;
            }
            let (ty, name) = self.apply_declarator(base.clone(), d);
            let Some(name) = name else { continue };
            let init = init_of(d);
            if shared {
                let place = self.shared_decl(&name, &ty, is_extern, d);
                self.bind(&name, Binding::Place(place));
                continue;
            }
            if is_static && !constexpr {
                let span = self.span(d);
                let obj = self.new_object(&name, Space::Global, ObjectKind::GlobalVariable, &ty, span);
                let place = Place::Mem(
                    Ptr {
                        object: Some(obj),
                        offset: Expr::int(0, ScalarTy::I64),
                        pointee: ty.clone(),
                    },
                    ty.clone(),
                );
                self.bind(&name, Binding::Place(place));
                continue;
            }
            if let Type::Ref(inner) = &ty {
                let place = match init {
                    Some(i) => self.place(i),
                    None => {
                        self.unknown(d, "reference without an initializer");
                        Place::Temp(Value::Unknown((**inner).clone()))
                    }
                };
                self.bind(&name, Binding::Place(place));
                continue;
            }
            // A `constexpr` initializer is a constant context.
            if constexpr {
                self.enter_constant();
            }
            self.declare(&name, ty, init, constness, d);
            if constexpr {
                self.leave_constant();
            }
        }
    }

    /// `ns::T<32> x = v;`, `ns::T<32> x(a);`, `ns::T<32> x;` where the
    /// grammar read `(ns::T < 32) > (x = v)`: tree-sitter prefers the
    /// expression when a qualified template takes a number (the canonical
    /// `cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block)`).
    /// Declared as C++ reads it when `ns::T` names a class template, not a
    /// value; `false` (nothing done) otherwise.
    fn misparsed_declaration(&mut self, e: Node<'u>) -> bool {
        let op = |n: Node<'u>| n.field("operator").map(|o| self.text(o));
        if e.kind_name() != "binary_expression" || op(e) != Some(">") {
            return false;
        }
        let (Some(less), Some(rest)) = (e.field("left"), e.field("right")) else {
            return false;
        };
        if less.kind_name() != "binary_expression" || op(less) != Some("<") {
            return false;
        }
        let (Some(template), Some(arg)) = (less.field("left"), less.field("right")) else {
            return false;
        };
        let (name, init) = match rest.kind_name() {
            "identifier" => (rest, None),
            "assignment_expression" if op(rest) == Some("=") => match (rest.field("left"), rest.field("right")) {
                (Some(n), Some(v)) if n.kind_name() == "identifier" => (n, Some(v)),
                _ => return false,
            },
            "call_expression" => match (rest.field("function"), rest.field("arguments")) {
                (Some(n), Some(a)) if n.kind_name() == "identifier" => (n, Some(a)),
                _ => return false,
            },
            _ => return false,
        };
        let (scope, base) = match template.kind_name() {
            "qualified_identifier" => match (template.field("scope"), template.field("name")) {
                (Some(s), Some(n)) if n.kind_name() == "identifier" => (Some(s), self.text(n).to_string()),
                _ => return false,
            },
            "identifier" if self.lookup_local(self.text(template)).is_none() => (None, self.text(template).to_string()),
            _ => return false,
        };
        let Some(ty) = self.class_template_type(scope, &base, arg, template) else {
            return false;
        };
        let name = self.text(name).to_string();
        self.declare(&name, ty, init, Constness::Mutable, e);
        true
    }

    /// The name and arguments of a local "function declaration" whose
    /// parameters are all bare names of variables in scope, or products of
    /// two (`dim3 grid(n * m);` reads as a parameter `n *m`): a variable
    /// constructed from them (a function declared inside a body with
    /// parameters named like local variables does not occur in kernels'
    /// host code, and a parameter's type is never a variable).
    fn constructed_not_declared(&self, d: Node<'u>) -> Option<(String, Vec<Constructor<'u>>)> {
        if d.kind_name() != "function_declarator" {
            return None;
        }
        let name = d.field("declarator").filter(|n| n.kind_name() == "identifier")?;
        let variable = |n: Node<'u>| {
            matches!(
                self.lookup_local(self.text(n)),
                Some(Binding::Place(_) | Binding::Value(_))
            )
        };
        let mut args = Vec::new();
        for p in named_children(d.field("parameters")?) {
            let ty = p.field("type").filter(|t| t.kind_name() == "type_identifier")?;
            if p.kind_name() != "parameter_declaration" || !variable(ty) {
                return None;
            }
            match p.field("declarator") {
                None => args.push(Constructor::Name(ty)),
                Some(ptr) if ptr.kind_name() == "pointer_declarator" => {
                    let other = ptr.field("declarator").filter(|n| n.kind_name() == "identifier")?;
                    if !variable(other) || named_children(ptr).len() != 1 {
                        return None;
                    }
                    args.push(Constructor::Product(ty, other, p));
                }
                Some(_) => return None,
            }
        }
        (!args.is_empty()).then(|| (self.text(name).to_string(), args))
    }

    /// Declares a local variable with an optional initializer.
    fn declare(&mut self, name: &str, ty: Type, init: Option<Node<'u>>, constness: Constness, node: Node<'u>) {
        let auto = matches!(&ty, Type::Opaque(n) if &**n == "auto");
        let Some(init) = init else {
            if auto {
                self.unknown(node, "`auto` without an initializer");
                return;
            }
            let place = self.local_place(name, &ty, node);
            // A class runs its default constructor on the variable itself.
            if let Type::Class(inst) = &ty {
                let inst = inst.clone();
                self.construct_into(&place, &inst, Vec::new(), node);
            } else if let Place::Var(var, _) = &place {
                let span = self.span(node);
                self.emit(
                    StmtKind::Havoc {
                        var: *var,
                        reason: "uninitialized".into(),
                    },
                    span,
                );
            }
            self.bind(name, Binding::Place(place));
            return;
        };
        // `T x(args)`, `T x{args}`, `T x = {args}`, `T x = v`.
        let value = match init.kind_name() {
            "argument_list" | "initializer_list" => {
                let items: Vec<Operand> = self.operands(Some(init));
                if auto {
                    match items.into_iter().next() {
                        Some(op) => self.operand_value(op, init),
                        None => Value::Unknown(ty.clone()),
                    }
                } else if let Type::Array(..) = ty {
                    let place = self.local_place(name, &ty, node);
                    self.init_array(&place, items, init);
                    self.bind(name, Binding::Place(place));
                    return;
                } else if init.kind_name() == "initializer_list" && items.len() == 1 && ty.is_arith() {
                    let op = items.into_iter().next().expect("one item");
                    self.operand_value(op, init)
                } else if let Type::Class(inst) = &ty {
                    let is_copy = items.len() == 1 && items[0].ty().strip_ref() == &ty;
                    if !is_copy {
                        let inst = inst.clone();
                        let place = self.local_place(name, &ty, node);
                        self.construct_into(&place, &inst, items, init);
                        self.bind(name, Binding::Place(place));
                        return;
                    }
                    self.construct(&ty, items, init)
                } else {
                    self.construct(&ty, items, init)
                }
            }
            _ => self.expr(init),
        };
        if let Value::Closure(_) | Value::Func(_) = value {
            self.bind(name, Binding::Value(value));
            return;
        }
        let ty = if auto {
            match &value {
                Value::Mem(_, Type::Array(elem, _)) => Type::ptr((**elem).clone()),
                v => v.ty(),
            }
        } else {
            ty
        };
        // Compile-time constants are values, not variables.
        if constness != Constness::Mutable && ty.is_arith() {
            let v = self.convert(value.clone(), &ty, init);
            if let Value::Scalar(e, _) = &v {
                if e.is_const() || matches!(e, Expr::Sym(_)) {
                    self.bind(name, Binding::Value(v));
                    return;
                }
            }
            // A `constexpr` the front end cannot compute (a configuration
            // table it does not evaluate, a struct field it reads back
            // from memory) is still one value for the whole grid: a
            // uniform unknown, not a per-thread one.
            let computed = match &v {
                Value::Scalar(e, _) => {
                    let mut closed = true;
                    e.visit(&mut |x| closed &= !matches!(x, Expr::Var(_) | Expr::Builtin(_) | Expr::Param(_)));
                    closed
                }
                _ => false,
            };
            if constness == Constness::Constexpr && !computed {
                let s = self.constexpr_sym(name, ty.scalar(), node);
                self.bind(name, Binding::Value(Value::Scalar(Expr::Sym(s), ty)));
                return;
            }
        }
        // A fresh aggregate in local memory becomes the variable itself.
        if let Value::Mem(ptr, mty) = &value {
            let fresh = ptr.object.is_some_and(|o| {
                let obj = &self.k.objects[o.index()];
                obj.space == Space::Local && matches!(obj.kind, ObjectKind::Local { .. })
            });
            if fresh && *mty == ty {
                self.bind(name, Binding::Place(Place::Mem(ptr.clone(), mty.clone())));
                return;
            }
        }
        // An integer holding an address keeps pointing into its buffer.
        let ty = match (&ty, &value) {
            (Type::Int { .. }, Value::Ptr(p)) if p.object.is_some() => Type::ptr(Type::int(8, false)),
            _ => ty,
        };
        let place = self.local_place(name, &ty, node);
        self.write(&place, value, init);
        self.bind(name, Binding::Place(place));
    }

    /// The grid-uniform unknown of a `constexpr` local the front end cannot
    /// compute: one per declaration and template environment (an inlined
    /// helper's constant may differ between its instantiations).
    fn constexpr_sym(&mut self, name: &str, ty: ScalarTy, node: Node<'u>) -> crate::ir::SymId {
        let key = (node.id(), self.tenv_key());
        if let Some(&s) = self.constexprs.get(&key) {
            return s;
        }
        let taken = self
            .k
            .syms
            .iter()
            .filter(|s| s.name == name || s.name.starts_with(&format!("{name}'")))
            .count();
        let shown = if taken == 0 {
            name.to_string()
        } else {
            format!("{name}'{taken}")
        };
        let s = crate::ir::SymId(self.k.syms.len() as u32);
        self.k.syms.push(crate::ir::SymInfo {
            name: shown,
            ty,
            kind: crate::ir::SymKind::Constexpr,
        });
        self.constexprs.insert(key, s);
        s
    }

    /// A `__shared__` variable: one object per declaration and instantiation
    /// (an inlined helper's array is the same in every call); all `extern
    /// __shared__` arrays are the kernel's dynamic shared memory.
    fn shared_decl(&mut self, name: &str, ty: &Type, is_extern: bool, node: Node<'u>) -> Place {
        let span = self.span(node);
        let dynamic = is_extern || matches!(ty, Type::Array(_, None));
        let obj = if dynamic {
            match self.dynamic_shared {
                Some(o) => o,
                None => {
                    let o = self.new_object(name, Space::Shared, ObjectKind::DynamicShared, ty, span);
                    self.dynamic_shared = Some(o);
                    o
                }
            }
        } else {
            let key = (node.id(), self.tenv_key());
            match self.shared.get(&key) {
                Some(&o) => o,
                None => {
                    let bytes = self.size_align(ty).map(|(s, _)| Expr::int(s as i128, ScalarTy::U64));
                    let o = self.new_object(name, Space::Shared, ObjectKind::StaticShared { bytes }, ty, span);
                    self.shared.insert(key, o);
                    o
                }
            }
        };
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

/// How a local is declared: what may be assumed of its value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Constness {
    Mutable,
    Const,
    /// A compile-time constant: the same in every thread.
    Constexpr,
}

/// Most elements a range-for over an array is unrolled for (and a
/// structured binding of an array binds).
const MAX_RANGE_ELEMENTS: u64 = 64;

/// One element of a range-for: an expression of a braced list, or a place
/// in an array.
enum RangeItem<'u> {
    Expr(Node<'u>),
    Element(Place),
}
