#ifndef KEYBOARD_TELEMETRY_ZLIB_SHIM_H
#define KEYBOARD_TELEMETRY_ZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 and inflateInit2 are macros Swift cannot import; wrap them (names of their own: kbtd's
// CZlib has kbtd_deflateInit2). Inflate is for KeyboardTelemetryClientTesting, which reads sent batches.
static inline int telemetry_deflateInit2(z_streamp strm, int level, int windowBits) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
static inline int telemetry_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
