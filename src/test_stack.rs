//! An emulator and an oracle in this process, and clients of them, for the library's unit
//! tests (percolator-workloads' `Stack` is the full version, for its workloads).

use std::sync::Arc;

use hbase_emulator::EmulatorHandle;

use crate::oracle::{MemoryStore, OracleHandle, OracleServer, TimestampSource};
use crate::txn::{self, LivenessConfig, TxnOptions};
use crate::{HBaseClient, HBaseConfig, OracleClient, Result};

/// Running services plus connected clients; the services stop when this is dropped.
pub(crate) struct Stack {
    pub hbase: HBaseClient,
    pub tso: Arc<dyn TimestampSource>,
    emulator: Option<EmulatorHandle>,
    oracle: Option<OracleHandle>,
}

impl Stack {
    pub fn start() -> Result<Stack> {
        let emulator = hbase_emulator::start_local()
            .map_err(|e| crate::Error::io("starting the HBase emulator", e))?;
        let oracle = OracleServer::start_local(MemoryStore::new())?;
        let hbase = HBaseClient::connect(HBaseConfig::new(emulator.local_addr().to_string()))?;
        let tso = Arc::new(OracleClient::connect(
            &[oracle.local_addr().to_string()],
            Default::default(),
        )?);
        Ok(Stack {
            hbase,
            tso,
            emulator: Some(emulator),
            oracle: Some(oracle),
        })
    }

    /// Options for the tests' clients, with the liveness table created if needed.
    pub fn txn_options(&self, liveness: LivenessConfig) -> Result<TxnOptions> {
        txn::setup::create_liveness_table(&self.hbase, &liveness)?;
        Ok(TxnOptions::builder().liveness(liveness).build())
    }

    pub fn client(&self, options: TxnOptions) -> Result<txn::Client> {
        txn::Client::new(
            Arc::new(self.hbase.asynchronous()),
            self.tso.clone(),
            options,
        )
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(oracle) = self.oracle.take() {
            let _ = oracle.shutdown();
        }
        if let Some(emulator) = self.emulator.take() {
            emulator.shutdown();
        }
    }
}
