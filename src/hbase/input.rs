//! Decoding a reply from the bytes read so far, which may be only part of it.
//!
//! An unframed reply carries no length, so it is decoded from whatever has arrived and, if the
//! bytes run out, decoded again once more have arrived. Two things make that safe:
//!
//! - running out is told apart from garbage: [`Tape`] notes when a read could not be served,
//!   and a decode that ran short asks for more bytes instead of failing;
//! - the Thrift crate's protocols allocate whatever a length prefix claims before reading a
//!   byte of it (and panic on a negative one). Here every length and element count is checked
//!   first: negative or beyond [`MAX_REPLY`] is garbage, beyond the bytes at hand is "more
//!   bytes needed", and nothing is allocated for bytes that are not there.
//!
//! The message header is decoded here too, since the protocols read its method name unchecked;
//! binary is lenient (strict and old non-strict headers), as the generated client's input is.

use std::cell::Cell;
use std::io::{self, Read};

use thrift::protocol::{
    TBinaryInputProtocol, TCompactInputProtocol, TFieldIdentifier, TInputProtocol, TListIdentifier,
    TMapIdentifier, TMessageIdentifier, TMessageType, TSetIdentifier, TStructIdentifier,
};
use thrift::{ProtocolError, ProtocolErrorKind};

use super::config::Protocol;

/// The largest reply accepted; a longer claim is garbage, not a reply still arriving.
pub(crate) const MAX_REPLY: usize = 256 << 20;

/// The bytes at hand, read front to back.
pub(crate) struct Tape<'a> {
    bytes: &'a [u8],
    pos: Cell<usize>,
    short: Cell<bool>,
}

impl<'a> Tape<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Tape {
            bytes,
            pos: Cell::new(0),
            short: Cell::new(false),
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn consumed(&self) -> usize {
        self.pos.get()
    }

    /// A read wanted more bytes than there were: the message is not all here (yet).
    pub(crate) fn ran_short(&self) -> bool {
        self.short.get()
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.pos.get()
    }

    fn take(&self, n: usize) -> thrift::Result<&'a [u8]> {
        if n > self.left() {
            self.short.set(true);
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        let start = self.pos.get();
        self.pos.set(start + n);
        Ok(&self.bytes[start..start + n])
    }
}

impl Read for &Tape<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.left());
        if n < out.len() {
            self.short.set(true);
        }
        let start = self.pos.get();
        out[..n].copy_from_slice(&self.bytes[start..start + n]);
        self.pos.set(start + n);
        Ok(n)
    }
}

enum Inner<'t, 'a> {
    Binary(TBinaryInputProtocol<&'t Tape<'a>>),
    Compact(TCompactInputProtocol<&'t Tape<'a>>),
}

/// A protocol reading from a [`Tape`], with every size checked before it is trusted.
pub(crate) struct Input<'t, 'a> {
    inner: Inner<'t, 'a>,
    tape: &'t Tape<'a>,
}

fn garbage(kind: ProtocolErrorKind, message: String) -> thrift::Error {
    thrift::Error::Protocol(ProtocolError::new(kind, message))
}

impl<'t, 'a> Input<'t, 'a> {
    pub(crate) fn new(protocol: Protocol, tape: &'t Tape<'a>) -> Self {
        let inner = match protocol {
            Protocol::Binary => Inner::Binary(TBinaryInputProtocol::new(tape, false)),
            Protocol::Compact => Inner::Compact(TCompactInputProtocol::new(tape)),
        };
        Input { inner, tape }
    }

    fn p(&mut self) -> &mut dyn TInputProtocol {
        match &mut self.inner {
            Inner::Binary(p) => p,
            Inner::Compact(p) => p,
        }
    }

    fn byte(&self) -> thrift::Result<u8> {
        Ok(self.tape.take(1)?[0])
    }

    fn be_i32(&self) -> thrift::Result<i32> {
        let b = self.tape.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn varint(&self) -> thrift::Result<u32> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return u32::try_from(value).map_err(|_| {
                    garbage(ProtocolErrorKind::InvalidData, "varint overflow".into())
                });
            }
        }
        Err(garbage(
            ProtocolErrorKind::InvalidData,
            "varint longer than 5 bytes".into(),
        ))
    }

    /// `size` bytes or elements (each at least a byte) are claimed to follow.
    fn claim(&self, size: i64, what: &str) -> thrift::Result<usize> {
        if size < 0 {
            return Err(garbage(
                ProtocolErrorKind::NegativeSize,
                format!("negative {what} size {size}"),
            ));
        }
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > MAX_REPLY {
            return Err(garbage(
                ProtocolErrorKind::SizeLimit,
                format!("{what} of {size} exceeds the {MAX_REPLY} bytes a reply may have"),
            ));
        }
        if size > self.tape.left() {
            self.tape.short.set(true);
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        Ok(size)
    }

    fn binary_header(&mut self) -> thrift::Result<TMessageIdentifier> {
        let first = self.be_i32()?;
        if first < 0 {
            // Strict: version in the high half, type in the low byte.
            if (first as u32) & 0xffff_0000 != 0x8001_0000 {
                return Err(garbage(
                    ProtocolErrorKind::BadVersion,
                    format!("bad binary protocol version {first:#x}"),
                ));
            }
            let message_type = TMessageType::try_from(first as u8)?;
            let name = self.read_string()?;
            let seq = self.be_i32()?;
            Ok(TMessageIdentifier::new(name, message_type, seq))
        } else {
            let len = self.claim(i64::from(first), "method name")?;
            let name = String::from_utf8(self.tape.take(len)?.to_vec())?;
            let message_type = TMessageType::try_from(self.byte()?)?;
            let seq = self.be_i32()?;
            Ok(TMessageIdentifier::new(name, message_type, seq))
        }
    }

    fn compact_header(&mut self) -> thrift::Result<TMessageIdentifier> {
        let id = self.byte()?;
        let version_and_type = self.byte()?;
        if id != 0x82 || version_and_type & 0x1f != 1 {
            return Err(garbage(
                ProtocolErrorKind::BadVersion,
                format!("bad compact protocol header {id:#x} {version_and_type:#x}"),
            ));
        }
        let message_type = TMessageType::try_from(version_and_type >> 5)?;
        let seq = self.varint()? as i32;
        let name = self.read_string()?;
        Ok(TMessageIdentifier::new(name, message_type, seq))
    }
}

impl TInputProtocol for Input<'_, '_> {
    fn read_message_begin(&mut self) -> thrift::Result<TMessageIdentifier> {
        match self.inner {
            Inner::Binary(_) => self.binary_header(),
            Inner::Compact(_) => self.compact_header(),
        }
    }

    fn read_message_end(&mut self) -> thrift::Result<()> {
        self.p().read_message_end()
    }

    fn read_struct_begin(&mut self) -> thrift::Result<Option<TStructIdentifier>> {
        self.p().read_struct_begin()
    }

    fn read_struct_end(&mut self) -> thrift::Result<()> {
        self.p().read_struct_end()
    }

    fn read_field_begin(&mut self) -> thrift::Result<TFieldIdentifier> {
        self.p().read_field_begin()
    }

    fn read_field_end(&mut self) -> thrift::Result<()> {
        self.p().read_field_end()
    }

    fn read_bool(&mut self) -> thrift::Result<bool> {
        self.p().read_bool()
    }

    fn read_bytes(&mut self) -> thrift::Result<Vec<u8>> {
        let len = match self.inner {
            Inner::Binary(_) => i64::from(self.be_i32()?),
            Inner::Compact(_) => i64::from(self.varint()?),
        };
        let len = self.claim(len, "binary")?;
        Ok(self.tape.take(len)?.to_vec())
    }

    fn read_i8(&mut self) -> thrift::Result<i8> {
        self.p().read_i8()
    }

    fn read_i16(&mut self) -> thrift::Result<i16> {
        self.p().read_i16()
    }

    fn read_i32(&mut self) -> thrift::Result<i32> {
        self.p().read_i32()
    }

    fn read_i64(&mut self) -> thrift::Result<i64> {
        self.p().read_i64()
    }

    fn read_double(&mut self) -> thrift::Result<f64> {
        self.p().read_double()
    }

    fn read_string(&mut self) -> thrift::Result<String> {
        String::from_utf8(self.read_bytes()?).map_err(From::from)
    }

    fn read_list_begin(&mut self) -> thrift::Result<TListIdentifier> {
        let list = self.p().read_list_begin()?;
        self.claim(i64::from(list.size), "list")?;
        Ok(list)
    }

    fn read_list_end(&mut self) -> thrift::Result<()> {
        self.p().read_list_end()
    }

    fn read_set_begin(&mut self) -> thrift::Result<TSetIdentifier> {
        let set = self.p().read_set_begin()?;
        self.claim(i64::from(set.size), "set")?;
        Ok(set)
    }

    fn read_set_end(&mut self) -> thrift::Result<()> {
        self.p().read_set_end()
    }

    fn read_map_begin(&mut self) -> thrift::Result<TMapIdentifier> {
        let map = self.p().read_map_begin()?;
        self.claim(i64::from(map.size), "map")?;
        Ok(map)
    }

    fn read_map_end(&mut self) -> thrift::Result<()> {
        self.p().read_map_end()
    }

    fn read_byte(&mut self) -> thrift::Result<u8> {
        self.p().read_byte()
    }
}
