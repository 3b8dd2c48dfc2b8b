//! The access model: what one generic thread of a kernel does to memory, in
//! which phase, under which path condition. Output of `passes::accesses`,
//! input of `obligation`.
//!
//! Every value is a [`Term`] over builtins, parameters and model
//! [`Symbol`]s. The obligations instantiate a model twice (threads 1 and 2);
//! a symbol's [`Scope`] says which instances must agree.

use std::fmt;

use super::term::{Show, SymbolId, Term, TermKind, Terms};
use super::{AccessKind, Builtin, LabelId, ObjectId, ScalarTy};
use crate::source::Span;

/// Which threads share one value of a symbol. Two instances of a symbol of
/// scope `Warp` are equal when the threads are in the same warp of the same
/// block and agree on every counter in `deps`; `Block` and `Grid` likewise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Thread,
    Warp,
    Block,
    Grid,
}

impl Scope {
    fn rank(self) -> u8 {
        match self {
            Scope::Grid => 0,
            Scope::Block => 1,
            Scope::Warp => 2,
            Scope::Thread => 3,
        }
    }

    /// The finer of two scopes (the one fewer threads share).
    pub fn finest(self, other: Scope) -> Scope {
        if self.rank() >= other.rank() {
            self
        } else {
            other
        }
    }

    /// The coarser of two scopes (the one more threads share).
    pub fn coarsest(self, other: Scope) -> Scope {
        if self.rank() <= other.rank() {
            self
        } else {
            other
        }
    }

    /// Every thread of `group` agrees on values of this scope.
    pub fn covers(self, group: Group) -> bool {
        match group {
            Group::Lanes(_) => self != Scope::Thread,
            Group::Block => matches!(self, Scope::Block | Scope::Grid),
            Group::Grid => self == Scope::Grid,
        }
    }
}

/// No thread index shared: each thread has its own (see
/// [`AccessModel::scope_with`]).
pub const NO_SHARED_INDEX: [bool; 3] = [false; 3];

/// The thread indices that every thread of one group of `group`'s kind
/// shares, given the block's extents (`extent[d]`: a number the extent is
/// known to be a multiple of, 1 when nothing is known). Warps are runs of
/// consecutive linear thread ids (`x + y·X + z·X·Y`), so where the rows
/// (`X`) are a whole number of groups of `n` lanes, the lanes of a group
/// share `threadIdx.y` and `threadIdx.z`; where the planes (`X·Y`) are,
/// they share `threadIdx.z`. A block shares no thread index.
pub fn shared_indices(group: Group, extent: [u64; 3]) -> [bool; 3] {
    let Group::Lanes(n) = group else {
        return NO_SHARED_INDEX;
    };
    let n = u64::from(n.max(1));
    let rows = extent[0].is_multiple_of(n);
    let planes = rows || extent[0].saturating_mul(extent[1]).is_multiple_of(n);
    [false, rows, planes]
}

/// Why a symbol exists: shown in witnesses, and it decides which facts hold.
#[derive(Clone, Debug)]
pub enum Origin {
    /// How many iterations of the loop the thread has completed (`k ≥ 0`).
    Counter { label: LabelId },
    /// The iteration in which the thread leaves the loop (`N ≥ 0`).
    ExitCount { label: LabelId },
    /// A value loaded from memory. Loads from memory no thread writes are
    /// functions of their address: equal addresses give equal values.
    Load {
        object: ObjectId,
        offset: Term,
        width: Term,
    },
    /// A value the front end did not model (an opaque call, uninitialised).
    Input { reason: String },
    /// The result of a warp or block collective. `operand` is kept for a
    /// full-warp reduction whose operand every warp computes alike, lane by
    /// lane (see `passes::accesses`): every warp of the block then gets the
    /// same result, and the symbol's scope is the block's.
    Collective { name: String, operand: Option<Term> },
    /// A variable the loop analysis could not express in the iteration count.
    LoopValue { var: String },
    /// A choice the model makes per thread (`StmtKind::Choose`): any value,
    /// and no fact constrains it, so a loop may take a fresh one for an
    /// earlier iteration's.
    Choice,
    /// How far a barrier counter (a phase) has advanced since its loop was
    /// entered, where the advance per iteration is not a constant (an inner
    /// loop's trip count): counters never decrease, so it is `≥ 0`.
    /// `advance` is how far one iteration moves it (in that iteration's
    /// values): a later iteration's progress is at least an earlier one's
    /// plus its advance. At the loop's exit, `exit_of` names the progress
    /// within the loop (the exit's is at least any iteration's plus its
    /// advance).
    Progress {
        var: String,
        advance: Option<Term>,
        exit_of: Option<SymbolId>,
    },
    /// An element of an access range (`memcpy`, a tile).
    Range,
    /// Stands for a variable's value at the top of an iteration while the
    /// loop is analysed; replaced before the model is complete.
    Placeholder { var: String },
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub ty: ScalarTy,
    pub scope: Scope,
    pub origin: Origin,
    /// The counters of the loops around the point that created it.
    pub deps: Vec<SymbolId>,
    pub span: Span,
}

impl Symbol {
    /// A loaded value, an unmodelled input or a collective's result (a
    /// function of other lanes' data that is not interpreted): an alarm
    /// that depends on it depends on the data.
    /// `__activemask()` is not data: the contract never trusts its value,
    /// whatever it is.
    pub fn is_input(&self) -> bool {
        match &self.origin {
            Origin::Load { .. } | Origin::Input { .. } => true,
            Origin::Collective { name, .. } => name != "__activemask",
            _ => false,
        }
    }
}

/// The three barrier counters of a thread when it performs an access: block
/// barriers passed, warp-ordering points passed (block barriers and full
/// `__syncwarp`s), grid barriers passed.
#[derive(Clone, Debug)]
pub struct Phase {
    pub block: Term,
    pub warp: Term,
    pub grid: Term,
}

/// One access of the generic thread.
#[derive(Clone, Debug)]
pub struct AccessRecord {
    pub object: ObjectId,
    pub kind: AccessKind,
    /// Offset into the object, in the object's unit (`AccessModel::units`).
    pub offset: Term,
    /// Units accessed.
    pub width: Term,
    /// When the thread performs it.
    pub pc: Term,
    pub phase: Phase,
    /// Part of a warp collective (`ldmatrix`, wmma): performed by the warp as a unit.
    pub collective: bool,
    /// An asynchronous copy landing after its thread returned
    /// (`ir::Access::lingering`): its phases are any from the return's on.
    pub lingering: bool,
    /// Part of a library exchange (`ir::Access::exchange`).
    pub exchange: bool,
    /// The loop counters around it, outermost first.
    pub loops: Vec<SymbolId>,
    pub span: Span,
    pub site: Span,
}

/// The threads that must execute a collective together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// Aligned runs of `n` lanes of a warp (`n` = the warp size, or a
    /// cooperative-groups tile's size).
    Lanes(u32),
    /// Every thread of the block (block barriers, CUB block collectives).
    Block,
    /// Every thread of the grid (`this_grid().sync()`).
    Grid,
}

/// One collective the generic thread executes: a warp primitive, a block
/// barrier, a library collective. The participation condition asks that the
/// whole group executes it together, with the full mask.
#[derive(Clone, Debug)]
pub struct SyncRecord {
    /// What the source called (`__shfl_xor_sync`, `__syncthreads`…).
    pub name: String,
    pub group: Group,
    /// When the thread executes it, given that it is in the iterations
    /// `loops` (without facts of earlier loops' exits: see `passes::accesses`).
    pub reach: Term,
    /// The branches that decide `reach`, outermost first: (the `if`, its
    /// condition), for explanations.
    pub guards: Vec<(Span, Term)>,
    /// The member mask; `None` when the primitive names no mask (it implies
    /// the whole group).
    pub mask: Option<Term>,
    /// The loop counters around it, outermost first.
    pub loops: Vec<SymbolId>,
    pub span: Span,
    pub site: Span,
}

/// One loop, as the participation condition sees it: how a thread leaves an
/// iteration. Conditions are relative to the iteration (the thread is in
/// iteration `counter` of this loop and of the loops in `loops`).
#[derive(Clone, Debug)]
pub struct LoopRecord {
    pub counter: SymbolId,
    /// Counters of the enclosing loops, outermost first, then `counter`.
    pub loops: Vec<SymbolId>,
    /// The path condition under which the loop is entered.
    pub entry: Term,
    /// The thread leaves the loop in this iteration (its test fails, a
    /// `break`, or an exit past the loop).
    pub leave: Term,
    /// The thread leaves past the loop (`return`, an exit to an outer label):
    /// it skips the code after the loop, too.
    pub escape: Term,
    /// Indices of the sync records created inside the loop: `[from, to)`.
    pub syncs: (usize, usize),
    /// The thread leaves only where the test at the top of an iteration
    /// fails (no `break`, no escape, not a `do`-loop): inside the body, the
    /// iteration count is below the exit count.
    pub exits_at_top: bool,
    pub span: Span,
}

/// A kernel instantiation's memory behaviour, per generic thread.
pub struct AccessModel {
    pub terms: Terms,
    pub symbols: Vec<Symbol>,
    pub records: Vec<AccessRecord>,
    /// The collectives, in program order.
    pub syncs: Vec<SyncRecord>,
    pub loops: Vec<LoopRecord>,
    /// Facts of the launch, over parameters and dimensions (`blockDim.y ==
    /// k` from a launch site that passes one host value as both).
    pub assumptions: Vec<Term>,
    /// What the kernel promises (`ir::StmtKind::Promise`), each as `path
    /// condition → fact` over one thread: it holds for every thread of an
    /// execution without undefined behaviour, so for both of a witness.
    pub promises: Vec<Term>,
    /// The assumptions the host evaluated as they stand
    /// (`ir::LaunchFact::evaluated`): no undefined behaviour in them.
    pub evaluated: Vec<Term>,
    pub warp_size: u32,
    /// Why some part of the kernel could not be modelled for memory (a
    /// verdict that depends on it is `unknown`).
    pub unknowns: Vec<(String, Span)>,
    /// Conversions (by term id) that never wrap: a loop counter's closed form
    /// converted back to its signed type, where every path through it also
    /// asserts that the value fits (overflow would be undefined).
    pub no_wrap: crate::hash::HashSet<u32>,
    /// What the model assumes beyond C semantics (reported with the verdict).
    pub assumed: Vec<String>,
    /// Objects (by index) no statement of the kernel writes: threads that
    /// load one address of one read the same value, so such a load is as
    /// uniform as its address (see `leaf_scope`).
    pub read_only: Vec<bool>,
    /// Bytes per unit of each object's offsets and widths (by index; 1:
    /// bytes). `passes::units` measures an object in its elements where its
    /// accesses allow, so that instantiations over element types share one
    /// model; witnesses convert back to bytes.
    pub units: Vec<u64>,
}

impl AccessModel {
    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id.index()]
    }

    /// The collective results held uniform over the block because their
    /// operand is a function of the lane ([`Origin::Collective`]; only in
    /// a model built for launches with warps along `threadIdx.x`).
    pub fn lane_reductions(&self) -> impl Iterator<Item = &Symbol> {
        self.symbols
            .iter()
            .filter(|s| matches!(&s.origin, Origin::Collective { operand: Some(_), .. }))
    }

    /// Whether a lane reduction's operand reads memory that some statement
    /// writes. Threads that load one address between the same barriers see
    /// one value unless a write races with the loads, so its uniformity
    /// holds where the memory condition does.
    pub fn lane_reductions_read_written(&self) -> bool {
        fn reads(model: &AccessModel, t: &Term, seen: &mut crate::hash::HashSet<u32>) -> bool {
            if !seen.insert(t.id) {
                return false;
            }
            if let TermKind::Symbol(s) = &t.kind {
                if let Origin::Load { object, offset, width } = &model.symbol(*s).origin {
                    let written = !model.read_only.get(object.index()).copied().unwrap_or(false);
                    return written || reads(model, offset, seen) || reads(model, width, seen);
                }
            }
            t.children().into_iter().any(|c| reads(model, c, seen))
        }
        let mut seen = crate::hash::HashSet::default();
        self.lane_reductions().any(|s| match &s.origin {
            Origin::Collective { operand: Some(x), .. } => reads(self, x, &mut seen),
            _ => false,
        })
    }

    /// The uniformity lattice: the widest scope whose threads surely compute
    /// the same value of `t` — the finest scope among its leaves.
    /// `assumed` gives scopes of symbols still being decided (loop
    /// placeholders); counters in `deps` are shared by the threads compared;
    /// a symbol that depends on other counters is per thread.
    pub fn scope_of(&self, t: &Term, assumed: &crate::hash::HashMap<SymbolId, Scope>, deps: &[SymbolId]) -> Scope {
        self.scope_with(t, assumed, deps, NO_SHARED_INDEX)
    }

    /// [`Self::scope_of`] where the thread indices marked in `shared` are
    /// shared by the group asked about (see [`shared_indices`]): they count
    /// as `Warp`, which covers every group of lanes.
    pub fn scope_with(
        &self,
        t: &Term,
        assumed: &crate::hash::HashMap<SymbolId, Scope>,
        deps: &[SymbolId],
        shared: [bool; 3],
    ) -> Scope {
        fn go(
            model: &AccessModel,
            t: &Term,
            assumed: &crate::hash::HashMap<SymbolId, Scope>,
            deps: &[SymbolId],
            shared: [bool; 3],
            seen: &mut crate::hash::HashSet<u32>,
            acc: &mut Scope,
        ) {
            if *acc == Scope::Thread || !seen.insert(t.id) {
                return;
            }
            if let Some(sc) = model.leaf_scope(t, assumed, deps, shared) {
                *acc = acc.finest(sc);
                return;
            }
            for c in t.children() {
                go(model, c, assumed, deps, shared, seen, acc);
            }
        }
        let mut acc = Scope::Grid;
        go(self, t, assumed, deps, shared, &mut Default::default(), &mut acc);
        acc
    }

    /// [`Self::scope_with`] without assumed symbols, memoised per node in
    /// `memo` (valid for one `deps` and `shared`): for callers that ask
    /// about every subterm of a term.
    pub fn scope_memo(
        &self,
        t: &Term,
        deps: &[SymbolId],
        shared: [bool; 3],
        memo: &mut crate::hash::HashMap<u32, Scope>,
    ) -> Scope {
        if let Some(s) = memo.get(&t.id) {
            return *s;
        }
        let scope = self
            .leaf_scope(t, &Default::default(), deps, shared)
            .unwrap_or_else(|| {
                t.children()
                    .into_iter()
                    .fold(Scope::Grid, |acc, c| acc.finest(self.scope_memo(c, deps, shared, memo)))
            });
        memo.insert(t.id, scope);
        scope
    }

    /// The scope of a leaf that decides it (see [`Self::scope_of`]); `None`
    /// for the others, whose scope is their children's.
    fn leaf_scope(
        &self,
        t: &Term,
        assumed: &crate::hash::HashMap<SymbolId, Scope>,
        deps: &[SymbolId],
        shared: [bool; 3],
    ) -> Option<Scope> {
        Some(match &t.kind {
            TermKind::Builtin(Builtin::ThreadIdx(d)) if shared[*d as usize] => Scope::Warp,
            TermKind::Builtin(Builtin::ThreadIdx(_)) => Scope::Thread,
            TermKind::Builtin(Builtin::BlockIdx(_)) => Scope::Block,
            TermKind::Symbol(s) => {
                if let Some(sc) = assumed.get(s) {
                    *sc
                } else if deps.contains(s) {
                    Scope::Grid
                } else {
                    let info = self.symbol(*s);
                    if !info.deps.iter().all(|d| deps.contains(d)) {
                        Scope::Thread
                    } else if let Origin::Load { object, offset, width } = &info.origin {
                        if self.read_only.get(object.index()).copied().unwrap_or(false) {
                            // Read here, with the scopes assumed now: in a
                            // loop, the address's own scope is still being
                            // decided by the fixpoint.
                            let at = self.scope_with(offset, assumed, deps, shared);
                            at.finest(self.scope_with(width, assumed, deps, shared))
                                .coarsest(info.scope)
                        } else {
                            info.scope
                        }
                    } else {
                        info.scope
                    }
                }
            }
            _ => return None,
        })
    }

    pub fn show<'a>(&'a self, t: &'a Term) -> impl fmt::Display + 'a {
        struct D<'a>(&'a AccessModel, &'a Term);
        impl fmt::Display for D<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let names = |s: SymbolId| self.0.symbol(s).name.clone();
                write!(
                    f,
                    "{}",
                    Show {
                        term: self.1,
                        names: &names
                    }
                )
            }
        }
        D(self, t)
    }
}

impl fmt::Display for AccessModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "access model: {} records, {} collectives, {} loops, {} symbols, {} term nodes",
            self.records.len(),
            self.syncs.len(),
            self.loops.len(),
            self.symbols.len(),
            self.terms.len()
        )?;
        for p in &self.promises {
            writeln!(f, "  promise {}", self.show(p))?;
        }
        for (i, r) in self.records.iter().enumerate() {
            let kind = match r.kind {
                AccessKind::Read => "read".to_string(),
                AccessKind::Write => "write".to_string(),
                AccessKind::Atomic(op) => format!("atomic {op:?}").to_lowercase(),
            };
            let unit = match self.units.get(r.object.index()) {
                Some(&g) if g > 1 => format!(" (units of {g} bytes)"),
                _ => String::new(),
            };
            writeln!(
                f,
                "  #{i} {kind} obj{}[{} : {}]{unit}{}{}",
                r.object.0,
                self.show(&r.offset),
                self.show(&r.width),
                if r.collective { " (warp collective)" } else { "" },
                if r.lingering {
                    " (landing after its thread returned)"
                } else {
                    ""
                }
            )?;
            writeln!(f, "      when  {}", self.show(&r.pc))?;
            writeln!(
                f,
                "      phase block {} | warp {} | grid {}",
                self.show(&r.phase.block),
                self.show(&r.phase.warp),
                self.show(&r.phase.grid)
            )?;
        }
        // The uniformity stage: each collective's reach condition and the
        // scope the lattice proves it uniform at.
        let none = crate::hash::HashMap::default();
        for (i, r) in self.syncs.iter().enumerate() {
            let mask = r.mask.as_ref().map_or("-".to_string(), |m| self.show(m).to_string());
            writeln!(f, "  sync #{i} {} ({:?}) mask {mask}", r.name, r.group)?;
            writeln!(
                f,
                "      reached when {}  [lattice: {:?}]",
                self.show(&r.reach),
                self.scope_of(&r.reach, &none, &r.loops)
            )?;
        }
        for (i, l) in self.loops.iter().enumerate() {
            writeln!(
                f,
                "  loop #{i} counter {} holds syncs {}..{}",
                self.symbol(l.counter).name,
                l.syncs.0,
                l.syncs.1
            )?;
            writeln!(
                f,
                "      leaves when {}  [lattice: {:?}]",
                self.show(&l.leave),
                self.scope_of(&l.leave, &none, &l.loops)
            )?;
            if !l.escape.is_false() {
                writeln!(f, "      leaves past it when {}", self.show(&l.escape))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_share_the_indices_their_rows_and_planes_hold_whole() {
        // Rows of 32: a warp is one row, so y and z are shared.
        assert_eq!(shared_indices(Group::Lanes(32), [32, 8, 1]), [false, true, true]);
        // Rows of 16: a warp spans two rows (y differs) and, with 16 rows,
        // stays in one plane only if a plane is a whole number of warps.
        assert_eq!(shared_indices(Group::Lanes(32), [16, 16, 2]), [false, false, true]);
        assert_eq!(shared_indices(Group::Lanes(32), [16, 1, 4]), [false, false, false]);
        // Planes of 8×4 are whole warps; rows of 8 are not.
        assert_eq!(shared_indices(Group::Lanes(32), [8, 4, 2]), [false, false, true]);
        // A tile of 16 lanes in rows of 16.
        assert_eq!(shared_indices(Group::Lanes(16), [16, 16, 1]), [false, true, true]);
        // Nothing about the x index, and nothing for a block.
        assert_eq!(shared_indices(Group::Lanes(1), [7, 3, 1]), [false, true, true]);
        assert_eq!(shared_indices(Group::Block, [32, 8, 1]), NO_SHARED_INDEX);
    }
}
