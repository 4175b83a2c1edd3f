#pragma once
// Errors caused by what the user gave us. The CLI prints them on one line and exits with status 2.
#include <stdexcept>
#include <string>

namespace gpuplan {

class InputError : public std::runtime_error {
 public:
  // field: the option or key at fault ("--tp", "config.json: hidden_size"); given: the value received;
  // accepted: what would have been accepted.
  InputError(const std::string& field, const std::string& given, const std::string& accepted)
      : std::runtime_error(field + ": " + given + "; accepted: " + accepted), field_(field) {}
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace gpuplan
