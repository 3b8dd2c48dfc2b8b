//! Renderings of results: only this module knows output formats.

pub mod json;

use crate::driver::{KernelEntry, Status};
use crate::source::SourceDb;

/// `warpdrf kernels` as a table for people.
pub fn kernels_human(db: &SourceDb, entries: &[KernelEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        let (line, _) = db.line_col(e.span);
        let status = match e.status() {
            Status::Complete => "complete",
            Status::Partial => "partial",
        };
        let params = if e.template_params.is_empty() {
            String::new()
        } else {
            format!("<{}>", e.template_params.join(", "))
        };
        out.push_str(&format!(
            "{}:{}: {}{}  {}\n",
            db.name(e.span.file),
            line,
            e.name,
            params,
            status
        ));
        for u in e.unknowns() {
            let (l, c) = db.line_col(u.span);
            out.push_str(&format!(
                "    unknown at {}:{}:{}: {}\n",
                db.name(u.span.file),
                l,
                c,
                u.reason
            ));
        }
    }
    let complete = entries
        .iter()
        .filter(|e| e.status() == Status::Complete)
        .count();
    out.push_str(&format!(
        "{} kernels, {} complete, {} partial\n",
        entries.len(),
        complete,
        entries.len() - complete
    ));
    out
}
