//! `warpdrf audit`: a line per kernel, and the summary table (memory
//! verdicts by participation verdicts, as in the WarpDRF paper's Table 4)
//! with the kernels of every cell that is not a pass; or a CSV row per
//! kernel.

use crate::source::SourceDb;
use crate::triage::Report;
use crate::verdict::{Condition, KernelResult, Verdict};

/// A condition's class in the audit: its verdict, with the passes that hold
/// only under the callers' launch shapes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Pass,
    /// Passes under the shapes its callers use; alarms under another shape.
    Discharged,
    Alarm,
    Unknown,
}

const CLASSES: [Class; 4] = [Class::Pass, Class::Discharged, Class::Alarm, Class::Unknown];

impl Class {
    pub fn of(r: &KernelResult, condition: Condition) -> Class {
        match r.verdict(condition) {
            Verdict::Pass if r.discharged_by_callers(condition) => Class::Discharged,
            Verdict::Pass => Class::Pass,
            Verdict::Alarm => Class::Alarm,
            Verdict::Unknown => Class::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Pass => "pass",
            Class::Discharged => "discharged",
            Class::Alarm => "alarm",
            Class::Unknown => "unknown",
        }
    }
}

/// Where a kernel is defined: `file:line`.
fn place(db: &SourceDb, r: &KernelResult) -> String {
    let (line, _) = db.line_col(r.span);
    format!("{}:{line}", db.name(r.span.file))
}

/// A line per kernel, the table, then the kernels of each non-pass cell.
pub fn table(db: &SourceDb, report: &Report) -> String {
    // Each kernel's (memory, participation) classes, in report order.
    let classes: Vec<(Class, Class)> = report
        .results
        .iter()
        .map(|r| (Class::of(r, Condition::Memory), Class::of(r, Condition::Participation)))
        .collect();
    let count = |keep: &dyn Fn(Class, Class) -> bool| classes.iter().filter(|&&(m, p)| keep(m, p)).count();
    let mut out = String::new();
    for (r, (m, p)) in report.results.iter().zip(&classes) {
        out.push_str(&format!(
            "{}: {}  memory={} participation={}{}\n",
            place(db, r),
            r.kernel,
            m.name(),
            p.name(),
            if r.clock_limited { " (clock-limited)" } else { "" }
        ));
    }
    out.push_str(&format!("\n{:<16}{:>30}\n", "", "participation"));
    out.push_str(&format!("{:<16}", "memory"));
    for p in CLASSES {
        out.push_str(&format!("{:>12}", p.name()));
    }
    out.push_str(&format!("{:>12}\n", "total"));
    for m in CLASSES {
        out.push_str(&format!("{:<16}", m.name()));
        for p in CLASSES {
            out.push_str(&format!("{:>12}", count(&|a, b| (a, b) == (m, p))));
        }
        out.push_str(&format!("{:>12}\n", count(&|a, _| a == m)));
    }
    out.push_str(&format!("{:<16}", "total"));
    for p in CLASSES {
        out.push_str(&format!("{:>12}", count(&|_, b| b == p)));
    }
    out.push_str(&format!("{:>12}\n", report.results.len()));
    out.push_str(
        "(discharged: passes under the launch shapes the kernel's callers use, \
         alarms under another shape)\n",
    );
    for m in CLASSES {
        for p in CLASSES {
            let n = count(&|a, b| (a, b) == (m, p));
            if (m, p) == (Class::Pass, Class::Pass) || n == 0 {
                continue;
            }
            out.push_str(&format!("\nmemory {} / participation {} ({n}):\n", m.name(), p.name()));
            for (r, _) in report.results.iter().zip(&classes).filter(|(_, c)| **c == (m, p)) {
                out.push_str(&format!("  {} ({})\n", r.kernel, place(db, r)));
            }
        }
    }
    out
}

/// A header, then a row per kernel: where, which, both classes, and how
/// many alarms and undecided obligations; with `timings`, each kernel's
/// checking time in milliseconds (`time_ms`, the one column that varies
/// between runs).
pub fn csv(db: &SourceDb, report: &Report, timings: bool) -> String {
    let mut out = String::from("file,line,kernel,memory,participation,alarms,unknowns,clock_limited");
    out.push_str(if timings { ",time_ms\n" } else { "\n" });
    for r in &report.results {
        let (line, _) = db.line_col(r.span);
        out.push_str(&format!(
            "{},{line},{},{},{},{},{},{}",
            field(db.name(r.span.file)),
            field(&r.kernel),
            Class::of(r, Condition::Memory).name(),
            Class::of(r, Condition::Participation).name(),
            r.alarms.len(),
            r.unknowns.len(),
            r.clock_limited
        ));
        if timings {
            out.push_str(&format!(",{}", r.time_ms));
        }
        out.push('\n');
    }
    out
}

/// A CSV field, quoted when it holds a separator, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(field("a.cu"), "a.cu");
        assert_eq!(field("a,b.cu"), "\"a,b.cu\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
