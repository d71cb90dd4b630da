//! The CuTe-notation parser on arbitrary text: every value it accepts prints back to itself, and
//! whatever it accepts as a layout can be measured and evaluated without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxtile_layout::ops::Tiler;
use oxtile_layout::{Coord, IntTuple, Layout, Swizzle};

fn round_trips<T>(text: &str) -> Option<T>
where
    T: std::str::FromStr + std::fmt::Display + PartialEq + std::fmt::Debug,
{
    let value = text.parse::<T>().ok()?;
    let printed = value.to_string();
    match printed.parse::<T>() {
        Ok(again) => assert_eq!(again, value, "{text:?} printed as {printed:?}"),
        Err(_) => panic!("{text:?} printed as {printed:?}, which does not parse"),
    }
    Some(value)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    round_trips::<IntTuple>(text);
    round_trips::<Coord>(text);
    round_trips::<Tiler>(text);
    round_trips::<Swizzle>(text);
    if let Some(layout) = round_trips::<Layout>(text) {
        let size = layout.size();
        let _ = layout.cosize();
        for idx in [0, 1, -1, i64::MAX, i64::MIN] {
            let _ = layout.call(idx);
            if let Ok(crd) = layout.idx2crd(idx) {
                let _ = layout.crd2idx(&crd);
            }
        }
        if let Ok(size) = size {
            assert!(size >= 1, "{layout} has size {size}");
        }
    }
});
