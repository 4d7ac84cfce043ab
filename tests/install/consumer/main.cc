// Streams one epoch of a dataset through an installed sluice and prints
// what it got: "batches N images M size WxH".
#include <sluice/pipeline.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer DATASET\n");
    return 2;
  }
  sluice::PipelineOptions o;
  o.sources = {argv[1]};
  o.batch_size = 4;
  o.sample.width = o.sample.height = 32;
  o.workers = 2;
  auto pipe = sluice::Pipeline::create(o);
  if (!pipe.ok()) {
    std::fprintf(stderr, "consumer: %s\n", pipe.status().to_string().c_str());
    return 1;
  }
  uint64_t batches = 0, images = 0;
  int width = 0, height = 0;
  for (;;) {
    auto b = (*pipe)->next();
    if (b.status().code() == sluice::StatusCode::kOutOfRange) break;
    if (!b.ok()) {
      std::fprintf(stderr, "consumer: %s\n", b.status().to_string().c_str());
      return 1;
    }
    ++batches;
    images += b->size();
    width = b->spec().width;
    height = b->spec().height;
  }
  std::printf("batches %llu images %llu size %dx%d\n", static_cast<unsigned long long>(batches),
              static_cast<unsigned long long>(images), width, height);
  return 0;
}
