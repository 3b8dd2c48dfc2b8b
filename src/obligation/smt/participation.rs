//! Participation obligations in Z3: two threads of one group (the lanes of a
//! warp, a block, the grid) where one executes a collective and the other
//! does not, a mask that misses a lane, a group the block cuts short, or a
//! loop the group's threads leave in different iterations.
//!
//! The threads compared share the iteration counters of the loops around
//! the collective: they are at the same dynamic instance. A path condition
//! is a function of the thread's symbols, so its negation for the second
//! thread is exact for every valuation the facts allow; symbols the model
//! leaves free only add executions (alarms), never remove one.

use z3::ast::{Bool, Int};

use super::{int, Encoder, Outcome};
use crate::ir::access::Group;
use crate::ir::term::{SymbolId, Term};
use crate::ir::Dim;
use crate::verdict::{ThreadWitness, Witness};

/// One participation obligation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// A thread of the group does not execute sync record `i` with the one
    /// that does.
    Diverges(usize),
    /// The mask of sync record `i` misses a lane of the warp.
    Mask(usize),
    /// The block ends inside the group of sync record `i` (a partial warp).
    Partial(usize),
    /// Threads of `group` leave loop record `index` in different iterations
    /// (`escape`: only exits past the loop count).
    LoopExit { index: usize, escape: bool, group: Group },
}

/// The terms a goal is about, per thread, and the counters both share.
struct Parts {
    group: Group,
    /// The executing thread's condition and the other's negated one.
    first: Term,
    second: Option<Term>,
    /// Both threads are here (a loop's entry condition).
    both: Option<Term>,
    mask: Option<Term>,
    loops: Vec<SymbolId>,
}

impl Encoder<'_> {
    fn parts(&self, goal: Goal) -> Parts {
        let model = self.model;
        match goal {
            Goal::Diverges(i) | Goal::Mask(i) | Goal::Partial(i) => {
                let r = &model.syncs[i];
                Parts {
                    group: r.group,
                    first: r.reach.clone(),
                    second: matches!(goal, Goal::Diverges(_)).then(|| r.reach.clone()),
                    both: None,
                    mask: r.mask.clone().filter(|_| matches!(goal, Goal::Mask(_))),
                    loops: r.loops.clone(),
                }
            }
            Goal::LoopExit { index, escape, group } => {
                let r = &model.loops[index];
                let leave = if escape { &r.escape } else { &r.leave };
                Parts {
                    group,
                    first: leave.clone(),
                    second: Some(leave.clone()),
                    both: Some(r.entry.clone()),
                    mask: None,
                    loops: r.loops.clone(),
                }
            }
        }
    }

    /// The two thread instances are distinct members of one `group`.
    fn same_group(&mut self, group: Group) -> Bool {
        let same_block = self.same_block();
        let mut same = vec![same_block.clone()];
        for d in Dim::ALL {
            let (a, b) = (self.tid(d, 0), self.tid(d, 1));
            same.push(a.eq(&b));
        }
        let distinct = Bool::and(&same).not();
        let member = match group {
            Group::Lanes(n) => {
                let n = int(n as i128);
                let a = self.linear_tid(0).div(&n);
                let b = self.linear_tid(1).div(&n);
                Bool::and(&[same_block, a.eq(&b)])
            }
            Group::Block => same_block,
            Group::Grid => Bool::from_bool(true),
        };
        Bool::and(&[member, distinct])
    }

    /// The goal's formula and the facts it needs.
    fn goal_formula(&mut self, goal: Goal, parts: &Parts) -> (Bool, Vec<Bool>) {
        let mut facts = self.shape_facts();
        facts.extend(self.promise_facts());
        // Each thread evaluates its conditions up to the first that fails
        // (`no_overflow_guarded`). The second thread's may fail earlier than
        // at this iteration of a loop around the collective: that is a
        // divergent loop exit, the loop's own goal (`LoopExit`). A first
        // divergence, where both threads are still in every loop, remains.
        let mut guarded = super::GuardedFacts::default();
        self.guarded_facts(&parts.first, 0, &mut guarded);
        let first = self.enc_bool(&parts.first, 0);
        let mut conj = vec![first];
        if let Some(both) = &parts.both {
            for inst in [0, 1] {
                self.guarded_facts(both, inst, &mut guarded);
                conj.push(self.enc_bool(both, inst));
            }
        }
        match goal {
            Goal::Diverges(_) | Goal::LoopExit { .. } => {
                let second = parts.second.as_ref().expect("two threads");
                self.guarded_facts(second, 1, &mut guarded);
                conj.push(self.enc_bool(second, 1).not());
                conj.push(self.same_group(parts.group));
                for &k in &parts.loops {
                    let (a, b) = (self.symbol_const(k, 0), self.symbol_const(k, 1));
                    conj.push(a.eq(&b));
                }
            }
            Goal::Mask(_) => {
                let mask = parts.mask.as_ref().expect("a mask");
                let m = self.enc_int(mask, 0);
                let w = self.model.warp_size;
                let full = (1i128 << w) - 1;
                conj.push(m.modulo(int(1i128 << w)).eq(int(full)).not());
            }
            Goal::Partial(_) => {
                let Group::Lanes(n) = parts.group else {
                    unreachable!("only warps can be partial")
                };
                let n = int(n as i128);
                let start = Int::mul(&[self.linear_tid(0).div(&n), n.clone()]);
                let threads = self.block_threads();
                conj.push(Int::add(&[start, n]).gt(&threads));
            }
        }
        facts.extend(guarded.finish());
        (Bool::and(&conj), facts)
    }

    /// Decides one participation obligation: first with hard operations
    /// abstracted (proofs), then exactly (witnesses).
    pub fn check_goal(&mut self, goal: Goal) -> Outcome {
        self.in_passes(|this| this.check_goal_once(goal))
    }

    fn check_goal_once(&mut self, goal: Goal) -> Outcome {
        self.begin();
        let parts = self.parts(goal);
        let mut terms: Vec<&Term> = vec![&parts.first];
        terms.extend(parts.both.iter());
        terms.extend(parts.mask.iter());
        let syms0 = self.symbols_closure(&terms, &parts.loops);
        let syms1 = if parts.second.is_some() {
            syms0.clone()
        } else {
            Vec::new()
        };
        let syms = [syms0, syms1];
        // Two threads of one group at the same iteration of every loop
        // around: what is uniform over the group is encoded once.
        if parts.second.is_some() {
            self.sharing = Some(super::Sharing {
                group: parts.group,
                deps: parts.loops.clone(),
                shared: crate::ir::access::shared_indices(parts.group, self.shape.block_multiples()),
                scopes: Default::default(),
            });
        }
        let (formula, mut facts) = self.goal_formula(goal, &parts);
        self.symbol_facts(&syms, [&[], &[]], &mut facts);
        let name = format!("{goal:?}").replace(' ', "");
        let out = self.decide(facts, &formula, &name, &syms, |this, m| {
            this.participation_witness(m, goal, &parts, &syms)
        });
        self.sharing = None;
        out
    }

    fn participation_witness(
        &mut self,
        m: &z3::Model,
        goal: Goal,
        parts: &Parts,
        syms: &[Vec<SymbolId>; 2],
    ) -> Witness {
        let w = self.model.warp_size as u64;
        let (block_dim, grid_dim) = self.launch_dims(m);
        // A thread of the first's block by its linear index.
        let by_linear = |first: &ThreadWitness, linear: u64, exists: bool| {
            let (bx, by) = (block_dim[0].max(1), block_dim[1].max(1));
            ThreadWitness {
                thread: [linear % bx, linear / bx % by, linear / (bx * by)],
                block: first.block,
                warp: linear / w,
                lane: linear % w,
                iterations: first.iterations.clone(),
                offset: 0,
                width: 0,
                exists,
            }
        };
        let first = self.thread_witness(m, 0, block_dim, &parts.loops);
        let mut notes = Vec::new();
        let second = match goal {
            Goal::Diverges(_) | Goal::LoopExit { .. } => self.thread_witness(m, 1, block_dim, &parts.loops),
            Goal::Mask(_) => {
                let mask = parts.mask.as_ref().expect("a mask");
                let d = self.enc(mask, 0);
                let value = self.value(m, &d);
                let bits = value.rem_euclid(1i128 << w) as u128;
                // Another lane than the caller's own where there is one.
                let clear = |j: &u64| bits >> j & 1 == 0;
                let missing = (0..w)
                    .filter(clear)
                    .find(|&j| j != first.lane)
                    .or_else(|| (0..w).find(clear))
                    .unwrap_or(0);
                notes.push(format!(
                    "the mask is {:#x}: bit {missing} (lane {missing}) is clear",
                    value.rem_euclid(1i128 << 64)
                ));
                let threads = block_dim.iter().map(|&d| d.max(1)).product::<u64>();
                let linear = first.warp * w + missing;
                by_linear(&first, linear, linear < threads)
            }
            Goal::Partial(_) => {
                let threads = block_dim.iter().map(|&d| d.max(1)).product::<u64>();
                let n = match parts.group {
                    Group::Lanes(n) => n as u64,
                    _ => w,
                };
                let start = first.warp * w + (first.lane / n) * n;
                notes.push(format!(
                    "the block has {threads} threads: lanes {}..{} of warp {} do not exist",
                    threads - first.warp * w,
                    (start + n) - first.warp * w,
                    first.warp
                ));
                by_linear(&first, threads, false)
            }
        };
        if let Goal::LoopExit { escape, .. } = goal {
            notes.push(if escape {
                "the first thread leaves past the loop in this iteration (return or an outer exit); the second stays"
                    .into()
            } else {
                "the first thread leaves the loop in this iteration; the second runs another".into()
            });
        }
        let mut terms = vec![&parts.first];
        terms.extend(parts.both.iter());
        terms.extend(parts.mask.iter());
        Witness {
            threads: [first, second],
            block_dim,
            grid_dim,
            params: self.param_values(m, &terms),
            inputs: self.input_values(m, syms),
            notes,
            branch: match goal {
                Goal::Diverges(i) => self.deciding_branch(m, i),
                _ => None,
            },
            unordering: Vec::new(),
            lingering: None,
        }
    }

    /// The outermost branch around sync record `i` whose condition the
    /// model gives different values in the two threads. A condition is only
    /// read where encoding it needs no variable the query did not have
    /// (those would be unconstrained in the model).
    fn deciding_branch(&mut self, m: &z3::Model, i: usize) -> Option<(crate::source::Span, [bool; 2])> {
        let guards = self.model.syncs[i].guards.clone();
        guards.iter().find_map(|(span, c)| {
            let before = (
                self.products.len(),
                self.divisions.len(),
                self.declared.len(),
                self.defs.len(),
                self.funcs.len(),
            );
            let (a, b) = (self.enc(c, 0), self.enc(c, 1));
            if (
                self.products.len(),
                self.divisions.len(),
                self.declared.len(),
                self.defs.len(),
                self.funcs.len(),
            ) != before
            {
                return None;
            }
            let (a, b) = (self.value(m, &a) != 0, self.value(m, &b) != 0);
            (a != b).then_some((*span, [a, b]))
        })
    }
}
