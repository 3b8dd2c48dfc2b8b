//! The reference corpus: ggml's CUDA backend at the commit of
//! `llama-corpus/manifest.toml`. Runs when `WARPDRF_LLAMA_DIR` points at the
//! extracted `src/ggml-cuda` folder; otherwise says it was skipped.

use std::path::PathBuf;

use warpdrf::driver::{self, Options, Status};
use warpdrf::preprocess::PpConfig;
use warpdrf::source::SourceDb;

fn corpus_dir() -> Option<PathBuf> {
    match std::env::var_os("WARPDRF_LLAMA_DIR") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            eprintln!("skipped: WARPDRF_LLAMA_DIR is not set (point it at ggml's src/ggml-cuda)");
            None
        }
    }
}

/// `__global__` definitions in the sources, outside comments: what a reader
/// counts, as a check that the folder is the pinned one.
fn textual_kernel_definitions(dir: &std::path::Path) -> usize {
    fn walk(p: &std::path::Path, n: &mut usize) {
        for e in std::fs::read_dir(p).expect("corpus folder readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, n);
            } else if p.extension().is_some_and(|x| x == "cu" || x == "cuh") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for line in text.lines() {
                    let code = line.split("//").next().unwrap_or("");
                    if code.contains("__global__") && !code.trim_start().starts_with("#") {
                        *n += 1;
                    }
                }
            }
        }
    }
    let mut n = 0;
    walk(dir, &mut n);
    n
}

struct Summary {
    kernels: usize,
    warp: usize,
    warp_complete: usize,
    partial_without_reason: Vec<String>,
}

fn list(dir: PathBuf, arch: &str) -> Summary {
    let options = Options {
        pp: PpConfig {
            arch: arch.into(),
            ..PpConfig::default()
        },
        ..Options::default()
    };
    driver::with_big_stack(move || {
        let mut db = SourceDb::new();
        let inputs = driver::collect_inputs(&[dir]).expect("corpus readable");
        let (entries, _) = driver::lower_all(&mut db, &inputs, &options).expect("corpus lowers");
        let warp: Vec<_> = entries.iter().filter(|e| e.uses_warp_primitives()).collect();
        Summary {
            kernels: entries.len(),
            warp: warp.len(),
            warp_complete: warp.iter().filter(|e| e.status() == Status::Complete).count(),
            partial_without_reason: warp
                .iter()
                .filter(|e| e.status() == Status::Partial && e.unknowns().iter().any(|u| u.reason.trim().is_empty()))
                .map(|e| e.name.clone())
                .collect(),
        }
    })
}

#[test]
fn ggml_kernels_are_all_found_and_warp_kernels_lower() {
    let Some(dir) = corpus_dir() else { return };
    // 143 definitions under 142 names: one name is defined in both arms of an
    // `#if`, and the listing has the arm the target selects.
    assert_eq!(textual_kernel_definitions(&dir), 143, "not the pinned ggml folder?");
    let sm80 = list(dir.clone(), "sm_80");
    assert_eq!(sm80.kernels, 142);
    // At sm_80 the NVFP4 quantizer is compiled out (Blackwell only).
    assert!(sm80.warp >= 40, "{} warp kernels at sm_80", sm80.warp);
    assert!(
        sm80.warp_complete >= 38,
        "{} of {} complete",
        sm80.warp_complete,
        sm80.warp
    );
    assert!(sm80.partial_without_reason.is_empty());
    // Across architectures 41 kernels use warp primitives.
    let sm120 = list(dir, "sm_120");
    assert_eq!(sm120.kernels, 142);
    assert!(sm120.warp >= 41, "{} warp kernels at sm_120", sm120.warp);
    assert!(
        sm120.warp_complete >= 38,
        "{} of {} complete",
        sm120.warp_complete,
        sm120.warp
    );
    assert!(sm120.partial_without_reason.is_empty());
}

/// A condition's class in `warpdrf audit` (`report::audit::Class`), from
/// the JSON of one kernel.
fn class(k: &serde_json::Value, condition: &str) -> String {
    let verdict = k[condition].as_str().expect("a verdict").to_string();
    let discharged = k["discharged_by_callers"]
        .as_array()
        .is_some_and(|list| list.iter().any(|a| a["condition"] == condition));
    if verdict == "pass" && discharged {
        "discharged".into()
    } else {
        verdict
    }
}

/// The audit of the folder against `llama-corpus/manifest.toml`: every warp
/// kernel gets the verdicts recorded there, none whose code races (by our
/// reading, for inputs or launches the host produces) passes, and the warp
/// kernels are exactly the manifest's.
#[test]
fn audit_matches_the_manifest() {
    let Some(dir) = corpus_dir() else { return };
    let text = std::fs::read_to_string("llama-corpus/manifest.toml").expect("the manifest");
    let manifest: toml::Table = text.parse().expect("the manifest is TOML");
    let audit = manifest["audit"].as_table().expect("an [audit] table");
    let mut args: Vec<String> = vec!["audit".into(), "--format".into(), "json".into()];
    for a in audit["args"].as_array().expect("audit.args") {
        args.push(a.as_str().expect("a string").into());
    }
    args.push(dir.to_string_lossy().into_owned());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_warpdrf"))
        .args(&args)
        .output()
        .expect("warpdrf runs");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the audit's JSON");
    let kernels = report["kernels"].as_array().expect("kernels");
    let listing = std::process::Command::new(env!("CARGO_BIN_EXE_warpdrf"))
        .args(["kernels", "--format", "json"])
        .arg(&dir)
        .output()
        .expect("warpdrf runs");
    let listing: serde_json::Value = serde_json::from_slice(&listing.stdout).expect("the listing's JSON");
    let mut warp: Vec<String> = listing["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .filter(|k| k["uses_warp_primitives"] == true)
        .map(|k| k["kernel"].as_str().expect("a name").to_string())
        .collect();
    warp.sort();
    warp.dedup();

    let entries = manifest["kernel"].as_array().expect("[[kernel]] entries");
    let mut expected_warp = Vec::new();
    let mut problems = Vec::new();
    for m in entries {
        let name = m["name"].as_str().expect("name");
        let file = m["file"].as_str().expect("file");
        if m.get("sm_80").and_then(|v| v.as_bool()) != Some(false) {
            expected_warp.push(name.to_string());
        }
        let Some(k) = kernels
            .iter()
            .find(|k| k["kernel"] == name && k["file"].as_str().is_some_and(|f| f.ends_with(&format!("/{file}"))))
        else {
            problems.push(format!("{name} ({file}): not in the audit"));
            continue;
        };
        for condition in ["memory", "participation"] {
            let got = class(k, condition);
            let want = m[condition].as_str().expect("a class");
            if got != want {
                problems.push(format!("{name}: {condition} is {got}, the manifest says {want}"));
            }
            // Soundness: what races for real inputs or launches never passes.
            let truth = m[&format!("{condition}_truth")].as_str().expect("a truth");
            if matches!(truth, "real-defect" | "input-dependent") && matches!(got.as_str(), "pass" | "discharged") {
                problems.push(format!("{name}: {condition} is {got}, but the code races ({truth})"));
            }
        }
    }
    expected_warp.sort();
    if warp != expected_warp {
        problems.push(format!("warp kernels: {warp:?}, the manifest: {expected_warp:?}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
