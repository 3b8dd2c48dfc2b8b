//! `--format sarif`: SARIF 2.1.0, as GitHub code scanning and editors read
//! it. One rule per check code with its documentation; one result per alarm
//! (the other access in `relatedLocations`, the witness in `properties`) and
//! per reason a condition stayed undecided; stable `partialFingerprints`
//! (line-independent, `triage::fingerprint`); suppressions in source as SARIF
//! suppressions; baseline states when a baseline was given.

use serde_json::{json, Value};
use serde_sarif::sarif::{
    ArtifactLocation, Invocation, Location, LogicalLocation, Message, MultiformatMessageString, PhysicalLocation,
    PropertyBag, Region, ReportingConfiguration, ReportingDescriptor, Result as SarifResult, ResultLevel, Run, Sarif,
    Suppression, Tool, ToolComponent,
};

use super::rules::{Rule, RULES};
use crate::source::{SourceDb, Span};
use crate::triage::{Disposition, Finding, Report, MISSING_REASON, UNKNOWN, UNKNOWN_CODE};

/// The rules besides the checks: undecided conditions and bad suppressions.
const EXTRA_RULES: &[Rule] = &[
    Rule {
        code: UNKNOWN,
        summary: "a condition could not be decided (a construct not modelled, or the solver's limit)",
        doc: "What: the checker could neither prove the condition nor find a witness: the kernel uses something it does not model, or an obligation ran into its limit.
Why: warpdrf never reports `pass` for what it did not prove; an undecided condition is not a pass.
Example:
    asm volatile(\"...\");        // inline assembly is not modelled
How to fix: give the launch shape (`--block-dim`), raise `--timeout-ms`, or accept it with `// warpdrf-allow(unknown): reason` after checking the kernel by hand.",
    },
    Rule {
        code: MISSING_REASON,
        summary: "a suppression gives no reason",
        doc: "What: a `warpdrf-allow(CODE)` comment without `: reason`.
Why: a suppression is a claim that the finding is safe; without the argument a reviewer cannot check it. It suppresses nothing.
Example:
    s[i] = v; // warpdrf-allow(memory/shared-race)
How to fix: say why: `// warpdrf-allow(memory/shared-race): each warp writes its own slot`.",
    },
    Rule {
        code: UNKNOWN_CODE,
        summary: "a suppression names no known check",
        doc: "What: a `warpdrf-allow(…)` comment whose codes are not check codes, condition names (`memory`, `participation`) or `unknown`, or that has no parentheses.
Why: it suppresses nothing, probably not what was meant.
Example:
    // warpdrf-allow(shared-race): …
How to fix: use a code from `warpdrf rule`, e.g. `memory/shared-race`.",
    },
];

/// Every rule SARIF lists, checks first.
fn all_rules() -> impl Iterator<Item = &'static Rule> {
    RULES.iter().chain(EXTRA_RULES)
}

fn rule_index(code: &str) -> i64 {
    all_rules().position(|r| r.code == code).map_or(-1, |i| i as i64)
}

/// `memory/shared-race` → `SharedRace`.
fn rule_name(code: &str) -> String {
    let last = code.rsplit('/').next().unwrap_or(code);
    last.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

fn descriptor(rule: &Rule) -> ReportingDescriptor {
    let level = if rule.code == UNKNOWN { "note" } else { "error" };
    ReportingDescriptor::builder()
        .id(rule.code)
        .name(rule_name(rule.code))
        .short_description(MultiformatMessageString::builder().text(rule.summary).build())
        .full_description(MultiformatMessageString::builder().text(rule.summary).build())
        .help(
            MultiformatMessageString::builder()
                .text(rule.doc)
                .markdown(help_markdown(rule))
                .build(),
        )
        .default_configuration(ReportingConfiguration::builder().level(json!(level)).build())
        .build()
}

/// The rule's doc with its example as a code block.
fn help_markdown(rule: &Rule) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in rule.doc.lines() {
        let code_line = line.starts_with("    ");
        if code_line && !in_code {
            out.push_str("```cuda\n");
            in_code = true;
        } else if !code_line && in_code {
            out.push_str("```\n");
            in_code = false;
        }
        if code_line {
            out.push_str(&line[4..]);
            out.push('\n');
        } else {
            out.push_str(line);
            out.push_str("\n\n");
        }
    }
    if in_code {
        out.push_str("```\n");
    }
    out
}

/// Paths as given, with `/` separators: relative ones resolve against the
/// checkout (`%SRCROOT%`).
fn uri(db: &SourceDb, span: Span) -> ArtifactLocation {
    let name = db.name(span.file).replace('\\', "/");
    let name = name.strip_prefix("./").unwrap_or(&name).to_string();
    if name.starts_with('/') {
        ArtifactLocation::builder().uri(format!("file://{name}")).build()
    } else {
        ArtifactLocation::builder().uri(name).uri_base_id("%SRCROOT%").build()
    }
}

fn region(db: &SourceDb, span: Span) -> Region {
    let file = db.file(span.file);
    let (line, column) = file.line_col(span.start);
    let (end_line, end_column) = file.line_col(span.end.max(span.start));
    let (end_line, end_column) = if end_line == line && end_column <= column {
        (line, column + 1)
    } else {
        (end_line, end_column)
    };
    Region::builder()
        .start_line(line as i64)
        .start_column(column as i64)
        .end_line(end_line as i64)
        .end_column(end_column as i64)
        .build()
}

/// Where a span is, in the kernel; a related location also has an id and
/// says what it is.
fn location(db: &SourceDb, span: Span, kernel: &str, related: Option<(i64, String)>) -> Location {
    let physical = PhysicalLocation::builder()
        .artifact_location(uri(db, span))
        .region(region(db, span))
        .build();
    let logical = LogicalLocation::builder().name(kernel).kind("function").build();
    let mut location = Location::builder()
        .physical_location(physical)
        .logical_locations(vec![logical])
        .build();
    if let Some((id, message)) = related {
        location.id = Some(id);
        location.message = Some(Message::builder().text(message).build());
    }
    location
}

fn properties(values: serde_json::Map<String, Value>) -> PropertyBag {
    PropertyBag::builder()
        .additional_properties(values.into_iter().collect::<std::collections::BTreeMap<_, _>>())
        .build()
}

/// One result of a finding: its rule, level, message and locations; its
/// fingerprint, suppression and baseline state.
struct Item<'a> {
    code: &'a str,
    level: ResultLevel,
    message: String,
    span: Span,
    related: Vec<(Span, String)>,
    kernel: &'a str,
    finding: &'a Finding,
    properties: serde_json::Map<String, Value>,
}

fn result(db: &SourceDb, item: Item, baseline: bool) -> SarifResult {
    let related: Vec<Location> = item
        .related
        .iter()
        .enumerate()
        .map(|(i, (s, m))| location(db, *s, item.kernel, Some((i as i64 + 1, m.clone()))))
        .collect();
    let mut fingerprints = std::collections::BTreeMap::new();
    fingerprints.insert("warpdrf/v1".to_string(), item.finding.fingerprint.clone());
    let mut r = SarifResult::builder()
        .rule_id(item.code)
        .rule_index(rule_index(item.code))
        .level(item.level)
        .message(Message::builder().text(item.message).build())
        .locations(vec![location(db, item.span, item.kernel, None)])
        .partial_fingerprints(fingerprints)
        .properties(properties(item.properties))
        .build();
    r.related_locations = (!related.is_empty()).then_some(related);
    match &item.finding.disposition {
        Disposition::Suppressed { reason, at } => {
            r.suppressions = Some(vec![Suppression::builder()
                .kind(json!("inSource"))
                .justification(reason.clone())
                .location(location(db, *at, item.kernel, None))
                .build()]);
        }
        Disposition::Baseline => r.baseline_state = Some(json!("unchanged")),
        Disposition::Open if baseline => r.baseline_state = Some(json!("new")),
        Disposition::Open => {}
    }
    r
}

/// The SARIF log of a check.
pub fn check(db: &SourceDb, report: &Report, warp_size: u32) -> Value {
    let mut results = Vec::new();
    for (i, r) in report.results.iter().enumerate() {
        for (a, finding) in r.alarms.iter().zip(&report.alarms[i]) {
            let mut props = serde_json::Map::new();
            props.insert("condition".into(), json!(a.condition));
            props.insert("inputDependent".into(), json!(a.input_dependent));
            if let Some(w) = &a.witness {
                props.insert("witness".into(), super::json::witness_json(db, w));
            }
            if !a.instantiation.is_empty() {
                props.insert(
                    "instantiation".into(),
                    json!(a
                        .instantiation
                        .iter()
                        .map(|(n, v)| json!({"name": n, "value": v}))
                        .collect::<Vec<_>>()),
                );
            }
            let other = if a.condition == crate::verdict::Condition::Memory {
                "the other access"
            } else {
                "where it is reached from"
            };
            results.push(result(
                db,
                Item {
                    code: &a.kind,
                    level: ResultLevel::Error,
                    message: format!("{}: {}", r.kernel, a.message),
                    span: a.span,
                    related: a.related.iter().map(|s| (*s, other.to_string())).collect(),
                    kernel: &r.kernel,
                    finding,
                    properties: props,
                },
                report.baseline,
            ));
        }
        for (u, finding) in r.unknowns.iter().zip(&report.unknowns[i]) {
            let mut props = serde_json::Map::new();
            props.insert("memory".into(), json!(r.memory));
            props.insert("participation".into(), json!(r.participation));
            results.push(result(
                db,
                Item {
                    code: UNKNOWN,
                    level: ResultLevel::Note,
                    message: format!("{}: not decided: {}", r.kernel, u.reason),
                    span: u.span,
                    related: Vec::new(),
                    kernel: &r.kernel,
                    finding,
                    properties: props,
                },
                report.baseline,
            ));
        }
    }
    for p in &report.problems {
        let finding = Finding {
            fingerprint: crate::triage::fingerprint(db, p.code, "", &[p.span]),
            disposition: Disposition::Open,
        };
        results.push(result(
            db,
            Item {
                code: p.code,
                level: ResultLevel::Warning,
                message: p.message.clone(),
                span: p.span,
                related: Vec::new(),
                kernel: "",
                finding: &finding,
                properties: serde_json::Map::new(),
            },
            report.baseline,
        ));
    }
    let driver = ToolComponent::builder()
        .name("warpdrf")
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .version(env!("CARGO_PKG_VERSION"))
        .short_description(
            MultiformatMessageString::builder()
                .text(env!("CARGO_PKG_DESCRIPTION"))
                .build(),
        )
        .rules(all_rules().map(descriptor).collect::<Vec<_>>())
        .build();
    let mut run_props = serde_json::Map::new();
    run_props.insert("warpSize".into(), json!(warp_size));
    run_props.insert("config".into(), json!("cuda"));
    run_props.insert(
        "kernels".into(),
        json!(report
            .results
            .iter()
            .map(|r| json!({"kernel": r.kernel, "memory": r.memory, "participation": r.participation, "warpdrf": r.warpdrf(), "clockLimited": r.clock_limited}))
            .collect::<Vec<_>>()),
    );
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .results(results)
        .invocations(vec![Invocation::builder().execution_successful(true).build()])
        .column_kind(json!("utf16CodeUnits"))
        .properties(properties(run_props))
        .build();
    let log = Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(json!("2.1.0"))
        .runs(vec![run])
        .build();
    serde_json::to_value(log).expect("SARIF values serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_pascal_case() {
        assert_eq!(rule_name("memory/shared-race"), "SharedRace");
        assert_eq!(rule_name("participation/divergent-primitive"), "DivergentPrimitive");
        assert_eq!(rule_name("unknown"), "Unknown");
    }

    #[test]
    fn help_markdown_fences_the_example() {
        let md = help_markdown(&RULES[0]);
        assert!(md.contains("```cuda\n"), "{md}");
        assert_eq!(md.matches("```").count() % 2, 0);
    }
}
