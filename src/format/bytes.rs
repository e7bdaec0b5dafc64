//! The primitives every stored record is built of: big-endian integers, length-prefixed byte
//! strings (u16 or u32 lengths) and optional values (a flag byte, then a u32-prefixed value).
//! Decoding is strict: exact lengths, no trailing bytes, so a damaged cell is reported as
//! corrupted instead of being misread.

/// What went wrong decoding a stored record; the caller adds table, row and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub String);

pub(super) type Decoded<T> = Result<T, CodecError>;

pub(super) struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn bytes16(&mut self, b: &[u8]) {
        // Lengths are validated where keys are built (families <= 255, tables and owners short).
        self.0.extend_from_slice(&(b.len() as u16).to_be_bytes());
        self.0.extend_from_slice(b);
    }
    pub fn bytes32(&mut self, b: &[u8]) {
        self.0.extend_from_slice(&(b.len() as u32).to_be_bytes());
        self.0.extend_from_slice(b);
    }
    pub fn opt_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.u8(0),
            Some(b) => {
                self.u8(1);
                self.bytes32(b);
            }
        }
    }
}

pub(super) struct Reader<'a> {
    pub buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub fn take(&mut self, n: usize) -> Decoded<&'a [u8]> {
        if self.buf.len() < n {
            return Err(CodecError(format!(
                "truncated: wanted {n} more bytes, {} left",
                self.buf.len()
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub fn u8(&mut self) -> Decoded<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Decoded<u16> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    pub fn u32(&mut self) -> Decoded<u32> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    pub fn u64(&mut self) -> Decoded<u64> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub fn bytes16(&mut self) -> Decoded<Vec<u8>> {
        let n = usize::from(self.u16()?);
        Ok(self.take(n)?.to_vec())
    }

    pub fn bytes32(&mut self) -> Decoded<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    pub fn string16(&mut self) -> Decoded<String> {
        String::from_utf8(self.bytes16()?).map_err(|_| CodecError("name is not UTF-8".into()))
    }

    pub fn opt_bytes(&mut self) -> Decoded<Option<Vec<u8>>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.bytes32()?)),
            f => Err(CodecError(format!("bad option flag {f}"))),
        }
    }

    pub fn end(&self) -> Decoded<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(CodecError(format!("{} trailing bytes", self.buf.len())))
        }
    }
}
