//! Properties of the algebra, from the definitions.

mod common;

use common::{StrideKind, any_layout, image, is_injective, layout_with, same_function};
use oxtile_layout::ops::{self, Tiler};
use oxtile_layout::{IntTuple, Layout, StaticLayout, Swizzle};
use proptest::prelude::*;

fn small_tiler_for(a: &Layout) -> impl Strategy<Value = Layout> + use<> {
    let max = a.size().unwrap();
    any_layout().prop_filter("fits A", move |b| b.size().unwrap() <= max)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn coalesce_preserves_the_function(l in any_layout()) {
        let c = ops::coalesce(&l).unwrap();
        prop_assert_eq!(c.size().unwrap(), l.size().unwrap());
        prop_assert_eq!(image(&c), image(&l));
        prop_assert!(c.depth() <= 1);
    }

    #[test]
    fn coalesce_by_mode_keeps_each_mode(l in any_layout()) {
        let profile = IntTuple::Tuple(vec![IntTuple::Int(1); l.rank()]);
        let c = ops::coalesce_by(&l, &profile).unwrap();
        prop_assert_eq!(c.rank(), l.rank());
        for (m, cm) in l.modes().iter().zip(c.modes()) {
            prop_assert_eq!(image(m), image(&cm));
        }
    }

    #[test]
    fn filter_keeps_the_image_set(l in any_layout()) {
        let f = ops::filter(&l).unwrap();
        let mut a = image(&l);
        let mut b = image(&f);
        a.sort_unstable();
        a.dedup();
        b.sort_unstable();
        b.dedup();
        prop_assert_eq!(a, b);
        let (s, d) = f.leaves();
        prop_assert!(s.iter().zip(&d).all(|(&s, &d)| s == 1 && d == 0 || s > 1 && d != 0));
    }

    #[test]
    fn composition_is_function_composition((a, b) in any_layout().prop_flat_map(|a| (Just(a.clone()), small_tiler_for(&a)))) {
        prop_assume!(b.cosize().unwrap() <= a.size().unwrap());
        // Composition is by mode of B (CuTe's left-distributivity, as pycute computes it): where B's modes overlap,
        // their offsets' sum can carry across a mode of A, where A is not additive, and R(c) = Σ A∘B_k(c_k) is not
        // A(B(c)) (A = (6,3,7,7):(24,12,3,37), B = (4,6):(1,1): R(15) = 3·24 + 3·24, A(B(15)) = A(6) = 12). The
        // function-composition property is that of injective B.
        prop_assume!(is_injective(&b));
        if let Ok(r) = ops::composition(&a, &b) {
            prop_assert_eq!(r.size().unwrap(), b.size().unwrap());
            if !b.shape().is_int() {
                prop_assert_eq!(r.rank(), b.rank());
            }
            for i in 0..b.size().unwrap() {
                prop_assert_eq!(r.call(i).unwrap(), a.call(b.call(i).unwrap()).unwrap(), "at {}: {} o {} = {}", i, a, b, r);
            }
        }
    }

    #[test]
    fn complement_is_disjoint_ordered_and_covers(a in layout_with(StrideKind::Scaled), extra in 1i64..=4) {
        let cotarget = a.cosize().unwrap() * extra;
        let r = ops::complement(&a, cotarget).unwrap();
        let (_, strides) = ops::coalesce(&r).unwrap().leaves();
        prop_assert!(strides.windows(2).all(|w| w[0] < w[1]), "not ordered: {}", r);
        let joint = Layout::from_modes([a.clone(), r.clone()]);
        prop_assume!(joint.size().unwrap() <= 1 << 15);
        prop_assert!(is_injective(&joint), "overlaps: {} and {}", a, r);
        prop_assert!(joint.size().unwrap() >= cotarget);
        // Compact: the pair is a bijection onto [0, size).
        let mut img = image(&joint);
        img.sort_unstable();
        prop_assert!(img.iter().enumerate().all(|(i, &v)| v == i as i64));
    }

    #[test]
    fn complement_is_disjoint_whenever_defined(l in layout_with(StrideKind::Random)) {
        if let Ok(r) = ops::complement(&l, l.cosize().unwrap()) {
            prop_assert!(r.size().unwrap() >= 1);
            let mut a = image(&l);
            a.sort_unstable();
            for j in 1..r.size().unwrap() {
                prop_assert!(a.binary_search(&r.call(j).unwrap()).is_err(), "{} meets {}", l, r);
            }
        }
    }

    #[test]
    fn right_inverse_is_a_right_inverse(l in any_layout()) {
        let r = ops::right_inverse(&l).unwrap();
        for i in 0..r.size().unwrap() {
            prop_assert_eq!(l.call(r.call(i).unwrap()).unwrap(), i, "{} with {}", l, r);
        }
    }

    #[test]
    fn right_inverse_of_a_bijection_is_full(l in layout_with(StrideKind::Compact)) {
        prop_assert_eq!(ops::right_inverse(&l).unwrap().size().unwrap(), l.size().unwrap());
    }

    #[test]
    fn left_inverse_is_a_left_inverse(l in prop_oneof![layout_with(StrideKind::Scaled), layout_with(StrideKind::Random)]) {
        match ops::left_inverse(&l) {
            Ok(r) => {
                for i in 0..l.size().unwrap() {
                    prop_assert_eq!(r.call(l.call(i).unwrap()).unwrap(), i, "{} with {}", l, r);
                }
            }
            Err(_) => prop_assert!(!is_injective(&l) || !matches!(l.leaves(), (s, _) if s.len() < 2)),
        }
    }

    #[test]
    fn left_inverse_exists_for_scaled_layouts(l in layout_with(StrideKind::Scaled)) {
        prop_assert!(ops::left_inverse(&l).is_ok(), "{}", l);
    }

    #[test]
    fn divides_split_into_tile_and_rest((a, b) in any_layout().prop_flat_map(|a| (Just(a.clone()), small_tiler_for(&a)))) {
        prop_assume!(is_injective(&b));
        let Ok(rest) = ops::complement(&b, a.size().unwrap()) else { return Ok(()) };
        let tiler = Layout::from_modes([b.clone(), rest.clone()]);
        prop_assume!(tiler.cosize().unwrap() <= a.size().unwrap());
        let t = Tiler::Layout(b.clone());
        let Ok(logical) = ops::logical_divide(&a, &t) else { return Ok(()) };
        prop_assert_eq!(logical.rank(), 2);
        prop_assert_eq!(logical.mode(0).unwrap().size().unwrap(), b.size().unwrap());
        prop_assert_eq!(logical.size().unwrap(), b.size().unwrap() * rest.size().unwrap());
        for i in 0..logical.size().unwrap() {
            prop_assert_eq!(logical.call(i).unwrap(), a.call(tiler.call(i).unwrap()).unwrap());
        }
        let zipped = ops::zipped_divide(&a, &t).unwrap();
        prop_assert!(same_function(&logical, &zipped).is_ok());
        let tiled = ops::tiled_divide(&a, &t).unwrap();
        prop_assert_eq!(tiled.rank(), 1 + logical.mode(1).unwrap().rank());
        prop_assert_eq!(image(&tiled), image(&logical));
        let flat = ops::flat_divide(&a, &t).unwrap();
        prop_assert_eq!(image(&flat), image(&logical));
    }

    #[test]
    fn products_repeat_a_over_b(a in layout_with(StrideKind::Scaled), b in layout_with(StrideKind::Scaled)) {
        prop_assume!(a.size().unwrap() * b.size().unwrap() <= 1 << 14);
        let t = Tiler::Layout(b.clone());
        let Ok(p) = ops::logical_product(&a, &t) else { return Ok(()) };
        prop_assert_eq!(p.rank(), 2);
        prop_assert_eq!(image(&p.mode(0).unwrap()), image(&a));
        prop_assert_eq!(p.mode(1).unwrap().size().unwrap(), b.size().unwrap());
        prop_assert!(is_injective(&p), "{}", p);
        let zipped = ops::zipped_product(&a, &t).unwrap();
        prop_assert!(same_function(&p, &zipped).is_ok());
        let tiled = ops::tiled_product(&a, &t).unwrap();
        prop_assert_eq!(image(&tiled), image(&p));
        let mut whole = image(&p);
        whole.sort_unstable();
        for q in [ops::blocked_product(&a, &b), ops::raked_product(&a, &b)].into_iter().flatten() {
            prop_assert_eq!(q.size().unwrap(), a.size().unwrap() * b.size().unwrap());
            prop_assert_eq!(q.rank(), a.rank().max(b.rank()));
            let mut img = image(&q);
            img.sort_unstable();
            prop_assert_eq!(&img, &whole);
        }
    }

    #[test]
    fn display_and_parse_round_trip(l in any_layout()) {
        let text = l.to_string();
        prop_assert!(!text.contains(' '));
        let back: Layout = text.parse().unwrap();
        prop_assert_eq!(back, l);
    }

}

proptest! {
    // Each case compares a dozen operations over the whole domain.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn static_and_dynamic_forms_agree(l in any_layout(), b in any_layout(), cotarget in 1i64..=512) {
        let s: StaticLayout<16> = l.to_static().unwrap();
        prop_assert_eq!(s.size(), l.size().unwrap());
        prop_assert_eq!(s.cosize(), l.cosize().unwrap());
        prop_assert_eq!(s.rank(), l.rank());
        for i in 0..l.size().unwrap() {
            prop_assert_eq!(s.call(i), l.call(i).unwrap());
            prop_assert_eq!(s.index_u32(i as u32) as i64, l.call(i).unwrap());
        }
        let crd: Vec<i64> = (0..l.rank()).map(|k| l.mode(k).unwrap().size().unwrap() - 1).collect();
        let tuple = IntTuple::Tuple(crd.iter().copied().map(IntTuple::Int).collect());
        if l.rank() > 1 {
            prop_assert_eq!(s.crd2idx(&crd), l.crd2idx(&tuple).unwrap());
        }
        let back = Layout::from_static(&s);
        prop_assert_eq!(image(&back), image(&l));
        prop_assert!(same_function(&ops::coalesce(&l).unwrap(), &Layout::from_static(&s.coalesce())).is_ok());
        prop_assert!(same_function(&ops::filter(&l).unwrap(), &Layout::from_static(&s.filter())).is_ok());
        prop_assert!(same_function(&ops::right_inverse(&l).unwrap(), &Layout::from_static(&s.right_inverse())).is_ok());
        match (ops::complement(&l, cotarget), s.complement(cotarget)) {
            (Ok(d), Ok(st)) => prop_assert!(same_function(&d, &Layout::from_static(&st)).is_ok()),
            (Err(_), Err(_)) => {}
            (d, st) => prop_assert!(false, "complement disagrees: {:?} vs {:?}", d, st),
        }
        match (ops::left_inverse(&l), s.left_inverse()) {
            (Ok(d), Ok(st)) => prop_assert!(same_function(&d, &Layout::from_static(&st)).is_ok()),
            (Err(_), Err(_)) => {}
            (d, st) => prop_assert!(false, "left_inverse disagrees: {:?} vs {:?}", d, st),
        }
        let bs: StaticLayout<16> = b.to_static().unwrap();
        let b_single = b.leaves().0.len() == 1;
        let b_int = if b_single { let (s, d) = b.leaves(); Layout::int(s[0], d[0]) } else { b.clone() };
        match (ops::composition(&l, &b_int), l_static_compose(&s, &bs)) {
            (Ok(d), Ok(st)) => {
                prop_assert_eq!(image(&d), image(&st));
                if !b_single {
                    prop_assert!(same_function(&d, &st).is_ok(), "{} vs {}", d, st);
                }
            }
            (Err(_), Err(_)) => {}
            (d, st) => prop_assert!(false, "composition disagrees: {:?} vs {:?}", d, st),
        }
        let t = Tiler::Layout(b_int.clone());
        match (ops::logical_divide(&l, &t), s.logical_divide(&bs)) {
            (Ok(d), Ok(st)) => prop_assert!(same_function(&d, &Layout::from_static(&st)).is_ok()),
            (Err(_), Err(_)) => {}
            (d, st) => prop_assert!(false, "logical_divide disagrees: {:?} vs {:?}", d, st),
        }
        match (ops::logical_product(&l, &t), s.logical_product(&bs)) {
            (Ok(d), Ok(st)) => prop_assert!(same_function(&d, &Layout::from_static(&st)).is_ok()),
            (Err(_), Err(_)) => {}
            (_, Err(oxtile_layout::LayoutError::Capacity { .. })) => {}
            (d, st) => prop_assert!(false, "logical_product disagrees: {:?} vs {:?}", d, st),
        }
    }

}

proptest! {
    #[test]
    fn static_zipped_divide_agrees_by_mode(a in layout_with(StrideKind::Compact), k in 1i64..=4) {
        let first = a.mode(0).unwrap().size().unwrap();
        prop_assume!(first % k == 0);
        let tile = Layout::int(k, 1);
        let tiler = Tiler::Modes(vec![Tiler::Layout(tile.clone())]);
        let d = ops::zipped_divide(&a, &tiler).unwrap();
        let s: StaticLayout<16> = a.to_static().unwrap();
        let st = s.zipped_divide(&[StaticLayout::<16>::new(&[k], &[1])]).unwrap();
        prop_assert!(same_function(&d, &Layout::from_static(&st)).is_ok(), "{} vs {}", d, Layout::from_static(&st));
    }

    #[test]
    fn swizzle_is_an_involution(bits in 0u32..=3, base in 0u32..=4, shift in 3i32..=5, neg in any::<bool>(), o in 0i64..4096) {
        let s = Swizzle::new(bits, base, if neg { -shift } else { shift });
        prop_assert_eq!(s.apply(s.apply(o)), o);
        prop_assert_eq!(s.apply_u32(o as u32) as i64, s.apply(o));
    }

    #[test]
    fn recast_round_trips(l in layout_with(StrideKind::Compact), n in prop::sample::select(vec![1i64, 2, 4])) {
        let narrow = ops::downcast(&l, n).unwrap();
        prop_assert_eq!(narrow.size().unwrap(), l.size().unwrap() * n);
        let back = ops::upcast(&narrow, n).unwrap();
        prop_assert_eq!(image(&back), image(&ops::coalesce(&l).unwrap()));
    }
}

fn l_static_compose(a: &StaticLayout<16>, b: &StaticLayout<16>) -> Result<Layout, oxtile_layout::LayoutError> {
    a.composition(b).map(|r| Layout::from_static(&r))
}
