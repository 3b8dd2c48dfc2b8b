//! Unit tests of lowering: one `lower(src)` helper, minimal kernels, checks on
//! the printed IR. Many are soundness checks of constant folding: a value
//! known on one path must not leak to another.

use crate::driver::{self, Options};
use crate::source::SourceDb;

/// Every lowered instantiation of every kernel in `src` (also for the
/// unit tests of later stages).
pub(crate) fn kernels(src: &str) -> Vec<crate::ir::Kernel> {
    let src = src.to_string();
    driver::with_big_stack(move || {
        let mut db = SourceDb::new();
        let id = db.add_text("unit.cu", &src);
        let (entries, _) = driver::lower_files(&mut db, vec![id], Vec::new(), &Options::default());
        entries.into_iter().flat_map(|e| e.kernels).collect()
    })
}

/// The IR of every kernel in `src` (and the unknowns' reasons).
fn lower(src: &str) -> String {
    kernels(src).iter().map(|k| k.to_string()).collect()
}

#[track_caller]
fn check(src: &str, has: &[&str], lacks: &[&str]) {
    let ir = lower(src);
    for h in has {
        assert!(ir.contains(h), "IR lacks `{h}`:\n{ir}");
    }
    for l in lacks {
        assert!(!ir.contains(l), "IR has `{l}`:\n{ir}");
    }
}

#[test]
fn a_constant_set_on_one_branch_does_not_reach_the_join() {
    check(
        "__global__ void k(int *x) { int v = 0; if (threadIdx.x < 4) { v = 5; } x[v] = 1; }",
        &["store x[+(i64)v."],
        &["store x[+20", "store x[+0:"],
    );
}

#[test]
fn a_constant_before_a_loop_is_not_assumed_inside_it() {
    check(
        "__global__ void k(int *x, int n) { int v = 0; for (int i = 0; i < n; ++i) { x[v] = 1; v = threadIdx.x; } }",
        &["store x[+(i64)v."],
        &["store x[+0:"],
    );
}

#[test]
fn straight_line_constants_fold() {
    check(
        "__global__ void k(int *x) { int v = 3; v = v * 4; x[v] = 1; }",
        &["store x[+48:4u] = 1"],
        &[],
    );
}

#[test]
fn struct_assignment_reads_the_old_fields() {
    check(
        "__global__ void k(float2 *x) { float2 v = x[threadIdx.x]; v = make_float2(v.y, v.x); x[threadIdx.x] = v; }",
        &["tmp."],
        &[],
    );
}

#[test]
fn overloads_are_chosen_by_argument_type() {
    let src = "__device__ int twice(int v) { return 2 * v; }\n\
               __device__ float twice(float v) { return v + v; }\n\
               __global__ void k(int *a, float *b) { a[0] = twice(3); b[0] = twice(1.5f); }";
    check(src, &["store a[+0:4u] = 6", "store b[+0:4u] = 3.0"], &[]);
}

#[test]
fn the_most_specialised_class_template_wins() {
    let src = "template <typename T, int N> struct S { static constexpr int v = 1; };\n\
               template <int N> struct S<float, N> { static constexpr int v = N; };\n\
               template <> struct S<float, 7> { static constexpr int v = 70; };\n\
               __global__ void k(int *x) { x[0] = S<int, 3>::v; x[1] = S<float, 3>::v; x[2] = S<float, 7>::v; }";
    check(
        src,
        &["store x[+0:4u] = 1", "store x[+4:4u] = 3", "store x[+8:4u] = 70"],
        &[],
    );
}

#[test]
fn struct_members_in_memory_have_byte_offsets() {
    let src = "struct P { char tag; double value; short n[3]; };\n\
               __global__ void k(P *p) { p[threadIdx.x].n[2] = 1; p[1].value = 2.0; }";
    check(
        src,
        &["store p[+((i64)threadIdx.x * 24) + 20:2u] = 1", "store p[+32:8u]"],
        &[],
    );
}

#[test]
fn a_std_pair_in_memory_is_its_two_members() {
    // `second` starts at its own alignment after `first`; the pair's size
    // rounds up to the larger alignment.
    let src = "#include <utility>\n\
               __global__ void k(std::pair<char, double> *p) { p[threadIdx.x].second = 2.0; p[1].first = 1; }";
    check(
        src,
        &["store p[+((i64)threadIdx.x * 16) + 8:8u]", "store p[+16:1u]"],
        &["offsetof"],
    );
}

#[test]
fn a_return_under_a_condition_goes_through_a_slot() {
    let src = "__device__ int pick(int v) { if (v < 0) { return 0; } return v; }\n\
               __global__ void k(int *x) { x[threadIdx.x] = pick(x[threadIdx.x]); }";
    check(src, &["return L", "ret."], &[]);
}

#[test]
fn a_constexpr_helper_folds_to_its_value() {
    let src = "constexpr __device__ int tiles(int n) { if (n > 64) { return n / 64; } return 1; }\n\
               __global__ void k(int *x) { constexpr int t = tiles(256); x[t] = t; }";
    check(src, &["store x[+16:4u] = 4"], &["return L"]);
}

#[test]
fn unsigned_arithmetic_wraps_and_signed_does_not_fold_across_overflow() {
    check(
        "__global__ void k(unsigned *x) { x[0] = 0u - 1u; }",
        &["store x[+0:4u] = 4294967295u"],
        &[],
    );
}

#[test]
fn a_helpers_shared_array_is_one_object_in_every_call() {
    let src = "__device__ void bump(int v) { __shared__ int cell[1]; cell[0] = v; }\n\
               __global__ void k() { bump(1); bump(2); }";
    let ir = lower(src);
    assert_eq!(ir.matches("object cell #").count(), 1, "{ir}");
    assert_eq!(ir.matches("store cell[+0:4u]").count(), 2, "{ir}");
}

#[test]
fn every_extern_shared_declaration_is_the_same_buffer() {
    let src = "__device__ void put(float v) { extern __shared__ float a[]; a[threadIdx.x] = v; }\n\
               __global__ void k() { extern __shared__ char b[]; put(1.0f); b[0] = 1; }";
    let ir = lower(src);
    assert_eq!(ir.matches("(DynamicShared)").count(), 1, "{ir}");
}

#[test]
fn code_after_an_unconditional_return_is_not_lowered() {
    check(
        "__global__ void k(int *x) { x[0] = 1; return; x[1] = 2; }",
        &["store x[+0:4u] = 1"],
        &["store x[+4"],
    );
}
