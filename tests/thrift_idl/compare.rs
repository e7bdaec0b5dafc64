//! The comparison of the project's IDL with HBase's: every difference in what the project
//! declares, and notes on what HBase declares beyond it.

use std::fmt;

use crate::model::{Body, EnumValue, Field, Idl, Method};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aspect {
    /// The project declares it, HBase does not.
    OnlyInProject,
    /// HBase declares an argument or exception the project's method lacks.
    OnlyInOfficial,
    Kind,
    Name,
    Type,
    Requiredness,
    Value,
    Oneway,
    Extends,
}

impl fmt::Display for Aspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Aspect::OnlyInProject => "only in the project",
            Aspect::OnlyInOfficial => "only in HBase",
            Aspect::Kind => "kind",
            Aspect::Name => "name",
            Aspect::Type => "type",
            Aspect::Requiredness => "requiredness",
            Aspect::Value => "value",
            Aspect::Oneway => "oneway",
            Aspect::Extends => "extends",
        })
    }
}

#[derive(Debug)]
pub(crate) struct Difference {
    /// What differs, e.g. `struct TDelete field 8` or `THBaseService.checkAndPut argument 5`.
    pub(crate) place: String,
    pub(crate) aspect: Aspect,
    pub(crate) project: String,
    pub(crate) official: String,
    project_line: usize,
    official_line: Option<usize>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (place, pl) = (&self.place, self.project_line);
        let ol = self
            .official_line
            .map_or("?".to_string(), |l| l.to_string());
        match self.aspect {
            Aspect::OnlyInProject => write!(
                f,
                "{place}: `{}` (project line {pl}) is not in HBase's IDL",
                self.project
            ),
            Aspect::OnlyInOfficial => write!(
                f,
                "{place}: HBase declares `{}` (HBase line {ol}), the project does not (project line {pl})",
                self.official
            ),
            aspect => write!(
                f,
                "{place}: {aspect} is `{}` in the project (line {pl}) but `{}` in HBase (line {ol})",
                self.project, self.official
            ),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) differences: Vec<Difference>,
    /// What HBase declares beyond the project's subset, for information only.
    pub(crate) notes: Vec<String>,
}

impl Comparison {
    /// Records a difference when the two sides disagree on `aspect`; each side is a value and
    /// the line it was declared on.
    fn check<T: PartialEq + fmt::Display>(
        &mut self,
        place: &str,
        aspect: Aspect,
        (ours, project_line): (T, usize),
        (theirs, official_line): (T, usize),
    ) {
        if ours != theirs {
            self.differences.push(Difference {
                place: place.to_string(),
                aspect,
                project: ours.to_string(),
                official: theirs.to_string(),
                project_line,
                official_line: Some(official_line),
            });
        }
    }

    fn only_in_project(&mut self, place: &str, declared: String, line: usize) {
        self.differences.push(Difference {
            place: place.to_string(),
            aspect: Aspect::OnlyInProject,
            project: declared,
            official: String::new(),
            project_line: line,
            official_line: None,
        });
    }
}

/// The two IDLs, each needed to resolve its own typedefs.
struct Sides<'a> {
    project: &'a Idl,
    official: &'a Idl,
}

/// What to make of a field HBase declares and the project leaves out: fine in a struct (the
/// project reads and writes a subset), a difference in a method's signature.
#[derive(Clone, Copy, PartialEq)]
enum Omitted {
    Note,
    Difference,
}

pub(crate) fn compare(project: &Idl, official: &Idl) -> Comparison {
    let sides = Sides { project, official };
    let mut c = Comparison::default();
    for ours in &project.decls {
        let kind = ours.body.kind();
        let place = format!("{kind} {}", ours.name);
        let Some(theirs) = official.get(&ours.name) else {
            c.only_in_project(&place, place.clone(), ours.line);
            continue;
        };
        let (pl, ol) = (ours.line, theirs.line);
        if kind != theirs.body.kind() {
            c.check(&place, Aspect::Kind, (kind, pl), (theirs.body.kind(), ol));
            continue;
        }
        match (&ours.body, &theirs.body) {
            (Body::Enum(a), Body::Enum(b)) => compare_enum(&mut c, &place, a, b),
            (Body::Struct(_, a), Body::Struct(_, b)) => {
                let place = format!("{place} field");
                compare_fields(&mut c, &sides, &place, (a, b), pl, Omitted::Note);
            }
            (
                Body::Service {
                    extends: a,
                    methods: ma,
                },
                Body::Service {
                    extends: b,
                    methods: mb,
                },
            ) => {
                let (a, b) = (
                    a.as_deref().unwrap_or("(none)"),
                    b.as_deref().unwrap_or("(none)"),
                );
                c.check(&place, Aspect::Extends, (a, pl), (b, ol));
                compare_methods(&mut c, &sides, &ours.name, ma, mb);
            }
            (Body::Typedef(a), Body::Typedef(b)) | (Body::Const(a), Body::Const(b)) => {
                c.check(
                    &place,
                    Aspect::Type,
                    (project.resolve(a), pl),
                    (official.resolve(b), ol),
                );
            }
            // Equal kinds mean equal variants; nothing else can reach here.
            _ => {}
        }
    }
    for theirs in official
        .decls
        .iter()
        .filter(|d| project.get(&d.name).is_none())
    {
        let (kind, name, line) = (theirs.body.kind(), &theirs.name, theirs.line);
        c.notes.push(format!(
            "HBase also declares {kind} {name} (HBase line {line})"
        ));
    }
    c
}

fn compare_enum(c: &mut Comparison, place: &str, ours: &[EnumValue], theirs: &[EnumValue]) {
    for v in ours {
        let here = format!("{place} value {}", v.name);
        match theirs.iter().find(|t| t.name == v.name) {
            None => c.only_in_project(&here, format!("{} = {}", v.name, v.value), v.line),
            Some(t) => c.check(&here, Aspect::Value, (v.value, v.line), (t.value, t.line)),
        }
    }
    for t in theirs
        .iter()
        .filter(|t| !ours.iter().any(|v| v.name == t.name))
    {
        let (name, value, line) = (&t.name, t.value, t.line);
        c.notes.push(format!(
            "HBase's {place} also has {name} = {value} (HBase line {line})"
        ));
    }
}

/// Fields are matched by id, the only thing the wire carries; `place` is e.g.
/// `struct TDelete field` and gets the id appended.
fn compare_fields(
    c: &mut Comparison,
    sides: &Sides<'_>,
    place: &str,
    (ours, theirs): (&[Field], &[Field]),
    owner_line: usize,
    omitted: Omitted,
) {
    for f in ours {
        let here = format!("{place} {}", f.id);
        let Some(t) = theirs.iter().find(|t| t.id == f.id) else {
            c.only_in_project(&here, f.to_string(), f.line);
            continue;
        };
        let (pl, ol) = (f.line, t.line);
        c.check(&here, Aspect::Name, (&f.name, pl), (&t.name, ol));
        let (a, b) = (sides.project.resolve(&f.ty), sides.official.resolve(&t.ty));
        c.check(&here, Aspect::Type, (a, pl), (b, ol));
        c.check(&here, Aspect::Requiredness, (f.req, pl), (t.req, ol));
    }
    for t in theirs.iter().filter(|t| !ours.iter().any(|f| f.id == t.id)) {
        let here = format!("{place} {}", t.id);
        if omitted == Omitted::Note {
            c.notes.push(format!(
                "{here}: HBase also has `{t}` (HBase line {})",
                t.line
            ));
            continue;
        }
        c.differences.push(Difference {
            place: here,
            aspect: Aspect::OnlyInOfficial,
            project: String::new(),
            official: t.to_string(),
            project_line: owner_line,
            official_line: Some(t.line),
        });
    }
}

fn compare_methods(
    c: &mut Comparison,
    sides: &Sides<'_>,
    service: &str,
    ours: &[Method],
    theirs: &[Method],
) {
    for m in ours {
        let place = format!("{service}.{}", m.name);
        let Some(t) = theirs.iter().find(|t| t.name == m.name) else {
            c.only_in_project(&place, format!("method {}", m.name), m.line);
            continue;
        };
        let (pl, ol) = (m.line, t.line);
        c.check(&place, Aspect::Oneway, (m.oneway, pl), (t.oneway, ol));
        let (a, b) = (
            sides.project.resolve(&m.returns),
            sides.official.resolve(&t.returns),
        );
        c.check(&format!("{place} return"), Aspect::Type, (a, pl), (b, ol));
        let (args, throws) = (format!("{place} argument"), format!("{place} throws"));
        compare_fields(c, sides, &args, (&m.args, &t.args), pl, Omitted::Difference);
        compare_fields(
            c,
            sides,
            &throws,
            (&m.throws, &t.throws),
            pl,
            Omitted::Difference,
        );
    }
    for t in theirs
        .iter()
        .filter(|t| !ours.iter().any(|m| m.name == t.name))
    {
        let (name, line) = (&t.name, t.line);
        c.notes.push(format!(
            "HBase's {service} also has method {name} (HBase line {line})"
        ));
    }
}
