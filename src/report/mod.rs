//! Renderings of results: only this module knows output formats.

pub mod audit;
pub mod diagnostic;
pub mod human;
pub mod json;
pub mod rules;
pub mod sarif;
pub mod short;

use crate::driver::{KernelEntry, Status};
use crate::source::SourceDb;

/// `warpdrf kernels` for people: one line per kernel, then an annotated
/// source excerpt for every construct a partial kernel could not model.
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
        let warp = if e.uses_warp_primitives() {
            ", warp primitives"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}:{}: {}{}  {status}{warp}\n",
            db.name(e.span.file),
            line,
            e.name,
            params
        ));
        for u in e.unknowns() {
            out.push_str(&diagnostic::unknown(db, &e.name, u));
        }
    }
    let complete = entries.iter().filter(|e| e.status() == Status::Complete).count();
    out.push_str(&format!(
        "{} kernels, {} complete, {} partial\n",
        entries.len(),
        complete,
        entries.len() - complete
    ));
    out
}
