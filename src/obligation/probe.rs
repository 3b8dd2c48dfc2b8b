//! Concrete runs of a kernel instantiation: a cheap search for races that
//! tells the solver which obligations to try first, and with which values.
//!
//! Every thread of a block or three executes the IR on its own, at a few
//! small launches whose parameters satisfy the launch's facts. What comes
//! from data, other lanes or unmodelled code is arbitrary but fixed, as the
//! access model leaves it: a load is a function of its address, an opaque
//! call of its arguments, a havoc a function of the thread. Threads run
//! apart, so a thread's phases are how many barriers it has passed (block
//! barriers, full-warp `__syncwarp`s, grid barriers, counted as
//! `passes::accesses` counts them). Two accesses of different threads that
//! meet on a byte, one of them a write, not both atomic, in phases that
//! leave them unordered (`smt::Encoder::unordered`'s rule) are a [`Lead`].
//!
//! A lead proves nothing: the run follows the model only where its
//! arbitrary values are ones the model allows. `check_memory` hands each
//! lead to the solver with the run's values pinned, and only the witness
//! the solver then finds is reported. Leads cost a fraction of a
//! first-round search (the pinned query is linear), and with `audit`'s
//! settling the first confirmed one ends the condition's check.

use crate::hash::{HashMap, HashSet};
use crate::ir::fold::{fold_int, type_of};
use crate::ir::{
    AccessKind, BarrierScope, BinOp, Block, Builtin, Dim, ExitKind, Expr, Kernel, LabelId, LaunchFact, ObjectId,
    ObjectKind, PrimKind, ScalarTy, Space, StmtKind, UnOp,
};
use crate::source::Span;

use super::Shape;

/// An access as the access model's records name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AccessKey {
    pub object: ObjectId,
    pub kind: AccessKind,
    pub span: Span,
    pub site: Span,
}

/// A value a lead gives: a parameter, a launch extent, or an index of one
/// of its two threads (instance 0 makes the lead's first access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    Param(u32),
    /// A symbolic constant of the kernel (`ir::SymId`).
    Sym(u32),
    Builtin(Builtin, usize),
}

/// Two accesses a concrete run left unordered, and the run's values.
#[derive(Clone, Debug)]
pub struct Lead {
    pub accesses: [AccessKey; 2],
    pub values: Vec<(Leaf, i128)>,
}

impl Lead {
    /// The same lead with its two threads swapped.
    pub fn swapped(&self) -> Lead {
        let values = self
            .values
            .iter()
            .map(|&(leaf, v)| match leaf {
                Leaf::Builtin(b @ (Builtin::ThreadIdx(_) | Builtin::BlockIdx(_)), inst) => {
                    (Leaf::Builtin(b, 1 - inst), v)
                }
                _ => (leaf, v),
            })
            .collect();
        Lead {
            accesses: [self.accesses[1], self.accesses[0]],
            values,
        }
    }
}

/// Launches tried at most, and candidates drawn to find them.
const LAUNCHES: usize = 5;
const CANDIDATES: usize = 24;
/// Evaluation steps (statements and expression nodes) per launch: about
/// 10 ms.
const STEPS: u64 = 250_000;
/// Evaluation steps for all the jobs of one kernel (see [`leads`]).
const KERNEL_STEPS: u64 = 1_000_000;
/// Iterations of one loop in one thread before the thread is stopped.
const ITERATIONS: u64 = 1 << 14;
/// Words (4 bytes) entered in a run's meeting maps at most: some 100 MiB.
const WORDS: usize = 1 << 20;
/// Leads reported at most.
const LEADS: usize = 8;
/// Threads per block at most.
const THREADS: u32 = 1024;
/// Values drawn for integer parameters.
const PARAM_VALUES: [i128; 14] = [1, 2, 3, 4, 8, 16, 32, 64, 0, 5, 7, 128, 256, 33];

/// What the runs of one kernel may spend, in evaluation steps.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// For all the runs of the kernel's jobs; what is left.
    pub left: u64,
    /// For one launch.
    pub per_launch: u64,
    /// Launches per job at most.
    pub launches: usize,
}

impl Budget {
    /// A kernel's runs before its obligations: a few tens of milliseconds.
    pub fn first() -> Budget {
        Budget {
            left: KERNEL_STEPS,
            per_launch: STEPS,
            launches: LAUNCHES,
        }
    }

    /// A kernel whose memory condition has no pass in reach
    /// (`MemoryResult::out_of_reach`): only an alarm can settle it, so
    /// the runs go deeper, the first two launches of each job for up to
    /// a second (a pipelined kernel's thread runs 10^5 steps a tile;
    /// flash_attn_ext_f16's tile_Q race needs two tiles).
    pub fn deep() -> Budget {
        Budget {
            left: DEEP_KERNEL_STEPS,
            per_launch: DEEP_STEPS,
            launches: 2,
        }
    }
}

/// [`Budget::deep`]'s steps per launch and per kernel.
const DEEP_STEPS: u64 = 2_000_000;
const DEEP_KERNEL_STEPS: u64 = 40_000_000;

/// The leads of `kernel` at small launches of `shape` that satisfy `facts`,
/// within `budget` (what is left of it is returned in it).
pub fn leads(kernel: &Kernel, facts: &[LaunchFact], shape: &Shape, warp_size: u32, budget: &mut Budget) -> Vec<Lead> {
    let t0 = std::time::Instant::now();
    let found = leads_within(kernel, facts, shape, warp_size, budget);
    crate::profile::record("probe", t0.elapsed(), 0);
    found
}

/// [`leads`], unprofiled.
fn leads_within(
    kernel: &Kernel,
    facts: &[LaunchFact],
    shape: &Shape,
    warp_size: u32,
    budget: &mut Budget,
) -> Vec<Lead> {
    // Objects no thread writes cannot race: their accesses are not kept.
    let mut written = vec![false; kernel.objects.len()];
    kernel.body.walk(&mut |s| {
        if let StmtKind::Access(a) = &s.kind {
            written[a.object.index()] |= a.kind.writes();
        }
    });
    if !written.contains(&true) {
        return Vec::new();
    }
    let mut found = Found::default();
    let debug = std::env::var_os("WARPDRF_DEBUG_PROBE").is_some();
    for launch in launches(kernel, facts, shape, warp_size)
        .into_iter()
        .take(budget.launches)
    {
        if budget.left == 0 {
            break;
        }
        let limit = budget.per_launch.min(budget.left);
        let spent = run(kernel, &launch, warp_size, limit, &written, &mut found);
        budget.left = budget.left.saturating_sub(spent);
        if debug {
            eprintln!("probe {} {launch:?}: {} leads", kernel.name, found.leads.len());
        }
        if found.leads.len() >= LEADS {
            break;
        }
    }
    found.leads
}

/// One launch: extents and parameter values.
#[derive(Clone, Debug)]
struct Launch {
    block: [u32; 3],
    grid: [u32; 3],
    params: Vec<i128>,
    /// Values of the kernel's symbolic constants (headers not found,
    /// template parameters left symbolic).
    syms: Vec<i128>,
}

/// A small deterministic generator (splitmix64).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of several values.
fn hash(parts: &[i128]) -> u64 {
    parts.iter().fold(0x243f_6a88_85a3_08d3u64, |h, &p| {
        mix(h ^ (p as u64) ^ mix((p >> 64) as u64))
    })
}

/// Up to [`LAUNCHES`] launches of `shape` whose parameters satisfy `facts`:
/// every parameter 4; then strides 0 (see [`Roles`]) and the rest 4, so
/// that rows, planes and steps fall onto one another; every parameter 1
/// but shift amounts 0 (a magic-number division's `(1, 0, 1)` divides by
/// 1); strides and shift amounts 0 and sizes 300 (two blocks of 256,
/// ragged); then drawn values. Facts set or move parameters and extents
/// (see [`satisfy`]).
fn launches(kernel: &Kernel, facts: &[LaunchFact], shape: &Shape, warp_size: u32) -> Vec<Launch> {
    let mut draw = Draw(0x5eed);
    // Strides, but not the parameters the facts constrain (sizes).
    let Roles { mut stride, shift } = roles(kernel);
    for f in facts {
        f.expr.visit(&mut |x| {
            if let Expr::Param(i) = x {
                if let Some(s) = stride.get_mut(*i as usize) {
                    *s = false;
                }
            }
        });
    }
    let mut out: Vec<Launch> = Vec::new();
    for attempt in 0..CANDIDATES {
        if out.len() >= LAUNCHES {
            break;
        }
        let block = block_of(shape, attempt, &mut draw);
        let grid: [u32; 3] = std::array::from_fn(|d| match shape.grid_dim {
            Some(g) => g[d].max(1),
            None if shape.unit_grid[d] => 1,
            // Two blocks along every dimension the kernel reads, then drawn.
            None if d == 0 || attempt < 4 => 2,
            None => draw.pick(&[1, 2]),
        });
        let params: Vec<i128> = kernel
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let v = match attempt {
                    0 => 4,
                    1 | 3 if stride[i] => 0,
                    1 => 4,
                    2 | 3 if shift[i] => 0,
                    2 => 1,
                    // Sizes past a block of 256: two blocks, ragged ends.
                    3 => 300,
                    _ => draw.pick(&PARAM_VALUES),
                };
                match p.ty {
                    ScalarTy::Bool => v & 1,
                    ty => ty.wrap(v),
                }
            })
            .collect();
        let syms: Vec<i128> = kernel
            .syms
            .iter()
            .map(|s| {
                let v = match attempt {
                    0..=3 => 32,
                    _ => draw.pick(&[1, 2, 4, 8, 32]),
                };
                s.ty.wrap(v)
            })
            .collect();
        let mut launch = Launch {
            block,
            grid,
            params,
            syms,
        };
        if satisfy(kernel, facts, &mut launch, warp_size) && !out.iter().any(|l| same(l, &launch)) {
            out.push(launch);
        }
    }
    out
}

/// What each parameter does, as the runs' launches tell parameters apart.
struct Roles {
    /// It reaches no condition (of a branch, a loop, a selection, an
    /// assumption, an access range) and no divisor, only values such as
    /// offsets.
    stride: Vec<bool>,
    /// It reaches a shift's amount (`x >> p`: at 0 a magic-number
    /// division by a multiplier of 1 divides by 1).
    shift: Vec<bool>,
}

/// The roles of `kernel`'s parameters. Flow-insensitive: a variable
/// depends on every parameter any assignment to it reads.
fn roles(kernel: &Kernel) -> Roles {
    let n = kernel.params.len();
    let mut deps: Vec<Vec<bool>> = vec![vec![false; n]; kernel.vars.len()];
    let reads = |e: &Expr, deps: &[Vec<bool>], out: &mut Vec<bool>| {
        e.visit(&mut |x| match x {
            Expr::Param(i) if (*i as usize) < n => out[*i as usize] = true,
            Expr::Var(v) => {
                for (o, d) in out.iter_mut().zip(&deps[v.index()]) {
                    *o |= *d;
                }
            }
            _ => {}
        })
    };
    for _ in 0..4 {
        let mut changed = false;
        kernel.body.walk(&mut |st| {
            if let StmtKind::Assign { var, value } = &st.kind {
                let mut now = deps[var.index()].clone();
                reads(value, &deps, &mut now);
                if now != deps[var.index()] {
                    deps[var.index()] = now;
                    changed = true;
                }
            }
        });
        if !changed {
            break;
        }
    }
    let mut control = vec![false; n];
    kernel.body.walk(&mut |st| match &st.kind {
        StmtKind::If { cond, .. } | StmtKind::Assume(cond) | StmtKind::Promise(cond) => {
            reads(cond, &deps, &mut control)
        }
        StmtKind::Loop(l) => reads(&l.cond, &deps, &mut control),
        StmtKind::Access(a) => {
            for r in &a.ranges {
                reads(&r.lo, &deps, &mut control);
                reads(&r.hi, &deps, &mut control);
            }
        }
        _ => st.for_each_expr(&mut |e| {
            e.visit(&mut |x| {
                if let Expr::Select(c, _, _) = x {
                    reads(c, &deps, &mut control);
                }
            })
        }),
    });
    // A divisor is a size too: at 0 every thread that divides by it stops
    // (cpy_f32_q's `i / (ne00 * ne01 * ne02)` before any access).
    let mut shift = vec![false; n];
    kernel.body.walk(&mut |st| {
        st.for_each_expr(&mut |e| {
            e.visit(&mut |x| match x {
                Expr::Binary(BinOp::Div | BinOp::Rem, _, _, d) => reads(d, &deps, &mut control),
                Expr::Binary(BinOp::Shl | BinOp::Shr, _, _, amount) => reads(amount, &deps, &mut shift),
                _ => {}
            })
        })
    });
    let stride = control
        .iter()
        .zip(&kernel.params)
        .map(|(c, p)| !c && p.ty.is_int())
        .collect();
    let shift = shift
        .iter()
        .zip(&kernel.params)
        .map(|(s, p)| *s && p.ty.is_int())
        .collect();
    Roles { stride, shift }
}

impl Launch {
    /// The thread index of the block's `linear`th thread (`x` fastest).
    fn thread(&self, linear: u32) -> [u32; 3] {
        let [bx, by, _] = self.block;
        [linear % bx, linear / bx % by, linear / (bx * by)]
    }
}

fn same(a: &Launch, b: &Launch) -> bool {
    a.block == b.block && a.grid == b.grid && a.params == b.params && a.syms == b.syms
}

/// A block shape: as given where known, else 32 (then drawn) along `x`
/// and 1 or 2 along the others, within the launch bounds.
fn block_of(shape: &Shape, attempt: usize, draw: &mut Draw) -> [u32; 3] {
    if let Some(b) = shape.block_dim {
        return b.map(|v| v.max(1));
    }
    let mut block: [u32; 3] = std::array::from_fn(|d| {
        if shape.unit_block[d] {
            return 1;
        }
        if let Some(v) = shape.block_known[d] {
            return v.max(1);
        }
        let v: u32 = match (d, attempt) {
            (0, 0..=2) => 32,
            (0, 3) => 256,
            (0, _) => draw.pick(&[32, 64, 128, 256, 48]),
            (_, 0..=3) => 1,
            _ => draw.pick(&[1, 2]),
        };
        let m = shape.block_multiple[d].max(1);
        v.div_ceil(m) * m
    });
    let cap = shape.max_threads.map_or(THREADS, |t| t.min(u64::from(THREADS)) as u32);
    while block.iter().product::<u32>() > cap && block[0] > 1 {
        block[0] = (block[0] / 2).max(1);
    }
    block
}

/// Sets parameters and extents from facts (a few sweeps), then whether
/// every fact holds. A fact `x == e` sets `x`, one that bounds `x` by `e`
/// (`x >= e`, `!(x < e)`, …) moves `x` to the bound where it is beyond,
/// and `x % c == 0` moves `x` up to a multiple of `c`.
fn satisfy(kernel: &Kernel, facts: &[LaunchFact], launch: &mut Launch, warp_size: u32) -> bool {
    if launch.block.iter().map(|&v| u64::from(v)).product::<u64>() > u64::from(THREADS) {
        return false;
    }
    // The side of a comparison that is a parameter or an extent, up to
    // conversions.
    fn settable(e: &Expr) -> Option<&Expr> {
        match e {
            Expr::Cast(_, inner) => settable(inner),
            Expr::Param(_) | Expr::Builtin(Builtin::GridDim(_) | Builtin::BlockDim(_)) => Some(e),
            _ => None,
        }
    }
    let eval = |launch: &Launch, e: &Expr| {
        Consts {
            kernel,
            launch,
            warp_size,
        }
        .eval(e)
    };
    let current = |launch: &Launch, target: &Expr| match *target {
        Expr::Param(i) => launch.params.get(i as usize).copied(),
        Expr::Builtin(Builtin::GridDim(d)) => Some(i128::from(launch.grid[d as usize])),
        Expr::Builtin(Builtin::BlockDim(d)) => Some(i128::from(launch.block[d as usize])),
        _ => None,
    };
    let set = |launch: &mut Launch, target: &Expr, v: i128| match *target {
        Expr::Param(i) => {
            let ty = kernel.params[i as usize].ty;
            launch.params[i as usize] = if ty.is_int() || ty == ScalarTy::Bool {
                ty.wrap(v)
            } else {
                v
            };
        }
        Expr::Builtin(Builtin::GridDim(d)) if (1..=i128::from(u32::MAX >> 1)).contains(&v) => {
            launch.grid[d as usize] = v as u32;
        }
        Expr::Builtin(Builtin::BlockDim(d)) if (1..=i128::from(THREADS)).contains(&v) => {
            launch.block[d as usize] = v as u32;
        }
        _ => {}
    };
    for _ in 0..3 {
        for f in facts {
            let (negated, fact) = match &f.expr {
                Expr::Unary(UnOp::Not, _, inner) => (true, &**inner),
                e => (false, e),
            };
            let Expr::Binary(op, _, a, b) = fact else { continue };
            let op = match (negated, op.negated()) {
                (false, _) => *op,
                (true, Some(op)) => op,
                (true, None) => continue,
            };
            // `x % c == 0`: `x` up to a multiple of `c`.
            if op == BinOp::Eq {
                for (r, z) in [(a, b), (b, a)] {
                    let Expr::Binary(BinOp::Rem, _, x, c) = &**r else {
                        continue;
                    };
                    let Some(target) = settable(x) else { continue };
                    let (Some(0), Some(c), Some(now)) = (eval(launch, z), eval(launch, c), current(launch, target))
                    else {
                        continue;
                    };
                    if c > 0 && now.rem_euclid(c) != 0 {
                        set(launch, target, (now.div_euclid(c) + 1) * c);
                    }
                }
            }
            for (p, e, op) in [(a, b, op), (b, a, op.swapped())] {
                let Some(target) = settable(p) else { continue };
                let (Some(v), Some(now)) = (eval(launch, e), current(launch, target)) else {
                    continue;
                };
                let goal = match op {
                    BinOp::Eq => Some(v),
                    BinOp::Ge if now < v => Some(v),
                    BinOp::Gt if now <= v => Some(v + 1),
                    BinOp::Le if now > v => Some(v),
                    BinOp::Lt if now >= v => Some(v - 1),
                    _ => None,
                };
                if let Some(goal) = goal {
                    set(launch, target, goal);
                }
            }
        }
    }
    let debug = std::env::var_os("WARPDRF_DEBUG_PROBE").is_some();
    facts.iter().all(|f| {
        let v = Consts {
            kernel,
            launch,
            warp_size,
        }
        .eval(&f.expr);
        if debug && v.is_none_or(|v| v == 0) {
            eprintln!("probe: {launch:?} fails {:?}: {v:?}", f.expr);
        }
        v.is_some_and(|v| v != 0)
    })
}

/// Evaluation of launch-wide expressions (facts): parameters and extents.
struct Consts<'a> {
    kernel: &'a Kernel,
    launch: &'a Launch,
    warp_size: u32,
}

impl Consts<'_> {
    fn eval(&self, e: &Expr) -> Option<i128> {
        let mut steps = 0;
        let mut vars = Vars::default();
        let mut x = Exec::new(
            self.kernel,
            self.launch,
            self.warp_size,
            [0; 3],
            [0; 3],
            &mut steps,
            &mut vars,
        );
        x.uniform_only = true;
        x.eval(e)
    }
}

/// What the runs found: the leads, and the pairs of accesses they name.
#[derive(Default)]
struct Found {
    leads: Vec<Lead>,
    pairs: HashSet<(AccessKey, AccessKey)>,
}

/// One access a thread made.
#[derive(Clone, Copy)]
struct Event {
    access: AccessKey,
    lo: i128,
    hi: i128,
    collective: bool,
    /// Part of a library exchange (`ir::Access::exchange`).
    exchange: bool,
    /// Block, warp and grid phases.
    phase: [u64; 3],
}

/// Who made an access.
#[derive(Clone, Copy)]
struct Maker {
    block: usize,
    thread: u32,
    warp: u32,
    warp_phase: u64,
    event: Event,
}

/// The blocks a run takes from a grid of `grid`: the first, the next one
/// along each dimension the grid extends in (blocks that differ in one
/// index only, as rows of a tensor spread over `blockIdx.y` and
/// `blockIdx.z` do), and the last.
fn blocks_of(grid: [u32; 3]) -> Vec<[u32; 3]> {
    let mut blocks = vec![[0; 3]];
    for d in 0..3 {
        if grid[d] > 1 {
            let mut b = [0; 3];
            b[d] = 1;
            blocks.push(b);
        }
    }
    let last = grid.map(|g| g.max(1) - 1);
    if !blocks.contains(&last) {
        blocks.push(last);
    }
    blocks
}

/// Runs the blocks of `launch` ([`blocks_of`]) for at most `limit` steps,
/// each thread of [`thread_order`] in every block before the next, and adds
/// the leads they show to `found`; the steps it took.
fn run(kernel: &Kernel, launch: &Launch, warp_size: u32, limit: u64, written: &[bool], found: &mut Found) -> u64 {
    let blocks = blocks_of(launch.grid);
    // In-block meetings: by (object, block, grid phase, block phase, word);
    // across blocks (global memory): by (object, grid phase, word).
    let mut within: HashMap<(u32, usize, u64, u64, i128), Vec<Maker>> = HashMap::default();
    let mut across: HashMap<(u32, u64, i128), Vec<Maker>> = HashMap::default();
    let mut steps = 0u64;
    let warp = warp_size.max(1);
    let threads: u32 = launch.block.iter().product();
    let order = thread_order(threads, warp);
    let mut vars = Vars::default();
    // Words entered in the meeting maps: bounded, so that a run of wide
    // accesses or ranges keeps its memory small.
    let mut entered = 0usize;
    for &linear in &order {
        for (b, bid) in blocks.iter().enumerate() {
            if steps >= limit || found.leads.len() >= LEADS || entered >= WORDS {
                return steps;
            }
            let tid = launch.thread(linear);
            let mut x = Exec::new(kernel, launch, warp_size, tid, *bid, &mut steps, &mut vars);
            x.limit = limit;
            x.written = written;
            x.run();
            if x.invalid {
                continue;
            }
            let events = std::mem::take(&mut x.events);
            for event in events {
                let maker = Maker {
                    block: b,
                    thread: linear,
                    warp: linear / warp,
                    warp_phase: event.phase[1],
                    event,
                };
                let object = kernel.objects[event.access.object.index()].space;
                let first = event.lo.div_euclid(4);
                let last = (event.hi - 1).div_euclid(4).min(first + 15);
                entered += (last - first + 1) as usize;
                for word in first..=last {
                    let key = (event.access.object.0, b, event.phase[2], event.phase[0], word);
                    let list = within.entry(key).or_default();
                    for other in list.iter() {
                        let same_warp = other.warp == maker.warp;
                        if other.thread != linear
                            && conflicts(&other.event, &event, same_warp)
                            && (!same_warp || other.warp_phase == maker.warp_phase)
                        {
                            found.add(other, &maker, launch, &blocks);
                        }
                    }
                    keep(list, maker, |m| m.thread == linear);
                    if object == Space::Global {
                        let list = across.entry((event.access.object.0, event.phase[2], word)).or_default();
                        for other in list.iter() {
                            if other.block != b && conflicts(&other.event, &event, false) {
                                found.add(other, &maker, launch, &blocks);
                            }
                        }
                        keep(list, maker, |m| m.block == b);
                    }
                }
            }
        }
    }
    steps
}

/// The order a block's threads run in: lanes 0, 1 and the last of every
/// warp, the block's last thread, then the other lanes in bit-reversed
/// order (16, 8, 24, 4…), each of every warp: a run cut short by its
/// budget has met lanes far apart and near, in every warp.
fn thread_order(threads: u32, warp: u32) -> Vec<u32> {
    let bits = warp.next_power_of_two().trailing_zeros();
    let reversed = |l: u32| if bits == 0 { 0 } else { l.reverse_bits() >> (32 - bits) };
    let mut lanes: Vec<u32> = vec![0, 1.min(warp - 1), warp - 1];
    lanes.extend((0..warp.next_power_of_two()).map(reversed).filter(|&l| l < warp));
    let mut seen = vec![false; threads as usize];
    let mut order = Vec::with_capacity(threads as usize);
    let mut take = |t: u32, order: &mut Vec<u32>| {
        if t < threads && !std::mem::replace(&mut seen[t as usize], true) {
            order.push(t);
        }
    };
    for (at, &lane) in lanes.iter().enumerate() {
        for w in 0..threads.div_ceil(warp) {
            take(w * warp + lane, &mut order);
        }
        if at == 2 {
            take(threads - 1, &mut order);
        }
    }
    order
}

/// Keeps `maker` in `list` unless one like it (`like`, same access kind)
/// is there, or the list holds four.
fn keep(list: &mut Vec<Maker>, maker: Maker, like: impl Fn(&Maker) -> bool) {
    let writes = maker.event.access.kind.writes();
    if list.len() < 4 && !list.iter().any(|m| like(m) && m.event.access.kind.writes() == writes) {
        list.push(maker);
    }
}

/// Whether two accesses of different threads conflict where they meet:
/// a byte in common, a write, not both atomic, not one warp's collective,
/// not one library exchange.
fn conflicts(a: &Event, b: &Event, same_warp: bool) -> bool {
    let atomic = |k: AccessKind| matches!(k, AccessKind::Atomic(_));
    (a.access.kind.writes() || b.access.kind.writes())
        && !(atomic(a.access.kind) && atomic(b.access.kind))
        && a.lo < b.hi
        && b.lo < a.hi
        && !(a.collective && b.collective && same_warp)
        && !(a.exchange && b.exchange && a.access == b.access)
}

impl Found {
    fn add(&mut self, first: &Maker, second: &Maker, launch: &Launch, blocks: &[[u32; 3]]) {
        if self.leads.len() >= LEADS {
            return;
        }
        let (a, b) = (first.event.access, second.event.access);
        if self.pairs.contains(&(a, b)) || self.pairs.contains(&(b, a)) {
            return;
        }
        self.pairs.insert((a, b));
        let mut values: Vec<(Leaf, i128)> = launch
            .params
            .iter()
            .enumerate()
            .map(|(i, &v)| (Leaf::Param(i as u32), v))
            .chain(launch.syms.iter().enumerate().map(|(i, &v)| (Leaf::Sym(i as u32), v)))
            .collect();
        for d in Dim::ALL {
            let i = d as usize;
            values.push((Leaf::Builtin(Builtin::BlockDim(d), 0), i128::from(launch.block[i])));
            values.push((Leaf::Builtin(Builtin::GridDim(d), 0), i128::from(launch.grid[i])));
            for (inst, m) in [first, second].into_iter().enumerate() {
                let tid = launch.thread(m.thread);
                values.push((Leaf::Builtin(Builtin::ThreadIdx(d), inst), i128::from(tid[i])));
                values.push((
                    Leaf::Builtin(Builtin::BlockIdx(d), inst),
                    i128::from(blocks[m.block][i]),
                ));
            }
        }
        self.leads.push(Lead {
            accesses: [a, b],
            values,
        });
    }
}

/// How a statement list ends.
enum Flow {
    Next,
    Exit(LabelId, ExitKind),
    /// The thread stops (a return from the kernel, a trap, the step budget).
    Stop,
}

/// A thread's variables, kept for the next thread: a generation stamp
/// per slot says whether this thread has set it, so that starting a
/// thread costs nothing however many variables the kernel has.
#[derive(Default)]
struct Vars {
    values: Vec<i128>,
    stamps: Vec<u32>,
    generation: u32,
}

impl Vars {
    /// Every variable unset (for the next thread).
    fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamps.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
    }

    fn get(&self, at: usize) -> Option<i128> {
        (self.stamps.get(at) == Some(&self.generation)).then(|| self.values[at])
    }

    fn set(&mut self, at: usize, v: i128) {
        if at >= self.values.len() {
            self.values.resize(at + 1, 0);
            self.stamps.resize(at + 1, 0);
        }
        self.values[at] = v;
        self.stamps[at] = self.generation;
    }
}

/// One thread's execution.
struct Exec<'a> {
    kernel: &'a Kernel,
    launch: &'a Launch,
    warp_size: u32,
    tid: [u32; 3],
    bid: [u32; 3],
    vars: &'a mut Vars,
    /// Block, warp and grid phases: the barriers passed.
    phase: [u64; 3],
    steps: &'a mut u64,
    /// Steps (of all the threads of a run) at which the thread stops.
    limit: u64,
    /// How many arbitrary values the thread has drawn (each is new).
    drawn: u64,
    events: Vec<Event>,
    /// The thread broke a promise: no thread the program runs.
    invalid: bool,
    /// Only launch-wide values may be read (facts).
    uniform_only: bool,
    /// Per object, whether any thread writes it (only those are kept).
    written: &'a [bool],
}

impl<'a> Exec<'a> {
    fn new(
        kernel: &'a Kernel,
        launch: &'a Launch,
        warp_size: u32,
        tid: [u32; 3],
        bid: [u32; 3],
        steps: &'a mut u64,
        vars: &'a mut Vars,
    ) -> Exec<'a> {
        vars.clear();
        Exec {
            kernel,
            launch,
            warp_size,
            tid,
            bid,
            vars,
            phase: [0; 3],
            steps,
            limit: u64::MAX,
            drawn: 0,
            events: Vec::new(),
            invalid: false,
            uniform_only: false,
            written: &[],
        }
    }

    fn run(&mut self) {
        let body = &self.kernel.body;
        let _ = self.block(body);
    }

    fn linear_tid(&self) -> i128 {
        let [bx, by, _] = self.launch.block;
        i128::from(self.tid[0] + self.tid[1] * bx + self.tid[2] * bx * by)
    }

    /// A value of `ty` no one can predict, new at each draw: small for
    /// integers (indices computed from it stay near the data).
    fn arbitrary(&mut self, ty: ScalarTy, salt: i128) -> i128 {
        self.drawn += 1;
        let h = hash(&[salt, self.linear_tid(), self.bid_linear(), self.drawn as i128]);
        shaped(ty, h)
    }

    fn bid_linear(&self) -> i128 {
        let [gx, gy, _] = self.launch.grid;
        i128::from(self.bid[0])
            + i128::from(self.bid[1]) * i128::from(gx)
            + i128::from(self.bid[2]) * i128::from(gx) * i128::from(gy)
    }

    fn block(&mut self, b: &Block) -> Flow {
        for s in &b.0 {
            *self.steps += 1;
            if *self.steps > self.limit {
                return Flow::Stop;
            }
            match self.stmt(&s.kind, s.span, s.site) {
                Flow::Next => {}
                other => return other,
            }
        }
        Flow::Next
    }

    fn set(&mut self, var: crate::ir::VarId, v: i128) {
        let ty = self.kernel.vars[var.index()].ty;
        self.vars.set(
            var.index(),
            if ty.is_int() || ty == ScalarTy::Bool {
                ty.wrap(v)
            } else {
                v
            },
        );
    }

    fn stmt(&mut self, kind: &StmtKind, span: Span, site: Span) -> Flow {
        match kind {
            StmtKind::Assign { var, value } => match self.eval(value) {
                Some(v) => self.set(*var, v),
                None => return Flow::Stop,
            },
            StmtKind::Havoc { var, .. } => {
                let ty = self.kernel.vars[var.index()].ty;
                let v = self.arbitrary(ty, i128::from(var.0));
                self.set(*var, v);
            }
            StmtKind::Choose { var } => {
                let v = self.arbitrary(ScalarTy::Bool, i128::from(var.0));
                self.set(*var, v);
            }
            StmtKind::Access(a) => {
                let object = &self.kernel.objects[a.object.index()];
                let tracked = self.written.get(a.object.index()).copied().unwrap_or(true)
                    && !matches!(object.kind, ObjectKind::Untraced)
                    && object.space != Space::Local
                    && (object.space != Space::Constant || a.kind.writes())
                    && !a.lingering;
                let key = AccessKey {
                    object: a.object,
                    kind: a.kind,
                    span,
                    site,
                };
                // Each range's ends and a few values between.
                let mut choices: Vec<Vec<i128>> = Vec::new();
                for r in &a.ranges {
                    let (Some(lo), Some(hi)) = (self.eval(&r.lo), self.eval(&r.hi)) else {
                        return Flow::Stop;
                    };
                    let mut vals: Vec<i128> = (lo..hi.min(lo + 8)).collect();
                    if hi - 1 > lo + 8 {
                        vals.push(hi - 1);
                    }
                    choices.push(vals);
                }
                let mut last_offset = None;
                for pick in combinations(&choices) {
                    for (r, v) in a.ranges.iter().zip(&pick) {
                        self.set(r.var, *v);
                    }
                    let (Some(offset), Some(width)) = (self.eval(&a.offset), self.eval(&a.width)) else {
                        return Flow::Stop;
                    };
                    last_offset = Some(offset);
                    if tracked && width > 0 {
                        self.events.push(Event {
                            access: key,
                            lo: offset,
                            hi: offset + width,
                            collective: a.collective,
                            exchange: a.exchange,
                            phase: self.phase,
                        });
                    }
                }
                if let (Some(var), Some(offset)) = (a.result, last_offset) {
                    // A function of the address: equal addresses, equal values.
                    let ty = self.kernel.vars[var.index()].ty;
                    let v = shaped(ty, hash(&[i128::from(a.object.0), offset]));
                    self.set(var, v);
                }
            }
            StmtKind::Barrier(b) => {
                if let Some((pred, var)) = &b.predicate {
                    if self.eval(pred).is_none() {
                        return Flow::Stop;
                    }
                    // The block's result: one value for every thread of it.
                    let v = shaped(
                        ScalarTy::I32,
                        hash(&[i128::from(var.0), self.bid_linear(), i128::from(self.phase[0])]),
                    );
                    self.set(*var, v);
                }
                self.phase[0] += 1;
                self.phase[1] += 1;
                if b.scope == BarrierScope::Grid {
                    self.phase[2] += 1;
                }
            }
            StmtKind::Primitive(p) => {
                let full = (1i128 << self.warp_size.min(64)) - 1;
                let full_mask = match &p.mask {
                    None => true,
                    Some(m) => match self.eval(m) {
                        Some(v) => ScalarTy::U32.wrap(v) == ScalarTy::U32.wrap(full),
                        None => return Flow::Stop,
                    },
                };
                for a in &p.args {
                    if self.eval(a).is_none() {
                        return Flow::Stop;
                    }
                }
                for &r in &p.results {
                    let ty = self.kernel.vars[r.index()].ty;
                    let v = match p.kind {
                        PrimKind::ActiveMask => full,
                        _ => self.arbitrary(ty, i128::from(r.0)),
                    };
                    self.set(r, v);
                }
                if p.kind == PrimKind::SyncWarp && full_mask {
                    self.phase[1] += 1;
                }
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let Some(c) = self.eval(cond) else {
                    return Flow::Stop;
                };
                return self.block(if c != 0 { then_block } else { else_block });
            }
            StmtKind::Loop(l) => {
                let test = |x: &mut Self| -> Option<Result<bool, Flow>> {
                    match x.block(&l.cond_pre) {
                        Flow::Next => {}
                        other => return Some(Err(other)),
                    }
                    x.eval(&l.cond).map(|c| Ok(c != 0))
                };
                if l.test_first {
                    match test(self) {
                        Some(Ok(true)) => {}
                        Some(Ok(false)) => return Flow::Next,
                        Some(Err(f)) => return f,
                        None => return Flow::Stop,
                    }
                }
                let mut iterations = 0u64;
                loop {
                    iterations += 1;
                    if iterations > ITERATIONS {
                        return Flow::Stop;
                    }
                    match self.block(&l.body) {
                        Flow::Next => {}
                        Flow::Exit(label, ExitKind::Break) if label == l.label => return Flow::Next,
                        Flow::Exit(label, ExitKind::Continue) if label == l.label => {}
                        other => return other,
                    }
                    match self.block(&l.step) {
                        Flow::Next => {}
                        other => return other,
                    }
                    match test(self) {
                        Some(Ok(true)) => {}
                        Some(Ok(false)) => return Flow::Next,
                        Some(Err(f)) => return f,
                        None => return Flow::Stop,
                    }
                }
            }
            StmtKind::Labeled { label, body } => {
                return match self.block(body) {
                    Flow::Exit(l, _) if l == *label => Flow::Next,
                    other => other,
                }
            }
            StmtKind::Exit { label, kind } => {
                if *label == self.kernel.exit_label && *kind == ExitKind::Return {
                    return Flow::Stop;
                }
                return Flow::Exit(*label, *kind);
            }
            StmtKind::Assume(e) => {
                if self.eval(e).is_none_or(|v| v == 0) {
                    return Flow::Stop;
                }
            }
            StmtKind::Promise(e) => {
                if self.eval(e).is_none_or(|v| v == 0) {
                    self.invalid = true;
                    return Flow::Stop;
                }
            }
            StmtKind::AsyncCommit | StmtKind::AsyncWait { .. } | StmtKind::Unknown { .. } => {}
        }
        Flow::Next
    }

    /// The type of `e` where the kernel's tables say it.
    fn ty(&self, e: &Expr) -> Option<ScalarTy> {
        match e {
            Expr::Var(v) => Some(self.kernel.vars[v.index()].ty),
            Expr::Param(i) => self.kernel.params.get(*i as usize).map(|p| p.ty),
            Expr::Sym(s) => Some(self.kernel.syms[s.index()].ty),
            Expr::Float(_) => Some(ScalarTy::Float(crate::ir::FloatKind::F64)),
            _ => type_of(e),
        }
    }

    /// The value of `e`; `None` where C leaves it undefined (a division by
    /// zero, a shift past the width) or it is not launch-wide in a fact.
    fn eval(&mut self, e: &Expr) -> Option<i128> {
        *self.steps += 1;
        Some(match e {
            Expr::Int(v, _) => *v,
            Expr::Bool(b) => i128::from(*b),
            Expr::Float(f) => i128::from(f.to_bits()),
            Expr::Var(v) => {
                if self.uniform_only {
                    return None;
                }
                match self.vars.get(v.index()) {
                    Some(x) => x,
                    None => {
                        let ty = self.kernel.vars[v.index()].ty;
                        let x = self.arbitrary(ty, i128::from(v.0));
                        self.set(*v, x);
                        self.vars.get(v.index()).expect("set above")
                    }
                }
            }
            Expr::Builtin(b) => match b {
                Builtin::ThreadIdx(_) | Builtin::BlockIdx(_) if self.uniform_only => return None,
                Builtin::ThreadIdx(d) => i128::from(self.tid[*d as usize]),
                Builtin::BlockIdx(d) => i128::from(self.bid[*d as usize]),
                Builtin::BlockDim(d) => i128::from(self.launch.block[*d as usize]),
                Builtin::GridDim(d) => i128::from(self.launch.grid[*d as usize]),
                Builtin::WarpSize => i128::from(self.warp_size),
            },
            Expr::Param(i) => *self.launch.params.get(*i as usize)?,
            Expr::Sym(s) => *self.launch.syms.get(s.index())?,
            Expr::Unary(op, ty, a) => {
                let x = self.eval(a)?;
                match (op, ty.is_int()) {
                    (UnOp::Not, _) => i128::from(x == 0),
                    (UnOp::Neg, true) => ty.wrap(x.wrapping_neg()),
                    (UnOp::BitNot, true) => ty.wrap(!x),
                    _ => shaped(*ty, hash(&[*op as i128, x])),
                }
            }
            Expr::Binary(op, ty, a, b) => {
                // Pure, but C evaluates the right of `&&`/`||` only when needed
                // (a guard before a division by what it tests).
                if op.is_logical() {
                    let x = self.eval(a)? != 0;
                    if x == (*op == BinOp::Or) {
                        return Some(i128::from(x));
                    }
                    return Some(i128::from(self.eval(b)? != 0));
                }
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                if ty.is_int() || *ty == ScalarTy::Bool {
                    match fold_int(*op, *ty, ty.wrap(x), ty.wrap(y))? {
                        Expr::Int(v, _) => v,
                        Expr::Bool(v) => i128::from(v),
                        _ => return None,
                    }
                } else if op.is_comparison() {
                    (hash(&[*op as i128, x, y]) & 1) as i128
                } else {
                    shaped(*ty, hash(&[*op as i128, x, y]))
                }
            }
            Expr::Select(c, a, b) => {
                if self.eval(c)? != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Cast(ty, a) => {
                let from = self.ty(a);
                let x = self.eval(a)?;
                let from_number = from.is_some_and(|f| f.is_int() || f == ScalarTy::Bool);
                match ty {
                    ScalarTy::Bool => i128::from(x != 0),
                    ScalarTy::Int { .. } if from_number => ty.wrap(x),
                    ScalarTy::Int { .. } => shaped(*ty, hash(&[x])),
                    _ => x,
                }
            }
            Expr::Opaque(op, ty, args) => {
                let mut parts = vec![i128::from(op.0)];
                for a in args {
                    parts.push(self.eval(a)?);
                }
                let name = self.kernel.ops.get(op.0 as usize).map_or("", |o| o.name.as_str());
                match intrinsic(name, &parts[1..]) {
                    Some(v) => ty.wrap(v),
                    None => shaped(*ty, hash(&parts)),
                }
            }
        })
    }
}

/// The value of the integer intrinsic `name` (of 32-bit operands) at
/// `args`, where the runs know it: magic-number division (`__umulhi`)
/// divides as the code means only when computed.
fn intrinsic(name: &str, args: &[i128]) -> Option<i128> {
    let u = |x: i128| (x as u32) as i128;
    let s = |x: i128| (x as i32) as i128;
    Some(match (name, args) {
        ("__umulhi", &[a, b]) => (u(a) * u(b)) >> 32,
        ("__mulhi", &[a, b]) => (s(a) * s(b)) >> 32,
        ("__umul24", &[a, b]) => u(a & 0xff_ffff) * u(b & 0xff_ffff),
        ("__mul24", &[a, b]) => {
            let low = |x: i128| i128::from(((x as i32) << 8) >> 8);
            low(a) * low(b)
        }
        ("__popc", &[a]) => i128::from((a as u32).count_ones()),
        ("__clz", &[a]) => i128::from((a as u32).leading_zeros()),
        ("__ffs", &[a]) => match a as u32 {
            0 => 0,
            v => i128::from(v.trailing_zeros() + 1),
        },
        ("__brev", &[a]) => i128::from((a as u32).reverse_bits()),
        _ => return None,
    })
}

/// An arbitrary value `h` as a value of `ty`: 0 to 7 for integers, a bit
/// for booleans, the hash itself for anything else.
fn shaped(ty: ScalarTy, h: u64) -> i128 {
    match ty {
        ScalarTy::Bool => (h & 1) as i128,
        ScalarTy::Int { .. } => ty.wrap((h % 8) as i128),
        _ => h as i128,
    }
}

/// Every choice of one value from each list (one empty choice for none).
fn combinations(lists: &[Vec<i128>]) -> Vec<Vec<i128>> {
    let mut out = vec![Vec::new()];
    for list in lists {
        let mut next = Vec::new();
        for prefix in &out {
            for &v in list {
                let mut p = prefix.clone();
                p.push(v);
                next.push(p);
            }
        }
        out = next;
        if out.len() > 64 {
            out.truncate(64);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leads of the first kernel of `src` at blocks of `block` (any
    /// grid), as `(first line, second line)` pairs of 1-based source lines.
    /// A lead as its two accesses' lines and its values.
    type Found = (usize, usize, Vec<(Leaf, i128)>);

    fn leads_of(src: &str, block: Option<[u32; 3]>) -> Vec<Found> {
        let k = crate::lower::tests::kernels(src).remove(0);
        // As the driver has it: the dimensions the kernel never reads are 1.
        let (used_block, used_grid) = k.used_dims();
        let shape = Shape {
            block_dim: block,
            block_known: block.map_or([None; 3], |b| b.map(Some)),
            block_multiple: [1; 3],
            unit_block: used_block.map(|u| !u),
            unit_grid: used_grid.map(|u| !u),
            ..Shape::default()
        };
        let mut budget = Budget::first();
        let line = |s: Span| src[..s.start as usize].matches('\n').count() + 1;
        leads(&k, &[], &shape, 32, &mut budget)
            .into_iter()
            .map(|l| (line(l.accesses[0].span), line(l.accesses[1].span), l.values))
            .collect()
    }

    fn value(values: &[(Leaf, i128)], leaf: Leaf) -> Option<i128> {
        values.iter().find(|(l, _)| *l == leaf).map(|&(_, v)| v)
    }

    #[test]
    fn two_threads_writing_one_shared_word_are_a_lead_with_their_indices() {
        let src = "__global__ void k(int *out) {\n\
                   __shared__ int s[64];\n\
                   s[threadIdx.x % 16] = threadIdx.x;\n\
                   __syncthreads();\n\
                   out[threadIdx.x] = s[threadIdx.x % 16];\n\
                   }";
        let found = leads_of(src, Some([32, 1, 1]));
        let (a, b, values) = found
            .iter()
            .find(|(a, b, _)| (*a, *b) == (3, 3))
            .expect("the write races with itself");
        assert_eq!((*a, *b), (3, 3));
        let t0 = value(values, Leaf::Builtin(Builtin::ThreadIdx(Dim::X), 0)).expect("thread 0's index");
        let t1 = value(values, Leaf::Builtin(Builtin::ThreadIdx(Dim::X), 1)).expect("thread 1's index");
        assert!(t0 != t1 && t0 % 16 == t1 % 16, "{t0} and {t1} write one word");
        // The barrier orders the write and the read of another thread.
        assert!(
            !found.iter().any(|(a, b, _)| (*a, *b) == (3, 5) || (*a, *b) == (5, 3)),
            "{found:?}"
        );
    }

    #[test]
    fn a_read_of_a_neighbour_without_a_barrier_is_a_lead_and_with_one_is_not() {
        let racy = "__global__ void k(int *out) {\n\
                    __shared__ int s[32];\n\
                    s[threadIdx.x] = 1;\n\
                    out[blockIdx.x * 32 + threadIdx.x] = s[(threadIdx.x + 1) % 32];\n\
                    }";
        let found = leads_of(racy, Some([32, 1, 1]));
        assert!(
            found.iter().any(|(a, b, _)| (*a, *b) == (3, 4) || (*a, *b) == (4, 3)),
            "{found:?}"
        );
        let fenced = "__global__ void k(int *out) {\n\
                      __shared__ int s[32];\n\
                      s[threadIdx.x] = 1;\n\
                      __syncthreads();\n\
                      out[blockIdx.x * 32 + threadIdx.x] = s[(threadIdx.x + 1) % 32];\n\
                      }";
        assert!(leads_of(fenced, Some([32, 1, 1])).is_empty());
    }

    #[test]
    fn a_shuffle_does_not_order_memory_and_a_full_syncwarp_does() {
        let shuffled = "__global__ void k(int *out) {\n\
                        __shared__ int s[32];\n\
                        s[threadIdx.x] = 1;\n\
                        int v = __shfl_xor_sync(0xffffffff, 1, 1);\n\
                        out[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x ^ 1] + v;\n\
                        }";
        assert!(!leads_of(shuffled, Some([32, 1, 1])).is_empty());
        let synced = "__global__ void k(int *out) {\n\
                      __shared__ int s[32];\n\
                      s[threadIdx.x] = 1;\n\
                      __syncwarp();\n\
                      out[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x ^ 1];\n\
                      }";
        assert!(leads_of(synced, Some([32, 1, 1])).is_empty());
    }

    #[test]
    fn blocks_that_write_the_same_global_element_are_a_lead_across_blocks() {
        let src = "__global__ void k(float *out) {\n\
                   out[threadIdx.x + (blockIdx.x > 99 ? 1 : 0)] = 1.0f;\n\
                   }";
        let found = leads_of(src, Some([32, 1, 1]));
        let (_, _, values) = found.first().expect("a lead");
        let b0 = value(values, Leaf::Builtin(Builtin::BlockIdx(Dim::X), 0));
        let b1 = value(values, Leaf::Builtin(Builtin::BlockIdx(Dim::X), 1));
        assert_ne!(b0, b1, "{values:?}");
        // Indexed by the global thread id, the blocks write apart.
        let apart = "__global__ void k(float *out) {\n\
                     out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;\n\
                     }";
        assert!(leads_of(apart, Some([32, 1, 1])).is_empty());
    }

    #[test]
    fn atomics_do_not_race_with_each_other_and_read_only_memory_is_not_kept() {
        let src = "__global__ void k(const int *in, int *out) {\n\
                   atomicAdd(out, in[0] + in[threadIdx.x]);\n\
                   }";
        assert!(leads_of(src, Some([64, 1, 1])).is_empty());
    }

    #[test]
    fn a_parameter_that_only_scales_offsets_is_a_stride() {
        let k = crate::lower::tests::kernels(
            "__global__ void k(float *out, int n, int s) {\n\
             int i = threadIdx.x;\n\
             if (i < n) { out[blockIdx.x * 4096 + i * s] = 1.0f; }\n\
             }",
        )
        .remove(0);
        assert_eq!(roles(&k).stride, [false, true]);
        // With the stride 0 the threads below `n` all write one element.
        let found = leads_of(
            "__global__ void k(float *out, int n, int s) {\n\
             int i = threadIdx.x;\n\
             if (i < n) { out[blockIdx.x * 4096 + i * s] = 1.0f; }\n\
             }",
            Some([32, 1, 1]),
        );
        let (_, _, values) = found.first().expect("a lead at stride 0");
        assert_eq!(value(values, Leaf::Param(1)), Some(0));
    }

    #[test]
    fn a_divisor_is_a_size_and_a_shift_amount_is_told_apart() {
        let k = crate::lower::tests::kernels(
            "__global__ void k(float *out, long n, long d, long s, unsigned sh) {\n\
             long i = threadIdx.x / d;\n\
             if (i < n) { out[(i >> sh) * s] = 1.0f; }\n\
             }",
        )
        .remove(0);
        let roles = roles(&k);
        // At `d` 0 every thread would stop at the division: not a stride.
        // (`sh` reaches no condition either: a stride too.)
        assert_eq!(roles.stride, [false, false, true, true]);
        assert_eq!(roles.shift, [false, false, false, true]);
    }

    #[test]
    fn facts_move_parameters_to_their_bounds_and_multiples() {
        let k =
            crate::lower::tests::kernels("__global__ void k(float *out, long n, long m) { out[threadIdx.x] = 1.0f; }")
                .remove(0);
        let param = |i: u32| Expr::Cast(ScalarTy::Int { bits: 64, signed: true }, Box::new(Expr::Param(i)));
        let int = |v: i128| Expr::Int(v, ScalarTy::Int { bits: 64, signed: true });
        let bin = |op, a, b| Expr::Binary(op, ScalarTy::Int { bits: 64, signed: true }, Box::new(a), Box::new(b));
        let facts = [
            // `n % 16 == 0`, `!(m < 9)` and `10 < m`.
            LaunchFact::evaluated(bin(BinOp::Eq, bin(BinOp::Rem, param(0), int(16)), int(0))),
            LaunchFact::evaluated(Expr::Unary(
                UnOp::Not,
                ScalarTy::Bool,
                Box::new(bin(BinOp::Lt, param(1), int(9))),
            )),
            LaunchFact::evaluated(bin(BinOp::Lt, int(10), param(1))),
        ];
        let mut launch = Launch {
            block: [32, 1, 1],
            grid: [1, 1, 1],
            params: vec![4, 4],
            syms: Vec::new(),
        };
        assert!(satisfy(&k, &facts, &mut launch, 32));
        assert_eq!(launch.params, [16, 11]);
        // A parameter already past its bound stays.
        launch.params = vec![32, 12];
        assert!(satisfy(&k, &facts, &mut launch, 32));
        assert_eq!(launch.params, [32, 12]);
    }

    #[test]
    fn integer_intrinsics_are_computed_not_drawn() {
        // `__umulhi(t, 2^31)` is `t / 2`: threads 18 and 19 write `out[0]`.
        // (A drawn value, 0 to 7, is never 9.)
        let src = "__global__ void k(int *out) {\n\
                   if (__umulhi(threadIdx.x, 1u << 31) == 9u) {\n\
                   out[0] = threadIdx.x;\n\
                   }\n\
                   }";
        let found = leads_of(src, Some([32, 1, 1]));
        let (_, _, values) = found
            .iter()
            .find(|(a, b, _)| (*a, *b) == (3, 3))
            .expect("18 and 19 race");
        let mut threads = [0, 1].map(|i| value(values, Leaf::Builtin(Builtin::ThreadIdx(Dim::X), i)));
        threads.sort_unstable();
        assert_eq!(threads, [Some(18), Some(19)]);
        // A magic-number division by 1 (multiplier 1, shift 0) divides by 1.
        assert_eq!(intrinsic("__umulhi", &[7, 1]), Some(0));
        assert_eq!(intrinsic("__umulhi", &[1 << 31, 4]), Some(2));
        assert_eq!(intrinsic("__mul24", &[0x80_0000, 2]), Some(-0x100_0000));
        assert_eq!(intrinsic("__umulhi", &[3]), None);
    }

    #[test]
    fn blocks_apart_along_each_dimension_are_run_and_met_early() {
        assert_eq!(blocks_of([1, 1, 1]), [[0, 0, 0]]);
        assert_eq!(
            blocks_of([2, 3, 2]),
            [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 2, 1]]
        );
        // Rows spread over `blockIdx.y` and `blockIdx.z` that land on one
        // another, each thread looping long enough that a run would spend
        // its budget inside the first block were blocks run one by one.
        let src = "__global__ void k(float *out, long rows, long reps) {\n\
                   long r = blockIdx.y + blockIdx.z;\n\
                   for (long j = 0; j < 4000; ++j) {\n\
                   out[r * 256 + threadIdx.x] = j;\n\
                   }\n\
                   }";
        let found = leads_of(src, Some([256, 1, 1]));
        assert!(found.iter().any(|(a, b, _)| (*a, *b) == (4, 4)), "{found:?}");
    }

    #[test]
    fn every_thread_runs_once_lanes_far_apart_first() {
        let order = thread_order(70, 32);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..70).collect::<Vec<_>>());
        assert_eq!(&order[..10], &[0, 32, 64, 1, 33, 65, 31, 63, 69, 16]);
        assert_eq!(thread_order(1, 32), [0]);
    }

    #[test]
    fn a_division_by_zero_stops_the_thread_without_a_panic() {
        let src = "__global__ void k(int *out, int n) {\n\
                   out[threadIdx.x / n] = 1;\n\
                   }";
        // n = 0 in some launch: those threads stop; others still run.
        let _ = leads_of(src, Some([32, 1, 1]));
    }
}
