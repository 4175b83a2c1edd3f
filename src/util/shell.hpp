// Shell words for the commands gpuplan prints for a user to run.
#pragma once

#include <string>

namespace gpuplan::detail {

// A word as it is when it needs no quoting, else in single quotes.
inline std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789-_./=:+,@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace gpuplan::detail
