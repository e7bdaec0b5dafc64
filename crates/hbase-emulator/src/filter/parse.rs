//! Parser for HBase's filter language (`ParseFilter`), e.g.
//! `PrefixFilter('row') AND (QualifierFilter(=, 'binary:q') OR SKIP ValueFilter(!=, 'binary:'))`.
//!
//! Precedence as in HBase: SKIP / WHILE bind tightest, then AND, then OR; parentheses group.
//! Quoted arguments use single quotes, a doubled quote stands for one. Every syntax error is a
//! runtime failure, which the gateway reports as INTERNAL_ERROR.

use std::collections::BTreeSet;

use super::{Comparator, CompareOp, Leaf, Node};
use crate::error::{ServerError, ServerResult};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Comma,
    Quoted(Vec<u8>),
    /// Unquoted words: filter names, AND/OR/SKIP/WHILE, numbers, booleans, operators.
    Word(Vec<u8>),
}

fn error(message: impl Into<String>) -> ServerError {
    ServerError::internal(message)
}

fn tokenize(input: &[u8]) -> ServerResult<Vec<Token>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let c = input[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'(' => {
                out.push(Token::Open);
                i += 1;
            }
            b')' => {
                out.push(Token::Close);
                i += 1;
            }
            b',' => {
                out.push(Token::Comma);
                i += 1;
            }
            b'\'' => {
                let mut value = Vec::new();
                i += 1;
                loop {
                    match input.get(i) {
                        None => return Err(error("Incorrect filter string: unterminated quote")),
                        Some(b'\'') if input.get(i + 1) == Some(&b'\'') => {
                            value.push(b'\'');
                            i += 2;
                        }
                        Some(b'\'') => {
                            i += 1;
                            break;
                        }
                        Some(b) => {
                            value.push(*b);
                            i += 1;
                        }
                    }
                }
                out.push(Token::Quoted(value));
            }
            b'<' | b'>' | b'=' | b'!' => {
                let two = input.get(i + 1) == Some(&b'=') && c != b'=';
                let len = if two { 2 } else { 1 };
                out.push(Token::Word(input[i..i + len].to_vec()));
                i += len;
            }
            _ if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+') => {
                let start = i;
                while i < input.len()
                    && (input[i].is_ascii_alphanumeric()
                        || matches!(input[i], b'_' | b'-' | b'.' | b'+'))
                {
                    i += 1;
                }
                out.push(Token::Word(input[start..i].to_vec()));
            }
            _ => {
                return Err(error(format!(
                    "Incorrect filter string: unexpected character {:?} at {i}",
                    c as char
                )))
            }
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

/// Parses a whole filter string into its expression tree.
pub(super) fn parse(input: &[u8]) -> ServerResult<Node> {
    let mut p = Parser {
        tokens: tokenize(input)?,
        pos: 0,
    };
    if p.tokens.is_empty() {
        return Err(error("Incorrect filter string: empty"));
    }
    let node = p.or_expr()?;
    if p.pos != p.tokens.len() {
        return Err(error(format!(
            "Incorrect filter string: unexpected {:?}",
            p.tokens[p.pos]
        )));
    }
    Ok(node)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> ServerResult<Token> {
        let t = self
            .tokens
            .get(self.pos)
            .cloned()
            .ok_or_else(|| error("Incorrect filter string: unexpected end"))?;
        self.pos += 1;
        Ok(t)
    }

    fn peek_word(&self, word: &[u8]) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w == word)
    }

    fn or_expr(&mut self) -> ServerResult<Node> {
        let mut parts = vec![self.and_expr()?];
        while self.peek_word(b"OR") {
            self.pos += 1;
            parts.push(self.and_expr()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Node::Or(parts)
        })
    }

    fn and_expr(&mut self) -> ServerResult<Node> {
        let mut parts = vec![self.unary()?];
        while self.peek_word(b"AND") {
            self.pos += 1;
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Node::And(parts)
        })
    }

    fn unary(&mut self) -> ServerResult<Node> {
        if self.peek_word(b"SKIP") {
            self.pos += 1;
            return Ok(Node::Skip(Box::new(self.unary()?)));
        }
        if self.peek_word(b"WHILE") {
            self.pos += 1;
            return Ok(Node::While(Box::new(self.unary()?)));
        }
        match self.next()? {
            Token::Open => {
                let inner = self.or_expr()?;
                match self.next()? {
                    Token::Close => Ok(inner),
                    t => Err(error(format!(
                        "Incorrect filter string: expected ')', got {t:?}"
                    ))),
                }
            }
            Token::Word(name) => {
                let args = self.arguments()?;
                Ok(Node::Leaf(build_leaf(
                    &String::from_utf8_lossy(&name),
                    args,
                )?))
            }
            t => Err(error(format!("Incorrect filter string: unexpected {t:?}"))),
        }
    }

    fn arguments(&mut self) -> ServerResult<Vec<Arg>> {
        match self.next()? {
            Token::Open => {}
            t => {
                return Err(error(format!(
                    "Incorrect filter string: expected '(', got {t:?}"
                )))
            }
        }
        let mut args = Vec::new();
        if self.peek() == Some(&Token::Close) {
            self.pos += 1;
            return Ok(args);
        }
        loop {
            args.push(match self.next()? {
                Token::Quoted(v) => Arg::Quoted(v),
                Token::Word(w) => Arg::Bare(w),
                t => return Err(error(format!("Incorrect filter argument {t:?}"))),
            });
            match self.next()? {
                Token::Comma => continue,
                Token::Close => return Ok(args),
                t => return Err(error(format!("Incorrect filter string: unexpected {t:?}"))),
            }
        }
    }
}

#[derive(Debug)]
enum Arg {
    Quoted(Vec<u8>),
    Bare(Vec<u8>),
}

impl Arg {
    fn quoted(self) -> ServerResult<Vec<u8>> {
        match self {
            Arg::Quoted(v) => Ok(v),
            Arg::Bare(w) => Err(error(format!(
                "Expected a quoted string, got {}",
                String::from_utf8_lossy(&w)
            ))),
        }
    }

    fn bare(&self) -> ServerResult<&[u8]> {
        match self {
            Arg::Bare(w) => Ok(w),
            Arg::Quoted(v) => Err(error(format!(
                "Expected an unquoted argument, got '{}'",
                String::from_utf8_lossy(v)
            ))),
        }
    }

    fn boolean(&self) -> ServerResult<bool> {
        match self.bare()? {
            b"true" => Ok(true),
            b"false" => Ok(false),
            _ => Err(error("Incorrect Boolean Expression")),
        }
    }

    fn long(&self) -> ServerResult<i64> {
        std::str::from_utf8(self.bare()?)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| error("Incorrect Integer Expression"))
    }

    fn compare_op(&self) -> ServerResult<CompareOp> {
        Ok(match self.bare()? {
            b"<" => CompareOp::Less,
            b"<=" => CompareOp::LessOrEqual,
            b"=" => CompareOp::Equal,
            b"!=" => CompareOp::NotEqual,
            b">=" => CompareOp::GreaterOrEqual,
            b">" => CompareOp::Greater,
            _ => return Err(error("Invalid compare operator")),
        })
    }
}

fn expect_args(name: &str, args: &[Arg], allowed: &[usize]) -> ServerResult<()> {
    if allowed.contains(&args.len()) {
        Ok(())
    } else {
        Err(error(format!(
            "{name} expects {allowed:?} arguments, got {}",
            args.len()
        )))
    }
}

/// `'binary:abc'` and friends; substring and regex comparators only allow = and !=.
fn comparator(op: CompareOp, arg: Arg) -> ServerResult<Comparator> {
    let spec = arg.quoted()?;
    let colon = spec
        .iter()
        .position(|b| *b == b':')
        .ok_or_else(|| error("Incorrect comparator"))?;
    let (kind, value) = (&spec[..colon], spec[colon + 1..].to_vec());
    let cmp = match kind {
        b"binary" => Comparator::Binary(value),
        b"binaryprefix" => Comparator::BinaryPrefix(value),
        b"substring" => Comparator::substring(&value),
        b"regexstring" => Comparator::regex(&value)?,
        _ => return Err(error("Incorrect comparatorType")),
    };
    if matches!(cmp, Comparator::Substring(_) | Comparator::Regex(_))
        && !matches!(op, CompareOp::Equal | CompareOp::NotEqual)
    {
        return Err(error(
            "A regexstring comparator and substring comparator can only be used with EQUAL and \
             NOT_EQUAL",
        ));
    }
    Ok(cmp)
}

fn compare_leaf(name: &str, args: Vec<Arg>) -> ServerResult<(CompareOp, Comparator)> {
    expect_args(name, &args, &[2])?;
    let mut it = args.into_iter();
    let op = it.next().expect("checked").compare_op()?;
    let cmp = comparator(op, it.next().expect("checked"))?;
    Ok((op, cmp))
}

fn build_leaf(name: &str, args: Vec<Arg>) -> ServerResult<Leaf> {
    Ok(match name {
        "KeyOnlyFilter" => {
            expect_args(name, &args, &[0, 1])?;
            let len_as_value = match args.first() {
                Some(a) => a.boolean()?,
                None => false,
            };
            Leaf::KeyOnly { len_as_value }
        }
        "FirstKeyOnlyFilter" => {
            expect_args(name, &args, &[0])?;
            Leaf::FirstKeyOnly
        }
        "PrefixFilter" | "ColumnPrefixFilter" | "InclusiveStopFilter" => {
            expect_args(name, &args, &[1])?;
            let v = args.into_iter().next().expect("checked").quoted()?;
            match name {
                "PrefixFilter" => Leaf::Prefix(v),
                "ColumnPrefixFilter" => Leaf::ColumnPrefix(v),
                _ => Leaf::InclusiveStop(v),
            }
        }
        "MultipleColumnPrefixFilter" => {
            if args.is_empty() {
                return Err(error(
                    "MultipleColumnPrefixFilter needs at least one prefix",
                ));
            }
            let prefixes = args
                .into_iter()
                .map(Arg::quoted)
                .collect::<ServerResult<_>>()?;
            Leaf::MultipleColumnPrefix(prefixes)
        }
        "TimestampsFilter" => {
            let set: BTreeSet<i64> = args.iter().map(Arg::long).collect::<ServerResult<_>>()?;
            if set.iter().any(|ts| *ts < 0) {
                return Err(error("Timestamps must not be negative"));
            }
            Leaf::Timestamps(set)
        }
        "RowFilter" => {
            let (op, cmp) = compare_leaf(name, args)?;
            Leaf::Row(op, cmp)
        }
        "FamilyFilter" => {
            let (op, cmp) = compare_leaf(name, args)?;
            Leaf::Family(op, cmp)
        }
        "QualifierFilter" => {
            let (op, cmp) = compare_leaf(name, args)?;
            Leaf::Qualifier(op, cmp)
        }
        "ValueFilter" => {
            let (op, cmp) = compare_leaf(name, args)?;
            Leaf::Value(op, cmp)
        }
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" => {
            expect_args(name, &args, &[4, 6])?;
            let flags = match args.len() {
                6 => Some((args[4].boolean()?, args[5].boolean()?)),
                _ => None,
            };
            let mut it = args.into_iter();
            let family = it.next().expect("checked").quoted()?;
            let qualifier = it.next().expect("checked").quoted()?;
            let op = it.next().expect("checked").compare_op()?;
            let comparator = comparator(op, it.next().expect("checked"))?;
            let (filter_if_missing, latest_only) = flags.unwrap_or((false, true));
            Leaf::SingleColumnValue {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_only,
                exclude: name == "SingleColumnValueExcludeFilter",
            }
        }
        "ColumnRangeFilter" => {
            expect_args(name, &args, &[4])?;
            let min_inclusive = args[1].boolean()?;
            let max_inclusive = args[3].boolean()?;
            let mut it = args.into_iter();
            let min = it.next().expect("checked").quoted()?;
            let max = it.nth(1).expect("checked").quoted()?;
            Leaf::ColumnRange {
                min: (!min.is_empty()).then_some((min, min_inclusive)),
                max: (!max.is_empty()).then_some((max, max_inclusive)),
            }
        }
        "PageFilter"
        | "ColumnCountGetFilter"
        | "ColumnPaginationFilter"
        | "DependentColumnFilter"
        | "FirstKeyValueMatchingQualifiersFilter" => {
            return Err(error(format!(
                "Filter Name {name} is not supported by the in-memory HBase emulator"
            )))
        }
        _ => return Err(error(format!("Filter Name {name} not supported"))),
    })
}
