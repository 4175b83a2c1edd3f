#pragma once
// std::from_chars for doubles where the standard library has it, and the same contract where it does not
// (emscripten 3.1's libc++ has only the integer overloads): no leading space or '+', no hexadecimal, the C
// locale's decimal point.
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string>
#include <version>

namespace gpuplan::detail {

inline std::from_chars_result from_chars_double(const char* first, const char* last, double& value) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  return std::from_chars(first, last, value);
#else
  const char* digits = first != last && *first == '-' ? first + 1 : first;   // hexadecimal after a sign too
  const bool malformed = first == last || *first == ' ' || *first == '\t' || *first == '\n' || *first == '+' ||
                         (last - digits > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'));
  if (malformed) return {first, std::errc::invalid_argument};
  const std::string text(first, last);   // strtod needs a terminated string
  char* end = nullptr;
  errno = 0;
  const double parsed = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return {first, std::errc::invalid_argument};
  if (errno == ERANGE) return {first + (end - text.c_str()), std::errc::result_out_of_range};
  value = parsed;
  return {first + (end - text.c_str()), std::errc()};
#endif
}

}  // namespace gpuplan::detail
