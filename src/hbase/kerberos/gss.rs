//! The GSSAPI calls, loaded at run time from MIT Kerberos' `libgssapi_krb5.so.2`, behind safe
//! RAII types. All of the module's unsafe code is in this file.
//!
//! The C types are those of MIT's `<gssapi/gssapi.h>` on LP64 Unix: `OM_uint32` is `u32`,
//! handles are opaque pointers, and the buffer and OID descriptors are plain C structs (MIT
//! packs them only on macOS, which this module does not target).
//!
//! The library is loaded once per process and never unloaded: MIT Kerberos keeps thread-local
//! state with destructors in its own code, so unloading it while threads live would leave them
//! calling unmapped code at exit.

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;
use std::sync::OnceLock;

use super::KerberosError;

type OmUint32 = u32;
type GssName = *mut c_void;
type GssCred = *mut c_void;
type GssCtx = *mut c_void;

#[repr(C)]
struct OidDesc {
    length: OmUint32,
    elements: *mut c_void,
}

#[repr(C)]
struct BufferDesc {
    length: usize,
    value: *mut c_void,
}

#[repr(C)]
struct KeyValueElement {
    key: *const c_char,
    value: *const c_char,
}

#[repr(C)]
struct KeyValueSet {
    count: OmUint32,
    elements: *mut KeyValueElement,
}

/// An object identifier in DER content bytes (what `gss_OID_desc.elements` points to).
#[derive(Clone, Copy, Debug)]
pub(super) struct Oid(&'static [u8]);

/// The Kerberos 5 mechanism, 1.2.840.113554.1.2.2.
pub(super) const MECH_KRB5: Oid = Oid(b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02");
/// SPNEGO, 1.3.6.1.5.5.2.
pub(super) const MECH_SPNEGO: Oid = Oid(b"\x2b\x06\x01\x05\x05\x02");
/// GSS_C_NT_HOSTBASED_SERVICE, 1.2.840.113554.1.2.1.4: "service@host".
pub(super) const NT_HOSTBASED_SERVICE: Oid = Oid(b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04");
/// GSS_KRB5_NT_PRINCIPAL_NAME, 1.2.840.113554.1.2.2.1: "primary/instance@REALM".
pub(super) const NT_KRB5_PRINCIPAL: Oid = Oid(b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01");

impl Oid {
    fn desc(self) -> OidDesc {
        OidDesc {
            length: self.0.len() as OmUint32,
            // The library only reads an input OID; the cast drops a const it has no use for.
            elements: self.0.as_ptr() as *mut c_void,
        }
    }
}

// Request flags (RFC 2744).
pub(super) const FLAG_MUTUAL: u32 = 2;
pub(super) const FLAG_REPLAY: u32 = 4;
pub(super) const FLAG_SEQUENCE: u32 = 8;
pub(super) const FLAG_CONF: u32 = 16;
pub(super) const FLAG_INTEG: u32 = 32;

const C_INDEFINITE: u32 = 0xffff_ffff;
const C_INITIATE: c_int = 1;
const C_ACCEPT: c_int = 2;
const C_GSS_CODE: c_int = 1;
const C_MECH_CODE: c_int = 2;

pub(super) const S_CONTINUE_NEEDED: u32 = 1;
/// Supplementary bits a per-message call sets on a replayed, old, out-of-order or gapped token.
pub(super) const S_SUPPLEMENTARY_SEQ: u32 = 0b1_1110;
/// The routine error field of a major status (bits 16-23).
pub(super) fn routine_error(major: u32) -> u32 {
    (major >> 16) & 0xff
}
/// Whether a major status is an error (a calling or routine error).
fn is_error(major: u32) -> bool {
    major & 0xffff_0000 != 0
}
pub(super) const E_BAD_NAME: u32 = 2;
pub(super) const E_NO_CRED: u32 = 7;
pub(super) const E_CREDENTIALS_EXPIRED: u32 = 11;

type ImportName =
    unsafe extern "C" fn(*mut OmUint32, *mut BufferDesc, *mut OidDesc, *mut GssName) -> OmUint32;
type DisplayName =
    unsafe extern "C" fn(*mut OmUint32, GssName, *mut BufferDesc, *mut *mut OidDesc) -> OmUint32;
type AcquireCredFrom = unsafe extern "C" fn(
    *mut OmUint32,
    GssName,
    OmUint32,
    *mut c_void, // gss_OID_set desired mechanisms (GSS_C_NO_OID_SET)
    c_int,
    *const KeyValueSet,
    *mut GssCred,
    *mut c_void, // gss_OID_set *actual mechanisms (not wanted)
    *mut OmUint32,
) -> OmUint32;
type InquireCred = unsafe extern "C" fn(
    *mut OmUint32,
    GssCred,
    *mut GssName,
    *mut OmUint32,
    *mut c_int,
    *mut c_void, // gss_OID_set *mechanisms (not wanted)
) -> OmUint32;
type InitSecContext = unsafe extern "C" fn(
    *mut OmUint32,
    GssCred,
    *mut GssCtx,
    GssName,
    *mut OidDesc,
    OmUint32,
    OmUint32,
    *mut c_void, // channel bindings (none)
    *mut BufferDesc,
    *mut *mut OidDesc,
    *mut BufferDesc,
    *mut OmUint32,
    *mut OmUint32,
) -> OmUint32;
#[cfg(any(test, feature = "testing"))]
type AcceptSecContext = unsafe extern "C" fn(
    *mut OmUint32,
    *mut GssCtx,
    GssCred,
    *mut BufferDesc,
    *mut c_void, // channel bindings (none)
    *mut GssName,
    *mut *mut OidDesc,
    *mut BufferDesc,
    *mut OmUint32,
    *mut OmUint32,
    *mut GssCred,
) -> OmUint32;
type Wrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    c_int,
    OmUint32,
    *mut BufferDesc,
    *mut c_int,
    *mut BufferDesc,
) -> OmUint32;
type Unwrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    *mut BufferDesc,
    *mut BufferDesc,
    *mut c_int,
    *mut OmUint32,
) -> OmUint32;
type WrapSizeLimit = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    c_int,
    OmUint32,
    OmUint32,
    *mut OmUint32,
) -> OmUint32;
type DisplayStatus = unsafe extern "C" fn(
    *mut OmUint32,
    OmUint32,
    c_int,
    *mut OidDesc,
    *mut OmUint32,
    *mut BufferDesc,
) -> OmUint32;
type ReleaseBuffer = unsafe extern "C" fn(*mut OmUint32, *mut BufferDesc) -> OmUint32;
type ReleaseName = unsafe extern "C" fn(*mut OmUint32, *mut GssName) -> OmUint32;
type ReleaseCred = unsafe extern "C" fn(*mut OmUint32, *mut GssCred) -> OmUint32;
type DeleteSecContext =
    unsafe extern "C" fn(*mut OmUint32, *mut GssCtx, *mut BufferDesc) -> OmUint32;

/// The loaded library and the functions this module calls.
pub(super) struct Lib {
    _lib: libloading::Library,
    import_name: ImportName,
    display_name: DisplayName,
    acquire_cred_from: AcquireCredFrom,
    inquire_cred: InquireCred,
    init_sec_context: InitSecContext,
    #[cfg(any(test, feature = "testing"))]
    accept_sec_context: AcceptSecContext,
    wrap: Wrap,
    unwrap: Unwrap,
    wrap_size_limit: WrapSizeLimit,
    display_status: DisplayStatus,
    release_buffer: ReleaseBuffer,
    release_name: ReleaseName,
    release_cred: ReleaseCred,
    delete_sec_context: DeleteSecContext,
}

// SAFETY: `Lib` holds a library handle (itself Send + Sync) and plain function pointers into
// it, which stay valid as long as the library is loaded, that is forever (see `load`). MIT
// Kerberos is built thread-safe; which handles may be shared is decided per handle type below.
unsafe impl Send for Lib {}
// SAFETY: as for Send: nothing in `Lib` is mutated after loading.
unsafe impl Sync for Lib {}

/// The default library name, and the variable that overrides it.
const DEFAULT_LIBRARY: &str = "libgssapi_krb5.so.2";
const LIBRARY_VAR: &str = "PERCOLATOR_GSSAPI_LIBRARY";

static LIB: OnceLock<Lib> = OnceLock::new();

/// Held, shared, around every call into the library, and taken for good when the process
/// exits: the library's destructors then tear its mutexes down, and MIT aborts the process
/// when a thread (a connection still sealing a frame) locks one of them afterwards. The exit
/// handler waits for calls in flight, and later ones wait until the process is gone.
static ALIVE: parking_lot::RwLock<()> = parking_lot::const_rwlock(());

/// The permission to call into the library now (see [`ALIVE`]).
fn alive() -> parking_lot::RwLockReadGuard<'static, ()> {
    ALIVE.read_recursive()
}

extern "C" fn close_at_exit() {
    std::mem::forget(ALIVE.write());
}

/// The process's GSSAPI library, loaded at the first call. A failed load is not remembered:
/// a later call tries again.
pub(super) fn load() -> Result<&'static Lib, KerberosError> {
    if let Some(lib) = LIB.get() {
        return Ok(lib);
    }
    let path = std::env::var(LIBRARY_VAR).unwrap_or_else(|_| DEFAULT_LIBRARY.to_owned());
    let lib = Lib::open(&path)?;
    // Another thread may have won the race; its copy is kept and this one dropped (which only
    // decrements the loader's reference count: the library stays mapped for the winner's).
    Ok(LIB.get_or_init(|| {
        // Registered after the library was loaded, so it runs before the loader's own exit
        // handler calls the library's destructors.
        // SAFETY: `close_at_exit` is a plain function that only takes a lock.
        unsafe { libc::atexit(close_at_exit) };
        lib
    }))
}

impl Lib {
    #[cfg(test)]
    pub(super) fn open_for_test(path: &str) -> Result<Lib, KerberosError> {
        Lib::open(path)
    }

    fn open(path: &str) -> Result<Lib, KerberosError> {
        // SAFETY: loading runs the library's initialisers; MIT Kerberos' only set up its
        // error tables and locks, and are safe to run on any thread.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
            KerberosError::LibraryNotFound {
                path: path.to_owned(),
                reason: e.to_string(),
            }
        })?;
        macro_rules! sym {
            ($name:literal) => {{
                // SAFETY: the type each symbol is read as is its prototype in MIT's
                // <gssapi/gssapi.h> (or <gssapi/gssapi_ext.h>), written out above.
                let s = unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|_| {
                    KerberosError::MissingSymbol {
                        path: path.to_owned(),
                        symbol: $name,
                    }
                })?;
                *s
            }};
        }
        Ok(Lib {
            import_name: sym!("gss_import_name"),
            display_name: sym!("gss_display_name"),
            acquire_cred_from: sym!("gss_acquire_cred_from"),
            inquire_cred: sym!("gss_inquire_cred"),
            init_sec_context: sym!("gss_init_sec_context"),
            #[cfg(any(test, feature = "testing"))]
            accept_sec_context: sym!("gss_accept_sec_context"),
            wrap: sym!("gss_wrap"),
            unwrap: sym!("gss_unwrap"),
            wrap_size_limit: sym!("gss_wrap_size_limit"),
            display_status: sym!("gss_display_status"),
            release_buffer: sym!("gss_release_buffer"),
            release_name: sym!("gss_release_name"),
            release_cred: sym!("gss_release_cred"),
            delete_sec_context: sym!("gss_delete_sec_context"),
            _lib: lib,
        })
    }

    /// The library's message for a status pair: every GSS-level line, then every
    /// mechanism-level line.
    pub(super) fn status_message(&self, major: u32, minor: u32) -> String {
        let mut lines = Vec::new();
        self.display_status(major, C_GSS_CODE, &mut lines);
        if minor != 0 {
            self.display_status(minor, C_MECH_CODE, &mut lines);
        }
        lines.join(": ")
    }

    fn display_status(&self, code: u32, kind: c_int, lines: &mut Vec<String>) {
        let mut context: OmUint32 = 0;
        let mut mech = MECH_KRB5.desc();
        // Bounded: a broken library must not spin us forever.
        for _ in 0..8 {
            let mut minor = 0;
            let mut out = OutBuffer::new(self);
            let _alive = alive();
            // SAFETY: every pointer is to a live local; `out` is an empty descriptor the
            // library fills and `OutBuffer` releases.
            let major = unsafe {
                (self.display_status)(
                    &mut minor,
                    code,
                    kind,
                    &mut mech,
                    &mut context,
                    &mut out.desc,
                )
            };
            if is_error(major) {
                break;
            }
            let line = String::from_utf8_lossy(out.as_slice()).into_owned();
            if !line.is_empty() {
                lines.push(line);
            }
            if context == 0 {
                break;
            }
        }
    }

    fn fail(&self, call: &'static str, major: u32, minor: u32) -> KerberosError {
        KerberosError::Gss {
            call,
            major,
            minor,
            message: self.status_message(major, minor),
        }
    }
}

/// A buffer the library allocated, released on drop.
struct OutBuffer<'a> {
    lib: &'a Lib,
    desc: BufferDesc,
}

impl<'a> OutBuffer<'a> {
    fn new(lib: &'a Lib) -> Self {
        OutBuffer {
            lib,
            desc: BufferDesc {
                length: 0,
                value: ptr::null_mut(),
            },
        }
    }

    fn as_slice(&self) -> &[u8] {
        if self.desc.value.is_null() || self.desc.length == 0 {
            return &[];
        }
        // SAFETY: the library set `value` to an allocation of `length` bytes that lives until
        // gss_release_buffer, which only `drop` calls.
        unsafe { std::slice::from_raw_parts(self.desc.value as *const u8, self.desc.length) }
    }
}

impl Drop for OutBuffer<'_> {
    fn drop(&mut self) {
        if !self.desc.value.is_null() {
            let mut minor = 0;
            let _alive = alive();
            // SAFETY: the descriptor was filled by the library and is released once.
            unsafe { (self.lib.release_buffer)(&mut minor, &mut self.desc) };
        }
    }
}

/// This process's user id (for MIT's default ticket cache name).
pub(super) fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// An input buffer over Rust memory. The library only reads input buffers, so the cast from
/// a shared reference is sound.
fn in_buffer(bytes: &[u8]) -> BufferDesc {
    BufferDesc {
        length: bytes.len(),
        value: bytes.as_ptr() as *mut c_void,
    }
}

/// An imported name, released on drop.
pub(super) struct Name {
    lib: &'static Lib,
    handle: GssName,
}

// SAFETY: an MIT name is immutable once imported; the library takes no thread-affine state
// from it, so it may move between threads and be read from several at once.
unsafe impl Send for Name {}
// SAFETY: see Send; every call given a name only reads it.
unsafe impl Sync for Name {}

impl Name {
    pub(super) fn import(lib: &'static Lib, text: &str, kind: Oid) -> Result<Name, KerberosError> {
        if text.contains('\0') {
            return Err(KerberosError::InvalidConfig(format!(
                "name {text:?} contains a NUL byte"
            )));
        }
        let mut buffer = in_buffer(text.as_bytes());
        let mut oid = kind.desc();
        let mut handle: GssName = ptr::null_mut();
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: the buffer and OID point to live memory the call only reads; `handle`
        // receives a new name owned by the returned `Name`.
        let major = unsafe { (lib.import_name)(&mut minor, &mut buffer, &mut oid, &mut handle) };
        if is_error(major) {
            return Err(lib.fail("gss_import_name", major, minor));
        }
        Ok(Name { lib, handle })
    }

    /// The name as text ("client@REALM").
    pub(super) fn display(&self) -> String {
        let mut out = OutBuffer::new(self.lib);
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: `handle` is a live name; the output type is not wanted (null is allowed).
        let major = unsafe {
            (self.lib.display_name)(&mut minor, self.handle, &mut out.desc, ptr::null_mut())
        };
        if is_error(major) {
            return String::from("(unknown)");
        }
        String::from_utf8_lossy(out.as_slice()).into_owned()
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: the handle came from the library and is released once.
        unsafe { (self.lib.release_name)(&mut minor, &mut self.handle) };
    }
}

/// Acquired credentials, released on drop.
pub(super) struct Cred {
    lib: &'static Lib,
    handle: GssCred,
}

// SAFETY: MIT's krb5 credential record carries its own mutex and locks it in every call that
// reads or refreshes it (k5_mutex_lock in kg_cred_resolve), so a handle may be used from any
// thread, and from several at once (by gss_init_sec_context and gss_inquire_cred).
unsafe impl Send for Cred {}
// SAFETY: see Send.
unsafe impl Sync for Cred {}

/// Where credentials come from, as MIT's credential store keys them.
pub(super) struct CredStore<'a> {
    pub ccache: Option<&'a str>,
    pub client_keytab: Option<&'a str>,
    /// The acceptor's keytab (tests only).
    pub keytab: Option<&'a str>,
}

impl Cred {
    /// gss_acquire_cred_from for initiating (or, with `accept`, accepting) contexts.
    pub(super) fn acquire(
        lib: &'static Lib,
        name: Option<&Name>,
        store: &CredStore<'_>,
        accept: bool,
    ) -> Result<Cred, (u32, u32, String)> {
        let mut owned = Vec::new();
        for (key, value) in [
            (c"ccache", store.ccache),
            (c"client_keytab", store.client_keytab),
            (c"keytab", store.keytab),
        ] {
            if let Some(value) = value {
                let value = CString::new(value)
                    .map_err(|_| (0, 0, format!("{value:?} contains a NUL byte")))?;
                owned.push((key, value));
            }
        }
        let mut elements: Vec<KeyValueElement> = owned
            .iter()
            .map(|(k, v)| KeyValueElement {
                key: k.as_ptr(),
                value: v.as_ptr(),
            })
            .collect();
        let set = KeyValueSet {
            count: elements.len() as OmUint32,
            elements: elements.as_mut_ptr(),
        };
        let usage = if accept { C_ACCEPT } else { C_INITIATE };
        let mut handle: GssCred = ptr::null_mut();
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: the key/value strings live in `owned` and the elements in `elements` for the
        // whole call, which only reads them; `handle` receives new credentials owned by the
        // returned `Cred`; the unwanted outputs are null, as the API allows.
        let major = unsafe {
            (lib.acquire_cred_from)(
                &mut minor,
                name.map_or(ptr::null_mut(), |n| n.handle),
                C_INDEFINITE,
                ptr::null_mut(),
                usage,
                &set,
                &mut handle,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if is_error(major) {
            return Err((major, minor, lib.status_message(major, minor)));
        }
        Ok(Cred { lib, handle })
    }

    /// The credentials' principal and remaining lifetime in seconds (0: expired). For keytab
    /// credentials this obtains the first ticket, so it contacts the KDC.
    pub(super) fn inquire(&self) -> Result<(String, u32), (u32, u32, String)> {
        let mut name: GssName = ptr::null_mut();
        let mut lifetime: OmUint32 = 0;
        let mut usage: c_int = 0;
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: `handle` is live; `name` receives a new name wrapped (and so released)
        // below; the mechanism set is not wanted.
        let major = unsafe {
            (self.lib.inquire_cred)(
                &mut minor,
                self.handle,
                &mut name,
                &mut lifetime,
                &mut usage,
                ptr::null_mut(),
            )
        };
        let name = (!name.is_null()).then(|| Name {
            lib: self.lib,
            handle: name,
        });
        if is_error(major) {
            return Err((major, minor, self.lib.status_message(major, minor)));
        }
        Ok((name.map(|n| n.display()).unwrap_or_default(), lifetime))
    }
}

impl Drop for Cred {
    fn drop(&mut self) {
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: the handle came from the library and is released once.
        unsafe { (self.lib.release_cred)(&mut minor, &mut self.handle) };
    }
}

/// A security context, deleted on drop.
pub(super) struct Context {
    lib: &'static Lib,
    handle: GssCtx,
    /// The flags the context was established with.
    pub flags: u32,
}

// SAFETY: a context may be used from any thread, one at a time: every method that uses it
// takes `&mut self`. It is not Sync (per-message calls advance its sequence numbers).
unsafe impl Send for Context {}

/// One step of establishing a context: the token to send, and whether the context is
/// complete.
pub(super) struct Step {
    pub token: Vec<u8>,
    pub complete: bool,
}

impl Context {
    pub(super) fn new(lib: &'static Lib) -> Context {
        Context {
            lib,
            handle: ptr::null_mut(),
            flags: 0,
        }
    }

    /// gss_init_sec_context: the first call with no input token, later ones with the peer's.
    pub(super) fn init_step(
        &mut self,
        cred: &Cred,
        target: &Name,
        mech: Oid,
        req_flags: u32,
        input: Option<&[u8]>,
    ) -> Result<Step, (u32, u32, String)> {
        let mut input = input.map(in_buffer);
        let input_ptr = input
            .as_mut()
            .map_or(ptr::null_mut(), |b| b as *mut BufferDesc);
        let mut mech = mech.desc();
        let mut out = OutBuffer::new(self.lib);
        let mut ret_flags: OmUint32 = 0;
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: `handle` is null or a context this library made and only this value owns;
        // the credential, name, OID and input are live and only read; `out` is filled by the
        // library and released by `OutBuffer`; unwanted outputs are null.
        let major = unsafe {
            (self.lib.init_sec_context)(
                &mut minor,
                cred.handle,
                &mut self.handle,
                target.handle,
                &mut mech,
                req_flags,
                0,
                ptr::null_mut(),
                input_ptr,
                ptr::null_mut(),
                &mut out.desc,
                &mut ret_flags,
                ptr::null_mut(),
            )
        };
        if is_error(major) {
            return Err((major, minor, self.lib.status_message(major, minor)));
        }
        self.flags = ret_flags;
        Ok(Step {
            token: out.as_slice().to_vec(),
            complete: major & S_CONTINUE_NEEDED == 0,
        })
    }

    /// gss_accept_sec_context with the acceptor's credentials (tests only): the token to send
    /// back, whether the context is complete, and the initiator's name.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn accept_step(
        &mut self,
        cred: &Cred,
        input: &[u8],
    ) -> Result<(Step, Option<String>), KerberosError> {
        let mut input = in_buffer(input);
        let mut out = OutBuffer::new(self.lib);
        let mut source: GssName = ptr::null_mut();
        let mut ret_flags: OmUint32 = 0;
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: as in `init_step`; `source` receives a new name wrapped (and so released)
        // below; the delegated credential is not wanted.
        let major = unsafe {
            (self.lib.accept_sec_context)(
                &mut minor,
                &mut self.handle,
                cred.handle,
                &mut input,
                ptr::null_mut(),
                &mut source,
                ptr::null_mut(),
                &mut out.desc,
                &mut ret_flags,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let source = (!source.is_null()).then(|| Name {
            lib: self.lib,
            handle: source,
        });
        if is_error(major) {
            return Err(self.lib.fail("gss_accept_sec_context", major, minor));
        }
        self.flags = ret_flags;
        let step = Step {
            token: out.as_slice().to_vec(),
            complete: major & S_CONTINUE_NEEDED == 0,
        };
        Ok((step, source.map(|n| n.display())))
    }

    /// gss_wrap: `plain` sealed (encrypted when `conf`, else signed), appended to `out`.
    pub(super) fn wrap(
        &mut self,
        conf: bool,
        plain: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), KerberosError> {
        let mut input = in_buffer(plain);
        let mut output = OutBuffer::new(self.lib);
        let mut conf_state: c_int = 0;
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: `handle` is an established context only this value uses; the input is only
        // read; `output` is filled by the library and released by `OutBuffer`.
        let major = unsafe {
            (self.lib.wrap)(
                &mut minor,
                self.handle,
                c_int::from(conf),
                0,
                &mut input,
                &mut conf_state,
                &mut output.desc,
            )
        };
        if is_error(major) {
            return Err(self.lib.fail("gss_wrap", major, minor));
        }
        if conf && conf_state == 0 {
            return Err(KerberosError::Protocol(
                "gss_wrap did not encrypt a confidential message".into(),
            ));
        }
        out.extend_from_slice(output.as_slice());
        Ok(())
    }

    /// gss_unwrap: the message in `token` appended to `out`; returns whether it was encrypted.
    /// A replayed, old or out-of-order token is an error.
    pub(super) fn unwrap(
        &mut self,
        token: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, KerberosError> {
        let mut input = in_buffer(token);
        let mut output = OutBuffer::new(self.lib);
        let mut conf_state: c_int = 0;
        let mut qop_state: OmUint32 = 0;
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: as in `wrap`; the input token (network bytes) is only read and the library
        // checks its structure and checksum before using it.
        let major = unsafe {
            (self.lib.unwrap)(
                &mut minor,
                self.handle,
                &mut input,
                &mut output.desc,
                &mut conf_state,
                &mut qop_state,
            )
        };
        if is_error(major) {
            return Err(self.lib.fail("gss_unwrap", major, minor));
        }
        if major & S_SUPPLEMENTARY_SEQ != 0 {
            return Err(KerberosError::Protocol(format!(
                "a replayed, old or out-of-order message (status {major:#x})"
            )));
        }
        out.extend_from_slice(output.as_slice());
        Ok(conf_state != 0)
    }

    /// gss_wrap_size_limit: the largest message whose sealed form fits in `max_token` bytes.
    pub(super) fn wrap_size_limit(
        &mut self,
        conf: bool,
        max_token: u32,
    ) -> Result<u32, KerberosError> {
        let mut max_input: OmUint32 = 0;
        let mut minor = 0;
        let _alive = alive();
        // SAFETY: `handle` is an established context; the output is a live local.
        let major = unsafe {
            (self.lib.wrap_size_limit)(
                &mut minor,
                self.handle,
                c_int::from(conf),
                0,
                max_token,
                &mut max_input,
            )
        };
        if is_error(major) {
            return Err(self.lib.fail("gss_wrap_size_limit", major, minor));
        }
        Ok(max_input)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            let mut minor = 0;
            let _alive = alive();
            // SAFETY: the handle came from the library and is deleted once; no output token.
            unsafe { (self.lib.delete_sec_context)(&mut minor, &mut self.handle, ptr::null_mut()) };
        }
    }
}
