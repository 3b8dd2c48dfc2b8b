//! Macro expansion ([cpp.replace]) with hide sets (Prosser's algorithm).
//!
//! Input: a run of tokens and the macro table. Output: the expanded tokens. Tokens
//! from a macro's body take the location of the invocation; tokens of arguments
//! keep their own. Expansion never fails: a malformed invocation is left as it is
//! and reported.

use std::rc::Rc;

use super::lex::TokKind;
use super::{Diag, MacroDef, Session, Sym, Tok, UnitState};

/// Deepest nesting of macro invocations inside arguments that is expanded.
const MAX_ARG_DEPTH: usize = 200;

pub(super) type HideSet = Option<Rc<Vec<Sym>>>;

fn hidden(hide: &HideSet, name: Sym) -> bool {
    hide.as_ref().is_some_and(|h| h.binary_search(&name).is_ok())
}

fn hide_add(hide: &HideSet, name: Sym) -> HideSet {
    let mut v: Vec<Sym> = hide.as_deref().cloned().unwrap_or_default();
    if let Err(i) = v.binary_search(&name) {
        v.insert(i, name);
    }
    Some(Rc::new(v))
}

fn hide_union(a: &HideSet, b: &HideSet) -> HideSet {
    match (a, b) {
        (None, x) | (x, None) => x.clone(),
        (Some(a), Some(b)) => {
            let mut v: Vec<Sym> = a.iter().chain(b.iter()).copied().collect();
            v.sort_unstable();
            v.dedup();
            Some(Rc::new(v))
        }
    }
}

fn hide_intersect(a: &HideSet, b: &HideSet) -> HideSet {
    match (a, b) {
        (Some(a), Some(b)) => {
            let v: Vec<Sym> = a.iter().filter(|s| b.binary_search(s).is_ok()).copied().collect();
            if v.is_empty() {
                None
            } else {
                Some(Rc::new(v))
            }
        }
        _ => None,
    }
}

impl Session {
    /// Expands every macro in `input`.
    pub(super) fn expand(&mut self, st: &mut UnitState, input: Vec<Tok>, depth: usize) -> Vec<Tok> {
        let mut stack: Vec<Tok> = input;
        stack.reverse();
        let mut out = Vec::with_capacity(stack.len());
        while let Some(tok) = stack.pop() {
            if tok.kind != TokKind::Ident {
                out.push(tok);
                continue;
            }
            if let Some(def) = st.macros.get(&tok.sym).cloned() {
                if !hidden(&tok.hide, tok.sym) {
                    if def.params.is_none() {
                        let hide = hide_add(&tok.hide, tok.sym);
                        let body = self.substitute(st, &def, &tok, &[], &hide, depth);
                        stack.extend(body.into_iter().rev());
                        continue;
                    }
                    if stack.last().is_some_and(|t| self.is(t, "(")) {
                        match self.read_args(&mut stack, &def) {
                            Some((args, rparen)) => {
                                let hide = hide_add(&hide_intersect(&tok.hide, &rparen.hide), tok.sym);
                                let body = self.substitute(st, &def, &tok, &args, &hide, depth);
                                stack.extend(body.into_iter().rev());
                                continue;
                            }
                            None => {
                                st.diag(Diag::warning(
                                    tok.loc(),
                                    format!("unterminated invocation of macro `{}`", self.text(tok.sym)),
                                ));
                            }
                        }
                    }
                }
            } else if let Some(replaced) = self.dynamic_macro(st, &tok) {
                out.push(replaced);
                continue;
            }
            out.push(tok);
        }
        out
    }

    /// `__LINE__`, `__FILE__` and `__COUNTER__`: built in, computed at the invocation.
    fn dynamic_macro(&mut self, st: &mut UnitState, tok: &Tok) -> Option<Tok> {
        let (kind, text) = match self.text(tok.sym) {
            "__LINE__" => {
                let (line, _) = st.line_col(tok.file, tok.offset);
                (TokKind::Number, line.to_string())
            }
            "__FILE__" => (TokKind::Str, format!("{:?}", st.file_name(tok.file))),
            "__COUNTER__" => {
                st.counter += 1;
                (TokKind::Number, (st.counter - 1).to_string())
            }
            _ => return None,
        };
        Some(Tok {
            kind,
            sym: self.intern(&text),
            raw: u32::MAX,
            from_macro: true,
            hide: None,
            ..*tok
        })
    }

    /// Reads `( args )` after a function-like macro's name; pops them from `stack`.
    fn read_args(&self, stack: &mut Vec<Tok>, def: &MacroDef) -> Option<(Vec<Vec<Tok>>, Tok)> {
        let n_params = def.params.as_ref().map_or(0, |p| p.len());
        let lparen = stack.pop()?;
        let mut consumed = vec![lparen];
        let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut depth = 0usize;
        while let Some(tok) = stack.pop() {
            consumed.push(tok.clone());
            if tok.kind == TokKind::Punct {
                match self.text(tok.sym) {
                    "(" => depth += 1,
                    ")" if depth == 0 => {
                        if n_params == 0 && args.len() == 1 && args[0].is_empty() {
                            args.clear();
                        }
                        return Some((args, tok));
                    }
                    ")" => depth -= 1,
                    // The variadic parameter takes every remaining comma.
                    "," if depth == 0 && !(def.variadic && args.len() >= n_params) => {
                        args.push(Vec::new());
                        continue;
                    }
                    _ => {}
                }
            }
            if let Some(last) = args.last_mut() {
                last.push(tok);
            }
        }
        // Unterminated: put everything back so the tokens are emitted unchanged.
        stack.extend(consumed.into_iter().skip(1).rev());
        None
    }

    /// Replaces a macro invocation by its body ([cpp.subst], [cpp.stringize], [cpp.concat]).
    fn substitute(
        &mut self,
        st: &mut UnitState,
        def: &MacroDef,
        invocation: &Tok,
        args: &[Vec<Tok>],
        hide: &HideSet,
        depth: usize,
    ) -> Vec<Tok> {
        let params = def.params.as_deref().unwrap_or(&[]);
        let mut expanded_args: Vec<Option<Vec<Tok>>> = vec![None; params.len()];
        let body = &def.body;
        let mut out: Vec<Tok> = Vec::with_capacity(body.len());
        let param_index = |tok: &Tok| {
            if tok.kind == TokKind::Ident {
                params.iter().position(|&p| p == tok.sym)
            } else {
                None
            }
        };
        let arg_of = |i: usize| -> &[Tok] { args.get(i).map(|a| a.as_slice()).unwrap_or(&[]) };
        let mut i = 0;
        while i < body.len() {
            let tok = &body[i];
            // `#param`
            if def.params.is_some() && self.is(tok, "#") {
                if let Some(p) = body.get(i + 1).and_then(param_index) {
                    let s = self.stringize(arg_of(p));
                    out.push(self.fresh(invocation, TokKind::Str, &s, hide));
                    i += 2;
                    continue;
                }
            }
            // `x ## y`
            if self.is(tok, "##") && !out.is_empty() {
                if let Some(next) = body.get(i + 1) {
                    let rhs: Vec<Tok> = match param_index(next) {
                        Some(p) => arg_of(p).to_vec(),
                        None => vec![next.clone()],
                    };
                    // GNU: `, ## __VA_ARGS__` drops the comma when the arguments are empty.
                    let is_va = param_index(next).is_some_and(|p| def.variadic && p + 1 == params.len());
                    if rhs.is_empty() {
                        if is_va && out.last().is_some_and(|t| self.is(t, ",")) {
                            out.pop();
                        }
                    } else {
                        let lhs = out.pop().expect("checked non-empty");
                        let pasted = self.paste(&lhs, &rhs[0], invocation, hide);
                        out.extend(pasted);
                        out.extend(rhs[1..].iter().map(|t| self.relocate(t, invocation, hide)));
                    }
                    i += 2;
                    continue;
                }
            }
            if self.text(tok.sym) == "__VA_OPT__" && def.variadic {
                if let Some((content, next)) = self.va_opt_content(body, i + 1) {
                    let va_empty = args.last().is_none_or(|a| a.is_empty()) || args.len() < params.len();
                    if !va_empty {
                        let inner = MacroDef {
                            body: content,
                            ..def.clone()
                        };
                        let sub = self.substitute(st, &inner, invocation, args, hide, depth);
                        out.extend(sub);
                    }
                    i = next;
                    continue;
                }
            }
            if let Some(p) = param_index(tok) {
                // Arguments next to `##` are used unexpanded.
                if body.get(i + 1).is_some_and(|t| self.is(t, "##")) {
                    let raw = arg_of(p);
                    if raw.is_empty() {
                        // Empty left operand: the right operand stands alone.
                        if let Some(next) = body.get(i + 2) {
                            match param_index(next) {
                                Some(q) => {
                                    let r = arg_of(q).to_vec();
                                    out.extend(r.iter().map(|t| self.relocate(t, invocation, hide)));
                                }
                                None => out.push(self.relocate(next, invocation, hide)),
                            }
                        }
                        i += 3;
                        continue;
                    }
                    out.extend(raw.iter().map(|t| self.relocate(t, invocation, hide)));
                    i += 1;
                    continue;
                }
                if expanded_args[p].is_none() {
                    let raw = arg_of(p).to_vec();
                    let expanded = if depth >= MAX_ARG_DEPTH {
                        if depth == MAX_ARG_DEPTH {
                            st.diag(Diag::warning(
                                invocation.loc(),
                                "macro arguments nested too deeply; inner invocations are not expanded".into(),
                            ));
                        }
                        raw
                    } else {
                        self.expand(st, raw, depth + 1)
                    };
                    expanded_args[p] = Some(expanded);
                }
                let arg = expanded_args[p].as_ref().expect("just filled");
                out.extend(arg.iter().map(|t| Tok {
                    hide: hide_union(&t.hide, hide),
                    ..t.clone()
                }));
                i += 1;
                continue;
            }
            out.push(self.relocate(tok, invocation, hide));
            i += 1;
        }
        if let Some(first) = out.first_mut() {
            first.space = invocation.space;
            first.bol = false;
        }
        out
    }

    /// The parenthesised tokens after `__VA_OPT__` and the index after them.
    fn va_opt_content(&self, body: &[Tok], start: usize) -> Option<(Vec<Tok>, usize)> {
        if !body.get(start).is_some_and(|t| self.is(t, "(")) {
            return None;
        }
        let mut depth = 0;
        for (j, t) in body.iter().enumerate().skip(start) {
            if self.is(t, "(") {
                depth += 1;
            } else if self.is(t, ")") {
                depth -= 1;
                if depth == 0 {
                    return Some((body[start + 1..j].to_vec(), j + 1));
                }
            }
        }
        None
    }

    /// A body token placed at the invocation.
    fn relocate(&self, tok: &Tok, invocation: &Tok, hide: &HideSet) -> Tok {
        Tok {
            file: invocation.file,
            offset: invocation.offset,
            from_macro: true,
            raw: u32::MAX,
            hide: hide_union(&tok.hide, hide),
            bol: false,
            ..*tok
        }
    }

    fn fresh(&mut self, invocation: &Tok, kind: TokKind, text: &str, hide: &HideSet) -> Tok {
        Tok {
            kind,
            sym: self.intern(text),
            file: invocation.file,
            offset: invocation.offset,
            from_macro: true,
            raw: u32::MAX,
            space: true,
            bol: false,
            hide: hide.clone(),
        }
    }

    fn stringize(&self, toks: &[Tok]) -> String {
        let mut s = String::from("\"");
        for (i, t) in toks.iter().enumerate() {
            if i > 0 && t.space {
                s.push(' ');
            }
            let text = self.text(t.sym);
            if matches!(t.kind, TokKind::Str | TokKind::Char) {
                for c in text.chars() {
                    if c == '"' || c == '\\' {
                        s.push('\\');
                    }
                    s.push(c);
                }
            } else {
                s.push_str(text);
            }
        }
        s.push('"');
        s
    }

    /// `a ## b`: the spellings joined and lexed again.
    fn paste(&mut self, a: &Tok, b: &Tok, invocation: &Tok, hide: &HideSet) -> Vec<Tok> {
        let text = format!("{}{}", self.text(a.sym), self.text(b.sym));
        let raw = super::lex::lex(&text);
        raw.iter()
            .map(|r| {
                let t = &text[r.start as usize..r.end as usize];
                let mut tok = self.fresh(invocation, r.kind, t, hide);
                tok.space = a.space;
                tok
            })
            .collect()
    }
}
