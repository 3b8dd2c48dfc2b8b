//! The kernel IR: every type the analyses consume, in one place.
//!
//! A [`Kernel`] is one instantiation of one `__global__` function with every
//! device function inlined. Its body is structured statements ([`Stmt`]) over
//! pure integer/boolean/float expressions ([`Expr`]) of thread and block ids,
//! dimensions, parameters, template constants, variables and unknowns. Effects
//! are statements: memory [`Access`]es, [`Barrier`]s, warp [`Primitive`]s.
//!
//! Architecture invariant: expressions have no side effects, so an analysis may
//! duplicate, reorder or drop them; anything with an effect or a per-thread
//! unknown result is a statement that assigns a variable.
//! Non-goals: floating-point values are not interpreted (they are opaque values
//! that only flow), and local (register) arrays are memory objects of space
//! `Local`, which no thread shares.

pub mod access;
pub mod canon;
pub mod fold;
pub mod print;
pub mod term;

use crate::source::Span;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A mutable scalar variable of the kernel (locals, parameters, temporaries).
    VarId
);
id_type!(
    /// A memory object: a pointer parameter's buffer, a shared array, a local array.
    ObjectId
);
id_type!(
    /// A loop or labelled block that `Exit` can leave.
    LabelId
);
id_type!(
    /// A symbolic constant, the same for the whole grid (a template parameter left
    /// symbolic, a name from a header that was not found, `sizeof` of an unknown type).
    SymId
);
id_type!(
    /// An uninterpreted pure function (a math intrinsic, a float operation we do not model).
    OpId
);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub const ALL: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];

    pub fn name(self) -> &'static str {
        match self {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatKind {
    Half,
    BFloat16,
    F32,
    F64,
}

/// The greatest common divisor, never negative (0 only of two zeros): the
/// stride every value of a sum of multiples is a multiple of.
pub fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The type of a scalar expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarTy {
    Bool,
    Int {
        bits: u8,
        signed: bool,
    },
    Float(FloatKind),
    /// A value the IR does not interpret (packed halves, an opaque struct).
    Opaque,
}

impl ScalarTy {
    pub const I32: ScalarTy = ScalarTy::Int { bits: 32, signed: true };
    pub const U32: ScalarTy = ScalarTy::Int {
        bits: 32,
        signed: false,
    };
    pub const I64: ScalarTy = ScalarTy::Int { bits: 64, signed: true };
    pub const U64: ScalarTy = ScalarTy::Int {
        bits: 64,
        signed: false,
    };

    pub fn is_int(self) -> bool {
        matches!(self, ScalarTy::Int { .. })
    }

    /// The width of an integer type.
    pub fn int_bits(self) -> Option<u8> {
        match self {
            ScalarTy::Int { bits, .. } => Some(bits),
            _ => None,
        }
    }

    /// Wraps `value` into the range of this type (two's complement for signed).
    pub fn wrap(self, value: i128) -> i128 {
        match self {
            ScalarTy::Int { bits, signed } if bits < 128 => {
                let mask = (1i128 << bits) - 1;
                let v = value & mask;
                if signed && v >> (bits - 1) & 1 == 1 {
                    v - (1i128 << bits)
                } else {
                    v
                }
            }
            ScalarTy::Bool => (value != 0) as i128,
            _ => value,
        }
    }
}

/// CUDA's built-in index variables and the warp size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    ThreadIdx(Dim),
    BlockIdx(Dim),
    BlockDim(Dim),
    GridDim(Dim),
    /// `warpSize`: the warp width of the run (`--warp-size`).
    WarpSize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    /// Logical not: the operand is a bool.
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Min,
    Max,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    /// The comparison that holds exactly when this one does not (for
    /// integers; with floats NaN breaks it).
    pub fn negated(self) -> Option<BinOp> {
        match self {
            BinOp::Eq => Some(BinOp::Ne),
            BinOp::Ne => Some(BinOp::Eq),
            BinOp::Lt => Some(BinOp::Ge),
            BinOp::Le => Some(BinOp::Gt),
            BinOp::Gt => Some(BinOp::Le),
            BinOp::Ge => Some(BinOp::Lt),
            _ => None,
        }
    }

    /// The comparison with its operands swapped (`a < b` is `b > a`);
    /// any other operator as it is.
    pub fn swapped(self) -> BinOp {
        match self {
            BinOp::Lt => BinOp::Gt,
            BinOp::Le => BinOp::Ge,
            BinOp::Gt => BinOp::Lt,
            BinOp::Ge => BinOp::Le,
            op => op,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }
}

/// A pure expression. Integer operations carry the type they compute in
/// (`ty` of a comparison is its operands' type; its result is `Bool`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i128, ScalarTy),
    Bool(bool),
    /// A floating-point constant (its value is kept for printing only).
    Float(f64),
    Var(VarId),
    Builtin(Builtin),
    /// A scalar kernel parameter's value at entry (uniform across the grid).
    Param(u32),
    Sym(SymId),
    Unary(UnOp, ScalarTy, Box<Expr>),
    Binary(BinOp, ScalarTy, Box<Expr>, Box<Expr>),
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(ScalarTy, Box<Expr>),
    /// An uninterpreted pure function of its arguments.
    Opaque(OpId, ScalarTy, Vec<Expr>),
}

impl Expr {
    pub fn int(value: i128, ty: ScalarTy) -> Expr {
        Expr::Int(ty.wrap(value), ty)
    }

    pub fn as_int(&self) -> Option<i128> {
        match self {
            Expr::Int(v, _) => Some(*v),
            Expr::Bool(b) => Some(*b as i128),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Expr::Bool(b) => Some(*b),
            Expr::Int(v, _) => Some(*v != 0),
            _ => None,
        }
    }

    pub fn is_const(&self) -> bool {
        matches!(self, Expr::Int(..) | Expr::Bool(_) | Expr::Float(_))
    }

    /// Calls `f` on this expression and every subexpression, parents first.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Unary(_, _, a) | Expr::Cast(_, a) => a.visit(f),
            Expr::Binary(_, _, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Select(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
            Expr::Opaque(_, _, args) => args.iter().for_each(|a| a.visit(f)),
            _ => {}
        }
    }

    /// Number of nodes.
    pub fn size(&self) -> usize {
        let mut n = 0;
        self.visit(&mut |_| n += 1);
        n
    }

    pub fn mentions_var(&self, var: VarId) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Var(v) if *v == var));
        found
    }
}

/// A fact of a kernel's launch, over its parameters (or, on the host's
/// side, the launch's arguments) and launch dimensions.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchFact {
    pub expr: Expr,
    /// The fact is the host's own computation: the values it reads are
    /// those the host held (no narrowing conversion stands between a
    /// parameter and the host's value). The host, like any C code, ran
    /// it without undefined behaviour (no signed operation overflowed,
    /// no divisor was zero), which the checks may then assume of it as
    /// they do of the kernel's code. Not so for an equation that only
    /// holds modulo a parameter's width (see `driver::congruent`).
    pub evaluated: bool,
}

impl LaunchFact {
    /// A fact the host evaluated.
    pub fn evaluated(expr: Expr) -> LaunchFact {
        LaunchFact { expr, evaluated: true }
    }
}

/// Memory spaces: which threads can see an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    Global,
    Shared,
    /// `__constant__`: read-only in kernels.
    Constant,
    /// A thread's own memory (local arrays): never shared.
    Local,
}

/// Where a memory object comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectKind {
    /// The buffer a pointer parameter points to (`path` names a pointer inside a
    /// by-value struct parameter, e.g. `args.x`).
    Param { index: u32, path: String },
    /// A `__shared__` array of a fixed size.
    StaticShared { bytes: Option<Expr> },
    /// The dynamic shared memory (`extern __shared__`): every such declaration
    /// of a kernel starts at its beginning, so they are one object.
    DynamicShared,
    /// A `__device__` or `__constant__` variable at namespace scope.
    GlobalVariable,
    /// A local (register) array or aggregate.
    Local { bytes: Option<Expr> },
    /// Memory reached through a pointer the IR cannot trace (loaded from memory,
    /// returned by an opaque call). It may alias any object of its space.
    Untraced,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemObject {
    pub name: String,
    pub space: Space,
    pub kind: ObjectKind,
    /// The element type as written, for reports.
    pub elem: String,
    /// Declared `__restrict__` (a parameter).
    pub restrict: bool,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Sub,
    Exch,
    Min,
    Max,
    Inc,
    Dec,
    Cas,
    And,
    Or,
    Xor,
    /// The internal writes of one block collective (a CUB algorithm on its
    /// temp storage): the threads' writes do not race with each other, as
    /// atomics do not, but do with plain accesses.
    Collective,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Read,
    Write,
    /// An atomic read-modify-write.
    Atomic(AtomicOp),
}

impl AccessKind {
    pub fn writes(self) -> bool {
        !matches!(self, AccessKind::Read)
    }
}

/// A variable ranging over `[lo, hi)`: an access with ranges covers every
/// offset its expression takes for some choice of them (a tile load, `memcpy`).
#[derive(Clone, Debug, PartialEq)]
pub struct RangeVar {
    pub var: VarId,
    pub lo: Expr,
    pub hi: Expr,
}

/// One memory access by the executing thread: `width` bytes at byte `offset`
/// of `object`.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub object: ObjectId,
    pub kind: AccessKind,
    pub offset: Expr,
    pub width: Expr,
    /// The value written (writes and atomics).
    pub value: Option<Expr>,
    /// The variable that receives the value read (reads and atomics that return).
    pub result: Option<VarId>,
    pub ranges: Vec<RangeVar>,
    /// The access is part of a warp collective (`ldmatrix`, wmma loads).
    pub collective: bool,
    /// An asynchronous copy's half (`cp.async`): it happens at some point
    /// between here and the thread's next [`StmtKind::AsyncWait`], which
    /// the model places here; see `lower::async_copy` for when that is
    /// exact.
    pub asynchronous: bool,
    /// An asynchronous copy still in flight where its thread returns from
    /// the kernel (`lower::async_copy`): it lands at any later point of the
    /// others' execution, so its phases are any at or past those here.
    pub lingering: bool,
    /// A library exchange through temp storage (CUB's `*_WARP_TRANSPOSE`):
    /// each warp has its own share of the storage, so the statement's
    /// accesses by different threads never meet one another (they do meet
    /// every other access to the storage).
    pub exchange: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierScope {
    /// `__syncthreads()` and its forms, `this_thread_block().sync()`.
    Block,
    /// `this_grid().sync()` (cooperative launch).
    Grid,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Barrier {
    pub scope: BarrierScope,
    /// `__syncthreads_count/and/or(pred)`: the predicate and the variable that
    /// receives the block-wide result.
    pub predicate: Option<(Expr, VarId)>,
    /// What the source called (`__syncthreads`, `cg::grid_group::sync`…).
    pub name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShuffleKind {
    Idx,
    Up,
    Down,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// The collective operations of a warp.
#[derive(Clone, Debug, PartialEq)]
pub enum PrimKind {
    Shuffle(ShuffleKind),
    Ballot,
    Any,
    All,
    Uni,
    Reduce(ReduceOp),
    MatchAny,
    MatchAll,
    /// `__syncwarp(mask)`: orders memory between participating lanes.
    SyncWarp,
    /// Tensor-core and matrix operations (`mma.sync`, `ldmatrix`, `movmatrix`,
    /// `wmma::*`): register collectives of the whole warp.
    Matrix(String),
    /// `__activemask()`: not a collective; its value names the lanes that happen
    /// to be active and is never trusted as a mask.
    ActiveMask,
    /// A library collective (CUB block load/store/scan): every thread of its
    /// scope must call it.
    Library(String),
}

impl PrimKind {
    pub fn name(&self) -> String {
        match self {
            PrimKind::Shuffle(ShuffleKind::Idx) => "__shfl_sync".into(),
            PrimKind::Shuffle(ShuffleKind::Up) => "__shfl_up_sync".into(),
            PrimKind::Shuffle(ShuffleKind::Down) => "__shfl_down_sync".into(),
            PrimKind::Shuffle(ShuffleKind::Xor) => "__shfl_xor_sync".into(),
            PrimKind::Ballot => "__ballot_sync".into(),
            PrimKind::Any => "__any_sync".into(),
            PrimKind::All => "__all_sync".into(),
            PrimKind::Uni => "__uni_sync".into(),
            PrimKind::Reduce(op) => format!("__reduce_{}_sync", format!("{op:?}").to_lowercase()),
            PrimKind::MatchAny => "__match_any_sync".into(),
            PrimKind::MatchAll => "__match_all_sync".into(),
            PrimKind::SyncWarp => "__syncwarp".into(),
            PrimKind::Matrix(name) | PrimKind::Library(name) => name.clone(),
            PrimKind::ActiveMask => "__activemask".into(),
        }
    }

    /// A collective that the participation condition constrains.
    pub fn is_collective(&self) -> bool {
        !matches!(self, PrimKind::ActiveMask)
    }
}

/// A warp-level primitive executed by the current thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Primitive {
    pub kind: PrimKind,
    /// The member mask; `None` when the primitive implies the whole warp
    /// (`mma.sync.aligned`, wmma, HIP's mask-less shuffles).
    pub mask: Option<Expr>,
    pub args: Vec<Expr>,
    /// The `width` argument of a shuffle (sub-warp segments), when given.
    pub width: Option<Expr>,
    pub results: Vec<VarId>,
    /// The collective spans a whole block (CUB block algorithms); otherwise a warp.
    pub block_scope: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExitKind {
    Break,
    Continue,
    Return,
}

/// `loop { [cond_pre; if !cond break]; body; step; [cond_pre; if !cond break] }`:
/// the test is at the top when `test_first`, else at the bottom (`do … while`).
/// `continue` leaves `body` and runs `step`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub label: LabelId,
    pub test_first: bool,
    pub cond_pre: Block,
    pub cond: Expr,
    pub body: Block,
    pub step: Block,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Assign {
        var: VarId,
        value: Expr,
    },
    /// The variable takes an arbitrary value of its type, per thread.
    Havoc {
        var: VarId,
        reason: String,
    },
    /// The boolean variable takes either value, per thread: a choice the
    /// model makes (which of a copy site's instances to follow), not data,
    /// so an alarm that depends on it does not depend on the input.
    Choose {
        var: VarId,
    },
    Access(Access),
    Barrier(Barrier),
    Primitive(Primitive),
    If {
        cond: Expr,
        then_block: Block,
        else_block: Block,
    },
    Loop(Loop),
    /// A labelled block: the target of `return` from an inlined function or of
    /// `break` from a `switch`.
    Labeled {
        label: LabelId,
        body: Block,
    },
    Exit {
        label: LabelId,
        kind: ExitKind,
    },
    /// A fact that holds here (`static_assert`, `assert`; a trap: `false`).
    Assume(Expr),
    /// A fact the program promises holds here (`__builtin_assume`): an
    /// execution where it fails has undefined behaviour. Checked as
    /// [`StmtKind::Assume`], and kept for both threads of every witness
    /// (`AccessModel::promises`): a thread that would break one is no
    /// thread the program runs (one that stops at an `assume` is).
    Promise(Expr),
    /// `cp.async.commit_group`: the thread's asynchronous copies not yet in
    /// a group form its next one.
    AsyncCommit,
    /// `cp.async.wait_group n`: the thread's committed groups have
    /// completed but for the `n` most recent (`cp.async.wait_all` is a
    /// commit and a wait for 0).
    AsyncWait {
        groups_left: u32,
    },
    /// Code that was not modelled; a verdict that depends on it is `unknown`.
    Unknown {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    /// Where the statement's code is (inside an inlined helper, possibly).
    pub span: Span,
    /// The place in the kernel's own body that led here: the outermost call of
    /// the inlining chain, or `span` itself for code written in the kernel.
    pub site: Span,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block(pub Vec<Stmt>);

impl Block {
    /// Calls `f` on every statement, outer ones first, descending into blocks.
    pub fn walk(&self, f: &mut impl FnMut(&Stmt)) {
        for stmt in &self.0 {
            f(stmt);
            match &stmt.kind {
                StmtKind::If {
                    then_block, else_block, ..
                } => {
                    then_block.walk(f);
                    else_block.walk(f);
                }
                StmtKind::Loop(l) => {
                    l.cond_pre.walk(f);
                    l.body.walk(f);
                    l.step.walk(f);
                }
                StmtKind::Labeled { body, .. } => body.walk(f),
                _ => {}
            }
        }
    }
}

impl Stmt {
    /// Calls `f` on every expression the statement itself holds (not those of
    /// nested blocks).
    pub fn for_each_expr(&self, f: &mut impl FnMut(&Expr)) {
        match &self.kind {
            StmtKind::Assign { value, .. } => f(value),
            StmtKind::Access(a) => {
                f(&a.offset);
                f(&a.width);
                if let Some(v) = &a.value {
                    f(v);
                }
                for r in &a.ranges {
                    f(&r.lo);
                    f(&r.hi);
                }
            }
            StmtKind::Barrier(b) => {
                if let Some((p, _)) = &b.predicate {
                    f(p);
                }
            }
            StmtKind::Primitive(p) => {
                p.mask.iter().chain(p.args.iter()).chain(p.width.iter()).for_each(f);
            }
            StmtKind::If { cond, .. } => f(cond),
            StmtKind::Loop(l) => f(&l.cond),
            StmtKind::Assume(e) | StmtKind::Promise(e) => f(e),
            StmtKind::Havoc { .. }
            | StmtKind::Choose { .. }
            | StmtKind::Labeled { .. }
            | StmtKind::Exit { .. }
            | StmtKind::Unknown { .. }
            | StmtKind::AsyncCommit
            | StmtKind::AsyncWait { .. } => {}
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    pub name: String,
    pub ty: ScalarTy,
    pub span: Span,
    /// A loop that assigns it gives it the value of the iteration that set
    /// it (`passes::accesses`, `set_earlier`) rather than a fresh one: for
    /// the model's own state (an asynchronous copy's address and group),
    /// which must stay exact across a pipeline's iterations. Not for every
    /// variable: the longer terms cost the solver more than they decide.
    pub carried: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SymKind {
    /// A non-type template parameter left symbolic.
    TemplateParam,
    /// A name that no declaration in reach defines (its header was not found).
    Unresolved,
    /// `sizeof`/`alignof`/`offsetof` of a type whose layout is unknown.
    Layout,
    /// A `constexpr` local whose initializer was not computed.
    Constexpr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SymInfo {
    pub name: String,
    pub ty: ScalarTy,
    pub kind: SymKind,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OpInfo {
    pub name: String,
}

/// A scalar parameter of the kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    /// The type as written.
    pub ty_text: String,
    pub ty: ScalarTy,
}

/// Something the front end could not model, with where it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Unknown {
    pub reason: String,
    /// The construct itself (possibly inside an inlined helper).
    pub span: Span,
    /// The place in the kernel's own body that leads to it.
    pub site: Span,
}

/// One template argument of the instantiation, printed.
#[derive(Clone, Debug, PartialEq)]
pub struct TemplateArg {
    pub name: String,
    pub value: String,
}

impl TemplateArg {
    /// Whether the argument is symbolic (`<symbolic T>`): an instantiation
    /// with one covers the template's arguments not enumerated.
    pub fn is_symbolic(&self) -> bool {
        self.value.starts_with("<symbolic")
    }
}

/// A lowered kernel instantiation.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// The kernel's name in the definition.
    pub span: Span,
    pub template_args: Vec<TemplateArg>,
    pub params: Vec<Param>,
    pub vars: Vec<VarInfo>,
    pub objects: Vec<MemObject>,
    pub syms: Vec<SymInfo>,
    pub ops: Vec<OpInfo>,
    /// `__launch_bounds__(max_threads, min_blocks)`.
    pub launch_bounds: Option<Expr>,
    /// The label `return` leaves at kernel level.
    pub exit_label: LabelId,
    pub body: Block,
    pub unknowns: Vec<Unknown>,
    /// What the front end could not model about the order of memory
    /// accesses only (an asynchronous copy's landing): the memory
    /// condition's verdict is unknown for them, participation's is not.
    pub memory_unknowns: Vec<Unknown>,
    /// What the model assumes beyond the source (e.g. the layout of a type whose
    /// definition was not found): reported with every verdict.
    pub assumptions: Vec<Unknown>,
    /// The functions inlined into the kernel, by name, sorted.
    pub helpers: Vec<String>,
    /// The longest chain of calls from the kernel to an inlined function.
    pub call_depth: u32,
}

impl Kernel {
    /// A fresh variable of the kernel.
    pub fn new_var(&mut self, name: &str, ty: ScalarTy, span: Span) -> VarId {
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: name.to_string(),
            ty,
            span,
            carried: false,
        });
        id
    }

    /// Every execution reaches a trap (`assume false`) before anything else
    /// that matters: the instantiation is compiled out (`NO_DEVICE_CODE`).
    pub fn always_traps(&self) -> bool {
        self.body
            .0
            .iter()
            .any(|s| matches!(s.kind, StmtKind::Assume(Expr::Bool(false))))
            && !self.body.0.iter().any(|s| {
                matches!(
                    s.kind,
                    StmtKind::Access(_)
                        | StmtKind::Barrier(_)
                        | StmtKind::Primitive(_)
                        | StmtKind::Loop(_)
                        | StmtKind::If { .. }
                )
            })
    }

    /// The dimensions of the block and of the grid the kernel's code mentions
    /// (`threadIdx.d`/`blockDim.d`, and `blockIdx.d`/`gridDim.d`).
    pub fn used_dims(&self) -> ([bool; 3], [bool; 3]) {
        let (mut block, mut grid) = ([false; 3], [false; 3]);
        self.body.walk(&mut |s| {
            s.for_each_expr(&mut |e| {
                e.visit(&mut |x| match x {
                    Expr::Builtin(Builtin::ThreadIdx(d) | Builtin::BlockDim(d)) => block[*d as usize] = true,
                    Expr::Builtin(Builtin::BlockIdx(d) | Builtin::GridDim(d)) => grid[*d as usize] = true,
                    _ => {}
                })
            })
        });
        (block, grid)
    }

    /// Whether the kernel (directly or through inlined helpers) runs a warp collective.
    pub fn uses_warp_primitives(&self) -> bool {
        let mut found = false;
        self.body.walk(&mut |s| match &s.kind {
            StmtKind::Primitive(p) => found |= p.kind.is_collective() && !p.block_scope,
            StmtKind::Access(a) => found |= a.collective,
            _ => {}
        });
        found
    }
}
