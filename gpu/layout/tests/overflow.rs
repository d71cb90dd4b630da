//! Extreme values: sizes near 2^31, 2^32 and 2^63, strides up to i64::MIN/MAX, negative strides,
//! deep nesting, indices at i64::MIN/MAX. Every operation returns `Ok` or a typed error (no
//! panic: `cargo test` builds with overflow checks, so a wrapped operation would fail here), and
//! every `Ok` is compared against the same arithmetic in `i128`.

use oxtile_layout::ops::{self, Tiler};
use oxtile_layout::{IntTuple, Layout, LayoutError, StaticLayout, Swizzle, run_batch_line};
use proptest::prelude::*;

const I64: core::ops::RangeInclusive<i128> = i64::MIN as i128..=i64::MAX as i128;

fn fits(v: i128) -> bool {
    I64.contains(&v)
}

fn extreme_shape() -> impl Strategy<Value = i64> {
    prop_oneof![
        1i64..=8,
        prop::sample::select(vec![
            (1 << 31) - 1,
            1 << 31,
            (1 << 32) + 1,
            1 << 32,
            3_037_000_499, // floor(sqrt(2^63 - 1))
            3_037_000_500,
            1 << 62,
            i64::MAX,
            6_148_914_691_236_517_205, // (2^64 - 1) / 3
        ]),
        1i64..=i64::MAX,
    ]
}

fn extreme_stride() -> impl Strategy<Value = i64> {
    prop_oneof![
        -8i64..=8,
        prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX, 1 << 31, -(1 << 31), 1 << 62, -(1 << 62), 1 << 32]),
        any::<i64>(),
    ]
}

fn extreme_index() -> impl Strategy<Value = i64> {
    prop_oneof![
        -4i64..=64,
        prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1, 1 << 31, 1 << 32, -(1 << 32)]),
        any::<i64>(),
    ]
}

/// A layout of 1..=6 leaves with extreme entries, nested 0..=2 levels.
fn extreme_layout() -> impl Strategy<Value = Layout> {
    prop::collection::vec((extreme_shape(), extreme_stride()), 1..=6).prop_flat_map(|leaves| {
        let n = leaves.len();
        (Just(leaves), prop::collection::vec(1usize..=3, n), any::<bool>()).prop_map(|(leaves, cuts, nest)| {
            if leaves.len() == 1 && !nest {
                return Layout::int(leaves[0].0, leaves[0].1);
            }
            // Group consecutive leaves into top-level modes of `cuts[k]` leaves each.
            let mut modes = Vec::new();
            let mut i = 0;
            let mut k = 0;
            while i < leaves.len() {
                let end = (i + cuts[k]).min(leaves.len());
                let part = &leaves[i..end];
                modes.push(if part.len() == 1 && !nest {
                    Layout::int(part[0].0, part[0].1)
                } else {
                    Layout::from_modes(part.iter().map(|&(s, d)| Layout::int(s, d)))
                });
                i = end;
                k += 1;
            }
            Layout::from_modes(modes)
        })
    })
}

/// The leaves of `l` in `i128`.
fn leaves128(l: &Layout) -> Vec<(i128, i128)> {
    let (s, d) = l.leaves();
    s.into_iter().zip(d).map(|(s, d)| (s as i128, d as i128)).collect()
}

/// A product in `i128`, saturated (at 2^127 - 1, far outside `i64`) where even that overflows.
fn product128(values: impl IntoIterator<Item = i128>) -> i128 {
    values.into_iter().fold(1i128, |acc, v| acc.saturating_mul(v))
}

fn size128(l: &Layout) -> i128 {
    product128(leaves128(l).iter().map(|p| p.0))
}

/// The offset of a shape-congruent coordinate in `i128`, summed as `crd2idx` sums it (leaf terms, then each tuple's
/// modes in order), and whether any term or partial sum left `i64` (the checked code must then refuse).
fn nested128(crd: &IntTuple, stride: &IntTuple) -> (i128, bool) {
    match (crd, stride) {
        (IntTuple::Int(c), IntTuple::Int(d)) => {
            let v = *c as i128 * *d as i128;
            (v, !fits(v))
        }
        (IntTuple::Tuple(cs), IntTuple::Tuple(ds)) => cs.iter().zip(ds).fold((0, false), |(acc, out), (c, d)| {
            let (v, o) = nested128(c, d);
            let sum = acc + v;
            (sum, out || o || !fits(sum))
        }),
        _ => (0, false),
    }
}

/// An integer coordinate's offset in `i128`, as `crd2idx` computes it: each mode but the last takes the coordinate
/// modulo the mode's size (floor division, as pycute), the last the rest, each mode's offset summed within the mode
/// first; and whether a mode's size, a term or a partial sum left `i64` (the checked code must then refuse).
fn int_crd2idx128(crd: i128, shape: &IntTuple, stride: &IntTuple) -> (i128, bool) {
    match (shape, stride) {
        (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) if !ss.is_empty() => {
            let (mut crd, mut result, mut out) = (crd, 0i128, false);
            for (k, (s, d)) in ss.iter().zip(ds).enumerate() {
                let (part, size) = if k + 1 == ss.len() {
                    (crd, 1)
                } else {
                    let size = product128(s.flatten().iter().map(|&v| v as i128));
                    out |= !fits(size);
                    (crd.rem_euclid(size), size)
                };
                let (v, o) = int_crd2idx128(part, s, d);
                result = result.saturating_add(v);
                out |= o || !fits(result);
                crd = crd.div_euclid(size);
            }
            (result, out)
        }
        (IntTuple::Int(_), IntTuple::Int(d)) => {
            let v = crd.saturating_mul(*d as i128);
            (v, !fits(v))
        }
        _ => (0, false),
    }
}

/// `crd2idx(idx2crd(idx))` and `call(idx)` agree, or the one that refuses does so because a partial sum in its own
/// order leaves `i64`: `call` walks the leaves flat, `crd2idx` sums each nested tuple first, so near i64's limits
/// one may overflow where the other does not (e.g. `(1247078582801524499,(2,6475069835534006183)):(-5,
/// (-9223372036854775807,847549797680679180))` at i64::MAX: the flat walk's second partial sum is below i64::MIN).
fn same_offset_or_overflow(l: &Layout, crd: &IntTuple, idx: i64) -> Result<(), TestCaseError> {
    match (l.crd2idx(crd), l.call(idx)) {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
        (Ok(_), Err(e)) => prop_assert!(e == LayoutError::Overflow && call128(l, idx).1, "call: {e:?}"),
        (Err(e), Ok(_)) => {
            prop_assert!(e == LayoutError::Overflow && nested128(crd, l.stride()).1, "crd2idx: {e:?}")
        }
        (Err(_), Err(_)) => {}
    }
    Ok(())
}

#[test]
fn nested_and_flat_sums_may_overflow_at_different_points() {
    let l: Layout =
        "(1247078582801524499,(2,6475069835534006183)):(-5,(-9223372036854775807,847549797680679180))".parse().unwrap();
    let crd = l.idx2crd(i64::MAX).unwrap();
    assert_eq!(l.call(i64::MAX), Err(LayoutError::Overflow));
    assert!(l.crd2idx(&crd).is_ok());
    same_offset_or_overflow(&l, &crd, i64::MAX).unwrap();
    // And the other way: an integer coordinate's nested sum stays in range where the flat running sum leaves it
    // (MAX + 1 after two leaves), and the result is the exact one.
    let l: Layout = "(3,(2,1904066712859005952)):(9223372036854775807,(1,-5))".parse().unwrap();
    let (exact, flat_overflows) = call128(&l, 1 << 32);
    assert!(flat_overflows);
    assert_eq!(l.crd2idx(&IntTuple::Int(1 << 32)).map(|v| v as i128), Ok(exact));
    // And where the nested sum leaves i64 but the flat walk does not (a CI run's proptest case): the last mode's
    // own terms, −2^63 and −7·10^8, before the first modes' positive ones.
    let l: Layout = "(2147483648,6,(6,8)):(7,6,(-9223372036854775808,-7))".parse().unwrap();
    let crd = 7778086518127241108;
    assert!(!call128(&l, crd).1);
    assert!(l.call(crd).is_ok());
    assert_eq!(l.crd2idx(&IntTuple::Int(crd)), Err(LayoutError::Overflow));
    assert!(int_crd2idx128(crd as i128, l.shape(), l.stride()).1);
}

/// `L(idx)` in `i128` with pycute's splitting (floor division, the last leaf takes the rest),
/// and whether any intermediate value left `i64` (the checked code must then refuse).
fn call128(l: &Layout, idx: i64) -> (i128, bool) {
    let leaves = leaves128(l);
    let (mut idx, mut r, mut out) = (idx as i128, 0i128, false);
    for (k, &(s, d)) in leaves.iter().enumerate() {
        let coord = if k + 1 == leaves.len() { idx } else { idx.rem_euclid(s) };
        let term = coord.saturating_mul(d);
        r = r.saturating_add(term);
        out |= !fits(term) || !fits(r);
        idx = idx.div_euclid(s);
    }
    (r, out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn size_cosize_and_call_are_exact_or_overflow(l in extreme_layout(), idx in extreme_index()) {
        let size = size128(&l);
        match l.size() {
            Ok(v) => prop_assert_eq!(v as i128, size),
            Err(e) => {
                prop_assert_eq!(e, LayoutError::Overflow);
                prop_assert!(!fits(size));
            }
        }
        let (value, out) = call128(&l, idx);
        match l.call(idx) {
            Ok(v) => {
                prop_assert!(!out, "{} at {}: {} but an intermediate overflows", l, idx, v);
                prop_assert_eq!(v as i128, value);
            }
            Err(e) => {
                prop_assert_eq!(e, LayoutError::Overflow);
                prop_assert!(out, "{} at {}: refused, but {} fits", l, idx, value);
            }
        }
        if fits(size) {
            let (last, out) = call128(&l, (size - 1) as i64);
            match l.cosize() {
                Ok(v) => prop_assert_eq!(v as i128, last + 1),
                Err(e) => {
                    prop_assert_eq!(e, LayoutError::Overflow);
                    prop_assert!(out || !fits(last + 1));
                }
            }
        }
    }

    #[test]
    fn idx2crd_is_exact_or_overflow(l in extreme_layout(), idx in extreme_index()) {
        let leaves = leaves128(&l);
        let mut strides = Vec::new();
        let mut acc = 1i128;
        for &(s, _) in &leaves {
            strides.push(acc);
            acc = acc.saturating_mul(s);
        }
        match l.idx2crd(idx) {
            Ok(crd) => {
                prop_assert!(strides.iter().all(|&d| fits(d)));
                let got = crd.flatten();
                for (k, &(s, _)) in leaves.iter().enumerate() {
                    prop_assert_eq!(got[k] as i128, (idx as i128).div_euclid(strides[k]).rem_euclid(s));
                }
                prop_assert!(crd.congruent(l.shape()));
                // Inside the domain, the coordinate maps where the index does.
                if idx >= 0 && (idx as i128) < size128(&l) {
                    same_offset_or_overflow(&l, &crd, idx)?;
                }
            }
            Err(e) => {
                prop_assert_eq!(e, LayoutError::Overflow);
                prop_assert!(strides.iter().any(|&d| !fits(d)));
            }
        }
    }

    #[test]
    fn crd2idx_of_extreme_coordinates_is_exact_or_overflow(l in extreme_layout(), crd in extreme_index()) {
        // An integer coordinate is split mode by mode and each mode's terms summed before the modes around it
        // (`int_crd2idx128`), so the sums may leave i64 where the flat walk's do not and the other way round
        // ((3,(2,k)):(i64::MAX,(1,-5)) at 2^32: MAX + 1 flat, in range nested); refused exactly where the nested
        // order leaves i64, and where it does not, the same value as `call`, the same function.
        let (value, out) = int_crd2idx128(crd as i128, l.shape(), l.stride());
        match l.crd2idx(&IntTuple::Int(crd)) {
            Ok(v) => {
                prop_assert!(!out, "{} at {}: {} but a nested sum overflows", l, crd, v);
                prop_assert_eq!(v as i128, value);
                let (flat, flat_out) = call128(&l, crd);
                prop_assert!(flat_out || flat == value, "{} at {}: {} against call's {}", l, crd, v, flat);
            }
            Err(e) => {
                prop_assert_eq!(e, LayoutError::Overflow);
                prop_assert!(out, "{} at {}: refused, but {} fits", l, crd, value);
            }
        }
    }

    #[test]
    fn the_algebra_never_panics_and_its_results_hold(
        a in extreme_layout(),
        b in extreme_layout(),
        cotarget in extreme_index(),
        n in prop::sample::select(vec![1i64, 2, 3, 8, 1 << 31, i64::MAX]),
        probes in prop::collection::vec(extreme_index(), 4),
    ) {
        // Coalesce and filter keep the function wherever both sides are defined (probes taken into
        // the domain).
        if let Ok(c) = ops::coalesce(&a) {
            prop_assert_eq!(size128(&c), size128(&a));
            for &p in &probes {
                let i = (p as i128).rem_euclid(size128(&a).min(i64::MAX as i128)) as i64;
                if let (Ok(x), Ok(y)) = (a.call(i), c.call(i)) {
                    prop_assert_eq!(x, y, "coalesce {} = {} at {}", a, c, i);
                }
            }
        }
        let _ = ops::filter(&a);
        // Composition: R(i) == A(B(i)) on B's domain, where B lands inside A's domain (pycute
        // coalesces A first, so A is only A on its domain).
        if let Ok(r) = ops::composition(&a, &b) {
            for &p in &probes {
                let i = (p as i128).rem_euclid(size128(&b).min(i64::MAX as i128)) as i64;
                if let (Ok(bi), Ok(ri)) = (b.call(i), r.call(i))
                    && bi >= 0
                    && (bi as i128) < size128(&a)
                    && let Ok(abi) = a.call(bi)
                {
                    prop_assert_eq!(ri, abi, "{} o {} = {} at {}", a, b, r, i);
                }
            }
        }
        // Complement: shapes positive, and its offsets miss A's except at 0.
        if let Ok(c) = ops::complement(&a, cotarget) {
            prop_assert!(c.leaves().0.iter().all(|&s| s >= 1), "complement {} {} = {}", a, cotarget, c);
            for &p in &probes {
                for &q in &probes {
                    let i = (p as i128).rem_euclid(size128(&a).min(i64::MAX as i128)) as i64;
                    let j = (q as i128).rem_euclid(size128(&c).min(i64::MAX as i128)) as i64;
                    if let (Ok(x), Ok(y)) = (a.call(i), c.call(j)) {
                        prop_assert!(x != y || x == 0, "complement {} {} = {} meets A at {}", a, cotarget, c, x);
                    }
                }
            }
        }
        // Inverses.
        if let Ok(r) = ops::right_inverse(&a) {
            for i in 0..size128(&r).min(64) as i64 {
                if let Ok(ri) = r.call(i) {
                    prop_assert_eq!(a.call(ri), Ok(i), "right inverse {} of {}", r, a);
                }
            }
        }
        if let Ok(r) = ops::left_inverse(&a) {
            for i in 0..size128(&a).min(64) as i64 {
                if let Ok(ai) = a.call(i) {
                    prop_assert_eq!(r.call(ai), Ok(i), "left inverse {} of {}", r, a);
                }
            }
        }
        let tiler = Tiler::Layout(b.clone());
        for f in [ops::logical_divide, ops::zipped_divide, ops::tiled_divide, ops::flat_divide, ops::logical_product,
                  ops::zipped_product, ops::tiled_product, ops::flat_product, ops::composition_with] {
            let _ = f(&a, &tiler);
        }
        let _ = ops::blocked_product(&a, &b);
        let _ = ops::raked_product(&a, &b);
        let _ = ops::max_common_vector(&a, &b);
        let _ = ops::max_common_layout(&a, &b);
        let _ = ops::upcast(&a, n);
        let _ = ops::downcast(&a, n);
        let _ = ops::recast_layout(&a, n, 3);
        let _ = ops::recast_layout(&a, 3, n);
    }

    #[test]
    fn batch_lines_of_extreme_layouts_always_answer(a in extreme_layout(), b in extreme_layout(), x in extreme_index()) {
        for line in [
            format!("size {a}"), format!("cosize {a}"), format!("crd2idx {a} {x}"), format!("idx2crd {a} {x}"),
            format!("coalesce {a}"), format!("filter {a}"), format!("complement {a} {x}"), format!("right_inverse {a}"),
            format!("left_inverse {a}"), format!("composition {a} {b}"), format!("logical_divide {a} {b}"),
            format!("zipped_product {a} {b}"), format!("blocked_product {a} {b}"), format!("upcast {a} {x}"),
            format!("downcast {a} {x}"), format!("recast {a} {x} 8"), format!("swizzle Sw<3,4,3> {x}"),
        ] {
            let out = run_batch_line(&line);
            prop_assert!(out.as_deref().is_some_and(|o| !o.is_empty() && !o.contains('\n')), "{}: {:?}", line, out);
        }
    }

    #[test]
    fn static_layouts_keep_size_and_cosize_in_i64(leaves in prop::collection::vec((extreme_shape(), extreme_stride()), 1..=6)) {
        let (s, d): (Vec<i64>, Vec<i64>) = leaves.iter().copied().unzip();
        let size = product128(s.iter().map(|&x| x as i128));
        let cospan = s.iter().zip(&d).fold(1i128, |acc, (&s, &d)| acc.saturating_add((s as i128 - 1) * (d as i128).abs()));
        match StaticLayout::<8>::try_new(&s, &d) {
            Ok(l) => {
                prop_assert!(fits(size) && fits(cospan));
                prop_assert_eq!(l.size() as i128, size);
                let dynamic = Layout::from_static(&l);
                prop_assert_eq!(Ok(l.cosize()), dynamic.cosize());
                for i in [0, 1, l.size() / 2, l.size() - 1] {
                    prop_assert_eq!(Ok(l.call(i)), dynamic.call(i));
                }
                // The const split truncates instead of flooring, the same for indices >= 0.
                prop_assert_eq!(l.try_call(i64::MAX), dynamic.call(i64::MAX));
                let _ = l.coalesce();
                let _ = l.filter();
                let _ = l.right_inverse();
                let _ = l.left_inverse();
                let _ = l.complement(i64::MAX);
                let _ = l.composition(&l);
                let _ = l.logical_product(&l);
            }
            Err(e) => {
                prop_assert_eq!(e, LayoutError::Overflow);
                prop_assert!(!fits(size) || !fits(cospan));
            }
        }
    }

    #[test]
    fn swizzle_parameters_are_validated_without_wrapping(bits in any::<u32>(), base in any::<u32>(), shift in any::<i32>(),
                                                         small in (0u32..=8, 0u32..=8, -12i32..=12), o in any::<i64>()) {
        for (bits, base, shift) in [(bits, base, shift), small, (bits % 64, base % 64, shift % 64)] {
            let valid = shift.unsigned_abs() >= bits && bits as i128 + base as i128 + shift.unsigned_abs() as i128 <= 63;
            match Swizzle::checked(bits, base, shift) {
                Ok(sw) => {
                    prop_assert!(valid, "Sw<{},{},{}> accepted", bits, base, shift);
                    prop_assert_eq!(sw.apply(sw.apply(o)), o);
                    prop_assert_eq!(sw.apply_u32(o as u32), sw.apply(o as u32 as i64) as u32);
                    prop_assert_eq!(format!("{sw}").parse::<Swizzle>(), Ok(sw));
                }
                Err(e) => {
                    prop_assert!(!valid, "Sw<{},{},{}> refused", bits, base, shift);
                    prop_assert!(matches!(e, LayoutError::InvalidArgument(_)));
                    let text = format!("Sw<{bits},{base},{shift}>");
                    prop_assert!(text.parse::<Swizzle>().is_err());
                }
            }
        }
    }
}

fn batch(line: &str) -> String {
    run_batch_line(line).unwrap_or_else(|| panic!("no result for {line}"))
}

#[test]
fn the_fuzzed_inputs_are_typed_errors() {
    assert_eq!(batch("size (4294967296,4294967296):(1,1)"), "error: integer overflow");
    assert_eq!(batch("cosize (4294967296,4294967296):(1,1)"), "error: integer overflow");
    assert_eq!(batch("idx2crd (3,6148914691236517205,2):(1,1,1) -9223372036854775808"), "error: integer overflow");
    // Python's floor division: -2^63 % 3 == 1, (-2^63 // 3) % 5 == 2, (-2^63 // 15) % 2 == 1.
    assert_eq!(batch("idx2crd (3,5,2):(1,1,1) -9223372036854775808"), "(1,2,1)");
    assert_eq!(batch("cosize 2:9223372036854775807"), "error: integer overflow");
    assert_eq!(batch("complement 4:1 0"), "error: invalid argument: complement cotarget must be positive");
    assert_eq!(
        batch("complement 4:1 -9223372036854775808"),
        "error: invalid argument: complement cotarget must be positive"
    );
    assert_eq!(batch("complement (2,2):(1,4611686018427387904) 9223372036854775807"), "error: integer overflow");
    assert_eq!(batch("complement 4:1 9223372036854775807"), "2305843009213693952:4");
    assert!(batch("swizzle Sw<2147483648,0,-2147483648> 5").starts_with("error: argument 1: "));
    // -1 has every bit set: the three bits at 4..7 are flipped by those at 7..10.
    assert_eq!(batch("swizzle Sw<3,4,3> -1"), "-113");
    assert_eq!(batch("crd2idx (2,2):(9223372036854775807,1) (1,1)"), "error: integer overflow");
    assert_eq!(batch("right_inverse (4294967296,4294967296):(1,4294967296)"), "error: integer overflow");
    assert_eq!(batch("coalesce (4294967296,4294967296):(1,4294967296)"), "error: integer overflow");
    assert_eq!(batch("upcast 4:-9223372036854775808 2"), "error: integer overflow");
    assert_eq!(batch("shape_div 4:1"), "error: unknown operation 'shape_div'");
}

#[test]
fn exact_results_at_the_edge_of_i64() {
    let l: Layout = "(3037000499,3037000499):(1,3037000499)".parse().unwrap();
    let size = 3_037_000_499i64 * 3_037_000_499;
    assert_eq!(l.size(), Ok(size));
    assert_eq!(l.cosize(), Ok(size));
    assert_eq!(l.call(size - 1), Ok(size - 1));
    assert_eq!(ops::coalesce(&l).unwrap().to_string(), format!("{size}:1"));
    assert_eq!(ops::right_inverse(&l).unwrap().to_string(), format!("{size}:1"));
    let neg: Layout = "(2,4611686018427387904):(-4611686018427387904,-1)".parse().unwrap();
    assert_eq!(neg.size(), Err(LayoutError::Overflow));
    assert_eq!(neg.call(i64::MAX), Ok(i64::MIN + 1));
    // i64::MIN splits into coordinate 0 and -2^62 for the last mode: -2^62 * -1 fits.
    assert_eq!(neg.call(i64::MIN), Ok(1 << 62));
    let neg: Layout = "(2,3):(-4611686018427387904,-1)".parse().unwrap();
    assert_eq!(neg.cosize(), Ok(-(1 << 62) - 1));
    assert_eq!(Layout::int(2, i64::MIN).call(1), Ok(i64::MIN));
    assert_eq!(Layout::int(2, i64::MIN).cosize(), Ok(i64::MIN + 1));
    assert_eq!(Layout::int(3, i64::MIN).call(2), Err(LayoutError::Overflow));
}

#[test]
fn deep_nesting_is_evaluated_without_overflow() {
    let nested = |levels: usize| {
        let (mut shape, mut stride) = ("2".to_string(), "1".to_string());
        for _ in 0..levels {
            shape = format!("({shape},2)");
            stride = format!("({stride},1)");
        }
        format!("{shape}:{stride}")
    };
    // 62 leaves of 2: size 2^62, every leaf coordinate 1 at the last index.
    let l: Layout = nested(61).parse().unwrap();
    assert_eq!(l.depth(), 61);
    assert_eq!(l.size(), Ok(1 << 62));
    assert_eq!(l.call((1 << 62) - 1), Ok(62));
    assert_eq!(l.crd2idx(&l.idx2crd((1 << 62) - 1).unwrap()), Ok(62));
    assert_eq!(l.idx2crd(i64::MAX).unwrap().flatten(), vec![1; 62]);
    // 64 leaves (the parser's deepest nesting): size 2^64 and the last column-major stride 2^63.
    let text = nested(63);
    let l: Layout = text.parse().unwrap();
    assert_eq!(l.size(), Err(LayoutError::Overflow));
    assert_eq!(l.idx2crd(5), Err(LayoutError::Overflow));
    assert_eq!(l.crd2idx(&IntTuple::Int(5)), Err(LayoutError::Overflow));
    assert_eq!(l.call(5), Ok(2));
    assert_eq!(batch(&format!("size {text}")), "error: integer overflow");
    assert_eq!(batch(&format!("idx2crd {text} 5")), "error: integer overflow");
    assert_eq!(ops::coalesce(&l).unwrap().leaves().0, vec![2; 64]);
}

#[test]
fn many_modes_run_in_linear_time() {
    // 60k modes: complement and the inverses sort once instead of inserting quadratically.
    let n = 60_000;
    let shape = vec!["1"; n].join(",");
    let stride: Vec<String> = (0..n).rev().map(|i| i.to_string()).collect();
    let l: Layout = format!("({shape}):({})", stride.join(",")).parse().unwrap();
    let start = std::time::Instant::now();
    assert_eq!(ops::complement(&l, 7).unwrap().to_string(), "7:1");
    assert_eq!(ops::right_inverse(&l).unwrap().to_string(), "1:0");
    assert_eq!(ops::left_inverse(&l).unwrap().to_string(), "1:0");
    assert_eq!(ops::composition(&l, &Layout::int(1, 0)).unwrap().to_string(), "1:0");
    // A is coalesced once for all 60k modes of B, not once per mode.
    let divided = ops::logical_divide(&l, &Tiler::Layout(l.clone())).unwrap();
    assert_eq!(divided.size(), Ok(1));
    assert_eq!(divided.mode(0).unwrap().rank(), n);
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
    // Strides 1, 2, 4, ... as 62 modes of 2 among the size-1 ones: a full inverse.
    let mut shapes = vec![1i64; n];
    let mut strides: Vec<i64> = (0..n as i64).collect();
    for k in 0..62 {
        shapes[n - 1 - 900 * k] = 2;
        strides[n - 1 - 900 * k] = 1 << k;
    }
    let l = Layout::from_modes(shapes.iter().zip(&strides).map(|(&s, &d)| Layout::int(s, d)));
    let start = std::time::Instant::now();
    let r = ops::right_inverse(&l).unwrap();
    assert_eq!(r.size(), Ok(1 << 62));
    assert!(ops::complement(&l, 1).is_ok());
    // A of 60k modes and 2^62 elements (composition needs A's size to fit, and it does): L ∘ R
    // is the identity on R's domain.
    let identity = ops::composition(&l, &r).unwrap();
    assert_eq!(ops::coalesce(&identity).unwrap().to_string(), format!("{}:1", 1i64 << 62));
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}

#[test]
fn const_layouts_past_the_scratch_room_are_capacity_errors() {
    let shapes = [1i64; 70];
    let strides: Vec<i64> = (0..70).collect();
    let l = StaticLayout::<80>::try_new(&shapes, &strides).unwrap();
    let needed = Err(LayoutError::Capacity { capacity: oxtile_layout::static_layout::SCRATCH, needed: 71 });
    assert_eq!(l.complement(8), needed);
    assert_eq!(l.left_inverse(), needed);
}

#[test]
fn large_left_inverses_are_proven_or_refused() {
    // 2^33 elements whose right-inverse chain stops before L's second mode: pycute's formula
    // gives (5,4294967297):(8589934594,2), which sends L(1) = 5 to 37146582172, not 1.
    let l: Layout = "(2,4294967297):(28441945978,5)".parse().unwrap();
    assert_eq!(ops::left_inverse(&l), Err(LayoutError::NoLeftInverse));
    // A transpose of 2^40 elements: the chain takes in both modes, so it is exact without
    // evaluating any of them.
    let l: Layout = "(1048576,1048576):(1048576,1)".parse().unwrap();
    let r = ops::left_inverse(&l).unwrap();
    for i in [0, 1, 1048575, 1048576, 1 << 39, (1 << 40) - 1] {
        assert_eq!(r.call(l.call(i).unwrap()), Ok(i));
    }
    let s = StaticLayout::<4>::new(&[1048576, 1048576], &[1048576, 1]);
    assert_eq!(Layout::from_static(&s.left_inverse().unwrap()), r);
    let s = StaticLayout::<4>::new(&[2, 4294967297], &[28441945978, 5]);
    assert_eq!(s.left_inverse(), Err(LayoutError::NoLeftInverse));
}

#[test]
fn integer_tilers_are_positive() {
    // Found by the parse fuzzer: `-2^63` was read as the tile `-2^63:1`, a layout of negative size
    // that printed as `[-9223372036854775808:1,...]`, which no longer parsed.
    let err = "(-9223372036854775808,93722808972)".parse::<Tiler>().unwrap_err();
    assert_eq!(err.to_string(), "at column 2: expected a positive tile size, found '-'");
    assert!("0".parse::<Tiler>().is_err());
    assert!("[4,(2,0)]".parse::<Tiler>().is_err());
    assert_eq!("(4,(2,3))".parse::<Tiler>().unwrap().to_string(), "[4:1,[2:1,3:1]]");
    assert!(
        batch("composition (4,8):(8,1) -2")
            .starts_with("error: argument 2: at column 1: expected a positive tile size")
    );
}
