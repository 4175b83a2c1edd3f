#pragma once
// Errors caused by what the user gave us. The CLI prints them on one line and exits with status 2.
#include <stdexcept>
#include <string>

namespace gpuplan {

class InputError : public std::runtime_error {
 public:
  // field: the request field or file key at fault ("layout.tp", "config.json: hidden_size"); given: the value
  // received; accepted: what would have been accepted. Front ends name the field their own way (--tp, tp=).
  InputError(const std::string& field, const std::string& given, const std::string& accepted)
      : std::runtime_error(field + ": " + given + "; accepted: " + accepted),
        field_(field),
        given_(given),
        accepted_(accepted) {}
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  const std::string& field() const { return field_; }
  const std::string& given() const { return given_; }
  const std::string& accepted() const { return accepted_; }

 private:
  std::string field_, given_, accepted_;
};

}  // namespace gpuplan
