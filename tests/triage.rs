//! Suppressions in source and baselines, as CI uses them: what fails the
//! run and what does not.

mod common;

use std::path::Path;

use common::warpdrf;

/// A fresh folder of this test's own, removed when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("warpdrf-triage-{name}-"))
        .tempdir()
        .expect("a scratch folder")
}

/// Each thread reads its neighbour's slot with no barrier after the writes:
/// one shared-memory race (write at line `W`, read at line `W + 1`).
fn racy(comment_above_kernel: &str, on_write: &str) -> String {
    format!(
        "{comment_above_kernel}
__global__ void neighbour(const float * in, float * out) {{
    __shared__ float s[128];
    s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];{on_write}
    out[blockIdx.x * 128 + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}}
"
    )
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("k.cu");
    std::fs::write(&path, text).expect("written");
    path.to_string_lossy().into_owned()
}

fn check(file: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let mut args = vec!["check", "--format", "json", "--block-dim", "128", file];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = warpdrf(&args);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (code, v, stderr)
}

fn statuses(v: &serde_json::Value) -> Vec<String> {
    v["kernels"][0]["alarms"]
        .as_array()
        .expect("alarms")
        .iter()
        .map(|a| {
            format!(
                "{}:{}",
                a["kind"].as_str().unwrap_or(""),
                a["status"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn an_unsuppressed_race_fails() {
    let dir = scratch("plain");
    let (code, v, _) = check(&write(dir.path(), &racy("", "")), &[]);
    assert_eq!(code, 1);
    assert_eq!(statuses(&v), ["memory/shared-race:open"]);
}

#[test]
fn a_suppression_on_the_line_with_a_reason_accepts_the_race() {
    let dir = scratch("line");
    let file = write(
        dir.path(),
        &racy(
            "",
            " // warpdrf-allow(memory/shared-race): the read value is only a hint",
        ),
    );
    let (code, v, _) = check(&file, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(statuses(&v), ["memory/shared-race:suppressed"]);
    assert_eq!(
        v["kernels"][0]["alarms"][0]["suppression"],
        "the read value is only a hint"
    );
    // The verdict stays what was proved.
    assert_eq!(v["kernels"][0]["memory"], "alarm");
    // Suppressed findings are not shown to people.
    let (code, stdout, _) = warpdrf(&["check", "--block-dim", "128", &file]);
    assert_eq!(code, 0);
    assert!(!stdout.contains("error[memory/shared-race]"), "{stdout}");
    assert!(stdout.contains("1 suppressed"), "{stdout}");
}

#[test]
fn a_suppression_above_the_kernel_covers_it_and_a_condition_name_covers_its_codes() {
    let dir = scratch("kernel");
    let file = write(
        dir.path(),
        &racy("// warpdrf-allow(memory): a deliberate benign race", ""),
    );
    let (code, v, _) = check(&file, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(statuses(&v), ["memory/shared-race:suppressed"]);
    // Another condition's name does not.
    let file = write(dir.path(), &racy("// warpdrf-allow(participation): not this one", ""));
    let (code, v, _) = check(&file, &[]);
    assert_eq!(code, 1);
    assert_eq!(statuses(&v), ["memory/shared-race:open"]);
}

#[test]
fn a_suppression_without_a_reason_is_reported_and_suppresses_nothing() {
    let dir = scratch("reasonless");
    let file = write(dir.path(), &racy("", " // warpdrf-allow(memory/shared-race)"));
    let (code, v, _) = check(&file, &[]);
    assert_eq!(code, 1);
    assert_eq!(statuses(&v), ["memory/shared-race:open"]);
    assert_eq!(v["suppression_problems"][0]["kind"], "suppression/missing-reason");
    let (_, stdout, _) = warpdrf(&["check", "--format", "short", "--block-dim", "128", &file]);
    assert!(stdout.contains("warning[suppression/missing-reason]"), "{stdout}");
    // An unknown code too.
    let file = write(dir.path(), &racy("", " // warpdrf-allow(shared-race): typo"));
    let (code, v, _) = check(&file, &[]);
    assert_eq!(code, 1);
    assert_eq!(v["suppression_problems"][0]["kind"], "suppression/unknown-code");
}

#[test]
fn a_baseline_fails_only_new_findings() {
    let dir = scratch("baseline");
    let baseline = dir.path().join("baseline.json").to_string_lossy().into_owned();
    let file = write(dir.path(), &racy("", ""));
    let (code, _, stderr) = check(&file, &["--write-baseline", &baseline]);
    assert_eq!(code, 0, "{stderr}");
    let (code, v, _) = check(&file, &["--baseline", &baseline]);
    assert_eq!(code, 0);
    assert_eq!(statuses(&v), ["memory/shared-race:baseline"]);
    // Lines moved down keep the fingerprint.
    let file = write(
        dir.path(),
        &format!("// a comment that moves the kernel\n\n{}", racy("", "")),
    );
    let (code, v, _) = check(&file, &["--baseline", &baseline]);
    assert_eq!(code, 0, "{v}");
    // A second race is new: it fails, and the old one does not.
    let text = racy("", "").replace(
        "    out[blockIdx.x",
        "    s[(threadIdx.x + 2) % 128] = 0.0f;\n    out[blockIdx.x",
    );
    let file = write(dir.path(), &text);
    let (code, v, _) = check(&file, &["--baseline", &baseline]);
    assert_eq!(code, 1);
    let st = statuses(&v);
    assert!(st.contains(&"memory/shared-race:baseline".to_string()), "{st:?}");
    assert!(st.contains(&"memory/shared-race:open".to_string()), "{st:?}");
    // A file that is not a baseline is an error.
    std::fs::write(&baseline, "not json").expect("written");
    let (code, _, stderr) = warpdrf(&["check", "--baseline", &baseline, &file]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
