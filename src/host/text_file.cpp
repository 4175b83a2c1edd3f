// Reading and writing the user's files.
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"

namespace gpuplan {

namespace {

// The largest input gpuplan reads: far above any config, topology output or nccl-tests log, and a bound on what
// a device or a wrong path (/dev/zero, a disk image) can make it hold.
constexpr std::size_t kMaxInputBytes = 64u << 20;

std::string read_bounded(std::istream& in, const std::string& path, std::string_view field) {
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputBytes)
      throw InputError(std::string(field), "'" + path + "' (more than 64 MiB)", "a text file of at most 64 MiB");
  }
  return text;
}

}  // namespace

std::string read_text_file(const std::string& path, std::string_view field) {
  if (path == "-") return read_bounded(std::cin, "-", field);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(std::string(field), "'" + path + "' (a directory)", "a readable file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::error_code error(errno, std::generic_category());
    throw InputError(std::string(field), "'" + path + "' (" + error.message() + ")", "a readable file");
  }
  return read_bounded(in, path, field);
}

void write_text_file(const std::string& path, std::string_view text, std::string_view field) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(std::string(field), "'" + path + "' (cannot be written)", "a writable file path");
  out << text;
  if (!out) throw InputError(std::string(field), "'" + path + "' (write failed)", "a writable file path");
}

}  // namespace gpuplan
