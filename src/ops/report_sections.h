// Pieces of the bench report page that do not depend on the run: the head
// (styles, the error hook, the security policy), the machine and options
// sections, and the end of the page.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::detail {

// Everything up to and including <body>. The first script records any
// script error into <html data-page-error="..."> (tests read it from the
// DOM); the policy forbids every fetch, so the page cannot reach the
// network even if a future edit tried to.
std::string report_head(const std::string& title);
// The closing script marks <html data-ready="1">: the page's scripts ran.
std::string report_tail(const std::string& version);

// From `sluice doctor --json` (null: not examined).
std::string machine_section(const nlohmann::ordered_json& doctor);
// From the "options" object of `sluice bench --json`.
std::string options_section(const nlohmann::ordered_json& options);

}  // namespace sluice::detail
