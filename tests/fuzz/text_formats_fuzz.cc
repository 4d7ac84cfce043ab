// Fuzzes the text formats sluice reads from users: DALI index files,
// dataset.json manifests, convert's CSV/TSV list files, advise's GPU
// catalogue (GPUs and measurements), price files, training summaries, and
// the pipeline state file, advise's bench and doctor reports, convert's part
// records, and the object store's: URLs, AWS credentials and config files
// (INI) and S3's XML answers (listings, errors).
#include "dataset/part_record.h"
#include "ops/advise.h"
#include "ops/train_summary.h"
#include "remote/aws_config.h"
#include "remote/url.h"
#include "remote/xml.h"
#include "sluice/dataset.h"
#include "sluice/pipeline.h"
#include "sluice/record.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto idx = sluice::parse_index(text, "fuzz.idx");
  if (idx.ok()) {
    auto again = sluice::parse_index(sluice::format_index(*idx), "fuzz.idx");
    if (!again.ok() || *again != *idx) __builtin_trap();
  }
  auto m = sluice::parse_manifest(text, "fuzz.json");
  if (m.ok()) {
    auto again = sluice::parse_manifest(sluice::format_manifest(*m), "fuzz.json");
    if (!again.ok()) __builtin_trap();
  }
  const auto gpus = sluice::parse_gpu_catalog(text, "fuzz.json");
  if (gpus.ok()) {
    for (const auto& g : *gpus) {
      if (g.name.empty()) __builtin_trap();
    }
  }
  const auto ms = sluice::parse_measurements(text, "fuzz.json");
  if (ms.ok()) {
    for (const auto& m : *ms) {
      if (m.source.empty() || !(m.images_per_second > 0) || m.gpus < 1) __builtin_trap();
    }
  }
  sluice::parse_prices(text, "fuzz.json").status().ignore();
  const auto run = sluice::parse_train_summary(text, "fuzz.json");
  if (run.ok() && (run->world_size < 1 || !(run->images_per_second > 0))) __builtin_trap();
  const auto state = sluice::parse_pipeline_state(text, "fuzz.state");
  if (state.ok()) {
    const auto again =
        sluice::parse_pipeline_state(sluice::format_pipeline_state(*state), "fuzz.state");
    if (!again.ok() || !(*again == *state)) __builtin_trap();
  }
  const auto bench = sluice::parse_bench_point(text, "fuzz.json");
  if (bench.ok() && !(bench->cores > 0 && bench->images_per_second > 0 && bench->image_bytes >= 0))
    __builtin_trap();
  const auto disk = sluice::parse_disk_report(text, "fuzz.json");
  if (disk.ok() && !(*disk > 0)) __builtin_trap();
  sluice::detail::parse_part_record(text, "fuzz.part.json").status().ignore();
  const auto url = sluice::remote::parse_url(text);
  if (url.ok() && url->scheme == sluice::remote::ObjectUrl::Scheme::kS3 && url->bucket.empty())
    __builtin_trap();
  const auto ini = sluice::remote::parse_ini(text, "fuzz.ini");
  if (ini.ok()) {
    for (const auto& [section, keys] : *ini) {
      for (const auto& [key, value] : keys) {
        if (key.empty()) __builtin_trap();
      }
    }
  }
  const auto page = sluice::remote::parse_list_page(text, "s3://fuzz/");
  if (page.ok() && page->truncated && page->next_token.empty()) __builtin_trap();
  sluice::remote::parse_error_body(text);
  sluice::MemFile f(data, size);
  if (f.ok()) sluice::read_list_file(f.path()).status().ignore();
  return 0;
}
