/* What the fake drivers (fake_cuda.c, fake_hip.c) know of real device images, the ones
 * tilec embeds in objects (tests/gpu_host): an ELF image's extent, and whether an ELF
 * (cubin, HSACO) or PTX image defines a kernel. Static functions for the fakes only. */
#ifndef TILE_TESTS_FAKE_IMAGE_H
#define TILE_TESTS_FAKE_IMAGE_H

#include <stdint.h>
#include <string.h>

/* The extent of an ELF64 image: the end of its section or program header table,
 * whichever is last (what the string tables lie before). */
static size_t elf_size(const unsigned char* e) {
    uint64_t shoff, phoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    size_t a, b;
    memcpy(&phoff, e + 0x20, 8);
    memcpy(&shoff, e + 0x28, 8);
    memcpy(&phentsize, e + 0x36, 2);
    memcpy(&phnum, e + 0x38, 2);
    memcpy(&shentsize, e + 0x3a, 2);
    memcpy(&shnum, e + 0x3c, 2);
    a = (size_t)(shoff + (uint64_t)shentsize * shnum);
    b = (size_t)(phoff + (uint64_t)phentsize * phnum);
    return a > b ? a : b;
}

/* Whether a real image (`size` bytes) defines kernel `name`: "\0name\0" in an ELF (a
 * symbol name), or ".entry name(" in PTX. */
static int real_image_has(const char* bytes, size_t size, const char* name) {
    size_t n = strlen(name), i;
    if (size >= 4 && memcmp(bytes, "\177ELF", 4) == 0) {
        for (i = 0; i + n + 2 <= size; ++i)
            if (bytes[i] == '\0' && memcmp(bytes + i + 1, name, n) == 0 && bytes[i + 1 + n] == '\0') return 1;
        return 0;
    }
    {
        const char* p = bytes;
        while ((p = strstr(p, ".entry ")) != NULL) {
            p += 7;
            if (strncmp(p, name, n) == 0 && p[n] == '(') return 1;
        }
    }
    return 0;
}

#endif
