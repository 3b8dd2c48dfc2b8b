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
//! (`wait_all` is a commit and a wait for 0).
//!
//! A copy issued again by the same code while one issued before may still
//! be in flight at a barrier (a loop of chunk copies, a pipeline of several
//! stages) has many instances in flight and one slot. The slot follows one
//! instance of a per-thread choice: at each issue it either takes the new
//! instance (address, group) or keeps the one it follows. A race is a pair
//! of accesses, one instance from each thread, and some choices follow
//! exactly those two, so the one slot covers every instance; the loop
//! analysis keeps the slot's values as those of the iteration that set
//! them (`VarInfo::carried`). Such a slot is in flight while its group is
//! not below `commits - n` of the latest `wait_group n`.
//!
//! The walk keeps apart paths that took opposite arms of branches only
//! template arguments decide (`if (kStages > 1)` where the kernel is
//! checked with `kStages` symbolic): a copy issued under a condition and
//! waited for under the same one is never in flight past the wait.
//!
//! A thread that returns from the kernel with a copy in flight has it land
//! while the others go on past barriers it never reaches: before that
//! `return` the copy's access is emitted once more, *lingering*
//! (`Access::lingering`), which `passes::accesses` places in every phase
//! at or past the return's. (A copy in flight when every thread ends is in
//! the last phase, where the issue placed it.)

use std::collections::BTreeSet;

use crate::hash::{HashMap, HashSet};
use crate::ir::fold;
use crate::ir::{
    Access, BinOp, Block, ExitKind, Expr, Kernel, LabelId, Loop, PrimKind, Primitive, ScalarTy, Stmt, StmtKind, VarId,
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
    let mut inert = HashSet::default();
    for s in &k.body.0 {
        mark_inert(s, &mut inert);
    }
    let mut walk = Walk {
        atoms: Vec::new(),
        exit_label: k.exit_label,
        index: &index,
        inert: &inert,
        exits: HashMap::default(),
        limit: MAX_GROUPS,
        at: HashMap::default(),
        reissued: BTreeSet::new(),
        crossed: BTreeSet::new(),
        uncommitted: HashMap::default(),
    };
    walk.block(&k.body, Paths::start());
    let (at, uncommitted) = (walk.at, walk.uncommitted);
    // Issued again while one issued before may be in flight at a barrier
    // (a pipeline of several stages, a loop of copies before a barrier):
    // the site follows one instance of its choice (`Tracking::Followed`).
    // Issued again without crossing a barrier in flight (a loop of copies
    // before one wait), the issue's place is exact for every one of them.
    let reissued: BTreeSet<usize> = walk.reissued.intersection(&walk.crossed).copied().collect();
    let done_below = (!reissued.is_empty()).then(|| {
        let v = k.new_var("async_done_below", ScalarTy::I64, k.span);
        k.vars[v.index()].carried = true;
        v
    });
    // How each copy is tracked, and the address its issue computed.
    let mut slots: Vec<Slot> = Vec::new();
    for (i, (_, c)) in copies.iter().enumerate() {
        let address = (!c.access.offset.is_const()).then(|| k.new_var("in_flight_at", ScalarTy::I64, c.span));
        let group = k.new_var("in_flight_group", ScalarTy::I64, c.span);
        let tracking = match done_below.filter(|_| reissued.contains(&i)) {
            Some(done_below) => {
                for v in address.iter().chain([&group]) {
                    k.vars[v.index()].carried = true;
                }
                let take = k.new_var("in_flight_followed", ScalarTy::Bool, c.span);
                Tracking::Followed { take, done_below }
            }
            None => Tracking::Flag(k.new_var("in_flight", ScalarTy::Bool, c.span)),
        };
        slots.push(Slot {
            tracking,
            address,
            group,
        });
    }
    let copies: Vec<Copy> = copies.into_iter().map(|(_, c)| c).collect();
    let commits = k.new_var("async_commits", ScalarTy::I64, k.span);
    let rewrite = Rewrite {
        commits,
        done_below,
        uncommitted: &uncommitted,
        index: &index,
        at: &at,
        slots: &slots,
        copies: &copies,
    };
    let mut body = rewrite.block(&k.body);
    if let Some(first) = k.body.0.first() {
        let clear: Vec<Stmt> = slots
            .iter()
            .map(|slot| match slot.tracking {
                Tracking::Followed { .. } => Rewrite::assign(first, slot.group, Expr::int(NO_GROUP, ScalarTy::I64)),
                Tracking::Flag(flag) => Rewrite::assign(first, flag, Expr::Bool(false)),
            })
            .chain([Rewrite::assign(first, commits, Expr::int(0, ScalarTy::I64))])
            .chain(done_below.map(|v| Rewrite::assign(first, v, Expr::int(NONE_DONE, ScalarTy::I64))))
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

/// A copy's variables: how it is tracked, the address its issue computed
/// (none for a constant one) and its commit group.
#[derive(Clone, Copy)]
struct Slot {
    tracking: Tracking,
    address: Option<VarId>,
    /// The number of the commit group the copy joins (the thread's commits
    /// before it).
    group: VarId,
}

/// How a slot tells whether its copy is in flight.
#[derive(Clone, Copy)]
enum Tracking {
    /// A flag its issue sets and a wait that completes it clears.
    Flag(VarId),
    /// A site issued again while an instance issued before may be in
    /// flight at a barrier: `take` is the choice, at each issue, whether
    /// the slot follows this instance (address and group) or keeps the one
    /// it follows. A race is a pair of accesses, one instance per thread,
    /// and some choices follow exactly that instance, so one slot covers
    /// them all. In flight while its group is at or above `done_below`
    /// (`NO_GROUP`: none followed).
    Followed { take: VarId, done_below: VarId },
}

/// The group of a followed site with no instance in flight (below any wait's
/// `commits - n`).
const NO_GROUP: i128 = -(1 << 48);
/// `async_done_below` before any wait: no group has completed.
const NONE_DONE: i128 = -(1 << 47);

/// The copies possibly in flight, each with whether it is surely in a
/// committed group (a wait completes only committed groups), by copy: a
/// sorted list, as states are cloned at every branch and loop round and
/// hold a few copies.
#[derive(Clone, Debug, Default, PartialEq)]
struct InFlight(Vec<(usize, bool)>);

impl InFlight {
    fn iter(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.0.iter().copied()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Copy `c` issued (in no committed group yet); whether it was in
    /// flight already.
    fn issue(&mut self, c: usize) -> bool {
        match self.0.binary_search_by_key(&c, |&(x, _)| x) {
            Ok(at) => {
                self.0[at].1 = false;
                true
            }
            Err(at) => {
                self.0.insert(at, (c, false));
                false
            }
        }
    }

    fn commit(&mut self) {
        self.0.iter_mut().for_each(|(_, committed)| *committed = true);
    }

    /// A wait for every group: only the uncommitted copies stay.
    fn complete_committed(&mut self) {
        self.0.retain(|&(_, committed)| !committed);
    }

    /// The copies in flight on either of two paths (committed if on both).
    fn join(self, other: InFlight) -> InFlight {
        let (mut a, mut b) = (self.0.into_iter().peekable(), other.0.into_iter().peekable());
        let mut out = Vec::with_capacity(a.len().max(b.len()));
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&(x, cx)), Some(&(y, cy))) if x == y => {
                    a.next();
                    b.next();
                    (x, cx && cy)
                }
                (Some(&(x, _)), Some(&(y, _))) if x < y => a.next().expect("peeked"),
                (Some(_), Some(_)) => b.next().expect("peeked"),
                (Some(_), None) => a.next().expect("peeked"),
                (None, Some(_)) => b.next().expect("peeked"),
                (None, None) => break,
            };
            out.push(next);
        }
        InFlight(out)
    }
}

/// Outcomes of branches whose condition only template arguments decide
/// (`if constexpr (stages > 1)` in a lowering with symbolic arguments): the
/// same in every branch on it, so the walk keeps paths that took opposite
/// ones apart (a copy issued under `stages > 1` is waited for under
/// `stages > 1`, not skipped by the `stages <= 1` arm of the next branch).
/// Each condition is named by its index in [`Walk::atoms`]: paths are
/// cloned at every branch and loop round, and their conditions compared.
type Valuation = Vec<(u32, bool)>;

/// The walk's state: the paths that reach a point, grouped by the copies
/// they have in flight, each group with the template-decided outcomes all
/// its paths share. No group: no path reaches here.
#[derive(Clone, Debug, Default)]
struct Paths(Vec<(Valuation, InFlight)>);

/// Most groups a state keeps before they are joined into one.
const MAX_GROUPS: usize = 16;

impl Paths {
    fn start() -> Paths {
        Paths(vec![(Valuation::new(), InFlight::default())])
    }

    fn copies(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.0.iter().flat_map(|(_, f)| f.iter())
    }

    fn has_copies(&self) -> bool {
        self.0.iter().any(|(_, f)| !f.is_empty())
    }

    /// Paths that take the branch whose condition is `atom == value`.
    fn assume(&self, atom: u32, value: bool) -> Paths {
        let mut out = Vec::new();
        for (v, f) in &self.0 {
            match v.iter().find(|(a, _)| *a == atom) {
                Some((_, b)) if *b != value => {}
                Some(_) => out.push((v.clone(), f.clone())),
                None => {
                    let mut v = v.clone();
                    v.push((atom, value));
                    out.push((v, f.clone()));
                }
            }
        }
        Paths(out)
    }

    /// The paths of either state, groups with the same copies in flight
    /// merged (keeping the outcomes both share); past `limit` groups, one.
    fn join(mut self, other: Paths, limit: usize) -> Paths {
        for (v, f) in other.0 {
            match self.0.iter_mut().find(|(_, g)| *g == f) {
                Some((w, _)) => w.retain(|x| v.contains(x)),
                None => self.0.push((v, f)),
            }
        }
        if self.0.len() > limit {
            let mut groups = std::mem::take(&mut self.0).into_iter();
            let (mut v, mut f) = groups.next().expect("more than the limit");
            for (w, g) in groups {
                v.retain(|x| w.contains(x));
                f = f.join(g);
            }
            self.0.push((v, f));
        }
        self
    }

    /// The same paths (groups in any order).
    fn same(&self, other: &Paths) -> bool {
        self.0.len() == other.0.len() && self.0.iter().all(|g| other.0.contains(g))
    }
}

/// Whether nothing in `s` changes or reads the walk's state: no copy,
/// commit, wait, barrier or exit. Such a branch, loop or block leaves the
/// paths as they were (a template-decided branch splits them and joins them
/// back), so the walk skips it: with nested loops walked to a fixpoint
/// each, the walk took a tenth of the front end on ggml. The compound ones
/// are gathered in `inert`.
fn mark_inert(s: &Stmt, inert: &mut HashSet<*const Stmt>) -> bool {
    // Every statement is visited (no short circuit): the inert ones
    // inside a busy block are marked too.
    let all = |b: &Block, inert: &mut HashSet<*const Stmt>| {
        let mut quiet = true;
        for s in &b.0 {
            quiet &= mark_inert(s, inert);
        }
        quiet
    };
    let quiet = match &s.kind {
        StmtKind::Access(a) => !a.asynchronous,
        StmtKind::AsyncCommit | StmtKind::AsyncWait { .. } | StmtKind::Barrier(_) | StmtKind::Exit { .. } => false,
        StmtKind::Primitive(p) => !matches!(p.kind, PrimKind::SyncWarp),
        StmtKind::If {
            then_block, else_block, ..
        } => all(then_block, inert) & all(else_block, inert),
        StmtKind::Labeled { body, .. } => all(body, inert),
        StmtKind::Loop(l) => all(&l.cond_pre, inert) & all(&l.body, inert) & all(&l.step, inert),
        _ => true,
    };
    if quiet
        && matches!(
            s.kind,
            StmtKind::If { .. } | StmtKind::Labeled { .. } | StmtKind::Loop(_)
        )
    {
        inert.insert(s as *const Stmt);
    }
    quiet
}

/// `cond` as an outcome of template arguments only: the atom (comparisons
/// in one direction: `a <= b` is `!(a > b)`) and the value it must have.
fn template_atom(cond: &Expr) -> Option<(Expr, bool)> {
    // Built of constants and template symbols only, and of one at least.
    let (mut decided, mut symbolic) = (true, false);
    cond.visit(&mut |e| match e {
        Expr::Sym(_) => symbolic = true,
        Expr::Int(..) | Expr::Bool(_) | Expr::Unary(..) | Expr::Cast(..) | Expr::Binary(..) | Expr::Select(..) => {}
        _ => decided = false,
    });
    if !decided || !symbolic {
        return None;
    }
    match cond {
        Expr::Unary(crate::ir::UnOp::Not, _, a) => template_atom(a).map(|(atom, v)| (atom, !v)),
        Expr::Binary(op @ (BinOp::Le | BinOp::Ge | BinOp::Ne), ty, a, b) => {
            let flipped = op.negated()?;
            Some((Expr::Binary(flipped, *ty, a.clone(), b.clone()), false))
        }
        _ => Some((cond.clone(), true)),
    }
}

/// A forward walk whose state is the set of copies possibly in flight.
struct Walk<'a> {
    /// The template-decided conditions met so far (see [`Valuation`]).
    atoms: Vec<Expr>,
    /// Branches, loops and blocks the walk passes by (see [`mark_inert`]).
    inert: &'a HashSet<*const Stmt>,
    exit_label: LabelId,
    index: &'a HashMap<*const Stmt, usize>,
    /// The state at each label (`true`: a loop's `continue`), joined over
    /// the exits that reach it.
    exits: HashMap<(LabelId, bool), Paths>,
    /// Most groups a state keeps ([`MAX_GROUPS`]; 1 once a loop's rounds
    /// did not settle with more).
    limit: usize,
    /// The copies in flight at each barrier and wait, joined over every
    /// time the walk passes it.
    at: HashMap<*const Stmt, BTreeSet<usize>>,
    /// Copies issued again while one issued before by the same code may be
    /// in flight (followed by choice where also in flight at a barrier:
    /// [`Self::crossed`]; else the issue's place is exact for each).
    reissued: BTreeSet<usize>,
    /// Copies possibly in flight at some barrier.
    crossed: BTreeSet<usize>,
    /// The copies in flight at each wait that may not be committed there
    /// (on some path, in some round of a loop).
    uncommitted: HashMap<*const Stmt, BTreeSet<usize>>,
}

impl Walk<'_> {
    /// The name of a template-decided condition.
    fn atom(&mut self, e: Expr) -> u32 {
        match self.atoms.iter().position(|a| *a == e) {
            Some(at) => at as u32,
            None => {
                self.atoms.push(e);
                self.atoms.len() as u32 - 1
            }
        }
    }

    fn join(&self, a: Paths, b: Paths) -> Paths {
        a.join(b, self.limit)
    }

    fn block(&mut self, b: &Block, mut state: Paths) -> Paths {
        for (i, s) in b.0.iter().enumerate() {
            if self.inert.contains(&(s as *const Stmt)) {
                continue;
            }
            state = match &s.kind {
                StmtKind::Loop(l) => self.run_loop(l, state, surely_entered(&b.0[..i], l)),
                _ => self.stmt(s, state),
            };
        }
        state
    }

    fn record(&mut self, s: &Stmt, state: &Paths) {
        self.at
            .entry(s as *const Stmt)
            .or_default()
            .extend(state.copies().map(|(c, _)| c));
    }

    /// The copies of `state` in flight past `s` (a barrier, or a return
    /// they land after): where they land again, and that they crossed it.
    fn cross(&mut self, s: &Stmt, state: &Paths) {
        self.record(s, state);
        self.crossed.extend(state.copies().map(|(c, _)| c));
    }

    fn take(&mut self, label: LabelId, cont: bool) -> Paths {
        self.exits.remove(&(label, cont)).unwrap_or_default()
    }

    fn stmt(&mut self, s: &Stmt, mut state: Paths) -> Paths {
        match &s.kind {
            StmtKind::Access(a) if a.asynchronous => {
                let c = self.index[&(s as *const Stmt)];
                for (_, f) in &mut state.0 {
                    if f.issue(c) {
                        self.reissued.insert(c);
                    }
                }
                state
            }
            StmtKind::AsyncCommit => {
                for (_, f) in &mut state.0 {
                    f.commit();
                }
                state
            }
            StmtKind::AsyncWait { groups_left } => {
                self.record(s, &state);
                // Only a wait for every group surely completes a copy.
                let unsure = self.uncommitted.entry(s as *const Stmt).or_default();
                unsure.extend(state.copies().filter(|&(_, committed)| !committed).map(|(c, _)| c));
                if *groups_left == 0 {
                    for (_, f) in &mut state.0 {
                        f.complete_committed();
                    }
                }
                self.join(Paths::default(), state)
            }
            StmtKind::Barrier(_)
            | StmtKind::Primitive(Primitive {
                kind: PrimKind::SyncWarp,
                ..
            }) => {
                self.cross(s, &state);
                state
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let (then_state, else_state) = match template_atom(cond) {
                    Some((atom, value)) => {
                        let atom = self.atom(atom);
                        (state.assume(atom, value), state.assume(atom, !value))
                    }
                    None => (state.clone(), state),
                };
                let a = self.block(then_block, then_state);
                let b = self.block(else_block, else_state);
                self.join(a, b)
            }
            StmtKind::Labeled { label, body } => {
                let out = self.block(body, state);
                let exits = self.take(*label, false);
                // `continue` leaves a labelled block too: an unrolled
                // iteration (`for (x : {a, b})`).
                let continued = self.take(*label, true);
                let out = self.join(out, exits);
                self.join(out, continued)
            }
            StmtKind::Exit { label, kind } => {
                // A return with copies in flight: they land after it, as
                // after a barrier (and a copy issued again may have several
                // instances in flight there, like at a barrier).
                if *label == self.exit_label && state.has_copies() {
                    self.cross(s, &state);
                }
                let key = (*label, *kind == ExitKind::Continue);
                let before = self.exits.remove(&key).unwrap_or_default();
                let joined = self.join(before, state);
                self.exits.insert(key, joined);
                Paths::default()
            }
            StmtKind::Loop(l) => self.run_loop(l, state, false),
            _ => state,
        }
    }

    /// The state after loop `l`; `entered`: its first test surely holds, so
    /// no thread leaves before an iteration (a loop of constant bounds: its
    /// copies and waits are not skipped).
    fn run_loop(&mut self, l: &Loop, state: Paths, entered: bool) -> Paths {
        // The head's state: the entry's joined with the state after each
        // iteration, to a fixpoint (copies only join, and only lose the
        // certainty of being committed; groups of paths may split and
        // merge, so past a few rounds they are joined into one and the
        // rounds go on from there).
        let mut head = state;
        let mut out = Paths::default();
        // A `do`-`while` loop tests after its body only.
        let leaves_at_top = l.test_first && !entered;
        let mut rounds = 0;
        let outer_limit = self.limit;
        loop {
            let tested = self.block(&l.cond_pre, head.clone());
            let body = self.block(&l.body, tested.clone());
            let continued = self.take(l.label, true);
            let body = self.join(body, continued);
            let stepped = self.block(&l.step, body);
            let tested_after = self.block(&l.cond_pre, stepped.clone());
            if leaves_at_top {
                out = self.join(out, tested);
            }
            out = self.join(out, tested_after);
            let next = self.join(head.clone(), stepped);
            if next.same(&head) {
                break;
            }
            head = next;
            rounds += 1;
            if rounds == 8 {
                self.limit = 1;
                head = self.join(Paths::default(), head);
            }
        }
        self.limit = outer_limit;
        let broken = self.take(l.label, false);
        self.join(out, broken)
    }
}

/// Whether loop `l`'s first test surely holds: its condition is a constant
/// given the constants the statements just before it assign
/// (`i = 0; while (i < 4)`).
fn surely_entered(before: &[Stmt], l: &Loop) -> bool {
    if !l.test_first || !l.cond_pre.0.is_empty() {
        return false;
    }
    // The last assignment of each variable (a constant or not).
    let mut last: HashMap<VarId, Option<Expr>> = HashMap::default();
    for s in before.iter().rev() {
        let StmtKind::Assign { var, value } = &s.kind else {
            break;
        };
        last.entry(*var)
            .or_insert_with(|| value.is_const().then(|| value.clone()));
    }
    constant(&l.cond, &last).and_then(|c| c.as_bool()) == Some(true)
}

/// `e`'s value where it is a constant given the values `known`.
fn constant(e: &Expr, known: &HashMap<VarId, Option<Expr>>) -> Option<Expr> {
    let c = match e {
        Expr::Int(..) | Expr::Bool(_) => e.clone(),
        Expr::Var(v) => known.get(v)?.clone()?,
        Expr::Cast(ty, a) => fold::cast(*ty, constant(a, known)?),
        Expr::Unary(op, ty, a) => fold::unary(*op, *ty, constant(a, known)?),
        Expr::Binary(op, ty, a, b) => fold::binary(*op, *ty, constant(a, known)?, constant(b, known)?),
        _ => return None,
    };
    c.is_const().then_some(c)
}

/// The body again with each copy's issue saving its address and setting its
/// flag, each wait clearing the flags of the copies it completes, and each
/// barrier followed by the accesses of the copies in flight there.
struct Rewrite<'a> {
    /// The thread's commits so far.
    commits: VarId,
    /// The groups below it have completed (`commits - n` at the latest
    /// `wait_group n`, which under-approximates the completed groups when a
    /// later wait leaves more groups than an earlier one), where a site
    /// follows one instance of its choice.
    done_below: Option<VarId>,
    /// See [`Walk::uncommitted`].
    uncommitted: &'a HashMap<*const Stmt, BTreeSet<usize>>,
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
                let mut follow = Vec::new();
                if let Some(v) = slot.address {
                    follow.push(Self::assign(s, v, a.offset.clone()));
                }
                follow.push(Self::assign(s, slot.group, Expr::Var(self.commits)));
                match slot.tracking {
                    Tracking::Followed { take, .. } => {
                        out.push(Stmt {
                            kind: StmtKind::Choose { var: take },
                            ..s.clone()
                        });
                        out.push(Stmt {
                            kind: StmtKind::If {
                                cond: Expr::Var(take),
                                then_block: Block(follow),
                                else_block: Block::default(),
                            },
                            ..s.clone()
                        });
                    }
                    Tracking::Flag(flag) => {
                        out.extend(follow);
                        out.push(Self::assign(s, flag, Expr::Bool(true)));
                    }
                }
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
                if let Some(done) = self.done_below {
                    out.push(Self::assign(s, done, oldest_left.clone()));
                }
                let unsure = self.uncommitted.get(&key);
                for &c in self.at.get(&key).into_iter().flatten() {
                    let slot = self.slots[c];
                    // A copy surely committed, waited for with no group
                    // left, is done (said directly: a loop's rounds make
                    // the counters symbolic).
                    let done = *groups_left == 0 && !unsure.is_some_and(|u| u.contains(&c));
                    match slot.tracking {
                        // The address too, so that a loop sees both set
                        // together (`passes::accesses`, set_earlier).
                        Tracking::Followed { .. } if done => {
                            out.push(Self::assign(s, slot.group, Expr::int(NO_GROUP, ScalarTy::I64)));
                            if let Some(v) = slot.address {
                                out.push(Self::assign(s, v, Expr::int(0, ScalarTy::I64)));
                            }
                        }
                        // `done_below` says it.
                        Tracking::Followed { .. } => {}
                        Tracking::Flag(flag) if done => out.push(Self::assign(s, flag, Expr::Bool(false))),
                        Tracking::Flag(flag) => {
                            let left =
                                fold::binary(BinOp::Ge, ScalarTy::I64, Expr::Var(slot.group), oldest_left.clone());
                            let still = fold::binary(BinOp::And, ScalarTy::Bool, Expr::Var(flag), left);
                            out.push(Self::assign(s, flag, still));
                        }
                    }
                }
            }
            StmtKind::Barrier(_) | StmtKind::Primitive(_) => {
                out.push(s.clone());
                for &c in self.at.get(&key).into_iter().flatten() {
                    out.push(self.landing(c, false));
                }
            }
            // Copies in flight at a return land at any later point.
            StmtKind::Exit { .. } => {
                for &c in self.at.get(&key).into_iter().flatten() {
                    out.push(self.landing(c, true));
                }
                out.push(s.clone());
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

    /// Copy `c` landing after a barrier, or `lingering` past a return: its
    /// access at the address its issue saved, if it is still in flight.
    /// (At the issue's place in the source: that is the code a report
    /// points to.)
    fn landing(&self, c: usize, lingering: bool) -> Stmt {
        let copy = &self.copies[c];
        let slot = self.slots[c];
        let access = Access {
            offset: slot.address.map_or_else(|| copy.access.offset.clone(), Expr::Var),
            // A read's value went to its variable at the issue.
            result: None,
            lingering,
            ..copy.access.clone()
        };
        let in_flight = match slot.tracking {
            Tracking::Followed { done_below, .. } => {
                fold::binary(BinOp::Ge, ScalarTy::I64, Expr::Var(slot.group), Expr::Var(done_below))
            }
            Tracking::Flag(flag) => Expr::Var(flag),
        };
        Stmt {
            kind: StmtKind::If {
                cond: in_flight,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{FileId, Span};

    fn stmt(kind: StmtKind) -> Stmt {
        let span = Span::new(FileId(0), 0, 0);
        Stmt { kind, span, site: span }
    }

    fn assign(v: u32, value: Expr) -> Stmt {
        stmt(StmtKind::Assign { var: VarId(v), value })
    }

    /// `while (v0 < 4)`.
    fn below_four() -> Loop {
        Loop {
            label: LabelId(1),
            test_first: true,
            cond_pre: Block::default(),
            cond: Expr::Binary(
                BinOp::Lt,
                ScalarTy::I32,
                Box::new(Expr::Var(VarId(0))),
                Box::new(Expr::int(4, ScalarTy::I32)),
            ),
            body: Block::default(),
            step: Block::default(),
        }
    }

    #[test]
    fn a_loop_is_surely_entered_only_from_the_last_constant_its_variable_got() {
        let zero = Expr::int(0, ScalarTy::I32);
        let l = below_four();
        assert!(surely_entered(&[assign(0, zero.clone())], &l));
        // A later assignment that is not a constant hides the constant.
        let later = [assign(0, zero.clone()), assign(0, Expr::Param(0))];
        assert!(!surely_entered(&later, &l));
        // The constant does not satisfy the test.
        assert!(!surely_entered(&[assign(0, Expr::int(9, ScalarTy::I32))], &l));
        // Anything else between the assignment and the loop ends the search.
        let barrier_between = [assign(0, zero.clone()), stmt(StmtKind::AsyncCommit)];
        assert!(!surely_entered(&barrier_between, &l));
        // A `do`-`while` loop leaves after its body anyway.
        let do_while = Loop {
            test_first: false,
            ..below_four()
        };
        assert!(!surely_entered(&[assign(0, zero)], &do_while));
    }
}
