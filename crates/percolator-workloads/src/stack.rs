//! The services a demo or bench talks to: given addresses, or an emulator and an oracle started
//! in this process on 127.0.0.1 (the embedded default).

use std::sync::Arc;

use hbase_emulator::{self as emulator, EmulatorHandle};
use percolator::hbase::{HBaseClient, HBaseConfig};
use percolator::oracle::{
    ClientConfig, MemoryStore, OracleClient, OracleHandle, OracleServer, ServerConfig,
    TimestampSource,
};
use percolator::txn::{self, LivenessConfig, TxnOptions};
use percolator::{Error, Result};

/// Calls per connection against the in-process emulator: where transactions run fastest.
/// Against 4, writes gain 40-45% and reads stay; 32 trades 8% of the reads for 7-9% on the
/// writes (919c7e1; docs/benchmarks.md).
const EMBEDDED_PIPELINE: usize = 16;

/// Running services plus connected clients; in-process services stop when this is dropped.
pub struct Stack {
    pub hbase: HBaseClient,
    pub tso: Arc<dyn TimestampSource>,
    /// The oracle client behind `tso`, while it is one: its server's counters.
    oracle_client: Option<Arc<OracleClient>>,
    pub hbase_addr: String,
    pub oracle_addr: String,
    emulator: Option<EmulatorHandle>,
    oracle: Option<OracleHandle>,
}

impl Stack {
    /// Connects to `hbase` / `oracle` when given, else starts them in-process.
    pub fn start(hbase: Option<&str>, oracle: Option<&str>) -> Result<Stack> {
        Self::start_with(hbase, oracle, |config| config)
    }

    /// [`Stack::start`] with the HBase client's configuration adjusted by `tune` (the bench's
    /// `--pool` and `--pipeline`).
    pub fn start_with(
        hbase: Option<&str>,
        oracle: Option<&str>,
        tune: impl FnOnce(HBaseConfig) -> HBaseConfig,
    ) -> Result<Stack> {
        let (emulator, hbase_addr) = match hbase {
            Some(addr) => (None, addr.to_string()),
            None => {
                // The clients share this process's cores with the emulator: one I/O worker
                // (see `runtime::prefer_io_threads`).
                percolator::internals::prefer_io_threads(1);
                let handle = emulator::start_local()
                    .map_err(|e| Error::io("starting the HBase emulator", e))?;
                let addr = handle.local_addr().to_string();
                (Some(handle), addr)
            }
        };
        let (oracle, oracle_addr) = match oracle {
            Some(addr) => (None, addr.to_string()),
            None => {
                // On the clients' runtime: in-process, a thread of the oracle's own would add
                // a wake-up to every request, and on a small machine that cost is paid by the
                // calls the clients make meanwhile (73b7293; docs/benchmarks.md).
                let handle = OracleServer::start_on(
                    &percolator::internals::ambient_or_io()?,
                    "127.0.0.1:0",
                    MemoryStore::new(),
                    ServerConfig::default(),
                )?;
                let addr = handle.local_addr().to_string();
                (Some(handle), addr)
            }
        };
        let mut config = if emulator.is_some() {
            HBaseConfig::new(hbase_addr.clone())
        } else {
            percolator_cli::gateway::config(&hbase_addr)?
        }
        .pool_size(64);
        if emulator.is_some() {
            // The in-process emulator answers a loopback call in microseconds, less than the
            // wake-up a separate connection costs, so sharing connections pays there (calls
            // made together leave in one write), unlike on a real gateway, which serves one
            // connection's calls in turn (see `HBaseConfig::pipeline_per_connection`).
            config = config.pipeline_per_connection(EMBEDDED_PIPELINE);
        }
        let hbase = HBaseClient::connect(tune(config))?;
        let mut config = ClientConfig {
            // One lane batches the most (two made no measurable difference in either profile
            // once the lanes ran on the client's runtime).
            connections: 1,
            ..ClientConfig::default()
        };
        if oracle.is_none() {
            // An oracle given on the command line may be secured; the embedded one is plain.
            config = percolator_cli::oracle_access::client_config(config)?;
        }
        // A list fails over in order: the active oracle and its standbys.
        let addrs: Vec<String> = oracle_addr
            .split(',')
            .map(|a| a.trim().to_string())
            .collect();
        let oracle_client = Arc::new(OracleClient::connect(&addrs, config)?);
        Ok(Stack {
            hbase,
            tso: oracle_client.clone(),
            oracle_client: Some(oracle_client),
            hbase_addr,
            oracle_addr,
            emulator,
            oracle,
        })
    }

    /// Replaces the oracle with an in-process counter (`LocalTimestamps`): isolates the cost of
    /// the oracle round trip in benchmarks. Not for production: it is not shared between
    /// processes.
    pub fn use_local_timestamps(&mut self) {
        self.tso = Arc::new(percolator::oracle::LocalTimestamps::new());
        self.oracle_client = None;
        self.oracle_addr = "in-process counter".into();
    }

    /// Timestamp requests the oracle has answered so far (from every client), or `None` with
    /// local timestamps or when the server cannot say.
    pub fn oracle_requests(&self) -> Option<u64> {
        let stats = self.oracle_client.as_ref()?.server_stats();
        stats.map(|s| s.requests).ok()
    }

    pub fn is_embedded(&self) -> bool {
        self.emulator.is_some()
    }

    /// Options for workload clients, with the liveness table created if needed.
    pub fn txn_options(&self, liveness: LivenessConfig) -> Result<TxnOptions> {
        txn::setup::create_liveness_table(&self.hbase, &liveness)?;
        Ok(TxnOptions::builder().liveness(liveness).build())
    }

    /// [`Stack::txn_options`] whose clients keep their meta rows in `schema`'s meta table.
    pub fn txn_options_in(
        &self,
        schema: &txn::Schema,
        liveness: LivenessConfig,
    ) -> Result<TxnOptions> {
        Ok(self
            .txn_options(liveness)?
            .to_builder()
            .schema(schema.clone())
            .build())
    }

    /// Drops a bench's tables; one that cannot be dropped is logged, not an error.
    pub fn drop_tables(&self, tables: &[&str]) {
        let admin = self.hbase.admin();
        for t in tables {
            if let Err(e) = admin.disable_table(t).and_then(|()| admin.delete_table(t)) {
                tracing::warn!(table = %t, error = %e, "could not drop a bench table");
            }
        }
    }

    pub fn client(&self, options: TxnOptions) -> Result<txn::Client> {
        let store = Arc::new(self.hbase.asynchronous());
        txn::Client::new(store, self.tso.clone(), options)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(oracle) = self.oracle.take()
            && let Err(e) = oracle.shutdown()
        {
            tracing::warn!(error = %e, "oracle shutdown");
        }
        if let Some(emulator) = self.emulator.take() {
            emulator.shutdown();
        }
    }
}
