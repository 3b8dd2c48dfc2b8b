//! What the integration tests share: running the built command.

use std::process::Command;

/// Runs `warpdrf ARGS` in the crate's root without colour: (exit status,
/// standard output, standard error).
pub fn warpdrf(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_warpdrf"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("standard output is UTF-8"),
        String::from_utf8(out.stderr).expect("standard error is UTF-8"),
    )
}
