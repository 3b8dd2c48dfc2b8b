//! Long-running fuzzer of the front end (preprocess, parse, lower, check,
//! print): mutates seed kernels and random bytes for a time budget and fails
//! on the first panic, saving the input.
//!
//!   cargo run --release --example fuzz -- [--seconds N] [--seed S] [SEED_DIR…]
//!
//! Seeds: the fixtures, plus `.cu`/`.cuh` files under the given folders (for
//! example `$WARPDRF_LLAMA_DIR`). Prints the number of inputs run.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use warpdrf::driver::{self, Options};
use warpdrf::source::SourceDb;

/// xorshift64*: deterministic for a seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ";",
    ",",
    "::",
    "->",
    ".",
    "#if 0\n",
    "#endif\n",
    "#define X(a) a##a\n",
    "template <typename T>",
    "__global__",
    "__shared__",
    "extern",
    "__syncthreads();",
    "__shfl_xor_sync(0xffffffff, v, 1)",
    "if (threadIdx.x < 16)",
    "for (;;)",
    "while (1)",
    "return;",
    "break;",
    "continue;",
    "goto l;",
    "asm(\"bar.sync 0;\");",
    "[&](int i) { return i; }",
    "static_assert(false, \"\");",
    "constexpr",
    "sizeof(T)",
    "reinterpret_cast<int*>(p)",
    "\"",
    "'",
    "/*",
    "*/",
    "//",
    "\\\n",
    "0x",
    "1e",
    "...",
    "operator()",
    "~",
    "&&",
    "||",
    "?",
    ":",
    "__VA_ARGS__",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = if rng.below(10) == 0 {
        (0..rng.below(4096)).map(|_| rng.next() as u8).collect()
    } else {
        seeds[rng.below(seeds.len())].clone()
    };
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(data.len() + 1);
        match rng.below(7) {
            0 => data.truncate(at),
            1 => {
                let end = (at + rng.below(64)).min(data.len());
                data.drain(at..end);
            }
            2 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                data.splice(at..at, t.iter().copied());
            }
            3 => {
                if let Some(b) = data.get_mut(at) {
                    *b ^= 1 << rng.below(8);
                }
            }
            4 => {
                // Splice in a piece of another seed.
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                let to = (from + rng.below(512)).min(other.len());
                data.splice(at..at, other[from..to].iter().copied());
            }
            5 => {
                // Deep nesting.
                let depth = 1 + rng.below(3000);
                let (open, close) = [("(", ")"), ("{", "}"), ("#if 1\n", "#endif\n"), ("a<", ">")][rng.below(4)];
                let mut piece = open.repeat(depth).into_bytes();
                piece.extend(close.repeat(depth).into_bytes());
                data.splice(at..at, piece);
            }
            _ => {
                let end = (at + rng.below(256)).min(data.len());
                let copy: Vec<u8> = data[at..end].to_vec();
                data.splice(at..at, copy);
            }
        }
    }
    data
}

fn seeds_in(dir: &Path, out: &mut Vec<Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            seeds_in(&p, out);
        } else if p.extension().is_some_and(|x| x == "cu" || x == "cuh") {
            if let Ok(bytes) = std::fs::read(&p) {
                out.push(bytes);
            }
        }
    }
}

fn main() {
    let mut seconds = 60u64;
    let mut seed = 0x5eed_u64;
    let mut dirs: Vec<PathBuf> = vec![PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).expect("--seconds N"),
            "--seed" => seed = args.next().and_then(|s| s.parse().ok()).expect("--seed S"),
            other => dirs.push(PathBuf::from(other)),
        }
    }
    let mut seeds = Vec::new();
    for d in &dirs {
        seeds_in(d, &mut seeds);
    }
    assert!(!seeds.is_empty(), "no seed files");
    let budget = Duration::from_secs(seconds);
    let result = driver::with_big_stack(move || {
        panic::set_hook(Box::new(|_| {}));
        let mut rng = Rng(seed | 1);
        let start = Instant::now();
        let mut count = 0u64;
        let options = Options::default();
        while start.elapsed() < budget {
            let input = mutate(&mut rng, &seeds);
            let text = String::from_utf8_lossy(&input).into_owned();
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                let mut db = SourceDb::new();
                let id = db.add_text(&format!("fuzz-{count}.cu"), &text);
                let (entries, _) = driver::lower_files(&mut db, vec![id], Vec::new(), &options);
                let results = driver::check(&db, &entries, &options);
                for e in &entries {
                    for k in &e.kernels {
                        let _ = k.to_string();
                    }
                }
                let _ = warpdrf::report::json::check(&db, "cuda", 32, &results);
            }));
            count += 1;
            if outcome.is_err() {
                let path = std::env::temp_dir().join(format!("warpdrf-fuzz-crash-{count}.cu"));
                let _ = std::fs::write(&path, &input);
                return Err((count, path));
            }
        }
        Ok((count, start.elapsed()))
    });
    match result {
        Ok((count, elapsed)) => {
            println!("{count} inputs in {:.0} s, no panic", elapsed.as_secs_f64());
        }
        Err((count, path)) => {
            eprintln!("panic on input {count}, saved to {}", path.display());
            std::process::exit(1);
        }
    }
}
