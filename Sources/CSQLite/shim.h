#ifndef KBTD_CSQLITE_SHIM_H
#define KBTD_CSQLITE_SHIM_H
#include <sqlite3.h>

/// `sqlite3_config` is variadic, which Swift cannot call: turns SQLite's allocation statistics
/// off or on (`SQLITE_CONFIG_MEMSTATUS`). Only before SQLite is first used in the process
/// (else `SQLITE_MISUSE`, and nothing changes).
static inline int kbtd_sqlite3_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}
#endif
