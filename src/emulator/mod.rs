//! In-memory HBase Thrift2 server (see issue 2).
