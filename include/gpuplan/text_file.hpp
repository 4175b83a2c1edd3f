#pragma once
// Reading user files for the front ends ("-" is standard input). Throws InputError naming the option.
#include <string>
#include <string_view>

namespace gpuplan {

std::string read_text_file(const std::string& path, std::string_view option);

}  // namespace gpuplan
