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
