//! `warpdrf audit`: a line per kernel, and the summary table (memory
//! verdicts by participation verdicts, as in the WarpDRF paper's Table 4)
//! with the kernels of every cell that is not a pass; or a CSV row per
//! kernel.

use crate::source::SourceDb;
use crate::triage::Report;
use crate::verdict::{KernelResult, Verdict};

const VERDICTS: [Verdict; 3] = [Verdict::Pass, Verdict::Alarm, Verdict::Unknown];

fn name(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Alarm => "alarm",
        Verdict::Unknown => "unknown",
    }
}

/// Where a kernel is defined: `file:line`.
fn place(db: &SourceDb, r: &KernelResult) -> String {
    let (line, _) = db.line_col(r.span);
    format!("{}:{line}", db.name(r.span.file))
}

/// The kernels of one cell of the table, in report order.
fn cell(report: &Report, memory: Verdict, participation: Verdict) -> Vec<&KernelResult> {
    report
        .results
        .iter()
        .filter(|r| r.memory == memory && r.participation == participation)
        .collect()
}

/// A line per kernel, the table, then the kernels of each non-pass cell.
pub fn table(db: &SourceDb, report: &Report) -> String {
    let mut out = String::new();
    for r in &report.results {
        out.push_str(&format!(
            "{}: {}  memory={} participation={}{}\n",
            place(db, r),
            r.kernel,
            name(r.memory),
            name(r.participation),
            if r.clock_limited { " (clock-limited)" } else { "" }
        ));
    }
    out.push_str(&format!("\n{:<16}{:>28}\n", "", "participation"));
    out.push_str(&format!("{:<16}", "memory"));
    for p in VERDICTS {
        out.push_str(&format!("{:>10}", name(p)));
    }
    out.push_str(&format!("{:>10}\n", "total"));
    for m in VERDICTS {
        out.push_str(&format!("{:<16}", name(m)));
        for p in VERDICTS {
            out.push_str(&format!("{:>10}", cell(report, m, p).len()));
        }
        let row = report.results.iter().filter(|r| r.memory == m).count();
        out.push_str(&format!("{row:>10}\n"));
    }
    out.push_str(&format!("{:<16}", "total"));
    for p in VERDICTS {
        let column = report.results.iter().filter(|r| r.participation == p).count();
        out.push_str(&format!("{column:>10}"));
    }
    out.push_str(&format!("{:>10}\n", report.results.len()));
    for m in VERDICTS {
        for p in VERDICTS {
            let kernels = cell(report, m, p);
            if (m, p) == (Verdict::Pass, Verdict::Pass) || kernels.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "\nmemory {} / participation {} ({}):\n",
                name(m),
                name(p),
                kernels.len()
            ));
            for r in kernels {
                out.push_str(&format!("  {} ({})\n", r.kernel, place(db, r)));
            }
        }
    }
    out
}

/// A header, then a row per kernel: where, which, both verdicts, and how
/// many alarms and undecided obligations.
pub fn csv(db: &SourceDb, report: &Report) -> String {
    let mut out = String::from("file,line,kernel,memory,participation,alarms,unknowns,clock_limited\n");
    for r in &report.results {
        let (line, _) = db.line_col(r.span);
        out.push_str(&format!(
            "{},{line},{},{},{},{},{},{}\n",
            field(db.name(r.span.file)),
            field(&r.kernel),
            name(r.memory),
            name(r.participation),
            r.alarms.len(),
            r.unknowns.len(),
            r.clock_limited
        ));
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
