//! Pictures, the wgmma accumulator TV layout, and const evaluation of static layouts.

use oxtile_layout::picture::{render_grid, render_svg, render_tv_svg, tv_cells, wgmma_accumulator_tv};
use oxtile_layout::{Layout, StaticComposedLayout, StaticLayout, Swizzle};

#[test]
fn grid_prints_offsets_by_row_and_column() {
    let grid = render_grid(&"(2,3):(3,1)".parse().unwrap()).unwrap();
    let expected = "\
(2,3):(3,1)
      0  1  2
    +--+--+--+
 0  | 0| 1| 2|
    +--+--+--+
 1  | 3| 4| 5|
    +--+--+--+
";
    assert_eq!(grid, expected);
    let row = render_grid(&"4:2".parse().unwrap()).unwrap();
    assert!(row.contains("| 0| 2| 4| 6|"), "{row}");
    let nested = render_grid(&"((2,2),(2,2)):((1,4),(2,8))".parse().unwrap()).unwrap();
    assert!(nested.contains(" 3  |  5|  7| 13| 15|"), "{nested}");
}

#[test]
fn svg_has_one_cell_per_element() {
    let svg = render_svg(&"(4,8):(8,1)".parse().unwrap()).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect").count(), 32);
    assert!(svg.contains(">31</text>"));
}

#[test]
fn wgmma_accumulator_layout_matches_the_ptx_fragment() {
    for n in [8, 16, 64, 128, 256] {
        let tv = wgmma_accumulator_tv(n).unwrap();
        assert_eq!(tv.to_string(), format!("((4,8,4),(2,2,{})):((128,1,16),(64,8,512))", n / 8));
        let cells = tv_cells(&tv, 64, n).unwrap();
        assert_eq!(cells.len() as i64, 64 * n);
        for (t, v, row, col) in cells {
            assert_eq!(row, (t % 32) / 4 + 8 * ((v / 2) % 2) + 16 * (t / 32), "t{t} v{v}");
            assert_eq!(col, 2 * (t % 4) + (v % 2) + 8 * (v / 4), "t{t} v{v}");
        }
    }
    assert!(wgmma_accumulator_tv(12).is_err());
}

#[test]
fn tv_svg_labels_every_cell_with_its_thread_and_value() {
    let svg = render_tv_svg(&wgmma_accumulator_tv(8).unwrap(), 64, 8).unwrap();
    assert_eq!(svg.matches("<rect").count(), 64 * 8);
    assert!(svg.contains(">T0V0<") && svg.contains(">T127V3<"));
    assert!(render_tv_svg(&"(4,2):(1,4)".parse().unwrap(), 2, 2).is_err());
}

const TILE: StaticLayout<4> = StaticLayout::grouped(&[2, 4, 8], &[4, 1, 8], &[2, 1]);
const ROW_MAJOR: StaticLayout<4> = StaticLayout::row_major(&[8, 64]);
const SMEM: StaticComposedLayout<4> = ROW_MAJOR.swizzled(Swizzle::new(3, 3, 3), 0);
const DIVIDED: StaticLayout<8> =
    StaticLayout::expect(StaticLayout::<8>::col_major(&[8, 16]).zipped_divide(&[StaticLayout::<8>::new(&[4], &[1])]));
const COMPOSED: StaticLayout<8> = StaticLayout::expect(
    StaticLayout::<8>::new(&[6, 2], &[8, 2]).composition(&StaticLayout::<8>::new(&[4, 3], &[3, 1])),
);
const OFFSET: i64 = TILE.crd2idx(&[3, 5]);
const WGMMA: StaticLayout<6> = StaticLayout::expect(StaticLayout::wgmma_accumulator_tv(64));

#[test]
fn static_layouts_evaluate_in_const_context() {
    const { assert!(OFFSET == 1 + 4 + 40) };
    const { assert!(TILE.size() == 64 && TILE.rank() == 2 && TILE.cosize() == 64) };
    const { assert!(SMEM.crd2idx(&[1, 8]) == Swizzle::new(3, 3, 3).apply(72)) };
    const { assert!(DIVIDED.rank() == 2 && DIVIDED.mode_size(0) == 4 && DIVIDED.mode_size(1) == 32) };
    const { assert!(WGMMA.crd2idx(&[37, 5]) == 17 + 64 * 11) };
    assert_eq!(Layout::from_static(&COMPOSED).to_string(), "((2,2),3):((24,2),8)", "(6,2):(8,2) o (4,3):(3,1)");
    assert_eq!(Layout::from_static(&TILE).to_string(), "((2,4),8):((4,1),8)");
    assert_eq!(TILE.idx2crd(13), [5, 1, 0, 0]);
    assert_eq!(TILE.index_u32(13), TILE.call(13) as u32);
    assert_eq!(SMEM.index_u32(9), SMEM.call(9) as u32);
    let c = const { StaticLayout::<4>::new(&[4, 2], &[1, 4]).complement(24) };
    assert_eq!(Layout::from_static(&c.unwrap()).to_string(), "3:8");
}

#[test]
fn u32_coordinates_index_like_the_i64_ones() {
    const { assert!(TILE.crd2idx_u32(&[3, 5]) == OFFSET as u32) };
    const { assert!(SMEM.crd2idx_u32(&[1, 8]) == SMEM.crd2idx(&[1, 8]) as u32) };
    for row in 0..8 {
        for col in 0..64 {
            assert_eq!(SMEM.crd2idx_u32(&[row, col]) as i64, SMEM.crd2idx(&[row as i64, col as i64]), "({row}, {col})");
        }
    }
    for (t, v) in [(0, 0), (37, 5), (127, 31)] {
        assert_eq!(WGMMA.crd2idx_u32(&[t, v]) as i64, WGMMA.crd2idx(&[t as i64, v as i64]), "T{t}V{v}");
    }
}
