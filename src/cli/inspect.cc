// sluice inspect PATH...: what record files hold, and whether they are whole.
#include <cstdio>

#include "cli/common.h"
#include "sluice/dataset.h"

namespace sluice::cli {
namespace {

struct InspectCli {
  std::vector<std::string> paths;
  bool json = false;
  std::string image_key, label_key;
  InspectOptions options;
};

int run(InspectCli& c) {
  if (!c.image_key.empty()) {
    c.options.keys = tensorflow_feature_keys();
    c.options.keys.image = c.image_key;
    c.options.keys.format = c.options.keys.height = c.options.keys.width = c.options.keys.key = "";
  }
  if (!c.label_key.empty()) {
    if (c.options.keys.image.empty()) {
      return report_error("inspect", invalid_argument_error("--label-key needs --image-key"));
    }
    c.options.keys.label = c.label_key;
  }
  auto report = inspect(c.paths, c.options);
  if (!report.ok()) return report_error("inspect", report.status());
  std::fputs((c.json ? format_inspect_json(*report) : format_inspect_text(*report)).c_str(),
             stdout);
  for (const Problem& p : report->problems)
    std::fprintf(stderr, "sluice inspect: %s\n", p.to_string().c_str());
  return report->ok() ? kExitOk : kExitFailure;
}

}  // namespace

void register_inspect(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<InspectCli>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "Summarise record files (count, schema, classes, image sizes); exit 1 on any corruption");
  sub->add_option("paths", c->paths,
                  "Dataset folders, folders of record files, files or glob patterns")
      ->required();
  sub->add_flag(
      "--verify", c->options.verify,
      "Also decode every image, compare indexes with shards and shards with dataset.json");
  sub->add_flag("--json", c->json, "Print the report as JSON");
  sub->add_option("--image-key", c->image_key,
                  "Feature holding the encoded image (default: detect)");
  sub->add_option("--label-key", c->label_key, "Feature holding the label (with --image-key)");
  sub->add_option("--max-pixels", c->options.max_pixels, "Pixel limit for image headers")
      ->capture_default_str();
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
