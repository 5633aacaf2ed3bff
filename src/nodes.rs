//! Small builders for planner expression nodes, shared by the parse-time
//! rewrite and the planner support function.

use pgrx::pg_sys::{self, Node, Oid};
use pgrx::PgList;

/// A deep copy, so that no two places in a tree share a node.
///
/// # Safety
/// `node` is a valid node tree in a live memory context.
pub unsafe fn copy(node: *mut Node) -> *mut Node {
    pg_sys::copyObjectImpl(node.cast()).cast()
}

/// An int4 constant.
///
/// # Safety
/// Allocates in the current memory context.
pub unsafe fn int4_const(v: i32) -> *mut Node {
    pg_sys::makeConst(
        pg_sys::INT4OID,
        -1,
        pg_sys::InvalidOid,
        4,
        pg_sys::Datum::from(v),
        false,
        true,
    )
    .cast()
}

/// A boolean constant.
///
/// # Safety
/// Allocates in the current memory context.
pub unsafe fn bool_const(v: bool) -> *mut Node {
    pg_sys::makeBoolConst(v, false)
}

/// The value of an int4 `Const`, `None` for a NULL or anything else.
///
/// # Safety
/// `node` is a valid node.
pub unsafe fn int4_value(node: *mut Node) -> Option<i32> {
    if !pgrx::is_a(node, pg_sys::NodeTag::T_Const) {
        return None;
    }
    let c = node.cast::<pg_sys::Const>();
    if (*c).constisnull || (*c).consttype != pg_sys::INT4OID {
        return None;
    }
    // An int4 Datum holds the value sign-extended; truncating gets it back.
    Some((*c).constvalue.value() as i32)
}

/// A list of nodes.
///
/// # Safety
/// Allocates in the current memory context.
pub unsafe fn list(items: &[*mut Node]) -> *mut pg_sys::List {
    let mut list = PgList::<Node>::new();
    for &item in items {
        list.push(item);
    }
    list.into_pg()
}

/// A plain function call `funcid(args...)` returning `rettype`.
///
/// # Safety
/// Allocates in the current memory context.
pub unsafe fn call(funcid: Oid, rettype: Oid, args: &[*mut Node]) -> *mut Node {
    pg_sys::makeFuncExpr(
        funcid,
        rettype,
        list(args),
        pg_sys::InvalidOid,
        pg_sys::InvalidOid,
        pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
    )
    .cast()
}

/// `left <opno> right` for an operator returning `rettype`.
///
/// # Safety
/// Allocates in the current memory context.
pub unsafe fn op(opno: Oid, rettype: Oid, left: *mut Node, right: *mut Node) -> *mut Node {
    pg_sys::make_opclause(
        opno,
        rettype,
        false,
        left.cast(),
        right.cast(),
        pg_sys::InvalidOid,
        pg_sys::InvalidOid,
    )
    .cast()
}

/// The OID of function `schema.name(argtypes)`, if it exists.
///
/// # Safety
/// Catalog lookups; call inside a transaction.
pub unsafe fn lookup_function(schema: Oid, name: &str, argtypes: &[Oid]) -> Option<Oid> {
    let schema_name = pg_sys::get_namespace_name(schema);
    if schema_name.is_null() {
        return None;
    }
    let name = std::ffi::CString::new(name).ok()?;
    let mut qualified = PgList::<pg_sys::String>::new();
    qualified.push(pg_sys::makeString(schema_name));
    qualified.push(pg_sys::makeString(pg_sys::pstrdup(name.as_ptr())));
    let oid = pg_sys::LookupFuncName(
        qualified.into_pg(),
        argtypes.len() as i32,
        argtypes.as_ptr(),
        true,
    );
    (oid != pg_sys::InvalidOid).then_some(oid)
}

/// The OIDs of an OID list.
///
/// # Safety
/// `list` is NULL or a valid OID list.
pub unsafe fn oid_list(list: *mut pg_sys::List) -> Vec<Oid> {
    if list.is_null() {
        return Vec::new();
    }
    (0..(*list).length)
        .map(|i| pg_sys::list_nth_oid(list, i))
        .collect()
}
