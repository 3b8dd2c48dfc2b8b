//! JSON renderings: the `kernels` listing and the `check` contract of `design.md`.

use serde_json::{json, Value};

use crate::driver::{KernelEntry, Status};
use crate::source::{SourceDb, Span};
use crate::verdict::{Alarm, KernelResult, Witness};

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

/// `warpdrf check --format json` (version 1 of the contract).
pub fn check(db: &SourceDb, config: &str, warp_size: u32, results: &[KernelResult]) -> Value {
    let kernels: Vec<Value> = results
        .iter()
        .map(|r| {
            let (line, column) = db.line_col(r.span);
            json!({
                "file": db.name(r.span.file),
                "kernel": r.kernel,
                "line": line,
                "column": column,
                "template_args": r.template_args.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
                "launch": r.launch,
                "memory": r.memory,
                "participation": r.participation,
                "warpdrf": r.warpdrf(),
                "alarms": r.alarms.iter().map(|a| alarm_json(db, a)).collect::<Vec<_>>(),
                "assumptions": r.assumptions,
                "unknowns": r.unknowns.iter().map(|u| json!({"reason": u.reason, "span": span_json(db, u.span)})).collect::<Vec<_>>(),
                "time_ms": r.time_ms,
            })
        })
        .collect();
    json!({
        "version": 1,
        "tool": "warpdrf",
        "config": config,
        "warp_size": warp_size,
        "kernels": kernels,
    })
}

fn witness_json(db: &SourceDb, w: &Witness) -> Value {
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
        "inputs": w.inputs.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
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
