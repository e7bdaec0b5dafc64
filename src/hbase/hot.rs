//! The hot calls (get, getMultiple, checkAndMutate) encoded by hand, byte for byte what the
//! generated client sends, but with the request and the reply as separate steps: the request
//! can be encoded and written by another thread once a value it carries is known (a
//! transaction's timestamp, see `deferred`), while the caller already waits for the reply.

use std::io::Write;

use thrift::protocol::{
    TBinaryOutputProtocol, TCompactOutputProtocol, TFieldIdentifier, TInputProtocol,
    TListIdentifier, TMessageIdentifier, TMessageType, TOutputProtocol, TSerializable,
    TStructIdentifier, TType,
};
use thrift::{ApplicationError, ApplicationErrorKind};

use super::config::{Protocol, Transport};
use crate::thrift::hbase::{TCompareOp, TGet, TIOError, TResult, TRowMutations};

/// A request of one of the hot calls, with its arguments in Thrift form.
#[derive(Clone, Debug)]
pub(crate) enum Request {
    Get {
        table: Vec<u8>,
        get: TGet,
    },
    GetMultiple {
        table: Vec<u8>,
        gets: Vec<TGet>,
    },
    CheckAndMutate {
        table: Vec<u8>,
        row: Vec<u8>,
        family: Vec<u8>,
        qualifier: Vec<u8>,
        op: TCompareOp,
        value: Vec<u8>,
        mutations: TRowMutations,
    },
}

/// The successful answer to a [`Request`].
#[derive(Debug)]
pub(crate) enum Reply {
    Row(TResult),
    Rows(Vec<TResult>),
    Applied(bool),
}

impl Request {
    pub fn method(&self) -> &'static str {
        match self {
            Request::Get { .. } => "get",
            Request::GetMultiple { .. } => "getMultiple",
            Request::CheckAndMutate { .. } => "checkAndMutate",
        }
    }

    /// Appends the whole message as it goes on the wire (with the frame header when framed)
    /// to `out`.
    pub fn encode_into(
        &self,
        out: &mut Vec<u8>,
        protocol: Protocol,
        transport: Transport,
        seq: i32,
    ) {
        let start = out.len();
        if transport == Transport::Framed {
            out.extend_from_slice(&[0; 4]);
        }
        let written = match protocol {
            Protocol::Binary => self.write(&mut TBinaryOutputProtocol::new(&mut *out, true), seq),
            Protocol::Compact => self.write(&mut TCompactOutputProtocol::new(&mut *out), seq),
        };
        // Writing into a Vec cannot fail: the protocols only fail on their transport.
        debug_assert!(written.is_ok(), "encoding into memory failed: {written:?}");
        if transport == Transport::Framed {
            let len = (out.len() - start - 4) as u32;
            out[start..start + 4].copy_from_slice(&len.to_be_bytes());
        }
    }

    fn write(&self, o: &mut dyn TOutputProtocol, seq: i32) -> thrift::Result<()> {
        o.write_message_begin(&TMessageIdentifier::new(
            self.method(),
            TMessageType::Call,
            seq,
        ))?;
        o.write_struct_begin(&TStructIdentifier::new("args"))?;
        match self {
            Request::Get { table, get } => {
                bytes_field(o, "table", 1, table)?;
                o.write_field_begin(&TFieldIdentifier::new("tget", TType::Struct, 2))?;
                get.write_to_out_protocol(o)?;
                o.write_field_end()?;
            }
            Request::GetMultiple { table, gets } => {
                bytes_field(o, "table", 1, table)?;
                o.write_field_begin(&TFieldIdentifier::new("tgets", TType::List, 2))?;
                o.write_list_begin(&TListIdentifier::new(TType::Struct, gets.len() as i32))?;
                for get in gets {
                    get.write_to_out_protocol(o)?;
                }
                o.write_list_end()?;
                o.write_field_end()?;
            }
            Request::CheckAndMutate {
                table,
                row,
                family,
                qualifier,
                op,
                value,
                mutations,
            } => {
                bytes_field(o, "table", 1, table)?;
                bytes_field(o, "row", 2, row)?;
                bytes_field(o, "family", 3, family)?;
                bytes_field(o, "qualifier", 4, qualifier)?;
                o.write_field_begin(&TFieldIdentifier::new("compareOperator", TType::I32, 5))?;
                op.write_to_out_protocol(o)?;
                o.write_field_end()?;
                bytes_field(o, "value", 6, value)?;
                o.write_field_begin(&TFieldIdentifier::new("rowMutations", TType::Struct, 7))?;
                mutations.write_to_out_protocol(o)?;
                o.write_field_end()?;
            }
        }
        o.write_field_stop()?;
        o.write_struct_end()?;
        o.write_message_end()?;
        o.flush()
    }
}

fn bytes_field(o: &mut dyn TOutputProtocol, name: &str, id: i16, v: &[u8]) -> thrift::Result<()> {
    o.write_field_begin(&TFieldIdentifier::new(name, TType::String, id))?;
    o.write_bytes(v)?;
    o.write_field_end()
}

/// Reads the reply sent for `seq`, with the generated client's checks and error shapes: a
/// server exception is `Application`, a `TIOError` is `User`. The caller checks that the reply
/// is for the method it sent ([`Reply::method`]).
pub(crate) fn read_reply(i: &mut dyn TInputProtocol, seq: i32) -> thrift::Result<Reply> {
    let ident = i.read_message_begin()?;
    if ident.sequence_number != seq {
        return Err(app_error(
            ApplicationErrorKind::BadSequenceId,
            format!("expected sequence {seq}, got {}", ident.sequence_number),
        ));
    }
    let method: &'static str = match ident.name.as_str() {
        "get" => "get",
        "getMultiple" => "getMultiple",
        "checkAndMutate" => "checkAndMutate",
        other => {
            return Err(app_error(
                ApplicationErrorKind::WrongMethodName,
                format!("unexpected reply to {other}"),
            ))
        }
    };
    if ident.message_type == TMessageType::Exception {
        let remote = thrift::Error::read_application_error_from_in_protocol(i)?;
        i.read_message_end()?;
        return Err(thrift::Error::Application(remote));
    }
    if ident.message_type != TMessageType::Reply {
        return Err(app_error(
            ApplicationErrorKind::InvalidMessageType,
            format!("expected a reply, got {:?}", ident.message_type),
        ));
    }
    let mut success = None;
    let mut io_error = None;
    i.read_struct_begin()?;
    loop {
        let field = i.read_field_begin()?;
        match (field.field_type, field.id, method) {
            (TType::Stop, _, _) => break,
            (TType::Struct, Some(0), "get") => {
                success = Some(Reply::Row(TResult::read_from_in_protocol(i)?))
            }
            (TType::List, Some(0), "getMultiple") => {
                let list = i.read_list_begin()?;
                let mut rows = Vec::with_capacity(list.size.clamp(0, 1024) as usize);
                for _ in 0..list.size {
                    rows.push(TResult::read_from_in_protocol(i)?);
                }
                i.read_list_end()?;
                success = Some(Reply::Rows(rows));
            }
            (TType::Bool, Some(0), "checkAndMutate") => {
                success = Some(Reply::Applied(i.read_bool()?))
            }
            (TType::Struct, Some(1), _) => io_error = Some(TIOError::read_from_in_protocol(i)?),
            (other, _, _) => i.skip(other)?,
        }
        i.read_field_end()?;
    }
    i.read_struct_end()?;
    i.read_message_end()?;
    match (io_error, success) {
        (Some(io), _) => Err(thrift::Error::User(Box::new(io))),
        (None, Some(reply)) => Ok(reply),
        (None, None) => Err(app_error(
            ApplicationErrorKind::MissingResult,
            format!("no result received for {method}"),
        )),
    }
}

impl Reply {
    pub fn method(&self) -> &'static str {
        match self {
            Reply::Row(_) => "get",
            Reply::Rows(_) => "getMultiple",
            Reply::Applied(_) => "checkAndMutate",
        }
    }
}

/// A reply to another method than the one sent: the stream is out of step.
pub(crate) fn check_method(reply: Reply, sent: &'static str) -> thrift::Result<Reply> {
    if reply.method() == sent {
        Ok(reply)
    } else {
        Err(app_error(
            ApplicationErrorKind::WrongMethodName,
            format!("sent {sent}, got a reply to {}", reply.method()),
        ))
    }
}

/// A reply that cannot belong to the request in flight.
pub(crate) fn out_of_step(message: &str) -> thrift::Error {
    app_error(ApplicationErrorKind::BadSequenceId, message.to_string())
}

fn app_error(kind: ApplicationErrorKind, message: String) -> thrift::Error {
    thrift::Error::Application(ApplicationError::new(kind, message))
}

/// Writes an encoded request in one call (TCP_NODELAY: one segment for small requests).
pub(crate) fn send(mut stream: &std::net::TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes)
}
