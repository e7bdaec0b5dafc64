//! The tables' side: each user table's families and settings against what the protocol needs,
//! the meta table and the liveness table. What is needed is read from the definitions the
//! tables are created from (`Schema::families`, `user_family_changes`,
//! `meta_table_descriptor`, `LivenessConfig::table_descriptor`), never restated here.

use percolator::hbase::{FamilyDescriptor, HBaseClient, Scan, TableDescriptor};
use percolator::migrate::{self, user_family_changes};
use percolator::txn::{meta_table_descriptor, LivenessConfig, Schema};
use percolator::{Error, Result};

use super::verdict::Check;

fn name(f: &FamilyDescriptor) -> String {
    String::from_utf8_lossy(&f.name).into_owned()
}

fn versions(v: Option<i32>) -> String {
    v.map_or("default (1)".into(), |v| v.to_string())
}

/// What `desc` lacks of the percolator families `schema` defines: a family missing, a VERSIONS
/// other than the definition's, a TTL (the definitions have none).
fn percolator_family_problems(schema: &Schema, desc: &TableDescriptor) -> Vec<String> {
    let mut problems = Vec::new();
    for wanted in schema.families() {
        let Some(have) = desc.families.iter().find(|f| f.name == wanted.name) else {
            problems.push(format!("family {} is missing", name(&wanted)));
            continue;
        };
        if have.max_versions != wanted.max_versions {
            problems.push(format!(
                "family {}: VERSIONS is {}, transactions need {}",
                name(&wanted),
                versions(have.max_versions),
                versions(wanted.max_versions)
            ));
        }
        if let Some(ttl) = have.expiring_ttl() {
            problems.push(format!(
                "family {}: TTL is {ttl}s, transactions need FOREVER",
                name(&wanted)
            ));
        }
    }
    problems
}

/// The `families` check of `table`.
pub(super) fn families(hbase: &HBaseClient, schema: &Schema, table: &str) -> Check {
    let check = |hbase: &HBaseClient| -> Result<Check> {
        let desc = match hbase.admin().table_descriptor(table) {
            Ok(desc) => desc,
            Err(Error::TableNotFound { .. }) => {
                return Ok(Check::fail(
                    "families",
                    "the table does not exist",
                    "check the name (NAMESPACE:NAME), or create it: `percolator create`",
                ))
            }
            Err(e) => return Err(e),
        };
        let mut problems = percolator_family_problems(schema, &desc);
        let none_ours = schema
            .families()
            .iter()
            .all(|f| !desc.families.iter().any(|d| d.name == f.name));
        if none_ours {
            return Ok(Check::fail(
                "families",
                "not transactional: no percolator family",
                format!(
                    "`percolator migrate plan {table}`, then `percolator migrate apply {table}`"
                ),
            ));
        }
        problems.extend(user_family_changes(schema, &desc).into_iter().map(|c| {
            format!(
                "family {}: {} is {}, transactions need {}",
                c.family, c.setting, c.from, c.to
            )
        }));
        // A migration under way is what changes the families: its state says more than
        // their settings halfway.
        let state = migrate::status(hbase, schema, table)?.state;
        if state == "applying" || state == "disabling" {
            let settings = problems
                .iter()
                .map(|p| format!("; {p}"))
                .collect::<String>();
            return Ok(Check::warn(
                "families",
                format!("a migration is under way ({state}): transactions refuse the table until it ends{settings}"),
                format!("`percolator migrate status {table}`; run `migrate apply` or `migrate disable` again to finish it"),
            ));
        }
        if !problems.is_empty() {
            return Ok(Check::fail(
                "families",
                problems.join("; "),
                format!("set each as said in the HBase shell, e.g. `alter '{table}', {{NAME => 'FAMILY', VERSIONS => N, TTL => 'FOREVER'}}`"),
            ));
        }
        let users = desc
            .families
            .iter()
            .filter(|f| !schema.is_percolator_family(&f.name))
            .count();
        Ok(Check::ok(
            "families",
            format!("{users} user families and the percolator families as transactions need them ({state})"),
        ))
    };
    check(hbase)
        .unwrap_or_else(|e| {
            Check::fail(
                "families",
                format!("could not be read: {e}"),
                "see the error",
            )
        })
        .on(table)
}

/// The `meta_table` check: it exists, with the family and settings it is created with.
pub(super) fn meta_table(hbase: &HBaseClient, schema: &Schema) -> Check {
    let wanted = meta_table_descriptor(&schema.meta_table);
    let name = &schema.meta_table;
    let fix_missing = "`percolator create` or `percolator migrate apply` create it; \
        if yours has another name, pass --meta-table";
    let desc = match hbase.admin().table_descriptor(name) {
        Ok(desc) => desc,
        Err(Error::TableNotFound { .. }) => {
            return Check::fail(
                "meta_table",
                format!("{name} does not exist: no migration marker, observed column or safe point can be kept"),
                fix_missing,
            )
        }
        Err(e) => return Check::fail("meta_table", format!("{name} could not be read: {e}"), fix_missing),
    };
    let fix =
        "`alter` it in the HBase shell to its definition (family m, VERSIONS 1, TTL FOREVER); \
        never drop it: it holds the migration markers and the safe point";
    system_families("meta_table", &desc, &wanted, fix, |have| {
        have.expiring_ttl()
            .map(|ttl| format!("TTL is {ttl}s: markers and the safe point would expire"))
    })
}

/// The `liveness_table` check: it exists with its one family, whose TTL makes the rows of
/// crashed clients vanish; the detail counts the clients alive.
pub(super) fn liveness_table(hbase: &HBaseClient, liveness: &LivenessConfig) -> Check {
    let name = &liveness.table;
    let desc = match hbase.admin().table_descriptor(name) {
        Ok(desc) => desc,
        Err(Error::TableNotFound { .. }) => {
            return Check::warn(
                "liveness_table",
                format!("{name} does not exist: no client has connected yet"),
                "every client creates it when it connects; if yours has another name, pass --liveness-table",
            )
        }
        Err(e) => return Check::fail("liveness_table", format!("{name} could not be read: {e}"), "see the error"),
    };
    let fix = "disable and drop it: the next client recreates it as it should be (each live \
        client writes its row again at its next refresh)";
    // The publication family came later: a table without it still works, and is upgraded by
    // the next client that connects, so its absence is a warning of its own below.
    let publication = liveness.publication_family();
    let mut wanted = liveness.table_descriptor();
    wanted.families.retain(|f| f.name != publication.name);
    let check = system_families("liveness_table", &desc, &wanted, fix, |have| {
        match have.expiring_ttl() {
            Some(_) => None,
            None => Some("no TTL: a crashed client's row never expires, so its locks wait their whole TTL and GC's safe point stays behind its last open transaction".into()),
        }
    });
    if check.verdict != super::verdict::Verdict::Ok {
        return check;
    }
    if !desc.families.iter().any(|f| f.name == publication.name) {
        return Check::warn(
            "liveness_table",
            format!(
                "{name} has no publication family {}: while its region is away longer than the \
                 liveness TTL, GC may pass a long transaction (which then fails with \
                 SnapshotTooOld)",
                self::name(&publication)
            ),
            "connect any client of this version: it adds the family online",
        );
    }
    // A dead client's row keeps its publication for a while: count the live ones only.
    let alive = Scan::new()
        .caching(1000)
        .column(liveness.liveness_family(), liveness.liveness_qualifier());
    match hbase.scan(name, &alive).map(|rows| rows.count()) {
        Ok(alive) => Check {
            detail: format!("{} ({alive} clients alive)", check.detail),
            ..check
        },
        Err(e) => Check::fail(
            "liveness_table",
            format!("{name} could not be scanned: {e}"),
            "see the error",
        ),
    }
}

/// A system table's one family against its definition: present, and not made to expire when
/// `bad_ttl` says so.
fn system_families(
    check: &'static str,
    desc: &TableDescriptor,
    wanted: &TableDescriptor,
    fix: &str,
    bad_ttl: impl Fn(&FamilyDescriptor) -> Option<String>,
) -> Check {
    let mut problems = Vec::new();
    for f in &wanted.families {
        match desc.families.iter().find(|d| d.name == f.name) {
            None => problems.push(format!("family {} is missing", name(f))),
            Some(have) => {
                problems.extend(bad_ttl(have).map(|p| format!("family {}: {p}", name(f))))
            }
        }
    }
    if problems.is_empty() {
        let ttl = wanted
            .families
            .iter()
            .find_map(|f| desc.families.iter().find(|d| d.name == f.name))
            .and_then(FamilyDescriptor::expiring_ttl);
        let ttl = ttl.map_or(String::new(), |t| format!(", TTL {t}s"));
        Check::ok(check, format!("{}{ttl}", desc.name))
    } else {
        Check::fail(
            check,
            format!("{}: {}", desc.name, problems.join("; ")),
            fix,
        )
    }
}
