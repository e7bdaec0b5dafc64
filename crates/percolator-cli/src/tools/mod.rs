//! How the data commands name columns and show values, and the progress bars of long work.

mod data;
pub mod progress;

pub use data::{parse_column, render_value, scan_range, value_json};
pub use progress::ProgressMode;
