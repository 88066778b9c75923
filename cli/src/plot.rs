//! The `bench` plot: time per call against problem size, log-log, one line per method (SVG).

use super::bench::BenchRow;
use super::error::CliError;
use plotters::prelude::*;

/// The series drawn: label, colour and how to read a row.
type Series = (&'static str, RGBColor, fn(&BenchRow) -> f64);

const SERIES: [Series; 5] = [
    ("primal", RGBColor(0, 0, 0), |r| r.primal_s),
    ("JVP (W = 1)", RGBColor(31, 119, 180), |r| r.jvp_s),
    ("batched JVP (W = 8, one sweep)", RGBColor(44, 160, 44), |r| r.jvp8_s),
    ("value_and_grad", RGBColor(214, 39, 40), |r| r.value_and_grad_s),
    ("central FD gradient", RGBColor(148, 103, 189), |r| r.fd_s),
];

/// Draw `rows` into an SVG file at `path`.
pub fn draw(path: &str, function: &str, rows: &[BenchRow]) -> Result<(), CliError> {
    let plot_error = |e: String| CliError::Plot { path: path.into(), message: e };
    let sizes: Vec<f64> = rows.iter().map(|r| r.size as f64).collect();
    let times: Vec<f64> =
        rows.iter().flat_map(|r| SERIES.iter().map(move |s| (s.2)(r))).filter(|t| t.is_finite() && *t > 0.0).collect();
    if sizes.is_empty() || times.is_empty() {
        return Err(plot_error("no measurements to plot".into()));
    }
    let (x_lo, x_hi) = range(&sizes);
    let (y_lo, y_hi) = range(&times);
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("jitdiff: @{function}, time per call vs size (log-log)"), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
        .map_err(|e| plot_error(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("problem size n")
        .y_desc("seconds per call")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .draw()
        .map_err(|e| plot_error(e.to_string()))?;
    for (label, colour, get) in SERIES {
        let points: Vec<(f64, f64)> =
            rows.iter().map(|r| (r.size as f64, get(r))).filter(|(_, t)| t.is_finite() && *t > 0.0).collect();
        let style = ShapeStyle::from(&colour).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.clone(), style))
            .map_err(|e| plot_error(e.to_string()))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], ShapeStyle::from(&colour).stroke_width(2))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
            .map_err(|e| plot_error(e.to_string()))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| plot_error(e.to_string()))?;
    root.present().map_err(|e| plot_error(e.to_string()))?;
    Ok(())
}

/// A log-scale range around the values, padded by a factor on each side.
fn range(values: &[f64]) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (lo, hi) = if lo == hi { (lo / 2.0, hi * 2.0) } else { (lo, hi) };
    (lo / 1.5, hi * 1.5)
}
