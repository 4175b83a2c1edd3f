// Reading and writing the user's files.
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"

namespace gpuplan {

std::string read_text_file(const std::string& path, std::string_view field) {
  if (path == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(std::string(field), "'" + path + "' (a directory)", "a readable file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::error_code error(errno, std::generic_category());
    throw InputError(std::string(field), "'" + path + "' (" + error.message() + ")", "a readable file");
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text_file(const std::string& path, std::string_view text, std::string_view field) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(std::string(field), "'" + path + "' (cannot be written)", "a writable file path");
  out << text;
  if (!out) throw InputError(std::string(field), "'" + path + "' (write failed)", "a writable file path");
}

}  // namespace gpuplan
