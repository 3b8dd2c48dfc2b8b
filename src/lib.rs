//! warpdrf: a static checker for the WarpDRF contract of CUDA kernels.
//!
//! Pipeline (see `ARCHITECTURE.md`): `preprocess` → `syntax` → `lower` →
//! `ir` → analyses → `verdict` → `triage` → `report`, sequenced by `driver`.
pub mod cli;
pub mod driver;
pub mod hash;
pub mod ir;
pub mod lower;
pub mod obligation;
pub mod passes;
pub mod preprocess;
pub mod profile;
pub mod report;
pub mod source;
pub mod syntax;
pub mod triage;
pub mod verdict;
