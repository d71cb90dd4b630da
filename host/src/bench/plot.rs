//! An SVG chart of the rows: rate (TFLOP/s, or GB/s for memory-bound rows) against problem size (FLOPs or bytes
//! per launch, log scale), one line per implementation.

use std::path::Path;

use plotters::prelude::*;

use super::report::Row;
use crate::error::{Error, Result};

const SIZE: (u32, u32) = (1000, 640);

fn plot_error(error: impl std::fmt::Display) -> Error {
    Error::Io(std::io::Error::other(format!("plot: {error}")))
}

/// One implementation's points: (size in G, rate), sorted by size.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// One of our kernels (drawn thicker).
    pub ours: bool,
    pub points: Vec<(f64, f64)>,
}

/// The series drawn, one per implementation in order of first appearance. Rows with an error, no rate or no
/// size are left out.
pub fn series(rows: &[Row]) -> Vec<Series> {
    let plotted: Vec<(&Row, (f64, f64))> = rows
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| Some((r, (r.work?, r.rate()?))))
        .filter(|(_, (work, rate))| *work > 0.0 && rate.is_finite())
        .map(|(r, (work, rate))| (r, (work / 1e9, rate)))
        .collect();
    // With more than one layout or type in the rows, they name the series too (memory-bound rows excepted: their
    // type is part of the implementation).
    let varies = |field: fn(&Row) -> Option<&str>| {
        let mut values = plotted.iter().filter(|(r, _)| r.op != "mem").map(|(r, _)| field(r));
        values.next().is_some_and(|first| values.any(|v| v != first))
    };
    let (by_layout, by_dtype) = (varies(|r| r.layout.as_deref()), varies(|r| r.dtype.as_deref()));
    let mut out: Vec<Series> = Vec::new();
    for (row, point) in plotted {
        let mut name = row.implementation.clone();
        for (split, value) in [(by_dtype, &row.dtype), (by_layout, &row.layout)] {
            if let (true, Some(value)) = (split && row.op != "mem", value) {
                name = format!("{name} {value}");
            }
        }
        match out.iter_mut().find(|s| s.name == name) {
            Some(series) => series.points.push(point),
            None => out.push(Series { name, ours: row.kind.as_deref() == Some("oxtile"), points: vec![point] }),
        }
    }
    for series in &mut out {
        series.points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    }
    out
}

/// The chart as SVG text.
pub fn render_svg(title: &str, rows: &[Row]) -> Result<String> {
    let series = series(rows);
    if series.is_empty() {
        return Err(plot_error("no timed rows to plot"));
    }
    let flops = rows.iter().any(|r| r.tflops.is_some());
    let (x_label, y_label) =
        if flops { ("GFLOP per launch", "TFLOP/s") } else { ("GB read + written per launch", "GB/s") };
    let points = series.iter().flat_map(|s| s.points.iter());
    let (x_min, x_max, y_max) =
        points.fold((f64::INFINITY, 0f64, 0f64), |(lo, hi, top), &(x, y)| (lo.min(x), hi.max(x), top.max(y)));

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((x_min / 1.5..x_max * 1.5).log_scale(), 0f64..(y_max * 1.15).max(1e-9))
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_labels(10)
            .x_label_formatter(&|x| short(*x))
            .draw()
            .map_err(plot_error)?;
        for (index, Series { name, ours, points }) in series.iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            let width = if *ours { 3 } else { 2 };
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(width)))
                .map_err(plot_error)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
            chart
                .draw_series(PointSeries::of_element(points.iter().copied(), 4, color.filled(), &|c, s, st| {
                    Circle::new(c, s, st)
                }))
                .map_err(plot_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// A size label with as few digits as it needs: 0.25, 3, 17.2, 1100.
fn short(x: f64) -> String {
    let text = if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    };
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

pub fn write_svg(path: &Path, title: &str, rows: &[Row]) -> Result<()> {
    let svg = render_svg(title, rows)?;
    std::fs::write(path, svg).map_err(|e| Error::Io(std::io::Error::other(format!("{}: {e}", path.display()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(implementation: &str, kind: &str, work: f64, tflops: Option<f64>) -> Row {
        let mut row = Row::new("gemm", "x", implementation);
        row.kind = Some(kind.into());
        row.work = Some(work);
        row.tflops = tflops;
        row
    }

    #[test]
    fn series_group_by_implementation_and_sort_by_size() {
        let mut failed = row("cublasLt", "peer", 3e9, Some(1.0));
        failed.error = Some("boom".into());
        let rows = vec![
            row("cublasLt", "peer", 8e9, Some(600.0)),
            row("oxtile", "oxtile", 8e9, Some(500.0)),
            row("cublasLt", "peer", 2e9, Some(400.0)),
            failed,
            row("cublas(torch)", "peer", 2e9, None),
        ];
        let series = series(&rows);
        assert_eq!(series.len(), 2);
        assert_eq!(
            series[0],
            Series { name: "cublasLt".into(), ours: false, points: vec![(2.0, 400.0), (8.0, 600.0)] }
        );
        assert_eq!(series[1], Series { name: "oxtile".into(), ours: true, points: vec![(8.0, 500.0)] });
    }

    #[test]
    fn size_labels_are_short() {
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(3.0), "3");
        assert_eq!(short(17.18), "17.2");
        assert_eq!(short(1099.5), "1100");
    }

    #[test]
    fn series_names_carry_the_layout_when_it_varies() {
        let mut tt = row("cublasLt", "peer", 8e9, Some(600.0));
        tt.layout = Some("tt".into());
        let mut tn = row("cublasLt", "peer", 8e9, Some(610.0));
        tn.layout = Some("tn".into());
        let names: Vec<String> = series(&[tt.clone(), tn]).into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["cublasLt tt", "cublasLt tn"]);
        assert_eq!(series(&[tt])[0].name, "cublasLt");
    }

    #[test]
    fn svg_has_every_series_and_axis() {
        let rows = vec![
            row("cublasLt", "peer", 17.2e9, Some(450.0)),
            row("cublasLt", "peer", 1.1e12, Some(760.0)),
            row("cublasGemmEx", "peer", 17.2e9, Some(440.0)),
            row("cublasGemmEx", "peer", 1.1e12, Some(750.0)),
        ];
        let svg = render_svg("GEMM bf16 on a test device", &rows).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for text in ["cublasLt", "cublasGemmEx", "TFLOP/s", "GFLOP per launch", "GEMM bf16 on a test device"] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(svg.matches("<circle").count() >= 4);
        assert!(render_svg("empty", &[]).is_err());
    }
}
