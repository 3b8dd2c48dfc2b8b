//! Access model → obligations → the memory-ordering verdict.
//!
//! An obligation is a pair of records that might conflict: the same object
//! (or objects that may alias), at least one write, not both atomic. Cheap
//! tests drop pairs that cannot meet (phases that differ for every choice of
//! iteration counts, constant byte ranges that do not overlap) before Z3 sees
//! anything; `smt` decides the rest. A pair is checked for two threads of one
//! block (same block phase, and same warp phase when in one warp) and, for
//! global memory, for two threads of different blocks (same grid phase).

pub mod participation;
pub mod probe;
pub mod smt;

use crate::hash::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::ir::access::{AccessModel, Origin};
use crate::ir::term::{Term, TermKind};
use crate::ir::{gcd, AccessKind, AtomicOp, BinOp, Builtin, Kernel, ObjectKind, Space};
use crate::source::Span;
use crate::verdict::{codes, Alarm, Condition, UnknownItem, Verdict};

pub use smt::Shape;

#[derive(Clone, Debug)]
pub struct MemoryOptions {
    pub shape: Shape,
    /// Solver work for one obligation (`--timeout-ms` in [`smt::Work`]).
    pub work: smt::Work,
    /// Most alarms reported per kernel (the verdict is decided by the first).
    pub max_alarms: usize,
    /// Work for all obligations of one kernel; what is left undecided is `unknown`.
    pub budget: smt::Work,
    /// The clock's safety net over the whole kernel, in the checking
    /// thread's CPU time (`smt::thread_cpu`; see `smt::WALL_SAFETY`): past
    /// it, what is left is `unknown`.
    pub deadline: Option<Duration>,
    /// Stop deciding obligations once an alarm has settled the verdict
    /// (the first alarm ends the check; see [`check_memory`]): `audit`'s
    /// mode.
    pub settle: bool,
    /// Obligations that earlier checks of the kernel (other instantiations
    /// or shapes) left for the next round: with `settle`, they count
    /// towards [`MemoryResult::out_of_reach`].
    pub undecided_before: usize,
    /// Accesses a concrete run left unordered (`probe`), tried before the
    /// rounds with the run's values pinned.
    pub leads: Vec<probe::Lead>,
    /// The work each lead's pinned query gets.
    pub lead_work: smt::Work,
}

/// The work a lead's pinned query gets: linear once pinned, it is decided
/// in a few thousand units or not soon.
pub const LEAD_WORK: smt::Work = 40 * smt::WORK_PER_MS;

/// [`LEAD_WORK`] after deep runs (`probe::Budget::deep`): a pipelined
/// kernel's pinned query is still large (flash_attn_ext_f16's tile_Q
/// race: 2.6 M units).
pub const DEEP_LEAD_WORK: smt::Work = 800 * smt::WORK_PER_MS;

/// The first round gives each obligation this fraction of its work.
pub(crate) const FIRST_ROUND_SHARE: smt::Work = 8;

/// The rounds of a kernel's memory obligations: each gives those the
/// one before left undecided this fraction of their work, the last all
/// of it. Most obligations are decided in far less than their limit: a
/// hard one met early cannot spend the budget that would have decided
/// the easy ones after it. (A first round of 1/16 took 9% less CPU on
/// ggml, but lost the alarm of `memory/rows_wrapped_to_32_bits.cu`,
/// whose witness needs a long refinement that the second round's search
/// does not repeat; 1/12 kept it but gained little; 1/32 cost as much
/// as 1/8, and 1/64 more than it saved: a pass's heuristics and least
/// work are beyond a small share, so hard obligations paid about as much
/// in it as in the next.)
pub(crate) const ROUND_SHARES: [smt::Work; 2] = [FIRST_ROUND_SHARE, 1];

impl MemoryOptions {
    /// The work for the next obligation of a check that started when the
    /// context had done `started`: none once the budget is spent or the
    /// safety deadline passed.
    pub fn allowance(&self, started: smt::Work) -> Option<smt::Work> {
        let left = self.left(started);
        if left == 0 {
            return None;
        }
        if self.deadline.is_some_and(|d| smt::thread_cpu() >= d) {
            smt::note_clock_stopped();
            return None;
        }
        Some(self.work.min(left))
    }

    /// The budget left to a check that started when the context had done
    /// `started`.
    fn left(&self, started: smt::Work) -> smt::Work {
        self.budget.saturating_sub(smt::work_done() - started)
    }
}

impl Default for MemoryOptions {
    fn default() -> Self {
        MemoryOptions {
            shape: Shape::default(),
            work: smt::work_for_ms(2_000),
            max_alarms: 32,
            budget: smt::work_for_ms(6_000),
            deadline: None,
            settle: false,
            undecided_before: 0,
            leads: Vec::new(),
            lead_work: LEAD_WORK,
        }
    }
}

/// Counts of one kernel's obligations, for `explain` and benchmarks.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub records: usize,
    pub pairs: usize,
    pub pruned: usize,
    pub solved: usize,
    pub sat: usize,
    pub unknown: usize,
    pub solver_ms: u64,
    pub slowest_ms: u64,
}

pub struct MemoryResult {
    pub verdict: Verdict,
    pub alarms: Vec<Alarm>,
    pub unknowns: Vec<UnknownItem>,
    pub assumptions: Vec<String>,
    pub stats: Stats,
    /// After a round but the last ([`Rounds::One`]): the obligations it
    /// left undecided, for the next (the verdict is `unknown` while any are).
    pub undecided: Vec<Obligation>,
    /// With `settle`, a round but the last stopped because the budget left
    /// could not decide the obligations left for the next: each was
    /// undecided with the round's slice, and the next round searches it
    /// again from the start (work is deterministic), each pass with more
    /// than it had, so as a rule it needs more than that slice again, and
    /// more than the round spent on it (its heuristics' own work included:
    /// on ggml, mul_mat_q_stream_k_fixup's hard obligations spent 2.2–3.9 M
    /// units each with a slice of 1.5 M; its second instantiation's first
    /// round now stops after three obligations instead of seven, 5.6 s ->
    /// 3.6 s, the same report). Or, at the rate the round has left the
    /// obligations it tried undecided, it will leave more of the rest than
    /// the budget left can decide (see [`beyond_the_budget`]). No
    /// pass is then in reach: only an alarm can settle the condition (the
    /// untried obligations are handed on with the undecided ones).
    pub out_of_reach: bool,
}

/// One memory obligation: two records, and whether their object is shared.
pub type Obligation = (usize, usize, bool);

/// The rounds (see [`ROUND_SHARES`]) of a kernel's memory obligations one
/// check runs. A kernel checked under several instantiations or shapes
/// runs each round of every job before the next round of any: a hard
/// obligation of an early job then cannot spend the budget that would
/// have decided, or found an alarm in, the jobs after it.
#[derive(Clone, Debug, Default)]
pub enum Rounds {
    /// Every round, in turn.
    #[default]
    All,
    /// Round `n` only (from 0), of every obligation when `n` is 0, else of
    /// these (what the round before left undecided).
    One(usize, Vec<Obligation>),
    /// The leads of [`MemoryOptions::leads`] only: every obligation is
    /// left undecided but those an alarm decides.
    Leads,
}

/// A linear form `c + Σ coeff·leaf` of a phase term: its leaves sorted by
/// term id, each shared by both threads or per thread, none with a zero
/// coefficient.
#[derive(Clone, Default)]
struct Linear {
    constant: i128,
    terms: Vec<Leaf>,
}

#[derive(Clone, Copy)]
struct Leaf {
    id: u32,
    /// The same for both threads (launch-wide): otherwise each thread has
    /// its own.
    shared: bool,
    /// Known to be non-negative (counters and indices).
    non_negative: bool,
    coeff: i128,
}

impl Linear {
    fn leaf(t: &Term, shared: bool, model: &AccessModel) -> Linear {
        Linear {
            constant: 0,
            terms: vec![Leaf {
                id: t.id,
                shared,
                non_negative: non_negative(t, model),
                coeff: 1,
            }],
        }
    }

    fn scaled(&self, by: i128) -> Option<Linear> {
        let mut terms = Vec::with_capacity(self.terms.len());
        for l in &self.terms {
            terms.push(Leaf {
                coeff: l.coeff.checked_mul(by)?,
                ..*l
            });
        }
        terms.retain(|l| l.coeff != 0);
        Some(Linear {
            constant: self.constant.checked_mul(by)?,
            terms,
        })
    }

    /// `self + sign·other`.
    fn plus(&self, other: &Linear, sign: i128) -> Option<Linear> {
        let other = other.scaled(sign)?;
        let mut terms = Vec::with_capacity(self.terms.len() + other.terms.len());
        let (mut x, mut y) = (self.terms.iter().peekable(), other.terms.iter().peekable());
        loop {
            let key = |l: &&Leaf| (l.id, l.shared);
            match (x.peek(), y.peek()) {
                (Some(a), Some(b)) if key(a) == key(b) => {
                    let coeff = a.coeff.checked_add(b.coeff)?;
                    if coeff != 0 {
                        terms.push(Leaf { coeff, ..**a });
                    }
                    x.next();
                    y.next();
                }
                (Some(a), Some(b)) if key(a) < key(b) => terms.push(*x.next().expect("peeked")),
                (_, Some(_)) => terms.push(*y.next().expect("peeked")),
                (Some(_), None) => terms.push(*x.next().expect("peeked")),
                (None, None) => break,
            }
        }
        Some(Linear {
            constant: self.constant.checked_add(other.constant)?,
            terms,
        })
    }
}

/// The linear form of `t` (`None` where it is not linear), by term id in
/// `memo`: phase terms share subterms, and unfolded as a tree a term can
/// be exponentially larger than it is (on ggml, flash_attn_ext_f16's
/// phases made the pairs' screening take longer than their proofs).
fn linear(
    t: &Term,
    model: &AccessModel,
    memo: &mut HashMap<u32, Option<std::rc::Rc<Linear>>>,
) -> Option<std::rc::Rc<Linear>> {
    if let Some(known) = memo.get(&t.id) {
        return known.clone();
    }
    let mut form = |t: &Term| linear(t, model, memo);
    let found = match &t.kind {
        TermKind::Int(v) => Some(Linear {
            constant: *v,
            terms: Vec::new(),
        }),
        TermKind::Binary(BinOp::Add, ty, a, b) if ty.is_int() => form(a).zip(form(b)).and_then(|(a, b)| a.plus(&b, 1)),
        TermKind::Binary(BinOp::Sub, ty, a, b) if ty.is_int() => form(a).zip(form(b)).and_then(|(a, b)| a.plus(&b, -1)),
        TermKind::Binary(BinOp::Mul, ty, a, b) if ty.is_int() => match (a.as_int(), b.as_int()) {
            (_, Some(c)) => form(a).and_then(|a| a.scaled(c)),
            (Some(c), _) => form(b).and_then(|b| b.scaled(c)),
            _ => None,
        },
        TermKind::Cast(a) if a.ty.is_int() && t.ty.is_int() => form(a).map(|a| (*a).clone()),
        TermKind::Param(_) | TermKind::Sym(_) | TermKind::Builtin(Builtin::BlockDim(_) | Builtin::GridDim(_)) => {
            Some(Linear::leaf(t, true, model))
        }
        TermKind::Symbol(_) | TermKind::Builtin(_) => Some(Linear::leaf(t, false, model)),
        _ => None,
    }
    .map(std::rc::Rc::new);
    memo.insert(t.id, found.clone());
    found
}

/// Whether a leaf is known to be non-negative (counters and indices).
fn non_negative(t: &Term, model: &AccessModel) -> bool {
    match &t.kind {
        TermKind::Symbol(s) => matches!(
            model.symbol(*s).origin,
            Origin::Counter { .. } | Origin::ExitCount { .. } | Origin::Progress { .. }
        ),
        TermKind::Builtin(_) => true,
        _ => false,
    }
}

/// Phases with linear forms `p` (thread 1) and `q` (thread 2) can never
/// be equal.
fn phases_differ(p: &Linear, q: &Linear) -> bool {
    // p - q = c + Σ coeff·x over thread-1 leaves, thread-2 leaves and
    // shared ones: (coefficient, leaf non-negative).
    let mut live: Vec<(i128, bool)> = Vec::new();
    live.extend(p.terms.iter().filter(|l| !l.shared).map(|l| (l.coeff, l.non_negative)));
    live.extend(q.terms.iter().filter(|l| !l.shared).map(|l| (-l.coeff, l.non_negative)));
    let shared = |f: &Linear| Linear {
        constant: 0,
        terms: f.terms.iter().filter(|l| l.shared).copied().collect(),
    };
    let Some(both) = shared(p).plus(&shared(q), -1) else {
        return false;
    };
    live.extend(both.terms.iter().map(|l| (l.coeff, l.non_negative)));
    let c = p.constant - q.constant;
    if live.is_empty() {
        return c != 0;
    }
    let g = live.iter().fold(0i128, |g, (v, _)| gcd(g, v.abs()));
    if g != 0 && c % g != 0 {
        return true;
    }
    // All leaves non-negative and all coefficients of the sign of c: no zero.
    live.iter().all(|(_, nn)| *nn)
        && (live.iter().all(|(v, _)| *v > 0) && c > 0 || live.iter().all(|(v, _)| *v < 0) && c < 0)
}

fn race_kind(space: Space, cross_block: bool) -> &'static str {
    match (space, cross_block) {
        (Space::Shared, _) => codes::SHARED_RACE,
        (_, true) => codes::INTER_BLOCK_RACE,
        _ => codes::GLOBAL_RACE,
    }
}

fn describe(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
        AccessKind::Atomic(AtomicOp::Collective) => "collective write",
        AccessKind::Atomic(_) => "atomic",
    }
}

/// Decides the memory-ordering condition of one kernel instantiation.
pub fn check_memory(kernel: &Kernel, model: &AccessModel, options: &MemoryOptions) -> MemoryResult {
    check_memory_rounds(kernel, model, options, Rounds::All)
}

/// [`check_memory`] in `rounds` only.
pub fn check_memory_rounds(
    kernel: &Kernel,
    model: &AccessModel,
    options: &MemoryOptions,
    rounds: Rounds,
) -> MemoryResult {
    smt::in_fresh_context(|| smt::within_budget(options.budget, || check_memory_here(kernel, model, options, rounds)))
}

/// [`check_memory_rounds`] in the current Z3 context.
fn check_memory_here(kernel: &Kernel, model: &AccessModel, options: &MemoryOptions, rounds: Rounds) -> MemoryResult {
    let started = smt::work_done();
    let mut stats = Stats {
        records: model.records.len(),
        ..Default::default()
    };
    let mut run = Run {
        kernel,
        model,
        options,
        alarms: Vec::new(),
        unknowns: Vec::new(),
        alarmed: HashSet::default(),
        phases: Vec::new(),
    };
    let mut memo = HashMap::default();
    run.phases = model
        .records
        .iter()
        .map(|r| [&r.phase.block, &r.phase.grid].map(|t| linear(t, model, &mut memo)))
        .collect();
    let mut encoder = smt::Encoder::new(kernel, model, options.shape.clone(), options.work);
    encoder.set_deadline(options.deadline);
    // Accesses per object; memory the analysis cannot trace may be any object
    // of its space.
    let mut by_object: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, r) in model.records.iter().enumerate() {
        by_object.entry(r.object.0).or_default().push(i);
    }
    let mut params_alias_assumed = false;
    let written_params = by_object
        .iter()
        .filter(|(o, recs)| {
            matches!(kernel.objects[**o as usize].kind, ObjectKind::Param { .. })
                && recs.iter().any(|&r| model.records[r].kind.writes())
        })
        .count();
    let param_objects = by_object
        .keys()
        .filter(|o| matches!(kernel.objects[**o as usize].kind, ObjectKind::Param { .. }))
        .count();
    if written_params > 0 && param_objects > 1 {
        params_alias_assumed = true;
    }
    let mut out_of_time = false;
    let mut out_of_reach = false;
    // The rounds to run, and for a later round its obligations (what the
    // round before left): the candidates are then not gathered again.
    let (plan, later) = match rounds {
        Rounds::All => (0..ROUND_SHARES.len(), None),
        Rounds::One(0, _) => (0..1, None),
        Rounds::Leads => (0..0, None),
        Rounds::One(n, todo) => (n..n + 1, Some(todo)),
    };
    // The obligations, in order: (record, record, shared memory).
    let mut pairs: Vec<Obligation> = Vec::new();
    for (&object_id, recs) in &by_object {
        let object = &kernel.objects[object_id as usize];
        if object.kind == ObjectKind::Untraced {
            if writes_in(kernel, model, object.space) {
                let r = &model.records[recs[0]];
                run.unknowns.push(UnknownItem {
                    reason: format!(
                        "access through a pointer the analysis cannot trace ({}), in a memory space that is written",
                        object.name
                    ),
                    span: r.span,
                });
            }
            continue;
        }
        if !recs.iter().any(|&r| model.records[r].kind.writes()) {
            continue;
        }
        if later.is_none() {
            let shared = object.space == Space::Shared;
            stats.pairs += recs.len() * (recs.len() + 1) / 2;
            run.candidates(recs, shared, &mut pairs, &mut stats);
        }
    }
    if let Some(todo) = later {
        pairs = todo;
    } else if !options.leads.is_empty() {
        run.follow_leads(&mut encoder, &pairs, started, &mut stats);
    }
    let mut skipped = 0;
    if options.settle && !run.alarms.is_empty() {
        skipped = pairs
            .iter()
            .filter(|&&(i, j, _)| !run.alarmed.contains(&run.key(i, j)))
            .count();
        pairs.clear();
    }
    // The rounds of `plan` (see `ROUND_SHARES`): every obligation first
    // with a slice of its work, then the undecided ones with all of it.
    // With `settle`, the first alarm (the verdict) ends the check.
    let last = ROUND_SHARES.len() - 1;
    let ends = plan.end == ROUND_SHARES.len();
    'rounds: for round in plan {
        let todo = std::mem::take(&mut pairs);
        let cap = options.work / ROUND_SHARES[round];
        // The work the obligations left undecided need in the next round:
        // those of the earlier checks at a slice each, then this round's.
        let mut owed = (options.undecided_before as smt::Work).saturating_mul(cap);
        for (at, &(i, j, shared)) in todo.iter().enumerate() {
            if options.settle
                && round != last
                && beyond_the_budget(at, pairs.len(), todo.len() - at, cap, options.left(started))
            {
                out_of_reach = true;
                pairs.extend_from_slice(&todo[at..]);
                break 'rounds;
            }
            if options.settle && !run.alarms.is_empty() {
                skipped = todo.len() - at + std::mem::take(&mut pairs).len();
                break 'rounds;
            }
            if run.alarms.len() >= options.max_alarms {
                pairs.clear();
                break 'rounds;
            }
            if run.alarmed.contains(&run.key(i, j)) {
                continue;
            }
            let before = smt::work_done();
            match run.decide(&mut encoder, (i, j, shared), cap, started, &mut stats, round == last) {
                Some(true) => {}
                Some(false) => {
                    pairs.push((i, j, shared));
                    // What the next round needs for it: more than this
                    // round's slice, and than this round spent on it.
                    owed = owed.saturating_add(cap.max(smt::work_done() - before));
                    if options.settle && round != last && owed > options.left(started) {
                        out_of_reach = true;
                        pairs.extend_from_slice(&todo[at + 1..]);
                        break 'rounds;
                    }
                }
                None => {
                    out_of_time = true;
                    pairs.clear();
                    break 'rounds;
                }
            }
        }
    }
    // What the last round left undecided is reported (`Run::decide`);
    // what an earlier one left is the next round's.
    let undecided = if ends { Vec::new() } else { pairs };
    if skipped > 0 {
        run.unknowns.push(UnknownItem {
            reason: format!(
                "{skipped} pair(s) of accesses were left undecided: an alarm had already settled the verdict"
            ),
            span: kernel.span,
        });
    }
    let Run {
        alarms, mut unknowns, ..
    } = run;
    unknowns.extend(model_unknowns(model));
    unknowns.extend(kernel.memory_unknowns.iter().map(|u| UnknownItem {
        reason: u.reason.clone(),
        span: u.span,
    }));
    if out_of_time {
        unknowns.push(UnknownItem {
            reason: "the memory check ran out of the kernel's solver budget before deciding every pair of accesses"
                .into(),
            span: kernel.span,
        });
    }
    let mut assumptions = model.assumed.clone();
    if params_alias_assumed {
        assumptions.push("distinct pointer parameters do not alias".into());
    }
    // Obligations left for a later round keep the verdict unknown until
    // it decides them.
    let verdict = match condition_verdict(kernel, &alarms, &unknowns) {
        Verdict::Pass if !undecided.is_empty() => Verdict::Unknown,
        v => v,
    };
    MemoryResult {
        verdict,
        alarms,
        unknowns,
        assumptions,
        stats,
        undecided,
        out_of_reach,
    }
}

/// Obligations a first round tries before it judges from them how many
/// of the rest it will leave undecided (see [`beyond_the_budget`]).
const COST_SAMPLE: usize = 4;

/// How far the work projected for the next round must pass the budget
/// left before a pass counts as out of reach: the obligations tried first
/// are a sample in the order of the records, not a random one.
const COST_MARGIN: smt::Work = 4;

/// Whether a first round that has left `undecided` of the `tried`
/// obligations undecided with slices of `cap`, at that rate, will leave
/// more of the `untried` ones than `left` can decide (by [`COST_MARGIN`]):
/// each needs more than `cap` in the next round (see
/// `MemoryResult::out_of_reach`), so no pass is in reach, and only an alarm
/// can settle the condition. Only undecided obligations count: a costly
/// proof says nothing of the cost of the next. On ggml,
/// flash_attn_ext_f16's instantiations have over a thousand obligations
/// each, and its first four were all undecided: its first round stops
/// there instead of after eleven (6.3 s -> 3.1 s, the same report).
fn beyond_the_budget(tried: usize, undecided: usize, untried: usize, cap: smt::Work, left: smt::Work) -> bool {
    if tried < COST_SAMPLE {
        return false;
    }
    let projected = (undecided as smt::Work).saturating_mul(untried as smt::Work) / tried as smt::Work;
    projected.saturating_mul(cap) > left.saturating_mul(COST_MARGIN)
}

/// Whether `kernel`'s memory condition is at best unknown whatever its
/// obligations decide: its lowering, or the access `model`, could not
/// follow something, or it accesses memory through a pointer the analysis
/// cannot trace in a space that is written (see [`check_memory`]).
pub fn memory_cannot_pass(kernel: &Kernel, model: &AccessModel) -> bool {
    let untraced_written = model.records.iter().any(|r| {
        let object = &kernel.objects[r.object.index()];
        object.kind == ObjectKind::Untraced && writes_in(kernel, model, object.space)
    });
    !kernel.unknowns.is_empty() || !kernel.memory_unknowns.is_empty() || !model.unknowns.is_empty() || untraced_written
}

/// Whether some access of `model` writes memory in `space`.
fn writes_in(kernel: &Kernel, model: &AccessModel, space: Space) -> bool {
    model
        .records
        .iter()
        .any(|r| r.kind.writes() && kernel.objects[r.object.index()].space == space)
}

/// What the access model could not follow (`AccessModel::unknowns`): both
/// conditions report it.
pub(crate) fn model_unknowns(model: &AccessModel) -> impl Iterator<Item = UnknownItem> + '_ {
    model.unknowns.iter().map(|(reason, span)| UnknownItem {
        reason: reason.clone(),
        span: *span,
    })
}

/// A condition's verdict for a kernel: any alarm; else unknown if an
/// obligation stayed undecided or the front end could not model something;
/// else pass.
pub fn condition_verdict(kernel: &Kernel, alarms: &[Alarm], unknowns: &[UnknownItem]) -> Verdict {
    if !alarms.is_empty() {
        Verdict::Alarm
    } else if !unknowns.is_empty() || !kernel.unknowns.is_empty() {
        Verdict::Unknown
    } else {
        Verdict::Pass
    }
}

type StatementPair = ((Span, Span), (Span, Span));

/// The state of one kernel's memory check.
struct Run<'a> {
    kernel: &'a Kernel,
    model: &'a AccessModel,
    options: &'a MemoryOptions,
    alarms: Vec<Alarm>,
    unknowns: Vec<UnknownItem>,
    /// Statement pairs already alarmed: one race is one alarm.
    alarmed: HashSet<StatementPair>,
    /// The linear forms of each record's block and grid phases (for the
    /// cheap phase test; `None` where not linear).
    phases: Vec<[Option<std::rc::Rc<Linear>>; 2]>,
}

impl Run<'_> {
    fn key(&self, i: usize, j: usize) -> StatementPair {
        let (a, b) = (&self.model.records[i], &self.model.records[j]);
        ordered((a.span, a.site), (b.span, b.site))
    }

    fn alarm(&mut self, mut f: smt::Found, space: Space) {
        if !self.alarmed.insert(self.key(f.first, f.second)) {
            return;
        }
        let (a, b) = (&self.model.records[f.first], &self.model.records[f.second]);
        f.witness.unordering = self.unordering(a.span, b.span, &f.witness);
        f.witness.lingering = [a, b].iter().position(|r| r.lingering);
        if let Some(t) = f.witness.lingering {
            let who = ["A", "B"][t];
            f.witness.notes.push(format!(
                "{who}'s copy was still in flight when {who} returned from the kernel: it lands later, \
                 whatever barriers the other threads pass"
            ));
        }
        let object = &self.kernel.objects[a.object.index()];
        let cross = f.witness.threads[0].block != f.witness.threads[1].block;
        let message = format!(
            "{} of `{}` races with {} {} by another thread{}",
            describe(a.kind),
            object.name,
            if (a.span, a.site) == (b.span, b.site) {
                "the same"
            } else if describe(b.kind).starts_with('a') {
                "an"
            } else {
                "a"
            },
            describe(b.kind),
            if cross { " of another block" } else { "" }
        );
        self.alarms.push(Alarm {
            condition: Condition::Memory,
            kind: race_kind(space, cross).into(),
            message,
            span: a.span,
            related: vec![b.span],
            witness: Some(f.witness),
            input_dependent: f.input_dependent,
            instantiation: self
                .kernel
                .template_args
                .iter()
                .map(|t| (t.name.clone(), t.value.clone()))
                .collect(),
        });
    }

    /// Barriers written between two accesses (same file, in source order)
    /// whose scope does not hold both threads of the witness: they are what
    /// the code perhaps meant to order the accesses with.
    fn unordering(&self, a: Span, b: Span, w: &crate::verdict::Witness) -> Vec<(String, Span)> {
        use crate::ir::access::Group;
        if a.file != b.file {
            return Vec::new();
        }
        let (from, to) = (a.start.min(b.start), a.start.max(b.start));
        let [t, u] = &w.threads;
        let mut found: Vec<(String, Span)> = Vec::new();
        for s in &self.model.syncs {
            let between = s.span.file == a.file && from < s.span.start && s.span.start < to;
            let misses = match s.group {
                Group::Lanes(_) => s.name == "__syncwarp" && (t.block != u.block || t.warp != u.warp),
                Group::Block => s.name.contains("sync") && t.block != u.block,
                Group::Grid => false,
            };
            if between && misses && !found.iter().any(|(_, at)| *at == s.span) {
                found.push((s.name.clone(), s.span));
            }
        }
        found.sort_by_key(|(_, at)| at.start);
        found
    }

    /// Records the alarm of records `i` and `j` that `witness` shows.
    fn witnessed(
        &mut self,
        i: usize,
        j: usize,
        witness: crate::verdict::Witness,
        input_dependent: bool,
        stats: &mut Stats,
    ) {
        stats.sat += 1;
        let space = self.kernel.objects[self.model.records[i].object.index()].space;
        let found = smt::Found {
            first: i,
            second: j,
            witness,
            input_dependent,
        };
        self.alarm(found, space);
    }

    /// Each lead of `options.leads` whose accesses are an obligation of
    /// `pairs`, with its run's values pinned (see `probe`): an alarm where
    /// the solver confirms it. With `settle`, the first ends the leads.
    fn follow_leads(
        &mut self,
        encoder: &mut smt::Encoder,
        pairs: &[Obligation],
        started: smt::Work,
        stats: &mut Stats,
    ) {
        let _s = crate::profile::stage("leads");
        let mut by_access: HashMap<probe::AccessKey, Vec<usize>> = HashMap::default();
        for (at, r) in self.model.records.iter().enumerate() {
            let key = probe::AccessKey {
                object: r.object,
                kind: r.kind,
                span: r.span,
                site: r.site,
            };
            by_access.entry(key).or_default().push(at);
        }
        let listed: HashMap<(usize, usize), bool> = pairs.iter().map(|&(i, j, shared)| ((i, j), shared)).collect();
        for lead in &self.options.leads {
            let (Some(firsts), Some(seconds)) = (by_access.get(&lead.accesses[0]), by_access.get(&lead.accesses[1]))
            else {
                continue;
            };
            for (&a, &b) in firsts.iter().flat_map(|a| seconds.iter().map(move |b| (a, b))) {
                if self.options.settle && !self.alarms.is_empty() || self.alarms.len() >= self.options.max_alarms {
                    return;
                }
                let (i, j, values) = if a <= b {
                    (a, b, lead.values.clone())
                } else {
                    (b, a, lead.swapped().values)
                };
                let Some(&shared) = listed.get(&(i, j)) else {
                    continue;
                };
                if self.alarmed.contains(&self.key(i, j)) {
                    continue;
                }
                let Some(work) = self.options.allowance(started) else {
                    return;
                };
                let t0 = Instant::now();
                let profiling = crate::profile::enabled();
                let w0 = if profiling { smt::work_done() } else { 0 };
                encoder.set_allowance(work.min(self.options.lead_work));
                encoder.set_sliced(true);
                let outcome = encoder.check_pair_at(i, j, shared, &values);
                if profiling {
                    let ended = if matches!(outcome, smt::Outcome::Sat { .. }) {
                        "lead sat"
                    } else {
                        "lead unknown"
                    };
                    crate::profile::record(ended, t0.elapsed(), smt::work_done() - w0);
                }
                stats.solved += 1;
                if let smt::Outcome::Sat {
                    witness,
                    input_dependent,
                } = outcome
                {
                    self.witnessed(i, j, *witness, input_dependent, stats);
                }
            }
        }
    }

    /// The pairs of `recs` that need the solver (cheap pruning first), appended to `out`.
    fn candidates(&self, recs: &[usize], shared: bool, out: &mut Vec<Obligation>, stats: &mut Stats) {
        let model = self.model;
        for (x, &i) in recs.iter().enumerate() {
            for &j in &recs[x..] {
                let (a, b) = (&model.records[i], &model.records[j]);
                if !(a.kind.writes() || b.kind.writes())
                    || matches!((a.kind, b.kind), (AccessKind::Atomic(_), AccessKind::Atomic(_)))
                {
                    continue;
                }
                // One library exchange's accesses by different threads never
                // meet: each warp has its own share of the storage.
                if a.exchange && b.exchange && (a.span, a.site) == (b.span, b.site) {
                    stats.pruned += 1;
                    continue;
                }
                let differ = |at: usize| match (&self.phases[i][at], &self.phases[j][at]) {
                    (Some(p), Some(q)) => phases_differ(p, q),
                    _ => false,
                };
                let (block_differ, grid_differ) = (differ(0), differ(1));
                // Different grid phases: a grid barrier orders any two
                // threads; different block phases, two of one block.
                if grid_differ || block_differ && shared {
                    stats.pruned += 1;
                    continue;
                }
                out.push((i, j, shared));
            }
        }
    }

    /// Decides one obligation with at most `cap` work: `Some(true)` when
    /// decided (an alarm is recorded), `Some(false)` when not (recorded as
    /// unknown only in the `last` round), `None` when the budget is spent.
    fn decide(
        &mut self,
        encoder: &mut smt::Encoder,
        (i, j, shared): Obligation,
        cap: smt::Work,
        started: smt::Work,
        stats: &mut Stats,
        last: bool,
    ) -> Option<bool> {
        let work = self.options.allowance(started)?.min(cap.max(1));
        let t0 = Instant::now();
        // (Reading the work may make a meter, which counts as work: only
        // when profiling.)
        let debug = std::env::var("WARPDRF_DEBUG_SMT").is_ok();
        let profiling = crate::profile::enabled();
        let w0 = if profiling || debug { smt::work_done() } else { 0 };
        encoder.set_allowance(work);
        encoder.set_sliced(!last);
        let outcome = encoder.check_pair(i, j, shared);
        let ms = t0.elapsed().as_millis() as u64;
        if debug {
            let verdict = match &outcome {
                smt::Outcome::Unsat => "unsat",
                smt::Outcome::Sat { .. } => "sat",
                smt::Outcome::Unknown(_) => "unknown",
            };
            let lingering = [i, j].map(|r| if self.model.records[r].lingering { "*" } else { "" });
            let units = smt::work_done() - w0;
            eprintln!(
                "pair {i}{} {j}{}: {verdict} in {ms} ms, {units} units of {work}",
                lingering[0], lingering[1]
            );
        }
        // Where a check's time goes by how its obligations end.
        if profiling {
            let ended = match (&outcome, last) {
                (smt::Outcome::Unsat, _) => "obligation unsat",
                (smt::Outcome::Sat { .. }, _) => "obligation sat",
                (smt::Outcome::Unknown(_), true) => "obligation unknown",
                (smt::Outcome::Unknown(_), false) => "obligation unknown in a first round",
            };
            crate::profile::record(ended, t0.elapsed(), smt::work_done() - w0);
        }
        stats.solved += 1;
        stats.solver_ms += ms;
        stats.slowest_ms = stats.slowest_ms.max(ms);
        match outcome {
            smt::Outcome::Unsat => Some(true),
            smt::Outcome::Unknown(reason) => {
                if last {
                    stats.unknown += 1;
                    self.unknowns.push(UnknownItem {
                        reason: format!("the solver could not decide whether these accesses race ({reason})"),
                        span: self.model.records[i].span,
                    });
                }
                Some(false)
            }
            smt::Outcome::Sat {
                witness,
                input_dependent,
            } => {
                self.witnessed(i, j, *witness, input_dependent, stats);
                Some(true)
            }
        }
    }
}

fn ordered<T: Ord>(a: T, b: T) -> (T, T) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form with one leaf per `(id, shared, coeff)`, counters (non-negative).
    fn form(constant: i128, leaves: &[(u32, bool, i128)]) -> Linear {
        let one = |&(id, shared, coeff): &(u32, bool, i128)| Linear {
            constant: 0,
            terms: vec![Leaf {
                id,
                shared,
                non_negative: true,
                coeff,
            }],
        };
        leaves.iter().fold(
            Linear {
                constant,
                terms: Vec::new(),
            },
            |sum, l| sum.plus(&one(l), 1).expect("no overflow"),
        )
    }

    #[test]
    fn a_lead_through_magic_number_division_is_confirmed_within_its_work() {
        // Rows gathered over `blockIdx.x` and planes over `blockIdx.z`
        // (split by a magic-number division): at a destination stride of
        // 0 two blocks write one row. The run's values, pinned, fix a
        // factor of every product and the divisor of every division:
        // exact at once, the pinned query is linear.
        let src = "struct magic { unsigned mul, shift, div; };\n\
                   __device__ unsigned divide(unsigned n, magic m) { return (__umulhi(n, m.mul) + n) >> m.shift; }\n\
                   __global__ void gather(const float *src, const int *idx, float *dst, long ncols, long nrows,\n\
                   magic planes, unsigned long s1, unsigned long s2, unsigned long s3, unsigned long ssrc) {\n\
                   for (long z = blockIdx.z; z < nrows * (long) planes.div; z += gridDim.z) {\n\
                   const int row = blockIdx.x;\n\
                   const unsigned q = divide((unsigned) z, planes);\n\
                   const unsigned p = (unsigned) z - q * planes.div;\n\
                   float *d = dst + row * s1 + q * s2 + p * s3;\n\
                   const float *s = src + idx[row + q + p] * ssrc;\n\
                   for (long c = blockIdx.y * blockDim.x + threadIdx.x; c < ncols; c += gridDim.y * blockDim.x) {\n\
                   d[c] = s[c];\n\
                   }\n\
                   }\n\
                   }";
        let k = crate::lower::tests::kernels(src).remove(0);
        let (used_block, used_grid) = k.used_dims();
        let shape = Shape {
            block_dim: Some([256, 1, 1]),
            block_known: [Some(256), Some(1), Some(1)],
            unit_block: used_block.map(|u| !u),
            unit_grid: used_grid.map(|u| !u),
            ..Shape::default()
        };
        let mut steps = probe::Budget::first();
        let leads = probe::leads(&k, &[], &shape, 32, &mut steps);
        assert!(!leads.is_empty(), "the runs meet on a row");
        let model = crate::passes::model(&k, 32, &[], shape.lanes_along_x(32));
        let options = MemoryOptions {
            shape,
            settle: true,
            max_alarms: 1,
            leads,
            ..MemoryOptions::default()
        };
        let result = check_memory_rounds(&k, &model, &options, Rounds::Leads);
        assert_eq!(result.verdict, Verdict::Alarm, "{:?}", result.unknowns);
        assert_eq!(result.alarms.len(), 1);
    }

    #[test]
    fn phases_differ_by_parity_sign_and_shared_leaves() {
        // 2x + 1 against 2y: never equal (odd against even).
        assert!(phases_differ(&form(1, &[(7, false, 2)]), &form(0, &[(7, false, 2)])));
        // x + 1 against x (per thread): threads may be one phase apart.
        assert!(!phases_differ(&form(1, &[(7, false, 1)]), &form(0, &[(7, false, 1)])));
        // n + 1 against n with n shared: the same n, so never equal.
        assert!(phases_differ(&form(1, &[(3, true, 1)]), &form(0, &[(3, true, 1)])));
        // Sums merge one leaf: n + n + 1 is 2n + 1, against 2n + 2 (shared).
        let p = form(1, &[(3, true, 1), (3, true, 1)]);
        assert_eq!(p.terms.len(), 1);
        assert!(phases_differ(&p, &form(2, &[(3, true, 2)])));
        // x + y + 1 against 0, counters: a positive sum is never zero.
        assert!(phases_differ(&form(1, &[(7, false, 1), (8, false, 1)]), &form(0, &[])));
    }

    #[test]
    fn a_first_round_that_will_leave_more_undecided_than_the_budget_can_take_cannot_pass() {
        let (cap, left) = (1_000, 10_000);
        // Too few tried to judge from.
        assert!(!beyond_the_budget(COST_SAMPLE - 1, COST_SAMPLE - 1, 1_000, cap, left));
        // All four undecided: 996 more at that rate owe 996,000, far beyond
        // 4 x 10,000.
        assert!(beyond_the_budget(4, 4, 996, cap, left));
        // One in four: 249 projected, 249,000 owed; still beyond.
        assert!(beyond_the_budget(4, 1, 996, cap, left));
        // Within the margin: 39 projected, 39,000 < 4 x 10,000.
        assert!(!beyond_the_budget(4, 4, 39, cap, left));
        // Every one tried decided: however many remain, none is owed.
        assert!(!beyond_the_budget(100, 0, 100_000, cap, left));
        // Nothing left to try.
        assert!(!beyond_the_budget(100, 100, 0, cap, left));
    }
}
