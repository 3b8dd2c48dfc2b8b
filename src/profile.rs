//! Where an audit's time goes: wall time of labelled stages, summed over the
//! run and printed at its end when `WARPDRF_PROFILE` is set. Off, a stage
//! costs one cached check of the variable. Stages nest per thread: a
//! stage's label is the path of those open around it (`kernel/memory/abstract`),
//! and its time includes theirs.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Per label: how many times, how long in all, how much solver work.
type Totals = BTreeMap<String, (u64, Duration, u64)>;

static TOTALS: Mutex<Totals> = Mutex::new(BTreeMap::new());

/// The same per kernel and stage path (without the kernel's own stage).
static BY_KERNEL: Mutex<Totals> = Mutex::new(BTreeMap::new());

thread_local! {
    static OPEN: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    static KERNEL: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Names the kernel this thread checks now (its stages are also counted per kernel).
pub fn set_kernel(name: &str) {
    if enabled() {
        KERNEL.with(|k| *k.borrow_mut() = name.to_string());
    }
}

/// Whether profiling is on (`WARPDRF_PROFILE`).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("WARPDRF_PROFILE").is_some())
}

/// An open stage; it is recorded when dropped.
pub struct Stage {
    started: Option<Instant>,
}

/// Opens stage `label` on this thread (inside those already open).
pub fn stage(label: &'static str) -> Stage {
    if !enabled() {
        return Stage { started: None };
    }
    OPEN.with(|o| o.borrow_mut().push(label));
    Stage {
        started: Some(Instant::now()),
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if let Some(t0) = self.started {
            record("", t0.elapsed(), 0);
            OPEN.with(|o| o.borrow_mut().pop());
        }
    }
}

/// Adds `took` and `work` to the open stages' path extended by `leaf`.
pub fn record(leaf: &str, took: Duration, work: u64) {
    if !enabled() {
        return;
    }
    let mut path = OPEN.with(|o| o.borrow().join("/"));
    if !leaf.is_empty() {
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(leaf);
    }
    let kernel = KERNEL.with(|k| k.borrow().clone());
    if !kernel.is_empty()
        && path.starts_with("kernel/")
        && (leaf.starts_with("check")
            || leaf.starts_with("obligation")
            || leaf.starts_with("degenerate")
            || leaf.starts_with("lead")
            || leaf.starts_with("probe"))
    {
        add(&BY_KERNEL, format!("{kernel} {}", &path["kernel/".len()..]), took, work);
    }
    add(&TOTALS, path, took, work);
}

/// Counts one more of `label` in `totals`.
fn add(totals: &Mutex<Totals>, label: String, took: Duration, work: u64) {
    let mut totals = totals.lock().unwrap_or_else(|p| p.into_inner());
    let e = totals.entry(label).or_default();
    e.0 += 1;
    e.1 += took;
    e.2 += work;
}

/// One line of the table.
fn row(label: &str, (n, took, work): &(u64, Duration, u64)) -> String {
    format!("{:>10.3} s {n:>8} × {work:>14} units  {label}\n", took.as_secs_f64())
}

/// The costliest solver checks by kernel, stage and outcome (as many as
/// `WARPDRF_PROFILE` says when it is a number, else 40), then the totals,
/// one stage a line (nothing but a blank line when profiling is off).
pub fn table() -> String {
    let totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = String::new();
    let by = BY_KERNEL.lock().unwrap_or_else(|p| p.into_inner());
    let mut costly: Vec<_> = by.iter().collect();
    costly.sort_by_key(|(_, (_, took, _))| std::cmp::Reverse(*took));
    let lines = std::env::var("WARPDRF_PROFILE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for (label, counts) in costly.into_iter().take(lines) {
        out.push_str(&row(label, counts));
    }
    out.push('\n');
    for (label, counts) in totals.iter() {
        out.push_str(&row(label, counts));
    }
    out
}
