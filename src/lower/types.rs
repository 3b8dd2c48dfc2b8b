//! C++ types as lowering sees them, and template arguments.
//!
//! Types matter to the analyses through three things only: the byte layout of
//! memory accesses (`sizeof`, field offsets, pointer arithmetic), the choice of
//! overloads and specialisations, and the scalar type of IR expressions.

use std::rc::Rc;

use crate::ir::{FloatKind, ScalarTy, SymId};

use super::index::DeclId;

/// A built-in CUDA vector type (`float2`, `half2`, `uint3`, `dim3`…).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VecTy {
    pub name: &'static str,
    pub elem: Rc<Type>,
    pub n: u8,
    pub align: u8,
}

/// An instantiated class (or class template) — its identity for overloads and layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClassInst {
    pub decl: DeclId,
    pub name: String,
    pub args: Vec<TArg>,
}

/// A type from a library that is modelled by name (cooperative groups, wmma, CUB).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LibTy {
    pub name: String,
    pub args: Vec<TArg>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Void,
    Bool,
    Int {
        bits: u8,
        signed: bool,
    },
    Float(FloatKind),
    Ptr(Rc<Type>),
    /// Lvalue and rvalue references alike.
    Ref(Rc<Type>),
    Array(Rc<Type>, Option<u64>),
    Class(Rc<ClassInst>),
    Vector(Rc<VecTy>),
    Enum {
        decl: DeclId,
        name: String,
    },
    Lib(Rc<LibTy>),
    /// A lambda's closure type.
    Closure(u32),
    Nullptr,
    /// A type named but not modelled (a host-only type, a header that was not
    /// found). Its layout is unknown.
    Opaque(Rc<str>),
}

impl Type {
    pub fn int(bits: u8, signed: bool) -> Type {
        Type::Int { bits, signed }
    }

    pub fn ptr(to: Type) -> Type {
        Type::Ptr(Rc::new(to))
    }

    /// The type without references.
    pub fn strip_ref(&self) -> &Type {
        match self {
            Type::Ref(t) => t.strip_ref(),
            t => t,
        }
    }

    pub fn is_arith(&self) -> bool {
        matches!(self, Type::Bool | Type::Int { .. } | Type::Float(_) | Type::Enum { .. })
    }

    /// A pointer to a function (`void (*)(int)`).
    pub fn is_function_pointer(&self) -> bool {
        match self.strip_ref() {
            Type::Ptr(p) => matches!(&**p, Type::Opaque(n) if &**n == "function"),
            Type::Opaque(n) => &**n == "function",
            _ => false,
        }
    }

    pub fn is_pointer_like(&self) -> bool {
        matches!(self, Type::Ptr(_) | Type::Array(..) | Type::Nullptr)
    }

    /// The pointee of a pointer, or the element of an array.
    pub fn pointee(&self) -> Option<&Type> {
        match self.strip_ref() {
            Type::Ptr(t) => Some(t),
            Type::Array(t, _) => Some(t),
            _ => None,
        }
    }

    /// The IR scalar type of a value of this type.
    pub fn scalar(&self) -> ScalarTy {
        match self.strip_ref() {
            Type::Bool => ScalarTy::Bool,
            Type::Int { bits, signed } => ScalarTy::Int {
                bits: *bits,
                signed: *signed,
            },
            Type::Enum { .. } => ScalarTy::I32,
            Type::Float(k) => ScalarTy::Float(*k),
            Type::Ptr(_) | Type::Nullptr => ScalarTy::U64,
            _ => ScalarTy::Opaque,
        }
    }

    /// Size and alignment of types whose layout does not depend on declarations.
    pub fn builtin_layout(&self) -> Option<(u64, u64)> {
        Some(match self {
            Type::Bool => (1, 1),
            Type::Int { bits, .. } => ((*bits / 8) as u64, (*bits / 8) as u64),
            Type::Float(FloatKind::Half) | Type::Float(FloatKind::BFloat16) => (2, 2),
            Type::Float(FloatKind::F32) => (4, 4),
            Type::Float(FloatKind::F64) => (8, 8),
            Type::Ptr(_) | Type::Nullptr => (8, 8),
            Type::Enum { .. } => (4, 4),
            Type::Vector(v) => {
                let (elem, _) = v.elem.builtin_layout()?;
                (elem * v.n as u64, v.align as u64)
            }
            _ => return None,
        })
    }

    /// The C++ spelling, for reports and template argument lists.
    pub fn display(&self) -> String {
        match self {
            Type::Void => "void".into(),
            Type::Bool => "bool".into(),
            Type::Int { bits, signed } => match (bits, signed) {
                (8, true) => "int8_t".into(),
                (8, false) => "uint8_t".into(),
                (16, true) => "int16_t".into(),
                (16, false) => "uint16_t".into(),
                (32, true) => "int".into(),
                (32, false) => "unsigned int".into(),
                (64, true) => "int64_t".into(),
                (64, false) => "uint64_t".into(),
                (b, s) => format!("{}int{b}", if *s { "" } else { "u" }),
            },
            Type::Float(FloatKind::Half) => "half".into(),
            Type::Float(FloatKind::BFloat16) => "nv_bfloat16".into(),
            Type::Float(FloatKind::F32) => "float".into(),
            Type::Float(FloatKind::F64) => "double".into(),
            Type::Ptr(t) => format!("{} *", t.display()),
            Type::Ref(t) => format!("{} &", t.display()),
            Type::Array(..) => {
                // `T[2][3]`: the outer bound first, then the element's.
                let mut bounds = String::new();
                let mut t = self;
                while let Type::Array(inner, n) = t {
                    match n {
                        Some(n) => bounds.push_str(&format!("[{n}]")),
                        None => bounds.push_str("[]"),
                    }
                    t = inner;
                }
                format!("{}{bounds}", t.display())
            }
            Type::Class(c) => display_args(&c.name, &c.args),
            Type::Vector(v) => v.name.into(),
            Type::Enum { name, .. } => name.clone(),
            Type::Lib(l) => display_args(&l.name, &l.args),
            Type::Closure(i) => format!("lambda#{i}"),
            Type::Nullptr => "std::nullptr_t".into(),
            Type::Opaque(name) => name.to_string(),
        }
    }
}

fn display_args(name: &str, args: &[TArg]) -> String {
    if args.is_empty() {
        return name.to_string();
    }
    let args: Vec<String> = args.iter().map(TArg::display).collect();
    format!("{name}<{}>", args.join(", "))
}

/// A constant template argument value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CVal {
    Int(i128, ScalarTy),
    /// A symbolic value (a template parameter no instantiation fixed).
    Sym(SymId, ScalarTy),
}

/// A function named as a value: its overloads and explicit template arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FuncRef {
    pub ids: Vec<DeclId>,
    pub args: Vec<TArg>,
}

/// A template argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TArg {
    Type(Type),
    Value(CVal),
    Pack(Vec<TArg>),
    /// A function (a function pointer template argument).
    Func(Rc<FuncRef>),
    /// One of these functions, the same for the whole launch: a function
    /// pointer parameter of the lowering that covers a kernel's
    /// instantiations, when every one of them found names a function there.
    Choice(Rc<Vec<Rc<FuncRef>>>),
}

impl TArg {
    pub fn display(&self) -> String {
        match self {
            TArg::Type(t) => t.display(),
            TArg::Value(CVal::Int(v, ScalarTy::Bool)) => (if *v != 0 { "true" } else { "false" }).into(),
            TArg::Value(CVal::Int(v, _)) => v.to_string(),
            TArg::Value(CVal::Sym(s, _)) => format!("sym#{}", s.0),
            TArg::Func(f) => format!("fn#{}", f.ids.first().map_or(0, |d| d.0)),
            TArg::Choice(fs) => {
                let each: Vec<String> = fs.iter().map(|f| TArg::Func(f.clone()).display()).collect();
                format!("one of {}", each.join(" "))
            }
            TArg::Pack(items) => {
                let items: Vec<String> = items.iter().map(TArg::display).collect();
                items.join(", ")
            }
        }
    }
}

/// The built-in vector types of CUDA, by name.
pub fn vector_type(name: &str) -> Option<Type> {
    let (elem, n, align): (Type, u8, u8) = match name {
        "half2" | "__half2" => (Type::Float(FloatKind::Half), 2, 4),
        "nv_bfloat162" | "__nv_bfloat162" => (Type::Float(FloatKind::BFloat16), 2, 4),
        "float2" => (Type::Float(FloatKind::F32), 2, 8),
        "float3" => (Type::Float(FloatKind::F32), 3, 4),
        "float4" => (Type::Float(FloatKind::F32), 4, 16),
        "double2" => (Type::Float(FloatKind::F64), 2, 16),
        "int2" => (Type::int(32, true), 2, 8),
        "int3" => (Type::int(32, true), 3, 4),
        "int4" => (Type::int(32, true), 4, 16),
        "uint2" => (Type::int(32, false), 2, 8),
        "uint3" | "dim3" => (Type::int(32, false), 3, 4),
        "uint4" => (Type::int(32, false), 4, 16),
        "char2" => (Type::int(8, true), 2, 2),
        "char4" => (Type::int(8, true), 4, 4),
        "uchar2" => (Type::int(8, false), 2, 2),
        "uchar4" => (Type::int(8, false), 4, 4),
        "short2" => (Type::int(16, true), 2, 4),
        "short4" => (Type::int(16, true), 4, 8),
        "ushort2" => (Type::int(16, false), 2, 4),
        "ushort4" => (Type::int(16, false), 4, 8),
        "longlong2" => (Type::int(64, true), 2, 16),
        "ulonglong2" => (Type::int(64, false), 2, 16),
        _ => return None,
    };
    let name: &'static str = VECTOR_NAMES.iter().find(|n| **n == name).copied()?;
    Some(Type::Vector(Rc::new(VecTy {
        name,
        elem: Rc::new(elem),
        n,
        align,
    })))
}

const VECTOR_NAMES: [&str; 25] = [
    "half2",
    "__half2",
    "nv_bfloat162",
    "__nv_bfloat162",
    "float2",
    "float3",
    "float4",
    "double2",
    "int2",
    "int3",
    "int4",
    "uint2",
    "uint3",
    "dim3",
    "uint4",
    "char2",
    "char4",
    "uchar2",
    "uchar4",
    "short2",
    "short4",
    "ushort2",
    "ushort4",
    "longlong2",
    "ulonglong2",
];

/// Field names of vector types, in order.
pub const VECTOR_FIELDS: [&str; 4] = ["x", "y", "z", "w"];

/// Scalar type names of C++, CUDA and `<cstdint>`, by spelling.
pub fn named_scalar(name: &str) -> Option<Type> {
    Some(match name {
        "void" => Type::Void,
        "bool" => Type::Bool,
        "char" | "signed char" | "int8_t" | "char8_t" => Type::int(8, true),
        "unsigned char" | "uint8_t" | "uchar" | "std::byte" | "byte" => Type::int(8, false),
        "short" | "short int" | "signed short" | "int16_t" => Type::int(16, true),
        "unsigned short" | "unsigned short int" | "uint16_t" | "ushort" | "char16_t" => Type::int(16, false),
        "int" | "signed" | "signed int" | "int32_t" | "wchar_t" => Type::int(32, true),
        "unsigned" | "unsigned int" | "uint32_t" | "uint" | "char32_t" => Type::int(32, false),
        "long" | "long int" | "signed long" | "long long" | "long long int" | "signed long long" | "int64_t"
        | "ptrdiff_t" | "intptr_t" | "ssize_t" | "intmax_t" => Type::int(64, true),
        "unsigned long"
        | "unsigned long int"
        | "unsigned long long"
        | "unsigned long long int"
        | "uint64_t"
        | "size_t"
        | "uintptr_t"
        | "uintmax_t" => Type::int(64, false),
        "float" => Type::Float(FloatKind::F32),
        "double" | "long double" => Type::Float(FloatKind::F64),
        "half" | "__half" => Type::Float(FloatKind::Half),
        "nv_bfloat16" | "__nv_bfloat16" | "__bf16" | "bfloat16" => Type::Float(FloatKind::BFloat16),
        "nullptr_t" => Type::Nullptr,
        _ => return vector_type(name),
    })
}

/// The usual arithmetic conversions ([expr.arith.conv]) of two operand types.
pub fn common_type(a: &Type, b: &Type) -> Type {
    let rank = |t: &Type| -> i32 {
        match t {
            Type::Float(FloatKind::F64) => 100,
            Type::Float(FloatKind::F32) => 90,
            Type::Float(_) => 80,
            _ => 0,
        }
    };
    let (a, b) = (promote(a), promote(b));
    if rank(&a) > 0 || rank(&b) > 0 {
        return if rank(&a) >= rank(&b) { a } else { b };
    }
    match (&a, &b) {
        (Type::Int { bits: ba, signed: sa }, Type::Int { bits: bb, signed: sb }) => {
            if sa == sb {
                Type::int((*ba).max(*bb), *sa)
            } else {
                let (ub, sbits) = if *sa { (*bb, *ba) } else { (*ba, *bb) };
                if ub >= sbits {
                    Type::int(ub, false)
                } else {
                    Type::int(sbits, true)
                }
            }
        }
        _ => a,
    }
}

/// Integral promotion: types narrower than `int` (and bool, enums) become `int`.
pub fn promote(t: &Type) -> Type {
    match t.strip_ref() {
        Type::Bool | Type::Enum { .. } => Type::int(32, true),
        Type::Int { bits, .. } if *bits < 32 => Type::int(32, true),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_arithmetic_conversions() {
        let i = Type::int(32, true);
        let u = Type::int(32, false);
        let l = Type::int(64, true);
        assert_eq!(common_type(&i, &u), u);
        assert_eq!(common_type(&u, &l), l);
        assert_eq!(common_type(&Type::int(8, false), &Type::Bool), i);
        assert_eq!(
            common_type(&i, &Type::Float(FloatKind::F32)),
            Type::Float(FloatKind::F32)
        );
        assert_eq!(common_type(&Type::int(64, false), &l), Type::int(64, false));
    }

    #[test]
    fn vector_layouts() {
        assert_eq!(named_scalar("float4").unwrap().builtin_layout(), Some((16, 16)));
        assert_eq!(named_scalar("half2").unwrap().builtin_layout(), Some((4, 4)));
        assert_eq!(named_scalar("dim3").unwrap().builtin_layout(), Some((12, 4)));
        assert_eq!(named_scalar("size_t").unwrap(), Type::int(64, false));
    }
}
