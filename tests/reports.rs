//! Reviewed snapshots of every rendering (`human`, `short`, `json`,
//! `sarif`) for a handful of fixtures of each condition: a change to what
//! users see shows up as a snapshot diff to review (`cargo insta review`).

mod common;

/// The fixture's `// args:` flags.
fn fixture_args(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the fixture exists");
    text.lines()
        .take_while(|l| l.starts_with("//"))
        .filter_map(|l| l.strip_prefix("// args:"))
        .flat_map(|a| a.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

fn render(path: &str, format: &str) -> String {
    let extra = fixture_args(path);
    let mut args = vec!["check", "--color", "never", "--format", format];
    args.extend(extra.iter().map(String::as_str));
    args.push(path);
    common::warpdrf(&args).1
}

const FIXTURES: &[&str] = &[
    "fixtures/memory/tree_reduction_unsynced.cu",
    "fixtures/memory/warp_exchange_unsynced.cu",
    "fixtures/memory/tree_reduction_synced.cu",
    "fixtures/memory/cross_warp_after_syncwarp.cu",
    "fixtures/participation/shuffle_lane_guard.cu",
    "fixtures/participation/partial_mask.cu",
    "fixtures/participation/block_of_48.cu",
    "fixtures/participation/break_on_lane.cu",
    "fixtures/participation/syncthreads_after_return.cu",
];

fn name(path: &str, format: &str) -> String {
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path);
    let condition = path.split('/').nth(1).unwrap_or("");
    format!("{condition}__{stem}__{format}")
}

#[test]
fn human_reports() {
    for f in FIXTURES {
        insta::assert_snapshot!(name(f, "human"), render(f, "human"));
    }
}

#[test]
fn short_reports() {
    for f in FIXTURES {
        insta::assert_snapshot!(name(f, "short"), render(f, "short"));
    }
}

#[test]
fn json_reports() {
    for f in FIXTURES {
        insta::assert_snapshot!(name(f, "json"), render(f, "json"));
    }
}

#[test]
fn sarif_reports() {
    // The whole log once (rules and their help included), then the results.
    let first = FIXTURES[0];
    insta::assert_snapshot!(name(first, "sarif"), render(first, "sarif"));
    for f in &FIXTURES[1..] {
        let log: serde_json::Value = serde_json::from_str(&render(f, "sarif")).expect("SARIF is JSON");
        let results = serde_json::to_string_pretty(&log["runs"][0]["results"]).expect("JSON");
        insta::assert_snapshot!(name(f, "sarif_results"), results);
    }
}
