// Opens any input the analyzer reads (a strata trace directory or file, a
// DFTracer .pfw/.pfw.gz file or directory) as a Source of units, using the
// importer's one input detector. Throws InputError naming the input and
// what is wrong with it.
#pragma once

#include <memory>
#include <string>

#include "analysis/model.h"

namespace strata::analysis {

std::unique_ptr<Source> open_source(const std::string& input);

}  // namespace strata::analysis
