//! The access model: what one generic thread of a kernel does to memory, in
//! which phase, under which path condition. Output of `passes::accesses`,
//! input of `obligation`.
//!
//! Every value is a [`Term`] over builtins, parameters and model
//! [`Symbol`]s. The obligations instantiate a model twice (threads 1 and 2);
//! a symbol's [`Scope`] says which instances must agree.

use std::fmt;

use super::term::{Show, SymbolId, Term, Terms};
use super::{AccessKind, LabelId, ObjectId, ScalarTy};
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
    /// The result of a warp or block collective.
    Collective { name: String },
    /// A variable the loop analysis could not express in the iteration count.
    LoopValue { var: String },
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
    /// A loaded value or an unmodelled input: an alarm that depends on it
    /// depends on the data.
    pub fn is_input(&self) -> bool {
        matches!(self.origin, Origin::Load { .. } | Origin::Input { .. })
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
    /// Byte offset into the object.
    pub offset: Term,
    /// Bytes accessed.
    pub width: Term,
    /// When the thread performs it.
    pub pc: Term,
    pub phase: Phase,
    /// Part of a warp collective (`ldmatrix`, wmma): performed by the warp as a unit.
    pub collective: bool,
    /// The loop counters around it, outermost first.
    pub loops: Vec<SymbolId>,
    pub span: Span,
    pub site: Span,
}

/// A kernel instantiation's memory behaviour, per generic thread.
pub struct AccessModel {
    pub terms: Terms,
    pub symbols: Vec<Symbol>,
    pub records: Vec<AccessRecord>,
    /// Facts every thread's execution satisfies (`assume`, kernel-level asserts).
    pub assumptions: Vec<Term>,
    pub warp_size: u32,
    /// Why some part of the kernel could not be modelled for memory (a
    /// verdict that depends on it is `unknown`).
    pub unknowns: Vec<(String, Span)>,
    /// Conversions (by term id) that never wrap: a loop counter's closed form
    /// converted back to its signed type, where every path through it also
    /// asserts that the value fits (overflow would be undefined).
    pub no_wrap: std::collections::HashSet<u32>,
    /// What the model assumes beyond C semantics (reported with the verdict).
    pub assumed: Vec<String>,
}

impl AccessModel {
    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id.index()]
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
            "access model: {} records, {} symbols, {} term nodes",
            self.records.len(),
            self.symbols.len(),
            self.terms.len()
        )?;
        for (i, r) in self.records.iter().enumerate() {
            let kind = match r.kind {
                AccessKind::Read => "read".to_string(),
                AccessKind::Write => "write".to_string(),
                AccessKind::Atomic(op) => format!("atomic {op:?}").to_lowercase(),
            };
            writeln!(
                f,
                "  #{i} {kind} obj{}[{} : {}]{}",
                r.object.0,
                self.show(&r.offset),
                self.show(&r.width),
                if r.collective { " (warp collective)" } else { "" }
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
        Ok(())
    }
}
