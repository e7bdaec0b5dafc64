//! Routes one request message to its method.
//!
//! Most methods go through the generated `TTHBaseServiceProcessFunctions::process_*`. The
//! Rust generator treats every argument as required, but HBase's IDL leaves some without a
//! requiredness keyword and real clients omit them, so those methods are decoded by hand (in `optional.rs`):
//! checkAndPut/checkAndDelete/checkAndMutate (`value`), createTable (`splitKeys`),
//! getScannerRows/getScannerResults (`numRows`, default 1), getRegionLocation (`reload`),
//! getTableDescriptorsByPattern/getTableNamesByPattern (`regex`, `includeSysTables`) and
//! truncateTable (`preserveSplits`).
//!
//! A missing required argument gets TApplicationException PROTOCOL_ERROR and the connection
//! carries on (the message was read to its end); an unknown method gets UNKNOWN_METHOD; input
//! that cannot be decoded ends the connection.

mod optional;

use thrift::protocol::{TInputProtocol, TMessageType, TOutputProtocol, TType};
use thrift::{ApplicationError, ApplicationErrorKind, ProtocolError, ProtocolErrorKind};

use crate::handler::Handler;
use crate::wire::MessageInput;
use percolator_thrift::hbase::TTHBaseServiceProcessFunctions as P;

/// Where the input stream stands after a message.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    /// At the start of the next message.
    Continue,
    /// Somewhere inside the failed message: an unframed connection must close, a framed one
    /// resumes at the next frame.
    Desynced,
}

/// Reads one request from `input` and writes its reply to `output`.
pub fn serve<I: MessageInput>(
    h: &Handler,
    input: &mut I,
    output: &mut dyn TOutputProtocol,
) -> thrift::Result<After> {
    let ident = input.read_message_begin()?;
    if !matches!(
        ident.message_type,
        TMessageType::Call | TMessageType::OneWay
    ) {
        return Err(thrift::Error::Protocol(ProtocolError::new(
            ProtocolErrorKind::InvalidData,
            format!("expected a call, got {:?}", ident.message_type),
        )));
    }
    let seq = ident.sequence_number;
    let i: &mut dyn TInputProtocol = &mut *input;
    let o = output;
    let result = match ident.name.as_str() {
        "checkAndPut" => optional::check_and_put(h, seq, i, o),
        "checkAndDelete" => optional::check_and_delete(h, seq, i, o),
        "checkAndMutate" => optional::check_and_mutate(h, seq, i, o),
        "createTable" => optional::create_table(h, seq, i, o),
        "getScannerRows" => optional::get_scanner_rows(h, seq, i, o),
        "getScannerResults" => optional::get_scanner_results(h, seq, i, o),
        "getRegionLocation" => optional::get_region_location(h, seq, i, o),
        "getTableDescriptorsByPattern" => optional::by_pattern(h, seq, i, o, true),
        "getTableNamesByPattern" => optional::by_pattern(h, seq, i, o, false),
        "truncateTable" => optional::truncate_table(h, seq, i, o),
        "exists" => P::process_exists(h, seq, i, o),
        "existsAll" => P::process_exists_all(h, seq, i, o),
        "get" => P::process_get(h, seq, i, o),
        "getMultiple" => P::process_get_multiple(h, seq, i, o),
        "put" => P::process_put(h, seq, i, o),
        "putMultiple" => P::process_put_multiple(h, seq, i, o),
        "deleteSingle" => P::process_delete_single(h, seq, i, o),
        "deleteMultiple" => P::process_delete_multiple(h, seq, i, o),
        "increment" => P::process_increment(h, seq, i, o),
        "append" => P::process_append(h, seq, i, o),
        "openScanner" => P::process_open_scanner(h, seq, i, o),
        "closeScanner" => P::process_close_scanner(h, seq, i, o),
        "mutateRow" => P::process_mutate_row(h, seq, i, o),
        "getAllRegionLocations" => P::process_get_all_region_locations(h, seq, i, o),
        "getTableDescriptor" => P::process_get_table_descriptor(h, seq, i, o),
        "getTableDescriptors" => P::process_get_table_descriptors(h, seq, i, o),
        "tableExists" => P::process_table_exists(h, seq, i, o),
        "getTableDescriptorsByNamespace" => {
            P::process_get_table_descriptors_by_namespace(h, seq, i, o)
        }
        "getTableNamesByNamespace" => P::process_get_table_names_by_namespace(h, seq, i, o),
        "deleteTable" => P::process_delete_table(h, seq, i, o),
        "enableTable" => P::process_enable_table(h, seq, i, o),
        "disableTable" => P::process_disable_table(h, seq, i, o),
        "isTableEnabled" => P::process_is_table_enabled(h, seq, i, o),
        "isTableDisabled" => P::process_is_table_disabled(h, seq, i, o),
        "isTableAvailable" => P::process_is_table_available(h, seq, i, o),
        "addColumnFamily" => P::process_add_column_family(h, seq, i, o),
        "deleteColumnFamily" => P::process_delete_column_family(h, seq, i, o),
        "modifyColumnFamily" => P::process_modify_column_family(h, seq, i, o),
        "modifyTable" => P::process_modify_table(h, seq, i, o),
        "createNamespace" => P::process_create_namespace(h, seq, i, o),
        "modifyNamespace" => P::process_modify_namespace(h, seq, i, o),
        "deleteNamespace" => P::process_delete_namespace(h, seq, i, o),
        "getNamespaceDescriptor" => P::process_get_namespace_descriptor(h, seq, i, o),
        "listNamespaceDescriptors" => P::process_list_namespace_descriptors(h, seq, i, o),
        "listNamespaces" => P::process_list_namespaces(h, seq, i, o),
        "getThriftServerType" => P::process_get_thrift_server_type(h, seq, i, o),
        "getClusterId" => P::process_get_cluster_id(h, seq, i, o),
        other => {
            // As Java's TBaseProcessor: skip the arguments, answer UNKNOWN_METHOD.
            i.skip(TType::Struct)?;
            i.read_message_end()?;
            let e = ApplicationError::new(
                ApplicationErrorKind::UnknownMethod,
                format!("Invalid method name: '{other}'"),
            );
            optional::write_exception(o, &ident.name, seq, &e)?;
            return Ok(After::Continue);
        }
    };
    match result {
        Ok(()) => Ok(After::Continue),
        Err(thrift::Error::Protocol(e)) => {
            let in_sync = input.args_complete();
            let reply = ApplicationError::new(ApplicationErrorKind::ProtocolError, e.message);
            optional::write_exception(o, &ident.name, seq, &reply)?;
            Ok(if in_sync {
                After::Continue
            } else {
                After::Desynced
            })
        }
        Err(e) => Err(e),
    }
}
