//! How the data commands name columns and show values, how every duration flag reads, the
//! progress bars of long work, what Ctrl-C says during it, calls made again while HBase is in
//! transition, and whether an oracle serves.

mod data;
pub mod duration;
pub mod interrupt;
mod oracle;
pub mod progress;
mod retry;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use oracle::serving;
pub use progress::ProgressMode;
pub use retry::retried;
