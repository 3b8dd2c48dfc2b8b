//! warpdrf: a static checker for the WarpDRF contract of CUDA kernels.
pub mod driver;
pub mod ir;
pub mod lower;
pub mod preprocess;
pub mod source;
pub mod syntax;
