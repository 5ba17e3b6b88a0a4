//! SVG charts drawn from a run's rows.
//!
//! Every chart is built from the rows alone (the same rows a script reads on
//! stdout), so `--from FILE` redraws them from a saved run, and a chart whose
//! rows are absent is skipped. Text is written as SVG `<text>` in a generic
//! `sans-serif` family: plotters' font stack (and so any system font
//! lookup) is left out, and any SVG viewer renders the labels.

use crate::harness::Row;
use plotters::coord::Shift;
use plotters::coord::combinators::{BindKeyPoints, IntoLogRange};
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::error::Error;
use std::path::{Path, PathBuf};

type Res<T> = Result<T, Box<dyn Error>>;

/// A chart that was written.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File name inside the chart directory.
    pub file: String,
    /// What it shows.
    pub title: String,
}

const FONT: &str = "sans-serif";
const SIZE: (u32, u32) = (960, 540);

/// Distinct colours, readable on white.
const COLOURS: &[RGBColor] = &[
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// Height of the band along each chart's bottom edge that names the run.
const STAMP_BAND: u32 = 24;

/// Writes every chart whose rows are present into `dir` (created if
/// needed) and returns what was written. `stamp` (the machine and date of
/// the run that measured the rows) goes under every chart.
pub fn write_all(dir: &Path, rows: &[Row], stamp: &str) -> Res<Vec<Chart>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    let mut add = |file: &str, title: &str, drawn: bool| {
        if drawn {
            out.push(Chart {
                file: file.to_owned(),
                title: title.to_owned(),
            });
        }
    };
    add(
        "pool.svg",
        "pool: time per sample, by pattern and variant",
        pool(&dir.join("pool.svg"), rows, stamp)?,
    );
    add(
        "spsc.svg",
        "spsc: throughput and round trip",
        spsc(&dir.join("spsc.svg"), rows, stamp)?,
    );
    add(
        "ipc.svg",
        "ipc: round-trip latency against payload size",
        ipc(&dir.join("ipc.svg"), rows, stamp)?,
    );
    add(
        "batch.svg",
        "batch: pieces per second against pieces per call",
        batch(&dir.join("batch.svg"), rows, stamp)?,
    );
    Ok(out)
}

/// `<test>.<variant>.<metric>` split in three, for rows of `suite`.
fn parts<'a>(
    rows: &'a [Row],
    suite: &'a str,
) -> impl Iterator<Item = (&'a str, &'a str, &'a str, &'a Row)> {
    rows.iter()
        .filter(move |r| r.suite == suite)
        .filter_map(|r| {
            let (test, variant, metric) = r.parts()?;
            Some((test, variant, metric, r))
        })
}

/// Values of `metric` in `suite`, grouped by test, in first-seen order.
type Groups = Vec<(String, Vec<(String, f64)>)>;

fn groups(rows: &[Row], suite: &str, metric: &str, tests: Option<&[&str]>) -> (Groups, String) {
    let mut g: Groups = Vec::new();
    let mut unit = String::new();
    for (test, variant, m, r) in parts(rows, suite) {
        if m != metric || tests.is_some_and(|t| !t.contains(&test)) || !r.value.is_finite() {
            continue;
        }
        unit.clone_from(&r.unit);
        match g.iter_mut().find(|(t, _)| t == test) {
            Some((_, v)) => v.push((variant.to_owned(), r.value)),
            None => g.push((test.to_owned(), vec![(variant.to_owned(), r.value)])),
        }
    }
    (g, unit)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type BarChart<'a, Y> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>;

/// Variant names over all groups, in first-seen order.
fn variants(groups: &Groups) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for (_, vs) in groups {
        for (name, _) in vs {
            if !v.contains(name) {
                v.push(name.clone());
            }
        }
    }
    v
}

/// One bar per variant in each group's slot `[g + 0.1, g + 0.9]`, from
/// `base` up, a legend entry per variant, and each group's name under its
/// slot (drawn on `area`, as an f64 axis has no labels at chosen points).
fn draw_bars<'a, Y: Ranged<ValueType = f64>>(
    area: &Area<'a>,
    chart: &mut BarChart<'a, Y>,
    groups: &Groups,
    base: f64,
) -> Res<()> {
    let (ox, oy) = area.get_base_pixel();
    let style = TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (g, (name, _)) in groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(g as f64 + 0.5, base));
        area.draw(&Text::new(
            name.clone(),
            (x - ox, y - oy + 8),
            style.clone(),
        ))?;
    }
    let names = variants(groups);
    let width = 0.8 / names.len().max(1) as f64;
    for (k, variant) in names.iter().enumerate() {
        let c = colour(k);
        let mut rects = Vec::new();
        for (g, (_, vs)) in groups.iter().enumerate() {
            if let Some((_, v)) = vs.iter().find(|(n, _)| n == variant) {
                let x0 = g as f64 + 0.1 + k as f64 * width;
                rects.push(Rectangle::new(
                    [(x0, base), (x0 + width * 0.9, *v)],
                    c.filled(),
                ));
            }
        }
        chart
            .draw_series(rects)?
            .label(variant.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    legend_box(chart, SeriesLabelPosition::UpperRight)
}

/// The legend of every chart: a white box with a grey border at `pos`.
fn legend_box<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    pos: SeriesLabelPosition,
) -> Res<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.5))
        .label_font((FONT, 13))
        .position(pos)
        .draw()?;
    Ok(())
}

/// A white canvas of `size` for the chart at `path`, with `stamp` along its
/// bottom edge: the canvas (to present) and the area above the stamp (to
/// draw the chart on).
fn canvas<'a>(path: &'a Path, size: (u32, u32), stamp: &str) -> Res<(Area<'a>, Area<'a>)> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (body, band) = root.split_vertically(size.1.saturating_sub(STAMP_BAND));
    let grey = BLACK.mix(0.7);
    let style = TextStyle::from((FONT, 13).into_font())
        .color(&grey)
        .pos(Pos::new(HPos::Left, VPos::Center));
    band.draw(&Text::new(
        stamp.to_owned(),
        (12, STAMP_BAND as i32 / 2),
        style,
    ))?;
    Ok((root, body))
}

/// The frame of a line chart on `root`: its caption and axis label areas.
fn line_chart<'a, 'b>(root: &'a Area<'b>, caption: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    builder
}

/// One line per series with a dot of `radius` at each point, a legend entry
/// per series, and the legend in the upper left.
fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &Series,
    radius: i32,
) -> Res<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, radius, c.filled())))?;
    }
    legend_box(chart, SeriesLabelPosition::UpperLeft)
}

/// Grouped bars: one group per test, one bar (and legend entry) per variant.
fn bars<'a>(area: &Area<'a>, title: &str, groups: &Groups, y_desc: &str, log: bool) -> Res<()> {
    let values = || groups.iter().flat_map(|(_, v)| v.iter().map(|x| x.1));
    let max = values().fold(0.0_f64, f64::max).max(1e-9);
    let min = values().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let n = groups.len() as f64;
    // Headroom above the tallest bar keeps the legend (upper right) clear
    // of the bars.
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, (FONT, 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70);
    if log {
        let lo = 10f64.powf(min.min(max).log10().floor());
        let hi = 10f64.powf(max.log10() + 0.7 * (max.log10() - lo.log10()).max(0.5));
        let mut chart = builder.build_cartesian_2d(0.0..n, (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|y| tick(*y))
            .light_line_style(BLACK.mix(0.04))
            .y_desc(format!("{y_desc} (log scale)"))
            .label_style((FONT, 14))
            .draw()?;
        draw_bars(area, &mut chart, groups, lo)?;
    } else {
        let mut chart = builder.build_cartesian_2d(0.0..n, 0.0..max * 1.45)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|y| tick(*y))
            .light_line_style(BLACK.mix(0.04))
            .y_desc(y_desc)
            .label_style((FONT, 14))
            .draw()?;
        draw_bars(area, &mut chart, groups, 0.0)?;
    }
    Ok(())
}

/// An axis tick: no trailing zeros, no decimals past 10.
fn tick(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// Median time per sample of each pool variant, per pattern.
fn pool(path: &Path, rows: &[Row], stamp: &str) -> Res<bool> {
    let (mut g, unit) = groups(rows, "pool", "median", None);
    if g.is_empty() {
        return Ok(false);
    }
    // Rows are in µs; a sample takes milliseconds.
    let ms = unit == "us";
    if ms {
        for (_, vs) in &mut g {
            for v in vs.iter_mut() {
                v.1 /= 1000.0;
            }
        }
    }
    let (root, area) = canvas(path, SIZE, stamp)?;
    let y = if ms {
        "median time per sample (ms)"
    } else {
        "median per sample"
    };
    // A log axis: the patterns' times differ tenfold, and on it equal
    // ratios look equal in every pattern.
    bars(
        &area,
        "pool: time per sample, per pattern (lower is faster)",
        &g,
        y,
        true,
    )?;
    root.present()?;
    Ok(true)
}

/// Throughput (element-wise, batches of 64) and round trip of each queue.
fn spsc(path: &Path, rows: &[Row], stamp: &str) -> Res<bool> {
    let (rate, _) = groups(rows, "spsc", "median", Some(&["elementwise", "batch64"]));
    let (rt, _) = groups(rows, "spsc", "ns_per_round_trip", None);
    if rate.is_empty() && rt.is_empty() {
        return Ok(false);
    }
    let (root, area) = canvas(path, (SIZE.0 * 2, SIZE.1), stamp)?;
    let (left, right) = area.split_horizontally(SIZE.0);
    if !rate.is_empty() {
        bars(
            &left,
            "spsc: u64 throughput (higher is faster)",
            &rate,
            "million values per second",
            false,
        )?;
    }
    if !rt.is_empty() {
        bars(
            &right,
            "spsc: ping-pong round trip (lower is faster)",
            &rt,
            "ns per round trip",
            true,
        )?;
    }
    root.present()?;
    Ok(true)
}

/// Bytes in a size label such as `4B`, `64KiB`, `4MiB`.
pub fn parse_size(s: &str) -> Option<f64> {
    let digits = s.find(|c: char| !c.is_ascii_digit())?;
    let n: f64 = s[..digits].parse().ok()?;
    let mult = match &s[digits..] {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * mult)
}

fn size_label(bytes: f64) -> String {
    let b = bytes.round() as u64;
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Series of `(x, y)` points keyed by name, in first-seen order.
type Series = Vec<(String, Vec<(f64, f64)>)>;

fn push_point(series: &mut Series, name: &str, p: (f64, f64)) {
    match series.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => v.push(p),
        None => series.push((name.to_owned(), vec![p])),
    }
}

/// Every series' x values, sorted, each once: the x axis' key points.
fn xs(series: &Series) -> Vec<f64> {
    let mut x: Vec<f64> = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .collect();
    x.sort_by(f64::total_cmp);
    x.dedup();
    x
}

/// The `ipc <size>.<variant>.median` rows as one series per variant.
pub fn ipc_series(rows: &[Row]) -> Series {
    let mut s = Series::new();
    for (test, variant, metric, r) in parts(rows, "ipc") {
        if metric != "median" || !r.value.is_finite() || r.value <= 0.0 {
            continue;
        }
        if let Some(bytes) = parse_size(test) {
            push_point(&mut s, variant, (bytes, r.value));
        }
    }
    for (_, v) in &mut s {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    s
}

/// Round-trip latency against payload size, log-log, one line per variant.
fn ipc(path: &Path, rows: &[Row], stamp: &str) -> Res<bool> {
    let series = ipc_series(rows);
    if series.is_empty() {
        return Ok(false);
    }
    let xs = xs(&series);
    let ys = series.iter().flat_map(|(_, v)| v.iter().map(|p| p.1));
    let (ymin, ymax) = ys.fold((f64::INFINITY, 0.0_f64), |(a, b), y| (a.min(y), b.max(y)));
    let lo = 10f64.powf((ymin * 0.9).log10().floor());
    let hi = 10f64.powf(ymax.log10().ceil());
    let (root, area) = canvas(path, SIZE, stamp)?;
    let mut chart = line_chart(
        &area,
        "ipc: round trip, one request in flight (log-log, lower is faster)",
    )
    .build_cartesian_2d(
        (xs[0] / 2.0..xs[xs.len() - 1] * 2.0)
            .log_scale()
            .with_key_points(xs.clone()),
        (lo..hi).log_scale(),
    )?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| size_label(*x))
        .y_label_formatter(&|y| tick(*y))
        .light_line_style(BLACK.mix(0.04))
        .x_desc("payload each way")
        .y_desc("median round trip (us)")
        .label_style((FONT, 14))
        .draw()?;
    draw_lines(&mut chart, &series, 4)?;
    root.present()?;
    Ok(true)
}

/// Ops per call of a batch variant, from its name: `raw64` is 64, and
/// `single` (one call per piece) is 1. Other variants carry no batch size.
fn ops_per_call(variant: &str) -> Option<(String, f64)> {
    if variant == "single" {
        return Some(("raw".to_owned(), 1.0));
    }
    let digits = variant.trim_end_matches(|c: char| c.is_ascii_digit());
    if digits.len() == variant.len() {
        return None;
    }
    let n: f64 = variant[digits.len()..].parse().ok()?;
    Some((digits.trim_end_matches('_').to_owned(), n))
}

/// The batch rows that carry an ops-per-call figure, as series per method:
/// `syscall.single` and `syscall.raw<N>` (one `process_vm_readv` per piece
/// and per N pieces), `syscall.crate<N>` (N per `read_many`) and
/// `syscall.auto<N>` (N chains awaiting reads), in pieces per second. The
/// `syscall` part is the suite's only sweep of the batch size; other parts'
/// variants with digits in their names (`auto_reader_x8`: eight tasks) are
/// not batch sizes, and their units differ.
pub fn batch_series(rows: &[Row]) -> (Series, String) {
    let mut s = Series::new();
    let mut unit = String::new();
    for (test, variant, metric, r) in parts(rows, "batch") {
        if test != "syscall" || metric != "median" || !r.value.is_finite() || r.value <= 0.0 {
            continue;
        }
        if let Some((method, n)) = ops_per_call(variant) {
            unit.clone_from(&r.unit);
            push_point(&mut s, &format!("{test}.{method}"), (n, r.value));
        }
    }
    for (_, v) in &mut s {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    (s, unit)
}

/// Rate against ops per call, log-x, one line per method.
fn batch(path: &Path, rows: &[Row], stamp: &str) -> Res<bool> {
    let (series, unit) = batch_series(rows);
    if series.is_empty() {
        return Ok(false);
    }
    let xs = xs(&series);
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    let (root, area) = canvas(path, SIZE, stamp)?;
    let mut chart = line_chart(
        &area,
        "batch: another process's memory, pieces per call (higher is faster)",
    )
    .build_cartesian_2d(
        (xs[0] / 1.5..xs[xs.len() - 1] * 1.5)
            .log_scale()
            .with_key_points(xs.clone()),
        0.0..ymax * 1.15,
    )?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| tick(*y))
        .light_line_style(BLACK.mix(0.04))
        .x_desc("pieces per call (log scale)")
        .y_desc(if unit.is_empty() {
            "rate".to_owned()
        } else {
            unit.clone()
        })
        .label_style((FONT, 14))
        .draw()?;
    draw_lines(&mut chart, &series, 5)?;
    root.present()?;
    Ok(true)
}

/// Path of chart `file` as seen from the directory of `report`: for links.
pub fn link(report: &Path, dir: &Path, file: &str) -> String {
    let abs = |p: &Path| -> PathBuf {
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        // Lexical clean-up of `.` and `..`, without touching the file system.
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        out
    };
    let from = abs(report.parent().unwrap_or(Path::new(".")));
    let to = abs(dir).join(file);
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c);
    }
    rel.to_string_lossy().replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("4B"), Some(4.0));
        assert_eq!(parse_size("64KiB"), Some(65536.0));
        assert_eq!(parse_size("4MiB"), Some(4.0 * 1048576.0));
        assert_eq!(parse_size("seed"), None);
        assert_eq!(parse_size("4"), None);
        assert_eq!(parse_size("4XB"), None);
        assert_eq!(size_label(65536.0), "64 KiB");
        assert_eq!(size_label(4.0), "4 B");
    }

    #[test]
    fn ipc_series_come_from_median_rows_sorted_by_size() {
        let rows = [
            Row::new("ipc", "4MiB.unix.median", 900.0, "us"),
            Row::new("ipc", "4B.unix.median", 9.0, "us"),
            Row::new("ipc", "4B.unix.t_vs_unix", 1.0, "x"),
            Row::new("ipc", "4B.uring.median", 0.5, "us"),
            Row::new("ipc", "latency.uring.median", 1.0, "us"),
            Row::new("ipc", "4B.inflight64.uring.median", 0.1, "us"),
            Row::new("spsc", "4B.rtrb.median", 1.0, "us"),
        ];
        let s = ipc_series(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].0, "unix");
        assert_eq!(s[0].1, vec![(4.0, 9.0), (4.0 * 1048576.0, 900.0)]);
        assert_eq!(s[1].0, "uring");
        assert_eq!(s[1].1, vec![(4.0, 0.5)]);
    }

    #[test]
    fn batch_series_read_pieces_per_call_from_variant_names() {
        let rows = [
            Row::new("batch", "syscall.raw64.median", 7.7, "Mpieces/s"),
            Row::new("batch", "syscall.single.median", 2.5, "Mpieces/s"),
            Row::new("batch", "syscall.raw16.median", 6.4, "Mpieces/s"),
            Row::new("batch", "syscall.crate64.median", 7.3, "Mpieces/s"),
            Row::new("batch", "syscall.crate_structs.median", 22.0, "Mpieces/s"),
            Row::new("batch", "seed.bare.median", 875.0, "Mcalls/s"),
            Row::new("batch", "seed.auto_reader_x8.median", 300.0, "Mcalls/s"),
            Row::new("batch", "syscall.auto64.median", 5.7, "Mpieces/s"),
            Row::new("batch", "syscall.auto1.median", 2.3, "Mpieces/s"),
        ];
        let (s, unit) = batch_series(&rows);
        assert_eq!(unit, "Mpieces/s");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].0, "syscall.raw");
        assert_eq!(s[0].1, vec![(1.0, 2.5), (16.0, 6.4), (64.0, 7.7)]);
        assert_eq!(s[1].0, "syscall.crate");
        assert_eq!(s[1].1, vec![(64.0, 7.3)]);
        assert_eq!(s[2].0, "syscall.auto");
        assert_eq!(s[2].1, vec![(1.0, 2.3), (64.0, 5.7)]);
    }

    #[test]
    fn links_are_relative_to_the_report() {
        assert_eq!(
            link(
                Path::new("docs/benchmarks.md"),
                Path::new("docs/img"),
                "a.svg"
            ),
            "img/a.svg"
        );
        assert_eq!(
            link(
                Path::new("docs/benchmarks.md"),
                Path::new("target/plots"),
                "a.svg"
            ),
            "../target/plots/a.svg"
        );
    }

    #[test]
    fn charts_are_drawn_from_rows_and_skipped_without_them() {
        let dir = std::env::temp_dir().join(format!("compare-plot-{}", std::process::id()));
        let mut rows = vec![
            Row::new("pool", "single.buffer_pool.median", 600.0, "us"),
            Row::new("pool", "single.buffer_sv2.median", 2100.0, "us"),
            Row::new("spsc", "elementwise.rtrb.median", 400.0, "Mops/s"),
            Row::new("spsc", "roundtrip.rtrb.ns_per_round_trip", 400.0, "ns"),
            Row::new(
                "spsc",
                "roundtrip.sync_channel.ns_per_round_trip",
                55000.0,
                "ns",
            ),
        ];
        let stamp = "run: AMD EPYC, 2 logical CPUs, 2026-11-27 10:32 UTC";
        let charts = write_all(&dir, &rows, stamp).unwrap();
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(files, ["pool.svg", "spsc.svg"]);
        for file in files {
            let svg = std::fs::read_to_string(dir.join(file)).unwrap();
            assert!(svg.contains(stamp), "{file} names its run");
        }
        rows.push(Row::new("ipc", "4B.uring.median", 0.4, "us"));
        rows.push(Row::new("ipc", "4MiB.uring.median", 700.0, "us"));
        let charts = write_all(&dir, &rows, stamp).unwrap();
        assert!(charts.iter().any(|c| c.file == "ipc.svg"));
        let svg = std::fs::read_to_string(dir.join("ipc.svg")).unwrap();
        assert!(svg.contains("<svg"));
        assert!(svg.contains("4 MiB"), "size labels on the x axis");
        assert!(svg.contains("uring"), "a legend entry per variant");
        assert!(svg.contains(stamp), "the ipc chart names its run");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
