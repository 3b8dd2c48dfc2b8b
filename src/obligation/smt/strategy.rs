//! The strategy of a new solver's first check, cut, with `--lean-solvers`,
//! to the theories its query can be in.
//!
//! Z3 builds the whole first-check strategy (every logic's branch) for each
//! new solver, and resets every branch after the solver's first check:
//! with all of the whole strategy's branches ([`Theories::ALL`]) a solver costs about
//! 2.7 ms to make and check once, with those a query of integers and
//! uninterpreted functions can take 1.5 ms (this project's machines; the
//! audit of ggml makes about 2,450 solvers: 5% of its CPU). A branch is
//! left out only where its probe cannot hold: Z3 probes the query after
//! `simplify`, which removes operations but adds no bit-vector, array,
//! real, division or product of two variables. Each query takes the branch
//! it took with the whole strategy.
//!
//! The search is nonetheless not the same, so the cut is not the default:
//! Z3 counts building and resetting the branches as work (each check's
//! share of the budget moves), and where Z3 places its terms moves with
//! what it builds. On ggml: 225.7 M units of solver work instead of
//! 223.1 M, and soft_max_f32's memory alarm, found at the edge of its
//! budget, becomes unknown. Without the flag, solvers are made where and
//! as they always were, and the audit is the same to the byte.
//!
//! The strategy is Z3's global `tactic.default_tactic`, read when a solver
//! receives its first assertion: setting it and that assertion happen
//! under one lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use z3::ast::{Ast, Int};
use z3::{FuncDecl, Solver, Sort};
use z3_sys::{Z3_ast, Z3_context, Z3_func_decl, Z3_sort};

/// Z3's kinds as the linked library numbers them (its enums read as plain
/// integers: a kind the bindings' enum lacks would be undefined behaviour).
#[allow(clashing_extern_declarations)]
mod raw {
    use super::*;
    extern "C" {
        pub fn Z3_get_ast_kind(c: Z3_context, a: Z3_ast) -> u32;
        pub fn Z3_get_decl_kind(c: Z3_context, d: Z3_func_decl) -> u32;
        pub fn Z3_get_sort_kind(c: Z3_context, s: Z3_sort) -> u32;
    }
}

// `Z3_ast_kind`, `Z3_sort_kind` and the families of `Z3_decl_kind`, fixed
// in Z3's API since 4.0.
const NUMERAL_AST: u32 = 0;
const APP_AST: u32 = 1;
const BOOL_SORT: u32 = 1;
const INT_SORT: u32 = 2;
const REAL_SORT: u32 = 3;
const BV_SORT: u32 = 4;
const ARRAY_SORT: u32 = 5;
/// `Z3_OP_TRUE` … `Z3_OP_OEQ`.
const BASIC: std::ops::RangeInclusive<u32> = 0x100..=0x10b;
const OP_UMINUS: u32 = 0x208;
const OP_MUL: u32 = 0x209;
/// `Z3_OP_DIV`, `IDIV`, `REM`, `MOD`.
const DIVISIONS: std::ops::RangeInclusive<u32> = 0x20a..=0x20d;
/// `Z3_OP_TO_REAL`, `TO_INT`, `IS_INT`.
const REALS: std::ops::RangeInclusive<u32> = 0x20e..=0x210;
const OP_POWER: u32 = 0x211;
/// `Z3_OP_ANUM` … `Z3_OP_SUB` (numerals, comparisons, sums).
const LINEAR: std::ops::RangeInclusive<u32> = 0x200..=0x207;
/// Arrays and sets.
const ARRAYS: std::ops::RangeInclusive<u32> = 0x300..=0x3ff;
/// Bit-vectors (`int2bv` and `bv2int` among them).
const BIT_VECTORS: std::ops::RangeInclusive<u32> = 0x400..=0x4ff;

/// What a query holds, as far as the probes of the first-check strategy
/// tell its branches apart. Each is "may hold": more is always safe (the
/// branch is kept).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct Theories {
    bit_vectors: bool,
    arrays: bool,
    /// Uninterpreted functions (constants are in every branch's logic).
    functions: bool,
    /// An uninterpreted function of Booleans only (the only kind of
    /// application, besides bit-vectors and arrays, that `is-qfaufbv`
    /// accepts).
    boolean_functions: bool,
    /// A product of two non-constants, a division by one, a power.
    nonlinear: bool,
    /// `div`, `mod`, `rem` (linear by a constant, but outside `is-qflia`).
    divisions: bool,
    reals: bool,
    /// Anything else (quantifiers, other sorts or operations): the whole
    /// strategy.
    other: bool,
}

impl Theories {
    /// Every branch: the strategy as it always was. Z3 4.8.12's default
    /// strategy (`mk_default_tactic` and its preamble) for queries over
    /// integers, Booleans and functions, the branches for reals and
    /// floating point (which these queries never take) left to the SMT
    /// core. With all of Z3's default branches a solver costs about 11 ms
    /// to make and check once, with this 4.5 ms (`Solver::new`; measured on
    /// this project's machines), and the audit of ggml makes about 3,700
    /// solvers. Its verdicts were the same on all 142 kernels; its CPU time
    /// 17% less. The bit-vector branches stay: some queries take them
    /// (soft_max_f32 and rwkv_wkv_f32 lose their alarms without), and the
    /// propositional one, which the default takes first, too.
    pub(super) const ALL: Theories = Theories {
        bit_vectors: true,
        arrays: true,
        functions: true,
        boolean_functions: true,
        nonlinear: true,
        divisions: true,
        reals: true,
        other: true,
    };

    /// Also nonlinear: a query whose abstractions of products or divisions
    /// may later get their exact definitions (Z3 falls back on the first
    /// check's strategy when its incremental core gives up on a later check).
    pub(super) fn with_nonlinear(mut self, nonlinear: bool) -> Theories {
        self.nonlinear |= nonlinear;
        self
    }

    fn union(self, o: Theories) -> Theories {
        Theories {
            bit_vectors: self.bit_vectors | o.bit_vectors,
            arrays: self.arrays | o.arrays,
            functions: self.functions | o.functions,
            boolean_functions: self.boolean_functions | o.boolean_functions,
            nonlinear: self.nonlinear | o.nonlinear,
            divisions: self.divisions | o.divisions,
            reals: self.reals | o.reals,
            other: self.other | o.other,
        }
    }

    /// The theories of `asts` (in the current context).
    pub(super) fn of<'a, A: Ast + 'a>(asts: impl IntoIterator<Item = &'a A>) -> Theories {
        let c = z3::Context::thread_local().get_z3_context();
        let uninterpreted = uninterpreted_kind();
        let mut walk = Walk {
            c,
            uninterpreted,
            seen: crate::hash::HashSet::default(),
            found: Theories::default(),
        };
        for a in asts {
            walk.visit(a.get_z3_ast());
        }
        walk.found
    }

    /// The theories of a query written in SMT-LIB (as `Solver::to_smt2`
    /// writes it), read from its words: more rather than fewer (a name that
    /// spells a sort adds its theory). Products of two variables are not
    /// told apart from those by a constant: see [`Self::with_nonlinear`].
    pub(super) fn of_text(text: &str) -> Theories {
        let has = |w: &str| text.contains(w);
        let mut t = Theories {
            bit_vectors: has("BitVec") || has("int2bv") || has("bv2int"),
            arrays: has("Array"),
            reals: has("Real") || has("to_int") || has("is_int"),
            divisions: has("(div ") || has("(mod ") || has("(rem "),
            other: has("forall")
                || has("exists")
                || has("declare-sort")
                || has("declare-datatype")
                || has("FloatingPoint")
                || has("RoundingMode")
                || has("String")
                || has("Seq"),
            ..Theories::default()
        };
        for line in text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("(declare-fun "))
        {
            // `(declare-fun f (Int Bool) Int)`: arguments make a function.
            // (A name between bars may hold anything but a bar.)
            let after_name = match line.strip_prefix('|') {
                Some(quoted) => quoted.split_once('|').map(|(_, rest)| rest),
                None => line.split_once(char::is_whitespace).map(|(_, rest)| rest),
            };
            let Some((domain, range)) = after_name
                .and_then(|rest| rest.trim_start().strip_prefix('('))
                .and_then(|rest| rest.split_once(')'))
            else {
                t.other = true;
                continue;
            };
            let domain: Vec<&str> = domain.split_whitespace().collect();
            if !domain.is_empty() {
                t.functions = true;
                if domain.iter().all(|d| *d == "Bool") && range.trim().trim_end_matches(')').trim() == "Bool" {
                    t.boolean_functions = true;
                }
            }
        }
        t.nonlinear = t.divisions;
        t
    }

    /// The first-check strategy with the branches these theories can take
    /// (with `other`, every branch: [`Theories::ALL`]'s is the whole one).
    pub(super) fn strategy(self) -> String {
        let t = self;
        // In the whole strategy's order: (kept, probe, tactic).
        let branches = [
            (true, "(and is-propositional (not produce-proofs))", "qffd"),
            (t.bit_vectors, "is-qfbv", "qfbv"),
            (
                t.bit_vectors || t.arrays || t.boolean_functions,
                "is-qfaufbv",
                "qfaufbv",
            ),
            (true, "is-qflia", "qflia"),
            (t.functions || t.arrays, "is-qfauflia", "qfauflia"),
            (t.reals, "is-qflra", "smt"),
            (t.reals, "is-qfnra", "smt"),
            (t.nonlinear, "is-qfnia", "qfnia"),
            (t.divisions || t.reals, "is-lira", "lira"),
            (t.reals, "is-nra", "smt"),
            (t.other, "is-qffp", "smt"),
            (t.other, "is-qffplra", "smt"),
        ];
        let kept: Vec<_> = branches.iter().filter(|b| b.0).collect();
        let mut s = String::from("(then simplify ");
        for (_, probe, tactic) in &kept {
            s.push_str(&format!("(cond {probe} {tactic} "));
        }
        s.push_str(FALLBACK);
        s.push_str(&")".repeat(kept.len() + 1));
        s
    }
}

struct Walk {
    c: Z3_context,
    uninterpreted: u32,
    seen: crate::hash::HashSet<usize>,
    found: Theories,
}

impl Walk {
    fn sort_kind(&self, a: Z3_ast) -> Option<u32> {
        // SAFETY: `a` is a live term of the current context.
        unsafe { z3_sys::Z3_get_sort(self.c, a).map(|s| raw::Z3_get_sort_kind(self.c, s)) }
    }

    fn constant(&self, a: Z3_ast) -> bool {
        // SAFETY: as above.
        unsafe {
            match raw::Z3_get_ast_kind(self.c, a) {
                NUMERAL_AST => true,
                // `(- 5)`.
                APP_AST => {
                    let Some(app) = z3_sys::Z3_to_app(self.c, a) else {
                        return false;
                    };
                    let Some(d) = z3_sys::Z3_get_app_decl(self.c, app) else {
                        return false;
                    };
                    raw::Z3_get_decl_kind(self.c, d) == OP_UMINUS
                        && z3_sys::Z3_get_app_num_args(self.c, app) == 1
                        && z3_sys::Z3_get_app_arg(self.c, app, 0)
                            .is_some_and(|x| raw::Z3_get_ast_kind(self.c, x) == NUMERAL_AST)
                }
                _ => false,
            }
        }
    }

    fn visit(&mut self, a: Z3_ast) {
        if !self.seen.insert(a.as_ptr() as usize) {
            return;
        }
        let mut t = Theories::default();
        match self.sort_kind(a) {
            Some(BOOL_SORT | INT_SORT) => {}
            Some(REAL_SORT) => t.reals = true,
            Some(BV_SORT) => t.bit_vectors = true,
            Some(ARRAY_SORT) => t.arrays = true,
            _ => t.other = true,
        }
        let args = self.application(a, &mut t);
        self.found = self.found.union(t);
        for x in args {
            self.visit(x);
        }
    }

    /// What application `a` adds to `t`, and its arguments (none for a
    /// numeral; anything but an application is `other`).
    fn application(&self, a: Z3_ast, t: &mut Theories) -> Vec<Z3_ast> {
        // SAFETY: `a` is a live term of the current context, and so are
        // its arguments while it is.
        unsafe {
            match raw::Z3_get_ast_kind(self.c, a) {
                NUMERAL_AST => return Vec::new(),
                APP_AST => {}
                _ => {
                    t.other = true;
                    return Vec::new();
                }
            }
            let Some((app, decl)) =
                z3_sys::Z3_to_app(self.c, a).and_then(|app| Some((app, z3_sys::Z3_get_app_decl(self.c, app)?)))
            else {
                t.other = true;
                return Vec::new();
            };
            let n = z3_sys::Z3_get_app_num_args(self.c, app);
            let args: Vec<Z3_ast> = (0..n).filter_map(|i| z3_sys::Z3_get_app_arg(self.c, app, i)).collect();
            let op = raw::Z3_get_decl_kind(self.c, decl);
            match op {
                _ if BASIC.contains(&op) || LINEAR.contains(&op) || op == OP_UMINUS => {}
                OP_MUL => t.nonlinear = args.iter().filter(|&&x| !self.constant(x)).count() > 1,
                _ if DIVISIONS.contains(&op) => {
                    t.divisions = true;
                    t.nonlinear = args.get(1).is_none_or(|&d| !self.constant(d));
                }
                OP_POWER => t.nonlinear = true,
                _ if REALS.contains(&op) => t.reals = true,
                _ if ARRAYS.contains(&op) => t.arrays = true,
                _ if BIT_VECTORS.contains(&op) => t.bit_vectors = true,
                _ if op == self.uninterpreted => {
                    if n > 0 {
                        t.functions = true;
                        let boolean = |x: &Z3_ast| self.sort_kind(*x) == Some(BOOL_SORT);
                        t.boolean_functions = boolean(&a) && args.iter().all(boolean);
                    }
                }
                _ => t.other = true,
            }
            args
        }
    }
}

/// `Z3_OP_UNINTERPRETED` as the linked Z3 numbers it (it moved between
/// versions): the kind of a function this makes.
fn uninterpreted_kind() -> u32 {
    static KIND: OnceLock<u32> = OnceLock::new();
    // In a context of its own: terms made in a query's context move its
    // search.
    *KIND.get_or_init(|| {
        z3::with_z3_config(&z3::Config::new(), || {
            let f = FuncDecl::new("f", &[&Sort::int()], &Sort::int());
            let app = f.apply(&[&Int::from_i64(0)]);
            let c = z3::Context::thread_local().get_z3_context();
            // SAFETY: `app` is a live application of the current context.
            unsafe {
                z3_sys::Z3_to_app(c, app.get_z3_ast())
                    .and_then(|a| z3_sys::Z3_get_app_decl(c, a))
                    .map_or(u32::MAX, |d| raw::Z3_get_decl_kind(c, d))
            }
        })
    })
}

/// Whether solvers get their cut strategies (`--lean-solvers`): off, each
/// gets the whole one, and the search is as it always was.
static LEAN: AtomicBool = AtomicBool::new(false);

/// Cut strategies from now on, or not (see [`LEAN`]).
pub fn set_lean(on: bool) {
    LEAN.store(on, Ordering::Relaxed);
}

/// The strategy Z3's global parameter holds now (`None`: not set yet).
static SET: Mutex<Option<Theories>> = Mutex::new(None);

/// Runs `first`, which makes a solver's strategy (its first assertion,
/// push or check), with the strategy for `theories` where solvers are lean
/// (see [`LEAN`]; `theories` is read only then), else with the whole one.
pub(super) fn first_assertion<R>(theories: impl FnOnce() -> Theories, first: impl FnOnce() -> R) -> R {
    let lean = LEAN.load(Ordering::Relaxed);
    with_strategy(if lean { theories() } else { Theories::ALL }, first)
}

/// Runs `first` with the strategy for `theories`.
fn with_strategy<R>(theories: Theories, first: impl FnOnce() -> R) -> R {
    let mut set = SET.lock().unwrap_or_else(|p| p.into_inner());
    if *set != Some(theories) {
        z3::set_global_param("tactic.default_tactic", &theories.strategy());
        *set = Some(theories);
    }
    first()
}

/// Makes the strategy of `solver` (new, without assertions) for
/// `theories` now. (Printing the solver makes it; reading its assertions
/// would too, but would also make and free Z3 objects, which moves where
/// Z3 puts its next terms.)
pub(super) fn make(solver: &Solver, theories: impl FnOnce() -> Theories) {
    first_assertion(theories, || solver.to_string());
}

/// The strategy's last branch, taken by what no probe claims (integers with
/// uninterpreted functions and divisions, say).
const FALLBACK: &str = "(then simplify propagate-values \
     (using-params ctx-simplify :max_depth 30 :max_steps 5000000) \
     (using-params simplify :pull_cheap_ite true :push_ite_arith false :local_ctx true \
                            :local_ctx_limit 10000000 :hoist_ite true) \
     solve-eqs elim-uncnstr (using-params simplify :arith_lhs true) smt)";

#[cfg(test)]
mod tests {
    use super::*;

    fn x() -> Int {
        Int::new_const("x")
    }

    /// A solver made with the strategy for `t`, lean or not.
    fn cut(t: Theories) -> Solver {
        let s = Solver::new();
        with_strategy(t, || s.to_string());
        s
    }

    #[test]
    fn a_linear_query_of_integers_keeps_the_propositional_and_linear_branches_only() {
        let q = [x().gt(Int::from_i64(3)), (x() * Int::from_i64(2)).lt(Int::from_i64(10))];
        let t = Theories::of(&q);
        assert_eq!(t, Theories::default());
        let s = t.strategy();
        assert!(s.contains("is-qflia qflia") && s.contains("qffd"), "{s}");
        for gone in ["qfbv", "qfauflia", "qfnia", "lira"] {
            assert!(!s.contains(gone), "{gone} in {s}");
        }
    }

    #[test]
    fn functions_products_divisions_and_bit_vectors_keep_their_branches() {
        let f = FuncDecl::new("f", &[&Sort::int()], &Sort::int());
        let fx = f.apply(&[&x()]).as_int().expect("an integer");
        let y = Int::new_const("y");
        let with_function = Theories::of(&[fx.eq(Int::from_i64(1))]);
        assert!(with_function.functions && !with_function.nonlinear);
        assert!(with_function.strategy().contains("is-qfauflia qfauflia"));
        let product = Theories::of(&[(x() * y.clone()).eq(Int::from_i64(6))]);
        assert!(product.nonlinear && product.strategy().contains("is-qfnia qfnia"));
        let by_constant = Theories::of(&[x().modulo(Int::from_i64(4)).eq(Int::from_i64(1))]);
        assert!(by_constant.divisions && !by_constant.nonlinear);
        assert!(by_constant.strategy().contains("is-lira lira"));
        let by_variable = Theories::of(&[x().div(&y).eq(Int::from_i64(1))]);
        assert!(by_variable.nonlinear);
        let bits = Theories::of(&[z3::ast::BV::from_int(&x(), 8).bvugt(z3::ast::BV::from_u64(3, 8))]);
        assert!(bits.bit_vectors && bits.strategy().contains("is-qfbv qfbv"));
    }

    /// Z3 falls back to its default strategy, silently, when the one set
    /// does not parse or names no tactic: every solver would then cost its
    /// full price again. So: balanced, and every name one Z3 knows.
    fn assert_parses(strategy: &str) {
        let mut depth = 0i32;
        for c in strategy.chars() {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            assert!(depth >= 0, "a ')' closes nothing in {strategy}");
        }
        assert_eq!(depth, 0, "unbalanced parentheses in {strategy}");
        let tactics: Vec<String> = z3::Tactic::list_all().into_iter().filter_map(Result::ok).collect();
        let probes: Vec<String> = z3::Probe::list_all().into_iter().filter_map(Result::ok).collect();
        let combinators = ["then", "cond", "using-params", "and", "not"];
        let words = strategy
            .split(|c: char| c == '(' || c == ')' || c.is_whitespace())
            .filter(|w| {
                !w.is_empty() && !w.starts_with(':') && w.parse::<u64>().is_err() && *w != "true" && *w != "false"
            });
        let mut checked = 0;
        for w in words {
            assert!(
                combinators.contains(&w) || tactics.iter().any(|t| t == w) || probes.iter().any(|p| p == w),
                "{w} is no tactic or probe of this Z3"
            );
            checked += 1;
        }
        assert!(checked > 10, "the strategy names its tactics");
        // A name that is not one is refused (the check can fail).
        assert!(!tactics.iter().any(|t| t == "qflia-typo"));
    }

    #[test]
    fn the_whole_first_check_strategy_parses_and_names_known_tactics_and_probes() {
        assert_parses(&Theories::ALL.strategy());
    }

    #[test]
    fn the_theories_of_a_query_in_smt_lib_are_those_of_its_terms() {
        let f = FuncDecl::new("f", &[&Sort::int()], &Sort::int());
        let fx = f.apply(&[&x()]).as_int().expect("an integer");
        let queries = [
            vec![x().gt(Int::from_i64(3))],
            vec![fx.eq(Int::from_i64(1))],
            vec![x().modulo(Int::from_i64(4)).eq(Int::from_i64(1))],
            vec![z3::ast::BV::from_int(&x(), 8).bvugt(z3::ast::BV::from_u64(3, 8))],
        ];
        for q in queries {
            let s = Solver::new();
            for a in &q {
                s.assert(a);
            }
            let (read, walked) = (Theories::of_text(&s.to_smt2()), Theories::of(&q));
            // The text's reading may say more (a division is taken as
            // nonlinear), never less.
            assert_eq!(read.union(walked), read, "{}", s.to_smt2());
        }
        let quoted = "(declare-fun |a(b) c| (Int) Int)\n(declare-fun |p q| () Int)\n";
        assert!(Theories::of_text(quoted).functions && !Theories::of_text(quoted).other);
        assert!(Theories::of_text("(declare-fun g (Bool) Bool)\n").boolean_functions);
        assert!(Theories::of_text("(assert (forall ((y Int)) (> y 0)))").other);
    }

    #[test]
    fn anything_else_is_the_whole_strategy() {
        // Every branch, in Z3's order.
        let whole = Theories::ALL.strategy();
        let probes = [
            "is-propositional",
            "is-qfbv",
            "is-qfaufbv",
            "is-qflia",
            "is-qfauflia",
            "is-qflra",
            "is-qfnra",
            "is-qfnia",
            "is-lira",
            "is-nra",
            "is-qffp",
            "is-qffplra",
        ];
        let at: Vec<usize> = probes
            .iter()
            .map(|p| whole.find(&format!("{p} ")).unwrap_or_else(|| panic!("{p} in {whole}")))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{whole}");
        let bits = z3::ast::BV::new_const("b", 8);
        let quantified = z3::ast::forall_const(&[&x()], &[], &x().ge(Int::from_i64(0)));
        assert!(Theories::of(&[quantified]).other);
        // Bit-vectors are a theory of their own, not something else.
        assert!(!Theories::of(&[bits.bvugt(z3::ast::BV::from_u64(1, 8))]).other);
    }

    #[test]
    fn every_cut_strategy_parses_names_known_tactics_and_decides() {
        // All 2^7 combinations of the theories but `other`.
        for bits in 0u32..128 {
            let b = |i: u32| bits & (1 << i) != 0;
            let t = Theories {
                bit_vectors: b(0),
                arrays: b(1),
                functions: b(2),
                boolean_functions: b(3),
                nonlinear: b(4),
                divisions: b(5),
                reals: b(6),
                other: false,
            };
            assert_parses(&t.strategy());
            let q = [x().gt(Int::from_i64(3)), x().lt(Int::from_i64(5))];
            let s = cut(t);
            for a in &q {
                s.assert(a);
            }
            assert_eq!(s.check(), z3::SatResult::Sat, "{}", t.strategy());
        }
    }

    #[test]
    fn a_solver_with_a_cut_strategy_decides_as_the_whole_one() {
        let q = vec![x().gt(Int::from_i64(3)), x().lt(Int::from_i64(5))];
        let s = cut(Theories::of(&q));
        for a in &q {
            s.assert(a);
        }
        assert_eq!(s.check(), z3::SatResult::Sat);
        let m = s.get_model().expect("a model");
        assert_eq!(m.eval(&x(), true).and_then(|v| v.as_i64()), Some(4));
        let q = [x().gt(Int::from_i64(3)), x().lt(Int::from_i64(4))];
        let none = cut(Theories::of(&q));
        for a in &q {
            none.assert(a);
        }
        assert_eq!(none.check(), z3::SatResult::Unsat);
    }
}
