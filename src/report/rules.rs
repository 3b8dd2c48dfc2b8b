//! The checks: a stable code per kind of alarm and what `warpdrf rule CODE`
//! prints about it (what, why, an example, how to fix).

/// One kind of alarm.
pub struct Rule {
    pub code: &'static str,
    pub summary: &'static str,
    pub doc: &'static str,
}

use crate::verdict::codes::*;

pub const RULES: &[Rule] = &[
    Rule {
        code: SHARED_RACE,
        summary: "two threads of a block access one shared-memory byte, at least one writes, and nothing orders them",
        doc: "What: two threads of one block access the same byte of `__shared__` memory, at least one of them writes, and no block barrier (nor a `__syncwarp` both take part in, for threads of one warp) lies between the accesses.
Why: the accesses may happen in either order; the value read, or the value left, depends on scheduling. Shuffles, votes and `mma` exchange registers and order no memory.
Example:
    s[threadIdx.x] = x;
    y = s[threadIdx.x ^ 1];      // reads a neighbour's write: no barrier between
How to fix: put `__syncthreads()` between the write and the read (`__syncwarp()` when both threads are always in one warp), or exchange the value with a shuffle instead of memory.",
    },
    Rule {
        code: GLOBAL_RACE,
        summary: "two threads of a block access one global-memory byte, at least one writes, and nothing orders them",
        doc: "What: two threads of one block access the same byte of global memory (a pointer parameter's buffer), at least one writes, with no barrier between.
Why: as for shared memory, the order is not defined; the result depends on scheduling.
Example:
    out[0] += v;                 // every thread of the block updates one element
How to fix: let one thread write, reduce first (a warp or block reduction) and write once, or use an atomic (`atomicAdd`).",
    },
    Rule {
        code: INTER_BLOCK_RACE,
        summary: "threads of two blocks access one global-memory byte, at least one writes",
        doc: "What: threads of different blocks access the same byte of global memory and at least one writes. Nothing inside a kernel orders blocks, except a grid-wide barrier of a cooperative launch.
Why: blocks run in any order, also at once; the result depends on scheduling.
Example:
    out[threadIdx.x] = v;        // every block writes the same elements
How to fix: index by the block too (`blockIdx.x * blockDim.x + threadIdx.x`), use atomics, or split the work into two kernels.",
    },
    Rule {
        code: DIVERGENT_PRIMITIVE,
        summary: "a warp primitive runs under a condition that differs between lanes of its warp",
        doc: "What: a shuffle, vote, warp reduction, `__syncwarp` or `mma`/`ldmatrix` that names the whole warp runs where some lanes of the warp are and others are not: under a lane-dependent branch, after some lanes returned, or at an iteration some lanes do not reach.
Why: a full-mask primitive waits for lanes that never arrive (deadlock) or reads registers of lanes that did not write them; the cuda configuration of the WarpDRF contract asks every lane of the warp to take part.
Example:
    if (lane < 16) v += __shfl_xor_sync(0xffffffff, v, 8);
How to fix: move the primitive out of the branch (compute on all lanes, use the result where needed), or make the condition warp-uniform (test the warp index, a ballot, a reduction).",
    },
    Rule {
        code: DIVERGENT_BARRIER,
        summary: "a block barrier or block collective runs under a condition that differs between threads of the block",
        doc: "What: `__syncthreads()` (or a CUB block collective, a grid sync) is reached by some threads of the block and not by others: under a thread-dependent branch, or after some threads returned.
Why: the barrier waits for threads that never come; the behaviour is undefined (a hang or a barrier that does not order what it should).
Example:
    if (i >= n) return;
    __syncthreads();
How to fix: let every thread reach the barrier and guard the work instead (`if (i < n) { … }` around the accesses, not around the barrier).",
    },
    Rule {
        code: PARTIAL_MASK,
        summary: "a warp primitive's mask does not name every lane of the warp",
        doc: "What: the member mask of a `*_sync` primitive is not the full mask (32 ones; 64 with `--warp-size 64`), or comes from `__activemask()`.
Why: the cuda configuration asks every lane to take part with the full mask; a partial mask is only correct under a reconvergence model the code relies on but that CUDA does not promise, and `__activemask()` names the lanes that happen to be converged, not those that must be.
Example:
    v += __shfl_xor_sync(__activemask(), v, 1);
How to fix: run the primitive with all lanes and `0xffffffff` (select the lanes' contributions by value instead), or with a cooperative-groups tile of the size needed.",
    },
    Rule {
        code: PARTIAL_WARP,
        summary: "the block size is not a multiple of the warp size, so a warp primitive runs in a partial warp",
        doc: "What: the launch shape (flag, launch site, or any shape a symbolic launch allows) has a block whose thread count is not a multiple of the warp size, and a full-mask warp primitive runs in its last, partial warp.
Why: the lanes the mask names do not exist; the primitive's behaviour is undefined.
Example:
    k<<<blocks, 48>>>(…);        // warp 1 has 16 lanes; k shuffles with 0xffffffff
How to fix: launch a multiple of the warp size (round up and guard the work), or keep the primitive to complete warps (`if (threadIdx.x < 32)`). When the checker cannot see the launch, give the shape with `--block-dim`.",
    },
    Rule {
        code: DIVERGENT_LOOP,
        summary: "lanes of a warp (threads of a block) leave a loop that runs a collective in different iterations",
        doc: "What: a loop whose body runs a warp primitive (block barrier) has a trip count that differs between lanes of a warp (threads of a block): a lane-dependent bound or a lane-dependent `break`.
Why: in the last iterations only some lanes run the primitive, though each call names the whole warp (block).
Example:
    for (int i = lane; i < n; i += 32) v += __shfl_xor_sync(0xffffffff, v, 1);
How to fix: iterate over whole warps' worth of work (`for (base = 0; base < n; base += 32)`, guard the element), or break on a warp-uniform value (`__any_sync`).",
    },
    Rule {
        code: EARLY_EXIT,
        summary: "a thread leaves early (return inside a loop) before a collective the others run",
        doc: "What: some threads leave a loop past its end (`return`, an exit to an outer label) in an iteration where others stay, and a collective follows that the departed threads skip.
Why: the collective then runs without them, as in divergent-primitive.
Example:
    for (…) { if (bad(x)) return; }
    v = __reduce_add_sync(0xffffffff, v);
How to fix: record the condition in a flag, leave the loop with `break`, and skip the work (not the collective) afterwards.",
    },
];

/// The rule of a code.
pub fn find(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.code == code)
}

/// `warpdrf rule`: every code with its summary.
pub fn list() -> String {
    RULES.iter().map(|r| format!("{:36} {}\n", r.code, r.summary)).collect()
}

/// `warpdrf rule CODE`.
pub fn describe(rule: &Rule) -> String {
    format!("{}: {}\n\n{}\n", rule.code, rule.summary, rule.doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_says_what_why_example_and_fix() {
        for r in RULES {
            for part in ["What:", "Why:", "Example:", "How to fix:"] {
                assert!(r.doc.contains(part), "{} lacks {part}", r.code);
            }
        }
        let mut codes: Vec<&str> = RULES.iter().map(|r| r.code).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), RULES.len(), "codes are unique");
    }
}
