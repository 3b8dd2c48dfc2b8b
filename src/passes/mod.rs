//! Analyses from one IR to the next.
//!
//! - [`accesses`]: kernel IR → access model (symbolic execution of one
//!   generic thread: phases, offsets, path conditions).

pub mod accesses;
