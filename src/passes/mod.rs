//! Analyses from one IR to the next.
//!
//! - [`accesses`]: kernel IR → access model (symbolic execution of one
//!   generic thread: phases, offsets, path conditions), in bytes.
//! - [`units`]: access model in bytes → in each object's element unit, so
//!   that instantiations over element types are one model.

pub mod accesses;
pub mod units;

/// The access model the checks read: `kernel` executed by one generic thread
/// (see [`accesses::build`]), its objects measured in their units.
pub fn model(
    kernel: &crate::ir::Kernel,
    warp_size: u32,
    facts: &[crate::ir::LaunchFact],
    lanes_along_x: bool,
) -> crate::ir::access::AccessModel {
    units::measure(accesses::build(kernel, warp_size, facts, lanes_along_x))
}
