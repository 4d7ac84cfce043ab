// convert and --finish with an s3:// output. Shards are made in a local
// staging folder exactly as for a folder output, then each finished shard
// goes up with a multipart upload (its index beside it), and the file that
// makes the conversion visible (dataset.json, or a part's record) goes up
// last: a conversion interrupted at any point leaves no dataset.json (or
// part record) that names a shard not wholly uploaded. The staging folder
// is removed afterwards, whatever happened.
#pragma once

#include <string>

#include "sluice/dataset.h"

namespace sluice::detail {

Result<ConvertReport> convert_to_url(const std::string& src, const std::string& url,
                                     const ConvertOptions& options);
Result<ConvertReport> finish_url(const std::string& url, const FinishOptions& options);
// --finish with the part records and dataset.json in `out_dir` and the
// shards at `shards_at` (the same folder, or the s3:// location).
Result<ConvertReport> finish_staged(const std::string& out_dir, const std::string& shards_at,
                                    const FinishOptions& options);

// Uploads a local file to an s3:// URL: one PUT up to the part size, else a
// multipart upload in parts of the part size (aborted on failure, so no partial
// object appears).
// The part size is 64 MiB, or SLUICE_UPLOAD_PART_MB (5 or more: S3's
// smallest part) where set.
Status upload_file(const std::string& path, const std::string& url);

}  // namespace sluice::detail
