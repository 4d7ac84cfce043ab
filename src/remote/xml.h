// The few S3 XML responses sluice reads: ListObjectsV2 pages, error bodies
// and CreateMultipartUpload's UploadId. S3's XML is flat and regular
// (elements, text, the five predefined entities and numeric references; no
// attributes we need, no CDATA), so this reads exactly that and refuses what
// it does not understand; it is fuzzed (tests/fuzz/text_formats_fuzz.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::remote {

// The raw contents of each <tag>...</tag> (no nesting of the same tag), in
// order.
std::vector<std::string_view> xml_elements(std::string_view text, std::string_view tag);
// Element text with entities decoded; an unknown or malformed entity is
// kDataLoss.
Result<std::string> xml_text(std::string_view raw);

struct ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

struct ListPage {
  std::vector<ListedObject> objects;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken, when truncated
};

// A ListObjectsV2 response body; `name` (the listing's URL) in errors.
Result<ListPage> parse_list_page(std::string_view xml, std::string_view name);

// <Error><Code>..</Code><Message>..</Message></Error>: "Code: Message", or
// "" when the body is not an S3 error document.
std::string parse_error_body(std::string_view xml);

}  // namespace sluice::remote
