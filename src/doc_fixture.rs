// The hidden set-up of the library's doc examples, which include this file as an expression
// (it is no module of the crate): an emulator and an oracle on 127.0.0.1 and a table `t` with
// family `f`. Gives the services (kept alive until dropped), the gateway's config and the
// oracle addresses, for `Client::connect` or `AsyncClient::connect`.
{
    let emulator = hbase_emulator::start_local()?;
    let oracle = percolator::OracleServer::start_local(percolator::oracle::MemoryStore::new())?;
    let hbase = percolator::HBaseConfig::new(emulator.local_addr().to_string());
    let admin = percolator::HBaseClient::connect(hbase.clone())?;
    percolator::txn::setup::create_table(&admin, &Default::default(), "t", &["f"])?;
    let oracles = [oracle.local_addr().to_string()];
    ((emulator, oracle), hbase, oracles)
}
