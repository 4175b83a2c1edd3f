// gpuplan size --chart: time to train against GPU count per system (solid, left axis, days) and what it costs
// (dashed, right axis: dollars, or GPU-hours without prices), both on log scales; the Pareto front ringed, the
// deadline drawn. Plain SVG text, no script, readable in any browser.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/size_answers.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::api::detail {

namespace {

constexpr double kWidth = 900, kHeight = 540;
constexpr double kLeft = 80, kRight = 100, kTop = 80, kBottom = 60;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A log axis from the data's range widened to whole 1-2-5 steps.
struct LogAxis {
  double low = 1, high = 10;
  double pixels_low = 0, pixels_high = 1;
  double at(double value) const {
    const double t = (std::log10(value) - std::log10(low)) / (std::log10(high) - std::log10(low));
    return pixels_low + t * (pixels_high - pixels_low);
  }
  std::vector<double> ticks() const {
    std::vector<double> out;
    for (double decade = std::pow(10, std::floor(std::log10(low))); decade <= high; decade *= 10)
      for (double step : {1.0, 2.0, 5.0})
        if (decade * step >= low * 0.999 && decade * step <= high * 1.001) out.push_back(decade * step);
    return out;
  }
};

LogAxis log_axis(double low, double high, double pixels_low, double pixels_high) {
  const auto down = [](double v) {
    const double decade = std::pow(10, std::floor(std::log10(v)));
    for (double step : {5.0, 2.0, 1.0})
      if (decade * step <= v) return decade * step;
    return decade;
  };
  const auto up = [](double v) {
    const double decade = std::pow(10, std::floor(std::log10(v)));
    for (double step : {1.0, 2.0, 5.0, 10.0})
      if (decade * step >= v) return decade * step;
    return decade * 10;
  };
  LogAxis axis{down(low), up(high), pixels_low, pixels_high};
  if (axis.high <= axis.low) axis.high = axis.low * 10;
  return axis;
}

// An axis label: 20, 500, 2k, 100k, 20M, 1.5B.
std::string number_label(double v) {
  if (v >= 1e9) return fmt::format("{:g}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

struct Frame {
  LogAxis gpus, days, spend;
  bool priced = false;
};

std::string axes(const SizeResult& r, const Frame& f) {
  std::string svg;
  const double bottom = kHeight - kBottom, right = kWidth - kRight;
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", kLeft, kTop,
                     right - kLeft, bottom - kTop);
  for (double g = f.gpus.low; g <= f.gpus.high * 1.001; g *= 2) {
    const double x = f.gpus.at(g);
    svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#eee"/>)", x, kTop, bottom);
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:g}</text>)", x, bottom + 18, g);
  }
  for (double d : f.days.ticks()) {
    const double y = f.days.at(d);
    svg += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#eee"/>)", kLeft, y, right);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", kLeft - 6, y + 4, number_label(d));
  }
  for (double c : f.spend.ticks())
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" fill="#555">{}{}</text>)", right + 6, f.spend.at(c) + 4,
                       f.priced ? "$" : "", number_label(c));
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">GPUs</text>)", (kLeft + right) / 2, kHeight - 18);
  svg += fmt::format(R"svg(<text transform="translate(22,{}) rotate(-90)" text-anchor="middle">days to train (solid)</text>)svg",
                     (kTop + bottom) / 2);
  svg += fmt::format(R"svg(<text transform="translate({},{}) rotate(90)" text-anchor="middle" fill="#555">{} (dashed)</text>)svg",
                     kWidth - 18, (kTop + bottom) / 2, f.priced ? "cost in dollars" : "GPU-hours");
  if (r.job.deadline_days && *r.job.deadline_days >= f.days.low && *r.job.deadline_days <= f.days.high) {
    const double y = f.days.at(*r.job.deadline_days);
    svg += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#c00" stroke-dasharray="2,3"/>)",
                       kLeft, y, right);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" fill="#c00">deadline {:g} days</text>)", kLeft + 4, y - 4,
                       *r.job.deadline_days);
  }
  return svg;
}

std::string polyline(const std::vector<std::pair<double, double>>& xy, const char* colour, bool dashed) {
  std::string points;
  for (const auto& [x, y] : xy) points += fmt::format("{:.1f},{:.1f} ", x, y);
  return fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>)", points, colour,
                     dashed ? R"( stroke-dasharray="6,4")" : "");
}

std::string system_series(const SizeResult& r, const Frame& f, const std::string& system, const char* colour) {
  std::vector<std::pair<double, double>> days, spend;
  std::string marks;
  for (const SizePoint& p : r.points) {
    if (p.system != system || !p.fits) continue;
    const double x = f.gpus.at(static_cast<double>(p.gpus));
    const double y = f.days.at(p.days);
    days.emplace_back(x, y);
    spend.emplace_back(x, f.spend.at(p.cost_dollars.value_or(p.gpu_hours)));
    marks += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}"><title>{}</title></circle>)", x, y,
                         colour, escaped(fmt::format("{}, {}: {:.1f} days", system, format_quantity(p.nodes, "node", "nodes"), p.days)));
    if (p.pareto)
      marks += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="7" fill="none" stroke="#000"/>)", x, y);
  }
  if (days.empty()) return {};
  return polyline(days, colour, false) + polyline(spend, colour, true) + marks;
}

std::string legend(const std::vector<std::string>& systems) {
  std::string svg;
  double x = kLeft;
  for (std::size_t i = 0; i < systems.size(); ++i) {
    const char* colour = kColours[i % std::size(kColours)];
    svg += fmt::format(R"(<rect x="{}" y="{}" width="14" height="4" fill="{}"/>)", x, kTop - 20, colour);
    svg += fmt::format(R"(<text x="{}" y="{}">{}</text>)", x + 18, kTop - 14, escaped(systems[i]));
    x += 30 + 8.0 * static_cast<double>(systems[i].size());
  }
  svg += fmt::format(R"(<circle cx="{}" cy="{}" r="7" fill="none" stroke="#000"/><text x="{}" y="{}">time-cost )"
                     R"(front</text>)",
                     x + 7, kTop - 18, x + 18, kTop - 14);
  return svg;
}

}  // namespace

std::string size_chart_svg(const SizeResult& r) {
  std::vector<std::string> systems;
  double gpus_low = 1e18, gpus_high = 0, days_low = 1e18, days_high = 0, spend_low = 1e30, spend_high = 0;
  bool priced = true;
  for (const SizePoint& p : r.points) {
    if (std::find(systems.begin(), systems.end(), p.system) == systems.end()) systems.push_back(p.system);
    if (!p.fits) continue;
    priced = priced && p.cost_dollars.has_value();
    gpus_low = std::min(gpus_low, static_cast<double>(p.gpus));
    gpus_high = std::max(gpus_high, static_cast<double>(p.gpus));
    days_low = std::min(days_low, p.days);
    days_high = std::max(days_high, p.days);
  }
  for (const SizePoint& p : r.points) {
    if (!p.fits) continue;
    const double spend = priced ? p.cost_dollars.value_or(0) : p.gpu_hours;
    spend_low = std::min(spend_low, spend);
    spend_high = std::max(spend_high, spend);
  }
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" )"
                                R"(viewBox="0 0 {0} {1}" font-family="sans-serif" font-size="12">)"
                                R"(<rect width="100%" height="100%" fill="#fff"/>)",
                                kWidth, kHeight);
  svg += fmt::format(R"(<text x="{}" y="28" font-size="16" font-weight="bold">{}</text>)", kLeft,
                     escaped(fmt::format("{}: {} tokens, time to train and {} by cluster size", r.job.model,
                                         format_count(r.job.tokens), priced ? "cost" : "GPU-hours")));
  if (gpus_high == 0) return svg + R"(<text x="80" y="120">No cluster of the sweep fits.</text></svg>)" "\n";
  const double lowest_gpus = std::pow(2, std::floor(std::log2(gpus_low)));
  const double highest_gpus = std::max(lowest_gpus * 2, std::pow(2, std::ceil(std::log2(gpus_high))));
  Frame frame;
  frame.gpus = LogAxis{lowest_gpus, highest_gpus, kLeft + 10, kWidth - kRight - 10};
  frame.days = log_axis(days_low, days_high, kHeight - kBottom, kTop);
  frame.spend = log_axis(spend_low, spend_high, kHeight - kBottom, kTop);
  frame.priced = priced;
  svg += axes(r, frame) + legend(systems);
  for (std::size_t i = 0; i < systems.size(); ++i)
    svg += system_series(r, frame, systems[i], kColours[i % std::size(kColours)]);
  return svg + "</svg>\n";
}

}  // namespace gpuplan::api::detail
