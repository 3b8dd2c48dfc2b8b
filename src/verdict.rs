//! Verdicts: what the checker concludes per kernel and condition.

use serde::Serialize;

use crate::source::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Alarm,
    Unknown,
}

/// The two conditions of the WarpDRF contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Condition {
    Memory,
    Participation,
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Condition::Memory => "memory",
            Condition::Participation => "participation",
        })
    }
}

/// Where the launch shape came from (`design.md`, "Threads, warps, blocks").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeSource {
    Flag,
    LaunchSite,
    LaunchBounds,
    Symbolic,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Launch {
    pub block_dim: Option<[u32; 3]>,
    /// Per dimension, the extents a single launch site fixes where it does
    /// not fix them all (`dim3(WARP_SIZE, nwarps)` with a runtime `nwarps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_known: Option<[Option<u32>; 3]>,
    pub grid_dim: Option<[u32; 3]>,
    pub source: ShapeSource,
}

/// Something that kept a condition from being decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownItem {
    pub reason: String,
    pub span: Span,
}

/// The outcome for one kernel (one instantiation).
#[derive(Clone, Debug)]
pub struct KernelResult {
    pub kernel: String,
    /// The kernel's name in its definition.
    pub span: Span,
    /// The whole definition, `template <…>` included.
    pub definition: Span,
    pub template_args: Vec<(String, String)>,
    pub launch: Launch,
    pub memory: Verdict,
    pub participation: Verdict,
    pub alarms: Vec<Alarm>,
    pub unknowns: Vec<UnknownItem>,
    /// What the verdicts assume beyond the source (e.g. that distinct pointer
    /// parameters do not alias).
    pub assumptions: Vec<String>,
    pub time_ms: u64,
    /// The clock's safety net, not a work limit, ended some check: what
    /// stayed undecided may differ on a machine with more or less load.
    pub clock_limited: bool,
    /// Alarms under a launch of any shape (no facts from launch sites) of
    /// conditions that pass under the shapes the kernel's callers use: the
    /// kernel is safe only because of its callers ("discharged by callers").
    pub discharged: Vec<Alarm>,
}

impl KernelResult {
    /// The verdict of `condition`.
    pub fn verdict(&self, condition: Condition) -> Verdict {
        match condition {
            Condition::Memory => self.memory,
            Condition::Participation => self.participation,
        }
    }

    /// Whether `condition` passes only under its callers' launch shapes.
    pub fn discharged_by_callers(&self, condition: Condition) -> bool {
        self.discharged.iter().any(|a| a.condition == condition)
    }

    /// WarpDRF holds exactly when both conditions pass.
    pub fn warpdrf(&self) -> bool {
        self.memory == Verdict::Pass && self.participation == Verdict::Pass
    }
}

/// One thread of a witness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadWitness {
    /// `threadIdx` as (x, y, z).
    pub thread: [u64; 3],
    /// `blockIdx` as (x, y, z).
    pub block: [u64; 3],
    pub warp: u64,
    pub lane: u64,
    /// Iterations of the loops around the access: (the loop, iteration), outermost first.
    pub iterations: Vec<(Span, i64)>,
    /// The byte offset the thread accesses, and how many bytes (0 for a
    /// participation witness).
    pub offset: i64,
    pub width: i64,
    /// The thread exists: `false` for the missing lanes of a partial warp.
    pub exists: bool,
}

/// A value of the data (a load, a collective's result, something not
/// modelled) in a witness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputValue {
    /// The analysis's name of the value (`ld#9`).
    pub name: String,
    /// What it is, in words: "a load from `keys`", "the result of `__ballot_sync`".
    pub what: String,
    /// Where the value comes from.
    pub span: Span,
    /// Which thread of the witness (0 or 1) holds it.
    pub thread: usize,
    pub value: String,
}

/// A concrete execution that breaks a condition: the two threads and the
/// values that decide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    pub threads: [ThreadWitness; 2],
    pub block_dim: [u64; 3],
    pub grid_dim: [u64; 3],
    /// Scalar parameters the conflict involves: (name, value).
    pub params: Vec<(String, String)>,
    /// Loaded or unmodelled values the conflict involves.
    pub inputs: Vec<InputValue>,
    /// What else decides it, in words (a mask's value and its missing lane).
    pub notes: Vec<String>,
    /// For a divergent collective: the branch whose condition differs
    /// between the two threads, and its value in each.
    pub branch: Option<(Span, [bool; 2])>,
    /// For a race: barriers written between the two accesses that do not
    /// order these two threads (a `__syncwarp` for threads of two warps, a
    /// block barrier for threads of two blocks): (name, where).
    pub unordering: Vec<(String, Span)>,
    /// For a race: the thread (0 for A, 1 for B) whose access is an
    /// asynchronous copy it left in flight at a return, landing after it.
    pub lingering: Option<usize>,
}

/// The stable codes of the kinds of alarm (`warpdrf rule CODE` documents
/// each; `report::rules`).
pub mod codes {
    pub const SHARED_RACE: &str = "memory/shared-race";
    pub const GLOBAL_RACE: &str = "memory/global-race";
    pub const INTER_BLOCK_RACE: &str = "memory/inter-block-race";
    pub const DIVERGENT_PRIMITIVE: &str = "participation/divergent-primitive";
    pub const DIVERGENT_BARRIER: &str = "participation/divergent-barrier";
    pub const PARTIAL_MASK: &str = "participation/partial-mask";
    pub const PARTIAL_WARP: &str = "participation/partial-warp";
    pub const DIVERGENT_LOOP: &str = "participation/divergent-loop";
    pub const EARLY_EXIT: &str = "participation/early-exit";
}

/// A failed obligation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alarm {
    pub condition: Condition,
    /// Stable code, e.g. `memory/shared-race`.
    pub kind: String,
    pub message: String,
    /// The first access (or the primitive).
    pub span: Span,
    /// The other access(es).
    pub related: Vec<Span>,
    pub witness: Option<Witness>,
    /// The alarm holds only for some values of loaded or unmodelled data.
    pub input_dependent: bool,
    /// The template instantiation it belongs to: (parameter, argument).
    pub instantiation: Vec<(String, String)>,
}
