//! No input makes the front end panic: random bytes, truncated and mutated
//! kernels, very deep nesting, a 10 MB file, binary files. Every input gives a
//! result (kernels, possibly partial) or a clear error.
//!
//! The long run is `cargo run --release --example fuzz -- --seconds 600`.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use warpdrf::driver::{self, Options};
use warpdrf::source::SourceDb;

/// Runs the front end on `bytes` written as `name` in a fresh folder, which
/// is removed afterwards; returns how many kernels.
fn run_bytes(name: &str, bytes: &[u8]) -> usize {
    let dir = tempfile::Builder::new()
        .prefix("warpdrf-robust-")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("temp file");
    front_end(&path)
}

/// Runs listing, lowering and checking on one file; returns how many kernels.
fn front_end(path: &Path) -> usize {
    let path = path.to_path_buf();
    driver::with_big_stack(move || {
        let mut db = SourceDb::new();
        // What is under test is that every stage gives a result, not how
        // far the solver gets: a small budget per kernel (the elses chain
        // of `deep_nesting_gives_a_result` spent 20 s proving pairs with
        // the default one).
        let options = Options {
            kernel_timeout_ms: Some(300),
            ..Options::default()
        };
        let inputs = driver::collect_inputs(std::slice::from_ref(&path)).expect("the file exists");
        let (entries, _) = driver::lower_all(&mut db, &inputs, &options).expect("a file that exists is read");
        let results = driver::check(&db, &entries, &options);
        for e in &entries {
            for k in &e.kernels {
                // Printing walks the whole IR.
                let _ = k.to_string();
            }
        }
        // Every rendering of whatever came out.
        let report = warpdrf::triage::triage(&db, results, None);
        let _ = warpdrf::report::json::check(&db, "cuda", 32, &report, true);
        let _ = warpdrf::report::sarif::check(&db, &report, 32);
        for i in 0..report.results.len() {
            let _ = warpdrf::report::human::kernel(&db, &report, i, true);
            let _ = warpdrf::report::short::kernel(&db, &report, i);
        }
        entries.len()
    })
}

fn run_text(text: &str) -> usize {
    run_bytes("input.cu", text.as_bytes())
}

const KERNEL: &str = r#"
#define N 32
template <typename T, int W = N>
__device__ T warp_sum(T v) {
    for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}
struct acc { float s; __device__ void add(float v) { s += v; } };
__global__ void k(const float * __restrict__ x, float * y, int n) {
    extern __shared__ char buf[];
    float * s = (float *) buf;
    acc a{0.0f};
    for (int i = threadIdx.x; i < n; i += blockDim.x) a.add(x[i]);
    float v = warp_sum(a.s);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
    __syncthreads();
    switch (threadIdx.x) { case 0: y[blockIdx.x] = s[0]; break; default: break; }
}
"#;

#[test]
fn the_sample_kernel_lowers() {
    assert_eq!(run_text(KERNEL), 1);
}

#[test]
fn every_truncation_of_a_kernel_is_accepted() {
    let chars: Vec<char> = KERNEL.chars().collect();
    for cut in (0..chars.len()).step_by(7) {
        let text: String = chars[..cut].iter().collect();
        run_text(&text);
    }
}

#[test]
fn deep_nesting_gives_a_result() {
    let depth = 10_000;
    let parens = format!(
        "__global__ void k(int *x) {{ x[0] = {}1{}; }}",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    assert_eq!(run_text(&parens), 1);
    let blocks = format!(
        "__global__ void k(int *x) {{ {} x[0] = 1; {} }}",
        "{".repeat(depth),
        "}".repeat(depth)
    );
    assert_eq!(run_text(&blocks), 1);
    let ifs = format!(
        "{}\n__global__ void k(int *x) {{ x[0] = 1; }}\n{}",
        "#if 1\n".repeat(depth),
        "#endif\n".repeat(depth)
    );
    assert_eq!(run_text(&ifs), 1);
    let calls = format!(
        "#define F(a) (a + 1)\n__global__ void k(int *x) {{ x[0] = {}0{}; }}",
        "F(".repeat(depth),
        ")".repeat(depth)
    );
    assert_eq!(run_text(&calls), 1);
    let templates = format!(
        "__global__ void k(int *x) {{ x[0] = sizeof({}int{}); }}",
        "T<".repeat(depth),
        ">".repeat(depth)
    );
    run_text(&templates);
    let unary = format!("__global__ void k(int *x) {{ x[0] = {}1; }}", "-".repeat(depth));
    assert_eq!(run_text(&unary), 1);
    let elses = format!(
        "__global__ void k(int *x) {{ {} x[0] = 1; }}",
        "if (x[1]) x[2] = 0; else ".repeat(depth)
    );
    assert_eq!(run_text(&elses), 1);
}

#[test]
fn a_ten_megabyte_file_is_accepted() {
    let mut text = String::with_capacity(10 << 20);
    let mut i = 0;
    while text.len() < 10 << 20 {
        text.push_str(&format!(
            "__device__ int helper{i}(int v) {{ return v * {i} + (v >> 3); }}\n"
        ));
        i += 1;
    }
    text.push_str(KERNEL);
    assert_eq!(run_text(&text), 1);
}

#[test]
fn binary_files_are_accepted() {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(64 << 10).collect();
    bytes.extend_from_slice(KERNEL.as_bytes());
    bytes.extend((0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    run_bytes("binary.cu", &bytes);
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let err = driver::collect_inputs(&[PathBuf::from("/no/such/file.cu")]).unwrap_err();
    assert!(err.to_string().contains("no such file"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        run_bytes("random.cu", &bytes);
    }

    #[test]
    fn mutated_kernels_never_panic(edits in proptest::collection::vec((0usize..KERNEL.len(), "[{}()<>;,#\\\\/*a-z0-9 \\n\\\"']{0,4}"), 1..8)) {
        let mut text = KERNEL.to_string();
        for (at, insert) in edits {
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.insert_str(at, &insert);
        }
        run_text(&text);
    }
}
