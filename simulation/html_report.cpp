#include "simulation/html_report.hpp"

#include "json/json_text.hpp"
#include "simulation/figure_text.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>

namespace troupe {

namespace {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Coordinates in the SVG: one decimal is finer than a pixel.
std::string px(double x) { return fixed(x, 1); }

constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
std::string colour(std::size_t i) { return palette[i % std::size(palette)]; }

struct chart_series {
  std::string name;
  std::vector<double> values;  // one per round
};

enum class chart_kind { stacked_bars, lines };

struct chart {
  std::string id;
  std::string title;
  chart_kind kind = chart_kind::stacked_bars;
  std::vector<chart_series> series;
  std::function<std::string(double)> label = [](double v) { return grouped(v); };
  bool counts = true;  // whole numbers: no tick between two integers
};

// A round number of steps (1, 2, 2.5 or 5 times a power of ten) that covers `top` in about four.
double tick_step(double top) {
  const double raw = top / 4;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

// The chart as inline SVG, rounds along x, with its legend.
std::string render_chart(const chart& c, const std::vector<std::int64_t>& rounds) {
  constexpr double width = 720, height = 260, left = 72, right = 12, top = 12, bottom = 40;
  constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
  std::string out =
      "<figure class=\"chart\" id=\"" + esc(c.id) + "\">\n<figcaption>" + esc(c.title) + "</figcaption>\n";
  const std::size_t n = rounds.size();
  if (n == 0 || c.series.empty()) return out + "<p class=\"empty\">No rounds ran.</p>\n</figure>\n";

  double max = 0;
  for (std::size_t r = 0; r < n; ++r) {
    double stack = 0;
    for (const auto& s : c.series) {
      const double v = r < s.values.size() ? s.values[r] : 0;
      stack += v;
      max = std::max(max, c.kind == chart_kind::lines ? v : stack);
    }
  }
  const double step = max > 0 ? (c.counts ? std::max(1.0, tick_step(max)) : tick_step(max)) : 1;
  const double y_top = max > 0 ? std::ceil(max / step) * step : 1;
  const auto y = [&](double v) { return top + plot_h * (1 - v / y_top); };
  const double band = plot_w / static_cast<double>(n);
  const auto x_mid = [&](std::size_t r) { return left + band * (static_cast<double>(r) + 0.5); };

  out +=
      "<svg viewBox=\"0 0 720 260\" width=\"720\" height=\"260\" role=\"img\" aria-label=\"" + esc(c.title) + "\">\n";
  for (double v = 0; v <= y_top * (1 + 1e-9); v += step) {
    out += "<line class=\"grid\" x1=\"" + px(left) + "\" x2=\"" + px(width - right) + "\" y1=\"" + px(y(v)) +
           "\" y2=\"" + px(y(v)) + "\"/>";
    out += "<text class=\"y\" x=\"" + px(left - 6) + "\" y=\"" + px(y(v) + 4) + "\">" + esc(c.label(v)) + "</text>\n";
  }
  const std::size_t every = (n + 11) / 12;  // at most a dozen round labels
  for (std::size_t r = 0; r < n; r += every)
    out += "<text class=\"x\" x=\"" + px(x_mid(r)) + "\" y=\"" + px(height - bottom + 16) + "\">" +
           std::to_string(rounds[r]) + "</text>";
  out += "<text class=\"x\" x=\"" + px(left + plot_w / 2) + "\" y=\"" + px(height - 4) + "\">round</text>\n";

  if (c.kind == chart_kind::stacked_bars) {
    const double bar = std::max(band * 0.8, 0.5);
    for (std::size_t r = 0; r < n; ++r) {
      double base = 0;
      for (std::size_t k = 0; k < c.series.size(); ++k) {
        const double v = r < c.series[k].values.size() ? c.series[k].values[r] : 0;
        if (v <= 0) continue;
        out += "<rect class=\"bar\" x=\"" + px(x_mid(r) - bar / 2) + "\" y=\"" + px(y(base + v)) + "\" width=\"" +
               px(bar) + "\" height=\"" + px(y(base) - y(base + v)) + "\" fill=\"" + colour(k) + "\"><title>round " +
               std::to_string(rounds[r]) + ", " + esc(c.series[k].name) + ": " + esc(c.label(v)) + "</title></rect>";
        base += v;
      }
      out += "\n";
    }
  } else {
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      std::string points;
      std::string dots;
      for (std::size_t r = 0; r < n && r < c.series[k].values.size(); ++r) {
        const double v = c.series[k].values[r];
        points += (points.empty() ? "" : " ") + px(x_mid(r)) + "," + px(y(v));
        dots += "<circle class=\"point\" cx=\"" + px(x_mid(r)) + "\" cy=\"" + px(y(v)) + "\" r=\"3\" fill=\"" +
                colour(k) + "\"><title>round " + std::to_string(rounds[r]) + ", " + esc(c.series[k].name) + ": " +
                esc(c.label(v)) + "</title></circle>";
      }
      out += "<polyline class=\"line\" fill=\"none\" stroke=\"" + colour(k) + "\" points=\"" + points + "\"/>" + dots +
             "\n";
    }
  }
  out += "</svg>\n<ul class=\"legend\">";
  for (std::size_t k = 0; k < c.series.size(); ++k)
    out +=
        "<li><span class=\"swatch\" style=\"background:" + colour(k) + "\"></span>" + esc(c.series[k].name) + "</li>";
  return out + "</ul>\n</figure>\n";
}

std::string cell(std::string_view s, bool number = false) {
  return std::string(number ? "<td class=\"n\">" : "<td>") + esc(s) + "</td>";
}

std::string row(std::string_view name, std::string_view value) {
  return "<tr><th scope=\"row\">" + esc(name) + "</th>" + cell(value, true) + "</tr>\n";
}

std::string count(std::size_t n) { return grouped(static_cast<std::int64_t>(n)); }

std::vector<std::int64_t> rounds_of(const scenario_report& r) {
  std::vector<std::int64_t> out;
  for (const auto& s : r.per_round) out.push_back(s.round);
  return out;
}

// Action kinds, the most taken first.
std::vector<std::string> action_kinds(const scenario_report& r) {
  std::map<std::string, std::size_t> totals = r.actions;
  for (const auto& s : r.per_round)
    for (const auto& [k, n] : s.actions) totals.try_emplace(k, n);
  std::vector<std::string> kinds;
  for (const auto& [k, n] : totals) kinds.push_back(k);
  std::stable_sort(kinds.begin(), kinds.end(), [&](const auto& a, const auto& b) { return totals[a] > totals[b]; });
  return kinds;
}

std::string charts(const scenario_report& r) {
  const auto rounds = rounds_of(r);
  const auto per_round = [&](const std::function<double(const round_summary&)>& f) {
    std::vector<double> v;
    for (const auto& s : r.per_round) v.push_back(f(s));
    return v;
  };
  std::string out = "<section id=\"rounds\">\n<h2>Rounds</h2>\n<div class=\"charts\">\n";

  chart actions{"chart-actions", "Actions by kind", chart_kind::stacked_bars, {}};
  for (const auto& kind : action_kinds(r))
    actions.series.push_back({kind, per_round([&](const round_summary& s) {
                                auto it = s.actions.find(kind);
                                return it == s.actions.end() ? 0.0 : static_cast<double>(it->second);
                              })});
  out += render_chart(actions, rounds);

  chart active{"chart-active", "Active agents", chart_kind::stacked_bars, {}};
  active.series.push_back({"answered", per_round([](const round_summary& s) {
                             return static_cast<double>(s.active) - static_cast<double>(std::min(s.failed, s.active));
                           })});
  active.series.push_back({"failed", per_round([](const round_summary& s) { return static_cast<double>(s.failed); })});
  out += render_chart(active, rounds);

  chart tokens{"chart-tokens", "Tokens", chart_kind::stacked_bars, {}};
  tokens.series.push_back(
      {"input", per_round([](const round_summary& s) { return static_cast<double>(s.input_tokens); })});
  tokens.series.push_back(
      {"output", per_round([](const round_summary& s) { return static_cast<double>(s.output_tokens); })});
  out += render_chart(tokens, rounds);

  chart cost{"chart-cost", "Cost", chart_kind::stacked_bars, {}};
  cost.series.push_back({"cost", per_round([](const round_summary& s) { return s.cost; })});
  cost.label = [](double v) { return dollars(v); };
  cost.counts = false;
  out += render_chart(cost, rounds);

  chart latency{"chart-latency", "Activation latency (ms)", chart_kind::lines, {}};
  latency.series.push_back({"p50", per_round([](const round_summary& s) { return s.latency_p50_ms; })});
  latency.series.push_back({"p99", per_round([](const round_summary& s) { return s.latency_p99_ms; })});
  latency.label = [](double v) { return v < 10 ? fixed(v, 1) : grouped(v); };
  latency.counts = false;
  out += render_chart(latency, rounds);
  return out + "</div>\n</section>\n";
}

std::string totals(const scenario_report& r, const event_log_digest* log) {
  std::size_t refused = 0;
  for (const auto& s : r.per_round) refused += s.refused;
  std::string out = "<section id=\"totals\">\n<h2>Totals</h2>\n<div class=\"tables\">\n<table id=\"totals-table\">\n";
  out += row("agents", count(r.agents));
  out += row("rounds", grouped(r.rounds));
  if (r.resumed_after > 0) out += row("resumed after round", grouped(r.resumed_after));
  out += row("activations", count(r.activations));
  out += row("failed activations", count(r.activations_failed));
  out += row("refused actions", count(refused));
  out += row("interviews", count(r.interviews));
  out += row("input tokens", grouped(r.input_tokens));
  out += row("output tokens", grouped(r.output_tokens));
  out += row("cost", dollars(r.cost));
  out += row("seconds", fixed(r.seconds, 1));
  out += row("spawn seconds", fixed(r.spawn_seconds, 1));
  out += row("activations per second",
             r.activations_per_second < 100 ? fixed(r.activations_per_second, 1) : grouped(r.activations_per_second));
  if (log) out += row("checkpoints", count(log->checkpoints));
  out += "</table>\n";

  out += "<table id=\"actions-table\"><thead><tr><th>action</th><th>taken</th></tr></thead><tbody>\n";
  for (const auto& kind : action_kinds(r)) {
    auto it = r.actions.find(kind);
    out += "<tr>" + cell(kind) + cell(count(it == r.actions.end() ? 0 : it->second), true) + "</tr>\n";
  }
  out += "</tbody></table>\n";

  out +=
      "<table id=\"errors-table\"><thead><tr><th>error</th><th>activations</th><th>first message</th></tr></thead>"
      "<tbody>\n";
  for (const auto& [type, n] : r.errors_by_type) {
    std::string example;
    if (log)
      if (auto it = log->activation_errors.find(type); it != log->activation_errors.end()) example = it->second.example;
    out += "<tr>" + cell(type) + cell(count(n), true) + cell(example) + "</tr>\n";
  }
  if (r.errors_by_type.empty()) out += "<tr><td colspan=\"3\">No activation failed.</td></tr>\n";
  out += "</tbody></table>\n";

  if (log && !log->refusals.empty()) {
    out +=
        "<table id=\"refusals-table\"><thead><tr><th>refused by the world</th><th>actions</th></tr></thead>"
        "<tbody>\n";
    for (const auto& [what, n] : log->refusals) out += "<tr>" + cell(what) + cell(count(n), true) + "</tr>\n";
    out += "</tbody></table>\n";
  }
  return out + "</div>\n</section>\n";
}

std::string spread(const scenario_report& r, const event_log_digest& log) {
  std::string out = "<section id=\"spread\">\n<h2>Spread of the most reposted posts</h2>\n";
  if (log.spread.empty()) return out + "<p class=\"empty\">No post was reposted.</p>\n</section>\n";
  out += "<p>" + count(log.reposts) + " reposts in all.";
  if (!log.spread_exact)
    out += " More posts were reposted than the report tracks one by one: a post reposted at most " +
           count(log.spread_missing_at_most) + " times may be missing from this ranking (the counts shown are exact).";
  out += "</p>\n";

  // Rounds: the run's, and any a post spread in that the report does not cover.
  std::set<std::int64_t> round_set;
  for (const auto& s : r.per_round) round_set.insert(s.round);
  for (const auto& p : log.spread)
    for (const auto& [round, n] : p.per_round) round_set.insert(round);
  const std::vector<std::int64_t> rounds(round_set.begin(), round_set.end());
  chart c{"chart-spread", "Reposts per round", chart_kind::lines, {}};
  for (const auto& p : log.spread) {
    chart_series s{p.root, {}};
    for (auto round : rounds) {
      auto it = p.per_round.find(round);
      s.values.push_back(it == p.per_round.end() ? 0.0 : static_cast<double>(it->second));
    }
    c.series.push_back(std::move(s));
  }
  out += "<div class=\"charts\">\n" + render_chart(c, rounds) + "</div>\n";

  out +=
      "<table id=\"spread-table\"><thead><tr><th>#</th><th>post</th><th>author</th><th>posted in round</th>"
      "<th>reposts</th><th>reposters</th><th>reposts by round</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < log.spread.size(); ++i) {
    const auto& p = log.spread[i];
    std::string by_round;
    for (const auto& [round, n] : p.per_round)
      by_round += (by_round.empty() ? "" : ", ") + std::to_string(round) + ": " + count(n);
    out += "<tr>" + cell(std::to_string(i + 1), true) + cell(p.root) + cell(p.author.empty() ? "?" : p.author) +
           cell(p.posted_round > 0 ? std::to_string(p.posted_round) : "?", true) + cell(count(p.reposts), true) +
           cell(count(p.reposters), true) + cell(by_round) + "</tr>\n";
  }
  out += "</tbody></table>\n";

  for (const auto& p : log.spread) {
    out += "<details class=\"edges\"><summary>Who reposted " + esc(p.root) + " from whom</summary>\n";
    out += "<table><thead><tr><th>round</th><th>from</th><th>reposted by</th></tr></thead><tbody>\n";
    for (const auto& e : p.edges)
      out +=
          "<tr>" + cell(std::to_string(e.round), true) + cell(e.from.empty() ? "?" : e.from) + cell(e.to) + "</tr>\n";
    out += "</tbody></table>\n";
    if (p.reposts > p.edges.size())
      out += "<p>And " + count(p.reposts - p.edges.size()) + " more reposts in the event log.</p>\n";
    out += "</details>\n";
  }
  return out + "</section>\n";
}

std::string interviews(const event_log_digest& log) {
  std::string out = "<section id=\"interviews\">\n<h2>Interviews</h2>\n";
  if (log.interviews.empty()) return out + "<p class=\"empty\">The workflow asked no interview.</p>\n</section>\n";
  for (const auto& iv : log.interviews) {
    const std::string when = iv.round > 0 ? "after round " + std::to_string(iv.round) : "before round 1";
    out += "<div class=\"interview\">\n<h3>Step " + std::to_string(iv.step) + ", " + when +
           "</h3>\n<p class=\"question\">" + esc(iv.question) + "</p>\n<p>Answered: " + count(iv.answers) +
           ", failed: " + count(iv.errors) + ".</p>\n";
    out += "<table><thead><tr><th>agent</th><th>answer</th></tr></thead><tbody>\n";
    for (const auto& a : iv.shown)
      out +=
          "<tr>" + cell(a.agent) +
          (a.error_type.empty() ? cell(a.text) : "<td class=\"error\">" + esc(a.error_type + ": " + a.text) + "</td>") +
          "</tr>\n";
    out += "</tbody></table>\n";
    const std::size_t all = iv.answers + iv.errors;
    if (all > iv.shown.size()) out += "<p>And " + count(all - iv.shown.size()) + " more in the event log.</p>\n";
    out += "</div>\n";
  }
  return out + "</section>\n";
}

std::string interventions(const event_log_digest& log) {
  if (log.interventions_total == 0) return {};
  std::string out =
      "<section id=\"interventions\">\n<h2>Interventions</h2>\n<table><thead><tr><th>step</th>"
      "<th>round</th><th>action</th><th>as</th><th>arguments</th><th>result</th></tr></thead><tbody>\n";
  for (const auto& i : log.interventions)
    out += "<tr>" + cell(std::to_string(i.step), true) + cell(std::to_string(i.round), true) + cell(i.action) +
           cell(i.as) + "<td><code>" + esc(i.arguments) + "</code></td>" +
           (i.error.empty() ? "<td><code>" + esc(i.result) + "</code></td>"
                            : "<td class=\"error\">refused: " + esc(i.error) + "</td>") +
           "</tr>\n";
  out += "</tbody></table>\n";
  if (log.interventions_total > log.interventions.size())
    out += "<p>And " + count(log.interventions_total - log.interventions.size()) + " more in the event log.</p>\n";
  return out + "</section>\n";
}

// Every round's figures as numbers, the world's own included.
std::string round_table(const scenario_report& r) {
  std::vector<std::string> world_keys;
  for (const auto& s : r.per_round)
    for (const auto& [k, v] : s.world)
      if (std::find(world_keys.begin(), world_keys.end(), k) == world_keys.end()) world_keys.emplace_back(k);
  std::string out =
      "<section id=\"round-figures\">\n<details><summary>Figures by round</summary>\n<table><thead><tr><th>round</th>"
      "<th>hour</th><th>active</th><th>failed</th><th>actions</th><th>refused</th><th>input tokens</th>"
      "<th>output tokens</th><th>cost</th><th>seconds</th><th>p50 ms</th><th>p99 ms</th>";
  for (const auto& k : world_keys) out += "<th>" + esc(k) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& s : r.per_round) {
    std::size_t actions = 0;
    for (const auto& [k, n] : s.actions) actions += n;
    out += "<tr>" + cell(std::to_string(s.round), true) + cell(std::to_string(s.hour) + ":00", true) +
           cell(count(s.active), true) + cell(count(s.failed), true) + cell(count(actions), true) +
           cell(count(s.refused), true) + cell(grouped(s.input_tokens), true) + cell(grouped(s.output_tokens), true) +
           cell(dollars(s.cost), true) + cell(fixed(s.seconds, 2), true) + cell(fixed(s.latency_p50_ms, 1), true) +
           cell(fixed(s.latency_p99_ms, 1), true);
    for (const auto& k : world_keys) {
      const auto* v = s.world.if_contains(k);
      out += cell(v ? json_text(*v) : std::string(), true);
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n</details>\n</section>\n";
}

constexpr const char* style = R"(
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2330; margin: 24px auto; max-width: 1480px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; } h3 { font-size: 15px; margin: 16px 0 4px; }
.sub { color: #5b6475; margin: 0; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure.chart { margin: 0; border: 1px solid #dde1e8; border-radius: 6px; padding: 8px 10px; flex: 0 1 700px; }
figure.chart svg { max-width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg .grid { stroke: #e6e9ef; } svg text { font-size: 11px; fill: #5b6475; }
svg text.y { text-anchor: end; } svg text.x { text-anchor: middle; } svg .line { stroke-width: 2; }
.legend { list-style: none; padding: 0; margin: 4px 0 0; display: flex; flex-wrap: wrap; gap: 4px 14px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; }
.tables { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
table { border-collapse: collapse; } th, td { padding: 3px 10px; border-bottom: 1px solid #e6e9ef; text-align: left; vertical-align: top; }
th[scope=row] { font-weight: normal; color: #5b6475; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.error { color: #b3261e; } .question { font-style: italic; } .empty { color: #5b6475; }
details { margin: 8px 0; } summary { cursor: pointer; } code { font-size: 12px; word-break: break-all; }
)";

}  // namespace

std::string html_report(const scenario_report& report, const event_log_digest* log) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + esc(report.name) + " - troupe simulation report</title>\n<style>" + style + "</style>\n</head>\n";
  out += "<body>\n<header>\n<h1>" + esc(report.name) + "</h1>\n<p class=\"sub\">" + count(report.agents) + " agents, " +
         grouped(report.rounds) + " rounds";
  if (log && !log->world.empty()) out += ", world " + esc(log->world) + ", seed " + std::to_string(log->seed);
  if (report.stopped) out += "; stopped before the workflow's end";
  out += "</p>\n</header>\n";
  out += charts(report);
  out += totals(report, log);
  if (log) {
    out += spread(report, *log);
    out += interviews(*log);
    out += interventions(*log);
  } else {
    out +=
        "<section id=\"spread\"><h2>Spread, interviews and interventions</h2><p class=\"empty\">The run kept no "
        "event log: they are not known.</p></section>\n";
  }
  out += round_table(report);
  return out + "</body>\n</html>\n";
}

void write_html_report(const scenario_report& report, const std::string& event_log_path, const std::string& out_path) {
  std::optional<event_log_digest> log;
  if (!event_log_path.empty()) log = digest_event_log(event_log_path);
  const std::string page = html_report(report, log ? &*log : nullptr);
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out) throw report_error("cannot write the report " + out_path);
  out.write(page.data(), static_cast<std::streamsize>(page.size()));
  out.close();
  if (!out) throw report_error("cannot write the report " + out_path);
}

}  // namespace troupe
