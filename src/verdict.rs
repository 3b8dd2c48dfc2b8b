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
    pub template_args: Vec<(String, String)>,
    pub launch: Launch,
    pub memory: Verdict,
    pub participation: Verdict,
    pub unknowns: Vec<UnknownItem>,
    pub time_ms: u64,
}

impl KernelResult {
    /// WarpDRF holds exactly when both conditions pass.
    pub fn warpdrf(&self) -> bool {
        self.memory == Verdict::Pass && self.participation == Verdict::Pass
    }
}
