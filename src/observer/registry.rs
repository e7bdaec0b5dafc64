//! Registering observed columns, and counting the rows with notifications not yet cleared.

use crate::error::Result;
use crate::format::meta::{meta_row, META_FAMILY};
use crate::hbase::{Put, Scan, TimeRange};
use crate::observer::model::{
    self, check_observer_name, notification_filter, parse_notification, registry_cell,
    ObservedColumn,
};
use crate::txn::store::next_page_start;
use crate::txn::table_checks;
use crate::txn::ALL_VERSIONS;
use crate::AsyncClient;

/// Marks `column` observed by `observer` in the meta table. Clients that have the table's meta
/// row cached see it within `META_REFRESH` (5 s); changes committed before then may lack
/// their notification (docs/observers.md).
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// use percolator::observer::{register, ObservedColumn};
/// register(&client, &ObservedColumn::new("docs", "f", "content"), "indexer").await?;
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn register(client: &AsyncClient, column: &ObservedColumn, observer: &str) -> Result<()> {
    check_observer_name(observer)?;
    let ctx = client.ctx();
    column.key(b"r")?; // a valid cell address
    table_checks::check_table(ctx, &column.table).await?;
    let schema = ctx.schema();
    for family in [&schema.notify_family, &schema.ack_family, &column.family] {
        table_checks::check_family(ctx, &column.table, family).await?;
    }
    let (q, v) = registry_cell(column, observer);
    let row = meta_row(&column.table);
    let put = Put::new(row.clone()).add(META_FAMILY, q, v);
    ctx.store().put(&ctx.schema().meta_table, &put).await?;
    table_checks::refresh_meta_row(ctx, &row).await.map(drop)
}

/// The observed columns of `table` and their observers' names, as registered in the meta
/// table (read now).
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// use percolator::observer::{observed_columns, register, ObservedColumn};
/// let col = ObservedColumn::new("docs", "f", "content");
/// register(&client, &col, "indexer").await?;
/// assert_eq!(observed_columns(&client, "docs").await?, [(col, "indexer".to_string())]);
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn observed_columns(
    client: &AsyncClient,
    table: &str,
) -> Result<Vec<(ObservedColumn, String)>> {
    let row = table_checks::refresh_meta_row(client.ctx(), &meta_row(table)).await?;
    Ok(model::observed_columns(table, &row))
}

/// Rows per page when counting notifications.
const COUNT_PAGE: i32 = 1000;

/// Rows of `table` with a notification not yet cleared (of any observed column): the rows
/// some observer run still has to look at. A row counts once however many changes (each
/// leaves a notification version) and observed columns it has pending; 0 means every change
/// committed to the table's observed columns so far has been processed (or found
/// acknowledged) by a committed run. One scan of the notify family (`_pn`), read now; for
/// "everything committed before now has been processed" by a running worker, see
/// [`ObserverWorker::wait_idle`](crate::observer::ObserverWorker::wait_idle).
///
/// ```
/// # let emulator = hbase_emulator::start_local()?;
/// # let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
/// # let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
/// # let admin = percolator::HBaseClient::connect(hbase.clone())?;
/// # percolator::txn::setup::create_table(&admin, &Default::default(), "docs", &["f"])?;
/// # let oracles = [oracle.local_addr().to_string()];
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let client = percolator::AsyncClient::connect(hbase, &oracles, Default::default()).await?;
/// assert_eq!(percolator::observer::pending_notifications(&client, "docs").await?, 0);
/// # client.shutdown().await;
/// # Ok::<(), percolator::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn pending_notifications(client: &AsyncClient, table: &str) -> Result<usize> {
    pending_rows(client, table, None, |_| true).await
}

/// Rows of `table` with a notification of a column `wanted` accepts (family, qualifier) at a
/// version at most `max_version` (every version when `None`).
pub(super) async fn pending_rows(
    client: &AsyncClient,
    table: &str,
    max_version: Option<u64>,
    wanted: impl Fn(&(Vec<u8>, Vec<u8>)) -> bool,
) -> Result<usize> {
    let ctx = client.ctx();
    let mut from = Vec::new();
    let mut count = 0;
    loop {
        let mut scan = notification_scan(ctx.schema(), from.clone(), Vec::new());
        if let Some(max) = max_version {
            scan = scan.time_range(TimeRange::up_to(crate::txn::actions::ts(max)));
        }
        let page = ctx.store().scan_page(table, &scan, COUNT_PAGE).await?;
        count += page
            .iter()
            .filter(|r| {
                r.cells
                    .iter()
                    .filter_map(|c| parse_notification(&c.qualifier))
                    .any(|column| wanted(&column))
            })
            .count();
        match next_page_start(&page, COUNT_PAGE) {
            Some(next) => from = next,
            None => return Ok(count),
        }
    }
}

pub(super) fn notification_scan(
    schema: &crate::txn::Schema,
    start: Vec<u8>,
    stop: Vec<u8>,
) -> Scan {
    Scan::range(start, stop)
        .family(schema.notify_family.clone())
        .filter(notification_filter())
        .max_versions(ALL_VERSIONS)
}
