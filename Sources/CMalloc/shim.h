#ifndef KBTD_CMALLOC_SHIM_H
#define KBTD_CMALLOC_SHIM_H
#include <malloc.h>

// M_MMAP_THRESHOLD is a macro; give Swift a function that sets it.
static inline int kbtd_set_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}
#endif
