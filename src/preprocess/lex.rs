//! Preprocessing tokens (C++ [lex.pptoken]) with their byte offsets.
//!
//! Input: a file's text. Output: pp-tokens, each flagged when it starts a line or
//! follows white space. Comments and line splices are white space here. The lexer
//! never fails: a byte it does not know becomes an `Other` token.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokKind {
    Ident,
    Number,
    Str,
    Char,
    Punct,
    Other,
}

/// A raw token of one file: kind and byte range; its spelling is `text[start..end]`.
#[derive(Clone, Copy, Debug)]
pub struct RawTok {
    pub kind: TokKind,
    pub start: u32,
    pub end: u32,
    /// First token on its (logical) line.
    pub bol: bool,
    /// White space (or a comment) precedes it.
    pub space: bool,
}

const PUNCTS: [&str; 46] = [
    "<=>", "<<=", ">>=", "...", "->*", "::", "##", "<<", ">>", "->", "++", "--", "&&", "||", "<=", ">=", "==", "!=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "{", "}", "[", "]", "(", ")", ";", ":", "?", ".", "+", "-",
    "*", "/", "%", "^", "&", "|", "~",
];
const PUNCTS_SINGLE: &[u8] = b"!=<>,#";

/// Lexes a whole file. Line splices (`\` newline) count as white space, which is
/// exact between tokens and in directives (the only places real code splits lines).
pub fn lex(text: &str) -> Vec<RawTok> {
    let bytes = text.as_bytes();
    let mut toks = Vec::with_capacity(text.len() / 4);
    let mut i = 0usize;
    let mut bol = true;
    let mut space = false;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\n' => {
                bol = true;
                space = false;
                i += 1;
            }
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                space = true;
                i += 1;
            }
            b'\\' if splice_len(bytes, i) > 0 => {
                space = true;
                i += splice_len(bytes, i);
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                // A line comment ends at the newline, which is kept; splices continue it.
                i += 2;
                while i < bytes.len() && bytes[i] != b'\n' {
                    let splice = splice_len(bytes, i);
                    i += if splice > 0 { splice } else { 1 };
                }
                space = true;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(bytes.len());
                space = true;
            }
            _ => {
                let start = i;
                let kind;
                if let Some(len) = string_prefix_len(bytes, i) {
                    let (k, end) = lex_quoted(bytes, i, len);
                    kind = k;
                    i = end;
                } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
                    kind = TokKind::Number;
                    i = lex_number(bytes, i);
                } else if is_ident_start(c) {
                    kind = TokKind::Ident;
                    i += 1;
                    while i < bytes.len() && is_ident_continue(bytes[i]) {
                        i += 1;
                    }
                } else if let Some(p) = PUNCTS.iter().find(|p| bytes[i..].starts_with(p.as_bytes())) {
                    kind = TokKind::Punct;
                    i += p.len();
                } else if PUNCTS_SINGLE.contains(&c) {
                    kind = TokKind::Punct;
                    i += 1;
                } else {
                    kind = TokKind::Other;
                    // Keep multi-byte UTF-8 characters whole so offsets stay on char boundaries.
                    i += utf8_len(c);
                    i = i.min(bytes.len());
                }
                // Escapes and literals may stop inside a multi-byte character: end on a boundary.
                while i < bytes.len() && !text.is_char_boundary(i) {
                    i += 1;
                }
                toks.push(RawTok {
                    kind,
                    start: start as u32,
                    end: i as u32,
                    bol,
                    space,
                });
                bol = false;
                space = false;
            }
        }
    }
    toks
}

fn splice_len(bytes: &[u8], i: usize) -> usize {
    match (bytes.get(i), bytes.get(i + 1), bytes.get(i + 2)) {
        (Some(b'\\'), Some(b'\n'), _) => 2,
        (Some(b'\\'), Some(b'\r'), Some(b'\n')) => 3,
        _ => 0,
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

pub fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80
}

pub fn is_ident_continue(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

/// Length of a string/char literal prefix (`L`, `u8`, `u`, `U`, `R`, `u8R`…) when a
/// quote follows it at `i`, including zero for a bare quote.
fn string_prefix_len(bytes: &[u8], i: usize) -> Option<usize> {
    for prefix in ["u8R", "uR", "UR", "LR", "R", "u8", "u", "U", "L", ""] {
        let p = prefix.as_bytes();
        if bytes[i..].starts_with(p) {
            if let Some(&q) = bytes.get(i + p.len()) {
                if q == b'"' || (q == b'\'' && !prefix.contains('R')) {
                    return Some(p.len());
                }
            }
        }
    }
    None
}

fn lex_quoted(bytes: &[u8], start: usize, prefix_len: usize) -> (TokKind, usize) {
    let mut i = start + prefix_len;
    let quote = bytes[i];
    let raw = prefix_len > 0 && bytes[start + prefix_len - 1] == b'R';
    i += 1;
    if raw {
        // R"delim( ... )delim"
        let delim_start = i;
        while i < bytes.len() && bytes[i] != b'(' && bytes[i] != b'\n' && i - delim_start < 16 {
            i += 1;
        }
        let delim = &bytes[delim_start..i.min(bytes.len())];
        let mut closing = Vec::with_capacity(delim.len() + 2);
        closing.push(b')');
        closing.extend_from_slice(delim);
        closing.push(b'"');
        while i < bytes.len() && !bytes[i..].starts_with(&closing) {
            i += 1;
        }
        return (TokKind::Str, (i + closing.len()).min(bytes.len()));
    }
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => break,
            c if c == quote => {
                i += 1;
                break;
            }
            _ => i += 1,
        }
    }
    let kind = if quote == b'"' { TokKind::Str } else { TokKind::Char };
    (kind, i.min(bytes.len()))
}

fn lex_number(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        let c = bytes[i];
        let exponent_sign = (c == b'+' || c == b'-') && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P');
        let digit_separator = c == b'\'' && bytes.get(i + 1).is_some_and(|d| d.is_ascii_alphanumeric());
        if exponent_sign || digit_separator || c.is_ascii_alphanumeric() || c == b'.' || c == b'_' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spellings(text: &str) -> Vec<&str> {
        lex(text)
            .iter()
            .map(|t| &text[t.start as usize..t.end as usize])
            .collect()
    }

    #[test]
    fn punctuators_take_the_longest_match() {
        assert_eq!(
            spellings("a<<=b>>c...d->*e"),
            ["a", "<<=", "b", ">>", "c", "...", "d", "->*", "e"]
        );
        assert_eq!(
            spellings("k<<<g,b>>>()"),
            ["k", "<<", "<", "g", ",", "b", ">>", ">", "(", ")"]
        );
    }

    #[test]
    fn comments_and_splices_are_white_space() {
        let toks = lex("a /* x\n y */ b // c \\\n d\ne\\\nf");
        let text = "a /* x\n y */ b // c \\\n d\ne\\\nf";
        let s: Vec<_> = toks.iter().map(|t| &text[t.start as usize..t.end as usize]).collect();
        assert_eq!(s, ["a", "b", "e", "f"]);
        assert!(toks[1].space && !toks[1].bol);
        assert!(toks[2].bol);
        assert!(!toks[3].bol && toks[3].space);
    }

    #[test]
    fn numbers_strings_and_chars() {
        assert_eq!(spellings("1.5e+3f 0x1Fu 1'000 .5"), ["1.5e+3f", "0x1Fu", "1'000", ".5"]);
        assert_eq!(
            spellings(r#"u8"a\"b" 'c' L'\'' R"x(a)"b)x""#),
            [r#"u8"a\"b""#, "'c'", r"L'\''", r#"R"x(a)"b)x""#]
        );
    }

    #[test]
    fn unknown_bytes_become_other_tokens() {
        let text = "a @ é`";
        let toks = lex(text);
        assert_eq!(toks.len(), 4);
        assert_eq!(toks[1].kind, TokKind::Other);
        assert_eq!(toks[2].kind, TokKind::Ident);
    }
}
