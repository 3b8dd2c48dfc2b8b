//! Times Z3 on SMT-LIB files written by `WARPDRF_DUMP_SMT=DIR`: one line per
//! file with the answer and milliseconds for each solver configuration
//! (`CONFIGS=default,QF_LIA,...`; `TIMEOUT_MS` bounds each run).
//!
//! `cargo run --release --example smt_time -- DIR/*.smt2`

use std::time::Instant;

fn main() {
    let configs = std::env::var("CONFIGS").unwrap_or_else(|_| "default,QF_UFLIA,QF_AUFLIRA".into());
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).expect("readable file");
        let mut line = path.clone();
        for config in configs.split(',') {
            // `default`, a logic name, or `t:tactic1+tactic2+…` (a pipeline).
            let solver = if config == "default" {
                z3::Solver::new()
            } else if let Some(pipeline) = config.strip_prefix("t:") {
                let mut names = pipeline.split('+');
                let mut t = z3::Tactic::new(names.next().expect("a tactic"));
                for n in names {
                    t = t.and_then(&z3::Tactic::new(n));
                }
                t.solver()
            } else {
                z3::Solver::new_for_logic(config).expect("a known logic")
            };
            solver.from_string(text.clone());
            let mut p = z3::Params::new();
            if let Ok(ms) = std::env::var("TIMEOUT_MS") {
                p.set_u32("timeout", ms.parse().expect("milliseconds"));
            }
            // PARAMS=name=value,...: solver parameters (numbers or booleans).
            if let Ok(extra) = std::env::var("PARAMS") {
                for kv in extra.split(',').filter(|s| !s.is_empty()) {
                    let (k, v) = kv.split_once('=').expect("name=value");
                    match v.parse::<u32>() {
                        Ok(n) => p.set_u32(k, n),
                        Err(_) => p.set_bool(k, v == "true"),
                    }
                }
            }
            solver.set_params(&p);
            let t = Instant::now();
            let r = solver.check();
            line.push_str(&format!("  {config}:{r:?} {} ms", t.elapsed().as_millis()));
        }
        println!("{line}");
    }
}
