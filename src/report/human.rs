//! `warpdrf check` for people: per kernel a verdict line, then each open
//! alarm as a source-annotated diagnostic (codespan-reporting): the primary
//! label on one access (or the primitive), a secondary one on the other
//! access (or the branch that splits the warp), the witness as a table, a
//! note on why nothing orders the accesses or who is missing, and a hint
//! where the fix is clear. Then each reason a condition stayed undecided.

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::term::termcolor::Buffer;
use codespan_reporting::term::{self, Config, Styles, StylesWriter};

use crate::source::{SourceDb, Span};
use crate::triage::{Disposition, Finding, Report};
use crate::verdict::{codes, Alarm, Condition, KernelResult, ThreadWitness, Verdict, Witness};

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Alarm => "alarm",
        Verdict::Unknown => "unknown",
    }
}

/// Byte range of a span, at most its first line (a branch's label should
/// not cover its whole body).
fn first_line(db: &SourceDb, span: Span) -> std::ops::Range<usize> {
    let text = &db.file(span.file).text;
    let start = (span.start as usize).min(text.len());
    let end = (span.end.max(span.start) as usize).min(text.len());
    let end = text[start..end].find('\n').map_or(end, |i| start + i);
    start..end.max(start)
}

fn line(db: &SourceDb, span: Span) -> u32 {
    db.line_col(span).0
}

fn dims(d: [u64; 3]) -> String {
    format!("({},{},{})", d[0], d[1], d[2])
}

/// The thread's label: where it is and which thread it is.
fn who(t: &ThreadWitness) -> String {
    format!("thread {} of block {}", dims(t.thread), dims(t.block))
}

/// The witness as an aligned table: one row per thread.
fn table(db: &SourceDb, w: &Witness, memory: bool) -> String {
    let mut rows: Vec<Vec<String>> = vec![["", "threadIdx", "blockIdx", "warp", "lane"]
        .iter()
        .map(|s| s.to_string())
        .collect()];
    if memory {
        rows[0].push("bytes".into());
    }
    let with_loops = w.threads.iter().any(|t| !t.iterations.is_empty());
    if with_loops {
        rows[0].push("iterations".into());
    }
    for (name, t) in ["A", "B"].iter().zip(&w.threads) {
        let mut row = vec![
            name.to_string(),
            dims(t.thread),
            dims(t.block),
            t.warp.to_string(),
            if t.exists {
                t.lane.to_string()
            } else {
                format!("{} (missing)", t.lane)
            },
        ];
        if memory {
            row.push(if t.width > 0 {
                format!("[{}, {})", t.offset, t.offset + t.width)
            } else {
                "-".into()
            });
        }
        if with_loops {
            row.push(
                t.iterations
                    .iter()
                    .map(|(l, k)| format!("{k} (loop at line {})", line(db, *l)))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::from("witness:\n");
    for r in &rows {
        let cells: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}", w = *w)).collect();
        out.push_str(&format!("  {}\n", cells.join("  ").trim_end()));
    }
    let params: Vec<String> = w.params.iter().map(|(n, v)| format!("{n} = {v}")).collect();
    out.push_str(&format!(
        "  launch: block {}, grid {}{}{}",
        dims(w.block_dim),
        dims(w.grid_dim),
        if params.is_empty() { "" } else { "; " },
        params.join(", ")
    ));
    out
}

/// Why nothing orders two racing accesses, from where the threads are.
fn unordered(a: &Alarm, w: &Witness) -> String {
    let [t, u] = &w.threads;
    if a.kind == codes::INTER_BLOCK_RACE || t.block != u.block {
        format!(
            "the threads are in blocks {} and {}: nothing inside a kernel orders blocks (only a grid sync of a cooperative launch does)",
            dims(t.block),
            dims(u.block)
        )
    } else if t.warp != u.warp {
        format!(
            "the threads are in warps {} and {} of one block: only `__syncthreads()` orders them, and none lies between the accesses (`__syncwarp` orders lanes of one warp; shuffles order no memory)",
            t.warp, u.warp
        )
    } else if t.thread != u.thread {
        format!(
            "both threads are in warp {} (lanes {} and {}): no `__syncwarp()` or `__syncthreads()` lies between the accesses (shuffles and votes order no memory)",
            t.warp, t.lane, u.lane
        )
    } else {
        "one thread's accesses in two iterations: nothing orders the iterations' accesses with other threads".into()
    }
}

/// A fix where the alarm's shape makes one clear.
fn hint(db: &SourceDb, a: &Alarm, w: Option<&Witness>) -> Option<String> {
    let other = a.related.first().copied();
    match a.kind.as_str() {
        codes::SHARED_RACE | codes::GLOBAL_RACE if w.is_some_and(|w| w.lingering.is_some()) => Some(
            "wait for the copy (`cp.async.wait_all`, `__pipeline_wait_prior(0)`) before the thread returns".into(),
        ),
        codes::SHARED_RACE | codes::GLOBAL_RACE => {
            let same_block = w.is_none_or(|w| w.threads[0].block == w.threads[1].block);
            match other {
                Some(o) if line(db, o) != line(db, a.span) && same_block => {
                    let (first, second) = if a.span.start <= o.start { (a.span, o) } else { (o, a.span) };
                    let same_warp = w.is_some_and(|w| w.threads[0].warp == w.threads[1].warp);
                    Some(format!(
                        "order the accesses: a `{}` after line {} and before line {} (on a path every thread of the {} takes)",
                        if same_warp { "__syncwarp()" } else { "__syncthreads()" },
                        line(db, first),
                        line(db, second),
                        if same_warp { "warp" } else { "block" }
                    ))
                }
                _ => Some("let one thread write, reduce first and write once, or use an atomic".into()),
            }
        }
        codes::INTER_BLOCK_RACE => {
            Some("index by the block too (`blockIdx.x * blockDim.x + threadIdx.x`), or use an atomic".into())
        }
        codes::DIVERGENT_PRIMITIVE => Some(match w.and_then(|w| w.branch) {
            Some((b, _)) => format!(
                "run the primitive on every lane, outside the branch at line {}, and use its result only where needed",
                line(db, b)
            ),
            None => "run the primitive where every lane of the warp is, and use its result only where needed".into(),
        }),
        codes::DIVERGENT_BARRIER => Some("let every thread reach the barrier: guard the work, not the barrier".into()),
        codes::PARTIAL_MASK => {
            Some("name every lane (`0xffffffff`) and select the lanes' contributions by value instead".into())
        }
        codes::PARTIAL_WARP => Some(
            "launch a multiple of the warp size per block (round up and guard the work), or give the shape with `--block-dim`"
                .into(),
        ),
        codes::DIVERGENT_LOOP => Some(
            "iterate over warp-uniform bounds (`for (base = 0; base < n; base += 32)`, guard the element) or break on a warp-uniform value".into(),
        ),
        codes::EARLY_EXIT => {
            Some("record the condition in a flag and `break`; skip the work, not the collective, afterwards".into())
        }
        _ => None,
    }
}

/// The diagnostic of one alarm.
fn diagnostic(db: &SourceDb, r: &KernelResult, a: &Alarm, finding: &Finding) -> Diagnostic<crate::source::FileId> {
    let memory = a.condition == Condition::Memory;
    let w = a.witness.as_ref();
    let mut labels = Vec::new();
    let looping = a.kind == codes::DIVERGENT_LOOP || a.kind == codes::EARLY_EXIT;
    let primary = match (w, memory) {
        (Some(w), true) => format!("A: {}", who(&w.threads[0])),
        (Some(w), false) if looping => format!(
            "A ({}) leaves {}; B ({}) stays",
            who(&w.threads[0]),
            if a.kind == codes::EARLY_EXIT {
                "past this loop"
            } else {
                "this loop"
            },
            who(&w.threads[1])
        ),
        (Some(w), false) => format!("executed by A ({})", who(&w.threads[0])),
        (None, _) => String::new(),
    };
    labels.push(Label::primary(a.span.file, first_line(db, a.span)).with_message(primary));
    for (i, s) in a.related.iter().enumerate() {
        let message = match (w, memory, i) {
            (Some(w), true, 0) => format!("B: {}", who(&w.threads[1])),
            (_, true, _) => "the other access".into(),
            (_, false, _) => format!("`{}` reached from here", r.kernel),
        };
        labels.push(Label::secondary(s.file, first_line(db, *s)).with_message(message));
    }
    let mut notes = Vec::new();
    if let Some(w) = w {
        if let Some((b, values)) = w.branch {
            let taken = |v: bool| if v { "true" } else { "false" };
            labels.push(Label::secondary(b.file, first_line(db, b)).with_message(format!(
                "{} for A, {} for B: this branch splits the {}",
                taken(values[0]),
                taken(values[1]),
                if a.kind == codes::DIVERGENT_BARRIER {
                    "block"
                } else {
                    "warp"
                }
            )));
        }
        notes.push(table(db, w, memory));
        for (name, at) in &w.unordering {
            let lanes = name == "__syncwarp";
            labels.push(Label::secondary(at.file, first_line(db, *at)).with_message(if lanes {
                "orders lanes of one warp only".to_string()
            } else {
                "orders threads of one block only".to_string()
            }));
            let [t, u] = &w.threads;
            notes.push(if lanes && t.block == u.block {
                format!(
                    "note: the `{name}` at line {} orders lanes of one warp only; A and B are in warps {} and {}",
                    line(db, *at),
                    t.warp,
                    u.warp
                )
            } else {
                format!(
                    "note: the `{name}` at line {} orders threads of one block only; A and B are in blocks {} and {}",
                    line(db, *at),
                    dims(t.block),
                    dims(u.block)
                )
            });
        }
        if memory && w.unordering.is_empty() && w.lingering.is_none() {
            notes.push(format!("note: {}", unordered(a, w)));
        } else if !w.threads[1].exists {
            notes.push(format!(
                "note: {} does not exist, yet the primitive names it",
                who(&w.threads[1])
            ));
        } else if a.kind == codes::DIVERGENT_PRIMITIVE || a.kind == codes::DIVERGENT_BARRIER {
            notes.push(format!(
                "note: B ({}) is in the same {} but does not execute it with A",
                who(&w.threads[1]),
                if a.kind == codes::DIVERGENT_BARRIER {
                    "block"
                } else {
                    "warp"
                }
            ));
        }
        for n in &w.notes {
            notes.push(format!("note: {n}"));
        }
        if a.input_dependent && !w.inputs.is_empty() {
            let values: Vec<String> = w
                .inputs
                .iter()
                .map(|i| {
                    format!(
                        "{} at line {} (`{}`) is {} in thread {}",
                        i.what,
                        line(db, i.span),
                        db.file(i.span.file).text[first_line(db, i.span)].trim(),
                        i.value,
                        if i.thread == 0 { "A" } else { "B" }
                    )
                })
                .collect();
            notes.push(format!(
                "note: input-dependent: the data decide it; in this witness\n  {}",
                values.join("\n  ")
            ));
        }
    } else if a.input_dependent {
        notes.push("note: input-dependent: the data decide it".into());
    }
    if !a.instantiation.is_empty() {
        let args: Vec<String> = a.instantiation.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        notes.push(format!("note: in the instantiation {}", args.join(", ")));
    }
    if let Some(h) = hint(db, a, w) {
        notes.push(format!("help: {h}"));
    }
    if let Disposition::Baseline = finding.disposition {
        notes.push("note: in the baseline".into());
    }
    Diagnostic::error()
        .with_code(a.kind.clone())
        .with_message(format!("{}: {}", r.kernel, a.message))
        .with_labels(labels)
        .with_notes(notes)
}

/// Renders diagnostics, in colour when asked.
struct Renderer {
    colour: bool,
    config: Config,
    styles: Styles,
}

impl Renderer {
    fn new(colour: bool) -> Renderer {
        Renderer {
            colour,
            config: Config::default(),
            styles: Styles::default(),
        }
    }

    fn emit(&self, db: &SourceDb, d: &Diagnostic<crate::source::FileId>) -> String {
        let mut buffer = if self.colour {
            Buffer::ansi()
        } else {
            Buffer::no_color()
        };
        let mut writer = StylesWriter::new(&mut buffer, &self.styles);
        match term::emit_to_write_style(&mut writer, &self.config, db, d) {
            Ok(()) => String::from_utf8_lossy(buffer.as_slice()).into_owned(),
            Err(_) => format!("{}\n", d.message),
        }
    }
}

/// One kernel's result: its verdict line, its open alarms, its reasons
/// for `unknown`.
pub fn kernel(db: &SourceDb, report: &Report, index: usize, colour: bool) -> String {
    let r = &report.results[index];
    let renderer = Renderer::new(colour);
    let (l, _) = db.line_col(r.span);
    let mut out = format!(
        "{}:{l}: {}: memory={} participation={}{}\n",
        db.name(r.span.file),
        r.kernel,
        verdict(r.memory),
        verdict(r.participation),
        if r.clock_limited {
            " (the clock's safety net stopped some checks: what stays unknown may vary with load)"
        } else {
            ""
        }
    );
    for (a, f) in r.alarms.iter().zip(&report.alarms[index]) {
        if matches!(f.disposition, Disposition::Suppressed { .. })
            || (report.baseline && f.disposition != Disposition::Open)
        {
            continue;
        }
        out.push_str(&renderer.emit(db, &diagnostic(db, r, a, f)));
    }
    for a in &r.discharged {
        let shape = a
            .witness
            .as_ref()
            .map(|w| format!(" (block {:?})", w.block_dim))
            .unwrap_or_default();
        let d = Diagnostic::note()
            .with_code(a.kind.clone())
            .with_message(format!(
                "{}: {} passes only under the launch shapes its callers use; with another launch{shape}: {}",
                r.kernel, a.condition, a.message
            ))
            .with_labels(vec![Label::primary(a.span.file, first_line(db, a.span))]);
        out.push_str(&renderer.emit(db, &d));
    }
    for (u, f) in r.unknowns.iter().zip(&report.unknowns[index]) {
        if f.disposition != Disposition::Open {
            continue;
        }
        let d = Diagnostic::note()
            .with_code(crate::triage::UNKNOWN)
            .with_message(format!("{}: not decided: {}", r.kernel, u.reason))
            .with_labels(vec![Label::primary(u.span.file, first_line(db, u.span))]);
        out.push_str(&renderer.emit(db, &d));
    }
    out
}

/// Suppression comments that cannot be honoured.
pub fn problems(db: &SourceDb, report: &Report, colour: bool) -> String {
    let renderer = Renderer::new(colour);
    report
        .problems
        .iter()
        .map(|p| {
            let d = Diagnostic::warning()
                .with_code(p.code)
                .with_message(p.message.clone())
                .with_labels(vec![Label::primary(p.span.file, first_line(db, p.span))]);
            renderer.emit(db, &d)
        })
        .collect()
}

/// The last line: kernels checked, how many satisfy WarpDRF, and per
/// condition how many alarm and how many stay unknown; then what triage
/// accepted.
pub fn summary(report: &Report) -> String {
    let results = &report.results;
    let count = |f: &dyn Fn(&KernelResult) -> bool| results.iter().filter(|r| f(r)).count();
    let (suppressed, baseline) = report.accepted();
    let mut accepted = Vec::new();
    if suppressed > 0 {
        accepted.push(format!("{suppressed} suppressed"));
    }
    if report.baseline {
        accepted.push(format!("{baseline} in the baseline"));
    }
    if !report.problems.is_empty() {
        accepted.push(format!("{} bad suppressions", report.problems.len()));
    }
    format!(
        "{} kernels checked: {} pass both conditions; memory: {} alarm, {} unknown; participation: {} alarm, {} unknown{}{}\n",
        results.len(),
        count(&|r| r.warpdrf()),
        count(&|r| r.memory == Verdict::Alarm),
        count(&|r| r.memory == Verdict::Unknown),
        count(&|r| r.participation == Verdict::Alarm),
        count(&|r| r.participation == Verdict::Unknown),
        if accepted.is_empty() { "" } else { "; " },
        accepted.join(", ")
    )
}
