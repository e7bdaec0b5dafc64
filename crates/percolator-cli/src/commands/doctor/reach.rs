//! Whether the gateway and the oracle answer, and how the gateway is spoken to.

use std::time::Instant;

use percolator::hbase::{Endpoint, Protocol, Scheme, Transport};
use percolator::oracle::{physical_of, OracleClient};
use percolator::HBaseClient;

use super::verdict::Check;
use crate::commands::{connect_hbase, connect_oracle};

/// The `gateway` check: every gateway of the list answers a call (listing the tables), each
/// within `seconds`. Returns the client when at least one does: the other checks go on
/// through it, over the gateways that answer.
pub(super) fn gateway(addr: &str, seconds: f64) -> (Check, Option<HBaseClient>) {
    let fix_unreachable = "check the address and that the gateway runs (`hbase thrift2 start`), \
        and its mode: HOST:PORT for a raw socket, http:// or https:// when \
        hbase.regionserver.thrift.http is on";
    let started = Instant::now();
    let client = match connect_hbase(addr, seconds) {
        Ok(client) => client,
        Err(e) => return (Check::fail("gateway", e.to_string(), fix_unreachable), None),
    };
    let took = started.elapsed().as_millis();
    let tables = client.admin().list_tables().map(|t| t.len());
    let tables = tables.map_or_else(
        |e| format!("tables not listed: {e}"),
        |n| format!("{n} tables"),
    );
    let mode = mode(&client);
    let endpoints = Endpoint::parse_list(addr).unwrap_or_default();
    let silent: Vec<String> = if endpoints.len() > 1 {
        endpoints
            .iter()
            .map(ToString::to_string)
            .filter(|one| connect_hbase(one, seconds).is_err())
            .collect()
    } else {
        Vec::new()
    };
    let check = Check::ok(
        "gateway",
        format!("{addr} answers ({mode}; {tables}; first call {took} ms)"),
    )
    .warn_if(
        !silent.is_empty(),
        format!(
            "{} of {} gateways do not answer: {} ({mode})",
            silent.len(),
            endpoints.len(),
            silent.join(", ")
        ),
        "calls go to the others meanwhile; restart the silent gateways or take them off the list",
    );
    (check, Some(client))
}

/// How the client speaks to the gateway, in a few words.
fn mode(client: &HBaseClient) -> String {
    let config = client.config();
    let scheme = match Endpoint::parse_list(&config.addr)
        .ok()
        .and_then(|e| e.first().cloned())
    {
        Some(Endpoint {
            scheme: Scheme::Https,
            ..
        }) => "HTTPS",
        Some(Endpoint {
            scheme: Scheme::Http,
            ..
        }) => "HTTP",
        _ => "raw socket",
    };
    let framing = match config.transport {
        Transport::Buffered => "buffered",
        Transport::Framed => "framed",
    };
    let protocol = match config.protocol {
        Protocol::Binary => "binary",
        Protocol::Compact => "compact",
    };
    let mut mode = format!("{scheme}, {framing} {protocol} Thrift");
    if config.kerberos.is_some() {
        mode.push_str(", Kerberos");
    }
    if let Some(user) = &config.do_as {
        mode.push_str(&format!(", as {user}"));
    }
    mode
}

/// The `oracle` check: the oracle answers with a timestamp within `seconds`.
pub(super) fn oracle(addrs: &[String], seconds: f64) -> (Check, Option<OracleClient>) {
    match connect_oracle(addrs, seconds) {
        Ok((client, ts)) => {
            let detail = format!(
                "{} answers (timestamp {ts}, physical {} ms)",
                addrs.join(","),
                physical_of(ts)
            );
            (Check::ok("oracle", detail), Some(client))
        }
        Err(e) => (
            Check::fail(
                "oracle",
                e.to_string(),
                "check the address and that percolator-oracle runs (its log says why it stopped)",
            ),
            None,
        ),
    }
}
