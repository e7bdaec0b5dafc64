//! The SASL security layer of a Kerberos raw-socket gateway as a link layer: every request one
//! SASL frame (signed or encrypted as the qop says), every frame of the reply opened.

use std::sync::Arc;

use super::Layer;
use crate::hbase::errors::Cause;
use crate::hbase::kerberos::SaslLayer;

impl Layer for SaslLayer {
    fn seal(&mut self, request: &[u8], out: &mut Vec<u8>) -> Result<(), Cause> {
        SaslLayer::seal(self, request, out).map_err(|e| Cause::Kerberos(Arc::new(e)))
    }

    fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>) -> Result<usize, Cause> {
        SaslLayer::open(self, wire, plain).map_err(|e| Cause::Kerberos(Arc::new(e)))
    }
}
