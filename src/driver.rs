//! The driver: runs the stages in order over files and directories.
//!
//! Input: paths and options. Output: per-kernel results (for now, the front
//! end's: every kernel found and how completely it lowered). Only this module
//! sequences stages; it does no analysis itself.

use crate::hash::HashMap;
use std::path::{Path, PathBuf};

use crate::ir::{Dim, Kernel, Unknown};
use crate::lower::instantiate::{BlockShape, LaunchShape};
use crate::lower::{self, LowerConfig};
use crate::obligation::{MemoryOptions, Shape};
use crate::preprocess::{self, PpConfig, Session};
use crate::source::{FileId, LoadError, SourceDb, Span};
use crate::verdict::{Condition, KernelResult, Launch, ShapeSource, UnknownItem, Verdict};

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub pp: PpConfig,
    pub lower: LowerConfig,
    /// Only kernels of this name.
    pub kernel: Option<String>,
    pub block_dim: Option<[u32; 3]>,
    pub grid_dim: Option<[u32; 3]>,
    /// Limit of one solver obligation, in nominal milliseconds of work.
    pub timeout_ms: u64,
    /// Limit of one kernel's obligations, in nominal milliseconds of work
    /// (else the larger of 6 s and three obligations' limits).
    pub kernel_timeout_ms: Option<u64>,
    /// Kernels checked at once (0 counts as 1).
    pub jobs: usize,
    /// Stop deciding a condition once an alarm has settled its verdict
    /// (`audit`: verdicts first; `check` looks for every alarm).
    pub settle: bool,
}

/// How completely a kernel lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Complete,
    Partial,
}

/// A kernel definition and its lowerings (up to [`MAX_LOWERED`] instantiations).
#[derive(Clone, Debug)]
pub struct KernelEntry {
    pub name: String,
    /// The kernel's name in its definition.
    pub span: Span,
    /// The whole definition, `template <…>` included.
    pub definition: Span,
    pub template_params: Vec<String>,
    /// Distinct template argument tuples found for it (in every unit that includes it).
    pub instantiations: usize,
    /// How many of them were lowered: the kept ones, those that lowered to
    /// the same code as a kept one, and those that only trap.
    pub covered: usize,
    /// The search for instantiations stopped short (at its cap,
    /// [`lower::instantiate::MAX_TUPLES`], here or on the way: see
    /// `KernelUses::complete`) and no lowering with symbolic arguments
    /// covers the rest: more may exist, unchecked.
    pub more_instantiations: bool,
    /// The lowered instantiations, the most determined first.
    pub kernels: Vec<Kernel>,
    /// For each lowered instantiation, the block shapes its launch sites
    /// use, when every launch site of it determines one.
    pub launch_blocks: Vec<Option<Vec<LaunchShape>>>,
    /// What kept any instantiation from lowering completely, deduplicated.
    pub unknowns: Vec<Unknown>,
    /// The index in `kernels` of the lowering with every template argument
    /// symbolic, when one was kept: it covers every instantiation.
    pub cover: Option<usize>,
}

/// Most instantiations of one kernel lowered for the listing, where more
/// are found than [`MAX_TRIED`] (with fewer, every one is kept).
pub const MAX_LOWERED: usize = 24;
/// Most instantiations lowered that run code (those that lower to the
/// same code as another are not kept).
pub const MAX_TRIED: usize = 32;
/// Most lowerings that only trap kept per kernel (they do not count
/// towards [`MAX_TRIED`]).
const MAX_TRAPPING: usize = 32;

/// The share of a kernel's budget (this divides it) that `audit` gives a
/// memory condition that cannot pass: one the front end left unknown.
const UNPASSABLE_SHARE: crate::obligation::smt::Work = 4;

impl KernelEntry {
    pub fn status(&self) -> Status {
        if self.unknowns.is_empty() {
            Status::Complete
        } else {
            Status::Partial
        }
    }

    pub fn unknowns(&self) -> &[Unknown] {
        &self.unknowns
    }

    /// The representative instantiation.
    pub fn kernel(&self) -> &Kernel {
        &self.kernels[0]
    }

    pub fn uses_warp_primitives(&self) -> bool {
        self.kernels.iter().any(Kernel::uses_warp_primitives)
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

/// Every kernel of the inputs. A kernel defined in a header many units
/// include gets the instantiations and launches of all of them (each unit
/// adds what its own files name: `kernel_uses_beyond`); each instantiation
/// is lowered in the first unit that names it, and a cover of those past
/// the caps in the last unit that reads the header.
pub fn lower_all(
    db: &mut SourceDb,
    inputs: &Inputs,
    options: &Options,
) -> Result<(Vec<KernelEntry>, Vec<preprocess::Diag>), LoadError> {
    let (units, headers) = load(db, inputs)?;
    Ok(lower_files(db, units, headers, options))
}

/// Reads the inputs into the database: the units' ids, then the headers'.
fn load(db: &mut SourceDb, inputs: &Inputs) -> Result<(Vec<FileId>, Vec<FileId>), LoadError> {
    let units = inputs.units.iter().map(|p| db.load(p)).collect::<Result<_, _>>()?;
    let headers = inputs.headers.iter().map(|p| db.load(p)).collect::<Result<_, _>>()?;
    Ok((units, headers))
}

/// [`lower_all`] on files already in the database (text given by a test or a fuzzer).
pub fn lower_files(
    db: &mut SourceDb,
    units: Vec<FileId>,
    headers: Vec<FileId>,
    options: &Options,
) -> (Vec<KernelEntry>, Vec<preprocess::Diag>) {
    lower_files_streaming(db, units, headers, options, &mut |_| {})
}

/// [`lower_files`], handing each entry to `settled` as soon as no later
/// unit can add to it (the last unit that reads its file has been read),
/// so that checking can start while the front end goes on.
fn lower_files_streaming(
    db: &mut SourceDb,
    units: Vec<FileId>,
    headers: Vec<FileId>,
    options: &Options,
    settled: &mut dyn FnMut(&KernelEntry),
) -> (Vec<KernelEntry>, Vec<preprocess::Diag>) {
    // Facts about host fields hold across every file checked.
    let mut lower_options = options.lower.clone();
    let mut session = Session::new(options.pp.clone());
    let texts: Vec<&str> = units
        .iter()
        .chain(&headers)
        .map(|&f| db.file(f).text.as_str())
        .collect();
    lower_options.warp_size_fields =
        lower::device_fields::warp_size_fields(texts.iter().copied(), lower_options.warp_size);
    if lower_options.compute_capability.is_some() {
        // The units that read the device's properties, as the target
        // compiles them: another platform's branch (HIP's `cc`) is not one
        // of its writes.
        let reading: Vec<FileId> = units
            .iter()
            .copied()
            .filter(|&f| {
                let text = &db.file(f).text;
                text.contains("major") && text.contains("minor")
            })
            .collect();
        let compiled: Vec<(FileId, preprocess::Unit)> =
            reading.into_iter().map(|f| (f, session.preprocess(db, f))).collect();
        let raw = units
            .iter()
            .chain(&headers)
            .filter(|f| !compiled.iter().any(|(c, _)| c == *f))
            .map(|&f| db.file(f).text.as_str());
        let preprocessed = compiled
            .iter()
            .flat_map(|(_, unit)| unit.fragments.iter().map(|fragment| fragment.text.as_str()));
        let texts: Vec<&str> = raw.chain(preprocessed).collect();
        lower_options.compute_capability_fields = lower::device_fields::compute_capability_fields(texts);
    }
    let options = &Options {
        lower: lower_options,
        ..options.clone()
    };
    // The units in the order they are read, and for each file the last
    // unit that reads it: a kernel's uses are gathered from every unit
    // that includes its definition or declares it, and it is settled after
    // the last.
    let (plan, with_kernels, naming) = plan_units(db, &mut session, units, headers);
    let mut last_reader: HashMap<FileId, usize> = HashMap::default();
    for (at, (_, files)) in plan.iter().enumerate() {
        for &f in files {
            last_reader.insert(f, at);
        }
    }
    // The last unit that may declare or launch a kernel: a unit that
    // launches a kernel defined elsewhere reads its declaration (whose
    // `__global__`, and name, may come from a macro), so its code holds
    // the name.
    let settle_at = |def: &lower::KernelDef| -> usize {
        let defining = last_reader.get(&def.span.file).copied();
        defining.max(naming.last_naming(&def.name)).unwrap_or(0)
    };
    let mut entries: Vec<KernelEntry> = Vec::new();
    let mut gathering: HashMap<(FileId, u32), Gathered> = HashMap::default();
    // Sites of the kernels defined so far, by name.
    let mut by_name: HashMap<String, Vec<(FileId, u32)>> = HashMap::default();
    // Uses of kernels declared in a unit before any unit defined them.
    let mut foreign: HashMap<String, Found> = HashMap::default();
    let mut diagnostics = Vec::new();
    for (at, (root, files)) in plan.into_iter().enumerate() {
        // A unit that sees no kernel adds nothing to the listing, and
        // settles what is due without a definition to lower.
        if !files.iter().any(|f| with_kernels.contains(f)) {
            for (_, g) in due(&mut gathering, at) {
                let entry = g.settle(None);
                settled(&entry);
                entries.push(entry);
            }
            continue;
        }
        let unit = {
            let _s = crate::profile::stage("preprocess");
            session.preprocess(db, root)
        };
        diagnostics.extend(unit.diagnostics.iter().cloned());
        let _s = crate::profile::stage("index+lower");
        let index = lower::Index::build(&unit);
        let mut host = lower::instantiate::HostSearch::new(&unit, &index, &options.lower);
        for frag in &unit.fragments {
            if frag.parse_timed_out.load(std::sync::atomic::Ordering::Relaxed) {
                let span = frag
                    .map
                    .segments()
                    .first()
                    .map_or(Span::point(frag.file, 0), |s| Span::point(s.file, s.orig));
                diagnostics.push(preprocess::Diag {
                    severity: preprocess::Severity::Error,
                    span,
                    message: "this code is too complex to parse in time; kernels in it are not listed".into(),
                });
            }
        }
        let wanted = |name: &str| options.kernel.as_ref().is_none_or(|k| k == name);
        // The kernels defined here, by site.
        let mut here: HashMap<(FileId, u32), lower::DeclId> = HashMap::default();
        for def in lower::kernel_defs(&index) {
            if !wanted(&def.name) {
                continue;
            }
            let site = (def.span.file, def.span.start);
            here.insert(site, def.decl);
            let g = gathering.entry(site).or_insert_with(|| {
                let mut g = Gathered::new(&def, settle_at(&def));
                by_name.entry(def.name.clone()).or_default().push(site);
                if let Some(f) = foreign.get(&def.name) {
                    g.unlowered = g.found.join(f.clone());
                }
                g
            });
            let lower_in = (&unit, &index, &options.lower, def.decl);
            let fresh = g.search(&mut host, def.decl);
            let mut candidates = std::mem::take(&mut g.unlowered);
            candidates.extend(fresh);
            let candidates = if candidates.is_empty() {
                candidates
            } else {
                lower::instantiate::diverse_order(&candidates, Option::is_some)
            };
            if std::env::var("WARPDRF_DEBUG_TUPLES").is_ok() {
                eprintln!(
                    "{} in {}: {} new tuple(s) of {}, in the order tried:",
                    def.name,
                    db.file(root).path.display(),
                    candidates.len(),
                    g.found.tuples.len()
                );
                for t in &candidates {
                    let args: Vec<String> = t
                        .iter()
                        .map(|a| a.as_ref().map_or("?".into(), |a| a.display()))
                        .collect();
                    eprintln!("  <{}>", args.join(", "));
                }
            }
            g.lower(lower_in, &candidates);
            if last_reader.get(&def.span.file) == Some(&at) && g.settle_at > at {
                g.cover_early(lower_in);
            }
        }
        // Kernels this unit declares but does not define: another unit
        // defines (and lowers) them, and this one may launch them.
        for (name, decl) in lower::declared_kernels(&index) {
            if !wanted(&name) {
                continue;
            }
            match by_name.get(&name) {
                Some(sites) => {
                    for site in sites {
                        if let Some(g) = gathering.get_mut(site) {
                            let fresh = g.search(&mut host, decl);
                            g.unlowered.extend(fresh);
                        }
                    }
                }
                None => {
                    let template = index.decl(decl).template.is_some();
                    foreign.entry(name).or_default().search(&mut host, decl, template);
                }
            }
        }
        for (site, g) in due(&mut gathering, at) {
            let entry = g.settle(here.get(&site).map(|&d| (&unit, &index, &options.lower, d)));
            settled(&entry);
            entries.push(entry);
        }
    }
    // (Every kernel is due by the last unit.)
    for (_, g) in due(&mut gathering, usize::MAX) {
        let entry = g.settle(None);
        settled(&entry);
        entries.push(entry);
    }
    entries.sort_by(|a, b| {
        let ka = (db.name(a.span.file).to_string(), a.span.start);
        let kb = (db.name(b.span.file).to_string(), b.span.start);
        ka.cmp(&kb)
    });
    let mut seen = crate::hash::HashSet::default();
    diagnostics.retain(|d| seen.insert(d.clone()));
    (entries, diagnostics)
}

/// A kernel's uses as gathered unit by unit (see `lower_files_streaming`):
/// the union of what every unit that includes its definition instantiates
/// and launches, and the instantiations lowered so far, each in the unit
/// that first named it.
struct Gathered {
    name: String,
    span: Span,
    definition: Span,
    template_params: Vec<String>,
    /// What the units found of it.
    found: Found,
    /// Tuples found where the definition was not seen (a unit that only
    /// declares the kernel), not yet lowered.
    unlowered: Vec<Tuple>,
    /// Lowered instantiations, each with the tuples that lowered to its code.
    kernels: Vec<(Kernel, Vec<Tuple>)>,
    /// Lowerings that only trap (variants compiled out with NO_DEVICE_CODE).
    trapping: Vec<(Kernel, Tuple)>,
    /// Tuples lowered (kept, same code as a kept one, or trapping).
    covered: usize,
    /// Tuples taken from the candidates that run code, toward [`MAX_TRIED`].
    tried: usize,
    /// The kept lowerings reached their cap: no more are lowered.
    full: bool,
    /// A template no unit names an instantiation of, lowered with every
    /// argument symbolic where it was first seen.
    unnamed: Option<Kernel>,
    /// The unit after which no other can add to it (see `settle_at`).
    settle_at: usize,
    /// The cover, lowered in the last unit that reads the definition when
    /// a later one settles the kernel (see [`EarlyCover`]).
    early_cover: Option<EarlyCover>,
}

/// A cover lowered before the kernel is settled, and how many tuples had
/// been found then and whether a search had stopped short: its arguments
/// are those of a settlement that finds the same.
struct EarlyCover {
    kernel: Kernel,
    tuples: usize,
    short: bool,
}

/// A kernel's uses, unit by unit: the union of what each found.
#[derive(Clone, Default)]
struct Found {
    /// Distinct template argument tuples, in the order found.
    tuples: Vec<Tuple>,
    launches: Vec<lower::instantiate::LaunchSite>,
    /// Some unit's search stopped short (`KernelUses::complete`).
    short: bool,
    /// The shapes of every launch site of the units whose search stopped
    /// short (`KernelUses::every_site`).
    every_site: Option<Vec<LaunchShape>>,
    /// The shapes of the launches of the units whose search was complete,
    /// facts dropped.
    complete_sites: Vec<LaunchShape>,
    /// The fragments searched (`kernel_uses_beyond`).
    searched: crate::hash::HashSet<usize>,
}

impl Found {
    /// Searches this unit's code beyond what was searched for the uses of
    /// the kernel `decl` here (one `template` or not); gives the tuples new
    /// here.
    fn search(&mut self, host: &mut HostSearch, decl: lower::DeclId, template: bool) -> Vec<Tuple> {
        let mut uses = host.kernel_uses_beyond(decl, &self.searched);
        if !template {
            uses.tuples = vec![Vec::new()];
        }
        self.add(uses, fragments_of(host.unit()))
    }

    /// Adds the `uses` a search of `searched` (fragments) found; gives
    /// the tuples new here.
    fn add(&mut self, uses: lower::instantiate::KernelUses, searched: impl IntoIterator<Item = usize>) -> Vec<Tuple> {
        self.searched.extend(searched);
        self.short |= !uses.complete;
        if uses.complete {
            let shapes = uses.launches.iter().flat_map(|l| &l.blocks).map(|b| LaunchShape {
                facts: Vec::new(),
                ..b.clone()
            });
            extend_new(&mut self.complete_sites, shapes);
        }
        extend_new(&mut self.launches, uses.launches);
        if let Some(shapes) = uses.every_site {
            extend_new(self.every_site.get_or_insert_with(Vec::new), shapes);
        }
        self.new_tuples(uses.tuples)
    }

    /// Adds what `other` found; gives the tuples new here.
    fn join(&mut self, other: Found) -> Vec<Tuple> {
        self.searched.extend(other.searched);
        self.short |= other.short;
        extend_new(&mut self.complete_sites, other.complete_sites);
        extend_new(&mut self.launches, other.launches);
        if let Some(shapes) = other.every_site {
            extend_new(self.every_site.get_or_insert_with(Vec::new), shapes);
        }
        self.new_tuples(other.tuples)
    }

    /// Adds `tuples`; gives those new here.
    fn new_tuples(&mut self, tuples: Vec<Tuple>) -> Vec<Tuple> {
        let fresh: Vec<Tuple> = tuples.into_iter().filter(|t| !self.tuples.contains(t)).collect();
        self.tuples.extend(fresh.iter().cloned());
        fresh
    }
}

type Tuple = lower::instantiate::Tuple;
type HostSearch<'a> = lower::instantiate::HostSearch<'a>;

/// What a kernel is lowered in: the unit, its index, the options and the
/// kernel's declaration there.
type LowerIn<'a, 'u> = (
    &'a preprocess::Unit,
    &'a lower::Index<'u>,
    &'a LowerConfig,
    lower::DeclId,
);

impl Gathered {
    fn new(def: &lower::KernelDef, settle_at: usize) -> Gathered {
        Gathered {
            name: def.name.clone(),
            span: def.span,
            definition: def.definition,
            template_params: def.template_params.clone(),
            found: Found::default(),
            unlowered: Vec::new(),
            kernels: Vec::new(),
            trapping: Vec::new(),
            covered: 0,
            tried: 0,
            full: false,
            unnamed: None,
            settle_at,
            early_cover: None,
        }
    }

    /// Whether instantiations are left to a cover: past the caps, or past
    /// what a search that stopped short found.
    fn needs_cover(&self) -> bool {
        !self.template_params.is_empty() && (self.covered < self.found.tuples.len() || self.found.short)
    }

    /// The cover as found so far, lowered in this unit, where one is needed.
    fn lower_cover(&self, (unit, index, config, decl): LowerIn) -> Option<Kernel> {
        if !self.needs_cover() {
            return None;
        }
        let args = cover_args(self.template_params.len(), &self.found.tuples, self.found.short);
        Some(lower::lower_kernel(unit, index, config, decl, &args))
    }

    /// Lowers the cover now, in the last unit that reads the definition,
    /// where a later unit settles the kernel.
    fn cover_early(&mut self, lower_in: LowerIn) {
        self.early_cover = self.lower_cover(lower_in).map(|kernel| EarlyCover {
            kernel,
            tuples: self.found.tuples.len(),
            short: self.found.short,
        });
    }

    /// This unit's uses of the kernel, `decl` here: past the caps, what a
    /// unit instantiates is left to the cover (checked under the shapes of
    /// every launch site), and only its launch shapes are read. Gives the
    /// tuples new here.
    fn search(&mut self, host: &mut HostSearch, decl: lower::DeclId) -> Vec<Tuple> {
        if !self.saturated() {
            return self.found.search(host, decl, !self.template_params.is_empty());
        }
        let uses = lower::instantiate::KernelUses {
            tuples: Vec::new(),
            launches: Vec::new(),
            every_site: host.every_launch_shape(decl),
            complete: false,
        };
        self.found.add(uses, fragments_of(host.unit()))
    }

    /// No more instantiations are lowered: the cover checks the rest.
    fn saturated(&self) -> bool {
        !self.template_params.is_empty()
            && (self.full || self.tried >= MAX_TRIED || self.trapping.len() >= MAX_TRAPPING)
    }

    /// Lowers `candidates` (new tuples, in the order to try) in this unit,
    /// up to the caps: [`MAX_TRIED`] tried, and where more are found than
    /// that, [`MAX_LOWERED`] kept. Instantiations that only trap say
    /// little: ones that run code are preferred.
    fn lower(&mut self, (unit, index, config, decl): LowerIn, candidates: &[Tuple]) {
        if self.template_params.is_empty() || self.found.tuples.is_empty() {
            if self.kernels.is_empty() && self.trapping.is_empty() && self.unnamed.is_none() {
                let k = lower::lower_kernel(unit, index, config, decl, &[]);
                if self.template_params.is_empty() {
                    self.covered = 1;
                    self.tried = 1;
                    if k.always_traps() {
                        self.trapping.push((k, Vec::new()));
                    } else {
                        self.kernels.push((k, vec![Vec::new()]));
                    }
                } else {
                    self.unnamed = Some(k);
                }
            }
            return;
        }
        // Where every instantiation found can be lowered, all are kept:
        // the cap would leave the condition unknown for the rest.
        let keep = if self.found.tuples.len() <= MAX_TRIED {
            MAX_TRIED
        } else {
            MAX_LOWERED
        };
        for args in candidates {
            if self.saturated() {
                break;
            }
            let k = lower::lower_kernel(unit, index, config, decl, args);
            // Variants compiled out do not take the place of one that runs
            // (ggml's flash_attn_ext_f16 compiles out most combinations of
            // `use_logit_softcap` with DKQ: half of those it names).
            self.tried += usize::from(!k.always_traps());
            let same = self
                .kernels
                .iter()
                .position(|(x, _)| x.body == k.body && x.syms == k.syms && x.objects == k.objects);
            if k.always_traps() {
                self.trapping.push((k, args.clone()));
            } else if let Some(at) = same {
                // The same code: its launch shapes join the kept one's.
                self.kernels[at].1.push(args.clone());
            } else if self.kernels.len() >= keep {
                self.full = true;
                break;
            } else {
                self.kernels.push((k, vec![args.clone()]));
            }
            self.covered += 1;
        }
    }

    /// The entry, with a lowering that covers the instantiations past the
    /// caps lowered in `unit` (none without one: they stay unchecked).
    fn settle(mut self, unit: Option<LowerIn>) -> KernelEntry {
        // Lowered here, or where the definition was last seen, and still
        // what covers them if no unit since found more.
        let (tuples_found, short_found) = (self.found.tuples.len(), self.found.short);
        let cover_kernel = match unit {
            Some(lower_in) => self.lower_cover(lower_in),
            None => self
                .early_cover
                .take()
                .filter(|c| c.tuples == tuples_found && c.short == short_found)
                .map(|c| c.kernel),
        };
        let Gathered {
            name,
            span,
            definition,
            template_params,
            found:
                Found {
                    tuples,
                    launches,
                    short,
                    every_site,
                    complete_sites,
                    ..
                },
            kernels: lowered,
            trapping,
            mut covered,
            unnamed,
            ..
        } = self;
        // Where a search stopped short, an instantiation may launch at a
        // site it did not evaluate for it: with the shapes of every site
        // as their templates' unknown parameters allow. Units whose search
        // was complete gave each of their sites as launches: those the
        // shapes of every site elsewhere do not include join them.
        let short = !template_params.is_empty() && short;
        let every_site = short.then(|| {
            let mut every = every_site.unwrap_or_default();
            for s in complete_sites {
                if !every.iter().any(|e| includes(e, &s)) {
                    every.push(s);
                }
            }
            every
        });
        // Each kept lowering launches with the shapes of every site of the
        // tuples that lowered to its code. One no site found launches
        // (named where the kernel is not launched, `cudaFuncSetAttribute(
        // k<…>)`) launches at a site the search passed over, if it was
        // short (on ggml, mul_mat_q<23, 112, false>: a (32, ?) block, not
        // any), else at none it found (`None`: any shape).
        let shapes_of = |k: &Kernel, of: &[Tuple]| -> Option<Vec<LaunchShape>> {
            let mut all: Vec<LaunchShape> = Vec::new();
            for t in of {
                let shapes = launch_blocks(&launches, t, k).or_else(|| every_site.clone().filter(|e| !e.is_empty()));
                extend_new(&mut all, shapes?);
            }
            Some(all)
        };
        let mut kernels: Vec<Kernel> = Vec::new();
        let mut blocks: Vec<Option<Vec<LaunchShape>>> = Vec::new();
        for (k, of) in lowered {
            blocks.push(shapes_of(&k, &of));
            kernels.push(k);
        }
        // Instantiations past the cap: one lowering with every template
        // argument symbolic covers them all (both arms of an `if
        // constexpr` on them, sizes of unknown types as symbols), under
        // the launch sites' shapes (their facts hold for their own
        // arguments only, so they are dropped). The search for
        // instantiations stops short too (at its cap, here or at a host
        // template on the way): then more may exist.
        let mut more = short;
        let mut cover = None;
        if let Some(k) = cover_kernel {
            // Past the search's cap, instantiations launch with the
            // shapes of every site; else with those of the sites found,
            // and one no site launches may run with any shape.
            let shapes: Option<Vec<LaunchShape>> = if more {
                every_site.clone()
            } else {
                launches
                    .iter()
                    .try_fold(Vec::new(), |mut all, site| {
                        let shapes = site.blocks.iter().map(|b| LaunchShape {
                            facts: Vec::new(),
                            ..b.clone()
                        });
                        extend_new(&mut all, shapes);
                        (!site.blocks.is_empty()).then_some(all)
                    })
                    .filter(|_| tuples.iter().all(|t| launches.iter().any(|l| l.tuple == *t)))
            };
            // Only a lowering as complete as the ones checked covers
            // them: each construct it could not model is one they could
            // not either (and is reported with them); one that is less
            // complete says less than the cap's unknown.
            let missing: Vec<&Unknown> = k
                .unknowns
                .iter()
                .filter(|u| {
                    !kernels
                        .iter()
                        .any(|x| x.unknowns.iter().any(|v| v.reason == u.reason && v.span == u.span))
                })
                .collect();
            if std::env::var("WARPDRF_DEBUG_COVER").is_ok() {
                for u in &missing {
                    eprintln!("cover of {name}: {} at {:?}", u.reason, u.span);
                }
            }
            if missing.is_empty() {
                if !k.always_traps() {
                    cover = Some(kernels.len());
                    kernels.push(k);
                    blocks.push(shapes.filter(|s| !s.is_empty()));
                }
                covered = tuples.len();
                more = false;
            }
        }
        if kernels.is_empty() {
            if let Some(k) = unnamed.filter(|_| tuples.is_empty()) {
                covered = 1;
                kernels.push(k);
                blocks.push(None);
            }
        }
        if kernels.is_empty() {
            for (k, t) in trapping.into_iter().take(1) {
                blocks.push(launch_blocks(&launches, &t, &k));
                kernels.push(k);
            }
        }
        let mut unknowns: Vec<Unknown> = kernels.iter().flat_map(|k| k.unknowns.iter().cloned()).collect();
        unknowns.sort();
        unknowns.dedup();
        KernelEntry {
            name,
            span,
            definition,
            template_params,
            instantiations: tuples.len(),
            covered,
            more_instantiations: more,
            kernels,
            launch_blocks: blocks,
            unknowns,
            cover,
        }
    }
}

/// The identities of a unit's fragments (`instantiate::fragment_key`).
fn fragments_of(unit: &preprocess::Unit) -> impl Iterator<Item = usize> + '_ {
    unit.fragments.iter().map(|f| lower::instantiate::fragment_key(f))
}

/// The kernels no unit after the `at`th can add to, taken out, by site.
fn due(gathering: &mut HashMap<(FileId, u32), Gathered>, at: usize) -> Vec<((FileId, u32), Gathered)> {
    let mut sites: Vec<(FileId, u32)> = gathering
        .iter()
        .filter(|(_, g)| g.settle_at <= at)
        .map(|(site, _)| *site)
        .collect();
    sites.sort();
    sites
        .into_iter()
        .filter_map(|site| Some((site, gathering.remove(&site)?)))
        .collect()
}

/// Whether launches of shape `wide` include every launch of shape `narrow`
/// (facts aside): each extent the same, or unknown in `wide` with a
/// multiple that `narrow`'s extent keeps.
fn includes(wide: &LaunchShape, narrow: &LaunchShape) -> bool {
    (0..3).all(|d| match (wide.block[d], narrow.block[d]) {
        (Some(w), Some(n)) => w == n,
        (None, Some(n)) => n.is_multiple_of(wide.multiple[d].max(1)),
        (None, None) => narrow.multiple[d].is_multiple_of(wide.multiple[d].max(1)),
        (Some(_), None) => false,
    })
}

/// A unit to read: its root and every file it reads.
type PlannedUnit = (FileId, Vec<FileId>);

/// The units in the order they are read, each with the files it reads:
/// the translation units, then each header with kernels that no unit
/// before it read (a unit of its own). And the files read that may hold a
/// kernel (`__global__` in their text), and the names each unit's code
/// holds.
fn plan_units(
    db: &mut SourceDb,
    session: &mut Session,
    units: Vec<FileId>,
    headers: Vec<FileId>,
) -> (Vec<PlannedUnit>, crate::hash::HashSet<FileId>, Naming) {
    let _s = crate::profile::stage("preprocess");
    let mut plan = Vec::new();
    let mut naming = Naming::default();
    let mut fragments: Vec<Vec<usize>> = Vec::new();
    let mut included: crate::hash::HashSet<FileId> = Default::default();
    let roots = units
        .into_iter()
        .map(|u| (u, true))
        .chain(headers.into_iter().map(|h| (h, false)));
    for (root, compiled) in roots {
        if !compiled && (included.contains(&root) || !db.file(root).text.contains("__global__")) {
            continue;
        }
        let unit = session.preprocess(db, root);
        included.extend(unit.files.iter().copied());
        fragments.push(naming.read(&unit));
        plan.push((root, unit.files));
    }
    // The readers of a header with kernels, together after the first: its
    // kernels are settled (and checked) as early as they can be, not when
    // the last file in name order that includes them is read.
    let mut first_reader: HashMap<FileId, usize> = HashMap::default();
    for (at, (_, files)) in plan.iter().enumerate() {
        for &f in files {
            first_reader.entry(f).or_insert(at);
        }
    }
    let with_kernels: crate::hash::HashSet<FileId> = first_reader
        .keys()
        .copied()
        .filter(|&f| db.file(f).text.contains("__global__"))
        .collect();
    let key = |at: usize, (root, files): &(FileId, Vec<FileId>)| {
        files
            .iter()
            .filter(|&f| f != root && with_kernels.contains(f))
            .map(|f| first_reader[f])
            .fold(at, usize::min)
    };
    let keys: Vec<usize> = plan.iter().enumerate().map(|(at, u)| key(at, u)).collect();
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by_key(|&at| keys[at]);
    naming.units = order.iter().map(|&at| std::mem::take(&mut fragments[at])).collect();
    let mut slots: Vec<Option<PlannedUnit>> = plan.into_iter().map(Some).collect();
    let plan = order.into_iter().filter_map(|at| slots[at].take()).collect();
    (plan, with_kernels, naming)
}

/// The names in each unit's code, as the preprocessor expanded it: a unit
/// may declare or launch a kernel only where its code holds the kernel's
/// name, which a macro may paste together (`k_##name`) so that no file's
/// text holds it. Names are kept as hashes: two names with one hash only
/// make a kernel wait for a unit that does not name it.
#[derive(Default)]
struct Naming {
    /// Each fragment's names (by [`lower::instantiate::fragment_key`]).
    fragments: HashMap<usize, crate::hash::HashSet<u64>>,
    /// Each unit's fragments, in the order the units are read.
    units: Vec<Vec<usize>>,
}

impl Naming {
    fn hash(name: &str) -> u64 {
        use std::hash::BuildHasher;
        foldhash::fast::FixedState::default().hash_one(name)
    }

    /// Reads the names of `unit`'s fragments not read before; gives its
    /// fragments.
    fn read(&mut self, unit: &preprocess::Unit) -> Vec<usize> {
        let mut keys = Vec::new();
        for fragment in &unit.fragments {
            let key = lower::instantiate::fragment_key(fragment);
            self.fragments.entry(key).or_insert_with(|| {
                fragment
                    .text
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(Self::hash)
                    .collect()
            });
            keys.push(key);
        }
        keys
    }

    /// The last unit (in reading order) whose code holds `name`.
    fn last_naming(&self, name: &str) -> Option<usize> {
        let h = Self::hash(name);
        self.units
            .iter()
            .rposition(|unit| unit.iter().any(|f| self.fragments[f].contains(&h)))
    }
}

/// The template arguments of the lowering that covers a kernel's
/// instantiations: each symbolic, except a function pointer parameter that
/// every instantiation names a function for, when the search found them
/// all (`more` false): the functions named there, one per launch.
fn cover_args(params: usize, tuples: &[Vec<Option<lower::TArg>>], more: bool) -> Vec<Option<lower::TArg>> {
    use lower::TArg;
    (0..params)
        .map(|i| {
            if more || tuples.is_empty() {
                return None;
            }
            let mut funcs = Vec::new();
            for t in tuples {
                let Some(Some(TArg::Func(f))) = t.get(i) else {
                    return None;
                };
                if !funcs.contains(f) {
                    funcs.push(f.clone());
                }
            }
            Some(match funcs.len() {
                1 => TArg::Func(funcs.remove(0)),
                _ => TArg::Choice(std::rc::Rc::new(funcs)),
            })
        })
        .collect()
}

/// The distinct block shapes of the launches with template arguments `args`
/// (each extent known or not), their facts in terms of `k`'s parameters;
/// `None` when there is no launch of them.
fn launch_blocks(
    launches: &[lower::instantiate::LaunchSite],
    args: &[Option<lower::TArg>],
    k: &Kernel,
) -> Option<Vec<LaunchShape>> {
    let mut out = Vec::new();
    for site in launches.iter().filter(|l| l.tuple == args) {
        for b in &site.blocks {
            let mut b = b.clone();
            b.facts = b.facts.iter().filter_map(|f| kernel_fact(f, &site.params, k)).collect();
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }
    Some(out).filter(|o| !o.is_empty())
}

/// A launch fact with its arguments (`Param(position)`) renamed to `k`'s
/// scalar parameters; `None` if one is not a scalar parameter of `k`, or
/// if the fact need not hold of the parameters. A parameter is the value
/// the host passed, converted to its type: where no conversion narrows,
/// the fact is the host's own ([`verbatim`]; `evaluated`, as the host
/// fact was). An equation of an argument with a host value (`n == 64*h`,
/// an assert or what the launch passes) also holds of a narrowed
/// parameter, in its own type, where the other side, computed from
/// parameters, is congruent to what the host computed (see
/// [`congruent`]); so does any fact whose values are the host's
/// ([`exact`]). Those are kept, not `evaluated` (their operations are not
/// the host's). Any other fact over a narrowed parameter is dropped:
/// `n < 100` of a host `int64_t n` says nothing of the `int` it became.
fn kernel_fact(f: &crate::ir::LaunchFact, names: &[String], k: &Kernel) -> Option<crate::ir::LaunchFact> {
    use crate::ir::{BinOp, Expr, LaunchFact};
    let width = |i: u32| k.params.get(i as usize)?.ty.int_bits();
    if let Expr::Binary(BinOp::Eq, host, lhs, rhs) = &f.expr {
        // The argument itself (in the equation's type, the host's), or
        // read as its host type.
        let (host, argument) = match lhs.as_ref() {
            Expr::Cast(ty, a) => (*ty, a.as_ref()),
            a => (*host, a),
        };
        if let Expr::Param(_) = argument {
            let Expr::Param(p) = in_params(argument, names, k)? else {
                return None;
            };
            let ty = k.params[p as usize].ty;
            let rhs = in_params(rhs, names, k)?;
            let lhs = Expr::Cast(host, Box::new(Expr::Param(p)));
            let evaluated = f.evaluated && verbatim(&lhs, &width) && verbatim(&rhs, &width);
            if !evaluated && !congruent(&rhs, ty.int_bits()?, &width) {
                return None;
            }
            return Some(LaunchFact {
                expr: Expr::Binary(
                    BinOp::Eq,
                    ty,
                    Box::new(Expr::Param(p)),
                    Box::new(Expr::Cast(ty, Box::new(rhs))),
                ),
                evaluated,
            });
        }
    }
    let expr = in_params(&f.expr, names, k)?;
    exact(&expr, &width).then(|| LaunchFact {
        evaluated: f.evaluated && verbatim(&expr, &width),
        expr,
    })
}

/// `e` with its arguments (`Param(position)`) renamed to `k`'s scalar
/// parameters; `None` if one is not a scalar parameter of `k`.
fn in_params(e: &crate::ir::Expr, names: &[String], k: &Kernel) -> Option<crate::ir::Expr> {
    use crate::ir::Expr;
    let go = |x: &Expr| in_params(x, names, k).map(Box::new);
    Some(match e {
        Expr::Param(pos) => {
            let name = names.get(*pos as usize).filter(|n| !n.is_empty())?;
            let i = k.params.iter().position(|p| p.name == *name && p.ty.is_int())?;
            Expr::Param(i as u32)
        }
        Expr::Unary(op, ty, a) => Expr::Unary(*op, *ty, go(a)?),
        Expr::Binary(op, ty, a, b) => Expr::Binary(*op, *ty, go(a)?, go(b)?),
        Expr::Select(c, a, b) => Expr::Select(go(c)?, go(a)?, go(b)?),
        Expr::Cast(ty, a) => Expr::Cast(*ty, go(a)?),
        other => other.clone(),
    })
}

/// Whether `e`, computed from `k`'s parameters, is congruent modulo
/// `2^bits` to the same expression computed from the host values they
/// received. A parameter is its value converted: congruent to it modulo
/// 2^(its width), and converted to a type no wider (the host's own type,
/// as launch facts read an argument) the host's value itself, as is any
/// operation on such values alone. Ring and bitwise operations keep
/// congruences modulo any power of two up to their width (a result
/// extended to a wider type needs every bit of it); quotients, right
/// shifts and comparisons keep none. (`int` parameters `c`, `h` and the
/// host's `int64_t` assert `c == 64*h`: `c == (int)(64*h)` holds of the
/// parameters whatever the host's values; with `c / 4` it would not.)
fn congruent(e: &crate::ir::Expr, bits: u8, param_width: &dyn Fn(u32) -> Option<u8>) -> bool {
    use crate::ir::{BinOp, Expr, ScalarTy, UnOp};
    let within = |ty: &ScalarTy| ty.int_bits().map(|w| w.min(bits));
    if exact(e, param_width) {
        return true;
    }
    match e {
        Expr::Param(p) => param_width(*p).is_some_and(|w| w >= bits),
        Expr::Unary(UnOp::Neg | UnOp::BitNot, ty, a) => within(ty).is_some_and(|r| congruent(a, r, param_width)),
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor, ty, a, b) => {
            within(ty).is_some_and(|r| congruent(a, r, param_width) && congruent(b, r, param_width))
        }
        Expr::Binary(BinOp::Shl, ty, a, b) if b.as_int().is_some() => {
            within(ty).is_some_and(|r| congruent(a, r, param_width))
        }
        Expr::Cast(ty, a) => within(ty).is_some_and(|r| congruent(a, r, param_width)),
        _ => false,
    }
}

/// Whether `e`, computed from parameters, is the host's computation
/// verbatim: it reads each parameter as a host type no wider than the
/// parameter (which gives back the host's value; see [`congruent`]), so
/// its every operation is the one the host performed. The launch's
/// dimensions are its own.
fn verbatim(e: &crate::ir::Expr, param_width: &dyn Fn(u32) -> Option<u8>) -> bool {
    use crate::ir::Expr;
    match e {
        Expr::Int(..) | Expr::Bool(_) | Expr::Builtin(_) => true,
        Expr::Cast(ty, a) => match a.as_ref() {
            Expr::Param(p) => ty.int_bits().zip(param_width(*p)).is_some_and(|(bits, w)| bits <= w),
            a => verbatim(a, param_width),
        },
        Expr::Unary(_, _, a) => verbatim(a, param_width),
        Expr::Binary(_, _, a, b) => verbatim(a, param_width) && verbatim(b, param_width),
        Expr::Select(c, a, b) => verbatim(c, param_width) && verbatim(a, param_width) && verbatim(b, param_width),
        _ => false,
    }
}

/// Whether `e`, computed from parameters, has the value of the host's
/// computation: each conversion in it keeps no more bits than its operand
/// has of the host's ([`congruent`]; a parameter read as a host type no
/// wider than itself, as in [`verbatim`], is one): `dim3 grid(n)` of a
/// host `int64_t n` passed as an `int` is `(unsigned) n`, whose 32 bits
/// the parameter keeps.
fn exact(e: &crate::ir::Expr, param_width: &dyn Fn(u32) -> Option<u8>) -> bool {
    use crate::ir::Expr;
    match e {
        Expr::Int(..) | Expr::Bool(_) | Expr::Builtin(_) => true,
        Expr::Cast(ty, a) => exact(a, param_width) || ty.int_bits().is_some_and(|bits| congruent(a, bits, param_width)),
        Expr::Unary(_, _, a) => exact(a, param_width),
        Expr::Binary(_, _, a, b) => exact(a, param_width) && exact(b, param_width),
        Expr::Select(c, a, b) => exact(c, param_width) && exact(a, param_width) && exact(b, param_width),
        _ => false,
    }
}

/// What [`lower_and_check`] gives: the entries (sorted as [`lower_all`]
/// sorts them), each one's result at the same index, and the front end's
/// diagnostics.
pub struct Checked {
    pub entries: Vec<KernelEntry>,
    pub results: Vec<KernelResult>,
    pub diagnostics: Vec<preprocess::Diag>,
}

/// [`lower_all`] and [`check_with_progress`] overlapped: an entry no later
/// unit can replace is checked while the front end lowers the rest (on
/// `options.jobs` threads besides this one), the others once it is done.
/// `queued` gets the number of kernels known so far, `done` each result as
/// it is decided. Each kernel's check is what [`check`] does (its own Z3
/// context), so the results do not depend on the overlap.
pub fn lower_and_check(
    db: &mut SourceDb,
    inputs: &Inputs,
    options: &Options,
    queued: &(dyn Fn(usize) + Sync),
    done: &(dyn Fn(&KernelResult) + Sync),
) -> Result<Checked, LoadError> {
    let (units, headers) = load(db, inputs)?;
    let pool: Pool<(FileId, u32), std::sync::Arc<KernelEntry>> = Pool::default();
    let (entries, diagnostics) = std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            spawn_big(scope, || pool.work(options, done));
        }
        // Closed however this closure ends: a panic in the front end would
        // otherwise leave the checking threads waiting, and the scope with
        // them.
        struct Closing<'p, K, E>(&'p Pool<K, E>);
        impl<K, E> Drop for Closing<'_, K, E> {
            fn drop(&mut self) {
                self.0.close();
            }
        }
        let _closing = Closing(&pool);
        let mut sent: crate::hash::HashSet<(FileId, u32)> = Default::default();
        let mut send = |e: &KernelEntry| {
            let site = (e.span.file, e.span.start);
            if sent.insert(site) {
                queued(pool.push(site, std::sync::Arc::new(e.clone())));
            }
        };
        let (entries, diagnostics) = lower_files_streaming(db, units, headers, options, &mut send);
        for e in &entries {
            send(e);
        }
        (entries, diagnostics)
    });
    let mut results = pool.results.into_inner().unwrap_or_else(|p| p.into_inner());
    let results = entries
        .iter()
        .map(|e| {
            results
                .remove(&(e.span.file, e.span.start))
                .expect("every kernel was checked")
        })
        .collect();
    Ok(Checked {
        entries,
        results,
        diagnostics,
    })
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

/// Verdicts for every kernel: both conditions are decided per lowered
/// instantiation and launch shape (an alarm in any is the kernel's alarm).
///
/// Each kernel is checked on a thread of its own, so it gets a fresh Z3
/// context (Z3's search, and so a witness, depends on what its context saw
/// before); `options.jobs` kernels at a time. Results come back in the
/// entries' order: the output does not depend on the number of jobs.
pub fn check(db: &SourceDb, entries: &[KernelEntry], options: &Options) -> Vec<KernelResult> {
    check_with_progress(db, entries, options, &|_| {})
}

/// [`check`], calling `done` with each kernel's result as it is decided
/// (in completion order, from the checking threads): a progress display.
pub fn check_with_progress(
    db: &SourceDb,
    entries: &[KernelEntry],
    options: &Options,
    done: &(dyn Fn(&KernelResult) + Sync),
) -> Vec<KernelResult> {
    let _ = db;
    let pool = Pool::default();
    let jobs = options.jobs.clamp(1, entries.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            spawn_big(scope, || pool.work(options, done));
        }
        for (i, e) in entries.iter().enumerate() {
            pool.push(i, e);
        }
        pool.close();
    });
    let mut results = pool.results.into_inner().unwrap_or_else(|p| p.into_inner());
    (0..entries.len())
        .map(|i| results.remove(&i).expect("every kernel was checked"))
        .collect()
}

/// Kernels waiting for a checking thread (by key `K`), and the results of
/// those checked. Each kernel is checked on a thread of its own, so it gets
/// a fresh Z3 context (Z3's search, and so a witness, depends on what its
/// context saw before): the results do not depend on the order or the
/// number of threads.
struct Pool<K, E> {
    queue: std::sync::Mutex<Waiting<K, E>>,
    wake: std::sync::Condvar,
    results: std::sync::Mutex<HashMap<K, KernelResult>>,
}

/// The entries not yet taken; `closed` once every entry has been pushed.
struct Waiting<K, E> {
    entries: std::collections::VecDeque<(K, E)>,
    closed: bool,
    pushed: usize,
}

impl<K, E> Pool<K, E> {
    /// No more entries: the threads stop once the queue is empty.
    fn close(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.wake.notify_all();
    }
}

impl<K, E> Default for Pool<K, E> {
    fn default() -> Self {
        Pool {
            queue: std::sync::Mutex::new(Waiting {
                entries: Default::default(),
                closed: false,
                pushed: 0,
            }),
            wake: Default::default(),
            results: Default::default(),
        }
    }
}

impl<K: std::hash::Hash + Eq, E: std::ops::Deref<Target = KernelEntry> + Sync> Pool<K, E> {
    /// Queues `entry`; says how many have been queued in all.
    fn push(&self, key: K, entry: E) -> usize {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.entries.push_back((key, entry));
        q.pushed += 1;
        self.wake.notify_one();
        q.pushed
    }

    /// A checking thread: takes entries until the pool is closed and empty.
    fn work(&self, options: &Options, done: &(dyn Fn(&KernelResult) + Sync)) {
        loop {
            let next = {
                let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if let Some(item) = q.entries.pop_front() {
                        break Some(item);
                    }
                    if q.closed {
                        break None;
                    }
                    q = self.wake.wait(q).unwrap_or_else(|p| p.into_inner());
                }
            };
            let Some((key, entry)) = next else { return };
            let entry: &KernelEntry = &entry;
            let r = std::thread::scope(|inner| spawn_big(inner, || check_entry(entry, options)).join());
            match r {
                Ok(r) => {
                    done(&r);
                    self.results.lock().unwrap_or_else(|p| p.into_inner()).insert(key, r);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    }
}

/// A scoped thread with the analysis thread's stack (the passes recurse
/// over statements).
fn spawn_big<'scope, 'env, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn_scoped(scope, f)
        .expect("spawning a checking thread")
}

/// The access model of one instantiation under the options' launch (what
/// `explain --stage accesses` prints).
pub fn access_model(k: &Kernel, options: &Options) -> crate::ir::access::AccessModel {
    let lanes = memory_options(k, options).shape.lanes_along_x(options.lower.warp_size);
    crate::passes::model(k, options.lower.warp_size, &[], lanes)
}

/// The memory obligations of one instantiation: counts, solver time, verdict.
pub fn explain_smt(db: &SourceDb, k: &Kernel, options: &Options) -> String {
    let started = std::time::Instant::now();
    let model = access_model(k, options);
    let built = started.elapsed();
    let mopts = memory_options(k, options);
    let result = crate::obligation::check_memory(k, &model, &mopts);
    let s = &result.stats;
    let mut out = format!(
        "kernel {}: {} records; {} pairs, {} pruned, {} solved ({} sat, {} unknown); model {} ms, solver {} ms, slowest {} ms; memory {:?}\n",
        k.name,
        s.records,
        s.pairs,
        s.pruned,
        s.solved,
        s.sat,
        s.unknown,
        built.as_millis(),
        s.solver_ms,
        s.slowest_ms,
        result.verdict
    );
    for a in &result.alarms {
        let (l1, _) = db.line_col(a.span);
        let l2: Vec<String> = a.related.iter().map(|s| db.line_col(*s).0.to_string()).collect();
        out.push_str(&format!(
            "  alarm {} at {l1} and {}: {}\n",
            a.kind,
            l2.join(","),
            a.message
        ));
    }
    for u in &result.unknowns {
        let (l, _) = db.line_col(u.span);
        out.push_str(&format!("  unknown at {l}: {}\n", u.reason));
    }
    let part = crate::obligation::participation::check_participation(k, &model, &memory_options(k, options));
    let p = &part.stats;
    out.push_str(&format!(
        "  participation: {} collectives, {} obligations after the lattice, {} solved ({} sat, {} unknown); solver {} ms, slowest {} ms; participation {:?}\n",
        p.records, p.pairs, p.solved, p.sat, p.unknown, p.solver_ms, p.slowest_ms, part.verdict
    ));
    for a in &part.alarms {
        let (l, _) = db.line_col(a.span);
        out.push_str(&format!("  alarm {} at {l}: {}\n", a.kind, a.message));
    }
    out
}

fn memory_options(k: &Kernel, options: &Options) -> MemoryOptions {
    let (used_block, used_grid) = k.used_dims();
    let shape = Shape {
        block_dim: options.block_dim,
        block_known: options.block_dim.map_or([None; 3], |b| b.map(Some)),
        block_multiple: [1; 3],
        grid_dim: options.grid_dim,
        max_threads: k
            .launch_bounds
            .as_ref()
            .and_then(|b| b.as_int())
            .map(|v| v.max(1) as u64),
        unit_block: used_block.map(|u| !u),
        unit_grid: used_grid.map(|u| !u),
    };
    let defaults = MemoryOptions::default();
    let work = if options.timeout_ms == 0 {
        defaults.work
    } else {
        crate::obligation::smt::work_for_ms(options.timeout_ms)
    };
    // A longer obligation limit widens the kernel's budget with it.
    let budget = match options.kernel_timeout_ms {
        Some(ms) => crate::obligation::smt::work_for_ms(ms),
        None => defaults.budget.max(work.saturating_mul(3)),
    };
    MemoryOptions {
        shape,
        work: work.min(budget),
        budget,
        settle: options.settle,
        ..defaults
    }
}

/// Appends the items of `items` that `into` does not hold yet.
fn extend_new<T: PartialEq>(into: &mut Vec<T>, items: impl IntoIterator<Item = T>) {
    for item in items {
        if !into.contains(&item) {
            into.push(item);
        }
    }
}

/// A condition's verdict over several obligations: any alarm, else any unknown.
fn join(a: Verdict, b: Verdict) -> Verdict {
    match (a, b) {
        (Verdict::Alarm, _) | (_, Verdict::Alarm) => Verdict::Alarm,
        (Verdict::Unknown, _) | (_, Verdict::Unknown) => Verdict::Unknown,
        _ => Verdict::Pass,
    }
}

fn check_entry(e: &KernelEntry, options: &Options) -> KernelResult {
    let _s = crate::profile::stage("kernel");
    crate::profile::set_kernel(&e.name);
    let started = std::time::Instant::now();
    crate::obligation::smt::take_clock_stopped();
    let mut unknowns: Vec<UnknownItem> = e
        .unknowns()
        .iter()
        .map(|u| UnknownItem {
            reason: u.reason.clone(),
            span: u.span,
        })
        .collect();
    let mut alarms = Vec::new();
    let mut assumptions: Vec<String> = Vec::new();
    let mut memory = Verdict::Pass;
    let mut participation = Verdict::Pass;
    let mut site_blocks: Vec<BlockShape> = Vec::new();
    // Every checked instantiation took its shapes from launch sites.
    let mut from_sites = true;
    // Every instantiation under every launch shape: participation first for
    // all (it is usually quick, and gets at most half of the budget), then
    // memory with what is left.
    let mut jobs = Vec::new();
    // One access model per instantiation and set of launch facts (shapes
    // that differ only in their extents share it).
    // (The search for alarms under any launch shares them: see `for_any_launch`.)
    let mut models: Vec<Models> = vec![Vec::new(); e.kernels.len()];
    for (i, k) in e.kernels.iter().enumerate() {
        // Shapes: the flag's, else those of the launch sites, else symbolic.
        let shapes: Vec<LaunchShape> = match (options.block_dim, e.launch_blocks.get(i).cloned().flatten()) {
            (Some(b), _) => vec![LaunchShape {
                block: b.map(Some),
                multiple: b,
                facts: Vec::new(),
            }],
            (None, Some(list)) => list,
            (None, None) => {
                from_sites = false;
                vec![LaunchShape::symbolic()]
            }
        };
        let (used_block, used_grid) = k.used_dims();
        for (used, given, what, index, extent) in [
            (
                used_block,
                options.block_dim.is_some(),
                "block",
                "threadIdx",
                "blockDim",
            ),
            (used_grid, options.grid_dim.is_some(), "grid", "blockIdx", "gridDim"),
        ] {
            // A block extent every launch gives is the shape's, not assumed.
            let known = |d: Dim| what == "block" && shapes.iter().all(|s| s.block[d as usize].is_some());
            let unused: Vec<&str> = Dim::ALL
                .iter()
                .filter(|d| !used[**d as usize] && !known(**d))
                .map(|d| d.name())
                .collect();
            if !given && !unused.is_empty() {
                let a = format!(
                    "the {what} is 1 along {}: the kernel never reads {index} or {extent} there",
                    unused.join(", ")
                );
                if !assumptions.contains(&a) {
                    assumptions.push(a);
                }
            }
        }
        for LaunchShape {
            block: shape,
            multiple,
            facts,
        } in shapes
        {
            if !site_blocks.contains(&shape) {
                site_blocks.push(shape);
            }
            let mut mopts = memory_options(k, options);
            let exact = shape.iter().all(Option::is_some);
            mopts.shape.block_dim = exact.then(|| shape.map(|d| d.unwrap_or(1)));
            mopts.shape.block_known = shape;
            mopts.shape.block_multiple = multiple;
            jobs.push(Job {
                instantiation: i,
                facts,
                mopts,
                model: None,
            });
        }
    }
    // Smaller instantiations first (fewer accesses; a symbolic cover, the
    // most general, last): their queries are smaller and their witnesses
    // cheaper, and with `settle` the first alarm ends the check. On ggml,
    // flash_attn_tile's alarm is in an instantiation of 20 accesses that
    // came after one of 34 whose first round spent 4 s (8.0 s -> 3.6 s;
    // the audit 3% less CPU, though group_norm_f32's came the other way:
    // 2.1 s -> 4.5 s).
    let accesses = |k: &Kernel| {
        let mut n = 0usize;
        k.body
            .walk(&mut |s| n += usize::from(matches!(s.kind, crate::ir::StmtKind::Access(_))));
        n
    };
    let cover = |k: &Kernel| k.template_args.iter().any(crate::ir::TemplateArg::is_symbolic);
    let sizes: Vec<(bool, usize)> = e.kernels.iter().map(|k| (cover(k), accesses(k))).collect();
    jobs.sort_by_key(|j| sizes[j.instantiation]);
    // A job's access model, built when first checked: with `settle`, an
    // alarm often ends the check before the later instantiations are
    // reached. The launch's facts hold for every thread: part of the
    // model, unless they contradict each other (every obligation would
    // then hold vacuously).
    let model_of =
        |at: usize, jobs: &mut Vec<Job>, models: &mut Vec<Models>, assumptions: &mut Vec<String>| -> Modelled {
            let job = &mut jobs[at];
            if let Some(m) = &job.model {
                return m.clone();
            }
            let k = &e.kernels[job.instantiation];
            let cache = &mut models[job.instantiation];
            let mut model = model_for(cache, k, &job.facts, &job.mopts.shape, options);
            if !job.facts.is_empty()
                && !crate::obligation::smt::Encoder::new(k, &model.model, job.mopts.shape.clone(), job.mopts.work)
                    .launch_consistent()
            {
                model = model_for(cache, k, &[], &job.mopts.shape, options);
                let a = "the facts found at the kernel's launch sites contradict each other; they were not used"
                    .to_string();
                if !assumptions.contains(&a) {
                    assumptions.push(a);
                }
            }
            if debugging_jobs() {
                eprintln!("{}", describe_job(at, e, k, &model.model, &job.mopts));
            }
            job.model = Some(model.clone());
            model
        };
    // The jobs checked, by `check_key`, per condition: a job whose
    // instantiation has the same model and options as one checked has its
    // verdict, alarms and unknowns already (identical inputs).
    let mut checked: [crate::hash::HashSet<CheckKey>; 2] = Default::default();
    // One solver budget per kernel, counted in work (not time) so that the
    // verdicts do not depend on the machine's load.
    let budget = memory_options(e.kernel(), options).budget;
    // The clock's net over the kernel: `WALL_SAFETY` times the budget's
    // nominal duration, in this thread's CPU time (load does not move it).
    // Only kernels whose queries do unusually little work per second reach
    // it; what they leave undecided can then vary between machines.
    let nominal_ms = budget / crate::obligation::smt::WORK_PER_MS;
    // A second more, for the encoding around the solver's work (tiny
    // budgets would otherwise be stopped by the clock, not the work).
    let net_ms = nominal_ms
        .saturating_mul(crate::obligation::smt::WALL_SAFETY)
        .saturating_add(1_000);
    let deadline = crate::obligation::smt::thread_cpu() + std::time::Duration::from_millis(net_ms);
    let solving = crate::obligation::smt::work_done();
    let spent = || crate::obligation::smt::work_done() - solving;
    // Whether a condition with `limit` of the budget can decide no more.
    let exhausted = |limit| spent() >= limit || crate::obligation::smt::thread_cpu() >= deadline;
    // The cover's jobs first, as a probe with a sixteenth of the budget:
    // an instantiation it covers is free of divergence where it is (its
    // lowering over-approximates theirs, as for the instantiations past
    // the search's cap), so its pass settles the condition. Any other
    // outcome is set aside, and the jobs run as before, the cover last
    // (its alarm, unknown or a cut-short check say less than the
    // instantiations': flash_attn_ext_f16's cover spends the budget its
    // DKQ=512 instantiation's alarm needs). On ggml: flash_attn_ext_vec's
    // 24 instantiations after a cover that passes, 2 s of its 5.
    // Only a cover no larger than the largest instantiation (in accesses)
    // is worth its model: flash_attn_ext_f16's, with every configuration's
    // copies landing at every barrier, is a hundred times larger, and
    // building it first took more time and memory than its probe saves.
    let largest = sizes.iter().filter(|(cover, _)| !cover).map(|&(_, n)| n).max();
    let small_cover = e.cover.is_some_and(|c| largest.is_some_and(|n| sizes[c].1 <= n));
    let probe: Vec<usize> = (0..jobs.len())
        .filter(|&at| small_cover && e.cover == Some(jobs[at].instantiation))
        .collect();
    // One job's participation check, with what is left of `limit` of the budget.
    let participate = |job: &Job, model: &crate::ir::access::AccessModel, limit: crate::obligation::smt::Work| {
        let mut mopts = job.mopts.clone();
        mopts.budget = limit.saturating_sub(spent());
        mopts.deadline = Some(deadline);
        let _s = crate::profile::stage("participation");
        if debugging_jobs() {
            eprintln!("participation of a job, {} units left", mopts.budget);
        }
        let part = crate::obligation::participation::check_participation(&e.kernels[job.instantiation], model, &mopts);
        if debugging_jobs() {
            eprintln!("  -> {:?}, {} goals", part.verdict, part.stats.pairs);
        }
        part
    };
    let mut probed = !probe.is_empty();
    for &at in &probe {
        if exhausted(budget / 16) {
            probed = false;
            break;
        }
        let built = model_of(at, &mut jobs, &mut models, &mut assumptions);
        let part = participate(&jobs[at], &built.model, budget / 16);
        if part.verdict != Verdict::Pass {
            probed = false;
            break;
        }
        extend_new(&mut unknowns, part.unknowns);
    }
    for at in 0..jobs.len() {
        if probed {
            break;
        }
        if options.settle && participation == Verdict::Alarm {
            break;
        }
        // As for memory below: with its half spent, nothing but unknowns.
        if participation == Verdict::Unknown && exhausted(budget / 2) {
            break;
        }
        let built = model_of(at, &mut jobs, &mut models, &mut assumptions);
        if !checked[1].insert(check_key(&built, &jobs[at].mopts)) {
            continue;
        }
        let part = participate(&jobs[at], &built.model, budget / 2);
        participation = join(participation, part.verdict);
        // One alarm per statement and kind across instantiations and shapes.
        for a in part.alarms {
            if !alarms
                .iter()
                .any(|b: &crate::verdict::Alarm| b.kind == a.kind && b.span == a.span && b.related == a.related)
            {
                alarms.push(a);
            }
        }
        extend_new(&mut unknowns, part.unknowns);
    }
    // What the front end could not model about memory order alone leaves
    // the memory condition unknown whether or not the budget reaches that
    // instantiation's check (which reports it too).
    for job in &jobs {
        let k = &e.kernels[job.instantiation];
        if !k.memory_unknowns.is_empty() {
            memory = join(memory, Verdict::Unknown);
            extend_new(
                &mut unknowns,
                k.memory_unknowns.iter().map(|u| UnknownItem {
                    reason: u.reason.clone(),
                    span: u.span,
                }),
            );
        }
    }
    // A memory condition that cannot pass (`obligation::memory_cannot_pass`:
    // above, or what an instantiation's lowering or access model could not
    // follow) can only gain an alarm. Where the first alarm settles it
    // (`audit`), the search for one gets a quarter of the budget, not what
    // proofs that cannot change the verdict would spend: on ggml,
    // flash_attn_ext_f16 (copies in flight at a return) spent the whole
    // budget, 9 s of the audit's CPU, and found no alarm; now 2 s, the same
    // verdict. Alarms are found early or not at all: 29 of the 30 alarms
    // under any launch took under a fourteenth of a quarter (see
    // `for_any_launch`).
    let unpassable = (spent() + budget / UNPASSABLE_SHARE).min(budget);
    let mut memory_budget = budget;
    if options.settle && memory == Verdict::Unknown {
        memory_budget = unpassable;
    }
    // Leads (`obligation::probe`) of every job: its concrete runs within
    // `steps`, and the solver on the accesses they left unordered, each
    // within `lead_work` and all within `limit` of the budget; the first
    // confirmed alarm.
    let search_leads = |mut steps: crate::obligation::probe::Budget,
                        lead_work: crate::obligation::smt::Work,
                        limit: crate::obligation::smt::Work,
                        jobs: &mut Vec<Job>,
                        models: &mut Vec<Models>,
                        assumptions: &mut Vec<String>|
     -> Option<crate::obligation::MemoryResult> {
        let mut failed = 0;
        for i in 0..jobs.len() {
            if exhausted(limit) || steps.left == 0 || failed >= LEADS_FAILED {
                break;
            }
            let k = &e.kernels[jobs[i].instantiation];
            let leads = crate::obligation::probe::leads(
                k,
                &jobs[i].facts,
                &jobs[i].mopts.shape,
                options.lower.warp_size,
                &mut steps,
            );
            if leads.is_empty() {
                continue;
            }
            let built = model_of(i, jobs, models, assumptions);
            let mut mopts = jobs[i].mopts.clone();
            mopts.budget = limit.saturating_sub(spent());
            mopts.deadline = Some(deadline);
            mopts.leads = leads;
            mopts.lead_work = lead_work;
            let _s = crate::profile::stage("memory");
            let result =
                crate::obligation::check_memory_rounds(k, &built.model, &mopts, crate::obligation::Rounds::Leads);
            if debugging_jobs() {
                eprintln!("leads of job {i}: {:?}", result.verdict);
            }
            failed += result.stats.solved - result.stats.sat;
            if result.verdict == Verdict::Alarm {
                return Some(result);
            }
        }
        None
    };
    // Leads first, before any job's rounds: an alarm in the last
    // instantiation then costs little more than one in the first. Only
    // where the first alarm settles the condition.
    if options.settle && memory != Verdict::Alarm {
        let first = crate::obligation::probe::Budget::first();
        let lead_work = crate::obligation::LEAD_WORK;
        if let Some(result) = search_leads(
            first,
            lead_work,
            memory_budget,
            &mut jobs,
            &mut models,
            &mut assumptions,
        ) {
            memory = Verdict::Alarm;
            alarms.extend(result.alarms);
            extend_new(&mut unknowns, result.unknowns);
            extend_new(&mut assumptions, result.assumptions);
        }
    }
    // Once no pass is in reach (see below), deeper runs, once.
    let mut searched_deep = false;
    {
        // Each round of every job, then the next round of those that left
        // obligations undecided (see `obligation::Rounds`).
        // Round 0 takes every job, building its model when it comes.
        let mut pending: Vec<(usize, Vec<crate::obligation::Obligation>)> =
            (0..jobs.len()).map(|i| (i, Vec::new())).collect();
        for round in 0..crate::obligation::ROUND_SHARES.len() {
            let mut next = Vec::new();
            for (i, undecided) in std::mem::take(&mut pending) {
                if options.settle && memory == Verdict::Alarm {
                    break;
                }
                let k = &e.kernels[jobs[i].instantiation];
                if exhausted(memory_budget) {
                    memory = join(memory, Verdict::Unknown);
                    extend_new(
                        &mut unknowns,
                        vec![UnknownItem {
                            reason: "the memory check ran out of the kernel's solver budget before deciding every \
                                     pair of accesses"
                                .into(),
                            span: k.span,
                        }],
                    );
                    break;
                }
                let model = if round == 0 {
                    let built = model_of(i, &mut jobs, &mut models, &mut assumptions);
                    if !checked[0].insert(check_key(&built, &jobs[i].mopts)) {
                        continue;
                    }
                    if options.settle && crate::obligation::memory_cannot_pass(k, &built.model) {
                        memory_budget = memory_budget.min(unpassable);
                    }
                    built.model
                } else {
                    jobs[i].model.as_ref().expect("built in round 0").model.clone()
                };
                let mut mopts = jobs[i].mopts.clone();
                mopts.budget = memory_budget.saturating_sub(spent());
                mopts.deadline = Some(deadline);
                mopts.undecided_before = next.iter().map(|(_, u): &(usize, Vec<_>)| u.len()).sum();
                let _s = crate::profile::stage("memory");
                let rounds = crate::obligation::Rounds::One(round, undecided);
                let result = crate::obligation::check_memory_rounds(k, &model, &mopts, rounds);
                if debugging_jobs() {
                    eprintln!(
                        "memory of job {i}, round {round}: {:?}, {} undecided, {} unknowns",
                        result.verdict,
                        result.undecided.len(),
                        result.unknowns.len()
                    );
                }
                // No pass in reach (`MemoryResult::out_of_reach`): the search
                // for an alarm gets what is left of the quarter, as where
                // the condition cannot pass. On ggml, flash_attn_ext_f16's
                // first instantiation leaves more of its first round's
                // obligations undecided than its budget can give a second
                // round (35.5 -> 19.9 M units of solver work), and
                // mul_mat_q_stream_k_fixup's three instantiations 13
                // (34.7 -> 24.4 M); both stay unknown, as before.
                if result.out_of_reach {
                    memory_budget = memory_budget.min(unpassable);
                }
                // With no pass in reach only an alarm settles the condition:
                // the runs go deeper (`probe::Budget::deep`), with work of
                // their own. On ggml: flash_attn_ext_f16's tile_Q race, in
                // its sixth instantiation, which the rounds never reach.
                if options.settle && result.out_of_reach && !searched_deep && result.verdict != Verdict::Alarm {
                    searched_deep = true;
                    let deep = crate::obligation::probe::Budget::deep();
                    let lead_work = crate::obligation::DEEP_LEAD_WORK;
                    let limit = (spent() + 2 * lead_work).min(budget);
                    if let Some(found) = search_leads(deep, lead_work, limit, &mut jobs, &mut models, &mut assumptions)
                    {
                        memory = Verdict::Alarm;
                        alarms.extend(found.alarms);
                        extend_new(&mut unknowns, found.unknowns);
                        extend_new(&mut assumptions, found.assumptions);
                    }
                }
                // An alarm stands whatever a later round decides.
                if result.undecided.is_empty() || result.verdict == Verdict::Alarm {
                    memory = join(memory, result.verdict);
                }
                if !result.undecided.is_empty() {
                    next.push((i, result.undecided));
                }
                alarms.extend(result.alarms);
                extend_new(&mut unknowns, result.unknowns);
                extend_new(&mut assumptions, result.assumptions);
            }
            pending = next;
        }
        // The last round leaves nothing undecided; were anything left, it
        // would be no pass.
        if !pending.is_empty() {
            memory = join(memory, Verdict::Unknown);
        }
    }
    // A lane reduction whose operand reads written memory is uniform over
    // the block only where loads of one address between the same barriers
    // agree, which the memory condition decides: participation proved with
    // it holds only with memory. Otherwise those jobs are checked again
    // without lane reductions, and that decides.
    let leaning: Vec<usize> = (0..jobs.len())
        .filter(|&i| {
            jobs[i]
                .model
                .as_ref()
                .is_some_and(|m| m.model.lane_reductions_read_written())
        })
        .collect();
    if participation == Verdict::Pass && memory != Verdict::Pass && !leaning.is_empty() {
        for &i in &leaning {
            let (k, job) = (&e.kernels[jobs[i].instantiation], &jobs[i]);
            let model = crate::passes::model(k, options.lower.warp_size, &job.facts, false);
            let mut mopts = job.mopts.clone();
            mopts.budget = budget.saturating_sub(spent());
            mopts.deadline = Some(deadline);
            let _s = crate::profile::stage("participation");
            let part = crate::obligation::participation::check_participation(k, &model, &mopts);
            participation = join(participation, part.verdict);
            alarms.extend(part.alarms);
            extend_new(&mut unknowns, part.unknowns);
            if participation == Verdict::Alarm {
                break;
            }
        }
        if participation == Verdict::Unknown {
            unknowns.push(UnknownItem {
                reason: "a warp reduction of values read from memory was taken as the same in every warp, which \
                         holds when the loads do not race with a write; the memory condition did not prove that, \
                         and participation is not proved without it"
                    .into(),
                span: e.span,
            });
        }
    }
    // A pass covers only the instantiations checked.
    if (memory == Verdict::Pass || participation == Verdict::Pass)
        && (e.instantiations > e.covered || e.more_instantiations)
    {
        memory = join(memory, Verdict::Unknown);
        participation = join(participation, Verdict::Unknown);
        let reason = if e.more_instantiations {
            format!(
                "only {} template instantiations were checked, and the search for them stopped at {}: more may exist",
                e.covered, e.instantiations
            )
        } else {
            format!(
                "only {} of the {} template instantiations found were checked",
                e.covered, e.instantiations
            )
        };
        unknowns.push(UnknownItem { reason, span: e.span });
    }
    // Conditions proved under the callers' shapes: would any launch do?
    // A search for one witness, so a sixty-fourth of the budget: on ggml,
    // 29 of the 30 alarms the callers discharge were found within 660,000
    // units (a fourteenth of a quarter), and the kernels with none spent
    // the whole quarter (36 s of the audit's CPU, 29 s of it finding
    // nothing). Once the runs (`obligation::probe`) met blocks along every
    // dimension, each memory alarm under any launch took at most 0.2 M
    // units (with `--timeout-ms 6000` a sixty-fourth is 1.7 M), and a
    // sixty-fourth found the same discharged kernels as a sixteenth, in
    // 135.0 M units of the audit's solver work, not 149.5 M.
    let discharged = if from_sites && options.block_dim.is_none() {
        let proved = [memory == Verdict::Pass, participation == Verdict::Pass];
        let _s = crate::profile::stage("any-launch");
        for_any_launch(e, options, proved, budget / 64, deadline, &mut models)
    } else {
        Vec::new()
    };
    let launch = match options.block_dim {
        Some(b) => Launch {
            block_dim: Some(b),
            block_known: None,
            grid_dim: options.grid_dim,
            source: ShapeSource::Flag,
        },
        None if from_sites && !site_blocks.is_empty() => Launch {
            block_dim: match site_blocks.as_slice() {
                [one] if one.iter().all(Option::is_some) => Some(one.map(|d| d.unwrap_or(1))),
                _ => None,
            },
            block_known: match site_blocks.as_slice() {
                [one] => Some(*one),
                _ => None,
            },
            grid_dim: options.grid_dim,
            source: ShapeSource::LaunchSite,
        },
        None => Launch {
            block_dim: None,
            block_known: None,
            grid_dim: options.grid_dim,
            source: if e.kernel().launch_bounds.is_some() {
                ShapeSource::LaunchBounds
            } else {
                ShapeSource::Symbolic
            },
        },
    };
    KernelResult {
        kernel: e.name.clone(),
        span: e.span,
        definition: e.definition,
        template_args: e
            .kernel()
            .template_args
            .iter()
            .map(|a| (a.name.clone(), a.value.clone()))
            .collect(),
        launch,
        memory,
        participation,
        alarms,
        unknowns,
        assumptions,
        time_ms: started.elapsed().as_millis() as u64,
        clock_limited: crate::obligation::smt::take_clock_stopped(),
        discharged,
    }
}

/// Leads a kernel's solver may fail to confirm before it tries no more:
/// a run that leads it astray once does so at other instantiations too.
const LEADS_FAILED: usize = 4;

/// Whether `WARPDRF_DEBUG_JOBS` asks for each instantiation checked.
fn debugging_jobs() -> bool {
    std::env::var_os("WARPDRF_DEBUG_JOBS").is_some()
}

/// One line about job `index` of entry `e`: the instantiation, its block,
/// and its model's size against its IR's (a model far smaller than its IR
/// has lost code: the range-for `continue` bug showed so).
fn describe_job(
    index: usize,
    e: &KernelEntry,
    k: &Kernel,
    model: &crate::ir::access::AccessModel,
    mopts: &MemoryOptions,
) -> String {
    let args: Vec<String> = k
        .template_args
        .iter()
        .map(|a| format!("{}={}", a.name, a.value))
        .collect();
    let (mut accesses, mut collectives) = (0, 0);
    k.body.walk(&mut |s| match &s.kind {
        crate::ir::StmtKind::Access(a) if !matches!(k.objects[a.object.index()].space, crate::ir::Space::Local) => {
            accesses += 1
        }
        crate::ir::StmtKind::Barrier(_) | crate::ir::StmtKind::Primitive(_) => collectives += 1,
        _ => {}
    });
    format!(
        "job {index} of {}: <{}> block {:?}: {} records of {accesses} accesses, {} syncs of {collectives} collectives, {} loops, traps {}",
        e.name,
        args.join(", "),
        mopts.shape.block_known,
        model.records.len(),
        model.syncs.len(),
        model.loops.len(),
        k.always_traps()
    )
}

/// One instantiation under one launch shape, to check.
struct Job {
    /// Its index in the entry's `kernels`.
    instantiation: usize,
    /// The launch site's facts.
    facts: Vec<crate::ir::LaunchFact>,
    mopts: MemoryOptions,
    /// Its access model, once built (see `model_of` in `check_entry`).
    model: Option<Modelled>,
}

/// An access model with its canonical text (`ir::canon`, with what the
/// checks read of its kernel), written once when the model is built.
#[derive(Clone)]
struct Modelled {
    model: std::rc::Rc<crate::ir::access::AccessModel>,
    text: std::rc::Rc<str>,
}

/// Everything a check reads: the options but for the budget and deadline,
/// and the model's canonical text (shared, not copied: it can be large).
type CheckKey = (String, std::rc::Rc<str>);

/// The key of a check of `built` under `mopts`. Checks with equal keys have
/// the same verdicts, alarms and unknowns, so one serves them all.
fn check_key(built: &Modelled, mopts: &MemoryOptions) -> CheckKey {
    let mut options = mopts.clone();
    options.budget = 0;
    options.deadline = None;
    (format!("{options:?}"), built.text.clone())
}

/// The access models of one instantiation, by the launch facts they hold.
/// Access models by launch facts and whether the launch lays warps along
/// `threadIdx.x` (`Shape::lanes_along_x`).
type Models = Vec<((Vec<crate::ir::LaunchFact>, bool), Modelled)>;

/// `k`'s access model with launch facts `facts` under launches of `shape`,
/// built once: shapes that differ only in their extents share it (unless
/// one lays warps along `threadIdx.x` and the other may not), and so does
/// the search under any launch (no facts).
fn model_for(
    models: &mut Models,
    k: &Kernel,
    facts: &[crate::ir::LaunchFact],
    shape: &crate::obligation::Shape,
    options: &Options,
) -> Modelled {
    let lanes = shape.lanes_along_x(options.lower.warp_size);
    if let Some((_, m)) = models.iter().find(|((f, l), _)| f == facts && *l == lanes) {
        return m.clone();
    }
    let _s = crate::profile::stage("model");
    let model = crate::passes::model(k, options.lower.warp_size, facts, lanes);
    let text: std::rc::Rc<str> = crate::ir::canon::canonical(&model, k).into();
    // A debugging aid: each model's canonical text in a file, to see why
    // two instantiations are checked apart (`diff`).
    if let Ok(dir) = std::env::var("WARPDRF_DUMP_CANON") {
        let args: String = k.template_args.iter().map(|a| format!("{},", a.value)).collect();
        let args: String = args
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { '_' })
            .collect();
        let _ = std::fs::write(format!("{dir}/{}-{args}-{}.txt", k.name, models.len()), &*text);
    }
    let m = Modelled {
        model: std::rc::Rc::new(model),
        text,
    };
    models.push(((facts.to_vec(), lanes), m.clone()));
    m
}

/// Instantiations the search under any launch takes (see
/// [`for_any_launch`]): they share their code and differ in constants, and
/// each costs a model of its own. On ggml every condition the callers
/// discharge showed its alarm in the first instantiation searched, and the
/// kernels without one built models for up to 25 (mul_mat_q: 0.9 s of its
/// 2.4 s).
const ANY_LAUNCH_INSTANTIATIONS: usize = 4;

/// The first alarm of each condition marked `proved` ([memory,
/// participation]) under a launch of any shape without launch facts, in
/// the first [`ANY_LAUNCH_INSTANTIATIONS`] instantiations, within
/// `budget`: what the callers' shapes discharge.
fn for_any_launch(
    e: &KernelEntry,
    options: &Options,
    proved: [bool; 2],
    budget: crate::obligation::smt::Work,
    deadline: std::time::Duration,
    models: &mut [Models],
) -> Vec<crate::verdict::Alarm> {
    let mut found: Vec<crate::verdict::Alarm> = Vec::new();
    if !proved.contains(&true) {
        return found;
    }
    let solving = crate::obligation::smt::work_done();
    // Instantiations with one model are searched once (see `check_key`).
    let mut searched = crate::hash::HashSet::default();
    let mut pending = Vec::new();
    let mut steps = crate::obligation::probe::Budget::first();
    let has = |found: &[crate::verdict::Alarm], c: Condition| found.iter().any(|a| a.condition == c);
    for (k, models) in e.kernels.iter().zip(models).take(ANY_LAUNCH_INSTANTIATIONS) {
        // Each condition needs one alarm: once both have theirs (or were
        // not proved), no instantiation's model is needed.
        if (!proved[0] || has(&found, Condition::Memory)) && (!proved[1] || has(&found, Condition::Participation)) {
            break;
        }
        let mut mopts = memory_options(k, options);
        let built = model_for(models, k, &[], &mopts.shape, options);
        mopts.settle = true;
        mopts.max_alarms = 1;
        mopts.deadline = Some(deadline);
        if !searched.insert(check_key(&built, &mopts)) {
            continue;
        }
        let model = built.model;
        if proved[1] && !has(&found, Condition::Participation) {
            mopts.budget = budget.saturating_sub(crate::obligation::smt::work_done() - solving) / 2;
            let part = crate::obligation::participation::check_participation(k, &model, &mopts);
            found.extend(part.alarms.into_iter().take(1));
        }
        if proved[0] && !has(&found, Condition::Memory) {
            mopts.budget = budget.saturating_sub(crate::obligation::smt::work_done() - solving);
            // Leads first (`obligation::probe`), in the first round.
            mopts.leads = crate::obligation::probe::leads(k, &[], &mopts.shape, options.lower.warp_size, &mut steps);
            let rounds = crate::obligation::Rounds::One(0, Vec::new());
            let memory = crate::obligation::check_memory_rounds(k, &model, &mopts, rounds);
            found.extend(memory.alarms.into_iter().take(1));
            if !memory.undecided.is_empty() {
                pending.push((k, model, mopts, memory.undecided));
            }
        }
    }
    // The memory search's later rounds, as in `check_entry`: every
    // instantiation's first round ran before any second.
    for round in 1..crate::obligation::ROUND_SHARES.len() {
        for (k, model, mut mopts, undecided) in std::mem::take(&mut pending) {
            if found.iter().any(|a| a.condition == Condition::Memory) {
                return found;
            }
            mopts.budget = budget.saturating_sub(crate::obligation::smt::work_done() - solving);
            if mopts.budget == 0 {
                return found;
            }
            let rounds = crate::obligation::Rounds::One(round, undecided);
            let memory = crate::obligation::check_memory_rounds(k, &model, &mopts, rounds);
            found.extend(memory.alarms.into_iter().take(1));
            if !memory.undecided.is_empty() {
                pending.push((k, model, mopts, memory.undecided));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::congruent;
    use crate::ir::{BinOp, Expr, ScalarTy};

    /// The entries `source` lists.
    fn entries_of(source: &str) -> Vec<super::KernelEntry> {
        let source = source.to_string();
        super::with_big_stack(move || {
            let mut db = crate::source::SourceDb::new();
            let unit = db.add_text("unit.cu", &source);
            super::lower_files(&mut db, vec![unit], Vec::new(), &super::Options::default()).0
        })
    }

    #[test]
    fn a_call_of_another_overload_names_no_instantiation() {
        // `run(s, d)` in `host` calls the two-parameter `run`: read as a
        // call of the three-parameter one, it named `<int, ?>` (D deduced
        // from nothing), an instantiation that does not exist.
        let entries = entries_of(
            "template <typename S, typename D> __global__ void k(const S * s, D * d) { d[threadIdx.x] = (D) s[threadIdx.x]; }
             template <typename S, typename D> static void run(const S * s, D * d, int n) { k<S, D><<<1, 32>>>(s, d); }
             template <typename S> static void run(const S * s, void * d) { run(s, (float *) d, 1); }
             void host(const int * s, void * d) { run<int>(s, d); }",
        );
        let e = &entries[0];
        assert_eq!((e.instantiations, e.more_instantiations), (1, false), "{e:?}");
        let args: Vec<String> = e.kernels[0].template_args.iter().map(|a| a.value.clone()).collect();
        assert_eq!(args, ["int", "float"]);
    }

    #[test]
    fn a_call_without_operands_may_call_a_function_of_void() {
        // `(void)` declares no parameter: `launch<3>()` fits it.
        let entries = entries_of(
            "template <int N> __global__ void k(int * p) { p[threadIdx.x] = N; }
             int * buf;
             template <int N> void launch(void) { k<N><<<1, 32>>>(buf); }
             void host() { launch<3>(); }",
        );
        let e = &entries[0];
        assert_eq!(e.instantiations, 1, "{e:?}");
        let args: Vec<String> = e.kernels[0].template_args.iter().map(|a| a.value.clone()).collect();
        assert_eq!(args, ["3"]);
    }

    #[test]
    fn a_search_cut_short_on_the_way_leaves_the_rest_to_a_cover() {
        // `k<1>` is reached through four enclosing templates, past the
        // search's depth: the `k<2>` found directly is not all of them.
        let entries = entries_of(PAST_THE_DEPTH);
        let e = &entries[0];
        assert!(e.cover.is_some() || e.more_instantiations, "{e:?}");
    }

    #[test]
    fn a_kernel_searched_after_another_stops_short_where_that_search_did() {
        // `run` launches `a<1>` and `b<1>` with the block its callers pass;
        // the caller passing 64 is past the search's depth, so `a`'s search
        // stops short and a cover checks the rest. The search for `b`
        // reads what the search for `a` found of `run`'s callers: it stops
        // short too, as it does searched alone.
        let entries = entries_of(
            "template <int N> __global__ void a(int * p) { p[threadIdx.x] = N; }
            template <int N> __global__ void b(int * p) { p[threadIdx.x] = N; }
            void run(int * p, dim3 block) { a<1><<<1, block>>>(p); b<1><<<1, block>>>(p); }
            template <int N> void l1(int * p) { run(p, dim3(N)); }
            template <int N> void l2(int * p) { l1<N>(p); }
            template <int N> void l3(int * p) { l2<N>(p); }
            template <int N> void l4(int * p) { l3<N>(p); }
            void host(int * p) { l4<64>(p); l1<32>(p); }",
        );
        assert_eq!(entries.len(), 2);
        for e in &entries {
            assert!(e.cover.is_some() || e.more_instantiations, "{e:?}");
        }
    }

    /// `k<1>` is reached through four enclosing templates, past the
    /// search's depth; `k<2>` directly.
    const PAST_THE_DEPTH: &str = "template <int N> __global__ void k(int * p) { p[threadIdx.x] = N; }
        template <int N> void l1(int * p) { k<N><<<1, 32>>>(p); }
        template <int N> void l2(int * p) { l1<N>(p); }
        template <int N> void l3(int * p) { l2<N>(p); }
        template <int N> void l4(int * p) { l3<N>(p); }
        void host(int * p) { l4<1>(p); l1<2>(p); }";

    /// The entries of a directory of `files` (name, text).
    fn entries_in(files: &[(&str, &str)]) -> Vec<super::KernelEntry> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("writing a source file");
        }
        let inputs = super::collect_inputs(&[dir.path().to_path_buf()]).expect("inputs");
        super::with_big_stack(move || {
            let mut db = crate::source::SourceDb::new();
            super::lower_all(&mut db, &inputs, &super::Options::default())
                .expect("lowered")
                .0
        })
    }

    #[test]
    fn a_kernel_named_in_a_later_unit_keeps_its_cover() {
        // `k<1>` is past the search's depth: a cover checks it. A later
        // unit names `k` (so may declare it) and settles it, without its
        // definition: the cover lowered where it was last seen stands.
        let entries = entries_in(&[
            ("a.cu", PAST_THE_DEPTH),
            (
                "b.cu",
                "// k is not launched here
int unrelated() { return 0; }
",
            ),
        ]);
        let e = &entries[0];
        assert!(e.cover.is_some() && !e.more_instantiations, "{e:?}");
    }

    #[test]
    fn a_shape_of_unknown_extent_includes_those_its_multiple_allows() {
        use crate::lower::instantiate::LaunchShape;
        let shape = |block: [Option<u32>; 3], multiple: [u32; 3]| LaunchShape {
            block,
            multiple,
            facts: Vec::new(),
        };
        let any_warps = shape([None, Some(1), Some(1)], [32, 1, 1]);
        assert!(super::includes(
            &any_warps,
            &shape([Some(64), Some(1), Some(1)], [1; 3])
        ));
        assert!(!super::includes(
            &any_warps,
            &shape([Some(48), Some(1), Some(1)], [1; 3])
        ));
        assert!(super::includes(
            &any_warps,
            &shape([None, Some(1), Some(1)], [64, 1, 1])
        ));
        assert!(!super::includes(&any_warps, &shape([None, Some(1), Some(1)], [1; 3])));
        let fixed = shape([Some(64), Some(1), Some(1)], [1; 3]);
        assert!(!super::includes(&fixed, &shape([Some(128), Some(1), Some(1)], [1; 3])));
        assert!(!super::includes(&fixed, &any_warps));
    }

    /// The launch facts of the only kernel of `source`, with whether each
    /// is the host's own computation (`LaunchFact::evaluated`).
    fn facts_of(source: &str) -> Vec<(Expr, bool)> {
        let mut db = crate::source::SourceDb::new();
        let unit = db.add_text("facts.cu", source);
        let (entries, _) = super::lower_files(&mut db, vec![unit], Vec::new(), &super::Options::default());
        let shapes = entries[0].launch_blocks[0].clone().expect("a launch site");
        shapes[0].facts.iter().map(|f| (f.expr.clone(), f.evaluated)).collect()
    }

    #[test]
    fn a_launch_fact_over_a_narrowed_parameter_holds_only_as_a_congruence() {
        let source = "void abort_run(const char * why);\n\
            __global__ void k(float * out, int narrow, long long wide, int scaled) { out[threadIdx.x] = 0.0f; }\n\
            void run(float * out, long long n, long long w) {\n\
                if (!(n < 100)) abort_run(\"n\");\n\
                if (!(w < 100)) abort_run(\"w\");\n\
                k<<<n, 32>>>(out, n, w, 2 * n);\n\
            }\n";
        // Scalar parameters are numbered among themselves: `narrow` 0,
        // `wide` 1, `scaled` 2.
        let facts = facts_of(source);
        let mentions = |e: &Expr, p: u32| {
            let mut found = false;
            e.visit(&mut |x| found |= *x == Expr::Param(p));
            found
        };
        // `w < 100` holds of the `long long` parameter, which is `w`: the
        // host's own comparison.
        assert!(facts
            .iter()
            .any(|(e, evaluated)| *evaluated && mentions(e, 1) && matches!(e, Expr::Binary(BinOp::Lt, ..))));
        // `n < 100` says nothing of the `int` that `n` became: dropped.
        assert!(!facts
            .iter()
            .any(|(e, _)| mentions(e, 0) && matches!(e, Expr::Binary(BinOp::Lt, ..))));
        // `scaled == 2*n` holds modulo 2^32 of the narrowed parameters, but
        // its arithmetic is not the host's: kept, not evaluated.
        assert!(facts
            .iter()
            .any(|(e, evaluated)| !*evaluated && mentions(e, 2) && mentions(e, 0)));
        // The grid's extent is `(unsigned) n`, whose 32 bits the narrowed
        // parameter keeps: the same value, not the same arithmetic.
        assert!(facts.iter().any(|(e, evaluated)| {
            let mut grid = false;
            e.visit(&mut |x| grid |= matches!(x, Expr::Builtin(crate::ir::Builtin::GridDim(crate::ir::Dim::X))));
            grid && mentions(e, 0) && !*evaluated
        }));
    }

    #[test]
    fn a_grid_constructed_from_a_product_of_variables_relates_to_the_arguments() {
        // `dim3 grid(n, m * h);` parses as a function declaration with a
        // parameter `m *h` (the "most vexing parse"); C++ reads a `dim3`
        // built from `n` and the product. Its extents are the arguments'.
        let source = "__global__ void k(float * out, int n, int m, int h) { out[threadIdx.x] = 0.0f; }\n\
            void run(float * out, int n, int m, int h) {\n\
                const dim3 grid(n, m * h);\n\
                k<<<grid, 32>>>(out, n, m, h);\n\
            }\n";
        let facts = facts_of(source);
        let about = |e: &Expr, d: crate::ir::Dim, params: &[u32]| {
            let grid = |x: &Expr| *x == Expr::Builtin(crate::ir::Builtin::GridDim(d));
            params.iter().all(|&p| has_both(e, grid, |x| *x == Expr::Param(p)))
        };
        assert!(
            facts.iter().any(|(e, _)| about(e, crate::ir::Dim::X, &[0])),
            "{facts:?}"
        );
        assert!(
            facts.iter().any(|(e, _)| about(e, crate::ir::Dim::Y, &[1, 2])),
            "{facts:?}"
        );
    }

    #[test]
    fn fields_of_a_struct_parameter_relate_the_grid_to_the_arguments() {
        // The host passes `args.n` as the kernel's `n` and launches
        // `args.n` blocks: each integer field of the parameter is one
        // unknown value, so `gridDim.x == n` (it was unknown).
        let source = "struct args_t { int n; int m; const float * x; };\n\
            __global__ void k(float * out, int n, int m) { out[threadIdx.x] = 0.0f; }\n\
            static void run(float * out, const args_t & args) {\n\
                k<<<args.n, 32>>>(out, args.n, args.m);\n\
            }\n";
        let facts = facts_of(source);
        let grid = |x: &Expr| matches!(x, Expr::Builtin(crate::ir::Builtin::GridDim(crate::ir::Dim::X)));
        assert!(
            facts.iter().any(|(e, _)| has_both(e, grid, |x| *x == Expr::Param(0))),
            "{facts:?}"
        );
    }

    /// Whether `e` has a subexpression of which `a` holds and one of which `b` does.
    fn has_both(e: &Expr, a: impl Fn(&Expr) -> bool, b: impl Fn(&Expr) -> bool) -> bool {
        let (mut first, mut second) = (false, false);
        e.visit(&mut |x| {
            first |= a(x);
            second |= b(x);
        });
        first && second
    }

    #[test]
    fn a_value_a_loop_changes_after_its_assignment_is_not_that_value() {
        // `magic` sets `l = 0`, then a loop raises it: the argument `m.y`
        // is whatever the loop leaves, not the 0 assigned before it (that
        // made the fact `l == 0`, false for every `n` above 1).
        let source = "static uint3 magic(unsigned int d) {\n\
                unsigned int l = 0;\n\
                while ((1u << l) < d) { l++; }\n\
                return make_uint3(7, l, d);\n\
            }\n\
            __global__ void k(float * out, unsigned int l) { out[threadIdx.x] = 0.0f; }\n\
            void run(float * out, unsigned int n) {\n\
                const uint3 m = magic(n);\n\
                k<<<1, 32>>>(out, m.y);\n\
            }\n";
        let facts = facts_of(source);
        let constant_l = facts
            .iter()
            .any(|(e, _)| has_both(e, |x| *x == Expr::Param(0), |x| matches!(x, Expr::Int(..))));
        assert!(!constant_l, "{facts:?}");
    }

    #[test]
    fn a_condition_stored_with_a_short_circuit_keeps_its_conjuncts() {
        // The conjunction lowers with a branch (its last operand reads a
        // pointer): `ok` is `a ? (b ? …) : a`, a conjunction whose parts
        // about the arguments (`n % 16 == 0`) are facts of the launch.
        let source = "__global__ void k(float * out, long long n) { out[threadIdx.x] = 0.0f; }\n\
            void run(float * out, long long n, long long m) {\n\
                const bool ok = m > 4 && (n % 16 == 0) && (((unsigned long long) out) % 16 == 0);\n\
                if (ok) {\n\
                    k<<<1, 32>>>(out, n);\n\
                }\n\
            }\n";
        let facts = facts_of(source);
        let rem = |x: &Expr| matches!(x, Expr::Binary(BinOp::Rem, ..));
        assert!(
            facts.iter().any(|(e, _)| has_both(e, |x| *x == Expr::Param(0), rem)),
            "{facts:?}"
        );
    }

    fn int(bits: u8) -> ScalarTy {
        ScalarTy::Int { bits, signed: true }
    }

    fn bin(op: BinOp, ty: ScalarTy, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, ty, Box::new(a), Box::new(b))
    }

    #[test]
    fn only_ring_arithmetic_on_wide_enough_parameters_is_congruent_to_the_hosts() {
        // Parameters 0 and 1 are `int`, 2 is `int64_t`.
        let width = |p: u32| [Some(32), Some(32), Some(64)].get(p as usize).copied().flatten();
        let h = Expr::Param(1);
        // 64*h computed in 64 bits, compared in 32: the truncation forgets
        // what narrowing h lost.
        let product = bin(BinOp::Mul, int(64), Expr::Int(64, int(64)), h.clone());
        assert!(congruent(&product, 32, &width));
        // Compared in 64 bits (an `int64_t` parameter), h's high bits count.
        assert!(!congruent(&product, 64, &width));
        // A quotient keeps no congruence: (n / 4) of a narrowed n is not
        // the host's.
        let quarter = bin(BinOp::Div, int(64), Expr::Param(2), Expr::Int(4, int(64)));
        assert!(!congruent(&quarter, 32, &width));
        // The 64-bit parameter is its host value.
        let sum = bin(BinOp::Add, int(64), Expr::Param(2), Expr::Int(1, int(64)));
        assert!(congruent(&sum, 64, &width));
        // A constant shift is a product; a right shift keeps nothing.
        let shl = bin(BinOp::Shl, int(32), Expr::Param(0), Expr::Int(3, int(32)));
        assert!(congruent(&shl, 32, &width));
        let shr = bin(BinOp::Shr, int(32), Expr::Param(0), Expr::Int(3, int(32)));
        assert!(!congruent(&shr, 32, &width));
        // A parameter read as its host type, no wider than it, is the
        // host's value: then any operation on it is exact, a quotient too.
        let host_int = Expr::Cast(int(32), Box::new(Expr::Param(1)));
        let widened = bin(BinOp::Mul, int(64), Expr::Int(64, int(64)), host_int.clone());
        assert!(congruent(&widened, 64, &width));
        let halved = bin(BinOp::Div, int(64), host_int, Expr::Int(2, int(64)));
        assert!(congruent(&halved, 64, &width));
        // Read as a wider host type (an `int64_t` narrowed into `int`), not.
        let host_long = Expr::Cast(int(64), Box::new(Expr::Param(1)));
        let halved = bin(BinOp::Div, int(64), host_long, Expr::Int(2, int(64)));
        assert!(!congruent(&halved, 32, &width));
    }

    /// The first round of `k`'s memory check, in one block of 64 threads,
    /// with 2 s of work per obligation and `budget_ms` in all.
    fn first_round(k: &crate::ir::Kernel, budget_ms: u64, settle: bool) -> crate::obligation::MemoryResult {
        let model = crate::passes::model(k, 32, &[], false);
        let mut options = crate::obligation::MemoryOptions {
            work: crate::obligation::smt::work_for_ms(2_000),
            budget: crate::obligation::smt::work_for_ms(budget_ms),
            settle,
            ..Default::default()
        };
        options.shape.block_dim = Some([64, 1, 1]);
        options.shape.block_known = [Some(64), Some(1), Some(1)];
        options.shape.grid_dim = Some([1, 1, 1]);
        let rounds = crate::obligation::Rounds::One(0, Vec::new());
        crate::obligation::check_memory_rounds(k, &model, &options, rounds)
    }

    #[test]
    fn costly_proofs_do_not_put_a_pass_out_of_reach() {
        // Forty writes of one shared array at disjoint offsets: 861
        // obligations, each proved, together more than a 300 ms budget
        // decides. What a proof costs says nothing of the obligations after
        // it: only undecided ones count towards a pass out of reach, so with
        // `settle` the round goes on as without until the budget runs out
        // (a rule that projected the cost of the first four stopped there).
        let writes: String = (0..40).map(|k| format!("s[t + {}u] = {k}.0f;\n", 64 * k)).collect();
        let entries = entries_of(&format!(
            "__global__ void bands(float *out) {{
                 __shared__ float s[2560];
                 unsigned t = threadIdx.x;
                 {writes}
                 out[t] = s[t];
             }}"
        ));
        let k = &entries[0].kernels[0];
        let (settled, full) = (first_round(k, 300, true), first_round(k, 300, false));
        assert!(settled.alarms.is_empty() && full.alarms.is_empty());
        assert_eq!(settled.stats.sat, 0);
        // As many tried with `settle` as without (400 here): only at the
        // budget's end, where an obligation gets too little to be decided,
        // is the pass out of reach.
        assert_eq!(settled.stats.solved, full.stats.solved);
        assert!(settled.stats.solved > 100, "{} tried", settled.stats.solved);
    }

    #[test]
    fn a_first_round_that_leaves_more_than_the_budget_can_decide_puts_a_pass_out_of_reach() {
        // Cubic offsets, each array written by one statement and injective
        // (no race), but every proof is beyond a first round's slice. Each
        // obligation left undecided needs more than that slice in the next
        // round, so once they outnumber what the budget left can give, no
        // pass is in reach: with `settle` the round stops there, every
        // obligation it did not decide handed on; without, it goes on.
        let entries = entries_of(
            "__global__ void cubes(float *x, float *y, float *z, float *w, unsigned long long a) {
                 unsigned long long t = threadIdx.x;
                 x[t * t * t + a] = 1.0f;
                 y[t * t * t * 3ull + a] = 2.0f;
                 z[(t * t + 5ull) * t + a] = 3.0f;
                 w[(t * t + 7ull) * t * 2ull + a] = 4.0f;
             }",
        );
        let k = &entries[0].kernels[0];
        let (settled, full) = (first_round(k, 3_000, true), first_round(k, 3_000, false));
        assert!(settled.out_of_reach && !full.out_of_reach);
        assert!(settled.alarms.is_empty() && full.alarms.is_empty());
        // The same obligations handed on (none dropped), fewer tried.
        let sorted = |mut v: Vec<crate::obligation::Obligation>| {
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(settled.undecided.clone()), sorted(full.undecided.clone()));
        assert_eq!(full.undecided.len(), 4, "every proof beyond the slice");
        assert!(settled.stats.solved < full.stats.solved);
    }
}
