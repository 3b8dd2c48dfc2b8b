//! Access model → participation obligations → the participation verdict
//! (`design.md`, "Participation", configuration `cuda`).
//!
//! Every collective must run with its whole group: a warp primitive with all
//! lanes of its warp and the full mask, a block barrier with every thread of
//! the block. Per collective that is four questions, each asked of Z3 only
//! where the uniformity lattice cannot answer it:
//! - **divergence**: its path condition differs between two threads of the
//!   group at the same iteration of every loop around it (this covers
//!   enclosing branches, `continue`, and returns before it outside loops);
//! - **mask**: its mask is not the full mask (`__activemask()` is any value);
//! - **partial warp**: the block ends inside its warp;
//! - **loops**: the group's threads leave a loop around it in different
//!   iterations, or leave past a loop (a `return` inside it) before a later
//!   collective.

use crate::hash::{HashMap, HashSet};
use std::time::Instant;

use super::smt::{self, Goal, Outcome};
use super::{MemoryOptions, Stats};
use crate::ir::access::{AccessModel, Group};
use crate::ir::Kernel;
use crate::source::Span;
use crate::verdict::{codes, Alarm, Condition, UnknownItem, Verdict, Witness};

pub struct ParticipationResult {
    pub verdict: Verdict,
    pub alarms: Vec<Alarm>,
    pub unknowns: Vec<UnknownItem>,
    pub stats: Stats,
}

/// The wider of two groups (the one whose threads must agree on more).
fn widest(a: Group, b: Group) -> Group {
    let rank = |g: Group| match g {
        Group::Lanes(n) => n as u64,
        Group::Block => 1 << 40,
        Group::Grid => 1 << 41,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

fn group_words(g: Group, warp_size: u32) -> String {
    match g {
        Group::Lanes(n) if n == warp_size => "warp".into(),
        Group::Lanes(n) => format!("tile of {n} lanes"),
        Group::Block => "block".into(),
        Group::Grid => "grid".into(),
    }
}

fn thread_words(t: &crate::verdict::ThreadWitness) -> String {
    let [x, y, z] = t.thread;
    format!("lane {} of warp {} (thread ({x},{y},{z}))", t.lane, t.warp)
}

/// The obligations of one kernel instantiation's collectives.
pub fn obligations(model: &AccessModel, options: &MemoryOptions) -> Vec<Goal> {
    let mut goals = Vec::new();
    let no_deps = HashMap::default();
    let block_threads = options
        .shape
        .block_dim
        .map(|b| b.iter().map(|&d| d.max(1) as u64).product::<u64>());
    let extents = options.shape.block_multiples();
    // Whether the lattice proves `t` uniform over every group of `group`.
    let uniform = |t: &crate::ir::term::Term, loops: &[crate::ir::term::SymbolId], group: Group| {
        model
            .scope_with(t, &no_deps, loops, crate::ir::access::shared_indices(group, extents))
            .covers(group)
    };
    for (i, r) in model.syncs.iter().enumerate() {
        if let Some(mask) = &r.mask {
            let w = model.warp_size;
            let full = (1i128 << w) - 1;
            let constant_full = mask.as_int().is_some_and(|v| v.rem_euclid(1i128 << w) == full);
            if !constant_full {
                goals.push(Goal::Mask(i));
            }
        }
        if !uniform(&r.reach, &r.loops, r.group) {
            goals.push(Goal::Diverges(i));
        }
        if let Group::Lanes(n) = r.group {
            // Rows of a multiple of `n` threads: every group is whole.
            let whole_rows = options.shape.block_known[0].is_some_and(|x| x.is_multiple_of(n))
                || options.shape.block_multiple[0].is_multiple_of(n);
            if !whole_rows && block_threads.is_none_or(|t| t % n as u64 != 0) {
                goals.push(Goal::Partial(i));
            }
        }
    }
    for (index, l) in model.loops.iter().enumerate() {
        let inside = model.syncs[l.syncs.0..l.syncs.1].iter().map(|s| s.group).reduce(widest);
        if let Some(group) = inside {
            if !uniform(&l.leave, &l.loops, group) {
                goals.push(Goal::LoopExit {
                    index,
                    escape: false,
                    group,
                });
            }
        }
        if l.escape.is_false() {
            continue;
        }
        // Collectives a thread that leaves past the loop would skip: those
        // after it, and those of the loops around it (their next iteration).
        // A collective after the loop that no thread entering the loop can
        // reach (it lies on the other side of a branch around the loop) is
        // skipped by every such thread alike.
        let outer = &l.loops[..l.loops.len() - 1];
        let after = model
            .syncs
            .iter()
            .enumerate()
            .filter(|(j, s)| {
                (*j >= l.syncs.1 && !crate::ir::term::exclusive(&l.entry, &s.reach))
                    || (*j < l.syncs.0 && s.loops.iter().any(|k| outer.contains(k)))
            })
            .map(|(_, s)| s.group)
            .reduce(widest);
        if let Some(group) = after {
            if !uniform(&l.escape, &l.loops, group) {
                goals.push(Goal::LoopExit {
                    index,
                    escape: true,
                    group,
                });
            }
        }
    }
    goals
}

/// What a divergence goal is a function of: its collective's condition
/// (a hash-consed term's id), the loops around it, and its group.
type DivergenceKey = (u32, Vec<crate::ir::term::SymbolId>, Group);

/// Decides the participation condition of one kernel instantiation.
pub fn check_participation(kernel: &Kernel, model: &AccessModel, options: &MemoryOptions) -> ParticipationResult {
    let goals = obligations(model, options);
    // Most kernels have no collective: nothing to ask a solver, and no
    // context to make for it (a tenth of a millisecond each, for a hundred
    // kernels' jobs on ggml).
    if goals.is_empty() {
        let unknowns: Vec<UnknownItem> = super::model_unknowns(model).collect();
        return ParticipationResult {
            verdict: super::condition_verdict(kernel, &[], &unknowns),
            alarms: Vec::new(),
            unknowns,
            stats: Stats {
                records: model.syncs.len(),
                ..Default::default()
            },
        };
    }
    smt::in_fresh_context(|| smt::within_budget(options.budget, || check_here(kernel, model, options, goals)))
}

/// [`check_participation`] of `goals` in the current Z3 context.
fn check_here(
    kernel: &Kernel,
    model: &AccessModel,
    options: &MemoryOptions,
    mut goals: Vec<Goal>,
) -> ParticipationResult {
    let started = smt::work_done();
    let mut stats = Stats {
        records: model.syncs.len(),
        pairs: goals.len(),
        ..Default::default()
    };
    let mut encoder = smt::Encoder::new(kernel, model, options.shape.clone(), options.work);
    encoder.set_deadline(options.deadline);
    let mut alarms: Vec<Alarm> = Vec::new();
    let mut unknowns: Vec<UnknownItem> = Vec::new();
    let mut alarmed: HashSet<(String, Span, Span)> = HashSet::default();
    let mut out_of_time = false;
    // Two rounds, as for memory (`check_memory`): every goal first with a
    // slice of its work, then the undecided ones with all of it, so that a
    // hard goal met early cannot spend the budget of the easy ones after
    // it (and, with `settle`, an alarm among them ends the check sooner).
    let mut undecided: Vec<Goal> = Vec::new();
    // A divergence goal is a function of its collective's condition, loops
    // and group: collectives that agree on all three (a run of `mma`s in one
    // block of code) share one outcome. Only a proof or an undecided query
    // is shared; an alarm names its own collective, so another is solved.
    // (Per key: the round of the outcome, and the reason it stayed undecided.)
    let mut same: HashMap<DivergenceKey, (u32, Option<String>)> = HashMap::default();
    let same_key = |goal: Goal| match goal {
        Goal::Diverges(i) => {
            let r = &model.syncs[i];
            Some((r.reach.id, r.loops.clone(), r.group))
        }
        _ => None,
    };
    'rounds: for round in [1, 2] {
        let todo = std::mem::take(if round == 1 { &mut goals } else { &mut undecided });
        let cap = if round == 1 {
            options.work / super::FIRST_ROUND_SHARE
        } else {
            options.work
        };
        for goal in todo {
            let (span, site, group, name) = match goal {
                Goal::Diverges(i) | Goal::Mask(i) | Goal::Partial(i) => {
                    let r = &model.syncs[i];
                    (r.span, r.site, r.group, r.name.clone())
                }
                Goal::LoopExit { index, group, .. } => {
                    let l = &model.loops[index];
                    (l.span, l.span, group, String::new())
                }
            };
            let kind = match goal {
                Goal::Diverges(_) if matches!(group, Group::Lanes(_)) => codes::DIVERGENT_PRIMITIVE,
                Goal::Diverges(_) => codes::DIVERGENT_BARRIER,
                Goal::Mask(_) => codes::PARTIAL_MASK,
                Goal::Partial(_) => codes::PARTIAL_WARP,
                Goal::LoopExit { escape: false, .. } => codes::DIVERGENT_LOOP,
                Goal::LoopExit { escape: true, .. } => codes::EARLY_EXIT,
            };
            // A partial warp is the launch shape's fault: one alarm says it.
            let shape_reported = matches!(goal, Goal::Partial(_)) && alarms.iter().any(|a| a.kind == kind);
            if options.settle && !alarms.is_empty() {
                // An alarm settled the verdict (`audit`).
                break 'rounds;
            }
            if shape_reported || alarmed.contains(&(kind.to_string(), span, site)) || alarms.len() >= options.max_alarms
            {
                continue;
            }
            // (The round a goal of the same key was decided or left undecided in.)
            let key = same_key(goal);
            let shared = key
                .as_ref()
                .and_then(|k| same.get(k))
                .filter(|(r, reason)| reason.is_none() || *r == round);
            match shared {
                Some((_, None)) => continue,
                Some((_, Some(_))) if round == 1 => {
                    undecided.push(goal);
                    continue;
                }
                Some((_, Some(reason))) => {
                    stats.unknown += 1;
                    unknowns.push(UnknownItem {
                        reason: format!("participation obligation undecided ({kind}): {reason}"),
                        span,
                    });
                    continue;
                }
                None => {}
            }
            let Some(work) = options.allowance(started) else {
                out_of_time = true;
                break 'rounds;
            };
            encoder.set_allowance(work.min(cap.max(1)));
            let t = Instant::now();
            let outcome = encoder.check_goal(goal);
            let ms = t.elapsed().as_millis() as u64;
            if std::env::var("WARPDRF_DEBUG_SMT").is_ok() {
                let verdict = match &outcome {
                    Outcome::Unsat => "unsat",
                    Outcome::Sat { .. } => "sat",
                    Outcome::Unknown(_) => "unknown",
                };
                eprintln!(
                    "goal {goal:?}: {verdict} in {ms} ms (round {round}, work {} ms)",
                    work.min(cap.max(1)) / smt::WORK_PER_MS
                );
                if std::env::var("WARPDRF_DEBUG_GOALS").is_ok() {
                    let what = match goal {
                        Goal::Diverges(i) | Goal::Mask(i) | Goal::Partial(i) => &model.syncs[i].reach,
                        Goal::LoopExit { index, escape, .. } => {
                            let l = &model.loops[index];
                            if escape {
                                &l.escape
                            } else {
                                &l.leave
                            }
                        }
                    };
                    eprintln!("  {} at {span:?}", model.show(what));
                }
            }
            stats.solved += 1;
            stats.solver_ms += ms;
            stats.slowest_ms = stats.slowest_ms.max(ms);
            if let Some(k) = key {
                match &outcome {
                    Outcome::Unsat => {
                        same.insert(k, (round, None));
                    }
                    Outcome::Unknown(reason) => {
                        same.insert(k, (round, Some(reason.clone())));
                    }
                    Outcome::Sat { .. } => {
                        same.remove(&k);
                    }
                }
            }
            match outcome {
                Outcome::Unsat => {}
                Outcome::Sat {
                    witness,
                    input_dependent,
                } => {
                    stats.sat += 1;
                    alarmed.insert((kind.to_string(), span, site));
                    let message = message(goal, group, &name, &witness, model.warp_size);
                    alarms.push(Alarm {
                        condition: Condition::Participation,
                        kind: kind.into(),
                        message,
                        span,
                        related: if site != span { vec![site] } else { Vec::new() },
                        witness: Some(*witness),
                        input_dependent,
                        instantiation: kernel
                            .template_args
                            .iter()
                            .map(|a| (a.name.clone(), a.value.clone()))
                            .collect(),
                    });
                }
                Outcome::Unknown(_) if round == 1 => undecided.push(goal),
                Outcome::Unknown(reason) => {
                    stats.unknown += 1;
                    unknowns.push(UnknownItem {
                        reason: format!("participation obligation undecided ({kind}): {reason}"),
                        span,
                    });
                }
            }
        }
    }
    if out_of_time {
        unknowns.push(UnknownItem {
            reason: "the participation check ran out of the kernel's solver budget".into(),
            span: kernel.span,
        });
    }
    unknowns.extend(super::model_unknowns(model));
    let verdict = super::condition_verdict(kernel, &alarms, &unknowns);
    ParticipationResult {
        verdict,
        alarms,
        unknowns,
        stats,
    }
}

/// The alarm's sentence, from its witness.
fn message(goal: Goal, group: Group, name: &str, w: &Witness, warp_size: u32) -> String {
    let [a, b] = &w.threads;
    let g = group_words(group, warp_size);
    match goal {
        Goal::Diverges(_) if matches!(group, Group::Lanes(_)) => format!(
            "`{name}` needs every lane of its {g}, but {} executes it and {} does not",
            thread_words(a),
            thread_words(b)
        ),
        Goal::Diverges(_) => {
            let [x, y, z] = a.thread;
            let [p, q, r] = b.thread;
            format!("`{name}` must be reached by every thread of the {g}, but thread ({x},{y},{z}) reaches it and thread ({p},{q},{r}) does not")
        }
        Goal::Mask(_) => format!(
            "`{name}` is called with a mask that leaves out {}: the cuda configuration needs the full mask",
            thread_words(b)
        ),
        Goal::Partial(_) => format!(
            "`{name}` needs a complete {g}, but in a block of {} threads the {g} of {} is cut short",
            w.block_dim.iter().map(|&d| d.max(1)).product::<u64>(),
            thread_words(a)
        ),
        Goal::LoopExit { escape: false, .. } => format!(
            "the loop's trip count differs within a {g} that runs a collective in it: {} leaves the loop while {} stays",
            thread_words(a),
            thread_words(b)
        ),
        Goal::LoopExit { escape: true, .. } => format!(
            "a thread leaves early, before a collective of its {g}: {} exits from this loop while {} goes on",
            thread_words(a),
            thread_words(b)
        ),
    }
}
