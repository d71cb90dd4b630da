//! Helpers shared by the integration tests: layout strategies and function comparison.
#![allow(dead_code)]

use oxtile_layout::{IntTuple, Layout};
use proptest::prelude::*;

/// All values `L(i)` for `i < size(L)`.
pub fn image(l: &Layout) -> Vec<i64> {
    (0..l.size().unwrap()).map(|i| l.call(i).unwrap()).collect()
}

/// check.py's comparison: same top-level rank, each top-level mode the same size and image,
/// and the same image overall.
pub fn same_function(expected: &Layout, actual: &Layout) -> Result<(), String> {
    if expected.rank() != actual.rank() {
        return Err(format!("rank {} vs {}", actual.rank(), expected.rank()));
    }
    for (i, (e, a)) in expected.modes().iter().zip(actual.modes()).enumerate() {
        if e.size().unwrap() != a.size().unwrap() || image(e) != image(&a) {
            return Err(format!("mode {i} differs: {a} vs {e}"));
        }
    }
    if image(expected) != image(actual) {
        return Err("whole layout maps differently".into());
    }
    Ok(())
}

pub fn is_injective(l: &Layout) -> bool {
    let mut img = image(l);
    img.sort_unstable();
    img.windows(2).all(|w| w[0] != w[1])
}

fn rebuild(shape: &IntTuple, leaves: &[i64]) -> IntTuple {
    let mut it = leaves.iter().copied();
    shape.map_leaves(&mut |_| it.next().unwrap())
}

/// A shape: rank 1..=4 (or a bare integer), depth <= 3, leaves 1..=8.
pub fn shape_strategy() -> impl Strategy<Value = IntTuple> {
    let leaf = (1i64..=8).prop_map(IntTuple::Int);
    let nested = leaf.prop_recursive(2, 24, 3, |inner| prop::collection::vec(inner, 1..=3).prop_map(IntTuple::Tuple));
    prop_oneof![
        1 => (1i64..=8).prop_map(IntTuple::Int),
        5 => prop::collection::vec(nested, 1..=4).prop_map(IntTuple::Tuple),
    ]
    .prop_filter("size <= 4096", |s| s.product().is_ok_and(|p| p <= 4096))
}

#[derive(Debug, Clone, Copy)]
pub enum StrideKind {
    /// Column-major compact.
    Compact,
    /// A permutation of compact strides, each gap scaled by 1..=3: injective and complementable.
    Scaled,
    /// Arbitrary strides in 0..=64.
    Random,
    /// Compact with some strides zeroed.
    Zeros,
}

pub fn layout_with(kind: StrideKind) -> impl Strategy<Value = Layout> {
    shape_strategy().prop_flat_map(move |shape| {
        let leaves = shape.flatten();
        let n = leaves.len();
        (
            Just(shape),
            Just(leaves),
            Just(kind),
            prop::collection::vec(0i64..=64, n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(1i64..=3, n + 1),
            prop::collection::vec(prop::bool::weighted(0.3), n),
        )
            .prop_map(move |(shape, leaves, kind, random, order, scale, zero)| {
                let strides: Vec<i64> = match kind {
                    StrideKind::Compact => prefix(&leaves),
                    StrideKind::Random => random,
                    StrideKind::Zeros => {
                        prefix(&leaves).into_iter().zip(zero).map(|(d, z)| if z { 0 } else { d }).collect()
                    }
                    StrideKind::Scaled => {
                        let mut strides = vec![0; leaves.len()];
                        let mut acc = scale[n];
                        for (&i, &k) in order.iter().zip(&scale) {
                            strides[i] = acc;
                            acc *= leaves[i] * k;
                        }
                        strides
                    }
                };
                let stride = rebuild(&shape, &strides);
                Layout::new(shape, stride).unwrap()
            })
    })
}

fn prefix(leaves: &[i64]) -> Vec<i64> {
    let mut acc = 1;
    leaves
        .iter()
        .map(|&s| {
            let d = acc;
            acc *= s;
            d
        })
        .collect()
}

/// Any layout drawn the way the test vectors are.
pub fn any_layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        layout_with(StrideKind::Compact),
        layout_with(StrideKind::Scaled),
        layout_with(StrideKind::Random),
        layout_with(StrideKind::Zeros),
    ]
}

pub fn parse(text: &str) -> Layout {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}
