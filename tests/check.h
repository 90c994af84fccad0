/* check.h: a tiny test harness. CHECK records a failure and goes on; test_finish() prints
 * "N passed, N failed" and returns the exit status, so a test can only pass by checking. */
#ifndef DLCA_CHECK_H
#define DLCA_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (cond) {                                                                      \
            check_passed++;                                                              \
        } else {                                                                         \
            check_failed++;                                                              \
            if (check_failed <= 20) {                                                    \
                fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
                fprintf(stderr, __VA_ARGS__);                                            \
                fputc('\n', stderr);                                                     \
            }                                                                            \
        }                                                                                \
    } while (0)

/* |got - want| <= atol + rtol * |want| */
#define CHECK_CLOSE(got, want, atol, rtol, ...)                                                    \
    do {                                                                                           \
        double check_g_ = (got), check_w_ = (want);                                                \
        int check_ok_ = fabs(check_g_ - check_w_) <= (atol) + (rtol)*fabs(check_w_);               \
        CHECK(check_ok_, __VA_ARGS__);                                                             \
        if (!check_ok_ && check_failed <= 20) fprintf(stderr, "  got %.12g want %.12g\n", check_g_, check_w_); \
    } while (0)

static inline int test_finish(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    if (check_passed == 0 && check_failed == 0) {
        fprintf(stderr, "%s: no checks ran\n", name);
        return 1;
    }
    return check_failed ? 1 : 0;
}

/* Exit code 77 makes ctest report a skip; CI sets DLCA_REQUIRE_VULKAN=1 so a missing
 * Vulkan device fails there instead of hiding the GPU tests. */
static inline int test_no_vulkan(const char *name, const char *why)
{
    const char *required = getenv("DLCA_REQUIRE_VULKAN");
    fprintf(stderr, "%s: no Vulkan device: %s\n", name, why);
    if (required && required[0] == '1') return 1;
    return 77;
}

#endif
