//! Awaiting a phase of a transaction inside its tracing span.

/// `$fut.await` inside `$span`, without `Instrumented` when the span is disabled (no
/// subscriber wants it, the usual case in production): the wrapper is built by moving the
/// future into it, a second copy of a future that can be kilobytes, and every layer of a
/// commit would pay it. `$fut` is written out in each branch rather than bound once: the
/// binding is a copy of its own.
macro_rules! in_span {
    ($span:expr, $fut:expr) => {{
        let span: ::tracing::Span = $span;
        if span.is_disabled() {
            $fut.await
        } else {
            ::tracing::Instrument::instrument($fut, span).await
        }
    }};
}

pub(crate) use in_span;
