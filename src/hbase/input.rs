//! Decoding a reply from the bytes read so far, which may be only part of it.
//!
//! An unframed reply carries no length, so it is decoded from whatever has arrived and, if the
//! bytes run out, decoded again once more have arrived. Two things make that safe:
//!
//! - running out is told apart from garbage: [`Tape`] notes when a read could not be served,
//!   and a decode that ran short asks for more bytes instead of failing;
//! - every length and element count is checked before it is trusted (the shared
//!   `thrift::guarded` input): negative or beyond [`MAX_REPLY`] is garbage, beyond the bytes at
//!   hand is "more bytes needed", and nothing is allocated for bytes that are not there.

use std::cell::Cell;
use std::io::{self, Read};

use thrift::ProtocolErrorKind;

use super::config::Protocol;
use crate::thrift::guarded::{protocol_error, GuardedInput, Source, Wire};

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

impl Source for &Tape<'_> {
    /// A claim beyond [`MAX_REPLY`] is garbage; one beyond the bytes at hand means the reply
    /// is still arriving.
    fn admit(&self, size: usize, what: &str) -> thrift::Result<()> {
        if size > MAX_REPLY {
            return Err(protocol_error(
                ProtocolErrorKind::SizeLimit,
                format!("{what} of {size} exceeds the {MAX_REPLY} bytes a reply may have"),
            ));
        }
        if size > self.left() {
            self.short.set(true);
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        Ok(())
    }
}

/// A reply decoder over the bytes at hand; binary is lenient (strict and old non-strict
/// headers), as the generated client's input is.
pub(crate) fn input<'t, 'a>(protocol: Protocol, tape: &'t Tape<'a>) -> GuardedInput<&'t Tape<'a>> {
    let wire = match protocol {
        Protocol::Binary => Wire::Binary,
        Protocol::Compact => Wire::Compact,
    };
    GuardedInput::new(wire, tape, false)
}
