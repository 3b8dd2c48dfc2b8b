//! warpdrf: a static checker for the WarpDRF contract of CUDA kernels.
pub mod preprocess;
pub mod source;
