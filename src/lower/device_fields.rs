//! Host fields that hold a device property across a whole codebase.
//!
//! Input: the texts of every file checked. Output: the names of struct
//! fields that only ever receive the device's warp size: every assignment to
//! them stores `….warpSize` (a `cudaDeviceProp` member) or the target's warp
//! size as a constant. Host code then reads them as that constant, so a
//! launch of `dim3(info.warp_size, nwarps)` has whole warps (ggml keeps the
//! device's warp size in `ggml_cuda_info().devices[id].warp_size`).
//!
//! Fields that only ever receive the device's compute capability as CUDA
//! numbers it (`100*prop.major + 10*prop.minor`) are found the same way:
//! host code reads them as the target's `__CUDA_ARCH__`, so a launch that
//! picks its block from a table by `cc` (ggml's `mmq` configurations) takes
//! the target's entry, as the device code does.
//!
//! Assumption (README, "Launch facts"): the files checked hold every write to
//! such a field, and it is read after it is written (not while still zero);
//! the device that runs the code is of the architecture it is checked for.

use crate::syntax::NodeExt;
use tree_sitter::Node;

use crate::syntax::named_children;

/// The fields whose every assignment in `texts` stores the warp size.
pub fn warp_size_fields<'a>(texts: impl IntoIterator<Item = &'a str> + Clone, warp_size: u32) -> Vec<String> {
    property_fields(texts, "warpSize", |text, rhs| stores_warp_size(text, rhs, warp_size))
}

/// The fields whose every assignment in `texts` stores the compute
/// capability (`100*prop.major + 10*prop.minor`).
pub fn compute_capability_fields<'a>(texts: impl IntoIterator<Item = &'a str> + Clone) -> Vec<String> {
    property_fields(texts, "major", stores_compute_capability)
}

/// The fields that some assignment in a text mentioning `trigger` sets
/// with a value `stores` accepts, and that no assignment anywhere sets
/// otherwise.
fn property_fields<'a>(
    texts: impl IntoIterator<Item = &'a str> + Clone,
    trigger: &str,
    stores: impl Fn(&str, Node) -> bool,
) -> Vec<String> {
    let mut candidates: Vec<String> = Vec::new();
    for text in texts.clone().into_iter().filter(|t| t.contains(trigger)) {
        let Some(tree) = crate::syntax::parse(text) else {
            continue;
        };
        for (field, rhs, op) in field_writes(text, tree.root_node()) {
            if op == "=" && stores(text, rhs) && !candidates.contains(&field) {
                candidates.push(field);
            }
        }
    }
    let mut kept = candidates.clone();
    for text in texts {
        if !candidates.iter().any(|c| may_write_member(text, c)) {
            continue;
        }
        let Some(tree) = crate::syntax::parse(text) else {
            continue;
        };
        for (field, rhs, op) in field_writes(text, tree.root_node()) {
            if op != "=" || !stores(text, rhs) {
                kept.retain(|k| *k != field);
            }
        }
    }
    kept
}

/// Whether `text` may write `field` as a member (`x.f = v`, `p -> f += v`,
/// `x.f++`, `++x.f`): a member followed by an assignment operator, or one
/// in a statement with an increment before it. Only such texts are parsed:
/// a short field's name (ggml's `cc`) is part of many other words, and
/// its reads are everywhere, so parsing every text that spells it took a
/// tenth of the front end. Every write `field_writes` finds passes this.
fn may_write_member(text: &str, field: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(field).any(|(at, _)| {
        let before = text[..at].trim_end();
        let rest = &text[at + field.len()..];
        // Part of a longer name (`acc`, `ccx`).
        if rest.chars().next().is_some_and(word) || text[..at].chars().next_back().is_some_and(word) {
            return false;
        }
        let after = rest.trim_start();
        // A comment or a line continuation next to the member hides what
        // is around it from this scan (not from the parser): maybe a write.
        let hidden = |s: &str| s.starts_with("/*") || s.starts_with("//") || s.starts_with('\\');
        if before.ends_with("*/") || hidden(after) {
            return true;
        }
        if !(before.ends_with('.') || before.ends_with("->")) {
            return false;
        }
        let assigns = after.starts_with("++")
            || after.starts_with("--")
            || after.starts_with("<<=")
            || after.starts_with(">>=")
            || after.starts_with('=') && !after.starts_with("==")
            || after.len() > 1 && "+-*/%&|^".contains(&after[..1]) && after[1..].starts_with('=');
        // `++x.f`: an increment between the statement's start and the member.
        let statement = &before[before.rfind([';', '{', '}']).map_or(0, |i| i + 1)..];
        assigns || statement.contains("++") || statement.contains("--")
    })
}

/// Writes to a member (`x.f = v`, `p->f += v`, `x.f++`): the field, the
/// value (the whole expression for `++`/`--`) and the operator.
fn field_writes<'t>(text: &str, root: Node<'t>) -> Vec<(String, Node<'t>, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let target = match n.kind_name() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            _ => None,
        };
        if let Some(field) = target
            .filter(|t| t.kind_name() == "field_expression")
            .and_then(|t| t.child_by_field_name("field"))
        {
            let op = n
                .child_by_field_name("operator")
                .and_then(|o| o.utf8_text(text.as_bytes()).ok())
                .unwrap_or("++");
            let value = n.child_by_field_name("right").unwrap_or(n);
            if let Ok(name) = field.utf8_text(text.as_bytes()) {
                out.push((name.to_string(), value, op.to_string()));
            }
        }
        stack.extend(named_children(n));
    }
    out
}

/// `….warpSize`, or the warp size itself as a literal.
fn stores_warp_size(text: &str, value: Node, warp_size: u32) -> bool {
    let read = |n: Node| n.utf8_text(text.as_bytes()).unwrap_or("").trim().to_string();
    match value.kind_name() {
        "field_expression" => value
            .child_by_field_name("field")
            .is_some_and(|f| read(f) == "warpSize"),
        "number_literal" => read(value).parse::<u32>() == Ok(warp_size),
        "parenthesized_expression" => named_children(value)
            .first()
            .is_some_and(|v| stores_warp_size(text, *v, warp_size)),
        _ => false,
    }
}

/// `100*p.major + 10*p.minor` (either order of each product, spaces and
/// parentheses aside): CUDA's compute capability of the device `p`.
fn stores_compute_capability(text: &str, value: Node) -> bool {
    let spelled: String = value
        .utf8_text(text.as_bytes())
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '(' && *c != ')')
        .collect();
    let Some((major, minor)) = spelled.split_once('+') else {
        return false;
    };
    let field = |term: &str, scale: &str, name: &str| -> Option<String> {
        let (a, b) = term.split_once('*')?;
        let e = if a == scale {
            b
        } else if b == scale {
            a
        } else {
            return None;
        };
        let object = e.strip_suffix(name)?;
        object
            .strip_suffix('.')
            .or_else(|| object.strip_suffix("->"))
            .map(str::to_string)
    };
    match (field(major, "100", "major"), field(minor, "10", "minor")) {
        (Some(a), Some(b)) => a == b && !a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{compute_capability_fields, may_write_member, warp_size_fields};

    const INIT: &str = "struct dev { int cc; int warp_size; };\n\
        void init(dev * d, int n) { cudaDeviceProp prop; for (int i = 0; i < n; ++i) { d[i].warp_size = prop.warpSize; d[i].cc = prop.major; } }";

    #[test]
    fn a_field_that_only_receives_warp_size_is_found() {
        assert_eq!(warp_size_fields([INIT], 32), vec!["warp_size".to_string()]);
    }

    #[test]
    fn any_other_write_anywhere_disqualifies_it() {
        let other = "void tune(dev & d) { d.warp_size = 64; }";
        assert!(warp_size_fields([INIT, other], 32).is_empty());
        let bumped = "void tune(dev & d) { d.warp_size *= 2; }";
        assert!(warp_size_fields([INIT, bumped], 32).is_empty());
        let constant = "void musa(dev & d) { d.warp_size = 32; }";
        assert_eq!(warp_size_fields([INIT, constant], 32).len(), 1);
    }

    #[test]
    fn a_field_that_only_receives_the_compute_capability_is_found() {
        let init = "void init(dev * d, cudaDeviceProp prop) { d[0].cc = 100*prop.major + 10*prop.minor; d[0].nsm = prop.major; }";
        assert_eq!(compute_capability_fields([init]), vec!["cc".to_string()]);
        let swapped = "void init(dev * d, cudaDeviceProp * p) { d->cc = (p->major * 100) + 10 * p->minor; }";
        assert_eq!(compute_capability_fields([swapped]), vec!["cc".to_string()]);
        let other_device =
            "void init(dev * d, cudaDeviceProp a, cudaDeviceProp b) { d->cc = 100*a.major + 10*b.minor; }";
        assert!(compute_capability_fields([other_device]).is_empty());
        let amd = "void amd(dev * d, cudaDeviceProp prop) { d->cc = 0x1000000 + prop.major * 0x100; }";
        assert!(compute_capability_fields([init, amd]).is_empty());
    }

    #[test]
    fn only_member_accesses_can_write_a_field() {
        assert!(may_write_member("d->cc = 0;", "cc"));
        assert!(may_write_member("info.devices[id] . cc++;", "cc"));
        assert!(may_write_member("d.cc <<= 1;", "cc"));
        assert!(may_write_member("d.cc -= 1;", "cc"));
        assert!(may_write_member("f(); ++info.devices[id].cc;", "cc"));
        assert!(!may_write_member("int cc = acc + ncc;", "cc"));
        assert!(!may_write_member("x.ccx = 1;", "cc"));
        // What a comment or a line continuation hides may be a write.
        assert!(may_write_member("d.cc /* the device's */ = 70;", "cc"));
        assert!(may_write_member("d. /* its */ cc = 70;", "cc"));
        assert!(may_write_member("d.cc \\\n = 70;", "cc"));
        // Reads are not writes: comparisons, operands, arguments.
        assert!(!may_write_member(
            "if (d.cc == 80 && d.cc >= 70) { g(d.cc + 1, d.cc); }",
            "cc"
        ));
        // A write in a text that spells the field only as a member is still
        // seen: `p->\n    cc`.
        let split = "void f(dev * d) { d->\n    cc = 7; }";
        let init = "void init(dev * d, cudaDeviceProp prop) { d->cc = 100*prop.major + 10*prop.minor; }";
        assert!(compute_capability_fields([init, split]).is_empty());
    }
}
