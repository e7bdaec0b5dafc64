//! Bounded decoding of one request message.
//!
//! The Thrift crate's protocols allocate whatever a length prefix asks for, before reading a
//! byte of it, and an unframed message has no length of its own. So every byte of a message is
//! read through a budget (`max_frame_bytes`), and the input protocol is wrapped: string, binary
//! and collection sizes larger than what is left of the budget are refused before anything is
//! allocated, and the message header is decoded here (the crate would read its method name
//! unchecked). The wrapper also notes when the top-level argument struct has been read to its
//! end, which tells a "missing required field" (the stream is still in sync) from garbage.

use std::cell::RefCell;
use std::io::{self, Read};
use std::rc::Rc;

use thrift::protocol::{
    TBinaryInputProtocol, TCompactInputProtocol, TFieldIdentifier, TInputProtocol, TListIdentifier,
    TMapIdentifier, TMessageIdentifier, TMessageType, TSetIdentifier, TStructIdentifier,
};
use thrift::{ProtocolError, ProtocolErrorKind};

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

struct Budgeted<R> {
    inner: R,
    remaining: usize,
}

/// A reader that refuses to deliver more than its budget. Shared between the wrapped protocol
/// and the wrapper, which reads raw bytes for the lengths it checks.
pub struct Source<R>(Rc<RefCell<Budgeted<R>>>);

impl<R> Clone for Source<R> {
    fn clone(&self) -> Self {
        Source(self.0.clone())
    }
}

impl<R: Read> Source<R> {
    pub fn new(inner: R, budget: usize) -> Self {
        Source(Rc::new(RefCell::new(Budgeted {
            inner,
            remaining: budget,
        })))
    }

    fn remaining(&self) -> usize {
        self.0.borrow().remaining
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut b = self.0.borrow_mut();
        if b.remaining == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request larger than max_frame_bytes",
            ));
        }
        let n = buf.len().min(b.remaining);
        let got = b.inner.read(&mut buf[..n])?;
        b.remaining -= got;
        Ok(got)
    }
}

enum Proto<R: Read> {
    Binary(TBinaryInputProtocol<Source<R>>),
    Compact(TCompactInputProtocol<Source<R>>),
}

/// Input that can tell whether the top-level struct of the current message was fully read.
pub trait MessageInput: TInputProtocol {
    fn args_complete(&self) -> bool;
}

pub struct GuardedInput<R: Read> {
    proto: Proto<R>,
    src: Source<R>,
    depth: usize,
    complete: bool,
}

fn protocol_error(kind: ProtocolErrorKind, message: String) -> thrift::Error {
    thrift::Error::Protocol(ProtocolError { kind, message })
}

impl<R: Read> GuardedInput<R> {
    /// One message's decoder; `src` carries that message's byte budget.
    pub fn new(wire: Wire, src: Source<R>) -> Self {
        let proto = match wire {
            Wire::Binary => Proto::Binary(TBinaryInputProtocol::new(src.clone(), true)),
            Wire::Compact => Proto::Compact(TCompactInputProtocol::new(src.clone())),
        };
        GuardedInput {
            proto,
            src,
            depth: 0,
            complete: false,
        }
    }

    fn p(&mut self) -> &mut dyn TInputProtocol {
        match &mut self.proto {
            Proto::Binary(p) => p,
            Proto::Compact(p) => p,
        }
    }

    fn raw_byte(&mut self) -> thrift::Result<u8> {
        let mut b = [0u8; 1];
        self.src.read_exact(&mut b)?;
        Ok(b[0])
    }

    fn raw_varint_u32(&mut self) -> thrift::Result<u32> {
        let mut value: u64 = 0;
        for i in 0..5 {
            let b = self.raw_byte()?;
            value |= u64::from(b & 0x7f) << (7 * i);
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

    /// Every element takes at least one byte, so a count above the remaining budget is a lie.
    fn check_count(&self, count: i64, what: &str) -> thrift::Result<()> {
        if count < 0 {
            return Err(protocol_error(
                ProtocolErrorKind::NegativeSize,
                format!("negative {what} size {count}"),
            ));
        }
        if count as u64 > self.src.remaining() as u64 {
            return Err(protocol_error(
                ProtocolErrorKind::SizeLimit,
                format!(
                    "{what} of {count} elements exceeds the {} bytes left of max_frame_bytes",
                    self.src.remaining()
                ),
            ));
        }
        Ok(())
    }
}

impl<R: Read> MessageInput for GuardedInput<R> {
    fn args_complete(&self) -> bool {
        self.complete
    }
}

impl<R: Read> TInputProtocol for GuardedInput<R> {
    fn read_message_begin(&mut self) -> thrift::Result<TMessageIdentifier> {
        self.depth = 0;
        self.complete = false;
        let (message_type, sequence_number, name) = match self.proto {
            Proto::Binary(_) => {
                let mut header = [0u8; 4];
                self.src.read_exact(&mut header)?;
                if header[0..2] != [0x80, 0x01] {
                    return Err(protocol_error(
                        ProtocolErrorKind::BadVersion,
                        format!("bad binary protocol version {:?}", &header[0..2]),
                    ));
                }
                let message_type = TMessageType::try_from(header[3])?;
                let name = self.read_string()?;
                let seq = self.p().read_i32()?;
                (message_type, seq, name)
            }
            Proto::Compact(_) => {
                let id = self.raw_byte()?;
                let version_and_type = self.raw_byte()?;
                if id != 0x82 || version_and_type & 0x1f != 1 {
                    return Err(protocol_error(
                        ProtocolErrorKind::BadVersion,
                        format!("bad compact protocol header {id:#x} {version_and_type:#x}"),
                    ));
                }
                let message_type = TMessageType::try_from(version_and_type >> 5)?;
                let seq = self.raw_varint_u32()? as i32;
                (message_type, seq, self.read_string()?)
            }
        };
        Ok(TMessageIdentifier::new(name, message_type, sequence_number))
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
            Proto::Binary(_) => i64::from(self.p().read_i32()?),
            Proto::Compact(_) => i64::from(self.raw_varint_u32()?),
        };
        self.check_count(len, "binary")?;
        let mut buf = vec![0u8; len as usize];
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
        let l = self.p().read_list_begin()?;
        self.check_count(i64::from(l.size), "list")?;
        Ok(l)
    }

    fn read_list_end(&mut self) -> thrift::Result<()> {
        self.p().read_list_end()
    }

    fn read_set_begin(&mut self) -> thrift::Result<TSetIdentifier> {
        let s = self.p().read_set_begin()?;
        self.check_count(i64::from(s.size), "set")?;
        Ok(s)
    }

    fn read_set_end(&mut self) -> thrift::Result<()> {
        self.p().read_set_end()
    }

    fn read_map_begin(&mut self) -> thrift::Result<TMapIdentifier> {
        let m = self.p().read_map_begin()?;
        self.check_count(i64::from(m.size), "map")?;
        Ok(m)
    }

    fn read_map_end(&mut self) -> thrift::Result<()> {
        self.p().read_map_end()
    }

    fn read_byte(&mut self) -> thrift::Result<u8> {
        self.p().read_byte()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use thrift::protocol::{TBinaryOutputProtocol, TCompactOutputProtocol, TOutputProtocol};

    fn message(wire: Wire, write_body: impl FnOnce(&mut dyn TOutputProtocol)) -> Vec<u8> {
        let mut buf = Vec::new();
        {
            let mut o: Box<dyn TOutputProtocol> = match wire {
                Wire::Binary => Box::new(TBinaryOutputProtocol::new(&mut buf, true)),
                Wire::Compact => Box::new(TCompactOutputProtocol::new(&mut buf)),
            };
            o.write_message_begin(&TMessageIdentifier::new("get", TMessageType::Call, 7))
                .unwrap();
            write_body(&mut *o);
            o.flush().unwrap();
        }
        buf
    }

    #[test]
    fn reads_headers_of_both_protocols() {
        for wire in [Wire::Binary, Wire::Compact] {
            let bytes = message(wire, |o| o.write_bytes(b"abc").unwrap());
            assert_eq!(Wire::detect(bytes[0]), Some(wire));
            let mut input = GuardedInput::new(wire, Source::new(Cursor::new(bytes), 1000));
            let ident = input.read_message_begin().unwrap();
            assert_eq!((ident.name.as_str(), ident.sequence_number), ("get", 7));
            assert_eq!(input.read_bytes().unwrap(), b"abc");
        }
    }

    #[test]
    fn huge_length_prefixes_are_refused_without_allocating() {
        for wire in [Wire::Binary, Wire::Compact] {
            let mut bytes = message(wire, |_| {});
            match wire {
                Wire::Binary => bytes.extend_from_slice(&0x7fff_ffffu32.to_be_bytes()),
                Wire::Compact => bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]),
            }
            let mut input = GuardedInput::new(wire, Source::new(Cursor::new(bytes), 1 << 20));
            input.read_message_begin().unwrap();
            let err = input.read_bytes().unwrap_err();
            assert!(matches!(
                err,
                thrift::Error::Protocol(ProtocolError {
                    kind: ProtocolErrorKind::SizeLimit,
                    ..
                })
            ));
        }
    }

    #[test]
    fn negative_sizes_and_lying_list_counts_are_refused() {
        let mut bytes = message(Wire::Binary, |_| {});
        bytes.extend_from_slice(&(-5i32).to_be_bytes());
        let mut input = GuardedInput::new(Wire::Binary, Source::new(Cursor::new(bytes), 100));
        input.read_message_begin().unwrap();
        assert!(input.read_bytes().is_err());

        let mut bytes = message(Wire::Binary, |_| {});
        bytes.push(12);
        bytes.extend_from_slice(&1_000_000i32.to_be_bytes());
        let mut input = GuardedInput::new(Wire::Binary, Source::new(Cursor::new(bytes), 100));
        input.read_message_begin().unwrap();
        assert!(input.read_list_begin().is_err());
    }

    #[test]
    fn the_budget_bounds_what_one_message_may_consume() {
        let bytes = message(Wire::Binary, |o| o.write_bytes(&[0u8; 64]).unwrap());
        let mut input = GuardedInput::new(Wire::Binary, Source::new(Cursor::new(bytes), 30));
        input.read_message_begin().unwrap();
        assert!(input.read_bytes().is_err());
    }
}
