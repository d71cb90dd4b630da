//! Worked examples (CuTe documentation facts), edge cases, errors and notation.

mod common;

use common::{image, parse, same_function};
use oxtile_layout::ops::{self, Tiler};
use oxtile_layout::{Coord, IntTuple, Layout, LayoutError, ParseError, Swizzle};

fn tiler(text: &str) -> Tiler {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn assert_same(expected: &str, actual: &Layout) {
    if let Err(why) = same_function(&parse(expected), actual) {
        panic!("expected {expected}, got {actual}: {why}");
    }
}

#[test]
fn display_uses_cute_notation() {
    assert_eq!(parse("(2,(3,4)):(1,(2,6))").to_string(), "(2,(3,4)):(1,(2,6))");
    assert_eq!(parse("(4):(1)").to_string(), "(4):(1)");
    assert_eq!(parse("(4,):(1,)").to_string(), "(4):(1)");
    assert_eq!(parse("4:1").to_string(), "4:1");
    assert_eq!(parse(" ( 2 , 3 ) : ( 1 , 2 ) ").to_string(), "(2,3):(1,2)");
    assert_eq!(Layout::col_major(IntTuple::from([2, 3, 4])).unwrap().to_string(), "(2,3,4):(1,2,6)");
    assert_eq!("(1,(_,2))".parse::<Coord>().unwrap().to_string(), "(1,(_,2))");
    assert_eq!(format!("{:?}", parse("((2,3)):((1,2))")), "((2,3)):((1,2))");
}

#[test]
fn rank_depth_size_cosize() {
    let l = parse("(2,(3,(4,5))):(1,(2,(6,24)))");
    assert_eq!((l.rank(), l.depth(), l.size().unwrap(), l.cosize().unwrap()), (2, 3, 120, 120));
    let rank1 = parse("(4):(1)");
    assert_eq!((rank1.rank(), rank1.depth(), rank1.size().unwrap()), (1, 1, 4));
    let int = parse("4:3");
    assert_eq!((int.rank(), int.depth(), int.cosize().unwrap()), (1, 0, 10));
    assert_eq!(parse("(4,3):(0,0)").cosize().unwrap(), 1);
}

#[test]
fn coordinates_hierarchical_and_one_dimensional() {
    let l = parse("(3,(2,3)):(3,(12,1))");
    let crd: IntTuple = "(1,(1,2))".parse().unwrap();
    assert_eq!(l.crd2idx(&crd).unwrap(), 17);
    assert_eq!(l.crd2idx(&"(1,5)".parse().unwrap()).unwrap(), 17);
    assert_eq!(l.crd2idx(&IntTuple::Int(16)).unwrap(), 17);
    assert_eq!(l.idx2crd(16).unwrap().to_string(), "(1,(1,2))");
    assert_eq!(l.crd2idx(&"(1,(1,2,0))".parse().unwrap()), Err(LayoutError::NotCongruent));
    for i in 0..l.size().unwrap() {
        assert_eq!(l.crd2idx(&l.idx2crd(i).unwrap()).unwrap(), l.call(i).unwrap());
    }
}

#[test]
fn slicing_with_wildcards() {
    let l = parse("(3,(2,3)):(3,(12,1))");
    let (sub, offset) = l.slice_and_offset(&"(_,(1,_))".parse().unwrap()).unwrap();
    assert_eq!(sub.to_string(), "(3,3):(3,1)");
    assert_eq!(offset, 12);
    assert_eq!(l.slice(&"(2,_)".parse().unwrap()).unwrap().to_string(), "((2,3)):((12,1))");
    assert_eq!(l.slice(&Coord::Wildcard).unwrap().to_string(), "((3,(2,3))):((3,(12,1)))");
}

#[test]
fn coalesce_and_filter_edge_cases() {
    assert_eq!(ops::coalesce(&parse("(1,1):(0,5)")).unwrap().to_string(), "1:0");
    assert_eq!(ops::coalesce(&parse("(2,(1,6)):(1,(6,2))")).unwrap().to_string(), "12:1");
    assert_eq!(ops::coalesce(&parse("(4):(1)")).unwrap().to_string(), "4:1");
    assert_eq!(ops::filter(&parse("4:0")).unwrap().to_string(), "1:0");
    assert_eq!(ops::filter(&parse("(2,4,3):(0,2,8)")).unwrap().to_string(), "12:2");
    let by = ops::coalesce_by(&parse("((2,3),(4,5)):((1,2),(6,24))"), &"(1,1)".parse().unwrap()).unwrap();
    assert_eq!(by.to_string(), "(6,20):(1,6)");
    assert_eq!(
        ops::coalesce_by(&parse("4:1"), &"(1,1)".parse().unwrap()),
        Err(LayoutError::RankMismatch { layout_rank: 1, tiler_rank: 2 })
    );
}

#[test]
fn composition_examples() {
    let r = ops::composition(&parse("(6,2):(8,2)"), &parse("(4,3):(3,1)")).unwrap();
    assert_same("((2,2),3):((24,2),8)", &r);
    assert_eq!(ops::composition(&parse("(4,2):(1,4)"), &parse("4:0")).unwrap().to_string(), "4:0");
    let by_mode = ops::composition_with(&parse("(12,(4,8)):(59,(13,1))"), &tiler("[3:4,8:2]")).unwrap();
    assert_same("(3,(2,4)):(236,(26,1))", &by_mode);
    assert_eq!(ops::composition_with(&parse("(4,2):(1,4)"), &Tiler::Skip).unwrap(), parse("(4,2):(1,4)"));
}

#[test]
fn composition_with_a_negative_stride_inside_a_mode_of_a_is_a_after_b() {
    // B's second mode steps down by one inside A's first mode: (0, −1) there, so B(3) = 1 − 1 = 0 and R(3) must be
    // A(0) = 0 (proptest found the floor-division form's (2):(0) for that mode, R(3) = 1).
    let a = parse("(2,83413335885383726):(1,2606382854464942434)");
    let b = parse("((2),(2)):((1),(-1))");
    let r = ops::composition(&a, &b).unwrap();
    assert_same("((2),(2)):((1),(-1))", &r);
    assert_eq!((r.call(3), a.call(b.call(3).unwrap())), (Ok(0), Ok(0)));
    // Past a mode of A, as before: −4 over a mode of 2 is −2 in the next mode's units.
    assert_same("2:-6", &ops::composition(&parse("(2,8):(1,3)"), &parse("2:-4")).unwrap());
}

#[test]
fn composition_divisibility_failures_are_errors() {
    assert_eq!(
        ops::composition(&parse("(3,4):(1,10)"), &parse("2:2")),
        Err(LayoutError::StrideDivisibility { shape: 3, stride: 2 })
    );
    assert!(matches!(
        ops::composition(&parse("(2,4):(1,10)"), &parse("3:1")),
        Err(LayoutError::ShapeDivisibility { .. })
    ));
}

#[test]
fn complement_examples_and_errors() {
    assert_eq!(ops::complement(&parse("4:1"), 24).unwrap().to_string(), "6:4");
    assert_eq!(ops::complement(&parse("(2,2):(1,6)"), 24).unwrap().to_string(), "(3,2):(2,12)");
    assert_eq!(ops::complement(&parse("4:1"), 2).unwrap().to_string(), "1:0");
    assert_eq!(ops::complement(&parse("(4,3):(0,4)"), 12).unwrap().to_string(), "4:1");
    assert_eq!(ops::complement(&parse("(8,2):(1,2)"), 16), Err(LayoutError::NotInjective));
}

#[test]
fn inverses() {
    assert_eq!(ops::right_inverse(&parse("(2,7):(7,1)")).unwrap().to_string(), "(7,2):(2,1)");
    assert_eq!(ops::right_inverse(&parse("(2,4):(3,18)")).unwrap().to_string(), "1:0");
    assert_eq!(ops::left_inverse(&parse("4:2")).unwrap().to_string(), "(2,4):(4,1)");
    assert_eq!(ops::left_inverse(&parse("(2,2):(1,1)")), Err(LayoutError::NoLeftInverse));
    assert_eq!(ops::left_inverse(&parse("(4,3):(1,0)")), Err(LayoutError::NoLeftInverse));
}

#[test]
fn divide_examples() {
    let a = parse("(4,2,3):(2,1,8)");
    assert_same("((2,2),(2,3)):((4,1),(2,8))", &ops::logical_divide(&a, &tiler("4:2")).unwrap());
    let m = parse("(9,(4,8)):(59,(13,1))");
    let t = tiler("[3:3,(2,4):(1,8)]");
    assert_same("((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))", &ops::logical_divide(&m, &t).unwrap());
    assert_same("((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))", &ops::zipped_divide(&m, &t).unwrap());
    let tiled = ops::tiled_divide(&m, &t).unwrap();
    assert_same("((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))", &tiled);
    let flat = ops::flat_divide(&m, &t).unwrap();
    assert_same("(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))", &flat);
    let skip = ops::zipped_divide(&m, &tiler("[_,4:1]")).unwrap();
    assert_same("((1,4),(9,8)):((0,13),(59,1))", &skip);
}

#[test]
fn product_examples() {
    let tile = parse("(2,2):(1,2)");
    let grid = parse("(3,4):(4,1)");
    assert_same("((2,3),(2,4)):((1,16),(2,4))", &ops::blocked_product(&tile, &grid).unwrap());
    assert_same("((3,2),(4,2)):((16,1),(4,2))", &ops::raked_product(&tile, &grid).unwrap());
    let lp = ops::logical_product(&tile, &Tiler::Layout(grid.clone())).unwrap();
    assert_same("((2,2),(3,4)):((1,2),(16,4))", &lp);
    assert_same("((2,2),3,4):((1,2),16,4)", &ops::tiled_product(&tile, &Tiler::Layout(grid)).unwrap());
    let b = ops::blocked_product(&parse("4:1"), &parse("3:1")).unwrap();
    assert_eq!(image(&b), (0..12).collect::<Vec<_>>());
}

#[test]
fn recast_and_common_vector() {
    let half_rows = parse("(4,8):(8,1)");
    assert_same("(4,4):(4,1)", &ops::recast_layout(&half_rows, 16, 32).unwrap());
    assert_same("(4,16):(16,1)", &ops::recast_layout(&half_rows, 16, 8).unwrap());
    assert_same("(4,8):(8,1)", &ops::downcast(&ops::upcast(&half_rows, 2).unwrap(), 2).unwrap());
    assert!(ops::recast_layout(&half_rows, 0, 8).is_err());
    assert_eq!(ops::max_common_vector(&parse("(8,4):(1,8)"), &parse("(8,4):(1,8)")).unwrap(), 32);
    assert_eq!(ops::max_common_vector(&parse("(8,4):(4,1)"), &parse("(8,4):(1,8)")).unwrap(), 1);
    assert_eq!(ops::max_common_vector(&parse("(8,4):(1,16)"), &parse("(8,4):(1,8)")).unwrap(), 8);
    assert_eq!(ops::max_common_layout(&parse("(8,4):(1,16)"), &parse("(8,4):(1,8)")).unwrap().to_string(), "8:1");
}

#[test]
fn swizzle_and_composed_layouts() {
    let sw = Swizzle::new(3, 4, 3);
    assert_eq!(sw.yyy_mask(), 0b111 << 7);
    assert_eq!(sw.zzz_mask(), 0b111 << 4);
    assert_eq!(sw.apply(128), 144);
    assert_eq!(sw.apply(0b1010_1010_1010), 0b1010_1010_1010 ^ (0b0000_1010_1000_0000 >> 3 & 0b111_0000));
    assert_eq!(sw.to_string(), "Sw<3,4,3>");
    assert_eq!("Sw<3,4,3>".parse::<Swizzle>().unwrap(), sw);
    assert!("Sw<3,4,2>".parse::<Swizzle>().is_err());
    assert!(Swizzle::try_new(3, 4, 2).is_none());
    let composed = parse("(8,64):(64,1)").swizzled(sw, 0);
    assert_eq!(composed.to_string(), "Sw<3,4,3> o 0 o (8,64):(64,1)");
    let mut seen: Vec<i64> = (0..composed.size().unwrap()).map(|i| composed.call(i).unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..512).collect::<Vec<_>>());
    assert_eq!(composed.crd2idx(&"(1,8)".parse().unwrap()).unwrap(), sw.apply(72));
}

#[test]
fn deep_nesting_and_degenerate_modes() {
    let deep = parse("((((2,2),2),2),2):((((1,2),4),8),16)");
    assert_eq!((deep.rank(), deep.depth(), deep.size().unwrap()), (2, 4, 32));
    assert_eq!(ops::coalesce(&deep).unwrap().to_string(), "32:1");
    let degenerate = parse("(1,(1,1)):(7,(0,3))");
    assert_eq!(degenerate.size().unwrap(), 1);
    assert_eq!(ops::right_inverse(&degenerate).unwrap().to_string(), "1:0");
    assert_eq!(ops::left_inverse(&degenerate).unwrap().size().unwrap(), 1);
    assert_eq!(ops::complement(&degenerate, 5).unwrap().to_string(), "5:1");
}

fn parse_err<T: std::str::FromStr<Err = ParseError> + std::fmt::Debug>(text: &str) -> String {
    text.parse::<T>().unwrap_err().to_string()
}

#[test]
fn parser_errors_say_where_and_what() {
    assert_eq!(parse_err::<Layout>("(2,3"), "at column 5: expected ',' or ')', found end of input");
    assert_eq!(parse_err::<Layout>("(2,3)"), "at column 6: expected ':' between shape and stride, found end of input");
    assert_eq!(parse_err::<Layout>("(2,3):(1)"), "at column 7: expected a stride congruent to the shape, found '('");
    assert_eq!(parse_err::<Layout>("(2,x):(1,2)"), "at column 4: expected a number or '(', found 'x'");
    assert_eq!(parse_err::<Layout>("(0,2):(1,2)"), "at column 1: expected a shape with positive entries, found '('");
    assert_eq!(parse_err::<Layout>("4:1 extra"), "at column 5: expected end of input, found 'e'");
    assert_eq!(parse_err::<Layout>("()"), "at column 2: expected a number or '(', found ')'");
    assert_eq!(
        parse_err::<IntTuple>("99999999999999999999"),
        "at column 1: expected a number that fits in 64 bits, found '9'"
    );
    assert_eq!(parse_err::<Coord>("(1,*)"), "at column 4: expected a number, '_' or '(', found '*'");
    let deep = "(".repeat(100) + "1" + &")".repeat(100);
    assert!(parse_err::<IntTuple>(&deep).contains("nesting at most 64 deep"));
    assert!(tiler("(2:1,_)") == Tiler::Modes(vec![tiler("2:1"), Tiler::Skip]));
    assert!(tiler("(2,4)") == Tiler::Modes(vec![tiler("2:1"), tiler("4:1")]));
    assert!("(2:1,3):(1,2)".parse::<Tiler>().is_err());
}

#[test]
fn batch_extra_operations_and_errors() {
    use oxtile_layout::run_batch_line as run;
    let ok = |line: &str| run(line).unwrap();
    assert_eq!(ok("rank (2,(3,4)):(1,(2,6))"), "2");
    assert_eq!(ok("depth (2,(3,4)):(1,(2,6))"), "2");
    assert_eq!(ok("idx2crd (2,(3,4)):(1,(2,6)) 7"), "(1,(0,1))");
    assert_eq!(ok("slice (2,(3,4)):(1,(2,6)) (_,(1,_))"), "(2,4):(1,6)");
    assert_eq!(ok("coalesce ((2,3),(4,5)):((1,2),(6,24)) (1,1)"), "(6,20):(1,6)");
    assert_eq!(ok("complement 4:2"), "2:1");
    assert_eq!(ok("swizzle Sw<3,4,3> 128"), "144");
    assert_eq!(ok("recast (4,8):(8,1) 16 32"), "(4,4):(4,1)");
    assert_eq!(ok("max_common_vector (8,4):(1,16) (8,4):(1,8)"), "8");
    assert!(ok("left_inverse (2,2):(1,1)").starts_with("error: "));
    assert!(ok("composition (3,4):(1,10) 2:2").starts_with("error: composition undefined"));
    assert_eq!(ok("frobnicate 4:1"), "error: unknown operation 'frobnicate'");
    assert_eq!(ok("size"), "error: 'size' takes 1 argument(s), got 0");
    assert!(ok("size (2,3):(1)").starts_with("error: argument 1: at column 7"));
}
