//! Values and places of the lowering's symbolic evaluation of C++.
//!
//! A [`Value`] is what an expression evaluates to: an IR expression with its C++
//! type, a pointer (object + byte offset), a struct flattened into its fields,
//! or an aggregate that lives in memory. A [`Place`] is an lvalue: a scalar
//! variable, a pointer variable, a struct of places, or memory.

use crate::hash::HashMap;

use crate::ir::{Expr, ObjectId, VarId};

use super::index::ScopeId;
use super::types::{TArg, Type};

/// A pointer: which object it points into and the byte offset in it.
#[derive(Clone, Debug)]
pub struct Ptr {
    /// `None` for the null pointer (or a pointer to nothing modelled).
    pub object: Option<ObjectId>,
    /// Byte offset (a signed 64-bit expression).
    pub offset: Expr,
    pub pointee: Type,
}

#[derive(Clone, Debug)]
pub enum Value {
    Scalar(Expr, Type),
    Ptr(Ptr),
    /// A struct or vector by value, one value per data member, in order.
    Agg(Type, Vec<Value>),
    /// An aggregate whose contents live in memory (arrays, structs holding arrays).
    Mem(Ptr, Type),
    Closure(u32),
    /// A function (or overload set) used as a value.
    Func(std::rc::Rc<super::types::FuncRef>),
    /// A function pointer that holds one of these functions: it was
    /// assigned in branches the lowering could not decide (an `if
    /// constexpr` on a symbolic template argument).
    Choice(std::rc::Rc<Vec<std::rc::Rc<super::types::FuncRef>>>),
    /// A name that denotes a type where a value was parsed (template arguments).
    Type(Type),
    Void,
    /// A value the lowering could not model; the reason was recorded.
    Unknown(Type),
}

impl Value {
    pub fn ty(&self) -> Type {
        match self {
            Value::Scalar(_, t) | Value::Agg(t, _) | Value::Mem(_, t) | Value::Unknown(t) => t.clone(),
            Value::Ptr(p) => Type::ptr(p.pointee.clone()),
            Value::Closure(i) => Type::Closure(*i),
            Value::Func(_) | Value::Choice(_) => Type::Opaque("function".into()),
            Value::Type(t) => t.clone(),
            Value::Void => Type::Void,
        }
    }

    pub fn expr(&self) -> Option<&Expr> {
        match self {
            Value::Scalar(e, _) => Some(e),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i128> {
        self.expr().and_then(Expr::as_int)
    }
}

/// The buffers a pointer variable may point into. With more than one, a
/// selector variable records which (`p = c ? a : b` assigns it on each path).
#[derive(Clone, Debug, Default)]
pub struct PtrSlot {
    pub objects: Vec<Option<ObjectId>>,
    pub selector: Option<crate::ir::VarId>,
    /// The variable was read: a buffer added later would change what was read.
    pub used: bool,
    /// The object standing for "one of `objects`" once there are several.
    pub choice: Option<ObjectId>,
    /// The variable holding the pointer's offset (its writes are the pointer's).
    pub offset_var: Option<crate::ir::VarId>,
}

#[derive(Clone, Debug)]
pub enum Place {
    /// A scalar variable.
    Var(VarId, Type),
    /// A pointer variable: its offset variable and the slot of its base.
    PtrVar {
        offset: VarId,
        slot: usize,
        pointee: Type,
    },
    /// A struct or vector variable, one place per data member.
    Fields(Type, Vec<Place>),
    Mem(Ptr, Type),
    /// An rvalue used where a place is wanted (assigning to it has no effect).
    Temp(Value),
    /// A function-pointer variable: it holds a function known while lowering
    /// (function pointers in device code are compile-time choices).
    Cell(std::rc::Rc<std::cell::RefCell<CellState>>, Type),
    /// A name no declaration in reach defines (its header was not found): a
    /// symbolic constant when read, memory of an unknown global when indexed.
    Unresolved(std::rc::Rc<str>),
}

impl Place {
    pub fn ty(&self) -> Type {
        match self {
            Place::Var(_, t) | Place::Fields(t, _) | Place::Mem(_, t) => t.clone(),
            Place::PtrVar { pointee, .. } => Type::ptr(pointee.clone()),
            Place::Temp(v) => v.ty(),
            Place::Unresolved(n) => Type::Opaque(n.clone()),
            Place::Cell(_, t) => t.clone(),
        }
    }
}

/// The content of a function-pointer variable.
#[derive(Clone, Debug)]
pub enum CellState {
    Empty,
    Holds(Value),
    /// Assigned different functions: which one a call reaches is not known.
    Conflict,
}

/// What a name in a function body denotes.
#[derive(Clone, Debug)]
pub enum Binding {
    Place(Place),
    Value(Value),
    Type(Type),
    /// A function parameter pack: one binding per argument.
    Pack(Vec<Binding>),
    TypePack(Vec<Type>),
    Namespace(ScopeId),
}

/// Template parameters bound to arguments.
pub type TemplateEnv = HashMap<String, TArg>;
