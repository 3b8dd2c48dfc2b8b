//! Triage: what the user has said about the findings, applied after the
//! check. Verdicts stay what the analysis proved; triage only decides which
//! findings fail the run.
//!
//! - **Suppressions** in source: `// warpdrf-allow(CODE[, CODE…]): reason` on
//!   the line of either access (or of the primitive), on the line above it,
//!   or in the comment lines above a kernel's definition (then for the whole
//!   kernel). A code is a check code (`memory/shared-race`), a condition
//!   (`memory`, `participation`), or `unknown`. A suppression without a
//!   reason, or naming no known code, suppresses nothing and is itself a
//!   finding.
//! - **Baselines**: a file of fingerprints (`--write-baseline`); with
//!   `--baseline` only findings not in it fail.
//!
//! A finding's **fingerprint** names it independently of line numbers: the
//! check code, the kernel, the file and the text of the lines involved, so
//! that editing elsewhere in the file keeps it.

use crate::hash::HashMap;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::source::{FileId, SourceDb, Span};
use crate::verdict::KernelResult;

/// The pseudo-code of undecided findings in suppressions and baselines.
pub const UNKNOWN: &str = "unknown";
/// Codes of findings about suppressions themselves.
pub const MISSING_REASON: &str = "suppression/missing-reason";
pub const UNKNOWN_CODE: &str = "suppression/unknown-code";

/// What happens to one finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// It fails the run.
    Open,
    /// A suppression in source accepts it, for this reason.
    Suppressed { reason: String, at: Span },
    /// The baseline holds it.
    Baseline,
}

/// One alarm or unknown after triage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub fingerprint: String,
    pub disposition: Disposition,
}

/// A suppression comment that cannot be honoured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub code: &'static str,
    pub message: String,
    pub span: Span,
}

/// The check's results with their triage, as the renderers see them.
pub struct Report {
    pub results: Vec<KernelResult>,
    /// Per result, per alarm (in order).
    pub alarms: Vec<Vec<Finding>>,
    /// Per result, per unknown (in order).
    pub unknowns: Vec<Vec<Finding>>,
    pub problems: Vec<Problem>,
    /// A baseline was given (renderings then say what is new).
    pub baseline: bool,
}

impl Report {
    /// Findings that fail the run: open alarms and unknowns, suppressions
    /// that cannot be honoured, and kernels not proved with nothing to show
    /// for it (never expected; counted so that no such kernel passes).
    pub fn failing(&self) -> usize {
        let open = |f: &&Finding| f.disposition == Disposition::Open;
        let findings: usize = self
            .alarms
            .iter()
            .chain(&self.unknowns)
            .map(|a| a.iter().filter(open).count())
            .sum();
        let silent = self
            .results
            .iter()
            .filter(|r| !r.warpdrf() && r.alarms.is_empty() && r.unknowns.is_empty())
            .count();
        findings + silent + self.problems.len()
    }

    /// How many findings are suppressed, and how many are in the baseline.
    pub fn accepted(&self) -> (usize, usize) {
        let all = || self.alarms.iter().chain(&self.unknowns).flatten();
        (
            all()
                .filter(|f| matches!(f.disposition, Disposition::Suppressed { .. }))
                .count(),
            all().filter(|f| f.disposition == Disposition::Baseline).count(),
        )
    }
}

/// One `warpdrf-allow` comment.
#[derive(Clone, Debug)]
struct Allow {
    /// 1-based line of the comment.
    line: u32,
    codes: Vec<String>,
    reason: String,
    span: Span,
}

/// Whether `code` (of a finding) is named by `allowed` (from a comment).
fn names(allowed: &str, code: &str) -> bool {
    allowed == code || code.split('/').next() == Some(allowed)
}

fn known_code(code: &str) -> bool {
    code == UNKNOWN || code == "memory" || code == "participation" || crate::report::rules::find(code).is_some()
}

/// Finds the `warpdrf-allow(…)` comments of a file, and the problems of the
/// malformed ones.
fn scan(db: &SourceDb, file: FileId, problems: &mut Vec<Problem>) -> Vec<Allow> {
    const TAG: &str = "warpdrf-allow";
    let source = db.file(file);
    let text = &source.text;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(TAG).map(|i| i + from) {
        from = at + TAG.len();
        // Only in comments: the line up to the tag holds `//` or `/*`.
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let before = &text[line_start..at];
        if !before.contains("//") && !before.contains("/*") && !before.trim_start().starts_with('*') {
            continue;
        }
        let line_end = text[at..].find('\n').map_or(text.len(), |i| i + at);
        let rest = text[from..line_end].trim_end().trim_end_matches("*/").trim_end();
        let span = Span::new(file, at as u32, line_end as u32);
        let Some(inner) = rest.strip_prefix('(').and_then(|r| r.split_once(')')) else {
            problems.push(Problem {
                code: UNKNOWN_CODE,
                message: "`warpdrf-allow` needs the codes it allows in parentheses: `warpdrf-allow(memory/shared-race): reason`".into(),
                span,
            });
            continue;
        };
        let (codes, after) = inner;
        let codes: Vec<String> = codes
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect();
        let reason = after.trim().strip_prefix(':').map(str::trim).unwrap_or("").to_string();
        let unknown: Vec<&String> = codes.iter().filter(|c| !known_code(c)).collect();
        if codes.is_empty() || !unknown.is_empty() {
            problems.push(Problem {
                code: UNKNOWN_CODE,
                message: if codes.is_empty() {
                    "`warpdrf-allow()` names no check code".into()
                } else {
                    format!(
                        "`warpdrf-allow` names no check `{}` (`warpdrf rule` lists the codes)",
                        unknown.iter().map(|c| c.as_str()).collect::<Vec<_>>().join("`, `")
                    )
                },
                span,
            });
            continue;
        }
        if reason.is_empty() {
            problems.push(Problem {
                code: MISSING_REASON,
                message: format!(
                    "this suppression of `{}` gives no reason; write `warpdrf-allow({}): why it is safe`",
                    codes.join(", "),
                    codes.join(", ")
                ),
                span,
            });
            continue;
        }
        let (line, _) = db.line_col(span);
        found.push(Allow {
            line,
            codes,
            reason,
            span,
        });
    }
    found
}

/// The first line of the comment block right above `line` (1-based), or
/// `line` itself when the line above is not a comment.
fn comment_block_start(db: &SourceDb, file: FileId, line: u32) -> u32 {
    let source = db.file(file);
    let mut first = line;
    while first > 1 {
        let start = source.line_start(first - 1) as usize;
        let end = source.line_start(first) as usize;
        let above = source.text[start..end].trim();
        if above.starts_with("//") || above.starts_with("/*") || above.starts_with('*') {
            first -= 1;
        } else {
            break;
        }
    }
    first
}

/// A finding's fingerprint: FNV-1a (stable across platforms and versions)
/// of its code, kernel, file and the trimmed text of its lines.
pub fn fingerprint(db: &SourceDb, code: &str, kernel: &str, spans: &[Span]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes.iter().chain(std::iter::once(&0u8)) {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(code.as_bytes());
    feed(kernel.as_bytes());
    if let Some(s) = spans.first() {
        feed(db.name(s.file).as_bytes());
    }
    for s in spans {
        let source = db.file(s.file);
        let (line, _) = db.line_col(*s);
        let start = source.line_start(line) as usize;
        let end = source.text[start..].find('\n').map_or(source.text.len(), |i| i + start);
        feed(source.text[start..end].trim().as_bytes());
    }
    format!("{hash:016x}")
}

/// A baseline file: the fingerprints of accepted findings, with enough
/// context for a person reading it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Baseline {
    pub version: u32,
    pub findings: Vec<BaselineEntry>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct BaselineEntry {
    pub fingerprint: String,
    pub code: String,
    pub kernel: String,
    pub file: String,
    pub line: u32,
}

impl Baseline {
    /// Every finding of `report`, suppressed ones aside.
    pub fn of(db: &SourceDb, report: &Report) -> Baseline {
        let mut findings = Vec::new();
        for (i, r) in report.results.iter().enumerate() {
            let items = r
                .alarms
                .iter()
                .zip(&report.alarms[i])
                .map(|(a, f)| (a.kind.as_str(), a.span, f))
                .chain(
                    r.unknowns
                        .iter()
                        .zip(&report.unknowns[i])
                        .map(|(u, f)| (UNKNOWN, u.span, f)),
                );
            for (code, span, f) in items {
                if matches!(f.disposition, Disposition::Suppressed { .. }) {
                    continue;
                }
                findings.push(BaselineEntry {
                    fingerprint: f.fingerprint.clone(),
                    code: code.to_string(),
                    kernel: r.kernel.clone(),
                    file: db.name(span.file).to_string(),
                    line: db.line_col(span).0,
                });
            }
        }
        findings.sort();
        findings.dedup();
        Baseline { version: 1, findings }
    }

    pub fn parse(text: &str) -> Result<Baseline, String> {
        let b: Baseline = serde_json::from_str(text).map_err(|e| format!("not a warpdrf baseline: {e}"))?;
        if b.version != 1 {
            return Err(format!("baseline version {} is not supported (expected 1)", b.version));
        }
        Ok(b)
    }
}

/// Applies the suppressions in the sources of `results` and the baseline.
pub fn triage(db: &SourceDb, results: Vec<KernelResult>, baseline: Option<&Baseline>) -> Report {
    let mut problems = Vec::new();
    let mut allows: HashMap<FileId, Vec<Allow>> = HashMap::default();
    let mut files: Vec<FileId> = Vec::new();
    for r in &results {
        let spans = std::iter::once(r.span)
            .chain(
                r.alarms
                    .iter()
                    .flat_map(|a| std::iter::once(a.span).chain(a.related.iter().copied())),
            )
            .chain(r.unknowns.iter().map(|u| u.span));
        for s in spans {
            if !files.contains(&s.file) {
                files.push(s.file);
            }
        }
    }
    files.sort();
    for f in files {
        allows.insert(f, scan(db, f, &mut problems));
    }
    let known: BTreeSet<&str> = baseline
        .map(|b| b.findings.iter().map(|e| e.fingerprint.as_str()).collect())
        .unwrap_or_default();
    // Fingerprints met so far: a repeat gets a counter, so two identical
    // findings are two entries.
    let mut seen: HashMap<String, usize> = HashMap::default();
    let mut unique = |fp: String| {
        let n = seen.entry(fp.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            fp
        } else {
            format!("{fp}-{n}")
        }
    };
    let mut alarm_findings = Vec::new();
    let mut unknown_findings = Vec::new();
    for r in &results {
        let (header_line, _) = db.line_col(r.definition);
        let kernel_allows = |code: &str| -> Option<&Allow> {
            let file_allows = allows.get(&r.definition.file)?;
            let (name_line, _) = db.line_col(r.span);
            let from = comment_block_start(db, r.definition.file, header_line);
            file_allows
                .iter()
                .find(|a| a.line >= from && a.line <= name_line && a.codes.iter().any(|c| names(c, code)))
        };
        let line_allows = |code: &str, spans: &[Span]| -> Option<&Allow> {
            spans.iter().find_map(|s| {
                let (line, _) = db.line_col(*s);
                allows
                    .get(&s.file)?
                    .iter()
                    .find(|a| (a.line == line || a.line + 1 == line) && a.codes.iter().any(|c| names(c, code)))
            })
        };
        let mut decide = |code: &str, spans: &[Span]| {
            let fp = unique(fingerprint(db, code, &r.kernel, spans));
            let disposition = match line_allows(code, spans).or_else(|| kernel_allows(code)) {
                Some(a) => Disposition::Suppressed {
                    reason: a.reason.clone(),
                    at: a.span,
                },
                None if known.contains(fp.as_str()) => Disposition::Baseline,
                None => Disposition::Open,
            };
            Finding {
                fingerprint: fp,
                disposition,
            }
        };
        alarm_findings.push(
            r.alarms
                .iter()
                .map(|a| {
                    let mut spans = vec![a.span];
                    spans.extend(a.related.iter().copied());
                    decide(&a.kind, &spans)
                })
                .collect(),
        );
        unknown_findings.push(r.unknowns.iter().map(|u| decide(UNKNOWN, &[u.span])).collect());
    }
    Report {
        results,
        alarms: alarm_findings,
        unknowns: unknown_findings,
        problems,
        baseline: baseline.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_themselves_and_their_condition() {
        assert!(names("memory/shared-race", "memory/shared-race"));
        assert!(names("memory", "memory/global-race"));
        assert!(!names("memory", "participation/partial-mask"));
        assert!(!names("memory/shared", "memory/shared-race"));
    }

    #[test]
    fn malformed_suppressions_are_problems() {
        let mut db = SourceDb::new();
        let f = db.add_text(
            "a.cu",
            "// warpdrf-allow(memory/shared-race)\n// warpdrf-allow(no/such): x\n// warpdrf-allow memory\nint x; // warpdrf-allow(participation): lanes agree\n\"warpdrf-allow(memory)\";\n",
        );
        let mut problems = Vec::new();
        let allows = scan(&db, f, &mut problems);
        let codes: Vec<&str> = problems.iter().map(|p| p.code).collect();
        assert_eq!(codes, [MISSING_REASON, UNKNOWN_CODE, UNKNOWN_CODE]);
        assert_eq!(allows.len(), 1, "the string literal is not a comment");
        assert_eq!(allows[0].line, 4);
        assert_eq!(allows[0].reason, "lanes agree");
    }

    #[test]
    fn fingerprints_ignore_line_numbers() {
        let mut before = SourceDb::new();
        let a = before.add_text("k.cu", "x = 1;\ns[t] = v;\n");
        let mut after = SourceDb::new();
        let b = after.add_text("k.cu", "// moved down\nx = 1;\n  s[t] = v;\n");
        let fa = fingerprint(&before, "memory/shared-race", "k", &[Span::point(a, 7)]);
        let fb = fingerprint(&after, "memory/shared-race", "k", &[Span::point(b, 23)]);
        assert_eq!(fa, fb);
        let other = fingerprint(&before, "memory/global-race", "k", &[Span::point(a, 7)]);
        assert_ne!(fa, other);
    }
}
