//! Catches drift between the project's Thrift IDL (thrift/hbase.thrift) and the Thrift2 IDL HBase
//! itself ships inside hbase-thrift-<version>.jar. The project declares a subset of HBase's
//! interface, and everything it declares must match HBase's declaration: enum values, struct
//! fields (id, name, type, requiredness), and service methods (return type, arguments, throws).
//! The only accepted differences are those listed in `OPTIONAL_HERE` and `KNOWN_DRIFT` in
//! thrift_idl/allowed.rs, and an entry there that no longer matches anything fails too, so neither
//! list can rot.
//!
//! HBase's IDL comes from $HBASE_THRIFT_IDL when set, else from the hbase-thrift jar on the
//! classpath `scripts/real-hbase start` records in target/real-hbase/classpath.txt. Without
//! either the test says "skipped:" and passes, as tests/thrift_bindings.rs does without thrift.
//!
//! This file finds the two IDLs and holds the tests. The modules below model the parsed IDL
//! (`model`), read it (`parse`), compare two of them (`compare`) and judge the differences
//! (`allowed`); each uses only the ones before it in that order, never this file.

// A test crate's submodules resolve beside its root file; these live in tests/thrift_idl/.
#[path = "thrift_idl/allowed.rs"]
mod allowed;
#[path = "thrift_idl/compare.rs"]
mod compare;
#[path = "thrift_idl/model.rs"]
mod model;
#[path = "thrift_idl/parse.rs"]
mod parse;

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use allowed::judge;
use compare::{compare, Aspect};
use model::{Body, Decl, Field, Idl, Method};
use parse::parse_idl;

// ----------------------------------------------------------------------------------------------
// Finding the two files
// ----------------------------------------------------------------------------------------------

const PROJECT_IDL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/thrift/hbase.thrift");
const IDL_IN_JAR: &str = "org/apache/hadoop/hbase/thrift2/hbase.thrift";

fn project_text() -> String {
    std::fs::read_to_string(PROJECT_IDL)
        .unwrap_or_else(|e| panic!("cannot read {PROJECT_IDL}: {e}"))
}

enum Found {
    Idl {
        origin: String,
        text: String,
    },
    /// Why there is nothing to compare against.
    Missing(String),
}

/// `Err` means the IDL should be there but cannot be read, which fails the test rather than
/// skipping it.
fn find_official_idl() -> Result<Found, String> {
    if let Some(path) = std::env::var_os("HBASE_THRIFT_IDL").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("HBASE_THRIFT_IDL={}: {e}", path.display()))?;
        return Ok(Found::Idl {
            origin: path.display().to_string(),
            text,
        });
    }
    let listing = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/real-hbase/classpath.txt");
    let Ok(classpath) = std::fs::read_to_string(&listing) else {
        return Ok(Found::Missing(format!(
            "{} does not exist: run `scripts/real-hbase start`, which fetches HBase 2.6.1 and \
             writes it",
            listing.display()
        )));
    };
    let Some(jar) = classpath
        .split(':')
        .map(str::trim)
        .find(|e| is_hbase_thrift_jar(e))
    else {
        return Ok(Found::Missing(format!(
            "no hbase-thrift jar in {}: re-run `scripts/real-hbase start`",
            listing.display()
        )));
    };
    if !Path::new(jar).is_file() {
        return Ok(Found::Missing(format!(
            "{jar}, listed in {}, is gone: re-run `scripts/real-hbase start`",
            listing.display()
        )));
    }
    read_from_jar(Path::new(jar))
}

fn is_hbase_thrift_jar(entry: &str) -> bool {
    let name = Path::new(entry)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    name.starts_with("hbase-thrift-")
        && name.ends_with(".jar")
        && !name.ends_with("-tests.jar")
        && !name.ends_with("-sources.jar")
}

/// Reads the IDL out of the jar with `unzip`, or else with the JDK's `jar`: a machine that ran
/// Maven to fetch HBase has a JDK, but a fresh Debian has no unzip unless asked for it.
fn read_from_jar(jar: &Path) -> Result<Found, String> {
    let jar = jar
        .canonicalize()
        .map_err(|e| format!("{}: {e}", jar.display()))?;
    let origin = format!("{}!/{IDL_IN_JAR}", jar.display());
    let found = |bytes: Vec<u8>| match String::from_utf8(bytes) {
        Ok(text) => Ok(Found::Idl {
            origin: origin.clone(),
            text,
        }),
        Err(e) => Err(format!("{origin} is not UTF-8: {e}")),
    };
    match Command::new("unzip")
        .arg("-p")
        .arg(&jar)
        .arg(IDL_IN_JAR)
        .output()
    {
        Ok(out) if out.status.success() => return found(out.stdout),
        Ok(out) => {
            return Err(format!(
                "`unzip -p {} {IDL_IN_JAR}` failed ({}): {}",
                jar.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot run unzip: {e}")),
    }
    let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let out = match Command::new("jar")
        .arg("xf")
        .arg(&jar)
        .arg(IDL_IN_JAR)
        .current_dir(dir.path())
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let jar = jar.display();
            let why = format!(
                "neither unzip nor the JDK's jar is installed to read {jar}: apt-get install \
                 unzip"
            );
            return Ok(Found::Missing(why));
        }
        Err(e) => return Err(format!("cannot run jar: {e}")),
    };
    let extracted = dir.path().join(IDL_IN_JAR);
    match std::fs::read(&extracted) {
        Ok(bytes) if out.status.success() => found(bytes),
        _ => Err(format!(
            "`jar xf {} {IDL_IN_JAR}` did not extract it ({}): {}",
            jar.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

// ----------------------------------------------------------------------------------------------
// Tests
// ----------------------------------------------------------------------------------------------

/// One line per declaration, `line: kind name = body`, to assert on what the parser read.
fn render(idl: &Idl) -> Vec<String> {
    let join = |items: Vec<String>, sep: &str| items.join(sep);
    let fields = |fs: &[Field]| join(fs.iter().map(ToString::to_string).collect(), ", ");
    let method = |m: &Method| {
        let oneway = if m.oneway { "oneway " } else { "" };
        let (args, throws) = (fields(&m.args), fields(&m.throws));
        format!("{oneway}{} {}({args}) throws ({throws})", m.returns, m.name)
    };
    let body = |b: &Body| match b {
        Body::Enum(vs) => join(
            vs.iter()
                .map(|v| format!("{} {}", v.name, v.value))
                .collect(),
            ", ",
        ),
        Body::Struct(_, fs) => fields(fs),
        Body::Service { extends, methods } => {
            let extends = extends.iter().map(|e| format!("extends {e}"));
            join(extends.chain(methods.iter().map(method)).collect(), "; ")
        }
        Body::Typedef(t) | Body::Const(t) => t.to_string(),
    };
    let decl = |d: &Decl| {
        format!(
            "{}: {} {} = {}",
            d.line,
            d.body.kind(),
            d.name,
            body(&d.body)
        )
    };
    idl.decls.iter().map(decl).collect()
}

#[test]
fn project_idl_matches_hbases_own_idl() {
    let (origin, text) = match find_official_idl() {
        Ok(Found::Idl { origin, text }) => (origin, text),
        Ok(Found::Missing(why)) => {
            eprintln!(
                "skipped: HBase's Thrift2 IDL not available: {why}; or set HBASE_THRIFT_IDL to a \
                 copy of {IDL_IN_JAR}"
            );
            return;
        }
        Err(e) => panic!("HBase's Thrift2 IDL should be readable but is not: {e}"),
    };
    let official = parse_idl(&text).unwrap_or_else(|e| panic!("cannot parse {origin}: {e}"));
    let project =
        parse_idl(&project_text()).unwrap_or_else(|e| panic!("cannot parse {PROJECT_IDL}: {e}"));

    let comparison = compare(&project, &official);
    let (failures, accepted) = judge(&comparison.differences);
    for line in comparison.notes.iter().chain(&accepted) {
        println!("note: {line}");
    }
    assert!(
        failures.is_empty(),
        "thrift/hbase.thrift differs from {origin}:\n{}",
        failures.join("\n")
    );
}

#[test]
fn parser_reads_the_supported_subset() {
    let src = r#"
        # hash comment
        namespace * demo.ns   // line comment
        namespace rs demo
        include "other.thrift"
        /* block comment
           over lines, with struct Fake { 1: i32 x } inside */
        typedef binary Bytes
        const list<i32> PRIMES = [2, 3, 5];
        const map<string, i32> SIZES = {"a": 1, 'b': 0x10}
        const double RATIO = -1.5e-3
        enum Colour { RED, GREEN = 5, BLUE, }
        struct Thing {
          1: required Bytes key,
          2: optional map<string, list<set<i8>>> nested = {}
          -3: i64 negative = Colour.RED;
        }
        union Either { 1: Thing thing 2: string text }
        exception Oops { 1: optional string message }
        service Base {}
        service Demo extends Base {
          void ping(),
          oneway void fire(1: i32 n);
          list<Thing> fetch(1: required Bytes key, 2: optional i32 limit = 10)
            throws (1: Oops oops)
        }
    "#;
    let idl = parse_idl(src).unwrap_or_else(|e| panic!("inline IDL should parse: {e}"));
    assert_eq!(
        render(&idl),
        [
            "8: typedef Bytes = binary",
            "9: const PRIMES = list<i32>",
            "10: const SIZES = map<string, i32>",
            "11: const RATIO = double",
            "12: enum Colour = RED 0, GREEN 5, BLUE 6",
            "13: struct Thing = 1: required Bytes key, 2: optional map<string, list<set<i8>>> \
             nested, -3: i64 negative",
            "18: union Either = 1: Thing thing, 2: string text",
            "19: exception Oops = 1: optional string message",
            "20: service Base = ",
            "21: service Demo = extends Base; void ping() throws (); oneway void fire(1: i32 n) \
             throws (); list<Thing> fetch(1: required Bytes key, 2: optional i32 limit) throws \
             (1: Oops oops)",
        ]
    );
    let Some(Decl {
        body: Body::Struct(_, fields),
        ..
    }) = idl.get("Thing")
    else {
        panic!("Thing should be a struct: {:?}", idl.get("Thing"));
    };
    let resolved: Vec<String> = fields
        .iter()
        .map(|f| idl.resolve(&f.ty).to_string())
        .collect();
    assert_eq!(
        resolved,
        ["binary", "map<string, list<set<byte>>>", "i64"],
        "typedefs resolve, and i8 is byte on the wire"
    );

    // Malformed input is reported with its line, never a panic.
    for (bad, expected) in [
        (
            "struct A {\n 1: i32 x\n /* open",
            "line 3: unterminated /* comment",
        ),
        (
            "struct A {\n 1: i32 x,\n 1: i32 y }",
            "line 3: field id 1 used again",
        ),
        ("struct A { x: i32 }", "line 1: expected an integer"),
        ("enum E { A }\nenum E { B }", "line 2: `E` declared again"),
        ("senum S { }", "line 1: unsupported definition `senum`"),
        (
            "struct A { 1: i32 x @ }",
            "line 1: unexpected character '@'",
        ),
        (
            "service S { void f(",
            "line 1: expected an integer, found end of file",
        ),
    ] {
        match parse_idl(bad) {
            Ok(idl) => panic!("{bad:?} should not parse, got {idl:?}"),
            Err(e) => assert!(
                e.starts_with(expected),
                "{bad:?}: error {e:?} should start with {expected:?}"
            ),
        }
    }
}

#[test]
fn comparison_reports_a_changed_field_id() {
    let text = project_text();
    let (before, after) = ("1: required i64 minStamp", "3: required i64 minStamp");
    assert_eq!(
        text.matches(before).count(),
        1,
        "this test edits `{before}` in thrift/hbase.thrift; pick another field if it moved"
    );
    let drifted = text.replacen(before, after, 1);
    let reference = parse_idl(&text).unwrap_or_else(|e| panic!("cannot parse {PROJECT_IDL}: {e}"));
    let project = parse_idl(&drifted).unwrap_or_else(|e| panic!("edited IDL should parse: {e}"));

    let same = compare(&reference, &reference);
    assert!(
        same.differences.is_empty(),
        "an IDL should equal itself: {:#?}",
        same.differences
    );

    let drift = compare(&project, &reference);
    let reported: Vec<(&str, Aspect)> = drift
        .differences
        .iter()
        .map(|d| (d.place.as_str(), d.aspect))
        .collect();
    assert_eq!(
        reported,
        [("struct TTimeRange field 3", Aspect::OnlyInProject)],
        "moving a field id should be reported as exactly that: {:#?}",
        drift.differences
    );
    assert!(
        drift
            .notes
            .iter()
            .any(|n| n.starts_with("struct TTimeRange field 1: HBase also has")),
        "the field left behind should be noted: {:#?}",
        drift.notes
    );

    // Against HBase's real IDL the same edit must get past the allowances and fail the check.
    if let Ok(Found::Idl { origin, text }) = find_official_idl() {
        let official = parse_idl(&text).unwrap_or_else(|e| panic!("cannot parse {origin}: {e}"));
        let (failures, _) = judge(&compare(&project, &official).differences);
        assert!(
            failures
                .iter()
                .any(|f| f.starts_with("struct TTimeRange field 3:")),
            "the moved field should fail against {origin}: {failures:#?}"
        );
    }
}
