//! Command-line arguments (the contract of `design.md`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "warpdrf",
    version,
    about = "Checks CUDA kernels for data races and broken warp participation (the WarpDRF contract)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List every kernel with how completely the front end models it.
    Kernels(KernelsArgs),
    /// Check kernels (files or directories) and report a verdict per condition.
    Check(CheckArgs),
    /// Show one stage of the pipeline for one kernel.
    Explain(ExplainArgs),
    /// Explain a check code (what, why, an example, how to fix); without a
    /// code, list them all.
    Rule(RuleArgs),
    /// Check every kernel of a codebase and summarise: memory verdicts by
    /// participation verdicts, with the kernels of every cell that is not
    /// a pass.
    Audit(AuditArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditFormat {
    /// A line per kernel, then the summary table.
    Table,
    /// The `check` JSON contract, one entry per kernel.
    Json,
    /// A row per kernel.
    Csv,
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value = "table")]
    pub format: AuditFormat,
    /// Limit per kernel, in milliseconds of nominal solver work (see
    /// `check --timeout-ms`); what is left undecided is unknown.
    #[arg(long, default_value_t = 60_000)]
    pub timeout_ms: u64,
    /// Each kernel's checking time in milliseconds: a `time_ms` column in
    /// CSV, a field in JSON (the one value that varies between runs).
    #[arg(long)]
    pub timings: bool,
    /// Directories or files.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RuleArgs {
    /// A code such as `memory/shared-race`.
    pub code: Option<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Human,
    Short,
    Json,
    Sarif,
}

/// When the human report uses colour.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    Always,
    Never,
}

impl Color {
    /// Whether to colour output written to standard output.
    pub fn enabled(self) -> bool {
        use std::io::IsTerminal;
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal(),
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    Human,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    Cuda,
    Smr,
    Fmr,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cuda,
    Hip,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Preprocess,
    Ir,
    /// The access model: every access of a generic thread with its phase.
    Accesses,
    /// The obligations: how many pairs, how many pruned, solver time.
    Smt,
}

/// Flags every command shares: how to read the code and what to assume.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Only this kernel (by name).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Block dimensions: X[,Y[,Z]].
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_dim3)]
    pub block_dim: Option<[u32; 3]>,
    /// Grid dimensions: X[,Y[,Z]].
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_dim3)]
    pub grid_dim: Option<[u32; 3]>,
    /// Threads per warp (64 for HIP on CDNA); by default the target's.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub warp_size: Option<u32>,
    /// Participation rules: `cuda` (full warps; the portable configuration).
    #[arg(long, value_enum, default_value = "cuda")]
    pub config: Config,
    /// The language whose device pass is read.
    #[arg(long, value_enum, default_value = "cuda")]
    pub target: Target,
    /// GPU architecture: sm_80 (CUDA), gfx942 (HIP).
    #[arg(long)]
    pub arch: Option<String>,
    /// Define a macro: NAME or NAME=VALUE.
    #[arg(short = 'D', value_name = "NAME[=V]")]
    pub define: Vec<String>,
    /// Undefine a macro.
    #[arg(short = 'U', value_name = "NAME")]
    pub undefine: Vec<String>,
    /// Add an include directory.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Kernels checked in parallel (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Make each solver with only the branches of its first-check strategy
    /// that its query's theories can take: about 5% less CPU on ggml, but
    /// Z3 counts less work and places its terms elsewhere, so a verdict at
    /// the edge of the budget may come out otherwise (on ggml one alarm
    /// becomes unknown). Reports stay the same from run to run.
    #[arg(long)]
    pub lean_solvers: bool,
}

/// The solver's limit for `check` and `explain`.
#[derive(Args, Debug, Clone)]
pub struct ObligationLimit {
    /// Limit per solver obligation, in milliseconds of nominal solver work
    /// (Z3 resource units at a fixed rate, so results do not depend on the
    /// machine's load); a kernel's obligations share the larger of 6 s and
    /// three such limits, half of it at most for participation. What is
    /// left undecided is unknown.
    #[arg(long, default_value_t = 2_000)]
    pub timeout_ms: u64,
}

/// The solver's limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Per obligation, nominal milliseconds.
    pub obligation_ms: u64,
    /// Per kernel, nominal milliseconds (else derived from the obligation's).
    pub kernel_ms: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            obligation_ms: 2_000,
            kernel_ms: None,
        }
    }
}

impl From<&ObligationLimit> for Limits {
    fn from(l: &ObligationLimit) -> Self {
        Limits {
            obligation_ms: l.timeout_ms,
            kernel_ms: None,
        }
    }
}

#[derive(Args, Debug)]
pub struct KernelsArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value = "human")]
    pub format: ListFormat,
    /// Files or directories.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub limit: ObligationLimit,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Colour in the human report.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
    /// Only findings not in this baseline fail (a file `--write-baseline` wrote).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write every finding not suppressed in source to FILE, as the
    /// baseline later runs compare with; the run then fails only on
    /// suppressions that cannot be honoured.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Include each kernel's wall-clock time (`time_ms`) in JSON; without it
    /// the JSON of a run is the same whatever the machine's load or `--jobs`.
    #[arg(long)]
    pub timings: bool,
    /// Files or directories (default: the current directory).
    pub paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub limit: ObligationLimit,
    /// The stage to show.
    #[arg(long, value_enum, default_value = "ir")]
    pub stage: Stage,
    pub file: PathBuf,
}

/// The driver's options from the common flags and the solver's limits;
/// `Err` is a one-line message.
pub fn options(common: &Common, limits: Limits) -> Result<crate::driver::Options, String> {
    use crate::preprocess::{PpConfig, Target as PpTarget};
    // Process-wide: Z3's strategy parameter is global.
    crate::obligation::smt::set_lean_solvers(common.lean_solvers);
    if common.config != Config::Cuda {
        return Err(format!(
            "--config {} is not implemented yet; only --config cuda (full-warp participation) is",
            match common.config {
                Config::Smr => "smr",
                Config::Fmr => "fmr",
                Config::Cuda => "cuda",
            }
        ));
    }
    let target = match common.target {
        Target::Cuda => PpTarget::Cuda,
        Target::Hip => PpTarget::Hip,
    };
    let arch = common.arch.clone().unwrap_or_else(|| match target {
        PpTarget::Cuda => "sm_80".into(),
        PpTarget::Hip => "gfx942".into(),
    });
    if target == PpTarget::Cuda
        && !arch.starts_with("sm_")
        && !arch.starts_with("compute_")
        && arch.parse::<u32>().is_err()
    {
        return Err(format!("--arch {arch} is not a CUDA architecture (expected sm_XY)"));
    }
    let pp = PpConfig {
        target,
        arch,
        defines: common.define.clone(),
        undefines: common.undefine.clone(),
        include_dirs: common.include.clone(),
    };
    let warp_size = common.warp_size.unwrap_or_else(|| pp.physical_warp_size());
    let lower = crate::lower::LowerConfig {
        warp_size,
        compute_capability: (target == PpTarget::Cuda).then(|| pp.cuda_arch()).flatten(),
        ..Default::default()
    };
    Ok(crate::driver::Options {
        pp,
        lower,
        kernel: common.kernel.clone(),
        block_dim: common.block_dim,
        grid_dim: common.grid_dim,
        timeout_ms: limits.obligation_ms,
        kernel_timeout_ms: limits.kernel_ms,
        jobs: match common.jobs {
            Some(0) => return Err("--jobs must be at least 1".into()),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        settle: false,
    })
}

/// `X[,Y[,Z]]` with missing dimensions 1.
pub fn parse_dim3(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("expected X[,Y[,Z]], got `{s}`"));
    }
    let mut dims = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        let v: u32 = p.parse().map_err(|_| format!("`{p}` is not a positive integer"))?;
        if v == 0 {
            return Err("dimensions must be at least 1".into());
        }
        dims[i] = v;
    }
    Ok(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim3_parsing() {
        assert_eq!(parse_dim3("256"), Ok([256, 1, 1]));
        assert_eq!(parse_dim3("32, 8"), Ok([32, 8, 1]));
        assert!(parse_dim3("0").is_err());
        assert!(parse_dim3("1,2,3,4").is_err());
        assert!(parse_dim3("x").is_err());
    }
}
