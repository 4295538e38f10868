// SHA-256 (FIPS 180-4), for the compile cache's keys: a collision would hand one
// compilation another's outputs, so the hash is a cryptographic one.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tilec {

class Sha256 {
public:
    Sha256();
    void update(std::string_view data);
    // Adds the length and then the bytes, so ("ab", "c") and ("a", "bc") differ.
    void field(std::string_view data);
    std::string hex();  // finishes; the object is spent afterwards

private:
    void block(const unsigned char* p);
    uint32_t h_[8];
    unsigned char buf_[64];
    size_t used_ = 0;
    uint64_t bytes_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace tilec
