#ifndef KBTD_CLIBDEFLATE_SHIM_H
#define KBTD_CLIBDEFLATE_SHIM_H
// Debian's libdeflate-dev (1.14): whole-buffer gzip inflate, used by
// KBTDCompression's WholeMemberInflater when a body's output size is known.
#include <libdeflate.h>
#endif
