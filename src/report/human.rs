//! `warpdrf check` for people, plain text: the verdicts of a kernel, then
//! each alarm with its two threads and each reason for `unknown`.

use crate::source::SourceDb;
use crate::verdict::{KernelResult, ThreadWitness, Verdict};

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Alarm => "alarm",
        Verdict::Unknown => "unknown",
    }
}

fn thread(db: &SourceDb, t: &ThreadWitness) -> String {
    let [x, y, z] = t.thread;
    let [bx, by, bz] = t.block;
    let iterations: String = t
        .iterations
        .iter()
        .map(|(l, k)| format!(", iteration {k} of the loop at line {}", db.line_col(*l).0))
        .collect();
    let bytes = if t.width > 0 {
        format!(", bytes [{}, {})", t.offset, t.offset + t.width)
    } else {
        String::new()
    };
    let exists = if t.exists { "" } else { " (does not exist)" };
    format!(
        "thread ({x},{y},{z}) of block ({bx},{by},{bz}), warp {} lane {}{exists}{bytes}{iterations}",
        t.warp, t.lane
    )
}

/// One kernel's result.
pub fn kernel(db: &SourceDb, r: &KernelResult) -> String {
    let (line, _) = db.line_col(r.span);
    let mut out = format!(
        "{}:{}: {}: memory={} participation={}\n",
        db.name(r.span.file),
        line,
        r.kernel,
        verdict(r.memory),
        verdict(r.participation)
    );
    for a in &r.alarms {
        let (l, c) = db.line_col(a.span);
        let related: Vec<String> = a.related.iter().map(|s| db.line_col(*s).0.to_string()).collect();
        out.push_str(&format!(
            "  {}:{l}:{c}: {}: {}{}{}\n",
            db.name(a.span.file),
            a.kind,
            a.message,
            if related.is_empty() {
                String::new()
            } else {
                format!(" (with line {})", related.join(", "))
            },
            if a.input_dependent { " [input-dependent]" } else { "" }
        ));
        if let Some(w) = &a.witness {
            for t in &w.threads {
                out.push_str(&format!("      {}\n", thread(db, t)));
            }
            let params: Vec<String> = w.params.iter().map(|(n, v)| format!("{n}={v}")).collect();
            out.push_str(&format!(
                "      block {:?}, grid {:?}{}{}\n",
                w.block_dim,
                w.grid_dim,
                if params.is_empty() { "" } else { ", " },
                params.join(", ")
            ));
            for (what, value) in &w.inputs {
                out.push_str(&format!("      input {what} = {value}\n"));
            }
            for note in &w.notes {
                out.push_str(&format!("      {note}\n"));
            }
        }
    }
    for u in &r.unknowns {
        let (l, _) = db.line_col(u.span);
        out.push_str(&format!("  unknown at line {l}: {}\n", u.reason));
    }
    out
}

/// The last line: kernels checked, how many satisfy WarpDRF, and per
/// condition how many alarm and how many stay unknown.
pub fn summary(results: &[KernelResult]) -> String {
    let count = |f: &dyn Fn(&KernelResult) -> bool| results.iter().filter(|r| f(r)).count();
    format!(
        "{} kernels checked: {} pass both conditions; memory: {} alarm, {} unknown; participation: {} alarm, {} unknown\n",
        results.len(),
        count(&|r| r.warpdrf()),
        count(&|r| r.memory == Verdict::Alarm),
        count(&|r| r.memory == Verdict::Unknown),
        count(&|r| r.participation == Verdict::Alarm),
        count(&|r| r.participation == Verdict::Unknown),
    )
}
