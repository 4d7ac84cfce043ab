// Fuzzes the record layer: framing, CRCs, gzip/zlib detection and inflate,
// and the index built by scanning. Must never crash, hang or allocate more
// than the bytes held.
#include "sluice/record.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::MemFile f(data, size);
  if (!f.ok()) return 0;
  sluice::RecordReaderOptions ro;
  ro.buffer_bytes = 4096;
  ro.max_record_bytes = 1 << 24;
  auto r = sluice::RecordReader::open(f.path(), ro);
  if (r.ok()) {
    std::string_view rec;
    for (int i = 0; i < 100000; ++i) {
      sluice::Status s = (*r)->next(&rec);
      if (!s.ok() && (*r)->stuck()) break;
      if (s.code() == sluice::StatusCode::kOutOfRange) break;
    }
  }
  sluice::RecordFileOptions fo;
  fo.max_record_bytes = 1 << 24;
  auto file = sluice::RecordFile::open(f.path(), fo);
  if (file.ok()) {
    std::string buf;
    std::string_view rec;
    for (size_t i = 0; i < (*file)->size() && i < 1000; ++i) (*file)->read(i, &buf, &rec).ignore();
  }
  return 0;
}
