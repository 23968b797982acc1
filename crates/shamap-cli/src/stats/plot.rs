//! `--plot DIR`: four SVG charts of a stats report.
//!
//! | file | chart |
//! |---|---|
//! | `children.svg` | inner nodes by number of children (the child-count histogram) |
//! | `depth.svg` | leaves by depth |
//! | `savings.svg` | bytes per entry beyond key and data by number of sparse size classes (advisor, predicted), against the map as built and rippled's model |
//! | `memory.svg` | bytes per entry by category (counted) |
//!
//! Drawn with `plotters`' SVG backend alone: text is emitted as SVG `<text>`
//! and laid out by the viewer, so no font library is needed to build.

use std::fmt::Display;
use std::path::Path;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::report::Report;
use super::text::classes;
use crate::output::{write_files_whole, Failure};

/// The file names written, in order.
pub const FILES: [&str; 4] = ["children.svg", "depth.svg", "savings.svg", "memory.svg"];

const SIZE: (u32, u32) = (900, 540);
const FONT: &str = "sans-serif";
const BAR: RGBColor = RGBColor(0x3B, 0x6E, 0xA8);
const ACCENT: RGBColor = RGBColor(0xD0, 0x5A, 0x2C);
const GREY: RGBColor = RGBColor(0x70, 0x70, 0x70);

/// Writes the four charts into `dir` (created if missing), all whole or
/// none ([`write_files_whole`]): each is drawn in memory first. Errors are
/// one line naming the file.
pub fn write_all(r: &Report, dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::unusable(format!("{}: cannot create: {e}", dir.display())))?;
    let draws: [fn(&Report, &mut String) -> DrawResult; 4] = [children, depth, savings, memory];
    let mut files = Vec::with_capacity(FILES.len());
    for (name, draw) in FILES.into_iter().zip(draws) {
        let path = dir.join(name);
        let mut svg = String::new();
        draw(r, &mut svg)
            .map_err(|e| Failure::unusable(format!("{}: cannot draw: {e}", path.display())))?;
        files.push((path, svg.into_bytes()));
    }
    write_files_whole(&files)
}

type DrawResult = Result<(), Box<dyn Display>>;

fn boxed<E: Display + 'static>(e: E) -> Box<dyn Display> {
    Box::new(e)
}

/// Headroom above the tallest bar.
fn top(max: u64) -> u64 {
    (max + max / 10).max(1)
}

fn subtitle(r: &Report) -> String {
    format!(
        "{} entries, classes {}",
        super::text::int(r.stats.mem.entries as u64),
        classes(r.stats.classes.capacities())
    )
}

fn children(r: &Report, out: &mut String) -> DrawResult {
    let h = &r.stats.shape.child_histogram;
    let lo = if h[0] > 0 { 0u32 } else { 1 };
    bar_chart(
        out,
        &Bars {
            caption: format!("Inner nodes by number of children ({})", subtitle(r)),
            first: lo,
            last: 16,
            counts: h,
            x_desc: "children",
            y_desc: "inner nodes",
            label_zeros: true,
        },
    )
}

fn depth(r: &Report, out: &mut String) -> DrawResult {
    let d = &r.stats.shape.depth_histogram;
    let first = d.iter().position(|&c| c > 0).unwrap_or(1).max(1) as u32;
    let last = d
        .iter()
        .rposition(|&c| c > 0)
        .unwrap_or(1)
        .max(first as usize) as u32;
    bar_chart(
        out,
        &Bars {
            caption: format!("Leaves by depth ({})", subtitle(r)),
            first,
            last,
            counts: d,
            x_desc: "depth (nibbles from the root)",
            y_desc: "leaves",
            label_zeros: false,
        },
    )
}

/// A histogram drawn as vertical bars, one per value `first..=last`.
struct Bars<'a> {
    caption: String,
    first: u32,
    last: u32,
    /// Indexed by value.
    counts: &'a [u64],
    x_desc: &'a str,
    y_desc: &'a str,
    /// Whether empty bars get their count (0) printed too.
    label_zeros: bool,
}

fn bar_chart(out: &mut String, b: &Bars<'_>) -> DrawResult {
    let (first, last) = (b.first, b.last);
    let count = |c: u32| b.counts.get(c as usize).copied().unwrap_or(0);
    let max = (first..=last).map(count).max().unwrap_or(0);
    let area = SVGBackend::with_string(out, SIZE).into_drawing_area();
    area.fill(&WHITE).map_err(boxed)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(&b.caption, (FONT, 20))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d((first..last + 1).into_segmented(), 0u64..top(max))
        .map_err(boxed)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels((last - first + 2) as usize)
        .x_label_formatter(&|v| segment_label(v, last))
        .y_label_formatter(&|v| int(*v))
        .x_desc(b.x_desc)
        .y_desc(b.y_desc)
        .label_style((FONT, 14))
        .draw()
        .map_err(boxed)?;
    chart
        .draw_series(
            Histogram::vertical(&chart)
                .style(BAR.filled())
                .margin(4)
                .data((first..=last).map(|c| (c, count(c)))),
        )
        .map_err(boxed)?;
    chart
        .draw_series(
            (first..=last)
                .filter(|&c| b.label_zeros || count(c) > 0)
                .map(|c| bar_value(c, count(c))),
        )
        .map_err(boxed)?;
    area.present().map_err(boxed)
}

/// A segment's label: its value at its centre up to `last`, nothing
/// elsewhere.
fn segment_label(v: &SegmentValue<u32>, last: u32) -> String {
    match v {
        SegmentValue::CenterOf(i) if *i <= last => i.to_string(),
        _ => String::new(),
    }
}

/// The count printed above a vertical bar.
fn bar_value(at: u32, count: u64) -> Text<'static, (SegmentValue<u32>, u64), String> {
    let style = (FONT, 12)
        .into_font()
        .color(&GREY)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    Text::new(int(count), (SegmentValue::CenterOf(at), count), style)
}

fn int(v: u64) -> String {
    super::text::int(v)
}

fn savings(r: &Report, out: &mut String) -> DrawResult {
    // (sparse classes, predicted bytes per entry, class set)
    let mut points = vec![(
        0u32,
        r.stats.predicted_overhead_per_entry(&r.stats.advice.dense),
        classes(&r.stats.advice.dense.capacities),
    )];
    for (k, p) in r.stats.advice.best.iter().enumerate() {
        points.push((
            k as u32 + 1,
            r.stats.predicted_overhead_per_entry(p),
            classes(&p.capacities),
        ));
    }
    let built = r.stats.mem.overhead_per_entry();
    let rippled = r.stats.models.rippled.overhead_per_entry;
    let ymax = points
        .iter()
        .map(|p| p.1)
        .chain([built, rippled])
        .fold(1.0f64, f64::max)
        * 1.15;
    let (x0, x1) = (-0.7, points.len() as f64 - 0.3);
    let area = SVGBackend::with_string(out, SIZE).into_drawing_area();
    area.fill(&WHITE).map_err(boxed)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(
            format!(
                "Bytes per entry beyond key and data, by size classes ({} entries)",
                int(r.stats.mem.entries as u64)
            ),
            (FONT, 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0f64..ymax)
        .map_err(boxed)?;
    chart
        .configure_mesh()
        .x_labels(points.len() + 1)
        .x_label_formatter(&|x| {
            if *x >= 0.0 && (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .x_desc("sparse size classes (0 = dense 16 only), optimal for this histogram")
        .y_desc("bytes per entry")
        .label_style((FONT, 14))
        .draw()
        .map_err(boxed)?;
    let line = |c: RGBColor| {
        move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
    };
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (p.0 as f64, p.1)),
            BAR.stroke_width(2),
        ))
        .map_err(boxed)?
        .label("optimal classes (predicted)")
        .legend(line(BAR));
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Circle::new((p.0 as f64, p.1), 4, BAR.filled())),
        )
        .map_err(boxed)?;
    let label_style = (FONT, 12)
        .into_font()
        .color(&GREY)
        .pos(Pos::new(HPos::Center, VPos::Top));
    chart
        .draw_series(points.iter().map(|p| {
            Text::new(
                p.2.clone(),
                (p.0 as f64, p.1 - ymax * 0.03),
                label_style.clone(),
            )
        }))
        .map_err(boxed)?;
    chart
        .draw_series(LineSeries::new(
            [(x0, built), (x1, built)],
            ACCENT.stroke_width(2),
        ))
        .map_err(boxed)?
        .label(format!(
            "as built {} (counted): {built:.1}",
            classes(r.stats.classes.capacities())
        ))
        .legend(line(ACCENT));
    chart
        .draw_series(LineSeries::new(
            [(x0, rippled), (x1, rippled)],
            GREY.stroke_width(2),
        ))
        .map_err(boxed)?
        .label(format!("rippled's layout (model): {rippled:.1}"))
        .legend(line(GREY));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font((FONT, 14))
        .draw()
        .map_err(boxed)?;
    area.present().map_err(boxed)
}

fn memory(r: &Report, out: &mut String) -> DrawResult {
    let b = &r.stats.mem.bytes;
    let mut rows: Vec<(String, usize)> = vec![("inner hashes".into(), b.inner_hashes)];
    for c in r.stats.mem.inner_classes.iter().filter(|c| c.nodes > 0) {
        rows.push((format!("slots cap {} used", c.capacity), 8 * c.slots_used));
        rows.push((
            format!("slots cap {} unused", c.capacity),
            8 * c.slots_unused,
        ));
    }
    rows.extend([
        ("leaf hashes".into(), b.leaf_hashes),
        ("leaf keys".into(), b.leaf_keys),
        ("leaf data".into(), b.leaf_data),
        ("leaf padding".into(), b.leaf_padding),
        ("pool slack".into(), b.pool_slack),
        ("other".into(), b.other),
    ]);
    let n = r.stats.mem.entries.max(1) as f64;
    let per: Vec<f64> = rows.iter().map(|(_, v)| *v as f64 / n).collect();
    let xmax = per.iter().copied().fold(1.0f64, f64::max) * 1.15;
    let names: Vec<String> = rows.into_iter().map(|(s, _)| s).collect();
    let count = names.len() as u32;
    // Row `i` is drawn at `count - 1 - i`, so the first category is on top.
    let at = |i: usize| count - 1 - i as u32;
    let area =
        SVGBackend::with_string(out, (SIZE.0, SIZE.1.max(40 + 34 * count))).into_drawing_area();
    area.fill(&WHITE).map_err(boxed)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(
            format!(
                "Memory by category, bytes per entry ({}; total {:.1})",
                subtitle(r),
                b.total as f64 / n
            ),
            (FONT, 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(170)
        .build_cartesian_2d(0f64..xmax, (0u32..count).into_segmented())
        .map_err(boxed)?;
    let label = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(y) if *y < count => names[(count - 1 - *y) as usize].clone(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(count as usize + 1)
        .y_label_formatter(&label)
        .x_desc("bytes per entry")
        .label_style((FONT, 14))
        .draw()
        .map_err(boxed)?;
    chart
        .draw_series(
            Histogram::horizontal(&chart)
                .style(BAR.filled())
                .margin(5)
                .data(per.iter().enumerate().map(|(i, v)| (at(i), *v))),
        )
        .map_err(boxed)?;
    let value_style = (FONT, 13)
        .into_font()
        .color(&GREY)
        .pos(Pos::new(HPos::Left, VPos::Center));
    chart
        .draw_series(per.iter().enumerate().map(|(i, v)| {
            Text::new(
                format!("{v:.2}"),
                (*v + xmax * 0.01, SegmentValue::CenterOf(at(i))),
                value_style.clone(),
            )
        }))
        .map_err(boxed)?;
    area.present().map_err(boxed)
}
