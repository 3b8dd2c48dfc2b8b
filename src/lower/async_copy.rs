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
//! Copies complete by commit groups: `cp.async.wait_group n` completes
//! the groups before the `n` most recent, which each copy's flag follows
//! through a per-thread count of commits and the count at its issue
//! (`wait_all` is a commit and a wait for 0). A copy issued again by the
//! same code while the one before may still be in flight (a pipeline of
//! several stages) would need a variable per copy in flight: the memory
//! condition is unknown instead.
//!
//! A thread that returns from the kernel with a copy in flight has it land
//! while the others go on past barriers it never reaches: that `return`
//! makes the kernel's memory verdict unknown. (A copy in flight when every
//! thread ends is in the last phase, where the issue placed it.) These are
//! `Kernel::memory_unknowns`: participation does not depend on them.

use std::collections::{BTreeMap, BTreeSet};

use crate::hash::HashMap;
use crate::ir::fold;
use crate::ir::{
    Access, BinOp, Block, ExitKind, Expr, Kernel, LabelId, Loop, PrimKind, Primitive, ScalarTy, Stmt, StmtKind,
    Unknown, VarId,
};

/// Adds the in-flight accesses of the kernel's asynchronous copies (see the
/// module's comment) and the unknowns of `return`s with copies in flight.
pub fn lower_in_flight(k: &mut Kernel) {
    let mut copies: Vec<(*const Stmt, Copy)> = Vec::new();
    k.body.walk(&mut |s| {
        if let StmtKind::Access(a) = &s.kind {
            if a.asynchronous {
                let copy = Copy {
                    access: a.clone(),
                    span: s.span,
                    site: s.site,
                };
                copies.push((s as *const Stmt, copy));
            }
        }
    });
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
        reissued: BTreeSet::new(),
        crossed: BTreeSet::new(),
        uncommitted: HashMap::default(),
    };
    walk.block(&k.body, InFlight::new());
    let (at, returns, uncommitted) = (walk.at, walk.returns, walk.uncommitted);
    // Issued again without crossing a barrier in flight (a loop of copies
    // before one wait): the place is exact for every one of them.
    let reissued: BTreeSet<usize> = walk.reissued.intersection(&walk.crossed).copied().collect();
    for &c in &reissued {
        let copy = &copies[c].1;
        let unknown = Unknown {
            reason: "an asynchronous copy (`cp.async`) issued again while the one issued before by this code may \
                     still be in flight (a pipeline of several stages): not modelled"
                .into(),
            span: copy.span,
            site: copy.site,
        };
        // A copy's read and write share their issue's place: one report.
        if !k.memory_unknowns.contains(&unknown) {
            k.memory_unknowns.push(unknown);
        }
    }
    for (span, site) in returns {
        k.memory_unknowns.push(Unknown {
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
        let flag = k.new_var("in_flight", ScalarTy::Bool, c.span);
        let address = (!c.access.offset.is_const()).then(|| k.new_var("in_flight_at", ScalarTy::I64, c.span));
        let group = k.new_var("in_flight_group", ScalarTy::I64, c.span);
        slots.push(Slot { flag, address, group });
    }
    let copies: Vec<Copy> = copies.into_iter().map(|(_, c)| c).collect();
    let commits = k.new_var("async_commits", ScalarTy::I64, k.span);
    let rewrite = Rewrite {
        commits,
        uncommitted: &uncommitted,
        reissued: &reissued,
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
            .chain([Rewrite::assign(first, commits, Expr::int(0, ScalarTy::I64))])
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
    /// The number of the commit group the copy joins (the thread's commits
    /// before it).
    group: VarId,
}

/// The copies possibly in flight, each with whether it is surely in a
/// committed group (a wait completes only committed groups).
type InFlight = BTreeMap<usize, bool>;

/// The copies in flight on either of two paths (committed if on both).
fn join(mut a: InFlight, b: InFlight) -> InFlight {
    for (c, committed) in b {
        a.entry(c).and_modify(|x| *x &= committed).or_insert(committed);
    }
    a
}

/// A forward walk whose state is the set of copies possibly in flight.
struct Walk<'a> {
    exit_label: LabelId,
    index: &'a HashMap<*const Stmt, usize>,
    /// The state at each label (`true`: a loop's `continue`), joined over
    /// the exits that reach it.
    exits: HashMap<(LabelId, bool), InFlight>,
    /// The copies in flight at each barrier and wait, joined over every
    /// time the walk passes it.
    at: HashMap<*const Stmt, BTreeSet<usize>>,
    returns: Vec<(crate::source::Span, crate::source::Span)>,
    /// Copies issued again while one issued before by the same code may be
    /// in flight: their variables hold the latest one only (which matters
    /// only for those also in flight at a barrier: [`Self::crossed`]).
    reissued: BTreeSet<usize>,
    /// Copies possibly in flight at some barrier.
    crossed: BTreeSet<usize>,
    /// The copies in flight at each wait that may not be committed there
    /// (on some path, in some round of a loop).
    uncommitted: HashMap<*const Stmt, BTreeSet<usize>>,
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
            .extend(state.keys().copied());
    }

    fn take(&mut self, label: LabelId, cont: bool) -> InFlight {
        self.exits.remove(&(label, cont)).unwrap_or_default()
    }

    fn stmt(&mut self, s: &Stmt, mut state: InFlight) -> InFlight {
        match &s.kind {
            StmtKind::Access(a) if a.asynchronous => {
                let c = self.index[&(s as *const Stmt)];
                if state.insert(c, false).is_some() {
                    self.reissued.insert(c);
                }
                state
            }
            StmtKind::AsyncCommit => {
                state.values_mut().for_each(|c| *c = true);
                state
            }
            StmtKind::AsyncWait { groups_left } => {
                self.record(s, &state);
                // Only a wait for every group surely completes a copy.
                let unsure = self.uncommitted.entry(s as *const Stmt).or_default();
                unsure.extend(state.iter().filter(|(_, &committed)| !committed).map(|(&c, _)| c));
                if *groups_left == 0 {
                    state.retain(|_, committed| !*committed);
                }
                state
            }
            StmtKind::Barrier(_)
            | StmtKind::Primitive(Primitive {
                kind: PrimKind::SyncWarp,
                ..
            }) => {
                self.record(s, &state);
                self.crossed.extend(state.keys().copied());
                state
            }
            StmtKind::If {
                then_block, else_block, ..
            } => {
                let a = self.block(then_block, state.clone());
                let b = self.block(else_block, state);
                join(a, b)
            }
            StmtKind::Labeled { label, body } => {
                let out = self.block(body, state);
                let exits = self.take(*label, false);
                join(out, exits)
            }
            StmtKind::Exit { label, kind } => {
                if *label == self.exit_label && !state.is_empty() && !self.returns.contains(&(s.span, s.site)) {
                    self.returns.push((s.span, s.site));
                }
                let key = (*label, *kind == ExitKind::Continue);
                let before = self.exits.remove(&key).unwrap_or_default();
                self.exits.insert(key, join(before, state));
                InFlight::new()
            }
            StmtKind::Loop(l) => {
                // The head's state: the entry's joined with the state after
                // each iteration, to a fixpoint (copies only join, and
                // only lose the certainty of being committed).
                let mut head = state;
                let mut out = InFlight::new();
                loop {
                    let tested = self.block(&l.cond_pre, head.clone());
                    let body = self.block(&l.body, tested.clone());
                    let continued = self.take(l.label, true);
                    let stepped = self.block(&l.step, join(body, continued));
                    let tested_after = self.block(&l.cond_pre, stepped.clone());
                    out = join(join(out, tested), tested_after);
                    let next = join(head.clone(), stepped);
                    if next == head {
                        break;
                    }
                    head = next;
                }
                let broken = self.take(l.label, false);
                join(out, broken)
            }
            _ => state,
        }
    }
}

/// The body again with each copy's issue saving its address and setting its
/// flag, each wait clearing the flags of the copies it completes, and each
/// barrier followed by the accesses of the copies in flight there.
struct Rewrite<'a> {
    /// The thread's commits so far.
    commits: VarId,
    /// See [`Walk::uncommitted`].
    uncommitted: &'a HashMap<*const Stmt, BTreeSet<usize>>,
    /// See [`Walk::reissued`]: not emitted again (an `Unknown` instead).
    reissued: &'a BTreeSet<usize>,
    index: &'a HashMap<*const Stmt, usize>,
    at: &'a HashMap<*const Stmt, BTreeSet<usize>>,
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
                out.push(Self::assign(s, slot.group, Expr::Var(self.commits)));
                out.push(Self::assign(s, slot.flag, Expr::Bool(true)));
                out.push(s.clone());
            }
            StmtKind::AsyncCommit => {
                out.push(s.clone());
                let next = fold::binary(
                    BinOp::Add,
                    ScalarTy::I64,
                    Expr::Var(self.commits),
                    Expr::int(1, ScalarTy::I64),
                );
                out.push(Self::assign(s, self.commits, next));
            }
            StmtKind::AsyncWait { groups_left } => {
                out.push(s.clone());
                // Groups before the `groups_left` most recent complete: a
                // copy stays in flight if its group is one of those or is
                // not committed yet.
                let oldest_left = fold::binary(
                    BinOp::Sub,
                    ScalarTy::I64,
                    Expr::Var(self.commits),
                    Expr::int(*groups_left as i128, ScalarTy::I64),
                );
                let unsure = self.uncommitted.get(&key);
                for &c in self.at.get(&key).into_iter().flatten() {
                    let slot = self.slots[c];
                    // A copy surely committed, waited for with no group
                    // left, is done (said directly: a loop's rounds make
                    // the counters symbolic).
                    if *groups_left == 0 && !unsure.is_some_and(|u| u.contains(&c)) {
                        out.push(Self::assign(s, slot.flag, Expr::Bool(false)));
                        continue;
                    }
                    let left = fold::binary(BinOp::Ge, ScalarTy::I64, Expr::Var(slot.group), oldest_left.clone());
                    let still = fold::binary(BinOp::And, ScalarTy::Bool, Expr::Var(slot.flag), left);
                    out.push(Self::assign(s, slot.flag, still));
                }
            }
            StmtKind::Barrier(_) | StmtKind::Primitive(_) => {
                out.push(s.clone());
                for &c in self.at.get(&key).into_iter().flatten() {
                    if !self.reissued.contains(&c) {
                        out.push(self.landing(c));
                    }
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
