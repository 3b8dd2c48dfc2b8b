//! Asynchronous copies in flight across barriers.
//!
//! A `cp.async` copy reads its source and writes its destination at some
//! point between its issue and the thread's next `cp.async.wait_all`. The
//! front end emits both accesses at the issue; this pass makes the rest of
//! that stretch explicit. After every barrier (`__syncthreads`, a grid
//! sync, `__syncwarp`) that a copy may still be in flight at, the copy's
//! accesses are emitted again, under a per-copy flag that the issue sets
//! and the wait clears, at the address the issue computed (kept in a
//! variable of its own). Each phase the copy spans then holds one of its
//! accesses: a pipelined load (the next tile issued, the current one
//! computed under barriers, the wait later) is ordered as it runs, and a
//! barrier placed before the wait instead of after it is a race with a
//! witness.
//!
//! A thread that returns from the kernel with a copy in flight has it land
//! while the others go on past barriers it never reaches: that `return`
//! makes the kernel's verdicts unknown. (A copy in flight when every thread
//! ends is in the last phase, where the issue placed it.)

use std::collections::BTreeSet;

use crate::hash::HashMap;
use crate::ir::{
    Access, Block, ExitKind, Expr, Kernel, LabelId, Loop, PrimKind, ScalarTy, Stmt, StmtKind, Unknown, VarId, VarInfo,
};

/// Adds the in-flight accesses of the kernel's asynchronous copies (see the
/// module's comment) and the unknowns of `return`s with copies in flight.
pub fn lower_in_flight(k: &mut Kernel) {
    let mut copies: Vec<(*const Stmt, Copy)> = Vec::new();
    collect(&k.body, &mut copies);
    if copies.is_empty() {
        return;
    }
    let index: HashMap<*const Stmt, usize> = copies.iter().enumerate().map(|(i, (s, _))| (*s, i)).collect();
    let mut walk = Walk {
        exit_label: k.exit_label,
        index: &index,
        exits: HashMap::default(),
        at: HashMap::default(),
        returns: Vec::new(),
    };
    walk.block(&k.body, BTreeSet::new());
    let (at, returns) = (walk.at, walk.returns);
    for (span, site) in returns {
        k.unknowns.push(Unknown {
            reason: "the thread may return with an asynchronous copy (`cp.async`) in flight, which lands while \
                     the other threads go on past barriers"
                .into(),
            span,
            site,
        });
    }
    // Each copy's flag and the address its issue computed.
    let mut slots: Vec<Slot> = Vec::new();
    for (_, c) in &copies {
        let flag = new_var(k, "in_flight", ScalarTy::Bool, c.span);
        let address = (!c.access.offset.is_const()).then(|| new_var(k, "in_flight_at", ScalarTy::I64, c.span));
        slots.push(Slot { flag, address });
    }
    let copies: Vec<Copy> = copies.into_iter().map(|(_, c)| c).collect();
    let rewrite = Rewrite {
        index: &index,
        at: &at,
        slots: &slots,
        copies: &copies,
    };
    let mut body = rewrite.block(&k.body);
    if let Some(first) = k.body.0.first() {
        let clear: Vec<Stmt> = slots
            .iter()
            .map(|slot| Rewrite::assign(first, slot.flag, Expr::Bool(false)))
            .collect();
        body.0.splice(0..0, clear);
    }
    k.body = body;
}

/// An asynchronous access as its issue emitted it.
struct Copy {
    access: Access,
    span: crate::source::Span,
    site: crate::source::Span,
}

/// A copy's flag (set at its issue, cleared by a wait that completes it)
/// and the variable holding the address its issue computed (none for a
/// constant one).
#[derive(Clone, Copy)]
struct Slot {
    flag: VarId,
    address: Option<VarId>,
}

fn new_var(k: &mut Kernel, name: &str, ty: ScalarTy, span: crate::source::Span) -> VarId {
    let id = VarId(k.vars.len() as u32);
    k.vars.push(VarInfo {
        name: name.to_string(),
        ty,
        span,
    });
    id
}

fn collect(b: &Block, out: &mut Vec<(*const Stmt, Copy)>) {
    for s in &b.0 {
        match &s.kind {
            StmtKind::Access(a) if a.asynchronous => out.push((
                s,
                Copy {
                    access: a.clone(),
                    span: s.span,
                    site: s.site,
                },
            )),
            StmtKind::If {
                then_block, else_block, ..
            } => {
                collect(then_block, out);
                collect(else_block, out);
            }
            StmtKind::Loop(l) => {
                collect(&l.cond_pre, out);
                collect(&l.body, out);
                collect(&l.step, out);
            }
            StmtKind::Labeled { body, .. } => collect(body, out),
            _ => {}
        }
    }
}

type InFlight = BTreeSet<usize>;

/// A forward walk whose state is the set of copies possibly in flight.
struct Walk<'a> {
    exit_label: LabelId,
    index: &'a HashMap<*const Stmt, usize>,
    /// The state at each label (`true`: a loop's `continue`), joined over
    /// the exits that reach it.
    exits: HashMap<(LabelId, bool), InFlight>,
    /// The copies in flight at each barrier and wait, joined over every
    /// time the walk passes it.
    at: HashMap<*const Stmt, InFlight>,
    returns: Vec<(crate::source::Span, crate::source::Span)>,
}

impl Walk<'_> {
    fn block(&mut self, b: &Block, mut state: InFlight) -> InFlight {
        for s in &b.0 {
            state = self.stmt(s, state);
        }
        state
    }

    fn record(&mut self, s: &Stmt, state: &InFlight) {
        self.at
            .entry(s as *const Stmt)
            .or_default()
            .extend(state.iter().copied());
    }

    fn take(&mut self, label: LabelId, cont: bool) -> InFlight {
        self.exits.remove(&(label, cont)).unwrap_or_default()
    }

    fn stmt(&mut self, s: &Stmt, mut state: InFlight) -> InFlight {
        match &s.kind {
            StmtKind::Access(a) if a.asynchronous => {
                state.insert(self.index[&(s as *const Stmt)]);
                state
            }
            StmtKind::AsyncWait => {
                self.record(s, &state);
                InFlight::new()
            }
            StmtKind::Barrier(_) => {
                self.record(s, &state);
                state
            }
            StmtKind::Primitive(p) if p.kind == PrimKind::SyncWarp => {
                self.record(s, &state);
                state
            }
            StmtKind::If {
                then_block, else_block, ..
            } => {
                let mut a = self.block(then_block, state.clone());
                a.extend(self.block(else_block, state));
                a
            }
            StmtKind::Labeled { label, body } => {
                let mut out = self.block(body, state);
                out.extend(self.take(*label, false));
                out
            }
            StmtKind::Exit { label, kind } => {
                if *label == self.exit_label && !state.is_empty() && !self.returns.contains(&(s.span, s.site)) {
                    self.returns.push((s.span, s.site));
                }
                self.exits
                    .entry((*label, *kind == ExitKind::Continue))
                    .or_default()
                    .extend(state);
                InFlight::new()
            }
            StmtKind::Loop(l) => {
                // The head's state: the entry's joined with the state after
                // each iteration, to a fixpoint (the sets only grow).
                let mut head = state;
                let mut out = InFlight::new();
                loop {
                    let tested = self.block(&l.cond_pre, head.clone());
                    let body = self.block(&l.body, tested.clone());
                    let mut into_step = body;
                    into_step.extend(self.take(l.label, true));
                    let stepped = self.block(&l.step, into_step);
                    let tested_after = self.block(&l.cond_pre, stepped.clone());
                    out.extend(tested);
                    out.extend(tested_after);
                    let mut next = head.clone();
                    next.extend(stepped);
                    if next == head {
                        break;
                    }
                    head = next;
                }
                out.extend(self.take(l.label, false));
                out
            }
            _ => state,
        }
    }
}

/// The body again with each copy's issue saving its address and setting its
/// flag, each wait clearing the flags of the copies it completes, and each
/// barrier followed by the accesses of the copies in flight there.
struct Rewrite<'a> {
    index: &'a HashMap<*const Stmt, usize>,
    at: &'a HashMap<*const Stmt, InFlight>,
    slots: &'a [Slot],
    copies: &'a [Copy],
}

impl Rewrite<'_> {
    fn block(&self, b: &Block) -> Block {
        let mut out = Vec::with_capacity(b.0.len());
        for s in &b.0 {
            self.stmt(s, &mut out);
        }
        Block(out)
    }

    fn assign(s: &Stmt, var: VarId, value: Expr) -> Stmt {
        Stmt {
            kind: StmtKind::Assign { var, value },
            span: s.span,
            site: s.site,
        }
    }

    fn stmt(&self, s: &Stmt, out: &mut Vec<Stmt>) {
        let key = s as *const Stmt;
        match &s.kind {
            StmtKind::Access(a) if a.asynchronous => {
                let slot = self.slots[self.index[&key]];
                if let Some(v) = slot.address {
                    out.push(Self::assign(s, v, a.offset.clone()));
                }
                out.push(Self::assign(s, slot.flag, Expr::Bool(true)));
                out.push(s.clone());
            }
            StmtKind::AsyncWait => {
                out.push(s.clone());
                for &c in self.at.get(&key).into_iter().flatten() {
                    out.push(Self::assign(s, self.slots[c].flag, Expr::Bool(false)));
                }
            }
            StmtKind::Barrier(_) | StmtKind::Primitive(_) => {
                out.push(s.clone());
                for &c in self.at.get(&key).into_iter().flatten() {
                    out.push(self.landing(c));
                }
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => out.push(Stmt {
                kind: StmtKind::If {
                    cond: cond.clone(),
                    then_block: self.block(then_block),
                    else_block: self.block(else_block),
                },
                ..s.clone()
            }),
            StmtKind::Loop(l) => {
                // The blocks rewritten from the kernel's own statements (the
                // index keys them by address).
                let rewritten = Loop {
                    cond_pre: self.block(&l.cond_pre),
                    body: self.block(&l.body),
                    step: self.block(&l.step),
                    cond: l.cond.clone(),
                    ..*l
                };
                out.push(Stmt {
                    kind: StmtKind::Loop(rewritten),
                    span: s.span,
                    site: s.site,
                });
            }
            StmtKind::Labeled { label, body } => out.push(Stmt {
                kind: StmtKind::Labeled {
                    label: *label,
                    body: self.block(body),
                },
                ..s.clone()
            }),
            _ => out.push(s.clone()),
        }
    }

    /// Copy `c` landing after a barrier: its access at the address its
    /// issue saved, if it is still in flight. (At the place in the
    /// source: that is the code a report points to.)
    fn landing(&self, c: usize) -> Stmt {
        let copy = &self.copies[c];
        let slot = self.slots[c];
        let access = Access {
            offset: slot.address.map_or_else(|| copy.access.offset.clone(), Expr::Var),
            // A read's value went to its variable at the issue.
            result: None,
            ..copy.access.clone()
        };
        Stmt {
            kind: StmtKind::If {
                cond: Expr::Var(slot.flag),
                then_block: Block(vec![Stmt {
                    kind: StmtKind::Access(access),
                    span: copy.span,
                    site: copy.site,
                }]),
                else_block: Block::default(),
            },
            span: copy.span,
            site: copy.site,
        }
    }
}
