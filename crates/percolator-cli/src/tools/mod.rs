//! How the data commands name columns and show values, how every duration flag reads, and the
//! progress bars of long work.

mod data;
pub mod duration;
pub mod progress;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use progress::ProgressMode;
