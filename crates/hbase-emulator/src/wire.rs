//! Bounded decoding of one request message.
//!
//! An unframed message has no length of its own, so every byte of a message is read through a
//! budget (`max_frame_bytes`), and sizes are checked by the shared guarded input
//! (`thrift::guarded`): a string, binary or collection larger than what is left of the budget
//! is refused before anything is allocated.

use std::cell::RefCell;
use std::io::{self, Read};
use std::rc::Rc;

use thrift::ProtocolErrorKind;

use percolator_thrift::guarded::{protocol_error, Source as GuardedSource};
pub(crate) use percolator_thrift::guarded::{GuardedInput, Wire};

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

impl<R: Read> GuardedSource for Source<R> {
    /// Every element takes at least one byte, so a count above the remaining budget is a lie.
    fn admit(&self, size: usize, what: &str) -> thrift::Result<()> {
        if size > self.remaining() {
            return Err(protocol_error(
                ProtocolErrorKind::SizeLimit,
                format!(
                    "{what} of {size} exceeds the {} bytes left of max_frame_bytes",
                    self.remaining()
                ),
            ));
        }
        Ok(())
    }
}

/// Input that can tell whether the top-level struct of the current message was fully read.
pub trait MessageInput: thrift::protocol::TInputProtocol {
    fn args_complete(&self) -> bool;
}

impl<R: Read> MessageInput for GuardedInput<Source<R>> {
    fn args_complete(&self) -> bool {
        GuardedInput::args_complete(self)
    }
}

/// A request decoder: strict binary headers only, as HBase's gateway requires.
pub fn request_input<R: Read>(wire: Wire, src: Source<R>) -> GuardedInput<Source<R>> {
    GuardedInput::new(wire, src, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use thrift::protocol::{
        TBinaryOutputProtocol, TCompactOutputProtocol, TInputProtocol, TMessageIdentifier,
        TMessageType, TOutputProtocol,
    };
    use thrift::ProtocolError;

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
            let mut input = request_input(wire, Source::new(Cursor::new(bytes), 1000));
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
            let mut input = request_input(wire, Source::new(Cursor::new(bytes), 1 << 20));
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
        let mut input = request_input(Wire::Binary, Source::new(Cursor::new(bytes), 100));
        input.read_message_begin().unwrap();
        assert!(input.read_bytes().is_err());

        let mut bytes = message(Wire::Binary, |_| {});
        bytes.push(12);
        bytes.extend_from_slice(&1_000_000i32.to_be_bytes());
        let mut input = request_input(Wire::Binary, Source::new(Cursor::new(bytes), 100));
        input.read_message_begin().unwrap();
        assert!(input.read_list_begin().is_err());
    }

    #[test]
    fn the_budget_bounds_what_one_message_may_consume() {
        let bytes = message(Wire::Binary, |o| o.write_bytes(&[0u8; 64]).unwrap());
        let mut input = request_input(Wire::Binary, Source::new(Cursor::new(bytes), 30));
        input.read_message_begin().unwrap();
        assert!(input.read_bytes().is_err());
    }
}
