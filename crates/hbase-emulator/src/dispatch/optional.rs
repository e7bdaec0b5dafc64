//! The methods whose arguments HBase's IDL leaves optional, decoded by hand so that requests
//! omitting them are served as a real gateway serves them (see the parent module), and the
//! reply writer they share.

use thrift::protocol::{
    field_id, TFieldIdentifier, TInputProtocol, TListIdentifier, TMessageIdentifier, TMessageType,
    TOutputProtocol, TSerializable, TStructIdentifier, TType,
};
use thrift::{ApplicationError, ProtocolError, ProtocolErrorKind};

use crate::error::{Declared, ServerResult};
use crate::handler::Handler;
use percolator_thrift::hbase::{
    TCompareOp, TDelete, TPut, TRowMutations, TScan, TTableDescriptor, TTableName,
};

pub(super) fn write_exception(
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
    match result.map_err(|e| e.into_declared(name)) {
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

/// The shared check arguments once the required ones are known to be present.
struct CheckCall {
    table: Vec<u8>,
    row: Vec<u8>,
    family: Vec<u8>,
    qualifier: Vec<u8>,
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

    fn required(self, method: &str) -> thrift::Result<CheckCall> {
        Ok(CheckCall {
            table: required(method, "table", self.table)?,
            row: required(method, "row", self.row)?,
            family: required(method, "family", self.family)?,
            qualifier: required(method, "qualifier", self.qualifier)?,
            value: self.value,
        })
    }
}

pub(super) fn check_and_put(
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
    let c = args.required("checkAndPut")?;
    let tput = required("checkAndPut", "tput", tput)?;
    let result = h.check_and_put(&c.table, &c.row, c.family, c.qualifier, c.value, &tput);
    reply(o, "checkAndPut", seq, result, Some(TType::Bool), |o, v| {
        o.write_bool(v)
    })
}

pub(super) fn check_and_delete(
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
    let c = args.required("checkAndDelete")?;
    let tdelete = required("checkAndDelete", "tdelete", tdelete)?;
    let result = h.check_and_delete(&c.table, &c.row, c.family, c.qualifier, c.value, &tdelete);
    reply(
        o,
        "checkAndDelete",
        seq,
        result,
        Some(TType::Bool),
        |o, v| o.write_bool(v),
    )
}

pub(super) fn check_and_mutate(
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
            op = Some(TCompareOp::read_from_in_protocol(i)?);
            Ok(true)
        }
        (7, TType::Struct) => {
            mutations = Some(TRowMutations::read_from_in_protocol(i)?);
            Ok(true)
        }
        _ => args.read(i, id, ty, 6),
    })?;
    let c = args.required("checkAndMutate")?;
    let op = required("checkAndMutate", "compareOperator", op)?;
    let mutations = required("checkAndMutate", "rowMutations", mutations)?;
    let result = h.check_and_mutate(
        &c.table,
        &c.row,
        c.family,
        c.qualifier,
        op,
        c.value,
        &mutations,
    );
    reply(
        o,
        "checkAndMutate",
        seq,
        result,
        Some(TType::Bool),
        |o, v| o.write_bool(v),
    )
}

pub(super) fn create_table(
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

pub(super) fn truncate_table(
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

pub(super) fn get_scanner_rows(
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

pub(super) fn get_scanner_results(
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

pub(super) fn get_region_location(
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
    let row = required("getRegionLocation", "row", row)?;
    let result = h.region_location(&table, &row);
    reply(
        o,
        "getRegionLocation",
        seq,
        result,
        Some(TType::Struct),
        |o, v| v.write_to_out_protocol(o),
    )
}

pub(super) fn by_pattern(
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
