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

// What parse_count accepts, as its errors say it.
inline constexpr std::string_view kCountsAccepted =
    "a whole number such as 4096, 1e6, 8K, 8Ki, 7B or 1.5T (K, M, B, T: powers of 1000; Ki, Mi, Gi, Ti: of 1024)";

// The one parser of counts (tokens, sequences, parameters, degrees): a whole number written plainly ("4096"), in
// exponent form ("1e6"), or with a suffix: K, M, B (or G), T in powers of 1000, Ki, Mi, Gi, Ti in powers of 1024,
// case-insensitive ("7B", "1.5T", "8Ki"). Throws InputError naming `field` for anything else, a fraction included.
double parse_count(std::string_view text, std::string_view field);

}  // namespace gpuplan
