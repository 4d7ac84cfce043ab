#include "ops/report_sections.h"

#include <fmt/format.h>

#include "ops/report.h"

namespace sluice::detail {
namespace {

using json = nlohmann::ordered_json;

// System fonts only (nothing to fetch); print drops the hover bands and
// keeps each section on one page where it fits.
constexpr const char* kStyle = R"css(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--panel:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:#fff;max-width:1000px;margin:0 auto;padding:24px 28px}
h1{font-size:26px;margin:0 0 2px}
h2{font-size:18px;margin:0 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:18px 0 4px;color:var(--muted)}
header .sub{margin:0;color:var(--muted)}
header .data{font-weight:600;color:var(--fg);word-break:break-all}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;
word-break:break-all}
.cmd{margin:6px 0 0;padding:6px 10px;background:var(--panel);border-radius:6px}
section{margin:26px 0;break-inside:avoid}
.note{color:var(--muted);margin:4px 0 8px}
.verdict{border:1px solid var(--line);border-left:6px solid #2da44e;border-radius:6px;
padding:10px 16px;background:#f3fbf5}
.verdict h2{border:0;margin:0;padding:0;font-size:13px;text-transform:uppercase;
letter-spacing:.06em;color:var(--muted)}
.verdict p{margin:4px 0}
.verdict .verdict-text{font-size:18px;font-weight:600}
.verdict.input-bound{border-left-color:#d4a72c;background:#fff8e5}
.verdict.consumer-bound{border-left-color:#0969da;background:#eef6ff}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:10px}
.figure{border:1px solid var(--line);border-radius:6px;padding:8px 12px}
.figure .v{font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
.figure .k{font-size:12px;color:var(--muted)}
svg.chart{display:block;width:100%;height:auto;margin:4px 0}
svg.chart text{font-family:inherit}
.tick{font-size:11px;fill:#59636e}
.label,.legend{font-size:12px;fill:#1f2328}
.barlabel{font-size:13px;fill:#1f2328}
.grid{stroke:#eaeef2}
.axis{stroke:#8c959f}
.line{fill:none;stroke-width:2;stroke-linejoin:round;stroke-linecap:round}
.hit{fill:transparent}
.hit:hover{fill:rgba(31,35,40,.07)}
.inbar{font-size:11px;font-weight:600;fill:#fff}
.inbar.dark{fill:#1f2328}
.frame{fill:none;stroke:#8c959f}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid var(--line)}
th{font-weight:600;background:var(--panel)}
.num{text-align:right;white-space:nowrap}
.barcell{width:30%}
.hbar{height:12px;margin-top:4px;background:#4e79a7;border-radius:2px}
tr.skipped td{color:var(--muted)}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0 0 12px}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0}
.level{display:inline-block;min-width:3.2em;text-align:center;border-radius:4px;padding:0 6px;
font-size:12px;font-weight:600}
.level.ok{background:#dafbe1;color:#116329}
.level.warn{background:#fff8c5;color:#7d4e00}
.level.fail{background:#ffebe9;color:#a40e26}
.level.info{background:#ddf4ff;color:#0550ae}
.fix{color:var(--muted)}
footer{margin-top:32px;padding-top:8px;border-top:1px solid var(--line);color:var(--muted);
font-size:12px}
@media print{
body{max-width:none;padding:0;font-size:11px}
.hit{display:none}
.verdict,.figure,.level,th{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
)css";

std::string e(std::string_view s) {
  return html_escape(s);
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

double num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

const json& obj(const json& j, const char* key) {
  static const json kEmpty = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

std::string kv(const std::string& k, const std::string& v) {
  return fmt::format("<dt>{}</dt><dd>{}</dd>", e(k), e(v));
}

std::string gb(double b) {
  return fmt::format("{:.1f} GB", b / 1e9);
}

std::string gpu_table(const json& gpu) {
  auto it = gpu.find("devices");
  if (it == gpu.end() || !it->is_array() || it->empty()) return "";
  std::string out =
      "<table class=\"gpus\"><thead><tr><th>GPU</th><th>name</th><th class=\"num\">memory</th>"
      "<th class=\"num\">compute capability</th></tr></thead><tbody>";
  int i = 0;
  for (const json& g : *it) {
    if (!g.is_object()) continue;
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", i++,
        e(str(g, "name")), gb(num(g, "memory_bytes")), e(str(g, "compute_capability")));
  }
  return out + "</tbody></table>";
}

std::string checks_table(const json& checks) {
  if (!checks.is_array() || checks.empty()) return "";
  std::string out =
      "<h3>Every check</h3><table class=\"checks\"><thead><tr><th>level</th><th>area</th>"
      "<th>finding</th></tr></thead><tbody>";
  for (const json& c : checks) {
    if (!c.is_object()) continue;
    std::string level = str(c, "level");
    std::string cls = level == "ok" || level == "warn" || level == "fail" ? level : "info";
    std::string fix = str(c, "fix");
    out += fmt::format(
        "<tr><td><span class=\"level {}\">{}</span></td><td>{}</td><td>{}{}</td></tr>", cls,
        e(level), e(str(c, "area")), e(str(c, "detail")),
        fix.empty() || level == "ok" ? "" : "<div class=\"fix\">fix: " + e(fix) + "</div>");
  }
  return out + "</tbody></table>";
}

}  // namespace

std::string report_head(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
      "<script>window.addEventListener('error',function(ev){{"
      "document.documentElement.setAttribute('data-page-error',String(ev.message||ev.type));}});"
      "</script>\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
      e(title), kStyle);
}

// " VERSION", or nothing. A function of its own: GCC 12 at -O3 reports a
// false -Wrestrict (GCC bug 105329) for `" " + string` inlined here.
std::string version_suffix(const std::string& version) {
  if (version.empty()) return std::string();
  std::string out(1, ' ');
  out.append(e(version));
  return out;
}

std::string report_tail(const std::string& version) {
  return fmt::format(
      "<footer>Written by sluice{} (<code>sluice bench --report</code>). The page is "
      "self-contained: charts are inline SVG, and it loads nothing from anywhere.</footer>\n"
      "<script>document.documentElement.setAttribute('data-ready','1');</script>\n"
      "</body>\n</html>\n",
      version_suffix(version));
}

std::string machine_section(const json& d) {
  std::string out = "<section id=\"machine\"><h2>Machine</h2>";
  if (!d.is_object()) {
    return out + "<p class=\"note\">Not examined (see <code>sluice doctor</code>).</p></section>\n";
  }
  const json& cpu = obj(d, "cpu");
  const json& mem = obj(d, "memory");
  const json& gpu = obj(d, "gpu");
  const json& cuda = obj(d, "cuda");
  out += "<dl class=\"kv\">";
  out += kv("CPU", str(cpu, "model").empty() ? "unknown" : str(cpu, "model"));
  out += kv("cores", fmt::format("{:.0f} logical", num(cpu, "cores")));
  out += kv("SIMD", str(cpu, "simd").empty() ? "unknown" : str(cpu, "simd"));
  out += kv("memory", fmt::format("{} total, {} available", gb(num(mem, "total_bytes")),
                                  gb(num(mem, "available_bytes"))));
  std::string driver = str(gpu, "driver");
  out += kv("NVIDIA driver", driver.empty()
                                 ? "none found"
                                 : fmt::format("{} (CUDA {})", driver, str(gpu, "cuda_driver")));
  std::string runtime = str(cuda, "runtime");
  out += kv("CUDA runtime", runtime.empty() || runtime == "none" ? "none found" : runtime);
  auto cb = cuda.find("cuda_build");
  out += kv("sluice build", cb != cuda.end() && cb->is_boolean() && cb->get<bool>()
                                ? "with CUDA"
                                : "without CUDA (CPU data path)");
  if (auto checks = d.find("checks"); checks != d.end() && checks->is_array()) {
    for (const json& c : *checks) {
      if (c.is_object() && str(c, "area") == "library") out += kv("library", str(c, "detail"));
    }
  }
  out += "</dl>";
  out += gpu_table(gpu);
  if (auto checks = d.find("checks"); checks != d.end()) out += checks_table(*checks);
  return out + "</section>\n";
}

std::string options_section(const json& options) {
  if (!options.is_object() || options.empty()) return "";
  std::string out =
      "<section id=\"options\"><h2>Pipeline options</h2><table class=\"options\"><thead><tr>"
      "<th>option</th><th>value</th></tr></thead><tbody>";
  for (const auto& [name, v] : options.items()) {
    std::string value = v.is_string() ? v.get<std::string>() : v.dump();
    out += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code></td></tr>", e(name),
                       e(value.empty() ? "(default)" : value));
  }
  return out + "</tbody></table></section>\n";
}

}  // namespace sluice::detail
