//! How the data commands name columns and show values, how every duration flag reads, the
//! progress bars of long work, and what Ctrl-C says during it.

mod data;
pub mod duration;
pub mod interrupt;
pub mod progress;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use progress::ProgressMode;
