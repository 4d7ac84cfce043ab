#include "remote/xml.h"

#include <charconv>

namespace sluice::remote {
namespace {

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

Result<uint32_t> numeric_reference(std::string_view ref) {
  int base = 10;
  if (!ref.empty() && (ref.front() == 'x' || ref.front() == 'X')) {
    base = 16;
    ref.remove_prefix(1);
  }
  uint32_t cp = 0;
  auto r = std::from_chars(ref.data(), ref.data() + ref.size(), cp, base);
  if (ref.empty() || r.ec != std::errc() || r.ptr != ref.data() + ref.size() || cp == 0 ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return data_loss_error("bad character reference '&#" + std::string(ref) + ";'");
  }
  return cp;
}

std::string first_text(std::string_view xml, std::string_view tag) {
  auto e = xml_elements(xml, tag);
  if (e.empty()) return "";
  auto t = xml_text(e.front());
  return t.ok() ? *t : std::string(e.front());
}

}  // namespace

std::vector<std::string_view> xml_elements(std::string_view text, std::string_view tag) {
  std::vector<std::string_view> out;
  // Built by appending: GCC 12 at -O3 warns (-Wrestrict, a known false
  // positive) on "<" + std::string(tag).
  std::string open("<");
  open.append(tag);
  std::string close("</");
  close.append(tag).append(">");
  size_t pos = 0;
  for (;;) {
    size_t a = text.find(open, pos);
    if (a == std::string_view::npos) break;
    size_t after = a + open.size();
    // <Tag>, <Tag attr="...">, <Tag/>; not <TagOther>.
    if (after >= text.size() ||
        (text[after] != '>' && text[after] != '/' && text[after] != ' ' && text[after] != '\t' &&
         text[after] != '\n' && text[after] != '\r')) {
      pos = after;
      continue;
    }
    size_t gt = text.find('>', after);
    if (gt == std::string_view::npos) break;
    if (text[gt - 1] == '/') {  // empty element
      out.push_back(text.substr(gt + 1, 0));
      pos = gt + 1;
      continue;
    }
    size_t b = text.find(close, gt + 1);
    if (b == std::string_view::npos) break;
    out.push_back(text.substr(gt + 1, b - gt - 1));
    pos = b + close.size();
  }
  return out;
}

Result<std::string> xml_text(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  while (!raw.empty()) {
    size_t amp = raw.find('&');
    out.append(raw.substr(0, amp));
    if (amp == std::string_view::npos) break;
    raw.remove_prefix(amp + 1);
    size_t semi = raw.find(';');
    if (semi == std::string_view::npos || semi > 10)
      return data_loss_error("unterminated XML entity");
    std::string_view ent = raw.substr(0, semi);
    raw.remove_prefix(semi + 1);
    if (ent == "amp") {
      out += '&';
    } else if (ent == "lt") {
      out += '<';
    } else if (ent == "gt") {
      out += '>';
    } else if (ent == "quot") {
      out += '"';
    } else if (ent == "apos") {
      out += '\'';
    } else if (!ent.empty() && ent.front() == '#') {
      SLUICE_ASSIGN_OR_RETURN(uint32_t cp, numeric_reference(ent.substr(1)));
      append_utf8(cp, &out);
    } else {
      return data_loss_error("unknown XML entity '&" + std::string(ent) + ";'");
    }
  }
  return out;
}

Result<ListPage> parse_list_page(std::string_view xml, std::string_view name) {
  auto bad = [&](const std::string& why) {
    return data_loss_error(std::string(name) + ": listing response: " + why);
  };
  if (xml_elements(xml, "ListBucketResult").empty()) return bad("no <ListBucketResult>");
  ListPage page;
  for (std::string_view c : xml_elements(xml, "Contents")) {
    auto keys = xml_elements(c, "Key");
    auto sizes = xml_elements(c, "Size");
    if (keys.size() != 1 || sizes.size() != 1) return bad("an entry without one <Key> and <Size>");
    ListedObject o;
    auto key = xml_text(keys[0]);
    if (!key.ok()) return bad(std::string(key.status().message()));
    o.key = *key;
    auto r = std::from_chars(sizes[0].data(), sizes[0].data() + sizes[0].size(), o.size);
    if (r.ec != std::errc() || r.ptr != sizes[0].data() + sizes[0].size())
      return bad("size '" + std::string(sizes[0]) + "' of '" + o.key + "' is not a number");
    o.etag = first_text(c, "ETag");
    page.objects.push_back(std::move(o));
  }
  std::string truncated = first_text(xml, "IsTruncated");
  page.truncated = truncated == "true";
  if (page.truncated) {
    page.next_token = first_text(xml, "NextContinuationToken");
    if (page.next_token.empty()) return bad("truncated, but no <NextContinuationToken>");
  }
  return page;
}

std::string parse_error_body(std::string_view xml) {
  if (xml_elements(xml, "Error").empty()) return "";
  std::string code = first_text(xml, "Code");
  std::string message = first_text(xml, "Message");
  if (code.empty()) return message;
  return message.empty() ? code : code + ": " + message;
}

}  // namespace sluice::remote
