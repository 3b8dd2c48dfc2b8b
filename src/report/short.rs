//! `--format short`: one line per alarm, `file:line:col: warning[code]:
//! message`, the form editors' problem matchers and quickfix lists read;
//! then one `note[unknown]` line per reason a condition stayed undecided.

use crate::source::SourceDb;
use crate::verdict::KernelResult;

pub fn kernel(db: &SourceDb, r: &KernelResult) -> String {
    let mut out = String::new();
    for a in &r.alarms {
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
    for u in &r.unknowns {
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
