//! The test modules, one per area.

mod vectors;
