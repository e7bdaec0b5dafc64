//! The parsed IDL: declarations (enums, structs, services, typedefs, constants) with the line
//! each was declared on, and typedef resolution so equal wire types compare equal.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    Name(String),
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>, Box<Type>),
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Name(n) => f.write_str(n),
            Type::List(t) => write!(f, "list<{t}>"),
            Type::Set(t) => write!(f, "set<{t}>"),
            Type::Map(k, v) => write!(f, "map<{k}, {v}>"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Req {
    Required,
    Optional,
    Default,
}

impl fmt::Display for Req {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Req::Required => "required",
            Req::Optional => "optional",
            Req::Default => "default",
        })
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub(crate) id: i64,
    pub(crate) req: Req,
    pub(crate) ty: Type,
    pub(crate) name: String,
    pub(crate) line: usize,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.req {
            Req::Default => write!(f, "{}: {} {}", self.id, self.ty, self.name),
            req => write!(f, "{}: {req} {} {}", self.id, self.ty, self.name),
        }
    }
}

#[derive(Debug)]
pub(crate) struct EnumValue {
    pub(crate) name: String,
    pub(crate) value: i64,
    pub(crate) line: usize,
}

#[derive(Debug)]
pub(crate) struct Method {
    pub(crate) name: String,
    pub(crate) oneway: bool,
    pub(crate) returns: Type,
    pub(crate) args: Vec<Field>,
    pub(crate) throws: Vec<Field>,
    pub(crate) line: usize,
}

#[derive(Debug)]
pub(crate) enum Body {
    Enum(Vec<EnumValue>),
    /// `struct`, `union` or `exception`, with the keyword.
    Struct(&'static str, Vec<Field>),
    Service {
        extends: Option<String>,
        methods: Vec<Method>,
    },
    Typedef(Type),
    Const(Type),
}

impl Body {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Body::Enum(_) => "enum",
            Body::Struct(keyword, _) => keyword,
            Body::Service { .. } => "service",
            Body::Typedef(_) => "typedef",
            Body::Const(_) => "const",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Decl {
    pub(crate) name: String,
    pub(crate) line: usize,
    pub(crate) body: Body,
}

#[derive(Debug, Default)]
pub(crate) struct Idl {
    pub(crate) decls: Vec<Decl>,
}

impl Idl {
    pub(crate) fn get(&self, name: &str) -> Option<&Decl> {
        self.decls.iter().find(|d| d.name == name)
    }

    /// The type as the wire sees it: typedefs replaced by what they name, `i8` spelled `byte`
    /// (Thrift's two names for one wire type), so equal wire types compare equal.
    pub(crate) fn resolve(&self, ty: &Type) -> Type {
        self.resolve_within(ty, 0)
    }

    fn resolve_within(&self, ty: &Type, depth: usize) -> Type {
        match ty {
            Type::Name(n) if n == "i8" => Type::Name("byte".to_string()),
            // The depth bound only stops a typedef cycle (which thrift itself rejects) from
            // recursing forever; such a name is left as written.
            Type::Name(n) => match self.get(n) {
                Some(Decl {
                    body: Body::Typedef(t),
                    ..
                }) if depth < 32 => self.resolve_within(t, depth + 1),
                _ => ty.clone(),
            },
            Type::List(t) => Type::List(Box::new(self.resolve_within(t, depth))),
            Type::Set(t) => Type::Set(Box::new(self.resolve_within(t, depth))),
            Type::Map(k, v) => Type::Map(
                Box::new(self.resolve_within(k, depth)),
                Box::new(self.resolve_within(v, depth)),
            ),
        }
    }
}
