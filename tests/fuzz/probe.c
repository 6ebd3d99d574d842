/* Configure-time probe: can clang link a libFuzzer target with ASan and UBSan here? */
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        return 0;
}
