//! `--format short`: one line per open alarm, `file:line:col:
//! warning[code]: message`, the form editors' problem matchers and quickfix
//! lists read; then one `note[unknown]` line per reason a condition stayed
//! undecided, and one line per suppression that cannot be honoured.
//! Suppressed findings, and with a baseline the ones it holds, are left out.

use crate::source::SourceDb;
use crate::triage::{Disposition, Report};

pub fn kernel(db: &SourceDb, report: &Report, index: usize) -> String {
    let r = &report.results[index];
    let mut out = String::new();
    for (a, f) in r.alarms.iter().zip(&report.alarms[index]) {
        if f.disposition != Disposition::Open {
            continue;
        }
        let (l, c) = db.line_col(a.span);
        let dependent = if a.input_dependent { " (input-dependent)" } else { "" };
        out.push_str(&format!(
            "{}:{l}:{c}: warning[{}]: {}: {}{dependent}\n",
            db.name(a.span.file),
            a.kind,
            r.kernel,
            a.message.replace('\n', " ")
        ));
    }
    for (u, f) in r.unknowns.iter().zip(&report.unknowns[index]) {
        if f.disposition != Disposition::Open {
            continue;
        }
        let (l, c) = db.line_col(u.span);
        out.push_str(&format!(
            "{}:{l}:{c}: note[unknown]: {}: {}\n",
            db.name(u.span.file),
            r.kernel,
            u.reason.replace('\n', " ")
        ));
    }
    out
}

/// Suppression comments that cannot be honoured.
pub fn problems(db: &SourceDb, report: &Report) -> String {
    report
        .problems
        .iter()
        .map(|p| {
            let (l, c) = db.line_col(p.span);
            format!("{}:{l}:{c}: warning[{}]: {}\n", db.name(p.span.file), p.code, p.message)
        })
        .collect()
}
