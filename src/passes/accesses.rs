//! Kernel IR → access model: symbolic execution of one generic thread.
//!
//! The thread's state is a path condition and a term per variable, plus three
//! barrier counters (the phases). Branches run both arms and merge with
//! `c ? a : b`; `break`/`continue`/`return` park their state at their label and
//! rejoin there. Every access is recorded with its offset, path condition and
//! phase.
//!
//! Loops are not unrolled. A loop gets an iteration count `k` (a per-thread
//! symbol, `k ≥ 0`); its body runs once with every variable it assigns
//! standing for "the value at the top of iteration k" (a placeholder). From
//! the value at the end of the iteration each variable gets a closed form in
//! `k`: unchanged, affine (`v0 + k*d`), halving or doubling (`v0 >> k`,
//! `v0 / 2^k`, `v0 << k`), else a fresh per-thread symbol. The barrier
//! counters are variables like any other, so a loop holding a barrier gives
//! phase `p0 + k*B + local`, and phase equality between two threads aligns
//! their iterations: the stretch after the last barrier of iteration k and
//! the stretch before the first barrier of iteration k+1 get the same phase
//! (the loop-carried phase). The loop is left in iteration `N` (a symbol that
//! threads of a block share when the loop holds a block barrier).
//!
//! Everything here over-approximates the thread's behaviours: a symbol can
//! take any value its facts allow. That is what makes a `pass` sound.

use crate::hash::{HashMap, HashSet};

use crate::ir::access::{AccessModel, AccessRecord, Group, LoopRecord, Origin, Phase, Scope, Symbol, SyncRecord};
use crate::ir::term::{SymbolId, Term, TermKind, Terms};
use crate::ir::{
    Access, BarrierScope, BinOp, Block, Builtin, ExitKind, Expr, Kernel, LabelId, Loop, ObjectKind, PrimKind,
    Primitive, ScalarTy, ShuffleKind, Space, Stmt, StmtKind, VarId,
};
use crate::source::Span;

/// The slots of the barrier counters, after the kernel's variables.
const PHASES: usize = 3;
const BLOCK: usize = 0;
const WARP: usize = 1;
const GRID: usize = 2;
/// The counters' type: they never wrap.
const PHASE_TY: ScalarTy = ScalarTy::I64;
/// Loop counters: `0 ≤ k < 2^31` (an assumption shown in `grammar/SUBSET.md`).
pub const COUNTER_TY: ScalarTy = ScalarTy::I64;

/// The choices a loop's values set in an earlier iteration share (see
/// `Exec::set_earlier`): for the previous iteration, the free choices taken
/// afresh; under each list of conditions (by term), whether and in which
/// iteration they were set, with the free choices taken afresh for it.
#[derive(Default)]
struct Earlier {
    previous: HashMap<SymbolId, Term>,
    chosen: HashMap<Vec<u32>, (Term, Term, HashMap<SymbolId, Term>)>,
}

/// How much of the model existed when a loop started: what its closing rewrites.
struct Marks {
    records: usize,
    symbols: usize,
    syncs: usize,
    loops: usize,
}

#[derive(Clone)]
struct State {
    pc: Term,
    /// When the thread is here, for the participation condition: the path
    /// condition without the exit facts of the loops before (`cond(N)` is
    /// false at a thread's own exit count `N`, a fact that cannot be negated
    /// for another thread). After a loop it is the loop's entry condition:
    /// threads that leave past the loop are the loop record's obligation.
    reach: Term,
    /// The branches that decide `reach`, outermost first: (the `if`, its
    /// condition). Only for explaining a divergent collective: the witness
    /// names the first whose condition differs between its two threads.
    guards: Vec<(Span, Term)>,
    /// One slot per kernel variable, then the phases.
    vars: Vec<Option<Term>>,
}

/// Builds the access model of one kernel instantiation; `facts` (over
/// parameters and launch dimensions) hold for the launch checked.
/// `lanes_along_x`: the launch's warps are runs of `threadIdx.x` (the lane
/// is `threadIdx.x % warp_size`; see `Shape::lanes_along_x`), which lane
/// reductions need (see `Exec::lane_determined`).
pub fn build(kernel: &Kernel, warp_size: u32, facts: &[crate::ir::LaunchFact], lanes_along_x: bool) -> AccessModel {
    let mut exec = Exec {
        kernel,
        lanes_along_x,
        exchanges: HashMap::default(),
        model: AccessModel {
            terms: Terms::new(),
            symbols: Vec::new(),
            records: Vec::new(),
            syncs: Vec::new(),
            loops: Vec::new(),
            assumptions: Vec::new(),
            promises: Vec::new(),
            evaluated: Vec::new(),
            warp_size,
            unknowns: Vec::new(),
            no_wrap: HashSet::default(),
            assumed: Vec::new(),
            read_only: read_only_objects(kernel),
            units: vec![1; kernel.objects.len()],
        },
        loops: Vec::new(),
        parked: Default::default(),
        fits: Vec::new(),
        chosen: Vec::new(),
        choice_of: HashMap::default(),
    };
    let t = &mut exec.model.terms;
    let zero = t.int(0, PHASE_TY);
    let mut vars = vec![None; kernel.vars.len() + PHASES];
    for slot in 0..PHASES {
        vars[kernel.vars.len() + slot] = Some(zero.clone());
    }
    let mut state = State {
        pc: t.bool(true),
        reach: t.bool(true),
        guards: Vec::new(),
        vars,
    };
    for f in facts {
        let t = exec.eval(&mut state, &f.expr);
        let t = exec.terms().cast(ScalarTy::Bool, t);
        if f.evaluated {
            exec.model.evaluated.push(t.clone());
        }
        exec.model.assumptions.push(t);
    }
    exec.block(&mut state, &kernel.body);
    // Threads wait at a label until the construct it names gathers them;
    // only those that left the kernel itself (`return`) may remain. Any
    // other would be executions the model lost: say so rather than check
    // what is left.
    let lost = exec
        .parked
        .iter()
        .any(|(&(label, _), states)| label != kernel.exit_label && !states.is_empty());
    if lost {
        exec.model.unknowns.push((
            "control flow the model could not follow (a jump to a label it never reached)".into(),
            kernel.span,
        ));
    }
    exec.model
}

struct Exec<'k> {
    kernel: &'k Kernel,
    /// The launch lays warps along `threadIdx.x` (see [`build`]).
    lanes_along_x: bool,
    /// The value and lane mask of each full-warp `__shfl_xor_sync` result
    /// (by symbol): a loop of them may be a warp's all-reduction
    /// (`Exec::all_reduction`).
    exchanges: HashMap<SymbolId, (Term, Term)>,
    model: AccessModel,
    /// Counters of the loops being executed, outermost first.
    loops: Vec<SymbolId>,
    /// States waiting at a label: (label, is a `continue`).
    parked: std::collections::BTreeMap<(LabelId, bool), Vec<State>>,
    /// Facts of the loop being closed: its signed counters fit their type,
    /// and its values set in an earlier iteration were set in one.
    fits: Vec<Term>,
    /// Each choice of a value set in an earlier iteration (`set_earlier`):
    /// whether it was set, in which iteration, and the fact relating them
    /// (after the loop that made it has closed, at its exit), so that an
    /// enclosing loop can take it afresh for an earlier iteration of its
    /// own; `choice_of` finds one by either of its symbols.
    chosen: Vec<(Term, Term, Term)>,
    choice_of: HashMap<SymbolId, usize>,
}

/// Objects no statement of `kernel` writes: neither an access to them nor a
/// write through a pointer the lowering could not trace into their memory
/// space. (A kernel with an unmodelled statement that may write is partial,
/// and passes nothing; pointer parameters are assumed not to alias, as
/// everywhere.) Threads that load one address of such an object read one
/// value.
fn read_only_objects(kernel: &Kernel) -> Vec<bool> {
    let mut read_only = vec![true; kernel.objects.len()];
    let mut untraced_writes = Vec::new();
    kernel.body.walk(&mut |s| {
        if let StmtKind::Access(a) = &s.kind {
            if a.kind.writes() {
                read_only[a.object.index()] = false;
                let o = &kernel.objects[a.object.index()];
                if o.kind == ObjectKind::Untraced {
                    untraced_writes.push(o.space);
                }
            }
        }
    });
    for (i, o) in kernel.objects.iter().enumerate() {
        if o.kind == ObjectKind::Untraced || untraced_writes.contains(&o.space) {
            read_only[i] = false;
        }
    }
    read_only
}

impl<'k> Exec<'k> {
    fn terms(&mut self) -> &mut Terms {
        &mut self.model.terms
    }

    fn phase_slot(&self, which: usize) -> usize {
        self.kernel.vars.len() + which
    }

    fn slot_ty(&self, slot: usize) -> ScalarTy {
        self.kernel.vars.get(slot).map_or(PHASE_TY, |v| v.ty)
    }

    fn slot_name(&self, slot: usize) -> String {
        match self.kernel.vars.get(slot) {
            Some(v) => v.name.clone(),
            None => ["block phase", "warp phase", "grid phase"][slot - self.kernel.vars.len()].into(),
        }
    }

    /// Binds `var` to a fresh symbol named after it.
    fn bind_fresh(&mut self, st: &mut State, var: VarId, scope: Scope, origin: Origin, span: Span) -> Term {
        let info = &self.kernel.vars[var.index()];
        let (name, ty) = (info.name.clone(), info.ty);
        let t = self.new_symbol(name, ty, scope, origin, span);
        st.vars[var.index()] = Some(t.clone());
        t
    }

    fn new_symbol(&mut self, name: String, ty: ScalarTy, scope: Scope, origin: Origin, span: Span) -> Term {
        let id = SymbolId(self.model.symbols.len() as u32);
        self.model.symbols.push(Symbol {
            name: format!("{name}#{}", id.0),
            ty,
            scope,
            origin,
            deps: self.loops.clone(),
            span,
        });
        self.model.terms.symbol(id, ty)
    }

    fn var(&mut self, st: &mut State, v: VarId) -> Term {
        if let Some(t) = &st.vars[v.index()] {
            return t.clone();
        }
        let span = self.kernel.vars[v.index()].span;
        let origin = Origin::Input {
            reason: "uninitialised".into(),
        };
        self.bind_fresh(st, v, Scope::Thread, origin, span)
    }

    fn eval(&mut self, st: &mut State, e: &Expr) -> Term {
        match e {
            Expr::Int(v, ty) => self.terms().int(*v, *ty),
            Expr::Bool(b) => self.terms().bool(*b),
            Expr::Float(f) => self.terms().float(*f, ScalarTy::Float(crate::ir::FloatKind::F32)),
            Expr::Var(v) => self.var(st, *v),
            Expr::Builtin(Builtin::WarpSize) => {
                let w = self.model.warp_size as i128;
                self.terms().int(w, ScalarTy::I32)
            }
            Expr::Builtin(b) => self.terms().builtin(*b),
            Expr::Param(i) => {
                let ty = self.kernel.params.get(*i as usize).map_or(ScalarTy::I64, |p| p.ty);
                self.terms().param(*i, ty)
            }
            Expr::Sym(s) => {
                let ty = self.kernel.syms.get(s.index()).map_or(ScalarTy::I64, |i| i.ty);
                self.terms().sym(*s, ty)
            }
            Expr::Unary(op, ty, a) => {
                let a = self.eval(st, a);
                self.terms().unary(*op, *ty, a)
            }
            Expr::Binary(op, ty, a, b) => {
                let a = self.eval(st, a);
                let b = self.eval(st, b);
                self.terms().binary(*op, *ty, a, b)
            }
            Expr::Select(c, a, b) => {
                let c = self.eval(st, c);
                let a = self.eval(st, a);
                let b = self.eval(st, b);
                self.terms().select(c, a, b)
            }
            Expr::Cast(ty, a) => {
                let a = self.eval(st, a);
                self.terms().cast(*ty, a)
            }
            Expr::Opaque(op, ty, args) => {
                let args = args.iter().map(|a| self.eval(st, a)).collect();
                self.terms().opaque(*op, *ty, args)
            }
        }
    }

    fn assign(&mut self, st: &mut State, v: VarId, t: Term) {
        let ty = self.kernel.vars[v.index()].ty;
        let t = self.terms().cast(ty, t);
        st.vars[v.index()] = Some(t);
    }

    fn block(&mut self, st: &mut State, b: &Block) {
        for s in &b.0 {
            if st.pc.is_false() {
                return;
            }
            self.stmt(st, s);
        }
    }

    fn stmt(&mut self, st: &mut State, s: &Stmt) {
        match &s.kind {
            StmtKind::Assign { var, value } => {
                let t = self.eval(st, value);
                self.assign(st, *var, t);
            }
            StmtKind::Havoc { var, reason } => {
                let origin = Origin::Input { reason: reason.clone() };
                self.bind_fresh(st, *var, Scope::Thread, origin, s.span);
            }
            StmtKind::Choose { var } => {
                self.bind_fresh(st, *var, Scope::Thread, Origin::Choice, s.span);
            }
            StmtKind::Access(a) => self.access(st, a, s),
            StmtKind::Barrier(b) => {
                let group = match b.scope {
                    BarrierScope::Block => Group::Block,
                    BarrierScope::Grid => Group::Grid,
                };
                self.sync(st, b.name.clone(), group, None, s);
                let slots: &[usize] = match b.scope {
                    BarrierScope::Block => &[BLOCK, WARP],
                    BarrierScope::Grid => &[BLOCK, WARP, GRID],
                };
                for &which in slots {
                    self.bump(st, which);
                }
                if let Some((_, var)) = &b.predicate {
                    let origin = Origin::Collective {
                        name: b.name.clone(),
                        operand: None,
                    };
                    self.bind_fresh(st, *var, Scope::Block, origin, s.span);
                }
            }
            StmtKind::Primitive(p) => self.primitive(st, p, s),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.eval(st, cond);
                let c = self.terms().cast(ScalarTy::Bool, c);
                let (pc, reach) = (st.pc.clone(), st.reach.clone());
                let guards = st.guards.clone();
                st.guards.push((s.span, c.clone()));
                let mut then_st = st.clone();
                then_st.pc = self.terms().and(pc.clone(), c.clone());
                then_st.reach = self.terms().and(reach.clone(), c.clone());
                let (then_pc, then_reach) = (then_st.pc.clone(), then_st.reach.clone());
                self.block(&mut then_st, then_block);
                let nc = self.terms().not(c.clone());
                st.pc = self.terms().and(pc.clone(), nc.clone());
                st.reach = self.terms().and(reach.clone(), nc);
                let (else_pc, else_reach) = (st.pc.clone(), st.reach.clone());
                self.block(st, else_block);
                let else_st = std::mem::replace(st, then_st.clone());
                let whole = then_st.pc.id == then_pc.id && else_st.pc.id == else_pc.id;
                let whole_reach = then_st.reach.id == then_reach.id && else_st.reach.id == else_reach.id;
                *st = self.merge_two(c.clone(), then_st, else_st);
                st.guards = guards;
                if !whole_reach {
                    // Some threads left in a branch: the branch decides who is here.
                    st.guards.push((s.span, c));
                }
                if whole {
                    st.pc = pc;
                }
                if whole_reach && !st.pc.is_false() {
                    st.reach = reach;
                }
            }
            StmtKind::Loop(l) => self.run_loop(st, l, s),
            StmtKind::Labeled { label, body } => {
                // The block runs under `true`, its entry condition added
                // afterwards (as a loop's body does): the ways out of it
                // are then told apart by the block's own branches only. A
                // value merged over them (an inlined function's result,
                // returned in several places) selects by those branches,
                // not by everything the thread passed before the call, so
                // it is as uniform as what the function computes from.
                let rec_mark = self.model.records.len();
                let promise_mark = self.model.promises.len();
                let parked_marks = self.parked_marks();
                let entry_pc = std::mem::replace(&mut st.pc, self.model.terms.bool(true));
                self.block(st, body);
                // Threads that left the block by `break`/`return`, and by
                // `continue`: an unrolled iteration (`for (x : {a, b})`) is
                // a labelled block that `continue` leaves.
                let mut states = self.parked.remove(&(*label, false)).unwrap_or_default();
                states.extend(self.parked.remove(&(*label, true)).unwrap_or_default());
                if !states.is_empty() {
                    states.push(std::mem::replace(st, self.dead(st)));
                    *st = self.merge_many(states);
                }
                st.pc = self.terms().and(entry_pc.clone(), st.pc.clone());
                self.enter_since(&entry_pc, None, rec_mark, &parked_marks);
                // A promise made inside holds where the block was entered.
                let t = &mut self.model.terms;
                let away = t.not(entry_pc);
                for p in &mut self.model.promises[promise_mark..] {
                    *p = t.or(away.clone(), p.clone());
                }
            }
            StmtKind::Exit { label, kind } => {
                let key = (*label, *kind == ExitKind::Continue);
                self.parked.entry(key).or_default().push(st.clone());
                st.pc = self.terms().bool(false);
                st.reach = self.terms().bool(false);
            }
            StmtKind::Assume(e) | StmtKind::Promise(e) => {
                let c = self.eval(st, e);
                let c = self.terms().cast(ScalarTy::Bool, c);
                if matches!(s.kind, StmtKind::Promise(_)) {
                    // Wherever the thread gets here, the fact holds.
                    let pc = st.pc.clone();
                    let away = self.terms().not(pc);
                    let kept = self.terms().or(away, c.clone());
                    self.model.promises.push(kept);
                }
                let pc = st.pc.clone();
                st.pc = self.terms().and(pc, c.clone());
                let reach = st.reach.clone();
                st.reach = self.terms().and(reach, c);
            }
            StmtKind::Unknown { .. } | StmtKind::AsyncCommit | StmtKind::AsyncWait { .. } => {}
        }
    }

    /// How many threads are parked at each label so far: what a block or
    /// loop run from here adds is past these marks.
    fn parked_marks(&self) -> HashMap<(LabelId, bool), usize> {
        self.parked.iter().map(|(k, v)| (*k, v.len())).collect()
    }

    /// Adds the entry condition `pc` (and `reach`) of a block or loop body
    /// that ran under `true` to what it made: its records, and the threads
    /// it parked at labels outside it (they left from inside it).
    fn enter_since(
        &mut self,
        pc: &Term,
        reach: Option<&Term>,
        rec_mark: usize,
        parked_marks: &HashMap<(LabelId, bool), usize>,
    ) {
        let t = &mut self.model.terms;
        for r in &mut self.model.records[rec_mark..] {
            r.pc = t.and(pc.clone(), r.pc.clone());
        }
        for (key, states) in self.parked.iter_mut() {
            let from = parked_marks.get(key).copied().unwrap_or(0);
            for p in states.iter_mut().skip(from) {
                p.pc = t.and(pc.clone(), p.pc.clone());
                if let Some(reach) = reach {
                    p.reach = t.and(reach.clone(), p.reach.clone());
                }
            }
        }
    }

    fn dead(&mut self, st: &State) -> State {
        State {
            pc: self.terms().bool(false),
            reach: self.terms().bool(false),
            guards: st.guards.clone(),
            vars: st.vars.clone(),
        }
    }

    fn bump(&mut self, st: &mut State, which: usize) {
        let slot = self.phase_slot(which);
        let cur = st.vars[slot].clone().expect("phases are initialised");
        let one = self.terms().int(1, PHASE_TY);
        st.vars[slot] = Some(self.terms().binary(BinOp::Add, PHASE_TY, cur, one));
    }

    fn phase(&self, st: &State) -> Phase {
        let get = |w: usize| st.vars[self.phase_slot(w)].clone().expect("phases are initialised");
        Phase {
            block: get(BLOCK),
            warp: get(WARP),
            grid: get(GRID),
        }
    }

    /// The phases of a copy that lands after its thread returned
    /// (`Access::lingering`): each counter here plus a fresh amount
    /// `≥ 0`, one per record, since the others go on past barriers.
    fn lingering_phase(&mut self, st: &State, span: Span) -> Phase {
        let here = self.phase(st);
        let later = |this: &mut Self, at: Term, what: &str| {
            let origin = Origin::Progress {
                var: format!("{what} phase at landing"),
                advance: None,
                exit_of: None,
            };
            let past = this.new_symbol(format!("landing.{what}"), PHASE_TY, Scope::Thread, origin, span);
            this.terms().binary(BinOp::Add, PHASE_TY, at, past)
        };
        Phase {
            block: later(self, here.block, "block"),
            warp: later(self, here.warp, "warp"),
            grid: later(self, here.grid, "grid"),
        }
    }

    fn access(&mut self, st: &mut State, a: &Access, s: &Stmt) {
        let mut pc = st.pc.clone();
        for r in &a.ranges {
            let ty = self.kernel.vars[r.var.index()].ty;
            let sym = self.bind_fresh(st, r.var, Scope::Thread, Origin::Range, s.span);
            let lo = self.eval(st, &r.lo);
            let hi = self.eval(st, &r.hi);
            let t = self.terms();
            let ge = t.binary(BinOp::Ge, ty, sym.clone(), lo);
            let lt = t.binary(BinOp::Lt, ty, sym, hi);
            let within = t.and(ge, lt);
            pc = t.and(pc, within);
        }
        let offset = self.eval(st, &a.offset);
        let offset = self.terms().cast(ScalarTy::I64, offset);
        let width = self.eval(st, &a.width);
        let width = self.terms().cast(ScalarTy::I64, width);
        let object = &self.kernel.objects[a.object.index()];
        let shared = !matches!(object.space, Space::Local);
        if shared && !pc.is_false() && (object.space != Space::Constant || a.kind.writes()) {
            let phase = if a.lingering {
                self.lingering_phase(st, s.span)
            } else {
                self.phase(st)
            };
            self.model.records.push(AccessRecord {
                object: a.object,
                kind: a.kind,
                offset: offset.clone(),
                width: width.clone(),
                pc,
                phase,
                collective: a.collective,
                lingering: a.lingering,
                exchange: a.exchange,
                loops: self.loops.clone(),
                span: s.span,
                site: s.site,
            });
        }
        if let Some(var) = a.result {
            let origin = if shared {
                Origin::Load {
                    object: a.object,
                    offset,
                    width,
                }
            } else {
                Origin::Input {
                    reason: "read from a local array".into(),
                }
            };
            self.bind_fresh(st, var, Scope::Thread, origin, s.span);
        }
    }

    /// Whether every warp of the block computes `t` alike, lane by lane: `t`
    /// reads only values the block shares, the lane (`threadIdx.x % d`, `d`
    /// dividing the warp size: the lane where warps run along `x`, as
    /// `lanes_along_x` says of the launch) and loads from such
    /// addresses in the loop iterations of here (threads that load one
    /// address between the same barriers see one value unless they race:
    /// `AccessModel::lane_reductions_read_written`).
    fn lane_determined(&self, t: &Term, memo: &mut HashMap<u32, bool>) -> bool {
        if let Some(&v) = memo.get(&t.id) {
            return v;
        }
        let w = self.model.warp_size as i128;
        let divides = |d: Option<i128>| d.filter(|d| *d > 0 && w % d == 0);
        let v = matches!(
            self.scope_of(t, &HashMap::default(), &self.loops),
            Scope::Block | Scope::Grid
        ) || match &t.kind {
            TermKind::Binary(BinOp::Rem, ty, a, b) if ty.is_int() => {
                divides(b.as_int()).is_some() && self.lane_index(a, matches!(ty, ScalarTy::Int { signed: true, .. }))
            }
            TermKind::Binary(BinOp::BitAnd, ty, a, b) if ty.is_int() => {
                let mask = |m: &Term| {
                    divides(
                        m.as_int()
                            .filter(|m| *m >= 0)
                            .map(|m| m + 1)
                            .filter(|d| d & (d - 1) == 0),
                    )
                };
                mask(b).is_some() && self.lane_index(a, false) || mask(a).is_some() && self.lane_index(b, false)
            }
            TermKind::Symbol(s) => {
                let info = self.model.symbol(*s);
                match &info.origin {
                    // Not an atomic's result: atomics on one address return
                    // different values without racing.
                    Origin::Load { object, offset, width } => {
                        info.deps.iter().all(|d| self.loops.contains(d))
                            && !self
                                .model
                                .records
                                .iter()
                                .any(|r| r.object == *object && matches!(r.kind, crate::ir::AccessKind::Atomic(_)))
                            && self.lane_determined(offset, memo)
                            && self.lane_determined(width, memo)
                    }
                    _ => false,
                }
            }
            _ => !t.children().is_empty() && t.children().into_iter().all(|c| self.lane_determined(c, memo)),
        };
        memo.insert(t.id, v);
        v
    }

    /// Whether `t` modulo a divisor of the warp size (a power of two) is a function of
    /// the lane and of values the block shares, where warps run along
    /// `threadIdx.x` (rows of a multiple of the warp size, or one row): its
    /// summands are multiples of `threadIdx.x`, multiples of `blockDim.x`
    /// by a factor that is 0 in a one-row block (`threadIdx.y *
    /// blockDim.x`), and values the block shares. Under a signed `%`
    /// (`signed`), whose result follows the dividend's sign, only when
    /// every summand is added and never negative.
    fn lane_index(&self, t: &Term, signed: bool) -> bool {
        fn strip(t: &Term) -> &Term {
            match &t.kind {
                TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => strip(a),
                _ => t,
            }
        }
        fn summands<'a>(t: &'a Term, positive: bool, out: &mut Vec<(&'a Term, bool)>) {
            match &strip(t).kind {
                TermKind::Binary(BinOp::Add, ty, a, b) if ty.is_int() => {
                    summands(a, positive, out);
                    summands(b, positive, out);
                }
                TermKind::Binary(BinOp::Sub, ty, a, b) if ty.is_int() => {
                    summands(a, positive, out);
                    summands(b, !positive, out);
                }
                _ => out.push((strip(t), positive)),
            }
        }
        fn factors<'a>(t: &'a Term, out: &mut Vec<&'a Term>) {
            match &strip(t).kind {
                TermKind::Binary(BinOp::Mul, ty, a, b) if ty.is_int() => {
                    factors(a, out);
                    factors(b, out);
                }
                _ => out.push(strip(t)),
            }
        }
        let is = |t: &Term, b: Builtin| matches!(strip(t).kind, TermKind::Builtin(x) if x == b);
        // 0 in a block of one row and one plane.
        fn vanishes(t: &Term) -> bool {
            let mut fs = Vec::new();
            factors(t, &mut fs);
            if fs.iter().any(|f| {
                matches!(
                    f.kind,
                    TermKind::Builtin(Builtin::ThreadIdx(crate::ir::Dim::Y | crate::ir::Dim::Z))
                )
            }) {
                return true;
            }
            let mut ss = Vec::new();
            summands(t, true, &mut ss);
            ss.len() > 1 && ss.iter().all(|(s, _)| vanishes(s))
        }
        fn never_negative(t: &Term) -> bool {
            match &strip(t).kind {
                TermKind::Int(v) => *v >= 0,
                TermKind::Builtin(_) => true,
                TermKind::Binary(BinOp::Add | BinOp::Mul, ty, a, b) if ty.is_int() => {
                    never_negative(a) && never_negative(b)
                }
                _ => false,
            }
        }
        let mut terms = Vec::new();
        summands(t, true, &mut terms);
        terms.iter().all(|&(s, positive)| {
            let mut fs = Vec::new();
            factors(s, &mut fs);
            let ok_sign = !signed || positive && never_negative(s);
            let lane = fs
                .iter()
                .filter(|f| is(f, Builtin::ThreadIdx(crate::ir::Dim::X)))
                .count()
                == 1
                && fs
                    .iter()
                    .all(|f| is(f, Builtin::ThreadIdx(crate::ir::Dim::X)) || f.as_int().is_some());
            let row = fs.iter().any(|f| is(f, Builtin::BlockDim(crate::ir::Dim::X))) && fs.iter().any(|f| vanishes(f));
            let shared = matches!(
                self.scope_of(s, &HashMap::default(), &self.loops),
                Scope::Block | Scope::Grid
            );
            (lane || row || shared) && ok_sign
        })
    }

    /// Whether every lane of a warp sees the same value of `t`.
    fn warp_uniform(&self, t: &Term) -> bool {
        !matches!(self.scope_of(t, &HashMap::default(), &self.loops), Scope::Thread)
    }

    fn full_width(&mut self, st: &mut State, width: &Option<Expr>) -> bool {
        match width {
            None => true,
            Some(w) => {
                let w = self.eval(st, w);
                w.as_int().is_some_and(|w| w >= self.model.warp_size as i128)
            }
        }
    }

    /// Records a collective the thread executes here.
    fn sync(&mut self, st: &State, name: String, group: Group, mask: Option<Term>, s: &Stmt) {
        if st.pc.is_false() {
            return;
        }
        self.model.syncs.push(SyncRecord {
            name,
            group,
            reach: st.reach.clone(),
            guards: st.guards.clone(),
            mask,
            loops: self.loops.clone(),
            span: s.span,
            site: s.site,
        });
    }

    fn primitive(&mut self, st: &mut State, p: &Primitive, s: &Stmt) {
        let full = self.full_width(st, &p.width);
        let w = self.model.warp_size;
        let mask = p.mask.as_ref().map(|m| self.eval(st, m));
        // Every lane named: no mask, or a constant one with every lane's bit.
        let all = if w >= 128 { u128::MAX } else { (1u128 << w) - 1 };
        let full_mask = mask
            .as_ref()
            .is_none_or(|m| m.as_int().is_some_and(|v| (v as u128) & all == all));
        if p.kind.is_collective() {
            // A mask-less collective of a sub-warp width is a tile's: its
            // lanes are the tile.
            let width = p.width.as_ref().map(|e| self.eval(st, e)).and_then(|t| t.as_int());
            let group = if p.block_scope {
                Group::Block
            } else {
                match (mask.is_none(), width) {
                    (true, Some(n)) if n > 0 && n < w as i128 && (w as i128) % n == 0 => Group::Lanes(n as u32),
                    _ => Group::Lanes(w),
                }
            };
            self.sync(st, p.kind.name(), group, mask, s);
        }
        let reduction = matches!(
            p.kind,
            PrimKind::Ballot | PrimKind::Any | PrimKind::All | PrimKind::Uni | PrimKind::Reduce(_) | PrimKind::MatchAll
        );
        let uniform = match &p.kind {
            _ if reduction => full && !p.block_scope,
            PrimKind::Shuffle(ShuffleKind::Idx) => {
                let lane = p.args.last().map(|l| self.eval(st, l));
                full && lane.is_some_and(|l| self.warp_uniform(&l))
            }
            _ => false,
        };
        if p.kind == PrimKind::SyncWarp && full && full_mask {
            self.bump(st, WARP);
        }
        // A full-warp reduction of an operand that every warp computes alike,
        // lane by lane, gives every warp the same result: the block's
        // reduction through shared memory (each warp reads back the slots
        // `s[lane]` the warps wrote, and reduces them again).
        let operand = match p.args.first() {
            Some(a) if self.lanes_along_x && uniform && reduction && full_mask => {
                let x = self.eval(st, a);
                self.lane_determined(&x, &mut HashMap::default()).then_some(x)
            }
            _ => None,
        };
        for &var in &p.results {
            let scope = match (&operand, uniform) {
                (Some(_), _) => Scope::Block,
                (None, true) => Scope::Warp,
                (None, false) => Scope::Thread,
            };
            let origin = Origin::Collective {
                name: p.kind.name(),
                operand: operand.clone(),
            };
            self.bind_fresh(st, var, scope, origin, s.span);
        }
        if p.kind == PrimKind::Shuffle(ShuffleKind::Xor) && full && full_mask && !p.block_scope {
            if let ([value, lanes, ..], [var]) = (p.args.as_slice(), p.results.as_slice()) {
                let (value, lanes) = (self.eval(st, value), self.eval(st, lanes));
                if let Some(TermKind::Symbol(id)) = st.vars[var.index()].as_ref().map(|t| &t.kind) {
                    self.exchanges.insert(*id, (value, lanes));
                }
            }
        }
    }

    /// Whether a loop-carried value is a warp's all-reduction by exchange:
    /// its iteration computes `x OP __shfl_xor_sync(full, x, o)` (`end`,
    /// over `x`'s placeholder `ph`), `OP` commutative, and the loop's `n`
    /// iterations take `o` through every power of two below the warp size
    /// once. Every lane then combines the same pairs in the same order, so
    /// all end with the same value, bit for bit even in floating point
    /// (`a + b == b + a`).
    fn all_reduction(
        &mut self,
        end: &Term,
        ph: SymbolId,
        n: i128,
        closed: &HashMap<SymbolId, Term>,
        k: SymbolId,
    ) -> bool {
        let w = self.model.warp_size as i128;
        if n <= 0 || n >= 16 || (1i128 << n) != w {
            return false;
        }
        let TermKind::Binary(op, ty, a, b) = &end.kind else {
            return false;
        };
        // Floating-point min and max may return either zero of `-0` and
        // `+0` depending on the operands' order: integers only.
        let commutative = match op {
            BinOp::Add | BinOp::Mul | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::And | BinOp::Or => true,
            BinOp::Min | BinOp::Max => ty.is_int(),
            _ => false,
        };
        if !commutative {
            return false;
        }
        let is_ph = |t: &Term| matches!(t.kind, TermKind::Symbol(s) if s == ph);
        let exchanged = |t: &Term| match t.kind {
            TermKind::Symbol(s) => self.exchanges.get(&s).cloned(),
            _ => None,
        };
        let found = match (is_ph(a), is_ph(b)) {
            (true, false) => exchanged(b),
            (false, true) => exchanged(a),
            _ => None,
        };
        let Some((value, lanes)) = found else {
            return false;
        };
        if !is_ph(&value) {
            return false;
        }
        let lanes = self.model.terms.substitute(&lanes, closed, &mut HashMap::default());
        let mut seen: Vec<i128> = Vec::new();
        for i in 0..n {
            let at = HashMap::from_iter([(k, self.model.terms.int(i, COUNTER_TY))]);
            let o = self.model.terms.substitute(&lanes, &at, &mut HashMap::default());
            match o.as_int() {
                Some(v) if v > 0 && v < w && v & (v - 1) == 0 && !seen.contains(&v) => seen.push(v),
                _ => return false,
            }
        }
        true
    }

    /// Joins the states after `if (c)`: `a` ran under `c`, `b` under `!c`.
    fn merge_two(&mut self, c: Term, a: State, b: State) -> State {
        if a.pc.is_false() {
            return b;
        }
        if b.pc.is_false() {
            return a;
        }
        let pc = self.terms().or(a.pc.clone(), b.pc.clone());
        let reach = self.terms().or(a.reach.clone(), b.reach.clone());
        let vars = a
            .vars
            .iter()
            .zip(b.vars.iter())
            .map(|(x, y)| match (x, y) {
                (Some(x), Some(y)) if x.id == y.id => Some(x.clone()),
                (Some(x), Some(y)) => Some(self.terms().select(c.clone(), x.clone(), y.clone())),
                // Declared on one path only: its value elsewhere is not used.
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                (None, None) => None,
            })
            .collect();
        let shared = a
            .guards
            .iter()
            .zip(&b.guards)
            .take_while(|(x, y)| x.0 == y.0 && x.1.id == y.1.id)
            .count();
        let guards = a.guards[..shared].to_vec();
        State {
            pc,
            reach,
            guards,
            vars,
        }
    }

    /// Joins states whose path conditions exclude each other (the exits to one label).
    fn merge_many(&mut self, states: Vec<State>) -> State {
        let mut live: Vec<State> = states.into_iter().filter(|s| !s.pc.is_false()).collect();
        let Some(mut acc) = live.pop() else {
            let pc = self.terms().bool(false);
            return State {
                pc: pc.clone(),
                reach: pc,
                guards: Vec::new(),
                vars: vec![None; self.kernel.vars.len() + PHASES],
            };
        };
        while let Some(s) = live.pop() {
            let c = s.pc.clone();
            acc = self.merge_two(c, s, acc);
        }
        acc
    }

    fn assigned_slots(&self, l: &Loop) -> (Vec<usize>, bool, bool) {
        let mut slots = HashSet::default();
        let (mut block_barrier, mut warp_barrier) = (false, false);
        let mut visit = |s: &Stmt| match &s.kind {
            StmtKind::Assign { var, .. } | StmtKind::Havoc { var, .. } | StmtKind::Choose { var } => {
                slots.insert(var.index());
            }
            StmtKind::Access(a) => {
                slots.extend(a.result.map(|v| v.index()));
                slots.extend(a.ranges.iter().map(|r| r.var.index()));
            }
            StmtKind::Primitive(p) => {
                slots.extend(p.results.iter().map(|v| v.index()));
                warp_barrier |= p.kind == PrimKind::SyncWarp;
            }
            StmtKind::Barrier(b) => {
                block_barrier = true;
                slots.extend(b.predicate.as_ref().map(|(_, v)| v.index()));
            }
            _ => {}
        };
        let mut block = Block(Vec::new());
        block.0.extend(l.cond_pre.0.iter().cloned());
        block.0.extend(l.body.0.iter().cloned());
        block.0.extend(l.step.0.iter().cloned());
        block.walk(&mut visit);
        let mut slots: Vec<usize> = slots.into_iter().collect();
        if block_barrier || warp_barrier {
            slots.extend((0..PHASES).map(|w| self.phase_slot(w)));
        }
        slots.sort_unstable();
        (slots, block_barrier, warp_barrier)
    }

    fn run_loop(&mut self, st: &mut State, l: &Loop, s: &Stmt) {
        let (slots, block_barrier, warp_barrier) = self.assigned_slots(l);
        // Entry values, materialised (a variable without one is uninitialised).
        let mut entry: HashMap<usize, Term> = HashMap::default();
        for &slot in &slots {
            let value = match st.vars[slot].clone() {
                Some(v) => v,
                None => {
                    let (name, ty) = (self.slot_name(slot), self.slot_ty(slot));
                    self.new_symbol(
                        name,
                        ty,
                        Scope::Thread,
                        Origin::Input {
                            reason: "uninitialised".into(),
                        },
                        s.span,
                    )
                }
            };
            entry.insert(slot, value);
        }
        let outer = self.loops.clone();
        // Everything created from here on belongs to the iteration. The body
        // runs under `true`; the entry condition is added afterwards, so the
        // exit conditions show whether threads leave in the same iteration.
        let sym_mark = self.model.symbols.len();
        let rec_mark = self.model.records.len();
        let sync_mark = self.model.syncs.len();
        let loop_mark = self.model.loops.len();
        let promise_mark = self.model.promises.len();
        let parked_marks = self.parked_marks();
        let entry_pc = std::mem::replace(&mut st.pc, self.model.terms.bool(true));
        let entry_reach = std::mem::replace(&mut st.reach, self.model.terms.bool(true));
        let k = self.new_symbol(
            format!("k{}", l.label.0),
            COUNTER_TY,
            Scope::Thread,
            Origin::Counter { label: l.label },
            s.span,
        );
        let TermKind::Symbol(k_id) = k.kind else { unreachable!() };
        let mut placeholders: HashMap<usize, SymbolId> = HashMap::default();
        self.loops.push(k_id);
        for &slot in &slots {
            let (name, ty) = (self.slot_name(slot), self.slot_ty(slot));
            let ph = self.new_symbol(
                name.clone(),
                ty,
                Scope::Thread,
                Origin::Placeholder { var: name },
                s.span,
            );
            let TermKind::Symbol(id) = ph.kind else { unreachable!() };
            placeholders.insert(slot, id);
            st.vars[slot] = Some(ph);
        }
        let mut exits: Vec<State> = Vec::new();
        let mut test = None;
        if l.test_first {
            test = self.test(st, l, &mut exits);
        }
        self.block(st, &l.body);
        let mut continues = self.parked.remove(&(l.label, true)).unwrap_or_default();
        if !continues.is_empty() {
            continues.push(std::mem::replace(st, self.dead(st)));
            *st = self.merge_many(continues);
        }
        self.block(st, &l.step);
        if !l.test_first {
            test = self.test(st, l, &mut exits);
        }
        exits.extend(self.parked.remove(&(l.label, false)).unwrap_or_default());
        let inner = self.loops.clone();
        self.loops.pop();

        // Closed forms of the loop-carried values in `k`.
        let mut closed: HashMap<SymbolId, Term> = HashMap::default();
        // How widely the fresh values are shared (placeholders' assumed scopes).
        let mut assumed: HashMap<SymbolId, Scope> = HashMap::default();
        let mut fresh_slots: Vec<usize> = Vec::new();
        // The loop's trip count, when constants fix it.
        let mut trip: Option<i128> = None;
        // The fresh symbol each of them got.
        let mut fresh_symbols: HashMap<usize, SymbolId> = HashMap::default();
        // The fresh values that are warp all-reductions (`all_reduction`),
        // with the reduced value where every warp reduces the same one.
        let mut butterflies: HashMap<usize, Option<Term>> = HashMap::default();
        if st.pc.is_false() {
            // No iteration reaches the next: only iteration 0 runs.
            for &slot in &slots {
                closed.insert(placeholders[&slot], entry[&slot].clone());
            }
            let zero = self.terms().int(0, COUNTER_TY);
            closed.insert(k_id, zero);
        } else {
            for &slot in &slots {
                let end = st.vars[slot].clone().expect("assigned in the loop");
                if end.id == self.model.terms.symbol(placeholders[&slot], self.slot_ty(slot)).id {
                    closed.insert(placeholders[&slot], entry[&slot].clone());
                }
            }
            let invariant = closed.clone();
            for &slot in &slots {
                let ph = placeholders[&slot];
                if closed.contains_key(&ph) {
                    continue;
                }
                let end = st.vars[slot].clone().expect("assigned in the loop");
                let end = self.model.terms.substitute(&end, &invariant, &mut HashMap::default());
                if let Some(form) = self.closed_form(&end, ph, &entry[&slot], &k, sym_mark, slot) {
                    closed.insert(ph, form);
                } else {
                    fresh_slots.push(slot);
                }
            }
            // Values set in an earlier iteration (`prev = x`, `if (c) last =
            // i`), for the variables that ask for it.
            if fresh_slots.iter().any(|&slot| self.carried(slot)) {
                let forms = closed.clone();
                let mut earlier = Earlier::default();
                let mut left = Vec::new();
                for slot in std::mem::take(&mut fresh_slots) {
                    let found = if self.carried(slot) {
                        let end = st.vars[slot].clone().expect("assigned in the loop");
                        let end = self.model.terms.substitute(&end, &invariant, &mut HashMap::default());
                        let ph = placeholders[&slot];
                        self.set_earlier(
                            &end,
                            ph,
                            &entry[&slot],
                            &k,
                            sym_mark,
                            &forms,
                            &mut earlier,
                            slot,
                            s.span,
                        )
                        .map(|form| closed.insert(ph, form))
                        .is_some()
                    } else {
                        false
                    };
                    if !found {
                        left.push(slot);
                    }
                }
                fresh_slots = left;
            }
            // A trip count fixed by constants (`for (i = 0; i < 4; ++i)`):
            // a phase whose advance per iteration is a constant is exact in
            // every iteration (`phase_by_iteration`).
            let escaped = self
                .parked
                .iter()
                .any(|(key, v)| v.len() > parked_marks.get(key).copied().unwrap_or(0));
            if exits.len() == 1 && !escaped {
                trip = test.as_ref().and_then(|c| self.constant_trip_count(c, &closed, k_id));
            }
            if let Some(n) = trip {
                let mut left = Vec::new();
                for slot in std::mem::take(&mut fresh_slots) {
                    let ph = placeholders[&slot];
                    let end = st.vars[slot].clone().expect("assigned in the loop");
                    let form = (slot >= self.kernel.vars.len())
                        .then(|| self.phase_by_iteration(&end, ph, &entry[&slot], &closed, k_id, n))
                        .flatten();
                    match form {
                        Some(form) => {
                            closed.insert(ph, form);
                        }
                        None => left.push(slot),
                    }
                }
                fresh_slots = left;
                // Warp all-reductions by exchange, and how widely their
                // results are shared: by the block where every warp
                // reduces the same values lane by lane.
                for &slot in &fresh_slots {
                    if slot >= self.kernel.vars.len() {
                        continue;
                    }
                    let ph = placeholders[&slot];
                    let end = st.vars[slot].clone().expect("assigned in the loop");
                    if self.all_reduction(&end, ph, n, &closed, k_id) {
                        let start = entry[&slot].clone();
                        let block = self.lanes_along_x && self.lane_determined(&start, &mut HashMap::default());
                        butterflies.insert(slot, block.then_some(start));
                    }
                }
            }
            // Scopes: closed forms are what they are (k is shared by the
            // threads compared at one iteration); a fresh value is as uniform
            // as its entry value and its update, found by a fixpoint from the
            // optimistic start.
            for (&ph, form) in &closed {
                let sc = self.scope_of(form, &HashMap::default(), &inner);
                assumed.insert(ph, sc);
            }
            for &slot in &fresh_slots {
                let sc = match slot.checked_sub(self.kernel.vars.len()) {
                    Some(BLOCK) => Scope::Block,
                    Some(WARP) => Scope::Warp,
                    Some(GRID) => Scope::Grid,
                    _ => self.scope_of(&entry[&slot], &HashMap::default(), &outer),
                };
                assumed.insert(placeholders[&slot], sc);
            }
            loop {
                let mut changed = false;
                for &slot in &fresh_slots {
                    if slot >= self.kernel.vars.len() {
                        continue;
                    }
                    let ph = placeholders[&slot];
                    let end = st.vars[slot].clone().expect("assigned in the loop");
                    let now = assumed[&ph].finest(self.scope_of(&end, &assumed, &inner));
                    if now != assumed[&ph] {
                        assumed.insert(ph, now);
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
            for &slot in &fresh_slots {
                let ph = placeholders[&slot];
                let name = self.slot_name(slot);
                let phase = slot >= self.kernel.vars.len();
                let origin = if phase {
                    // The iteration's advance, over the placeholders (the
                    // rewrite below gives them their values).
                    let end = st.vars[slot].clone().expect("assigned in the loop");
                    let start = self.model.terms.symbol(ph, self.slot_ty(slot));
                    let advance = self.model.terms.binary(BinOp::Sub, PHASE_TY, end, start);
                    Origin::Progress {
                        var: name.clone(),
                        advance: Some(advance),
                        exit_of: None,
                    }
                } else {
                    Origin::LoopValue { var: name.clone() }
                };
                self.loops.push(k_id);
                let t = self.new_symbol(name, self.slot_ty(slot), assumed[&ph], origin, s.span);
                self.loops.pop();
                let TermKind::Symbol(id) = t.kind else { unreachable!() };
                fresh_symbols.insert(slot, id);
                // A phase is its entry value plus how far it has advanced.
                let t = if phase {
                    self.terms().binary(BinOp::Add, PHASE_TY, entry[&slot].clone(), t)
                } else {
                    t
                };
                closed.insert(ph, t);
            }
        }
        // The iteration in which a thread leaves: shared by the threads that
        // share every exit condition (a loop holding a block barrier has a
        // block-uniform trip count: the participation condition checks it).
        let mut n_scope = Scope::Grid;
        for ex in &exits {
            n_scope = n_scope.finest(self.scope_of(&ex.pc, &assumed, &inner));
        }
        if block_barrier {
            n_scope = n_scope.coarsest(Scope::Block);
        } else if warp_barrier {
            n_scope = n_scope.coarsest(Scope::Warp);
        }
        // Rewrite everything the iteration produced: closed forms, then the
        // entry condition (and that signed counters fit their type).
        let mut memo = HashMap::default();
        let marks = Marks {
            records: rec_mark,
            symbols: sym_mark,
            syncs: sync_mark,
            loops: loop_mark,
        };
        self.rewrite_since(&marks, &parked_marks, &closed, &mut memo);
        for ex in &mut exits {
            self.rewrite_state(ex, &closed, &mut memo);
        }
        // How a thread leaves an iteration, for the participation condition.
        let mut escapes = Vec::new();
        for (key, states) in &self.parked {
            let from = parked_marks.get(key).copied().unwrap_or(0);
            escapes.extend(states.iter().skip(from).map(|p| p.reach.clone()));
        }
        let escape = self.model.terms.or_all(escapes);
        let ends: Vec<Term> = exits.iter().map(|e| e.reach.clone()).collect();
        let ended = self.model.terms.or_all(ends);
        let leave = self.model.terms.or(ended, escape.clone());
        let fits = std::mem::take(&mut self.fits);
        let guard = {
            let t = &mut self.model.terms;
            let all = t.and_all(fits);
            t.and(entry_pc.clone(), all)
        };
        self.enter_since(&guard, Some(&entry_reach), rec_mark, &parked_marks);
        // Promises made in the body speak of one iteration, in the body's
        // own terms (before the loop-carried values' closed forms): left
        // out, which only admits more witnesses.
        self.model.promises.truncate(promise_mark);
        for r in &mut self.model.syncs[sync_mark..] {
            r.reach = self.model.terms.and(entry_reach.clone(), r.reach.clone());
        }
        for r in &mut self.model.loops[loop_mark..] {
            r.entry = self.model.terms.and(entry_reach.clone(), r.entry.clone());
        }
        let escaped = self
            .parked
            .iter()
            .any(|(key, v)| v.len() > parked_marks.get(key).copied().unwrap_or(0));
        let exits_at_top = l.test_first && exits.len() == 1 && !escaped;
        self.model.loops.push(LoopRecord {
            exits_at_top,
            counter: k_id,
            loops: inner.clone(),
            entry: entry_reach.clone(),
            leave,
            escape,
            syncs: (sync_mark, self.model.syncs.len()),
            span: s.span,
        });
        // After the loop: the state of the iteration N that leaves it.
        let n = self.new_symbol(
            format!("N{}", l.label.0),
            COUNTER_TY,
            n_scope,
            Origin::ExitCount { label: l.label },
            s.span,
        );
        let mut at_exit = HashMap::default();
        if !closed.contains_key(&k_id) {
            // A trip count fixed by constants is that constant: phases
            // after the loop are then constants apart, and an enclosing
            // loop's phase stays affine in its count.
            let n = match trip {
                Some(c) => self.terms().int(c, COUNTER_TY),
                None => n,
            };
            at_exit.insert(k_id, n);
            // A fresh value at the exit iteration is shared as widely as both
            // the value and the exit iteration are.
            for &slot in &fresh_slots {
                let ph = placeholders[&slot];
                let reduced = butterflies.get(&slot);
                let sc = match reduced {
                    Some(Some(_)) => Scope::Block.finest(n_scope),
                    Some(None) => Scope::Warp.finest(n_scope),
                    None => assumed[&ph].finest(n_scope),
                };
                if sc == Scope::Thread {
                    continue;
                }
                let Some(&f) = fresh_symbols.get(&slot) else {
                    continue;
                };
                let name = self.slot_name(slot);
                let origin = match (&self.model.symbol(f).origin, reduced) {
                    (Origin::Progress { .. }, _) => Origin::Progress {
                        var: name.clone(),
                        advance: None,
                        exit_of: Some(f),
                    },
                    (_, Some(operand)) => Origin::Collective {
                        name: "__shfl_xor_sync".into(),
                        operand: operand.clone(),
                    },
                    _ => Origin::LoopValue { var: name.clone() },
                };
                let t = self.new_symbol(format!("{name}@exit"), self.slot_ty(slot), sc, origin, s.span);
                at_exit.insert(f, t);
            }
        }
        // The choices made in the loop, as they stand at its exit.
        for (b, _, fact) in &mut self.chosen {
            if matches!(b.kind, TermKind::Symbol(id) if id.index() >= sym_mark) {
                let closed_fact = self.model.terms.substitute(fact, &closed, &mut HashMap::default());
                *fact = self
                    .model
                    .terms
                    .substitute(&closed_fact, &at_exit, &mut HashMap::default());
            }
        }
        let mut memo = HashMap::default();
        for ex in &mut exits {
            let pc = self.terms().and(guard.clone(), ex.pc.clone());
            ex.pc = pc;
            self.rewrite_state(ex, &at_exit, &mut memo);
        }
        *st = self.merge_many(exits);
        if !st.pc.is_false() {
            st.reach = entry_reach;
        }
    }

    /// The first iteration whose loop test `cond` (over the placeholders,
    /// `closed` gives their values in iteration `k`) is false, when the
    /// test depends on `k` alone and is true before it.
    fn constant_trip_count(&mut self, cond: &Term, closed: &HashMap<SymbolId, Term>, k: SymbolId) -> Option<i128> {
        /// Longer constant loops keep a symbolic count.
        const MAX_TRIPS: i128 = 1 << 12;
        let cond = self.model.terms.substitute(cond, closed, &mut HashMap::default());
        for j in 0..=MAX_TRIPS {
            let at = HashMap::from_iter([(k, self.model.terms.int(j, COUNTER_TY))]);
            let v = self.model.terms.substitute(&cond, &at, &mut HashMap::default());
            match v.as_bool() {
                Some(true) => continue,
                Some(false) => return Some(j),
                None => return None,
            }
        }
        None
    }

    /// A phase at the top of iteration `k` of a loop of `n` iterations (a
    /// constant; `k = n` is where it leaves), when its advance over each
    /// iteration (`end` minus the placeholder `ph`, with `closed` giving the
    /// other variables in `k`) is a constant: `entry` plus the sum of the
    /// advances before `k`, a line with a few exceptions (a barrier skipped
    /// in the first or the last iteration).
    fn phase_by_iteration(
        &mut self,
        end: &Term,
        ph: SymbolId,
        entry: &Term,
        closed: &HashMap<SymbolId, Term>,
        k: SymbolId,
        n: i128,
    ) -> Option<Term> {
        const PROBE: i128 = 1 << 20;
        /// Points off the line kept as explicit choices.
        const MAX_EXCEPTIONS: usize = 4;
        // The phase before iteration j, from the entry: prefix[j].
        let mut prefix = vec![0i128];
        for j in 0..n {
            let kj = self.model.terms.int(j, COUNTER_TY);
            let at_k = HashMap::from_iter([(k, kj.clone())]);
            let mut at: HashMap<SymbolId, Term> = HashMap::default();
            for (&v, form) in closed {
                at.insert(v, self.model.terms.substitute(form, &at_k, &mut HashMap::default()));
            }
            at.insert(k, kj);
            let mut value_at = |base: i128| {
                let mut map = at.clone();
                map.insert(ph, self.model.terms.int(base, PHASE_TY));
                self.model.terms.substitute(end, &map, &mut HashMap::default()).as_int()
            };
            let (a, b) = (value_at(0)?, value_at(PROBE)?);
            // The end is the top plus a constant, and counters never go back.
            if b - a != PROBE || a < 0 {
                return None;
            }
            prefix.push(prefix[j as usize] + a);
        }
        // The line through iterations 1 and 2 (or 0 and 1), and the points off it.
        let (origin, slope) = match prefix.len() {
            0 | 1 => (0, 0),
            2 => (0, prefix[1]),
            _ => (1, prefix[2] - prefix[1]),
        };
        let line = |j: usize| prefix[origin] + (j as i128 - origin as i128) * slope;
        let exceptions: Vec<usize> = (0..prefix.len()).filter(|&j| prefix[j] != line(j)).collect();
        if exceptions.len() > MAX_EXCEPTIONS {
            return None;
        }
        let t = self.terms();
        let k_term = t.symbol(k, COUNTER_TY);
        let from = t.int(origin as i128, COUNTER_TY);
        let steps = t.binary(BinOp::Sub, COUNTER_TY, k_term.clone(), from);
        let slope_t = t.int(slope, PHASE_TY);
        let along = t.binary(BinOp::Mul, PHASE_TY, steps, slope_t);
        let base = t.int(prefix[origin], PHASE_TY);
        let on_line = t.binary(BinOp::Add, PHASE_TY, base, along);
        let mut form = t.binary(BinOp::Add, PHASE_TY, entry.clone(), on_line);
        for j in exceptions {
            let at = t.int(j as i128, COUNTER_TY);
            let is_j = t.binary(BinOp::Eq, COUNTER_TY, k_term.clone(), at);
            let value = t.int(prefix[j], PHASE_TY);
            let value = t.binary(BinOp::Add, PHASE_TY, entry.clone(), value);
            form = t.select(is_j, value, form);
        }
        Some(form)
    }

    fn scope_of(&self, t: &Term, assumed: &HashMap<SymbolId, Scope>, deps: &[SymbolId]) -> Scope {
        self.model.scope_of(t, assumed, deps)
    }

    /// Runs the loop test; the failing side leaves the loop. Returns the
    /// condition (over the iteration's placeholders).
    fn test(&mut self, st: &mut State, l: &Loop, exits: &mut Vec<State>) -> Option<Term> {
        self.block(st, &l.cond_pre);
        if st.pc.is_false() {
            return None;
        }
        let c = self.eval(st, &l.cond);
        let c = self.terms().cast(ScalarTy::Bool, c);
        let mut out = st.clone();
        let nc = self.terms().not(c.clone());
        out.pc = self.terms().and(st.pc.clone(), nc.clone());
        out.reach = self.terms().and(st.reach.clone(), nc);
        exits.push(out);
        let pc = st.pc.clone();
        st.pc = self.terms().and(pc, c.clone());
        let reach = st.reach.clone();
        st.reach = self.terms().and(reach, c.clone());
        Some(c)
    }

    /// The value at the top of iteration `k` of a variable whose value at the
    /// end of an iteration is `end` (in terms of its value `ph` at the top).
    fn closed_form(
        &mut self,
        end: &Term,
        ph: SymbolId,
        entry: &Term,
        k: &Term,
        sym_mark: usize,
        slot: usize,
    ) -> Option<Term> {
        let var_ty = self.slot_ty(slot);
        let ScalarTy::Int { bits, signed } = var_ty else {
            return None;
        };
        // Strip conversions that keep the width: `(i32)((u32)v + d)`.
        let strip = |t: &Term| -> Term {
            let mut t = t.clone();
            while let TermKind::Cast(inner) = &t.kind {
                match (t.ty, inner.ty) {
                    (ScalarTy::Int { bits: a, .. }, ScalarTy::Int { bits: b, .. }) if a == b => t = inner.clone(),
                    _ => break,
                }
            }
            t
        };
        let is_ph = |t: &Term| matches!(strip(t).kind, TermKind::Symbol(s) if s == ph);
        let invariant = |t: &Term, symbols: &[Symbol]| {
            let _ = symbols;
            !crate::ir::term::mentions(
                t,
                &mut |kind| matches!(kind, TermKind::Symbol(s) if s.index() >= sym_mark),
                &mut HashSet::default(),
            )
        };
        let body = strip(end);
        // Involutions (`x = c - x`, `x = x ^ d`, `x = !x`, `x = -x`): the value
        // alternates between the entry value and its image.
        let image = match &body.kind {
            TermKind::Binary(BinOp::Sub, _, a, b) if is_ph(b) && invariant(a, &self.model.symbols) => {
                Some(Some((BinOp::Sub, a.clone(), false)))
            }
            TermKind::Binary(BinOp::BitXor, _, a, b) if is_ph(a) && invariant(b, &self.model.symbols) => {
                Some(Some((BinOp::BitXor, b.clone(), true)))
            }
            TermKind::Binary(BinOp::BitXor, _, a, b) if is_ph(b) && invariant(a, &self.model.symbols) => {
                Some(Some((BinOp::BitXor, a.clone(), false)))
            }
            TermKind::Unary(crate::ir::UnOp::Neg | crate::ir::UnOp::BitNot | crate::ir::UnOp::Not, a) if is_ph(a) => {
                Some(None)
            }
            _ => None,
        };
        if let Some(image) = image {
            let ty = body.ty;
            let t = &mut self.model.terms;
            let x0 = t.cast(ty, entry.clone());
            let flipped = match (image, &body.kind) {
                (Some((op, d, _)), _) if op == BinOp::Sub => t.binary(op, ty, d, x0.clone()),
                (Some((op, d, _)), _) => t.binary(op, ty, x0.clone(), d),
                (None, TermKind::Unary(op, _)) => t.unary(*op, ty, x0.clone()),
                _ => return None,
            };
            let two = t.int(2, COUNTER_TY);
            let zero = t.int(0, COUNTER_TY);
            let parity = t.binary(BinOp::Rem, COUNTER_TY, k.clone(), two);
            let even = t.binary(BinOp::Eq, COUNTER_TY, parity, zero);
            let form = t.select(even, x0, flipped);
            return Some(self.model.terms.cast(var_ty, form));
        }
        let TermKind::Binary(op, ty, a, b) = &body.kind else {
            return None;
        };
        let (op, ty, a, b) = (*op, *ty, a.clone(), b.clone());
        let ScalarTy::Int {
            bits: op_bits,
            signed: op_signed,
        } = ty
        else {
            return None;
        };
        if op_bits != bits {
            return None;
        }
        let t = &mut self.model.terms;
        let kk = t.cast(ty, k.clone());
        let x0 = t.cast(ty, entry.clone());
        let form = match op {
            BinOp::Add | BinOp::Sub => {
                let (d, negate) = if is_ph(&a) && invariant(&b, &self.model.symbols) {
                    (b, op == BinOp::Sub)
                } else if op == BinOp::Add && is_ph(&b) && invariant(&a, &self.model.symbols) {
                    (a, false)
                } else {
                    return None;
                };
                // `v0 + k*d` computed in 64 bits: exact for 32-bit variables
                // (|k*d| < 2^63), then converted back (wrapping as C does).
                let t = &mut self.model.terms;
                let wide = if bits < 64 { ScalarTy::I64 } else { ty };
                let k64 = t.cast(wide, k.clone());
                let d64 = t.cast(wide, d);
                let x64 = t.cast(wide, entry.clone());
                let step = t.binary(BinOp::Mul, wide, k64, d64);
                let sum = t.binary(if negate { BinOp::Sub } else { BinOp::Add }, wide, x64, step);
                let narrow = t.cast(ty, sum.clone());
                if signed && wide != ty {
                    // Signed overflow is undefined: an iteration whose value
                    // does not fit the variable is never reached, so the
                    // conversion back never wraps. A signed variable updated
                    // in unsigned arithmetic (`int i; i += blockDim.x`) could
                    // wrap to negative values only with a bound within one
                    // step of its maximum; that is assumed away, and said.
                    if let (false, Some(var)) = (op_signed, self.kernel.vars.get(slot)) {
                        let note = format!("the signed loop variable `{}` does not wrap past its maximum", var.name);
                        if !self.model.assumed.contains(&note) {
                            self.model.assumed.push(note);
                        }
                    }
                    let t = &mut self.model.terms;
                    let (lo, hi) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
                    let lo = t.int(lo, wide);
                    let hi = t.int(hi, wide);
                    let above = t.binary(BinOp::Ge, wide, sum.clone(), lo);
                    let below = t.binary(BinOp::Le, wide, sum, hi);
                    let fits = t.and(above, below);
                    self.fits.push(fits);
                    self.model.no_wrap.insert(narrow.id);
                }
                narrow
            }
            BinOp::Shr | BinOp::Div | BinOp::Shl | BinOp::Mul if is_ph(&a) => {
                let c = b.as_int()?;
                // Bits moved per iteration.
                let per = match op {
                    BinOp::Shr | BinOp::Shl => c,
                    _ if c > 1 && c & (c - 1) == 0 => c.trailing_zeros() as i128,
                    _ => return None,
                };
                if per <= 0 || per >= bits as i128 {
                    return None;
                }
                let t = &mut self.model.terms;
                // Iterations after which every bit is gone.
                let limit = (bits as i128 + per - 1) / per;
                let lim = t.int(limit, COUNTER_TY);
                let small = t.binary(BinOp::Lt, COUNTER_TY, k.clone(), lim);
                let per_t = t.int(per, ty);
                let amount = t.binary(BinOp::Mul, ty, kk, per_t);
                let zero = t.int(0, ty);
                match op {
                    BinOp::Shl | BinOp::Mul => {
                        let shifted = t.binary(BinOp::Shl, ty, x0, amount);
                        t.select(small, shifted, zero)
                    }
                    BinOp::Shr => {
                        let shifted = t.binary(BinOp::Shr, ty, x0.clone(), amount);
                        let rest = if signed {
                            let top = t.int(bits as i128 - 1, ty);
                            t.binary(BinOp::Shr, ty, x0, top)
                        } else {
                            zero
                        };
                        t.select(small, shifted, rest)
                    }
                    _ if !signed => {
                        let shifted = t.binary(BinOp::Shr, ty, x0, amount);
                        t.select(small, shifted, zero)
                    }
                    _ => {
                        // Signed halving truncates toward zero: x / 2^j while
                        // 2^j is representable, then 0 (or -1 for the minimum
                        // at j = bits-1).
                        let lim = t.int((bits as i128 - 2) / per + 1, COUNTER_TY);
                        let exact = t.binary(BinOp::Lt, COUNTER_TY, k.clone(), lim);
                        let one = t.int(1, ty);
                        let pow = t.binary(BinOp::Shl, ty, one, amount.clone());
                        let divided = t.binary(BinOp::Div, ty, x0.clone(), pow);
                        let min = t.int(-(1i128 << (bits - 1)), ty);
                        let is_min = t.binary(BinOp::Eq, ty, x0, min);
                        let last = t.int(bits as i128 - 1, ty);
                        let at_last = t.binary(BinOp::Eq, ty, amount, last);
                        let both = t.and(is_min, at_last);
                        let minus_one = t.int(-1, ty);
                        let tail = t.select(both, minus_one, zero);
                        t.select(exact, divided, tail)
                    }
                }
            }
            _ => return None,
        };
        Some(self.model.terms.cast(var_ty, form))
    }

    /// A value last set in an earlier iteration. `end`, the value at the
    /// end of an iteration, is `e`, or `c ? e : x` (conditions nested) with
    /// `x` the value at the iteration's top, where `e` is a function of the
    /// iteration: of the counter, of values with closed forms (`forms`),
    /// of invariants and of free choices (`Origin::Choice`, taken afresh for
    /// the earlier iteration). At the top of iteration `k` the value is then
    /// the entry value (`k = 0`) or `e` of iteration `k-1`; under a
    /// condition, the entry value or `e` of some iteration `j < k` in which
    /// the condition held (`b ⇒ 0 ≤ j < k ∧ c(j)`, a fact of the loop).
    /// `b` and `j` are per-thread choices shared by the variables set under
    /// the same conditions, so values set together stay together (an
    /// asynchronous copy's address and commit group: `lower::async_copy`).
    /// The condition's parts that are not functions of the iteration are
    /// left out of the fact: `j` then ranges over more iterations, which
    /// over-approximates.
    #[allow(clippy::too_many_arguments)]
    fn set_earlier(
        &mut self,
        end: &Term,
        ph: SymbolId,
        entry: &Term,
        k: &Term,
        sym_mark: usize,
        forms: &HashMap<SymbolId, Term>,
        earlier: &mut Earlier,
        slot: usize,
        span: Span,
    ) -> Option<Term> {
        let TermKind::Symbol(k_id) = k.kind else { return None };
        let ph_term = self.model.terms.symbol(ph, self.slot_ty(slot));
        let mentions_ph = |t: &Term| {
            crate::ir::term::mentions(
                t,
                &mut |kind| matches!(kind, TermKind::Symbol(x) if *x == ph),
                &mut HashSet::default(),
            )
        };
        let mut conds = Vec::new();
        let mut e = end.clone();
        while mentions_ph(&e) {
            let TermKind::Select(c, a, b) = &e.kind else {
                return None;
            };
            if mentions_ph(c) {
                return None;
            }
            let (c, a, b) = (c.clone(), a.clone(), b.clone());
            if b.id == ph_term.id {
                conds.push(c);
                e = a;
            } else if a.id == ph_term.id {
                let nc = self.model.terms.not(c);
                conds.push(nc);
                e = b;
            } else {
                return None;
            }
        }
        if conds.is_empty() {
            let t = &mut self.model.terms;
            let one = t.int(1, COUNTER_TY);
            let before = t.binary(BinOp::Sub, COUNTER_TY, k.clone(), one);
            let previous = self.shift(&e, k_id, &before, sym_mark, forms, &mut earlier.previous)?;
            let t = &mut self.model.terms;
            let zero = t.int(0, COUNTER_TY);
            let first = t.binary(BinOp::Eq, COUNTER_TY, k.clone(), zero);
            return Some(t.select(first, entry.clone(), previous));
        }
        let key: Vec<u32> = conds.iter().map(|c| c.id).collect();
        if !earlier.chosen.contains_key(&key) {
            let name = self.slot_name(slot);
            let origin = Origin::LoopValue {
                var: format!("the iteration that set {name}"),
            };
            self.loops.push(k_id);
            let b = self.new_symbol(
                format!("{name}.set"),
                ScalarTy::Bool,
                Scope::Thread,
                origin.clone(),
                span,
            );
            let j = self.new_symbol(format!("{name}.set_in"), COUNTER_TY, Scope::Thread, origin, span);
            self.loops.pop();
            let mut fresh = HashMap::default();
            let mut facts = Vec::new();
            {
                let t = &mut self.model.terms;
                let zero = t.int(0, COUNTER_TY);
                facts.push(t.binary(BinOp::Le, COUNTER_TY, zero, j.clone()));
                facts.push(t.binary(BinOp::Lt, COUNTER_TY, j.clone(), k.clone()));
            }
            for c in &conds {
                if let Some(held) = self.shift(c, k_id, &j, sym_mark, forms, &mut fresh) {
                    facts.push(held);
                }
            }
            let t = &mut self.model.terms;
            let all = t.and_all(facts);
            let nb = t.not(b.clone());
            let fact = t.or(nb, all);
            self.fits.push(fact.clone());
            self.remember_choice(&b, &j, fact);
            earlier.chosen.insert(key.clone(), (b, j, fresh));
        }
        let (b, j, fresh) = earlier.chosen.get_mut(&key).expect("made above");
        let then = self.shift(&e, k_id, j, sym_mark, forms, fresh)?;
        Some(self.model.terms.select(b.clone(), then, entry.clone()))
    }

    /// `t` (a function of the iteration `k`, see [`Self::set_earlier`]) in
    /// iteration `at`; `fresh` keeps the choices taken afresh for it.
    fn shift(
        &mut self,
        t: &Term,
        k: SymbolId,
        at: &Term,
        sym_mark: usize,
        forms: &HashMap<SymbolId, Term>,
        fresh: &mut HashMap<SymbolId, Term>,
    ) -> Option<Term> {
        let mut symbols = Vec::new();
        crate::ir::term::symbols_of(t, &mut symbols, &mut HashSet::default());
        let mut map: HashMap<SymbolId, Term> = HashMap::default();
        let to_at: HashMap<SymbolId, Term> = [(k, at.clone())].into_iter().collect();
        for s in symbols {
            if s.index() < sym_mark {
                continue;
            }
            let value = if let Some(f) = fresh.get(&s) {
                f.clone()
            } else if s == k {
                at.clone()
            } else if let Some(&i) = self.choice_of.get(&s) {
                // An inner loop's choice: taken afresh, with its fact.
                let (b, j, fact) = self.chosen[i].clone();
                let (TermKind::Symbol(b_id), TermKind::Symbol(j_id)) = (&b.kind, &j.kind) else {
                    return None;
                };
                let (b_id, j_id) = (*b_id, *j_id);
                self.loops.push(k);
                let (b2, j2) = (self.renew(b_id), self.renew(j_id));
                self.loops.pop();
                fresh.insert(b_id, b2.clone());
                fresh.insert(j_id, j2.clone());
                let fact = self.shift(&fact, k, at, sym_mark, forms, fresh)?;
                self.fits.push(fact.clone());
                self.remember_choice(&b2, &j2, fact);
                fresh[&s].clone()
            } else if let Some(form) = forms.get(&s) {
                self.model.terms.substitute(form, &to_at, &mut HashMap::default())
            } else if matches!(self.model.symbol(s).origin, Origin::Choice) {
                let f = self.renew(s);
                fresh.insert(s, f.clone());
                f
            } else {
                return None;
            };
            map.insert(s, value);
        }
        Some(self.model.terms.substitute(t, &map, &mut HashMap::default()))
    }

    /// A kernel variable the loop analysis follows from the iteration that
    /// set it (`VarInfo::carried`).
    fn carried(&self, slot: usize) -> bool {
        self.kernel.vars.get(slot).is_some_and(|v| v.carried)
    }

    /// A fresh symbol like `s` (its name, type, scope, origin and place).
    fn renew(&mut self, s: SymbolId) -> Term {
        let info = self.model.symbol(s).clone();
        let name = info.name.split('#').next().unwrap_or(&info.name).to_string();
        self.new_symbol(name, info.ty, info.scope, info.origin, info.span)
    }

    fn remember_choice(&mut self, b: &Term, j: &Term, fact: Term) {
        let i = self.chosen.len();
        self.chosen.push((b.clone(), j.clone(), fact));
        for t in [b, j] {
            if let TermKind::Symbol(id) = t.kind {
                self.choice_of.insert(id, i);
            }
        }
    }

    fn rewrite_state(&mut self, st: &mut State, map: &HashMap<SymbolId, Term>, memo: &mut HashMap<u32, Term>) {
        let State {
            pc,
            reach,
            guards,
            vars,
            ..
        } = st;
        let terms = [pc, reach]
            .into_iter()
            .chain(guards.iter_mut().map(|(_, g)| g))
            .chain(vars.iter_mut().flatten());
        self.model.terms.substitute_each(terms, map, memo);
    }

    /// Applies `map` to the records, symbols and parked states created since the marks.
    fn rewrite_since(
        &mut self,
        marks: &Marks,
        parked_marks: &HashMap<(LabelId, bool), usize>,
        map: &HashMap<SymbolId, Term>,
        memo: &mut HashMap<u32, Term>,
    ) {
        let m = &mut self.model;
        let syncs = m.syncs[marks.syncs..].iter_mut().flat_map(|r| {
            [&mut r.reach]
                .into_iter()
                .chain(r.mask.as_mut())
                .chain(r.guards.iter_mut().map(|(_, g)| g))
        });
        let loops = m.loops[marks.loops..]
            .iter_mut()
            .flat_map(|r| [&mut r.entry, &mut r.leave, &mut r.escape]);
        let records = m.records[marks.records..].iter_mut().flat_map(|r| {
            [
                &mut r.offset,
                &mut r.width,
                &mut r.pc,
                &mut r.phase.block,
                &mut r.phase.warp,
                &mut r.phase.grid,
            ]
        });
        let symbols = m.symbols[marks.symbols..].iter_mut().flat_map(|s| match &mut s.origin {
            Origin::Load { offset, width, .. } => vec![offset, width],
            Origin::Progress {
                advance: Some(advance), ..
            } => vec![advance],
            Origin::Collective {
                operand: Some(operand), ..
            } => vec![operand],
            _ => Vec::new(),
        });
        m.terms
            .substitute_each(syncs.chain(loops).chain(records).chain(symbols), map, memo);
        let keys: Vec<(LabelId, bool)> = self.parked.keys().copied().collect();
        for key in keys {
            let from = parked_marks.get(&key).copied().unwrap_or(0);
            let mut states = self.parked.remove(&key).unwrap_or_default();
            for st in states.iter_mut().skip(from) {
                self.rewrite_state(st, map, memo);
            }
            self.parked.insert(key, states);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::StmtKind;

    /// The first kernel of `src`, lowered.
    fn kernel(src: &str) -> Kernel {
        crate::lower::tests::kernels(src).remove(0)
    }

    const RANGE_FOR: &str = "__global__ void k(float *out, const float *in) {
        __shared__ float buf[64];
        for (int w : {32, 16}) {
            if (w == 16) { continue; }
            buf[threadIdx.x] = in[threadIdx.x] * w;
        }
        out[threadIdx.x] = buf[threadIdx.x];
    }";

    #[test]
    fn a_continue_in_a_range_for_goes_on_after_the_loop() {
        let model = build(&kernel(RANGE_FOR), 32, &[], true);
        assert!(model.unknowns.is_empty(), "{:?}", model.unknowns);
        // in[tid], buf[tid] written, then buf read and out written after the loop.
        assert_eq!(model.records.len(), 4, "{model}");
    }

    /// An argument of a function not declared here is loaded once: the
    /// call's value is opaque, its argument's load one access (it was two:
    /// the builtins read it, and the opaque call again).
    #[test]
    fn an_argument_of_an_undeclared_function_is_loaded_once() {
        let src = "__global__ void k(const int *x, int *y) { y[threadIdx.x] = g(x[threadIdx.x]) + h(x[0], 2); }";
        let model = build(&kernel(src), 32, &[], true);
        assert!(model.unknowns.is_empty(), "{:?}", model.unknowns);
        // x[tid], x[0], then y[tid].
        assert_eq!(model.records.len(), 3, "{model}");
    }

    /// A helper that returns in several places, called after a loop that
    /// threads leave in different iterations: its result depends on its
    /// argument only.
    const HELPER_AFTER_DIVERGENT_LOOP: &str = "__device__ int pick(int n) {
        if (n > 64) { return 2; }
        if (n > 16) { return 1; }
        return 0;
    }
    __global__ void k(int *out, int n, int m) {
        for (int i = 0; i < m; i++) {
            if (threadIdx.x + i >= n) { break; }
            out[blockIdx.x * 1024 + threadIdx.x] = i;
        }
        if (pick(n) == 1) {
            __syncwarp();
        }
    }";

    #[test]
    fn a_helpers_result_selects_by_its_own_branches_not_by_the_callers_path() {
        let model = build(&kernel(HELPER_AFTER_DIVERGENT_LOOP), 32, &[], true);
        assert_eq!(model.syncs.len(), 1, "{model}");
        let goals = crate::obligation::participation::obligations(&model, &Default::default());
        assert!(
            goals.is_empty(),
            "the __syncwarp's condition is uniform: {goals:?}\n{model}"
        );
        // The write in the loop still holds the loop's own condition.
        assert!(!model.records[0].pc.as_bool().unwrap_or(false), "{model}");
    }

    /// Every `Exit` in `b`, retargeted to `to`.
    fn retarget(b: &mut crate::ir::Block, to: LabelId) {
        for s in &mut b.0 {
            match &mut s.kind {
                StmtKind::Exit { label, .. } => *label = to,
                StmtKind::If {
                    then_block, else_block, ..
                } => {
                    retarget(then_block, to);
                    retarget(else_block, to);
                }
                StmtKind::Labeled { body, .. } => retarget(body, to),
                StmtKind::Loop(l) => {
                    retarget(&mut l.body, to);
                    retarget(&mut l.step, to);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn threads_that_jump_to_a_label_nothing_gathers_make_the_model_unknown() {
        let mut k = kernel(RANGE_FOR);
        retarget(&mut k.body, LabelId(u32::MAX));
        let model = build(&k, 32, &[], true);
        assert_eq!(model.unknowns.len(), 1, "{model}");
    }
}
