// SHA-256, which keys the compile cache: the FIPS 180-4 test vectors, across block
// boundaries and in pieces.
#include <catch2/catch.hpp>

#include <string>

#include "support/sha256.h"

using tilec::Sha256;
using tilec::sha256_hex;

TEST_CASE("sha256: FIPS 180-4 vectors", "[sha256]") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_hex(std::string(1000000, 'a')) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: pieces hash as the whole; fields keep their boundaries", "[sha256]") {
    std::string text;
    for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
    for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 128, 299}) {
        Sha256 h;
        h.update(text.substr(0, cut));
        h.update(text.substr(cut));
        CHECK(h.hex() == sha256_hex(text));
    }
    Sha256 a, b;
    a.field("ab");
    a.field("c");
    b.field("a");
    b.field("bc");
    CHECK(a.hex() != b.hex());
}
