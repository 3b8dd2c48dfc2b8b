//! The command line as a user meets it: exit codes and the plain-text report.

mod common;

use common::warpdrf;

/// `warpdrf check --format json ARGS`: (exit status, standard output, the
/// report parsed).
fn check_json(args: &[&str]) -> (i32, String, serde_json::Value) {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let (code, stdout, _) = warpdrf(&all);
    let v = serde_json::from_str(&stdout).expect("JSON");
    (code, stdout, v)
}

#[test]
fn a_race_is_reported_with_its_two_threads() {
    let (code, stdout, _) = warpdrf(&[
        "check",
        "--block-dim",
        "64",
        "fixtures/memory/tree_reduction_unsynced.cu",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("memory=alarm"), "{stdout}");
    assert!(stdout.contains("memory/shared-race"), "{stdout}");
    // The witness table has a row per thread, A and B; the labels name them
    // at the two accesses.
    let rows = stdout
        .lines()
        .filter(|l| {
            let l = l.trim_start_matches([' ', '=']).trim_start();
            l.starts_with("A  (") || l.starts_with("B  (")
        })
        .count();
    assert_eq!(rows, 2, "{stdout}");
    assert!(
        stdout.contains("A: thread (") && stdout.contains("B: thread ("),
        "{stdout}"
    );
    assert!(stdout.contains("help: "), "{stdout}");
}

/// A witness that needs a value past its type's range says so; one that
/// does not, does not.
#[test]
fn a_witness_says_when_it_needs_a_wrap_around() {
    let notes = |file: &str| {
        let (code, stdout, v) = check_json(&["--block-dim", "32", file]);
        assert_eq!(code, 1, "{stdout}");
        v["kernels"][0]["alarms"][0]["witness"]["notes"].to_string()
    };
    assert!(notes("fixtures/memory/index_wraps_around.cu").contains("wrap around"));
    assert!(!notes("fixtures/memory/global_out_of_block.cu").contains("wrap around"));
}

/// The checks measure an object in its element unit (`passes::units`);
/// a witness reports bytes: an 8-byte store at 4-byte steps overlaps the
/// next thread's by 4 bytes.
#[test]
fn a_witness_in_element_units_reports_bytes() {
    let (code, stdout, v) = check_json(&["--block-dim", "64", "fixtures/memory/element_width_overlap.cu"]);
    assert_eq!(code, 1, "{stdout}");
    let threads = v["kernels"][0]["alarms"][0]["witness"]["threads"]
        .as_array()
        .expect("two threads")
        .clone();
    let ranges: Vec<(i64, i64)> = threads
        .iter()
        .map(|t| {
            (
                t["offset"].as_i64().expect("offset"),
                t["width"].as_i64().expect("width"),
            )
        })
        .collect();
    assert_eq!(ranges.len(), 2, "{stdout}");
    for (offset, width) in &ranges {
        assert_eq!(*width, 8, "the double's bytes: {stdout}");
        assert_eq!(offset % 4, 0, "a 4-byte step: {stdout}");
    }
    let (a, b) = (ranges[0], ranges[1]);
    assert!(a.0 < b.0 + b.1 && b.0 < a.0 + a.1, "the byte ranges overlap: {stdout}");
    assert_ne!(a.0, b.0, "two threads' stamps, 4 bytes apart: {stdout}");
}

#[test]
fn a_race_free_kernel_passes_memory() {
    let (_, stdout, _) = warpdrf(&[
        "check",
        "--block-dim",
        "256",
        "fixtures/memory/tree_reduction_synced.cu",
    ]);
    assert!(stdout.contains("memory=pass"), "{stdout}");
    assert!(!stdout.contains("-race"), "{stdout}");
}

#[test]
fn a_missing_file_fails_the_command() {
    let (code, _, stderr) = warpdrf(&["check", "fixtures/memory/no_such_file.cu"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no_such_file.cu"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_bad_flag_fails_with_one_line() {
    for args in [
        &["check", "--no-such-flag", "fixtures/memory"][..],
        &["check", "--block-dim", "0", "fixtures/memory"],
        &["check", "--format", "xml", "fixtures/memory"],
        &["frobnicate"],
    ] {
        let (code, stdout, stderr) = warpdrf(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }
    // Help is not an error.
    let (code, stdout, _) = warpdrf(&["check", "--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("--baseline"), "{stdout}");
}

#[test]
fn a_kernel_that_passes_both_conditions_exits_zero() {
    let (code, stdout, _) = warpdrf(&[
        "check",
        "--block-dim",
        "256",
        "fixtures/memory/tree_reduction_synced.cu",
    ]);
    assert!(stdout.contains("participation=pass"), "{stdout}");
    assert_eq!(code, 0, "{stdout}");
}

/// The JSON witness of a partial warp names the lane that does not exist,
/// and the launch names where its shape came from.
#[test]
fn a_partial_warp_witness_names_a_missing_lane() {
    let (code, stdout, v) = check_json(&["fixtures/participation/launch_site_48.cu"]);
    assert_eq!(code, 1, "{stdout}");
    let k = &v["kernels"][0];
    assert_eq!(k["participation"], "alarm");
    assert_eq!(k["launch"]["source"], "launch_site");
    assert_eq!(k["launch"]["block_dim"], serde_json::json!([48, 1, 1]));
    let alarm = k["alarms"]
        .as_array()
        .expect("alarms")
        .iter()
        .find(|a| a["kind"] == "participation/partial-warp")
        .expect("a partial-warp alarm");
    let threads = alarm["witness"]["threads"].as_array().expect("threads");
    assert_eq!(threads[0]["exists"], true);
    assert_eq!(threads[1]["exists"], false);
    assert_eq!(threads[0]["warp"], threads[1]["warp"]);
    assert!(threads[1]["lane"].as_u64().expect("lane") >= 16);
}

/// A divergent shuffle's witness: two lanes of one warp, one on each side.
#[test]
fn a_divergent_shuffle_names_two_lanes_of_one_warp() {
    let (code, stdout, v) = check_json(&["--block-dim", "128", "fixtures/participation/threshold_48.cu"]);
    assert_eq!(code, 1, "{stdout}");
    let alarm = &v["kernels"][0]["alarms"][0];
    assert_eq!(alarm["kind"], "participation/divergent-primitive");
    let t = alarm["witness"]["threads"].as_array().expect("threads");
    assert_eq!(t[0]["warp"], 1);
    assert_eq!(t[1]["warp"], 1);
    let (a, b) = (t[0]["thread"][0].as_u64().unwrap(), t[1]["thread"][0].as_u64().unwrap());
    assert!(a < 48 && b >= 48, "{a} executes, {b} does not");
}

#[test]
fn unimplemented_configurations_are_refused() {
    let (code, _, stderr) = warpdrf(&["check", "--config", "smr", "fixtures/participation/shuffle_uniform.cu"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("smr"), "{stderr}");
}

#[test]
fn every_rule_is_listed_and_explained() {
    let (code, list, _) = warpdrf(&["rule"]);
    assert_eq!(code, 0);
    for rule in warpdrf::report::rules::RULES {
        assert!(list.contains(rule.code), "{list}");
        let (code, doc, _) = warpdrf(&["rule", rule.code]);
        assert_eq!(code, 0);
        assert!(doc.contains("How to fix:"), "{doc}");
    }
    let (code, _, stderr) = warpdrf(&["rule", "memory/no-such-check"]);
    assert_eq!(code, 2);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// `--format short`: `file:line:col: warning[code]: …`, one line per alarm.
#[test]
fn short_format_is_one_line_per_alarm() {
    let (code, stdout, _) = warpdrf(&[
        "check",
        "--format",
        "short",
        "--block-dim",
        "128",
        "fixtures/participation/threshold_48.cu",
    ]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let line = lines[0];
    assert!(
        line.starts_with("fixtures/participation/threshold_48.cu:9:13: warning[participation/divergent-primitive]: "),
        "{line}"
    );
}

/// Kernels checked in parallel give the same report as one at a time
/// (each kernel gets a fresh solver context; only timings differ).
#[test]
fn jobs_do_not_change_the_report() {
    // Byte for byte: budgets are solver work, not time, and `time_ms` is
    // only printed with `--timings`.
    let run = |jobs: &str| {
        let (_, stdout, _) = warpdrf(&[
            "check",
            "--format",
            "json",
            "--jobs",
            jobs,
            "fixtures/participation",
            "fixtures/memory",
        ]);
        stdout
    };
    // The two runs at once: each takes a while on its own.
    let (one, four) = std::thread::scope(|scope| {
        let four = scope.spawn(|| run("4"));
        (run("1"), four.join().expect("the run with four jobs"))
    });
    let v: serde_json::Value = serde_json::from_str(&one).expect("JSON");
    assert!(v["kernels"].as_array().expect("kernels").len() > 100);
    assert!(!one.contains("time_ms"));
    // Work limits decided everything: the clock's net never stopped a check.
    assert!(
        !one.contains("\"clock_limited\": true"),
        "a fixture ran into the clock's net"
    );
    assert!(one == four, "--jobs 1 and --jobs 4 differ");
}

#[test]
fn lean_solvers_reach_the_same_verdicts_on_the_participation_fixtures() {
    // Each kernel's verdicts and alarm kinds; witnesses may differ (the
    // search is not the same, see `obligation::smt::strategy`).
    let run = |lean: bool| {
        let mut args = vec!["check", "--format", "json", "fixtures/participation"];
        if lean {
            args.push("--lean-solvers");
        }
        let (_, stdout, _) = warpdrf(&args);
        let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
        v["kernels"]
            .as_array()
            .expect("kernels")
            .iter()
            .map(|k| {
                let mut kinds: Vec<String> = k["alarms"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| a["kind"].to_string())
                    .collect();
                kinds.sort();
                (
                    k["kernel"].to_string(),
                    k["memory"].to_string(),
                    k["participation"].to_string(),
                    kinds,
                )
            })
            .collect::<Vec<_>>()
    };
    let (whole, lean) = std::thread::scope(|scope| {
        let lean = scope.spawn(|| run(true));
        (run(false), lean.join().expect("the lean run"))
    });
    assert!(whole.len() > 50, "the fixtures' kernels");
    assert!(whole.iter().any(|k| k.2.contains("alarm")), "some alarm to compare");
    assert_eq!(whole, lean);
}

#[test]
fn timings_are_given_on_request() {
    let (_, stdout, v) = check_json(&["--timings", "fixtures/participation/shuffle_uniform.cu"]);
    assert!(v["kernels"][0]["time_ms"].is_u64(), "{stdout}");
}

#[test]
fn the_human_report_ends_with_a_summary_line() {
    let (_, stdout, _) = warpdrf(&[
        "check",
        "--block-dim",
        "128",
        "fixtures/participation/threshold_48.cu",
        "fixtures/participation/threshold_64.cu",
    ]);
    let last = stdout.lines().last().expect("output");
    assert_eq!(
        last,
        "2 kernels checked: 1 pass both conditions; memory: 0 alarm, 0 unknown; participation: 1 alarm, 0 unknown"
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let args = |color: &str| {
        warpdrf(&[
            "check",
            "--color",
            color,
            "--block-dim",
            "64",
            "fixtures/participation/partial_mask.cu",
        ])
        .1
    };
    assert!(args("always").contains("\u{1b}["));
    assert!(!args("never").contains('\u{1b}'));
    // Piped (as here), `auto` gives plain text.
    assert!(!args("auto").contains('\u{1b}'));
}

/// `audit` summarises: memory rows by participation columns, and the
/// kernels of every cell that is not a pass; CSV has a row per kernel.
#[test]
fn audit_tables_kernels_by_both_verdicts() {
    let files = [
        "fixtures/memory/index_widened_first.cu",
        "fixtures/memory/global_out_of_block.cu",
    ];
    let mut args = vec!["audit", "--block-dim", "32"];
    args.extend(files);
    let (code, stdout, _) = warpdrf(&args);
    assert_eq!(code, 1, "an alarm fails the audit: {stdout}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
            .split_whitespace()
            .skip(1)
            .map(|n| n.parse::<usize>().expect("a count"))
            .collect::<Vec<_>>()
    };
    // Columns: pass, discharged, alarm, unknown, total.
    assert_eq!(row("pass"), [1, 0, 0, 0, 1], "{stdout}");
    assert_eq!(row("discharged"), [0, 0, 0, 0, 0], "{stdout}");
    assert_eq!(row("alarm"), [1, 0, 0, 0, 1], "{stdout}");
    assert_eq!(row("unknown"), [0, 0, 0, 0, 0], "{stdout}");
    assert_eq!(row("total"), [2, 0, 0, 0, 2], "{stdout}");
    let cell = stdout
        .split("memory alarm / participation pass (1):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no alarm/pass cell: {stdout}"));
    assert!(cell.trim_start().starts_with("scale_forgot_block ("), "{stdout}");
    assert!(!stdout.contains("memory pass / participation pass"), "{stdout}");

    let mut args = vec!["audit", "--format", "csv", "--block-dim", "32"];
    args.extend(files);
    let (_, csv, _) = warpdrf(&args);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "file,line,kernel,memory,participation,alarms,unknowns,clock_limited"
    );
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows.contains(&"fixtures/memory/index_widened_first.cu,7,stamp_rows_widened,pass,pass,0,0,false"),
        "{csv}"
    );
    assert!(
        rows.iter().any(|r| r.contains(",scale_forgot_block,alarm,pass,")),
        "{csv}"
    );
}

/// The audit's `--timeout-ms` limits each kernel: with almost no solver
/// work left, what needs the solver is unknown, never a pass.
#[test]
fn audit_timeout_leaves_unknown_not_pass() {
    let (code, csv, _) = warpdrf(&[
        "audit",
        "--format",
        "csv",
        "--block-dim",
        "32",
        "--timeout-ms",
        "1",
        "fixtures/memory/index_widened_first.cu",
    ]);
    assert_eq!(code, 1, "{csv}");
    assert!(csv.contains(",stamp_rows_widened,unknown,"), "{csv}");
}

#[test]
fn audit_shows_passes_that_rely_on_the_callers_shapes_apart() {
    // Race-free only with the 32-thread blocks of its launch site; the
    // same kernel launched with 64 threads races.
    let files = [
        "fixtures/memory/launch_site_one_warp.cu",
        "fixtures/memory/launch_site_two_warps.cu",
    ];
    let mut args = vec!["audit", "--format", "csv"];
    args.extend(files);
    let (code, csv, _) = warpdrf(&args);
    assert_eq!(code, 1, "{csv}");
    assert!(
        csv.contains("launch_site_one_warp.cu,5,scale_rows,discharged,pass,0,0,false"),
        "{csv}"
    );
    assert!(
        csv.contains("launch_site_two_warps.cu,6,scale_rows,alarm,pass,"),
        "{csv}"
    );

    // The check keeps the verdict (a pass under every launch found) and says
    // what another launch would do.
    let (code, json, _) = warpdrf(&["check", "--format", "json", files[0]]);
    assert_eq!(code, 0, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let k = &v["kernels"][0];
    assert_eq!(k["memory"], "pass", "{json}");
    let discharged = k["discharged_by_callers"].as_array().expect("a list");
    assert_eq!(discharged.len(), 1, "{json}");
    assert_eq!(discharged[0]["condition"], "memory", "{json}");
    let block = &discharged[0]["witness"]["block_dim"];
    assert_ne!(block[0], 32, "the witness's launch is not the callers': {json}");
}

#[test]
fn the_readme_example_passes() {
    // README, "Set up and run": the first command checks this file.
    let (code, stdout, stderr) = warpdrf(&["check", "--block-dim", "256", "examples/reduce.cu"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("block_sum: memory=pass participation=pass"), "{stdout}");
}

/// A directory whose files are `files` (name, text).
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("writing a source file");
    }
    dir
}

/// How many instantiations `warpdrf kernels` finds of the first kernel in `dir`.
fn instantiations_found(dir: &std::path::Path) -> u64 {
    let path = dir.to_str().expect("a UTF-8 path");
    let (_, stdout, _) = warpdrf(&["kernels", "--format", "json", path]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    v["kernels"][0]["instantiations"]
        .as_u64()
        .unwrap_or_else(|| panic!("an instantiation count: {stdout}"))
}

/// `warpdrf audit --format json DIR`: each kernel's name with its memory
/// verdict.
fn audit_dir(dir: &std::path::Path) -> Vec<(String, String)> {
    let path = dir.to_str().expect("a UTF-8 path");
    let (_, stdout, stderr) = warpdrf(&["audit", "--format", "json", path]);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("JSON: {stderr}"));
    v["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| {
            (
                k["kernel"].as_str().expect("a name").to_string(),
                k["memory"].as_str().expect("a verdict").to_string(),
            )
        })
        .collect()
}

/// A header's template kernel that races where `N` is less than the block.
const STAGE: &str = "template <int N>\n\
    __global__ void stage(float * x) {\n\
    \x20   __shared__ float s[64];\n\
    \x20   s[threadIdx.x % N] = x[threadIdx.x];\n\
    \x20   __syncthreads();\n\
    \x20   x[threadIdx.x] = s[threadIdx.x];\n\
    }\n";

/// A kernel defined in a header is checked as every unit that includes it
/// uses it, not only as the first one read: here the first launches a
/// race-free instantiation, the second one that races.
#[test]
fn a_header_kernel_gets_the_instantiations_of_every_unit() {
    let dir = project(&[
        ("stage.cuh", STAGE),
        (
            "a.cu",
            "#include \"stage.cuh\"\nvoid run_a(float * x) { stage<64><<<1, 64>>>(x); }\n",
        ),
        (
            "b.cu",
            "#include \"stage.cuh\"\nvoid run_b(float * x) { stage<8><<<1, 64>>>(x); }\n",
        ),
    ]);
    assert_eq!(audit_dir(dir.path()), [("stage".to_string(), "alarm".to_string())]);
    assert_eq!(instantiations_found(dir.path()), 2);
}

/// The launch shapes of a kernel in a header are those of every unit: the
/// second launches it with 128 threads, and threads 0 and 64 write `s[0]`.
#[test]
fn a_header_kernel_gets_the_launch_shapes_of_every_unit() {
    let dir = project(&[
        (
            "fill.cuh",
            "__global__ void fill(float * x) {\n\
             \x20   __shared__ float s[64];\n\
             \x20   s[threadIdx.x % 64] = x[threadIdx.x];\n\
             \x20   __syncthreads();\n\
             \x20   x[threadIdx.x] = s[threadIdx.x % 64];\n\
             }\n",
        ),
        (
            "a.cu",
            "#include \"fill.cuh\"\nvoid run_a(float * x) { fill<<<1, 64>>>(x); }\n",
        ),
        (
            "b.cu",
            "#include \"fill.cuh\"\nvoid run_b(float * x) { fill<<<1, 128>>>(x); }\n",
        ),
    ]);
    assert_eq!(audit_dir(dir.path()), [("fill".to_string(), "alarm".to_string())]);
    // The first unit alone launches it race-free (64 threads).
    std::fs::remove_file(dir.path().join("b.cu")).expect("removing a unit");
    let alone = audit_dir(dir.path());
    assert!(
        alone.len() == 1 && matches!(alone[0].1.as_str(), "pass" | "discharged"),
        "{alone:?}"
    );
}

/// A kernel defined in one unit and launched from another through its
/// declaration (`__global__ void fill(float *);` in a header) is checked
/// under the launches of both, whichever unit is read first.
#[test]
fn a_kernel_launched_from_another_unit_gets_that_units_shapes() {
    let definition = "#include \"fill.cuh\"\n\
        __global__ void fill(float * x) {\n\
        \x20   __shared__ float s[64];\n\
        \x20   s[threadIdx.x % 64] = x[threadIdx.x];\n\
        \x20   __syncthreads();\n\
        \x20   x[threadIdx.x] = s[threadIdx.x % 64];\n\
        }\n\
        void run_a(float * x) { fill<<<1, 64>>>(x); }\n";
    for defining in ["a.cu", "z.cu"] {
        let dir = project(&[
            ("fill.cuh", "__global__ void fill(float * x);\n"),
            (defining, definition),
            (
                "b.cu",
                "#include \"fill.cuh\"\nvoid run_b(float * x) { fill<<<1, 128>>>(x); }\n",
            ),
        ]);
        assert_eq!(
            audit_dir(dir.path()),
            [("fill".to_string(), "alarm".to_string())],
            "defined in {defining}"
        );
    }
}

/// A header that launches its kernel differently as the unit that
/// includes it defines a macro: each unit's expansion of it is searched.
#[test]
fn a_header_expanded_differently_is_searched_again() {
    let dir = project(&[
        (
            "stage.cuh",
            &format!(
                "{STAGE}\
                 #ifdef NARROW\n\
                 inline void run(float * x) {{ stage<8><<<1, 64>>>(x); }}\n\
                 #else\n\
                 inline void run(float * x) {{ stage<64><<<1, 64>>>(x); }}\n\
                 #endif\n"
            ),
        ),
        ("a.cu", "#include \"stage.cuh\"\nvoid run_a(float * x) { run(x); }\n"),
        (
            "b.cu",
            "#define NARROW\n#include \"stage.cuh\"\nvoid run_b(float * x) { run(x); }\n",
        ),
    ]);
    assert_eq!(audit_dir(dir.path()), [("stage".to_string(), "alarm".to_string())]);
}

#[test]
fn a_memory_condition_that_cannot_pass_still_finds_its_alarm() {
    // The store through a pointer loaded from memory leaves memory unknown
    // before any pair is checked: `audit` then searches a smaller budget
    // for an alarm, and the race on `out[0]` is one. (The copy in flight at
    // `leave`'s early return made its memory unknown too, until such copies
    // were modelled landing after the return: now an ordinary race, on
    // `out[blockIdx.x]`, found with the whole budget.)
    let dir = project(&[
        (
            "gather.cu",
            "__global__ void gather(float **rows, float *out) {\n\
             \x20   float *row = rows[blockIdx.x];\n\
             \x20   row[threadIdx.x] = 1.0f;\n\
             \x20   out[0] = row[threadIdx.x];\n\
             }\n\
             void run_gather(float **rows, float *out) { gather<<<4, 64>>>(rows, out); }\n",
        ),
        (
            "leave.cu",
            "__device__ void stage16(unsigned dst, const void *src) {\n\
             \x20   asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" : : \"r\"(dst), \"l\"(src));\n\
             }\n\
             __device__ void wait_copies() { asm volatile(\"cp.async.wait_all;\"); }\n\
             __global__ void leave(const float4 *src, float *out, int n) {\n\
             \x20   __shared__ __align__(16) float4 tile[128];\n\
             \x20   stage16((unsigned) __cvta_generic_to_shared(&tile[threadIdx.x]), src + threadIdx.x);\n\
             \x20   if (threadIdx.x >= n) { return; }\n\
             \x20   wait_copies();\n\
             \x20   __syncthreads();\n\
             \x20   out[blockIdx.x] = tile[threadIdx.x].x;\n\
             }\n\
             void run(const float4 *src, float *out, int n) { leave<<<4, 128>>>(src, out, n); }\n",
        ),
    ]);
    let alarm = |k: &str| (k.to_string(), "alarm".to_string());
    assert_eq!(audit_dir(dir.path()), vec![alarm("gather"), alarm("leave")]);
}

#[test]
fn a_kernel_named_only_by_pasting_waits_for_the_unit_that_launches_it() {
    // `k_add` is defined in `a.cu` and launched 64 wide there, and 128
    // wide from `b.cu` through a declaration; no file's text holds the
    // name (both paste it), so it was settled after `a.cu`, and `b.cu`'s
    // launch, where threads 0 and 64 write `x[0]`, was never read.
    let dir = project(&[
        (
            "a.cu",
            "#define KERNEL(name) __global__ void k_##name(float *x) { x[threadIdx.x % 64] = 1.0f; }\n\
             #define LAUNCH(name, n) k_##name<<<1, n>>>(x)\n\
             KERNEL(add)\n\
             void run_a(float *x) { LAUNCH(add, 64); }\n",
        ),
        (
            "b.cu",
            "#define DECL(name) __global__ void k_##name(float *x);\n\
             #define LAUNCH(name, n) k_##name<<<1, n>>>(x)\n\
             DECL(add)\n\
             void run_b(float *x) { LAUNCH(add, 128); }\n",
        ),
    ]);
    assert_eq!(audit_dir(dir.path()), vec![("k_add".to_string(), "alarm".to_string())]);
}

/// A use of a kernel in the arm of an `if constexpr` that an instantiation
/// discards instantiates nothing: `pick<16>` names `scale<8 / 16>` only in
/// the discarded arm (no `scale<0>`), and `pick<2>` names `scale<2>` only
/// in its discarded `else`.
#[test]
fn a_use_in_a_discarded_if_constexpr_arm_is_no_instantiation() {
    let dir = project(&[(
        "pick.cu",
        "template <int n>\n\
         __global__ void scale(float *x) { x[threadIdx.x * n] = 1.0f; }\n\
         template <int m>\n\
         void pick(float *x) {\n\
         \x20   if constexpr (m <= 8) {\n\
         \x20       scale<8 / m><<<1, 32>>>(x);\n\
         \x20   } else {\n\
         \x20       scale<m><<<1, 32>>>(x);\n\
         \x20   }\n\
         }\n\
         void host(float *x) { pick<2>(x); pick<16>(x); }\n",
    )]);
    assert_eq!(instantiations_found(dir.path()), 2);
}

/// Past the search's cap, every use of a kernel is still reached: the host
/// template names it in both arms of an `if` (`soft` false, then true)
/// under 70 instantiations of its own. Searched one use at a time, one
/// arm's 64 filled the cap, and only the lowering with every argument
/// symbolic found the race; breadth first, an instantiation with `soft`
/// false (the one that races) is lowered, and the alarm names it.
#[test]
fn a_search_past_its_cap_reaches_every_use_of_a_kernel() {
    let calls: String = (1..=70).map(|n| format!("    run<{n}>(x, c);\n")).collect();
    let text = format!(
        "typedef void (*kernel_t)(float *);\n\
         template <int n, bool soft>\n\
         __global__ void blend(float *x) {{\n\
         \x20   if (soft) {{ x[n + threadIdx.x] = 1.0f; }} else {{ x[n] = threadIdx.x; }}\n\
         }}\n\
         template <int n>\n\
         void run(float *x, float c) {{\n\
         \x20   kernel_t f;\n\
         \x20   if (c == 0.0f) {{\n\
         \x20       constexpr bool soft = false;\n\
         \x20       f = blend<n, soft>;\n\
         \x20   }} else {{\n\
         \x20       constexpr bool soft = true;\n\
         \x20       f = blend<n, soft>;\n\
         \x20   }}\n\
         \x20   f<<<1, 64>>>(x);\n\
         }}\n\
         void host(float *x, float c) {{\n{calls}}}\n"
    );
    let dir = project(&[("blend.cu", &text)]);
    let path = dir.path().to_str().expect("a UTF-8 path");
    let (_, stdout, stderr) = warpdrf(&["audit", "--format", "json", path]);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("JSON: {stderr}"));
    let kernel = &v["kernels"][0];
    assert_eq!(kernel["memory"], "alarm", "{stdout}");
    let soft_args: Vec<&str> = kernel["alarms"]
        .as_array()
        .expect("alarms")
        .iter()
        .flat_map(|a| a["instantiation"].as_array().expect("an instantiation").iter())
        .filter(|arg| arg["name"] == "soft")
        .map(|arg| arg["value"].as_str().expect("a value"))
        .collect();
    assert_eq!(soft_args, ["false"], "{stdout}");
}
