use pgrx::prelude::*;

#[pg_test]
fn type_is_eight_bytes() {
    let n = Spi::get_one::<i32>("SELECT pg_column_size('0123456789abcdef'::simhash64)");
    assert_eq!(n, Ok(Some(8)));
}
