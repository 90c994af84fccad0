/* test_crc32: the literal table equals the one built bit by bit from the polynomial, the
 * standard check value holds, and updating in pieces equals one pass. */
#include "check.h"
#include "crc32.h"

#include <string.h>

/* The definition: reflected polynomial 0xEDB88320, one bit at a time. */
static uint32_t crc32_bitwise(const uint8_t *data, size_t size)
{
    uint32_t crc = 0xffffffffU;
    for (size_t i = 0; i < size; i++) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; bit++) crc = crc & 1U ? (crc >> 1) ^ 0xedb88320U : crc >> 1;
    }
    return ~crc;
}

static void test_table(void)
{
    int mismatches = 0;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t entry = n;
        for (int bit = 0; bit < 8; bit++) entry = entry & 1U ? (entry >> 1) ^ 0xedb88320U : entry >> 1;
        if (entry != crc32_table[n] && mismatches++ < 3) fprintf(stderr, "  table[%u] = 0x%08x, want 0x%08x\n", n, crc32_table[n], entry);
    }
    CHECK(mismatches == 0, "%d table entries differ from the polynomial", mismatches);
}

static void test_values(void)
{
    const char *check = "123456789";
    CHECK(crc32_update(0, check, 9) == 0xcbf43926U, "CRC-32 of \"123456789\" is 0x%08x, want 0xcbf43926",
          crc32_update(0, check, 9));
    CHECK(crc32_update(0, "", 0) == 0, "CRC of nothing is 0");
    CHECK(crc32_update(0, "a", 1) == 0xe8b7be43U, "CRC-32 of \"a\" is 0x%08x, want 0xe8b7be43", crc32_update(0, "a", 1));

    uint8_t data[1000];
    uint32_t x = 1;
    for (size_t i = 0; i < sizeof data; i++) x = x * 1664525U + 1013904223U, data[i] = (uint8_t)(x >> 24);
    uint32_t whole = crc32_update(0, data, sizeof data);
    CHECK(whole == crc32_bitwise(data, sizeof data), "table-driven and bitwise CRCs agree");
    for (size_t cut = 0; cut <= sizeof data; cut += 37) {
        uint32_t pieces = crc32_update(crc32_update(0, data, cut), data + cut, sizeof data - cut);
        CHECK(pieces == whole, "CRC in two pieces cut at %zu equals one pass", cut);
    }
}

int main(void)
{
    test_table();
    test_values();
    return test_finish("test_crc32");
}
