//! The driver: runs the stages in order over files and directories.
//!
//! Input: paths and options. Output: per-kernel results (for now, the front
//! end's: every kernel found and how completely it lowered). Only this module
//! sequences stages; it does no analysis itself.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::ir::{Kernel, Unknown};
use crate::lower::{self, LowerConfig};
use crate::preprocess::{self, PpConfig, Session};
use crate::source::{FileId, LoadError, SourceDb, Span};

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub pp: PpConfig,
    pub lower: LowerConfig,
}

/// How completely a kernel lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Complete,
    Partial,
}

/// A kernel definition and its lowering (one instantiation).
#[derive(Clone, Debug)]
pub struct KernelEntry {
    pub name: String,
    /// The kernel's name in its definition.
    pub span: Span,
    pub template_params: Vec<String>,
    /// Distinct concrete template argument tuples found for it.
    pub instantiations: usize,
    pub kernel: Kernel,
}

impl KernelEntry {
    pub fn status(&self) -> Status {
        if self.kernel.unknowns.is_empty() {
            Status::Complete
        } else {
            Status::Partial
        }
    }

    pub fn unknowns(&self) -> &[Unknown] {
        &self.kernel.unknowns
    }
}

/// The files a run reads: translation units (`.cu`, or any file named
/// explicitly) and headers that hold kernels but no unit includes.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub units: Vec<PathBuf>,
    pub headers: Vec<PathBuf>,
}

/// Expands paths: directories are searched recursively.
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Inputs, LoadError> {
    let mut inputs = Inputs::default();
    for p in paths {
        if p.is_dir() {
            let mut files = Vec::new();
            walk(p, &mut files).map_err(|e| LoadError {
                path: p.clone(),
                message: e.to_string(),
            })?;
            files.sort();
            for f in files {
                match f.extension().and_then(|e| e.to_str()) {
                    Some("cu") => inputs.units.push(f),
                    Some("cuh" | "h" | "hpp" | "cpp" | "cc" | "cxx") => inputs.headers.push(f),
                    _ => {}
                }
            }
        } else if p.exists() {
            inputs.units.push(p.clone());
        } else {
            return Err(LoadError {
                path: p.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    Ok(inputs)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Every kernel of the inputs, each lowered once (with the first concrete
/// instantiation any unit gives it, else with symbolic template parameters).
pub fn lower_all(db: &mut SourceDb, inputs: &Inputs, options: &Options) -> Result<(Vec<KernelEntry>, Vec<preprocess::Diag>), LoadError> {
    let mut session = Session::new(options.pp.clone());
    let mut entries: Vec<KernelEntry> = Vec::new();
    let mut by_site: HashMap<(FileId, u32), usize> = HashMap::new();
    let mut concrete: HashMap<(FileId, u32), bool> = HashMap::new();
    let mut diagnostics = Vec::new();
    let mut included: std::collections::HashSet<FileId> = Default::default();
    let mut units: Vec<FileId> = Vec::new();
    for path in &inputs.units {
        units.push(db.load(path)?);
    }
    let mut queue: Vec<FileId> = units.clone();
    let mut header_ids = Vec::new();
    for h in &inputs.headers {
        header_ids.push(db.load(h)?);
    }
    let mut next_header = 0;
    let mut i = 0;
    loop {
        if i == queue.len() {
            // Headers with kernels that no unit included are units of their own.
            while next_header < header_ids.len() {
                let h = header_ids[next_header];
                next_header += 1;
                if !included.contains(&h) && db.file(h).text.contains("__global__") {
                    queue.push(h);
                    break;
                }
            }
            if i == queue.len() {
                break;
            }
        }
        let root = queue[i];
        i += 1;
        let t_unit = std::time::Instant::now();
        let unit = session.preprocess(db, root);
        let t_pp = t_unit.elapsed();
        included.extend(unit.files.iter().copied());
        diagnostics.extend(unit.diagnostics.iter().cloned());
        let index = lower::Index::build(&unit);
        if std::env::var("WARPDRF_TIMES").is_ok() {
            eprintln!("unit {} pp {:?} index {:?}", db.name(root), t_pp, t_unit.elapsed());
        }
        for def in lower::kernel_defs(&index) {
            let site = (def.span.file, def.span.start);
            if concrete.get(&site) == Some(&true) {
                continue;
            }
            let t_inst = std::time::Instant::now();
            let tuples = if def.template_params.is_empty() {
                vec![Vec::new()]
            } else {
                lower::instantiate::kernel_instantiations(&unit, &index, &options.lower, def.decl)
            };
            let has_concrete = !def.template_params.is_empty() && !tuples.is_empty() || def.template_params.is_empty();
            if by_site.contains_key(&site) && !has_concrete {
                continue;
            }
            let args = tuples.first().cloned().unwrap_or_default();
            let t_inst = t_inst.elapsed();
            let t_low = std::time::Instant::now();
            let kernel = lower::lower_kernel(&unit, &index, &options.lower, def.decl, &args);
            if std::env::var("WARPDRF_TIMES").is_ok() {
                eprintln!("{:>8.1?} {:>8.1?} {} stmts={}", t_inst, t_low.elapsed(), def.name, { let mut n = 0; kernel.body.walk(&mut |_| n += 1); n });
            }
            let entry = KernelEntry {
                name: def.name.clone(),
                span: def.span,
                template_params: def.template_params.clone(),
                instantiations: tuples.len(),
                kernel,
            };
            match by_site.get(&site) {
                Some(&at) => entries[at] = entry,
                None => {
                    by_site.insert(site, entries.len());
                    entries.push(entry);
                }
            }
            concrete.insert(site, has_concrete);
        }
    }
    entries.sort_by(|a, b| {
        let ka = (db.name(a.span.file).to_string(), a.span.start);
        let kb = (db.name(b.span.file).to_string(), b.span.start);
        ka.cmp(&kb)
    });
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|d| seen.insert(d.clone()));
    Ok((entries, diagnostics))
}

/// Runs `f` on a thread with a large stack: lowering recurses over syntax.
pub fn with_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(f)
        .expect("spawning the analysis thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}
