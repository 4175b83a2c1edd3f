#pragma once
// Units. Byte counts are exact integers (std::int64_t, named *_bytes); rates and times are doubles named with
// their unit (*_GBps = 1e9 bytes per second, *_s = seconds). GB = 1e9 bytes, GiB = 2^30 bytes.
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuplan {

using bytes_t = std::int64_t;

inline constexpr double kGB = 1e9;
inline constexpr double kGiB = 1073741824.0;

// "126.0 GB (117.3 GiB)": decimal and binary side by side, so neither can be mistaken for the other.
std::string format_bytes(double bytes);

// "126.0 GB (117.3 GiB)" below a terabyte, "1.23 TB (1.12 TiB)" above; `format_gb` is the decimal half alone.
std::string format_gb(double bytes);

// "7.00 B", "124.4 M", "1,000 T": a parameter or token count with a decimal suffix (T the largest).
std::string format_count(double count);

// "1 GPU", "8 GPUs", "1 microbatch", "4 microbatches": a whole number with its noun in the right number.
std::string format_quantity(std::int64_t count, std::string_view singular, std::string_view plural);

// Parses a byte size: a plain number of bytes ("1e9", "123"), or a number with a unit: B, KB, MB, GB, TB
// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), case-insensitive. Throws InputError naming `field`.
bytes_t parse_bytes(std::string_view text, std::string_view field);

// The same for a memory size, where a bare number is almost always a mistake ("80" meant 80 GB): a unit is
// required.
bytes_t parse_size(std::string_view text, std::string_view field);

// Parses a count such as "7e9", "7B", "70b", "1.5T", "124M". Throws InputError naming `field`.
double parse_count(std::string_view text, std::string_view field);

}  // namespace gpuplan
