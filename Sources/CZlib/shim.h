#ifndef KBTD_CZLIB_SHIM_H
#define KBTD_CZLIB_SHIM_H
#include <zlib.h>

// inflateInit2/deflateInit2 are macros Swift cannot import; wrap them.
static inline int kbtd_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
static inline int kbtd_deflateInit2(z_streamp strm, int level, int windowBits) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
#endif
