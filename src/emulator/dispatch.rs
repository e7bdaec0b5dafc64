//! Routes one request message to its method.
//!
//! Most methods go through the generated `TTHBaseServiceProcessFunctions::process_*`. The
//! Rust generator treats every argument as required, but HBase's IDL leaves some without a
//! requiredness keyword and real clients omit them, so those methods are decoded here by hand:
//! checkAndPut/checkAndDelete/checkAndMutate (`value`), createTable (`splitKeys`),
//! getScannerRows/getScannerResults (`numRows`, default 1), getRegionLocation (`reload`),
//! getTableDescriptorsByPattern/getTableNamesByPattern (`regex`, `includeSysTables`) and
//! truncateTable (`preserveSplits`).
//!
//! A missing required argument gets TApplicationException PROTOCOL_ERROR and the connection
//! carries on (the message was read to its end); an unknown method gets UNKNOWN_METHOD; input
//! that cannot be decoded ends the connection.

use thrift::protocol::{
    field_id, TFieldIdentifier, TInputProtocol, TListIdentifier, TMessageIdentifier, TMessageType,
    TOutputProtocol, TSerializable, TStructIdentifier, TType,
};
use thrift::{ApplicationError, ApplicationErrorKind, ProtocolError, ProtocolErrorKind};

use crate::emulator::error::{Declared, ServerResult};
use crate::emulator::handler::Handler;
use crate::emulator::wire::MessageInput;
use crate::thrift::hbase::{
    TCompareOperator, TDelete, TPut, TRowMutations, TScan, TTHBaseServiceProcessFunctions as P,
    TTableDescriptor, TTableName,
};

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
        "checkAndPut" => check_and_put(h, seq, i, o),
        "checkAndDelete" => check_and_delete(h, seq, i, o),
        "checkAndMutate" => check_and_mutate(h, seq, i, o),
        "createTable" => create_table(h, seq, i, o),
        "getScannerRows" => get_scanner_rows(h, seq, i, o),
        "getScannerResults" => get_scanner_results(h, seq, i, o),
        "getRegionLocation" => get_region_location(h, seq, i, o),
        "getTableDescriptorsByPattern" => by_pattern(h, seq, i, o, true),
        "getTableNamesByPattern" => by_pattern(h, seq, i, o, false),
        "truncateTable" => truncate_table(h, seq, i, o),
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
            write_exception(o, &ident.name, seq, &e)?;
            return Ok(After::Continue);
        }
    };
    match result {
        Ok(()) => Ok(After::Continue),
        Err(thrift::Error::Protocol(e)) => {
            let in_sync = input.args_complete();
            let reply = ApplicationError::new(ApplicationErrorKind::ProtocolError, e.message);
            write_exception(o, &ident.name, seq, &reply)?;
            Ok(if in_sync {
                After::Continue
            } else {
                After::Desynced
            })
        }
        Err(e) => Err(e),
    }
}

fn write_exception(
    o: &mut dyn TOutputProtocol,
    name: &str,
    seq: i32,
    e: &ApplicationError,
) -> thrift::Result<()> {
    o.write_message_begin(&TMessageIdentifier::new(name, TMessageType::Exception, seq))?;
    thrift::Error::write_application_error_to_out_protocol(e, o)?;
    o.write_message_end()?;
    o.flush()
}

/// Writes `name`'s reply: the success value as field 0 (none for void methods), or the
/// declared exception (`io` = 1, `ia` = 2), or an application exception.
fn reply<T>(
    o: &mut dyn TOutputProtocol,
    name: &str,
    seq: i32,
    result: ServerResult<T>,
    success: Option<TType>,
    write: impl FnOnce(&mut dyn TOutputProtocol, T) -> thrift::Result<()>,
) -> thrift::Result<()> {
    let begin = |o: &mut dyn TOutputProtocol| -> thrift::Result<()> {
        o.write_message_begin(&TMessageIdentifier::new(name, TMessageType::Reply, seq))?;
        o.write_struct_begin(&TStructIdentifier::new(format!("{name}_result")))
    };
    match result.map_err(|e| e.into_declared()) {
        Ok(value) => {
            begin(o)?;
            if let Some(field_type) = success {
                o.write_field_begin(&TFieldIdentifier::new("success", field_type, 0))?;
                write(o, value)?;
                o.write_field_end()?;
            }
        }
        Err(Declared::Io(e)) => {
            begin(o)?;
            o.write_field_begin(&TFieldIdentifier::new("io", TType::Struct, 1))?;
            e.write_to_out_protocol(o)?;
            o.write_field_end()?;
        }
        Err(Declared::IllegalArgument(e)) => {
            begin(o)?;
            o.write_field_begin(&TFieldIdentifier::new("ia", TType::Struct, 2))?;
            e.write_to_out_protocol(o)?;
            o.write_field_end()?;
        }
        Err(Declared::Application(e)) => return write_exception(o, name, seq, &e),
    }
    o.write_field_stop()?;
    o.write_struct_end()?;
    o.write_message_end()?;
    o.flush()
}

fn write_list<T: TSerializable>(o: &mut dyn TOutputProtocol, items: Vec<T>) -> thrift::Result<()> {
    o.write_list_begin(&TListIdentifier::new(TType::Struct, items.len() as i32))?;
    for item in items {
        item.write_to_out_protocol(o)?;
    }
    o.write_list_end()
}

/// Reads an argument struct, handing each field to `field` (which returns false for fields it
/// does not know, or whose type is not the expected one: those are skipped, as Java does).
fn read_args(
    i: &mut dyn TInputProtocol,
    mut field: impl FnMut(&mut dyn TInputProtocol, i16, TType) -> thrift::Result<bool>,
) -> thrift::Result<()> {
    i.read_struct_begin()?;
    loop {
        let ident = i.read_field_begin()?;
        if ident.field_type == TType::Stop {
            break;
        }
        let id = field_id(&ident)?;
        if !field(i, id, ident.field_type)? {
            i.skip(ident.field_type)?;
        }
        i.read_field_end()?;
    }
    i.read_struct_end()?;
    i.read_message_end()
}

fn required<T>(method: &str, arg: &str, value: Option<T>) -> thrift::Result<T> {
    value.ok_or_else(|| {
        thrift::Error::Protocol(ProtocolError::new(
            ProtocolErrorKind::Unknown,
            format!("Required field '{arg}' was not present! Struct: {method}_args"),
        ))
    })
}

fn read_binary_list(i: &mut dyn TInputProtocol) -> thrift::Result<Vec<Vec<u8>>> {
    let list = i.read_list_begin()?;
    let mut out = Vec::new();
    for _ in 0..list.size {
        out.push(i.read_bytes()?);
    }
    i.read_list_end()?;
    Ok(out)
}

/// The arguments shared by checkAndPut, checkAndDelete and checkAndMutate: 1 table, 2 row,
/// 3 family, 4 qualifier, and the optional value (field 5, or 6 for checkAndMutate).
#[derive(Default)]
struct CheckArgs {
    table: Option<Vec<u8>>,
    row: Option<Vec<u8>>,
    family: Option<Vec<u8>>,
    qualifier: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

impl CheckArgs {
    fn read(
        &mut self,
        i: &mut dyn TInputProtocol,
        id: i16,
        ty: TType,
        value_id: i16,
    ) -> thrift::Result<bool> {
        if ty != TType::String {
            return Ok(false);
        }
        let slot = match id {
            1 => &mut self.table,
            2 => &mut self.row,
            3 => &mut self.family,
            4 => &mut self.qualifier,
            _ if id == value_id => &mut self.value,
            _ => return Ok(false),
        };
        *slot = Some(i.read_bytes()?);
        Ok(true)
    }

    fn required(
        self,
        method: &str,
    ) -> thrift::Result<(Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Option<Vec<u8>>)> {
        Ok((
            required(method, "table", self.table)?,
            required(method, "row", self.row)?,
            required(method, "family", self.family)?,
            required(method, "qualifier", self.qualifier)?,
            self.value,
        ))
    }
}

fn check_and_put(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let mut args = CheckArgs::default();
    let mut tput = None;
    read_args(i, |i, id, ty| match (id, ty) {
        (6, TType::Struct) => {
            tput = Some(TPut::read_from_in_protocol(i)?);
            Ok(true)
        }
        _ => args.read(i, id, ty, 5),
    })?;
    let (table, row, family, qualifier, value) = args.required("checkAndPut")?;
    let tput = required("checkAndPut", "tput", tput)?;
    let result = h.check_and_put(&table, &row, family, qualifier, value, &tput);
    reply(o, "checkAndPut", seq, result, Some(TType::Bool), |o, v| {
        o.write_bool(v)
    })
}

fn check_and_delete(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let mut args = CheckArgs::default();
    let mut tdelete = None;
    read_args(i, |i, id, ty| match (id, ty) {
        (6, TType::Struct) => {
            tdelete = Some(TDelete::read_from_in_protocol(i)?);
            Ok(true)
        }
        _ => args.read(i, id, ty, 5),
    })?;
    let (table, row, family, qualifier, value) = args.required("checkAndDelete")?;
    let tdelete = required("checkAndDelete", "tdelete", tdelete)?;
    let result = h.check_and_delete(&table, &row, family, qualifier, value, &tdelete);
    reply(
        o,
        "checkAndDelete",
        seq,
        result,
        Some(TType::Bool),
        |o, v| o.write_bool(v),
    )
}

fn check_and_mutate(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let mut args = CheckArgs::default();
    let mut op = None;
    let mut mutations = None;
    read_args(i, |i, id, ty| match (id, ty) {
        (5, TType::I32) => {
            op = Some(TCompareOperator::read_from_in_protocol(i)?);
            Ok(true)
        }
        (7, TType::Struct) => {
            mutations = Some(TRowMutations::read_from_in_protocol(i)?);
            Ok(true)
        }
        _ => args.read(i, id, ty, 6),
    })?;
    let (table, row, family, qualifier, value) = args.required("checkAndMutate")?;
    let op = required("checkAndMutate", "compareOperator", op)?;
    let mutations = required("checkAndMutate", "rowMutations", mutations)?;
    let result = h.check_and_mutate(&table, &row, family, qualifier, op, value, &mutations);
    reply(
        o,
        "checkAndMutate",
        seq,
        result,
        Some(TType::Bool),
        |o, v| o.write_bool(v),
    )
}

fn create_table(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let (mut desc, mut split_keys) = (None, None);
    read_args(i, |i, id, ty| {
        match (id, ty) {
            (1, TType::Struct) => desc = Some(TTableDescriptor::read_from_in_protocol(i)?),
            (2, TType::List) => split_keys = Some(read_binary_list(i)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let desc = required("createTable", "desc", desc)?;
    let result = h.create_table(&desc, split_keys.as_deref());
    reply(o, "createTable", seq, result, None, |_, ()| Ok(()))
}

fn truncate_table(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let mut table = None;
    read_args(i, |i, id, ty| {
        match (id, ty) {
            (1, TType::Struct) => table = Some(TTableName::read_from_in_protocol(i)?),
            // preserveSplits: every table has a single region, so there is nothing to keep.
            (2, TType::Bool) => {
                i.read_bool()?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let table = required("truncateTable", "tableName", table)?;
    let result = h.truncate_table(&table);
    reply(o, "truncateTable", seq, result, None, |_, ()| Ok(()))
}

fn get_scanner_rows(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let (mut id_arg, mut num_rows) = (None, 1);
    read_args(i, |i, id, ty| {
        match (id, ty) {
            (1, TType::I32) => id_arg = Some(i.read_i32()?),
            (2, TType::I32) => num_rows = i.read_i32()?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let scanner_id = required("getScannerRows", "scannerId", id_arg)?;
    let result = h.get_scanner_rows(scanner_id, num_rows);
    reply(
        o,
        "getScannerRows",
        seq,
        result,
        Some(TType::List),
        write_list,
    )
}

fn get_scanner_results(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let (mut table, mut tscan, mut num_rows) = (None, None, 1);
    read_args(i, |i, id, ty| {
        match (id, ty) {
            (1, TType::String) => table = Some(i.read_bytes()?),
            (2, TType::Struct) => tscan = Some(TScan::read_from_in_protocol(i)?),
            (3, TType::I32) => num_rows = i.read_i32()?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let table = required("getScannerResults", "table", table)?;
    let tscan = required("getScannerResults", "tscan", tscan)?;
    let result = h.get_scanner_results(&table, &tscan, num_rows);
    reply(
        o,
        "getScannerResults",
        seq,
        result,
        Some(TType::List),
        write_list,
    )
}

fn get_region_location(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
) -> thrift::Result<()> {
    let (mut table, mut row) = (None, None);
    read_args(i, |i, id, ty| {
        match (id, ty) {
            (1, TType::String) => table = Some(i.read_bytes()?),
            (2, TType::String) => row = Some(i.read_bytes()?),
            // reload: there is no location cache to refresh.
            (3, TType::Bool) => {
                i.read_bool()?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let table = required("getRegionLocation", "table", table)?;
    required("getRegionLocation", "row", row)?;
    let result = h.region_location(&table);
    reply(
        o,
        "getRegionLocation",
        seq,
        result,
        Some(TType::Struct),
        |o, v| v.write_to_out_protocol(o),
    )
}

fn by_pattern(
    h: &Handler,
    seq: i32,
    i: &mut dyn TInputProtocol,
    o: &mut dyn TOutputProtocol,
    descriptors: bool,
) -> thrift::Result<()> {
    let (mut regex, mut include_sys) = (None, false);
    read_args(i, |i, id, ty| {
        match (id, ty) {
            (1, TType::String) => regex = Some(i.read_string()?),
            (2, TType::Bool) => include_sys = i.read_bool()?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if descriptors {
        let result = h.table_descriptors_by_pattern(regex.as_deref(), include_sys);
        reply(
            o,
            "getTableDescriptorsByPattern",
            seq,
            result,
            Some(TType::List),
            write_list,
        )
    } else {
        let result = h.table_names_by_pattern(regex.as_deref(), include_sys);
        reply(
            o,
            "getTableNamesByPattern",
            seq,
            result,
            Some(TType::List),
            write_list,
        )
    }
}
