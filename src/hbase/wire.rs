//! THBaseService calls as bytes: a request encoded exactly as the generated client sends it,
//! and its reply decoded from a buffer.
//!
//! The generated client writes a request and reads its reply in one blocking step, on a socket
//! it owns. Pipelining needs the two apart (write now, match the reply later, on another task),
//! and a replay needs the same request again on a fresh connection; so requests are encoded
//! once, into bytes, and replies are decoded from whatever has been read. The generated
//! `*Args`/`*Result` structs are private, so the argument struct is written here from a list
//! of fields, and the result struct (field 0: success, 1: `TIOError`, 2: `TIllegalArgument`) is
//! read by one generic function, using the public `T*` structs' own (de)serialisers.

use thrift::protocol::{
    TBinaryOutputProtocol, TCompactOutputProtocol, TFieldIdentifier, TInputProtocol,
    TListIdentifier, TMessageIdentifier, TMessageType, TOutputProtocol, TSerializable,
    TStructIdentifier, TType,
};
use thrift::{ApplicationError, ApplicationErrorKind, ProtocolError, ProtocolErrorKind};

use super::config::{Protocol, Transport};
use super::input::{input, Tape, MAX_REPLY};
use crate::thrift::hbase::{
    TDelete, THRegionLocation, TIOError, TIllegalArgument, TNamespaceDescriptor, TResult,
    TTableDescriptor, TTableName, TThriftServerType,
};

/// How one gateway's messages are encoded and framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Codec {
    pub protocol: Protocol,
    pub transport: Transport,
}

/// A struct argument: any generated struct.
pub(crate) trait Encode: Sync {
    fn encode(&self, o: &mut dyn TOutputProtocol) -> thrift::Result<()>;
}

impl<T: TSerializable + Sync> Encode for T {
    fn encode(&self, o: &mut dyn TOutputProtocol) -> thrift::Result<()> {
        self.write_to_out_protocol(o)
    }
}

/// A list of struct arguments.
pub(crate) trait EncodeList: Sync {
    fn count(&self) -> usize;
    fn encode_each(&self, o: &mut dyn TOutputProtocol) -> thrift::Result<()>;
}

impl<T: TSerializable + Sync> EncodeList for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }

    fn encode_each(&self, o: &mut dyn TOutputProtocol) -> thrift::Result<()> {
        self.iter()
            .try_for_each(|item| item.write_to_out_protocol(o))
    }
}

/// One argument of a call, as the IDL types it.
pub(crate) enum Arg<'a> {
    Binary(&'a [u8]),
    Text(&'a str),
    Bool(bool),
    I32(i32),
    Struct(&'a dyn Encode),
    Structs(&'a dyn EncodeList),
    Binaries(&'a [Vec<u8>]),
}

impl Arg<'_> {
    fn ttype(&self) -> TType {
        match self {
            Arg::Binary(_) | Arg::Text(_) => TType::String,
            Arg::Bool(_) => TType::Bool,
            Arg::I32(_) => TType::I32,
            Arg::Struct(_) => TType::Struct,
            Arg::Structs(_) | Arg::Binaries(_) => TType::List,
        }
    }

    fn write(&self, o: &mut dyn TOutputProtocol) -> thrift::Result<()> {
        match self {
            Arg::Binary(b) => o.write_bytes(b),
            Arg::Text(s) => o.write_string(s),
            Arg::Bool(b) => o.write_bool(*b),
            Arg::I32(i) => o.write_i32(*i),
            Arg::Struct(s) => s.encode(o),
            Arg::Structs(list) => {
                o.write_list_begin(&TListIdentifier::new(TType::Struct, len(list.count())?))?;
                list.encode_each(o)?;
                o.write_list_end()
            }
            Arg::Binaries(list) => {
                o.write_list_begin(&TListIdentifier::new(TType::String, len(list.len())?))?;
                list.iter().try_for_each(|b| o.write_bytes(b))?;
                o.write_list_end()
            }
        }
    }
}

fn len(n: usize) -> thrift::Result<i32> {
    i32::try_from(n).map_err(|_| {
        thrift::Error::Protocol(ProtocolError::new(
            ProtocolErrorKind::SizeLimit,
            format!("a list of {n} elements"),
        ))
    })
}

/// An encoded request, kept for a replay.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub method: &'static str,
    pub seq: i32,
    pub bytes: Vec<u8>,
}

/// Encodes a call of `method` with `args` (field id, value), framed as `codec` says.
pub(crate) fn encode(
    codec: Codec,
    method: &'static str,
    seq: i32,
    args: &[(i16, Arg<'_>)],
) -> thrift::Result<Request> {
    let mut bytes = Vec::with_capacity(128);
    let framed = codec.transport == Transport::Framed;
    if framed {
        bytes.extend_from_slice(&[0; 4]);
    }
    match codec.protocol {
        Protocol::Binary => write_call(
            &mut TBinaryOutputProtocol::new(&mut bytes, true),
            method,
            seq,
            args,
        )?,
        Protocol::Compact => write_call(
            &mut TCompactOutputProtocol::new(&mut bytes),
            method,
            seq,
            args,
        )?,
    }
    if framed {
        let size = len(bytes.len() - 4)?;
        bytes[..4].copy_from_slice(&size.to_be_bytes());
    }
    Ok(Request { method, seq, bytes })
}

fn write_call(
    o: &mut dyn TOutputProtocol,
    method: &str,
    seq: i32,
    args: &[(i16, Arg<'_>)],
) -> thrift::Result<()> {
    o.write_message_begin(&TMessageIdentifier::new(method, TMessageType::Call, seq))?;
    o.write_struct_begin(&TStructIdentifier::new("args"))?;
    for (id, arg) in args {
        o.write_field_begin(&TFieldIdentifier::new("arg", arg.ttype(), *id))?;
        arg.write(o)?;
        o.write_field_end()?;
    }
    o.write_field_stop()?;
    o.write_struct_end()?;
    o.write_message_end()?;
    o.flush()
}

/// What a method returns on success (the type of its result's field 0).
pub(crate) trait Success: Sized + Send + 'static {
    const TTYPE: TType;
    fn read(i: &mut dyn TInputProtocol) -> thrift::Result<Self>;
    /// The value of a reply without field 0: only `void` methods have one.
    fn absent() -> Option<Self> {
        None
    }
}

impl Success for () {
    const TTYPE: TType = TType::Void;
    fn read(_: &mut dyn TInputProtocol) -> thrift::Result<()> {
        Ok(())
    }
    fn absent() -> Option<()> {
        Some(())
    }
}

impl Success for bool {
    const TTYPE: TType = TType::Bool;
    fn read(i: &mut dyn TInputProtocol) -> thrift::Result<bool> {
        i.read_bool()
    }
}

impl Success for i32 {
    const TTYPE: TType = TType::I32;
    fn read(i: &mut dyn TInputProtocol) -> thrift::Result<i32> {
        i.read_i32()
    }
}

impl Success for String {
    const TTYPE: TType = TType::String;
    fn read(i: &mut dyn TInputProtocol) -> thrift::Result<String> {
        i.read_string()
    }
}

impl<T: Success> Success for Vec<T> {
    const TTYPE: TType = TType::List;
    fn read(i: &mut dyn TInputProtocol) -> thrift::Result<Vec<T>> {
        let list = i.read_list_begin()?;
        let mut items = Vec::with_capacity(usize::try_from(list.size).unwrap_or(0));
        for _ in 0..list.size {
            items.push(T::read(i)?);
        }
        i.read_list_end()?;
        Ok(items)
    }
}

macro_rules! generated {
    ($($t:ty => $ttype:ident),* $(,)?) => {$(
        impl Success for $t {
            const TTYPE: TType = TType::$ttype;
            fn read(i: &mut dyn TInputProtocol) -> thrift::Result<$t> {
                <$t as TSerializable>::read_from_in_protocol(i)
            }
        }
    )*};
}

generated!(
    TResult => Struct,
    TDelete => Struct,
    TTableDescriptor => Struct,
    TTableName => Struct,
    THRegionLocation => Struct,
    TNamespaceDescriptor => Struct,
    TThriftServerType => I32,
);

/// Whether the bytes at hand can begin a reply, judged from its first few bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// They can: decode.
    Reply,
    /// Too few to tell: read more first.
    More,
    /// They cannot: whatever answered does not speak Thrift in this transport and protocol.
    NotThrift,
}

/// The prefix of an HTTP response, which [`start`] waits for whole, so that an HTTP server (or
/// a gateway in HTTP mode) is named as one.
const HTTP: &[u8] = b"HTTP/";

/// Whether `buf`, the bytes from the start of a reply, can begin one in `codec`. A reply
/// starts with a frame size under [`MAX_REPLY`] (framed), then a binary message header
/// (`0x80 0x01`, or an old-style name length under 16 MiB, whose first byte is 0) or a compact
/// one (`0x82`, version 1). Checking that first lets anything else (an HTTP response, a TLS
/// alert, a banner) fail at once, where decoding it might take it for a reply still arriving
/// and wait for bytes that never come.
pub(crate) fn start(codec: Codec, buf: &[u8]) -> Start {
    if buf.len() < HTTP.len() && HTTP.starts_with(buf) {
        return Start::More;
    }
    let message = match codec.transport {
        Transport::Buffered => buf,
        Transport::Framed => {
            let Some(&first) = buf.first() else {
                return Start::More;
            };
            if usize::from(first) > MAX_REPLY >> 24 {
                return Start::NotThrift;
            }
            buf.get(4..).unwrap_or_default()
        }
    };
    let Some(&first) = message.first() else {
        return Start::More;
    };
    let second = message.get(1).copied();
    match (codec.protocol, first, second) {
        (Protocol::Binary, 0x00, _) => Start::Reply,
        (Protocol::Binary, 0x80, Some(0x01)) => Start::Reply,
        (Protocol::Compact, 0x82, Some(b)) if b & 0x1f == 1 => Start::Reply,
        (Protocol::Binary, 0x80, None) | (Protocol::Compact, 0x82, None) => Start::More,
        _ => Start::NotThrift,
    }
}

/// Where decoding a reply from the bytes at hand got.
#[derive(Debug)]
pub(crate) enum Decoded<T> {
    /// The reply is not all here: read more and decode again.
    Incomplete,
    /// A whole message of `len` bytes: the method's value, or the error it carries (an error
    /// that [`errors::is_connection_failure`](super::errors::is_connection_failure) accepts
    /// means the bytes were not the expected reply, and `len` is meaningless).
    Reply {
        len: usize,
        result: thrift::Result<T>,
    },
}

/// Decodes the reply to `method` sent as `seq` from the front of `buf`.
pub(crate) fn decode<T: Success>(codec: Codec, buf: &[u8], method: &str, seq: i32) -> Decoded<T> {
    if codec.transport == Transport::Buffered {
        return decode_message(codec.protocol, buf, method, seq);
    }
    let Some(header) = buf.get(..4) else {
        return Decoded::Incomplete;
    };
    let size = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    let size = match usize::try_from(size) {
        Ok(size) if size <= MAX_REPLY => size,
        _ => return garbage(buf.len(), format!("bad frame size {size}")),
    };
    let Some(frame) = buf.get(4..4 + size) else {
        return Decoded::Incomplete;
    };
    match decode_message(codec.protocol, frame, method, seq) {
        Decoded::Reply { result, .. } => Decoded::Reply {
            len: 4 + size,
            result,
        },
        Decoded::Incomplete => garbage(buf.len(), "a frame shorter than its message".into()),
    }
}

fn garbage<T>(len: usize, message: String) -> Decoded<T> {
    Decoded::Reply {
        len,
        result: Err(thrift::Error::Protocol(ProtocolError::new(
            ProtocolErrorKind::InvalidData,
            message,
        ))),
    }
}

fn decode_message<T: Success>(
    protocol: Protocol,
    buf: &[u8],
    method: &str,
    seq: i32,
) -> Decoded<T> {
    let tape = Tape::new(buf);
    let result = read_reply(&mut input(protocol, &tape), method, seq);
    if result.is_err() && tape.ran_short() {
        Decoded::Incomplete
    } else {
        Decoded::Reply {
            len: tape.consumed(),
            result,
        }
    }
}

/// Reads one reply with the generated client's checks and error shapes: a server exception is
/// `Application`, a declared exception is `User`, and a reply that does not belong to the
/// request is an `Application` error of a kind that marks the connection out of step.
fn read_reply<T: Success>(i: &mut dyn TInputProtocol, method: &str, seq: i32) -> thrift::Result<T> {
    let ident = i.read_message_begin()?;
    if ident.sequence_number != seq {
        return Err(app_error(
            ApplicationErrorKind::BadSequenceId,
            format!("expected sequence {seq}, got {}", ident.sequence_number),
        ));
    }
    if ident.name != method {
        return Err(app_error(
            ApplicationErrorKind::WrongMethodName,
            format!("sent {method}, got a reply to {}", ident.name),
        ));
    }
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
    let (mut success, mut io, mut ia) = (None, None, None);
    i.read_struct_begin()?;
    loop {
        let field = i.read_field_begin()?;
        match (field.field_type, field.id) {
            (TType::Stop, _) => break,
            (t, Some(0)) if t == T::TTYPE => success = Some(T::read(i)?),
            (TType::Struct, Some(1)) => io = Some(TIOError::read_from_in_protocol(i)?),
            (TType::Struct, Some(2)) => ia = Some(TIllegalArgument::read_from_in_protocol(i)?),
            (other, _) => i.skip(other)?,
        }
        i.read_field_end()?;
    }
    i.read_struct_end()?;
    i.read_message_end()?;
    if let Some(io) = io {
        return Err(thrift::Error::User(Box::new(io)));
    }
    if let Some(ia) = ia {
        return Err(thrift::Error::User(Box::new(ia)));
    }
    success.or_else(T::absent).ok_or_else(|| {
        app_error(
            ApplicationErrorKind::MissingResult,
            format!("no result received for {method}"),
        )
    })
}

fn app_error(kind: ApplicationErrorKind, message: String) -> thrift::Error {
    thrift::Error::Application(ApplicationError::new(kind, message))
}
