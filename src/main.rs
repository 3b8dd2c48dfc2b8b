//! The `warpdrf` command: parses arguments, runs the driver, renders, exits.
//! Exit status: 0 every kernel passes, 1 an alarm or unknown, 2 the command failed.

use std::process::ExitCode;

use clap::Parser;

use warpdrf::cli::{self, Cli, Command};
use warpdrf::driver;
use warpdrf::report;
use warpdrf::source::SourceDb;

/// jemalloc for the whole process: Rust's allocations, and through its
/// unprefixed `malloc` also Z3's, which are most of them (Z3 makes and
/// frees terms, clauses and solvers by the million). On ggml the audit
/// takes 5-9% less CPU than with glibc's allocator (back to back), with
/// identical reports: allocation never steers the search (Z3 orders
/// terms by id, not by address).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read when it starts. Freed pages are kept for
/// reuse, not handed back to the system on a timer: each kernel's check
/// frees a whole Z3 context, and giving its pages back cost more system
/// time than the allocator saved (a decay of 5 s: 10 s of it on ggml).
/// One arena: the front end and the checking threads share it (with its
/// per-thread caches), and kept pages serve every thread; with four the
/// audit's peak memory reached 970 MiB, with one 760-810 MiB.
#[allow(non_upper_case_globals)]
#[export_name = "malloc_conf"]
pub static malloc_conf: &u8 = &b"dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:1\0"[0];

/// Writes to standard output; a closed pipe (`warpdrf … | head`) is not an error.
fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

/// Preprocessor and parser diagnostics, one line each on standard error.
fn report_diagnostics(db: &SourceDb, diagnostics: &[warpdrf::preprocess::Diag]) {
    for d in diagnostics {
        let (l, c) = db.line_col(d.span);
        let level = match d.severity {
            warpdrf::preprocess::Severity::Error => "error",
            warpdrf::preprocess::Severity::Warning => "warning",
            warpdrf::preprocess::Severity::Note => "note",
        };
        eprintln!("{}:{l}:{c}: {level}: {}", db.name(d.span.file), d.message);
    }
}

/// The kernels of `paths`, lowered; front-end diagnostics go to standard error.
fn lowered(
    paths: &[std::path::PathBuf],
    opts: &driver::Options,
) -> Result<(SourceDb, Vec<driver::KernelEntry>), String> {
    let mut db = SourceDb::new();
    let inputs = driver::collect_inputs(paths).map_err(|e| e.to_string())?;
    let (entries, diagnostics) = driver::lower_all(&mut db, &inputs, opts).map_err(|e| e.to_string())?;
    report_diagnostics(&db, &diagnostics);
    Ok((db, entries))
}

/// A JSON value, pretty-printed, on standard output.
fn out_json(v: &impl serde::Serialize) {
    out(&format!(
        "{}\n",
        serde_json::to_string_pretty(v).expect("JSON values serialize")
    ));
}

/// Exit status 1 when some finding fails the run, else 0.
fn exit_for(report: &warpdrf::triage::Report) -> ExitCode {
    if report.failing() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Runs a command; `Err` is a one-line message for exit status 2.
fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Kernels(args) => {
            let opts = cli::options(&args.common, cli::Limits::default())?;
            let (db, entries) = lowered(&args.paths, &opts)?;
            match args.format {
                cli::ListFormat::Human => out(&report::kernels_human(&db, &entries)),
                cli::ListFormat::Json => out_json(&report::json::kernels(&db, &entries)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(args) => {
            let opts = cli::options(&args.common, (&args.limit).into())?;
            let paths = if args.paths.is_empty() {
                vec![std::path::PathBuf::from(".")]
            } else {
                args.paths.clone()
            };
            let baseline = match &args.baseline {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| format!("cannot read the baseline {}: {e}", path.display()))?;
                    Some(warpdrf::triage::Baseline::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?)
                }
                None => None,
            };
            let (db, results) = checked(&paths, &opts)?;
            let mut report = warpdrf::triage::triage(&db, results, baseline.as_ref());
            if let Some(path) = &args.write_baseline {
                let written = warpdrf::triage::Baseline::of(&db, &report);
                let text = serde_json::to_string_pretty(&written).expect("baselines serialize");
                std::fs::write(path, format!("{text}\n"))
                    .map_err(|e| format!("cannot write the baseline {}: {e}", path.display()))?;
                eprintln!(
                    "warpdrf: wrote {} findings to the baseline {}",
                    written.findings.len(),
                    path.display()
                );
                report = warpdrf::triage::triage(&db, report.results, Some(&written));
            }
            match args.format {
                cli::Format::Json => out_json(&report::json::check(
                    &db,
                    "cuda",
                    opts.lower.warp_size,
                    &report,
                    args.timings,
                )),
                cli::Format::Sarif => out_json(&report::sarif::check(&db, &report, opts.lower.warp_size)),
                cli::Format::Short => {
                    for i in 0..report.results.len() {
                        out(&report::short::kernel(&db, &report, i));
                    }
                    out(&report::short::problems(&db, &report));
                }
                cli::Format::Human => {
                    let colour = args.color.enabled();
                    if report.results.is_empty() {
                        eprintln!("warpdrf: no kernels found");
                    }
                    for i in 0..report.results.len() {
                        out(&report::human::kernel(&db, &report, i, colour));
                    }
                    out(&report::human::problems(&db, &report, colour));
                    if !report.results.is_empty() {
                        out(&report::human::summary(&report));
                    }
                }
            }
            Ok(exit_for(&report))
        }
        Command::Audit(args) => {
            let limits = cli::Limits {
                obligation_ms: cli::Limits::default().obligation_ms.min(args.timeout_ms),
                kernel_ms: Some(args.timeout_ms),
            };
            let mut opts = cli::options(&args.common, limits)?;
            opts.settle = true;
            let (db, results) = checked(&args.paths, &opts)?;
            if results.is_empty() {
                eprintln!("warpdrf: no kernels found");
            }
            let report = warpdrf::triage::triage(&db, results, None);
            match args.format {
                cli::AuditFormat::Table => out(&report::audit::table(&db, &report)),
                cli::AuditFormat::Csv => out(&report::audit::csv(&db, &report, args.timings)),
                cli::AuditFormat::Json => out_json(&report::json::check(
                    &db,
                    "cuda",
                    opts.lower.warp_size,
                    &report,
                    args.timings,
                )),
            }
            Ok(exit_for(&report))
        }
        Command::Rule(args) => match args.code.as_deref() {
            None => {
                out(&report::rules::list());
                Ok(ExitCode::SUCCESS)
            }
            Some(code) => match report::rules::find(code) {
                Some(rule) => {
                    out(&report::rules::describe(rule));
                    Ok(ExitCode::SUCCESS)
                }
                None => Err(format!("no check has the code `{code}` (`warpdrf rule` lists them)")),
            },
        },
        Command::Explain(args) => {
            let opts = cli::options(&args.common, (&args.limit).into())?;
            let mut db = SourceDb::new();
            let inputs = driver::collect_inputs(std::slice::from_ref(&args.file)).map_err(|e| e.to_string())?;
            match args.stage {
                cli::Stage::Preprocess => {
                    let root = db.load(&args.file).map_err(|e| e.to_string())?;
                    let mut session = warpdrf::preprocess::Session::new(opts.pp.clone());
                    let unit = session.preprocess(&mut db, root);
                    out(&unit.display(&db));
                    for d in &unit.diagnostics {
                        let (l, c) = db.line_col(d.span);
                        eprintln!("{}:{}:{}: {:?}: {}", db.name(d.span.file), l, c, d.severity, d.message);
                    }
                }
                stage => {
                    let (entries, _) = driver::lower_all(&mut db, &inputs, &opts).map_err(|e| e.to_string())?;
                    if entries.is_empty() {
                        return Err(match &opts.kernel {
                            Some(k) => format!("no kernel named `{k}` in {}", args.file.display()),
                            None => format!("no kernel in {}", args.file.display()),
                        });
                    }
                    for e in &entries {
                        for k in &e.kernels {
                            match stage {
                                cli::Stage::Ir => out(&k.to_string()),
                                cli::Stage::Accesses => {
                                    let model = driver::access_model(k, &opts);
                                    out(&format!("kernel {}{}\n{model}", k.name, instantiation(k)));
                                }
                                _ => out(&driver::explain_smt(&db, k, &opts)),
                            }
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The kernels of `paths`, lowered and checked ([`driver::lower_and_check`]:
/// checking starts while the front end goes on), with a progress bar on
/// standard error when it is a terminal (silent when piped or redirected);
/// front-end diagnostics go to standard error once every kernel is checked.
fn checked(
    paths: &[std::path::PathBuf],
    opts: &driver::Options,
) -> Result<(SourceDb, Vec<warpdrf::verdict::KernelResult>), String> {
    use std::io::IsTerminal;
    let mut db = SourceDb::new();
    let inputs = driver::collect_inputs(paths).map_err(|e| e.to_string())?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} kernels, {elapsed} {msg}")
                .expect("a valid progress template"),
        );
        bar
    });
    let checked = driver::lower_and_check(
        &mut db,
        &inputs,
        opts,
        &|n| {
            if let Some(bar) = &bar {
                bar.set_length(n as u64);
            }
        },
        &|r| {
            if let Some(bar) = &bar {
                bar.set_message(r.kernel.clone());
                bar.inc(1);
            }
        },
    )
    .map_err(|e| e.to_string())?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    report_diagnostics(&db, &checked.diagnostics);
    Ok((db, checked.results))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to standard output; a bad command line is one
        // line on standard error (the rest of clap's message is usage).
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: bad command line");
            eprintln!("{} (see --help)", first.trim_end());
            return ExitCode::from(2);
        }
    };
    let result = driver::with_big_stack(move || run(cli));
    if warpdrf::profile::enabled() {
        eprint!("{}", warpdrf::profile::table());
    }
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn instantiation(k: &warpdrf::ir::Kernel) -> String {
    if k.template_args.is_empty() {
        return String::new();
    }
    let args: Vec<String> = k
        .template_args
        .iter()
        .map(|a| format!("{}={}", a.name, a.value))
        .collect();
    format!("<{}>", args.join(", "))
}
