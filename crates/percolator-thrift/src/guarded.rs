//! A Thrift input protocol that checks every size before it trusts it, shared by the client
//! (decoding replies from the bytes read so far) and the emulator (decoding requests under a
//! byte budget).
//!
//! The Thrift crate's protocols allocate whatever a length prefix claims before reading a byte
//! of it, panic on a negative one, and read a message's method name unchecked. So the message
//! header, binary lengths and collection counts are decoded here: a negative size is garbage,
//! and what a larger one means is the [`Source`]'s call (a reply still arriving, or a request
//! over its budget). The input also notes when the top-level struct of a message has been read
//! to its end, which tells a "missing required field" (the stream is still in step) from
//! garbage.

use std::io::Read;

use thrift::protocol::{
    TBinaryInputProtocol, TCompactInputProtocol, TFieldIdentifier, TInputProtocol, TListIdentifier,
    TMapIdentifier, TMessageIdentifier, TMessageType, TSetIdentifier, TStructIdentifier,
};
use thrift::{ProtocolError, ProtocolErrorKind};

/// The two Thrift encodings HBase's gateway speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Binary,
    Compact,
}

impl Wire {
    /// Strict binary messages start with 0x80 0x01, compact ones with 0x82.
    pub fn detect(first_byte: u8) -> Option<Wire> {
        match first_byte {
            0x80 => Some(Wire::Binary),
            0x82 => Some(Wire::Compact),
            _ => None,
        }
    }
}

/// Where a message's bytes come from. Clones share one position, so the wrapped protocol and
/// the checks here read the same stream.
pub trait Source: Read + Clone {
    /// Whether `size` more bytes (or elements, each at least a byte) may be claimed; the error
    /// says why not.
    fn admit(&self, size: usize, what: &str) -> thrift::Result<()>;
}

pub fn protocol_error(kind: ProtocolErrorKind, message: String) -> thrift::Error {
    thrift::Error::Protocol(ProtocolError::new(kind, message))
}

enum Proto<S: Source> {
    Binary(TBinaryInputProtocol<S>),
    Compact(TCompactInputProtocol<S>),
}

/// A protocol reading one message from a [`Source`], with every size checked first.
pub struct GuardedInput<S: Source> {
    proto: Proto<S>,
    src: S,
    /// Old non-strict binary headers (no version word) are refused.
    strict: bool,
    depth: usize,
    complete: bool,
}

impl<S: Source> GuardedInput<S> {
    pub fn new(wire: Wire, src: S, strict: bool) -> Self {
        let proto = match wire {
            Wire::Binary => Proto::Binary(TBinaryInputProtocol::new(src.clone(), strict)),
            Wire::Compact => Proto::Compact(TCompactInputProtocol::new(src.clone())),
        };
        GuardedInput {
            proto,
            src,
            strict,
            depth: 0,
            complete: false,
        }
    }

    /// Whether the top-level struct of the current message was read to its end.
    pub fn args_complete(&self) -> bool {
        self.complete
    }

    fn p(&mut self) -> &mut dyn TInputProtocol {
        match &mut self.proto {
            Proto::Binary(p) => p,
            Proto::Compact(p) => p,
        }
    }

    fn raw<const N: usize>(&mut self) -> thrift::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.src.read_exact(&mut b)?;
        Ok(b)
    }

    fn raw_varint(&mut self) -> thrift::Result<u32> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let [b] = self.raw::<1>()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return u32::try_from(value).map_err(|_| {
                    protocol_error(ProtocolErrorKind::InvalidData, "varint overflow".into())
                });
            }
        }
        Err(protocol_error(
            ProtocolErrorKind::InvalidData,
            "varint longer than 5 bytes".into(),
        ))
    }

    /// `size` bytes or elements are claimed to follow.
    fn claim(&self, size: i64, what: &str) -> thrift::Result<usize> {
        if size < 0 {
            return Err(protocol_error(
                ProtocolErrorKind::NegativeSize,
                format!("negative {what} size {size}"),
            ));
        }
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        self.src.admit(size, what)?;
        Ok(size)
    }

    fn binary_header(&mut self) -> thrift::Result<TMessageIdentifier> {
        let first = i32::from_be_bytes(self.raw::<4>()?);
        if first < 0 {
            // Strict: the version in the high half, the message type in the low byte.
            if (first as u32) & 0xffff_0000 != 0x8001_0000 {
                return Err(protocol_error(
                    ProtocolErrorKind::BadVersion,
                    format!("bad binary protocol version {first:#x}"),
                ));
            }
            let message_type = TMessageType::try_from(first as u8)?;
            let name = self.read_string()?;
            let seq = i32::from_be_bytes(self.raw::<4>()?);
            return Ok(TMessageIdentifier::new(name, message_type, seq));
        }
        if self.strict {
            return Err(protocol_error(
                ProtocolErrorKind::BadVersion,
                format!("binary message without a version word ({first:#x})"),
            ));
        }
        let len = self.claim(i64::from(first), "method name")?;
        let mut name = vec![0u8; len];
        self.src.read_exact(&mut name)?;
        let [message_type] = self.raw::<1>()?;
        let seq = i32::from_be_bytes(self.raw::<4>()?);
        Ok(TMessageIdentifier::new(
            String::from_utf8(name)?,
            TMessageType::try_from(message_type)?,
            seq,
        ))
    }

    fn compact_header(&mut self) -> thrift::Result<TMessageIdentifier> {
        let [id, version_and_type] = self.raw::<2>()?;
        if id != 0x82 || version_and_type & 0x1f != 1 {
            return Err(protocol_error(
                ProtocolErrorKind::BadVersion,
                format!("bad compact protocol header {id:#x} {version_and_type:#x}"),
            ));
        }
        let message_type = TMessageType::try_from(version_and_type >> 5)?;
        let seq = self.raw_varint()? as i32;
        let name = self.read_string()?;
        Ok(TMessageIdentifier::new(name, message_type, seq))
    }
}

impl<S: Source> TInputProtocol for GuardedInput<S> {
    fn read_message_begin(&mut self) -> thrift::Result<TMessageIdentifier> {
        self.depth = 0;
        self.complete = false;
        match self.proto {
            Proto::Binary(_) => self.binary_header(),
            Proto::Compact(_) => self.compact_header(),
        }
    }

    fn read_message_end(&mut self) -> thrift::Result<()> {
        self.p().read_message_end()
    }

    fn read_struct_begin(&mut self) -> thrift::Result<Option<TStructIdentifier>> {
        self.depth += 1;
        self.p().read_struct_begin()
    }

    fn read_struct_end(&mut self) -> thrift::Result<()> {
        self.p().read_struct_end()?;
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            self.complete = true;
        }
        Ok(())
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
        let len = match self.proto {
            Proto::Binary(_) => i64::from(i32::from_be_bytes(self.raw::<4>()?)),
            Proto::Compact(_) => i64::from(self.raw_varint()?),
        };
        let len = self.claim(len, "binary")?;
        let mut buf = vec![0u8; len];
        self.src.read_exact(&mut buf)?;
        Ok(buf)
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
