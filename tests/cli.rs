//! The command line as a user meets it: exit codes and the plain-text report.

use std::process::Command;

fn warpdrf(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_warpdrf"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    let threads = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("thread ("))
        .count();
    assert_eq!(threads, 2, "{stdout}");
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
}
