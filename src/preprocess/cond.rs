//! Evaluation of `#if`/`#elif` controlling expressions ([cpp.cond]).
//!
//! Input: the directive's tokens after `defined`, `__has_include` and macro
//! expansion. Output: the value, or an error message. Arithmetic is in
//! `intmax_t`/`uintmax_t` as the standard says: a value is unsigned when it or an
//! operand it came from is, and unsigned arithmetic wraps modulo 2^64. Remaining
//! identifiers are 0 (`true` is 1 in C++).

use super::lex::TokKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PpValue {
    pub value: i128,
    pub unsigned: bool,
}

impl PpValue {
    fn signed(value: i128) -> PpValue {
        PpValue {
            value: wrap(value, false),
            unsigned: false,
        }
    }

    fn new(value: i128, unsigned: bool) -> PpValue {
        PpValue {
            value: wrap(value, unsigned),
            unsigned,
        }
    }

    pub fn truthy(self) -> bool {
        self.value != 0
    }
}

fn wrap(value: i128, unsigned: bool) -> i128 {
    if unsigned {
        value & 0xffff_ffff_ffff_ffff
    } else {
        value as i64 as i128
    }
}

const MAX_DEPTH: usize = 256;

struct Parser<'a> {
    toks: &'a [(TokKind, &'a str)],
    pos: usize,
    depth: usize,
}

/// Evaluates a controlling expression.
pub fn eval(toks: &[(TokKind, &str)]) -> Result<PpValue, String> {
    if toks.is_empty() {
        return Err("#if with no expression".into());
    }
    let mut p = Parser { toks, pos: 0, depth: 0 };
    let v = p.ternary()?;
    if p.pos < toks.len() {
        return Err(format!("unexpected `{}` in #if expression", toks[p.pos].1));
    }
    Ok(v)
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.pos).map(|t| t.1)
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.peek() == Some(s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ternary(&mut self) -> Result<PpValue, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("#if expression nested too deeply".into());
        }
        let cond = self.binary(0)?;
        let result = if self.eat("?") {
            let a = self.ternary()?;
            if !self.eat(":") {
                return Err("expected `:` in #if expression".into());
            }
            let b = self.ternary()?;
            let unsigned = a.unsigned || b.unsigned;
            PpValue::new(if cond.truthy() { a.value } else { b.value }, unsigned)
        } else {
            cond
        };
        self.depth -= 1;
        Ok(result)
    }

    fn binary(&mut self, min_prec: u8) -> Result<PpValue, String> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.peek() {
            let Some(prec) = precedence(op) else { break };
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            // `&&` and `||` evaluate both sides here: no side effects exist in #if.
            let rhs = self.binary(prec + 1)?;
            lhs = apply(op, lhs, rhs)?;
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<PpValue, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("#if expression nested too deeply".into());
        }
        let Some(&(kind, text)) = self.toks.get(self.pos) else {
            return Err("#if expression ends early".into());
        };
        self.pos += 1;
        let v = match (kind, text) {
            (TokKind::Punct, "(") => {
                let v = self.ternary()?;
                if !self.eat(")") {
                    return Err("expected `)` in #if expression".into());
                }
                v
            }
            (TokKind::Punct, "!") => {
                let v = self.unary()?;
                PpValue::signed((!v.truthy()) as i128)
            }
            (TokKind::Punct, "-") => {
                let v = self.unary()?;
                PpValue::new(-v.value, v.unsigned)
            }
            (TokKind::Punct, "+") => self.unary()?,
            (TokKind::Punct, "~") => {
                let v = self.unary()?;
                PpValue::new(!v.value, v.unsigned)
            }
            (TokKind::Number, _) => parse_int(text)?,
            (TokKind::Char, _) => PpValue::signed(char_value(text)),
            (TokKind::Ident, "true") => PpValue::signed(1),
            (TokKind::Ident, _) => PpValue::signed(0),
            _ => return Err(format!("unexpected `{text}` in #if expression")),
        };
        self.depth -= 1;
        Ok(v)
    }
}

fn precedence(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | ">" | "<=" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

fn apply(op: &str, a: PpValue, b: PpValue) -> Result<PpValue, String> {
    let unsigned = a.unsigned || b.unsigned;
    let (x, y) = if unsigned {
        (wrap(a.value, true), wrap(b.value, true))
    } else {
        (a.value, b.value)
    };
    let bool_val = |c: bool| PpValue::signed(c as i128);
    Ok(match op {
        "||" => bool_val(a.truthy() || b.truthy()),
        "&&" => bool_val(a.truthy() && b.truthy()),
        "|" => PpValue::new(x | y, unsigned),
        "^" => PpValue::new(x ^ y, unsigned),
        "&" => PpValue::new(x & y, unsigned),
        "==" => bool_val(x == y),
        "!=" => bool_val(x != y),
        "<" => bool_val(x < y),
        ">" => bool_val(x > y),
        "<=" => bool_val(x <= y),
        ">=" => bool_val(x >= y),
        "<<" => PpValue::new(x.checked_shl((y & 127) as u32).unwrap_or(0), a.unsigned),
        ">>" => PpValue::new(x >> (y & 127), a.unsigned),
        "+" => PpValue::new(x.wrapping_add(y), unsigned),
        "-" => PpValue::new(x.wrapping_sub(y), unsigned),
        "*" => PpValue::new(x.wrapping_mul(y), unsigned),
        "/" | "%" => {
            if y == 0 {
                return Err("division by zero in #if expression".into());
            }
            PpValue::new(if op == "/" { x / y } else { x % y }, unsigned)
        }
        _ => unreachable!("operator without precedence"),
    })
}

/// Parses an integer literal with C++ prefixes, digit separators and suffixes.
pub fn parse_int(text: &str) -> Result<PpValue, String> {
    let clean: String = text.chars().filter(|&c| c != '\'').collect();
    let lower = clean.to_ascii_lowercase();
    let (digits, radix) = if let Some(rest) = lower.strip_prefix("0x") {
        (rest, 16)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (rest, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let (num, suffix) = digits.split_at(end);
    if !suffix.chars().all(|c| matches!(c, 'u' | 'l' | 'z')) {
        return Err(format!("`{text}` is not an integer"));
    }
    let value = if num.is_empty() {
        0
    } else {
        u128::from_str_radix(num, radix).map_err(|_| format!("`{text}` is not an integer"))?
    };
    let unsigned = suffix.contains('u') || value > i64::MAX as u128;
    Ok(PpValue::new(value as i128, unsigned))
}

/// The value of a character literal (first character; escapes for the common cases).
pub fn char_value(text: &str) -> i128 {
    let body = text
        .trim_start_matches(['L', 'u', 'U', '8'])
        .trim_start_matches('\'')
        .trim_end_matches('\'');
    let mut chars = body.chars();
    match chars.next() {
        Some('\\') => match chars.next() {
            Some('n') => 10,
            Some('t') => 9,
            Some('r') => 13,
            Some('0') => 0,
            Some('\\') => 92,
            Some('\'') => 39,
            Some('"') => 34,
            Some('a') => 7,
            Some('b') => 8,
            Some('f') => 12,
            Some('v') => 11,
            Some('x') => i128::from_str_radix(chars.as_str(), 16).unwrap_or(0),
            Some(c) => c as i128,
            None => 0,
        },
        Some(c) => c as i128,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preprocess::lex::lex;

    fn ev(text: &str) -> Result<i128, String> {
        let toks: Vec<_> = lex(text)
            .iter()
            .map(|t| (t.kind, &text[t.start as usize..t.end as usize]))
            .collect();
        eval(&toks).map(|v| v.value)
    }

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(ev("1 + 2 * 3"), Ok(7));
        assert_eq!(ev("(1 + 2) * 3 == 9 && 4 > 3"), Ok(1));
        assert_eq!(ev("800 >= 700 ? 16 : 8"), Ok(16));
        assert_eq!(ev("0x1000000 + 0x908"), Ok(0x1000908));
        assert_eq!(ev("!defined_but_zero || 0"), Ok(1));
        assert_eq!(ev("1'000 / 10 % 7"), Ok(2));
    }

    #[test]
    fn unsigned_arithmetic_wraps() {
        assert_eq!(ev("-1 < 0"), Ok(1));
        assert_eq!(ev("-1 < 0u"), Ok(0));
        assert_eq!(ev("0u - 1 == 18446744073709551615u"), Ok(1));
    }

    #[test]
    fn errors_are_reported_not_raised() {
        assert!(ev("1 / 0").is_err());
        assert!(ev("(1").is_err());
        assert!(ev("").is_err());
        assert!(ev("1.5").is_err());
        let deep = "(".repeat(10_000) + "1" + &")".repeat(10_000);
        assert!(ev(&deep).is_err());
    }
}
