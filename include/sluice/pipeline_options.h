// The pipeline's options, declared once: name, command-line flag, default,
// help and how to parse a value. The CLI (`sluice bench`) builds its flags
// from this table and the Python module its keyword arguments and
// docstring, so the three never drift apart.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/pipeline.h"
#include "sluice/status.h"

namespace sluice {

struct OptionSpec {
  std::string name;           // Python keyword, e.g. "batch_size"
  std::string flag;           // command-line flag, e.g. "--batch"
  std::string default_value;  // as text, e.g. "256"
  std::string help;
  // Parses `value` into the options; kInvalidArgument names the option.
  std::function<Status(std::string_view value, PipelineOptions* options)> set;
};

// Every option except the source paths.
const std::vector<OptionSpec>& pipeline_option_specs();

// Applies name=value pairs (Python keywords); an unknown name is
// kNotFound, a bad value kInvalidArgument naming the option.
Status apply_pipeline_option(std::string_view name, std::string_view value,
                             PipelineOptions* options);

}  // namespace sluice
