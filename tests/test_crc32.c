/* test_crc32: the standard check values hold, the CRC equals the polynomial's bit-by-bit
 * definition on data of many lengths, and updating in pieces equals one pass. */
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

static void test_values(void)
{
    const char *check = "123456789";
    CHECK(crc32_update(0, check, 9) == 0xcbf43926U, "CRC-32 of \"123456789\" is 0x%08x, want 0xcbf43926",
          crc32_update(0, check, 9));
    CHECK(crc32_update(0, "", 0) == 0, "CRC of nothing is 0");
    CHECK(crc32_update(0, "a", 1) == 0xe8b7be43U, "CRC-32 of \"a\" is 0x%08x, want 0xe8b7be43", crc32_update(0, "a", 1));

    static uint8_t data[100000];
    uint32_t x = 1;
    for (size_t i = 0; i < sizeof data; i++) x = x * 1664525U + 1013904223U, data[i] = (uint8_t)(x >> 24);
    int differ = 0;
    for (size_t n = 0; n <= 1000; n++) differ += crc32_update(0, data + n % 7, n) != crc32_bitwise(data + n % 7, n);
    CHECK(differ == 0, "%d of 1001 lengths (0..1000, at offsets 0..6) differ from the bitwise definition", differ);
    uint32_t whole = crc32_update(0, data, sizeof data);
    CHECK(whole == crc32_bitwise(data, sizeof data), "100000 bytes: the CRC and the bitwise definition agree");
    for (size_t cut = 0; cut <= sizeof data; cut += 3701) {
        uint32_t pieces = crc32_update(crc32_update(0, data, cut), data + cut, sizeof data - cut);
        CHECK(pieces == whole, "CRC in two pieces cut at %zu equals one pass", cut);
    }
}

int main(void)
{
    test_values();
    return test_finish("test_crc32");
}
