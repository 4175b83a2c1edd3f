#include "gpuplan/text_file.hpp"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "gpuplan/error.hpp"

namespace gpuplan {

std::string read_text_file(const std::string& path, std::string_view option) {
  if (path == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::error_code ec(errno, std::generic_category());
    throw InputError(std::string(option), "'" + path + "' (" + ec.message() + ")", "a readable file");
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace gpuplan
