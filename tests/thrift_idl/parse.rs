//! The lexer and parser for the subset of Thrift's IDL the two files use; `parse_idl` turns
//! text into an `Idl` or a message naming the line it could not read.

use crate::model::{Body, Decl, EnumValue, Field, Idl, Method, Req, Type};

// ----------------------------------------------------------------------------------------------
// Lexer
// ----------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// Identifiers keep their dots: `TDeleteType.DELETE_COLUMNS`, `org.apache.hadoop`.
    Ident(String),
    Number(String),
    /// The text of string literals is never needed, only where they end.
    Str,
    Punct(char),
}

/// A token and its line.
struct Token(Tok, usize);

fn tokenize(src: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = src.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut toks = Vec::new();
    let (mut i, mut line) = (0, 1);
    while let Some(c) = at(i) {
        let start = i;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '#' || (c == '/' && at(i + 1) == Some('/')) {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == Some('*') {
            let first_line = line;
            i += 2;
            loop {
                match at(i) {
                    None => return Err(format!("line {first_line}: unterminated /* comment")),
                    Some('*') if at(i + 1) == Some('/') => {
                        i += 2;
                        break;
                    }
                    Some('\n') => line += 1,
                    Some(_) => {}
                }
                i += 1;
            }
        } else if c == '"' || c == '\'' {
            let first_line = line;
            i += 1;
            loop {
                match at(i) {
                    None => return Err(format!("line {first_line}: unterminated string")),
                    Some('\\') => i += 1,
                    Some(q) if q == c => break,
                    Some('\n') => line += 1,
                    Some(_) => {}
                }
                i += 1;
            }
            i += 1;
            toks.push(Token(Tok::Str, first_line));
        } else if c.is_ascii_alphabetic() || c == '_' {
            while at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                i += 1;
            }
            let word = chars[start..i].iter().collect();
            toks.push(Token(Tok::Ident(word), line));
        } else if c.is_ascii_digit()
            || (matches!(c, '-' | '+') && at(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            i = number_end(&chars, i);
            let number = chars[start..i].iter().collect();
            toks.push(Token(Tok::Number(number), line));
        } else if "{}()<>[],;:=*".contains(c) {
            i += 1;
            toks.push(Token(Tok::Punct(c), line));
        } else {
            return Err(format!("line {line}: unexpected character {c:?}"));
        }
    }
    Ok(toks)
}

/// Where a number starting at `start` ends: digits, hex digits, a fraction, or an exponent
/// whose sign must not be read as the start of another token.
fn number_end(chars: &[char], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(&c) = chars.get(i) {
        let hex = chars[start..i].iter().any(|c| matches!(c, 'x' | 'X'));
        let exponent_sign = matches!(c, '+' | '-') && !hex && matches!(chars[i - 1], 'e' | 'E');
        if c.is_ascii_alphanumeric() || c == '.' || exponent_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if negative { -magnitude } else { magnitude })
}

// ----------------------------------------------------------------------------------------------
// Parser
// ----------------------------------------------------------------------------------------------

pub(crate) fn parse_idl(src: &str) -> Result<Idl, String> {
    let mut p = Parser {
        toks: tokenize(src)?,
        pos: 0,
    };
    let mut idl = Idl::default();
    while p.peek().is_some() {
        let Some(decl) = p.definition()? else {
            continue;
        };
        if let Some(first) = idl.get(&decl.name) {
            return Err(format!(
                "line {}: `{}` declared again (first at line {})",
                decl.line, decl.name, first.line
            ));
        }
        idl.decls.push(decl);
    }
    Ok(idl)
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |t| t.1)
    }

    fn error<T>(&self, expected: &str) -> Result<T, String> {
        let found = match self.peek() {
            None => "end of file".to_string(),
            Some(Tok::Ident(s) | Tok::Number(s)) => format!("`{s}`"),
            Some(Tok::Str) => "a string".to_string(),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        };
        Err(format!(
            "line {}: expected {expected}, found {found}",
            self.line()
        ))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(&Tok::Punct(c));
        self.pos += usize::from(hit);
        hit
    }

    fn expect_punct(&mut self, c: char) -> Result<(), String> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.error(&format!("`{c}`"))
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Ident(w)) if w == word);
        self.pos += usize::from(hit);
        hit
    }

    /// Thrift lets `,` or `;` (or nothing) follow any item.
    fn eat_separator(&mut self) {
        let _ = self.eat_punct(',') || self.eat_punct(';');
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek() {
            Some(Tok::Ident(w)) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => self.error("a name"),
        }
    }

    fn integer(&mut self) -> Result<i64, String> {
        match self.peek() {
            Some(Tok::Number(n)) => match parse_int(n) {
                Some(v) => {
                    self.pos += 1;
                    Ok(v)
                }
                None => self.error("an integer"),
            },
            _ => self.error("an integer"),
        }
    }

    fn string(&mut self) -> Result<(), String> {
        if self.peek() == Some(&Tok::Str) {
            self.pos += 1;
            Ok(())
        } else {
            self.error("a string")
        }
    }

    /// One top-level definition; `None` for those that declare nothing comparable.
    fn definition(&mut self) -> Result<Option<Decl>, String> {
        let line = self.line();
        let keyword = self.ident()?;
        let (name, body) = match keyword.as_str() {
            // Namespaces steer each language's code generator and are not part of the
            // interface; includes would need the included file, which neither IDL uses.
            "namespace" => {
                if !self.eat_punct('*') {
                    self.ident()?;
                }
                self.ident()?;
                return Ok(None);
            }
            "include" | "cpp_include" => {
                self.string()?;
                return Ok(None);
            }
            "typedef" => {
                let ty = self.field_type()?;
                (self.ident()?, Body::Typedef(ty))
            }
            "const" => {
                let ty = self.field_type()?;
                let name = self.ident()?;
                self.expect_punct('=')?;
                self.skip_value()?;
                (name, Body::Const(ty))
            }
            "enum" => (self.ident()?, Body::Enum(self.enum_values()?)),
            "struct" => (
                self.ident()?,
                Body::Struct("struct", self.fields('{', '}')?),
            ),
            "union" => (self.ident()?, Body::Struct("union", self.fields('{', '}')?)),
            "exception" => (
                self.ident()?,
                Body::Struct("exception", self.fields('{', '}')?),
            ),
            "service" => {
                let name = self.ident()?;
                let extends = if self.eat_word("extends") {
                    Some(self.ident()?)
                } else {
                    None
                };
                let methods = self.methods()?;
                (name, Body::Service { extends, methods })
            }
            other => return Err(format!("line {line}: unsupported definition `{other}`")),
        };
        self.eat_separator();
        Ok(Some(Decl { name, line, body }))
    }

    fn enum_values(&mut self) -> Result<Vec<EnumValue>, String> {
        self.expect_punct('{')?;
        let mut values: Vec<EnumValue> = Vec::new();
        // A name without `= n` takes the previous value plus one, the first one 0.
        let mut next = 0i64;
        while !self.eat_punct('}') {
            let line = self.line();
            let name = self.ident()?;
            let value = if self.eat_punct('=') {
                self.integer()?
            } else {
                next
            };
            if let Some(first) = values.iter().find(|v| v.name == name) {
                return Err(format!(
                    "line {line}: enum value `{name}` repeated (first at line {})",
                    first.line
                ));
            }
            next = value.saturating_add(1);
            values.push(EnumValue { name, value, line });
            self.eat_separator();
        }
        Ok(values)
    }

    /// A field list between `open` and `close`: struct bodies, argument and throws lists.
    fn fields(&mut self, open: char, close: char) -> Result<Vec<Field>, String> {
        self.expect_punct(open)?;
        let mut fields: Vec<Field> = Vec::new();
        while !self.eat_punct(close) {
            let field = self.field()?;
            if let Some(first) = fields.iter().find(|f| f.id == field.id) {
                return Err(format!(
                    "line {}: field id {} used again (first by `{}` at line {})",
                    field.line, field.id, first.name, first.line
                ));
            }
            fields.push(field);
        }
        Ok(fields)
    }

    fn field(&mut self) -> Result<Field, String> {
        let line = self.line();
        // Thrift would number an id-less field itself, negatively; that silently changes the
        // wire format, so the subset this test reads insists on explicit ids.
        let id = self.integer()?;
        self.expect_punct(':')?;
        let req = if self.eat_word("required") {
            Req::Required
        } else if self.eat_word("optional") {
            Req::Optional
        } else {
            Req::Default
        };
        let ty = self.field_type()?;
        let name = self.ident()?;
        // A default value changes what generated code fills in, never the wire format.
        if self.eat_punct('=') {
            self.skip_value()?;
        }
        self.eat_separator();
        Ok(Field {
            id,
            req,
            ty,
            name,
            line,
        })
    }

    fn field_type(&mut self) -> Result<Type, String> {
        let name = self.ident()?;
        let ty = match name.as_str() {
            "list" | "set" => {
                self.expect_punct('<')?;
                let element = Box::new(self.field_type()?);
                self.expect_punct('>')?;
                if name == "list" {
                    Type::List(element)
                } else {
                    Type::Set(element)
                }
            }
            "map" => {
                self.expect_punct('<')?;
                let key = Box::new(self.field_type()?);
                self.expect_punct(',')?;
                let value = Box::new(self.field_type()?);
                self.expect_punct('>')?;
                Type::Map(key, value)
            }
            _ => Type::Name(name),
        };
        Ok(ty)
    }

    /// Steps over a constant: a literal, a name, `[v, ...]` or `{k: v, ...}`.
    fn skip_value(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(Tok::Ident(_) | Tok::Number(_) | Tok::Str) => self.pos += 1,
            Some(Tok::Punct('[')) => {
                self.pos += 1;
                while !self.eat_punct(']') {
                    self.skip_value()?;
                    self.eat_separator();
                }
            }
            Some(Tok::Punct('{')) => {
                self.pos += 1;
                while !self.eat_punct('}') {
                    self.skip_value()?;
                    self.expect_punct(':')?;
                    self.skip_value()?;
                    self.eat_separator();
                }
            }
            _ => return self.error("a constant value"),
        }
        Ok(())
    }

    fn methods(&mut self) -> Result<Vec<Method>, String> {
        self.expect_punct('{')?;
        let mut methods: Vec<Method> = Vec::new();
        while !self.eat_punct('}') {
            let line = self.line();
            let oneway = self.eat_word("oneway");
            let returns = self.field_type()?;
            let name = self.ident()?;
            let args = self.fields('(', ')')?;
            let throws = if self.eat_word("throws") {
                self.fields('(', ')')?
            } else {
                Vec::new()
            };
            self.eat_separator();
            if let Some(first) = methods.iter().find(|m| m.name == name) {
                return Err(format!(
                    "line {line}: method `{name}` repeated (first at line {})",
                    first.line
                ));
            }
            methods.push(Method {
                name,
                oneway,
                returns,
                args,
                throws,
                line,
            });
        }
        Ok(methods)
    }
}
