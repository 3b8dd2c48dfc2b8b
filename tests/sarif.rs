//! `--format sarif` against the SARIF 2.1.0 schema (OASIS, errata 01, kept
//! in `tests/data`), and what GitHub code scanning needs of it.

mod common;

use serde_json::Value;

fn sarif(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["check", "--format", "sarif"];
    all.extend_from_slice(args);
    let (code, text, _) = common::warpdrf(&all);
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (code, v)
}

fn schema() -> jsonschema::Validator {
    let text = include_str!("data/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_str(text).expect("the schema is JSON");
    jsonschema::draft4::new(&schema).expect("the schema compiles")
}

fn errors(validator: &jsonschema::Validator, log: &Value) -> Vec<String> {
    validator
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn sarif_validates_against_the_schema() {
    let validator = schema();
    let (code, log) = sarif(&[
        "--block-dim",
        "64",
        "fixtures/memory/tree_reduction_unsynced.cu",
        "fixtures/memory/tree_reduction_synced.cu",
        "fixtures/participation/shuffle_lane_guard.cu",
        "fixtures/participation/break_on_lane.cu",
    ]);
    assert_eq!(code, 1);
    let problems = errors(&validator, &log);
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    for r in warpdrf::report::rules::RULES {
        let rule = rules.iter().find(|x| x["id"] == r.code).expect("a rule per check");
        assert!(rule["help"]["text"].as_str().is_some_and(|t| t.contains("How to fix")));
    }
    let results = run["results"].as_array().expect("results");
    let race = results
        .iter()
        .find(|r| r["ruleId"] == "memory/shared-race")
        .expect("the race");
    assert_eq!(race["level"], "error");
    assert!(race["relatedLocations"][0]["physicalLocation"]["region"]["startLine"].is_i64());
    assert_eq!(
        race["properties"]["witness"]["threads"].as_array().map(Vec::len),
        Some(2)
    );
    assert!(race["partialFingerprints"]["warpdrf/v1"]
        .as_str()
        .is_some_and(|f| f.len() == 16));
    let uri = race["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str();
    assert_eq!(uri, Some("fixtures/memory/tree_reduction_unsynced.cu"));
    let diverges = results
        .iter()
        .find(|r| r["ruleId"] == "participation/divergent-primitive")
        .expect("the divergent shuffle");
    // The rule index points at the rule.
    let index = diverges["ruleIndex"].as_u64().expect("an index") as usize;
    assert_eq!(rules[index]["id"], "participation/divergent-primitive");
}

#[test]
fn the_schema_test_rejects_a_broken_log() {
    // The validation above can fail: a log without its version, and a
    // result with a level SARIF does not know, are rejected.
    let validator = schema();
    let (_, mut log) = sarif(&["--block-dim", "64", "fixtures/memory/tree_reduction_unsynced.cu"]);
    assert!(errors(&validator, &log).is_empty());
    let mut broken = log.clone();
    broken.as_object_mut().expect("an object").remove("version");
    assert!(!errors(&validator, &broken).is_empty());
    log["runs"][0]["results"][0]["level"] = Value::from("fatal");
    assert!(!errors(&validator, &log).is_empty());
}

#[test]
fn fingerprints_are_stable_and_distinct() {
    let run = || sarif(&["fixtures/memory/cross_warp_after_syncwarp.cu"]).1;
    let prints = |log: &Value| -> Vec<String> {
        log["runs"][0]["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                r["partialFingerprints"]["warpdrf/v1"]
                    .as_str()
                    .expect("a fingerprint")
                    .to_string()
            })
            .collect()
    };
    let first = prints(&run());
    assert!(first.len() >= 2);
    let mut unique = first.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), first.len(), "{first:?}");
    assert_eq!(first, prints(&run()));
}
