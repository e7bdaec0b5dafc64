//! `percolator create`: a new transactional table, through whatever gateway mode reaches the
//! cluster (the library's `txn::setup::create_table` as a command).

use percolator::hbase::TableDescriptor;
use percolator::txn::{setup, LockGranularity, Schema};
use percolator::{Error, Result};

use super::{connect_hbase, print_json, DEFAULT_TIMEOUT_S};

/// `percolator create`'s arguments.
///
/// ```
/// use clap::Parser;
/// let cli = percolator_cli::cli::Cli::parse_from([
///     "percolator", "create", "--hbase", "https://gw:9090", "accounts", "f", "g:10",
/// ]);
/// let percolator_cli::cli::Command::Create(args) = cli.command else { panic!() };
/// assert_eq!(args.families, ["f", "g:10"]);
/// ```
#[derive(clap::Args, Clone, Debug)]
pub struct CreateArgs {
    /// The HBase Thrift2 gateway: HOST:PORT, http://HOST:PORT, https://HOST:PORT, or a
    /// comma-separated list; `HBASE_THRIFT` when not given (as `HBaseConfig::with_env`).
    #[arg(long, env = "HBASE_THRIFT")]
    pub hbase: String,
    /// The table to create, NAMESPACE:NAME or NAME.
    pub table: String,
    /// User families, FAMILY or FAMILY:VERSIONS. By default a family keeps every version
    /// (each is a transaction's start_ts, and GC removes what no reader needs); VERSIONS keeps
    /// only that many, which bounds how far back a snapshot can read the family.
    #[arg(required = true, value_name = "FAMILY[:VERSIONS]")]
    pub families: Vec<String>,
    /// What one lock covers: `cell` (writers of different columns of a row never conflict)
    /// or `row` (a transaction's writes to a row cost one prewrite and one commit, and any
    /// two writers of a row conflict). Fixed once the table exists.
    #[arg(long, value_name = "cell|row", default_value = "cell")]
    pub lock_granularity: LockGranularity,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The most time the command may take (5, 5s, 500ms, 1m).
    #[arg(long, value_name = "DURATION", default_value_t = DEFAULT_TIMEOUT_S, value_parser = crate::tools::duration::seconds)]
    pub timeout: f64,
}

/// One `FAMILY[:VERSIONS]` argument.
fn family(arg: &str) -> Result<(String, Option<i32>)> {
    let bad = |why: &str| Error::IllegalArgument {
        message: format!("family `{arg}`: {why} (expected FAMILY or FAMILY:VERSIONS)"),
    };
    let (name, versions) = match arg.split_once(':') {
        Some((name, versions)) => {
            let versions = versions
                .parse::<i32>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| bad("VERSIONS must be a whole number above 0"))?;
            (name, Some(versions))
        }
        None => (arg, None),
    };
    if name.is_empty() {
        return Err(bad("no family name"));
    }
    Ok((name.to_owned(), versions))
}

/// The table `args` describe: the user families as asked, with the percolator families.
fn descriptor(schema: &Schema, args: &CreateArgs) -> Result<TableDescriptor> {
    let families = args
        .families
        .iter()
        .map(|arg| family(arg))
        .collect::<Result<Vec<_>>>()?;
    let reserved = schema.families();
    let mut table = TableDescriptor::new(args.table.clone());
    for (name, versions) in families {
        if reserved.iter().any(|f| f.name == name.as_bytes()) {
            return Err(Error::IllegalArgument {
                message: format!("family `{name}` is one the transactions keep for themselves"),
            });
        }
        let mut family = Schema::user_family(name.as_bytes());
        if let Some(versions) = versions {
            family = family.max_versions(versions);
        }
        table = table.family(family);
    }
    for family in reserved {
        table = table.family(family);
    }
    Ok(table)
}

/// Runs `percolator create`: `Ok(true)` once the table exists with the percolator families.
pub fn create(args: &CreateArgs) -> Result<bool> {
    let schema = Schema::default();
    let table = descriptor(&schema, args)?;
    let hbase = connect_hbase(&args.hbase, args.timeout)?;
    let created = setup::create_with(&hbase, &schema, &table, args.lock_granularity)?;
    if args.json {
        print_json(&serde_json::json!({
            "table": args.table,
            "created": created,
            "lock_granularity": args.lock_granularity.to_string(),
        }));
    } else if created {
        println!(
            "created {} (transactional, {} locks)",
            args.table, args.lock_granularity
        );
    } else {
        println!("{} already exists and is transactional", args.table);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_take_an_optional_version_count() {
        assert_eq!(family("f").unwrap(), ("f".into(), None));
        assert_eq!(family("f:3").unwrap(), ("f".into(), Some(3)));
        for bad in ["f:0", "f:-1", "f:x", ":3"] {
            assert!(family(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_reserved_families_are_refused() {
        let schema = Schema::default();
        let lock = String::from_utf8(schema.families()[0].name.clone()).unwrap();
        let args = CreateArgs {
            hbase: "h:1".into(),
            table: "t".into(),
            families: vec![lock],
            lock_granularity: Default::default(),
            json: false,
            timeout: 1.0,
        };
        assert!(descriptor(&schema, &args).is_err());
    }
}
