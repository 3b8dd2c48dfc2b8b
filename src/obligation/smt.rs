//! The only user of Z3: encodes obligations over two thread instances of an
//! access model and asks for a model (a witness).
//!
//! **Arithmetic.** Every integer value is encoded as the mathematical integer
//! its C type holds (linear integer arithmetic), not as a bit-vector: index
//! code is affine, and Z3 proves affine facts with the simplex in
//! milliseconds where bit-blasting 64-bit adders and comparators takes
//! seconds (measured on ggml's `row * ncols + col` obligations: 7 ms against
//! 1.2–1.8 s). Exactness is kept explicitly:
//! - an operation whose result can leave its type's range (a static interval
//!   analysis decides) wraps: `v = r − q·2^n` with `v` in range. Signed
//!   overflow is undefined in C++, so where the program surely evaluates the
//!   operation (an address, a path condition) `q = 0` is asserted. A chain
//!   of conversions and unsigned `+ - * <<c` (`(size_t)i * 4 + base`,
//!   `(size_t)row * n`) is wrapped once, at its top: the inner wraps vanish
//!   modulo `2^n`;
//! - `/`, `%`, `>>` by constants truncate or floor as C does; `& (2^m − 1)` is
//!   a modulus; `~x` is `−x − 1`;
//! - other bitwise operations and shifts by variables go through
//!   bit-vectors (`int2bv`, `bv2int`), exact but slower, only where they occur;
//! - a product of two non-constant values is a fresh integer with linear
//!   facts (McCormick envelopes from static bounds, monotonicity between
//!   products that share a factor); a model that violates the true product is
//!   refined by adding it (nonlinear, rarely needed). Division by a variable
//!   is treated the same way.
//!
//! Floating-point and opaque values are integers under uninterpreted
//! functions: equal inputs give equal results, nothing more.

use crate::hash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use z3::ast::{Ast, Bool, Dynamic, Int, BV};
use z3::{FuncDecl, Params, SatResult, Solver, Sort};

use crate::ir::access::{AccessModel, AccessRecord, Origin, Scope};
use crate::ir::term::{symbols_of, SymbolId, Term, TermKind, Terms};
use crate::ir::{BinOp, Builtin, Dim, Kernel, ScalarTy, SymKind, UnOp};
use crate::verdict::{ThreadWitness, Witness};

mod normal;
mod participation;
mod radix;
mod strategy;
use super::probe;
pub use strategy::set_lean as set_lean_solvers;
use strategy::Theories;
mod watchdog;
pub use participation::Goal;

/// The passes over one obligation (see `Encoder::in_passes`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pass {
    /// Exact arithmetic, no value wraps around: an under-approximation
    /// whose models are witnesses and whose `unsat` proves nothing.
    Unwrapped,
    /// Hard operations as uninterpreted functions: an over-approximation
    /// whose `unsat` is a proof.
    Abstract,
    /// Exact arithmetic.
    Exact,
}

impl Pass {
    /// Distinguishes the passes' dumped queries.
    fn suffix(self) -> &'static str {
        match self {
            Pass::Unwrapped => "_unwrapped",
            Pass::Abstract => "_abstract",
            Pass::Exact => "",
        }
    }
}

/// Solver work in Z3's resource units (`rlimit`). Limits are set in work,
/// not milliseconds: the same query costs the same work on any machine and
/// under any load, so which obligations a limit leaves undecided does not
/// depend on `--jobs` or on what else the machine runs (byte-identical
/// reports). A wall-clock limit stays as a safety net, several times wider.
pub type Work = u64;

/// Work per millisecond of solving, typical of ggml's obligations on the
/// reference machine (2-core VM; measured 4,900–13,500 per query with
/// [`ARITH_SOLVER`], median 8,100): converts `--timeout-ms` into work.
pub const WORK_PER_MS: Work = 6_000;

/// Z3's arithmetic solver: the older simplex (2), not the default `lp`
/// core (6). On ggml's obligations both take about as long in all (83
/// queries: 11.1 s and 11.2 s), but `lp` counts as little as 97 units a
/// millisecond on queries with 64-bit wrap constants (its bignum pivots
/// are nearly free in work and slow in time), so its work limit is no
/// limit of time and the clock's net decided; the older solver counts
/// 4,900–13,500 units a millisecond on the same queries, so a work limit
/// is a time limit within a factor of three, on any load.
const ARITH_SOLVER: u32 = 2;

/// How many times the work's nominal duration a kernel's checks may take by
/// the clock before they are stopped anyway: a net for queries that do
/// unusually little work per millisecond (with Z3's default arithmetic
/// core, one of ggml's took 24 s for 10^6 units). Where the clock decides,
/// a verdict can depend on the machine's load (the result says so:
/// `clock_limited`).
pub const WALL_SAFETY: u64 = 4;

/// The same for one obligation, within the kernel's net: wide enough that
/// work, not the clock, ends the slow-per-unit checks of small kernels.
/// Both nets count the thread's CPU time, so the load does not move them.
const CHECK_CPU_SAFETY: u64 = 16;

thread_local! {
    /// Whether the clock's safety net stopped a check on this thread (one
    /// kernel per thread): its undecided obligations may vary with load.
    static CLOCK_STOPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the clock stopped a check since the last call, and forgets it.
pub fn take_clock_stopped() -> bool {
    CLOCK_STOPPED.with(|c| c.replace(false))
}

/// Notes that the clock, not the work limit, ended a check or a kernel.
pub fn note_clock_stopped() {
    CLOCK_STOPPED.with(|c| c.set(true));
}

/// CPU time this thread has used. The kernel's clock net counts it, not
/// wall time: a loaded machine (`--jobs` above the core count, other
/// processes) then stops no check earlier, and reports stay the same.
pub fn thread_cpu() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `clock_gettime` writes the one `timespec` it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    // Elsewhere, wall time since the first reading.
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// The clock's limit of a check, in this thread's CPU time: the nearer of
/// the obligation's net and the kernel's.
#[derive(Clone, Copy, Debug)]
struct Clock {
    until: Duration,
}

impl Clock {
    /// Whether the limit has passed.
    fn passed(&self) -> bool {
        thread_cpu() >= self.until
    }

    /// Runs `check` (a Z3 call), interrupted at the limit; notes when the
    /// clock, not the work, ended it undecided.
    fn watch(&self, check: impl FnOnce() -> SatResult) -> SatResult {
        let (r, fired) = watchdog::within_cpu(self.until, check);
        read_meter();
        if r == SatResult::Unknown && fired {
            note_clock_stopped();
        }
        r
    }
}

/// The work of one search for degenerate parameters (see
/// `Encoder::degenerate`): a linear query, cheap when it has a model; the
/// first pin set's widening and releasing of pins in unsat cores (see
/// `Encoder::degenerate_values`) and the pinned refinement here.
const DEGENERATE_WORK: Work = 1_200_000;

/// The most one try of degenerate parameters may spend: about three pin
/// sets (`Encoder::degenerate_pins`), each a search in a context of its
/// own and the pinned refinement here; no set starts past it.
const DEGENERATE_TRY_WORK: Work = 3 * DEGENERATE_WORK;
/// [`DEGENERATE_TRY_WORK`] in a first round (see `Encoder::degenerate_try_work`).
const DEGENERATE_TRY_WORK_SLICED: Work = 2 * DEGENERATE_WORK;

/// The most pins one search for degenerate parameters widens or releases,
/// one per unsat core (see `Encoder::degenerate_values`).
const RELEASED_PINS: usize = 4;

/// The values a degenerate parameter's pin is widened to: small extents,
/// and negative ones (signed extents no host passes still race).
const SMALL: [i128; 11] = [-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8];

/// The work of one check for a core of degenerate pins (see
/// `Encoder::degenerate_values`): conflicts among pins show within it.
const CORE_WORK: Work = 200_000;

/// The values a launch dimension in a product or a divisor first ranges
/// over in the search for degenerate parameters.
const DIMS: [i128; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

/// A product's (x, y, p) by name in a context of its own, with the leaf
/// that makes it linear and whether that leaf is `x` (see
/// `Encoder::degenerate_values`).
type NamedProduct = ([String; 3], Option<(usize, bool)>);

/// Values of leaves, by name.
type Pins = Vec<(String, i128)>;

/// The work limit that `ms` milliseconds nominally stand for.
pub fn work_for_ms(ms: u64) -> Work {
    ms.saturating_mul(WORK_PER_MS)
}

/// The work this thread has done in Z3 so far, over all its contexts
/// (every solver of a context reports the context's count), as of the last
/// check (see [`read_meter`]).
pub fn work_done() -> Work {
    let context = z3::Context::thread_local().get_z3_context().as_ptr() as usize;
    let count = match METER.with(|m| m.borrow().as_ref().map(|(c, _, n)| (*c, *n))) {
        Some((c, n)) if c == context => n,
        _ => read_meter(),
    };
    WORK_BEFORE.with(|b| b.get()) + count
}

/// Reads the current context's work count from its meter (made on first
/// use) and keeps it for [`work_done`]. Reading Z3's statistics costs far
/// more than the checks of small queries, so it is read after each check
/// (where nearly all work is done) rather than at every question about
/// the budget; the work of building terms between checks is counted at
/// the next check.
fn read_meter() -> Work {
    // One meter per context: creating a solver costs a unit of work, so a
    // fresh one per reading would make the readings change the count they
    // read. The meter is a solver of the `skip` tactic: Z3 reports the
    // context's count with any solver's statistics, and a full SMT solver
    // would first be set up (all its theories) and then list every one of
    // their counters, which took a third of a short audit's time.
    let context = z3::Context::thread_local().get_z3_context().as_ptr() as usize;
    METER.with(|m| {
        let mut m = m.borrow_mut();
        if m.as_ref().is_none_or(|(c, _, _)| *c != context) {
            *m = Some((context, z3::Tactic::new("skip").solver(), 0));
        }
        let (_, meter, reading) = m.as_mut().expect("a meter");
        *reading = meter
            .get_statistics()
            .entries()
            .find(|e| e.key == "rlimit count")
            .map_or(0, |e| match e.value {
                z3::StatisticsValue::UInt(v) => v as Work,
                z3::StatisticsValue::Double(v) => v as Work,
            });
        *reading
    })
}

thread_local! {
    /// The meter of the context [`work_done`] last read, by its address,
    /// and its last reading.
    static METER: std::cell::RefCell<Option<(usize, Solver, Work)>> = const { std::cell::RefCell::new(None) };
    /// Work done in contexts other than the current one (see [`in_fresh_context`]).
    static WORK_BEFORE: std::cell::Cell<Work> = const { std::cell::Cell::new(0) };
    /// The work count at which the current condition's budget ends (see
    /// [`within_budget`]): no check runs past it.
    static BUDGET_END: std::cell::Cell<Work> = const { std::cell::Cell::new(Work::MAX) };
}

/// Runs `f` with at most `budget` more work for every check it makes,
/// whatever limits the searches inside set themselves: heuristics with work
/// of their own (`Encoder::aside`) would otherwise run on after the
/// kernel's budget is spent (with a budget of 1 ms, the audit of ggml
/// took 64 s of CPU, 22 s of it in such searches). Nested budgets keep
/// the nearer end.
pub fn within_budget<R>(budget: Work, f: impl FnOnce() -> R) -> R {
    /// Restores the outer end, also when `f` panics (the audit catches
    /// panics per kernel and goes on with this thread).
    struct Restore(Work);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET_END.with(|b| b.set(self.0));
        }
    }
    let end = work_done().saturating_add(budget);
    let outer = BUDGET_END.with(|b| b.replace(b.get().min(end)));
    let _restore = Restore(outer);
    f()
}

/// Runs `f` in a Z3 context of its own. Z3 orders its search by term ids,
/// and a context's ids depend on every term made before: in a shared
/// context one instantiation's queries would steer the next one's search
/// (witnesses found or missed as unrelated code changed). A fresh context
/// per check makes each check's outcome its own. [`work_done`] goes on
/// counting across contexts.
pub fn in_fresh_context<R>(f: impl FnOnce() -> R) -> R {
    /// `with_z3_config` asks for `Send + Sync` because a context must not
    /// leave its thread; it runs the callback at once on this thread.
    struct SameThread<T>(T);
    // SAFETY: the value is made and used on this thread only (see above).
    unsafe impl<T> Send for SameThread<T> {}
    // SAFETY: as above.
    unsafe impl<T> Sync for SameThread<T> {}
    let before = work_done();
    let outer = WORK_BEFORE.with(|b| b.get());
    let f = SameThread(f);
    let (out, inner) = z3::with_z3_config(&z3::Config::new(), move || {
        let f = f;
        WORK_BEFORE.with(|b| b.set(before));
        let out = (f.0)();
        read_meter();
        let inner = work_done() - before;
        METER.with(|m| m.borrow_mut().take());
        SameThread((out, inner))
    })
    .0;
    WORK_BEFORE.with(|b| b.set(outer + inner));
    out
}

/// The clock's limit for `work`: [`CHECK_CPU_SAFETY`] times its nominal duration.
fn cpu_for(work: Work) -> Duration {
    Duration::from_millis(
        (work / WORK_PER_MS)
            .saturating_mul(CHECK_CPU_SAFETY)
            .saturating_add(500),
    )
}

thread_local! {
    /// The solver of `Encoder::launch_consistent`, per thread (and context).
    static CONSISTENCY: std::cell::RefCell<Option<Solver>> = const { std::cell::RefCell::new(None) };
}

/// Sets up a new solver: [`ARITH_SOLVER`]. Done once per solver: setting a
/// solver's parameters makes Z3 re-read every parameter of every component
/// (5% of an audit's samples when the work limit was set this way before
/// each check, though the audit's time hardly moved when it stopped: Z3
/// reads much of it again at each check; see [`check_within`]).
fn configure(solver: &Solver) {
    let mut params = Params::new();
    params.set_u32("arith.solver", ARITH_SOLVER);
    solver.set_params(&params);
}

/// Checks `solver` with at most `work` (the clock's net is
/// [`Clock::watch`]). The limit is the context's, set for this check only:
/// a solver without an `rlimit` of its own takes the context's, and
/// setting the context's is a lookup among a few names.
fn check_within(solver: &Solver, assumptions: &[Bool], work: Work) -> SatResult {
    let mut context = z3::Context::thread_local();
    let work = work.clamp(1, u32::MAX as Work);
    context.update_param_value("rlimit", &work.to_string());
    let r = if assumptions.is_empty() {
        solver.check()
    } else {
        solver.check_assumptions(assumptions)
    };
    context.update_param_value("rlimit", "0");
    r
}

/// What one solver call concluded.
pub enum Outcome {
    /// No two threads conflict.
    Unsat,
    /// A conflict, with its witness and whether loaded data decided it.
    Sat {
        witness: Box<Witness>,
        input_dependent: bool,
    },
    /// The solver gave up (timeout, incomplete theory).
    Unknown(String),
}

/// A conflict between two records (indices into the model's records).
pub struct Found {
    pub first: usize,
    pub second: usize,
    pub witness: Witness,
    pub input_dependent: bool,
}

/// The launch facts every obligation of a kernel shares.
#[derive(Clone, Debug, Default)]
pub struct Shape {
    pub block_dim: Option<[u32; 3]>,
    /// Extents known where the whole shape is not (from a launch site).
    pub block_known: [Option<u32>; 3],
    /// A number each extent is a multiple of (1: nothing known).
    pub block_multiple: [u32; 3],
    pub grid_dim: Option<[u32; 3]>,
    /// `__launch_bounds__` maximum threads per block, when constant.
    pub max_threads: Option<u64>,
    /// Dimensions of the block (of the grid) taken to be 1: the kernel never
    /// mentions them, so a launch that spans them only duplicates work.
    pub unit_block: [bool; 3],
    pub unit_grid: [bool; 3],
}

impl Shape {
    /// Per dimension, a number the block's extent is a multiple of (the
    /// extent itself where it is known; 1 when nothing is).
    pub fn block_multiples(&self) -> [u64; 3] {
        std::array::from_fn(|d| match self.block_dim {
            Some(b) => u64::from(b[d].max(1)),
            None if self.unit_block[d] => 1,
            None => u64::from(self.block_known[d].unwrap_or(self.block_multiple[d]).max(1)),
        })
    }

    /// Whether every thread's lane is `threadIdx.x % warp_size`: the rows
    /// are whole warps, or the block surely has one row and one plane
    /// (`blockDim.y == blockDim.z == 1`, known, or else taken as such
    /// because the kernel never reads them). Warps are runs of consecutive
    /// linear ids.
    pub fn lanes_along_x(&self, warp_size: u32) -> bool {
        let one_row = (1..3).all(|d| match self.block_dim {
            Some(b) => b[d] == 1,
            None => self.block_known[d].map_or(self.unit_block[d], |v| v == 1),
        });
        one_row || self.block_multiples()[0].is_multiple_of(u64::from(warp_size.max(1)))
    }
}

/// Block extents allowed per dimension by CUDA.
const BLOCK_LIMIT: [i128; 3] = [1024, 1024, 64];
/// Loop counters stay below 2^31 (`grammar/SUBSET.md`).
/// The most a phase advances within one loop (see `Origin::Progress`).
const PROGRESS_MAX: i128 = 1 << 48;
const COUNTER_MAX: i128 = (1 << 31) - 1;

/// `p = x * y` for two non-constant factors: a fresh value with linear facts.
struct Product {
    x: Int,
    y: Int,
    p: Int,
    exact: bool,
}

/// An abstract division's operands and results (see
/// `Encoder::quotient_and_rest`).
struct DivMod {
    x: Int,
    y: Int,
    q: Option<Int>,
    r: Option<Int>,
}

/// `q = x / y`, `r = x % y` (C semantics) for a non-constant divisor.
struct Division {
    x: Int,
    y: Int,
    q: Int,
    r: Int,
    exact: bool,
}

/// An inclusive interval of values; `None` bounds are unbounded.
type Interval = Option<(i128, i128)>;

fn range_of(ty: ScalarTy) -> Interval {
    match ty {
        ScalarTy::Int { bits, signed } if bits < 127 => Some(if signed {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        }),
        ScalarTy::Bool => Some((0, 1)),
        _ => None,
    }
}

/// The bit width of an integer type (not `bool`).
fn width(ty: ScalarTy) -> Option<u32> {
    match ty {
        ScalarTy::Int { bits, .. } => Some(bits as u32),
        _ => None,
    }
}

fn within(inner: Interval, outer: Interval) -> bool {
    match (inner, outer) {
        (_, None) => true,
        (Some((a, b)), Some((c, d))) => c <= a && b <= d,
        (None, Some(_)) => false,
    }
}

/// The values of `x + y` or `x - y` (`op`) for `x`, `y` in the intervals.
fn sum_interval(op: BinOp, x: (i128, i128), y: (i128, i128)) -> Interval {
    match op {
        BinOp::Add => Some((x.0.checked_add(y.0)?, x.1.checked_add(y.1)?)),
        _ => Some((x.0.checked_sub(y.1)?, x.1.checked_sub(y.0)?)),
    }
}

fn hull(a: Interval, b: Interval) -> Interval {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        _ => None,
    }
}

fn corners(a: (i128, i128), b: (i128, i128), f: impl Fn(i128, i128) -> Option<i128>) -> Interval {
    let vals = [f(a.0, b.0)?, f(a.0, b.1)?, f(a.1, b.0)?, f(a.1, b.1)?];
    Some((*vals.iter().min()?, *vals.iter().max()?))
}

/// C's truncating division and remainder.
fn c_div(x: i128, y: i128) -> Option<(i128, i128)> {
    if y == 0 {
        return None;
    }
    let q = x / y;
    Some((q, x - q * y))
}

fn sort_of(ty: ScalarTy) -> Sort {
    match ty {
        ScalarTy::Bool => Sort::bool(),
        _ => Sort::int(),
    }
}

fn int(v: i128) -> Int {
    Int::from_i128(v)
}

/// The constant naming a builtin in thread instance `inst` (launch extents
/// are one for both threads); `None` for the warp size, a constant.
fn builtin_name(b: Builtin, inst: usize) -> Option<String> {
    Some(match b {
        Builtin::ThreadIdx(d) => format!("tid.{}@{inst}", d.name()),
        Builtin::BlockIdx(d) => format!("bid.{}@{inst}", d.name()),
        Builtin::BlockDim(d) => format!("blockDim.{}", d.name()),
        Builtin::GridDim(d) => format!("gridDim.{}", d.name()),
        Builtin::WarpSize => return None,
    })
}

/// The symbol an SMT-LIB name stands for (`|a#1|` is `a#1`).
fn unquoted(name: &str) -> &str {
    name.strip_prefix('|').and_then(|n| n.strip_suffix('|')).unwrap_or(name)
}

/// The uninterpreted constants in `e` (its leaves, not numerals), by name,
/// each once.
fn constants_of(e: &Dynamic, out: &mut Vec<String>) {
    if e.kind() == z3::AstKind::Numeral {
        return;
    }
    if e.is_const() {
        let name = e.to_string();
        if !out.contains(&name) {
            out.push(name);
        }
        return;
    }
    for c in e.children() {
        constants_of(&c, out);
    }
}

/// Whether `name` is a launch dimension's constant (`gridDim.x`, …): the
/// search for degenerate parameters gives those small ranges.
fn is_launch_dim(name: &str) -> bool {
    name.starts_with("gridDim.") || name.starts_with("blockDim.")
}

/// What the search for degenerate parameters has given a leaf (see
/// `Encoder::degenerate_values`), in the order a core moves it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Given {
    /// Its pin's value, under the pin's literal.
    Pinned,
    /// Its range's values, under the range's literal, with their cases.
    Ranged,
    /// Nothing: free.
    Released,
}

impl Given {
    fn next(self) -> Given {
        match self {
            Given::Pinned => Given::Ranged,
            Given::Ranged | Given::Released => Given::Released,
        }
    }
}

/// The constant naming kernel parameter `i`.
fn param_name(i: u32) -> String {
    format!("param{i}")
}

/// The name of kernel symbol `i` (`ir::SymId`) as a leaf.
fn sym_name(i: u32) -> String {
    format!("sym{i}")
}

/// The group two thread instances are in and the loop counters they share
/// (both at the same iteration), with the scopes of the terms met so far
/// under those counters (`AccessModel::scope_memo`).
struct Sharing {
    group: crate::ir::access::Group,
    deps: Vec<SymbolId>,
    /// The thread indices the group's threads share.
    shared: [bool; 3],
    scopes: HashMap<u32, Scope>,
}

/// The identity of a Z3 term (Z3 hash-conses terms: equal terms are one node).
fn ast_id(a: &impl Ast) -> usize {
    a.get_z3_ast().as_ptr() as usize
}

/// Most (term, guard) pairs one condition is walked for: past it,
/// facts met under further guards are dropped (fewer facts are sound).
/// ggml's symbolic covers reach a fact along hundreds of thousands of
/// paths through their configuration tables.
const GUARDED_VISITS: usize = 20_000;

/// Facts that hold under guards (`Encoder::no_overflow_guarded`), one entry
/// per fact: a fact met under many guards (a divisor tested in every arm
/// of a configuration's disjunction) is one implication from their
/// disjunction, not one implication per guard (ggml's symbolic covers met
/// the same fact under hundreds of guards, and the copies made up most of
/// the solver's work).
#[derive(Default)]
pub(crate) struct GuardedFacts {
    facts: Vec<(Bool, Vec<Bool>)>,
    index: HashMap<usize, usize>,
    /// The terms visited, by (term, instance, guard): a condition is a
    /// DAG whose shared parts would be walked once per path to them (a
    /// symbolic cover's configuration tests: exponentially many).
    visited: HashSet<(u32, usize, usize)>,
    /// The facts of each leaf term (by term and instance), met under many guards.
    leaves: HashMap<(u32, usize), Vec<Bool>>,
    /// Whether a term (by term and instance) has a leaf with facts: the
    /// walk skips the rest (a configuration's tests have none, and their
    /// paths are most of the DAG's).
    fruitful: HashMap<(u32, usize), bool>,
    /// Pairs walked in the current condition (see [`Encoder::guarded_facts`]).
    walked: usize,
}

impl GuardedFacts {
    fn add(&mut self, guard: &Bool, fact: Bool) {
        let key = fact.get_z3_ast().as_ptr() as usize;
        let at = *self.index.entry(key).or_insert_with(|| {
            self.facts.push((fact, Vec::new()));
            self.facts.len() - 1
        });
        let guards = &mut self.facts[at].1;
        if !guards.iter().any(|g| g == guard) {
            guards.push(guard.clone());
        }
    }

    /// The facts, each under the disjunction of its guards.
    pub(crate) fn finish(self) -> Vec<Bool> {
        self.facts
            .into_iter()
            .map(|(fact, guards)| {
                if guards.iter().any(|g| g.as_bool() == Some(true)) {
                    fact
                } else {
                    Bool::or(&guards).implies(&fact)
                }
            })
            .collect()
    }
}

/// Encodes terms of one model for two thread instances (0 and 1).
///
/// Maps that hold Z3 terms are ordered: Z3 reuses the ids of freed terms and
/// orders its search by id, so a random drop order would make runs differ.
pub struct Encoder<'a> {
    kernel: &'a Kernel,
    model: &'a AccessModel,
    shape: Shape,
    /// Work for each obligation.
    allowance: Work,
    /// The clock's safety net over the whole kernel (thread CPU time).
    deadline: Option<Duration>,
    /// The clock's limits of the obligation being solved.
    clock: Clock,
    /// Per solver session: encodings, definitions, abstractions.
    cache: BTreeMap<(u32, usize), Dynamic>,
    /// What both thread instances share, when the query asserts it (a
    /// participation goal): terms uniform over it are encoded once (see
    /// `enc`).
    sharing: Option<Sharing>,
    defs: Vec<Bool>,
    declared: HashSet<String>,
    wraps: BTreeMap<(u32, usize), Int>,
    /// Values congruent to terms' modulo `2^bits`, by (term, instance, bits).
    congruent: BTreeMap<(u32, usize, u32), (Int, Interval)>,
    products: Vec<Product>,
    divisions: Vec<Division>,
    /// Abstractions by their operands' identities, so that the same product
    /// met twice (in both threads, say) is one variable and lemmas relate it.
    product_index: HashMap<(usize, usize), usize>,
    division_index: HashMap<(usize, usize), usize>,
    /// Which of an obligation's passes is being solved; whether the
    /// abstract pass abstracted any operation.
    pass: Pass,
    abstracted: bool,
    /// Whether this pass states the mixed-radix lemmas; whether the
    /// obligation has any.
    lemmas: bool,
    splits: bool,
    /// Abstract quotients and remainders, one entry per pair of operands.
    divmods: Vec<DivMod>,
    /// Exclusive ors met, `(x, y, x ^ y)`, per operation type.
    xors: Vec<(ScalarTy, Int, Int, Int)>,
    /// Parameters that scale the obligation's offsets and appear nowhere
    /// else in its accesses: strides (see [`Self::solve`]).
    strides: Vec<u32>,
    /// Parameters that make the obligation nonlinear (a factor of a product
    /// of unknowns, a divisor, a shift amount): fixing them makes it
    /// linear (see [`Self::solve`]).
    nonlinear: Vec<u32>,
    /// Parameters that are a shift amount (see [`Self::degenerate_pins`]).
    shifts: Vec<u32>,
    /// Values of the pinnable leaves (by name) in the abstract pass's model:
    /// the next pass (without wrap-around) tries them first, and uses them up.
    hints: Vec<(String, i128)>,
    /// A concrete run's values for this obligation (`probe::Lead`, by
    /// leaf name): `solve` tries them pinned, and nothing else.
    lead: Option<Vec<(String, i128)>>,
    /// How often this obligation's degenerate parameters were tried (at
    /// most twice per obligation, not per pass: the passes ask the same of
    /// them; see [`Self::degenerate`]).
    degenerate_tries: u8,
    /// Pins that made this obligation unsat in a pass, by leaf name: a pin
    /// set holding one of them has no model there either, so it is not
    /// searched (see [`Self::degenerate`]).
    degenerate_cores: Vec<(Pass, Pins)>,
    /// Whether the obligation has only a first slice of its work (see
    /// `obligation::FIRST_ROUND_SHARE`): its witness heuristics then get
    /// work of their own (see [`Self::heuristic`]).
    sliced: bool,
    /// Launch-wide integer leaves (dimensions, parameters) and iteration
    /// counts: fixing them to a model's values makes most index products
    /// linear.
    uniform_leaves: Vec<Int>,
    /// The linear thread index of each instance (per session).
    ltid: [Option<Int>; 2],
    funcs: BTreeMap<String, FuncDecl>,
    /// Static value intervals of terms, by id (the same for both threads).
    intervals: HashMap<u32, Interval>,
    /// Objects no record writes: loads from them are functions of the address.
    read_only: Vec<bool>,
    /// Symbols of each record, with the symbols their facts mention.
    record_symbols: HashMap<usize, Vec<SymbolId>>,
    /// The model's terms and the quotients the normal forms made beyond
    /// them (see `normal`), cloned on first need.
    extension: Option<Terms>,
}

impl<'a> Encoder<'a> {
    pub fn new(kernel: &'a Kernel, model: &'a AccessModel, shape: Shape, allowance: Work) -> Encoder<'a> {
        let mut read_only = vec![true; kernel.objects.len()];
        let mut untraced_writes = HashSet::default();
        for r in &model.records {
            if r.kind.writes() {
                read_only[r.object.index()] = false;
                let o = &kernel.objects[r.object.index()];
                if o.kind == crate::ir::ObjectKind::Untraced {
                    untraced_writes.insert(o.space);
                }
            }
        }
        for (i, o) in kernel.objects.iter().enumerate() {
            if untraced_writes.contains(&o.space) {
                read_only[i] = false;
            }
        }
        Encoder {
            kernel,
            model,
            shape,
            allowance,
            deadline: None,
            clock: Clock { until: Duration::ZERO },
            cache: BTreeMap::new(),
            sharing: None,
            defs: Vec::new(),
            declared: HashSet::default(),
            wraps: BTreeMap::new(),
            congruent: BTreeMap::new(),
            products: Vec::new(),
            divisions: Vec::new(),
            product_index: HashMap::default(),
            division_index: HashMap::default(),
            uniform_leaves: Vec::new(),
            pass: Pass::Exact,
            abstracted: false,
            lemmas: false,
            splits: false,
            strides: Vec::new(),
            nonlinear: Vec::new(),
            shifts: Vec::new(),
            divmods: Vec::new(),
            xors: Vec::new(),
            hints: Vec::new(),
            lead: None,
            degenerate_tries: 0,
            degenerate_cores: Vec::new(),
            sliced: false,
            ltid: [None, None],
            funcs: BTreeMap::new(),
            intervals: HashMap::default(),
            read_only,
            record_symbols: HashMap::default(),
            extension: None,
        }
    }

    /// The work for each following obligation.
    pub fn set_allowance(&mut self, work: Work) {
        self.allowance = work;
    }

    /// Marks the next obligations as checked with a first slice of their
    /// work (`true`) or all of it.
    pub fn set_sliced(&mut self, sliced: bool) {
        self.sliced = sliced;
    }

    /// The clock's safety net over the kernel, in this thread's CPU time:
    /// no check starts past it.
    pub fn set_deadline(&mut self, deadline: Option<Duration>) {
        self.deadline = deadline;
    }

    /// The clock's limits for an obligation of `work` starting now.
    fn clock_for(&self, work: Work) -> Clock {
        let own = thread_cpu() + cpu_for(work);
        Clock {
            until: self.deadline.map_or(own, |d| d.min(own)),
        }
    }

    /// Starts a new solver session: encodings and abstractions are per solver.
    fn begin(&mut self) {
        self.cache.clear();
        self.defs.clear();
        self.declared.clear();
        self.wraps.clear();
        self.congruent.clear();
        self.products.clear();
        self.divisions.clear();
        self.product_index.clear();
        self.division_index.clear();
        self.uniform_leaves.clear();
        self.abstracted = false;
        self.splits = false;
        self.strides.clear();
        self.nonlinear.clear();
        self.shifts.clear();
        self.divmods.clear();
        self.xors.clear();
        self.ltid = [None, None];
    }

    /// A new solver, its strategy not made yet (see [`Self::make_strategy`]).
    fn new_solver(&self) -> Solver {
        let solver = Solver::new();
        configure(&solver);
        solver
    }

    /// Makes `solver`'s strategy (see `strategy`) for a query of `asts`,
    /// where its first assertion is due: Z3 made it there before (where it
    /// makes its terms and frees its objects moves its search). Where the
    /// query has abstractions, their exact (nonlinear) definitions may come
    /// later.
    fn make_strategy<'q>(&self, solver: &Solver, asts: impl IntoIterator<Item = &'q Bool>) {
        strategy::make(solver, || Theories::of(asts).with_nonlinear(self.abstracts()));
    }

    /// Whether the query has products or divisions standing for their values.
    fn abstracts(&self) -> bool {
        !self.products.is_empty() || !self.divisions.is_empty()
    }

    // ----- static intervals

    fn block_max(&self, i: usize) -> i128 {
        match self.shape.block_dim {
            Some(b) => b[i].max(1) as i128,
            None if self.shape.block_known[i].is_some() => self.shape.block_known[i].unwrap_or(1).max(1) as i128,
            None if self.shape.unit_block[i] => 1,
            None => BLOCK_LIMIT[i].min(self.shape.max_threads.unwrap_or(1024) as i128),
        }
    }

    fn grid_max(&self, i: usize) -> i128 {
        match self.shape.grid_dim {
            Some(g) => g[i].max(1) as i128,
            None if self.shape.unit_grid[i] => 1,
            // The grid's x extent spans fewer than 2^31 threads (whole
            // blocks, when the block shape is known).
            None if i == 0 => {
                let threads = match self.shape.block_dim {
                    Some(b) => b.iter().map(|&d| d.max(1) as i128).product(),
                    None => self.block_max(0),
                };
                ((1i128 << 31) - 1) / threads.max(1)
            }
            None => 65535,
        }
    }

    fn builtin_interval(&self, b: Builtin) -> Interval {
        Some(match b {
            Builtin::ThreadIdx(d) => (0, self.block_max(d as usize) - 1),
            // A given shape is exact, not a bound.
            Builtin::BlockDim(d) if self.shape.block_dim.is_some() || self.shape.block_known[d as usize].is_some() => {
                let b = self.block_max(d as usize);
                (b, b)
            }
            Builtin::GridDim(d) if self.shape.grid_dim.is_some() => {
                let g = self.grid_max(d as usize);
                (g, g)
            }
            Builtin::BlockDim(d) => (1, self.block_max(d as usize)),
            Builtin::BlockIdx(d) => (0, self.grid_max(d as usize) - 1),
            Builtin::GridDim(d) => (1, self.grid_max(d as usize)),
            Builtin::WarpSize => (self.model.warp_size as i128, self.model.warp_size as i128),
        })
    }

    fn symbol_interval(&self, s: SymbolId) -> Interval {
        let info = self.model.symbol(s);
        match info.origin {
            Origin::Counter { .. } | Origin::ExitCount { .. } => Some((0, COUNTER_MAX)),
            // Counters never wrap: a phase's advances, summed over nested
            // loops, stay far inside its 64 bits.
            Origin::Progress { .. } => Some((0, PROGRESS_MAX)),
            _ => range_of(info.ty),
        }
    }

    /// The values `t` can take in C (after any wrap-around).
    fn interval(&mut self, t: &Term) -> Interval {
        if let Some(i) = self.intervals.get(&t.id) {
            return *i;
        }
        let raw = self.raw_interval(t);
        let ty = range_of(t.ty);
        let out = if within(raw, ty) { raw } else { ty };
        self.intervals.insert(t.id, out);
        out
    }

    /// The values of `t`'s operation computed exactly (before wrapping).
    fn raw_interval(&mut self, t: &Term) -> Interval {
        match &t.kind {
            TermKind::Int(v) => Some((*v, *v)),
            TermKind::Bool(_) => Some((0, 1)),
            TermKind::Builtin(b) => self.builtin_interval(*b),
            TermKind::Symbol(s) => self.symbol_interval(*s),
            TermKind::Sym(s) => self.sym_interval(s.0, t.ty),
            TermKind::Param(_) => range_of(t.ty),
            TermKind::Cast(a) => {
                if t.ty == ScalarTy::Bool || !t.ty.is_int() {
                    return range_of(t.ty);
                }
                match a.ty {
                    ScalarTy::Int { .. } | ScalarTy::Bool => self.interval(a),
                    _ => range_of(t.ty),
                }
            }
            TermKind::Unary(UnOp::Neg, a) if t.ty.is_int() => self.interval(a).map(|(l, h)| (-h, -l)),
            TermKind::Unary(UnOp::BitNot, a) if t.ty.is_int() => {
                let (l, h) = self.interval(a)?;
                match t.ty {
                    ScalarTy::Int { signed: true, .. } => Some((-h - 1, -l - 1)),
                    _ => range_of(t.ty),
                }
            }
            TermKind::Binary(op, opty, a, b) if opty.is_int() && !op.is_comparison() && !op.is_logical() => {
                let (x, y) = (self.interval(a), self.interval(b));
                let (Some(x), Some(y)) = (x, y) else {
                    return range_of(t.ty);
                };
                match op {
                    BinOp::Add | BinOp::Sub => sum_interval(*op, x, y),
                    BinOp::Mul => corners(x, y, |p, q| p.checked_mul(q)),
                    BinOp::Div if y.0 == y.1 && y.0 != 0 => corners(x, y, |p, q| c_div(p, q).map(|r| r.0)),
                    BinOp::Rem if y.0 == y.1 && y.0 != 0 => {
                        let c = y.0.abs() - 1;
                        Some(if x.0 >= 0 { (0, c.min(x.1)) } else { (-c, c) })
                    }
                    BinOp::Shr if y.0 == y.1 && (0..127).contains(&y.0) => Some((x.0 >> y.0, x.1 >> y.0)),
                    BinOp::Shl if y.0 == y.1 && (0..64).contains(&y.0) => {
                        Some((x.0.checked_mul(1 << y.0)?, x.1.checked_mul(1 << y.0)?))
                    }
                    BinOp::BitAnd if x.0 >= 0 || y.0 >= 0 => {
                        let m = if x.0 >= 0 && y.0 >= 0 {
                            x.1.min(y.1)
                        } else {
                            x.1.max(y.1)
                        };
                        Some((0, m))
                    }
                    BinOp::Min => Some((x.0.min(y.0), x.1.min(y.1))),
                    BinOp::Max => Some((x.0.max(y.0), x.1.max(y.1))),
                    _ => range_of(t.ty),
                }
            }
            TermKind::Select(_, a, b) => {
                let (x, y) = (self.interval(a), self.interval(b));
                hull(x, y)
            }
            _ => range_of(t.ty),
        }
    }

    // ----- leaves

    fn declare(&mut self, name: &str, interval: Interval) -> Int {
        let v = Int::new_const(name);
        if self.declared.insert(name.to_string()) {
            if let Some((lo, hi)) = interval {
                self.defs.push(v.ge(int(lo)));
                self.defs.push(v.le(int(hi)));
            }
        }
        v
    }

    fn builtin(&mut self, b: Builtin, inst: usize) -> Int {
        let Some(name) = builtin_name(b, inst) else {
            return int(self.model.warp_size as i128);
        };
        let i = self.builtin_interval(b);
        let fresh = !self.declared.contains(&name);
        let v = self.declare(&name, i);
        if fresh && matches!(b, Builtin::BlockDim(_) | Builtin::GridDim(_)) {
            self.uniform_leaves.push(v.clone());
        }
        v
    }

    fn tid(&mut self, d: Dim, inst: usize) -> Int {
        self.builtin(Builtin::ThreadIdx(d), inst)
    }

    fn bid(&mut self, d: Dim, inst: usize) -> Int {
        self.builtin(Builtin::BlockIdx(d), inst)
    }

    fn leaf(&mut self, name: String, ty: ScalarTy, interval: Interval) -> Dynamic {
        if ty == ScalarTy::Bool {
            return Dynamic::from_ast(&Bool::new_const(name));
        }
        Dynamic::from_ast(&self.declare(&name, interval))
    }

    fn symbol_const(&mut self, s: SymbolId, inst: usize) -> Dynamic {
        let info = self.model.symbol(s);
        let (name, ty) = (format!("{}@{inst}", info.name), info.ty);
        let counter = matches!(info.origin, Origin::Counter { .. } | Origin::ExitCount { .. });
        let fresh = !self.declared.contains(&name);
        let i = self.symbol_interval(s);
        let d = self.leaf(name, ty, i);
        // Iteration counts are pinned with the launch values: then strides
        // like `s >> k` are constants.
        if let (true, true, Some(v)) = (counter, fresh, d.as_int()) {
            self.uniform_leaves.push(v);
        }
        d
    }

    fn param_const(&mut self, i: u32, ty: ScalarTy) -> Dynamic {
        self.uniform_leaf(param_name(i), ty, range_of(ty))
    }

    fn sym_const(&mut self, i: u32, ty: ScalarTy) -> Dynamic {
        let interval = self.sym_interval(i, ty);
        self.uniform_leaf(sym_name(i), ty, interval)
    }

    /// The values of a kernel symbol: its type's range, except that the size
    /// or alignment of a type is at least 1 (and, for types in GPU memory,
    /// below 2^40 bytes) and an offset in one is not negative.
    fn sym_interval(&self, i: u32, ty: ScalarTy) -> Interval {
        let info = &self.kernel.syms[i as usize];
        let cap = |lo: i128| range_of(ty).map(|(tl, th)| (lo.max(tl), th.min(1 << 40)));
        match info.kind {
            SymKind::Layout if info.name.starts_with("sizeof(") || info.name.starts_with("alignof(") => cap(1),
            SymKind::Layout if info.name.starts_with("offsetof(") => cap(0),
            _ => range_of(ty),
        }
    }

    fn uniform_leaf(&mut self, name: String, ty: ScalarTy, interval: Interval) -> Dynamic {
        let fresh = !self.declared.contains(&name);
        let d = self.leaf(name, ty, interval);
        if let (true, Some(v)) = (fresh, d.as_int()) {
            self.uniform_leaves.push(v);
        }
        d
    }

    /// An uninterpreted function of `args` with the sort of `ty`.
    fn uf(&mut self, name: &str, args: &[Dynamic], ty: ScalarTy) -> Dynamic {
        let domain: Vec<Sort> = args.iter().map(|a| a.get_sort()).collect();
        let range = sort_of(ty);
        let key = format!("{name}:{domain:?}->{range:?}");
        let f = self.funcs.entry(key).or_insert_with(|| {
            let refs: Vec<&Sort> = domain.iter().collect();
            FuncDecl::new(name, &refs, &range)
        });
        let refs: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
        let out = f.apply(&refs);
        if let (Some(i), Some((lo, hi))) = (out.as_int(), range_of(ty)) {
            if ty != ScalarTy::Bool {
                self.defs.push(i.ge(int(lo)));
                self.defs.push(i.le(int(hi)));
            }
        }
        out
    }

    // ----- terms

    fn as_int(d: Dynamic) -> Int {
        match d.as_int() {
            Some(i) => i,
            None => {
                let b = d.as_bool().expect("bool or int");
                b.ite(&int(1), &int(0))
            }
        }
    }

    fn as_bool(d: Dynamic) -> Bool {
        match d.as_bool() {
            Some(b) => b,
            None => d.as_int().expect("bool or int").eq(int(0)).not(),
        }
    }

    /// Encodes `t` for thread instance `inst`.
    pub fn enc(&mut self, t: &Term, inst: usize) -> Dynamic {
        if let Some(d) = self.cache.get(&(t.id, inst)) {
            return d.clone();
        }
        // A value the two threads surely share is encoded once: the solver
        // need not rediscover that equal inputs give equal wrap-arounds
        // and quotients (integer case splits). Leaves stay per thread, for
        // the witness.
        if inst == 1 && self.shared_with_first(t) {
            let out = self.enc(t, 0);
            self.cache.insert((t.id, inst), out.clone());
            return out;
        }
        let out = self.enc_node(t, inst);
        self.cache.insert((t.id, inst), out.clone());
        out
    }

    /// Whether the second thread's `t` is encoded as the first's: an
    /// operation (not a leaf) uniform over the group both are in.
    fn shared_with_first(&mut self, t: &Term) -> bool {
        let model = self.model;
        match &mut self.sharing {
            Some(sh) if !t.children().is_empty() => model
                .scope_memo(t, &sh.deps, sh.shared, &mut sh.scopes)
                .covers(sh.group),
            _ => false,
        }
    }

    fn enc_bool(&mut self, t: &Term, inst: usize) -> Bool {
        let d = self.enc(t, inst);
        Self::as_bool(d)
    }

    fn enc_int(&mut self, t: &Term, inst: usize) -> Int {
        let d = self.enc(t, inst);
        Self::as_int(d)
    }

    /// The value of `r` (exact result of `t`'s operation) in `t`'s type,
    /// wrapping around when the static interval says it can leave it.
    fn wrap(&mut self, t: &Term, inst: usize, r: Int) -> Int {
        let raw = self.raw_interval(t);
        self.wrap_within(t, inst, r, raw)
    }

    /// [`Self::wrap`] of `r`, whose values lie in `raw`.
    fn wrap_within(&mut self, t: &Term, inst: usize, r: Int, raw: Interval) -> Int {
        let Some((lo, hi)) = range_of(t.ty) else { return r };
        if within(raw, Some((lo, hi))) {
            return r;
        }
        let v = Int::fresh_const("wrap");
        let q = Int::fresh_const("q");
        let modulus = int(hi - lo + 1);
        self.defs
            .push(r.eq(Int::add(&[v.clone(), Int::mul(&[q.clone(), modulus])])));
        self.defs.push(v.ge(int(lo)));
        self.defs.push(v.le(int(hi)));
        self.wraps.insert((t.id, inst), q);
        v
    }

    /// The value of a modular operation `t` (see [`Self::modular`]) in its
    /// type: one wrap for the whole chain of such operations below it.
    fn enc_modular(&mut self, t: &Term, inst: usize) -> Option<Int> {
        let (r, raw) = self.modular(t, inst, width(t.ty)?)?;
        Some(self.wrap_within(t, inst, r, raw))
    }

    /// An expression congruent to `t`'s value modulo `2^bits`, with its
    /// interval, when `t` is a modular operation: a conversion between
    /// integer types, or unsigned `+ - −x`, `*` or `<<` by a constant, of at
    /// least `bits` bits. Such an operation's wrap-around vanishes modulo
    /// any smaller power of two, so a chain of them (`(size_t)i * 4 + base`,
    /// `(int64_t)(uint64_t)x`) needs one wrap at its top instead of one per
    /// operation: each wrap is a quotient over `2^64` that Z3's simplex
    /// carries as a bignum (one ggml race query: 12 wraps, undecided in
    /// 30 s). Signed arithmetic is not modular (its overflow is undefined).
    fn modular(&mut self, t: &Term, inst: usize, bits: u32) -> Option<(Int, Interval)> {
        if width(t.ty)? < bits {
            return None;
        }
        let key = (t.id, inst, bits);
        if let Some(c) = self.congruent.get(&key) {
            return Some(c.clone());
        }
        let unsigned = matches!(t.ty, ScalarTy::Int { signed: false, .. });
        let out = match &t.kind {
            TermKind::Cast(a) if a.ty.is_int() => self.congruent_to(a, inst, bits),
            TermKind::Unary(UnOp::Neg, a) if unsigned => {
                let (x, ix) = self.congruent_to(a, inst, bits);
                (x.unary_minus(), ix.map(|(l, h)| (-h, -l)))
            }
            TermKind::Binary(op, opty, a, b) if unsigned && opty == &t.ty => {
                let (ca, cb) = (a.as_int(), b.as_int());
                match op {
                    BinOp::Add | BinOp::Sub => {
                        let (x, ix) = self.congruent_to(a, inst, bits);
                        let (y, iy) = self.congruent_to(b, inst, bits);
                        let iv = ix.zip(iy).and_then(|(x, y)| sum_interval(*op, x, y));
                        if *op == BinOp::Add {
                            (Int::add(&[x, y]), iv)
                        } else {
                            (Int::sub(&[x, y]), iv)
                        }
                    }
                    BinOp::Mul | BinOp::Shl if cb.is_some() || (*op == BinOp::Mul && ca.is_some()) => {
                        let (c, v) = match (op, ca, cb) {
                            (BinOp::Shl, _, Some(c)) if (0..bits as i128).contains(&c) => (1i128 << c, a),
                            (BinOp::Mul, _, Some(c)) => (c, a),
                            (BinOp::Mul, Some(c), _) => (c, b),
                            _ => return None,
                        };
                        let (x, ix) = self.congruent_to(v, inst, bits);
                        let iv = ix.and_then(|i| corners(i, (c, c), |p, q| p.checked_mul(q)));
                        (Int::mul(&[int(c), x]), iv)
                    }
                    // A product of two values congruent modulo `2^bits` to
                    // its factors' (`(size_t)row * (size_t)n`, `n` an
                    // `int`): the exact product of the values before their
                    // conversions wrapped, so one wrap at the chain's top
                    // (none when that product fits, as `row * n` does in
                    // 64 bits). Only where a factor is itself such a chain;
                    // else the plain product is the same thing.
                    BinOp::Mul if self.modular(a, inst, bits).is_some() || self.modular(b, inst, bits).is_some() => {
                        let (x, ix) = self.congruent_to(a, inst, bits);
                        let (y, iy) = self.congruent_to(b, inst, bits);
                        let iv = ix.zip(iy).and_then(|(x, y)| corners(x, y, |p, q| p.checked_mul(q)));
                        let p = if self.pass == Pass::Abstract {
                            // The mathematical product (not the wrapped
                            // one `op_uf` names for this type).
                            self.abstracted = true;
                            let args = [Dynamic::from_ast(&x), Dynamic::from_ast(&y)];
                            let v = Self::as_int(self.uf("exact.Mul", &args, t.ty));
                            if let Some((lo, hi)) = iv {
                                self.defs.push(v.ge(int(lo)));
                                self.defs.push(v.le(int(hi)));
                            }
                            self.sign_lemmas(&x, &y, &v);
                            v
                        } else {
                            self.product(x, y, ix, iy)
                        };
                        (p, iv)
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        self.congruent.insert(key, out.clone());
        Some(out)
    }

    /// [`Self::modular`]'s expression for `t` if it has one, else `t`'s value.
    fn congruent_to(&mut self, t: &Term, inst: usize, bits: u32) -> (Int, Interval) {
        if let Some(c) = self.modular(t, inst, bits) {
            return c;
        }
        let v = self.enc_int(t, inst);
        (v, self.interval(t))
    }

    fn enc_node(&mut self, t: &Term, inst: usize) -> Dynamic {
        let ty = t.ty;
        let no_wrap = matches!(t.kind, TermKind::Cast(_)) && self.model.no_wrap.contains(&t.id);
        if !no_wrap {
            if let Some(v) = self.enc_modular(t, inst) {
                return Dynamic::from_ast(&v);
            }
        }
        match &t.kind {
            TermKind::Int(v) => match ty {
                ScalarTy::Bool => Dynamic::from_ast(&Bool::from_bool(*v != 0)),
                _ => Dynamic::from_ast(&int(*v)),
            },
            TermKind::Bool(b) => Dynamic::from_ast(&Bool::from_bool(*b)),
            TermKind::Float(bits) => Dynamic::from_ast(&int(*bits as i128)),
            TermKind::Builtin(b) => Dynamic::from_ast(&self.builtin(*b, inst)),
            TermKind::Param(i) => self.param_const(*i, ty),
            TermKind::Sym(s) => self.sym_const(s.0, ty),
            TermKind::Symbol(s) => self.symbol_const(*s, inst),
            TermKind::Unary(op, a) => match (op, ty) {
                (UnOp::Not, _) | (UnOp::BitNot, ScalarTy::Bool) => Dynamic::from_ast(&self.enc_bool(a, inst).not()),
                (UnOp::Neg, ScalarTy::Int { .. }) => {
                    let x = self.enc_int(a, inst);
                    Dynamic::from_ast(&self.wrap(t, inst, x.unary_minus()))
                }
                (UnOp::BitNot, ScalarTy::Int { signed, .. }) => {
                    let x = self.enc_int(a, inst);
                    let r = if signed {
                        Int::sub(&[x.unary_minus(), int(1)])
                    } else {
                        let hi = range_of(ty).map_or(0, |r| r.1);
                        Int::sub(&[int(hi), x])
                    };
                    Dynamic::from_ast(&r)
                }
                _ => {
                    let x = self.enc(a, inst);
                    self.uf(&format!("{op:?}"), &[x], ty)
                }
            },
            TermKind::Binary(op, opty, a, b) => self.enc_binary(t, *op, *opty, a, b, inst),
            TermKind::Select(c, a, b) => {
                let c = self.enc_bool(c, inst);
                let x = self.enc(a, inst);
                let y = self.enc(b, inst);
                if x.get_sort() == y.get_sort() {
                    c.ite(&x, &y)
                } else if ty == ScalarTy::Bool {
                    Dynamic::from_ast(&c.ite(&Self::as_bool(x), &Self::as_bool(y)))
                } else {
                    Dynamic::from_ast(&c.ite(&Self::as_int(x), &Self::as_int(y)))
                }
            }
            TermKind::Cast(a) => self.enc_cast(t, a, inst),
            TermKind::Opaque(op, args) => {
                let xs: Vec<Dynamic> = args.iter().map(|a| self.enc(a, inst)).collect();
                let out = self.uf(&format!("op{}", op.0), &xs, ty);
                let name = self.kernel.ops.get(op.0 as usize).map(|o| o.name.as_str());
                if let (Some("__umulhi"), [x, y], Some(r)) = (name, xs.as_slice(), out.as_int()) {
                    if let (Some(x), Some(y)) = (x.as_int(), y.as_int()) {
                        self.defs.extend(Self::high_product_facts(&x, &y, &r));
                    }
                }
                out
            }
        }
    }

    /// Linear facts of `r = __umulhi(x, y)`, the high 32 bits of the
    /// product of two 32-bit unsigned values: below each non-zero factor,
    /// zero when either is. Enough for witnesses that pin a factor to 0 or
    /// 1 (magic-number division with degenerate parameters) to be real.
    fn high_product_facts(x: &Int, y: &Int, r: &Int) -> Vec<Bool> {
        let zero = int(0);
        vec![
            r.ge(&zero),
            Bool::or(&[x.eq(&zero), y.eq(&zero)]).implies(r.eq(&zero)),
            x.gt(&zero).implies(r.lt(x)),
            y.gt(&zero).implies(r.lt(y)),
        ]
    }

    fn enc_cast(&mut self, t: &Term, a: &Term, inst: usize) -> Dynamic {
        let (from, to) = (a.ty, t.ty);
        match (from, to) {
            (ScalarTy::Int { .. } | ScalarTy::Bool, ScalarTy::Bool) => Dynamic::from_ast(&self.enc_bool(a, inst)),
            (ScalarTy::Bool, ScalarTy::Int { .. }) => Dynamic::from_ast(&self.enc_int(a, inst)),
            // Only conversions known not to wrap get here (`enc_node`
            // wraps the others with their modular chain): the value as is.
            (ScalarTy::Int { .. }, ScalarTy::Int { .. }) => Dynamic::from_ast(&self.enc_int(a, inst)),
            _ => {
                let x = self.enc(a, inst);
                let name = format!(
                    "cast.{}.{}",
                    crate::ir::term::ty_name(from),
                    crate::ir::term::ty_name(to)
                );
                self.uf(&name, &[x], to)
            }
        }
    }

    fn enc_binary(&mut self, t: &Term, op: BinOp, opty: ScalarTy, a: &Term, b: &Term, inst: usize) -> Dynamic {
        let ty = t.ty;
        if op.is_logical() {
            let x = self.enc_bool(a, inst);
            let y = self.enc_bool(b, inst);
            return Dynamic::from_ast(&match op {
                BinOp::And => Bool::and(&[x, y]),
                _ => Bool::or(&[x, y]),
            });
        }
        match opty {
            ScalarTy::Int { bits, signed } => {
                let x = self.enc_int(a, inst);
                let y = self.enc_int(b, inst);
                let (ca, cb) = (a.as_int(), b.as_int());
                // A factor with one possible value (a block extent the launch
                // fixes) keeps a product linear.
                let point = |this: &mut Self, t: &Term| this.interval(t).and_then(|(lo, hi)| (lo == hi).then_some(lo));
                let (ca, cb) = match op {
                    BinOp::Mul => (ca.or_else(|| point(self, a)), cb.or_else(|| point(self, b))),
                    _ => (ca, cb),
                };
                if self.pass == Pass::Abstract && Self::is_hard(op, ca, cb, bits) {
                    let v = self.abstract_op(t, op, opty, x, y);
                    if op == BinOp::Mul {
                        self.recomposition(a, b, inst, &v);
                    }
                    return Dynamic::from_ast(&v);
                }
                let d = |i: Int| Dynamic::from_ast(&i);
                let out = match op {
                    BinOp::Add => {
                        let r = Int::add(&[x, y]);
                        d(self.wrap(t, inst, r))
                    }
                    BinOp::Sub => {
                        let r = Int::sub(&[x, y]);
                        d(self.wrap(t, inst, r))
                    }
                    BinOp::Mul if ca.is_some() || cb.is_some() => {
                        let r = match (ca, cb) {
                            (Some(c), _) => Int::mul(&[int(c), y]),
                            (_, Some(c)) => Int::mul(&[x, int(c)]),
                            _ => unreachable!("one factor is constant"),
                        };
                        d(self.wrap(t, inst, r))
                    }
                    BinOp::Mul => {
                        let (ia, ib) = (self.interval(a), self.interval(b));
                        let p = self.product(x, y, ia, ib);
                        self.recomposition(a, b, inst, &p);
                        d(self.wrap(t, inst, p))
                    }
                    BinOp::Div | BinOp::Rem => {
                        let (q, r) = match cb {
                            Some(c) if c != 0 => self.div_const(a, x, c),
                            _ => self.division(x, y),
                        };
                        let v = if op == BinOp::Div { q } else { r };
                        d(self.wrap(t, inst, v))
                    }
                    BinOp::Shl if cb.is_some_and(|c| (0..bits as i128).contains(&c)) => {
                        let r = Int::mul(&[x, int(1i128 << cb.unwrap_or(0))]);
                        d(self.wrap(t, inst, r))
                    }
                    // `>>` by a constant: floor division (arithmetic for signed).
                    BinOp::Shr if cb.is_some_and(|c| (0..bits as i128).contains(&c)) => {
                        d(x.div(int(1i128 << cb.unwrap_or(0))))
                    }
                    BinOp::BitAnd if low_mask(cb) || low_mask(ca) => {
                        let m = if low_mask(cb) { cb } else { ca }.unwrap_or(0);
                        let v = if low_mask(cb) { x } else { y };
                        d(v.modulo(int(m + 1)))
                    }
                    // Shifts by a variable in range: `2^y` as a case split,
                    // then a product or (for non-negative values) a quotient,
                    // which stay in integer arithmetic.
                    BinOp::Shl | BinOp::Shr if op == BinOp::Shl || self.interval(a).is_some_and(|(lo, _)| lo >= 0) => {
                        let width = bits as i128;
                        let (lo, hi) = self.interval(b).unwrap_or((i128::MIN, i128::MAX));
                        let outside = lo < 0 || hi >= width;
                        let (lo, hi) = (lo.max(0), hi.min(width - 1));
                        let (lo, hi) = if lo > hi { (0, width - 1) } else { (lo, hi) };
                        // A shift by a negative amount or by the width or more
                        // is undefined: any power.
                        let pow = if outside {
                            let any = Int::fresh_const("pow");
                            self.defs.push(any.ge(int(1)));
                            self.defs.push(any.le(int(1i128 << hi)));
                            Self::pow2(&y, lo, hi, Some(any))
                        } else {
                            Self::pow2(&y, lo, hi, None)
                        };
                        let pow_iv = Some((1i128 << lo, 1i128 << hi));
                        if op == BinOp::Shl {
                            let r = match ca {
                                Some(c) => Int::mul(&[int(c), pow]),
                                None => {
                                    let ia = self.interval(a);
                                    self.product(x, pow, ia, pow_iv)
                                }
                            };
                            d(self.wrap(t, inst, r))
                        } else {
                            d(self.division(x, pow).0)
                        }
                    }
                    // A bit test (`v & (1u << lane)`, `v & 8`) of a
                    // non-negative value: one bit by division, the shift as
                    // a case split (bit-vectors are far slower here).
                    BinOp::BitAnd if self.bit_test(a, b, bits).is_some() => {
                        let (v, bit) = self.bit_test(a, b, bits).expect("checked");
                        let x = if v == 0 { x } else { y };
                        let pick = |j: i128| {
                            let p = int(1i128 << j);
                            Int::mul(&[x.div(&p).modulo(int(2)), p])
                        };
                        match bit {
                            Ok(j) => d(pick(j)),
                            Err((s, lo, hi)) => {
                                let s = self.enc_int(&s, inst);
                                let mut acc = int(0);
                                for j in lo..=hi {
                                    acc = s.eq(int(j)).ite(&pick(j), &acc);
                                }
                                d(acc)
                            }
                        }
                    }
                    BinOp::Shl | BinOp::Shr | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                        d(self.via_bits(op, x, y, bits as u32, signed))
                    }
                    BinOp::Eq => Dynamic::from_ast(&x.eq(&y)),
                    BinOp::Ne => Dynamic::from_ast(&x.eq(&y).not()),
                    BinOp::Lt => Dynamic::from_ast(&x.lt(&y)),
                    BinOp::Le => Dynamic::from_ast(&x.le(&y)),
                    BinOp::Gt => Dynamic::from_ast(&x.gt(&y)),
                    BinOp::Ge => Dynamic::from_ast(&x.ge(&y)),
                    BinOp::Min => Dynamic::from_ast(&x.lt(&y).ite(&x, &y)),
                    BinOp::Max => Dynamic::from_ast(&x.lt(&y).ite(&y, &x)),
                    BinOp::And | BinOp::Or => unreachable!("logical operators are handled above"),
                };
                out
            }
            ScalarTy::Bool => {
                let x = self.enc_bool(a, inst);
                let y = self.enc_bool(b, inst);
                match op {
                    BinOp::Eq => Dynamic::from_ast(&x.iff(&y)),
                    BinOp::Ne | BinOp::BitXor => Dynamic::from_ast(&x.xor(&y)),
                    BinOp::BitAnd | BinOp::Min => Dynamic::from_ast(&Bool::and(&[x, y])),
                    BinOp::BitOr | BinOp::Max => Dynamic::from_ast(&Bool::or(&[x, y])),
                    _ => {
                        let xs = [Dynamic::from_ast(&x), Dynamic::from_ast(&y)];
                        self.uf(&format!("bool.{op:?}"), &xs, ty)
                    }
                }
            }
            _ => {
                let x = self.enc(a, inst);
                let y = self.enc(b, inst);
                let name = format!("{}.{op:?}", crate::ir::term::ty_name(opty));
                self.uf(&name, &[x, y], ty)
            }
        }
    }

    /// `a & b` as a test of one bit of a non-negative value: which operand
    /// is the value (0 or 1), and the bit — a constant position, or a shift
    /// amount with its range within the width.
    #[allow(clippy::type_complexity)]
    fn bit_test(&mut self, a: &Term, b: &Term, bits: u8) -> Option<(usize, Result<i128, (Term, i128, i128)>)> {
        let strip = |t: &Term| match &t.kind {
            TermKind::Cast(inner) if inner.ty.is_int() => inner.clone(),
            _ => t.clone(),
        };
        for (v, (value, mask)) in [(a, b), (b, a)].into_iter().enumerate() {
            if self.interval(value).is_none_or(|(lo, _)| lo < 0) {
                continue;
            }
            if let Some(c) = mask.as_int() {
                if c > 0 && c & (c - 1) == 0 {
                    return Some((v, Ok(c.trailing_zeros() as i128)));
                }
                continue;
            }
            let m = strip(mask);
            if let TermKind::Binary(BinOp::Shl, _, one, shift) = &m.kind {
                if one.as_int() == Some(1) {
                    let (lo, hi) = self.interval(shift)?;
                    if lo >= 0 && hi < bits as i128 && hi < 64 {
                        return Some((v, Err((shift.clone(), lo, hi))));
                    }
                }
            }
        }
        None
    }

    /// Operations outside linear arithmetic: products of two variables,
    /// division by a variable, bitwise operations other than low masks,
    /// shifts by a variable.
    fn is_hard(op: BinOp, ca: Option<i128>, cb: Option<i128>, bits: u8) -> bool {
        let in_width = |c: Option<i128>| c.is_some_and(|c| (0..bits as i128).contains(&c));
        match op {
            BinOp::Mul => ca.is_none() && cb.is_none(),
            BinOp::Div | BinOp::Rem => cb.is_none_or(|c| c == 0),
            BinOp::Shl | BinOp::Shr => !in_width(cb),
            BinOp::BitAnd => !(low_mask(ca) || low_mask(cb)),
            BinOp::BitOr | BinOp::BitXor => true,
            _ => false,
        }
    }

    /// `t` as an uninterpreted function of its operands, within its static
    /// interval: equal operands give equal results (both threads compute one
    /// stride alike), nothing else. Sound for `unsat` only.
    fn abstract_op(&mut self, t: &Term, op: BinOp, opty: ScalarTy, x: Int, y: Int) -> Int {
        self.abstracted = true;
        let v = self.op_uf(op, opty, &x, &y, t.ty);
        if let Some((lo, hi)) = self.interval(t) {
            self.defs.push(v.ge(int(lo)));
            self.defs.push(v.le(int(hi)));
        }
        if matches!(op, BinOp::Div | BinOp::Rem) {
            self.quotient_and_rest(op, &x, &y, &v);
        }
        if op == BinOp::BitXor {
            self.xor_lemmas(opty, &x, &y, &v);
        }
        let zero = int(0);
        match op {
            BinOp::Mul => self.sign_lemmas(&x, &y, &v),
            // Halving and quotients of non-negative values do not grow.
            BinOp::Div => self
                .defs
                .push(Bool::and(&[x.ge(&zero), y.ge(int(1))]).implies(Bool::and(&[v.ge(&zero), v.le(&x)]))),
            BinOp::Shr => self
                .defs
                .push(Bool::and(&[x.ge(&zero), y.ge(&zero)]).implies(Bool::and(&[v.ge(&zero), v.le(&x)]))),
            BinOp::Rem => self
                .defs
                .push(Bool::and(&[x.ge(&zero), y.ge(int(1))]).implies(Bool::and(&[v.ge(&zero), v.lt(&y), v.le(&x)]))),
            _ => {}
        }
        v
    }

    /// The uninterpreted function of the abstract pass for `op` computed in
    /// `opty`, applied to `x` and `y`: one function per operation and type,
    /// so equal operands give one term.
    fn op_uf(&mut self, op: BinOp, opty: ScalarTy, x: &Int, y: &Int, ty: ScalarTy) -> Int {
        let name = format!("{}.{op:?}", crate::ir::term::ty_name(opty));
        let args = [Dynamic::from_ast(x), Dynamic::from_ast(y)];
        Self::as_int(self.uf(&name, &args, ty))
    }

    /// Notes an abstract quotient or remainder `v` of `x` by `y`. Once both
    /// of one division are known, dividends with equal quotients and
    /// remainders by one non-zero divisor are equal (`x = q*y + r`): the
    /// step back from indices to the thread that split them (`i / n`,
    /// `i % n`), which uninterpreted division cannot take.
    fn quotient_and_rest(&mut self, op: BinOp, x: &Int, y: &Int, v: &Int) {
        let key = (ast_id(x), ast_id(y));
        // In the order met (AST ids are addresses: an order by them would
        // change from run to run, and with it Z3's search).
        let at = match self.divmods.iter().position(|d| (ast_id(&d.x), ast_id(&d.y)) == key) {
            Some(at) => at,
            None => {
                self.divmods.push(DivMod {
                    x: x.clone(),
                    y: y.clone(),
                    q: None,
                    r: None,
                });
                self.divmods.len() - 1
            }
        };
        let entry = &mut self.divmods[at];
        let slot = if op == BinOp::Div { &mut entry.q } else { &mut entry.r };
        if slot.is_some() {
            return;
        }
        *slot = Some(v.clone());
        let (Some(q), Some(r)) = (entry.q.clone(), entry.r.clone()) else {
            return;
        };
        let (x, y) = (entry.x.clone(), entry.y.clone());
        let others: Vec<(Int, Int, Int, Int)> = self
            .divmods
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at)
            .filter_map(|(_, d)| Some((d.x.clone(), d.y.clone(), d.q.clone()?, d.r.clone()?)))
            .collect();
        for (x1, y1, q1, r1) in others {
            let same = Bool::and(&[y.eq(int(0)).not(), y.eq(&y1), q.eq(&q1), r.eq(&r1)]);
            self.defs.push(same.implies(x.eq(&x1)));
        }
    }

    /// Facts of `v = x ^ y` that bit-vectors give slowly and functions not
    /// at all: its identities and bounds, and with every earlier exclusive
    /// or of the type by an equal operand `m`, that `· ^ m` is injective
    /// and its own inverse (`a ^ m = b` exactly when `b ^ m = a`). A
    /// butterfly's partners (`t ^ j`) meet then only where the threads are
    /// each other's partners (a bitonic sort's exchanges).
    fn xor_lemmas(&mut self, opty: ScalarTy, x: &Int, y: &Int, v: &Int) {
        let zero = int(0);
        self.defs.push(y.eq(&zero).implies(v.eq(x)));
        self.defs.push(x.eq(&zero).implies(v.eq(y)));
        self.defs.push(x.eq(y).iff(v.eq(&zero)));
        let nonneg = Bool::and(&[x.ge(&zero), y.ge(&zero)]);
        // x ^ y = x + y - 2*(x & y), and x & y is at most either operand.
        self.defs.push(nonneg.implies(Bool::and(&[
            v.ge(&zero),
            v.le(Int::add(&[x, y])),
            v.ge(Int::sub(&[x, y])),
            v.ge(Int::sub(&[y, x])),
        ])));
        let earlier: Vec<(Int, Int, Int)> = self
            .xors
            .iter()
            .filter(|(t, ..)| *t == opty)
            .map(|(_, a, b, w)| (a.clone(), b.clone(), w.clone()))
            .collect();
        for (x1, y1, v1) in earlier {
            // Each operand of one as the mask, against each of the other.
            for (a1, m1) in [(&x1, &y1), (&y1, &x1)] {
                for (a2, m2) in [(x, y), (y, x)] {
                    let same = m1.eq(m2);
                    self.defs.push(same.implies(v1.eq(v).iff(a1.eq(a2))));
                    self.defs.push(same.implies(v1.eq(a2).iff(v.eq(a1))));
                }
            }
        }
        self.xors.push((opty, x.clone(), y.clone(), v.clone()));
    }

    /// C division and remainder by a non-zero constant.
    fn div_const(&mut self, a: &Term, x: Int, c: i128) -> (Int, Int) {
        let nonneg = self.interval(a).is_some_and(|(lo, _)| lo >= 0);
        let (m, neg) = (int(c.abs()), c < 0);
        // Floor division equals truncation for x ≥ 0.
        let trunc = if nonneg {
            x.div(&m)
        } else {
            x.ge(int(0)).ite(&x.div(&m), &x.unary_minus().div(&m).unary_minus())
        };
        let q = if neg { trunc.unary_minus() } else { trunc };
        let r = Int::sub(&[x, Int::mul(&[q.clone(), int(c)])]);
        (q, r)
    }

    /// `2^y` for `y` in `lo..=hi`, as a chain of cases; `other` for `y`
    /// outside (when it can be).
    fn pow2(y: &Int, lo: i128, hi: i128, other: Option<Int>) -> Int {
        let mut v = match other {
            Some(o) => y.eq(int(hi)).ite(&int(1i128 << hi), &o),
            None => int(1i128 << hi),
        };
        for e in (lo..hi).rev() {
            v = y.eq(int(e)).ite(&int(1i128 << e), &v);
        }
        v
    }

    /// A bitwise operation through bit-vectors of the type's width.
    fn via_bits(&mut self, op: BinOp, x: Int, y: Int, bits: u32, signed: bool) -> Int {
        let bx = BV::from_int(&x, bits);
        let by = BV::from_int(&y, bits);
        let r = match op {
            BinOp::Shl => bx.bvshl(&by),
            BinOp::Shr if signed => bx.bvashr(&by),
            BinOp::Shr => bx.bvlshr(&by),
            BinOp::BitAnd => bx.bvand(&by),
            BinOp::BitOr => bx.bvor(&by),
            _ => bx.bvxor(&by),
        };
        Int::from_bv(&r, signed)
    }

    /// A product of two non-constant factors: fresh, with McCormick envelopes
    /// from the factors' static intervals.
    fn product(&mut self, x: Int, y: Int, ix: Interval, iy: Interval) -> Int {
        // A factor with one possible value: a linear product.
        match (ix, iy) {
            (Some((a, b)), _) if a == b => return Int::mul(&[int(a), y]),
            (_, Some((a, b))) if a == b => return Int::mul(&[int(a), x]),
            _ => {}
        }
        let key = {
            let (a, b) = (ast_id(&x), ast_id(&y));
            (a.min(b), a.max(b))
        };
        if let Some(&i) = self.product_index.get(&key) {
            return self.products[i].p.clone();
        }
        self.product_index.insert(key, self.products.len());
        let p = Int::fresh_const("mul");
        if let (Some((xl, xh)), Some((yl, yh))) = (ix, iy) {
            let lin = |cx: i128, cy: i128, c: i128| {
                Int::add(&[
                    Int::mul(&[int(cx), y.clone()]),
                    Int::mul(&[int(cy), x.clone()]),
                    int(-c),
                ])
            };
            // Only envelopes of moderate bounds: planes with 64-bit
            // coefficients say little and drag Z3's simplex into bignums
            // (a ggml race query: 30 s with them, 60 ms without).
            let moderate = |c: Option<i128>| c.filter(|c| c.abs() < 1 << 62);
            if let (Some(c1), Some(c2), Some(c3), Some(c4)) = (
                moderate(xl.checked_mul(yl)),
                moderate(xh.checked_mul(yh)),
                moderate(xh.checked_mul(yl)),
                moderate(xl.checked_mul(yh)),
            ) {
                self.defs.push(p.ge(lin(xl, yl, c1)));
                self.defs.push(p.ge(lin(xh, yh, c2)));
                self.defs.push(p.le(lin(xh, yl, c3)));
                self.defs.push(p.le(lin(xl, yh, c4)));
            }
        }
        self.sign_lemmas(&x, &y, &p);
        self.products.push(Product {
            x,
            y,
            p: p.clone(),
            exact: false,
        });
        p
    }

    /// `(n / d) * d` is `n - n % d` for `d ≠ 0` (C's division identity),
    /// stated for the product `p` of factors `a` and `b` when one is a
    /// quotient by the other. An index split by a divisor and put back
    /// together (`i / n * n + i % n`: row-major offsets rebuilt from a flat
    /// index) is then the index again, linearly, and two threads' offsets
    /// are equal only where their indices are; without it the abstractions
    /// learn the identity value by value (ggml's pool2d_nchw_kernel: one
    /// obligation, two seconds of refinement rounds).
    fn recomposition(&mut self, a: &Term, b: &Term, inst: usize, p: &Int) {
        for (quotient, divisor) in [(a, b), (b, a)] {
            let TermKind::Binary(BinOp::Div, ty, n, d) = &quotient.kind else {
                continue;
            };
            if d.id != divisor.id || !ty.is_int() {
                continue;
            }
            let (ne, de, qe) = (
                self.enc_int(n, inst),
                self.enc_int(d, inst),
                self.enc_int(quotient, inst),
            );
            // The remainder as the pass encodes `n % d`: the same term when
            // the kernel computes it too.
            let (q, r) = if self.pass == Pass::Abstract {
                (qe.clone(), self.op_uf(BinOp::Rem, *ty, &ne, &de, *ty))
            } else {
                self.division(ne.clone(), de.clone())
            };
            // The quotient as computed (after any wrap-around) is the one
            // of the identity; it differs only where division overflows.
            let premise = Bool::and(&[de.eq(int(0)).not(), qe.eq(&q)]);
            self.defs.push(premise.implies(p.eq(Int::sub(&[ne, r]))));
            return;
        }
    }

    /// Sign and magnitude facts of `p = x * y` (as incremental
    /// linearisation starts).
    fn sign_lemmas(&mut self, x: &Int, y: &Int, p: &Int) {
        let zero = int(0);
        let one = int(1);
        let (xp, xn, yp, yn) = (x.ge(&zero), x.le(&zero), y.ge(&zero), y.le(&zero));
        self.defs
            .push(Bool::and(&[xp.clone(), yp.clone()]).implies(p.ge(&zero)));
        self.defs
            .push(Bool::and(&[xn.clone(), yn.clone()]).implies(p.ge(&zero)));
        self.defs.push(Bool::and(&[xp.clone(), yn]).implies(p.le(&zero)));
        self.defs.push(Bool::and(&[xn, yp.clone()]).implies(p.le(&zero)));
        self.defs.push(Bool::and(&[x.ge(&one), yp]).implies(p.ge(y)));
        self.defs.push(Bool::and(&[y.ge(&one), xp]).implies(p.ge(x)));
        if ast_id(x) == ast_id(y) {
            self.defs.push(p.ge(&zero));
            self.defs.push(p.ge(x));
            self.defs.push(p.ge(x.unary_minus()));
        }
        self.defs
            .push(Bool::or(&[x.eq(int(0)), y.eq(int(0))]).implies(p.eq(int(0))));
        self.defs.push(x.eq(int(1)).implies(p.eq(y)));
        self.defs.push(y.eq(int(1)).implies(p.eq(x)));
    }

    /// C division by a non-constant divisor: fresh quotient and remainder with
    /// the facts of non-negative operands; refined when a model needs it.
    fn division(&mut self, x: Int, y: Int) -> (Int, Int) {
        let key = (ast_id(&x), ast_id(&y));
        if let Some(&i) = self.division_index.get(&key) {
            let d = &self.divisions[i];
            return (d.q.clone(), d.r.clone());
        }
        self.division_index.insert(key, self.divisions.len());
        let q = Int::fresh_const("div");
        let r = Int::fresh_const("rem");
        let zero = int(0);
        let pos = Bool::and(&[x.ge(&zero), y.gt(&zero)]);
        self.defs
            .push(pos.implies(Bool::and(&[q.ge(&zero), q.le(&x), r.ge(&zero), r.lt(&y), r.le(&x)])));
        self.defs
            .push(Bool::and(&[pos.clone(), x.lt(&y)]).implies(Bool::and(&[q.eq(&zero), r.eq(&x)])));
        self.defs
            .push(y.eq(int(1)).implies(Bool::and(&[q.eq(&x), r.eq(&zero)])));
        self.divisions.push(Division {
            x,
            y,
            q: q.clone(),
            r: r.clone(),
            exact: false,
        });
        (q, r)
    }

    /// Monotonicity of products that share a factor: `x < u ⇒ x*c + c ≤ u*c`
    /// for `c ≥ 0` (and the mirror for `c ≤ 0`).
    fn product_lemmas(&self) -> Vec<Bool> {
        let mut out = Vec::new();
        for (i, a) in self.products.iter().enumerate() {
            for b in &self.products[i + 1..] {
                let pairs = [
                    (&a.x, &a.y, &b.x, &b.y),
                    (&a.y, &a.x, &b.x, &b.y),
                    (&a.x, &a.y, &b.y, &b.x),
                    (&a.y, &a.x, &b.y, &b.x),
                ];
                for (c1, x, c2, u) in pairs {
                    if ast_id(c1) != ast_id(c2) {
                        continue;
                    }
                    let c = c1;
                    let zero = int(0);
                    out.push(x.eq(u).implies(a.p.eq(&b.p)));
                    let pos = c.ge(&zero);
                    let neg = c.le(&zero);
                    let sum = |p: &Int| Int::add(&[p.clone(), c.clone()]);
                    let diff = |p: &Int| Int::sub(&[p.clone(), c.clone()]);
                    out.push(Bool::and(&[pos.clone(), x.lt(u)]).implies(sum(&a.p).le(&b.p)));
                    out.push(Bool::and(&[pos, u.lt(x)]).implies(sum(&b.p).le(&a.p)));
                    out.push(Bool::and(&[neg.clone(), x.lt(u)]).implies(diff(&b.p).le(&a.p)));
                    out.push(Bool::and(&[neg, u.lt(x)]).implies(diff(&a.p).le(&b.p)));
                    break;
                }
            }
        }
        out
    }

    fn model_int(m: &z3::Model, v: &Int) -> Option<i128> {
        m.eval(v, true).and_then(|x| x.as_i128())
    }

    /// [`refinement`] of this query's abstractions not yet exact.
    fn refine(&self, m: &z3::Model) -> Vec<Bool> {
        refinement(
            m,
            self.products.iter().filter(|p| !p.exact),
            self.divisions.iter().filter(|d| !d.exact),
        )
    }

    /// Checks `solver`, refining abstractions until a model is exact; after
    /// the linear rounds, every abstraction gets its exact (nonlinear)
    /// definition, so a final `sat` is always a true model.
    ///
    /// Side queries use fresh solvers with the assertions copied: assumptions
    /// or push/pop would switch Z3 to its incremental core, which is far
    /// slower on these linear problems.
    fn solve(&mut self, solver: &Solver) -> (SatResult, Option<z3::Model>) {
        const LINEAR_ROUNDS: usize = 16;
        let debug = std::env::var("WARPDRF_DEBUG_SMT").is_ok();
        let started = Instant::now();
        let mut deadline = work_done() + self.allowance;
        self.clock = self.clock_for(self.allowance);
        // A lead's values, pinned where the query has their leaves.
        if let Some(values) = self.lead.take() {
            let mut pins: Vec<Bool> = values
                .iter()
                .filter(|(n, _)| self.declared.contains(n))
                .map(|(n, v)| Int::new_const(n.as_str()).eq(int(*v)))
                .collect();
            pins.extend(self.exact_where_pinned(&values));
            return match self.pinned_to(solver, &pins, deadline) {
                Some(m) => (SatResult::Sat, Some(m)),
                None => (SatResult::Unknown, None),
            };
        }
        // Heuristic queries (pinned launch values) get a slice of the work.
        let slice = (self.allowance / 8).max(work_for_ms(250));
        // The abstract pass's launch and iteration values, tried first.
        if !self.hints.is_empty() {
            let hints = std::mem::take(&mut self.hints);
            let pins: Vec<Bool> = self
                .uniform_leaves
                .iter()
                .filter_map(|v| {
                    let name = v.to_string();
                    let &(_, value) = hints.iter().find(|(n, _)| *n == name)?;
                    Some(v.eq(int(value)))
                })
                .collect();
            let until = (work_done() + slice).min(deadline);
            let _s = crate::profile::stage("hinted");
            if let Some(found) = self.pinned_to(solver, &pins, until) {
                if debug {
                    eprintln!("  hinted: sat at {:?}", started.elapsed());
                }
                return (SatResult::Sat, Some(found));
            }
        }
        // Degenerate parameters (see `degenerate`), first: they need no
        // model of this query, and the pass's share in the first round of
        // obligations is often spent before its first linear model, so an
        // alarm they find would otherwise wait for the second round.
        if self.degenerate_tries == 0 {
            if let Some(found) = self.degenerate_try(&mut deadline, solver) {
                return (SatResult::Sat, Some(found));
            }
        }
        let mut pinned = false;
        for round in 1..=LINEAR_ROUNDS {
            let (r, m) = check_model(solver, deadline, self.clock);
            if r != SatResult::Sat {
                return (r, None);
            }
            let Some(m) = m else {
                return (SatResult::Unknown, None);
            };
            if debug {
                eprintln!("  round {round}: sat at {:?}", started.elapsed());
            }
            let lemmas = self.refine(&m);
            if lemmas.is_empty() {
                if self.pass == Pass::Abstract {
                    self.hints = self
                        .uniform_leaves
                        .iter()
                        .filter_map(|v| Some((v.to_string(), Self::model_int(&m, v)?)))
                        .collect();
                }
                return (r, Some(m));
            }
            for l in &lemmas {
                solver.assert(l);
            }
            // Alarms first: with the launch-wide values fixed, index products
            // become linear and a true model is often a round or two away.
            // Small launches first (their arithmetic is easy), then this
            // model's. Lemmas learnt under pins hold without them.
            if !pinned && !self.uniform_leaves.is_empty() {
                pinned = true;
                // Degenerate parameters again, with this round's lemmas in the
                // query's text: they often decide what the search without
                // them leaves open.
                if self.degenerate_tries == 1 {
                    if let Some(found) = self.degenerate_try(&mut deadline, solver) {
                        return (SatResult::Sat, Some(found));
                    }
                }
                // Small launches first; what the boxes leave of their
                // slice goes to the model's values.
                let (found, left) = self.heuristic(&mut deadline, slice, |this, cap| {
                    let _s = crate::profile::stage("small");
                    let until = (work_done() + slice).min(cap);
                    for (lo, hi) in [(-8, 64), (-256, 4096)] {
                        let small: Vec<Bool> = this
                            .uniform_leaves
                            .iter()
                            .flat_map(|v| [v.ge(int(lo)), v.le(int(hi))])
                            .collect();
                        if let Some(found) = this.boxed(solver, &small, until) {
                            return (Some(found), 0);
                        }
                    }
                    (None, until.saturating_sub(work_done()))
                });
                if let Some(found) = found {
                    if debug {
                        eprintln!("  small: sat at {:?}", started.elapsed());
                    }
                    return (SatResult::Sat, Some(found));
                }
                // Strides of zero: the parameters that only scale offsets
                // are 0, so rows, planes and steps collapse onto one another
                // (a race of arbitrary strides needs no more).
                if !self.strides.is_empty() {
                    let names: Vec<String> = self.strides.iter().map(|&i| param_name(i)).collect();
                    let zero: Vec<Bool> = self
                        .uniform_leaves
                        .iter()
                        .filter(|v| names.contains(&v.to_string()))
                        .map(|v| v.eq(int(0)))
                        .collect();
                    let found = self.heuristic(&mut deadline, slice / 2, |this, cap| {
                        let _s = crate::profile::stage("zero-strides");
                        this.pinned_to(solver, &zero, (work_done() + slice / 2).min(cap))
                    });
                    if let Some(found) = found {
                        if debug {
                            eprintln!("  zero strides: sat at {:?}", started.elapsed());
                        }
                        return (SatResult::Sat, Some(found));
                    }
                }
                // The largest launch: products of indices and extents become
                // constants, and index arithmetic that wraps only for huge
                // grids shows it.
                let widest: Vec<Bool> = Dim::ALL
                    .iter()
                    .flat_map(|&d| {
                        let i = d as usize;
                        [
                            (Builtin::GridDim(d), self.shape.unit_grid[i]),
                            (Builtin::BlockDim(d), self.shape.unit_block[i]),
                        ]
                    })
                    .filter(|&(_, unit)| !unit)
                    .filter_map(|(b, _)| {
                        let name = builtin_name(b, 0)?;
                        let v = self.uniform_leaves.iter().find(|v| v.to_string() == name)?;
                        let (_, hi) = self.builtin_interval(b)?;
                        Some(v.eq(int(hi)))
                    })
                    .collect();
                if debug {
                    eprintln!("  widest grid: {} pins", widest.len());
                }
                if !widest.is_empty() {
                    // With the degenerate parameters' first set as well, and
                    // wrap-around: what the largest launch leaves nonlinear
                    // they make linear (`rowx * ncols` at `ncols = 1`), and
                    // a flat index that wraps at 2^32 blocks is then a
                    // linear congruence (softmax's rows). Then as the pass
                    // has it, then with wrap-around even in the pass without
                    // it: the widest launch is where index arithmetic wraps.
                    let degenerate: Vec<Bool> = self
                        .degenerate_pins()
                        .into_iter()
                        .next()
                        .map(|set| set.iter().map(|(v, c)| v.eq(int(*c))).collect())
                        .unwrap_or_default();
                    let found = self.heuristic(&mut deadline, slice, |this, cap| {
                        let _s = crate::profile::stage("widest");
                        let no_wrap = this.no_wrap();
                        if !degenerate.is_empty() {
                            let own = (work_done() + slice / 4).min(cap);
                            let pins: Vec<Bool> = widest.iter().chain(&degenerate).cloned().collect();
                            let side = this.copy_without(solver, &pins, &no_wrap);
                            let w0 = work_done();
                            let found = this.pinned_from(solver, side, own, false);
                            if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                                eprintln!(
                                    "  widest and degenerate: {} after {} units",
                                    found.is_some(),
                                    work_done() - w0
                                );
                            }
                            if found.is_some() {
                                return found;
                            }
                        }
                        let own = (work_done() + slice / 2).min(cap);
                        this.pinned_sharing(solver, &widest, own, false).or_else(|| {
                            if no_wrap.is_empty() {
                                return None;
                            }
                            let own = (work_done() + slice / 2).min(cap);
                            let side = this.copy_without(solver, &widest, &no_wrap);
                            this.pinned_from(solver, side, own, false)
                        })
                    });
                    if let Some(found) = found {
                        if debug {
                            eprintln!("  widest grid: sat at {:?}", started.elapsed());
                        }
                        return (SatResult::Sat, Some(found));
                    }
                }
                let until = (work_done() + left).min(deadline);
                let _s = crate::profile::stage("pinned");
                if let Some(found) = self.pinned(solver, &m, until) {
                    if debug {
                        eprintln!("  pinned: sat at {:?}", started.elapsed());
                    }
                    return (SatResult::Sat, Some(found));
                }
            }
        }
        // Without wrap-around only a witness counts, and nonlinear
        // solving's models depend on what other threads' Z3 contexts do
        // (`--jobs` would change reports): give up here.
        if self.pass == Pass::Unwrapped {
            return (SatResult::Unknown, None);
        }
        self.make_exact(solver);
        let (r, m) = check_model(solver, deadline, self.clock);
        if r == SatResult::Sat && m.is_none() {
            return (SatResult::Unknown, None);
        }
        (r, m)
    }

    /// The definitions of the abstractions that `values` (by leaf name)
    /// make linear: a product with an operand they fix, a division by such
    /// a divisor. Exact at once, where refinement would need a round of
    /// lemmas per model. (They hold where the values are pinned: only in a
    /// lead's query.)
    fn exact_where_pinned(&self, values: &[(String, i128)]) -> Vec<Bool> {
        let value_of = |t: &Int| -> Option<i128> {
            let mut leaves = Vec::new();
            constants_of(&Dynamic::from_ast(t), &mut leaves);
            // (Leaves they leave free may drop out: a shift's amount past
            // the width selects a free value, `1 << p` with `p` fixed
            // small does not.)
            let subs: Vec<(Int, Int)> = leaves
                .iter()
                .filter_map(|n| {
                    let name = unquoted(n);
                    let &(_, v) = values.iter().find(|(m, _)| m == name)?;
                    Some((Int::new_const(name), int(v)))
                })
                .collect();
            if subs.is_empty() {
                return None;
            }
            let subs: Vec<(&Int, &Int)> = subs.iter().map(|(a, b)| (a, b)).collect();
            t.substitute(&subs).simplify().as_i64().map(i128::from)
        };
        let mut out = Vec::new();
        for pr in self.products.iter().filter(|p| !p.exact) {
            if let Some(v) = value_of(&pr.y) {
                out.push(pr.p.eq(Int::mul(&[int(v), pr.x.clone()])));
            } else if let Some(v) = value_of(&pr.x) {
                out.push(pr.p.eq(Int::mul(&[int(v), pr.y.clone()])));
            } else if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                eprintln!("    lead: open product {} * {}", pr.x, pr.y);
            }
        }
        for dv in self.divisions.iter().filter(|d| !d.exact) {
            if let Some(v) = value_of(&dv.y) {
                out.push(Self::division_definition(&dv.x, &dv.y, &dv.q, &dv.r, Some(v)));
            } else if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                eprintln!("    lead: open division {} / {}", dv.x, dv.y);
            }
        }
        out
    }

    /// The pass without wrap-around's pins: every wrap count 0.
    fn no_wrap(&self) -> Vec<Bool> {
        if self.pass != Pass::Unwrapped {
            return Vec::new();
        }
        self.wraps.values().map(|q| q.eq(int(0))).collect()
    }

    /// A fresh solver with `solver`'s assertions and `extra`.
    fn copy_of(&self, solver: &Solver, extra: &[Bool]) -> Solver {
        self.copy_without(solver, extra, &[])
    }

    /// [`Self::copy_of`] without the assertions in `dropped`.
    fn copy_without(&self, solver: &Solver, extra: &[Bool], dropped: &[Bool]) -> Solver {
        let dropped: HashSet<usize> = dropped.iter().map(ast_id).collect();
        let copy = self.new_solver();
        let kept: Vec<Bool> = solver
            .get_assertions()
            .into_iter()
            .filter(|a| !dropped.contains(&ast_id(a)))
            .collect();
        self.make_strategy(&copy, kept.iter().chain(extra));
        for a in &kept {
            copy.assert(a);
        }
        for e in extra {
            copy.assert(e);
        }
        copy
    }

    /// Refinement with the uniform leaves fixed to `m`'s values: an exact
    /// model if one is found in a few rounds. Its lemmas also go to `solver`.
    fn pinned(&mut self, solver: &Solver, m: &z3::Model, until: Work) -> Option<z3::Model> {
        let pins: Vec<Bool> = self
            .uniform_leaves
            .iter()
            .filter_map(|v| Some(v.eq(int(Self::model_int(m, v)?))))
            .collect();
        self.pinned_to(solver, &pins, until)
    }

    /// Refinement under `pins`: an exact model if one is found in a few
    /// rounds. Its lemmas also go to `solver`.
    fn pinned_to(&mut self, solver: &Solver, pins: &[Bool], until: Work) -> Option<z3::Model> {
        self.pinned_sharing(solver, pins, until, true)
    }

    /// [`Self::pinned_to`]; its lemmas go to `solver` only if `share`
    /// (those learnt at the largest launch are planes through huge values,
    /// which slow the search that follows).
    fn pinned_sharing(&mut self, solver: &Solver, pins: &[Bool], until: Work, share: bool) -> Option<z3::Model> {
        self.pinned_from(solver, self.copy_of(solver, pins), until, share)
    }

    /// Refinement within `bounds` (a box on the launch-wide values): the
    /// box's first model's launch values pinned first (what is left
    /// nonlinear is then rarely more than a round away from exact), then
    /// the box as it is (products of two values free in the box converge
    /// slowly under tangent lemmas).
    fn boxed(&mut self, solver: &Solver, bounds: &[Bool], until: Work) -> Option<z3::Model> {
        let side = self.copy_of(solver, bounds);
        let (SatResult::Sat, Some(m)) = check_model(&side, until, self.clock) else {
            return None;
        };
        if self.refine(&m).is_empty() {
            return Some(m);
        }
        if let Some(found) = self.pinned(solver, &m, until) {
            return Some(found);
        }
        self.pinned_from(solver, side, until, true)
    }

    /// [`Self::pinned_sharing`] on `side`, a copy of `solver` with pins.
    fn pinned_from(&mut self, solver: &Solver, side: Solver, until: Work, share: bool) -> Option<z3::Model> {
        const PINNED_ROUNDS: usize = 8;
        for round in 0..PINNED_ROUNDS {
            let (r, m) = check_model(&side, until, self.clock);
            let (SatResult::Sat, Some(m)) = (r, m) else {
                if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                    eprintln!("    pinned: {r:?} in round {round}");
                }
                return None;
            };
            let lemmas = self.refine(&m);
            if lemmas.is_empty() {
                return Some(m);
            }
            for l in &lemmas {
                side.assert(l);
                if share {
                    solver.assert(l);
                }
            }
        }
        None
    }

    /// In how many abstractions `v` is an operand that makes it linear when
    /// fixed (a factor of a product, a divisor).
    fn operand_uses(&self, v: &Int) -> usize {
        let id = ast_id(v);
        self.products
            .iter()
            .filter(|p| ast_id(&p.x) == id || ast_id(&p.y) == id)
            .count()
            + self.divisions.iter().filter(|d| ast_id(&d.y) == id).count()
    }

    /// The pin sets of degenerate parameters (see [`Self::solve`]): the
    /// parameters in nonlinear positions, strides and shift amounts 0 and
    /// the others 1 (a magic-number division by 1 is a multiplier of 1 and
    /// a shift of 0), then strides not 0, then all 1, then the first set
    /// with one parameter left free, for each. None unless they (with the
    /// launch dimensions' small ranges) fix an operand of at least half of
    /// the abstract products and divisions (a query whose nonlinearity is
    /// between thread-varying values gains nothing from them).
    fn degenerate_pins(&self) -> Vec<Vec<(Int, i128)>> {
        let names: Vec<String> = self.nonlinear.iter().map(|&i| param_name(i)).collect();
        // An operand that the pins and the launch dimensions' ranges (see
        // `degenerate_values`) fix: `x >> shift` divides by an `ite` over
        // the shift amount.
        let pinned = |v: &Int| {
            let mut leaves = Vec::new();
            constants_of(&Dynamic::from_ast(v), &mut leaves);
            !leaves.is_empty() && leaves.iter().all(|n| names.contains(n) || is_launch_dim(n))
        };
        let linearised = self.products.iter().filter(|p| pinned(&p.x) || pinned(&p.y)).count()
            + self.divisions.iter().filter(|d| pinned(&d.y)).count();
        let debug = std::env::var("WARPDRF_DEBUG_SMT").is_ok();
        if debug {
            eprintln!(
                "  degenerate parameters ({:?}) {:?}: linearise {linearised} of {} abstractions",
                self.pass,
                self.nonlinear,
                self.products.len() + self.divisions.len()
            );
            for p in self.products.iter().filter(|p| !(pinned(&p.x) || pinned(&p.y))) {
                eprintln!("    open product {} * {}", p.x, p.y);
            }
            for d in self.divisions.iter().filter(|d| !pinned(&d.y)) {
                eprintln!("    open division {} / {}", d.x, d.y);
            }
        }
        if linearised == 0 || 2 * linearised < self.products.len() + self.divisions.len() {
            return Vec::new();
        }
        let mut sets: Vec<Vec<(Int, i128)>> = Vec::new();
        let mut tried: Vec<Vec<i128>> = Vec::new();
        for (zero_strides, zero_shifts) in [(true, true), (false, true), (false, false)] {
            let zero = |i: &u32| zero_strides && self.strides.contains(i) || zero_shifts && self.shifts.contains(i);
            let values: Vec<i128> = self.nonlinear.iter().map(|i| i128::from(!zero(i))).collect();
            if tried.contains(&values) {
                continue;
            }
            let pins: Vec<(Int, i128)> = self
                .uniform_leaves
                .iter()
                .filter_map(|v| {
                    let at = names.iter().position(|n| *n == v.to_string())?;
                    Some((v.clone(), values[at]))
                })
                .collect();
            tried.push(values);
            if !pins.is_empty() {
                sets.push(pins);
            }
        }
        // Pinning them all can contradict the launch's facts (`C / H == 64`
        // with both pinned to 1): then each left free in turn, which the
        // facts may determine (`H = 1` gives `C = 64`).
        if let Some(first) = sets.first().cloned().filter(|f| f.len() > 1) {
            for free in &first {
                sets.push(
                    first
                        .iter()
                        .filter(|(v, _)| ast_id(v) != ast_id(&free.0))
                        .cloned()
                        .collect(),
                );
            }
        }
        sets
    }

    /// Runs the heuristic search `f` with work of its own: what it spends
    /// moves the query's `deadline` (and the clock) on, so a failed try
    /// leaves the searches after it the work they had. Pinned searches are
    /// linear and cheap when they succeed; charged to the pass, they would
    /// get only what a slow first model left of it. `work` is the most `f`
    /// may spend: its clock is set for that much.
    fn aside<T>(&mut self, deadline: &mut Work, work: Work, f: impl FnOnce(&mut Self) -> T) -> T {
        let before = work_done();
        self.clock = self.clock_for(work);
        let out = f(self);
        *deadline += work_done() - before;
        self.clock = self.clock_for(deadline.saturating_sub(work_done()));
        out
    }

    /// A witness heuristic `f`, given the work it may not pass. With a
    /// first slice of the obligation's work, in the passes that look for
    /// witnesses (without wrap-around, then exact), with work of its own
    /// (see [`Self::aside`]): a slow first model would otherwise leave it
    /// nothing, and the alarm would wait for the second round, after every
    /// other obligation's first. A witness that needs wrap-around is only
    /// found in the exact pass (group_norm_f32's, at a small launch: 6.1 s
    /// → 3.3 s; on ggml 5% less solver work, alarms ending their kernels
    /// in the first round instead of every pass again in the second; the
    /// same verdicts). Otherwise within the pass's `deadline`: obligations
    /// that are hard to prove pay for the heuristics once.
    fn heuristic<T>(&mut self, deadline: &mut Work, work: Work, f: impl FnOnce(&mut Self, Work) -> T) -> T {
        if self.sliced && matches!(self.pass, Pass::Unwrapped | Pass::Exact) {
            self.aside(deadline, work, |this| f(this, Work::MAX))
        } else {
            f(self, *deadline)
        }
    }

    /// A try of degenerate parameters (see [`Self::degenerate`]) with work
    /// of its own, profiled by how it ends (`WARPDRF_PROFILE`: on ggml,
    /// the tries that find nothing cost a sixth of the audit's CPU).
    fn degenerate_try(&mut self, deadline: &mut Work, solver: &Solver) -> Option<z3::Model> {
        // (Reading the work may make a meter, which counts as work: only
        // when profiling.)
        let profiling = crate::profile::enabled();
        let (t0, w0) = (Instant::now(), if profiling { work_done() } else { 0 });
        let work = self.degenerate_try_work();
        let found = self.aside(deadline, work, |this| this.degenerate(solver));
        if profiling {
            let ended = if found.is_some() {
                "degenerate found"
            } else {
                "degenerate none"
            };
            crate::profile::record(ended, t0.elapsed(), work_done() - w0);
        }
        found
    }

    /// The work of one try of degenerate parameters: less in a first
    /// round, whose slice is small (on ggml every try that found a witness
    /// took under 1.9 M units; im2col_3d_kernel's that found none, 3.5 M
    /// each, in a first round whose obligations then passed in the second).
    fn degenerate_try_work(&self) -> Work {
        if self.sliced {
            DEGENERATE_TRY_WORK_SLICED
        } else {
            DEGENERATE_TRY_WORK
        }
    }

    /// Degenerate parameters (see `degenerate_pins`): those in nonlinear
    /// positions fixed to 0 or 1 make the query linear. Index splitting
    /// (`i % n`, division by precomputed magic numbers) then collapses onto
    /// rows that another thread also reaches. At most twice per obligation,
    /// each try with work of its own (a round's share can be too small for
    /// a linear query of this size); not in the abstract pass, whose models
    /// are not witnesses. A witness found is pinned and refined here.
    fn degenerate(&mut self, solver: &Solver) -> Option<z3::Model> {
        if (self.pass == Pass::Abstract && self.abstracted) || self.uniform_leaves.is_empty() {
            return None;
        }
        self.degenerate_tries += 1;
        let _s = crate::profile::stage("degenerate");
        let debug = std::env::var("WARPDRF_DEBUG_SMT").is_ok();
        let started = work_done();
        for (set, pins) in self.degenerate_pins().into_iter().enumerate() {
            // The sets after the first three run on what those left (pin
            // sets that contradict the facts fail in a few thousand units).
            if work_done() - started >= self.degenerate_try_work() {
                break;
            }
            let named: Pins = pins.iter().map(|(v, c)| (v.to_string(), *c)).collect();
            let pass = self.pass;
            if self
                .degenerate_cores
                .iter()
                .any(|(p, core)| *p == pass && core.iter().all(|pin| named.contains(pin)))
            {
                if debug {
                    eprintln!("  degenerate parameters: {named:?} hold pins already refuted");
                }
                continue;
            }
            // The first set's cores widen and release its pins; the sets
            // after it are tried as they are.
            let releases = if set == 0 { RELEASED_PINS } else { 0 };
            let values = match self.degenerate_values(solver, &pins, &named, releases, work_done() + DEGENERATE_WORK) {
                Ok(values) => values,
                Err(Some(core)) => {
                    self.degenerate_cores.push((pass, core));
                    continue;
                }
                Err(None) => continue,
            };
            let pins: Vec<Bool> = values
                .iter()
                .map(|(n, v)| Int::new_const(unquoted(n)).eq(int(*v)))
                .collect();
            if let Some(found) = self.pinned_to(solver, &pins, work_done() + DEGENERATE_WORK) {
                if debug {
                    eprintln!("  degenerate parameters: sat (try {})", self.degenerate_tries);
                }
                return Some(found);
            }
            if debug {
                eprintln!("  degenerate parameters: {} values do not extend here", pins.len());
            }
        }
        None
    }

    /// An exact model of `solver`'s query with the degenerate `pins`
    /// (`named`: the same, by leaf name), searched in a Z3 context of its
    /// own from the query's text (what the pins make linear defined so, the
    /// rest refined): the values of the launch-wide leaves and of both
    /// threads' indices, by name. Only a success makes terms in this
    /// context, so a failed try leaves the searches that follow as they
    /// were; that is why the linear definitions are written as text here
    /// (`division_definition` at a known divisor, spelt out) rather than
    /// built as terms.
    ///
    /// Each pin, and each definition that holds by it, is asserted under a
    /// literal of its own, assumed in the first check: where that check is
    /// unsat, the literals in its core name pins that no pin set holding
    /// them can satisfy (`Err(Some(core))`; an empty core: the query has no
    /// model at all). A pin in a core is then widened to a range of small
    /// values, a range in a core released (see below).
    fn degenerate_values(
        &self,
        solver: &Solver,
        pins: &[(Int, i128)],
        named: &Pins,
        releases: usize,
        until: Work,
    ) -> Result<Vec<(String, i128)>, Option<Pins>> {
        const ROUNDS: usize = 8;
        let num = |c: i128| if c < 0 { format!("(- {})", -c) } else { c.to_string() };
        let literal = |k: usize| format!("|pin!{k}|");
        let wide = |k: usize| format!("|wide!{k}|");
        // The leaves given values: the pins (a value under `pin!k`, a range
        // of `SMALL` under `wide!k` once widened), then the launch
        // dimensions in an abstraction (a range of `DIMS` under `wide!k`
        // from the first check on: a division by `gridDim.x` is then
        // linear too).
        let mut leaves: Vec<(Int, Option<i128>, &[i128])> =
            pins.iter().map(|(v, c)| (v.clone(), Some(*c), &SMALL[..])).collect();
        leaves.extend(
            self.uniform_leaves
                .iter()
                .filter(|v| {
                    is_launch_dim(&v.to_string())
                        && !pins.iter().any(|(p, _)| ast_id(p) == ast_id(*v))
                        && self.operand_uses(v) > 0
                })
                .map(|v| (v.clone(), None, &DIMS[..])),
        );
        let value = |v: &Int| leaves.iter().position(|(p, _, _)| ast_id(p) == ast_id(v));
        let mut text = solver.to_smt2();
        let alias = |text: &mut String, name: String, e: &Int| {
            text.push_str(&format!("(declare-fun {name} () Int)\n(assert (= {name} {e}))\n"));
            name
        };
        for (k, (v, pin, range)) in leaves.iter().enumerate() {
            if let Some(c) = pin {
                text.push_str(&format!(
                    "(declare-fun {} () Bool)\n(assert (=> {} (= {v} {})))\n",
                    literal(k),
                    literal(k),
                    num(*c)
                ));
            }
            let range: Vec<String> = range.iter().map(|d| format!("(= {v} {})", num(*d))).collect();
            text.push_str(&format!(
                "(declare-fun {} () Bool)\n(assert (=> {} (or {})))\n",
                wide(k),
                wide(k),
                range.join(" ")
            ));
        }
        // The abstractions, as (x, y, p) and (x, y, q, r) names, with the
        // leaf that makes each linear (for a product, and whether it is
        // `x`): what its pin makes linear is asserted under the pin's
        // literal here, its range's cases when it is widened.
        let mut products: Vec<NamedProduct> = Vec::new();
        for (k, pr) in self.products.iter().enumerate() {
            let linear = value(&pr.x)
                .map(|at| (at, true))
                .or_else(|| value(&pr.y).map(|at| (at, false)));
            if let Some((at, is_x)) = linear {
                if let Some(c) = leaves[at].1 {
                    let other = if is_x { &pr.y } else { &pr.x };
                    text.push_str(&format!(
                        "(assert (=> {} (= {} (* {} {other}))))\n",
                        literal(at),
                        pr.p,
                        num(c)
                    ));
                }
            }
            let x = alias(&mut text, format!("|dgx!{k}|"), &pr.x);
            let y = alias(&mut text, format!("|dgy!{k}|"), &pr.y);
            let p = alias(&mut text, format!("|dgp!{k}|"), &pr.p);
            products.push(([x, y, p], linear));
        }
        let mut divisions: Vec<([String; 4], Option<usize>)> = Vec::new();
        for (k, dv) in self.divisions.iter().enumerate() {
            let (x, q, r) = (&dv.x, &dv.q, &dv.r);
            let linear = value(&dv.y);
            if let Some((at, c)) = linear.and_then(|at| Some((at, leaves[at].1.filter(|&c| c != 0)?))) {
                text.push_str(&format!(
                    "(assert (=> {} (and (= {x} (+ (* {} {q}) {r})) (< (ite (>= {r} 0) {r} (- {r})) {}) \
                     (=> (>= {x} 0) (>= {r} 0)) (=> (< {x} 0) (<= {r} 0)))))\n",
                    literal(at),
                    num(c),
                    c.abs()
                ));
            }
            let names = [
                alias(&mut text, format!("|dvx!{k}|"), x),
                alias(&mut text, format!("|dvy!{k}|"), &dv.y),
                alias(&mut text, format!("|dvq!{k}|"), q),
                alias(&mut text, format!("|dvr!{k}|"), r),
            ];
            divisions.push((names, linear));
        }
        let launch_leaves: Vec<String> = self.uniform_leaves.iter().map(|v| v.to_string()).collect();
        let mut wanted = launch_leaves.clone();
        for inst in 0..2 {
            for d in Dim::ALL {
                wanted.extend(
                    [Builtin::ThreadIdx(d), Builtin::BlockIdx(d)]
                        .into_iter()
                        .filter_map(|b| builtin_name(b, inst)),
                );
            }
        }
        // Per leaf: whether it is a shift amount, and in how many
        // abstractions it is an operand (what its release leaves
        // nonlinear).
        let shift: Vec<bool> = leaves
            .iter()
            .map(|(v, _, _)| self.shifts.iter().any(|&i| param_name(i) == v.to_string()))
            .collect();
        let uses: Vec<usize> = leaves.iter().map(|(v, _, _)| self.operand_uses(v)).collect();
        let ranges: Vec<&[i128]> = leaves.iter().map(|(_, _, range)| *range).collect();
        let leaf_names: Vec<String> = leaves.iter().map(|(v, _, _)| v.to_string()).collect();
        // Without releases the launch dimensions start released: a range
        // that contradicts the launch's facts would otherwise refute the set.
        let starting: Vec<Given> = leaves
            .iter()
            .map(|(_, pin, _)| match pin {
                Some(_) => Given::Pinned,
                None if releases > 0 => Given::Ranged,
                None => Given::Released,
            })
            .collect();
        let pinned = pins.len();
        let clock = self.clock;
        let debug = std::env::var("WARPDRF_DEBUG_SMT").is_ok();
        let nonlinear = self.abstracts();
        in_fresh_context(move || {
            let side = self.new_solver();
            // The lines above, and the cases below, add only linear facts.
            let theories = || Theories::of_text(&text).with_nonlinear(nonlinear);
            strategy::first_assertion(theories, || side.from_string(text.as_str()));
            let c = |n: &String| Int::new_const(unquoted(n));
            let literals: Vec<Bool> = (0..pinned).map(|k| Bool::new_const(unquoted(&literal(k)))).collect();
            let wides: Vec<Bool> = (0..starting.len())
                .map(|k| Bool::new_const(unquoted(&wide(k))))
                .collect();
            // The cases of leaf `k`'s range: facts, whatever is assumed.
            let cases = |k: usize| {
                let mut facts = Vec::new();
                for ([x, y, p], linear) in &products {
                    let Some((_, is_x)) = linear.filter(|(at, _)| *at == k) else {
                        continue;
                    };
                    let (v, other) = if is_x { (c(x), c(y)) } else { (c(y), c(x)) };
                    for &d in ranges[k] {
                        facts.push(v.eq(int(d)).implies(c(p).eq(Int::mul(&[int(d), other.clone()]))));
                    }
                }
                for ([x, y, q, r], linear) in &divisions {
                    if *linear == Some(k) {
                        for &d in ranges[k].iter().filter(|&&d| d != 0) {
                            facts.push(Self::division_definition(&c(x), &c(y), &c(q), &c(r), Some(d)));
                        }
                    }
                }
                facts
            };
            let w0 = work_done();
            // Core-guided: a pin in an unsat core is widened to its range
            // (whose cases keep the query linear), and a range in a core
            // is released, one at a time (a factor before a shift amount,
            // whose release leaves an exponent; then the leaf in the fewest
            // abstractions) until the rest has a model. Two unrelated cores
            // (an extent of 1 that leaves one block with data, a divisor of
            // 1 that ends every thread early) would otherwise refute every
            // pin set.
            let mut state = starting;
            for k in (0..state.len()).filter(|&k| state[k] == Given::Ranged) {
                for f in cases(k) {
                    side.assert(&f);
                }
            }
            let assumption = |k: usize, given: Given| match given {
                Given::Pinned => Some(&literals[k]),
                Given::Ranged => Some(&wides[k]),
                Given::Released => None,
            };
            // The first core, where it holds pins only: a fact about them.
            let mut first_core: Option<Option<Pins>> = None;
            let mut released = 0;
            let found = loop {
                let assumed: Vec<Bool> = (0..state.len())
                    .filter_map(|k| assumption(k, state[k]).cloned())
                    .collect();
                // Assumed, for the core of an unsat query (a quick
                // conflict among pins); where that does not settle soon,
                // asserted: Z3 preprocesses the query then, and finds a
                // model with a fraction of the work.
                let r = check_until_assuming(&side, &assumed, until.min(work_done() + CORE_WORK), clock);
                if debug {
                    eprintln!(
                        "    degenerate, first model in a context of its own ({released} released): {r:?} after {} \
                         units",
                        work_done() - w0
                    );
                }
                if r != SatResult::Unsat {
                    let trial = self.copy_of(&side, &assumed);
                    let r = check_until(&trial, until, clock);
                    if debug {
                        eprintln!("    degenerate, asserted: {r:?} after {} units", work_done() - w0);
                    }
                    break (r, trial);
                }
                let core: HashSet<String> = side.get_unsat_core().iter().map(|l| l.to_string()).collect();
                let in_core: Vec<usize> = (0..state.len())
                    .filter(|&k| assumption(k, state[k]).is_some_and(|l| core.contains(&l.to_string())))
                    .collect();
                if debug {
                    eprintln!(
                        "    degenerate core: {:?}",
                        in_core.iter().map(|&k| (&leaf_names[k], state[k])).collect::<Vec<_>>()
                    );
                }
                let first = first_core
                    .get_or_insert_with(|| {
                        in_core
                            .iter()
                            .map(|&k| (state[k] == Given::Pinned).then(|| named[k].clone()))
                            .collect::<Option<Pins>>()
                    })
                    .clone();
                if in_core.is_empty() || released == releases {
                    return Err(first);
                }
                let k = in_core
                    .iter()
                    .copied()
                    .min_by_key(|&k| (state[k], shift[k], uses[k], k))
                    .expect("a core of assumptions");
                state[k] = state[k].next();
                if state[k] == Given::Ranged {
                    for f in cases(k) {
                        side.assert(&f);
                    }
                }
                released += 1;
            };
            let (SatResult::Sat, side) = found else {
                return Err(None);
            };
            let first = side.get_model().ok_or(None)?;
            // What may be left nonlinear: the abstractions without a leaf
            // given values or whose leaf was widened (to a divisor of 0,
            // say) or released.
            let open = |at: Option<usize>| at.is_none_or(|k| state[k] != Given::Pinned);
            let products: Vec<Product> = products
                .iter()
                .filter(|(_, at)| open(at.map(|(k, _)| k)))
                .map(|([x, y, p], _)| Product {
                    x: c(x),
                    y: c(y),
                    p: c(p),
                    exact: false,
                })
                .collect();
            let divisions: Vec<Division> = divisions
                .iter()
                .filter(|(_, at)| open(*at))
                .map(|([x, y, q, r], _)| Division {
                    x: c(x),
                    y: c(y),
                    q: c(q),
                    r: c(r),
                    exact: false,
                })
                .collect();
            // Refines `solver` until its model is exact: the wanted values.
            let refined = |solver: &Solver, label: &str, first: Option<z3::Model>| {
                let mut given = first;
                for round in 1..=ROUNDS {
                    let m = match given.take() {
                        Some(m) => m,
                        None => {
                            let r = check_until(solver, until, clock);
                            if debug {
                                eprintln!(
                                    "    degenerate{label}, round {round} in a context of its own: {r:?} after {} units",
                                    work_done() - w0
                                );
                            }
                            if r != SatResult::Sat {
                                return Err(r);
                            }
                            solver.get_model().ok_or(SatResult::Unknown)?
                        }
                    };
                    let lemmas = refinement(&m, products.iter(), divisions.iter());
                    if lemmas.is_empty() {
                        let values = wanted
                            .iter()
                            .filter_map(|n| {
                                let v = m.eval(&Int::new_const(unquoted(n)), false)?;
                                // Leaves the query does not constrain stay free.
                                Some((n.clone(), v.as_i128()?))
                            })
                            .collect::<Vec<_>>();
                        return Ok(values);
                    }
                    for l in &lemmas {
                        solver.assert(l);
                    }
                }
                Err(SatResult::Unknown)
            };
            // The first model's launch values as well: what the pins left
            // nonlinear among launch-wide values becomes constant, and the
            // refinement rarely needs more than a round. Its lemmas would
            // steer the open search below into cases of their own, so it
            // runs on a solver of its own.
            let launch: Vec<Bool> = launch_leaves
                .iter()
                .filter_map(|n| {
                    let v = c(n);
                    let value = first.eval(&v, false)?.as_i128()?;
                    Some(v.eq(int(value)))
                })
                .collect();
            if !launch.is_empty() {
                let pinned = self.copy_of(&side, &launch);
                if let Ok(values) = refined(&pinned, " (launch values pinned)", None) {
                    return Ok(values);
                }
            }
            refined(&side, "", Some(first)).map_err(|_| None)
        })
    }

    /// Asserts the exact definition of every abstraction not yet exact.
    fn make_exact(&mut self, solver: &Solver) {
        for pr in &mut self.products {
            if !pr.exact {
                pr.exact = true;
                solver.assert(pr.p.eq(Int::mul(&[pr.x.clone(), pr.y.clone()])));
            }
        }
        for dv in &mut self.divisions {
            if !dv.exact {
                dv.exact = true;
                solver.assert(Self::division_definition(&dv.x, &dv.y, &dv.q, &dv.r, None));
            }
        }
    }

    /// C division `x = q*y + r`, `|r| < |y|`, `r` with the sign of `x`; with
    /// `at = Some(v)`, only where `y = v` (a linear lemma).
    fn division_definition(x: &Int, y: &Int, q: &Int, r: &Int, at: Option<i128>) -> Bool {
        let zero = int(0);
        let abs = |v: &Int| v.ge(&zero).ite(v, &v.unary_minus());
        let qy = match at {
            Some(v) => Int::mul(&[int(v), q.clone()]),
            None => Int::mul(&[q.clone(), y.clone()]),
        };
        let definition = Bool::and(&[
            x.eq(Int::add(&[qy, r.clone()])),
            abs(r).lt(abs(y)),
            x.ge(&zero).implies(r.ge(&zero)),
            x.lt(&zero).implies(r.le(&zero)),
        ]);
        match at {
            Some(v) => y.eq(int(v)).implies(&definition),
            None => y.eq(&zero).not().implies(&definition),
        }
    }

    /// "No undefined behaviour" for the operations evaluating `t` surely
    /// performs (not under `?:` or `||`): signed `+ - * <<` and negations
    /// have wrap quotient 0, divisors are not 0.
    fn no_overflow(&mut self, t: &Term, inst: usize, seen: &mut HashSet<u32>, out: &mut Vec<Bool>) {
        // A shared term's wraps are the first thread's.
        if inst == 1 && self.shared_with_first(t) {
            return self.no_overflow(t, 0, seen, out);
        }
        if !seen.insert(t.id) {
            return;
        }
        let signed = matches!(t.ty, ScalarTy::Int { signed: true, .. });
        match &t.kind {
            TermKind::Binary(op, opty, a, b) => {
                let arithmetic = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl);
                if signed && arithmetic {
                    if let Some(q) = self.wraps.get(&(t.id, inst)) {
                        out.push(q.eq(int(0)));
                    }
                }
                // Dividing by zero is undefined too: a surely evaluated
                // `/` or `%` has a non-zero divisor.
                if matches!(op, BinOp::Div | BinOp::Rem) && opty.is_int() && b.as_int().is_none() {
                    let d = self.enc_int(b, inst);
                    out.push(d.eq(int(0)).not());
                }
                let descend = op.is_comparison()
                    || *op == BinOp::And
                    || matches!(
                        op,
                        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr
                    );
                if descend && (opty.is_int() || *op == BinOp::And) {
                    self.no_overflow(a, inst, seen, out);
                    self.no_overflow(b, inst, seen, out);
                }
            }
            TermKind::Unary(UnOp::Neg, a) => {
                if signed {
                    if let Some(q) = self.wraps.get(&(t.id, inst)) {
                        out.push(q.eq(int(0)));
                    }
                }
                self.no_overflow(a, inst, seen, out);
            }
            TermKind::Cast(a) if a.ty.is_int() => self.no_overflow(a, inst, seen, out),
            _ => {}
        }
    }

    /// The no-overflow facts of condition `t` of thread `inst`, each under
    /// the conjuncts evaluated before it ([`Self::no_overflow_guarded`]);
    /// each condition has a walk of [`GUARDED_VISITS`] of its own.
    pub(crate) fn guarded_facts(&mut self, t: &Term, inst: usize, out: &mut GuardedFacts) {
        out.walked = 0;
        self.no_overflow_guarded(t, inst, &Bool::from_bool(true), out);
    }

    /// "No undefined behaviour" for what a thread evaluates of the
    /// condition `t` (a path condition: conjuncts in program order), with
    /// C's short-circuits: the right operand of `a && b` is evaluated only
    /// where `a` holds, that of `a || b` only where `a` fails. Each
    /// operand's facts hold under `guard` and those premises, so the facts
    /// are sound for a thread whose condition is false, too: it evaluated
    /// its conjuncts up to the first that failed.
    fn no_overflow_guarded(&mut self, t: &Term, inst: usize, guard: &Bool, out: &mut GuardedFacts) {
        let guard_key = guard.get_z3_ast().as_ptr() as usize;
        if out.walked >= GUARDED_VISITS || !self.fruitful(t, inst, out) || !out.visited.insert((t.id, inst, guard_key))
        {
            return;
        }
        out.walked += 1;
        match &t.kind {
            TermKind::Binary(op @ (BinOp::And | BinOp::Or), _, a, b) => {
                self.no_overflow_guarded(a, inst, guard, out);
                let ea = self.enc_bool(a, inst);
                let premise = if *op == BinOp::And { ea } else { ea.not() };
                let inner = Bool::and(&[guard.clone(), premise]);
                self.no_overflow_guarded(b, inst, &inner, out);
            }
            TermKind::Unary(UnOp::Not, a) => self.no_overflow_guarded(a, inst, guard, out),
            // Facts of a term both threads share, under a guard: dropped
            // (fewer facts are sound). They are the same for both threads,
            // so they rarely tell them apart, and a symbolic configuration's
            // guards are disjunctions the solver would split on (ggml's
            // covers: most of the solver's work).
            _ if guard.as_bool() != Some(true) && self.shared_with_first(t) => {}
            _ => {
                for f in self.leaf_facts(t, inst, out) {
                    out.add(guard, f);
                }
            }
        }
    }

    /// The no-overflow facts of a leaf of a condition, once per term.
    fn leaf_facts(&mut self, t: &Term, inst: usize, out: &mut GuardedFacts) -> Vec<Bool> {
        if let Some(facts) = out.leaves.get(&(t.id, inst)) {
            return facts.clone();
        }
        // The wraps `no_overflow` constrains exist once `t` is encoded.
        self.enc(t, inst);
        let mut facts = Vec::new();
        self.no_overflow(t, inst, &mut HashSet::default(), &mut facts);
        out.leaves.insert((t.id, inst), facts.clone());
        facts
    }

    /// Whether a condition has a leaf with facts ([`GuardedFacts::fruitful`]).
    fn fruitful(&mut self, t: &Term, inst: usize, out: &mut GuardedFacts) -> bool {
        if let Some(&known) = out.fruitful.get(&(t.id, inst)) {
            return known;
        }
        let found = match &t.kind {
            TermKind::Binary(BinOp::And | BinOp::Or, _, a, b) => {
                let left = self.fruitful(a, inst, out);
                self.fruitful(b, inst, out) || left
            }
            TermKind::Unary(UnOp::Not, a) => self.fruitful(a, inst, out),
            _ => !self.leaf_facts(t, inst, out).is_empty(),
        };
        out.fruitful.insert((t.id, inst), found);
        found
    }

    /// The symbols a record's terms mention, closed under the terms their facts use.
    fn symbols_of_record(&mut self, index: usize) -> Vec<SymbolId> {
        if let Some(s) = self.record_symbols.get(&index) {
            return s.clone();
        }
        let r = &self.model.records[index];
        let out = self.symbols_closure(
            &[&r.offset, &r.width, &r.pc, &r.phase.block, &r.phase.warp, &r.phase.grid],
            &r.loops,
        );
        self.record_symbols.insert(index, out.clone());
        out
    }

    /// The symbols `terms` mention and the counters `loops`, closed under the
    /// terms their facts use (load addresses, the counters they depend on).
    fn symbols_closure(&self, terms: &[&Term], loops: &[SymbolId]) -> Vec<SymbolId> {
        let mut out = Vec::new();
        let mut seen = HashSet::default();
        for t in terms {
            symbols_of(t, &mut out, &mut seen);
        }
        out.extend(loops.iter().copied());
        let mut i = 0;
        while i < out.len() {
            let s = self.model.symbol(out[i]);
            if let Origin::Load { offset, width, .. } = &s.origin {
                symbols_of(offset, &mut out, &mut seen);
                symbols_of(width, &mut out, &mut seen);
            }
            for d in s.deps.clone() {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
            i += 1;
        }
        out.sort();
        out.dedup();
        out
    }

    fn same_block(&mut self) -> Bool {
        let mut eqs = Vec::new();
        for d in Dim::ALL {
            let (a, b) = (self.bid(d, 0), self.bid(d, 1));
            eqs.push(a.eq(&b));
        }
        Bool::and(&eqs)
    }

    fn linear_tid(&mut self, inst: usize) -> Int {
        if let Some(l) = &self.ltid[inst] {
            return l.clone();
        }
        let iv = |this: &Self, b: Builtin| this.builtin_interval(b);
        let bx = self.builtin(Builtin::BlockDim(Dim::X), inst);
        let by = self.builtin(Builtin::BlockDim(Dim::Y), inst);
        let x = self.tid(Dim::X, inst);
        let y = self.tid(Dim::Y, inst);
        let z = self.tid(Dim::Z, inst);
        let (ibx, iby) = (iv(self, Builtin::BlockDim(Dim::X)), iv(self, Builtin::BlockDim(Dim::Y)));
        let (ity, itz) = (
            iv(self, Builtin::ThreadIdx(Dim::Y)),
            iv(self, Builtin::ThreadIdx(Dim::Z)),
        );
        let yx = self.product(y, bx.clone(), ity, ibx);
        let plane_iv = match (ibx, iby) {
            (Some((a, b)), Some((c, d))) => Some((a * c, b * d)),
            _ => None,
        };
        let plane = self.product(bx, by, ibx, iby);
        let zp = self.product(z, plane, itz, plane_iv);
        let l = Int::add(&[x, yx, zp]);
        self.ltid[inst] = Some(l.clone());
        l
    }

    fn same_warp(&mut self) -> Bool {
        let w = int(self.model.warp_size as i128);
        let w0 = self.linear_tid(0).div(&w);
        let w1 = self.linear_tid(1).div(&w);
        let sb = self.same_block();
        Bool::and(&[sb, w0.eq(&w1)])
    }

    /// The number of threads in a block (a product of the three extents).
    fn block_threads(&mut self) -> Int {
        let iv: Vec<Interval> = Dim::ALL
            .iter()
            .map(|&d| self.builtin_interval(Builtin::BlockDim(d)))
            .collect();
        let bx = self.builtin(Builtin::BlockDim(Dim::X), 0);
        let by = self.builtin(Builtin::BlockDim(Dim::Y), 0);
        let bz = self.builtin(Builtin::BlockDim(Dim::Z), 0);
        let plane_iv = match (iv[0], iv[1]) {
            (Some((a, b)), Some((c, d))) => Some((a * c, b * d)),
            _ => None,
        };
        let plane = self.product(bx, by, iv[0], iv[1]);
        self.product(plane, bz, plane_iv, iv[2])
    }

    /// Launch-shape facts: indices below extents, the block at most 1024 threads.
    fn shape_facts(&mut self) -> Vec<Bool> {
        let mut out = Vec::new();
        for d in Dim::ALL {
            let bdim = self.builtin(Builtin::BlockDim(d), 0);
            let gdim = self.builtin(Builtin::GridDim(d), 0);
            for inst in 0..2 {
                let t = self.tid(d, inst);
                let b = self.bid(d, inst);
                out.push(t.lt(&bdim));
                out.push(b.lt(&gdim));
            }
        }
        let max = self.shape.max_threads.unwrap_or(1024).min(1024) as i128;
        let threads = self.block_threads();
        out.push(threads.le(int(max)));
        // Launch facts (over parameters and dimensions: one value for both threads).
        for f in &self.model.assumptions {
            out.push(self.enc_bool(f, 0));
        }
        // No undefined behaviour in what the host evaluated: its signed
        // arithmetic did not overflow (`ne23 == ne12*ne13` is the product).
        let mut guarded = GuardedFacts::default();
        for f in self.model.evaluated.clone() {
            self.guarded_facts(&f, 0, &mut guarded);
        }
        out.extend(guarded.finish());
        for d in Dim::ALL {
            let m = self.shape.block_multiple[d as usize];
            if m > 1 {
                let b = self.builtin(Builtin::BlockDim(d), 0);
                out.push(b.modulo(int(m as i128)).eq(int(0)));
            }
        }
        out
    }

    /// What the kernel promises (`AccessModel::promises`), for both threads:
    /// a witness is an execution without undefined behaviour.
    fn promise_facts(&mut self) -> Vec<Bool> {
        let model = self.model;
        let mut out = Vec::new();
        for p in &model.promises {
            for inst in 0..2 {
                out.push(self.enc_bool(p, inst));
            }
        }
        out
    }

    /// Facts about symbols: uniform symbols agree between the threads that
    /// share them; loads from memory nobody writes agree when their addresses do.
    /// A thread in iteration `k` of a loop whose exit count `N` is shared
    /// (a barrier loop) has `k < N`; the other thread's `N` is then its own.
    /// This orders an access inside a barrier loop before one after it.
    fn exit_facts(&mut self, syms: &mut [Vec<SymbolId>; 2], out: &mut Vec<Bool>) {
        for inst in 0..2 {
            let other = syms[1 - inst].clone();
            for k in syms[inst].clone() {
                let Origin::Counter { label } = self.model.symbol(k).origin else {
                    continue;
                };
                for &n in &other {
                    let info = self.model.symbol(n);
                    if info.scope == Scope::Thread
                        || !matches!(info.origin, Origin::ExitCount { label: l } if l == label)
                    {
                        continue;
                    }
                    if !syms[inst].contains(&n) {
                        syms[inst].push(n);
                    }
                    // A thread leaving by a `break` (or at the bottom of a
                    // `do`-loop) does so in iteration N itself.
                    let (kv, nv) = (self.symbol_const(k, inst), self.symbol_const(n, inst));
                    let (kv, nv) = (Self::as_int(kv), Self::as_int(nv));
                    out.push(if self.left_at_top(k) { kv.lt(&nv) } else { kv.le(&nv) });
                }
            }
        }
    }

    /// `inside`: the counters of the loops around each thread's point.
    fn symbol_facts(&mut self, syms: &[Vec<SymbolId>; 2], inside: [&[SymbolId]; 2], out: &mut Vec<Bool>) {
        let same_block = self.same_block();
        let same_warp = self.same_warp();
        for &s in &syms[0] {
            if !syms[1].contains(&s) {
                continue;
            }
            let info = self.model.symbol(s).clone();
            let scope = match info.scope {
                Scope::Thread => continue,
                Scope::Warp => same_warp.clone(),
                Scope::Block => same_block.clone(),
                Scope::Grid => Bool::from_bool(true),
            };
            let mut conds = vec![scope];
            conds.extend(self.counters_alike(&info.deps));
            let a = self.symbol_const(s, 0);
            let b = self.symbol_const(s, 1);
            out.push(Bool::and(&conds).implies(a.eq(&b)));
            self.progress_facts(s, &conds, inside, out);
        }
        self.exit_progress_facts(syms, inside, out);
        // Functional consistency of read-only loads (bounded: quadratic).
        let mut loads: Vec<(usize, SymbolId)> = Vec::new();
        for (inst, list) in syms.iter().enumerate() {
            let mut n = 0;
            for &s in list {
                if let Origin::Load { object, .. } = &self.model.symbol(s).origin {
                    if self.read_only[object.index()] && n < 24 {
                        loads.push((inst, s));
                        n += 1;
                    }
                }
            }
        }
        for (i, &(ia, a)) in loads.iter().enumerate() {
            for &(ib, b) in &loads[i + 1..] {
                let (sa, sb) = (self.model.symbol(a).clone(), self.model.symbol(b).clone());
                let (
                    Origin::Load {
                        object: oa,
                        offset: fa,
                        width: wa,
                    },
                    Origin::Load {
                        object: ob,
                        offset: fb,
                        width: wb,
                    },
                ) = (&sa.origin, &sb.origin)
                else {
                    continue;
                };
                if oa != ob || sa.ty != sb.ty {
                    continue;
                }
                let same_address = Bool::and(&[
                    self.enc_int(fa, ia).eq(self.enc_int(fb, ib)),
                    self.enc_int(wa, ia).eq(self.enc_int(wb, ib)),
                ]);
                let va = self.symbol_const(a, ia);
                let vb = self.symbol_const(b, ib);
                out.push(same_address.implies(va.eq(&vb)));
            }
        }
    }

    /// A phase's progress through a loop, shared by both threads in one
    /// iteration (`conds`: their scope, and the counters equal): a thread
    /// in a later iteration has the progress of the earlier one's iteration
    /// plus that iteration's advance at least (phases never go back). With
    /// the exit count of an inner loop above the count of a thread inside
    /// it, accesses of different iterations of a loop of inner loops of
    /// barriers are then ordered (a bitonic sort's stages).
    fn progress_facts(&mut self, s: SymbolId, conds: &[Bool], inside: [&[SymbolId]; 2], out: &mut Vec<Bool>) {
        let info = self.model.symbol(s).clone();
        let (
            Origin::Progress {
                advance: Some(advance), ..
            },
            Some((&own, outer)),
        ) = (&info.origin, info.deps.split_last())
        else {
            return;
        };
        // The scope and the enclosing loops' counters equal (`conds` ends
        // with this loop's counters equal), this loop's apart.
        debug_assert_eq!(conds.len(), outer.len() + 2);
        let same = &conds[..conds.len() - 1];
        let k = [self.symbol_const(own, 0), self.symbol_const(own, 1)].map(Self::as_int);
        let p = [self.symbol_const(s, 0), self.symbol_const(s, 1)].map(Self::as_int);
        let mut bounds = Vec::new();
        for (a, b) in [(0, 1), (1, 0)] {
            let step = self.enc_int(advance, a);
            let later = Bool::and(&[same, &[k[a].lt(&k[b])]].concat());
            bounds.push(later.implies(p[b].ge(Int::add(&[p[a].clone(), step]))));
            self.inner_exit_facts(advance, a, inside[a], out);
        }
        out.append(&mut bounds);
    }

    /// A phase's progress at a loop's exit in one thread, against its
    /// progress in an iteration of the loop in the other thread (one
    /// scope, the enclosing loops' counters equal, a loop left only at
    /// the top: the iteration is before the exit): at least that
    /// iteration's progress plus its advance.
    fn exit_progress_facts(&mut self, syms: &[Vec<SymbolId>; 2], inside: [&[SymbolId]; 2], out: &mut Vec<Bool>) {
        for (b, a) in [(0, 1), (1, 0)] {
            for &e in &syms[b] {
                let exit = self.model.symbol(e).clone();
                let Origin::Progress { exit_of: Some(p), .. } = exit.origin else {
                    continue;
                };
                let within = self.model.symbol(p).clone();
                let Origin::Progress {
                    advance: Some(advance), ..
                } = &within.origin
                else {
                    continue;
                };
                let Some((&own, outer)) = within.deps.split_last() else {
                    continue;
                };
                if !syms[a].contains(&p)
                    || !inside[a].contains(&own)
                    || !self.left_at_top(own)
                    || outer != exit.deps.as_slice()
                {
                    continue;
                }
                let mut conds = vec![match exit.scope {
                    Scope::Thread => continue,
                    Scope::Warp => self.same_warp(),
                    Scope::Block => self.same_block(),
                    Scope::Grid => Bool::from_bool(true),
                }];
                conds.extend(self.counters_alike(outer));
                let (pe, pa) = (self.symbol_const(e, b), self.symbol_const(p, a));
                let step = self.enc_int(advance, a);
                self.inner_exit_facts(advance, a, inside[a], out);
                let bound = Self::as_int(pe).ge(Int::add(&[Self::as_int(pa), step]));
                out.push(Bool::and(&conds).implies(bound));
            }
        }
    }

    /// Whether the loop counted by `counter` is left only at the top of an
    /// iteration (see `LoopRecord::exits_at_top`).
    fn left_at_top(&self, counter: SymbolId) -> bool {
        self.model
            .loops
            .iter()
            .any(|lr| lr.counter == counter && lr.exits_at_top)
    }

    /// Both threads' values of the loop counters `deps` equal.
    fn counters_alike(&mut self, deps: &[SymbolId]) -> Vec<Bool> {
        deps.iter()
            .map(|&d| {
                let (a, b) = (self.symbol_const(d, 0), self.symbol_const(d, 1));
                a.eq(&b)
            })
            .collect()
    }

    /// `k < N` in thread `inst` for the exit counts `N` that `t` mentions
    /// of loops left only at the top of an iteration and around the
    /// thread's point (`inside`, their counters `k`): a thread inside such
    /// a loop has not left it.
    fn inner_exit_facts(&mut self, t: &Term, inst: usize, inside: &[SymbolId], out: &mut Vec<Bool>) {
        let mut syms = Vec::new();
        symbols_of(t, &mut syms, &mut HashSet::default());
        for n in syms {
            let Origin::ExitCount { label } = self.model.symbol(n).origin else {
                continue;
            };
            let Some(&k) = inside.iter().find(|&&k| {
                matches!(self.model.symbol(k).origin, Origin::Counter { label: l } if l == label) && self.left_at_top(k)
            }) else {
                continue;
            };
            let (kv, nv) = (self.symbol_const(k, inst), self.symbol_const(n, inst));
            out.push(Self::as_int(kv).lt(Self::as_int(nv)));
        }
    }

    /// Both threads distinct, bytes overlapping, nothing ordering them.
    fn unordered(&mut self, overlap: Bool, phases: [[&Int; 3]; 2], collective: Bool, shared: bool) -> Bool {
        let same_block = self.same_block();
        let mut same = vec![same_block.clone()];
        for d in Dim::ALL {
            let (a, b) = (self.tid(d, 0), self.tid(d, 1));
            same.push(a.eq(&b));
        }
        let same_thread = Bool::and(&same);
        let same_warp = self.same_warp();
        let [p0, p1] = phases;
        // A grid barrier orders the threads of one block too: same-block
        // pairs need equal grid phases as well.
        let in_block = Bool::and(&[
            same_block.clone(),
            p0[0].eq(p1[0]),
            p0[2].eq(p1[2]),
            same_warp.implies(p0[1].eq(p1[1])),
        ]);
        let unordered = if shared {
            in_block
        } else {
            Bool::or(&[in_block, Bool::and(&[same_block.not(), p0[2].eq(p1[2])])])
        };
        Bool::and(&[
            overlap,
            same_thread.not(),
            unordered,
            // A warp performs its collective accesses as a unit, in program order.
            collective.implies(same_warp.not()),
        ])
    }

    /// The conflict of two records, with its side conditions.
    fn conflict(&mut self, a: &AccessRecord, b: &AccessRecord, shared: bool) -> (Bool, Vec<Bool>) {
        let mut side = Vec::new();
        let pc0 = self.enc_bool(&a.pc, 0);
        let pc1 = self.enc_bool(&b.pc, 1);
        let o0 = self.enc_int(&a.offset, 0);
        let o1 = self.enc_int(&b.offset, 1);
        let overlap = match self.element_indices(a, b) {
            // Whole elements of one size `f ≥ 1` at `x*f` and `y*f` (no
            // overflow, a side condition below): the ranges meet exactly
            // when `x = y`. Linear, where the byte offsets multiply two
            // unknowns (the size of a type parameter).
            Some((x, y)) => {
                let (ex, ey) = (self.enc_int(&x, 0), self.enc_int(&y, 1));
                let mut lemmas = self.radix_lemmas(&x, &y, ex.eq(&ey));
                self.guard_lemmas_for_splits(&mut lemmas, a, b);
                self.use_lemmas(lemmas, &mut side);
                ex.eq(&ey)
            }
            None => {
                let w0 = self.enc_int(&a.width, 0);
                let w1 = self.enc_int(&b.width, 1);
                let overlap = Bool::and(&[o0.lt(Int::add(&[o1.clone(), w1])), o1.lt(Int::add(&[o0.clone(), w0]))]);
                let mut lemmas = self.radix_lemmas(&a.offset, &b.offset, o0.eq(&o1));
                if lemmas.1.len() > lemmas.0 {
                    lemmas
                        .1
                        .extend(self.overlap_is_equality(&a.offset, &b.offset, [&a.width, &b.width], &overlap));
                }
                self.guard_lemmas_for_splits(&mut lemmas, a, b);
                self.use_lemmas(lemmas, &mut side);
                overlap
            }
        };
        self.strides = strides([&a.offset, &b.offset], [&a.pc, &b.pc]);
        // With the addresses of the loads they read (functional
        // consistency relates those).
        let own = [&a.offset, &b.offset, &a.pc, &b.pc];
        let syms = self.symbols_closure(&own, &[]);
        let mut terms = own.to_vec();
        for s in syms {
            if let Origin::Load { offset, .. } = &self.model.symbol(s).origin {
                terms.push(offset);
            }
        }
        (self.nonlinear, self.shifts) = nonlinear_params(&terms);
        let ph0 = [
            self.enc_int(&a.phase.block, 0),
            self.enc_int(&a.phase.warp, 0),
            self.enc_int(&a.phase.grid, 0),
        ];
        let ph1 = [
            self.enc_int(&b.phase.block, 1),
            self.enc_int(&b.phase.warp, 1),
            self.enc_int(&b.phase.grid, 1),
        ];
        for (t, inst) in [(&a.pc, 0), (&a.offset, 0), (&b.pc, 1), (&b.offset, 1)] {
            let mut seen = HashSet::default();
            self.no_overflow(t, inst, &mut seen, &mut side);
        }
        let collective = Bool::from_bool(a.collective && b.collective);
        let u = self.unordered(
            overlap,
            [[&ph0[0], &ph0[1], &ph0[2]], [&ph1[0], &ph1[1], &ph1[2]]],
            collective,
            shared,
        );
        (Bool::and(&[pc0, pc1, u]), side)
    }

    /// With mixed-radix lemmas, in the pass that wants them, the guards'
    /// lemmas (see [`Self::guard_lemmas`]): what establishes the splits'
    /// premises. Only there: they encode parts of the guards that the
    /// guards' own encoding may have folded away, and new terms in the
    /// query of a pass that searches for witnesses move its search.
    fn guard_lemmas_for_splits(
        &mut self,
        (identities, lemmas): &mut (usize, Vec<Bool>),
        a: &AccessRecord,
        b: &AccessRecord,
    ) {
        if self.lemmas && lemmas.len() > *identities {
            self.guard_lemmas(&a.pc, 0, lemmas);
            self.guard_lemmas(&b.pc, 1, lemmas);
        }
    }

    /// Adds `lemmas` to `side`: the first `identities` (normal forms) in
    /// every pass, the mixed-radix ones in the pass that wants them, and
    /// notes whether there were any of those (see [`Self::in_passes`]).
    fn use_lemmas(&mut self, (identities, mut lemmas): (usize, Vec<Bool>), side: &mut Vec<Bool>) {
        let identities: Vec<Bool> = lemmas.drain(..identities).collect();
        if self.pass != Pass::Unwrapped {
            side.extend(identities);
        }
        self.splits |= !lemmas.is_empty();
        if self.lemmas {
            side.extend(lemmas);
        }
    }

    /// The element indices `(x, y)` of two accesses at offsets `x*f` and
    /// `y*f` (signed products, either order) of width `f`, for one
    /// non-constant `f ≥ 1` (up to conversions that keep its value).
    fn element_indices(&mut self, a: &AccessRecord, b: &AccessRecord) -> Option<(Term, Term)> {
        let factor = self.unconverted(&a.width)?.id;
        if a.width.as_int().is_some() || self.unconverted(&b.width)?.id != factor {
            return None;
        }
        let x = self.index_scaled_by(&a.offset, factor)?;
        let y = self.index_scaled_by(&b.offset, factor)?;
        Some((x, y))
    }

    /// `x` when `offset` is a signed `x * f` with `f` the term `factor` up to
    /// value-keeping conversions.
    fn index_scaled_by(&mut self, offset: &Term, factor: u32) -> Option<Term> {
        let TermKind::Binary(BinOp::Mul, ScalarTy::Int { signed: true, .. }, p, q) = &offset.kind else {
            return None;
        };
        if self.unconverted(q).is_some_and(|f| f.id == factor) {
            Some(p.clone())
        } else if self.unconverted(p).is_some_and(|f| f.id == factor) {
            Some(q.clone())
        } else {
            None
        }
    }

    /// `t` without integer conversions, when each keeps the value and the
    /// value is at least 1 (an element size); else `None`.
    fn unconverted<'t>(&mut self, t: &'t Term) -> Option<&'t Term> {
        let positive = |iv: Interval| iv.is_some_and(|(lo, hi)| lo >= 1 && hi < 1 << 62);
        if !positive(self.interval(t)) {
            return None;
        }
        match &t.kind {
            TermKind::Cast(inner) if inner.ty.is_int() && t.ty.is_int() => {
                let kept = within(self.interval(inner), range_of(t.ty));
                if kept {
                    self.unconverted(inner)
                } else {
                    None
                }
            }
            _ => Some(t),
        }
    }

    /// Whether some launch satisfies the shape and the launch facts: facts
    /// that contradict each other would make every obligation vacuous.
    pub fn launch_consistent(&mut self) -> bool {
        let _s = crate::profile::stage("launch-consistent");
        self.begin();
        let mut facts = self.shape_facts();
        facts.extend(self.product_lemmas());
        facts.append(&mut self.defs.clone());
        // Products stay abstract here (an over-approximation): unsat is sure.
        let work = self.allowance;
        let check = |solver: &Solver| {
            // The whole strategy, made at the first push as it always was.
            strategy::first_assertion(|| Theories::ALL, || solver.push());
            for f in &facts {
                solver.assert(f);
            }
            let r = self.clock_for(work).watch(|| check_within(solver, &[], work));
            solver.pop(1);
            r
        };
        // One solver per thread and context, a scope per check: a new
        // solver costs some 3 ms to build its core and 3 ms more for the
        // first-check strategy, once per job.
        let r = CONSISTENCY.with(|cell| {
            let mut slot = cell.borrow_mut();
            let context = z3::Context::thread_local().get_z3_context();
            if slot
                .as_ref()
                .is_none_or(|s| s.get_context().get_z3_context() != context)
            {
                *slot = Some(self.new_solver());
            }
            check(slot.as_ref().expect("made above"))
        });
        r != SatResult::Unsat
    }

    /// Decides whether records `i` and `j` conflict, in the passes of
    /// [`Self::in_passes`] (most race-freedom proofs need only that both
    /// threads compute a stride alike: the abstract pass).
    pub fn check_pair(&mut self, i: usize, j: usize, shared: bool) -> Outcome {
        self.in_passes(|this| this.check_pair_once(i, j, shared))
    }

    /// Whether a concrete run's values (`probe::Lead`: parameters, extents
    /// and the two threads' indices, instance 0 making record `i`'s
    /// access) extend to a witness of records `i` and `j`: one exact query
    /// with them pinned. Anything but a witness is unknown: the values are
    /// one run's, and prove nothing.
    pub fn check_pair_at(&mut self, i: usize, j: usize, shared: bool, values: &[(probe::Leaf, i128)]) -> Outcome {
        let named: Vec<(String, i128)> = values
            .iter()
            .filter_map(|&(leaf, v)| {
                let name = match leaf {
                    probe::Leaf::Param(p) => param_name(p),
                    probe::Leaf::Sym(i) => sym_name(i),
                    probe::Leaf::Builtin(b, inst) => builtin_name(b, inst)?,
                };
                Some((name, v))
            })
            .collect();
        // `solve` tries the lead and returns before any heuristic (hints,
        // degenerate parameters) would read this obligation's state.
        // Without wrap-around first (runs seldom wrap, and the wrap
        // quotients make the pinned query large), then exactly.
        let full = self.allowance;
        self.pass = Pass::Unwrapped;
        self.allowance = full / 2;
        self.lead = Some(named.clone());
        let mut out = self.check_pair_once(i, j, shared);
        if !matches!(out, Outcome::Sat { .. }) {
            self.pass = Pass::Exact;
            self.allowance = full - full / 2;
            self.lead = Some(named);
            out = self.check_pair_once(i, j, shared);
        }
        self.lead = None;
        self.allowance = full;
        match out {
            Outcome::Unsat => Outcome::Unknown("the run's values give no witness".into()),
            other => other,
        }
    }

    /// Runs `once` in up to three passes: with hard operations abstracted
    /// under a quarter of the work (proofs), again with the mixed-radix
    /// lemmas under half where offsets split; unless that settled it,
    /// exactly but without wrap-around under an eighth (most witnesses:
    /// without the 64-bit wrap quotients Z3 stays on small numbers); then
    /// exactly (in a first round, with a quarter of its slice).
    fn in_passes(&mut self, mut once: impl FnMut(&mut Self) -> Outcome) -> Outcome {
        self.hints.clear();
        self.degenerate_tries = 0;
        self.degenerate_cores.clear();
        let full = self.allowance;
        let mut pass = |this: &mut Self, pass: Pass, work: Work| {
            this.pass = pass;
            this.allowance = work;
            let _s = crate::profile::stage(match pass {
                Pass::Unwrapped => "unwrapped",
                Pass::Abstract => "abstract",
                Pass::Exact => "exact",
            });
            // (Reading the work may make a meter, which counts as work:
            // only when asked.)
            let debug = std::env::var("WARPDRF_DEBUG_SMT").is_ok();
            let (t0, w0) = (Instant::now(), if debug { work_done() } else { 0 });
            let out = once(this);
            if debug {
                let what = match &out {
                    Outcome::Unsat => "unsat".to_string(),
                    Outcome::Sat { .. } => "sat".to_string(),
                    Outcome::Unknown(why) => format!("unknown ({why})"),
                };
                // What it spent, its heuristics' own work included.
                eprintln!(
                    "  pass {pass:?} ({} units): {what}; spent {} units in {} ms",
                    work,
                    work_done() - w0,
                    t0.elapsed().as_millis()
                );
            }
            this.pass = Pass::Exact;
            this.allowance = full;
            out
        };
        let first = pass(self, Pass::Abstract, (full / 4).max(work_for_ms(100)));
        // Without abstractions the first pass was exact: only its timeout
        // is worth a second, longer try.
        if matches!(first, Outcome::Unsat) || (!self.abstracted && !matches!(first, Outcome::Unknown(_))) {
            return first;
        }
        // Offsets that split by a common factor: the abstract pass again,
        // with the mixed-radix lemmas (`radix`). A pass of its own: its
        // models, different, would steer the witness search that follows
        // the abstract pass's model. Half of the work, at least 150 ms: it
        // is where split indices are proved, in 0.4–0.9 M units on ggml's
        // im2col_kernel, whose first rounds left all six of its obligations
        // to the second at an eighth (4.2 s; 1.2 s now).
        if self.splits {
            let hints = std::mem::take(&mut self.hints);
            self.lemmas = true;
            let second = pass(self, Pass::Abstract, (full / 2).max(work_for_ms(150)));
            self.lemmas = false;
            self.hints = hints;
            if matches!(second, Outcome::Unsat) {
                return second;
            }
        }
        let unwrapped = pass(self, Pass::Unwrapped, (full / 8).max(work_for_ms(50)));
        if matches!(unwrapped, Outcome::Sat { .. }) {
            return unwrapped;
        }
        // In a first round the exact pass gets a quarter: its nonlinear
        // search rarely ends within a slice, and the obligations it leaves
        // get all of their work in the next round (on ggml: 7% less CPU,
        // no verdict moved).
        pass(self, Pass::Exact, if self.sliced { full / 4 } else { full })
    }

    fn check_pair_once(&mut self, i: usize, j: usize, shared: bool) -> Outcome {
        self.begin();
        let model = self.model;
        let (a, b) = (&model.records[i], &model.records[j]);
        let mut syms = [self.symbols_of_record(i), self.symbols_of_record(j)];
        let (conflict, side) = self.conflict(a, b, shared);
        let mut facts = self.shape_facts();
        facts.extend(self.promise_facts());
        facts.extend(side);
        self.exit_facts(&mut syms, &mut facts);
        self.symbol_facts(&syms, [&a.loops, &b.loops], &mut facts);
        self.decide(facts, &conflict, &format!("{i}_{j}"), &syms, |this, m| {
            this.witness(m, a, b, &syms)
        })
    }

    /// Asserts `facts` and `goal` on a fresh solver and solves: `Sat` with
    /// the witness `witness` reads from the model, and whether loaded data
    /// decides it.
    fn decide(
        &mut self,
        mut facts: Vec<Bool>,
        goal: &Bool,
        name: &str,
        syms: &[Vec<SymbolId>; 2],
        witness: impl FnOnce(&mut Self, &z3::Model) -> Witness,
    ) -> Outcome {
        let solver = self.new_solver();
        facts.extend(self.product_lemmas());
        facts.append(&mut self.defs.clone());
        // (The pins without wrap-around, made below, add no theory.)
        self.make_strategy(&solver, facts.iter().chain([goal]));
        for f in &facts {
            solver.assert(f);
        }
        solver.assert(goal);
        if self.pass == Pass::Unwrapped {
            for pin in self.no_wrap() {
                solver.assert(&pin);
            }
        }
        self.dump(&solver, &format!("{name}{}", self.pass.suffix()));
        match self.solve(&solver) {
            // Without wrap-around is an under-approximation: no proof.
            (SatResult::Unsat, _) if self.pass == Pass::Unwrapped => {
                Outcome::Unknown("no witness without wrap-around".into())
            }
            (SatResult::Unsat, _) => Outcome::Unsat,
            (SatResult::Sat, Some(_)) if self.pass == Pass::Abstract && self.abstracted => {
                Outcome::Unknown("an abstraction's model".into())
            }
            // A witness is only what the query's model shows: one that does
            // not satisfy the query proves nothing.
            (SatResult::Sat, Some(m)) if !satisfies(&m, facts.iter().chain([goal])) => {
                if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                    let bad: Vec<String> = failing(&m, facts.iter().chain([goal]))
                        .take(3)
                        .map(|f| format!("{f} -> {:?}", m.eval(f, true)))
                        .collect();
                    eprintln!("  model fails: {bad:?}");
                }
                Outcome::Unknown("the solver's model does not satisfy the query".into())
            }
            (SatResult::Sat, Some(m)) => {
                let mut witness = witness(self, &m);
                // Say when the conflict needs a value past its type's range
                // (realistic sizes may never get there).
                // (Read without model completion: completing changes the
                // model, and with it the search of every later query.)
                let wrapped = |q: &Int| m.eval(q, false).and_then(|v| v.as_i64()).is_some_and(|v| v != 0);
                if self.wraps.values().any(wrapped) {
                    witness.notes.push(
                        "these values make an integer computation wrap around (unsigned arithmetic or a \
                         conversion, modulo 2^N); no witness without a wrap-around was found"
                            .into(),
                    );
                }
                let t = std::time::Instant::now();
                let input_dependent = self.input_dependent(&m, syms, &facts, goal);
                if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                    eprintln!("  input dependence: {} ms", t.elapsed().as_millis());
                }
                Outcome::Sat {
                    witness: Box::new(witness),
                    input_dependent,
                }
            }
            _ => Outcome::Unknown(
                solver
                    .get_reason_unknown()
                    .unwrap_or_else(|| "the solver gave up".into()),
            ),
        }
    }

    fn dump(&self, solver: &Solver, what: &str) {
        if let Ok(dir) = std::env::var("WARPDRF_DUMP_SMT") {
            // Instantiations and passes share a name: a later query takes
            // the next free number rather than replacing the first.
            let base = format!("{dir}/{}_{what}", self.kernel.name);
            let path = (0..)
                .map(|n| match n {
                    0 => format!("{base}.smt2"),
                    n => format!("{base}.{n}.smt2"),
                })
                .find(|p| !std::path::Path::new(p).exists())
                .unwrap_or_default();
            // The abstractions' exact definitions, as comments.
            let mut text = solver.to_smt2();
            for pr in &self.products {
                text.push_str(&format!("; (= {} (* {} {}))\n", pr.p, pr.x, pr.y));
            }
            for dv in &self.divisions {
                let def = Self::division_definition(&dv.x, &dv.y, &dv.q, &dv.r, None);
                text.push_str(&format!("; {}\n", def.to_string().replace('\n', " ")));
            }
            let _ = std::fs::write(path, text);
        }
    }

    /// A block extent the shape fixes (a model need not mention it).
    fn known_extent(&self, d: Dim) -> Option<u64> {
        let i = d as usize;
        match self.shape.block_dim {
            Some(b) => Some(b[i].max(1) as u64),
            None => self.shape.block_known[i].map(|v| v.max(1) as u64),
        }
    }

    fn value(&self, m: &z3::Model, d: &Dynamic) -> i128 {
        if let Some(b) = d.as_bool() {
            return m.eval(&b, true).and_then(|v| v.as_bool()).unwrap_or(false) as i128;
        }
        d.as_int().and_then(|v| Self::model_int(m, &v)).unwrap_or(0)
    }

    fn witness(&mut self, m: &z3::Model, a: &AccessRecord, b: &AccessRecord, syms: &[Vec<SymbolId>; 2]) -> Witness {
        let (block_dim, grid_dim) = self.launch_dims(m);
        let mut threads = Vec::new();
        let mut notes = Vec::new();
        for (inst, r) in [(0usize, a), (1usize, b)] {
            let mut t = self.thread_witness(m, inst, block_dim, &r.loops);
            let off = self.enc(&r.offset, inst);
            let wid = self.enc(&r.width, inst);
            // In bytes: the model measures the object in its unit.
            let unit = self.model.units.get(r.object.index()).copied().unwrap_or(1) as i128;
            let (off, wid) = (
                self.value(m, &off).saturating_mul(unit),
                self.value(m, &wid).saturating_mul(unit),
            );
            t.offset = off.clamp(i64::MIN.into(), i64::MAX.into()) as i64;
            t.width = wid.clamp(0, i64::MAX.into()) as i64;
            if i64::try_from(off).is_err() {
                // The unit model drops the scalings' no-overflow facts
                // (`passes::units`): such an offset is past any memory.
                notes.push(format!(
                    "thread {}'s byte offset, {off}, does not fit 64 bits: an address past any memory",
                    inst + 1
                ));
            }
            threads.push(t);
        }
        let [t0, t1]: [ThreadWitness; 2] = threads.try_into().expect("two threads");
        Witness {
            threads: [t0, t1],
            block_dim,
            grid_dim,
            params: self.param_values(m, &[&a.offset, &a.pc, &b.offset, &b.pc]),
            inputs: self.input_values(m, syms),
            notes,
            branch: None,
            unordering: Vec::new(),
            lingering: None,
        }
    }

    // ----- witness parts (memory and participation)

    /// The block and grid extents of a model (those the shape fixes need
    /// not appear in it).
    fn launch_dims(&mut self, m: &z3::Model) -> ([u64; 3], [u64; 3]) {
        let get = |this: &mut Self, b: Builtin| {
            let v = this.builtin(b, 0);
            Self::model_int(m, &v).unwrap_or(0).max(0) as u64
        };
        let block_dim = Dim::ALL.map(|d| self.known_extent(d).unwrap_or_else(|| get(self, Builtin::BlockDim(d))));
        let grid_dim = Dim::ALL.map(|d| get(self, Builtin::GridDim(d)));
        (block_dim, grid_dim)
    }

    /// Thread instance `inst` of a model: ids, warp and lane, the iterations
    /// of `loops`; no bytes (a memory witness adds them).
    fn thread_witness(&mut self, m: &z3::Model, inst: usize, block_dim: [u64; 3], loops: &[SymbolId]) -> ThreadWitness {
        let w = self.model.warp_size as u64;
        let get = |this: &mut Self, b: Builtin| {
            let v = this.builtin(b, inst);
            Self::model_int(m, &v).unwrap_or(0).max(0) as u64
        };
        let thread = Dim::ALL.map(|d| get(self, Builtin::ThreadIdx(d)));
        let block = Dim::ALL.map(|d| get(self, Builtin::BlockIdx(d)));
        let linear = thread[0] + thread[1] * block_dim[0] + thread[2] * block_dim[0] * block_dim[1];
        let iterations = loops
            .iter()
            .map(|&k| {
                let d = self.symbol_const(k, inst);
                (self.model.symbol(k).span, self.value(m, &d) as i64)
            })
            .collect();
        ThreadWitness {
            thread,
            block,
            warp: linear / w,
            lane: linear % w,
            iterations,
            offset: 0,
            width: 0,
            exists: true,
        }
    }

    /// The values of the scalar parameters `terms` mention, by name.
    fn param_values(&mut self, m: &z3::Model, terms: &[&Term]) -> Vec<(String, String)> {
        let mut params = Vec::new();
        let mut seen = HashSet::default();
        for t in terms {
            collect_params(t, &mut params, &mut seen);
        }
        params.sort();
        let mut out = Vec::new();
        for i in params {
            if let Some(p) = self.kernel.params.get(i as usize) {
                let d = self.param_const(i, p.ty);
                out.push((p.name.clone(), self.value(m, &d).to_string()));
            }
        }
        out
    }

    /// The values of loaded and unmodelled inputs among each thread's symbols (at most 8).
    fn input_values(&mut self, m: &z3::Model, syms: &[Vec<SymbolId>; 2]) -> Vec<crate::verdict::InputValue> {
        let mut inputs = Vec::new();
        for (inst, list) in syms.iter().enumerate() {
            for &s in list {
                let info = self.model.symbol(s);
                if info.is_input() && inputs.len() < 8 {
                    let what = match &info.origin {
                        Origin::Load { object, .. } => {
                            format!("a load from `{}`", self.kernel.objects[object.index()].name)
                        }
                        Origin::Collective { name, .. } => format!("the result of `{name}`"),
                        Origin::Input { reason } => format!("a value not modelled ({reason})"),
                        _ => info.name.clone(),
                    };
                    let (name, span) = (info.name.clone(), info.span);
                    let d = self.symbol_const(s, inst);
                    inputs.push(crate::verdict::InputValue {
                        name,
                        what,
                        span,
                        thread: inst,
                        value: self.value(m, &d).to_string(),
                    });
                }
            }
        }
        inputs
    }

    /// Whether some values of the loaded data avoid the conflict for the
    /// witness's threads, parameters and iterations.
    fn input_dependent(&mut self, m: &z3::Model, syms: &[Vec<SymbolId>; 2], facts: &[Bool], conflict: &Bool) -> bool {
        let any_input = syms.iter().flatten().any(|&s| self.model.symbol(s).is_input());
        if !any_input {
            return false;
        }
        let solver = self.new_solver();
        // The rest below: exact products, values of integers and Booleans,
        // and the interval facts of the constants it declares.
        self.make_strategy(&solver, facts.iter().chain([conflict]).chain(&self.defs));
        for f in facts {
            solver.assert(f);
        }
        for pr in self.products.iter().filter(|p| p.exact) {
            solver.assert(pr.p.eq(Int::mul(&[pr.x.clone(), pr.y.clone()])));
        }
        solver.assert(conflict.not());
        let mut fixed: Vec<Dynamic> = Vec::new();
        for inst in 0..2 {
            for d in Dim::ALL {
                fixed.push(Dynamic::from_ast(&self.tid(d, inst)));
                fixed.push(Dynamic::from_ast(&self.bid(d, inst)));
            }
        }
        for d in Dim::ALL {
            fixed.push(Dynamic::from_ast(&self.builtin(Builtin::BlockDim(d), 0)));
            fixed.push(Dynamic::from_ast(&self.builtin(Builtin::GridDim(d), 0)));
        }
        for (i, p) in self.kernel.params.clone().iter().enumerate() {
            fixed.push(self.param_const(i as u32, p.ty));
        }
        for (i, s) in self.kernel.syms.clone().iter().enumerate() {
            fixed.push(self.sym_const(i as u32, s.ty));
        }
        for (inst, list) in syms.iter().enumerate() {
            for &s in list {
                if !self.model.symbol(s).is_input() {
                    fixed.push(self.symbol_const(s, inst));
                }
            }
        }
        for d in fixed {
            if let Some(v) = m.eval(&d, true) {
                solver.assert(d.eq(&v));
            }
        }
        for d in &self.defs {
            solver.assert(d);
        }
        let work = self.allowance;
        !matches!(self.clock.watch(|| check_within(&solver, &[], work)), SatResult::Unsat)
    }
}

/// Checks `solver` until the context's work reaches `until`, with a model
/// when satisfiable. Z3's default integer strategy (the `qflia` tactic)
/// sometimes stalls on problems its plain core solves in milliseconds, and
/// the reverse: a short first try, then the core on a copy, then the default
/// again with what is left.
fn check_model(solver: &Solver, until: Work, clock: Clock) -> (SatResult, Option<z3::Model>) {
    let now = work_done();
    let left = until.saturating_sub(now);
    let first = now + (left / 4).max(work_for_ms(200));
    let r = check_until(solver, first.min(until), clock);
    if r != SatResult::Unknown || work_done() >= until || clock.passed() {
        return (r, if r == SatResult::Sat { solver.get_model() } else { None });
    }
    let core = z3::Tactic::new("simplify")
        .and_then(&z3::Tactic::new("solve-eqs"))
        .and_then(&z3::Tactic::new("smt"))
        .solver();
    configure(&core);
    let assertions = solver.get_assertions();
    for a in &assertions {
        core.assert(a);
    }
    let now = work_done();
    let r = check_until(&core, now + until.saturating_sub(now) / 2, clock);
    match r {
        SatResult::Unsat => return (r, None),
        // The tactic's models can miss what its simplification removed:
        // only one that satisfies every assertion is taken.
        SatResult::Sat => {
            if let Some(m) = core.get_model().filter(|m| satisfies(m, assertions.iter())) {
                return (r, Some(m));
            }
            if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                eprintln!("  the simplifying solver's model does not satisfy the query");
            }
        }
        SatResult::Unknown => {}
    }
    let r = check_until(solver, until, clock);
    (r, if r == SatResult::Sat { solver.get_model() } else { None })
}

/// The parameters that are a factor of a product (through conversions) in
/// `offsets` and that `guards` do not mention.
fn strides(offsets: [&Term; 2], guards: [&Term; 2]) -> Vec<u32> {
    fn factors(t: &Term, seen: &mut HashSet<u32>, out: &mut Vec<u32>) {
        if !seen.insert(t.id) {
            return;
        }
        if let TermKind::Binary(BinOp::Mul, _, a, b) = &t.kind {
            for f in [a, b] {
                if let TermKind::Param(i) = without_casts(f).kind {
                    if !out.contains(&i) {
                        out.push(i);
                    }
                }
            }
        }
        for c in t.children() {
            factors(c, seen, out);
        }
    }
    let mut out = Vec::new();
    let mut seen = HashSet::default();
    for t in offsets {
        factors(t, &mut seen, &mut out);
    }
    out.retain(|&i| {
        let mut param = |k: &TermKind| matches!(k, TermKind::Param(j) if *j == i);
        !guards
            .iter()
            .any(|g| crate::ir::term::mentions(g, &mut param, &mut HashSet::default()))
    });
    out
}

/// `t` without the conversions around it.
fn without_casts(mut t: &Term) -> &Term {
    while let TermKind::Cast(inner) = &t.kind {
        t = inner;
    }
    t
}

/// Rules out the model's wrong abstraction values: at the model's value
/// of one factor the product is linear in the other (a linear lemma, as
/// incremental linearisation does), and tangent planes at the model's
/// point. None when the model is exact.
fn refinement<'a>(
    m: &z3::Model,
    products: impl Iterator<Item = &'a Product>,
    divisions: impl Iterator<Item = &'a Division>,
) -> Vec<Bool> {
    let mut lemmas = Vec::new();
    for pr in products {
        let (x, y, p) = (
            Encoder::model_int(m, &pr.x),
            Encoder::model_int(m, &pr.y),
            Encoder::model_int(m, &pr.p),
        );
        let (Some(xv), Some(yv), Some(pv)) = (x, y, p) else {
            continue;
        };
        if xv.checked_mul(yv) == Some(pv) {
            continue;
        }
        if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
            eprintln!("    {} = {} * {}: {pv} != {xv} * {yv}", pr.p, pr.x, pr.y);
        }
        let (x, y, p) = (&pr.x, &pr.y, &pr.p);
        lemmas.push(x.eq(int(xv)).implies(p.eq(Int::mul(&[int(xv), y.clone()]))));
        lemmas.push(y.eq(int(yv)).implies(p.eq(Int::mul(&[int(yv), x.clone()]))));
        // Tangent planes at (xv, yv): the sign of (x-xv)(y-yv) places
        // the product above or below the plane.
        let plane = Int::add(&[
            Int::mul(&[int(yv), x.clone()]),
            Int::mul(&[int(xv), y.clone()]),
            int(-(xv * yv)),
        ]);
        let (xa, xb, ya, yb) = (x.gt(int(xv)), x.lt(int(xv)), y.gt(int(yv)), y.lt(int(yv)));
        let above = Bool::or(&[
            Bool::and(&[xa.clone(), ya.clone()]),
            Bool::and(&[xb.clone(), yb.clone()]),
        ]);
        let below = Bool::or(&[Bool::and(&[xa, yb]), Bool::and(&[xb, ya])]);
        lemmas.push(above.implies(p.gt(&plane)));
        lemmas.push(below.implies(p.lt(&plane)));
    }
    for dv in divisions {
        let vals = (
            Encoder::model_int(m, &dv.x),
            Encoder::model_int(m, &dv.y),
            Encoder::model_int(m, &dv.q),
            Encoder::model_int(m, &dv.r),
        );
        let (Some(xv), Some(yv), Some(qv), Some(rv)) = vals else {
            continue;
        };
        if yv == 0 || c_div(xv, yv) == Some((qv, rv)) {
            continue;
        }
        lemmas.push(Encoder::division_definition(&dv.x, &dv.y, &dv.q, &dv.r, Some(yv)));
    }
    lemmas
}

/// The parameters in a nonlinear position of `terms` (in a factor of a
/// product of two non-constant factors, in a non-constant divisor or shift
/// amount), and those that are a shift amount themselves (up to
/// conversions). Symbols (loads, loop counters) are leaves: what defines
/// them is not looked into.
fn nonlinear_params(terms: &[&Term]) -> (Vec<u32>, Vec<u32>) {
    fn params(t: &Term, seen: &mut HashSet<u32>, out: &mut Vec<u32>) {
        if !seen.insert(t.id) {
            return;
        }
        if let TermKind::Param(i) = t.kind {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        for c in t.children() {
            params(c, seen, out);
        }
    }
    #[derive(Default)]
    struct Found {
        nonlinear: Vec<u32>,
        shifts: Vec<u32>,
    }
    fn walk(t: &Term, seen: &mut HashSet<u32>, inner: &mut HashSet<u32>, found: &mut Found) {
        if !seen.insert(t.id) {
            return;
        }
        if let TermKind::Binary(op, _, a, b) = &t.kind {
            let varying = |x: &Term| x.as_int().is_none();
            match op {
                BinOp::Mul if varying(a) && varying(b) => {
                    params(a, inner, &mut found.nonlinear);
                    params(b, inner, &mut found.nonlinear);
                }
                BinOp::Div | BinOp::Rem | BinOp::Shl | BinOp::Shr if varying(b) => {
                    params(b, inner, &mut found.nonlinear)
                }
                _ => {}
            }
            if matches!(op, BinOp::Shl | BinOp::Shr) {
                if let TermKind::Param(i) = without_casts(b).kind {
                    if !found.shifts.contains(&i) {
                        found.shifts.push(i);
                    }
                }
            }
        }
        for c in t.children() {
            walk(c, seen, inner, found);
        }
    }
    let (mut seen, mut inner, mut found) = (HashSet::default(), HashSet::default(), Found::default());
    for t in terms {
        walk(t, &mut seen, &mut inner, &mut found);
    }
    (found.nonlinear, found.shifts)
}

/// Whether `m` makes every one of `facts` true (completing it where it
/// says nothing).
fn satisfies<'f>(m: &z3::Model, facts: impl Iterator<Item = &'f Bool>) -> bool {
    failing(m, facts).next().is_none()
}

/// Those of `facts` that `m` does not make true.
fn failing<'f, 'm>(m: &'m z3::Model, facts: impl Iterator<Item = &'f Bool> + 'm) -> impl Iterator<Item = &'f Bool> + 'm
where
    'f: 'm,
{
    facts.filter(move |f| m.eval(*f, true).and_then(|v| v.as_bool()) != Some(true))
}

/// Checks `solver` with the work left until `until`, within `clock`'s
/// limits; none left is `unknown`.
fn check_until(solver: &Solver, until: Work, clock: Clock) -> SatResult {
    check_until_assuming(solver, &[], until, clock)
}

/// [`check_until`] under `assumptions` (their core is the solver's after unsat).
fn check_until_assuming(solver: &Solver, assumptions: &[Bool], until: Work, clock: Clock) -> SatResult {
    // Fresh: what building the query cost is off this check's work.
    read_meter();
    let w0 = work_done();
    let left = until.min(BUDGET_END.with(|b| b.get())).saturating_sub(w0);
    if left == 0 {
        return SatResult::Unknown;
    }
    if clock.passed() {
        note_clock_stopped();
        return SatResult::Unknown;
    }
    let t0 = Instant::now();
    let r = clock.watch(|| check_within(solver, assumptions, left));
    crate::profile::record(
        match r {
            SatResult::Sat => "check sat",
            SatResult::Unsat => "check unsat",
            SatResult::Unknown => "check unknown",
        },
        t0.elapsed(),
        work_done() - w0,
    );
    if std::env::var("WARPDRF_DEBUG_WORK").is_ok() {
        eprintln!(
            "    check: {r:?}, {} units in {} ms",
            work_done() - w0,
            t0.elapsed().as_millis()
        );
    }
    r
}

/// A constant `2^m − 1` (m ≥ 1): `x & c` is `x mod 2^m`.
fn low_mask(c: Option<i128>) -> bool {
    c.is_some_and(|c| c > 0 && (c + 1) & c == 0)
}

fn collect_params(t: &Term, out: &mut Vec<u32>, seen: &mut HashSet<u32>) {
    let param = |k: &TermKind| match k {
        TermKind::Param(i) => Some(*i),
        _ => None,
    };
    crate::ir::term::collect(t, &param, out, seen);
}
