use super::*;

/// Preprocesses `src` as `main.cu` (with `files` beside it in a fresh folder).
fn pp_with(config: PpConfig, src: &str, files: &[(&str, &str)]) -> (SourceDb, Unit) {
    let dir = tempdir();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let main = dir.path().join("main.cu");
    std::fs::write(&main, src).unwrap();
    let mut db = SourceDb::new();
    let root = db.load(&main).unwrap();
    let mut session = Session::new(config);
    let unit = session.preprocess(&mut db, root);
    (db, unit)
}

/// A fresh folder, removed when dropped.
fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("warpdrf-pp-").tempdir().unwrap()
}

/// Tokens of `text` joined by single spaces: spacing between tokens is not part
/// of the contract, the token sequence is.
fn norm(text: &str) -> String {
    lex::lex(text)
        .iter()
        .map(|t| &text[t.start as usize..t.end as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The unit's tokens, normalised.
fn flat(unit: &Unit) -> String {
    let all: String = unit.fragments.iter().map(|f| f.text.clone() + "\n").collect();
    norm(&all)
}

fn pp(src: &str) -> String {
    let (_, unit) = pp_with(PpConfig::default(), src, &[]);
    flat(&unit)
}

macro_rules! assert_tokens {
    ($actual:expr, $expected:expr) => {
        assert_eq!($actual, norm($expected))
    };
}

#[test]
fn object_and_function_like_macros() {
    assert_tokens!(pp("#define N 4\nint a[N];"), "int a[4];");
    assert_tokens!(
        pp("#define MAX(a,b) ((a)>(b)?(a):(b))\nx = MAX(1, y+2);"),
        "x = ((1)>(y+2)?(1):(y+2));"
    );
    // A function-like macro name without `(` is left alone.
    assert_tokens!(pp("#define F(x) x\nint F;"), "int F;");
    // `(` after white space makes an object-like macro.
    assert_tokens!(pp("#define G (x)\nG"), "(x)");
}

#[test]
fn stringize_paste_and_variadics() {
    assert_tokens!(pp("#define S(x) #x\nS(a  +  \"b\")"), r#""a + \"b\"""#);
    assert_tokens!(
        pp("#define CAT(a,b) a##b\nCAT(foo,bar) CAT(,x) CAT(1,2)"),
        "foobar x 12"
    );
    assert_tokens!(
        pp("#define V(...) f(__VA_ARGS__)\nV() V(1) V(1, 2)"),
        "f() f(1) f(1, 2)"
    );
    assert_tokens!(
        pp("#define E(fmt, ...) p(fmt, ##__VA_ARGS__)\nE(a) E(a, b)"),
        "p(a) p(a, b)"
    );
    assert_tokens!(
        pp("#define O(a, ...) g(a __VA_OPT__(,) __VA_ARGS__)\nO(1) O(1, 2)"),
        "g(1 ) g(1 , 2)"
    );
    assert_tokens!(pp("#define N(args...) h(args)\nN(1, 2)"), "h(1, 2)");
}

#[test]
fn expansion_stops_at_hide_sets() {
    assert_tokens!(pp("#define foo foo + 1\nfoo"), "foo + 1");
    assert_tokens!(pp("#define a b\n#define b a\na b"), "a b");
    // Arguments are expanded before substitution; rescanning expands the result.
    assert_tokens!(
        pp("#define X 2\n#define ID(x) x\n#define TWICE(f, y) f(f(y))\nTWICE(ID, X)"),
        "2"
    );
    // The classic: `f(2)(9)` with a self-referential body.
    assert_tokens!(pp("#define f(a) a*g\n#define g(a) f(a)\nf(2)(9)"), "2*9*g");
}

#[test]
fn conditionals_follow_the_target() {
    let src =
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\nampere\n#elif defined(__HIP__)\nhip\n#else\nold\n#endif";
    assert_tokens!(pp(src), "ampere");
    let (_, unit) = pp_with(
        PpConfig {
            arch: "sm_70".into(),
            ..PpConfig::default()
        },
        src,
        &[],
    );
    assert_tokens!(flat(&unit), "old");
    let hip = PpConfig {
        target: Target::Hip,
        arch: "gfx942".into(),
        ..PpConfig::default()
    };
    let (_, unit) = pp_with(hip, src, &[]);
    assert_tokens!(flat(&unit), "hip");
    assert_tokens!(pp("#ifdef A\na\n#elifndef B\nnotb\n#endif"), "notb");
    assert_tokens!(pp("#if 0\n#if 1\nx\n#else\ny\n#endif\n#else\nz\n#endif"), "z");
}

#[test]
fn cuda_arch_names() {
    let arch = |a: &str| {
        PpConfig {
            arch: a.into(),
            ..PpConfig::default()
        }
        .cuda_arch()
    };
    assert_eq!(arch("sm_80"), Some(800));
    assert_eq!(arch("sm_120a"), Some(1200));
    assert_eq!(arch("compute_90"), Some(900));
    assert_eq!(arch("750"), Some(750));
    assert_eq!(arch("gfx942"), None);
}

#[test]
fn hip_gfx9_has_64_wide_wavefronts() {
    let hip = PpConfig {
        target: Target::Hip,
        arch: "gfx90a".into(),
        ..PpConfig::default()
    };
    assert_eq!(hip.physical_warp_size(), 64);
    let (_, unit) = pp_with(
        hip,
        "#if defined(__GFX9__) && __AMDGCN_WAVEFRONT_SIZE == 64\nwave64\n#endif",
        &[],
    );
    assert_tokens!(flat(&unit), "wave64");
}

#[test]
fn command_line_defines_and_undefines() {
    let config = PpConfig {
        defines: vec!["GGML_USE_HIP".into(), "N=7".into()],
        undefines: vec!["__CUDA_ARCH__".into()],
        ..PpConfig::default()
    };
    let (_, unit) = pp_with(
        config,
        "#ifdef GGML_USE_HIP\nhip N\n#endif\n#ifndef __CUDA_ARCH__\nhost\n#endif",
        &[],
    );
    assert_tokens!(flat(&unit), "hip 7 host");
}

#[test]
fn includes_are_followed_and_split_fragments() {
    let files = [
        ("common.cuh", "#pragma once\n#define W 32\nint common_decl;"),
        ("sub/helper.cuh", "#include \"../common.cuh\"\nint helper_decl = W;"),
    ];
    let (db, unit) = pp_with(
        PpConfig::default(),
        "#include \"sub/helper.cuh\"\n#include \"common.cuh\"\nint main_decl = W;",
        &files,
    );
    assert_tokens!(
        flat(&unit),
        "int common_decl; int helper_decl = 32; int main_decl = 32;"
    );
    let names: Vec<&str> = unit.fragments.iter().map(|f| db.name(f.file)).collect();
    assert_eq!(names.len(), 3);
    assert!(names[0].ends_with("common.cuh") && names[1].ends_with("helper.cuh") && names[2].ends_with("main.cu"));
}

#[test]
fn missing_quoted_includes_are_reported_and_system_headers_skipped() {
    let (_, unit) = pp_with(
        PpConfig::default(),
        "#include <cuda_runtime.h>\n#include \"cuda_fp16.h\"\n#include \"nowhere.h\"\nint x;",
        &[],
    );
    assert_tokens!(flat(&unit), "int x;");
    assert_eq!(unit.diagnostics.len(), 1);
    assert!(unit.diagnostics[0].message.contains("nowhere.h"));
}

#[test]
fn include_inside_braces_is_inlined() {
    let files = [("body.inc", "x = 1;")];
    let (_, unit) = pp_with(PpConfig::default(), "void f() {\n#include \"body.inc\"\n}", &files);
    assert_eq!(unit.fragments.len(), 1);
    assert_tokens!(flat(&unit), "void f() { x = 1; }");
}

#[test]
fn cached_inclusions_are_shared_between_units() {
    let dir = tempdir();
    std::fs::write(dir.path().join("h.cuh"), "#pragma once\n#define H 1\nint h;").unwrap();
    std::fs::write(dir.path().join("a.cu"), "#include \"h.cuh\"\nint a = H;").unwrap();
    std::fs::write(dir.path().join("b.cu"), "#include \"h.cuh\"\nint b = H;").unwrap();
    let mut db = SourceDb::new();
    let a = db.load(&dir.path().join("a.cu")).unwrap();
    let b = db.load(&dir.path().join("b.cu")).unwrap();
    let mut session = Session::new(PpConfig::default());
    let ua = session.preprocess(&mut db, a);
    let ub = session.preprocess(&mut db, b);
    assert!(Arc::ptr_eq(&ua.fragments[0], &ub.fragments[0]));
    // The replayed `#define` is in effect after the cached inclusion.
    assert_tokens!(flat(&ub), "int h; int b = 1;");
}

#[test]
fn source_map_points_at_original_text_and_macro_invocations() {
    let src = "#define IDX (threadIdx.x + 1)\n\nvoid k(float *x) {\n    x[IDX] = 0;\n}\n";
    let (db, unit) = pp_with(PpConfig::default(), src, &[]);
    let frag = &unit.fragments[0];
    let file = db.file(frag.file);
    // A verbatim token maps to itself.
    let at = frag.text.find("x[").unwrap() as u32;
    let o = frag.origin(at).unwrap();
    assert!(!o.from_macro);
    assert_eq!(file.line_col(o.span.start), (4, 5));
    // A token from the macro body maps to the invocation `IDX` on line 4.
    let at = frag.text.find("threadIdx").unwrap() as u32;
    let o = frag.origin(at).unwrap();
    assert!(o.from_macro);
    assert_eq!(file.line_col(o.span.start), (4, 7));
    assert_eq!(&file.text[o.span.start as usize..o.span.start as usize + 3], "IDX");
}

#[test]
fn directives_errors_do_not_stop_preprocessing() {
    let (_, unit) = pp_with(
        PpConfig::default(),
        "#if 1 +\na\n#endif\n#else\n#error stop\nb\n#if 1",
        &[],
    );
    assert_tokens!(flat(&unit), "b");
    let messages: Vec<&str> = unit.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert!(messages.iter().any(|m| m.contains("ends early")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("#else without #if")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("#error stop")), "{messages:?}");
    assert!(
        messages.iter().any(|m| m.contains("unterminated conditional")),
        "{messages:?}"
    );
}

#[test]
fn recursive_includes_stop_at_the_depth_limit() {
    let files = [("self.cuh", "#include \"self.cuh\"\nint s;")];
    let (_, unit) = pp_with(PpConfig::default(), "#include \"self.cuh\"", &files);
    assert!(unit.diagnostics.iter().any(|d| d.message.contains("nested deeper")));
}

#[test]
fn line_and_file_macros() {
    let out = pp("a\n__LINE__\n#define L __LINE__\nL");
    assert_tokens!(out, "a 2 4");
}

#[test]
fn a_logical_and_after_a_parenthesised_name_is_written_as_and() {
    // `t == (K) && j` would parse as a cast of `&&j` to the type `K`.
    let src = "#define ENTRY(k_) if (t == (k_) && j == 8) { return 1; }\n\
               int f(int t, int j) { ENTRY(KA) return (t) && j; }\n\
               int g(int x, int y) { decltype(x) && r = static_cast<int &&>(y); return ok(x) && y; }\n";
    let text = pp(src);
    assert!(text.contains("t == ( KA ) and j == 8"), "{text}");
    assert!(text.contains("return ( t ) and j"), "{text}");
    // After a name (a call, `decltype`) `&&` stays.
    assert!(text.contains("decltype ( x ) && r"), "{text}");
    assert!(text.contains("ok ( x ) && y"), "{text}");
}
