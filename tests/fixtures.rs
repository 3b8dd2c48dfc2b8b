//! Every fixture under `fixtures/` is checked against its header (format in
//! `design.md`, front-end keys below). All mismatches of all fixtures are
//! reported at once.
//!
//! Header lines (leading `//` comments):
//! - `// expect[ KERNEL]: memory=V participation=V` — verdicts (`pass|alarm|unknown`);
//!   a condition left out is not checked;
//! - `// input-dependent[ KERNEL]: yes|no` — every alarm (at least one) is / is not
//!   marked as decided by loaded data;
//! - `// args: …` — command-line flags;
//! - `// kernels: a, b` — exactly these kernels are found;
//! - `// lowers[ KERNEL]: complete|partial` — how completely the front end models it;
//! - `// unknown: text` — some unknown's reason (the front end's or a check's) contains `text`;
//! - `// ir: text` / `// ir-not: text` — the printed IR contains / lacks `text`;
//! - `// assumption: text` — some modelling assumption contains `text`.

use std::path::{Path, PathBuf};

use clap::Parser;

use warpdrf::cli::{self, Cli, Command};
use warpdrf::driver::{self, Status};
use warpdrf::source::SourceDb;
use warpdrf::verdict::Verdict;

#[derive(Debug, Default)]
struct Header {
    expects: Vec<(Option<String>, Option<Verdict>, Option<Verdict>)>,
    input_dependent: Vec<(Option<String>, bool)>,
    args: Vec<String>,
    kernels: Option<Vec<String>>,
    lowers: Vec<(Option<String>, Status)>,
    unknowns: Vec<String>,
    ir: Vec<String>,
    ir_not: Vec<String>,
    assumptions: Vec<String>,
}

fn verdict(s: &str) -> Result<Verdict, String> {
    match s {
        "pass" => Ok(Verdict::Pass),
        "alarm" => Ok(Verdict::Alarm),
        "unknown" => Ok(Verdict::Unknown),
        other => Err(format!("bad verdict `{other}`")),
    }
}

/// `key[ KERNEL]` split into the key and the optional kernel.
fn key_kernel(key: &str) -> (&str, Option<String>) {
    match key.split_once(' ') {
        Some((k, kernel)) => (k, Some(kernel.trim().to_string())),
        None => (key, None),
    }
}

fn parse_header(text: &str) -> Result<Header, String> {
    let mut h = Header::default();
    let mut any = false;
    for line in text.lines() {
        let Some(comment) = line.trim_start().strip_prefix("//") else {
            if line.trim().is_empty() {
                continue;
            }
            break;
        };
        let Some((key, value)) = comment.split_once(':') else {
            continue;
        };
        let (key, kernel) = key_kernel(key.trim());
        let value = value.trim();
        let known = matches!(
            key,
            "expect" | "args" | "kernels" | "lowers" | "unknown" | "ir" | "ir-not" | "assumption" | "input-dependent"
        );
        any |= known;
        match key {
            "expect" => {
                let mut memory = None;
                let mut participation = None;
                for part in value.split_whitespace() {
                    match part.split_once('=') {
                        Some(("memory", v)) => memory = Some(verdict(v)?),
                        Some(("participation", v)) => participation = Some(verdict(v)?),
                        _ => return Err(format!("bad expect `{value}`")),
                    }
                }
                if memory.is_none() && participation.is_none() {
                    return Err(format!("expect needs memory= or participation=: `{value}`"));
                }
                h.expects.push((kernel, memory, participation));
            }
            "input-dependent" => h.input_dependent.push((
                kernel,
                match value {
                    "yes" => true,
                    "no" => false,
                    other => return Err(format!("bad input-dependent `{other}`")),
                },
            )),
            "args" => h.args.extend(value.split_whitespace().map(String::from)),
            "kernels" => {
                h.kernels = Some(
                    value
                        .split(',')
                        .map(|k| k.trim().to_string())
                        .filter(|k| !k.is_empty())
                        .collect(),
                )
            }
            "lowers" => h.lowers.push((
                kernel,
                match value {
                    "complete" => Status::Complete,
                    "partial" => Status::Partial,
                    other => return Err(format!("bad lowers `{other}`")),
                },
            )),
            "unknown" => h.unknowns.push(value.to_string()),
            "ir" => h.ir.push(value.to_string()),
            "ir-not" => h.ir_not.push(value.to_string()),
            "assumption" => h.assumptions.push(value.to_string()),
            // A line of the fixture's description.
            _ => {}
        }
    }
    if !any {
        return Err("no header: the first comment lines must state what is expected".into());
    }
    Ok(h)
}

/// Checks one fixture; returns its mismatches.
fn check_fixture(path: &Path) -> Vec<String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return vec![format!("unreadable: {e}")],
    };
    let header = match parse_header(&text) {
        Ok(h) => h,
        Err(e) => return vec![e],
    };
    // Verdicts, not speed, are under test: a loaded machine must not turn a
    // proof into a timeout (benchmarks measure speed).
    let mut argv = vec!["warpdrf".to_string(), "check".to_string()];
    if !header.args.iter().any(|a| a == "--timeout-ms") {
        argv.extend(["--timeout-ms".to_string(), "60000".to_string()]);
    }
    argv.extend(header.args.iter().cloned());
    argv.push(path.display().to_string());
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => return vec![format!("bad args: {e}")],
    };
    let Command::Check(args) = cli.command else {
        unreachable!("parsed as check")
    };
    let options = match cli::options(&args.common, (&args.limit).into()) {
        Ok(o) => o,
        Err(e) => return vec![format!("bad args: {e}")],
    };
    let path = path.to_path_buf();
    driver::with_big_stack(move || {
        let mut problems = Vec::new();
        let mut db = SourceDb::new();
        let inputs = match driver::collect_inputs(std::slice::from_ref(&path)) {
            Ok(i) => i,
            Err(e) => return vec![e.to_string()],
        };
        let (entries, _) = match driver::lower_all(&mut db, &inputs, &options) {
            Ok(r) => r,
            Err(e) => return vec![e.to_string()],
        };
        let results = driver::check(&db, &entries, &options);
        let ir: String = entries
            .iter()
            .flat_map(|e| e.kernels.iter().map(|k| k.to_string()))
            .collect();
        // Invariants of every run: unknowns name a reason and point into a file.
        for e in &entries {
            for u in e.unknowns() {
                if u.reason.trim().is_empty() {
                    problems.push(format!("{}: an unknown without a reason", e.name));
                }
                let (line, _) = db.line_col(u.span);
                if line == 0 || line as usize > db.file(u.span.file).line_count() {
                    problems.push(format!("{}: unknown `{}` points outside its file", e.name, u.reason));
                }
            }
        }
        if let Some(expected) = &header.kernels {
            let mut found: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
            let mut expected = expected.clone();
            found.sort();
            expected.sort();
            if found != expected {
                problems.push(format!("kernels: expected {expected:?}, found {found:?}"));
            }
        }
        for (kernel, status) in &header.lowers {
            let matching: Vec<_> = entries
                .iter()
                .filter(|e| kernel.as_ref().is_none_or(|k| *k == e.name))
                .collect();
            if matching.is_empty() {
                problems.push(format!("lowers: no kernel {}", kernel.as_deref().unwrap_or("at all")));
            }
            for e in matching {
                if e.status() != *status {
                    let reasons: Vec<&str> = e.unknowns().iter().map(|u| u.reason.as_str()).collect();
                    problems.push(format!(
                        "{}: lowers {:?}, expected {status:?} (unknowns: {reasons:?})",
                        e.name,
                        e.status()
                    ));
                }
            }
        }
        // The front end's unknowns and the checks' (a memory-only one, an
        // undecided obligation).
        let reasons: Vec<&str> = entries
            .iter()
            .flat_map(|e| e.unknowns().iter().map(|u| u.reason.as_str()))
            .chain(
                results
                    .iter()
                    .flat_map(|r| r.unknowns.iter().map(|u| u.reason.as_str())),
            )
            .collect();
        for text in &header.unknowns {
            if !reasons.iter().any(|r| r.contains(text.as_str())) {
                let all = &reasons;
                problems.push(format!("no unknown mentions `{text}` (unknowns: {all:?})"));
            }
        }
        for text in &header.assumptions {
            let found = entries.iter().any(|e| {
                e.kernels
                    .iter()
                    .any(|k| k.assumptions.iter().any(|a| a.reason.contains(text.as_str())))
            });
            if !found {
                problems.push(format!("no assumption mentions `{text}`"));
            }
        }
        for text in &header.ir {
            if !ir.contains(text.as_str()) {
                problems.push(format!("IR lacks `{text}`"));
            }
        }
        for text in &header.ir_not {
            if ir.contains(text.as_str()) {
                problems.push(format!("IR has `{text}`"));
            }
        }
        for (kernel, memory, participation) in &header.expects {
            let matching: Vec<_> = results
                .iter()
                .filter(|r| kernel.as_ref().is_none_or(|k| *k == r.kernel))
                .collect();
            if matching.is_empty() {
                problems.push(format!("expect: no kernel {}", kernel.as_deref().unwrap_or("at all")));
            }
            for r in matching {
                let wrong_memory = memory.is_some_and(|m| m != r.memory);
                let wrong_participation = participation.is_some_and(|p| p != r.participation);
                if wrong_memory || wrong_participation {
                    let reasons: Vec<String> = r
                        .alarms
                        .iter()
                        .map(|a| format!("{} at {}", a.message, db.line_col(a.span).0))
                        .chain(r.unknowns.iter().map(|u| u.reason.clone()))
                        .collect();
                    problems.push(format!(
                        "{}: memory={:?} participation={:?}, expected memory={memory:?} participation={participation:?} ({reasons:?})",
                        r.kernel, r.memory, r.participation
                    ));
                }
            }
        }
        for (kernel, expected) in &header.input_dependent {
            for r in results
                .iter()
                .filter(|r| kernel.as_ref().is_none_or(|k| *k == r.kernel))
            {
                if r.alarms.is_empty() {
                    problems.push(format!("{}: input-dependent given but no alarm", r.kernel));
                }
                for a in &r.alarms {
                    if a.input_dependent != *expected {
                        problems.push(format!(
                            "{}: alarm `{}` has input_dependent={}, expected {expected}",
                            r.kernel, a.message, a.input_dependent
                        ));
                    }
                }
            }
        }
        // Every alarm has a documented code and carries a witness naming
        // two distinct threads.
        for r in &results {
            for a in &r.alarms {
                if warpdrf::report::rules::find(&a.kind).is_none() {
                    problems.push(format!("{}: alarm kind `{}` has no rule", r.kernel, a.kind));
                }
                match &a.witness {
                    None => problems.push(format!("{}: alarm `{}` has no witness", r.kernel, a.message)),
                    Some(w) => {
                        let [t0, t1] = &w.threads;
                        if t0.thread == t1.thread && t0.block == t1.block {
                            problems.push(format!("{}: alarm `{}` names one thread twice", r.kernel, a.message));
                        }
                    }
                }
            }
        }
        if problems.is_empty() && std::env::var("WARPDRF_SHOW_IR").is_ok() {
            eprintln!("{ir}");
        }
        problems
    })
}

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            fixture_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "cu") {
            out.push(p);
        }
    }
}

#[test]
fn every_fixture_matches_its_header() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no fixtures under {}", root.display());
    // The fixtures are independent (each kernel is checked in a Z3 context
    // of its own, and the limits are work, not time): one per core at a
    // time, reported in the files' order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut problems: Vec<(usize, Vec<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(f) = files.get(i) else { break done };
                        done.push((i, check_fixture(f)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a fixture's check panicked"))
            .collect()
    });
    problems.sort_by_key(|(i, _)| *i);
    let mut failures = Vec::new();
    for (i, found) in problems {
        let f = &files[i];
        for problem in found {
            let rel = f.strip_prefix(&root).unwrap_or(f);
            failures.push(format!("{}: {problem}", rel.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn headers_are_parsed_strictly() {
    assert!(parse_header("__global__ void k() {}").is_err());
    assert!(parse_header("// expect: memory=maybe participation=pass\n").is_err());
    let h =
        parse_header("// expect k2: memory=pass participation=alarm\n// args: --block-dim 64\n// ir: foo\n").unwrap();
    assert_eq!(h.expects[0].0.as_deref(), Some("k2"));
    assert_eq!(h.expects[0].1, Some(Verdict::Pass));
    assert_eq!(h.args, ["--block-dim", "64"]);
    assert_eq!(h.ir, ["foo"]);
    let h = parse_header("// expect: memory=alarm\n").unwrap();
    assert_eq!((h.expects[0].1, h.expects[0].2), (Some(Verdict::Alarm), None));
    assert!(parse_header("// expect: \n").is_err());
}

/// The printed IR of a fixture (all kernels), for snapshots.
fn ir_of(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/frontend")
        .join(name);
    driver::with_big_stack(move || {
        let mut db = SourceDb::new();
        let inputs = driver::collect_inputs(&[path]).expect("fixture exists");
        let (entries, _) = driver::lower_all(&mut db, &inputs, &driver::Options::default()).expect("fixture reads");
        entries
            .iter()
            .flat_map(|e| e.kernels.iter().map(|k| k.to_string()))
            .collect()
    })
}

/// Reviewed renderings of the IR for fixtures that show the lowering's main
/// ideas: inlined helpers, byte views of dynamic shared memory, a pointer into
/// one of two buffers, and structured control flow.
#[test]
fn ir_snapshots() {
    for name in [
        "helpers_five_deep.cu",
        "extern_shared_views.cu",
        "pointer_choice.cu",
        "control_flow.cu",
    ] {
        insta::assert_snapshot!(name, ir_of(name));
    }
}
