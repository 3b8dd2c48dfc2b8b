//! JSON renderings: the `kernels` listing and the `check` contract of `design.md`.

use serde_json::{json, Value};

use crate::driver::{KernelEntry, Status};
use crate::source::{SourceDb, Span};
use crate::triage::{Disposition, Finding, Report};
use crate::verdict::{Alarm, Witness};

fn span_json(db: &SourceDb, span: Span) -> Value {
    let (line, column) = db.line_col(span);
    json!({"file": db.name(span.file), "line": line, "column": column})
}

/// `warpdrf kernels --format json`.
pub fn kernels(db: &SourceDb, entries: &[KernelEntry]) -> Value {
    let kernels: Vec<Value> = entries
        .iter()
        .map(|e| {
            let (line, column) = db.line_col(e.span);
            let unknowns: Vec<Value> = e
                .unknowns()
                .iter()
                .map(|u| {
                    let (l, c) = db.line_col(u.span);
                    json!({"reason": u.reason, "file": db.name(u.span.file), "line": l, "column": c})
                })
                .collect();
            json!({
                "file": db.name(e.span.file),
                "line": line,
                "column": column,
                "kernel": e.name,
                "template_params": e.template_params,
                "template_args": e.kernel().template_args.iter().map(|a| json!({"name": a.name, "value": a.value})).collect::<Vec<_>>(),
                "instantiations": e.instantiations,
                "lowered_instantiations": e.kernels.len(),
                "uses_warp_primitives": e.uses_warp_primitives(),
                "helpers": e.kernel().helpers,
                "call_depth": e.kernels.iter().map(|k| k.call_depth).max().unwrap_or(0),
                "status": match e.status() { Status::Complete => "complete", Status::Partial => "partial" },
                "unknowns": unknowns,
            })
        })
        .collect();
    json!({ "kernels": kernels })
}

/// How triage treated a finding: `suppressed` (with the reason),
/// `baseline`, or `open`; and its fingerprint.
fn triage_json(f: &Finding, into: &mut serde_json::Map<String, Value>) {
    into.insert("fingerprint".into(), json!(f.fingerprint));
    match &f.disposition {
        Disposition::Open => {
            into.insert("status".into(), json!("open"));
        }
        Disposition::Suppressed { reason, .. } => {
            into.insert("status".into(), json!("suppressed"));
            into.insert("suppression".into(), json!(reason));
        }
        Disposition::Baseline => {
            into.insert("status".into(), json!("baseline"));
        }
    }
}

/// `warpdrf check --format json` (version 1 of the contract). Wall-clock
/// time (`time_ms`) only with `timings`: it is the one field that differs
/// between runs.
pub fn check(db: &SourceDb, config: &str, warp_size: u32, report: &Report, timings: bool) -> Value {
    let kernels: Vec<Value> = report
        .results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (line, column) = db.line_col(r.span);
            let alarms: Vec<Value> = r
                .alarms
                .iter()
                .zip(&report.alarms[i])
                .map(|(a, f)| {
                    let mut v = alarm_json(db, a);
                    if let Value::Object(m) = &mut v {
                        triage_json(f, m);
                    }
                    v
                })
                .collect();
            let unknowns: Vec<Value> = r
                .unknowns
                .iter()
                .zip(&report.unknowns[i])
                .map(|(u, f)| {
                    let mut m = serde_json::Map::new();
                    m.insert("reason".into(), json!(u.reason));
                    m.insert("span".into(), span_json(db, u.span));
                    triage_json(f, &mut m);
                    Value::Object(m)
                })
                .collect();
            let mut v = json!({
                "file": db.name(r.span.file),
                "kernel": r.kernel,
                "line": line,
                "column": column,
                "template_args": r.template_args.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
                "launch": r.launch,
                "memory": r.memory,
                "participation": r.participation,
                "warpdrf": r.warpdrf(),
                "alarms": alarms,
                "assumptions": r.assumptions,
                "unknowns": unknowns,
                "clock_limited": r.clock_limited,
                "discharged_by_callers": r.discharged.iter().map(|a| alarm_json(db, a)).collect::<Vec<_>>(),
            });
            if timings {
                v["time_ms"] = json!(r.time_ms);
            }
            v
        })
        .collect();
    let problems: Vec<Value> = report
        .problems
        .iter()
        .map(|p| json!({"kind": p.code, "message": p.message, "span": span_json(db, p.span)}))
        .collect();
    json!({
        "version": 1,
        "tool": "warpdrf",
        "config": config,
        "warp_size": warp_size,
        "kernels": kernels,
        "suppression_problems": problems,
        "failing": report.failing(),
    })
}

pub fn witness_json(db: &SourceDb, w: &Witness) -> Value {
    let threads: Vec<Value> = w
        .threads
        .iter()
        .map(|t| {
            json!({
                "thread": t.thread,
                "block": t.block,
                "warp": t.warp,
                "lane": t.lane,
                "iterations": t.iterations.iter().map(|(at, k)| json!({"loop": span_json(db, *at), "iteration": k})).collect::<Vec<_>>(),
                "offset": t.offset,
                "width": t.width,
                "exists": t.exists,
            })
        })
        .collect();
    json!({
        "threads": threads,
        "block_dim": w.block_dim,
        "grid_dim": w.grid_dim,
        "params": w.params.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
        "inputs": w.inputs.iter().map(|i| json!({"name": i.name, "what": i.what, "span": span_json(db, i.span), "thread": i.thread, "value": i.value})).collect::<Vec<_>>(),
        "branch": w.branch.map(|(s, values)| json!({"span": span_json(db, s), "values": values})),
        "unordering": w.unordering.iter().map(|(n, s)| json!({"name": n, "span": span_json(db, *s)})).collect::<Vec<_>>(),
        "notes": w.notes,
    })
}

fn alarm_json(db: &SourceDb, a: &Alarm) -> Value {
    json!({
        "condition": a.condition,
        "kind": a.kind,
        "message": a.message,
        "span": span_json(db, a.span),
        "related": a.related.iter().map(|s| span_json(db, *s)).collect::<Vec<_>>(),
        "witness": a.witness.as_ref().map(|w| witness_json(db, w)),
        "input_dependent": a.input_dependent,
        "instantiation": a.instantiation.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
    })
}
